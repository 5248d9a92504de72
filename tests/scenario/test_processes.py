"""Processes: however a traced program dies (SIGKILL, abort, a segfault, _exit, an uncaught
exception, one thrown after a CUDA out-of-memory), its trace holds every record whose call
had returned, read from the live file beside it; `anatomist recover` writes them in for
good. Forked children write their own trace only if they use CUDA."""
import glob
import os
import signal
import subprocess
import time
import unittest

from common import (PRELOAD, SANITIZER_RUNTIME, SIM_LIB, anatomist, clean_env, dump, info_json,
                    ledger, of, report_json, run, sample, tmpdir)

# Far longer than the runs: nothing reaches the trace by the flush timer, so what a killed
# run's trace holds came from the live file (or from rings that filled half-way).
FLUSH_MS = 10000


def traced_env(trace, **more):
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                    ANATOMIST_FLUSH_MS=str(FLUSH_MS))
    env.update(more)
    return env


def mallocs(trace, ended="recovered"):
    """(sizes of the successful cudaMalloc calls, count of failed ones), from the records."""
    recs = of(dump(trace, ended=ended), "ALLOC")
    ok = [r["size"] for r in recs if r["api"] == 1 and r["ret"] == 0]
    return ok, sum(1 for r in recs if r["api"] == 1 and r["ret"] != 0)


class CrashSurvival(unittest.TestCase):
    def test_sigkill_mid_flight_loses_no_returned_call(self):
        trace = os.path.join(tmpdir(), "killed.anat")
        p = subprocess.Popen([sample("alloc_loop"), "1"], env=traced_env(trace),
                             stdout=subprocess.PIPE, text=True)
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 300 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if line.startswith("alloc "):
                seen.append(int(line.split()[2]))
        # While the process runs, recover leaves its trace alone.
        before = open(trace, "rb").read()
        r = anatomist("recover", trace)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is still running", r.stderr)
        self.assertEqual(open(trace, "rb").read(), before)
        p.send_signal(signal.SIGKILL)
        p.wait()
        # What it printed before the kill (still in the pipe) was returned too.
        seen += [int(l.split()[2]) for l in p.stdout.read().splitlines() if l.startswith("alloc ")]
        p.stdout.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertGreaterEqual(len(seen), 300)
        self.assertTrue(os.path.exists(trace + ".live"), "a killed process leaves its live file")

        sizes, failed = mallocs(trace)
        # Every call the program reported had returned; at most one more was under way.
        self.assertEqual(failed, 0)
        self.assertIn(len(sizes), (len(seen), len(seen) + 1))
        self.assertEqual(sizes[:len(seen)], seen, "each reported allocation, in order, once")
        rep = report_json(trace)
        self.assertEqual(rep["trace"]["ended"], "recovered")
        self.assertEqual(rep["memory"]["live_at_end_bytes"], sum(sizes))

        # recover writes them into the trace for good and removes the live file.
        r = anatomist("recover", trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(trace + ".live"))
        self.assertEqual(mallocs(trace), (sizes, 0))
        info = info_json(trace)
        self.assertEqual(info["ended"], "recovered")
        self.assertEqual(report_json(trace)["memory"]["live_at_end_bytes"], sum(sizes))
        # A second recover has nothing to do and changes nothing.
        before = open(trace, "rb").read()
        r = anatomist("recover", trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(open(trace, "rb").read(), before)

    def die(self, death, expect_rc, count=250):
        trace = os.path.join(tmpdir(), death + ".anat")
        p = run([sample("alloc_loop"), "0", str(count), death], env=traced_env(trace))
        self.assertEqual(p.returncode, expect_rc, p.stderr)
        want = [int(l.split()[2]) for l in p.stdout.splitlines() if l.startswith("alloc ")]
        self.assertEqual(len(want), count)
        sizes, failed = mallocs(trace)
        self.assertEqual(sizes, want, "every allocation, once, in order")
        info = info_json(trace)
        # Recovered records keep their times: the span is the run's, not the clock's age.
        self.assertLess(info["last_ns"] - info["first_ns"], 120 * 10**9)
        return trace

    def test_abort(self):
        self.die("abort", -signal.SIGABRT)

    def test_segfault(self):
        # A sanitizer build stops the null write itself: UBSan reports it and ends the
        # process with status 1, running no destructors, as the signal would not.
        self.die("segv", 1 if SANITIZER_RUNTIME else -signal.SIGSEGV)

    def test_exit_without_destructors(self):
        self.die("exit", 3)

    def test_uncaught_exception(self):
        self.die("throw", -signal.SIGABRT)

    def test_host_oom_killer(self):
        # The kernel's OOM killer, for real: the program runs in a memory cgroup of 96 MiB
        # and touches host memory until the kernel kills it.
        cg_root = "/sys/fs/cgroup/memory"
        if not os.access(cg_root, os.W_OK):
            self.skipTest("needs a writable cgroup v1 memory controller (%s)" % cg_root)
        cg = os.path.join(cg_root, "anatomist-test-%d" % os.getpid())
        os.mkdir(cg)
        try:
            for knob, value in (("memory.limit_in_bytes", 96 << 20), ("memory.swappiness", 0),
                                ("memory.memsw.limit_in_bytes", 96 << 20)):
                try:
                    with open(os.path.join(cg, knob), "w") as f:
                        f.write(str(value))
                except OSError:
                    pass  # no swap accounting: swappiness 0 keeps it from swapping

            def enter():
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            trace = os.path.join(tmpdir(), "host-oom.anat")
            p = subprocess.run([sample("alloc_loop"), "0", "250", "host-oom"], env=traced_env(trace),
                               capture_output=True, text=True, timeout=120, preexec_fn=enter)
            self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
            with open(os.path.join(cg, "memory.oom_control")) as f:
                kills = dict(l.split() for l in f)
            if "oom_kill" in kills:
                self.assertGreaterEqual(int(kills["oom_kill"]), 1, "the OOM killer did it")
            want = [int(l.split()[2]) for l in p.stdout.splitlines() if l.startswith("alloc ")]
            self.assertEqual(len(want), 250)
            self.assertEqual(mallocs(trace), (want, 0))
        finally:
            os.rmdir(cg)

    def test_uncaught_exception_after_cuda_out_of_memory(self):
        trace = os.path.join(tmpdir(), "oom.anat")
        env = traced_env(trace, ANATOMIST_SIM_MEMORY="24MiB")
        p = run([sample("alloc_loop"), "0", "10", "oom-throw"], env=env)
        self.assertEqual(p.returncode, -signal.SIGABRT, p.stderr)
        blocks = sum(1 for l in p.stdout.splitlines() if l.startswith("block "))
        self.assertGreater(blocks, 5)
        sizes, failed = mallocs(trace)
        self.assertEqual(sizes, [4096 + i for i in range(10)] + [1 << 20] * blocks)
        self.assertEqual(failed, 1, "the failed allocation that led to the exception")
        oom = anatomist("oom", trace, "--json")
        self.assertEqual(oom.returncode, 0, oom.stderr)

    def test_a_clean_exit_removes_the_live_file(self):
        trace = os.path.join(tmpdir(), "clean.anat")
        p = run([sample("alloc_loop"), "0", "20", "exit"],
                env=traced_env(trace, ANATOMIST_LIVE="1"))
        self.assertEqual(p.returncode, 3)
        self.assertTrue(os.path.exists(trace + ".live"))
        r = anatomist("run", "--sim", "-q", "-o", trace, "--", sample("train_mlp"), "--steps", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(trace + ".live"), "a clean end leaves no live file")
        self.assertEqual(info_json(trace)["ended"], "exit")

    def test_without_the_live_file_a_kill_loses_only_the_last_interval(self):
        trace = os.path.join(tmpdir(), "nolive.anat")
        p = run([sample("alloc_loop"), "0", "50", "exit"], env=traced_env(trace, ANATOMIST_LIVE="0"))
        self.assertEqual(p.returncode, 3)
        self.assertFalse(os.path.exists(trace + ".live"))
        sizes, _ = mallocs(trace, ended="truncated")
        self.assertEqual(sizes, [], "with a 10 s flush interval nothing reached the trace")


# GCC 12's AddressSanitizer allocator takes no lock around fork: a child forked while
# another thread (here the simulated CUPTI's worker or the profiler's writer) is inside
# malloc inherits that lock held and hangs at its first allocation (google/sanitizers#1814;
# glibc's malloc is fork-safe). The other builds run this; the sanitizer build the rest.
@unittest.skipIf(SANITIZER_RUNTIME, "fork of a multithreaded process hangs in this ASan runtime")
class ForkedChildren(unittest.TestCase):
    def test_only_children_that_use_cuda_write_a_trace(self):
        d = tmpdir()
        r = anatomist("run", "--sim", "-q", "-o", os.path.join(d, "f.anat"), "--", sample("fork_child"))
        self.assertEqual(r.returncode, 0, r.stderr)
        pids = {l.split()[0]: int(l.split()[1]) for l in r.stdout.splitlines()}
        files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "*.anat")))
        self.assertEqual(files, sorted(["f.anat", "f-%d.anat" % pids["busy"]]))

        parent = report_json(os.path.join(d, "f.anat"))
        child = report_json(os.path.join(d, "f-%d.anat" % pids["busy"]))
        self.assertEqual(child["trace"]["process"]["pid"], pids["busy"])
        self.assertEqual(child["allocations"]["by_api"]["cudaMalloc"]["bytes"], 12345)
        self.assertEqual(child["trace"]["ended"], "exit")
        self.assertEqual(parent["allocations"]["by_api"]["cudaMalloc"]["bytes"], 1000)
        self.assertEqual(parent["memory"]["live_at_end_bytes"], 0)


class ManyThreads(unittest.TestCase):
    def test_every_call_of_every_thread_is_recorded_or_counted_as_dropped(self):
        threads, iters = 8, 20000
        trace = os.path.join(tmpdir(), "threads.anat")
        r = run([sample("threads_alloc"), str(threads), str(iters)],
                env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        led = ledger(r.stdout)
        info = info_json(trace)
        rec = info["records"]
        made = led["alloc_calls"] + led["free_calls"] + led["launches"]
        self.assertEqual(made, 3 * threads * iters)
        self.assertEqual(rec["alloc"] + rec["free"] + rec["launch"] + info["dropped"], made)
        # One THREAD record per thread that recorded: the workers (main made no call but
        # registration, which records and starts nothing).
        self.assertEqual(rec["thread"], threads)
        self.assertEqual(info["ended"], "exit")
        if info["dropped"] == 0:
            rep = report_json(trace)
            self.assertEqual(rep["allocations"]["by_api"]["cudaMalloc"]["calls"], threads * iters)
            self.assertEqual(rep["allocations"]["by_api"]["cudaMalloc"]["bytes"],
                             sum((256 + t) * iters for t in range(threads)))
            self.assertEqual(rep["memory"]["live_at_end_bytes"], 0)
            self.assertEqual(rep["launches"], threads * iters)

    def test_threads_whose_first_call_races_the_start_are_recorded_as_they_called(self):
        # Every thread's first call finds the trace not open yet: one thread opens it and
        # starts CUPTI, the others wait for it. A waiter that gave up when the trace was open
        # but CUPTI not yet started went through unrecorded, and the driver call the runtime
        # makes inside was recorded in its place (cuMemAlloc_v2 instead of cudaMalloc), in
        # about one run in five. Forty runs: each of the 8 first calls is a cudaMalloc.
        threads, runs = 8, 40
        d = tmpdir()
        wrong = []
        for i in range(runs):
            trace = os.path.join(d, "first-%d.anat" % i)
            r = run([sample("threads_alloc"), str(threads), "1"],
                    env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(ledger(r.stdout)["alloc_calls"], threads)
            by_api = report_json(trace)["allocations"]["by_api"]
            calls = {api: s["calls"] for api, s in by_api.items()}
            if calls != {"cudaMalloc": threads}:
                wrong.append((i, calls))
        self.assertEqual(wrong, [], "runs whose allocations were not all recorded as cudaMalloc")


class DlopenedModules(unittest.TestCase):
    def test_a_library_loaded_later_is_in_the_module_map_and_symbolized(self):
        from common import BUILD
        plugin = os.path.join(BUILD, "tests", "libana_test_plugin.so")
        trace = os.path.join(tmpdir(), "dl.anat")
        r = run([os.path.join(BUILD, "tests", "scenario_dlopen_probe"), plugin, "31337"],
                env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace))
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = report_json(trace)
        leaks = [l for l in rep["memory"]["leaks"] if l["bytes"] == 31337]
        self.assertEqual(len(leaks), 1, rep["memory"]["leaks"])
        top = leaks[0]["stack"][0]
        self.assertEqual(top["function"], "plugin_alloc")
        self.assertEqual(os.path.realpath(top["module"]), os.path.realpath(plugin))


if __name__ == "__main__":
    unittest.main()

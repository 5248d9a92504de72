"""Processes: a SIGKILLed program leaves a readable trace holding every record older than
the flush interval; forked children write their own trace only if they use CUDA."""
import glob
import os
import signal
import subprocess
import time
import unittest

from common import (PRELOAD, SIM_LIB, anatomist, clean_env, info_json, ledger, report_json, run,
                    sample, tmpdir)

FLUSH_MS = 100
SLACK_MS = 400  # scheduling and compression time on a loaded 2-core machine


class SigkillLeavesATrace(unittest.TestCase):
    def test_every_record_older_than_the_flush_interval_survives(self):
        trace = os.path.join(tmpdir(), "killed.anat")
        env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                        ANATOMIST_FLUSH_MS=str(FLUSH_MS))
        p = subprocess.Popen([sample("alloc_loop"), "3"], env=env, stdout=subprocess.PIPE, text=True)
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 400 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if line.startswith("alloc "):
                _, i, size, t_ns = line.split()
                seen.append((int(size), int(t_ns)))
        kill_ns = time.monotonic_ns()
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertGreaterEqual(len(seen), 400)

        rep = report_json(trace)
        self.assertIn(rep["trace"]["ended"], ("truncated", "torn"))
        found = rep["allocations"]["by_api"]["cudaMalloc"]["calls"]
        old = [s for s, t in seen if t < kill_ns - (FLUSH_MS + SLACK_MS) * 1_000_000]
        self.assertGreater(len(old), 100)
        # Allocations are made in order, so the trace holds a prefix of them.
        self.assertGreaterEqual(found, len(old))
        self.assertLessEqual(found, len(seen) + 1)
        # Nothing was freed: live bytes are exactly the first `found` sizes.
        self.assertEqual(rep["memory"]["live_at_end_bytes"], sum(4096 + i for i in range(found)))


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
        # One THREAD record per thread that recorded: the workers (main made no call after
        # registration, which records nothing but starts the trace).
        self.assertEqual(rec["thread"], threads)
        self.assertEqual(info["ended"], "exit")
        if info["dropped"] == 0:
            rep = report_json(trace)
            self.assertEqual(rep["allocations"]["by_api"]["cudaMalloc"]["calls"], threads * iters)
            self.assertEqual(rep["allocations"]["by_api"]["cudaMalloc"]["bytes"],
                             sum((256 + t) * iters for t in range(threads)))
            self.assertEqual(rep["memory"]["live_at_end_bytes"], 0)
            self.assertEqual(rep["launches"], threads * iters)


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

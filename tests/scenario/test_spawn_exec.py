"""Processes that make processes (samples/proc_tree.cu) under `anatomist run`: workers
forked without exec while another thread records, some using CUDA and some not; a
program replacing itself with exec; a child started with posix_spawn.

Every role of the program allocates its own sizes and prints them (`role {...}`), so the
tests know whose records each trace must hold, and that no trace holds another process's.
Every trace must be whole (trace_scan). Known losses are pinned by expected failures,
each saying what is lost; they turn into unexpected successes (a failed run) once fixed."""
import glob
import json
import os
import unittest

from common import PRELOAD, SANITIZER_RUNTIME, SIM_LIB, anatomist, clean_env, run, sample, tmpdir
from trace_scan import scan

TIMEOUT = 120
PROC_TREE = sample("proc_tree")


def roles(stdout):
    out = {}
    for l in stdout.splitlines():
        if l.startswith("role "):
            r = json.loads(l[5:])
            out.setdefault(r["role"], []).append(r)
    return out


def sizes(role):
    return list(range(role["base"], role["base"] + role["n"]))


def alloc_sizes(trace, ended="exit"):
    """(scan, every ALLOC's size in file order, all threads together)."""
    s = scan(trace, keep=lambda r: r["size"] if r["kind"] == "ALLOC" else None, ended=ended)
    return s, sorted(v for per in s.kept.values() for v in per)


def traces(d):
    return sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "*.anat")))


def profile(*args):
    d = tmpdir()
    r = anatomist("run", "--sim", "-q", "-o", os.path.join(d, "f.anat"), "--", PROC_TREE, *args,
                  timeout=TIMEOUT)
    return d, r


# GCC 12's AddressSanitizer allocator takes no lock around fork: a worker forked while
# another thread of the program is inside malloc inherits that lock held and hangs at its
# first allocation (google/sanitizers#1814; glibc's malloc is fork-safe). The other builds
# run these; the sanitizer build runs the rest of this file.
@unittest.skipIf(SANITIZER_RUNTIME, "fork of a multithreaded process hangs in this ASan runtime")
class ForkedWorkers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir, cls.r = profile("fork", "6")
        cls.roles = roles(cls.r.stdout)

    def test_the_program_runs_as_without_the_profiler(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertEqual(len(self.roles["worker"]), 6)
        self.assertEqual(sum(w["failures"] for w in self.roles["worker"]), 0)

    def test_only_workers_that_use_cuda_have_a_trace(self):
        want = ["f.anat"] + ["f-%d.anat" % w["pid"] for w in self.roles["worker"] if w["cuda"]]
        self.assertEqual(traces(self.dir), sorted(want))

    def test_the_parents_trace_holds_its_calls_and_no_workers(self):
        s, got = alloc_sizes(os.path.join(self.dir, "f.anat"))
        self.assertEqual(s.errors, [])
        self.assertEqual(s.dropped, {})
        want = sizes(self.roles["parent"][0]) + sizes(self.roles["parent_after"][0]) + sizes(self.roles["busy"][0])
        self.assertGreater(self.roles["busy"][0]["n"], 0)
        self.assertEqual(got, sorted(want))
        self.assertEqual(s.process["pid"], self.roles["parent"][0]["pid"])

    def test_a_worker_that_exits_has_a_whole_trace_of_its_own(self):
        parent = self.roles["parent"][0]["pid"]
        for w in [w for w in self.roles["worker"] if w["cuda"] and w["end"] == "exit"]:
            s, got = alloc_sizes(os.path.join(self.dir, "f-%d.anat" % w["pid"]))
            self.assertEqual(s.errors, [])
            self.assertEqual((s.process["pid"], s.process["ppid"]), (w["pid"], parent))
            self.assertEqual(got, sizes(w))  # its calls, none of the parent's
            self.assertEqual((s.counts["LAUNCH"], s.counts["FREE"]), (20, 20))
            # Its own definitions: its one thread, the kernel it launched, its stacks.
            self.assertEqual(len(s.threads), 1)
            self.assertEqual(s.counts["KERNEL"], 1)
            self.assertGreater(s.counts["STACK"], 0)

    def test_a_worker_that_ends_with__exit_keeps_its_records(self):
        # _exit (how Python's multiprocessing ends a worker) runs no destructor: what the
        # worker's buffers held is in its live file, which `anatomist run` writes in.
        for w in [w for w in self.roles["worker"] if w["cuda"] and w["end"] == "_exit"]:
            s, got = alloc_sizes(os.path.join(self.dir, "f-%d.anat" % w["pid"]), ended=None)
            self.assertEqual(got, sizes(w))


class Exec(unittest.TestCase):
    def test_the_program_exec_runs_is_traced(self):
        d, r = profile("exec", "self")
        self.assertEqual(r.returncode, 0, r.stderr)
        after = roles(r.stdout)["after-exec"][0]
        found = [f for f in traces(d) if after["base"] in alloc_sizes(os.path.join(d, f))[1]]
        self.assertEqual(len(found), 1, traces(d))
        s, got = alloc_sizes(os.path.join(d, found[0]))
        self.assertEqual(s.errors, [])
        self.assertEqual(s.process["pid"], after["pid"])
        self.assertEqual([v for v in got if v >= 6000], sizes(after))

    def test_what_was_recorded_before_exec_is_kept(self):
        # The program exec'd has the same pid, so the same trace name: it sees the name's
        # live file is its own pid's and writes NAME.1.anat; the records of the program
        # before exec (exec runs no destructor) are in the first trace's live file.
        d, r = profile("exec", "self")
        before = roles(r.stdout)["before_exec"][0]
        held = [v for f in traces(d) for v in alloc_sizes(os.path.join(d, f), ended=None)[1]]
        self.assertEqual([v for v in held if v < 6000], sizes(before))

    def test_what_was_recorded_before_exec_of_another_program_is_kept(self):
        # exec runs no destructor: the records still buffered are in the live file.
        d, r = profile("exec", "/bin/true")
        self.assertEqual(r.returncode, 0, r.stderr)
        before = roles(r.stdout)["before_exec"][0]
        self.assertEqual(traces(d), ["f.anat"])
        self.assertEqual(alloc_sizes(os.path.join(d, "f.anat"), ended=None)[1], sizes(before))


class PosixSpawn(unittest.TestCase):
    def test_a_spawned_child_is_traced_as_a_new_process(self):
        d, r = profile("spawn")
        self.assertEqual(r.returncode, 0, r.stderr)
        ro = roles(r.stdout)
        child, parent = ro["spawned"][0], ro["spawner"][0]
        self.assertEqual(traces(d), sorted(["f.anat", "f-%d.anat" % child["pid"]]))
        s, got = alloc_sizes(os.path.join(d, "f.anat"))
        self.assertEqual(s.errors, [])
        self.assertEqual(got, sizes(parent) + sizes(ro["spawner_after"][0]))
        s, got = alloc_sizes(os.path.join(d, "f-%d.anat" % child["pid"]))
        self.assertEqual(s.errors, [])
        self.assertEqual((s.process["pid"], s.process["ppid"]), (child["pid"], parent["pid"]))
        self.assertEqual(got, sizes(child))

    def test_without_anatomist_run_a_fixed_output_name_is_not_shared(self):
        # With LD_PRELOAD and an ANATOMIST_OUTPUT without %p (no ANATOMIST_ROOT_PID), a
        # spawned child takes the name as given; the name's live file says a running
        # process writes it, so the child's trace is NAME-PID.anat instead.
        d = tmpdir()
        env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=os.path.join(d, "f.anat"))
        r = run([PROC_TREE, "spawn"], env=env, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        ro = roles(r.stdout)
        held = sorted(v for f in traces(d) for v in alloc_sizes(os.path.join(d, f))[1])
        self.assertEqual(held, sorted(sizes(ro["spawner"][0]) + sizes(ro["spawner_after"][0])
                                      + sizes(ro["spawned"][0])))


if __name__ == "__main__":
    unittest.main()

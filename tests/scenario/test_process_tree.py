"""`anatomist run` and the process tree (docs/configuration.md ANATOMIST_OUTPUT, `anatomist
run --help`): every process of the run writes its trace beside the run, named after the
run's output pattern, whatever its working directory; at the end `run` lists every trace
its processes wrote, with pid, how each ended and command, recovers those that were not
finished, and suggests one report of them all.

The programs say who they are: py/launcher.py (a Python launcher that makes no CUDA call,
as torchrun's agent) prints its workers' pids and exit statuses, py/ctypes_worker.py
(cudaMalloc through ctypes) prints its pid, parent and sizes, samples/proc_tree its roles.
The tests compare the listing and the files with those."""
import json
import os
import subprocess
import sys
import unittest

from common import ANATOMIST, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, clean_env, dump, of, sample, tmpdir

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "py", "ctypes_worker.py")
LAUNCHER = os.path.join(HERE, "py", "launcher.py")
PROC_TREE = sample("proc_tree")
TIMEOUT = 120


def py_env(**more):
    env = clean_env(**more)
    if SANITIZER_RUNTIME:
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # the interpreter's leaks are not ours
    return env


def run_in(d, *args, env=None):
    """`anatomist run --sim ARGS` started in directory d."""
    return subprocess.run([ANATOMIST, "run", "--sim", *args], cwd=d, env=env or py_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)


def lines(stdout, tag):
    return [json.loads(l[len(tag) + 1:]) for l in stdout.splitlines() if l.startswith(tag + " ")]


def listing(stderr):
    """The rows of run's list: {name: (pid, ended, command)}, and the suggestion line."""
    rows, cols, suggest = {}, None, None
    for l in stderr.splitlines():
        if l.startswith("  TRACE "):
            cols = (l.index("PID") + 3, l.index("ENDED"), l.index("COMMAND"))
        elif cols and l.startswith("  "):
            rows[l[2:cols[0] - 7].strip()] = (int(l[cols[0] - 7:cols[0]]),
                                               l[cols[1]:cols[2]].strip(), l[cols[2]:])
        elif l.startswith("anatomist: one report of them all: "):
            suggest = l[len("anatomist: one report of them all: "):]
    return rows, suggest


def anat_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".anat") or f.endswith(".live"))


def alloc_sizes(trace, ended):
    recs = dump(trace, ended=ended)
    proc = of(recs, "PROCESS")[0]
    return (proc["pid"], proc["ppid"]), [r["size"] for r in of(recs, "ALLOC") if r["ret"] == 0]


class Launcher(unittest.TestCase):
    """A launcher without CUDA starts four workers with subprocess: one ends normally, one
    with os._exit, one is killed by SIGKILL, one makes a failing cudaMalloc."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tmpdir()
        cls.r = run_in(cls.dir, "-o", "job.anat", "--", sys.executable, LAUNCHER, "--exit", "3",
                       "1000", "3", "--", "2000", "2", "--end", "_exit", "--", "3000", "2", "--end",
                       "kill", "--", "4000", "1", "--fail")
        cls.launcher = lines(cls.r.stdout, "launcher")[0]
        cls.workers = lines(cls.r.stdout, "worker")
        cls.rows, cls.suggest = listing(cls.r.stderr)
        cls.files = anat_files(cls.dir)  # (a later test runs again in the directory)

    def test_the_programs_ran_as_without_the_profiler(self):
        self.assertEqual(self.r.returncode, 3, self.r.stderr)  # the launcher's own status
        self.assertEqual([w["status"] for w in self.launcher["workers"]], [0, 0, -9, 0])
        self.assertEqual([w["pid"] for w in self.workers],
                         [w["pid"] for w in self.launcher["workers"]])
        self.assertEqual(self.workers[3]["ret"], [0, 2])

    def test_each_worker_has_its_trace_beside_the_run_and_nothing_is_left_live(self):
        self.assertNotIn("no trace was written", self.r.stderr)
        self.assertEqual(self.files, sorted("job-%d.anat" % w["pid"] for w in self.workers))

    def test_run_lists_every_trace_with_pid_ending_and_command(self):
        want = {"job-%d.anat" % w["pid"]: w for w in self.workers}
        self.assertEqual(sorted(self.rows), sorted(want), self.r.stderr)
        ends = {}
        for name, (pid, ended, cmd) in self.rows.items():
            w = want[name]
            self.assertEqual(pid, w["pid"])
            self.assertIn("ctypes_worker.py %d %d" % (w["sizes"][0], len(w["sizes"]) - (w["ret"][-1] != 0)), cmd)
            ends[w["sizes"][0]] = ended
        self.assertEqual(ends[1000], "finished")
        self.assertEqual(ends[4000], "finished")
        for base in (2000, 3000):  # os._exit and SIGKILL run no destructor
            self.assertTrue(ends[base].startswith("trace unfinished (killed, crashed, _exit or exec); "),
                            ends[base])
            self.assertTrue(ends[base].endswith(" recovered from its live file"), ends[base])
        # Every trace of the directory is the run's: one report of the directory.
        self.assertEqual(self.suggest, "anatomist report .")

    def test_each_trace_holds_its_workers_allocations(self):
        for w in self.workers:
            ended = "exit" if w["sizes"][0] in (1000, 4000) else "recovered"
            (pid, ppid), got = alloc_sizes(os.path.join(self.dir, "job-%d.anat" % w["pid"]), ended)
            self.assertEqual((pid, ppid), (w["pid"], self.launcher["pid"]))
            self.assertEqual(got, [s for s, r in zip(w["sizes"], w["ret"]) if r == 0])

    def test_another_run_in_the_same_directory_lists_only_its_own(self):
        r = run_in(self.dir, "-o", "job.anat", "--", sys.executable, LAUNCHER, "500", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        w = lines(r.stdout, "worker")[0]
        # One trace, not the root's: listed as one row.
        rows, suggest = listing(r.stderr)
        self.assertEqual(list(rows), ["job-%d.anat" % w["pid"]], r.stderr)
        self.assertEqual(rows["job-%d.anat" % w["pid"]][:2], (w["pid"], "finished"))
        self.assertIsNone(suggest)
        # The first run's traces are as they were.
        self.assertEqual(alloc_sizes(os.path.join(self.dir, "job-%d.anat" % self.workers[0]["pid"]),
                                     "exit")[1], [1000, 1001, 1002])


class RelativeOutput(unittest.TestCase):
    """A program that changes directory before its first CUDA call."""

    def setUp(self):
        self.dir, self.other = tmpdir(), tmpdir()
        os.mkdir(os.path.join(self.dir, "rel"))

    def test_a_relative_name_is_the_directory_run_was_started_in(self):
        r = run_in(self.dir, "-o", "rel/t.anat", "--", sys.executable, WORKER, "--chdir", self.other,
                   "100", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        w = lines(r.stdout, "worker")[0]
        self.assertEqual(w["cwd"], os.path.realpath(self.other))
        self.assertEqual(r.stderr, "anatomist: trace written to rel/t.anat\n")
        self.assertEqual(anat_files(self.other), [])
        self.assertEqual(alloc_sizes(os.path.join(self.dir, "rel", "t.anat"), "exit"),
                         ((w["pid"], w["ppid"]), [100, 101]))

    def test_the_default_name_too(self):
        r = run_in(self.dir, "--", sys.executable, WORKER, "--chdir", self.other, "100", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        w = lines(r.stdout, "worker")[0]
        name = "anatomist-%d.anat" % w["pid"]
        self.assertEqual(r.stderr, "anatomist: trace written to %s\n" % name)
        self.assertEqual(anat_files(self.dir), [name])
        self.assertEqual(anat_files(self.other), [])

    def test_plain_ld_preload_resolves_it_when_the_preload_loads(self):
        env = py_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT="rel/p.anat")
        r = subprocess.run([sys.executable, WORKER, "--chdir", self.other, "100", "1"], cwd=self.dir,
                           env=env, capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertEqual(anat_files(os.path.join(self.dir, "rel")), ["p.anat"])
        self.assertEqual(anat_files(self.other), [])


class NativeTree(unittest.TestCase):
    """samples/proc_tree: children by fork, a program that execs itself, posix_spawn."""

    def profile(self, *args):
        d = tmpdir()
        r = run_in(d, "-o", "f.anat", "--", PROC_TREE, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        ro = {}
        for l in r.stdout.splitlines():
            if l.startswith("role "):
                x = json.loads(l[5:])
                ro.setdefault(x["role"], []).append(x)
        return d, r, ro

    @unittest.skipIf(SANITIZER_RUNTIME, "fork of a multithreaded process hangs in this ASan runtime")
    def test_forked_workers(self):
        d, r, ro = self.profile("fork", "6")
        rows, suggest = listing(r.stderr)
        parent = ro["parent"][0]["pid"]
        want = {"f.anat": (parent, "exit status 0")}
        for w in ro["worker"]:
            if w["cuda"]:
                want["f-%d.anat" % w["pid"]] = (w["pid"], "finished" if w["end"] == "exit" else
                                                "trace unfinished (killed, crashed, _exit or exec)")
        self.assertEqual(sorted(rows), sorted(want), r.stderr)
        for name, (pid, ended) in want.items():
            self.assertEqual(rows[name][0], pid)
            self.assertTrue(rows[name][1].startswith(ended), rows[name])
            self.assertTrue(rows[name][2].startswith("proc_tree fork 6"), rows[name])
        self.assertEqual(suggest, "anatomist report .")
        self.assertFalse([f for f in anat_files(d) if f.endswith(".live")])

    def test_exec(self):
        d, r, ro = self.profile("exec", "self")
        rows, _ = listing(r.stderr)
        pid = ro["after-exec"][0]["pid"]
        self.assertEqual(sorted(rows), ["f.1.anat", "f.anat"], r.stderr)
        self.assertEqual(rows["f.1.anat"][:2], (pid, "exit status 0"))
        self.assertEqual(rows["f.anat"][0], pid)
        self.assertTrue(rows["f.anat"][1].startswith("replaced by exec; "), rows["f.anat"])
        self.assertEqual(dump(os.path.join(d, "f.anat"), ended="recovered")[-1]["kind"], "END")

    def test_posix_spawn(self):
        d, r, ro = self.profile("spawn")
        rows, _ = listing(r.stderr)
        child, parent = ro["spawned"][0]["pid"], ro["spawner"][0]["pid"]
        self.assertEqual(rows, {"f.anat": (parent, "exit status 0", "proc_tree spawn"),
                                "f-%d.anat" % child: (child, "finished", "proc_tree spawned")})


if __name__ == "__main__":
    unittest.main()

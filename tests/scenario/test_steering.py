"""The program never notices, and nobody else steers the profiler (docs/reliability.md,
"The program never notices"): errno as the program had it, a program that closes or
reuses descriptors, forks beside busy threads, a FIFO planted at the live file's name, a
live file truncated under a running program, another job's live files beside this run's,
signals sent to `anatomist run`, a file size limit below the trace header.

Each number checked here is one the program itself knows (it prints it) or one the run
could get wrong: counts of allocations the probe made, sizes of its own files, exit codes."""
import json
import os
import signal
import subprocess
import time
import unittest

from common import (ANATOMIST, BUILD, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, anatomist, clean_env, run,
                    tmpdir)

PROBE = os.path.join(BUILD, "tests", "scenario_steer_probe")
FORKS = int(os.environ.get("ANA_STEER_FORKS", "10000"))


def traced_env(trace, **extra):
    return clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace, **extra)


def info(trace):
    r = anatomist("info", trace, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def wait_for(path, seconds):
    """Waits until path exists (a process of the test opened its trace), at most `seconds`."""
    for _ in range(int(seconds * 100)):
        if os.path.exists(path):
            return
        time.sleep(0.01)


def allocs(trace):
    return info(trace)["records"].get("alloc", 0)


class Steering(unittest.TestCase):
    def test_errno_is_the_programs(self):
        """errno at start and after the first call, with settings whose parse sets ERANGE."""
        plain = run([PROBE, "errno"], env=clean_env(LD_LIBRARY_PATH=SIM_LIB))
        self.assertEqual(plain.stdout, "errno at start 0\ncudaMalloc -> 0, errno 0\n")
        d = tmpdir()
        for extra in ({}, {"ANATOMIST_STACK_DEPTH": "99999999999999999999"},
                      {"ANATOMIST_FLUSH_MS": "99999999999999999999", "RANK": "99999999999999999999"}):
            r = run([PROBE, "errno"], env=traced_env(os.path.join(d, "e.anat"), **extra))
            self.assertEqual(r.stdout, plain.stdout, extra)

    def check_closefds(self, how):
        d = tmpdir()
        trace, own = os.path.join(d, "c.anat"), os.path.join(d, "own.txt")
        r = run([PROBE, "closefds", how, "20100", own], env=traced_env(trace))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "%s: 15 bytes\n" % own)
        self.assertEqual(os.path.getsize(own), 15, "the program's file got our bytes")
        self.assertEqual(r.stderr, "")
        i = info(trace)
        self.assertEqual(i["ended"], "exit")
        # the first allocation, then 20,100 in the loop: all in the trace
        self.assertEqual(i["records"]["alloc"], 20101)
        self.assertFalse(os.path.exists(trace + ".live"))

    def test_program_closes_every_descriptor(self):
        self.check_closefds("closefrom")

    def test_program_dups_over_descriptors(self):
        self.check_closefds("dup2")

    @unittest.skipIf(SANITIZER_RUNTIME, "fork of a multithreaded process hangs in this ASan runtime")
    def test_forks_beside_busy_threads(self):
        """Children forked while other threads are inside hooks exit cleanly, every one."""
        d = tmpdir()
        r = run([PROBE, "forks", "2", str(FORKS)], env=traced_env(os.path.join(d, "f.anat")),
                timeout=900)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "forks %d, died 0, nonzero 0\n" % FORKS)
        self.assertNotIn("corruption", r.stderr)

    def test_fifo_at_the_live_name(self):
        """A FIFO planted where the live file (or the trace) will be neither blocks the
        program nor is written to: the program runs on, the profiler says why once."""
        d = tmpdir()
        for name in ("t.anat.live", "t.anat"):
            trace = os.path.join(d, "t.anat")
            for f in (trace, trace + ".live"):
                if os.path.lexists(f):
                    os.unlink(f)
            os.mkfifo(os.path.join(d, name))
            r = run([PROBE, "loop", "50", "0"], env=traced_env(trace), timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, "done\n"), r.stderr)
            self.assertLessEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn("not a regular file", r.stderr)
            if name == "t.anat.live":
                self.assertEqual(allocs(trace), 50)  # the trace itself is whole

    def test_live_file_truncated_under_the_program(self):
        d = tmpdir()
        trace = os.path.join(d, "t.anat")
        p = subprocess.Popen([PROBE, "loop", "4000", "500"], env=traced_env(trace),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(trace + ".live", 2)
        time.sleep(0.3)
        os.truncate(trace + ".live", 0)
        out, err = p.communicate(timeout=120)
        self.assertEqual((p.returncode, out), (0, "done\n"), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("truncated by another process", err)
        i = info(trace)  # the trace is readable and says how it ended
        self.assertIn("truncated by another process", i["end_detail"])
        self.assertLess(i["records"].get("alloc", 0), 4000)

    def test_file_size_limit_below_the_header_leaves_no_stub(self):
        import resource
        d = tmpdir()
        trace = os.path.join(d, "t.anat")

        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

        r = subprocess.run([PROBE, "loop", "5", "0"], env=traced_env(trace), preexec_fn=limit,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "done\n"), r.stderr)
        self.assertEqual([f for f in os.listdir(d) if f.endswith(".anat")], [], r.stderr)


class RunAndRecover(unittest.TestCase):
    def test_run_forwards_sigint_sent_to_it(self):
        d = tmpdir()
        p = subprocess.Popen([ANATOMIST, "run", "--sim", "-q", "-o", os.path.join(d, "t.anat"), "--",
                              PROBE, "loop", "100000", "1000"], env=clean_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("SIGINT sent to anatomist run did not reach the program")
        self.assertEqual(p.returncode, 128 + signal.SIGINT)

    def test_run_reports_a_refused_path(self):
        d = tmpdir()
        trace = os.path.join(d, "t.anat")
        os.mkfifo(trace)
        r = anatomist("run", "--sim", "-o", trace, "--", PROBE, "loop", "5", "0", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("trace written to", r.stderr)
        self.assertIn("no trace was written to " + trace, r.stderr)

    def test_run_flush_ms_in_the_preloads_range(self):
        for bad in ("5", "10001"):
            r = anatomist("run", "--flush-ms", bad, "--", "true")
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("10 to 10000", r.stderr)

    def test_run_recovers_its_own_trace_under_a_glob_like_name(self):
        """A name with [ ] is a name, not a pattern: the killed program's live file is found."""
        d = tmpdir()
        trace = os.path.join(d, "x[1].anat")
        p = subprocess.Popen([ANATOMIST, "run", "--sim", "-o", trace, "--", PROBE, "loop", "100000",
                              "200"], env=clean_env(ANATOMIST_FLUSH_MS="10000"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(trace + ".live", 3)
        time.sleep(0.5)
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        self.assertEqual(len(kids), 1)
        os.kill(int(kids[0]), signal.SIGKILL)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 128 + signal.SIGKILL, err)
        self.assertIn("killed by signal 9 (SIGKILL); ", err)
        self.assertIn("records recovered from its live file", err)
        self.assertFalse(os.path.exists(trace + ".live"))
        self.assertEqual(info(trace)["ended"], "recovered")

    @unittest.skipIf(SANITIZER_RUNTIME, "LeakSanitizer cannot stop the world inside a new pid namespace")
    def test_run_leaves_another_jobs_live_file(self):
        """A job in another pid namespace writes into the same directory with the default
        name pattern; this run's end-of-run recovery must not end its trace."""
        if subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode:
            self.skipTest("no second pid namespace on this machine")
        d = tmpdir()
        pattern = os.path.join(d, "anatomist-%p.anat")
        other = subprocess.Popen(["unshare", "--pid", "--fork", ANATOMIST, "run", "--sim", "-q", "-o",
                                  pattern, "--", PROBE, "loop", "3000", "1000"], env=clean_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lives = []
        for _ in range(500):
            lives = [f for f in os.listdir(d) if f.endswith(".live")]
            if lives:
                break
            time.sleep(0.01)
        self.assertEqual(len(lives), 1)
        ours = anatomist("run", "--sim", "-o", pattern, "--", PROBE, "loop", "10", "0", timeout=60)
        self.assertEqual(ours.returncode, 0, ours.stderr)
        self.assertTrue(os.path.exists(os.path.join(d, lives[0])), "our run ended the other job's trace")
        out, err = other.communicate(timeout=120)
        self.assertEqual(other.returncode, 0, err)
        other_trace = os.path.join(d, lives[0][:-len(".live")])
        i = info(other_trace)
        self.assertEqual((i["ended"], i["records"]["alloc"]), ("exit", 3000))

    def test_recover_refuses_a_live_file_from_elsewhere(self):
        """`anatomist recover` cannot ask another host's kernel whether a pid runs."""
        d = tmpdir()
        trace = os.path.join(d, "t.anat")
        p = subprocess.Popen([PROBE, "loop", "100000", "200"], env=traced_env(trace, ANATOMIST_FLUSH_MS="10000"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(trace + ".live", 3)
        time.sleep(0.3)
        p.kill()
        p.communicate()
        with open(trace + ".live", "r+b") as f:  # as if written on another host
            f.seek(400)
            f.write(bytes(range(1, 17)))
        r = anatomist("recover", trace)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("another host", r.stderr)
        self.assertTrue(os.path.exists(trace + ".live"))
        r = anatomist("recover", "--force", trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(info(trace)["ended"], "recovered")


if __name__ == "__main__":
    unittest.main()

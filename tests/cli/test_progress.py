"""The progress line of a long load: on a terminal, `anatomist report` on a trace of 1e7
records (bench/gen_trace, which says how many it wrote) redraws "reading NAME: N M records,
P%, R M records/s" with N growing up to at most the trace's records and P up to 100, then
wipes it; then names each stage of the work after the reading as it begins ("NAME: putting
the records in order, T s in", then the report's nine analyses "(i of 9)", each once, none
before those whose results it reads, T never going back) and wipes that too; on a pipe
nothing at all is written to stderr, and standard output is the same bytes either way."""
import os
import pty
import re
import subprocess
import tempfile
import unittest

from anacli import ANATOMIST, BUILD

GEN = os.path.join(BUILD, "bench", "gen_trace")
LINE = re.compile(rb"\ranatomist: reading big\.anat: ([0-9.]+) M records, ([0-9]+)%, "
                  rb"([0-9.]+) M records/s(?:, ([0-9.]+) s left)? *")

STAGE = re.compile(rb"\ranatomist: big\.anat: ([a-zA-Z' ]+?)(?: \(([0-9]) of ([0-9])\))?, "
                   rb"([0-9.]+) s in *")
WIPE = re.compile(rb"\r +\r")
# What the report's stages are (docs/overhead.md; analyses/report.c says them): the
# analyses in the order one thread runs them (-j 1), and what each must come after.
ANALYSES = [b"replaying the memory events", b"timing the GPU's work", b"timing the library calls",
            b"pairing the NVTX ranges", b"finding the steps", b"classifying the GPU time",
            b"classifying the device memory", b"explaining failed allocations", b"advising"]
AFTER = {b"classifying the GPU time": [b"timing the GPU's work", b"timing the library calls",
                                       b"finding the steps"],
         b"classifying the device memory": [b"replaying the memory events", b"finding the steps"],
         b"explaining failed allocations": [b"classifying the device memory"],
         b"advising": [b"explaining failed allocations"]}


def on_terminal(argv):
    """Runs argv with stderr a pseudo-terminal; (returncode, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read()
    p.wait(timeout=300)
    os.close(master)
    return p.returncode, out, got


@unittest.skipUnless(os.path.exists(GEN), "bench/gen_trace is not built")
class Progress(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ana-progress-")
        cls.trace = os.path.join(cls.tmp.name, "big.anat")
        r = subprocess.run([GEN, "--records", "1e7", "--out", cls.trace], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        facts = dict(l.split("=", 1) for l in r.stdout.split() if "=" in l)
        cls.records = int(facts["records"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_a_terminal_sees_the_line_grow_and_then_wiped(self):
        for jobs in ([], ["-j", "1"], ["-j", "3"]):
            self.check_terminal(jobs)

    def check_terminal(self, jobs):
        rc, out, tty = on_terminal([ANATOMIST, "report", *jobs, self.trace])
        self.assertEqual(rc, 0, tty)
        lines = LINE.findall(tty)
        self.assertGreaterEqual(len(lines), 1, tty[:500])
        counts = [float(n) * 1e6 for n, _, _, _ in lines]
        shares = [int(p) for _, p, _, _ in lines]
        self.assertEqual(counts, sorted(counts))
        self.assertLessEqual(counts[-1], self.records + 0.05e6)
        self.assertTrue(all(0 <= s <= 100 for s in shares), shares)
        self.assertEqual(shares, sorted(shares))
        # Every rate is records over a positive time: finite and above zero.
        self.assertTrue(all(float(r) > 0 for _, _, r, _ in lines))
        # After the reading, the ordering, then each analysis once, never before those it
        # reads (on one thread, in that one order), at times that never go back.
        stages = STAGE.findall(tty)
        names = [name for name, _, _, _ in stages]
        self.assertEqual(names[0], b"putting the records in order", tty[-2000:])
        self.assertEqual(sorted(names[1:]), sorted(ANALYSES), tty[-2000:])
        for name, before in AFTER.items():
            for b in before:
                self.assertLess(names.index(b), names.index(name), (jobs, names))
        if jobs == ["-j", "1"]:
            self.assertEqual(names[1:], ANALYSES)
        self.assertEqual([(i, n) for _, i, n, _ in stages],
                         [(b"", b"")] + [(str(k).encode(), b"9") for k in range(1, 10)])
        times = [float(t) for _, _, _, t in stages]
        self.assertEqual(times, sorted(times))
        self.assertGreaterEqual(times[0], 0.5)
        # The reading's lines all come before the first stage.
        self.assertLess(max(m.end() for m in LINE.finditer(tty)),
                        min(m.start() for m in STAGE.finditer(tty)))
        # The last thing on the terminal wipes the line: a carriage return, blanks, another.
        self.assertRegex(tty, rb"\r +\r$")
        # Nothing else: every byte on the terminal is a progress line, a stage or a wipe.
        self.assertEqual(WIPE.sub(b"", STAGE.sub(b"", LINE.sub(b"", tty))), b"")
        pipe = subprocess.run([ANATOMIST, "report", *jobs, self.trace], capture_output=True,
                              timeout=300)
        self.assertEqual(pipe.stdout, out)

    def test_a_pipe_gets_no_progress(self):
        r = subprocess.run([ANATOMIST, "report", "--json", self.trace], capture_output=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stderr, b"")


if __name__ == "__main__":
    unittest.main()

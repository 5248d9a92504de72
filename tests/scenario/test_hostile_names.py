"""Terminal controls and newlines in a trace's strings (issue 24, reader side;
docs/reliability.md "Hostile files and names").

The escape probe (hostile/escape_probe.c) names its kernels and an NVTX range with OSC
(retitle), CSI (colour, clear screen), BEL, DEL, a C1 CSI (U+009B as UTF-8), a tab, and a
newline followed by a line shaped like a report's; the test runs a copy of it at a path
made of such names and passes such an argument. Every text output for people — report,
info, oom, the markdown diff, the job report of a directory, classify — read through a
pipe (as `report | less -R` or a CI log does) holds no control byte but its own newlines
(and classify's column tabs): the names show as \\xNN, and no forged line appears. JSON
keeps the exact bytes (escaped by the JSON writer). About 2 s."""
import json
import os
import re
import shutil
import subprocess
import unittest

from common import ANATOMIST, BUILD, anatomist, clean_env, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_escape_probe")
K1 = "k1\x1b]0;pwned\x07\x1b[31mred\x1b[0m\x9b2J"   # escape.h (\x9b: U+009B)
K2 = "k2\n  FAKE LINE 100.0%\tx\x7f"
RANGE = "r\x1b[2J\nFAKE RANGE"
ARG = "arg\x1b]0;T\x07\nFAKE ARG"
DIR = "d\x1b[31m\nFAKE DIR"
EXE = "p\x1b]0;x\x07\x9b"
HEAD = "head\x1b]0;t\x07\nFAKE HEAD.anat"  # a job directory's file names are anyone's

# What a name may not bring: C0 but newline, DEL, C1 in UTF-8 (tabs are checked apart).
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def shown(s):
    """s as a text output shows it: control bytes as \\xNN (C1 as its two UTF-8 bytes)."""
    b, out, i = s.encode(), b"", 0
    while i < len(b):
        if b[i] == 0xc2 and i + 1 < len(b) and 0x80 <= b[i + 1] <= 0x9f:
            out += b"\\xc2\\x%02x" % b[i + 1]
            i += 1
        elif b[i] < 0x20 or b[i] == 0x7f:
            out += b"\\x%02x" % b[i]
        else:
            out += bytes([b[i]])
        i += 1
    return out


def run_probe(out, *args):
    p = anatomist("run", "--sim", "-q", "-o", out, "--", *args, env=clean_env())
    assert p.returncode == 0, p.stdout + p.stderr
    return out


class Names(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = tmpdir()
        exe_dir = os.path.join(d, DIR)
        os.makedirs(exe_dir)
        cls.exe = os.path.join(exe_dir, EXE)
        shutil.copy2(PROBE, cls.exe)
        cls.job = os.path.join(d, "job")
        os.makedirs(cls.job)
        cls.base = run_probe(os.path.join(cls.job, "base.anat"), PROBE, ARG)
        cls.head = run_probe(os.path.join(cls.job, HEAD), cls.exe, "--extra", ARG)
        cls.oom = run_probe(os.path.join(d, "oom.anat"), cls.exe, "--oom", ARG)

    def text(self, *args, stdin=None):
        p = subprocess.run([ANATOMIST, *args], capture_output=True, env=clean_env(),
                           input=stdin, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def assert_clean(self, out, *names, tabs=False):
        bad = CONTROL.search(out)
        self.assertIsNone(bad, "raw control byte %r in:\n%r" % (bad and bad.group(), out[:3000]))
        if not tabs:
            self.assertNotIn(b"\t", out)
        for line in out.splitlines():
            self.assertFalse(line.lstrip(b" |`").startswith(b"FAKE"), line)
        for n in names:
            self.assertIn(shown(n), out)

    def test_report(self):
        self.assert_clean(self.text("report", self.head), K1, K2, ARG, DIR + "/" + EXE)

    def test_info(self):
        self.assert_clean(self.text("info", self.head), ARG, DIR + "/" + EXE)

    def test_oom(self):
        out = self.text("oom", self.oom)
        self.assert_clean(out, EXE)
        self.assertIn(b"cudaMalloc of 1.00 PiB", out)

    def test_markdown_diff(self):
        self.assert_clean(self.text("diff", self.base, self.head), K1, ARG, HEAD)

    def test_job_report_of_a_directory(self):
        out = self.text("report", self.job)
        self.assert_clean(out, HEAD)
        self.assertIn(b"base.anat", out)

    def test_classify(self):
        out = self.text("classify", stdin=(K1 + "\n" + "a\x1b[0mb\n").encode())
        self.assert_clean(out, K1, "a\x1b[0mb", tabs=True)
        self.assertEqual(out.count(b"\t"), 2)

    def test_json_keeps_the_exact_bytes(self):
        r = json.loads(self.text("report", self.head, "--json"))
        names = json.dumps(r)
        self.assertIn(json.dumps(K1)[1:-1], names)
        self.assertIn(json.dumps(K2)[1:-1], names)


if __name__ == "__main__":
    unittest.main()

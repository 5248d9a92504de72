"""Files others may plant where the analyzer reads and writes (issue 24, reader side;
docs/reliability.md "Hostile files and names").

* Inputs: a FIFO named as a trace, a Kineto JSON or a rank's report JSON (or a link to
  one), or beside a trace as its live file, or among a job directory's traces, would block
  the reader in open(2) for ever. Every command says in one line that the file is not a
  regular file and exits 2; a FIFO live file is left out with a note; a directory scan
  skips it with a note. Every command has a timeout: a hang fails the test.
* Stubs: a process under RLIMIT_FSIZE below the 32-byte header leaves 0-31 byte traces;
  `report DIR/` skips them with a note naming each, `report STUB` still fails.
* Outputs: a symbolic link planted at OUT.tmp (the old temporary name) or at OUT is never
  written through; OUT that is a link or a FIFO is refused in one line, exit 2.

About 3 s."""
import os
import stat
import subprocess
import unittest

from common import ANATOMIST, BUILD, PRELOAD, SIM_LIB, anatomist, clean_env, sample, tmpdir

HANG_S = 20  # far longer than any of these commands takes on a regular file
NOT_REGULAR = "not a regular file"


def bounded(test, *args):
    """anatomist ARGS with a time limit: a reader blocked on a FIFO fails the test."""
    try:
        return subprocess.run([ANATOMIST, *args], capture_output=True, text=True,
                              env=clean_env(), timeout=HANG_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        test.fail("anatomist %s: still running after %d s (blocked on a FIFO?)"
                  % (" ".join(args), HANG_S))


def traced(path, rank=None):
    env = clean_env(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank)) if rank is not None \
        else clean_env()
    p = subprocess.run([ANATOMIST, "run", "--sim", "-q", "-o", path, "--", sample("copies")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return path


def killed(path):
    """A trace whose process was killed before its records were flushed: what it holds
    past its header is in its live file, which the readers open."""
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=path,
                    ANATOMIST_FLUSH_MS="10000")
    p = subprocess.run([sample("alloc_loop"), "0", "20", "abort"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode < 0, p.stderr
    assert os.path.exists(path + ".live")
    return path


class Fifos(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tmpdir()
        cls.good = traced(os.path.join(cls.d, "good.anat"))
        cls.fifo = os.path.join(cls.d, "fifo.anat")
        os.mkfifo(cls.fifo)
        cls.fifo_json = os.path.join(cls.d, "rank.json")
        os.mkfifo(cls.fifo_json)
        cls.link = os.path.join(cls.d, "link.anat")
        os.symlink(cls.fifo, cls.link)

    def assert_refused(self, p, name, args):
        self.assertEqual(p.returncode, 2, (args, p.stderr))
        self.assertIn(name, p.stderr, args)
        self.assertIn(NOT_REGULAR, p.stderr, args)

    def test_a_fifo_named_as_an_input_is_refused(self):
        for name in (self.fifo, self.link):
            for args in (["info"], ["report"], ["report", "--json"], ["oom"], ["flame"],
                         ["html", "-o", os.path.join(self.d, "x.html")],
                         ["export", "-o", os.path.join(self.d, "x.json")], ["recover"]):
                with self.subTest(args=args, name=name):
                    self.assert_refused(bounded(self, *args, name), name, args)
            for pair in ((self.good, name), (name, self.good)):
                with self.subTest(diff=pair):
                    self.assert_refused(bounded(self, "diff", *pair), name, "diff")

    def test_a_fifo_named_as_a_json_input_is_refused(self):
        """A Kineto trace or a rank's `report --json` document is opened as JSON."""
        for args in (["report", self.fifo_json], ["report", self.good, self.fifo_json],
                     ["html", self.good, self.fifo_json, "-o", os.path.join(self.d, "j.html")]):
            with self.subTest(args=args):
                self.assert_refused(bounded(self, *args), self.fifo_json, args)

    def test_a_fifo_live_file_is_left_out_with_a_note(self):
        d = tmpdir()
        trace = killed(os.path.join(d, "k.anat"))
        os.rename(trace + ".live", os.path.join(d, "kept"))
        os.mkfifo(trace + ".live")
        for args in (["report"], ["info"], ["oom"], ["report", "--json"]):
            with self.subTest(args=args):
                p = bounded(self, *args, trace)
                self.assertEqual(p.returncode, 0, p.stderr)
                notes = [l for l in p.stderr.splitlines() if trace + ".live" in l]
                self.assertEqual(len(notes), 1, p.stderr)
                self.assertIn(NOT_REGULAR, notes[0])
        p = bounded(self, "recover", trace)
        self.assert_refused(p, trace + ".live", "recover")
        self.assertTrue(stat.S_ISFIFO(os.lstat(trace + ".live").st_mode))

    def test_a_fifo_in_a_job_directory_is_skipped(self):
        d = tmpdir()
        for r in (0, 1):
            traced(os.path.join(d, "r%d.anat" % r), rank=r)
        os.mkfifo(os.path.join(d, "r2.anat"))
        for args in (["report", d], ["report", d, "--json"],
                     ["html", d, "-o", os.path.join(tmpdir(), "j.html")]):
            with self.subTest(args=args):
                p = bounded(self, *args)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("r2.anat: it is " + NOT_REGULAR, p.stderr)
                self.assertIn("skipped", p.stderr)


class Stubs(unittest.TestCase):
    """What a process under a file size limit below the header leaves: 0-31 bytes."""

    def test_stubs_in_a_job_directory_are_skipped_each_with_a_note(self):
        d = tmpdir()
        for r in (0, 1):
            traced(os.path.join(d, "r%d.anat" % r), rank=r)
        with open(os.path.join(d, "r0.anat"), "rb") as f:
            head = f.read(32)
        stubs = {"s0.anat": b"", "s8.anat": head[:8], "s31.anat": head[:31],
                 "junk.anat": b"x" * 64}
        for name, data in stubs.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        p = bounded(self, "report", d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 ranks", p.stdout)
        lines = p.stderr.splitlines()
        for name, data in stubs.items():
            mine = [l for l in lines if os.path.join(d, name) in l]
            self.assertEqual(len(mine), 1, p.stderr)
            self.assertIn("skipped", mine[0])
            if len(data) < 32:
                self.assertIn("%s: %d bytes, not a trace; skipped" % (name, len(data)), mine[0])
        j = bounded(self, "report", d, "--json")
        self.assertEqual(j.returncode, 0, j.stderr)

    def test_a_directory_of_stubs_only_fails(self):
        d = tmpdir()
        open(os.path.join(d, "a.anat"), "wb").close()
        p = bounded(self, "report", d)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("a.anat: 0 bytes, not a trace; skipped", p.stderr)
        self.assertIn("holds no usable traces", p.stderr)

    def test_a_stub_named_on_the_command_line_fails_with_file_and_offset(self):
        d = tmpdir()
        stub = os.path.join(d, "a.anat")
        with open(stub, "wb") as f:
            f.write(b"ANATRACE")
        for args in (["report", stub], ["report", stub, traced(os.path.join(d, "b.anat"))]):
            with self.subTest(args=args):
                p = bounded(self, *args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(stub + ": offset 0", p.stderr)


class PlantedOutputs(unittest.TestCase):
    """-o OUT in a directory others can write."""

    @classmethod
    def setUpClass(cls):
        cls.trace = traced(os.path.join(tmpdir(), "t.anat"))

    def commands(self, out):
        return {"html": ["html", self.trace, "-o", out + ".html"],
                "flame": ["flame", self.trace, "-o", out + ".svg"],
                "diff": ["diff", self.trace, self.trace, "-o", out + ".md"],
                "export-json": ["export", self.trace, "-o", out + ".json"],
                "export-sqlite": ["export", self.trace, "-o", out + ".sqlite"]}

    def victim(self, d):
        v = os.path.join(d, "victim")
        with open(v, "w") as f:
            f.write("the user's own file\n")
        os.chmod(v, 0o600)
        return v

    def assert_untouched(self, v):
        with open(v) as f:
            self.assertEqual(f.read(), "the user's own file\n")
        self.assertEqual(stat.S_IMODE(os.stat(v).st_mode), 0o600)

    def test_a_link_at_the_old_temporary_name_is_not_written_through(self):
        for cmd, args in self.commands("out").items():
            with self.subTest(cmd=cmd):
                d = tmpdir()
                v = self.victim(d)
                out = os.path.join(d, os.path.basename(args[-1]))
                args = args[:-1] + [out]
                os.symlink(v, out + ".tmp")
                p = bounded(self, *args)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assert_untouched(v)
                self.assertTrue(stat.S_ISREG(os.lstat(out).st_mode))
                self.assertGreater(os.path.getsize(out), 0)
                left = sorted(n for n in os.listdir(d) if n not in ("victim",))
                self.assertEqual(left, sorted([os.path.basename(out), os.path.basename(out) + ".tmp"]))

    def test_a_link_or_fifo_at_the_output_is_refused(self):
        for cmd, args in self.commands("out").items():
            for kind in ("link", "fifo"):
                with self.subTest(cmd=cmd, kind=kind):
                    d = tmpdir()
                    v = self.victim(d)
                    out = os.path.join(d, os.path.basename(args[-1]))
                    if kind == "link":
                        os.symlink(v, out)
                    else:
                        os.mkfifo(out)
                    p = bounded(self, *(args[:-1] + [out]))
                    self.assertEqual(p.returncode, 2, p.stderr)
                    lines = [l for l in p.stderr.splitlines() if l.startswith("anatomist:")]
                    what = "a symbolic link" if kind == "link" else NOT_REGULAR
                    self.assertEqual(lines, ["anatomist: %s: cannot write %s: it is %s; remove "
                                             "it or choose another -o" % (args[0], out, what)],
                                     p.stderr)
                    self.assert_untouched(v)
                    self.assertEqual(sorted(os.listdir(d)), sorted(["victim", os.path.basename(out)]))

    def test_the_output_gets_the_mode_fopen_would_give(self):
        for umask in (0o022, 0o077):
            d = tmpdir()
            out = os.path.join(d, "f.svg")
            p = subprocess.run([ANATOMIST, "flame", self.trace, "-o", out], capture_output=True,
                               text=True, env=clean_env(), timeout=HANG_S, umask=umask)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o666 & ~umask)


if __name__ == "__main__":
    unittest.main()

"""Security of what Anatomist writes (docs/reliability.md).

* Files: the trace and its live file (`T.live`, there while the traced process runs and
  after it crashed) are created rw-r--r-- or stricter, under umask 0 and umask 077.
* Symlinks: one planted at the output path or at `T.live` (to a file the test owns, or
  dangling) is never followed — the target is unchanged, nothing is created through it —
  the program runs as without the profiler (same stdout and exit code), and stderr has one
  line "anatomist: ..." saying the trace could not be written and why. A regular file left
  at the output path by an earlier run is replaced.
* Strings from the trace: the SVG flame graph is well-formed XML whose only script is its
  own and whose frame names are the analyzer's, as text; the markdown diff rendered by
  cmark-gfm (GitHub's renderer, raw HTML allowed) holds no tag made of a trace's string.
  The traced program (hostile/, hostile_run.py) names its kernels, functions, NVTX ranges,
  thread, arguments, executable and library with markup. The HTML pages are checked in a
  browser: tests/browser/test_hostile_strings.py.

cmark-gfm is Debian's package (scripts/setup --tests); without it the markdown test is
skipped, except under CI=true. About 3 s."""
import errno
import html.parser
import os
import shutil
import signal
import stat
import subprocess
import unittest
import xml.etree.ElementTree as ET

import hostile_run
from common import (BUILD, PRELOAD, SIM_LIB, anatomist, clean_env, dump, ledger, of, run,
                    sample, tmpdir)
from hostile_run import H1, H2, H3

PAUSE = os.path.join(BUILD, "tests", "scenario_pause_probe")
COPIES = [sample("copies")]
# Why a planted link stops the trace: O_NOFOLLOW (ELOOP) or O_EXCL (EEXIST), in words.
REASONS = ("symbolic link", "symlink", os.strerror(errno.ELOOP), os.strerror(errno.EEXIST))


def traced_env(trace):
    return clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace)


def anatomist_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("anatomist:")]


class Modes(unittest.TestCase):
    """The pause probe holds its trace open until told to go on: the files are looked at
    while it runs, after it exited, and after it was killed."""

    def start(self, trace, umask):
        p = subprocess.Popen([PAUSE], env=traced_env(trace), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             umask=umask)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        self.assertEqual(p.stdout.readline(), "ready\n")
        return p

    def assert_mode(self, path, umask):
        st = os.lstat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode), path)
        mode = stat.S_IMODE(st.st_mode)
        self.assertEqual(mode & ~0o644, 0, "%s: mode %o, more than rw-r--r--" % (path, mode))
        self.assertEqual(mode & umask, 0, "%s: mode %o under umask %03o" % (path, mode, umask))

    def test_trace_and_live_file_while_running_and_after_exit(self):
        for umask in (0, 0o077):
            trace = os.path.join(tmpdir(), "t.anat")
            p = self.start(trace, umask)
            self.assert_mode(trace, umask)
            self.assert_mode(trace + ".live", umask)
            out, err = p.communicate("go\n", timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertEqual(ledger(out), {"mallocs": 1, "frees": 1})
            self.assert_mode(trace, umask)
            self.assertEqual(len(of(dump(trace), "ALLOC")), 1)

    def test_live_file_after_a_crash(self):
        for umask in (0, 0o077):
            trace = os.path.join(tmpdir(), "t.anat")
            p = self.start(trace, umask)
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
            self.assertEqual(p.returncode, -signal.SIGKILL)
            self.assert_mode(trace, umask)
            self.assert_mode(trace + ".live", umask)


class Symlinks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = run(COPIES, env=clean_env(LD_LIBRARY_PATH=SIM_LIB))
        assert cls.plain.returncode == 0, cls.plain.stderr

    def traced(self, trace):
        p = run(COPIES, env=traced_env(trace))
        self.assertEqual((p.returncode, p.stdout), (self.plain.returncode, self.plain.stdout))
        return p

    def assert_refused(self, p, trace):
        lines = anatomist_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(trace, lines[0])
        self.assertTrue(any(r in lines[0] for r in REASONS), lines[0])
        self.assertEqual(p.stderr.replace(lines[0] + "\n", "", 1), self.plain.stderr)

    def plant(self, suffix, dangling):
        """A link at trace+suffix to a file of the test (or to a name that does not exist);
        returns (trace, link, target)."""
        d = tmpdir()
        trace = os.path.join(d, "t.anat")
        target = os.path.join(d, "victim")
        if not dangling:
            with open(target, "w") as f:
                f.write("the test's own file\n")
            os.chmod(target, 0o600)
        os.symlink(target, trace + suffix)
        return trace, trace + suffix, target

    def check_link(self, suffix):
        for dangling in (False, True):
            with self.subTest(dangling=dangling):
                trace, link, target = self.plant(suffix, dangling)
                p = self.traced(trace)
                self.assert_refused(p, trace)
                self.assertEqual(os.readlink(link), target)  # the link itself is left alone
                if dangling:
                    self.assertFalse(os.path.lexists(target), "a file was created through the link")
                else:
                    with open(target) as f:
                        self.assertEqual(f.read(), "the test's own file\n")
                    self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o600)

    def test_link_at_the_trace_path(self):
        self.check_link("")

    def test_link_at_the_live_path(self):
        self.check_link(".live")

    def test_a_file_from_an_earlier_run_is_replaced(self):
        trace = os.path.join(tmpdir(), "t.anat")
        with open(trace, "w") as f:
            f.write("an earlier run's trace\n" * 1000)
        p = self.traced(trace)
        self.assertEqual(p.stderr, self.plain.stderr)
        led = ledger(p.stdout)
        recs = dump(trace)
        self.assertEqual(len(of(recs, "MEMCPY")), sum(1 for o in led["ops"] if o["dir"] != "memset"))
        self.assertEqual(len(of(recs, "MEMSET")), sum(1 for o in led["ops"] if o["dir"] == "memset"))


class HostileStrings(unittest.TestCase):
    """The SVG flame graph and the markdown diff of the hostile probe's traces."""

    @classmethod
    def setUpClass(cls):
        cls.h = hostile_run.make(tmpdir())

    def folded_names(self, trace, metric):
        r = anatomist("flame", trace, "--metric", metric, "--format", "folded")
        self.assertEqual(r.returncode, 0, r.stderr)
        return {f for line in r.stdout.splitlines() for f in line.rsplit(" ", 1)[0].split(";")}

    def test_svg_flame_graph(self):
        for metric in ("gpu-time", "peak-memory"):
            out = os.path.join(tmpdir(), "f.svg")
            r = anatomist("flame", self.h.head, "--metric", metric, "--format", "svg", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            root = ET.parse(out).getroot()  # well-formed, or this raises
            tags = [e.tag.split("}")[-1] for e in root.iter()]
            self.assertLessEqual(set(tags), {"svg", "style", "rect", "text", "g", "title", "script"})
            self.assertEqual(tags.count("script"), 1)
            handlers = [(e.tag, a) for e in root.iter() for a in e.attrib if a.lower().startswith("on")]
            self.assertEqual(handlers, [])
            titles = {e.text.rsplit(" (", 1)[0] for e in root.iter() if e.tag.endswith("title")}
            names = self.folded_names(self.h.head, metric)
            self.assertLessEqual(names, titles, metric)
            self.assertIn(H1, names)
            self.assertTrue(any("<img" in n for n in names), names)
            self.assertTrue(any("<svg" in n for n in names), names)

    def test_markdown_diff_rendered_by_github_s_renderer(self):
        cmark = shutil.which("cmark-gfm")
        if not cmark:
            msg = "cmark-gfm not found (Debian package cmark-gfm; scripts/setup --tests installs it)"
            if os.environ.get("CI") == "true":
                self.fail(msg)
            self.skipTest(msg)
        # The traces under a name with what ends a code span or a table cell: ` | \
        d = os.path.join(tmpdir(), "a`b|c\\<img src=x onerror=alert(4)>")
        os.makedirs(d)
        base, head = (shutil.copy(getattr(self.h, n), os.path.join(d, n + ".anat"))
                      for n in ("base", "head"))
        r = anatomist("diff", base, head, "--format", "markdown")
        self.assertEqual(r.returncode, 0, r.stderr)
        page = subprocess.run([cmark, "--unsafe", "-e", "table", "-e", "autolink",
                               "-e", "strikethrough"], input=r.stdout, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(page.returncode, 0, page.stderr)
        doc = _Html()
        doc.feed(page.stdout)
        allowed = {"h3", "h4", "p", "strong", "em", "table", "thead", "tbody", "tr", "th", "td",
                   "code", "ul", "li", "details", "summary", "sub", "br"}
        self.assertLessEqual({t for t, _ in doc.tags}, allowed, page.stdout)
        self.assertEqual([(t, a) for t, attrs in doc.tags for a, _ in attrs if a.startswith("on")], [])
        # The names as text, whole: the kernels' rows, the new kernel's line.
        self.assertLessEqual({H1, H2, H3}, set(doc.code))
        # Each run's row still has its five cells: no '|' of the path split one.
        runs = [row for row in doc.rows if row and row[0] in ("base", "head")]
        self.assertEqual([len(row) for row in runs], [5, 5], runs)


class _Html(html.parser.HTMLParser):
    """Start tags (with attributes), the text of each <code>, and table rows as cell texts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.code, self.rows = [], [], []
        self._code = self._cell = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        if tag == "code":
            self._code = ""
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "code" and self._code is not None:
            self.code.append(self._code)
            self._code = None
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._code is not None:
            self._code += data
        if self._cell is not None:
            self._cell += data


class TerminalOutput(unittest.TestCase):
    """Text printed to a terminal never carries the trace's escape sequences to it (the
    program's arguments are in the report's header); through a pipe the text report shows
    them escaped too (test_hostile_names.py checks every text output)."""
    ESC = "\x1b]0;pwned\x07\x1b[31mRED\x1b[0m\x9b"

    def test_control_bytes_are_shown_not_sent(self):
        import pty
        d = tmpdir()
        trace = os.path.join(d, "esc.anat")
        p = anatomist("run", "--sim", "-q", "-o", trace, "--", hostile_run.PROBE, hostile_run.LIB,
                      self.ESC, env=clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        piped = subprocess.run([os.path.join(BUILD, "bin", "anatomist"), "report", trace],
                               capture_output=True, env=clean_env())
        self.assertEqual(piped.returncode, 0)
        self.assertNotIn(b"\x1b", piped.stdout)
        self.assertIn(b"\\x1b]0;pwned\\x07\\x1b[31mRED\\x1b[0m\\xc2\\x9b", piped.stdout)
        master, slave = pty.openpty()
        proc = subprocess.Popen([os.path.join(BUILD, "bin", "anatomist"), "report", trace],
                                stdout=slave, stderr=subprocess.DEVNULL, env=clean_env())
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other end closed
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        self.assertEqual(proc.wait(timeout=60), 0)
        self.assertIn(b"program", out)
        for bad in (b"\x1b", b"\x07", b"\xc2\x9b"):
            self.assertNotIn(bad, out)
        self.assertIn(b"\\x1b]0;pwned\\x07\\x1b[31mRED\\x1b[0m\\xc2\\x9b", out)


if __name__ == "__main__":
    unittest.main()

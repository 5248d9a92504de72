"""Shared helpers of the CLI tests: where the binaries are, running them, synthetic traces.

The build directory comes from ANA_BUILD (set by ana_add_py_test in tests/CMakeLists.txt).
"""
import json
import os
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("ANA_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
ANATOMIST = os.path.join(BUILD, "bin", "anatomist")
GEN_TRACE = os.path.join(BUILD, "tests", "gen_trace")


def run(args, **kw):
    """Runs a command; returns CompletedProcess with text stdout/stderr."""
    kw.setdefault("timeout", 60)
    return subprocess.run(args, capture_output=True, text=True, **kw)


def anatomist(*args, **kw):
    return run([ANATOMIST, *args], **kw)


class CliTest(unittest.TestCase):
    """Base class: a temporary directory and helpers to make traces in it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ana-cli-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def gen(self, scenario, name=None, n=None):
        """Writes a synthetic trace; returns (path, facts printed by gen_trace)."""
        out = self.path(name or scenario + ".anat")
        p = run([GEN_TRACE, scenario, out] + ([str(n)] if n is not None else []))
        self.assertEqual(p.returncode, 0, p.stderr)
        facts = dict(line.split("=", 1) for line in p.stdout.split())
        return out, {k: int(v) for k, v in facts.items()}

    def ok(self, *args, **kw):
        p = anatomist(*args, **kw)
        self.assertEqual(p.returncode, 0, f"anatomist {args}: {p.stderr}")
        return p

    def json_of(self, *args):
        return json.loads(self.ok(*args).stdout)

    def fails(self, code, *args, **kw):
        """Asserts the exit status and that nothing crashed; returns the process."""
        p = anatomist(*args, **kw)
        self.assertEqual(p.returncode, code, f"anatomist {args}: {p.stdout}{p.stderr}")
        self.assertTrue(p.stderr.startswith("anatomist: "), p.stderr)
        return p


def main():
    for exe in (ANATOMIST, GEN_TRACE):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{exe} is not built (ANA_BUILD={BUILD})")
    unittest.main(verbosity=2)

"""Bad input never crashes the analyzer: missing files, non-traces, newer versions,
corrupt chunks, torn and truncated tails, unknown record kinds, every cut of a file."""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, anatomist, main  # noqa: E402
from test_report import check_basic_memory  # noqa: E402


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class BadFiles(CliTest):
    def test_missing_file(self):
        for cmd in ("info", "report"):
            p = self.fails(2, cmd, self.path("nope.anat"))
            self.assertIn("nope.anat", p.stderr)
            self.assertIn("No such file", p.stderr)

    def test_directory(self):
        # a directory is a job's traces (docs/ranks.md): this one holds none
        p = self.fails(2, "report", self.tmp)
        self.assertIn(self.tmp + " holds no traces", p.stderr)
        p = self.fails(2, "info", self.tmp)
        self.assertIn("is a directory", p.stderr)

    def test_not_a_trace(self):
        path = self.path("notes.txt")
        with open(path, "w") as f:
            f.write("this is not a trace, just some text long enough for a header\n")
        for cmd in ("info", "report"):
            p = self.fails(2, cmd, path)
            self.assertIn("notes.txt", p.stderr)
            self.assertIn("offset", p.stderr)
            self.assertEqual(p.stdout, "")

    def test_empty_and_short_files(self):
        for size in (0, 5, 31):
            path = self.path(f"short{size}.anat")
            with open(path, "wb") as f:
                f.write(b"ANATRACE\x01\x00"[:size] + b"\0" * max(0, size - 10))
            p = self.fails(2, "info", path)
            self.assertIn(f"short{size}.anat", p.stderr)

    def test_newer_major_is_refused(self):
        path, _ = self.gen("newer-major")
        for cmd in ("info", "report"):
            p = self.fails(2, cmd, path)
            self.assertIn("newer-major.anat", p.stderr)
            self.assertIn("format 3.", p.stderr)
            self.assertIn("(2.x)", p.stderr)
            self.assertEqual(p.stdout, "")

    def test_corrupt_chunk(self):
        path, facts = self.gen("corrupt")
        for cmd in ("info", "report"):
            p = self.fails(2, cmd, path)
            self.assertRegex(p.stderr, r"^anatomist: .*corrupt\.anat: offset \d+")
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)


class EndsOfTraces(CliTest):
    def test_truncated(self):
        path, facts = self.gen("truncated")
        self.assertEqual(os.path.getsize(path), facts["complete_bytes"])
        j = self.json_of("report", "--json", path)
        self.assertEqual(j["trace"]["ended"], "truncated")
        self.assertIsNone(j["trace"]["end_reason"])
        check_basic_memory(self, j)
        out = self.ok("report", path).stdout
        self.assertIn("the process did not exit cleanly", out)
        self.assertNotIn("at exit", out)
        self.assertIn("live at the end", out)

    def test_torn(self):
        for scenario in ("torn", "torn-header"):
            path, facts = self.gen(scenario)
            info = self.json_of("info", "--json", path)
            self.assertEqual(info["ended"], "torn")
            self.assertEqual(info["torn_bytes"], facts["torn_bytes"])
            self.assertEqual(info["file_bytes"], facts["complete_bytes"] + facts["torn_bytes"])
            self.assertEqual(info["records"]["end"], 0)
            j = self.json_of("report", "--json", path)
            self.assertEqual(j["trace"]["ended"], "torn")
            check_basic_memory(self, j)  # the torn chunk's 1 MiB allocation is not counted
            self.assertIn("torn bytes discarded", self.ok("report", path).stdout)

    def test_unknown_kinds_are_skipped(self):
        path, _ = self.gen("unknown-kind")
        j = self.json_of("report", "--json", path)
        self.assertEqual(j["trace"]["unknown_records"], 2)
        self.assertEqual(j["trace"]["ended"], "exit")
        check_basic_memory(self, j)


class NeverCrash(CliTest):
    """Every prefix of a trace and random damage: exit 0 or 2, never a signal."""

    def check(self, path):
        for cmd in (["info", "--json"], ["report", "--json"]):
            p = anatomist(*cmd, path)
            self.assertIn(p.returncode, (0, 2), f"{cmd} on {path}: {p.stderr}")
            if p.returncode == 2:
                self.assertTrue(p.stderr.startswith("anatomist: "), p.stderr)

    def test_every_cut(self):
        path, _ = self.gen("basic")
        data = read_bytes(path)
        cut = self.path("cut.anat")
        for n in range(0, len(data), 7):
            with open(cut, "wb") as f:
                f.write(data[:n])
            p = anatomist("info", "--json", cut)
            self.assertEqual(p.returncode, 2 if n < 32 else 0, f"cut at {n}: {p.stderr}")

    def test_random_damage(self):
        path, _ = self.gen("basic")
        data = read_bytes(path)
        rnd = random.Random(1234)
        bad = self.path("bad.anat")
        for _ in range(60):
            b = bytearray(data)
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(32, len(b))] = rnd.randrange(256)
            with open(bad, "wb") as f:
                f.write(b)
            self.check(bad)


if __name__ == "__main__":
    main()

"""`anatomist` arguments: help texts, version, usage errors and their exit status."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, anatomist, main  # noqa: E402

OPTIONS = {
    "run": ["--output", "-o", "--sim", "--sim-memory", "--no-stacks", "--stack-depth",
            "--flush-ms", "--quiet", "-q", "--help", "Exit status", "Example"],
    "info": ["--json", "--help", "Exit status", "Example"],
    "report": ["--json", "--top", "--no-symbols", "--help", "Exit status", "Example"],
    "oom": ["--json", "--top", "--no-symbols", "--help", "Exit status", "Example"],
}


class TopLevel(CliTest):
    def test_help_lists_commands_and_exit_codes(self):
        for args in (["--help"], ["-h"], ["help"]):
            p = self.ok(*args)
            for word in ("run", "info", "report", "Exit status", "--version"):
                self.assertIn(word, p.stdout, args)

    def test_version(self):
        p = self.ok("--version")
        self.assertRegex(p.stdout, r"^anatomist \d+\.\d+\.\d+ \(trace format 2\.\d+\)\n$")
        self.assertEqual(self.ok("-V").stdout, p.stdout)

    def test_no_arguments_is_a_usage_error(self):
        p = anatomist()
        self.assertEqual(p.returncode, 2)
        self.assertIn("Usage: anatomist", p.stderr)

    def test_unknown_command(self):
        p = self.fails(2, "frobnicate")
        self.assertIn("unknown command 'frobnicate'", p.stderr)
        self.assertIn("anatomist --help", p.stderr)

    def test_unknown_top_level_option(self):
        p = self.fails(2, "--frobnicate")
        self.assertIn("--frobnicate", p.stderr)

    def test_help_of_unknown_command(self):
        self.fails(2, "help", "frobnicate")


class SubcommandHelp(CliTest):
    def test_each_help_mentions_its_options(self):
        for cmd, words in OPTIONS.items():
            for form in ([cmd, "--help"], [cmd, "-h"], ["help", cmd]):
                p = self.ok(*form)
                self.assertIn(f"Usage: anatomist {cmd}", p.stdout)
                for w in words:
                    self.assertIn(w, p.stdout, f"{form} does not mention {w}")
                self.assertEqual(p.stderr, "")


class UsageErrors(CliTest):
    def check(self, args, *needles):
        p = self.fails(2, *args)
        for n in needles:
            self.assertIn(n, p.stderr)
        self.assertIn("--help", p.stderr)

    def test_missing_trace(self):
        self.check(["info"], "which trace")
        self.check(["report"], "which trace")

    def test_two_traces(self):
        self.check(["info", "a.anat", "b.anat"], "'b.anat' is extra")
        # report takes several traces (the ranks of one job, docs/ranks.md): each must open
        p = self.fails(2, "report", "a.anat", "b.anat")
        self.assertIn("cannot open a.anat", p.stderr)

    def test_unknown_options(self):
        self.check(["info", "--bogus", "x.anat"], "unknown option '--bogus'")
        self.check(["report", "-z", "x.anat"], "unknown option '-z'")
        self.check(["run", "--bogus", "--", "true"], "unknown option '--bogus'")

    def test_missing_values(self):
        self.check(["report", "x.anat", "--top"], "'--top' needs a value")
        self.check(["run", "-o"], "needs a value")

    def test_bad_values(self):
        self.check(["report", "--top", "many", "x.anat"], "--top", "'many'")
        self.check(["report", "--top", "-3", "x.anat"], "--top")
        self.check(["run", "--stack-depth", "0", "--", "true"], "--stack-depth")
        self.check(["run", "--stack-depth", "abc", "--", "true"], "--stack-depth")
        self.check(["run", "--flush-ms", "", "--", "true"], "--flush-ms")
        self.check(["run", "--sim-memory", "lots", "--", "true"], "--sim-memory", "'lots'")
        self.check(["run", "--sim-memory", "0", "--", "true"], "--sim-memory")

    def test_run_without_program(self):
        self.check(["run"], "which program")
        self.check(["run", "--sim", "--"], "which program")


if __name__ == "__main__":
    main()

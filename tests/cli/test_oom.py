"""`anatomist oom`: the out-of-memory post-mortem on synthetic traces whose numbers
tests/tools/gen_trace.c gives independently of the analyzer (scenarios "oom", "oom-frag",
"failed"), no failure, and bad traces."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, main  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
CATEGORIES = {"weights", "optimizer", "gradients", "activations", "temporary",
              "functionality", "unattributed"}
FIT_KEYS = {"technique", "name", "bytes_saved", "covers", "factor", "detail"}


class OomCommon:
    """Checks every post-mortem object must pass."""

    def check_shape(self, o):
        self.assertEqual(set(o["live"]), CATEGORIES)
        self.assertEqual(sum(o["live"].values()), o["live_bytes"])
        for f in o["stack"]:
            self.assertTrue({"function", "file", "line"} <= set(f), f)
        saved = [f["bytes_saved"] for f in o["fits"]]
        self.assertEqual(saved, sorted(saved, reverse=True))
        for f in o["fits"]:
            self.assertEqual(set(f), FIT_KEYS)
            self.assertEqual(f["covers"], f["bytes_saved"] >= o["needed_bytes"], f)


class OomExhaustion(CliTest, OomCommon):
    """Step 3 never finished: 96 MiB failed, the cache was emptied, 64 MiB failed with
    44 MiB of 64 MiB free while 4 + 8 + 8 MiB were live."""

    def setUp(self):
        super().setUp()
        self.trace, _ = self.gen("oom")
        self.o = self.json_of("oom", "--json", self.trace)

    def test_the_last_failure_is_the_fatal_one(self):
        o = self.o
        self.assertEqual(o["requested_bytes"], 64 * MiB)
        self.assertEqual(o["api"], "cudaMalloc")
        self.assertEqual(o["error"], "cudaErrorMemoryAllocation")
        self.assertEqual(o["time_ns"], 53700)
        self.assertEqual(o["failures"], 2)
        self.assertEqual(o["free_bytes"], 44 * MiB)
        self.assertEqual(o["total_bytes"], 64 * MiB)
        self.assertEqual(o["stack"][0]["function"], "gen_marker_site")

    def test_exhaustion_and_shortfall(self):
        self.assertEqual(self.o["kind"], "exhaustion")
        self.assertEqual(self.o["shortfall_bytes"], 20 * MiB)  # 64 - 44
        self.assertEqual(self.o["needed_bytes"], 20 * MiB)

    def test_live_at_the_failure(self):
        o = self.o
        self.check_shape(o)
        self.assertEqual(o["live_bytes"], 20 * MiB)  # the 4 MiB cache block was freed
        self.assertEqual(sum(o["live_counts"].values()), 3)
        # stack 1: 4 + 8 MiB; stack 2: the 8 MiB of step 3
        self.assertEqual([(s["bytes"], s["count"]) for s in o["top_sites"]],
                         [(12 * MiB, 2), (8 * MiB, 1)])
        self.assertEqual(o["top_sites"][1]["stack"][0]["function"], "gen_marker_other")

    def test_step_and_phase(self):
        o = self.o
        self.assertEqual(o["step"], 3)
        self.assertFalse(o["step_finished"])
        self.assertEqual(o["where"], "in the step after step 2, which did not finish")
        self.assertEqual(o["phase"], "backward")  # its last hinted launch: backward
        # each finished step: 4 + 8 MiB and its own 2 MiB
        self.assertEqual([(s["step"], s["peak_bytes"]) for s in o["steps_before"]],
                         [(1, 14 * MiB), (2, 14 * MiB)])
        self.assertNotIn("expandable_segments", [f["technique"] for f in o["fits"]])

    def test_text(self):
        out = self.ok("oom", self.trace).stdout
        self.assertIn("Out of memory (the last of 2 out-of-memory failures)", out)
        self.assertIn("cudaMalloc of 64.0 MiB (67108864 bytes)", out)
        self.assertIn("44.0 MiB free of 64.0 MiB, 20.0 MiB short", out)
        self.assertIn("in the step after step 2, which did not finish, phase backward", out)
        self.assertIn("live at the failure: 20.0 MiB in 3 allocations", out)
        self.assertIn("gen_marker_site", out)

    def test_report_has_the_same_object(self):
        j = self.json_of("report", "--json", self.trace)
        if "oom" not in j:
            self.skipTest("report_json.c does not write the oom object yet")
        self.assertEqual(j["oom"], self.o)


class OomFragmentation(CliTest, OomCommon):
    """16 MiB failed inside step 2, before its backward launch, with 32 MiB free."""

    def setUp(self):
        super().setUp()
        self.trace, _ = self.gen("oom-frag")
        self.o = self.json_of("oom", "--json", self.trace)

    def test_fragmentation(self):
        o = self.o
        self.check_shape(o)
        self.assertEqual(o["kind"], "fragmentation")
        self.assertEqual(o["requested_bytes"], 16 * MiB)
        self.assertEqual(o["shortfall_bytes"], 0)
        self.assertEqual(o["needed_bytes"], 16 * MiB)
        self.assertEqual(o["failures"], 1)
        self.assertEqual(o["live_bytes"], 14 * MiB)
        fits = {f["technique"]: f for f in o["fits"]}
        self.assertEqual(fits["expandable_segments"]["bytes_saved"], 16 * MiB)
        self.assertTrue(fits["expandable_segments"]["covers"])

    def test_in_a_finished_step(self):
        o = self.o
        self.assertEqual(o["step"], 2)
        self.assertTrue(o["step_finished"])
        self.assertEqual(o["phase"], "backward")
        self.assertEqual([(s["step"], s["peak_bytes"]) for s in o["steps_before"]],
                         [(1, 14 * MiB)])


class OomWithoutSteps(CliTest, OomCommon):
    """"failed": 8 GiB fails (5 GiB free), 1 GiB is freed, 4 GiB fails on thread 101 with
    6 GiB free of 8, then 16 B fails with error 12345 (not out of memory)."""

    def test_failed_scenario(self):
        path, _ = self.gen("failed")
        o = self.json_of("oom", "--json", path)
        self.check_shape(o)
        self.assertEqual(o["api"], "cudaMallocAsync")
        self.assertEqual(o["requested_bytes"], 4 * GiB)
        self.assertEqual(o["tid"], 101)
        self.assertEqual(o["kind"], "fragmentation")
        self.assertEqual(o["failures"], 2)
        self.assertEqual(o["other_failures"], 1)
        self.assertEqual(o["live_bytes"], 2 * GiB)
        self.assertIsNone(o["step"])
        self.assertIsNone(o["phase"])
        self.assertEqual(o["steps_before"], [])


class OomNone(CliTest):
    def test_no_failure(self):
        path, _ = self.gen("basic")
        self.assertEqual(self.ok("oom", path).stdout, f"no failed allocation in {path}\n")
        p = self.ok("oom", "--json", path)
        self.assertEqual(p.stdout.strip(), "null")


class OomErrors(CliTest):
    def test_corrupt_trace(self):
        path, _ = self.gen("corrupt")
        p = self.fails(2, "oom", path)
        self.assertRegex(p.stderr, r"^anatomist: .*corrupt\.anat: offset \d+")
        self.assertEqual(p.stdout, "")

    def test_usage(self):
        self.assertIn("which trace", self.fails(2, "oom").stderr)
        self.assertIn("cannot open", self.fails(2, "oom", self.path("nope.anat")).stderr)
        self.assertIn("--top", self.fails(2, "oom", "--top", "x", "a.anat").stderr)
        self.assertIn("unknown option", self.fails(2, "oom", "--frob", "a.anat").stderr)
        out = self.ok("oom", "--help").stdout
        for word in ("--json", "--top", "--no-symbols", "Exit status", "Example"):
            self.assertIn(word, out)


if __name__ == "__main__":
    main()

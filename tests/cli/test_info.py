"""`anatomist info` on synthetic traces whose contents gen_trace fixes in advance."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, main  # noqa: E402

KINDS = ["process", "thread", "module", "stack", "kernel_name", "alloc", "free", "meminfo",
         "launch", "memcpy_call", "memset_call", "device", "dropped", "end", "info",
         "kernel", "memcpy", "memset", "gpu_memory", "gpu_pool", "gpu_dropped", "vmm",
         "gemm", "collective", "communicator", "library_call", "range", "label", "pointer_table", "python_code", "unknown"]

# What gen_trace's "basic" scenario writes (tests/tools/gen_trace.c, gen_basic_body).
BASIC_RECORDS = {"process": 1, "thread": 2, "module": 2, "stack": 3, "kernel_name": 2,
                 "alloc": 5, "free": 4, "meminfo": 0, "launch": 4, "memcpy_call": 3,
                 "memset_call": 1, "device": 1, "dropped": 2, "end": 1, "info": 1,
                 "kernel": 0, "memcpy": 0, "memset": 0, "gpu_memory": 0, "gpu_pool": 0,
                 "gpu_dropped": 0, "vmm": 0, "gemm": 0, "collective": 0,
                 "communicator": 0, "library_call": 0, "range": 0, "label": 0, "pointer_table": 0, "python_code": 0, "unknown": 0}


class InfoJson(CliTest):
    def test_basic(self):
        path, _ = self.gen("basic")
        j = self.json_of("info", "--json", path)
        self.assertEqual(j["schema"], "anatomist.info/1")
        self.assertEqual(j["path"], path)
        self.assertEqual(j["format"], {"major": 2, "minor": 2, "time_resolution_ns": 1})
        self.assertEqual(j["file_bytes"], os.path.getsize(path))
        self.assertEqual(j["chunks"], 2)
        self.assertEqual(j["packed_chunks"], 2)
        self.assertGreater(j["raw_bytes"], 0)
        self.assertAlmostEqual(j["compression_ratio"], j["raw_bytes"] / j["file_bytes"], 4)
        self.assertEqual(j["records"], BASIC_RECORDS)
        self.assertEqual(j["dropped"], 10)
        self.assertEqual(j["dropped_bytes"], 400)
        self.assertEqual(j["ended"], "exit")
        self.assertEqual(j["end_reason"], 1)
        self.assertEqual(j["torn_bytes"], 0)
        self.assertEqual(j["first_ns"], 1000000000)
        self.assertEqual(j["span_ns"], 10000)
        self.assertEqual(j["last_ns"] - j["first_ns"], j["span_ns"])
        self.assertEqual(j["info"], {"profiler_version": "gen_trace"})
        p = j["process"]
        self.assertEqual((p["pid"], p["ppid"], p["host"], p["exe"]),
                         (4242, 1, "gen-host", "/usr/bin/gen"))
        self.assertEqual(p["argv"], ["gen", "--scenario", "basic"])
        self.assertIsNone(p["rank"])
        self.assertEqual(p["realtime_ns"], 1700000000000000000)

    def test_every_kind_is_present_even_when_zero(self):
        path, _ = self.gen("empty")
        j = self.json_of("info", "--json", path)
        self.assertEqual(sorted(j["records"]), sorted(KINDS))
        self.assertTrue(all(v == 0 for v in j["records"].values()), j["records"])
        self.assertEqual(j["ended"], "truncated")
        self.assertEqual(j["chunks"], 0)
        self.assertEqual(j["file_bytes"], 32)
        self.assertIsNone(j["process"])
        self.assertIsNone(j["end_reason"])
        self.assertEqual(j["span_ns"], 0)

    def test_unknown_kinds_are_counted(self):
        path, _ = self.gen("unknown-kind")
        j = self.json_of("info", "--json", path)
        self.assertEqual(j["records"]["unknown"], 2)
        self.assertEqual(j["records"]["info"], 3)  # gen_trace opens each with an INFO
        self.assertEqual(j["records"]["alloc"], 5)
        self.assertEqual(j["ended"], "exit")


class InfoText(CliTest):
    def test_basic(self):
        path, _ = self.gen("basic")
        out = self.ok("info", path).stdout
        self.assertIn("format       2.2\n", out)
        self.assertIn("packed       2 of 2 chunks", out)
        self.assertIn("ended        exit", out)
        self.assertIn("pid 4242", out)
        self.assertIn("gen --scenario basic", out)
        self.assertIn("dropped      10 records", out)
        self.assertRegex(out, r"\n  alloc +5\n")
        self.assertRegex(out, r"\n  free +4\n")
        self.assertRegex(out, r"\n  unknown +0\n")
        self.assertIn("profiler_version = gen_trace", out)

    def test_json_option_may_follow_the_trace(self):
        path, _ = self.gen("basic")
        self.assertEqual(self.ok("info", path, "--json").stdout,
                         self.ok("info", "--json", path).stdout)


if __name__ == "__main__":
    main()

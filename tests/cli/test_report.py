"""`anatomist report` numbers on synthetic traces (tests/tools/gen_trace.c gives the
expected values independently of the analyzer)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import GEN_TRACE, CliTest, anatomist, main, run  # noqa: E402

GiB = 1 << 30
FRAME_KEYS = {"function", "file", "line", "module", "offset", "address", "language"}


def check_basic_memory(test, j):
    """The numbers of the "basic" program; shared with the torn/truncated tests."""
    m = j["memory"]
    # 100 + 200 + 300 live at +3000 ns (the 300 is written first, by another thread:
    # only a replay in time order puts the peak at +3000).
    test.assertEqual(m["peak_bytes"], 600)
    test.assertEqual(m["peak_at_ns"], 3000)
    test.assertEqual(m["peak_count"], 3)
    test.assertEqual(m["live_at_end_bytes"], 450)
    test.assertEqual(m["live_at_end_count"], 3)
    test.assertEqual(m["host_pinned_peak_bytes"], 1000)
    test.assertEqual(m["host_pinned_peak_at_ns"], 5500)
    test.assertEqual(m["host_pinned_live_at_end_bytes"], 0)
    test.assertEqual(m["unknown_frees"], 1)
    test.assertEqual([(s["bytes"], s["count"]) for s in m["leaks"]], [(400, 2), (50, 1)])
    test.assertEqual([(s["bytes"], s["count"]) for s in m["top_sites"]], [(400, 2), (200, 1)])
    test.assertAlmostEqual(m["top_sites"][0]["share"], 400 / 600, 4)
    test.assertAlmostEqual(m["top_sites"][1]["share"], 200 / 600, 4)
    a = j["allocations"]
    test.assertEqual(a["by_api"], {
        "cudaMalloc": {"calls": 4, "ok": 4, "failed": 0, "bytes": 650},
        "cudaMallocHost": {"calls": 1, "ok": 1, "failed": 0, "bytes": 1000}})
    test.assertEqual(a["frees_by_api"], {
        "cudaFree": {"calls": 3, "ok": 3, "failed": 0},
        "cudaFreeHost": {"calls": 1, "ok": 1, "failed": 0}})


class ReportBasic(CliTest):
    def setUp(self):
        super().setUp()
        self.trace, _ = self.gen("basic")
        self.j = self.json_of("report", "--json", self.trace)

    def test_trace_section(self):
        t = self.j["trace"]
        self.assertEqual(self.j["schema"], "anatomist.report/1")
        self.assertEqual(t["path"], self.trace)
        self.assertEqual(t["ended"], "exit")
        self.assertEqual(t["duration_ns"], 10000)
        self.assertEqual(t["dropped"], 10)
        self.assertEqual(t["process"]["pid"], 4242)
        self.assertEqual(t["devices"], [{"ordinal": 0, "name": "Simulated H100",
                                         "total_mem": 80 * GiB, "sm_count": 132,
                                         "cc_major": 9, "cc_minor": 0}])

    def test_memory(self):
        check_basic_memory(self, self.j)

    def test_stacks_are_merged_and_symbolized(self):
        m = self.j["memory"]
        site = m["top_sites"][0]["stack"]
        self.assertEqual(len(site), 2)
        for f in site:
            self.assertEqual(set(f), FRAME_KEYS)
        self.assertEqual(site[0]["function"], "gen_marker_site")
        self.assertTrue(site[0]["module"].endswith("gen_trace"), site[0])
        if site[0]["file"] is not None:  # only with debug information
            self.assertTrue(site[0]["file"].endswith("gen_trace.c"))
            self.assertGreater(site[0]["line"], 0)
        self.assertEqual(site[0]["offset"] + 0, site[0]["offset"])
        # The second frame lies in no module: no names, the address as offset.
        self.assertEqual(site[1], {"function": None, "file": None, "line": None,
                                   "module": None, "language": "native", "offset": 16, "address": 16})
        self.assertEqual(m["top_sites"][1]["stack"][0]["function"], "gen_marker_other")
        # Ids 1 and 2 hold identical frames: one group, under the smaller id.
        self.assertEqual(m["top_sites"][0]["stack_id"], 1)

    def test_kernels_and_copies(self):
        j = self.j
        self.assertEqual(j["launches"], 4)
        self.assertEqual(j["failed_launches"], 1)
        self.assertEqual([(k["name"], k["mangled"], k["count"], k["failed"]) for k in j["kernels"]], [
            ("matmul(float const*, float const*, float*, int)", "_Z6matmulPKfS0_Pfi", 3, 0),
            ("relu_kernel", "relu_kernel", 1, 1)])
        self.assertAlmostEqual(j["kernels"][0]["share"], 0.75)
        c = j["copies"]
        self.assertEqual((c["memcpy"]["calls"], c["memcpy"]["failed"], c["memcpy"]["bytes"]),
                         (3, 0, 9216))
        self.assertEqual(c["memcpy"]["by_direction"]["H2D"], {"calls": 2, "failed": 0, "bytes": 8192})
        self.assertEqual(c["memcpy"]["by_direction"]["D2H"], {"calls": 1, "failed": 0, "bytes": 1024})
        self.assertEqual(c["memcpy"]["by_direction"]["D2D"]["calls"], 0)
        self.assertEqual(c["memset"], {"calls": 1, "failed": 0, "bytes": 512})
        self.assertEqual(j["failed_allocations"], [])
        self.assertEqual(j["failed_allocations_total"], 0)

    def test_top_limits_lists(self):
        j = self.json_of("report", "--json", "--top", "1", self.trace)
        self.assertEqual(len(j["memory"]["leaks"]), 1)
        self.assertEqual(len(j["memory"]["top_sites"]), 1)
        self.assertEqual(j["memory"]["leak_sites"], 2)
        j = self.json_of("report", "--json", "--top", "0", self.trace)
        self.assertEqual(len(j["memory"]["leaks"]), 2)

    def test_no_symbols_keeps_module_and_offset(self):
        j = self.json_of("report", "--json", "--no-symbols", self.trace)
        f = j["memory"]["top_sites"][0]["stack"][0]
        self.assertIsNone(f["function"])
        self.assertTrue(f["module"].endswith("gen_trace"))
        self.assertEqual(f["offset"], self.j["memory"]["top_sites"][0]["stack"][0]["offset"])
        check_basic_memory(self, j)

    def test_text(self):
        out = self.ok("report", self.trace).stdout
        self.assertIn("program    gen --scenario basic", out)
        self.assertIn("Simulated H100", out)
        self.assertIn("peak               600 B (600 bytes, 3 allocations) at 3.000 us", out)
        self.assertIn("live at exit       450 B in 3 allocations", out)
        self.assertIn("still allocated at exit", out)
        self.assertIn("(66.7% of the peak)", out)
        self.assertIn("gen_marker_site", out)
        self.assertIn("matmul(float const*, float const*, float*, int)", out)
        self.assertIn("10 records were dropped", out)
        self.assertRegex(out, r"cudaMalloc +4 +4 +0 +650 B")


class ReportFailed(CliTest):
    def test_failed_allocations(self):
        path, _ = self.gen("failed")
        j = self.json_of("report", "--json", path)
        f = j["failed_allocations"]
        self.assertEqual(j["failed_allocations_total"], 3)
        self.assertEqual(len(f), 3)
        want = [("cudaMalloc", 8 * GiB, 2, "cudaErrorMemoryAllocation", 3000, 5 * GiB, 8 * GiB, 3 * GiB),
                ("cudaMallocAsync", 4 * GiB, 2, "cudaErrorMemoryAllocation", 5000, 6 * GiB, 8 * GiB, 2 * GiB),
                ("cudaMalloc", 16, 12345, "error 12345", 6000, None, None, 2 * GiB)]
        got = [(x["api"], x["size"], x["ret"], x["error"], x["at_ns"], x["free_bytes"],
                x["total_bytes"], x["live_bytes"]) for x in f]
        self.assertEqual(got, want)
        self.assertEqual(f[0]["stack"][0]["function"], "gen_marker_other")
        self.assertEqual(f[1]["stack"], [])
        m = j["memory"]
        self.assertEqual((m["peak_bytes"], m["peak_at_ns"]), (3 * GiB, 2000))
        self.assertEqual((m["live_at_end_bytes"], m["live_at_end_count"]), (2 * GiB, 1))
        self.assertEqual(j["allocations"]["by_api"]["cudaMalloc"],
                         {"calls": 4, "ok": 2, "failed": 2, "bytes": 3 * GiB})

    def test_text(self):
        path, _ = self.gen("failed")
        out = self.ok("report", path).stdout
        self.assertIn("Failed allocations (3)", out)
        self.assertIn("cudaMalloc of 8.00 GiB (8589934592 bytes) at 3.000 us: "
                      "cudaErrorMemoryAllocation (2)", out)
        self.assertIn("device reported 5.00 GiB free of 8.00 GiB; 3.00 GiB allocated", out)
        self.assertIn("error 12345", out)
        self.assertIn("no memory info recorded", out)


class ReportChurn(CliTest):
    def test_many_chunks_and_threads(self):
        path, _ = self.gen("churn", n=30000)
        info = self.json_of("info", "--json", path)
        self.assertEqual(info["records"]["alloc"], 30000)
        self.assertEqual(info["records"]["free"], 29000)
        self.assertGreater(info["chunks"], 1)
        m = self.json_of("report", "--json", path)["memory"]
        # Each allocation is freed 1000 allocations later, 5 ns after the next one began.
        self.assertEqual(m["peak_bytes"], 1001 * 4096)
        self.assertEqual(m["peak_at_ns"], 1000 + 10 * 1000)
        self.assertEqual((m["live_at_end_bytes"], m["live_at_end_count"]), (1000 * 4096, 1000))
        self.assertEqual(m["unknown_frees"], 0)

    def test_jobs_change_nothing_but_time(self):
        """-j N: the same bytes out (and the same error) with any number of threads."""
        path, _ = self.gen("churn", n=100000)
        self.assertGreater(self.json_of("info", "--json", path)["chunks"], 3)
        cut = self.path("cut.anat")
        with open(path, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[: os.path.getsize(path) * 2 // 3])
        corrupt, _ = self.gen("corrupt")
        for cmd in (["report", "--json"], ["report"], ["info", "--json"], ["oom", "--json"]):
            for trace in (path, cut, corrupt):
                outs = [anatomist(*cmd, "-j", str(n), trace) for n in (1, 2, 3, 8)]
                outs.append(anatomist(*cmd, trace))
                for o in outs[1:]:
                    self.assertEqual((o.returncode, o.stdout, o.stderr),
                                     (outs[0].returncode, outs[0].stdout, outs[0].stderr),
                                     f"{cmd} {trace}")
        for bad in ("0", "257", "x", "-1"):
            p = self.fails(2, "report", "--jobs", bad, path)
            self.assertIn("--jobs wants a number of threads from 1 to 256", p.stderr)

    def test_analyses_on_threads_read_spilled_state_alike(self):
        """The analyses run on up to 4 threads at once, each reading the trace's calls,
        GPU activities, uses and ranges through caches of its own: with everything spilled
        to temporary files (past 3 items of each), every number of threads gives the same
        report as one thread with everything in memory."""
        spill = {k: "3" for k in ("ANATOMIST_SPILL_CALLS", "ANATOMIST_SPILL_GPU",
                                  "ANATOMIST_SPILL_USES", "ANATOMIST_SPILL_NVTX",
                                  "ANATOMIST_SPILL_MEMORY", "ANATOMIST_SPILL_RANGES",
                                  "ANATOMIST_SPILL_GEMMS", "ANATOMIST_SPILL_COLLS")}
        traces = [self.gen(kind)[0] for kind in ("gpu", "libs", "oom")]
        scale = os.path.join(os.path.dirname(GEN_TRACE), "..", "bench", "gen_trace")
        if os.path.exists(scale):  # steps, launches by library calls, NVTX, GPU activity
            traces.append(self.path("scale.anat"))
            p = run([scale, "--records", "200000", "--out", traces[-1]])
            self.assertEqual(p.returncode, 0, p.stderr)
        for trace in traces:
            for cmd in (["report", "--json"], ["report", "--top", "0"]):
                want = anatomist(*cmd, "-j", "1", trace)
                self.assertEqual(want.returncode, 0, want.stderr)
                for n in (1, 2, 4):
                    got = anatomist(*cmd, "-j", str(n), trace, env={**os.environ, **spill})
                    self.assertEqual((got.returncode, got.stdout), (0, want.stdout),
                                     f"{cmd} -j {n} {trace}")


class ReportEmpty(CliTest):
    def test_empty_trace_has_zeros(self):
        path, _ = self.gen("empty")
        j = self.json_of("report", "--json", path)
        self.assertEqual(j["memory"]["peak_bytes"], 0)
        self.assertEqual(j["memory"]["top_sites"], [])
        self.assertEqual(j["kernels"], [])
        self.assertIsNone(j["trace"]["process"])
        self.ok("report", path)


if __name__ == "__main__":
    main()

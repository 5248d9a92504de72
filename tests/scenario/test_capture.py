"""Capture windows (docs/trace-format.md "Capture windows"): `anatomist run --capture-range
cudaProfilerApi | nvtx:NAME`, `--delay`, `--duration`. capture_range marks iterations
FIRST..LAST of M; each iteration allocates 4096 + i bytes (kept to the end), sets them,
launches `fill` 3 times and copies 64 bytes back. The trace must hold exactly the
launches, sets, copies and GPU work of the marked iterations, and every allocation."""
import os
import unittest

from common import anatomist, dump, ledger, of, report_json, run, sample, tmpdir

M, FIRST, LAST = 10, 3, 5


def traced(*options, program_args):
    trace = os.path.join(tmpdir(), "c.anat")
    r = anatomist("run", "--sim", "-q", "-o", trace, *options, "--", sample("capture_range"),
                  *program_args)
    return r, trace


def iteration_of_launch(recs):
    """The iteration each successful LAUNCH belongs to, from its pointer word: the buffer
    of 4096 + i bytes (independent of the window logic and of time)."""
    size_at = {a["ptr"]: a["size"] for a in of(recs, "ALLOC") if a["ret"] == 0}
    return sorted(size_at[l["ptrs"][0]] - 4096 for l in of(recs, "LAUNCH") if l["ret"] == 0)


class Ranges(unittest.TestCase):
    def check_marked(self, r, trace, opened_by, closed_by):
        self.assertEqual(r.returncode, 0, r.stderr)
        led = ledger(r.stdout)
        inside = list(range(FIRST, LAST + 1))
        self.assertEqual(led["launches_inside"], 3 * len(inside))
        recs = dump(trace)
        # every allocation and free, inside the window or not
        self.assertEqual(sorted(a["size"] for a in of(recs, "ALLOC")), [4096 + i for i in range(M)])
        self.assertEqual(len(of(recs, "FREE")), M)
        # exactly the marked iterations' activity
        self.assertEqual(iteration_of_launch(recs), sorted(inside * 3))
        self.assertEqual(len(of(recs, "MEMSET")), led["memsets_inside"])
        self.assertEqual(len(of(recs, "MEMCPY")), led["copies_inside"])
        launches = {l["corr"] for l in of(recs, "LAUNCH")}
        kernels = of(recs, "GPU_KERNEL")
        self.assertEqual(len(kernels), led["launches_inside"])
        self.assertEqual({k["corr"] for k in kernels}, launches)
        self.assertEqual(len(of(recs, "GPU_MEMSET")), led["memsets_inside"])
        self.assertEqual(len(of(recs, "GPU_MEMCPY")), led["copies_inside"])
        edges = [(x["key"], x["value"]) for x in of(recs, "INFO") if x["key"].startswith("capture.")]
        self.assertEqual(edges, [("capture.start", opened_by), ("capture.stop", closed_by)])
        rep = report_json(trace)
        cap = rep["trace"]["capture"]
        self.assertTrue(cap["limited"])
        self.assertIsNone(cap["never_started"])
        self.assertEqual([(w["start"], w["stop"]) for w in cap["windows"]], [(opened_by, closed_by)])
        # live memory is right although most allocations were made outside the window
        self.assertEqual(rep["memory"]["peak_bytes"], sum(4096 + i for i in range(M)))
        self.assertEqual(rep["memory"]["live_at_end_bytes"], 0)
        return recs

    def test_cuda_profiler_api(self):
        r, trace = traced("--capture-range", "cudaProfilerApi",
                          program_args=["profiler", str(M), str(FIRST), str(LAST)])
        recs = self.check_marked(r, trace, "cudaProfilerStart", "cudaProfilerStop")
        # NVTX "step" ranges of the marked iterations only: a push and a pop each
        self.assertEqual(len(of(recs, "RANGE")), 2 * (LAST - FIRST + 1))
        self.assertEqual(report_json(trace)["trace"]["capture"]["range"], "cudaProfilerApi")

    def test_nvtx_range(self):
        r, trace = traced("--capture-range", "nvtx:capture",
                          program_args=["nvtx", str(M), str(FIRST), str(LAST)])
        recs = self.check_marked(r, trace, "nvtx push", "nvtx pop")
        # the "capture" range itself, and the "step" ranges inside it
        self.assertEqual(len(of(recs, "RANGE")), 2 + 2 * (LAST - FIRST + 1))

    def test_a_range_that_never_starts_says_so(self):
        r, trace = traced("--capture-range", "cudaProfilerApi",
                          program_args=["profiler", str(M), "-1", "-1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("anatomist: capture range cudaProfilerApi: the program never called "
                      "cudaProfilerStart", r.stderr)
        recs = dump(trace)
        self.assertEqual(len(of(recs, "ALLOC")), M)
        self.assertEqual(of(recs, "LAUNCH", "MEMSET", "MEMCPY", "GPU_KERNEL", "RANGE"), [])
        cap = report_json(trace)["trace"]["capture"]
        self.assertEqual(cap["windows"], [])
        self.assertEqual(cap["never_started"], "the program never called cudaProfilerStart")
        text = anatomist("report", trace)
        self.assertIn("captured   NOTHING (cudaProfilerApi): the program never called "
                      "cudaProfilerStart", text.stdout)

    def test_without_settings_the_profiler_calls_change_nothing(self):
        r, trace = traced(program_args=["profiler", str(M), str(FIRST), str(LAST)])
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = dump(trace)
        self.assertEqual(len(of(recs, "LAUNCH")), 3 * M)
        self.assertEqual(len(of(recs, "GPU_KERNEL")), 3 * M)
        cap = report_json(trace)["trace"]["capture"]
        self.assertFalse(cap["limited"])
        self.assertEqual(cap["windows"], [])
        self.assertNotIn("captured", anatomist("report", trace).stdout)

    def test_bad_values_are_usage_errors(self):
        for opt, val in (("--capture-range", "nvtx:"), ("--capture-range", "cudaProfiler"),
                         ("--delay", "soon"), ("--duration", "-1")):
            r = anatomist("run", "--sim", opt, val, "--", sample("capture_range"), "timed", "1", "0")
            self.assertEqual(r.returncode, 2, (opt, val, r.stderr))
            self.assertIn(opt, r.stderr)


class Timed(unittest.TestCase):
    def test_delay_and_duration(self):
        # 40 iterations 20 ms apart; record from 0.3 s for 0.3 s: about iterations 15..29.
        n, ms, delay, duration = 40, 20, 0.3, 0.3
        r, trace = traced("--delay", str(delay), "--duration", str(duration),
                          program_args=["timed", str(n), str(ms)])
        self.assertEqual(r.returncode, 0, r.stderr)
        led = ledger(r.stdout)
        recs = dump(trace)
        edges = {x["key"]: x for x in of(recs, "INFO") if x["key"].startswith("capture.")}
        self.assertEqual((edges["capture.start"]["value"], edges["capture.stop"]["value"]),
                         ("delay", "duration"))
        t0, t1 = edges["capture.start"]["time"], edges["capture.stop"]["time"]
        self.assertEqual(t1 - t0, int(duration * 1e9))
        # the delay counts from the preload's start, a little before main
        self.assertGreater(t0 - led["main_ns"], delay * 1e9 - 100e6)
        self.assertLessEqual(t0 - led["main_ns"], delay * 1e9)
        self.assertEqual(len(of(recs, "ALLOC")), n)
        kept = set(iteration_of_launch(recs))
        margin = 5e6  # an iteration's launches follow its clock reading within this
        for i, t in enumerate(led["launch_ns"]):
            if t0 + margin <= t < t1 - margin:
                self.assertIn(i, kept, "iteration %d at %.1f ms is inside" % (i, (t - t0) / 1e6))
            elif t < t0 - margin or t >= t1 + margin:
                self.assertNotIn(i, kept, "iteration %d at %.1f ms is outside" % (i, (t - t0) / 1e6))
        self.assertTrue(13 <= len(kept) <= 17, sorted(kept))
        self.assertEqual(sorted(kept), list(range(min(kept), max(kept) + 1)))
        self.assertEqual(len(of(recs, "GPU_KERNEL")), 3 * len(kept))
        cap = report_json(trace)["trace"]["capture"]
        self.assertEqual((cap["delay_ms"], cap["duration_ms"]), (300, 300))
        self.assertEqual(cap["covered_ns"], int(duration * 1e9))


if __name__ == "__main__":
    unittest.main()

"""`anatomist report`: the GPU section and the driver/virtual-memory replay, on the "gpu"
scenario of tests/tools/gen_trace.c. The records of the scenario are mirrored below as
data; every expected number is computed here from them (interval unions, gaps, streams,
kernel groups, copy bandwidths), or derived by hand in the comments, never read from the
analyzer."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, main  # noqa: E402

MiB = 1 << 20
MIN_GAP = 10000  # the documented default of --min-gap

# KERNEL records: id -> mangled name (ids 1 and 3 are one kernel, registered twice).
KERNELS = {1: "_Z6matmulPKfS0_Pfi", 2: "relu_kernel", 3: "_Z6matmulPKfS0_Pfi"}
DEMANGLED = {"_Z6matmulPKfS0_Pfi": "matmul(float const*, float const*, float*, int)",
             "relu_kernel": "relu_kernel"}

# API calls (gen_gpu_calls): time, tid, kind, api, ret, corr, kernel or bytes, stack id.
CALLS = [
    (10000, 100, "launch", "cudaLaunchKernel", 0, 11, 1, 1),
    (11000, 100, "launch", "cudaLaunchKernel", 0, 12, 2, 1),
    (12000, 100, "launch", "cudaLaunchKernel", 0, 13, 3, 1),
    (12500, 100, "launch", "cudaLaunchKernel", 0, 17, 2, 1),
    (13000, 100, "memcpy", "cudaMemcpyAsync", 0, 21, MiB, 1),
    (14000, 100, "memcpy", "cudaMemcpyAsync", 0, 22, MiB, 1),
    (30000, 100, "launch", "cudaLaunchKernel", 98, 16, 1, 1),
    (45000, 101, "launch", "cudaLaunchKernel", 0, 15, 2, 3),
    (95000, 100, "launch", "cudaLaunchKernel", 0, 14, 1, 3),
    (110000, 100, "memset", "cudaMemsetAsync", 0, 31, 4096, 1),
    (118000, 100, "memcpy", "cudaMemcpy", 0, 23, 2 * MiB, 3),
    (119000, 100, "memcpy", "cudaMemcpy", 0, 24, MiB, 1),
    (120000, 100, "memcpy", "cudaMemcpyAsync", 0, 25, 8 * MiB, 1),
]

# GPU records (gen_gpu_acts): type, device, stream, corr, start, dur, kernel id or bytes,
# direction, host memory kind of the host side.
ACTS = [
    ("kernel", 0, 7, 11, 20000, 10000, 1, None, None),
    ("kernel", 0, 7, 13, 30000, 5000, 3, None, None),
    ("kernel", 0, 8, 12, 25000, 15000, 2, None, None),
    ("kernel", 1, 20, 17, 30000, 9000, 2, None, None),
    ("memcpy", 0, 8, 21, 40000, 10000, MiB, "HtoD", "pageable"),
    ("memcpy", 0, 8, 22, 52000, 2000, MiB, "HtoD", "pinned"),
    ("kernel", 0, 7, 14, 100000, 12000, 1, None, None),
    ("memset", 0, 8, 31, 112000, 1000, 4096, None, None),
    ("memcpy", 0, 7, 23, 125000, 1000, 2 * MiB, "DtoH", "pinned"),
    ("memcpy", 0, 7, 24, 126000, 10000, MiB, "DtoH", "pageable"),
    ("memcpy", 0, 8, 25, 136000, 1000, 8 * MiB, "DtoD", "other"),
    ("kernel", 0, 9, 999, 140000, 1000, 2, None, None),
    ("kernel", 0, 9, 0, 141000, 1000, 2, None, None),
]
GPU_DROPPED = {"records": 7, "by_cupti": 5, "by_profiler": 2}


def union(intervals):
    """Merged [start, end) intervals, sorted."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def busy(intervals):
    return sum(e - s for s, e in union(intervals))


def device_intervals(dev):
    return [(a[4], a[4] + a[5]) for a in ACTS if a[1] == dev]


def gaps(dev):
    """(start, duration) of every hole in a device's union."""
    u = union(device_intervals(dev))
    return [(u[i][1], u[i + 1][0] - u[i][1]) for i in range(len(u) - 1)]


def span(dev):
    iv = device_intervals(dev)
    return max(e for _, e in iv) - min(s for s, _ in iv)


DEVICES = sorted({a[1] for a in ACTS})


class GpuReport(CliTest):
    def setUp(self):
        super().setUp()
        self.trace, _ = self.gen("gpu")
        self.j = self.json_of("report", "--json", "--top", "0", self.trace)
        self.g = self.j["gpu"]

    def test_record_counts(self):
        r = self.json_of("info", "--json", self.trace)["records"]  # kernel...: GPU records
        self.assertEqual(r["kernel"], sum(a[0] == "kernel" for a in ACTS))
        self.assertEqual(r["memcpy"], sum(a[0] == "memcpy" for a in ACTS))
        self.assertEqual(r["memset"], sum(a[0] == "memset" for a in ACTS))
        self.assertEqual(r["launch"], sum(c[2] == "launch" for c in CALLS))
        self.assertEqual(self.g["activities"], len(ACTS))
        self.assertEqual(self.g["cupti"], "on")

    def test_busy_span_idle(self):
        g = self.g
        starts = [a[4] for a in ACTS]
        ends = [a[4] + a[5] for a in ACTS]
        self.assertEqual(g["first_ns"], min(starts))
        self.assertEqual(g["span_ns"], max(ends) - min(starts))
        total_busy = sum(busy(device_intervals(d)) for d in DEVICES)
        spans = sum(span(d) for d in DEVICES)
        self.assertEqual(g["busy_ns"], total_busy)
        self.assertEqual(total_busy, 59000 + 9000)  # the scenario's design, checked twice
        self.assertAlmostEqual(g["busy_share"], total_busy / spans, 5)
        self.assertEqual(g["idle_ns"], spans - total_busy)
        for d, got in zip(DEVICES, g["devices"]):
            self.assertEqual(got["device"], d)
            self.assertEqual(got["span_ns"], span(d))
            self.assertEqual(got["busy_ns"], busy(device_intervals(d)))
            self.assertEqual(got["idle_ns"], span(d) - got["busy_ns"])
            long_gaps = [x for x in gaps(d) if x[1] >= MIN_GAP]
            self.assertEqual(got["idle_gaps"], len(long_gaps))
            self.assertEqual(got["idle_gaps_ns"], sum(x[1] for x in long_gaps))

    def test_classes(self):
        for cls in ("kernels", "memcpy", "memset"):
            rows = [a for a in ACTS if a[0] == cls.rstrip("s")]
            self.assertEqual(self.g[cls]["count"], len(rows), cls)
            self.assertEqual(self.g[cls]["total_ns"], sum(a[5] for a in rows), cls)
            if cls != "kernels":
                self.assertEqual(self.g[cls]["bytes"], sum(a[6] for a in rows), cls)

    def call(self, corr):
        c = next(c for c in CALLS if c[5] == corr)
        return {"api": c[3], "at_ns": c[0], "tid": c[1], "corr": c[5], "ret": c[4],
                "stack_id": c[7]}

    def test_idle_gaps(self):
        g = self.g
        want = sorted(((d, s, n) for d in DEVICES for s, n in gaps(d) if n >= MIN_GAP),
                      key=lambda x: (-x[2], x[1]))
        self.assertEqual(g["idle_gap_min_ns"], MIN_GAP)
        self.assertEqual(g["idle_gaps_count"], len(want))
        self.assertEqual(g["idle_gaps_ns"], sum(x[2] for x in want))
        self.assertEqual([(x["device"], x["start_ns"], x["duration_ns"]) for x in g["idle_gaps"]],
                         want)
        for gap, (dev, start, dur) in zip(g["idle_gaps"], want):
            nxt = min((a for a in ACTS if a[1] == dev and a[4] == start + dur),
                      key=lambda a: a[3])
            self.assertEqual((gap["next"]["type"], gap["next"]["stream"], gap["next"]["corr"]),
                             (nxt[0], nxt[2], nxt[3]))
            got = {k: gap["issued_by"][k] for k in ("api", "at_ns", "tid", "corr", "ret", "stack_id")}
            self.assertEqual(got, self.call(nxt[3]))
            before = max((c for c in CALLS if c[0] < start), key=lambda c: c[0])
            got = {k: gap["last_call_before"][k]
                   for k in ("api", "at_ns", "tid", "corr", "ret", "stack_id")}
            self.assertEqual(got, self.call(before[5]))
        # The longest: the GPU waited 46 us for a launch the host made 41 us after it went
        # idle; the last call before it (thread 101) never reached the GPU.
        first = g["idle_gaps"][0]
        self.assertEqual((first["start_ns"], first["duration_ns"]), (54000, 46000))
        self.assertEqual(first["next"]["name"], DEMANGLED[KERNELS[1]])
        self.assertEqual(first["issued_by"]["stack"][0]["function"], "gen_marker_other")
        self.assertEqual(first["last_call_before"]["corr"], 15)

    def test_min_gap_and_top(self):
        g = self.json_of("report", "--json", "--min-gap", "2us", self.trace)["gpu"]
        want = [n for d in DEVICES for _, n in gaps(d) if n >= 2000]
        self.assertEqual(g["idle_gaps_count"], len(want))
        self.assertEqual(g["idle_gaps_ns"], sum(want))
        g = self.json_of("report", "--json", "--min-gap", "2us", "--top", "1", self.trace)["gpu"]
        self.assertEqual([x["duration_ns"] for x in g["idle_gaps"]], [max(want)])
        self.assertEqual(len(g["kernels_by_time"]), 1)
        self.assertEqual(g["kernel_names"], 2)
        g = self.json_of("report", "--json", "--min-gap", "1ms", self.trace)["gpu"]
        self.assertEqual((g["idle_gaps_count"], g["idle_gaps"]), (0, []))
        for bad in ("10", "5 us", "us", "-1us", "3xs"):
            p = self.fails(2, "report", "--min-gap", bad, self.trace)
            self.assertIn("--min-gap", p.stderr)

    def test_kernels_by_time(self):
        groups = {}
        for a in ACTS:
            if a[0] == "kernel":
                groups.setdefault(KERNELS[a[6]], []).append(a[5])
        want = sorted(groups.items(), key=lambda kv: -sum(kv[1]))
        busy_ns = self.g["busy_ns"]
        got = self.g["kernels_by_time"]
        self.assertEqual(self.g["kernel_names"], len(want))
        for row, (mangled, durs) in zip(got, want):
            self.assertEqual(row["mangled"], mangled)
            self.assertEqual(row["name"], DEMANGLED[mangled])
            self.assertEqual(row["ids"], sum(1 for m in KERNELS.values() if m == mangled))
            self.assertEqual((row["count"], row["total_ns"], row["min_ns"], row["max_ns"]),
                             (len(durs), sum(durs), min(durs), max(durs)))
            self.assertEqual(row["mean_ns"], sum(durs) // len(durs))
            self.assertAlmostEqual(row["share"], sum(durs) / busy_ns, 5)
        # The launch-count table still counts LAUNCH records per id.
        self.assertEqual(sum(k["count"] for k in self.j["kernels"]),
                         sum(c[2] == "launch" for c in CALLS))

    def test_copies(self):
        c = self.g["copies"]
        for d in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"):
            rows = [a for a in ACTS if a[0] == "memcpy" and a[7] == d]
            self.assertEqual((c[d]["count"], c[d]["bytes"], c[d]["total_ns"]),
                             (len(rows), sum(a[6] for a in rows), sum(a[5] for a in rows)), d)
            for h in ("pageable", "pinned", "other"):
                sub = [a for a in rows if a[8] == h]
                got = c[d]["by_host_kind"][h]
                self.assertEqual((got["count"], got["bytes"], got["total_ns"]),
                                 (len(sub), sum(a[6] for a in sub), sum(a[5] for a in sub)))
                if sub:  # bytes per ns = GB/s
                    self.assertAlmostEqual(got["gb_per_s"] / (sum(a[6] for a in sub) /
                                                              sum(a[5] for a in sub)), 1, 5)
                else:
                    self.assertIsNone(got["gb_per_s"])
        # The pin_memory question: pinned HtoD ran 5x faster than pageable here.
        self.assertAlmostEqual(c["HtoD"]["by_host_kind"]["pinned"]["gb_per_s"], MiB / 2000, 2)
        self.assertAlmostEqual(c["HtoD"]["by_host_kind"]["pageable"]["gb_per_s"], MiB / 10000, 2)

    def test_streams(self):
        keys = sorted({(a[1], a[2]) for a in ACTS})
        got = self.g["streams"]
        self.assertEqual([(s["device"], s["stream"]) for s in got], keys)
        for s, (dev, stream) in zip(got, keys):
            rows = [a for a in ACTS if (a[1], a[2]) == (dev, stream)]
            b = busy([(a[4], a[4] + a[5]) for a in rows])
            self.assertEqual((s["kernels"], s["memcpys"], s["memsets"]),
                             tuple(sum(a[0] == t for a in rows) for t in ("kernel", "memcpy", "memset")))
            self.assertEqual(s["busy_ns"], b)
            self.assertAlmostEqual(s["utilization"], b / span(dev), 5)

    def test_correlation(self):
        corr = self.g["correlation"]
        call_corrs = {c[5] for c in CALLS}
        self.assertEqual(corr["no_corr"], sum(a[3] == 0 for a in ACTS))
        self.assertEqual(corr["uncorrelated"], sum(a[3] != 0 and a[3] not in call_corrs for a in ACTS))
        self.assertEqual(corr["correlated"], sum(a[3] in call_corrs for a in ACTS))
        act_corrs = {a[3] for a in ACTS}
        self.assertEqual(corr["launches_without_gpu"],
                         sum(c[2] == "launch" and c[4] == 0 and c[5] not in act_corrs for c in CALLS))
        self.assertEqual(corr["launches_without_gpu"], 1)
        self.assertEqual(self.g["dropped"], GPU_DROPPED)

    def test_memory_replay(self):
        m = self.j["memory"]
        # cudaMalloc 1 MiB + driver-only 2 MiB + cuMemCreate 4 MiB (released @4000 but
        # still mapped until @5000) + cuMemCreate 2 MiB @4500 = 9 MiB; had the release
        # freed at once, or the GPU_MEMORY twin of the cudaMalloc counted, or the handle
        # 0xA000000 been taken for the live pointer of the same value, it would differ.
        self.assertEqual((m["peak_bytes"], m["peak_at_ns"], m["peak_count"]), (9 * MiB, 4500, 4))
        self.assertEqual(m["vmm_at_peak_bytes"], 6 * MiB)
        # Handle 0xA000000, then handles 7 and 8, each released while mapped; 7 and 8 go
        # with one cuMemUnmap covering both mappings, leaving only the driver-only 2 MiB.
        self.assertEqual(m["vmm_released_while_mapped"], 3)
        self.assertEqual((m["gpu_memory_duplicates"], m["gpu_memory_replayed"],
                          m["gpu_memory_ignored"]), (2, 3, 0))
        self.assertEqual((m["live_at_end_bytes"], m["live_at_end_count"]), (2 * MiB, 1))
        self.assertEqual(m["leaks"][0]["driver_only"], True)
        self.assertEqual(m["leaks"][0]["stack"], [])
        self.assertEqual([(s["bytes"], s["count"], s["stack_id"], s["driver_only"])
                          for s in m["top_sites"]],
                         [(4 * MiB, 1, 3, False), (3 * MiB, 2, 1, False), (2 * MiB, 1, 0, True)])
        self.assertEqual((m["host_pinned_peak_bytes"], m["host_pinned_peak_at_ns"],
                          m["host_pinned_live_at_end_bytes"]), (4096, 2100, 0))
        self.assertEqual((m["unknown_frees"], m["reused_pointers"]), (0, 0))
        a = self.j["allocations"]
        self.assertEqual(a["by_api"]["cuMemCreate"], {"calls": 4, "ok": 4, "failed": 0,
                                                      "bytes": 8 * MiB})
        self.assertEqual(a["frees_by_api"]["cuMemRelease"], {"calls": 4, "ok": 4, "failed": 0})

    def test_text(self):
        out = self.ok("report", self.trace).stdout
        self.assertIn("GPU activity (CUPTI: on)", out)
        self.assertIn("busy         68.000 us", out)
        self.assertIn("2 gaps of 10.000 us or more (58.000 us)", out)
        self.assertRegex(out, r"27\.000 us +39\.7% +3 +9\.000 us +5\.000 us +12\.000 us +matmul")
        self.assertRegex(out, r"HtoD +pageable +1 +1\.00 MiB +10\.000 us +104\.86")
        self.assertRegex(out, r"HtoD +pinned +1 +1\.00 MiB +2\.000 us +524\.29")
        self.assertRegex(out, r"\n +0 +7 +3 +2 +0 +38\.000 us +31\.1%")
        self.assertIn("#1  46.000 us idle on device 0 from 54.000 us, until kernel matmul", out)
        self.assertIn("issued by: cudaLaunchKernel (matmul(float const*, float const*, float*, "
                      "int)) at 95.000 us, thread 100, 41.000 us after the GPU went idle", out)
        self.assertIn("last call before: cudaLaunchKernel (relu_kernel) at 45.000 us, thread 101", out)
        self.assertIn("1 of 6 successful launches have no GPU record", out)
        self.assertIn("7 GPU activity records were lost (5 by CUPTI, 2 by the profiler)", out)
        self.assertIn("seen by the driver only", out)
        self.assertIn("peak               9.00 MiB (9437184 bytes, 4 allocations) at 4.500 us", out)


class NoGpu(CliTest):
    def test_basic_has_no_gpu_section_numbers(self):
        path, _ = self.gen("basic")
        g = self.json_of("report", "--json", path)["gpu"]
        self.assertIsNone(g["cupti"])
        self.assertEqual((g["activities"], g["busy_ns"], g["span_ns"], g["idle_gaps"]),
                         (0, 0, 0, []))
        self.assertIsNone(g["busy_share"])
        self.assertIsNone(g["correlation"]["launches_without_gpu"])  # CUPTI did not run
        out = self.ok("report", path).stdout
        self.assertEqual(out.count("no GPU activity recorded"), 1)
        self.assertIn("(CUPTI: the trace does not say whether it ran)", out)
        self.assertNotIn("GPU kernels by total time", out)
        self.assertNotIn("GPU idle gaps", out)

    def test_cupti_state_is_reported(self):
        path, _ = self.gen("cupti-off")
        self.assertEqual(self.json_of("report", "--json", path)["gpu"]["cupti"],
                         "unavailable: libcupti.so.13 not found")
        out = self.ok("report", path).stdout
        self.assertIn("no GPU activity recorded (CUPTI: unavailable: libcupti.so.13 not found)",
                      out)


if __name__ == "__main__":
    main()

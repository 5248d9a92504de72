"""The report's GPU section and memory numbers, end to end: samples run under `anatomist run
--sim`, and `anatomist report --json --top 0` must give the GPU times, bytes and memory
that the simulated device executed, exactly.

Expected values never come from the report. They come from
* the samples' ledgers (what each program knows it did: every launch's grid and block, each
  copy's bytes and host memory kind, its allocations, how long it slept);
* the simulated device's cost model (docs/sim.md, "Cost model"; the constants of
  sim/sim.h), recomputed here: a kernel lasts llround(3000 + threads x 0.02) ns, a copy
  between host and device llround(bytes / 25) with pinned and llround(bytes / 12) with
  pageable host memory, a device-to-device copy or a memset llround(bytes / 1500);
* the raw records, read with tests/anatrace_dump, where a number depends on when things ran
  (the union of the GPU intervals, the idle gaps): computed here from each activity's
  [time, time + dur_ns).
Record-level checks (every launch has its GPU_KERNEL, ...) are test_cupti.py's."""
import collections
import json
import math
import os
import unittest

from common import anatomist, clean_env, dims, dump, info_json, ledger, of, sample, tmpdir

ACTIVITIES = ("GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET")
MIN_GAP_NS = 10000  # the report's default --min-gap (docs/report-schema.md, `gpu`)

# docs/sim.md, "Cost model" (sim/sim.h: ANA_SIM_*).
LAUNCH_NS, THREAD_NS = 3000.0, 0.02
BYTES_PER_NS = {"pinned": 25.0, "pageable": 12.0, "device": 1500.0}


def llround(x):
    """C's llround for x >= 0: the nearest integer, halves away from zero."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def kernel_ns(grid, block):
    threads = float(math.prod(grid) * math.prod(block))
    return llround(LAUNCH_NS + threads * THREAD_NS)


def copy_ns(nbytes, host):
    """host: 'pinned' or 'pageable' for a copy to or from the host, 'device' for a
    device-to-device copy or a memset."""
    return llround(nbytes / BYTES_PER_NS[host])


def profile(name, *args, **env):
    """Runs a sample under `anatomist run --sim`; returns (its ledger, the trace)."""
    trace = os.path.join(tmpdir(), name + ".anat")
    r = anatomist("run", "--sim", "-q", "-o", trace, "--", sample(name), *args, env=clean_env(**env))
    assert r.returncode == 0, "%s failed (%d): %s" % (name, r.returncode, r.stderr)
    return ledger(r.stdout), trace


def report(trace):
    r = anatomist("report", trace, "--json", "--top", "0", "--no-symbols")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)



def origin(recs):
    """The report's time zero: the smallest record time of the trace."""
    return min(r["time"] for r in recs if "time" in r)


def merged(recs):
    """The union of the GPU activities' intervals, as sorted disjoint [start, end)."""
    out = []
    for s, e in sorted((r["time"], r["time"] + r["dur_ns"]) for r in of(recs, *ACTIVITIES)):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def idle_gaps(recs, t0):
    """(start_ns, duration_ns) of the gaps of at least MIN_GAP_NS between the merged
    intervals, relative to t0, longest first (ties: earlier first)."""
    m = merged(recs)
    gaps = [(a[1] - t0, b[0] - a[1]) for a, b in zip(m, m[1:]) if b[0] - a[1] >= MIN_GAP_NS]
    return sorted(gaps, key=lambda g: (-g[1], g[0]))


def kernel_names(recs):
    return {k["id"]: k["name"] for k in of(recs, "KERNEL")}


def shape(r):
    return (dims(r, "grid"), dims(r, "block"))


def by_name(entries):
    return {e["name"]: e for e in entries}


class Timeline:
    """Assertions shared by every sample: the device-level times are those of the union
    of the activities' intervals, computed from the records."""

    def check_timeline(self, rep, recs):
        g, t0, m = rep["gpu"], origin(recs), merged(recs)
        acts = of(recs, *ACTIVITIES)
        self.assertEqual(g["activities"], len(acts))
        busy = sum(e - s for s, e in m)
        span = m[-1][1] - m[0][0]
        self.assertEqual(g["busy_ns"], busy, "busy time is not the union of the GPU intervals")
        self.assertEqual(g["span_ns"], span)
        self.assertEqual(g["idle_ns"], span - busy)
        self.assertEqual(g["first_ns"], m[0][0] - t0)
        self.assertAlmostEqual(g["busy_share"], busy / span, delta=busy / span * 1e-5)
        self.assertEqual(len(g["devices"]), 1)
        dev = g["devices"][0]
        self.assertEqual((dev["device"], dev["busy_ns"], dev["span_ns"], dev["first_ns"]),
                         (0, busy, span, m[0][0] - t0))
        self.assertEqual(g["idle_gap_min_ns"], MIN_GAP_NS)
        gaps = idle_gaps(recs, t0)
        self.assertEqual([(x["start_ns"], x["duration_ns"]) for x in g["idle_gaps"]], gaps)
        self.assertEqual(g["idle_gaps_count"], len(gaps))
        self.assertEqual(g["idle_gaps_ns"], sum(d for _, d in gaps))
        self.assertEqual(g["dropped"]["records"], 0)

    def check_correlated(self, rep, activities, launches_without_gpu=0):
        """Every activity is linked to the call that issued it: nothing uncorrelated."""
        self.assertEqual(rep["gpu"]["correlation"],
                         {"correlated": activities, "no_corr": 0, "uncorrelated": 0,
                          "launches_without_gpu": launches_without_gpu})


class TwoStreams(unittest.TestCase, Timeline):
    SLEEP_MS = 60  # longer than any other stall of the run on a loaded machine

    @classmethod
    def setUpClass(cls):
        cls.led, trace = profile("two_streams", "--sleep-ms", str(cls.SLEEP_MS))
        cls.rep, cls.recs = report(trace), dump(trace)

    def test_kernel_times_are_the_cost_model_of_each_launch(self):
        want = collections.defaultdict(list)
        for l in self.led["launches"]:
            want[l["kernel"]].append(kernel_ns(l["grid"], l["block"]))
        g = self.rep["gpu"]
        got = by_name(g["kernels_by_time"])
        self.assertEqual(set(got), set(want))
        self.assertEqual(g["kernel_names"], len(want))
        for name, durs in want.items():
            e = got[name]
            self.assertEqual((e["count"], e["total_ns"], e["mean_ns"], e["min_ns"], e["max_ns"]),
                             (len(durs), sum(durs), sum(durs) // len(durs), min(durs), max(durs)),
                             name)
            self.assertAlmostEqual(e["share"], sum(durs) / g["busy_ns"], delta=1e-5)
        self.assertEqual(g["kernels"], {"count": len(self.led["launches"]),
                                        "total_ns": sum(map(sum, want.values()))})
        # The longest total first.
        totals = [e["total_ns"] for e in g["kernels_by_time"]]
        self.assertEqual(totals, sorted(totals, reverse=True))

    def test_memsets(self):
        led = self.led
        each = led["memset_bytes"] // led["memset_calls"]  # one buffer per stream, same size
        self.assertEqual(each * led["memset_calls"], led["memset_bytes"])
        m = self.rep["gpu"]["memset"]
        self.assertEqual((m["count"], m["bytes"], m["total_ns"]),
                         (led["memset_calls"], led["memset_bytes"],
                          led["memset_calls"] * copy_ns(each, "device")))

    def test_streams(self):
        """8 kernels on each created stream; a stream's busy time is the sum of its
        kernels' costs (work on one stream never overlaps)."""
        led, streams = self.led, self.rep["gpu"]["streams"]
        # The CUPTI stream id of each of the program's streams: launches are unique by shape.
        sid = {}
        for k in of(self.recs, "GPU_KERNEL"):
            grid, block = shape(k)
            [l] = [l for l in led["launches"] if (l["grid"], l["block"]) == (grid, block)]
            self.assertEqual(sid.setdefault(l["stream"], k["stream"]), k["stream"], l)
        self.assertEqual(len(set(sid.values())), led["streams"])
        rows = {s["stream"]: s for s in streams}
        for index, stream_id in sid.items():
            mine = [l for l in led["launches"] if l["stream"] == index]
            self.assertEqual(len(mine), 8)
            row = rows[stream_id]
            self.assertEqual((row["device"], row["kernels"], row["memcpys"], row["memsets"]),
                             (0, len(mine), 0, 0), row)
            self.assertEqual(row["busy_ns"], sum(kernel_ns(l["grid"], l["block"]) for l in mine))
        # The memsets, on the default stream.
        others = [s for s in streams if s["stream"] not in sid.values()]
        self.assertEqual([(s["kernels"], s["memsets"]) for s in others], [(0, led["memset_calls"])])

    def test_timeline_and_correlation(self):
        self.check_timeline(self.rep, self.recs)
        self.check_correlated(self.rep, len(self.led["launches"]) + self.led["memset_calls"])

    def test_the_sleep_is_the_longest_idle_gap(self):
        led, recs, t0 = self.led, self.recs, origin(self.recs)
        gap = self.rep["gpu"]["idle_gaps"][0]
        after = led["launches"][led["sleep_after_launches"]]
        before = led["launches"][led["sleep_after_launches"] - 1]

        def corr_of(l):
            [c] = [r["corr"] for r in of(recs, "LAUNCH") if shape(r) == (l["grid"], l["block"])]
            return c
        # The GPU cannot run phase 2 before the host woke up and launched it; phase 1
        # cannot outlast the sleep's start by more than its own work (the simulated device
        # may run ahead of the host's clock, so the gap need not hold the whole sleep).
        phase1 = sum(kernel_ns(l["grid"], l["block"]) for l in led["launches"][:led["sleep_after_launches"]])
        self.assertGreaterEqual(t0 + gap["start_ns"] + gap["duration_ns"], led["sleep_end_ns"], gap)
        self.assertLessEqual(t0 + gap["start_ns"], led["sleep_start_ns"] + phase1, gap)
        self.assertGreaterEqual(gap["duration_ns"], led["sleep_us"] * 1000 - phase1, gap)
        # It ended with the first launch after the sleep, issued by that launch call.
        nxt, by = gap["next"], gap["issued_by"]
        self.assertEqual((nxt["type"], nxt["name"], nxt["corr"]), ("kernel", after["kernel"], corr_of(after)))
        self.assertIsNotNone(by, "the gap's next activity has no issuing call")
        self.assertIn("Launch", by["api"])
        self.assertEqual((by["corr"], by["ret"]), (corr_of(after), 0))
        self.assertGreaterEqual(t0 + by["at_ns"], led["sleep_end_ns"])
        self.assertEqual(gap["last_call_before"]["corr"], corr_of(before))

    def test_api_tables(self):
        self.assertEqual(self.rep["launches"], len(self.led["launches"]))
        want = collections.Counter(l["kernel"] for l in self.led["launches"])
        self.assertEqual({k["name"]: k["count"] for k in self.rep["kernels"]}, dict(want))


class Copies(unittest.TestCase, Timeline):
    @classmethod
    def setUpClass(cls):
        cls.led, trace = profile("copies")
        cls.rep, cls.recs = report(trace), dump(trace)

    def totals(self, ops):
        """count, bytes, total_ns of these ledger operations under the cost model."""
        host = lambda o: o["host"] if o["dir"] in ("h2d", "d2h") else "device"
        return (len(ops), sum(o["bytes"] for o in ops),
                sum(copy_ns(o["bytes"], host(o)) for o in ops))

    def check_entry(self, entry, ops, what):
        count, nbytes, ns = self.totals(ops)
        self.assertEqual((entry["count"], entry["bytes"], entry["total_ns"]), (count, nbytes, ns), what)
        if ns:
            self.assertAlmostEqual(entry["gb_per_s"], nbytes / ns, delta=nbytes / ns * 1e-5, msg=what)
        else:
            self.assertIsNone(entry["gb_per_s"], what)

    def test_copies_by_direction_and_host_kind(self):
        ops, copies = self.led["ops"], self.rep["gpu"]["copies"]
        self.assertEqual(set(copies), {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"})
        for key, d in (("HtoD", "h2d"), ("DtoH", "d2h")):
            mine = [o for o in ops if o["dir"] == d]
            self.check_entry(copies[key], mine, key)
            for host in ("pageable", "pinned"):
                part = [o for o in mine if o["host"] == host]
                self.assertTrue(part)
                self.check_entry(copies[key]["by_host_kind"][host], part, key + " " + host)
                self.assertEqual(sum(o["bytes"] for o in part), self.led["totals"][d][host])
            self.check_entry(copies[key]["by_host_kind"]["other"], [], key + " other")
        d2d = [o for o in ops if o["dir"] == "d2d"]
        self.check_entry(copies["DtoD"], d2d, "DtoD")
        self.check_entry(copies["DtoD"]["by_host_kind"]["other"], d2d, "DtoD other")
        for key in ("HtoH", "PtoP", "other"):
            self.check_entry(copies[key], [], key)
        self.check_entry(self.rep["gpu"]["memcpy"], [o for o in ops if o["dir"] != "memset"], "memcpy")
        self.check_entry(self.rep["gpu"]["memset"], [o for o in ops if o["dir"] == "memset"], "memset")
        self.assertEqual(self.rep["gpu"]["kernels"], {"count": 0, "total_ns": 0})

    def test_timeline_and_correlation(self):
        self.check_timeline(self.rep, self.recs)
        self.check_correlated(self.rep, len(self.led["ops"]))


class GraphReplay(unittest.TestCase, Timeline):
    def test_replayed_kernels_and_memsets(self):
        led, trace = profile("graph_replay")
        rep, recs = report(trace), dump(trace)
        g = rep["gpu"]
        self.assertEqual(led["graph_memset_nodes"], 1)
        # What ran: a captured launch once per replay, an ordinary one once.
        want = collections.defaultdict(list)
        for l in led["launches"]:
            want[l["kernel"]] += [kernel_ns(l["grid"], l["block"])] * (led["graph_launches"] if l["captured"] else 1)
        got = by_name(g["kernels_by_time"])
        self.assertEqual({n: e["count"] for n, e in got.items()}, led["kernels_executed"])
        for name, durs in want.items():
            self.assertEqual((got[name]["count"], got[name]["total_ns"], got[name]["min_ns"], got[name]["max_ns"]),
                             (len(durs), sum(durs), min(durs), max(durs)), name)
        m = g["memset"]
        self.assertEqual((m["count"], m["bytes"], m["total_ns"]),
                         (led["memsets_executed"], led["graph_launches"] * led["graph_memset_bytes"],
                          led["memsets_executed"] * copy_ns(led["graph_memset_bytes"], "device")))
        self.check_timeline(rep, recs)
        # Replayed activities carry the graph launch's corr; the launch calls made during
        # the capture were recorded but never ran.
        self.check_correlated(rep, sum(led["kernels_executed"].values()) + led["memsets_executed"],
                              launches_without_gpu=led["captured_launch_calls"])
        # The launch-count table counts launch calls of known kernels; graph launches are
        # counted apart, not as launches of an unknown kernel (id 0).
        calls = collections.Counter(l["kernel"] for l in led["launches"])
        self.assertEqual([k for k in rep["kernels"] if k["id"] == 0 or k["name"] is None], [],
                         "graph launches counted as launches of an unknown kernel")
        self.assertEqual({k["name"]: k["count"] for k in rep["kernels"]}, dict(calls))
        self.assertEqual(rep["launches"], len(led["launches"]))
        self.assertEqual((rep["graph_launches"], rep["failed_graph_launches"]), (led["graph_launches"], 0))


class VmmAlloc(unittest.TestCase):
    def check(self, lookup, hooks):
        led, trace = profile("vmm_alloc", "--lookup", lookup, ANATOMIST_DRIVER_HOOKS=hooks)
        rep, recs = report(trace), dump(trace)
        self.assertEqual(info_json(trace)["info"].get("ANATOMIST_DRIVER_HOOKS"), hooks)
        self.assertEqual(led["lookup"], lookup)
        mem = rep["memory"]
        self.assertEqual(mem["peak_bytes"], led["device_peak_bytes"])
        # At the peak: the cudaMalloc and cuMemAlloc buffers and the mapped chunks.
        vmm = led["device_peak_bytes"] - led["cuMemAlloc_bytes"] - led["cudaMalloc_bytes"]
        self.assertEqual(vmm, led["physical_peak_bytes"])
        self.assertEqual(mem["vmm_at_peak_bytes"], vmm)
        self.assertEqual((mem["live_at_end_bytes"], mem["live_at_end_count"], mem["leaks"]),
                         (led["live_at_exit_bytes"], 0, []))
        self.assertEqual((mem["unknown_frees"], mem["reused_pointers"], mem["vmm_released_while_mapped"]),
                         (0, 0, 0))
        # Everything was seen by a hook or CUPTI's callback: the driver's own allocation
        # records all duplicate a recorded call, none is replayed.
        driver_seen = [r for r in of(recs, "GPU_MEMORY") if r["op"] in (1, 2)]
        self.assertGreater(len(driver_seen), 0)
        self.assertEqual((mem["gpu_memory_duplicates"], mem["gpu_memory_replayed"], mem["gpu_memory_ignored"]),
                         (len(driver_seen), 0, 0))
        self.assertFalse(any(s["driver_only"] for s in mem["top_sites"]), mem["top_sites"])
        self.assertEqual(sum(s["bytes"] for s in mem["top_sites"]), led["device_peak_bytes"])
        by_api, calls = rep["allocations"]["by_api"], led["driver_calls"]
        self.assertEqual((by_api["cuMemCreate"]["ok"], by_api["cuMemCreate"]["bytes"]),
                         (calls["cuMemCreate"], led["physical_created_bytes"]))
        self.assertEqual((by_api["cuMemAlloc_v2"]["ok"], by_api["cuMemAlloc_v2"]["bytes"]),
                         (calls["cuMemAlloc_v2"], led["cuMemAlloc_bytes"]))
        self.assertEqual(by_api["cudaMalloc"]["bytes"], led["cudaMalloc_bytes"])
        # Its kernels, as launched.
        durs = [kernel_ns(l["grid"], l["block"]) for l in led["launches"]]
        [k] = rep["gpu"]["kernels_by_time"]
        self.assertEqual((k["name"], k["count"], k["total_ns"]), ("fill_words", len(durs), sum(durs)))
        self.assertEqual(rep["gpu"]["correlation"]["uncorrelated"], 0)
        self.assertEqual(rep["gpu"]["correlation"]["no_corr"], 0)

    def test_every_lookup_with_and_without_driver_hooks(self):
        for lookup in ("dlsym", "getproc", "entrypoint"):
            for hooks in ("1", "0"):
                with self.subTest(lookup=lookup, driver_hooks=hooks):
                    self.check(lookup, hooks)


class TrainMlp(unittest.TestCase, Timeline):
    def test_every_launch_copy_and_set_ran_as_called(self):
        led, trace = profile("train_mlp", "--steps", "3")
        rep, recs = report(trace), dump(trace)
        g, names = rep["gpu"], kernel_names(recs)
        got = by_name(g["kernels_by_time"])
        self.assertEqual({n: e["count"] for n, e in got.items()}, led["kernels"])
        # Each kernel's GPU time: the cost of the launch calls the program made.
        want = collections.defaultdict(int)
        for l in of(recs, "LAUNCH"):
            want[names[l["kernel"]]] += kernel_ns(*shape(l))
        self.assertEqual({n: e["total_ns"] for n, e in got.items()}, dict(want))
        # Host buffers are malloc'd (pageable): 12 GB/s both ways.
        c, lc = g["copies"], led["copies"]
        for key, d in (("HtoD", "h2d"), ("DtoH", "d2h")):
            self.assertEqual((c[key]["count"], c[key]["bytes"]), (lc[d + "_calls"], lc[d + "_bytes"]), key)
            self.assertEqual(c[key]["by_host_kind"]["pageable"]["count"], lc[d + "_calls"], key)
        api_copies = of(recs, "MEMCPY")
        self.assertEqual(g["memcpy"]["total_ns"], sum(copy_ns(r["bytes"], "pageable") for r in api_copies))
        m = g["memset"]
        self.assertEqual((m["count"], m["bytes"]), (lc["memset_calls"], lc["memset_bytes"]))
        self.assertEqual(m["total_ns"], sum(copy_ns(r["bytes"], "device") for r in of(recs, "MEMSET")))
        self.check_timeline(rep, recs)
        self.check_correlated(rep, led["launches"] + lc["h2d_calls"] + lc["d2h_calls"] + lc["memset_calls"])


class WithoutCupti(unittest.TestCase):
    def test_no_gpu_activity_but_the_api_tables(self):
        led, trace = profile("two_streams", "--sleep-ms", "1", ANATOMIST_CUPTI="0")
        rep = report(trace)
        g = rep["gpu"]
        self.assertEqual(g["cupti"], "off (ANATOMIST_CUPTI=0)")
        self.assertEqual((g["activities"], g["busy_ns"], g["span_ns"], g["idle_ns"], g["first_ns"]), (0, 0, 0, 0, 0))
        self.assertIsNone(g["busy_share"])
        self.assertEqual((g["devices"], g["streams"], g["idle_gaps"], g["kernels_by_time"]), ([], [], [], []))
        self.assertEqual(g["kernels"], {"count": 0, "total_ns": 0})
        self.assertEqual(g["correlation"], {"correlated": 0, "no_corr": 0, "uncorrelated": 0,
                                            "launches_without_gpu": None})
        self.assertEqual(rep["launches"], len(led["launches"]))
        self.assertEqual(rep["launches"], 16)
        want = collections.Counter(l["kernel"] for l in led["launches"])
        self.assertEqual({k["name"]: k["count"] for k in rep["kernels"]}, dict(want))
        self.assertEqual(rep["copies"]["memset"]["bytes"], led["memset_bytes"])
        text = anatomist("report", trace, "--no-symbols")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("no GPU activity recorded", text.stdout)
        self.assertIn("ANATOMIST_CUPTI=0", text.stdout)


if __name__ == "__main__":
    unittest.main()

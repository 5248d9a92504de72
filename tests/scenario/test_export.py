"""Scenario: `anatomist export` (docs/export.md) against `anatomist report --json`.

Every figure an export holds must equal the same figure in the report of the same trace,
which the report computes without the export code: the Chrome trace's kernel, copy and set
events against `gpu` (counts, bytes, the exact sum of durations, per stream and per kernel
name), its memory counter against `memory.peak_bytes` and `memory.at_peak`, its NVTX
slices against `ranges`; the SQLite database's tables against the same numbers, plus the
GEMMs (`libraries`, `gemms`), the allocations live at the peak by category, the steps,
the call stacks of the peak's allocation sites, and the NCCL collectives of each rank of
the data-parallel sample (`collective_calls`). The folded stacks' total is the GPU time
or the peak of the report. The command's errors: exit status 2 and no file left behind.

Runs: train_gpt in bf16 with NVTX ranges (cuBLAS/cuBLASLt GEMMs, one stream), train_mlp
(no NVTX), and ddp_allreduce with two ranks (NCCL).
"""
import glob
import json
import os
import sqlite3
import sys
import unittest
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(__file__))
from common import anatomist, clean_env, sample, tmpdir  # noqa: E402

RUNS = {
    "gpt": ("train_gpt", ["--precision", "bf16", "--steps", "3"], {"ANATOMIST_SIM_BLAS_COMPUTE": "0"}),
    "mlp": ("train_mlp", ["--steps", "3", "--hidden", "512"], {}),
}
_cache = {}


def full_report(trace):
    r = anatomist("report", trace, "--json", "--top", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def traces(name):
    """[(trace, report)] of one run, made once per test process."""
    if name in _cache:
        return _cache[name]
    d = tmpdir()
    if name == "ddp":
        r = anatomist("run", "--sim", "-q", "-o", os.path.join(d, "ddp-%p.anat"), "--",
                      sample("ddp_allreduce"), "--ranks", "2", "--steps", "2", "--elems", "4096",
                      env=clean_env(ANATOMIST_SIM_NCCL_TIMEOUT_MS="30000"), timeout=120)
        paths = sorted(glob.glob(os.path.join(d, "*.anat")))
    else:
        prog, args, env = RUNS[name]
        paths = [os.path.join(d, name + ".anat")]
        r = anatomist("run", "--sim", "-q", "-o", paths[0], "--", sample(prog), *args,
                      env=clean_env(**env), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    _cache[name] = [(p, full_report(p)) for p in paths]
    return _cache[name]


def export(trace, fmt, ext, *extra):
    out = os.path.join(tmpdir(), "export." + ext)
    r = anatomist("export", trace, "--format", fmt, "-o", out, "-q", *extra)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    assert not os.path.exists(out + ".tmp")
    return out


def ns(us):
    """A Chrome timestamp or duration (µs, three decimals) back to ns."""
    return round(us * 1000)


class Chrome(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = {}
        for name in ("gpt", "mlp"):
            trace, rep = traces(name)[0]
            with open(export(trace, "chrome", "json")) as f:
                cls.data[name] = (json.load(f), rep)

    def names(self, events, what):
        """{(pid, tid): name} of the process_name/thread_name metadata."""
        return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                if e["ph"] == "M" and e["name"] == what}

    def gpu_tracks(self, events):
        """{(device, stream): (pid, tid)} of the GPU processes' stream tracks."""
        procs = {pid: int(n.split()[1]) for (pid, _), n in self.names(events, "process_name").items()
                 if n.startswith("GPU ")}
        return {(procs[pid], int(n.split()[1])): (pid, tid)
                for (pid, tid), n in self.names(events, "thread_name").items()
                if pid in procs and n.startswith("stream ")}

    def test_streams_and_gpu_events(self):
        for name, (doc, rep) in self.data.items():
            with self.subTest(run=name):
                ev, g = doc["traceEvents"], rep["gpu"]
                tracks = self.gpu_tracks(ev)
                self.assertEqual(set(tracks), {(s["device"], s["stream"]) for s in g["streams"]})
                on = {v: k for k, v in tracks.items()}
                acts = [e for e in ev if e["ph"] == "X" and (e["pid"], e["tid"]) in on]
                kern = [e for e in acts if "kernel_id" in e["args"]]
                cpy = [e for e in acts if e["name"].startswith("memcpy ")]
                mset = [e for e in acts if e["name"] == "memset"]
                self.assertEqual(len(kern) + len(cpy) + len(mset), len(acts))
                self.assertEqual(len(kern), g["kernels"]["count"])
                self.assertEqual(sum(ns(e["dur"]) for e in kern), g["kernels"]["total_ns"])
                self.assertEqual(len(cpy), g["memcpy"]["count"])
                self.assertEqual(sum(e["args"]["bytes"] for e in cpy), g["memcpy"]["bytes"])
                self.assertEqual(sum(ns(e["dur"]) for e in cpy), g["memcpy"]["total_ns"])
                self.assertEqual(len(mset), g["memset"]["count"])
                self.assertEqual(sum(e["args"]["bytes"] for e in mset), g["memset"]["bytes"])
                self.assertEqual(sum(ns(e["dur"]) for e in mset), g["memset"]["total_ns"])
                for d, row in g["copies"].items():
                    mine = [e for e in cpy if e["name"] == "memcpy " + d]
                    self.assertEqual((len(mine), sum(e["args"]["bytes"] for e in mine),
                                      sum(ns(e["dur"]) for e in mine)),
                                     (row["count"], row["bytes"], row["total_ns"]), d)
                for s in g["streams"]:
                    mine = Counter(e["name"].split()[0] if e in cpy else e["name"]
                                   for e in acts if on[(e["pid"], e["tid"])] == (s["device"], s["stream"]))
                    k = sum(1 for e in kern if on[(e["pid"], e["tid"])] == (s["device"], s["stream"]))
                    self.assertEqual((k, mine["memcpy"], mine["memset"]),
                                     (s["kernels"], s["memcpys"], s["memsets"]))

    def test_kernel_names(self):
        for name, (doc, rep) in self.data.items():
            with self.subTest(run=name):
                by = defaultdict(lambda: [0, 0])
                for e in doc["traceEvents"]:
                    if e["ph"] == "X" and "kernel_id" in e.get("args", {}):
                        by[e["name"]][0] += 1
                        by[e["name"]][1] += ns(e["dur"])
                rows = rep["gpu"]["kernels_by_time"]
                self.assertEqual(len(rows), rep["gpu"]["kernel_names"])
                for k in rows:
                    self.assertEqual(by[k["name"]], [k["count"], k["total_ns"]], k["name"])
                    cats = {e["cat"] for e in doc["traceEvents"]
                            if e["ph"] == "X" and e["name"] == k["name"] and "kernel_id" in e["args"]}
                    self.assertEqual(cats, {k["class"]}, k["name"])

    def test_memory_counter(self):
        for name, (doc, rep) in self.data.items():
            with self.subTest(run=name):
                pts = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "device memory"]
                self.assertTrue(pts)
                top = max(pts, key=lambda e: sum(e["args"].values()))
                mem = rep["memory"]
                self.assertEqual(sum(top["args"].values()), mem["peak_bytes"])
                self.assertEqual(top["args"], mem["at_peak"])
                self.assertEqual(ns(top["ts"]), mem["peak_at_ns"])
                self.assertEqual(sum(pts[-1]["args"].values()), mem["live_at_end_bytes"])

    def test_host_tracks_and_flows(self):
        for name, (doc, rep) in self.data.items():
            with self.subTest(run=name):
                ev = doc["traceEvents"]
                procs = self.names(ev, "process_name")
                host = [pid for (pid, _), n in procs.items() if n.startswith("host (pid ")]
                self.assertEqual(len(host), 1)
                threads = {tid for (pid, tid) in self.names(ev, "thread_name") if pid == host[0]}
                calls = [e for e in ev if e["ph"] == "X" and e.get("cat") == "api"]
                self.assertEqual(sum(1 for e in calls if "kernel" in e["args"]), rep["launches"])
                self.assertTrue(calls and {e["tid"] for e in calls} <= threads)
                # flows: each GPU activity from the call that issued it
                outs = {e["bind_id"] for e in calls if e.get("flow_out")}
                ins = [e["bind_id"] for e in ev if e["ph"] == "X" and e.get("flow_in")]
                self.assertEqual(set(ins), outs)
                self.assertEqual(len(ins), rep["gpu"]["correlation"]["correlated"])

    def test_nvtx_ranges(self):
        doc, rep = self.data["gpt"]
        ev = doc["traceEvents"]
        got = Counter((e["name"], e["args"]["depth"]) for e in ev
                      if e["ph"] == "X" and e.get("cat") == "nvtx" and "depth" in e["args"])
        want = Counter({(r["name"], r["depth"]): r["count"] for r in rep["ranges"] if r["kind"] == "push"})
        self.assertEqual(got, want)
        self.assertTrue({"step", "forward", "backward"} <= {n for n, _ in got}, got)
        spans = Counter(e["name"] for e in ev if e["ph"] == "b" and e.get("cat") == "nvtx")
        self.assertEqual(spans, Counter({r["name"]: r["count"] for r in rep["ranges"] if r["kind"] == "start"}))
        # the GPU projection of each step: one slice per step, on a GPU process
        gpu = {pid for (pid, _), n in self.names(ev, "process_name").items() if n.startswith("GPU ")}
        proj = [e for e in ev if e["ph"] == "X" and e.get("cat") == "nvtx" and e["pid"] in gpu]
        self.assertEqual(sum(1 for e in proj if e["name"] == "step"), rep["steps"]["count"])


class Sqlite(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dbs = {}
        for name in ("gpt", "mlp"):
            trace, rep = traces(name)[0]
            cls.dbs[name] = (sqlite3.connect(export(trace, "sqlite", "sqlite")), rep)

    def one(self, db, sql, *args):
        return db.execute(sql, args).fetchone()

    def test_gpu_activities(self):
        for name, (db, rep) in self.dbs.items():
            with self.subTest(run=name):
                g = rep["gpu"]
                self.assertEqual(self.one(db, "SELECT COUNT(*), SUM(dur_ns) FROM kernels"),
                                 (g["kernels"]["count"], g["kernels"]["total_ns"]))
                self.assertEqual(self.one(db, "SELECT COUNT(*), SUM(bytes), SUM(dur_ns) FROM memsets"),
                                 (g["memset"]["count"], g["memset"]["bytes"], g["memset"]["total_ns"]))
                got = {d: (c, b, t) for d, c, b, t in db.execute(
                    "SELECT direction, COUNT(*), SUM(bytes), SUM(dur_ns) FROM copies GROUP BY direction")}
                want = {d: (r["count"], r["bytes"], r["total_ns"]) for d, r in g["copies"].items() if r["count"]}
                self.assertEqual(got, want)
                # the API side of the same copies (every copy ran on the simulated device)
                api = rep["copies"]["memcpy"]["by_direction"]
                for d, a in (("HtoD", "H2D"), ("DtoH", "D2H"), ("DtoD", "D2D")):
                    self.assertEqual(got.get(d, (0, 0, 0))[1], api[a]["bytes"], d)
                streams = {(d, s): (k, c, m) for d, s, k, c, m in db.execute(
                    "SELECT device, stream, kernels, memcpys, memsets FROM streams")}
                self.assertEqual(streams, {(s["device"], s["stream"]): (s["kernels"], s["memcpys"], s["memsets"])
                                           for s in g["streams"]})
                summary = {n: (c, t) for n, c, t in db.execute("SELECT name, count, total_ns FROM kernel_summary")}
                self.assertEqual(summary, {k["name"]: (k["count"], k["total_ns"]) for k in g["kernels_by_time"]})
                self.assertEqual(self.one(db, "SELECT COUNT(*) FROM api_calls WHERE kind = 'launch'")[0],
                                 rep["launches"])

    def test_memory_at_peak(self):
        for name, (db, rep) in self.dbs.items():
            with self.subTest(run=name):
                mem = rep["memory"]
                peak_idx = self.one(db, "SELECT value FROM meta WHERE key = 'peak_idx'")[0]
                self.assertEqual(self.one(db, "SELECT value FROM meta WHERE key = 'peak_bytes'")[0],
                                 mem["peak_bytes"])
                got = dict(db.execute(
                    "SELECT category, SUM(size) FROM allocations WHERE memory = 'device' AND a_idx <= ?"
                    " AND (f_idx IS NULL OR f_idx > ?) GROUP BY category", (peak_idx, peak_idx)))
                self.assertEqual(got, {c: b for c, b in mem["at_peak"].items() if b})
                rows = Counter(db.execute("SELECT size, category, stack_id FROM allocations_at_peak"))
                want = Counter((a["bytes"], a["category"], a["stack_id"] or None)
                               for a in mem["at_peak_allocations"])
                self.assertEqual(rows, want)
                libs = dict(db.execute("SELECT COALESCE(lib, 'none'), SUM(size) FROM allocations_at_peak"
                                       " GROUP BY lib"))
                self.assertEqual(libs, {k: v for k, v in mem["by_library"].items() if v})
                # every successful allocation call, and the frees of them
                by_api = {a: (c, b) for a, c, b in db.execute(
                    "SELECT api, COUNT(*), SUM(size) FROM allocations WHERE api IS NOT NULL GROUP BY api")}
                calls = rep["allocations"]
                self.assertEqual(by_api, {a: (r["ok"], r["bytes"]) for a, r in calls["by_api"].items() if r["ok"]})
                self.assertEqual(self.one(db, "SELECT COUNT(t_free) FROM allocations")[0],
                                 sum(r["ok"] for r in calls["frees_by_api"].values()))
                self.assertEqual(self.one(db, "SELECT COALESCE(SUM(size), 0) FROM allocations"
                                              " WHERE memory = 'device' AND t_free IS NULL")[0],
                                 mem["live_at_end_bytes"])

    def test_stacks(self):
        for name, (db, rep) in self.dbs.items():
            with self.subTest(run=name):
                sites = rep["memory"]["top_sites"]
                self.assertTrue(sites)
                for site in sites:
                    rows = db.execute("SELECT function, file, line, module, offset FROM stacks"
                                      " WHERE stack_id = ? ORDER BY depth", (site["stack_id"],)).fetchall()
                    want = [(f["function"], f["file"], f["line"], f["module"], f["offset"]) for f in site["stack"]]
                    self.assertEqual(rows, want)
                    self.assertIn("main", [r[0] for r in rows])

    def test_gemms(self):
        db, rep = self.dbs["gpt"]
        lib = rep["libraries"]
        self.assertGreater(lib["gemm_calls"], 0)
        self.assertEqual(self.one(db, "SELECT COUNT(*), SUM(flops), SUM(gpu_ns), SUM(kernels) FROM gemms"),
                         (lib["gemm_calls"], lib["gemm_flops"], lib["gemm_gpu_ns"], lib["gemm_kernels"]))
        got = {tuple(r[:-1]): r[-1] for r in db.execute(
            "SELECT api, m, n, k, batch, trans, precision, COUNT(*) FROM gemms"
            " GROUP BY api, m, n, k, batch, trans, a_type, b_type, c_type, compute_type, precision")}
        want = Counter()
        for s in rep["gemms"]:
            want[(s["api"], s["m"], s["n"], s["k"], s["batch"], s["trans"], s["precision"])] += s["count"]
        self.assertEqual(got, dict(want))

    def test_ranges_and_steps(self):
        db, rep = self.dbs["gpt"]
        got = {(k, d, n, dep): (c, t) for k, d, n, dep, c, t in db.execute(
            "SELECT kind, domain, name, depth, count, total_ns FROM range_summary")}
        want = {(r["kind"], r["domain"], r["name"], r["depth"]): (r["count"], r["host_ns"])
                for r in rep["ranges"]}
        self.assertEqual(got, want)
        first = self.one(db, "SELECT value FROM meta WHERE key = 'first_ns'")[0]
        steps = db.execute("SELECT step, start_ns, dur_ns, calls, busy_ns, contraction_ns,"
                           " elementwise_ns, forward_ns, backward_ns, optimizer_ns, flops"
                           " FROM steps ORDER BY step").fetchall()
        want = [(s["index"], s["start_ns"] + first, s["duration_ns"], s["calls"], s["gpu_busy_ns"],
                 s["by_class"]["contraction"], s["by_class"]["elementwise"], s["phases"]["forward_ns"],
                 s["phases"]["backward_ns"], s["phases"]["optimizer_ns"], s["gemm_flops"])
                for s in rep["steps"]["list"]]
        self.assertEqual(len(steps), rep["steps"]["count"])
        self.assertEqual(steps, want)
        peaks = db.execute("SELECT step, peak_bytes FROM steps ORDER BY step").fetchall()
        self.assertEqual(peaks, [(p["step"], p["peak_bytes"]) for p in rep["memory"]["step_peaks"]])
        calls = dict(db.execute("SELECT step, COUNT(*) FROM api_calls WHERE step IS NOT NULL GROUP BY step"))
        self.assertEqual(calls, {s["index"]: s["calls"] for s in rep["steps"]["list"]})

    def test_collectives(self):
        ranks = [(t, r) for t, r in traces("ddp") if r["libraries"]["collective_calls"]]
        self.assertEqual(len(ranks), 2)  # the launcher makes no NCCL call
        for trace, rep in ranks:
            db = sqlite3.connect(export(trace, "sqlite", "db"))
            self.assertEqual(self.one(db, "SELECT COUNT(*) FROM collectives")[0],
                             rep["libraries"]["collective_calls"])
            got = dict(db.execute("SELECT op || ' ' || bytes, COUNT(*) FROM collectives GROUP BY op, bytes"))
            want = Counter()
            for c in rep["collectives"]:
                want["%s %d" % (c["op"], c["bytes"])] += c["count"]
            self.assertEqual(got, dict(want))


class Folded(unittest.TestCase):
    def total(self, path):
        with open(path) as f:
            return sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())

    def test_totals(self):
        trace, rep = traces("gpt")[0]
        g = rep["gpu"]
        self.assertEqual(self.total(export(trace, "folded", "folded")),
                         g["kernels"]["total_ns"] + g["memcpy"]["total_ns"] + g["memset"]["total_ns"])
        self.assertEqual(self.total(export(trace, "folded", "folded", "--metric", "peak-memory")),
                         rep["memory"]["peak_bytes"])


class Cli(unittest.TestCase):
    def setUp(self):
        self.trace = traces("mlp")[0][0]
        self.dir = tmpdir()

    def bad(self, *args, says):
        r = anatomist("export", *args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(says, r.stderr)
        self.assertTrue(r.stderr.startswith("anatomist: "), r.stderr)

    def test_usage_errors(self):
        out = os.path.join(self.dir, "x.json")
        self.bad(self.trace, "--format", "perfetto", "-o", out, says="unknown format 'perfetto'")
        self.bad(self.trace, "--format", "sqlite", says="-o FILE")
        self.bad(self.trace, "--format", "sqlite", "-o", "-", says="-o FILE")
        self.bad(self.trace, "-o", os.path.join(self.dir, "x.txt"), says="which format")
        self.bad(self.trace, "--format", "chrome", "--metric", "gpu-time", "-o", out, says="--metric")
        self.bad("-o", out, says="TRACE")
        self.assertEqual(os.listdir(self.dir), [])

    def test_unwritable(self):
        for ext in ("json", "sqlite", "folded"):
            out = os.path.join(self.dir, "no-such-dir", "x." + ext)
            self.bad(self.trace, "-o", out, says="cannot write " + out)
        self.assertEqual(os.listdir(self.dir), [])
        out = os.path.join(self.dir, "a-dir.json")
        os.mkdir(out)  # rename onto a directory fails: nothing may be left beside it
        self.bad(self.trace, "-o", out, says="cannot write")
        self.assertEqual(os.listdir(self.dir), ["a-dir.json"])

    def test_format_from_extension_and_stdout(self):
        db = os.path.join(self.dir, "x.db")
        with open(db, "w") as f:
            f.write("not a database")  # replaced
        r = anatomist("export", self.trace, "-o", db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote " + db, r.stderr)
        n = sqlite3.connect(db).execute("SELECT COUNT(*) FROM kernels").fetchone()[0]
        self.assertEqual(n, traces("mlp")[0][1]["gpu"]["kernels"]["count"])
        r = anatomist("export", self.trace, "--format", "chrome", "-o", "-", "-q")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("traceEvents", json.loads(r.stdout))

    def test_help(self):
        r = anatomist("export", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: anatomist export TRACE", r.stdout)
        for word in ("chrome", "sqlite", "folded", "--metric"):
            self.assertIn(word, r.stdout)


if __name__ == "__main__":
    unittest.main()

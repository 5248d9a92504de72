"""One report for a job of many ranks (docs/ranks.md): 8 ranks of samples/ddp_allreduce on
the sim, one of them made slow on purpose (--slow-rank R --slow-us U: it spins U µs on the
host before every all-reduce, and its ledger says so).

Against what the programs and the raw records say, never against the code under test:
* the job report (`anatomist report DIR`) lists the 8 ranks with the pids the launcher
  printed, the host of this machine, each rank's steps / median step / GPU busy / peak as
  its own single-trace `report --json` prints them, its records as `info --json` counts
  them and its host time in collectives as the sum of its COLL records' dur
  (anatrace_dump); the merged sums equal the sums of the single-trace reports; the
  collective calls equal the ledgers';
* exactly the slow rank is a straggler; its work per step is at least U µs (it spun that
  long), the others' below U/2;
* the collective skew matches every (communicator, seq) of the ledgers across ranks and
  names the slow rank as the last to arrive at every in-loop all-reduce of the world
  communicator, and as the rank that delayed collectives most;
* merging the ranks' `report --json` documents gives the same document as the traces;
* `anatomist diff` of the slow job and one without a slow rank (directories, and the
  --base/--head lists) shows the median step time drop by at least U/2;
* CLI errors: a directory without traces, an unreadable trace, ranks of two jobs, a JSON
  document without a rank: exit status 2 naming the file.
Runs two jobs of 8 ranks x 4 steps (about 5 s on 2 cores)."""
import glob
import json
import os
import socket
import unittest

from common import SIM_LIB, anatomist, clean_env, dump, of, sample, tmpdir

DDP = sample("ddp_allreduce")
HAVE_SIM = os.path.exists(os.path.join(SIM_LIB, "libnccl.so.2"))
RANKS, STEPS, ELEMS = 8, 4, 4096
SLOW, SLOW_US = 5, 150000


def job(slow):
    """Runs the launcher; returns (dir, ledgers by rank, launcher line)."""
    d = tmpdir()
    extra = ["--slow-rank", str(SLOW), "--slow-us", str(SLOW_US)] if slow else []
    r = anatomist("run", "--sim", "-q", "-o", os.path.join(d, "ddp-%p.anat"), "--", DDP,
                  "--ranks", str(RANKS), "--steps", str(STEPS), "--elems", str(ELEMS), *extra,
                  env=clean_env(ANATOMIST_SIM_NCCL_TIMEOUT_MS="30000"), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    leds = [json.loads(l[len("ledger "):]) for l in r.stdout.splitlines() if l.startswith("ledger ")]
    launcher = [json.loads(l[len("launcher "):]) for l in r.stdout.splitlines() if l.startswith("launcher ")]
    assert len(launcher) == 1 and len(leds) == RANKS, r.stdout
    return d, sorted(leds, key=lambda l: l["rank"]), launcher[0]


def cli_json(*args):
    r = anatomist(*args, timeout=180)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def median_low(v):
    v = sorted(v)
    return v[(len(v) - 1) // 2]


@unittest.skipUnless(os.path.exists(DDP) and HAVE_SIM, "ddp_allreduce or the sim's NCCL is not built")
class Ranks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.slow_dir, cls.leds, cls.launcher = job(True)
        cls.fast_dir, cls.fast_leds, _ = job(False)
        cls.pids = [q["pid"] for q in cls.launcher["ranks"]]
        cls.traces = [os.path.join(cls.slow_dir, "ddp-%d.anat" % p) for p in cls.pids]
        cls.single = [cli_json("report", "--json", "--top", "0", t) for t in cls.traces]
        cls.job = cli_json("report", "--json", "--top", "0", cls.slow_dir)

    def test_ledgers(self):
        """The sample did what it was asked: only rank SLOW spun, U µs a step."""
        self.assertTrue(self.launcher["ok"], self.launcher)
        for q, led in enumerate(self.leds):
            self.assertEqual((led["slow_rank"], led["slow_us"]), (SLOW, SLOW_US))
            self.assertEqual(led["extra_us"], SLOW_US if q == SLOW else 0)
        self.assertEqual({l["slow_rank"] for l in self.fast_leds}, {-1})

    def test_per_rank_table(self):
        rows = self.job["ranks"]
        self.assertEqual([(r["rank"], r["pid"]) for r in rows], [(q, p) for q, p in enumerate(self.pids)])
        self.assertEqual(self.job["job"]["ranks"], RANKS)
        self.assertEqual(self.job["job"]["world_size"], RANKS)
        self.assertEqual(self.job["job"]["missing_ranks"], [])
        self.assertEqual(self.job["job"]["hosts"], [socket.gethostname()])
        for q, (row, rep, path) in enumerate(zip(rows, self.single, self.traces)):
            steps = rep["steps"]
            durs = [s["duration_ns"] for s in steps["list"]]
            self.assertGreaterEqual(len(durs), STEPS - 1, path)  # steps found by the period
            self.assertEqual(row["steps"], steps["count"])
            self.assertEqual(row["step_median_ns"], steps["median_ns"])
            self.assertEqual(row["step_mean_ns"], (sum(durs) + len(durs) // 2) // len(durs))
            self.assertEqual(row["gpu_busy_ns"], rep["time"]["busy_ns"])
            self.assertEqual(row["peak_bytes"], rep["memory"]["peak_bytes"])
            self.assertEqual(row["host"], rep["trace"]["process"]["host"])
            info = cli_json("info", "--json", path)
            self.assertEqual(row["records"], sum(info["records"].values()), path)
            recs = dump(path)
            colls = of(recs, "COLL")
            self.assertEqual(row["collective_calls"], self.leds[q]["calls"])
            self.assertEqual(row["collective_calls"], len(colls))
            self.assertEqual(row["collective_host_ns"], sum(c["dur_ns"] for c in colls), path)

    def test_merged_sums(self):
        t = self.job["time"]
        for key in ("busy_ns", "idle_ns", "span_ns", "overlap_ns"):
            self.assertEqual(t[key], sum(r["time"][key] for r in self.single), key)
        for key in ("by_class", "by_class_count"):
            for cls, v in t[key].items():
                self.assertEqual(v, sum(r["time"][key][cls] for r in self.single), (key, cls))
        self.assertEqual(t["launches"], sum(r["launches"] for r in self.single))
        self.assertEqual(self.job["collectives"]["calls"], sum(l["calls"] for l in self.leds))
        self.assertEqual(self.job["collectives"]["gpu_ns"],
                         sum(r["libraries"]["collective_gpu_ns"] for r in self.single))
        m = self.job["memory"]
        peaks = [r["memory"]["peak_bytes"] for r in self.single]
        self.assertEqual((m["peak_max_bytes"], m["peak_sum_bytes"]), (max(peaks), sum(peaks)))
        self.assertEqual(m["live_at_end_bytes"], sum(r["memory"]["live_at_end_bytes"] for r in self.single))

    def test_stragglers(self):
        st = self.job["stragglers"]
        self.assertEqual({s["rank"] for s in st["list"]}, {SLOW}, st)
        self.assertIn("work", {s["metric"] for s in st["list"]})
        rows = self.job["ranks"]
        self.assertEqual([r["rank"] for r in rows if r["straggler"]], [SLOW])
        self.assertGreaterEqual(rows[SLOW]["work_median_ns"], SLOW_US * 1000)
        for r in rows:
            if r["rank"] != SLOW:
                self.assertLess(r["work_median_ns"], SLOW_US * 1000 // 2, r)
        text = anatomist("report", self.slow_dir, timeout=180)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("rank %d: work per step" % SLOW, text.stdout)
        # the launcher forks the ranks and makes no CUDA call itself (nvcc's registration
        # starts nothing): it writes no trace, and the directory holds the ranks' alone
        self.assertNotIn("left out", text.stderr)
        self.assertEqual(sorted(glob.glob(os.path.join(self.slow_dir, "*.anat"))), sorted(self.traces))

    def test_skew(self):
        sk = self.job["skew"]
        self.assertEqual(sk["clock"], "monotonic")
        # every world collective, and the split's all-reduce on each of its 2 communicators
        world = sum(o["calls"] for o in self.leds[0]["collectives"] if o["comm"] == "world")
        colors = {l["split"]["color"] for l in self.leds}
        self.assertEqual(sk["matched"], world + len(colors))
        self.assertEqual(sk["unmatched_calls"], 0)
        self.assertEqual(sk["late_rank"], SLOW)
        loop = [c for c in sk["collectives"] if c["op"] == "AllReduce" and c["ranks"] == RANKS]
        self.assertEqual(len(loop), STEPS)
        for c in loop:
            self.assertEqual(c["last_rank"], SLOW, c)
            self.assertGreaterEqual(c["arrival_spread_ns"], SLOW_US * 1000 // 2, c)
            self.assertLess(c["dur_last_ns"], c["dur_median_ns"], c)  # the others waited
        self.assertGreaterEqual(self.job["ranks"][SLOW]["last_arrivals"], STEPS)

    def test_json_merge(self):
        d = tmpdir()
        names = []
        for f in sorted(glob.glob(os.path.join(self.slow_dir, "*.anat"))):
            r = anatomist("report", "--json", "--top", "0", f, timeout=180)
            self.assertEqual(r.returncode, 0, r.stderr)
            names.append(os.path.join(d, os.path.basename(f) + ".json"))
            with open(names[-1], "w") as out:
                out.write(r.stdout)
        merged = cli_json("report", "--json", "--top", "0", *names)
        self.assertEqual(merged, self.job)

    def test_diff(self):
        for args in ([self.slow_dir, self.fast_dir],
                     [a for t in sorted(glob.glob(os.path.join(self.slow_dir, "*.anat"))) for a in ("--base", t)]
                     + ["--head", self.fast_dir]):
            r = anatomist("diff", "--format", "json", *args, timeout=180)
            self.assertEqual(r.returncode, 0, r.stderr)
            d = json.loads(r.stdout)
            step = {m["key"]: m for m in d["metrics"]}["step-time"]
            self.assertEqual(step["base"], self.job["job"]["step_median_ns"])
            # the others' steps hold their wait for the straggler, less however late they
            # reached the all-reduce: under load a little under SLOW_US (149.87 ms seen)
            self.assertGreaterEqual(step["base"], SLOW_US * 1000 * 9 // 10)
            self.assertLess(step["head"], step["base"] - SLOW_US * 1000 // 2)
            self.assertEqual([s["rank"] for s in d["base"]["stragglers"] if s["metric"] == "work"], [SLOW])
        r = anatomist("diff", self.slow_dir, self.fast_dir, "--fail-on", "step-time<-20%", timeout=180)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("step time", r.stdout)

    def test_errors(self):
        empty = tmpdir()
        r = anatomist("report", empty)
        self.assertEqual(r.returncode, 2)
        self.assertIn(empty, r.stderr)
        self.assertIn("no traces", r.stderr)
        bad = os.path.join(tmpdir(), "bad.anat")
        with open(bad, "wb") as f:
            f.write(b"not a trace at all")
        r = anatomist("report", self.traces[0], bad)
        self.assertEqual((r.returncode, bad in r.stderr), (2, True), r.stderr)
        fast_rank0 = [t for t in glob.glob(os.path.join(self.fast_dir, "*.anat"))
                      if of(dump(t), "PROCESS")[0]["rank"] == 0]
        r = anatomist("report", self.traces[0], fast_rank0[0])
        self.assertEqual(r.returncode, 2)
        self.assertIn("both rank 0", r.stderr)
        nojson = os.path.join(tmpdir(), "x.json")
        with open(nojson, "w") as f:
            f.write('{"schema": "anatomist.report/1"}')
        r = anatomist("report", nojson, self.traces[0])
        self.assertEqual(r.returncode, 2)
        self.assertIn(nojson, r.stderr)
        r = anatomist("diff", "--base", self.slow_dir)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()

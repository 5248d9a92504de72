#!/usr/bin/env python3
"""The merge of many ranks' summaries (docs/ranks.md, "Jobs that outgrow one machine"): 64
synthetic rank traces (bench/gen_trace --rank R --world 64, eight ranks a host, seed R + 1),
each reduced to its `report --json` document, then merged with `anatomist report --json
r*.json`. Against what the generator says it wrote and the per-rank documents, never the
merge code: 64 ranks of world size 64, none missing, the eight hosts the generator names;
launches, collective calls, the sum and the largest of the memory peaks as gen_trace
counted them; busy time the sum of the summaries'; every step's all-reduce matched across
all 64 ranks; and the merge of the summaries equals the report of the directory of traces.
About 2 s on 2 cores."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from common import BUILD, anatomist, tmpdir  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen_trace")
RANKS, RECORDS = 64, 12000


def cli_json(*args):
    r = anatomist(*args, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class ManyRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir, sums = tmpdir(), tmpdir()
        cls.facts, cls.summaries, cls.files = [], [], []
        for q in range(RANKS):
            path = os.path.join(cls.dir, "r%02d.anat" % q)
            r = subprocess.run([GEN, "--records", str(RECORDS), "--out", path, "--seed", str(q + 1),
                                "--rank", str(q), "--world", str(RANKS)],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            cls.facts.append({k: int(v) for k, v in (l.split("=", 1) for l in r.stdout.splitlines())})
            rep = anatomist("report", "--json", path, timeout=60)
            assert rep.returncode == 0, rep.stderr
            cls.files.append(os.path.join(sums, "r%02d.json" % q))
            with open(cls.files[-1], "w") as f:
                f.write(rep.stdout)
            cls.summaries.append(json.loads(rep.stdout))
        cls.job = cli_json("report", "--json", *cls.files)

    def test_job(self):
        j = self.job["job"]
        self.assertEqual((j["ranks"], j["world_size"], j["missing_ranks"]), (RANKS, RANKS, []))
        self.assertEqual(sorted(j["hosts"]), sorted({"gen-node%d" % (q // 8) for q in range(RANKS)}))
        rows = self.job["ranks"]
        self.assertEqual([(r["rank"], r["pid"], r["host"]) for r in rows],
                         [(q, 4242 + q, "gen-node%d" % (q // 8)) for q in range(RANKS)])
        for row, f in zip(rows, self.facts):
            self.assertEqual((row["steps"], row["collective_calls"]), (f["steps"], f["count.collective"]))

    def test_sums(self):
        t, m = self.job["time"], self.job["memory"]
        self.assertEqual(t["launches"], sum(f["launches"] for f in self.facts))
        self.assertEqual(self.job["collectives"]["calls"], sum(f["count.collective"] for f in self.facts))
        self.assertEqual(t["busy_ns"], sum(s["time"]["busy_ns"] for s in self.summaries))
        peaks = [f["peak_bytes"] for f in self.facts]
        self.assertEqual((m["peak_sum_bytes"], m["peak_max_bytes"]), (sum(peaks), max(peaks)))

    def test_skew(self):
        # one all-reduce a step on one communicator, sequence number = the step's index
        sk = self.job["skew"]
        self.assertEqual(sk["matched"], max(f["count.collective"] for f in self.facts))
        self.assertTrue(sk["collectives"])
        self.assertTrue(all(c["ranks"] == RANKS for c in sk["collectives"]))

    def test_traces_equal_summaries(self):
        self.assertEqual(cli_json("report", "--json", self.dir), self.job)


if __name__ == "__main__":
    unittest.main()

"""Graph and cooperative launches are LAUNCH records: one per cudaGraphLaunch (api 26,
kernel 0, no dimensions) — samples/graph_replay against its ledger — and one per
cudaLaunchCooperativeKernel[_ptsz] (api 18) with the call's dimensions and result."""
import os
import unittest

from common import BUILD, PRELOAD, SIM_LIB, clean_env, dims, dump, ledger, of, run, sample, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_drv_probe")
GRAPH_LAUNCH, LAUNCH_COOPERATIVE = 26, 18


def traced(cmd):
    trace = os.path.join(tmpdir(), "t.anat")
    r = run(cmd, env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace))
    return r, of(dump(trace), "LAUNCH")


class LaunchHooks(unittest.TestCase):
    def test_graph_launches(self):
        if not os.path.exists(sample("graph_replay")):
            self.skipTest("samples/graph_replay is not built")
        r, recs = traced([sample("graph_replay"), "4"])
        self.assertEqual(r.returncode, 0, r.stderr)
        led = ledger(r.stdout)
        graphs = [x for x in recs if x["api"] == GRAPH_LAUNCH]
        self.assertEqual(led["graph_launches"], 4)
        self.assertEqual(len(graphs), led["graph_launches"])
        for g in graphs:
            self.assertEqual((g["ret"], g["kernel"], dims(g, "grid"), dims(g, "block"), g["shmem"]),
                             (0, 0, [0, 0, 0], [0, 0, 0], 0))
        self.assertEqual(len({g["stream"] for g in graphs}), 1)  # all on the program's one stream

    def test_cooperative_launches(self):
        r, recs = traced([PROBE, "cooperative"])
        self.assertEqual(r.returncode, 0, r.stderr)
        printed = dict(l.split(" ", 1) for l in r.stdout.splitlines())
        rets = [int(printed[w].split()[0].split("=")[1]) for w in ("cooperative", "cooperative_ptsz")]
        self.assertTrue(all(f"errno=4242" in printed[w] for w in printed))
        self.assertEqual([(x["api"], x["ret"], dims(x, "grid"), dims(x, "block"), x["shmem"])
                          for x in recs],
                         [(LAUNCH_COOPERATIVE, rets[0], [2, 3, 1], [4, 1, 1], 16),
                          (LAUNCH_COOPERATIVE, rets[1], [2, 3, 1], [5, 1, 1], 16)])


if __name__ == "__main__":
    unittest.main()

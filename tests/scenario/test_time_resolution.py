"""ANATOMIST_TIME_RESOLUTION (format 1.5): the same program traced with 1 ns and with 4096 ns
ticks. The coarse trace must hold the same API records (kinds, apis, sizes, in the same
order), every time and duration a whole number of ticks, times still in order per thread,
and fewer bytes; the header says the tick; a tick that is not a power of two is refused
with one warning. train_mlp's ledger says what it allocated and freed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (PRELOAD, SIM_LIB, anatomist, clean_env, dump, info_json, ledger, of, run, sample,  # noqa: E402
                    tmpdir)

MLP = sample("train_mlp")
TICK = 4096


def trace(d, name, res, extra=None):
    out = os.path.join(d, name)
    env = clean_env(LD_PRELOAD=PRELOAD, LD_LIBRARY_PATH=SIM_LIB, ANATOMIST_OUTPUT=out,
                    ANATOMIST_TIME_RESOLUTION=str(res), **(extra or {}))
    p = run([MLP, "--steps", "20"], env=env)
    return out, p


def identity(r):
    """A record without its times: what must not change with the tick."""
    return {k: v for k, v in r.items() if k not in ("time", "dur_ns", "base_ns")}


@unittest.skipUnless(os.path.exists(MLP) and os.path.exists(PRELOAD), "train_mlp or the preload is not built")
class TimeResolution(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tmpdir()
        cls.fine, pf = trace(cls.dir, "fine.anat", 1)
        cls.coarse, pc = trace(cls.dir, "coarse.anat", TICK)
        for p in (pf, pc):
            assert p.returncode == 0, p.stderr
        cls.ledger = ledger(pc.stdout)
        cls.rf, cls.rc = dump(cls.fine), dump(cls.coarse)

    def test_header_says_the_tick(self):
        self.assertEqual(info_json(self.coarse)["format"]["time_resolution_ns"], TICK)
        self.assertEqual(info_json(self.fine)["format"]["time_resolution_ns"], 1)
        f = info_json(self.coarse)["format"]
        self.assertGreaterEqual((f["major"], f["minor"]), (1, 5))
        text = anatomist("info", self.coarse).stdout
        self.assertIn(f"times in ticks of {TICK} ns", text)
        self.assertNotIn("ticks", anatomist("info", self.fine).stdout)

    def test_times_are_whole_ticks(self):
        timed = [r for r in self.rc if "time" in r]
        self.assertGreater(len(timed), 100)
        self.assertEqual([r for r in timed if r["time"] % TICK], [])
        durs = [r for r in self.rc if "dur_ns" in r]
        self.assertGreater(len(durs), 100)
        self.assertEqual([r for r in durs if r["dur_ns"] % TICK], [])
        # the fine trace is not accidentally quantised as well
        self.assertTrue(any(r["time"] % TICK for r in self.rf if "time" in r))

    def test_same_records_in_the_same_order(self):
        # API records of the program's thread(s): same kinds, sizes, pointers, kernels, order.
        api = ("ALLOC", "FREE", "LAUNCH", "MEMCPY", "MEMSET")
        f = [identity(r) for r in of(self.rf, *api)]
        c = [identity(r) for r in of(self.rc, *api)]
        for r in f + c:
            r.pop("tid", None)
            r.pop("corr", None)
            r.pop("stack", None)
        self.assertEqual(len(f), len(c))
        self.assertEqual([(r["kind"], r.get("size"), r.get("api")) for r in f],
                         [(r["kind"], r.get("size"), r.get("api")) for r in c])
        # what the program says it allocated and freed: train_mlp's ledger
        allocs = [r for r in of(self.rc, "ALLOC") if r["ret"] == 0]
        self.assertEqual(len(allocs), self.ledger["alloc_calls"])
        self.assertEqual(sum(r["size"] for r in allocs), self.ledger["alloc_bytes"])
        self.assertEqual(len([r for r in of(self.rc, "FREE") if r["ret"] == 0]), self.ledger["free_calls"])

    def test_times_keep_their_order_per_thread(self):
        last = {}
        for r in self.rc:
            if r["kind"] in ("ALLOC", "FREE", "LAUNCH", "MEMCPY", "MEMSET"):
                self.assertGreaterEqual(r["time"], last.get(r["tid"], 0))
                last[r["tid"]] = r["time"]

    def test_smaller(self):
        fine, coarse = os.path.getsize(self.fine), os.path.getsize(self.coarse)
        n = len(self.rc)
        self.assertLess(coarse, fine, f"{coarse} bytes with {TICK} ns ticks, {fine} with 1 ns ({n} records)")

    def test_not_a_power_of_two(self):
        out, p = trace(self.dir, "bad.anat", 1000)
        self.assertEqual(p.returncode, 0)
        lines = [ln for ln in p.stderr.splitlines() if "ANATOMIST_TIME_RESOLUTION" in ln]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("power of two", lines[0])
        self.assertEqual(info_json(out)["format"]["time_resolution_ns"], 1)


if __name__ == "__main__":
    unittest.main()

"""Record times against the program's own clock: every ALLOC and FREE of clock_probe
(several threads, bursts and pauses over seconds, so that the preload's time line is
redrawn many times) must lie between the clock_gettime(CLOCK_MONOTONIC) readings the
program took right before and right after the call, within TOL_NS, and end (time +
duration) before the reading after it; on each thread, times never go backwards. Run with
the TSC clock (the default where the TSC is invariant) and with ANATOMIST_TSC=0, with
allocations and frees timed (ANATOMIST_CALL_DURATIONS=1) and not (the default: duration 0,
"not measured")."""
import os
import unittest

from common import PRELOAD, SIM_LIB, BUILD, clean_env, dump, of, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_clock_probe")
TOL_NS = 2000  # the stated accuracy of record times against CLOCK_MONOTONIC
THREADS, SECONDS = 4, 2


def calls(stdout):
    """{(tid, kind, size): (before, after)} and each thread's calls in order."""
    by_key, order = {}, {}
    for line in stdout.splitlines():
        if not line.startswith("call "):
            continue
        _, kind, tid, size, before, after = line.split()
        key = (int(tid), kind, int(size))
        by_key[key] = (int(before), int(after))
        order.setdefault(int(tid), []).append(key)
    return by_key, order


class ClockTest(unittest.TestCase):
    def check(self, timed=True, **extra):
        d = tmpdir()
        extra["ANATOMIST_CALL_DURATIONS"] = "1" if timed else "0"
        trace = os.path.join(d, "t.anat")
        env = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                        ANATOMIST_STACKS="0", ANATOMIST_CUPTI="0", **extra)
        r = run([PROBE, str(THREADS), str(SECONDS)], env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        by_key, order = calls(r.stdout)
        self.assertGreater(len(by_key), THREADS * 100)
        recs = dump(trace)
        last, size_of, seen, worst, untimed = {}, {}, {}, 0, 0
        for rec in of(recs, "ALLOC", "FREE"):
            tid = rec["tid"]
            if tid not in order:
                continue  # not one of the probe's threads
            # A FREE carries the pointer: its size is that of the allocation before it.
            if rec["kind"] == "ALLOC":
                size_of[tid] = rec["size"]
            key = (tid, "A" if rec["kind"] == "ALLOC" else "F", size_of.get(tid))
            self.assertIn(key, by_key, "a record of no call of the probe: %r" % rec)
            self.assertNotIn(key, seen, "two records of one call: %r" % rec)
            seen[key] = rec["time"]
            before, after = by_key[key]
            if not timed:
                self.assertEqual(rec["dur_ns"], 0, "an untimed call has no duration: %r" % rec)
            elif rec["dur_ns"] == 0:
                untimed += 1
            t, end = rec["time"], rec["time"] + rec["dur_ns"]
            worst = max(worst, before - t, end - after)
            self.assertTrue(before - TOL_NS <= t and end <= after + TOL_NS,
                            "%s: record time %d .. %d, the call ran from %d to %d (%+d ns, %+d ns)"
                            % (key, t, end, before, after, t - before, end - after))
            self.assertGreaterEqual(t, last.get(tid, 0), "%s: time went backwards" % (key,))
            last[tid] = t
        self.assertEqual(len(seen), len(by_key), "every call has its record")
        if timed:  # a timed call lasts at least a tick of the clock, nearly always
            self.assertLess(untimed, len(seen) // 10, "timed calls with duration 0")
        return worst

    def test_tsc_clock(self):
        worst = self.check()
        print("worst %d ns outside the call (TSC where invariant)" % worst)

    def test_tsc_clock_untimed_calls(self):
        worst = self.check(timed=False)
        print("worst %d ns outside the call (start times only)" % worst)

    def test_clock_gettime(self):
        worst = self.check(ANATOMIST_TSC="0")
        self.assertLessEqual(worst, 0, "clock_gettime readings lie inside the call")


if __name__ == "__main__":
    unittest.main()

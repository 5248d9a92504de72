"""Concurrency: many threads recording at once, threads started before and after the
preload's first CUDA call, and signals arriving while threads are inside hooks.

Every program here prints what it did (per thread: its kernel thread id and its calls);
the tests find each call's record in the trace by a tag the program put in it (a unique
size, a grid shape), so that a record missing without being counted in a DROPPED record,
or written twice, or out of its thread's order, is seen. Every trace must also be whole
(trace_scan: readable to its END, every stack and kernel id defined before use, no
correlation id twice). Every run has a timeout: a hung run fails the test.

ANA_CONC_THREADS and ANA_CONC_ITERS change the size of the many-threads run (CI runs
16 x 5 000; docs/reliability.md gives the numbers of a 16 x 100 000 run)."""
import json
import os
import time
import unittest

from common import PRELOAD, SIM_LIB, clean_env, ledger, run, sample, tmpdir
from trace_scan import api_key, scan

THREADS = int(os.environ.get("ANA_CONC_THREADS", "16"))
ITERS = int(os.environ.get("ANA_CONC_ITERS", "5000"))
TIMEOUT = int(os.environ.get("ANA_CONC_TIMEOUT", "240"))


def traced(trace, **extra):
    return clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace, **extra)


def lines(stdout, tag):
    """The program's `tag {json}` lines, as dicts."""
    return [json.loads(l[len(tag) + 1:]) for l in stdout.splitlines() if l.startswith(tag + " ")]


def place_records(kept, t, nthreads, iters, dropped=0):
    """Finds each record of thread t of threads_alloc --unique in its thread's sequence of
    calls (alloc, launch, free per iteration: positions 3i, 3i+1, 3i+2). Returns the
    records present by kind and what is wrong: a record that matches no call, or comes at
    or before the position of the record before it (written twice or out of order), or,
    when the thread dropped no record, a free of another iteration's pointer."""
    last, ptr_of, present, wrong = -1, {}, {"A": 0, "L": 0, "F": 0}, []
    for kind, a, b, ret in kept:
        if ret != 0:
            wrong.append("a failed call %s" % kind)
        if kind == "A":
            i, rem = divmod(a - 256 - t, nthreads)
            if rem or not 0 <= i < iters:
                wrong.append("an allocation of %d bytes, which thread %d never made" % (a, t))
                continue
            pos, ptr_of[i] = 3 * i, b
        elif kind == "L":
            i = (b - 1) * 1000 + (a - 1)
            if not 1 <= a <= 1000 or not 0 <= i < iters:
                wrong.append("a launch of grid %dx%d, which thread %d never made" % (a, b, t))
                continue
            pos = 3 * i + 1
        elif kind == "F":
            pos = last + 1 + (2 - (last + 1)) % 3  # the next free after the last record
            if ptr_of.get(pos // 3, a) != a:
                # Not that iteration's free (which was dropped, with the next allocation):
                # a later one's. Without drops, every free frees its own allocation.
                if not dropped:
                    wrong.append("free of iteration %d frees %#x, not its allocation %#x"
                                 % (pos // 3, a, ptr_of[pos // 3]))
                pos += 3
        else:
            wrong.append("a %s record" % kind)
            continue
        if pos <= last:
            wrong.append("call %d of thread %d after call %d (twice or out of order)" % (pos, t, last))
        last = pos
        present[kind] += 1
    return present, wrong


class ManyThreads(unittest.TestCase):
    def test_every_call_recorded_once_or_counted_as_dropped(self):
        trace = os.path.join(tmpdir(), "threads.anat")
        t0 = time.monotonic()
        r = run([sample("threads_alloc"), "--unique", str(THREADS), str(ITERS)], env=traced(trace),
                timeout=TIMEOUT)
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        led, per_thread = ledger(r.stdout), lines(r.stdout, "thread")
        self.assertEqual(len(per_thread), THREADS)
        self.assertEqual(led["alloc_calls"], THREADS * ITERS)
        s = scan(trace, keep=api_key, timeout=TIMEOUT)
        self.assertEqual(s.errors, [])
        self.assertEqual(s.process["pid"] > 0, True)
        tot_present = tot_dropped = 0
        for th in per_thread:
            made = th["allocs"] + th["launches"] + th["frees"]
            self.assertEqual(made, 3 * ITERS)
            self.assertIn(th["tid"], s.threads)
            present, wrong = place_records(s.kept.get(th["tid"], []), th["t"], THREADS, ITERS,
                                           s.dropped.get(th["tid"], 0))
            self.assertEqual(wrong, [], "thread %d" % th["t"])
            self.assertLessEqual(present["A"], th["allocs"])
            self.assertLessEqual(present["L"], th["launches"])
            self.assertLessEqual(present["F"], th["frees"])
            dropped = s.dropped.get(th["tid"], 0)
            self.assertEqual(sum(present.values()) + dropped, made, "thread %d" % th["t"])
            tot_present += sum(present.values())
            tot_dropped += dropped
        # Only the workers record: no other thread has records or drops.
        self.assertEqual(set(s.kept) - {th["tid"] for th in per_thread}, set())
        self.assertEqual(set(s.dropped) - {th["tid"] for th in per_thread}, set())
        # GPU activity: one record per launch, allocation and free, or counted as dropped.
        gpu = s.counts.get("GPU_KERNEL", 0) + s.counts.get("GPU_MEMORY", 0)
        self.assertEqual(gpu + s.gpu_dropped, 3 * THREADS * ITERS)
        print("threads_alloc %d x %d: %.1f s, %d calls, %d records present, %d dropped, "
              "GPU %d present, %d dropped" % (THREADS, ITERS, took, 3 * THREADS * ITERS, tot_present,
                                             tot_dropped, gpu, s.gpu_dropped))


class ThreadsBeforeAndAfterInit(unittest.TestCase):
    def test_every_call_of_threads_started_before_and_after_the_first_is_recorded(self):
        early, late, iters = 4, 4, 200
        trace = os.path.join(tmpdir(), "phases.anat")
        r = run([sample("threads_phases"), str(early), str(late), str(iters)], env=traced(trace),
                timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = scan(trace, keep=api_key)
        self.assertEqual(s.errors, [])
        self.assertEqual(s.dropped, {})  # 600 small records cannot fill a 1 MiB buffer
        n = early + late
        for th in lines(r.stdout, "thread"):
            # The early threads existed before the trace began (its PROCESS record, written
            # when the first CUDA call started the session); the late ones did not.
            self.assertEqual(th["created_ns"] < s.process["time"], bool(th["early"]), th)
            sizes = [256 + th["t"] + n * i for i in range(iters)]
            recs = s.kept.get(th["tid"], [])
            self.assertEqual([x[1] for x in recs if x[0] == "A"], sizes)
            self.assertEqual([x[1] for x in recs if x[0] == "S"], sizes)
            self.assertEqual([x[2] for x in recs if x[0] == "S"], [x[2] for x in recs if x[0] == "A"])
            self.assertEqual([x[1] for x in recs if x[0] == "F"], [x[2] for x in recs if x[0] == "A"])
            self.assertEqual(len(recs), 3 * iters)
        self.assertEqual(len(s.threads), n)


STORM_THREADS, STORM_ITERS = 8, 2000


def storm_keep():
    """keep= for the storm's traces: the workers' tagged calls, without the buffer each
    copies through at the end (255 bytes: no tagged allocation is that small). By thread:
    the trace holds each thread's records in order, but the threads' runs of records in
    the order the writer took them, so one thread's free of an address can come after
    another's allocation and free of the same address that came later in time."""
    copy_ptrs = set()  # (thread, address)

    def keep(r):
        k = api_key(r)
        if k is None or r["kind"] == "MEMCPY":
            return None
        if k[0] == "A" and k[1] == 255:
            copy_ptrs.add((r["tid"], k[2]))
            return None
        if k[0] == "F" and (r["tid"], k[1]) in copy_ptrs:
            copy_ptrs.discard((r["tid"], k[1]))
            return None
        return k
    return keep


def results(stdout):
    """What the program computed, without what depends on timing (signal counts, tids)."""
    per = [{k: v for k, v in th.items() if k != "tid"} for th in lines(stdout, "thread")]
    return per, ledger(stdout)


class Signals(unittest.TestCase):
    def test_a_signal_storm_changes_nothing_and_loses_nothing(self):
        args = [sample("signal_storm"), "storm", str(STORM_THREADS), str(STORM_ITERS)]
        bare = run(args, env=clean_env(LD_LIBRARY_PATH=SIM_LIB), timeout=TIMEOUT)
        trace = os.path.join(tmpdir(), "storm.anat")
        r = run(args, env=traced(trace), timeout=TIMEOUT)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(results(r.stdout), results(bare.stdout))
        s = scan(trace, keep=storm_keep(), timeout=TIMEOUT)
        self.assertEqual(s.errors, [])
        for th in lines(r.stdout, "thread"):
            present, wrong = place_records(s.kept.get(th["tid"], []), th["t"], STORM_THREADS, STORM_ITERS,
                                           s.dropped.get(th["tid"], 0))
            self.assertEqual(wrong, [], "thread %d" % th["t"])
            self.assertEqual(sum(present.values()) + s.dropped.get(th["tid"], 0), 3 * STORM_ITERS)
            # 6 000 records of a few dozen bytes cannot fill a 1 MiB buffer: none dropped.
            self.assertEqual(s.dropped.get(th["tid"], 0), 0)
        print("signal_storm: %s" % lines(r.stdout, "signals")[0])

    def single(self, mode, iters=300):
        trace = os.path.join(tmpdir(), mode + ".anat")
        # `inhook` raises its signal from clock_gettime called by the preload: the hooks must
        # read the time with it rather than from the TSC, and read it twice per call (before
        # and after the real call), as they do when allocations and frees are timed.
        env = traced(trace, ANATOMIST_TSC="0", ANATOMIST_CALL_DURATIONS="1")
        r = run([sample("signal_storm"), mode, str(iters), "cuda"], env=env, timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        (th,), (h,) = lines(r.stdout, "thread"), lines(r.stdout, "handler")
        self.assertEqual((th["allocs"], th["frees"], h["cuda_failures"]), (iters, iters, 0))
        s = scan(trace, keep=lambda x: (x["kind"], x.get("size"), x["ptr"], x["corr"])
                 if x["kind"] in ("ALLOC", "FREE") else None)
        self.assertEqual(s.errors, [])
        self.assertEqual(s.dropped, {})
        recs = s.kept.get(th["tid"], [])
        mine = [x[1] for x in recs if x[0] == "ALLOC" and x[1] < 900000]
        theirs = [x[1] for x in recs if x[0] == "ALLOC" and x[1] >= 900000]
        self.assertEqual(mine, [4096 + i for i in range(iters)])
        return h, theirs, recs, trace

    def test_cuda_calls_of_a_handler_run_between_calls_are_recorded(self):
        h, theirs, recs, _ = self.single("between")
        self.assertEqual(h["runs"], 300)
        self.assertEqual(theirs, [900000 + n for n in range(h["cuda_allocs"])])
        self.assertEqual(len([x for x in recs if x[0] == "FREE"]), 300 + h["cuda_allocs"])

    def test_cuda_calls_of_a_handler_that_interrupted_a_hook_are_not_recorded(self):
        # The handler runs twice inside each hooked call (before and after the real call):
        # its own CUDA calls succeed, and are not recorded: the thread is inside a hook and
        # the re-entrancy guard lets them through unrecorded (and uncounted).
        h, theirs, recs, _ = self.single("inhook")
        self.assertEqual(h["raised_inside"], 4 * 300)
        self.assertEqual(h["cuda_allocs"], 4 * 300)
        self.assertEqual(theirs, [])
        self.assertEqual(len([x for x in recs if x[0] == "FREE"]), 300)

    def test_a_handler_inside_a_hook_leaves_the_calls_correlation_alone(self):
        # The handler's unrecorded call comes after the hook cleared the thread's
        # correlation id and before the real call: it must not leave its own id there for
        # the hooked call's record (whose GPU record would then be the handler's
        # allocation). Unrecorded calls keep the thread's id (ANA_PASS).
        _, _, recs, trace = self.single("inhook")
        gpu = scan(trace, keep=lambda x: (x["corr"], x["bytes"])
                   if x["kind"] == "GPU_MEMORY" and x["op"] == 1 else None)
        size_of = dict(gpu.kept.get(0, []))
        wrong = [(x[1], size_of.get(x[3])) for x in recs if x[0] == "ALLOC" and size_of.get(x[3]) != x[1]]
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()

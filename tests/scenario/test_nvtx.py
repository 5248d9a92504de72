"""NVTX through the preload as the program's NVTX injection library: tests/scenario/
nvtx_probe (header-only NVTX v3 on the simulated device) keeps a ledger of every NVTX call
it made and what it returned; each RANGE and LABEL record must be one of its calls, in the
order each thread made them. Push/pop levels are checked against a stack simulated here
from the ledger's calls; without the preload (no tool) NVTX answers -2 to every push and
pop. ANATOMIST_NVTX=0 records nothing; an NVTX_INJECTION64_PATH naming another library is
left alone; a mark made before the first CUDA call is in the trace, before the ALLOC."""
import json
import os
import subprocess
import unittest

from common import ANATOMIST, BUILD, PRELOAD, SIM_LIB, clean_env, dump, ledger, of, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_nvtx_probe")
NO_TRACKING = -2  # NVTX_NO_PUSH_POP_TRACKING: push/pop with no tool attached
OPS = {"push": 1, "pop": 2, "start": 3, "end": 4, "mark": 5}


def env_for(trace, preload=True, **extra):
    if preload:
        extra["LD_PRELOAD"] = PRELOAD
    env = clean_env(LD_LIBRARY_PATH=SIM_LIB, ANATOMIST_OUTPUT=trace, **extra)
    if "NVTX_INJECTION64_PATH" not in extra:
        env.pop("NVTX_INJECTION64_PATH", None)
    return env


def run_utf8(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    out, err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, err
    return out, err


def probe(preload=True, **extra):
    """(ledger, records or None) of one run of the probe."""
    trace = os.path.join(tmpdir(), "t.anat")
    out, _ = run_utf8([PROBE], env_for(trace, preload, **extra))
    return ledger(out), (dump(trace) if preload else None)


def expected_levels(calls):
    """What NVTX must return to each push/pop: the 0-based level of the range pushed, the
    level of the range popped, -1 with nothing to pop; a stack per domain (one thread)."""
    depth, levels = {}, []
    for c in calls:
        d = depth.get(c["domain"], 0)
        if c["op"] == "push":
            levels.append(d)
            depth[c["domain"]] = d + 1
        elif c["op"] == "pop":
            levels.append(d - 1 if d else -1)
            depth[c["domain"]] = max(d - 1, 0)
    return levels


def range_calls(calls):
    return [c for c in calls if c["op"] in OPS]


def expected_ranges(calls):
    """The RANGE records of these calls: pops with nothing to pop write none."""
    out = []
    for c in range_calls(calls):
        if c["op"] == "pop" and c["ret"] == -1:
            continue
        out.append((OPS[c["op"]], c["domain"], c["id"], c["category"], c["color"], c["name"]))
    return out


def got_ranges(recs, tid):
    return [(r["op"], r["domain"], r["id"], r["category"], r["color"], r["name"])
            for r in of(recs, "RANGE") if r["tid"] == tid]


class Nvtx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.led, cls.recs = probe()

    def test_ranges_are_the_calls_in_order_per_thread(self):
        led, recs = self.led, self.recs
        self.assertEqual(got_ranges(recs, led["tid"]), expected_ranges(led["main"]))
        self.assertEqual(got_ranges(recs, led["t1_tid"]), expected_ranges(led["t1"]))
        self.assertEqual(len(of(recs, "RANGE")),
                         len(expected_ranges(led["main"])) + len(expected_ranges(led["t1"])))
        names = [r["name"] for r in of(recs, "RANGE")]
        self.assertIn("inner \u00fc\u4e2d\U0001F600", names)      # wide message, as UTF-8
        self.assertIn("registered-op", names)                     # registered string
        self.assertIn("registered-w\u00e9", names)                # registered wide string

    def test_push_pop_levels(self):
        for who in ("main", "t1"):
            calls = [c for c in self.led[who] if c["op"] in ("push", "pop")]
            self.assertEqual([c["ret"] for c in calls], expected_levels(calls), who)
        main = [c["ret"] for c in self.led["main"] if c["op"] in ("push", "pop")]
        self.assertEqual(main[:7], [0, 1, 2, 2, 1, 0, -1])   # three levels, one pop too many
        self.assertEqual(main[7:], [0, 0, 1, 1, 0, 0])       # the domain's own stack

    def test_start_end_ids_pair_across_threads(self):
        led, recs = self.led, self.recs
        starts = {r["id"]: r for r in of(recs, "RANGE") if r["op"] == 3}
        ends = {r["id"]: r for r in of(recs, "RANGE") if r["op"] == 4}
        self.assertEqual(len(starts), 3)
        self.assertEqual(set(starts), set(ends))
        self.assertNotIn(0, starts)
        cross = next(c["id"] for c in led["main"] if c["op"] == "start" and c["name"] == "cross")
        span = next(c["id"] for c in led["t1"] if c["op"] == "start")
        self.assertEqual((starts[cross]["tid"], ends[cross]["tid"]), (led["tid"], led["t1_tid"]))
        self.assertEqual((starts[span]["tid"], ends[span]["tid"]), (led["t1_tid"], led["tid"]))
        self.assertEqual((starts[span]["category"], starts[span]["color"]), (7, 0xFF102030))

    def test_labels_are_the_names_given(self):
        led, recs = self.led, self.recs
        want = [(c["what"], c["domain"], c["id"], c["size"], c["name"]) for c in led["main"] if c["op"] == "label"]
        got = [(r["what"], r["domain"], r["id"], r["size"], r["name"]) for r in of(recs, "LABEL")]
        self.assertEqual(got, want)
        self.assertTrue(all(r["tid"] == led["tid"] for r in of(recs, "LABEL")))
        dom = next(c["domain"] for c in led["main"] if c["op"] == "label" and c["what"] == 6)
        self.assertNotEqual(dom, 0)
        # The regions: 4 KiB at the buffer, 64 KiB 8 KiB into it, as the probe registered them.
        regions = [(r["id"] - led["buf"], r["size"], r["name"]) for r in of(recs, "LABEL") if r["what"] == 8]
        self.assertEqual(regions, [(0, 4096, ""), (8192, 65536, ""), (0, 4096, "weights"),
                                   (8192, 65536, "activations \u03b1"), (8192, 32768, ""),
                                   (0, 0, ""), (8192, 0, "")])
        self.assertIn((1, 0, led["tid"], 0, "probe-main"), got)
        self.assertIn((2, 0, led["stream"], 0, "copy-stream"), got)
        self.assertIn((5, 0, led["event"], 0, "done-event"), got)

    def test_first_mark_before_any_cuda_call(self):
        recs = self.recs
        mark = min(of(recs, "RANGE"), key=lambda r: r["time"])
        self.assertEqual((mark["op"], mark["name"], mark["tid"]), (5, "step 0", self.led["tid"]))
        first_alloc = next(r for r in of(recs, "ALLOC"))
        self.assertLess(mark["time"], first_alloc["time"])

    def test_info_says_on_and_the_program_saw_our_path(self):
        info = {r["key"]: r["value"] for r in of(self.recs, "INFO")}
        self.assertEqual(info.get("nvtx"), "on")
        self.assertEqual(info.get("ANATOMIST_NVTX"), "1")
        self.assertEqual(os.path.realpath(self.led["injection"]), os.path.realpath(PRELOAD))

    def test_without_the_preload_nvtx_is_a_no_op(self):
        led, _ = probe(preload=False)
        rets = [c["ret"] for w in ("main", "t1") for c in led[w] if c["op"] in ("push", "pop")]
        self.assertEqual(rets, [NO_TRACKING] * len(rets))
        self.assertEqual([c["id"] for c in led["main"] if c["op"] == "start"], [0, 0])
        self.assertEqual(led["cuda"], self.led["cuda"])  # the program's own calls: unchanged
        self.assertEqual(led["cuda"], [0, 0, 0, 0])

    def test_off_records_nothing(self):
        led, recs = probe(ANATOMIST_NVTX="0")
        self.assertEqual(of(recs, "RANGE", "LABEL"), [])
        info = {r["key"]: r["value"] for r in of(recs, "INFO")}
        self.assertEqual(info.get("nvtx"), "off")
        self.assertEqual(led["injection"], "")  # not offered to the program
        rets = [c["ret"] for c in led["main"] if c["op"] in ("push", "pop")]
        self.assertEqual(rets, [NO_TRACKING] * len(rets))
        self.assertEqual(len(of(recs, "ALLOC")), 1)  # the CUDA calls still are

    def test_another_injection_library_is_left_alone(self):
        other = "/nonexistent/libother-nvtx-tool.so"
        led, recs = probe(NVTX_INJECTION64_PATH=other)
        self.assertEqual(led["injection"], other)
        info = {r["key"]: r["value"] for r in of(recs, "INFO")}
        self.assertEqual(info.get("nvtx"), "taken by " + other)
        self.assertEqual(of(recs, "RANGE", "LABEL"), [])

    def test_anatomist_run_offers_the_preload(self):
        for extra, want in (([], len(of(self.recs, "RANGE"))), (["--no-nvtx"], 0)):
            trace = os.path.join(tmpdir(), "r.anat")
            env = clean_env()
            env.pop("NVTX_INJECTION64_PATH", None)
            out, _ = run_utf8([ANATOMIST, "run", "--sim", "-q", "-o", trace, *extra, "--", PROBE], env)
            self.assertEqual(len(of(dump(trace), "RANGE")), want, extra)


if __name__ == "__main__":
    unittest.main()

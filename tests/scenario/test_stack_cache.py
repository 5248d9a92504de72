"""Scenario: call stacks stay exact under the stack cache and the frame-pointer walk
(ANATOMIST_UNWIND, preload/core/unwind.c).

tests/scenario/stack_probe.c allocates through four call chains that reach cudaMalloc at
the same stack position with the same innermost frames, from four threads, by recursion,
with alloca'd frames, and from a signal handler; every allocation is kept, and its size
says which chain made it (the probe's ledger). For every group of `leaks` in
`anatomist report --json` (allocations live at the end, grouped by stack, symbolized):
  * the stack names exactly one of the chain functions, and on_signal exactly when the
    group's size is a signal handler's;
  * every allocation of the group has that chain's size (bytes == count * size): one
    allocation given another chain's stack would break this;
  * over all groups, each chain has as many allocations as the probe made.
Run in each mode: auto and dwarf on the probe built without frame pointers and with them,
fp on the probe built with them (fp mode promises nothing for code without them). The
probe must report that its chains met at one stack position in every thread, or the test
would not exercise the cache's hard case. A value that is not a mode is said on stderr and
auto is used.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from common import BUILD, anatomist, clean_env, ledger, tmpdir  # noqa: E402

PROBES = {"nofp": os.path.join(BUILD, "tests", "scenario_stack_probe"),
          "fp": os.path.join(BUILD, "tests", "scenario_stack_probe_fp")}
RUNS = [("nofp", "auto"), ("nofp", "dwarf"), ("fp", "auto"), ("fp", "fp"), ("fp", "dwarf")]


def run(probe, mode, warning=None):
    trace = os.path.join(tmpdir(), "stacks-%s-%s.anat" % (probe, mode))
    r = anatomist("run", "--sim", "-q", "-o", trace, "--", PROBES[probe],
                  env=clean_env(ANATOMIST_UNWIND=mode, ANATOMIST_CUPTI="0"), timeout=120)
    assert r.returncode == 0, r.stderr
    if warning:
        assert warning in r.stderr, r.stderr
    else:
        assert "anatomist:" not in r.stderr, r.stderr
    # The trace's settings name the mode as a word (what a bad value fell back to).
    info = anatomist("info", "--json", trace)
    assert info.returncode == 0, info.stderr
    said = json.loads(info.stdout)["info"].get("ANATOMIST_UNWIND")
    assert said == (mode if mode in ("auto", "fp", "dwarf") else "auto"), said
    return ledger(r.stdout), report_json_all(trace)


def report_json_all(trace):
    r = anatomist("report", trace, "--json", "--top", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class StackCache(unittest.TestCase):
    def check(self, probe, mode, warning=None):
        led, rep = run(probe, mode, warning)
        chains = led["chains"]
        self.assertTrue(led["collided"], "the chains did not meet at one stack position")
        by_size = {}
        for name, c in chains.items():
            by_size[c["size"]] = (name, False)
            by_size[c["signal_size"]] = (name, True)
        seen = {(name, sig): 0 for name in chains for sig in (False, True)}
        groups = 0
        for g in rep["memory"]["leaks"] if "memory" in rep else rep["leaks"]:
            funcs = [f.get("function") or "" for f in g["stack"]]
            named = sorted({n for n in chains for f in funcs if f == n or f.startswith(n + ".")})
            if not named:
                continue  # the probe's warm-up allocation is freed; nothing else is ours
            groups += 1
            where = "stack %d of %s/%s: %s" % (g["stack_id"], probe, mode, funcs)
            self.assertEqual(len(named), 1, where)
            name = named[0]
            in_signal = any(f == "on_signal" or f.startswith("on_signal.") for f in funcs)
            size = chains[name]["signal_size" if in_signal else "size"]
            self.assertEqual(g["bytes"], g["count"] * size, where)
            seen[name, in_signal] += g["count"]
        for name, c in chains.items():
            self.assertGreater(c["made"], 0)
            self.assertGreater(c["in_signal"], 0)
            self.assertEqual(seen[name, False], c["made"], "%s %s/%s" % (name, probe, mode))
            self.assertEqual(seen[name, True], c["in_signal"], "%s in signal %s/%s" % (name, probe, mode))
        # Per chain: the main thread's stack, the workers' (the same frames in each), the
        # signal handler's.
        self.assertGreaterEqual(groups, 3 * len(chains), "%s/%s" % (probe, mode))


    def test_bad_value_warns_and_walks_auto(self):
        self.check("nofp", "sideways",
                   "ignoring ANATOMIST_UNWIND=sideways (expected one of auto|fp|dwarf); using auto")


for _probe, _mode in RUNS:
    setattr(StackCache, "test_%s_%s" % (_probe, _mode),
            lambda self, p=_probe, m=_mode: self.check(p, m))

if __name__ == "__main__":
    unittest.main()

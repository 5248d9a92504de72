"""Training steps and phases end to end (analyzer/analyses/steps.h, docs/steps.md): samples/train_gpt
and samples/train_mlp under `anatomist run --sim`, read through tests/steps_dump (the
steps, and every LAUNCH/MEMCPY/MEMSET call with its step and phase).

Expected values never come from the code under test. They come from
* the samples' ledgers (steps, launches per kernel, GEMM calls, the inputs buffer);
* train_gpt's documented loop (samples/train_gpt.cu): NVTX push/pop "step" > "forward",
  "backward", "optimizer"; the batch copied in before "forward", the losses copied out
  after "optimizer"; one cast_params before training in 16-bit precisions;
* the raw records (tests/anatrace_dump): the RANGE push/pop times, which calls lie inside
  which range (by time, whatever their thread), the GPU records of the calls.

train_gpt runs with NVTX (steps from the "step" ranges, phases from the phase ranges) and
with `--no-nvtx` (no RANGE records: steps from the optimizer kernels, phases from kernel
names), in fp32 and bf16; the two runs launch the same sequence, so each step without NVTX
must hold exactly what the matching NVTX step held. train_mlp has no NVTX, an AdamW kernel
per parameter tensor and an evaluation forward after its last step."""
import collections
import json
import os
import re
import unittest

from common import ANATOMIST, BUILD, DUMP, SIM_LIB, anatomist, dump, ledger, of, run, sample, tmpdir

TRAIN_GPT, TRAIN_MLP = sample("train_gpt"), sample("train_mlp")
STEPS_DUMP = os.path.join(BUILD, "tests", "steps_dump")
HAVE_ALL = all(os.path.exists(p) for p in (TRAIN_GPT, TRAIN_MLP, ANATOMIST, DUMP, STEPS_DUMP,
                                           os.path.join(SIM_LIB, "libcublas.so.13")))
RANGE_PUSH, RANGE_POP = 1, 2
CALL_KINDS = ("LAUNCH", "MEMCPY", "MEMSET")
PHASE_RANGES = {"forward": "forward", "backward": "backward", "optimizer": "optimizer"}


def source_name(name):
    """The source name of an Itanium-mangled kernel (_Z5adamwIfEv... -> adamw); other names
    (library kernels, extern "C") unchanged."""
    m = re.match(r"_Z(\d+)", name or "")
    return name[len(m.group(0)):len(m.group(0)) + int(m.group(1))] if m else name


class Trace:
    """One profiled run: the sample's ledger, the raw records and steps_dump's answer."""

    def __init__(self, program, args, nvtx=True):
        path = os.path.join(tmpdir(), "steps.anat")
        opts = ["run", "--sim", "-q", "-o", path] + ([] if nvtx else ["--no-nvtx"])
        r = anatomist(*opts, "--", program, *args, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        self.led = ledger(r.stdout)
        self.recs = dump(path)
        d = run([STEPS_DUMP, path], timeout=120)
        assert d.returncode == 0, d.stderr
        self.steps = json.loads(d.stdout)
        names = {k["id"]: k["name"] for k in of(self.recs, "KERNEL")}
        gpu = {g["corr"]: g for g in of(self.recs, "GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET")}
        self.gpu_end = {c: g["time"] + g["dur_ns"] for c, g in gpu.items()}
        # The calls in time order, each with what identifies it across runs.
        self.calls = sorted(of(self.recs, *CALL_KINDS), key=lambda r: (r["time"], r["tid"], r["corr"]))
        for c in self.calls:
            if c["kind"] == "LAUNCH":
                kid = c["kernel"] or gpu[c["corr"]]["kernel"]
                c["what"] = source_name(names[kid])
            else:
                c["what"] = "%s %d" % (c["kind"], c["bytes"])
        got = self.steps["calls"]
        assert [(c["time"], c["tid"], c["corr"]) for c in got] == \
               [(c["time"], c["tid"], c["corr"]) for c in self.calls]
        for c, g in zip(self.calls, got):
            c["step"], c["phase"] = g["step"], g["phase"]
        self.ranges = self.closed_ranges()

    def closed_ranges(self):
        """[(name, push time, pop time, tid, depth)] of the push/pop ranges, from the records."""
        stacks, out = collections.defaultdict(list), []
        for r in sorted(of(self.recs, "RANGE"), key=lambda r: r["time"]):
            s = stacks[(r["tid"], r["domain"])]
            if r["op"] == RANGE_PUSH:
                s.append(r)
            elif r["op"] == RANGE_POP:
                p = s.pop()
                out.append((p["name"], p["time"], r["time"], r["tid"], len(s)))
        return out

    def step_lists(self):
        """Each step's calls in order, by the step steps_dump gave them."""
        lists = [[] for _ in self.steps["steps"]]
        for c in self.calls:
            if c["step"] >= 0:
                lists[c["step"]].append(c)
        return lists


def inside(c, rng):
    """Whether call c lies in range rng: a range holds the calls of every thread between
    its push and pop (docs/steps.md)."""
    name, t0, t1, tid, _ = rng
    return t0 <= c["time"] <= t1


class Gpt:
    """The checks for train_gpt with ARGS, profiled with and without NVTX."""
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.nv = Trace(TRAIN_GPT, cls.ARGS)
        cls.plain = Trace(TRAIN_GPT, cls.ARGS, nvtx=False)
        cls.n = cls.nv.led["config"]["steps"]
        cls.lowp = cls.nv.led["config"]["precision"] != "fp32"

    # ------------------------------------------------------------ with NVTX

    def test_nvtx_steps_are_the_step_ranges(self):
        s = self.nv.steps
        want = [(t0, t1) for name, t0, t1, _, depth in self.nv.ranges if name == "step"]
        self.assertEqual(len(want), self.n)
        self.assertEqual((s["method"], s["name"], s["why"]), ("nvtx", "step", ""))
        self.assertEqual([(x["start_ns"], x["end_ns"]) for x in s["steps"]], want)
        steps = [r for r in self.nv.ranges if r[0] == "step"]
        for c in self.nv.calls:
            hold = [i for i, r in enumerate(steps) if inside(c, r)]
            self.assertEqual(c["step"], hold[0] if hold else -1, c)
        per = collections.Counter(c["step"] for c in self.nv.calls)
        self.assertEqual([x["calls"] for x in s["steps"]], [per[i] for i in range(self.n)])
        d = sorted(t1 - t0 for t0, t1 in want)
        self.assertEqual(s["median_ns"], d[(len(d) - 1) // 2])

    def test_nvtx_phases_are_the_phase_ranges(self):
        s = self.nv.steps
        self.assertEqual(s["phases"], "nvtx")
        self.assertEqual({x["phases"] for x in s["steps"]}, {"nvtx"})
        phases = [r for r in self.nv.ranges if r[0] in PHASE_RANGES]
        self.assertEqual(len(phases), 3 * self.n)
        for c in self.nv.calls:
            hold = [PHASE_RANGES[r[0]] for r in phases if inside(c, r)]
            want = hold[0] if hold and c["step"] >= 0 else "undecided"
            self.assertEqual(c["phase"], want, c)
        # The batch copied in before "forward" and the losses copied out after "optimizer".
        for calls in self.nv.step_lists():
            self.assertEqual([(calls[0]["kind"], calls[0]["phase"]), (calls[-1]["kind"], calls[-1]["phase"])],
                             [("MEMCPY", "undecided"), ("MEMCPY", "undecided")])

    def test_steps_hold_the_ledgers_launches(self):
        led = self.nv.led
        lists = self.nv.step_lists()
        outside = collections.Counter(c["what"] for c in self.nv.calls if c["step"] < 0 and c["kind"] == "LAUNCH")
        # One cast of the fp32 master weights before training in 16-bit precisions.
        self.assertEqual(outside, collections.Counter({"cast_params": 1} if self.lowp else {}))
        for name, count in led["kernels"].items():
            per = (count - outside[name]) / self.n
            for calls in lists:
                self.assertEqual(sum(c["what"] == name for c in calls), per, name)
        adamw = [sum(c["what"] == "adamw" for c in calls) for calls in lists]
        self.assertEqual(adamw, [led["kernels"]["adamw"] // self.n] * self.n)  # one per parameter tensor
        gemm = [sum(c["kind"] == "LAUNCH" and c["lib"] > 0 for c in calls) for calls in lists]
        self.assertEqual(gemm, [led["gemm_calls"] // self.n] * self.n)  # one kernel per GEMM at these sizes
        self.assertEqual(sum(c["lib"] > 0 for c in self.nv.calls if c["kind"] == "LAUNCH"), led["gemm_calls"])

    # ------------------------------------------------------------ without NVTX

    def test_no_nvtx_records(self):
        self.assertEqual(of(self.plain.recs, "RANGE"), [])
        self.assertEqual(self.plain.led["kernels"], self.nv.led["kernels"])

    def test_optimizer_steps_hold_what_the_nvtx_steps_held(self):
        s = self.plain.steps
        self.assertEqual((s["method"], s["name"], len(s["steps"])), ("optimizer", "", self.n))
        want = [[c["what"] for c in calls] for calls in self.nv.step_lists()]
        got = [[c["what"] for c in calls] for calls in self.plain.step_lists()]
        self.assertEqual(got, want)
        self.assertEqual([x["calls"] for x in s["steps"]], [len(w) for w in want])
        self.assertEqual(collections.Counter(c["what"] for c in self.plain.calls if c["step"] < 0),
                         collections.Counter(c["what"] for c in self.nv.calls if c["step"] < 0))

    def test_optimizer_step_bounds(self):
        s = self.plain.steps
        inputs = [a["bytes"] for a in self.plain.led["allocations"] if a["name"] == "inputs"][0]
        batch = [c for c in self.plain.calls if c["kind"] == "MEMCPY" and c["bytes"] == inputs]
        self.assertEqual(len(batch), self.n)
        starts = [c["time"] for c in batch]
        self.assertEqual([x["start_ns"] for x in s["steps"]], starts)
        self.assertEqual([x["end_ns"] for x in s["steps"][:-1]], starts[1:])
        # The last step ends when the last of its calls, or the GPU work of its calls, ended.
        last = [c for c in self.plain.calls if c["time"] >= starts[-1] and c["step"] == self.n - 1]
        end = max(max(c["time"], self.plain.gpu_end.get(c["corr"], 0)) for c in last)
        self.assertEqual(s["steps"][-1]["end_ns"], end)
        d = sorted(x["end_ns"] - x["start_ns"] for x in s["steps"])
        self.assertEqual(s["median_ns"], d[(len(d) - 1) // 2])

    def test_phases_from_kernel_names(self):
        s = self.plain.steps
        self.assertEqual((s["phases"], s["why"]), ("kernel names", ""))
        for calls, nvcalls in zip(self.plain.step_lists(), self.nv.step_lists()):
            what = [c["what"] for c in calls]
            fb = min(i for i, w in enumerate(what) if "_backward" in w)
            lf = max(i for i, w in enumerate(what[:fb]) if w.endswith("_forward"))
            opt = what.index("adamw")
            for i, c in enumerate(calls):
                w = c["what"]
                if i <= lf:
                    want = "forward"
                elif i < fb:
                    want = "undecided"  # between the last forward and the first backward kernel
                elif i < opt:
                    want = "backward"
                elif w in ("adamw", "cast_params"):
                    want = "optimizer"
                else:
                    want = "undecided"  # the losses copied out after the update
                self.assertEqual(c["phase"], want, (i, c))
                if "_backward" in w:
                    self.assertEqual(c["phase"], "backward")
                if w in ("encoder_forward", "layernorm_forward"):
                    self.assertEqual(c["phase"], "forward")
                # A launch the names place sits in the NVTX range of that phase.
                if c["kind"] == "LAUNCH" and c["phase"] != "undecided":
                    self.assertEqual(c["phase"], nvcalls[i]["phase"], (i, c))
            self.assertEqual(what[lf], "layernorm_forward")
            self.assertIn("crossentropy", what[lf + 1:fb])
            self.assertEqual(what[-1], "MEMCPY %d" % (4 * self.nv.led["config"]["batch"] * self.nv.led["config"]["seq"]))


@unittest.skipUnless(HAVE_ALL, "train_gpt, train_mlp, the analyzer, anatrace_dump or steps_dump is not built")
class Fp32(Gpt, unittest.TestCase):
    ARGS = ("--steps", "5", "--precision", "fp32")


@unittest.skipUnless(HAVE_ALL, "train_gpt, train_mlp, the analyzer, anatrace_dump or steps_dump is not built")
class Bf16(Gpt, unittest.TestCase):
    ARGS = ("--steps", "4", "--precision", "bf16")


@unittest.skipUnless(HAVE_ALL, "train_gpt, train_mlp, the analyzer, anatrace_dump or steps_dump is not built")
class TrainMlp(unittest.TestCase):
    """AdamW per parameter tensor (weights and biases of 3 layers), then an evaluation."""
    STEPS = 4

    @classmethod
    def setUpClass(cls):
        cls.tr = Trace(TRAIN_MLP, ("--steps", str(cls.STEPS)), nvtx=False)

    def test_steps(self):
        s, led = self.tr.steps, self.tr.led
        self.assertEqual((s["method"], len(s["steps"])), ("optimizer", self.STEPS))
        self.assertEqual(led["kernels"]["softmax_xent"], self.STEPS)  # one loss per step
        lists = self.tr.step_lists()
        self.assertEqual([sum(c["what"] == "adamw_update" for c in l) for l in lists],
                         [led["kernels"]["adamw_update"] // self.STEPS] * self.STEPS)
        self.assertEqual(led["kernels"]["adamw_update"] // self.STEPS, 6)
        for l in lists:
            self.assertEqual(collections.Counter(c["what"] for c in l),
                             collections.Counter(c["what"] for c in lists[-1]))
        # The evaluation after training is no step: its launches are outside.
        out = collections.Counter(c["what"] for c in self.tr.calls if c["step"] < 0 and c["kind"] == "LAUNCH")
        self.assertEqual(out["argmax_correct"], led["kernels"]["argmax_correct"])
        inside_fwd = sum(c["what"] == "matmul_fwd" for l in lists for c in l)
        self.assertEqual(inside_fwd + out["matmul_fwd"], led["kernels"]["matmul_fwd"])
        self.assertEqual(inside_fwd, 3 * self.STEPS)

    def test_phases(self):
        for l in self.tr.step_lists():
            for c in l:
                w = c["what"]
                want = {"matmul_fwd": "forward", "relu_fwd": "forward", "matmul_bwd_weight": "backward",
                        "matmul_bwd_data": "backward", "relu_bwd": "backward", "bias_grad": "backward",
                        "adamw_update": "optimizer", "softmax_xent": "undecided"}.get(w)
                if want:
                    self.assertEqual(c["phase"], want, c)


if __name__ == "__main__":
    unittest.main()

"""The time anatomy of the sample trainers, against what the simulated device executed.

Each trainer runs under `anatomist run --sim`. The expected time per class is computed
here from the raw records (tests/tools/anatrace_dump), independently of the analyzer:
every GPU_KERNEL's duration is what the sim executed; its class is decided by this test
from what the sample itself launched — a kernel whose LAUNCH carries a GEMM call id ran
inside cuBLAS (contraction), one in an NCCL operation or from libnccl is communication,
and the samples' own kernels are labeled below by hand from their source (the sample
knows what each kernel computes); GPU_MEMCPY and GPU_MEMSET are memory. The report's
time.by_class must equal those sums to the nanosecond, per class, in total and per step;
kernels[] and gpu.kernels_by_time carry the same classes."""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from common import anatomist, dump, ledger, of, sample, tmpdir  # noqa: E402

CLASSES = ("contraction", "normalization", "elementwise", "communication", "memory", "other")

# The samples' own kernels, by source name, labeled from what their code does.
OWN = {
    # train_gpt.cu
    "encoder_forward": "elementwise",         # token + position embedding gather
    "encoder_backward_wte": "other",          # embedding backward (scatter-add by token)
    "encoder_backward_wpe": "other",          # embedding backward (position table)
    "layernorm_forward": "normalization",
    "layernorm_backward_data": "normalization",
    "layernorm_backward_params": "normalization",
    "permute_qkv": "elementwise",             # a copy into head-major layout
    "permute_qkv_backward": "elementwise",
    "unpermute": "elementwise",
    "unpermute_backward": "elementwise",
    "softmax_causal": "normalization",
    "softmax_causal_backward": "normalization",
    "residual_add": "elementwise",
    "gelu_forward": "elementwise",
    "gelu_backward": "elementwise",
    "crossentropy": "normalization",          # the loss (softmax + NLL)
    "adamw": "elementwise",                   # optimizer update
    "cast_params": "elementwise",             # fp32 master -> 16-bit working copy
    # train_mlp.cu
    "matmul_fwd": "contraction",              # hand-written GEMMs
    "matmul_bwd_data": "contraction",
    "matmul_bwd_weight": "contraction",
    "bias_add": "elementwise",
    "relu_fwd": "elementwise",
    "relu_bwd": "elementwise",
    "softmax_xent": "normalization",          # softmax + cross-entropy loss
    "reduce_mean": "normalization",           # a reduction
    "bias_grad": "normalization",             # a sum over the batch
    "adamw_update": "elementwise",            # optimizer update
    "argmax_correct": "normalization",        # argmax reduction
    # ddp_allreduce.cu
    # an elementwise body, but the name says only "backward": nothing the taxonomy can
    # place (docs/classification.md: what the evidence cannot place is other)
    "fake_backward": "other",
}

LIB_NCCL = 3


def source_name(name):
    """adamw from _Z5adamwIfEvPfPKT_S0_S0_mfffffff, matmul_fwd from matmul_fwd."""
    m = re.match(r"_Z(\d+)", name)
    return name[len(m.group(0)):len(m.group(0)) + int(m.group(1))] if m else name


def expected(recs):
    """Per class: ns and count over all GPU activity, and per step of the trace (by the
    index of the step the launch's call belongs to — given by the caller)."""
    names = {k["id"]: k["name"] for k in of(recs, "KERNEL")}
    launch = {l["corr"]: l for l in of(recs, "LAUNCH") if l["corr"]}
    gemm_calls = {g["call"] for g in of(recs, "GEMM")}
    coll_calls = {c["call"] for c in of(recs, "COLL")}
    coll_calls |= {l["call"] for l in of(recs, "LIBCALL") if l["api"] == 179}
    ns = dict.fromkeys(CLASSES, 0)
    count = dict.fromkeys(CLASSES, 0)
    by_kernel = {}
    for r in of(recs, "GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET"):
        if r["kind"] != "GPU_KERNEL":
            cls = "memory"
        else:
            l = launch.get(r["corr"])
            call = l["call"] if l else 0
            lib = l["lib"] if l else 0
            if call and call in gemm_calls:
                cls = "contraction"
            elif (call and call in coll_calls) or lib == LIB_NCCL:
                cls = "communication"
            else:
                src = source_name(names[r["kernel"]])
                assert src in OWN, "a kernel this test has no label for: " + names[r["kernel"]]
                cls = OWN[src]
            by_kernel.setdefault(names[r["kernel"]], set()).add(cls)
        ns[cls] += r["dur_ns"]
        count[cls] += 1
    return ns, count, by_kernel


def profile(prog, *args, nvtx=True, env_extra=None):
    d = tmpdir()
    trace = os.path.join(d, "t.anat")
    opts = ["run", "--sim", "-q", "-o", trace] + ([] if nvtx else ["--no-nvtx"])
    env = dict(os.environ, **(env_extra or {}))
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    r = anatomist(*opts, "--", sample(prog), *args, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = anatomist("report", trace, "--json", "--top", "0", "--no-symbols")
    assert rep.returncode == 0, rep.stderr
    return r.stdout, dump(trace), json.loads(rep.stdout), trace


class Anatomy:
    PROG = None
    ARGS = ()
    NVTX = True

    @classmethod
    def setUpClass(cls):
        cls.out, cls.recs, cls.rep, cls.trace = profile(cls.PROG, *cls.ARGS, nvtx=cls.NVTX)
        cls.ns, cls.count, cls.by_kernel = expected(cls.recs)

    def test_time_by_class_equals_what_the_sim_ran(self):
        t = self.rep["time"]
        self.assertEqual(t["by_class"], self.ns)
        self.assertEqual(t["by_class_count"], self.count)

    def test_busy_and_idle(self):
        t, g = self.rep["time"], self.rep["gpu"]
        self.assertEqual(t["busy_ns"], g["busy_ns"])
        self.assertEqual(t["idle_ns"], g["idle_ns"])
        acts = of(self.recs, "GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET")
        # one device: busy = the union of [start, start + dur)
        ivs = sorted((r["time"], r["time"] + r["dur_ns"]) for r in acts)
        busy, end = 0, -1
        for s, e in ivs:
            if s >= end:
                busy += e - s
                end = e
            elif e > end:
                busy += e - end
                end = e
        self.assertEqual(t["busy_ns"], busy)
        self.assertEqual(t["overlap_ns"], sum(self.ns.values()) - busy)

    def test_kernel_classes_in_the_kernel_lists(self):
        for k in self.rep["gpu"]["kernels_by_time"]:
            name = k["mangled"] or k["name"]
            want = self.by_kernel[name]
            self.assertEqual(len(want), 1, name)
            self.assertEqual(k["class"], next(iter(want)), name)
        for k in self.rep["kernels"]:
            if k["mangled"] in self.by_kernel:
                self.assertEqual({k["class"]}, self.by_kernel[k["mangled"]], k["mangled"])

    def test_steps_add_up(self):
        s, t = self.rep["steps"], self.rep["time"]
        total = dict.fromkeys(CLASSES, 0)
        for st in s["list"]:
            for c in CLASSES:
                total[c] += st["by_class"][c]
            self.assertEqual(sum(st["phases"].values()), sum(st["by_class"].values()))
        self.assertEqual(sum(total.values()) + s["outside_ns"], sum(t["by_class"].values()))
        ph = t["phases"]
        self.assertEqual(sum(ph[p + "_ns"] for p in ("forward", "backward", "optimizer", "undecided")),
                         sum(total.values()))


class TrainGptFp32(Anatomy, unittest.TestCase):
    PROG = "train_gpt"
    ARGS = ("--steps", "3")

    def test_steps_from_nvtx(self):
        led = ledger(self.out)
        s = self.rep["steps"]
        self.assertEqual(s["count"], led["config"]["steps"])
        self.assertEqual(s["method"], "nvtx")
        # step durations: the "step" push/pop pairs of the main thread
        ranges = [r for r in of(self.recs, "RANGE") if r["op"] in (1, 2)]
        stack, steps = [], []
        for r in ranges:
            if r["op"] == 1:
                stack.append(r)
            else:
                p = stack.pop()
                if p["name"] == "step":
                    steps.append(r["time"] - p["time"])
        self.assertEqual([x["duration_ns"] for x in s["list"]], steps)
        self.assertEqual(s["median_ns"], sorted(steps)[(len(steps) - 1) // 2])

    def test_contractions_and_mfu(self):
        c = self.rep["time"]["contraction"]
        gemm_ns = 0
        gemm_calls = {g["call"]: g for g in of(self.recs, "GEMM")}
        launch = {l["corr"]: l for l in of(self.recs, "LAUNCH") if l["corr"]}
        timed = set()
        for r in of(self.recs, "GPU_KERNEL"):
            l = launch.get(r["corr"])
            if l and l["call"] in gemm_calls:
                gemm_ns += r["dur_ns"]
                timed.add(l["call"])
        flops = sum(gemm_calls[x]["flops"] for x in timed)
        self.assertEqual(c["gemm_gpu_ns"], gemm_ns)
        self.assertEqual(c["gemm_flops"], flops)
        close = lambda a, b: self.assertLess(abs(a - b), 1e-5 * abs(b), (a, b))  # JSON: 6 digits
        close(c["achieved_tflops"], flops / gemm_ns / 1e3)
        self.assertEqual(c["precision"], "fp32")
        close(c["peak_tflops"], 67.0)  # H100 SXM fp32 (docs/sim.md)
        wall = sum(x["duration_ns"] for x in self.rep["steps"]["list"])
        self.assertEqual(c["mfu_wall_ns"], wall)
        close(c["mfu"], flops / wall / 1e3 / 67.0)


class TrainGptBf16NoNvtx(Anatomy, unittest.TestCase):
    PROG = "train_gpt"
    ARGS = ("--steps", "3", "--precision", "bf16")
    NVTX = False


class TrainMlp(Anatomy, unittest.TestCase):
    PROG = "train_mlp"
    ARGS = ()


class DdpAllreduce(Anatomy, unittest.TestCase):
    PROG = "ddp_allreduce"
    ARGS = ("--ranks", "2", "--steps", "2")

    @classmethod
    def setUpClass(cls):
        d = tmpdir()
        pattern = os.path.join(d, "r-%p.anat")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        r = anatomist("run", "--sim", "-q", "-o", pattern, "--", sample(cls.PROG), *cls.ARGS,
                      env=env, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        # the rank traces are those with communication kernels
        best = None
        for f in sorted(os.listdir(d)):
            recs = dump(os.path.join(d, f))
            if of(recs, "COLL"):
                best = os.path.join(d, f), recs
                break
        assert best, "no rank trace with NCCL operations in " + d
        cls.trace, cls.recs = best
        rep = anatomist("report", cls.trace, "--json", "--top", "0", "--no-symbols")
        assert rep.returncode == 0, rep.stderr
        cls.rep = json.loads(rep.stdout)
        cls.out = r.stdout
        cls.ns, cls.count, cls.by_kernel = expected(cls.recs)

    def test_communication_found(self):
        self.assertGreater(self.rep["time"]["by_class"]["communication"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""Library calls and NVTX end to end: samples/train_gpt under `anatomist run --sim`.

train_gpt trains a small GPT through cuBLAS (Sgemm / GemmEx and their strided batches),
one cublasLtMatmul of its own per step (the LM head), NVTX ranges, marks, names and
memory regions, and prints its own ledger: every distinct GEMM shape with its count, the
workspace it gave cuBLAS and cuBLASLt, the math mode, its NVTX calls, its allocations
and its launches per kernel. On the sim's libcublas/libcublasLt (docs/sim.md, "cuBLAS and
cuBLASLt") the trace and `anatomist report --json` must agree with that ledger exactly.

Expected values never come from the code under test. They come from
* the ledger (what the program knows it called);
* docs/sim.md, "Kernels" and "Durations", recomputed here: each GEMM launches one kernel
  named after its types, transposes and math, lasting llround(2000 + 2mnk·batch / peak)
  with peak 67000 (fp32), 494700 (TF32) or 989400 (16-bit) FLOP/ns, followed by the
  split-K reduction (llround(2000 + m·n·batch·16 / 3350)) when k >= 4·max(m, n) and
  k >= 4096;
* docs/trace-format.md (api numbers, LIBCALL/GEMM/RANGE/LABEL fields) and
  docs/report-schema.md (the peak table for compute capability 9.0, how precision and
  alignment are decided);
* the raw records read with tests/anatrace_dump where a number depends on when things
  ran (an NVTX range's host time and the kernels launched inside it).

Runs: fp32, fp32 with --tf32, bf16 (default sizes: every dimension a multiple of 8); bf16
and fp32 --tf32 with sizes that are not (tensor-core alignment); fp32 with B·T = 4096
(split-K). Each run is also made without the profiler: the program's output must be
identical."""
import collections
import json
import math
import os
import re
import unittest

from common import (ANATOMIST, DUMP, SIM_LIB, anatomist, clean_env, dims, dump, ledger,
                    of, run, sample, tmpdir)

TRAIN_GPT = sample("train_gpt")
HAVE_ALL = all(os.path.exists(p) for p in (TRAIN_GPT, ANATOMIST, DUMP,
                                           os.path.join(SIM_LIB, "libcublas.so.13"),
                                           os.path.join(SIM_LIB, "libcublasLt.so.13")))

# docs/trace-format.md, api numbers (1.2).
GEMM_API = {"cublasSgemm_v2": 140, "cublasGemmEx": 143, "cublasSgemmStridedBatched": 144,
            "cublasGemmStridedBatchedEx": 147, "cublasLtMatmul": 150}
CREATE, DESTROY, SET_STREAM, SET_WORKSPACE, SET_MATH, LT_CREATE, LT_DESTROY = 128, 129, 130, 131, 132, 133, 134
CUDA_MALLOC, CU_MEM_ALLOC = 1, 50
RANGE_PUSH, RANGE_POP, RANGE_START, RANGE_END, RANGE_MARK = 1, 2, 3, 4, 5
LABEL_THREAD, LABEL_STREAM, LABEL_DOMAIN, LABEL_REGION = 1, 2, 6, 8
LIB_CUBLAS, LIB_CUBLASLT = 1, 2
TRANS = {"N": 0, "T": 1}
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
TF32_TENSOR_OP_MATH = 3
EPILOGUE_DEFAULT = 1  # CUBLASLT_EPILOGUE_DEFAULT (cublasLt.h); GEMM.epilogue is 0 for cuBLAS
DEFAULT_WORKSPACE = 32 << 20  # cublasCreate_v2's workspace on the sim (docs/sim.md)

# docs/report-schema.md: cudaDataType_t and cublasComputeType_t names.
TYPE_NAME = {0: "fp32", 2: "fp16", 14: "bf16"}
COMPUTE_NAME = {68: "32F", 77: "32F_FAST_TF32"}

# docs/sim.md, "Durations": peak FLOP per ns by effective math.
PEAK_FLOPS_PER_NS = {"fp32": 67000, "tf32": 494700, "bf16": 989400, "fp16": 989400}
REDUCE_BYTES_PER_NS = 3350
SPLIT_K, SPLITS = 4096, 4
# docs/sim.md, "Kernels": tile per math (TM, TN, TK), type tags and letters.
TILE = {"fp32": (128, 128, 8), "tf32": (128, 128, 32), "bf16": (128, 128, 64), "fp16": (128, 128, 64)}
TAG = {0: "f32", 2: "f16", 14: "bf16"}
LETTER = {0: "s", 2: "h", 14: "b"}
NVJET_TILE = (128, 64)
REDUCE_TILE = (32, 16)
SPLITK_REDUCE = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
                 "false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, "
                 "float*, float const*, float const*, float const*, float const*, float*, void*, "
                 "long, float*, int*)")
THREADS = [256, 1, 1]

# docs/report-schema.md: dense peaks of compute capability 9.0 (TFLOP/s) and the
# multiple each precision's tensor-core path wants.
PEAK_TFLOPS_CC90 = {"fp64": 67, "fp32": 67, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4}
ALIGN = {"fp16": 8, "bf16": 8, "tf32": 4}
REL = 1e-5  # ratios are printed with 6 significant digits


def llround(x):
    """C's llround for x >= 0: the nearest integer, halves away from zero."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def ceil_div(a, b):
    return (a + b - 1) // b


def precision(shape, math_mode):
    """The effective precision of a ledger shape (docs/report-schema.md, `gemms`)."""
    a = shape["a_type"]
    if a != 0:
        return TYPE_NAME[a]
    lt = shape["api"] == "cublasLtMatmul"
    if shape["compute_type"] == COMPUTE_32F_FAST_TF32 or (not lt and math_mode & 0xF == TF32_TENSOR_OP_MATH):
        return "tf32"
    return "fp32"


def split_k(s):
    return s["k"] >= SPLITS * max(s["m"], s["n"]) and s["k"] >= SPLIT_K


def flops(s):
    return 2 * s["m"] * s["n"] * s["k"] * s["batch"]


def expected_kernels(s, math_mode):
    """[(name, grid, dur_ns)] a call of ledger shape s launches on the sim, in order."""
    prec = precision(s, math_mode)
    t = s["a_type"]
    if s["api"] == "cublasLtMatmul":
        tf32 = prec == "tf32"
        x = "t" if tf32 else LETTER[t]
        z = "t" if tf32 and t == 0 else LETTER[t]
        name = "nvjet_%ss%s_128x64_64x8_1x1_v_bz_%s%sT" % (x, z, s["transa"], s["transb"])
        tm, tn = NVJET_TILE
    else:
        tm, tn, tk = TILE[prec]
        mathtag = "tf32" if prec == "tf32" else TAG[t]
        name = ("sm90_xmma_gemm_%s%s_%sf32_f32_%s%s_n_tilesize%dx%dx%d_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas" %
                (TAG[t], TAG[t], mathtag, s["transa"].lower(), s["transb"].lower(), tm, tn, tk))
    split = split_k(s)
    main = (name, [ceil_div(s["m"], tm) * ceil_div(s["n"], tn), SPLITS if split else 1, s["batch"]],
            llround(2000 + flops(s) / PEAK_FLOPS_PER_NS[prec]))
    if not split:
        return [main]
    reduce = (SPLITK_REDUCE, [ceil_div(s["m"], REDUCE_TILE[0]) * ceil_div(s["n"], REDUCE_TILE[1]), 1, s["batch"]],
              llround(2000 + s["m"] * s["n"] * s["batch"] * 4 * SPLITS / REDUCE_BYTES_PER_NS))
    return [main, reduce]


def record_key(g):
    """A GEMM record as the ledger describes its shapes."""
    return (g["api"], g["m"], g["n"], g["k"], g["batch"], g["trans_a"], g["trans_b"], g["lda"], g["ldb"],
            g["ldc"], g["a_type"], g["b_type"], g["c_type"], g["compute_type"])


def ledger_key(s):
    return (GEMM_API[s["api"]], s["m"], s["n"], s["k"], s["batch"], TRANS[s["transa"]], TRANS[s["transb"]],
            s["lda"], s["ldb"], s["ldc"], s["a_type"], s["b_type"], s["c_type"], s["compute_type"])


def report_key(api, m, n, k, batch, trans, a, b, c, compute, prec):
    return (api, m, n, k, batch, trans, a, b, c, compute, prec)


def source_name(mangled):
    """The source name of a kernel from its Itanium-mangled template instance
    (_Z5adamwIfEv... -> adamw)."""
    m = re.match(r"_Z(\d+)", mangled)
    return mangled[len(m.group(0)):len(m.group(0)) + int(m.group(1))] if m else mangled


def profile(args):
    """Runs train_gpt with args under `anatomist run --sim` and without the profiler."""
    trace = os.path.join(tmpdir(), "train_gpt.anat")
    traced = anatomist("run", "--sim", "-o", trace, "--", TRAIN_GPT, *args, timeout=300)
    plain = run([TRAIN_GPT, *args], env=clean_env(LD_LIBRARY_PATH=SIM_LIB), timeout=300)
    return traced, plain, trace


class TrainGpt:
    """The checks, for the run of ARGS (mixed into one TestCase per configuration)."""
    ARGS = ()
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.traced, cls.plain, trace = profile(cls.ARGS)
        assert cls.traced.returncode == 0, cls.traced.stdout + cls.traced.stderr
        cls.led = ledger(cls.traced.stdout)
        cls.recs = dump(trace)
        r = anatomist("report", trace, "--json", "--top", "0", "--no-symbols")
        assert r.returncode == 0, r.stderr
        cls.rep = json.loads(r.stdout)
        cls.gemms = of(cls.recs, "GEMM")
        cls.libcalls = of(cls.recs, "LIBCALL")
        cls.launches = of(cls.recs, "LAUNCH")
        cls.gpu = {k["corr"]: k for k in of(cls.recs, "GPU_KERNEL")}
        cls.kernel_names = {k["id"]: k["name"] for k in of(cls.recs, "KERNEL")}
        cls.math = cls.led["math_mode"]
        cls.main_tid = [b for b in of(cls.recs, "LABEL") if b["what"] == LABEL_THREAD][0]["id"]

    # ---------------------------------------------------------------- the program

    def test_config(self):
        self.assertEqual(self.led["config"]["tf32"], "--tf32" in self.ARGS)
        self.assertEqual(self.led["config"]["precision"], self.ARGS[self.ARGS.index("--precision") + 1])
        self.assertEqual(self.math, TF32_TENSOR_OP_MATH if "--tf32" in self.ARGS else 0)

    def test_output_unchanged_by_the_profiler(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stdout + self.plain.stderr)
        self.assertEqual(self.traced.stdout, self.plain.stdout)
        self.assertEqual(self.plain.stderr, "")
        extra = [l for l in self.traced.stderr.splitlines() if not l.startswith("anatomist: trace written to ")]
        self.assertEqual(extra, [], self.traced.stderr)

    # ---------------------------------------------------------------- GEMM records

    def test_one_gemm_record_per_call_with_the_ledgers_shapes(self):
        # No second record for the cublasLtMatmul each cuBLAS GEMM computes through.
        self.assertEqual(len(self.gemms), self.led["gemm_calls"])
        got = collections.Counter(record_key(g) for g in self.gemms)
        want = collections.Counter({ledger_key(s): s["count"] for s in self.led["gemms"]})
        self.assertEqual(sum(want.values()), self.led["gemm_calls"])
        self.assertEqual(got, want)
        self.assertEqual(sum(flops(s) * s["count"] for s in self.led["gemms"]), self.led["gemm_flops"])

    def test_gemm_fields(self):
        handle = [c for c in self.libcalls if c["api"] == CREATE][0]["handle"]
        lt_handle = [c for c in self.libcalls if c["api"] == LT_CREATE][0]["handle"]
        stream = [b for b in of(self.recs, "LABEL") if b["what"] == LABEL_STREAM][0]["id"]
        for g in self.gemms:
            lt = g["api"] == GEMM_API["cublasLtMatmul"]
            want = {"ret": 0, "flops": 2 * g["m"] * g["n"] * g["k"] * g["batch"],
                    "math_mode": 0 if lt else self.math,
                    "epilogue": EPILOGUE_DEFAULT if lt else 0,
                    "workspace": self.led["lt_workspace_bytes"] if lt else self.led["workspace_bytes"],
                    "handle": lt_handle if lt else handle, "stream": stream, "tid": self.main_tid}
            self.assertEqual({f: g[f] for f in want}, want, g)
            self.assertGreater(g["stack"], 0)
        self.assertEqual(sum(g["flops"] for g in self.gemms), self.led["gemm_flops"])

    def test_libcalls(self):
        names = [a["name"] for a in self.led["allocations"]]
        own = [a for a in of(self.recs, "ALLOC") if a["lib"] == 0]
        ws = own[names.index("cublas_workspace")]["ptr"]
        stream = [b for b in of(self.recs, "LABEL") if b["what"] == LABEL_STREAM][0]["id"]
        h = [c for c in self.libcalls if c["api"] == CREATE][0]["handle"]
        lt = [c for c in self.libcalls if c["api"] == LT_CREATE][0]["handle"]
        seen = [(c["lib"], c["api"], c["handle"], c["arg"], c["arg2"], c["ret"]) for c in self.libcalls]
        self.assertEqual(seen, [
            (1, CREATE, h, 0, 0, 0), (1, SET_STREAM, h, stream, 0, 0),
            (1, SET_WORKSPACE, h, ws, self.led["workspace_bytes"], 0), (1, SET_MATH, h, self.math, 0, 0),
            (2, LT_CREATE, lt, 0, 0, 0), (2, LT_DESTROY, lt, 0, 0, 0), (1, DESTROY, h, 0, 0, 0)])
        ids = [r["call"] for r in self.recs if r["kind"] in ("GEMM", "LIBCALL")]
        self.assertEqual(ids, list(range(1, len(ids) + 1)))

    def test_each_gemm_launches_the_documented_kernels(self):
        shapes = {ledger_key(s): s for s in self.led["gemms"]}
        by_call = collections.defaultdict(list)
        for r in self.launches:
            if r["lib"]:
                by_call[r["call"]].append(r)
        for g in self.gemms:
            s = shapes[record_key(g)]
            want = expected_kernels(s, self.math)
            launches = sorted(by_call.pop(g["call"], []), key=lambda r: r["time"])
            lib = LIB_CUBLASLT if s["api"] == "cublasLtMatmul" else LIB_CUBLAS
            self.assertEqual([(r["lib"], r["ret"], r["stream"], dims(r, "grid"), dims(r, "block"))
                              for r in launches],
                             [(lib, 0, g["stream"], grid, THREADS) for _, grid, _ in want], (g, launches))
            got = []
            for r in launches:
                self.assertIn(r["corr"], self.gpu, r)
                k = self.gpu[r["corr"]]
                got.append((self.kernel_names.get(k["kernel"]), dims(k, "grid"), k["dur_ns"]))
                self.assertEqual(dims(k, "block"), THREADS)
                self.assertEqual(k["device"], 0)
            self.assertEqual(got, want, g)
        # Every library launch belongs to a GEMM.
        self.assertEqual(dict(by_call), {})

    def test_kernel_names_say_the_precision(self):
        names = {self.kernel_names.get(self.gpu[r["corr"]]["kernel"]) for r in self.launches if r["lib"]}
        prec = self.led["config"]["precision"]
        tf32 = self.led["config"]["tf32"]
        main = [n for n in names if n != SPLITK_REDUCE]
        self.assertTrue(main)
        for n in main:
            if n.startswith("nvjet_"):
                want = {"bf16": "nvjet_bsb_", "fp32": "nvjet_tst_" if tf32 else "nvjet_sss_"}[prec]
                self.assertTrue(n.startswith(want), n)
            else:
                tag = "bf16bf16_bf16f32" if prec == "bf16" else "f32f32_tf32f32" if tf32 else "f32f32_f32f32"
                self.assertTrue(n.startswith("sm90_xmma_gemm_" + tag + "_f32_"), n)
        self.assertEqual(sum(n.startswith("nvjet_") for n in names), 1)

    # ---------------------------------------------------------------- memory and launches

    def test_workspace_allocation_belongs_to_create(self):
        create = [c for c in self.libcalls if c["api"] == CREATE][0]
        lib = [a for a in of(self.recs, "ALLOC") if a["lib"]]
        self.assertEqual([(a["api"], a["ret"], a["size"], a["lib"], a["call"]) for a in lib],
                         [(CU_MEM_ALLOC, 0, DEFAULT_WORKSPACE, LIB_CUBLAS, create["call"])])
        own = [a for a in of(self.recs, "ALLOC") if not a["lib"]]
        self.assertEqual([(a["api"], a["ret"], a["size"], a["call"]) for a in own],
                         [(CUDA_MALLOC, 0, a["bytes"], 0) for a in self.led["allocations"]])
        self.assertEqual(sum(a["size"] for a in own), self.led["alloc_bytes"])

    def test_own_launches(self):
        own = [r for r in self.launches if not r["lib"]]
        self.assertEqual(len(own), self.led["launches"])
        got = collections.Counter(source_name(self.kernel_names[r["kernel"]]) for r in own)
        self.assertEqual(got, collections.Counter(self.led["kernels"]))
        self.assertTrue(all(r["ret"] == 0 and r["call"] == 0 and r["corr"] in self.gpu for r in own))
        self.assertEqual(len(self.gpu), len(self.launches))

    # ---------------------------------------------------------------- NVTX

    def test_nvtx_ranges_rebuild(self):
        nv = self.led["nvtx"]
        ranges = of(self.recs, "RANGE")
        self.assertTrue(all(r["tid"] == self.main_tid for r in ranges))
        domain = [b for b in of(self.recs, "LABEL") if b["what"] == LABEL_DOMAIN and b["name"]]
        self.assertEqual([b["name"] for b in domain], [nv["domain"]])
        dom = domain[0]["id"]
        stack, steps, marks, starts, ends = [], [], [], {}, []
        for r in ranges:
            if r["op"] in (RANGE_PUSH, RANGE_POP, RANGE_MARK):
                self.assertEqual(r["domain"], 0, r)
            if r["op"] == RANGE_PUSH:
                node = {"name": r["name"], "children": []}
                (stack[-1]["children"] if stack else steps).append(node)
                stack.append(node)
            elif r["op"] == RANGE_POP:
                self.assertTrue(stack, "a pop without a push")
                stack.pop()
            elif r["op"] == RANGE_MARK:
                marks.append((r["name"], [n["name"] for n in stack]))
            elif r["op"] == RANGE_START:
                self.assertEqual(r["domain"], dom)
                self.assertNotIn(r["id"], starts)
                starts[r["id"]] = r["name"]
            elif r["op"] == RANGE_END:
                self.assertEqual((r["domain"], r["name"]), (dom, ""))
                ends.append(r["id"])
        self.assertEqual(stack, [])
        leaf = [{"name": n, "children": []} for n in ("forward", "backward", "optimizer")]
        self.assertEqual(steps, [{"name": "step", "children": leaf}] * self.led["config"]["steps"])
        pushes = collections.Counter(r["name"] for r in ranges if r["op"] == RANGE_PUSH)
        self.assertEqual(pushes, collections.Counter(nv["ranges"]))
        self.assertEqual(collections.Counter(m for m, _ in marks), collections.Counter(nv["marks"]))
        self.assertTrue(all(inside == ["step"] for _, inside in marks), marks)
        self.assertEqual(sorted(ends), sorted(starts))
        self.assertEqual(collections.Counter(starts.values()), collections.Counter(nv["domain_ranges"]))

    def test_nvtx_labels(self):
        nv = self.led["nvtx"]
        labels = of(self.recs, "LABEL")
        self.assertEqual([(b["id"], b["name"]) for b in labels if b["what"] == LABEL_THREAD],
                         [(self.main_tid, nv["thread_name"])])
        self.assertEqual(self.main_tid, self.gemms[0]["tid"])
        streams = [b for b in labels if b["what"] == LABEL_STREAM]
        self.assertEqual([b["name"] for b in streams], [nv["stream_name"]])
        self.assertTrue(all(r["stream"] == streams[0]["id"] for r in self.launches))
        dom = [b for b in labels if b["what"] == LABEL_DOMAIN]
        # nvtxDomainCreateA, then nvtxDomainDestroy (an empty name).
        self.assertEqual([(b["domain"], b["name"]) for b in dom],
                         [(dom[0]["id"], nv["domain"]), (dom[0]["id"], "")])
        regions = [b for b in labels if b["what"] == LABEL_REGION]
        self.assertTrue(all(b["domain"] == dom[0]["id"] for b in regions))
        named = [b for b in regions if b["name"]]
        self.assertEqual([(b["name"], b["size"]) for b in named],
                         [(r["name"], r["bytes"]) for r in nv["mem_regions"]])
        own = [a for a in of(self.recs, "ALLOC") if not a["lib"]]
        self.assertEqual([b["id"] for b in named], [a["ptr"] for a in own])
        ended = [b["id"] for b in regions if not b["name"] and b["size"] == 0]
        self.assertEqual(sorted(ended), sorted(b["id"] for b in named))

    # ---------------------------------------------------------------- the report

    def expected_gemms(self):
        """Report rows by key, from the ledger and the documented formulas."""
        rows = {}
        for s in self.led["gemms"]:
            prec = precision(s, self.math)
            key = report_key(s["api"], s["m"], s["n"], s["k"], s["batch"], s["transa"] + s["transb"],
                             TYPE_NAME[s["a_type"]], TYPE_NAME[s["b_type"]], TYPE_NAME[s["c_type"]],
                             COMPUTE_NAME[s["compute_type"]], prec)
            kern = expected_kernels(s, self.math)
            row = rows.setdefault(key, {"count": 0, "flops": 0, "gpu_ns": 0, "kernels": 0, "timed_calls": 0})
            row["count"] += s["count"]
            row["flops"] += flops(s) * s["count"]
            row["gpu_ns"] += sum(d for _, _, d in kern) * s["count"]
            row["kernels"] += len(kern) * s["count"]
            row["timed_calls"] += s["count"]
        return rows

    def got_gemms(self):
        return {report_key(g["api"], g["m"], g["n"], g["k"], g["batch"], g["trans"], g["a_type"], g["b_type"],
                           g["c_type"], g["compute_type"], g["precision"]): g for g in self.rep["gemms"]}

    def test_report_device(self):
        dev = self.rep["trace"]["devices"]
        self.assertEqual([(d["ordinal"], d["cc_major"], d["cc_minor"]) for d in dev], [(0, 9, 0)])

    def test_report_gemms(self):
        want = self.expected_gemms()
        got = self.got_gemms()
        self.assertEqual(len(got), len(self.rep["gemms"]), "two rows with one key")
        self.assertEqual(set(got), set(want))
        for key, w in want.items():
            g = got[key]
            self.assertEqual({f: g[f] for f in w}, w, key)
            tflops = w["flops"] / w["gpu_ns"] / 1000
            self.assertAlmostEqual(g["tflops"], tflops, delta=tflops * REL, msg=key)
            peak = PEAK_TFLOPS_CC90[key[-1]]
            self.assertEqual((g["device"], g["peak_tflops"]), (0, peak), key)
            self.assertAlmostEqual(g["peak_pct"], 100 * tflops / peak, delta=100 * tflops / peak * REL, msg=key)
        order = [(g["gpu_ns"], g["flops"]) for g in self.rep["gemms"]]
        self.assertEqual(order, sorted(order, reverse=True))

    def test_report_library_totals(self):
        want = self.expected_gemms()
        lib = self.rep["libraries"]
        gemm_ns = sum(w["gpu_ns"] for w in want.values())
        kernel_ns = sum(k["dur_ns"] for k in self.gpu.values())
        self.assertEqual({f: lib[f] for f in ("gemm_calls", "gemm_shapes", "gemm_kernels", "gemm_gpu_ns",
                                              "gemm_flops", "kernel_ns", "collective_calls")},
                         {"gemm_calls": self.led["gemm_calls"], "gemm_shapes": len(want),
                          "gemm_kernels": sum(w["kernels"] for w in want.values()), "gemm_gpu_ns": gemm_ns,
                          "gemm_flops": self.led["gemm_flops"], "kernel_ns": kernel_ns, "collective_calls": 0})
        tflops = self.led["gemm_flops"] / gemm_ns / 1000
        self.assertAlmostEqual(lib["gemm_tflops"], tflops, delta=tflops * REL)
        self.assertAlmostEqual(lib["gemm_share"], gemm_ns / kernel_ns, delta=gemm_ns / kernel_ns * REL)

    def test_report_alignment_and_findings(self):
        want = self.expected_gemms()
        bad = {}
        for key, w in want.items():
            multiple = ALIGN.get(key[-1])
            if not multiple:
                continue
            mis = [d for d, v in zip("mnk", key[1:4]) if v % multiple]
            if mis:
                bad[key] = {"multiple": multiple, "misaligned": mis, "count": w["count"], "gpu_ns": w["gpu_ns"]}
        al = self.rep["gemm_alignment"]
        got = {report_key(a["api"], a["m"], a["n"], a["k"], a["batch"], a["trans"], a["a_type"], a["b_type"],
                          a["c_type"], a["compute_type"], a["precision"]):
               {f: a[f] for f in ("multiple", "misaligned", "count", "gpu_ns")} for a in al}
        self.assertEqual(got, bad)
        gemm_order = [k for k in self.got_gemms() if k in bad]
        self.assertEqual(list(got), gemm_order, "gemm_alignment is in gemms order")
        findings = {f["id"]: f for f in self.rep["findings"]}
        if bad:
            f = findings.pop("gemm_misaligned")
            self.assertEqual((f["count"], f["shapes"], f["gpu_ns"]),
                             (sum(b["count"] for b in bad.values()), len(bad),
                              sum(b["gpu_ns"] for b in bad.values())))
        fp32 = {k: w for k, w in want.items() if k[-1] == "fp32"}
        if fp32:
            f = findings.pop("fp32_without_tf32")
            self.assertEqual((f["count"], f["shapes"], f["gpu_ns"], f["peak_fp32_tflops"], f["peak_tf32_tflops"]),
                             (sum(w["count"] for w in fp32.values()), len(fp32),
                              sum(w["gpu_ns"] for w in fp32.values()), 67, 494.7))
            self.assertAlmostEqual(f["peak_ratio"], 494.7 / 67, delta=494.7 / 67 * REL)
        self.assertEqual(findings, {})
        # fp32 without --tf32 has fp32 GEMMs; --tf32 and bf16 none.
        self.assertEqual(bool(fp32), self.led["config"]["precision"] == "fp32" and not self.led["config"]["tf32"])

    def test_report_ranges(self):
        nv = self.led["nvtx"]
        ranges = of(self.recs, "RANGE")
        # host and GPU time per name from the records: [push, pop] on the main thread.
        launch_ns = [(r["time"], self.gpu[r["corr"]]["dur_ns"]) for r in self.launches
                     if r["tid"] == self.main_tid and r["corr"] in self.gpu]
        host, gpu, stack, opened = collections.Counter(), collections.Counter(), [], {}
        for r in ranges:
            if r["op"] in (RANGE_PUSH, RANGE_START):
                item = (r["name"], r["time"])
                if r["op"] == RANGE_PUSH:
                    stack.append(item)
                else:
                    opened[r["id"]] = item
                continue
            if r["op"] == RANGE_POP:
                name, t0 = stack.pop()
            elif r["op"] == RANGE_END:
                name, t0 = opened.pop(r["id"])
            else:
                continue
            host[name] += r["time"] - t0
            gpu[name] += sum(d for t, d in launch_ns if t0 <= t <= r["time"])
        want = [{"kind": "push", "domain": None, "name": n, "count": c, "depth": 0 if n == "step" else 1,
                 "host_ns": host[n], "gpu_ns": gpu[n]} for n, c in nv["ranges"].items()]
        want += [{"kind": "start", "domain": nv["domain"], "name": n, "count": c, "depth": None,
                  "host_ns": host[n], "gpu_ns": gpu[n]} for n, c in nv["domain_ranges"].items()]
        key = lambda e: (e["kind"], e["name"])
        self.assertEqual(sorted(self.rep["ranges"], key=key), sorted(want, key=key))
        self.assertEqual(self.rep["libraries"]["range_kinds"], len(want))
        self.assertEqual(self.rep["marks"],
                         [{"domain": None, "name": n, "count": c} for n, c in nv["marks"].items()])
        self.assertEqual(self.rep["ranges_unmatched"], {"pops": 0, "pushes": 0, "ends": 0, "starts": 0})

    def test_report_memory(self):
        mem = self.rep["memory"]
        alloc = self.led["alloc_bytes"]
        # Everything is live at once: cublasCreate's workspace first, the program's buffers
        # until after cublasDestroy.
        self.assertEqual(mem["peak_bytes"], alloc + DEFAULT_WORKSPACE)
        self.assertEqual(mem["peak_count"], len(self.led["allocations"]) + 1)
        self.assertEqual(mem["by_library"], {"none": alloc, "cuBLAS": DEFAULT_WORKSPACE, "cuBLASLt": 0,
                                             "NCCL": 0, "cuDNN": 0})
        self.assertEqual(mem["by_library_at_end"], {"none": 0, "cuBLAS": 0, "cuBLASLt": 0, "NCCL": 0, "cuDNN": 0})
        self.assertEqual(mem["live_at_end_bytes"], 0)
        own = [a["ptr"] for a in of(self.recs, "ALLOC") if not a["lib"]]
        self.assertEqual(mem["labels"], [{"name": r["name"], "address": p, "size": r["bytes"],
                                          "peak_bytes": r["bytes"], "peak_count": 1}
                                         for r, p in zip(self.led["nvtx"]["mem_regions"], own)])
        by_api = self.rep["allocations"]["by_api"]
        n = len(self.led["allocations"])
        self.assertEqual(by_api["cudaMalloc"], {"calls": n, "ok": n, "failed": 0, "bytes": alloc})
        self.assertEqual(by_api["cuMemAlloc_v2"], {"calls": 1, "ok": 1, "failed": 0, "bytes": DEFAULT_WORKSPACE})


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Fp32(TrainGpt, unittest.TestCase):
    ARGS = ("--steps", "2", "--precision", "fp32")


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Tf32(TrainGpt, unittest.TestCase):
    ARGS = ("--steps", "2", "--precision", "fp32", "--tf32")


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Bf16(TrainGpt, unittest.TestCase):
    ARGS = ("--steps", "2", "--precision", "bf16")


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Bf16Misaligned(TrainGpt, unittest.TestCase):
    # Sequence 60 and vocabulary 500 are not multiples of 8 (the attention products and
    # the LM head); dim 96, head size 24 and B·T = 240 are (the other linear layers).
    ARGS = ("--steps", "2", "--precision", "bf16", "--dim", "96", "--heads", "4", "--seq", "60",
            "--vocab", "500")

    def test_some_shapes_are_misaligned(self):
        self.assertTrue(any(s[d] % 8 for s in self.led["gemms"] for d in "mnk"))
        self.assertTrue(any(all(s[d] % 8 == 0 for d in "mnk") for s in self.led["gemms"]))
        self.assertIn("gemm_misaligned", {f["id"] for f in self.rep["findings"]})


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Tf32Misaligned(TrainGpt, unittest.TestCase):
    # TF32 wants multiples of 4: head size 25 is not (the attention products); dim 100,
    # 3·dim, 4·dim, sequence 60 and vocabulary 500 are.
    ARGS = ("--steps", "1", "--precision", "fp32", "--tf32", "--dim", "100", "--heads", "4", "--seq", "60",
            "--vocab", "500")

    def test_some_shapes_are_misaligned(self):
        self.assertTrue(any(s[d] % 4 for s in self.led["gemms"] for d in "mnk"))
        self.assertTrue(any(all(s[d] % 4 == 0 for d in "mnk") for s in self.led["gemms"]))
        self.assertIn("gemm_misaligned", {f["id"] for f in self.rep["findings"]})


@unittest.skipUnless(HAVE_ALL, "train_gpt, the analyzer, anatrace_dump or the sim's cuBLAS is not built")
class Fp32SplitK(TrainGpt, unittest.TestCase):
    # B·T = 4096 rows: the weight gradients (k = B·T) of the narrow layers are split-K.
    ARGS = ("--steps", "1", "--precision", "fp32", "--batch", "64", "--seq", "64", "--dim", "32",
            "--heads", "1", "--layers", "1", "--vocab", "64")

    def test_some_shapes_are_split_k(self):
        self.assertTrue(any(split_k(s) for s in self.led["gemms"]))
        self.assertTrue(any(not split_k(s) for s in self.led["gemms"]))


if __name__ == "__main__":
    unittest.main()

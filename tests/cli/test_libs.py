"""`anatomist report`: library calls (GEMMs, NCCL), NVTX ranges and library memory, on the
"libs" scenario of tests/tools/gen_trace.c. The records of the scenario are mirrored
below as data; every expected number (FLOPs, linked GPU time, TFLOP/s, peak shares,
nccl-tests bandwidths, range times, bytes by library) is computed here from them, never
read from the analyzer."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import CliTest, main  # noqa: E402

MiB = 1 << 20
TID_A, TID_B, TID_C = 100, 101, 102
# Dense peaks of the scenario's device (compute capability 9.0), TFLOP/s.
PEAK_H100 = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4,
             "fp8": 1978.9}
CUDA_TYPES = {0: "fp32", 14: "bf16", 28: "fp8e4m3"}

# gen_lib_gemms: time, call, api, ret, m, n, k, batch, trans_a, trans_b, A, B, C types,
# compute type, math mode.
GEMMS = [
    (10000, 1, "cublasGemmEx", 0, 4096, 4096, 4096, 1, 0, 0, 14, 14, 14, 68, 0),
    (20000, 2, "cublasGemmEx", 0, 4096, 4096, 4096, 1, 0, 0, 14, 14, 14, 68, 0),
    (30000, 3, "cublasGemmEx", 0, 1000, 4100, 1022, 1, 1, 0, 14, 14, 14, 68, 0),
    (40000, 4, "cublasSgemm_v2", 0, 1024, 1024, 1024, 1, 0, 0, 0, 0, 0, 68, 0),
    (50000, 5, "cublasSgemm_v2", 0, 1024, 1024, 1024, 1, 0, 0, 0, 0, 0, 68, 0),
    (60000, 6, "cublasSgemmStridedBatched", 0, 512, 512, 64, 16, 0, 1, 0, 0, 0, 68, 3),
    (70000, 7, "cublasLtMatmul", 0, 2048, 2048, 2048, 1, 1, 0, 28, 28, 14, 68, 0),
    (75000, 8, "cublasGemmEx", 13, 64, 64, 64, 1, 0, 0, 14, 14, 14, 68, 0),  # failed
]
# gen_lib_launches: time, thread, library call, corr, kernel id, GPU duration (0 = none).
LAUNCHES = [
    (10100, TID_A, 1, 101, 10, 200000), (20100, TID_A, 2, 102, 10, 210000),
    (30100, TID_A, 3, 103, 10, 50000), (40100, TID_A, 4, 104, 11, 40000),
    (50100, TID_A, 5, 105, 11, 30000), (50200, TID_A, 5, 106, 11, 10000),
    (60100, TID_A, 6, 107, 11, 20000), (70100, TID_A, 7, 108, 10, 0),
    (80000, TID_A, 0, 109, 17, 5000), (110100, TID_A, 30, 201, 12, 100000),
    (120100, TID_A, 31, 202, 12, 140000), (130100, TID_A, 32, 203, 13, 20000),
    (143100, TID_A, 36, 204, 14, 30000), (143200, TID_A, 36, 205, 15, 50000),
    (160100, TID_A, 37, 206, 16, 10000), (250000, TID_A, 0, 110, 17, 7000),
]
# gen_lib_colls: time, call, op, comm handle, dtype, bytes, group depth.
COMMS = {0xC0111: (0x1234abcd5678ef00, 1, 4), 0xC0222: (0x99, 0, 2)}  # id, rank, size
COLLS = [
    (110000, 30, "AllReduce", 0xC0111, "fp32", 4 * MiB, 0),
    (120000, 31, "AllReduce", 0xC0111, "fp32", 4 * MiB, 0),
    (130000, 32, "AllGather", 0xC0111, "int8", 262144, 0),
    (141000, 34, "ReduceScatter", 0xC0111, "bf16", 1 * MiB, 1),
    (142000, 35, "AllReduce", 0xC0111, "fp32", 3 * MiB, 1),
    (160000, 37, "Send", 0xC0222, "bf16", 65536, 0),
]
GROUP_END_CALL = 36  # the outermost ncclGroupEnd, at +143000 on thread A
# (algorithm, protocol) of each collective's kernel name (the group's: by operation).
ALGO = {30: ("RING", "LL"), 31: ("RING", "LL"), 32: ("RING", "LL128"),
        34: ("RING", "SIMPLE"), 35: ("TREE", "LL128"), 37: (None, None)}
# gen_lib_ranges: time, thread, op, domain, id, name.
RANGES = [
    (4000, TID_B, "start", 0, 77, "epoch"), (5000, TID_A, "push", 0, 0, "step"),
    (6000, TID_A, "push", 0, 0, "forward"), (7000, TID_B, "push", 0xD0D0, 0, "load"),
    (9000, TID_B, "pop", 0xD0D0, 0, ""), (9500, TID_B, "push", 0, 0, "never-popped"),
    (100000, TID_A, "pop", 0, 0, ""), (150000, TID_A, "mark", 0, 0, "checkpoint"),
    (151000, TID_A, "mark", 0, 0, "checkpoint"), (200000, TID_A, "pop", 0, 0, ""),
    (300000, TID_A, "pop", 0, 0, ""), (400000, TID_C, "end", 0, 77, ""),
    (410000, TID_C, "end", 0, 78, ""),
]
DOMAINS = {0xD0D0: "dataloader"}
# Allocations: time, ptr, size, library; frees: time, ptr.
ALLOCS = [(1000, 0x10000000, 8 * MiB, "none"), (2100, 0x30000000, 2 * MiB, "NCCL"),
          (2200, 0x30400000, 1 * MiB, "NCCL"), (10050, 0x20000000, 4 * MiB, "cuBLAS")]
FREES = [(500000, 0x10000000), (500100, 0x30400000)]
REGIONS = [("activations", 0x10000000, 16 * MiB), ("nccl-pool", 0x30000000, 8 * MiB)]


def call_gpu(call):
    return sum(d for _, _, c, _, _, d in LAUNCHES if c == call and d)


def call_kernels(call):
    return sum(1 for _, _, c, _, _, d in LAUNCHES if c == call and d)


def precision(a, compute, math):
    if a in (2, 14):
        return {2: "fp16", 14: "bf16"}[a]
    if a in (28, 29):
        return "fp8"
    if a == 0:
        return "tf32" if compute == 77 or (math & 0xF) == 3 else "fp32"
    raise ValueError(a)


def shapes():
    """Expected GEMM rows keyed by (api, m, n, k, batch, trans, precision)."""
    out = {}
    for g in GEMMS:
        _, call, api, ret, m, n, k, b, ta, tb, at, bt, ct, comp, math = g
        if ret:
            continue
        key = (api, m, n, k, b, "NTC"[ta] + "NTC"[tb], precision(at, comp, math))
        row = out.setdefault(key, {"count": 0, "flops": 0, "gpu_ns": 0, "kernels": 0,
                                   "timed_flops": 0, "types": (at, bt, ct)})
        row["count"] += 1
        row["flops"] += 2 * m * n * k * b
        row["gpu_ns"] += call_gpu(call)
        row["kernels"] += call_kernels(call)
        if call_kernels(call):
            row["timed_flops"] += 2 * m * n * k * b
    return out


def key_of(g):
    return (g["api"], g["m"], g["n"], g["k"], g["batch"], g["trans"], g["precision"])


ALL_KERNEL_NS = sum(d for *_, d in LAUNCHES)


class LibsReport(CliTest):
    def setUp(self):
        super().setUp()
        self.trace, _ = self.gen("libs")
        self.j = self.json_of("report", "--json", "--top", "0", "--no-symbols", self.trace)

    def test_gemm_rows(self):
        want = shapes()
        got = {key_of(g): g for g in self.j["gemms"]}
        self.assertEqual(set(got), set(want))
        for key, w in want.items():
            g = got[key]
            self.assertEqual(g["count"], w["count"], key)
            self.assertEqual(g["flops"], w["flops"], key)
            self.assertEqual(g["gpu_ns"], w["gpu_ns"], key)
            self.assertEqual(g["kernels"], w["kernels"], key)
            self.assertEqual((g["a_type"], g["b_type"], g["c_type"]),
                             tuple(CUDA_TYPES[t] for t in w["types"]))
            self.assertEqual(g["compute_type"], "32F")
            self.assertEqual(g["peak_tflops"], PEAK_H100[key[6]])
            if w["gpu_ns"]:
                tflops = w["timed_flops"] / w["gpu_ns"] / 1000
                self.assertAlmostEqual(g["tflops"], tflops, delta=tflops * 1e-5)
                pct = 100 * tflops / PEAK_H100[key[6]]
                self.assertAlmostEqual(g["peak_pct"], pct, delta=pct * 1e-5)
            else:
                self.assertIsNone(g["tflops"])
                self.assertIsNone(g["peak_pct"])
        # by GPU time, longest first
        times = [g["gpu_ns"] for g in self.j["gemms"]]
        self.assertEqual(times, sorted(times, reverse=True))
        self.assertEqual(times[0], 410000)  # the two bf16 4096^3 calls, by hand

    def test_gemm_totals(self):
        lib = self.j["libraries"]
        want = shapes()
        gemm_ns = sum(w["gpu_ns"] for w in want.values())
        self.assertEqual(lib["gemm_calls"], sum(1 for g in GEMMS if g[3] == 0))
        self.assertEqual(lib["gemm_shapes"], len(want))
        self.assertEqual(lib["gemm_gpu_ns"], gemm_ns)
        self.assertEqual(lib["kernel_ns"], ALL_KERNEL_NS)
        self.assertAlmostEqual(lib["gemm_share"], gemm_ns / ALL_KERNEL_NS, 5)
        self.assertEqual(lib["gemm_flops"], sum(w["flops"] for w in want.values()))
        timed = sum(w["timed_flops"] for w in want.values())
        self.assertAlmostEqual(lib["gemm_tflops"], timed / gemm_ns / 1000,
                               delta=timed / gemm_ns / 1000 * 1e-5)

    def test_alignment_and_findings(self):
        al = self.j["gemm_alignment"]
        self.assertEqual(len(al), 1)
        self.assertEqual((al[0]["m"], al[0]["n"], al[0]["k"]), (1000, 4100, 1022))
        self.assertEqual(al[0]["misaligned"], ["n", "k"])  # 4100 % 8 = 4, 1022 % 8 = 6
        self.assertEqual(al[0]["multiple"], 8)
        self.assertEqual(al[0]["gpu_ns"], call_gpu(3))
        f = {x["id"]: x for x in self.j["findings"]}
        self.assertEqual(set(f), {"fp32_without_tf32", "gemm_misaligned"})
        fp32 = f["fp32_without_tf32"]
        self.assertEqual(fp32["count"], 2)
        self.assertEqual(fp32["gpu_ns"], call_gpu(4) + call_gpu(5))
        self.assertAlmostEqual(fp32["peak_ratio"], PEAK_H100["tf32"] / PEAK_H100["fp32"], 5)
        self.assertIn("CUBLAS_TF32_TENSOR_OP_MATH", fp32["advice"])
        self.assertEqual(f["gemm_misaligned"]["gpu_ns"], call_gpu(3))

    def coll_gpu(self):
        """GPU time per COLL call: its own kernels, or its group's split by bytes."""
        grouped = [c for c in COLLS if c[6]]
        whole = sum(c[5] for c in grouped)
        out = {}
        for c in COLLS:
            if c[6]:
                out[c[1]] = call_gpu(GROUP_END_CALL) * c[5] // whole
            else:
                out[c[1]] = call_gpu(c[1])
        return out

    def test_collectives(self):
        per_call = self.coll_gpu()
        self.assertEqual(per_call[34], 20000)  # 80 us of the group, 1 MiB of 4 MiB
        self.assertEqual(per_call[35], 60000)
        want = {}
        for c in COLLS:
            key = (c[2], c[4], c[5], "0x%016x" % COMMS[c[3]][0])
            w = want.setdefault(key, {"count": 0, "gpu_ns": 0, "ranks": COMMS[c[3]][2],
                                      "call": c[1], "grouped": 0})
            w["count"] += 1
            w["gpu_ns"] += per_call[c[1]]
            w["grouped"] += c[6] != 0
        got = {(c["op"], c["dtype"], c["bytes"], c["comm_id"]): c for c in self.j["collectives"]}
        self.assertEqual(set(got), set(want))
        factors = {"AllReduce": lambda n: 2 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
                   "ReduceScatter": lambda n: (n - 1) / n, "Send": lambda n: 1.0}
        for key, w in want.items():
            g = got[key]
            op, n = key[0], w["ranks"]
            self.assertEqual(g["count"], w["count"], key)
            self.assertEqual(g["gpu_ns"], w["gpu_ns"], key)
            self.assertEqual(g["grouped"], w["grouped"], key)
            self.assertEqual(g["ranks"], n)
            self.assertEqual((g["algorithm"], g["protocol"]), ALGO[w["call"]], key)
            size = key[2] * (n if op in ("AllGather", "ReduceScatter") else 1)
            algbw = size / (w["gpu_ns"] / w["count"])  # bytes/ns = GB/s
            busbw = algbw * factors[op](n)  # JSON ratios carry 6 significant digits
            self.assertAlmostEqual(g["algbw_gbps"], algbw, delta=algbw * 1e-5)
            self.assertAlmostEqual(g["busbw_gbps"], busbw, delta=busbw * 1e-5)
        lib = self.j["libraries"]
        self.assertEqual(lib["collective_calls"], len(COLLS))
        self.assertEqual(lib["collective_gpu_ns"], sum(per_call.values()))

    def test_communicators(self):
        c = {x["comm_id"]: x for x in self.j["communicators"]}
        root, split = c["0x1234abcd5678ef00"], c["0x0000000000000099"]
        self.assertEqual((root["rank"], root["size"], root["created_by"]), (1, 4, "ncclCommInitRank"))
        self.assertIsNone(root["parent_comm_id"])
        self.assertEqual((split["rank"], split["size"], split["color"]), (0, 2, 1))
        self.assertEqual(split["parent_comm_id"], "0x1234abcd5678ef00")
        self.assertEqual(root["collectives"], sum(1 for x in COLLS if x[3] == 0xC0111))

    def launched_gpu(self, tid, t0, t1):
        return sum(d for t, th, _, _, _, d in LAUNCHES
                   if (tid is None or th == tid) and t0 <= t <= t1)

    def expected_ranges(self):
        """Replays push/pop per (thread, domain) and start/end by id."""
        stacks, starts, rows = {}, {}, {}
        unmatched = {"pops": 0, "pushes": 0, "ends": 0, "starts": 0}
        for t, tid, op, dom, rid, name in sorted(RANGES, key=lambda r: r[0]):
            st = stacks.setdefault((tid, dom), [])
            if op == "push":
                st.append((t, name))
            elif op == "pop":
                if not st:
                    unmatched["pops"] += 1
                    continue
                t0, nm = st.pop()
                key = ("push", DOMAINS.get(dom), nm, len(st))
                rows[key] = (t - t0, self.launched_gpu(tid, t0, t))
            elif op == "start":
                starts[rid] = (t, name, dom)
            elif op == "end":
                if rid not in starts:
                    unmatched["ends"] += 1
                    continue
                t0, nm, d = starts.pop(rid)
                rows[("start", DOMAINS.get(d), nm, None)] = (t - t0, self.launched_gpu(None, t0, t))
        unmatched["pushes"] = sum(len(s) for s in stacks.values())
        unmatched["starts"] = len(starts)
        return rows, unmatched

    def test_ranges(self):
        rows, unmatched = self.expected_ranges()
        got = {(r["kind"], r["domain"], r["name"], r["depth"]): r for r in self.j["ranges"]}
        self.assertEqual(set(got), set(rows))
        for key, (host, gpu) in rows.items():
            self.assertEqual(got[key]["count"], 1, key)
            self.assertEqual(got[key]["host_ns"], host, key)
            self.assertEqual(got[key]["gpu_ns"], gpu, key)
        self.assertEqual(got[("push", None, "step", 0)]["host_ns"], 195000)  # by hand
        self.assertEqual(got[("start", None, "epoch", None)]["gpu_ns"], ALL_KERNEL_NS)
        self.assertEqual(self.j["ranges_unmatched"], unmatched)
        self.assertEqual(self.j["marks"], [{"domain": None, "name": "checkpoint", "count": 2}])

    def test_memory_by_library(self):
        m = self.j["memory"]
        live, peak, peak_set = {}, 0, {}
        events = sorted([(t, "a", p, s, lib) for t, p, s, lib in ALLOCS] +
                        [(t, "f", p, 0, None) for t, p in FREES])
        for _, kind, p, s, lib in events:
            if kind == "a":
                live[p] = (s, lib)
            else:
                del live[p]
            total = sum(v[0] for v in live.values())
            if total > peak:
                peak, peak_set = total, dict(live)

        def by_lib(alive):
            out = {"none": 0, "cuBLAS": 0, "cuBLASLt": 0, "NCCL": 0, "cuDNN": 0}
            for s, lib in alive.values():
                out[lib] += s
            return out

        self.assertEqual(m["peak_bytes"], peak)
        self.assertEqual(m["by_library"], by_lib(peak_set))
        self.assertEqual(m["by_library_at_end"], by_lib(live))
        labels = {x["name"]: x for x in m["labels"]}
        for name, addr, size in REGIONS:
            inside = [s for p, (s, _) in peak_set.items() if addr <= p < addr + size]
            self.assertEqual(labels[name]["address"], addr)
            self.assertEqual(labels[name]["peak_bytes"], sum(inside), name)
            self.assertEqual(labels[name]["peak_count"], len(inside), name)

    def test_text(self):
        out = self.ok("report", "--no-symbols", self.trace).stdout
        self.assertIn("GEMMs (cuBLAS, cuBLASLt): 7 calls in 5 shapes", out)
        self.assertIn("bf16 m=1000 n=4100 k=1022: n,k not a multiple of 8", out)
        self.assertIn("pad the hidden size / batch × sequence to a multiple of 8", out)
        self.assertIn("fp32 GEMMs without TF32: 2 calls in 1 shape", out)
        self.assertIn("torch.backends.cuda.matmul.allow_tf32 = True", out)
        self.assertIn("NCCL collectives: 6 calls", out)
        self.assertIn("RING/SIMPLE", out)
        self.assertIn("dataloader:load", out)
        self.assertIn("unmatched: 1 pop without a push, 1 push never popped, 1 end without a "
                      "start", out)
        self.assertIn("by library         at the peak: none 8.00 MiB, cuBLAS 4.00 MiB, "
                      "NCCL 3.00 MiB; at the end: cuBLAS 4.00 MiB, NCCL 2.00 MiB", out)
        self.assertIn('region "activations"', out)


class NoLibraryRecords(CliTest):
    def test_sections_absent(self):
        trace, _ = self.gen("gpu")
        out = self.ok("report", "--no-symbols", trace).stdout
        # the section headings (the time anatomy may say that no NVTX range marked a phase)
        for text in ("\nGEMMs", "\nNCCL collectives", "\nNVTX ranges", "  by library"):
            self.assertNotIn(text, out)
        j = self.json_of("report", "--json", trace)
        self.assertEqual(j["gemms"], [])
        self.assertEqual(j["collectives"], [])
        self.assertEqual(j["findings"], [])
        self.assertEqual(j["ranges"], [])
        self.assertIsNone(j["libraries"]["gemm_tflops"])
        self.assertEqual(j["memory"]["by_library"]["none"], j["memory"]["peak_bytes"])


if __name__ == "__main__":
    main()

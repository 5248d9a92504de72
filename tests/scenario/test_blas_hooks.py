"""cuBLAS and cuBLASLt calls under the preload (docs/trace-format.md, "Library calls").

tests/scenario/blas_probe.c creates a handle on its own stream with TF32 math, runs GEMMs
through nine cuBLAS entry points (odd shapes, every transpose, padded leading dimensions,
strided and pointer-array batches, a legacy compute type), sets a workspace between them,
runs one cublasLtMatmul of its own (batch 2, RELU epilogue) and destroys its handles,
checking every result against a CPU reference. On the sim's libcublas/libcublasLt (which
compute through cublasLtMatmul, reached through the dynamic linker, and allocate a 32 MiB
workspace in cublasCreate_v2), with CUPTI on, the trace must hold exactly one GEMM per
GEMM call with the probe's shapes and the flops computed here, the LIBCALL records of the
handle calls, the kernels of each GEMM linked to it through LAUNCH.call and corr, and the
workspace allocation attributed to cublasCreate_v2; the probe's results are unchanged."""
import os
import unittest

from common import BUILD, PRELOAD, SIM_LIB, clean_env, dump, ledger, of, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_blas_probe")
HAVE_SIM = os.path.exists(os.path.join(SIM_LIB, "libcublas.so.13"))

# docs/trace-format.md, api numbers (1.2).
GEMM_API = {"cublasSgemm_v2": 140, "cublasDgemm_v2": 141, "cublasSgemm_v2_64": 140, "cublasGemmEx": 143,
            "cublasSgemmStridedBatched": 144, "cublasGemmStridedBatchedEx": 147, "cublasSgemmBatched": 148,
            "cublasGemmBatchedEx": 149, "cublasLtMatmul": 150}
CREATE, DESTROY, SET_STREAM, SET_WORKSPACE, SET_MATH, LT_CREATE, LT_DESTROY = 128, 129, 130, 131, 132, 133, 134
# cublasComputeType_t of a legacy cudaDataType_t compute type (cublas_api.h): CUDA_R_32F (0)
# stands for CUBLAS_COMPUTE_32F (68).
LEGACY_COMPUTE = {0: 68, 1: 70, 2: 64, 10: 72}
WORKSPACE_BYTES = 32 << 20  # the sim's default workspace (docs/sim.md)


def results(stdout):
    return [l for l in stdout.splitlines() if l.startswith("result ")]


@unittest.skipUnless(os.path.exists(PROBE) and HAVE_SIM, "the probe or the sim's cuBLAS is not built")
class BlasHooks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        trace = os.path.join(tmpdir(), "t.anat")
        cls.traced = run([PROBE], env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD,
                                                ANATOMIST_OUTPUT=trace))
        cls.plain = run([PROBE], env=clean_env(LD_LIBRARY_PATH=SIM_LIB))
        assert cls.traced.returncode == 0, cls.traced.stdout + cls.traced.stderr
        cls.led = ledger(cls.traced.stdout)
        cls.recs = dump(trace)
        cls.gemms = of(cls.recs, "GEMM")
        cls.calls = of(cls.recs, "LIBCALL")

    def test_results_unchanged_by_the_preload(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stdout + self.plain.stderr)
        self.assertTrue(self.led["ok"])
        self.assertEqual(len(results(self.traced.stdout)), 10)
        self.assertTrue(all(" ok " in l for l in results(self.traced.stdout)), self.traced.stdout)
        self.assertEqual(results(self.traced.stdout), results(self.plain.stdout))

    def test_one_gemm_record_per_call(self):
        # No second record for the cublasLtMatmul each cuBLAS GEMM computes through.
        self.assertEqual([g["api"] for g in self.gemms], [GEMM_API[l["name"]] for l in self.led["gemms"]])
        self.assertEqual(sum(g["api"] == 150 for g in self.gemms), 1)

    def test_gemm_fields(self):
        for g, l, math in zip(self.gemms, self.led["gemms"], self.led["math"]):
            lt = l["name"] == "cublasLtMatmul"
            want = {"m": l["m"], "n": l["n"], "k": l["k"], "batch": l["batch"], "trans_a": l["ta"],
                    "trans_b": l["tb"], "lda": l["lda"], "ldb": l["ldb"], "ldc": l["ldc"],
                    "a_type": l["a_type"], "b_type": l["b_type"], "c_type": l["c_type"],
                    "compute_type": LEGACY_COMPUTE.get(l["compute"], l["compute"]),
                    "math_mode": math, "epilogue": l["epilogue"], "workspace": l["workspace"],
                    "flops": 2 * l["m"] * l["n"] * l["k"] * l["batch"], "stream": self.led["stream"],
                    "handle": self.led["lt_handle"] if lt else self.led["handle"]}
            self.assertEqual({f: g[f] for f in want}, want, l["name"])
            legacy = l["compute"] < 64
            self.assertEqual(g["ret"], self.led["legacy_ret"] if legacy else 0, l["name"])
            self.assertGreater(g["dur_ns"], 0)
            self.assertGreater(g["stack"], 0)

    def test_libcalls(self):
        h = self.led["handle"]
        seen = [(c["lib"], c["api"], c["handle"], c["arg"], c["arg2"], c["ret"]) for c in self.calls]
        self.assertEqual(seen, [
            (1, CREATE, h, 0, 0, 0), (1, SET_STREAM, h, self.led["stream"], 0, 0),
            (1, SET_MATH, h, 3, 0, 0),  # CUBLAS_TF32_TENSOR_OP_MATH
            (1, SET_WORKSPACE, h, self.led["ws_ptr"], self.led["ws_bytes"], 0), (1, SET_MATH, h, 0, 0, 0),
            (2, LT_CREATE, self.led["lt_handle"], 0, 0, 0), (2, LT_DESTROY, self.led["lt_handle"], 0, 0, 0),
            (1, DESTROY, h, 0, 0, 0)])

    def test_call_ids_are_unique_and_in_order(self):
        ids = [r["call"] for r in self.recs if r["kind"] in ("GEMM", "LIBCALL")]
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), len(ids))

    def test_each_gemm_has_its_kernels(self):
        corr_of_kernels = {k["corr"] for k in of(self.recs, "GPU_KERNEL")}
        for g in self.gemms:
            if g["ret"] != 0:
                continue
            launches = [r for r in of(self.recs, "LAUNCH") if r["call"] == g["call"]]
            self.assertGreaterEqual(len(launches), 1, g)
            self.assertTrue(all(r["lib"] == (2 if g["api"] == 150 else 1) for r in launches), launches)
            self.assertTrue(all(r["corr"] in corr_of_kernels for r in launches), launches)
        # Every library launch belongs to a GEMM.
        gemm_calls = {g["call"] for g in self.gemms}
        self.assertTrue(all(r["call"] in gemm_calls for r in of(self.recs, "LAUNCH") if r["lib"]))

    def test_workspace_allocation_belongs_to_create(self):
        create = [c for c in self.calls if c["api"] == CREATE][0]
        ws = [a for a in of(self.recs, "ALLOC") if a["size"] == WORKSPACE_BYTES]
        self.assertEqual(len(ws), 1, ws)
        self.assertEqual((ws[0]["lib"], ws[0]["call"]), (1, create["call"]))
        # The probe's own allocations are nobody's library call.
        own = [a for a in of(self.recs, "ALLOC") if a["size"] == self.led["ws_bytes"] + (1 << 20)]
        self.assertEqual([(a["lib"], a["call"]) for a in own], [(0, 0)])


if __name__ == "__main__":
    unittest.main()

"""Kernel parameters that are device pointers (LAUNCH.ptrs / ptr_at) and GEMM operand
pointers (GEMM.a/b/c/d/ws), format 1.3, on tests/scenario/kargs/kargs_probe.cu:

  - the sim's cudaFuncGetParamInfo gives the C ABI layout of a kernel with mixed
    parameters (host offsetof, printed by the probe; also pinned here as numbers) and
    cudaErrorInvalidValue past the last one; cuFuncGetParamInfo likewise;
  - every launch path the preload sees a parameter array on (nvcc stub, cudaLaunchKernel,
    cudaLaunchKernelExC, the driver's cuLaunchKernel through CUPTI) records exactly the
    whole, interior and in-struct pointers the probe passed, at the offsets the C ABI gives,
    and none of the 8-byte non-pointers; an `extra` launch records none;
  - an error the program has pending when a kernel is first launched survives the launch;
  - ANATOMIST_KERNEL_ARGS=0 records no words;
  - cublasSgemm_v2 and cublasLtMatmul record the pointers the probe passed."""
import json
import os
import unittest

from common import ANATOMIST, BUILD, PRELOAD, SIM_LIB, clean_env, dump, of, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_kargs_probe")
# The C ABI layout of mixed(float *, int, char, double, S24, const int *, char, S24), S24 =
# {float *, int, double}: what cudaFuncGetParamInfo must answer, as (offset, size).
MIXED = [(0, 8), (8, 4), (12, 1), (16, 8), (24, 24), (48, 8), (56, 1), (64, 24)]
INVALID_VALUE = 1
GEMM_APIS = {"cublasSgemm_v2": 140, "cublasLtMatmul": 150}


def traced(**env):
    trace = os.path.join(tmpdir(), "t.anat")
    r = run([PROBE], env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace, **env))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines(), dump(trace), trace


def numbers(text):
    return [int(x) for x in text.split(",") if x]


def expected_launches(lines):
    """[(how, ptrs, ptr_at)] from the probe's `launch` lines, in launch order."""
    out = []
    for line in lines:
        if line.startswith("launch "):
            _, how, ptrs, at = line.split(" ")
            out.append((how, numbers(ptrs[len("ptrs="):]), numbers(at[len("at="):])))
    return out


def program_launches(recs):
    """The program's own LAUNCH records (not those of the libraries' GEMMs)."""
    return [r for r in of(recs, "LAUNCH") if r["lib"] == 0]


class KernelArgs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PROBE):
            raise unittest.SkipTest("tests/scenario_kargs_probe is not built")
        cls.lines, cls.recs, cls.trace = traced()

    def test_param_info_is_the_c_abi_layout(self):
        layout = [tuple(map(int, l.split()[2:])) for l in self.lines if l.startswith("layout mixed ")]
        info = [tuple(map(int, l.split()[2:])) for l in self.lines if l.startswith("info mixed ")]
        self.assertEqual([(o, s) for _, o, s in layout], MIXED)
        self.assertEqual(info[:-1], [(i, 0, o, s) for i, (o, s) in enumerate(MIXED)])
        self.assertEqual(info[-1][:2], (len(MIXED), INVALID_VALUE))

    def test_driver_param_info(self):
        # args(float *, int, float, const float *, Tagged{long long, float *, int}, long long,
        # double): Tagged is 24 bytes at 24.
        want = [(0, 8), (8, 4), (12, 4), (16, 8), (24, 24), (48, 8), (56, 8)]
        info = [tuple(map(int, l.split()[2:])) for l in self.lines if l.startswith("drvinfo args ")]
        self.assertEqual(info[:-1], [(i, 0, o, s) for i, (o, s) in enumerate(want)])
        self.assertEqual(info[-1][:2], (len(want), INVALID_VALUE))   # CUDA_ERROR_INVALID_VALUE

    def test_launch_words(self):
        want = expected_launches(self.lines)
        got = program_launches(self.recs)
        self.assertEqual(len(got), len(want))
        self.assertEqual([how for how, _, _ in want],
                         ["stub", "runtime", "exc", "driver", "extra", "pending", "later", "many", "huge",
                          "from_table"])
        for (how, ptrs, at), rec in zip(want, got):
            with self.subTest(how=how):
                self.assertEqual(rec["ptrs"], ptrs)
                self.assertEqual(rec["ptr_at"], at)
        whole = want[0][1]
        self.assertEqual(want[0][2], [0, 16, 32])   # whole, interior, Tagged.p (Tagged at 24)
        self.assertEqual(len(set(whole)), 3)
        self.assertEqual(got[3]["via"], 1)           # the driver launch came through CUPTI
        self.assertEqual(len(want[7][1]), 100)       # 100 addresses in one struct, all recorded
        self.assertEqual(len(got[8]["ptrs"]), 512)   # 520: the first 512, the cap

    def test_pointer_table(self):
        # a host-to-device copy whose bytes hold device addresses is followed by a
        # PTR_TABLE with them (format 2.1); the same bytes copied device to device are not
        # read from the host: one table in all
        line = next(l for l in self.lines if l.startswith("table "))
        want = dict(f.split("=") for f in line.split()[1:])
        dst, ptrs, at = int(want["dst"]), numbers(want["ptrs"]), numbers(want["at"])
        tables = of(self.recs, "PTR_TABLE")
        self.assertEqual([(t["dst"], t["bytes"], t["ptrs"], t["ptr_at"], t["more"]) for t in tables],
                         [(dst, 3 * 24, ptrs, at, 0)])
        i = self.recs.index(tables[0])
        self.assertEqual((self.recs[i - 1]["kind"], self.recs[i - 1]["dst"]), ("MEMCPY", dst))

    def test_the_analyzer_reads_the_table(self):
        # the kernel handed the table's address uses what the table points to: the
        # 12345-byte buffer nothing else names is used twice (two table entries name it)
        r = run([ANATOMIST, "report", self.trace, "--json", "--top", "0"], env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        mem = json.loads(r.stdout)["memory"]
        ev = mem["pointer_evidence"]
        self.assertEqual((ev["pointer_tables"], ev["table_launches"], ev["launches_cut"]), (1, 1, 1))
        tabled = [a for a in mem["at_peak_allocations"] if a["bytes"] == 12345]
        self.assertEqual([a["uses"] for a in tabled], [2])

    def test_pending_error_survives(self):
        line = next(l for l in self.lines if l.startswith("pending "))
        set_err, got = (int(w.split("=")[1]) for w in line.split()[1:])
        self.assertNotEqual(set_err, 0)
        self.assertEqual(got, set_err)
        self.assertIn("after 0", self.lines)

    def test_gemm_pointers(self):
        gemms = {r["api"]: r for r in of(self.recs, "GEMM")}
        for line in self.lines:
            if line.startswith("gemm "):
                _, api, *fields = line.split()
                want = {k: int(v) for k, v in (f.split("=") for f in fields)}
                rec = gemms[GEMM_APIS[api]]
                with self.subTest(api=api):
                    self.assertEqual({k: rec[k] for k in want}, want)
                    self.assertTrue(all(want.values()))

    def test_off(self):
        lines, recs, _ = traced(ANATOMIST_KERNEL_ARGS="0")
        got = program_launches(recs)
        self.assertEqual(len(got), len(expected_launches(lines)))
        self.assertTrue(all(r["ptrs"] == [] and r["ptr_at"] == [] for r in got))
        self.assertEqual(of(recs, "PTR_TABLE"), [])


if __name__ == "__main__":
    unittest.main()

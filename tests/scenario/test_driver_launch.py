"""Launches no hook saw (docs/trace-format.md, "Calls no hook saw"): samples/driver_launch
launches kernels through the driver's cuLaunchKernel/cuLaunchKernel_ptsz/cuLaunchKernelEx
(looked up with dlopen + dlsym, as Triton does), through the runtime's own
cudaLaunchKernel (read from the runtime's symbol table, as a statically linked runtime
calls it)
and through <<<...>>>, under `anatomist run --sim`, and keeps a ledger of every launch.

With CUPTI on, each ledger launch must have exactly one LAUNCH record: the hooks' own
(via 0) for <<<...>>>, the CUPTI callback's (via 1) for the other two, with the ledger's
api, grid, block, stream and return code; every GPU_KERNEL must be correlated to exactly
one LAUNCH, name that launch's kernel and last what the sim's cost model says
(docs/sim.md, "Cost model": llround(3000 + threads x 0.02) ns). With ANATOMIST_CUPTI=0
the driver and runtime launches are not recorded at all (the documented blind spot) and
the <<<...>>> ones still are."""
import collections
import json
import math
import os
import unittest

from common import ANATOMIST, clean_env, dims, dump, ledger, of, run, sample, tmpdir

PROGRAM = sample("driver_launch")

# docs/trace-format.md, api numbers: nvcc 13's <<<...>>> stub calls __cudaLaunchKernel.
API = {"<<<>>>": 24, "cudaLaunchKernel": 20, "cuLaunchKernel": 28, "cuLaunchKernel_ptsz": 28,
       "cuLaunchKernelEx": 29}
VIA = {"stub": 0, "runtime": 1, "driver": 1}
# What the CUDA API answers for each launch the sample makes to fail (cuda.h and
# driver_types.h): CUDA_ERROR_INVALID_HANDLE 400, CUDA_ERROR_INVALID_VALUE 1,
# cudaErrorInvalidConfiguration 9.
FAULT_RET = {("driver", "foreign_handle"): 400, ("driver", "host_stub"): 400,
             ("driver", "block_2048"): 1, ("driver", "params_and_extra"): 1,
             ("runtime", "block_2048"): 9}


def kernel_ns(grid, block):
    """The sim's kernel duration, computed the way docs/sim.md states it (C's llround)."""
    threads = math.prod(grid) * math.prod(block)
    return math.floor(3000.0 + threads * 0.02 + 0.5)


def profile(**env):
    """Runs the sample under `anatomist run --sim`; returns (ledger, records, trace)."""
    trace = os.path.join(tmpdir(), "t.anat")
    p = run([ANATOMIST, "run", "--sim", "-q", "-o", trace, "--", PROGRAM, "--errors"],
            env=clean_env(**env))
    assert p.returncode == 0, p.stderr
    return ledger(p.stdout), dump(trace), trace


def cupti_state(recs):
    return [r["value"] for r in recs if r["kind"] == "INFO" and r["key"] == "cupti"][-1]


@unittest.skipUnless(os.path.exists(PROGRAM), "samples/driver_launch is not built")
class DriverLaunch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.led, cls.recs, cls.trace = profile()
        cls.launches = cls.led["launches"]
        cls.names = {r["id"]: r["name"] for r in of(cls.recs, "KERNEL")}
        # One program thread makes every launch, in ledger order.
        cls.api = sorted(of(cls.recs, "LAUNCH"), key=lambda r: r["time"])

    def test_the_sample_bypassed_the_hooks(self):
        self.assertTrue(self.led["bypass"],
                        "the runtime's own cudaLaunchKernel is the interposed one")
        self.assertFalse(self.led["driver_errors_set_last_error"])
        self.assertEqual(cupti_state(self.recs), "on")
        paths = collections.Counter(l["path"] for l in self.launches if not l["fault"])
        self.assertEqual(paths, {"stub": 3, "runtime": 3, "driver": 5})

    def test_failing_launches_got_cudas_codes(self):
        for l in self.launches:
            want = FAULT_RET.get((l["path"], l["fault"]), 0) if l["fault"] else 0
            self.assertEqual(l["ret"], want, l)

    def test_one_launch_record_per_launch(self):
        self.assertEqual(len(self.api), len(self.launches), "a launch recorded twice or not at all")
        self.assertEqual(len({r["corr"] for r in self.api}), len(self.api))
        for l, r in zip(self.launches, self.api):
            with self.subTest(launch=l):
                self.assertEqual((r["api"], r["via"], r["ret"]),
                                 (API[l["api"]], VIA[l["path"]], l["ret"]))
                self.assertEqual((dims(r, "grid"), dims(r, "block")), (l["grid"], l["block"]))
                self.assertEqual(r["stream"], l["stream_handle"])
                self.assertGreater(r["corr"], 0)
                if l["path"] == "driver":
                    self.assertEqual(r["kernel"], 0)  # named by its GPU_KERNEL
                else:
                    self.assertEqual(self.names[r["kernel"]], l["kernel"])

    def test_report_names_driver_launches_by_their_gpu_kernel(self):
        # A cuLaunchKernel LAUNCH has kernel 0; the report takes the name of the GPU_KERNEL
        # with its corr. A failed driver launch ran nothing and stays unnamed.
        want = collections.Counter(
            None if (l["path"] == "driver" and l["ret"] != 0) else l["kernel"]
            for l in self.launches)
        r = run([ANATOMIST, "report", "--json", self.trace], env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        got = collections.Counter()
        for k in json.loads(r.stdout)["kernels"]:
            got[k["name"] if k["id"] else None] += k["count"]
        self.assertEqual(got, want)

    def test_stacks_of_callback_records_start_in_the_program(self):
        # A via-1 LAUNCH is captured inside CUPTI's callback, below libcupti and the
        # runtime or driver; the report leaves CUDA's own frames out, so every launch's
        # stack starts in the sample, as a hooked launch's does. --min-gap 0 lists a gap
        # before every launch that found the GPU idle, with the call that issued it.
        r = run([ANATOMIST, "report", "--json", "--min-gap", "0ns", "--top", "0", self.trace],
                env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        via = {a["corr"]: a["via"] for a in self.api}
        seen = collections.Counter()
        for g in json.loads(r.stdout)["gpu"]["idle_gaps"]:
            ib = g["issued_by"]
            if not ib or ib["api"] is None:
                continue
            seen[via[ib["corr"]]] += 1
            self.assertEqual(ib["stack"][0]["module"], os.path.realpath(PROGRAM), ib)
        self.assertGreater(seen[1], 0, "no gap was issued by a callback-recorded launch")

    def test_every_gpu_kernel_belongs_to_its_launch(self):
        by_corr = {r["corr"]: (l, r) for l, r in zip(self.launches, self.api)}
        gpu = of(self.recs, "GPU_KERNEL")
        self.assertEqual(len(gpu), sum(1 for l in self.launches if l["ret"] == 0))
        seen = collections.Counter(g["corr"] for g in gpu)
        self.assertEqual(set(seen.values()), {1})
        streams = collections.defaultdict(set)
        for g in gpu:
            with self.subTest(gpu=g):
                self.assertIn(g["corr"], by_corr)
                l, r = by_corr[g["corr"]]
                self.assertEqual(l["ret"], 0)
                self.assertEqual(self.names[g["kernel"]], l["kernel"])
                self.assertEqual((dims(g, "grid"), dims(g, "block")), (l["grid"], l["block"]))
                self.assertEqual(g["dur_ns"], kernel_ns(l["grid"], l["block"]))
                self.assertGreaterEqual(g["time"], r["time"])
                streams[l["stream"]].add(g["stream"])
        # The legacy default stream, the created stream and the per-thread stream stay
        # three streams, whichever path launched on them.
        self.assertEqual(sorted(streams), ["created", "default", "per_thread"])
        self.assertTrue(all(len(s) == 1 for s in streams.values()), streams)
        self.assertEqual(len(set.union(*streams.values())), 3, streams)


@unittest.skipUnless(os.path.exists(PROGRAM), "samples/driver_launch is not built")
class WithoutCupti(unittest.TestCase):
    def test_only_hooked_launches_are_recorded(self):
        led, recs, _ = profile(ANATOMIST_CUPTI="0")
        self.assertEqual(cupti_state(recs), "off (ANATOMIST_CUPTI=0)")
        names = {r["id"]: r["name"] for r in of(recs, "KERNEL")}
        got = [(r["api"], r["via"], r["corr"], names[r["kernel"]], dims(r, "grid"),
                dims(r, "block")) for r in sorted(of(recs, "LAUNCH"), key=lambda r: r["time"])]
        want = [(API[l["api"]], 0, 0, l["kernel"], l["grid"], l["block"])
                for l in led["launches"] if l["path"] == "stub"]
        self.assertEqual(len(want), 3)
        self.assertEqual(got, want)
        self.assertEqual(of(recs, "GPU_KERNEL"), [])


if __name__ == "__main__":
    unittest.main()

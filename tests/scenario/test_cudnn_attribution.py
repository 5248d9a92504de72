"""Allocations made outside any hooked library call are attributed by their caller's module
(docs/trace-format.md, "Library calls": "An allocation made outside a recorded library
call by code that lies in a library's module has that `lib` and `call` 0").

tests/scenario/cudnn_probe.c allocates with cudaMalloc itself, then calls a library named
like cuDNN (fake_cudnn.c, libcudnn_fake.so.9, which has no hooks) that allocates with
cudaMalloc through the shared runtime and with cuMemAlloc_v2 through cuGetProcAddress_v2,
then calls, itself, the cudaMalloc/cuMemAlloc_v2 pointers that library resolved, and frees.
Each call prints `WHO alloc|free api=N ptr=P size=S ret=R`, WHO being the module whose code
made the call. Run under `anatomist run --sim`, every ALLOC and FREE must carry lib 4
(cuDNN) when the library made the call and lib 0 when the program did — whoever resolved
the pointer — with call 0 (no library call was recorded), the same with stacks off (the
caller is not taken from the stack), and `report --json` must split the peak and the end
by library as the probe's own ledger does."""
import os
import unittest

from common import ANATOMIST, BUILD, SIM_LIB, clean_env, dump, of, report_json, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_cudnn_probe")
FAKE_DIR = os.path.join(BUILD, "tests", "cudnn")
HAVE_SIM = os.path.exists(os.path.join(SIM_LIB, "libcudart.so.13"))

LIB_NONE, LIB_CUDNN = 0, 4  # docs/trace-format.md, `lib`
LIB_OF = {"probe": LIB_NONE, "cudnn": LIB_CUDNN}
LIB_NAMES = {LIB_NONE: "none", LIB_CUDNN: "cuDNN"}
MIB = 1 << 20


def calls(stdout):
    """The probe's and the library's lines, in call order: dicts with who, op, api, ptr, size, ret."""
    out = []
    for line in stdout.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] not in LIB_OF or words[1] not in ("alloc", "free"):
            continue
        c = {"who": words[0], "op": words[1]}
        c.update({k: int(v) for k, v in (w.split("=") for w in words[2:])})
        out.append(c)
    return out


def live_by_lib(ledger):
    """Device bytes live by library at the peak of the total and at the end, replayed from
    the ledger alone: ({lib: bytes} at the first moment of the highest total, {lib: bytes})."""
    live, owner = {}, {}
    best, at_peak = -1, {}
    for c in ledger:
        lib = LIB_OF[c["who"]]
        if c["op"] == "alloc":
            owner[c["ptr"]] = (lib, c["size"])
            live[lib] = live.get(lib, 0) + c["size"]
        else:
            l, size = owner.pop(c["ptr"])
            live[l] -= size
        if sum(live.values()) > best:
            best, at_peak = sum(live.values()), dict(live)
    return at_peak, live


@unittest.skipUnless(os.path.exists(PROBE) and HAVE_SIM, "the probe or the sim is not built")
class CudnnAttribution(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        env = clean_env(LD_LIBRARY_PATH=FAKE_DIR)
        cls.trace = os.path.join(tmpdir(), "t.anat")
        cls.traced = run([ANATOMIST, "run", "--sim", "-q", "-o", cls.trace, "--", PROBE], env=env)
        cls.nostack_trace = os.path.join(tmpdir(), "t.anat")
        cls.nostack = run([ANATOMIST, "run", "--sim", "--no-stacks", "-q", "-o", cls.nostack_trace, "--", PROBE],
                          env=env)
        cls.plain = run([PROBE], env=clean_env(LD_LIBRARY_PATH=SIM_LIB + ":" + FAKE_DIR))
        for p in (cls.traced, cls.nostack, cls.plain):
            assert p.returncode == 0, p.stdout + p.stderr
        cls.ledger = calls(cls.traced.stdout)

    def records(self, trace):
        return of(dump(trace), "ALLOC", "FREE")

    def expected(self, ledger):
        """The ALLOC/FREE records the ledger's calls must give, in the same order."""
        out = []
        for c in ledger:
            r = {"kind": c["op"].upper(), "api": c["api"], "ret": c["ret"], "ptr": c["ptr"],
                 "lib": LIB_OF[c["who"]], "call": 0}
            if c["op"] == "alloc":
                r["size"] = c["size"]
            out.append(r)
        return out

    def view(self, recs, like):
        return [{k: r.get(k) for k in e} for r, e in zip(recs, like)]

    def test_the_probe_ran_every_case(self):
        # Without the preload the program does the same calls, with the same results.
        self.assertEqual([(c["who"], c["op"], c["api"], c["size"], c["ret"]) for c in self.ledger],
                         [("probe", "alloc", 1, MIB, 0), ("cudnn", "alloc", 1, 3 * MIB, 0),
                          ("cudnn", "alloc", 50, 5 * MIB, 0), ("probe", "alloc", 1, 7 * MIB, 0),
                          ("probe", "alloc", 50, 11 * MIB, 0), ("probe", "free", 10, 0, 0),
                          ("probe", "free", 60, 0, 0), ("cudnn", "free", 60, 0, 0)])
        self.assertEqual([{k: v for k, v in c.items() if k != "ptr"} for c in calls(self.plain.stdout)],
                         [{k: v for k, v in c.items() if k != "ptr"} for c in self.ledger])

    def test_each_record_has_the_library_of_its_caller(self):
        recs = self.records(self.trace)
        want = self.expected(self.ledger)
        self.assertEqual(len(recs), len(want), recs)
        self.assertEqual(self.view(recs, want), want)

    def test_attribution_does_not_need_stacks(self):
        recs = self.records(self.nostack_trace)
        want = self.expected(calls(self.nostack.stdout))
        self.assertEqual(len(recs), len(want), recs)
        self.assertEqual(self.view(recs, want), want)

    def test_no_library_call_was_recorded(self):
        self.assertEqual(of(dump(self.trace), "LIBCALL", "GEMM", "COLL", "COMM"), [])

    def test_report_splits_peak_and_end_by_library(self):
        at_peak, at_end = live_by_lib(self.ledger)
        # Every allocation is live at the peak; the library's 3 MiB and the probe's 1 MiB at the end.
        self.assertEqual(at_peak, {LIB_NONE: 19 * MIB, LIB_CUDNN: 8 * MIB})
        self.assertEqual(at_end, {LIB_NONE: MIB, LIB_CUDNN: 3 * MIB})
        mem = report_json(self.trace)["memory"]
        self.assertEqual(mem["peak_bytes"], sum(at_peak.values()))
        want = {"none": 0, "cuBLAS": 0, "cuBLASLt": 0, "NCCL": 0, "cuDNN": 0}
        self.assertEqual(mem["by_library"], {**want, **{LIB_NAMES[l]: b for l, b in at_peak.items()}})
        self.assertEqual(mem["by_library_at_end"], {**want, **{LIB_NAMES[l]: b for l, b in at_end.items()}})


if __name__ == "__main__":
    unittest.main()

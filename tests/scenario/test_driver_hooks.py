"""Driver memory is seen however a program reaches the driver: linked against libcuda, or
through dlsym of libcuda, cuGetProcAddress_v2 or cudaGetDriverEntryPointByVersion. Each
driver call of the program gives exactly one record, with the pointer, handle, address and
size the program printed; a cudaMalloc, which the runtime turns into a driver call, gives
one record, not two; return codes and errno are what they are without the preload; and with
ANATOMIST_DRIVER_HOOKS=0 no driver record appears. On the simulated device (sim/driver)."""
import os
import unittest

from common import BUILD, PRELOAD, SIM_LIB, clean_env, dump, ledger, of, run, sample, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_drv_probe")
PROBE_LINKED = os.path.join(BUILD, "tests", "scenario_drv_probe_linked")
MIB = 1 << 20

# api numbers (docs/trace-format.md)
CUDA_MALLOC, CUDA_FREE = 1, 10
CU_MEM_ALLOC, CU_MEM_ALLOC_ASYNC, CU_MEM_CREATE = 50, 51, 57
CU_MEM_FREE, CU_MEM_FREE_ASYNC, CU_MEM_RELEASE = 60, 61, 63
RESERVE, ADDRESS_FREE, MAP, UNMAP, SET_ACCESS = 70, 71, 72, 73, 74
CUDA_ERROR_OUT_OF_MEMORY = 2
# The functions the probe resolves that the preload wraps; cuInit it does not.
WRAPPED = ["cuMemAlloc_v2", "cuMemFree_v2", "cuMemAddressReserve", "cuMemAddressFree",
           "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess"]


def parse(stdout):
    """The probe's lines: {op: {field: value}} (one line per op) and {module name: file}."""
    calls, modules = {}, {}
    for line in stdout.splitlines():
        words = line.split()
        if words[0] == "module":
            modules[words[1]] = words[2]
        elif words[0] == "got":  # what, module, symbol
            modules[words[1]] = (words[2], words[3])
        else:
            calls[words[0]] = {k: int(v) for k, v in (w.split("=") for w in words[1:])}
    return calls, modules


def records(trace):
    """The trace's API records; none when no trace was started (no call was recorded)."""
    if not os.path.exists(trace):
        return []
    return of(dump(trace), "ALLOC", "FREE", "VMM", "LAUNCH", "MEMINFO")


def program_view(calls):
    """What the program saw, without the addresses (which differ between runs)."""
    return {op: {k: v for k, v in f.items() if k in ("size", "ret", "errno")} for op, f in calls.items()}


class DriverHooks(unittest.TestCase):
    def traced(self, cmd, **env):
        trace = os.path.join(tmpdir(), "t.anat")
        r = run(cmd, env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD,
                                   ANATOMIST_OUTPUT=trace, **env))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return parse(r.stdout), records(trace)

    def plain(self, cmd):
        r = run(cmd, env=clean_env(LD_LIBRARY_PATH=SIM_LIB))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return parse(r.stdout)

    def expected(self, c):
        """The records the probe's driver calls must give, from what it printed."""
        return [
            {"kind": "ALLOC", "api": CU_MEM_ALLOC, "ret": 0, "ptr": c["alloc"]["ptr"], "size": MIB},
            {"kind": "FREE", "api": CU_MEM_FREE, "ret": 0, "ptr": c["alloc"]["ptr"]},
            {"kind": "ALLOC", "api": CU_MEM_ALLOC, "ret": CUDA_ERROR_OUT_OF_MEMORY, "ptr": 0,
             "size": 1 << 50},
            {"kind": "MEMINFO", "reason": 1},
            {"kind": "VMM", "api": RESERVE, "ret": 0, "va": c["reserve"]["va"], "size": 64 * MIB,
             "handle": 0},
            {"kind": "ALLOC", "api": CU_MEM_CREATE, "ret": 0, "ptr": c["create"]["handle"],
             "size": 2 * MIB},
            {"kind": "VMM", "api": MAP, "ret": 0, "va": c["map"]["va"], "size": 2 * MIB,
             "handle": c["create"]["handle"], "offset": 0},
            {"kind": "VMM", "api": SET_ACCESS, "ret": 0, "va": c["set_access"]["va"], "size": 2 * MIB,
             "flags": 3},  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            {"kind": "VMM", "api": UNMAP, "ret": 0, "va": c["unmap"]["va"], "size": 2 * MIB},
            {"kind": "FREE", "api": CU_MEM_RELEASE, "ret": 0, "ptr": c["release"]["handle"]},
            {"kind": "VMM", "api": ADDRESS_FREE, "ret": 0, "va": c["address_free"]["va"],
             "size": 64 * MIB},
        ]

    def check_mode(self, exe, mode):
        plain_calls, plain_modules = self.plain([exe, mode])
        (calls, modules), recs = self.traced([exe, mode])
        # The program sees the same results and errno (set to 4242 before every call).
        self.assertEqual(program_view(calls), program_view(plain_calls))
        self.assertTrue(all(f["errno"] == 4242 for f in calls.values()), calls)
        self.assertEqual(calls["failed_alloc"]["ret"], CUDA_ERROR_OUT_OF_MEMORY)
        # It was handed wrappers for exactly the wrapped functions.
        self.assertEqual(set(plain_modules.values()), {"libcuda.so.1"})
        for name, module in modules.items():
            self.assertEqual(module, "libanatomist.so" if name in WRAPPED else "libcuda.so.1", name)
        # One record per call, with the program's own numbers, and nothing else.
        want = self.expected(calls)
        self.assertEqual(len(recs), len(want), recs)
        for got, exp in zip(recs, want):
            self.assertEqual({k: got[k] for k in exp}, exp)
            if got["kind"] != "MEMINFO":
                self.assertEqual(got["via"], 0)

    def test_dlsym(self):
        self.check_mode(PROBE, "dlsym")

    def test_cu_get_proc_address(self):
        self.check_mode(PROBE, "getproc")

    def test_cuda_get_driver_entry_point_by_version(self):
        self.check_mode(PROBE, "entrypoint")

    def test_linked_against_libcuda(self):
        self.check_mode(PROBE_LINKED, "link")

    def test_cuda_malloc_is_one_record(self):
        (calls, _), recs = self.traced([PROBE, "runtime"])
        self.assertEqual(calls["cuda_malloc"]["errno"], 4242)
        ptr = calls["cuda_malloc"]["ptr"]
        self.assertEqual([(r["kind"], r["api"], r["ptr"]) for r in recs],
                         [("ALLOC", CUDA_MALLOC, ptr), ("FREE", CUDA_FREE, ptr)])
        self.assertEqual(recs[0]["size"], 3 * MIB)

    def test_runtime_reaches_the_driver_through_the_preload(self):
        """What makes the previous test meaningful: the runtime's own dlsym (of
        cuGetProcAddress_v2, through which it gets cuMemAlloc_v2) is the preload's."""
        r = run([PROBE, "runtime"], env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD,
                                                  ANATOMIST_OUTPUT=os.path.join(tmpdir(), "t.anat"),
                                                  LD_DEBUG="bindings"))
        self.assertRegex(r.stderr, r"binding file \S*libcudart\.so\.13 \[0\] to \S*libanatomist\.so "
                                   r"\[0\]: normal symbol `dlsym'")

    def test_cu_get_proc_address_flavours(self):
        """Per version and stream flag the wrapper handed out is the one of the function the
        driver picked (same symbol name); functions not wrapped come from the driver."""
        plain_calls, plain_got = self.plain([PROBE, "flavours"])
        (calls, got), recs = self.traced([PROBE, "flavours"])
        self.assertEqual(plain_got["alloc_async_ptds"], ("libcuda.so.1", "cuMemAllocAsync_ptsz"))
        self.assertEqual(plain_got["get_proc_11030"], ("libcuda.so.1", "cuGetProcAddress"))
        for what, (module, symbol) in plain_got.items():
            self.assertEqual(module, "libcuda.so.1")
            wrapped = what not in ("mem_get_info", "init")
            self.assertEqual(got[what], ("libanatomist.so" if wrapped else module, symbol), what)
        self.assertEqual(program_view(calls), program_view(plain_calls))
        ptr = calls["alloc_async"]["ptr"]
        self.assertEqual([(r["kind"], r["api"], r["ptr"], r["ret"]) for r in recs],
                         [("ALLOC", CU_MEM_ALLOC_ASYNC, ptr, 0), ("FREE", CU_MEM_FREE_ASYNC, ptr, 0)])
        self.assertEqual(recs[0]["size"], 5 * MIB)

    def test_driver_hooks_off(self):
        for exe, mode in ((PROBE, "dlsym"), (PROBE, "getproc"), (PROBE_LINKED, "link")):
            with self.subTest(mode=mode):
                plain_calls, _ = self.plain([exe, mode])
                (calls, modules), recs = self.traced([exe, mode], ANATOMIST_DRIVER_HOOKS="0")
                self.assertEqual(program_view(calls), program_view(plain_calls))
                if mode != "link":
                    self.assertEqual(set(modules.values()), {"libcuda.so.1"})
                self.assertEqual([r for r in recs if r["kind"] in ("ALLOC", "FREE", "VMM")], [])

    def test_vmm_alloc_sample(self):
        """samples/vmm_alloc (PyTorch's expandable-segments pattern) against its own ledger."""
        if not os.path.exists(sample("vmm_alloc")):
            self.skipTest("samples/vmm_alloc is not built")
        for lookup in ("dlsym", "getproc", "entrypoint"):
            with self.subTest(lookup=lookup):
                trace = os.path.join(tmpdir(), "t.anat")
                r = run([sample("vmm_alloc"), "--lookup", lookup],
                        env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace))
                self.assertEqual(r.returncode, 0, r.stderr)
                led = ledger(r.stdout)
                calls = led["driver_calls"]
                recs = records(trace)

                def of(kind, api):
                    return [x for x in recs if x["kind"] == kind and x["api"] == api]
                self.assertEqual(len(of("ALLOC", CU_MEM_CREATE)), calls["cuMemCreate"])
                self.assertEqual(sum(x["size"] for x in of("ALLOC", CU_MEM_CREATE)),
                                 led["physical_created_bytes"])
                self.assertEqual(sorted(x["ptr"] for x in of("FREE", CU_MEM_RELEASE)),
                                 sorted(x["ptr"] for x in of("ALLOC", CU_MEM_CREATE)))
                self.assertEqual([x["size"] for x in of("ALLOC", CU_MEM_ALLOC)], [led["cuMemAlloc_bytes"]])
                self.assertEqual(len(of("FREE", CU_MEM_FREE)), calls["cuMemFree_v2"])
                self.assertEqual([x["size"] for x in of("ALLOC", CUDA_MALLOC)], [led["cudaMalloc_bytes"]])
                self.assertEqual([x["size"] for x in of("VMM", RESERVE)], [led["reserved_bytes"]])
                for api, name in ((MAP, "cuMemMap"), (UNMAP, "cuMemUnmap"), (SET_ACCESS, "cuMemSetAccess"),
                                  (ADDRESS_FREE, "cuMemAddressFree")):
                    self.assertEqual(len(of("VMM", api)), calls[name], name)
                allocs = [x for x in recs if x["kind"] == "ALLOC"]
                self.assertEqual(len(allocs), calls["cuMemCreate"] + calls["cuMemAlloc_v2"] + 1)


if __name__ == "__main__":
    unittest.main()

"""The preload exports dlsym and dlvsym (to hand out wrappers of driver functions); lookups
relative to their caller must still be relative to their caller: dlsym(RTLD_NEXT) and
dlvsym(RTLD_NEXT) from a library find the definition after that library, and
dlsym(RTLD_DEFAULT) from a library loaded RTLD_LOCAL searches that library's own scope.
Handles and dlerror() behave as without the preload.

A runtime function looked up on the runtime's own handle (ctypes: dlopen of libcudart in a
local scope, dlsym of each function) is the preload's hook of that name, so its calls are
recorded under their runtime API, the process's first call included (RuntimeByName)."""
import json
import os
import sys
import unittest

from common import BUILD, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, clean_env, dump, of, run, tmpdir

PROBE = os.path.join(BUILD, "tests", "scenario_dl_probe")
LOCAL_C = os.path.join(BUILD, "tests", "dl", "libana_dl_local_c.so")
LIBDIR = os.path.join(BUILD, "tests", "dl")

# What glibc answers (checked against the plain run too): the next definition after
# next_a is next_b's ('b'); local_c's scope holds local_d ('d').
EXPECTED = {"next": "b", "vnext": "b", "default": "d", "handle": "d", "missing": "1"}


def facts(stdout):
    return dict(line.split(" ", 1) for line in stdout.splitlines())


class DlLookups(unittest.TestCase):
    def probe(self, **env):
        r = run([PROBE, LOCAL_C], env=clean_env(LD_LIBRARY_PATH=LIBDIR, **env))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return facts(r.stdout)

    def test_plain_run_is_what_glibc_answers(self):
        self.assertEqual(self.probe(), EXPECTED)

    def test_preloaded_run_answers_the_same(self):
        trace = os.path.join(tmpdir(), "t.anat")
        self.assertEqual(self.probe(LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace), EXPECTED)

    def test_preloaded_without_driver_hooks(self):
        trace = os.path.join(tmpdir(), "t.anat")
        self.assertEqual(self.probe(LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                                    ANATOMIST_DRIVER_HOOKS="0"), EXPECTED)


WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py", "ctypes_worker.py")
# docs/trace-format.md, api numbers
CUDA_MALLOC, CUDA_FREE = 1, 10


def worker(trace=None, *args, **env):
    """Runs py/ctypes_worker.py on the simulated device, under the preload when trace is
    given; returns its `worker` line."""
    more = dict(LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace) if trace else {}
    if SANITIZER_RUNTIME:
        more["ASAN_OPTIONS"] = "detect_leaks=0"  # the interpreter's own, not ours
    r = run([sys.executable, WORKER, *args], env=clean_env(LD_LIBRARY_PATH=SIM_LIB, **more, **env))
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("worker ")]
    assert line, r.stdout + r.stderr
    return json.loads(line[0][len("worker "):])


class RuntimeByName(unittest.TestCase):
    def check(self, **env):
        trace = os.path.join(tmpdir(), "t.anat")
        w = worker(trace, "--fail", "5000", "4", **env)
        plain = worker(None, "--fail", "5000", "4")
        # The program sees what it sees without the preload.
        self.assertEqual(w["ret"], plain["ret"])
        self.assertEqual(w["ret"], [0, 0, 0, 0, 2])  # cudaErrorMemoryAllocation for 1 PiB
        self.assertEqual((w["dlsym_found"], w["dlerror"]), (True, None))
        self.assertEqual(plain["modules"], {"cudaMalloc": "libcudart.so.13",
                                            "cudaGetDeviceCount": "libcudart.so.13"})
        # The hook where the preload has one; any other function as the runtime's own.
        self.assertEqual(w["modules"], {"cudaMalloc": "libanatomist.so",
                                        "cudaGetDeviceCount": "libcudart.so.13"})
        recs = dump(trace)
        allocs = of(recs, "ALLOC")
        self.assertEqual([(r["api"], r["size"], r["ret"] != 0) for r in allocs],
                         [(CUDA_MALLOC, s, s == 1 << 50) for s in w["sizes"]],
                         "one cudaMalloc record per call, the first one included")
        self.assertEqual([r["via"] for r in allocs], [0] * 5, "recorded by the hook")
        frees = of(recs, "FREE")
        self.assertEqual([r["api"] for r in frees], [CUDA_FREE] * 4)
        self.assertEqual(sorted(r["ptr"] for r in frees),
                         sorted(r["ptr"] for r in allocs if r["ret"] == 0))

    def test_ctypes_calls_are_runtime_calls(self):
        self.check()

    def test_without_cupti(self):
        self.check(ANATOMIST_CUPTI="0")


if __name__ == "__main__":
    unittest.main()

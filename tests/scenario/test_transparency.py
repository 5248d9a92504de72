"""The traced program must not notice the preload: identical stdout, stderr and exit code,
errno and CUDA's last error, glibc's backtrace() — on the simulated device and against
NVIDIA's real libcudart (which, without a driver, fails every call)."""
import os
import unittest

from common import (BUILD, NVIDIA_LIB, PRELOAD, SANITIZER_RUNTIME, SIM_LIB, clean_env, info_json,
                    run, sample, tmpdir)

PROBE = os.path.join(BUILD, "tests", "scenario_probe")
# Where backtrace() comes from with or without the preload: glibc, or in a sanitizer build
# the AddressSanitizer runtime, which intercepts it.
BACKTRACE = os.path.basename(SANITIZER_RUNTIME) if SANITIZER_RUNTIME else "libc.so.6"


class Transparency(unittest.TestCase):
    def compare(self, cmd, libdir):
        plain = run(cmd, env=clean_env(LD_LIBRARY_PATH=libdir))
        trace = os.path.join(tmpdir(), "t.anat")
        traced = run(cmd, env=clean_env(LD_LIBRARY_PATH=libdir, LD_PRELOAD=PRELOAD,
                                        ANATOMIST_OUTPUT=trace))
        self.assertEqual(traced.stdout, plain.stdout)
        # Without a GPU driver, NVIDIA's CUPTI cannot start: the preload says so in one line
        # and changes nothing else.
        warn = "anatomist: GPU activity is not recorded (CUPTI unavailable"
        lines = traced.stderr.splitlines(True)
        kept = [l for l in lines if not l.startswith(warn)]
        self.assertLessEqual(len(lines) - len(kept), 1)
        self.assertEqual("".join(kept), plain.stderr)
        self.assertEqual(traced.returncode, plain.returncode)
        self.assertTrue(os.path.exists(trace), "the traced run wrote a trace")
        self.assertEqual(info_json(trace)["ended"], "exit")
        return plain

    def test_train_mlp_on_sim(self):
        p = self.compare([sample("train_mlp"), "--steps", "2"], SIM_LIB)
        self.assertEqual(p.returncode, 0)

    def test_api_tour_on_sim(self):
        p = self.compare([sample("api_tour")], SIM_LIB)
        self.assertGreater(len(p.stdout.splitlines()), 50)

    def test_api_tour_on_nvidia_runtime(self):
        p = self.compare([sample("api_tour")], NVIDIA_LIB)
        # Without a driver every call fails; the codes must still be NVIDIA's own.
        codes = [l.rsplit(" ", 1)[-1] for l in p.stdout.splitlines() if " -> " in l]
        self.assertGreater(len(codes), 50)
        self.assertIn("35", codes)

    def test_train_mlp_on_nvidia_runtime(self):
        p = self.compare([sample("train_mlp")], NVIDIA_LIB)
        self.assertEqual(p.returncode, 1)

    def test_probe_on_sim(self):
        p = self.compare([PROBE], SIM_LIB)
        self.assertIn("errno 4242", p.stdout)
        self.assertIn("backtrace from " + BACKTRACE, p.stdout)

    def test_probe_on_nvidia_runtime(self):
        p = self.compare([PROBE], NVIDIA_LIB)
        self.assertIn("backtrace from " + BACKTRACE, p.stdout)


if __name__ == "__main__":
    unittest.main()

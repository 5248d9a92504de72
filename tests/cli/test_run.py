"""`anatomist run`: the environment the program gets, exit statuses, signals, messages.

The profiler library is replaced by a harmless stand-in (a small system library copied to
<prefix>/lib/libanatomist.so next to a copy of the binary in <prefix>/bin), so these
tests check the launcher alone; tests/scenario runs the real preload."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import ANATOMIST, CliTest, main, run  # noqa: E402

STAND_INS = ["/usr/lib/x86_64-linux-gnu/libdl.so.2", "/lib/x86_64-linux-gnu/libdl.so.2",
             "/usr/lib64/libdl.so.2", "/usr/lib/x86_64-linux-gnu/libzstd.so.1"]
STAND_IN = next((p for p in STAND_INS if os.path.exists(p)), None)
# A sanitizer build preloads AddressSanitizer's runtime ahead of the profiler
# (cmake/AnaSanitize.cmake).
RUNTIME = os.environ.get("ANA_SANITIZER_RUNTIME", "")
FIRST = RUNTIME + ":" if RUNTIME else ""

SHOW_ENV = ('for v in LD_PRELOAD LD_LIBRARY_PATH ANATOMIST_OUTPUT ANATOMIST_ROOT_PID '
            'ANATOMIST_SIM_MEMORY ANATOMIST_STACKS ANATOMIST_STACK_DEPTH ANATOMIST_FLUSH_MS '
            'ANATOMIST_CUPTI PYTORCH_CUDA_ALLOC_CONF; '
            'do eval "echo $v=\\${$v-unset}"; done; echo PID=$$')


class RunTest(CliTest):
    def setUp(self):
        super().setUp()
        if STAND_IN is None:
            self.skipTest("no stand-in shared library found")
        self.prefix = self.path("inst")
        for d in ("bin", "lib", "sim"):
            os.makedirs(os.path.join(self.prefix, d))
        self.exe = os.path.join(self.prefix, "bin", "anatomist")
        shutil.copy(ANATOMIST, self.exe)
        self.lib = os.path.join(self.prefix, "lib", "libanatomist.so")
        shutil.copy(STAND_IN, self.lib)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("ANATOMIST_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}

    def run_env(self, *opts, env=None):
        p = run([self.exe, "run", *opts, "--", "sh", "-c", SHOW_ENV], env=env or self.env,
                cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        return dict(line.split("=", 1) for line in p.stdout.splitlines()), p


class Environment(RunTest):
    def test_defaults(self):
        env, p = self.run_env("-q")
        self.assertEqual(env["LD_PRELOAD"], FIRST + os.path.realpath(self.lib))
        self.assertEqual(env["LD_LIBRARY_PATH"], "unset")
        # resolved against the directory run was started in (the program may chdir)
        self.assertEqual(env["ANATOMIST_OUTPUT"], os.path.join(os.path.realpath(self.tmp), "anatomist-%p.anat"))
        self.assertEqual(env["ANATOMIST_ROOT_PID"], env["PID"])
        for v in ("ANATOMIST_SIM_MEMORY", "ANATOMIST_STACKS", "ANATOMIST_STACK_DEPTH",
                  "ANATOMIST_FLUSH_MS", "ANATOMIST_CUPTI"):
            self.assertEqual(env[v], "unset", v)
        self.assertEqual(p.stderr, "")

    def test_options(self):
        # (ASAN_OPTIONS: the user's LD_PRELOAD also reaches a sanitizer build of anatomist.)
        user = dict(self.env, LD_PRELOAD=STAND_IN, LD_LIBRARY_PATH="/opt/x",
                    ASAN_OPTIONS="verify_asan_link_order=0")
        env, _ = self.run_env("-q", "--sim-memory", "16GiB", "--no-stacks", "--stack-depth", "32",
                              "--flush-ms", "50", "--no-cupti", "-o", "t-%h-%p.anat", env=user)
        self.assertEqual(env["LD_PRELOAD"], FIRST + os.path.realpath(self.lib) + ":" + STAND_IN)
        self.assertEqual(env["LD_LIBRARY_PATH"],
                         os.path.realpath(os.path.join(self.prefix, "sim")) + ":/opt/x")
        self.assertEqual(env["ANATOMIST_SIM_MEMORY"], str(16 << 30))
        self.assertEqual(env["ANATOMIST_STACKS"], "0")
        self.assertEqual(env["ANATOMIST_STACK_DEPTH"], "32")
        self.assertEqual(env["ANATOMIST_FLUSH_MS"], "50")
        self.assertEqual(env["ANATOMIST_CUPTI"], "0")
        self.assertEqual(env["ANATOMIST_OUTPUT"], os.path.join(os.path.realpath(self.tmp), "t-%h-%p.anat"))

    def test_torch_per_tensor(self):
        env, p = self.run_env("--torch-per-tensor")
        self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"], "backend:cudaMallocAsync")
        self.assertIn("PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync", p.stderr)
        # the user's other settings stay; a backend of theirs is replaced
        user = dict(self.env, PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:128, backend:native,"
                                                      "garbage_collection_threshold:0.6")
        env, p = self.run_env("-q", "--torch-per-tensor", env=user)
        self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"],
                         "max_split_size_mb:128,garbage_collection_threshold:0.6,"
                         "backend:cudaMallocAsync")
        self.assertEqual(p.stderr, "")
        env, _ = self.run_env("-q", env=user)  # without the option: untouched
        self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"], user["PYTORCH_CUDA_ALLOC_CONF"])

    def test_output_from_the_environment(self):
        here = os.path.realpath(self.tmp)
        env, _ = self.run_env("-q", env=dict(self.env, ANATOMIST_OUTPUT="mine-%p.anat"))
        self.assertEqual(env["ANATOMIST_OUTPUT"], os.path.join(here, "mine-%p.anat"))
        env, _ = self.run_env("-q", "--output", "opt.anat",
                              env=dict(self.env, ANATOMIST_OUTPUT="mine-%p.anat"))
        self.assertEqual(env["ANATOMIST_OUTPUT"], os.path.join(here, "opt.anat"))
        absolute = os.path.join(self.path("inst"), "abs-%p.anat")
        env, _ = self.run_env("-q", "--output", absolute)
        self.assertEqual(env["ANATOMIST_OUTPUT"], absolute)

    def test_program_without_double_dash(self):
        p = run([self.exe, "run", "-q", "sh", "-c", "echo $0 $1", "-q", "x"], env=self.env)
        self.assertEqual((p.returncode, p.stdout), (0, "-q x\n"), p.stderr)

    def test_missing_sim(self):
        os.rmdir(os.path.join(self.prefix, "sim"))
        p = run([self.exe, "run", "--sim", "--", "true"], env=self.env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("simulated CUDA libraries", p.stderr)


class Statuses(RunTest):
    def test_exit_status_is_the_programs(self):
        for code in (0, 1, 3, 77):
            p = run([self.exe, "run", "-q", "--", "sh", "-c", f"exit {code}"], env=self.env)
            self.assertEqual(p.returncode, code)

    def test_killed_by_a_signal(self):
        p = run([self.exe, "run", "-q", "--", "sh", "-c", "kill -KILL $$"], env=self.env)
        self.assertEqual(p.returncode, 128 + signal.SIGKILL)

    def test_program_not_found(self):
        p = run([self.exe, "run", "--", self.path("no-such-program")], env=self.env)
        self.assertEqual(p.returncode, 127)
        self.assertIn("anatomist: cannot run " + self.path("no-such-program"), p.stderr)
        self.assertIn("No such file", p.stderr)
        self.assertNotIn("trace", p.stderr)

    def test_program_not_executable(self):
        script = self.path("script.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)
        p = run([self.exe, "run", "--", script], env=self.env)
        self.assertEqual(p.returncode, 126)
        self.assertIn("Permission denied", p.stderr)

    def test_missing_profiler_library(self):
        os.unlink(self.lib)
        p = run([self.exe, "run", "--", "true"], env=self.env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("libanatomist.so is missing", p.stderr)
        self.assertIn("scripts/build", p.stderr)

    def test_output_directory_missing(self):
        marker = self.path("ran")
        p = run([self.exe, "run", "-o", self.path("no/such/dir/t.anat"), "--", "touch", marker],
                env=self.env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot write the trace into", p.stderr)
        self.assertIn("no/such/dir", p.stderr)
        self.assertFalse(os.path.exists(marker), "the program is not started")


class Messages(RunTest):
    def test_no_trace_of_this_run(self):
        # A trace of the run says so in its INFO records (tests/scenario/test_process_tree.py
        # checks the traces a real run lists); a file at the name that only begins like one
        # is not taken for it, and any other file is said not to be a trace.
        p = run([self.exe, "run", "-o", "out-%p.anat", "--", "sh", "-c", "printf ANATRACE > out-$$.anat; echo $$"],
                env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, f"anatomist: no trace was written (out-{p.stdout.strip()}.anat is "
                                   "not a trace of this run)\n")
        p = run([self.exe, "run", "-o", "out-%p.anat", "--", "sh", "-c", "touch out-$$.anat; echo $$"],
                env=self.env, cwd=self.tmp)
        self.assertEqual(p.stderr, f"anatomist: no trace was written to out-{p.stdout.strip()}.anat "
                                   "(it is not a trace)\n")

    def test_no_trace(self):
        p = run([self.exe, "run", "--", "true"], env=self.env, cwd=self.tmp)
        self.assertEqual(p.stderr,
                         "anatomist: no trace was written (the program made no CUDA call?)\n")

    def test_quiet(self):
        p = run([self.exe, "run", "-q", "--", "true"], env=self.env, cwd=self.tmp)
        self.assertEqual(p.stderr, "")


class Signals(RunTest):
    def start(self, script):
        return subprocess.Popen([self.exe, "run", "-q", "--", "sh", "-c", script], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_sigint_is_left_to_the_program(self):
        p = self.start("trap '' INT; echo ready; sleep 0.5; exit 4")
        self.assertEqual(p.stdout.readline(), "ready\n")
        p.send_signal(signal.SIGINT)  # to anatomist alone: it must wait on
        self.assertEqual(p.wait(timeout=10), 4)
        p.stdout.close()
        p.stderr.close()

    def test_sigterm_is_forwarded(self):
        p = self.start("echo ready; exec sleep 30")
        self.assertEqual(p.stdout.readline(), "ready\n")
        time.sleep(0.1)  # let the shell exec sleep
        started = time.monotonic()
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 128 + signal.SIGTERM)
        self.assertLess(time.monotonic() - started, 5)
        p.stdout.close()
        p.stderr.close()


if __name__ == "__main__":
    main()

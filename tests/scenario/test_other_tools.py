"""Other tools in the same process as the preload (docs/reliability.md): a malloc
replacement in LD_PRELOAD before or after it, a second tool that is CUPTI's subscriber
before the profiler's session starts, and valgrind's memcheck.

Each time the program must not notice: its stdout and exit code are those of a run with
no preload at all. And the trace must be whole: its records, by kind, are those of a run
with the preload alone, and their counts are what the sample's ledger says it did.

Debian's libjemalloc2, libtcmalloc-minimal4 and valgrind are needed (scripts/setup --tests
installs them); without one its tests are skipped, except under CI=true, where that is a
failure. About 5 s on one core, 2 of them under valgrind."""
import collections
import json
import os
import shutil
import unittest

from common import (BUILD, PRELOAD, SIM_LIB, clean_env, dump, ledger, of, run, sample,
                    tmpdir)

LIBDIR = "/usr/lib/x86_64-linux-gnu"
MALLOCS = {"jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
           "tcmalloc": os.path.join(LIBDIR, "libtcmalloc_minimal.so.4")}
CUPTI_TOOL = os.path.join(BUILD, "tests", "libana_test_cupti_tool.so")
CUPTI_FIRST = os.path.join(BUILD, "tests", "scenario_cupti_first")
SUPPRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "valgrind.supp")

API = ("ALLOC", "FREE", "LAUNCH", "MEMCPY", "MEMSET", "VMM")
GPU = ("GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET", "GPU_MEMORY", "GPU_POOL")
WHOLE = API + GPU + ("KERNEL", "DROPPED", "GPU_DROPPED")
MLP = ("train_mlp", "--steps", "2", "--hidden", "256")


def need(path, package):
    """Skips the test when path is missing (a failure under CI, where setup installs it)."""
    if os.path.exists(path):
        return
    msg = "%s not found (Debian package %s; scripts/setup --tests installs it)" % (path, package)
    if os.environ.get("CI") == "true":
        raise AssertionError(msg)
    raise unittest.SkipTest(msg)


def plain(cmd, **env):
    """The program on the sim without any preload."""
    return run(cmd, env=clean_env(LD_LIBRARY_PATH=SIM_LIB, **env))


def traced(cmd, preload, wrap=(), **env):
    """(process, records) of cmd under LD_PRELOAD=preload (a list, in order) on the sim."""
    trace = os.path.join(tmpdir(), "t.anat")
    e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=" ".join(preload),
                  ANATOMIST_OUTPUT=trace, **env)
    p = run([*wrap, *cmd], env=e, timeout=300)
    return p, dump(trace)


def kinds(recs):
    return dict(collections.Counter(r["kind"] for r in recs if r["kind"] in WHOLE))


def modules(recs):
    return [r["path"] for r in of(recs, "MODULE")]


def cupti_state(recs):
    return [r["value"] for r in recs if r["kind"] == "INFO" and r["key"] == "cupti"][-1]


def anatomist_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("anatomist:")]


class LedgerChecks(unittest.TestCase):
    def assert_mlp_whole(self, recs, led, what):
        """train_mlp's records against its ledger: every call, every kernel it ran."""
        copies = led["copies"]
        want = {"ALLOC": led["alloc_calls"], "FREE": led["free_calls"],
                "LAUNCH": led["launches"], "GPU_KERNEL": led["launches"],
                "MEMCPY": copies["h2d_calls"] + copies["d2h_calls"],
                "MEMSET": copies["memset_calls"]}
        got = kinds(recs)
        self.assertEqual({k: got.get(k, 0) for k in want}, want, what)
        self.assertEqual(of(recs, "DROPPED", "GPU_DROPPED"), [], what)
        names = {r["id"]: r["name"] for r in of(recs, "KERNEL")}
        ran = collections.Counter(names[r["kernel"]] for r in of(recs, "GPU_KERNEL"))
        self.assertEqual(dict(ran), led["kernels"], what)


class MallocReplacement(LedgerChecks):
    """jemalloc and tcmalloc before and after the preload in LD_PRELOAD."""

    def check(self, cmd, compare_stdout=True):
        base = plain(cmd)
        self.assertEqual(base.returncode, 0, base.stderr)
        alone, alone_recs = traced(cmd, [PRELOAD])
        self.assertEqual(alone.stdout if compare_stdout else ledger(alone.stdout),
                         base.stdout if compare_stdout else ledger(base.stdout))
        ran = 0
        for name, lib in MALLOCS.items():
            need(lib, "libjemalloc2" if name == "jemalloc" else "libtcmalloc-minimal4")
            for order in ([lib, PRELOAD], [PRELOAD, lib]):
                what = "%s: LD_PRELOAD=%s" % (cmd[0], " ".join(os.path.basename(x) for x in order))
                p, recs = traced(cmd, order)
                self.assertEqual(p.returncode, base.returncode, what + "\n" + p.stderr)
                self.assertEqual(p.stderr, base.stderr, what)
                if compare_stdout:
                    self.assertEqual(p.stdout, base.stdout, what)
                self.assertEqual(ledger(p.stdout), ledger(base.stdout), what)
                self.assertIn(lib, modules(recs), what + ": the allocator was not loaded")
                self.assertNotIn(lib, modules(alone_recs))
                self.assertEqual(kinds(recs), kinds(alone_recs), what)
                ran += 1
                yield what, p, recs
        self.assertEqual(ran, 4)

    def test_train_mlp(self):
        for what, p, recs in self.check([sample(MLP[0]), *MLP[1:]]):
            self.assert_mlp_whole(recs, ledger(p.stdout), what)

    def test_threads_allocating_at_once(self):
        """4 threads × 2000 cudaMalloc/launch/cudaFree while the allocator's own thread
        caches are busy (the sample prints thread ids: only its ledger is compared)."""
        for what, p, recs in self.check([sample("threads_alloc"), "4", "2000"],
                                        compare_stdout=False):
            led = ledger(p.stdout)
            self.assertEqual(led["failures"], 0)
            got = kinds(recs)
            self.assertEqual((got.get("ALLOC"), got.get("FREE"), got.get("LAUNCH")),
                             (led["alloc_calls"], led["free_calls"], led["launches"]), what)
            self.assertEqual(led["alloc_calls"], 8000)
            self.assertNotIn("DROPPED", got, what)


class CuptiHeldByAnotherTool(unittest.TestCase):
    """CUPTI allows one subscriber. A tool that is there first keeps it: the program runs as
    without the profiler, the tool gets every callback, and the trace has every API record
    with `INFO cupti` saying CUPTI was taken."""

    TAKEN = "taken by another tool: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"

    def test_a_tool_library_subscribing_in_its_constructor(self):
        cmd = [sample(MLP[0]), *MLP[1:]]
        base = plain(cmd)
        self.assertEqual(base.returncode, 0, base.stderr)
        led = ledger(base.stdout)
        alone_out = os.path.join(tmpdir(), "tool.txt")
        alone = run(cmd, env=clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=CUPTI_TOOL,
                                       ANA_TEST_TOOL_OUT=alone_out))
        self.assertEqual(alone.stdout, base.stdout)
        tool_alone = self.tool_report(alone_out)
        self.assertEqual(tool_alone["subscribe"], 0)
        for order in ([CUPTI_TOOL, PRELOAD], [PRELOAD, CUPTI_TOOL]):
            what = "LD_PRELOAD=" + " ".join(os.path.basename(x) for x in order)
            out = os.path.join(tmpdir(), "tool.txt")
            p, recs = traced(cmd, order, ANA_TEST_TOOL_OUT=out)
            self.assertEqual((p.returncode, p.stdout), (base.returncode, base.stdout), what)
            lines = anatomist_lines(p.stderr)
            self.assertEqual(len(lines), 1, what + "\n" + p.stderr)
            self.assertIn("CUPTI is in use by another tool", lines[0])
            self.assertEqual(cupti_state(recs), self.TAKEN, what)
            # The tool kept CUPTI and saw what it sees alone: every cudaMalloc and launch.
            self.assertEqual(self.tool_report(out), tool_alone, what)
            self.assertGreater(tool_alone["mallocs"], 0)
            self.assertEqual(tool_alone["launches"], led["launches"])
            # The trace: every API call, by the hooks, and no GPU activity.
            copies = led["copies"]
            got = kinds(recs)
            want = {"ALLOC": led["alloc_calls"], "FREE": led["free_calls"],
                    "LAUNCH": led["launches"], "MEMCPY": copies["h2d_calls"] + copies["d2h_calls"],
                    "MEMSET": copies["memset_calls"]}
            self.assertEqual({k: got.get(k, 0) for k in want}, want, what)
            self.assertEqual(sum(1 for r in of(recs, "ALLOC") if r["api"] == 1),
                             tool_alone["mallocs"], what)
            self.assertEqual(of(recs, *GPU), [], what)

    def test_the_program_subscribing_before_its_first_call(self):
        """cupti_first subscribes in main, before any CUDA call (which is what starts the
        profiler's session): same output as without the profiler, its callbacks all came."""
        base = plain([CUPTI_FIRST, "5"])
        self.assertEqual(base.returncode, 0, base.stderr)
        self.assertEqual(ledger(base.stdout), {"mallocs": 5, "callbacks": 5, "subscribe": 0})
        p, recs = traced([CUPTI_FIRST, "5"], [PRELOAD])
        self.assertEqual((p.returncode, p.stdout), (base.returncode, base.stdout))
        self.assertEqual(len(anatomist_lines(p.stderr)), 1, p.stderr)
        self.assertEqual(cupti_state(recs), self.TAKEN)
        self.assertEqual(sorted(r["size"] for r in of(recs, "ALLOC")),
                         [(i + 1) << 20 for i in range(5)])
        self.assertEqual(len(of(recs, "FREE")), 5)

    @staticmethod
    def tool_report(path):
        with open(path) as f:
            line = f.read().strip()
        assert line.startswith("tool "), line
        return json.loads(line[len("tool "):])


class UnderValgrind(LedgerChecks):
    """memcheck on train_mlp (small) with the preload: no error in the preload (or the
    sim, which is ours too); suppressed only what valgrind.supp names, in libunwind."""

    def test_memcheck_train_mlp(self):
        if os.environ.get("ANA_SANITIZER_RUNTIME"):
            self.skipTest("an AddressSanitizer build: valgrind cannot run its programs")
        vg = shutil.which("valgrind") or "/usr/bin/valgrind"
        need(vg, "valgrind")
        cmd = [sample(MLP[0]), "--steps", "1", "--hidden", "64"]
        base = plain(cmd)
        self.assertEqual(base.returncode, 0, base.stderr)
        wrap = [vg, "-q", "--error-exitcode=99", "--suppressions=" + SUPPRESSIONS,
                "--leak-check=full", "--errors-for-leak-kinds=definite",
                "--show-leak-kinds=definite"]
        p, recs = traced(cmd, [PRELOAD], wrap=wrap)
        self.assertEqual(p.returncode, 0, "memcheck found errors:\n" + p.stderr[-6000:])
        self.assertEqual(p.stdout, base.stdout)
        self.assertNotIn("==", p.stderr)  # -q: valgrind says nothing unless it found something
        self.assert_mlp_whole(recs, ledger(p.stdout), "under valgrind")
        self.assertEqual(cupti_state(recs), "on")

    def test_memcheck_the_analyzer(self):
        # The analyzer reads what others wrote: memcheck on its commands over a real trace
        # (a killed run's, read through its live file) finds no error and no definite
        # leak, and the output is byte for byte that of the same command without valgrind.
        if os.environ.get("ANA_SANITIZER_RUNTIME"):
            self.skipTest("an AddressSanitizer build: valgrind cannot run its programs")
        vg = shutil.which("valgrind") or "/usr/bin/valgrind"
        need(vg, "valgrind")
        ana = os.path.join(BUILD, "bin", "anatomist")
        trace = os.path.join(tmpdir(), "oom.anat")
        e = clean_env(LD_LIBRARY_PATH=SIM_LIB, LD_PRELOAD=PRELOAD, ANATOMIST_OUTPUT=trace,
                      ANATOMIST_SIM_MEMORY="16MiB")
        r = run([sample(MLP[0]), "--steps", "2", "--hidden", "256", "--grow-batch", "--kill-on-oom"],
                env=e, timeout=300)
        self.assertEqual(r.returncode, -9, r.stderr)
        self.assertTrue(os.path.exists(trace + ".live"))
        wrap = [vg, "-q", "--error-exitcode=99", "--leak-check=full",
                "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite"]
        out = os.path.join(tmpdir(), "r.html")
        for args in (["report", "--json", trace], ["oom", trace], ["html", "-o", out, trace],
                     ["flame", "--metric", "peak-memory", "--format", "svg", trace]):
            with self.subTest(command=args[0]):
                want = run([ana, *args], env=clean_env())
                got = run([*wrap, ana, *args], env=clean_env(), timeout=300)
                self.assertEqual(got.returncode, 0, "memcheck:\n" + got.stderr[-6000:])
                self.assertEqual(got.stdout, want.stdout)


if __name__ == "__main__":
    unittest.main()

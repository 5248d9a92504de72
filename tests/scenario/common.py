"""Shared helpers of the scenario tests: paths of the build and small process utilities.

The tests run real sample programs under the preload on the simulated device and check
the analyzer's numbers against what the samples know about themselves (their ledgers)."""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

BUILD = os.environ.get("ANA_BUILD") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
BUILD = os.path.abspath(BUILD)
ANATOMIST = os.path.join(BUILD, "bin", "anatomist")
PRELOAD = os.path.join(BUILD, "lib", "libanatomist.so")
SIM_LIB = os.path.join(BUILD, "sim")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
NVIDIA_LIB = os.path.join(CUDA_HOME, "lib64")


def sample(name):
    return os.path.join(BUILD, "samples", name)


# A sanitizer build (cmake/AnaSanitize.cmake) names AddressSanitizer's runtime: it must be
# the first library of every process that loads the instrumented preload or simulated
# libraries, so clean_env preloads it ahead of anything else (a program built here links
# it first anyway; python, a shell or an nvcc program built elsewhere do not).
SANITIZER_RUNTIME = os.environ.get("ANA_SANITIZER_RUNTIME", "")


def with_sanitizer(env):
    """env with the sanitizer runtime first in LD_PRELOAD (a no-op in other builds)."""
    if SANITIZER_RUNTIME:
        pre = env.get("LD_PRELOAD")
        env["LD_PRELOAD"] = SANITIZER_RUNTIME + (":" + pre if pre else "")
    return env


def clean_env(**extra):
    """The environment without anything of ours, plus extra (and, in a sanitizer build,
    the sanitizer runtime ahead of extra's LD_PRELOAD)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANATOMIST_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update(extra)
    return with_sanitizer(env)


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def anatomist(*args, env=None, timeout=120):
    return run([ANATOMIST, *args], env=env or clean_env(), timeout=timeout)


def report_json(trace):
    r = anatomist("report", trace, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def info_json(trace):
    r = anatomist("info", trace, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


DUMP = os.path.join(BUILD, "tests", "anatrace_dump")


def dump(trace, ended="exit", timeout=60):
    """Every record of the trace, in file order, as tests/tools/anatrace_dump prints them
    (one dict per record; SEGMENTs folded into "tid"), after checking how it ended."""
    d = subprocess.run([DUMP, trace], capture_output=True, text=True, timeout=timeout)
    assert d.returncode == 0, d.stderr
    recs = [json.loads(line) for line in d.stdout.splitlines()]
    assert recs[-1] == {"end": ended}, recs[-1]
    return recs[:-1]


def of(recs, *kinds):
    """The records of these kinds ("ALLOC", "GPU_KERNEL", ...)."""
    return [r for r in recs if r["kind"] in kinds]


def dims(r, what):
    """A LAUNCH or GPU_KERNEL record's grid or block as [x, y, z]."""
    return [r[what + "_x"], r[what + "_y"], r[what + "_z"]]


def ledger(stdout):
    """The sample's own ledger: its last stdout line, `ledger {json}`."""
    lines = [l for l in stdout.splitlines() if l.startswith("ledger ")]
    assert lines, "the sample printed no ledger:\n" + stdout
    return json.loads(lines[-1][len("ledger "):])


_TMPDIRS = []


def tmpdir():
    """A scratch directory, removed with everything in it when the test process exits
    (ANA_KEEP_TMP=1 keeps them, to look at after a failure): runs on a developer's
    machine would otherwise leave their traces in /tmp, gigabytes after a few days."""
    d = tempfile.mkdtemp(prefix="ana-scenario-")
    _TMPDIRS.append(d)
    return d


@atexit.register
def _remove_tmpdirs():
    if os.environ.get("ANA_KEEP_TMP"):
        return
    for d in _TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)

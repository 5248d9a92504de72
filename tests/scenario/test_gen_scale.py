#!/usr/bin/env python3
"""The analyzer's totals on a synthetic training-loop trace (bench/gen_trace.c, the
generator of bench/analyzer_scale.sh) equal what the generator says it wrote: records per
kind, kernel launches and GPU time per kernel, NVTX steps, copies, and the device memory
peak and what is live at the end (which the generator tracks as it allocates). Run with
two host threads and, again, with 64-ns timestamps (the reader scales ticks back); and
with the pointer uses, GPU activities, API calls, memory events, GEMM calls, collectives and
NVTX ranges spilled to temporary files past a few dozen to a few thousand
(ANATOMIST_SPILL_USES, _GPU, _CALLS, _MEMORY, _GEMMS, _COLLS, _RANGES): the same totals,
the same report byte for byte, no file left behind, and exit status 2 with the reason when
no temporary file can be made or written."""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import BUILD, anatomist, clean_env, info_json, report_json  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen_trace")


def generate(path, *args):
    r = subprocess.run([GEN, "--records", "200000", "--out", path, *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    facts = dict(line.split("=", 1) for line in r.stdout.splitlines())
    return {k: int(v) for k, v in facts.items()}


def check(path, *args, spill_dir=None):
    g = generate(path, *args)
    assert g["records"] >= 200000 and g["steps"] > 300, g
    info = info_json(path)
    counts = {k[len("count."):]: v for k, v in g.items() if k.startswith("count.")}
    for kind, n in info["records"].items():
        assert n == counts.get(kind, 0), (kind, n, counts.get(kind, 0))
    assert sum(info["records"].values()) == g["records"]
    assert info["first_ns"] == g["first_ns"] and info["last_ns"] == g["last_ns"], info
    assert info["file_bytes"] == g["bytes"]

    rep = report_json(path)
    if spill_dir:  # the same report with the uses and GPU activities spilled in small runs
        spilled = spill_report(path, spill_dir)
        assert spilled == json.dumps(rep, indent=2) + "\n" or json.loads(spilled) == rep
        rep = json.loads(spilled)
    assert rep["launches"] == g["launches"] and rep["failed_launches"] == 0
    by_id = {k["id"]: k["count"] for k in rep["kernels"]}
    want = {int(k.split(".")[1]): v for k, v in g.items()
            if k.startswith("kernel.") and k.endswith(".launches") and v}
    assert by_id == want, (by_id, want)
    gk = rep["gpu"]["kernels"]
    assert gk["count"] == g["gpu_kernels"] and gk["total_ns"] == g["gpu_ns"], (gk, g["gpu_ns"])
    names = {k["mangled"]: k for k in rep["kernels"]}
    assert rep["gpu"]["kernels_by_time"]
    for e in rep["gpu"]["kernels_by_time"]:
        kid = names[e["mangled"]]["id"]
        assert e["count"] == g["kernel.%d.launches" % kid], e
        assert e["total_ns"] == g["kernel.%d.gpu_ns" % kid], (e, g["kernel.%d.gpu_ns" % kid])
    if "--threads" not in args:  # steps come from one thread's ranges
        assert rep["steps"]["count"] == g["steps"] and rep["steps"]["method"] == "nvtx"
    assert rep["copies"]["memcpy"]["bytes"] == g["memcpy_bytes"]
    assert rep["gpu"]["memcpy"]["bytes"] == g["memcpy_bytes"]
    mem = rep["memory"]
    assert mem["peak_bytes"] == g["peak_bytes"], (mem["peak_bytes"], g["peak_bytes"])
    assert mem["live_at_end_bytes"] == g["live_end_bytes"]
    assert mem["unknown_frees"] == 0


SPILL = {"ANATOMIST_SPILL_USES": "3000", "ANATOMIST_SPILL_GPU": "2000",
         "ANATOMIST_SPILL_CALLS": "2500", "ANATOMIST_SPILL_MEMORY": "300",
         "ANATOMIST_SPILL_RANGES": "100", "ANATOMIST_SPILL_GEMMS": "500",
         "ANATOMIST_SPILL_COLLS": "50"}


def spill_report(path, tmp):
    """report --json with spilling in small runs into tmp; checks tmp is left empty and
    that the text equals the unspilled report's."""
    plain = anatomist("report", path, "--json")
    r = anatomist("report", path, "--json", env=clean_env(TMPDIR=tmp, **SPILL))
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout, "spilled report differs"
    assert os.listdir(tmp) == [], os.listdir(tmp)
    return r.stdout


def no_room(path, d):
    # no directory for the temporary files
    r = anatomist("report", path, "--json", env=clean_env(TMPDIR=os.path.join(d, "gone"), **SPILL))
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    assert "cannot make the temporary file" in r.stderr and "TMPDIR" in r.stderr, r.stderr

    # a file that cannot grow (a full disk's ENOSPC, here the file-size limit's EFBIG)
    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
    env = clean_env(TMPDIR=os.path.join(d, "spill"), **SPILL)
    r = subprocess.run([os.path.join(BUILD, "bin", "anatomist"), "report", path, "--json"],
                       env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=small_files)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    assert "cannot write the temporary file" in r.stderr, r.stderr


def main():
    with tempfile.TemporaryDirectory() as d:
        spill = os.path.join(d, "spill")
        os.mkdir(spill)
        check(os.path.join(d, "a.anat"), "--threads", "2", "--seed", "7", spill_dir=spill)
        check(os.path.join(d, "b.anat"), "--time-shift", "6")
        no_room(os.path.join(d, "b.anat"), d)
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The analyzer's totals on a synthetic training-loop trace (bench/gen_trace.c, the
generator of bench/analyzer_scale.sh) equal what the generator says it wrote: records per
kind, kernel launches and GPU time per kernel, NVTX steps, copies, and the device memory
peak and what is live at the end (which the generator tracks as it allocates). Run with
two host threads and, again, with 64-ns timestamps (the reader scales ticks back)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import BUILD, info_json, report_json  # noqa: E402

GEN = os.path.join(BUILD, "bench", "gen_trace")


def generate(path, *args):
    r = subprocess.run([GEN, "--records", "200000", "--out", path, *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    facts = dict(line.split("=", 1) for line in r.stdout.splitlines())
    return {k: int(v) for k, v in facts.items()}


def check(path, *args):
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


def main():
    with tempfile.TemporaryDirectory() as d:
        check(os.path.join(d, "a.anat"), "--threads", "2", "--seed", "7")
        check(os.path.join(d, "b.anat"), "--time-shift", "6")
    print("ok")


if __name__ == "__main__":
    main()

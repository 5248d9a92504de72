#!/usr/bin/env python3
"""Check that the sim's libcupti.so.13 looks like NVIDIA's to a dynamic loader.

$ANA_BUILD/sim/libcupti.so.13 must have SONAME libcupti.so.13, need libcudart.so.13 (the
sim's device), and export only functions versioned @@libcupti.so.13. When NVIDIA's
library is installed ($CUDA_HOME/lib64 or $CUDA_HOME/extras/CUPTI/lib64), each export
must also exist there, so a client never binds to an entry point only the sim has.
Prints what is wrong and exits 1; exits 77 (skipped) when the sim's library is not built.
"""
import os
import subprocess
import sys

SONAME = "libcupti.so.13"


def dynamic_symbols(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def dynamic_section(path):
    return subprocess.run(["readelf", "-d", path], check=True, capture_output=True,
                          text=True).stdout


def exports(path):
    """{name: version string} of the functions `path` defines."""
    found = {}
    for fields in dynamic_symbols(path):
        if len(fields) < 3 or fields[1] == "A":  # the version node itself
            continue
        name, _, version = fields[2].partition("@")
        found[name] = version
    return found


def nvidia_library():
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    for sub in ("lib64", "extras/CUPTI/lib64", "lib"):
        p = os.path.join(cuda, sub, SONAME)
        if os.path.exists(p):
            return p
    return None


def main():
    build = os.environ.get("ANA_BUILD")
    if not build:
        print("ANA_BUILD is not set", file=sys.stderr)
        return 2
    lib = os.path.join(build, "sim", SONAME)
    if not os.path.exists(lib):
        print(f"skipped: {lib} is not built")
        return 77
    problems = []
    dyn = dynamic_section(lib)
    if f"Library soname: [{SONAME}]" not in dyn:
        problems.append(f"SONAME is not {SONAME}")
    if "Shared library: [libcudart.so.13]" not in dyn:
        problems.append("no DT_NEEDED on libcudart.so.13")
    mine = exports(lib)
    if not mine:
        problems.append("exports nothing")
    for name, version in sorted(mine.items()):
        if version != "@" + SONAME:
            problems.append(f"{name} is versioned '{version}', not '@@{SONAME}'")
    nvidia = nvidia_library()
    if nvidia:
        theirs = exports(nvidia)
        for name in sorted(set(mine) - set(theirs)):
            problems.append(f"{name} is not exported by NVIDIA's {nvidia}")
    else:
        print(f"note: NVIDIA's {SONAME} not found; export names not compared")
    for p in problems:
        print(f"{lib}: {p}", file=sys.stderr)
    if not problems:
        print(f"{lib}: {len(mine)} exports, all @@{SONAME}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

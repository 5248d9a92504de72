#!/usr/bin/env python3
"""Check that the sim's libnccl.so.2 looks like NVIDIA's to a dynamic loader.

$ANA_BUILD/sim/libnccl.so.2 must have SONAME libnccl.so.2 and export functions only,
unversioned, in pairs: pncclX GLOBAL and ncclX a WEAK alias at the same address, as
NVIDIA's library does. When NVIDIA's library is installed ($CUDA_HOME/lib64), each export
must exist there with the same binding. Prints what is wrong and exits 1; exits 77
(skipped) when the sim's library is not built.
"""
import os
import subprocess
import sys

SONAME = "libnccl.so.2"


def exports(path):
    """{name: (binding, value)} of the functions `path` defines, and the versioned ones."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], check=True,
                         capture_output=True, text=True).stdout
    found, versioned = {}, []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[6] == "UND" or f[3] != "FUNC":
            continue
        name = f[7]
        if "@" in name:
            versioned.append(name)
            name = name.split("@")[0]
        found[name] = (f[4], f[1])
    return found, versioned


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
    dyn = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    if f"Library soname: [{SONAME}]" not in dyn:
        problems.append(f"SONAME is not {SONAME}")
    mine, versioned = exports(lib)
    problems += [f"{n} is versioned" for n in versioned]
    if not mine:
        problems.append("exports nothing")
    for name, (bind, value) in sorted(mine.items()):
        if name.startswith("pnccl"):
            alias = mine.get(name[1:])
            if bind != "GLOBAL":
                problems.append(f"{name} is {bind}, not GLOBAL")
            if not alias or alias != ("WEAK", value):
                problems.append(f"{name[1:]} is not a WEAK alias of {name}")
        elif name.startswith("nccl"):
            if "p" + name not in mine:
                problems.append(f"{name} has no p{name}")
        else:
            problems.append(f"{name} is not an NCCL entry point")
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    nvidia = os.path.join(cuda, "lib64", SONAME)
    if os.path.exists(nvidia):
        theirs, _ = exports(nvidia)
        for name, (bind, _) in sorted(mine.items()):
            if name not in theirs:
                problems.append(f"{name} is not exported by NVIDIA's {nvidia}")
            elif theirs[name][0] != bind:
                problems.append(f"{name} is {bind} here, {theirs[name][0]} in NVIDIA's")
    else:
        print(f"note: NVIDIA's {SONAME} not found; export names not compared")
    for p in problems:
        print(f"{lib}: {p}", file=sys.stderr)
    if not problems:
        print(f"{lib}: {len(mine)} exports, unversioned, pnccl*/nccl* pairs as NVIDIA's")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

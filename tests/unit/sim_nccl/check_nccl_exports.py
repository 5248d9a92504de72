#!/usr/bin/env python3
"""Check that the sim's libnccl.so.2 looks like NVIDIA's to a dynamic loader.

$ANA_BUILD/sim/libnccl.so.2 must have SONAME libnccl.so.2 and export functions only,
unversioned, in pairs: pncclX GLOBAL and ncclX a WEAK alias at the same address, as
NVIDIA's library does. When NVIDIA's library is installed ($CUDA_HOME/lib64), each export
must exist there with the same binding. Prints what is wrong and exits 1; exits 77
(skipped) when the sim's library is not built.
"""
import os
import sys

# exports_common.py lies in ../sim (ctest runs this file by path).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "sim"))
import exports_common as ec  # noqa: E402

SONAME = "libnccl.so.2"


def exports(path):
    """{name: (binding, value)} of the functions `path` defines, and the versioned ones."""
    found, versioned = {}, []
    for line in ec.run("readelf", "--dyn-syms", "-W", path).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[6] == "UND" or f[3] != "FUNC":
            continue
        name = f[7]
        if "@" in name:
            versioned.append(name)
            name = name.split("@")[0]
        found[name] = (f[4], f[1])
    return found, versioned


def pair_problems(mine):
    """What breaks the pnccl*/nccl* pairing among the exports."""
    problems = []
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
    return problems


def main():
    lib, = ec.built_libraries(SONAME)
    problems = ec.loader_problems(ec.dynamic_section(lib), SONAME)
    mine, versioned = exports(lib)
    problems += [f"{n} is versioned" for n in versioned]
    if not mine:
        problems.append("exports nothing")
    problems += pair_problems(mine)
    nvidia = ec.nvidia_library(SONAME)
    if nvidia:
        problems += ec.nvidia_problems(mine, exports(nvidia)[0], nvidia,
                                       same=lambda bind_value: bind_value[0])
    return ec.finish([f"{lib}: {p}" for p in problems],
                     [f"{lib}: {len(mine)} exports, unversioned, pnccl*/nccl* pairs as "
                      "NVIDIA's"])


if __name__ == "__main__":
    sys.exit(main())

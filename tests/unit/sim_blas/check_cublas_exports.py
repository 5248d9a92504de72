#!/usr/bin/env python3
"""Check that the sim's libcublas.so.13 and libcublasLt.so.13 look like NVIDIA's to a loader.

$ANA_BUILD/sim/libcublas.so.13 must have SONAME libcublas.so.13 and need
libcublasLt.so.13 (and the sim's libcudart.so.13); $ANA_BUILD/sim/libcublasLt.so.13 must
have SONAME libcublasLt.so.13 and need libcudart.so.13. Each must export only functions
versioned @@<its soname>, and libcublas must import cublasLtMatmul@libcublasLt.so.13 (its
GEMMs call it through the dynamic linker). When NVIDIA's libraries are installed
($CUDA_HOME/lib64), each export must also exist there with the same version, so a client
never binds to an entry point only the sim has.
Prints what is wrong and exits 1; exits 77 (skipped) when the sim's libraries are not built.
"""
import os
import sys

# exports_common.py lies in ../sim (ctest runs this file by path).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "sim"))
import exports_common as ec  # noqa: E402

LIBS = {
    "libcublas.so.13": ["libcublasLt.so.13", "libcudart.so.13"],
    "libcublasLt.so.13": ["libcudart.so.13"],
}


def check(lib, soname, needed, problems):
    """Adds what is wrong with one library to problems; its exports."""
    problems += [f"{lib}: {p}" for p in ec.loader_problems(ec.dynamic_section(lib), soname,
                                                           needed)]
    mine = dict(ec.dynamic_symbols(lib))
    if not mine:
        problems.append(f"{lib}: exports nothing")
    for name, version in sorted(mine.items()):
        if version != "@@" + soname:
            problems.append(f"{lib}: {name} is versioned '{version}', not '@@{soname}'")
    nvidia = ec.nvidia_library(soname)
    if nvidia:
        problems += [f"{lib}: {p}" for p in ec.nvidia_problems(
            mine, dict(ec.dynamic_symbols(nvidia)), nvidia, same=lambda version: version)]
    return mine


def main():
    libs = ec.built_libraries(*LIBS)
    problems = []
    counts = {}
    for lib, (soname, needed) in zip(libs, LIBS.items()):
        counts[lib] = len(check(lib, soname, needed, problems))
    cublas = libs[0]
    imports = dict(ec.dynamic_symbols(cublas, undefined=True))
    if imports.get("cublasLtMatmul") != "@libcublasLt.so.13":
        problems.append(f"{cublas}: does not import cublasLtMatmul@libcublasLt.so.13")
    return ec.finish(problems, [f"{lib}: {n} exports, all versioned as NVIDIA's"
                                for lib, n in counts.items()])


if __name__ == "__main__":
    sys.exit(main())

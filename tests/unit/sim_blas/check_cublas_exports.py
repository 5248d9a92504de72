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
import subprocess
import sys

LIBS = {
    "libcublas.so.13": ["libcublasLt.so.13", "libcudart.so.13"],
    "libcublasLt.so.13": ["libcudart.so.13"],
}


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def symbols(path, undefined=False):
    """{name: version string} (e.g. '@@libcublas.so.13') of the functions path defines
    (or, with undefined, imports)."""
    flag = "--undefined-only" if undefined else "--defined-only"
    found = {}
    for line in run("nm", "-D", flag, path).splitlines():
        fields = line.split()
        if not fields or fields[-2] == "A":   # the version node itself
            continue
        sym = fields[-1]
        name, at, version = sym.partition("@")
        found[name] = at + version
    return found


def check(build, soname, needed, problems):
    lib = os.path.join(build, "sim", soname)
    dyn = run("readelf", "-d", lib)
    if f"Library soname: [{soname}]" not in dyn:
        problems.append(f"{lib}: SONAME is not {soname}")
    for n in needed:
        if f"Shared library: [{n}]" not in dyn:
            problems.append(f"{lib}: no DT_NEEDED on {n}")
    mine = symbols(lib)
    if not mine:
        problems.append(f"{lib}: exports nothing")
    for name, version in sorted(mine.items()):
        if version != "@@" + soname:
            problems.append(f"{lib}: {name} is versioned '{version}', not '@@{soname}'")
    nvidia = os.path.join(os.environ.get("CUDA_HOME") or "/usr/local/cuda", "lib64", soname)
    if os.path.exists(nvidia):
        theirs = symbols(nvidia)
        for name, version in sorted(mine.items()):
            if name not in theirs:
                problems.append(f"{lib}: {name} is not exported by NVIDIA's {nvidia}")
            elif theirs[name] != version:
                problems.append(f"{lib}: {name} is '{theirs[name]}' in NVIDIA's {nvidia}")
    else:
        print(f"note: NVIDIA's {soname} not found; export names not compared")
    return lib, mine


def main():
    build = os.environ.get("ANA_BUILD")
    if not build:
        print("ANA_BUILD is not set", file=sys.stderr)
        return 2
    for soname in LIBS:
        if not os.path.exists(os.path.join(build, "sim", soname)):
            print(f"skipped: {build}/sim/{soname} is not built")
            return 77
    problems = []
    counts = {}
    for soname, needed in LIBS.items():
        lib, mine = check(build, soname, needed, problems)
        counts[lib] = len(mine)
    cublas = os.path.join(build, "sim", "libcublas.so.13")
    imports = symbols(cublas, undefined=True)
    if imports.get("cublasLtMatmul") != "@libcublasLt.so.13":
        problems.append(f"{cublas}: does not import cublasLtMatmul@libcublasLt.so.13")
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        for lib, n in counts.items():
            print(f"{lib}: {n} exports, all versioned as NVIDIA's")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

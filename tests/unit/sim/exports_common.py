"""What the checks of the sim's libraries' dynamic symbols share.

Used by check_exports.py and check_cupti_exports.py (beside this file),
../sim_blas/check_cublas_exports.py and ../sim_nccl/check_nccl_exports.py. ctest runs them
by path, so each puts this file's directory on sys.path before importing it.

The common frame: the build directory comes from $ANA_BUILD (exit 2 when it is not set),
a library that is not built skips the check (exit 77), every problem is one line on
stderr and any problem fails the check (exit 1). Symbols are read with nm -D and
readelf (binutils).
"""
import os
import subprocess
import sys

SKIPPED = 77


def run(*args):
    """The standard output of a command that must succeed."""
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def dynamic_section(path):
    """readelf -d of `path`: its SONAME and DT_NEEDED entries, among others."""
    return run("readelf", "-d", path)


def dynamic_symbols(path, undefined=False):
    """[(name, version)] of the dynamic symbols `path` defines (or, with undefined,
    imports); version as nm writes it after the name: '@@libx.so.1' (the default version),
    '@libx.so.1', or '' (unversioned). Version nodes (nm's type A) are left out."""
    flag = "--undefined-only" if undefined else "--defined-only"
    found = []
    for line in run("nm", "-D", flag, path).splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[-2] == "A":
            continue
        name, at, version = fields[-1].partition("@")
        found.append((name, at + version))
    return found


def build_dir():
    """$ANA_BUILD; when it is not set, says so on stderr and exits 2."""
    build = os.environ.get("ANA_BUILD")
    if not build:
        print("ANA_BUILD is not set", file=sys.stderr)
        sys.exit(2)
    return build


def built_libraries(*sonames):
    """The paths of $ANA_BUILD/sim/<soname>; when one is not built, says which and exits
    77 (skipped)."""
    build = build_dir()
    paths = [os.path.join(build, "sim", soname) for soname in sonames]
    for p in paths:
        if not os.path.exists(p):
            print(f"skipped: {p} is not built")
            sys.exit(SKIPPED)
    return paths


def nvidia_library(soname, subdirs=("lib64",)):
    """NVIDIA's copy of a library under $CUDA_HOME (default /usr/local/cuda), looked for in
    `subdirs` in turn, or None after a note that names are not compared."""
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    for sub in subdirs:
        p = os.path.join(cuda, sub, soname)
        if os.path.exists(p):
            return p
    print(f"note: NVIDIA's {soname} not found; export names not compared")
    return None


def nvidia_problems(mine, theirs, nvidia, same=None):
    """What the sim's exports `mine` ({name: value}) have that NVIDIA's library at `nvidia`,
    exporting `theirs` (alike), lacks: a name, or, with `same` (what must match, a function
    of a value), the same `same`."""
    problems = []
    for name, value in sorted(mine.items()):
        if name not in theirs:
            problems.append(f"{name} is not exported by NVIDIA's {nvidia}")
        elif same and same(value) != same(theirs[name]):
            problems.append(f"{name} is {same(value)!r} here, {same(theirs[name])!r} in "
                            f"NVIDIA's {nvidia}")
    return problems


def loader_problems(dyn, soname, needed=()):
    """What is wrong with a library's dynamic section (readelf -d): its SONAME is not
    `soname`, or a library of `needed` has no DT_NEEDED entry."""
    problems = []
    if f"Library soname: [{soname}]" not in dyn:
        problems.append(f"SONAME is not {soname}")
    problems += [f"no DT_NEEDED on {n}" for n in needed
                 if f"Shared library: [{n}]" not in dyn]
    return problems


def finish(problems, ok_lines):
    """Prints each problem on stderr, or, when there is none, each of ok_lines; the exit
    status of the check."""
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        for line in ok_lines:
            print(line)
    return 1 if problems else 0

#!/usr/bin/env python3
"""Check that the sim's libcupti.so.13 looks like NVIDIA's to a dynamic loader.

$ANA_BUILD/sim/libcupti.so.13 must have SONAME libcupti.so.13, need libcudart.so.13 (the
sim's device), and export only functions versioned @@libcupti.so.13. When NVIDIA's
library is installed ($CUDA_HOME/lib64 or $CUDA_HOME/extras/CUPTI/lib64), each export
must also exist there, so a client never binds to an entry point only the sim has.
Prints what is wrong and exits 1; exits 77 (skipped) when the sim's library is not built.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exports_common as ec  # noqa: E402

SONAME = "libcupti.so.13"


def main():
    lib, = ec.built_libraries(SONAME)
    problems = ec.loader_problems(ec.dynamic_section(lib), SONAME, ["libcudart.so.13"])
    mine = dict(ec.dynamic_symbols(lib))
    if not mine:
        problems.append("exports nothing")
    for name, version in sorted(mine.items()):
        if version != "@@" + SONAME:
            problems.append(f"{name} is versioned '{version}', not '@@{SONAME}'")
    nvidia = ec.nvidia_library(SONAME, ("lib64", "extras/CUPTI/lib64", "lib"))
    if nvidia:
        problems += ec.nvidia_problems(mine, dict(ec.dynamic_symbols(nvidia)), nvidia)
    return ec.finish([f"{lib}: {p}" for p in problems],
                     [f"{lib}: {len(mine)} exports, all @@{SONAME}"])


if __name__ == "__main__":
    sys.exit(main())

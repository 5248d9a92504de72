#!/usr/bin/env python3
"""Fail loudly on CUDA runtime entry points the simulated device does not provide.

Every nvcc-built binary under $ANA_BUILD/samples/ that imports symbols versioned
@libcudart.so.13 must find each of them exported, with that version, by
$ANA_BUILD/sim/libcudart.so.13. A missing one would make the program fail to load (or
worse, bind lazily and die mid-run) on the sim. Prints the missing symbols per binary
and exits 1; exits 77 (skipped) when there is no sample binary to check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exports_common as ec  # noqa: E402

VERSION = "libcudart.so.13"


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def versioned_names(path, undefined):
    """Names of the dynamic symbols of `path` with version libcudart.so.13 (default or
    hidden): what a binary imports from it (undefined) or what a library exports."""
    return {name for name, version in ec.dynamic_symbols(path, undefined)
            if version.lstrip("@") == VERSION}


def main():
    build = ec.build_dir()
    lib = os.path.join(build, "sim", VERSION)
    if not os.path.exists(lib):
        print(f"missing {lib}", file=sys.stderr)
        return 1
    samples = os.path.join(build, "samples")
    binaries = []
    for root, _dirs, files in os.walk(samples):
        if "CMakeFiles" in root:
            continue
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.access(p, os.X_OK) and is_elf(p):
                binaries.append(p)
    exported = versioned_names(lib, undefined=False)
    print(f"{lib}: {len(exported)} symbols exported @{VERSION}")
    checked, failed = 0, 0
    for b in sorted(binaries):
        imports = versioned_names(b, undefined=True)
        if not imports:
            continue
        checked += 1
        missing = sorted(imports - exported)
        rel = os.path.relpath(b, build)
        if missing:
            failed += 1
            print(f"FAIL {rel}: {len(missing)} of {len(imports)} imports missing from the sim:")
            for name in missing:
                print(f"    {name}@{VERSION}")
        else:
            print(f"ok   {rel}: all {len(imports)} imports exported")
    if checked == 0:
        print(f"no nvcc-built binary importing @{VERSION} under {samples}: skipped")
        return ec.SKIPPED
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Run samples/api_tour on the simulated device and compare with the pinned answers.

api_tour prints `<api> -> <return code>` for a broad tour of the runtime API. On the sim
every line must match api_tour.sim.expected (next to this script): the return codes a
GPU would give (success, out of memory for 1 PiB, invalid device, invalid free, ...).
Exits 77 (skipped) when $ANA_BUILD/samples/api_tour has not been built.
"""
import difflib
import os
import subprocess
import sys


def main():
    build = os.environ["ANA_BUILD"]
    exe = os.path.join(build, "samples", "api_tour")
    if not os.path.exists(exe):
        print(f"{exe} not built: skipped")
        return 77
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(build, "sim")
    env.pop("ANATOMIST_SIM_MEMORY", None)
    run = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "api_tour.sim.expected")) as f:
        expected = f.read()
    ok = True
    if run.returncode != 0:
        print(f"api_tour exited with {run.returncode}\n{run.stderr}")
        ok = False
    if run.stdout != expected:
        sys.stdout.writelines(difflib.unified_diff(
            expected.splitlines(True), run.stdout.splitlines(True),
            "api_tour.sim.expected", "api_tour on the sim"))
        ok = False
    if ok:
        print(f"api_tour on the sim: {len(expected.splitlines())} calls as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

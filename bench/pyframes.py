#!/usr/bin/env python3
"""What Python frames add to a stack capture (docs/overhead.md, "Python frames").

    python3 bench/pyframes.py BUILD_DIR [ROUNDS] [DEPTH] [PAIRS]

Builds bench/pyframes_ext.c for this interpreter, then each round runs, interleaved, a
program that recurses DEPTH Python frames deep (default 20) and calls the extension's
loop(n): n cudaMalloc + cudaFree pairs made from C (PAIRS, default 200000), timed from C.
Three ways:
  a) no preload (the baseline of the same run)
  b) the preload with stacks on and ANATOMIST_PYTHON=0 (native frames only)
  c) the preload with its defaults (native and Python frames)
Prints the medians per call (a pair is two captures: the allocation's and the free's) and
c - b per capture: what reading the Python frames and interning the longer stack costs.
Not a test: run by hand, numbers go to docs/overhead.md."""
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_HOME = os.environ.get("CUDA_HOME") or "/usr/local/cuda"

PROG = r"""
import sys, pyframes_ext
N, DEPTH = int(sys.argv[1]), int(sys.argv[2])
def down(k):
    if k > 1:
        return down(k - 1)
    pyframes_ext.loop(2000)          # warm: first sights of the stacks and code objects
    return pyframes_ext.loop(N)
print(down(DEPTH - 1))
"""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 200000
    d = tempfile.mkdtemp(prefix="ana-bench-py-")
    atexit.register(shutil.rmtree, d, True)  # the built extension and the traces
    ext = os.path.join(d, "pyframes_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
                    "-I" + os.path.join(CUDA_HOME, "include"), os.path.join(HERE, "pyframes_ext.c"),
                    "-L" + os.path.join(CUDA_HOME, "lib64"), "-lcudart", "-o", ext], check=True)
    prog = os.path.join(d, "prog.py")
    open(prog, "w").write(PROG)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANATOMIST_") and k != "LD_PRELOAD"}
    base.update(LD_LIBRARY_PATH=os.path.join(build, "sim"), PYTHONPATH=d, ANATOMIST_CUPTI="0")
    pre = os.path.join(build, "lib", "libanatomist.so")
    modes = {
        "a": dict(base),
        "b": dict(base, LD_PRELOAD=pre, ANATOMIST_PYTHON="0", ANATOMIST_OUTPUT=os.path.join(d, "b.anat")),
        "c": dict(base, LD_PRELOAD=pre, ANATOMIST_OUTPUT=os.path.join(d, "c.anat")),
    }
    res = {k: [] for k in modes}
    for _ in range(rounds):
        for k, env in modes.items():
            out = subprocess.run([sys.executable, prog, str(n), str(depth)], env=env, capture_output=True,
                                 text=True, check=True).stdout
            res[k].append(int(out.split()[-1]) / n)
    med = {k: statistics.median(v) for k, v in res.items()}
    print("| way | ns per cudaMalloc+cudaFree pair (median of %d) |" % rounds)
    print("|---|---:|")
    print("| a) no preload | %.0f |" % med["a"])
    print("| b) preload, native frames only | %.0f |" % med["b"])
    print("| c) preload, native + %d Python frames | %.0f |" % (depth, med["c"]))
    print()
    print("Python frames add %.1f ns per capture (c - b, two captures a pair); CPython %s, %s" % (
        (med["c"] - med["b"]) / 2, sys.version.split()[0], os.uname().machine))


if __name__ == "__main__":
    main()

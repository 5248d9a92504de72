"""A launcher in Python, as torchrun, accelerate or deepspeed are: it makes no CUDA call
itself and starts its workers (ctypes_worker.py) with subprocess, one after the other.

    launcher.py [--exit N] WORKER_ARGS [-- WORKER_ARGS ...]

Each group of arguments is one worker's. The launcher prints `launcher {json}` with its
pid, and each worker's pid and exit status as subprocess reports them (negative: the
signal that killed it); the workers print their own lines. It exits with status N."""
import json
import os
import subprocess
import sys

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctypes_worker.py")


def main():
    args = sys.argv[1:]
    code = 0
    if args[:1] == ["--exit"]:
        code, args = int(args[1]), args[2:]
    groups, cur = [], []
    for a in args:
        if a == "--":
            groups.append(cur)
            cur = []
        else:
            cur.append(a)
    groups.append(cur)
    workers = []
    for g in groups:
        p = subprocess.Popen([sys.executable, WORKER, *g])
        workers.append({"pid": p.pid, "status": p.wait()})
    print("launcher " + json.dumps({"pid": os.getpid(), "workers": workers}), flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()

"""A CUDA worker in Python, as a PyTorch-less trainer or a test harness would be: it calls
the CUDA runtime through ctypes, which dlopens libcudart.so.13 in a local scope and looks
every function up with dlsym on that handle (LD_LIBRARY_PATH names the simulated device's
libraries).

    ctypes_worker.py [--chdir DIR] [--fail] [--end exit|_exit|kill] [--exit N] BASE N

Allocates N device buffers of BASE, BASE+1, ... bytes with cudaMalloc from a nested
function, frees them with cudaFree, and with --fail makes one cudaMalloc that must fail
(1 PiB). --chdir changes the working directory before the first CUDA call. --end says how
the process ends: a normal exit (with status --exit N, default 0), os._exit (no exit
handlers, as multiprocessing's workers end), or SIGKILL to itself. Before ending it prints
one line, `worker {json}`: its pid and ppid, the sizes and the return codes of its
cudaMalloc calls, where the functions ctypes found live (the module dladdr names), and
what dlerror() said right after a successful dlsym of cudaMalloc."""
import argparse
import ctypes
import json
import os
import signal
import sys


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def module_of(fn):
    libc = ctypes.CDLL(None)
    info = DlInfo()
    addr = ctypes.cast(fn, ctypes.c_void_p)
    if not libc.dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.basename(info.dli_fname.decode())


def dlerror_after_lookup():
    libc = ctypes.CDLL(None)
    libc.dlopen.restype = ctypes.c_void_p
    libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.dlsym.restype = ctypes.c_void_p
    libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    libc.dlerror.restype = ctypes.c_char_p
    h = libc.dlopen(b"libcudart.so.13", os.RTLD_NOW | os.RTLD_LOCAL)
    libc.dlsym(h, b"no_such_function_of_cudart")  # leaves an error behind ...
    found = libc.dlsym(h, b"cudaMalloc")          # ... which a successful lookup clears
    err = libc.dlerror()
    return bool(found), err.decode() if err else None


class Model:
    def __init__(self, rt):
        self.rt = rt

    def weight(self, size):
        p = ctypes.c_void_p()
        ret = self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))
        return p, ret


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chdir")
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("--end", choices=("exit", "_exit", "kill"), default="exit")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("base", type=int)
    ap.add_argument("n", type=int)
    a = ap.parse_args()
    if a.chdir:
        os.chdir(a.chdir)
    rt = ctypes.CDLL("libcudart.so.13")
    model = Model(rt)
    sizes = [a.base + i for i in range(a.n)] + ([1 << 50] if a.fail else [])
    made = [model.weight(s) for s in sizes]
    for p, ret in made:
        if ret == 0:
            rt.cudaFree(p)
    found, err = dlerror_after_lookup()
    out = {"pid": os.getpid(), "ppid": os.getppid(), "sizes": sizes, "ret": [r for _, r in made],
           "modules": {"cudaMalloc": module_of(rt.cudaMalloc),
                       "cudaGetDeviceCount": module_of(rt.cudaGetDeviceCount)},
           "dlsym_found": found, "dlerror": err, "cwd": os.getcwd()}
    print("worker " + json.dumps(out), flush=True)
    if a.end == "_exit":
        os._exit(a.exit)
    if a.end == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(a.exit)


if __name__ == "__main__":
    main()

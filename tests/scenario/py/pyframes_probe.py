"""pyframes_probe.py — device memory allocated through ctypes (the simulated libcudart) from
nested functions, methods, a generator, a comprehension, a thread, a frame an exception is
unwinding through, an except block and (with an argument) a C extension module that
allocates and launches a kernel. Each allocation size belongs to one site; each line that
matters carries a `# @tag` comment, which test_pyframes.py reads to know the lines the
stacks must show. Every allocation stays live until exit."""
import ctypes
import os
import sys
import threading

rt = ctypes.CDLL("libcudart.so.13")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
KEEP = []
KiB = 1024


def cuda_alloc(n):
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), n)  # @cuda_alloc
    if rc != 0:
        raise RuntimeError("cudaMalloc returned %d" % rc)
    KEEP.append(p)
    return p


def outer():
    def inner():
        return cuda_alloc(101 * KiB)  # @inner
    return inner()  # @outer


class Model:
    def make_weight(self):
        return cuda_alloc(102 * KiB)  # @method

    @classmethod
    def build(cls):
        return cls().make_weight()  # @classmethod


def gen():
    for _ in range(2):
        yield cuda_alloc(103 * KiB)  # @generator


def consume():
    return list(gen())  # @consume


def comprehension():
    return [cuda_alloc(104 * KiB) for _ in range(2)]  # @comprehension


def worker():
    cuda_alloc(105 * KiB)  # @thread


def unwinding():
    try:
        raise ValueError("on purpose")
    finally:
        cuda_alloc(106 * KiB)  # @finally


def catcher():
    try:
        unwinding()  # @unwinding
    except ValueError:
        cuda_alloc(107 * KiB)  # @except


def cext():
    import anaprobe_ext
    return anaprobe_ext.alloc_and_launch(108 * KiB)  # @cext


def main():
    outer()  # @main_outer
    Model.build()  # @main_method
    if os.environ.get("ANAPROBE_TWICE"):
        Model.build()  # @main_method_again
    consume()  # @main_gen
    comprehension()  # @main_comp
    t = threading.Thread(target=worker, name="probe-worker")
    t.start()
    t.join()
    catcher()  # @main_catch
    if len(sys.argv) > 1:
        cext()  # @main_cext
    print("probe done", len(KEEP))


main()  # @module

/* pyframes_ext.c — the extension module of bench/pyframes.py: loop(n) makes n
 * cudaMalloc + cudaFree pairs from C and returns the nanoseconds they took, so that the
 * Python frames above it (as deep as the caller made them) are read at every capture while
 * the interpreter's own cost stays out of the figure. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>
#include <time.h>

static PyObject *loop(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (Py_ssize_t i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess) {
            PyErr_SetString(PyExc_RuntimeError, "cudaMalloc/cudaFree failed");
            return NULL;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return PyLong_FromLongLong((long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
}

static PyMethodDef methods[] = { { "loop", loop, METH_VARARGS, "n cudaMalloc+cudaFree pairs; ns" },
                                 { NULL, NULL, 0, NULL } };
static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "pyframes_ext", NULL, -1, methods };
PyMODINIT_FUNC PyInit_pyframes_ext(void) { return PyModule_Create(&module); }

// anaprobe_ext.cu — a CPython extension module (built by test_pyframes.py with nvcc for the
// interpreter under test) whose one function allocates device memory with the GIL released
// and launches a kernel with it held, so that both calls have a native frame of their own
// between the Python caller and CUDA.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>

__global__ void anaprobe_fill(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 1.0f;
}

extern "C" __attribute__((noinline)) PyObject *anaprobe_alloc_and_launch(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    void *p = NULL;
    cudaError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = cudaMalloc(&p, (size_t)n);
    Py_END_ALLOW_THREADS
    if (rc == cudaSuccess) {
        int elems = (int)(n / 4);
        anaprobe_fill<<<(elems + 255) / 256, 256>>>((float *)p, elems);
        rc = cudaDeviceSynchronize();
    }
    if (rc != cudaSuccess) {
        PyErr_Format(PyExc_RuntimeError, "CUDA error %d", (int)rc);
        return NULL;
    }
    return PyLong_FromVoidPtr(p);
}

static PyMethodDef methods[] = {
    { "alloc_and_launch", anaprobe_alloc_and_launch, METH_VARARGS, "cudaMalloc(n), then a kernel on it" },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "anaprobe_ext", NULL, -1, methods };

PyMODINIT_FUNC PyInit_anaprobe_ext(void) { return PyModule_Create(&module); }

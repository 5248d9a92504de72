/* fake_cudnn.c — a stand-in for cuDNN (built as libcudnn_fake.so.9) that allocates device
 * memory outside any hooked library call, for test_cudnn_attribution.py.
 *
 * The preload has no cuDNN hooks: what it knows of an allocation cuDNN makes is the code
 * that called the allocation entry point, which lies in a module named libcudnn*. This
 * library reaches device memory the two ways real libraries do:
 *
 *   cudnnCreate(&h)        cudaMalloc of CUDNN_FAKE_RUNTIME_BYTES (the shared runtime,
 *                          linked by soname), freed by cudnnDestroy with cudaFree;
 *   cudnnCreateDriver(&h)  cuMemAlloc_v2 of CUDNN_FAKE_DRIVER_BYTES through a pointer from
 *                          cuGetProcAddress_v2 of dlopen("libcuda.so.1") (what a library
 *                          with the runtime linked statically does), freed by cudnnDestroy
 *                          with cuMemFree_v2 from the same place;
 *   cudnnFakeAllocators(a) hands out cudaMalloc/cudaFree as this module resolves them and
 *                          cuMemAlloc_v2/cuMemFree_v2 as cuGetProcAddress_v2 gives them, so
 *                          that the program can call them itself (the caller, not the
 *                          module that resolved the pointer, says whose allocation it is).
 *
 * Every allocation and free made here prints one line on stdout, the library's half of
 * the probe's ledger: `cudnn alloc|free api=N ptr=P size=S ret=R` (api: the numbers of
 * docs/trace-format.md; size 0 on frees). Calls are never in tail position, so the return
 * address the preload sees lies in this module whatever the optimisation level.
 * Return 0 on success, 1 when the entry points cannot be found, else the CUDA error. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDNN_FAKE_RUNTIME_BYTES (3u << 20)
#define CUDNN_FAKE_DRIVER_BYTES (5u << 20)

/* api numbers of the records (docs/trace-format.md) */
enum { API_CUDA_MALLOC = 1, API_CUDA_FREE = 10, API_CU_MEM_ALLOC = 50, API_CU_MEM_FREE = 60 };

typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*mem_free_fn)(CUdeviceptr);

/* The handle: one workspace, from the runtime or from the driver. */
struct fake_handle {
    int driver;
    uintptr_t ptr;
};

/* What cudnnFakeAllocators hands out; the probe declares the same layout. */
struct fake_allocators {
    cudaError_t (*cuda_malloc)(void **, size_t);
    cudaError_t (*cuda_free)(void *);
    mem_alloc_fn cu_mem_alloc;
    mem_free_fn cu_mem_free;
};

static mem_alloc_fn drv_alloc;
static mem_free_fn drv_free;

static void note(const char *op, int api, uintptr_t ptr, size_t size, int ret)
{
    printf("cudnn %s api=%d ptr=%llu size=%zu ret=%d\n", op, api, (unsigned long long)ptr, size, ret);
    fflush(stdout);
}

/* cuMemAlloc_v2/cuMemFree_v2 by cuGetProcAddress_v2, once; 0 when found. */
static int resolve_driver(void)
{
    if (drv_alloc && drv_free)
        return 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "fake_cudnn: %s\n", dlerror());
        return 1;
    }
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    *(void **)&gpa = dlsym(lib, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult q;
    if (!gpa || gpa("cuMemAlloc", (void **)&drv_alloc, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) ||
        gpa("cuMemFree", (void **)&drv_free, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) || !drv_alloc ||
        !drv_free) {
        fprintf(stderr, "fake_cudnn: cannot resolve cuMemAlloc/cuMemFree through cuGetProcAddress_v2\n");
        return 1;
    }
    return 0;
}

static int create(void **out, int driver)
{
    struct fake_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return 1;
    int r;
    if (driver) {
        CUdeviceptr p = 0;
        r = resolve_driver();
        if (r == 0) {
            r = (int)drv_alloc(&p, CUDNN_FAKE_DRIVER_BYTES);
            note("alloc", API_CU_MEM_ALLOC, (uintptr_t)p, CUDNN_FAKE_DRIVER_BYTES, r);
        }
        h->ptr = (uintptr_t)p;
    } else {
        void *p = NULL;
        r = (int)cudaMalloc(&p, CUDNN_FAKE_RUNTIME_BYTES);
        note("alloc", API_CUDA_MALLOC, (uintptr_t)p, CUDNN_FAKE_RUNTIME_BYTES, r);
        h->ptr = (uintptr_t)p;
    }
    h->driver = driver;
    if (r != 0) {
        free(h);
        return r;
    }
    *out = h;
    return 0;
}

int cudnnCreate(void **handle) { return create(handle, 0); }

int cudnnCreateDriver(void **handle) { return create(handle, 1); }

int cudnnDestroy(void *handle)
{
    struct fake_handle *h = handle;
    int r;
    if (h->driver) {
        r = (int)drv_free((CUdeviceptr)h->ptr);
        note("free", API_CU_MEM_FREE, h->ptr, 0, r);
    } else {
        r = (int)cudaFree((void *)h->ptr);
        note("free", API_CUDA_FREE, h->ptr, 0, r);
    }
    free(h);
    return r;
}

int cudnnFakeAllocators(struct fake_allocators *a)
{
    if (resolve_driver())
        return 1;
    a->cuda_malloc = cudaMalloc;
    a->cuda_free = cudaFree;
    a->cu_mem_alloc = drv_alloc;
    a->cu_mem_free = drv_free;
    return 0;
}

/* cudnn_probe — device memory allocated by the program, by a cuDNN-named library outside
 * any hooked call, and by the program through pointers that library resolved, for
 * test_cudnn_attribution.py (the `lib`/`call` of ALLOC and FREE records).
 *
 * In order: cudaMalloc 1 MiB (kept to the end); cudnnCreate (the library's cudaMalloc of
 * 3 MiB, kept to the end); cudnnCreateDriver (the library's cuMemAlloc_v2 of 5 MiB);
 * through the library's pointers, called here: cudaMalloc 7 MiB and cuMemAlloc_v2
 * 11 MiB — every allocation is then live, the peak — then, through the same pointers,
 * cudaFree and cuMemFree_v2 of those two; cudnnDestroy of the driver handle (the library's
 * cuMemFree_v2). Live at the end: the probe's 1 MiB and the library's 3 MiB.
 *
 * Each allocation and free prints `WHO alloc|free api=N ptr=P size=S ret=R` in call
 * order, WHO = probe (made by code of this program) or cudnn (made by the library, printed
 * by fake_cudnn.c). Exit status 0 when every call succeeded. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#define MIB (1ull << 20)

/* api numbers of the records (docs/trace-format.md) */
enum { API_CUDA_MALLOC = 1, API_CUDA_FREE = 10, API_CU_MEM_ALLOC = 50, API_CU_MEM_FREE = 60 };

/* fake_cudnn.c */
struct fake_allocators {
    cudaError_t (*cuda_malloc)(void **, size_t);
    cudaError_t (*cuda_free)(void *);
    CUresult (*cu_mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*cu_mem_free)(CUdeviceptr);
};
int cudnnCreate(void **handle);
int cudnnCreateDriver(void **handle);
int cudnnDestroy(void *handle);
int cudnnFakeAllocators(struct fake_allocators *a);

static int failures;

static void note(const char *op, int api, uintptr_t ptr, size_t size, int ret)
{
    printf("probe %s api=%d ptr=%llu size=%zu ret=%d\n", op, api, (unsigned long long)ptr, size, ret);
    fflush(stdout);
    failures += ret != 0;
}

static void check(const char *what, int r)
{
    if (r != 0) {
        fprintf(stderr, "cudnn_probe: %s returned %d\n", what, r);
        failures++;
    }
}

int main(void)
{
    void *own = NULL;
    int r = (int)cudaMalloc(&own, MIB);
    note("alloc", API_CUDA_MALLOC, (uintptr_t)own, MIB, r);

    /* The runtime handle lives to the end (its memory is live at exit): held in a static,
     * it stays reachable instead of leaking. */
    static void *rt_handle;
    void *drv_handle = NULL;
    check("cudnnCreate", cudnnCreate(&rt_handle));
    check("cudnnCreateDriver", cudnnCreateDriver(&drv_handle));

    struct fake_allocators a;
    check("cudnnFakeAllocators", cudnnFakeAllocators(&a));
    if (failures)
        return 1;
    void *rt = NULL;
    CUdeviceptr drv = 0;
    r = (int)a.cuda_malloc(&rt, 7 * MIB);
    note("alloc", API_CUDA_MALLOC, (uintptr_t)rt, 7 * MIB, r);
    r = (int)a.cu_mem_alloc(&drv, 11 * MIB);
    note("alloc", API_CU_MEM_ALLOC, (uintptr_t)drv, 11 * MIB, r);
    r = (int)a.cuda_free(rt);
    note("free", API_CUDA_FREE, (uintptr_t)rt, 0, r);
    r = (int)a.cu_mem_free(drv);
    note("free", API_CU_MEM_FREE, (uintptr_t)drv, 0, r);

    check("cudnnDestroy", cudnnDestroy(drv_handle));
    return failures != 0;
}

/*
 * handle.c — the simulated libcublas.so.13's handle and helper entry points: create and
 * destroy, version and property, status names, stream, workspace, math and pointer modes.
 *
 * cublasCreate_v2 allocates the handle's default workspace (BLAS_SIM_DEFAULT_WORKSPACE_BYTES,
 * 32 MiB, what cuBLAS uses on Hopper) with the driver's cuMemAlloc_v2 — device memory a
 * profiler sees as the library's — and creates the handle's cublasLt handle;
 * cublasDestroy_v2 frees both. cublasSetWorkspace_v2 makes GEMMs use the user's buffer
 * (256-byte aligned, else CUBLAS_STATUS_INVALID_VALUE); the default workspace stays
 * allocated until destroy, and cublasSetStream_v2 goes back to it, as NVIDIA documents
 * ("cublasSetStream unconditionally resets the workspace to the default").
 */
#include "cublas_sim.h"

#include <stdlib.h>

static struct blas_registry live = BLAS_REGISTRY_INIT;

struct cublasContext *cublas_handle(cublasHandle_t h)
{
    return blas_registry_has(&live, h) ? h : NULL;
}

BLAS_SIM_API cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    const struct blas_driver *drv = blas_driver();
    if (!drv)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasContext *h = calloc(1, sizeof(*h));
    if (!h)
        return CUBLAS_STATUS_ALLOC_FAILED;
    CUdeviceptr ws = 0;
    if (drv->mem_alloc(&ws, BLAS_SIM_DEFAULT_WORKSPACE_BYTES) != CUDA_SUCCESS) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    cublasStatus_t st = cublasLtCreate(&h->lt);
    if (st != CUBLAS_STATUS_SUCCESS || blas_registry_add(&live, h) != 0) {
        if (st == CUBLAS_STATUS_SUCCESS)
            cublasLtDestroy(h->lt);
        drv->mem_free(ws);
        free(h);
        return st == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_ALLOC_FAILED : st;
    }
    h->default_workspace = h->workspace = (void *)(uintptr_t)ws;
    h->workspace_bytes = BLAS_SIM_DEFAULT_WORKSPACE_BYTES;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->math = CUBLAS_DEFAULT_MATH;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    if (!blas_registry_remove(&live, handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasLtDestroy(handle->lt);
    blas_driver()->mem_free((CUdeviceptr)(uintptr_t)handle->default_workspace);
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    if (!version)
        return CUBLAS_STATUS_INVALID_VALUE;
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    if (!value)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; break;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; break;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; break;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API const char *cublasGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

BLAS_SIM_API const char *cublasGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}

/* Every setter's and getter's start: CUBLAS_STATUS_NOT_INITIALIZED for a bad handle, then
 * CUBLAS_STATUS_INVALID_VALUE unless `valid` (the argument is acceptable: a getter's output
 * pointer is not NULL, a setter's value is known); else SUCCESS with *h the live handle. */
static cublasStatus_t check(cublasHandle_t handle, int valid, struct cublasContext **h)
{
    *h = cublas_handle(handle);
    return !*h ? CUBLAS_STATUS_NOT_INITIALIZED
           : valid ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

static int known_math_mode(cublasMath_t mode)
{
    unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    return base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
           base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
           base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
           base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
}

static int known_pointer_mode(cublasPointerMode_t mode)
{
    return mode == CUBLAS_POINTER_MODE_HOST || mode == CUBLAS_POINTER_MODE_DEVICE;
}

BLAS_SIM_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    struct cublasContext *h;
    cublasStatus_t st = check(handle, 1, &h);
    if (st == CUBLAS_STATUS_SUCCESS) {
        h->stream = streamId;
        h->workspace = h->default_workspace;
        h->workspace_bytes = BLAS_SIM_DEFAULT_WORKSPACE_BYTES;
    }
    return st;
}

BLAS_SIM_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    struct cublasContext *h;
    cublasStatus_t st = check(handle, streamId != NULL, &h);
    if (st == CUBLAS_STATUS_SUCCESS)
        *streamId = h->stream;
    return st;
}

BLAS_SIM_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                                  size_t workspaceSizeInBytes)
{
    struct cublasContext *h;
    cublasStatus_t st = check(handle, (uintptr_t)workspace % 256 == 0 &&
                                          (!workspaceSizeInBytes || workspace), &h);
    if (st == CUBLAS_STATUS_SUCCESS) {
        h->workspace = workspaceSizeInBytes ? workspace : NULL;
        h->workspace_bytes = workspaceSizeInBytes;
    }
    return st;
}

/* A setter of one field that takes the known values only, and its getter. */
#define MODE_FNS(set, get, mode_t, field, known)                                          \
    BLAS_SIM_API cublasStatus_t set(cublasHandle_t handle, mode_t mode)                   \
    {                                                                                     \
        struct cublasContext *h;                                                          \
        cublasStatus_t st = check(handle, known(mode), &h);                               \
        if (st == CUBLAS_STATUS_SUCCESS)                                                  \
            h->field = mode;                                                              \
        return st;                                                                        \
    }                                                                                     \
    BLAS_SIM_API cublasStatus_t get(cublasHandle_t handle, mode_t *mode)                  \
    {                                                                                     \
        struct cublasContext *h;                                                          \
        cublasStatus_t st = check(handle, mode != NULL, &h);                              \
        if (st == CUBLAS_STATUS_SUCCESS)                                                  \
            *mode = h->field;                                                             \
        return st;                                                                        \
    }

MODE_FNS(cublasSetMathMode, cublasGetMathMode, cublasMath_t, math, known_math_mode)
MODE_FNS(cublasSetPointerMode_v2, cublasGetPointerMode_v2, cublasPointerMode_t, pointer_mode,
         known_pointer_mode)

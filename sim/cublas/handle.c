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

BLAS_SIM_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = streamId;
    h->workspace = h->default_workspace;
    h->workspace_bytes = BLAS_SIM_DEFAULT_WORKSPACE_BYTES;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!streamId)
        return CUBLAS_STATUS_INVALID_VALUE;
    *streamId = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                                  size_t workspaceSizeInBytes)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((uintptr_t)workspace % 256 != 0 || (workspaceSizeInBytes && !workspace))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->workspace = workspaceSizeInBytes ? workspace : NULL;
    h->workspace_bytes = workspaceSizeInBytes;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
        base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
        base != CUBLAS_FP32_EMULATED_BF16X9_MATH && base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                                    cublasPointerMode_t mode)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
                                                    cublasPointerMode_t *mode)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode)
        return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

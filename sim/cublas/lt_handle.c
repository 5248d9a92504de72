/*
 * lt_handle.c — cublasLtCreate/Destroy and the version and status entry points of the
 * simulated libcublasLt.so.13. An Lt handle holds nothing (cublasLt takes its workspace
 * per call) and allocates no device memory; it is remembered so that a NULL or destroyed
 * handle gives CUBLAS_STATUS_NOT_INITIALIZED.
 */
#include "lt.h"

#include <stdlib.h>

struct cublasLtContext {
    uint32_t magic;
};

static struct blas_registry live = BLAS_REGISTRY_INIT;

int lt_handle_live(cublasLtHandle_t h) { return blas_registry_has(&live, h); }

BLAS_SIM_API cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    if (!lightHandle)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!blas_driver())
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasLtContext *h = calloc(1, sizeof(*h));
    if (!h || blas_registry_add(&live, h) != 0) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    h->magic = 1;
    *lightHandle = h;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    if (!blas_registry_remove(&live, lightHandle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(lightHandle);
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API const char *cublasLtGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

BLAS_SIM_API const char *cublasLtGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}

BLAS_SIM_API size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

/*
 * error.c — error names and strings, and the per-thread "last error".
 *
 * Names and strings come from the shared table (format/cuda_errors.c), which holds
 * NVIDIA's own text, so programs and tests print the same on the sim as on a GPU. Unknown
 * codes answer "unrecognized error code", as the real library does.
 */
#include "sim.h"
#include "cuda_errors.h"

#include <stddef.h>

static const char unknown_code[] = "unrecognized error code";

/* Per-thread, like real CUDA: one thread's failure never shows in another's. */
static __thread cudaError_t last_error = cudaSuccess;

cudaError_t ana_sim_ret(cudaError_t err)
{
    /* cudaErrorNotReady is a status, not an error: real CUDA does not record it. */
    if (err != cudaSuccess && err != cudaErrorNotReady)
        last_error = err;
    return err;
}

ANA_SIM_API const char *cudaGetErrorName(cudaError_t error)
{
    const char *name = ana_cuda_error_name(error);
    return name ? name : unknown_code;
}

ANA_SIM_API const char *cudaGetErrorString(cudaError_t error)
{
    const char *text = ana_cuda_error_text(error);
    return text ? text : unknown_code;
}

ANA_SIM_API cudaError_t cudaGetLastError(void)
{
    cudaError_t err = last_error;
    last_error = cudaSuccess;
    return err;
}

ANA_SIM_API cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

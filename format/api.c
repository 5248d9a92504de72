/* api.c — names of the api numbers of docs/trace-format.md. */
#include "records.h"

static const char *const API_NAMES[ANA_API_COUNT] = {
    [ANA_API_MALLOC] = "cudaMalloc",
    [ANA_API_MALLOC_ASYNC] = "cudaMallocAsync",
    [ANA_API_MALLOC_MANAGED] = "cudaMallocManaged",
    [ANA_API_MALLOC_HOST] = "cudaMallocHost",
    [ANA_API_HOST_ALLOC] = "cudaHostAlloc",
    [ANA_API_MALLOC_PITCH] = "cudaMallocPitch",
    [ANA_API_MALLOC_FROM_POOL_ASYNC] = "cudaMallocFromPoolAsync",
    [ANA_API_FREE] = "cudaFree",
    [ANA_API_FREE_ASYNC] = "cudaFreeAsync",
    [ANA_API_FREE_HOST] = "cudaFreeHost",
    [ANA_API_LAUNCH_KERNEL] = "cudaLaunchKernel",
    [ANA_API_LAUNCH_KERNEL_PTSZ] = "cudaLaunchKernel_ptsz",
    [ANA_API_LAUNCH_KERNEL_EXC] = "cudaLaunchKernelExC",
    [ANA_API_LAUNCH_KERNEL_EXC_PTSZ] = "cudaLaunchKernelExC_ptsz",
    [ANA_API_STUB_LAUNCH_KERNEL] = "__cudaLaunchKernel",
    [ANA_API_STUB_LAUNCH_KERNEL_PTSZ] = "__cudaLaunchKernel_ptsz",
    [ANA_API_MEMCPY] = "cudaMemcpy",
    [ANA_API_MEMCPY_ASYNC] = "cudaMemcpyAsync",
    [ANA_API_MEMCPY_2D] = "cudaMemcpy2D",
    [ANA_API_MEMCPY_2D_ASYNC] = "cudaMemcpy2DAsync",
    [ANA_API_MEMCPY_TO_SYMBOL] = "cudaMemcpyToSymbol",
    [ANA_API_MEMCPY_FROM_SYMBOL] = "cudaMemcpyFromSymbol",
    [ANA_API_MEMCPY_PEER] = "cudaMemcpyPeer",
    [ANA_API_MEMCPY_PEER_ASYNC] = "cudaMemcpyPeerAsync",
    [ANA_API_MEMSET] = "cudaMemset",
    [ANA_API_MEMSET_ASYNC] = "cudaMemsetAsync",
    [ANA_API_MEMSET_2D] = "cudaMemset2D",
    [ANA_API_MEMSET_2D_ASYNC] = "cudaMemset2DAsync",
};

const char *ana_api_name(uint32_t api)
{
    return api < ANA_API_COUNT ? API_NAMES[api] : NULL;
}

int ana_api_is_device_alloc(uint32_t api)
{
    switch (api) {
    case ANA_API_MALLOC:
    case ANA_API_MALLOC_ASYNC:
    case ANA_API_MALLOC_MANAGED:
    case ANA_API_MALLOC_PITCH:
    case ANA_API_MALLOC_FROM_POOL_ASYNC:
        return 1;
    default:
        return 0;
    }
}

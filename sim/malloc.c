/*
 * malloc.c — the runtime's allocation entry points, answered through the driver as
 * NVIDIA's libcudart answers them: cudaMalloc calls cuMemAlloc_v2, cudaFree cuMemFree_v2,
 * cudaMallocAsync cuMemAllocAsync(_ptsz), cudaFreeAsync cuMemFreeAsync(_ptsz),
 * cudaMallocFromPoolAsync cuMemAllocFromPoolAsync(_ptsz), cudaMallocManaged
 * cuMemAllocManaged, cudaMallocHost cuMemAllocHost_v2, cudaHostAlloc cuMemHostAlloc,
 * cudaFreeHost cuMemFreeHost, cudaMallocPitch cuMemAllocPitch_v2 and cudaMemGetInfo
 * cuMemGetInfo_v2, through the pointers cuGetProcAddress_v2 gave (drvlink.c). A profiler
 * that interposes the driver therefore sees each of these runtime calls once more, nested
 * and with the same correlation id.
 *
 * What the runtime decides without the driver stays here, with the runtime's return
 * codes: NULL output pointers, zero sizes (cudaMalloc(&p, 0) is NULL and success; the
 * driver would refuse a zero size), unknown flags, cudaFree(NULL). Every entry point is
 * bracketed for the observer (ANA_SIM_RT_RETURN), which records its error as the last
 * error.
 */
#include "sim.h"

#include <stdint.h>

/* The driver, or NULL when it cannot be loaded: the runtime then reports what NVIDIA's
 * reports without a driver. */
#define DRIVER_OR_FAIL(drv)                                                             \
    const struct ana_sim_driver *drv = ana_sim_driver();                              \
    if (!drv)                                                                         \
        return cudaErrorInsufficientDriver

/* ---- device memory ------------------------------------------------------------------ */

static cudaError_t malloc_device(void **devPtr, size_t size)
{
    if (!devPtr)
        return cudaErrorInvalidValue;
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    DRIVER_OR_FAIL(drv);
    CUdeviceptr d;
    CUresult r = drv->mem_alloc(&d, size);
    if (r == CUDA_SUCCESS)
        *devPtr = anasim_ptr(d);
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    cudaMalloc_v3020_params p = { .devPtr = devPtr, .size = size };
    ANA_SIM_RT_RETURN(cudaMalloc, v3020, &p, malloc_device(devPtr, size));
}

static cudaError_t free_device(void *devPtr)
{
    if (!devPtr)
        return cudaSuccess;
    DRIVER_OR_FAIL(drv);
    return ana_sim_from_cu(drv->mem_free(anasim_dptr(devPtr)));
}

ANA_SIM_API cudaError_t cudaFree(void *devPtr)
{
    cudaFree_v3020_params p = { .devPtr = devPtr };
    ANA_SIM_RT_RETURN(cudaFree, v3020, &p, free_device(devPtr));
}

/* Stream-ordered allocation, from the default pool (pool NULL) or an explicit one. The
 * memory is usable at once, so ordering is moot. */
static cudaError_t malloc_async(void **devPtr, size_t size, cudaMemPool_t pool,
                                int explicit_pool, cudaStream_t stream, int ptsz)
{
    if (!devPtr || size == 0) {   /* the runtime's own checks, in its order */
        if (explicit_pool && !ana_sim_mem_pool_valid(pool))
            return cudaErrorInvalidValue;
        cudaError_t err = ana_sim_stream_check(stream, ptsz);
        if (err != cudaSuccess || !devPtr)
            return err != cudaSuccess ? err : cudaErrorInvalidValue;
        *devPtr = NULL;
        return cudaSuccess;
    }
    DRIVER_OR_FAIL(drv);
    CUdeviceptr d;
    CUresult r = explicit_pool
        ? drv->mem_alloc_from_pool_async[ptsz](&d, size, (CUmemoryPool)pool, (CUstream)stream)
        : drv->mem_alloc_async[ptsz](&d, size, (CUstream)stream);
    if (r == CUDA_SUCCESS)
        *devPtr = anasim_ptr(d);
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    cudaMallocAsync_v11020_params p = { .devPtr = devPtr, .size = size, .hStream = stream };
    ANA_SIM_RT_RETURN(cudaMallocAsync, v11020, &p,
                      malloc_async(devPtr, size, NULL, 0, stream, 0));
}

ANA_SIM_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream)
{
    cudaMallocAsync_ptsz_v11020_params p = { .devPtr = devPtr, .size = size, .hStream = stream };
    ANA_SIM_RT_RETURN(cudaMallocAsync_ptsz, v11020, &p,
                      malloc_async(devPtr, size, NULL, 0, stream, 1));
}

ANA_SIM_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
                                                cudaMemPool_t memPool, cudaStream_t stream)
{
    cudaMallocFromPoolAsync_v11020_params p = { .ptr = ptr, .size = size, .memPool = memPool,
                                                .stream = stream };
    ANA_SIM_RT_RETURN(cudaMallocFromPoolAsync, v11020, &p,
                      malloc_async(ptr, size, memPool, 1, stream, 0));
}

ANA_SIM_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
                                                     cudaMemPool_t memPool,
                                                     cudaStream_t stream)
{
    cudaMallocFromPoolAsync_ptsz_v11020_params p = { .ptr = ptr, .size = size,
                                                     .memPool = memPool, .stream = stream };
    ANA_SIM_RT_RETURN(cudaMallocFromPoolAsync_ptsz, v11020, &p,
                      malloc_async(ptr, size, memPool, 1, stream, 1));
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, int ptsz)
{
    if (!devPtr)
        return ana_sim_stream_check(stream, ptsz);
    DRIVER_OR_FAIL(drv);
    return ana_sim_from_cu(drv->mem_free_async[ptsz](anasim_dptr(devPtr), (CUstream)stream));
}

ANA_SIM_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    cudaFreeAsync_v11020_params p = { .devPtr = devPtr, .hStream = stream };
    ANA_SIM_RT_RETURN(cudaFreeAsync, v11020, &p, free_async(devPtr, stream, 0));
}

ANA_SIM_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream)
{
    cudaFreeAsync_ptsz_v11020_params p = { .devPtr = devPtr, .hStream = stream };
    ANA_SIM_RT_RETURN(cudaFreeAsync_ptsz, v11020, &p, free_async(devPtr, stream, 1));
}

static cudaError_t malloc_pitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!devPtr || !pitch)
        return cudaErrorInvalidValue;
    size_t row = anasim_round_up(width, ANA_SIM_PITCH_ALIGN);
    if (height && row > SIZE_MAX / height)
        return cudaErrorMemoryAllocation;
    if (row * height == 0) {
        *devPtr = NULL;
        *pitch = row;
        return cudaSuccess;
    }
    DRIVER_OR_FAIL(drv);
    CUdeviceptr d;
    size_t got;
    CUresult r = drv->mem_alloc_pitch(&d, &got, width, height, 16);
    if (r == CUDA_SUCCESS) {
        *devPtr = anasim_ptr(d);
        *pitch = got;
    }
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
                                        size_t height)
{
    cudaMallocPitch_v3020_params p = { .devPtr = devPtr, .pitch = pitch, .width = width,
                                       .height = height };
    ANA_SIM_RT_RETURN(cudaMallocPitch, v3020, &p,
                      malloc_pitch(devPtr, pitch, width, height));
}

static cudaError_t malloc_managed(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr || size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return cudaErrorInvalidValue;
    DRIVER_OR_FAIL(drv);
    CUdeviceptr d;
    CUresult r = drv->mem_alloc_managed(&d, size, flags);
    if (r == CUDA_SUCCESS)
        *devPtr = anasim_ptr(d);
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    cudaMallocManaged_v6000_params p = { .devPtr = devPtr, .size = size, .flags = flags };
    ANA_SIM_RT_RETURN(cudaMallocManaged, v6000, &p, malloc_managed(devPtr, size, flags));
}

/* ---- pinned host memory ------------------------------------------------------------ */

/* cudaHostAlloc (host_alloc = 1) and cudaMallocHost (0, flags 0). */
static cudaError_t malloc_host(void **pHost, size_t size, unsigned int flags, int host_alloc)
{
    const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped |
                           cudaHostAllocWriteCombined;
    if (!pHost || (flags & ~known))
        return cudaErrorInvalidValue;
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    DRIVER_OR_FAIL(drv);
    void *p;
    CUresult r = host_alloc ? drv->mem_host_alloc(&p, size, flags)
                            : drv->mem_alloc_host(&p, size);
    if (r == CUDA_SUCCESS)
        *pHost = p;
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    cudaHostAlloc_v3020_params p = { .pHost = pHost, .size = size, .flags = flags };
    ANA_SIM_RT_RETURN(cudaHostAlloc, v3020, &p, malloc_host(pHost, size, flags, 1));
}

ANA_SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    cudaMallocHost_v3020_params p = { .ptr = ptr, .size = size };
    ANA_SIM_RT_RETURN(cudaMallocHost, v3020, &p, malloc_host(ptr, size, 0, 0));
}

static cudaError_t free_host(void *ptr)
{
    if (!ptr)
        return cudaSuccess;
    DRIVER_OR_FAIL(drv);
    return ana_sim_from_cu(drv->mem_free_host(ptr));
}

ANA_SIM_API cudaError_t cudaFreeHost(void *ptr)
{
    cudaFreeHost_v3020_params p = { .ptr = ptr };
    ANA_SIM_RT_RETURN(cudaFreeHost, v3020, &p, free_host(ptr));
}

/* ---- capacity ----------------------------------------------------------------------- */

static cudaError_t mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return cudaErrorInvalidValue;
    DRIVER_OR_FAIL(drv);
    return ana_sim_from_cu(drv->mem_get_info(free_bytes, total_bytes));
}

ANA_SIM_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    cudaMemGetInfo_v3020_params p = { .free = free, .total = total };
    ANA_SIM_RT_RETURN(cudaMemGetInfo, v3020, &p, mem_get_info(free, total));
}

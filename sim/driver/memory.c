/*
 * memory.c — the driver's allocation, free, query, copy and set entry points.
 *
 * Each validates its arguments with the driver's return codes and hands the request to the
 * device model in libcudart (anasim_mem_*), which charges the one capacity, keeps the one
 * allocation table and emits the CUPTI memory records. The stream-ordered ones exist in
 * the legacy-stream and per-thread-default-stream (_ptsz) forms NVIDIA exports. Copies and
 * sets are synchronous, on the legacy default stream.
 */
#include "driver.h"

static CUresult alloc(anasim_mem_kind kind, void **out, size_t bytes, unsigned flags)
{
    if (!out || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    anasim_alloc req = { kind, bytes, flags, 0, NULL, 0, NULL };
    return anasim_mem_alloc(&req, out);
}

/* The device-pointer forms write a CUdeviceptr. */
static CUresult alloc_dptr(anasim_mem_kind kind, CUdeviceptr *dptr, size_t bytes,
                           unsigned flags)
{
    void *p = NULL;
    CUresult r = alloc(kind, dptr ? &p : NULL, bytes, flags);
    if (r == CUDA_SUCCESS)
        *dptr = anasim_dptr(p);
    return r;
}

ANA_DRV_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    cuMemAlloc_v2_params p = { .dptr = dptr, .bytesize = bytesize };
    ANA_DRV_RETURN_INIT(cuMemAlloc_v2, &p, alloc_dptr(ANASIM_MEM_DEVICE, dptr, bytesize, 0));
}

static CUresult managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_dptr(ANASIM_MEM_MANAGED, dptr, bytesize, flags);
}

ANA_DRV_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    cuMemAllocManaged_params p = { .dptr = dptr, .bytesize = bytesize, .flags = flags };
    ANA_DRV_RETURN_INIT(cuMemAllocManaged, &p, managed(dptr, bytesize, flags));
}

/* Rows padded to ANA_SIM_PITCH_ALIGN (512) bytes, as the runtime's cudaMallocPitch
 * promises. */
static CUresult pitch_alloc(CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height,
                            unsigned int elem)
{
    if (!dptr || !pPitch || width == 0 || height == 0 ||
        (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = anasim_round_up(width, ANA_SIM_PITCH_ALIGN);
    if (row < width || row > SIZE_MAX / height)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = alloc_dptr(ANASIM_MEM_DEVICE, dptr, row * height, 0);
    if (r == CUDA_SUCCESS)
        *pPitch = row;
    return r;
}

ANA_DRV_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                        size_t Height, unsigned int ElementSizeBytes)
{
    cuMemAllocPitch_v2_params p = { .dptr = dptr, .pPitch = pPitch,
                                    .WidthInBytes = WidthInBytes, .Height = Height,
                                    .ElementSizeBytes = ElementSizeBytes };
    ANA_DRV_RETURN_INIT(cuMemAllocPitch_v2, &p,
                        pitch_alloc(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
}

ANA_DRV_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    cuMemFree_v2_params p = { .dptr = dptr };
    ANA_DRV_RETURN_INIT(cuMemFree_v2, &p, anasim_mem_free(anasim_ptr(dptr), 0, 0, NULL, 0));
}

/* ---- pinned host memory ---------------------------------------------------------- */

ANA_DRV_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    cuMemAllocHost_v2_params p = { .pp = pp, .bytesize = bytesize };
    ANA_DRV_RETURN_INIT(cuMemAllocHost_v2, &p, alloc(ANASIM_MEM_PINNED, pp, bytesize, 0));
}

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                           CU_MEMHOSTALLOC_WRITECOMBINED;
    if (flags & ~known)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc(ANASIM_MEM_PINNED, pp, bytesize, flags);
}

ANA_DRV_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    cuMemHostAlloc_params p = { .pp = pp, .bytesize = bytesize, .Flags = Flags };
    ANA_DRV_RETURN_INIT(cuMemHostAlloc, &p, host_alloc(pp, bytesize, Flags));
}

ANA_DRV_API CUresult cuMemFreeHost(void *p)
{
    cuMemFreeHost_params prm = { .p = p };
    ANA_DRV_RETURN_INIT(cuMemFreeHost, &prm, anasim_mem_free(p, 1, 0, NULL, 0));
}

/* ---- stream-ordered allocation ------------------------------------------------------ */

/* pool NULL: the default pool; explicit_pool: cuMemAllocFromPoolAsync, which needs one. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                            int explicit_pool, CUstream stream, int ptsz)
{
    if (!dptr || bytes == 0 || (explicit_pool && !pool))
        return CUDA_ERROR_INVALID_VALUE;
    anasim_alloc req = { ANASIM_MEM_DEVICE, bytes, 0, 1, stream, ptsz, pool };
    void *p;
    CUresult r = anasim_mem_alloc(&req, &p);
    if (r == CUDA_SUCCESS)
        *dptr = anasim_dptr(p);
    return r;
}

ANA_DRV_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    cuMemAllocAsync_params p = { .dptr = dptr, .bytesize = bytesize, .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemAllocAsync, &p, alloc_async(dptr, bytesize, NULL, 0, hStream, 0));
}

ANA_DRV_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    cuMemAllocAsync_ptsz_params p = { .dptr = dptr, .bytesize = bytesize, .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemAllocAsync_ptsz, &p,
                        alloc_async(dptr, bytesize, NULL, 0, hStream, 1));
}

ANA_DRV_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                             CUmemoryPool pool, CUstream hStream)
{
    cuMemAllocFromPoolAsync_params p = { .dptr = dptr, .bytesize = bytesize, .pool = pool,
                                         .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemAllocFromPoolAsync, &p,
                        alloc_async(dptr, bytesize, pool, 1, hStream, 0));
}

ANA_DRV_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream hStream)
{
    cuMemAllocFromPoolAsync_ptsz_params p = { .dptr = dptr, .bytesize = bytesize,
                                              .pool = pool, .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemAllocFromPoolAsync_ptsz, &p,
                        alloc_async(dptr, bytesize, pool, 1, hStream, 1));
}

ANA_DRV_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    cuMemFreeAsync_params p = { .dptr = dptr, .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemFreeAsync, &p,
                        anasim_mem_free(anasim_ptr(dptr), 0, 1, hStream, 0));
}

ANA_DRV_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    cuMemFreeAsync_ptsz_params p = { .dptr = dptr, .hStream = hStream };
    ANA_DRV_RETURN_INIT(cuMemFreeAsync_ptsz, &p,
                        anasim_mem_free(anasim_ptr(dptr), 0, 1, hStream, 1));
}

/* ---- queries ------------------------------------------------------------------------ */

static CUresult get_info(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    anasim_mem_info(free_bytes, total_bytes);
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    cuMemGetInfo_v2_params p = { .free = free, .total = total };
    ANA_DRV_RETURN_INIT(cuMemGetInfo_v2, &p, get_info(free, total));
}

static CUresult address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    void *base;
    size_t size;
    CUresult r = anasim_mem_range(anasim_ptr(dptr), &base, &size);
    if (r == CUDA_SUCCESS && pbase)
        *pbase = anasim_dptr(base);
    if (r == CUDA_SUCCESS && psize)
        *psize = size;
    return r;
}

ANA_DRV_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    cuMemGetAddressRange_v2_params p = { .pbase = pbase, .psize = psize, .dptr = dptr };
    ANA_DRV_RETURN_INIT(cuMemGetAddressRange_v2, &p, address_range(pbase, psize, dptr));
}

/* ---- copies and sets ---------------------------------------------------------------- */

ANA_DRV_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    cuMemcpyHtoD_v2_params p = { .dstDevice = dstDevice, .srcHost = srcHost,
                                 .ByteCount = ByteCount };
    ANA_DRV_RETURN_INIT(cuMemcpyHtoD_v2, &p,
                        anasim_mem_copy(anasim_ptr(dstDevice), srcHost, ByteCount, 1));
}

ANA_DRV_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    cuMemcpyDtoH_v2_params p = { .dstHost = dstHost, .srcDevice = srcDevice,
                                 .ByteCount = ByteCount };
    ANA_DRV_RETURN_INIT(cuMemcpyDtoH_v2, &p,
                        anasim_mem_copy(dstHost, anasim_ptr(srcDevice), ByteCount, 2));
}

ANA_DRV_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                     size_t ByteCount)
{
    cuMemcpyDtoD_v2_params p = { .dstDevice = dstDevice, .srcDevice = srcDevice,
                                 .ByteCount = ByteCount };
    ANA_DRV_RETURN_INIT(cuMemcpyDtoD_v2, &p,
                        anasim_mem_copy(anasim_ptr(dstDevice), anasim_ptr(srcDevice),
                                        ByteCount, 3));
}

ANA_DRV_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    cuMemsetD8_v2_params p = { .dstDevice = dstDevice, .uc = uc, .N = N };
    ANA_DRV_RETURN_INIT(cuMemsetD8_v2, &p, anasim_mem_set(anasim_ptr(dstDevice), uc, N));
}

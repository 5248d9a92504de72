/* calls.c — the API calls cupti/ subscribes to (CALLS, the one list) and, for each, how its
 * record is made from the parameters CUPTI hands the callback (generated_cuda_*_meta.h),
 * with the record builders a hook of that call uses (calls.h), so one call gives the same
 * record whichever saw it (docs/trace-format.md, "GPU activity and correlation").
 * Called by cupti.c (ana_cupti_calls_enable, at start) and callback.c (ana_cupti_call_of
 * and each entry's rec, at a call's exit); calls the preload's calls/ and core (kernel ids)
 * and library.c. Each entry names a callback id, the api number its record gets and the
 * function that reads its parameters. */
#define _GNU_SOURCE
#include "cupti_int.h"

/* cupti.h (through cupti_int.h) brings the *_params structs of generated_cuda_meta.h and
 * generated_cuda_runtime_api_meta.h. */

#include "calls.h"

#define REC(name) static int name(ana_call *c, uint32_t api, int r, const void *params)
#define P(type) const type *p = (const type *)params
#define U(x) ANA_U64(x)

static dim3 d3(unsigned x, unsigned y, unsigned z) { return (dim3){ x, y, z }; }
/* Bytes of a 3D extent (width is in bytes for linear memory). */
static uint64_t extent_bytes(struct cudaExtent e) { return (uint64_t)e.width * e.height * e.depth; }

/* ---- runtime launches ---- */

/* __cudaLaunchKernel has a callback id but no params struct in the headers: its
 * parameters, in the order of the function's arguments. */
typedef struct { cudaKernel_t kernel; dim3 grid, block; void **args; size_t shmem; cudaStream_t stream; } stub_launch_params;

REC(rt_launch)
{
    P(cudaLaunchKernel_v7000_params);
    ana_rec_launch_done(c, api, r, ana_kernel_id_of_fn(p->func), p->gridDim, p->blockDim, p->sharedMem,
                        U(p->stream), &(ana_launch_args){ p->func, p->args, 0 });
    return 1;
}
REC(rt_launch_cooperative)
{
    P(cudaLaunchCooperativeKernel_v9000_params);
    ana_rec_launch_done(c, api, r, ana_kernel_id_of_fn(p->func), p->gridDim, p->blockDim, p->sharedMem,
                        U(p->stream), &(ana_launch_args){ p->func, p->args, 0 });
    return 1;
}
REC(rt_launch_exc)
{
    P(cudaLaunchKernelExC_v11060_params);
    if (!p->config)
        return 0;
    ana_rec_launch_done(c, api, r, ana_kernel_id_of_fn(p->func), p->config->gridDim, p->config->blockDim,
                        p->config->dynamicSmemBytes, U(p->config->stream),
                        &(ana_launch_args){ p->func, p->args, 0 });
    return 1;
}
REC(rt_graph_launch)
{
    P(cudaGraphLaunch_v10000_params);
    ana_rec_launch_done(c, api, r, 0, d3(0, 0, 0), d3(0, 0, 0), 0, U(p->stream), NULL);
    return 1;
}
REC(rt_stub_launch)
{
    P(stub_launch_params);
    ana_rec_launch_done(c, api, r, ana_kernel_id_of_handle(p->kernel), p->grid, p->block, p->shmem,
                        U(p->stream), &(ana_launch_args){ p->kernel, p->args, 0 });
    return 1;
}

/* ---- runtime copies and sets (ptds/ptsz variants share their base's layout) ---- */

REC(rt_memcpy)
{
    P(cudaMemcpy_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->count, p->kind, 0);
    return 1;
}
REC(rt_memcpy_async)
{
    P(cudaMemcpyAsync_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->count, p->kind, U(p->stream));
    return 1;
}
REC(rt_memcpy_2d)
{
    P(cudaMemcpy2D_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->width * p->height, p->kind, 0);
    return 1;
}
REC(rt_memcpy_2d_async)
{
    P(cudaMemcpy2DAsync_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->width * p->height, p->kind, U(p->stream));
    return 1;
}
REC(rt_memcpy_to_symbol)
{
    P(cudaMemcpyToSymbol_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->symbol), U(p->src), p->count, p->kind, 0);
    return 1;
}
REC(rt_memcpy_to_symbol_async)
{
    P(cudaMemcpyToSymbolAsync_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->symbol), U(p->src), p->count, p->kind, U(p->stream));
    return 1;
}
REC(rt_memcpy_from_symbol)
{
    P(cudaMemcpyFromSymbol_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->symbol), p->count, p->kind, 0);
    return 1;
}
REC(rt_memcpy_from_symbol_async)
{
    P(cudaMemcpyFromSymbolAsync_v3020_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->symbol), p->count, p->kind, U(p->stream));
    return 1;
}
REC(rt_memcpy_peer)
{
    P(cudaMemcpyPeer_v4000_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->count, cudaMemcpyDeviceToDevice, 0);
    return 1;
}
REC(rt_memcpy_peer_async)
{
    P(cudaMemcpyPeerAsync_v4000_params);
    ana_rec_memcpy_done(c, api, r, U(p->dst), U(p->src), p->count, cudaMemcpyDeviceToDevice, U(p->stream));
    return 1;
}
REC(rt_memcpy_3d)
{
    P(cudaMemcpy3D_v3020_params);
    if (!p->p)
        return 0;
    ana_rec_memcpy_done(c, api, r, U(p->p->dstPtr.ptr), U(p->p->srcPtr.ptr), extent_bytes(p->p->extent),
                        p->p->kind, 0);
    return 1;
}
REC(rt_memcpy_3d_async)
{
    P(cudaMemcpy3DAsync_v3020_params);
    if (!p->p)
        return 0;
    ana_rec_memcpy_done(c, api, r, U(p->p->dstPtr.ptr), U(p->p->srcPtr.ptr), extent_bytes(p->p->extent),
                        p->p->kind, U(p->stream));
    return 1;
}
REC(rt_memset)
{
    P(cudaMemset_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->devPtr), p->value, p->count, 0);
    return 1;
}
REC(rt_memset_async)
{
    P(cudaMemsetAsync_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->devPtr), p->value, p->count, U(p->stream));
    return 1;
}
REC(rt_memset_2d)
{
    P(cudaMemset2D_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->devPtr), p->value, p->width * p->height, 0);
    return 1;
}
REC(rt_memset_2d_async)
{
    P(cudaMemset2DAsync_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->devPtr), p->value, p->width * p->height, U(p->stream));
    return 1;
}
REC(rt_memset_3d)
{
    P(cudaMemset3D_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->pitchedDevPtr.ptr), p->value, extent_bytes(p->extent), 0);
    return 1;
}
REC(rt_memset_3d_async)
{
    P(cudaMemset3DAsync_v3020_params);
    ana_rec_memset_done(c, api, r, U(p->pitchedDevPtr.ptr), p->value, extent_bytes(p->extent), U(p->stream));
    return 1;
}

/* ---- runtime memory ---- */

#define ALLOC(ptrp, size, stream, flags) \
    ana_rec_alloc_done(c, api, r, ANA_OUT(r, ptrp), size, ana_current_device(), stream, flags)

REC(rt_malloc) { P(cudaMalloc_v3020_params); ALLOC(p->devPtr, p->size, 0, 0); return 1; }
REC(rt_malloc_host) { P(cudaMallocHost_v3020_params); ALLOC(p->ptr, p->size, 0, 0); return 1; }
REC(rt_host_alloc) { P(cudaHostAlloc_v3020_params); ALLOC(p->pHost, p->size, 0, p->flags); return 1; }
REC(rt_malloc_managed) { P(cudaMallocManaged_v6000_params); ALLOC(p->devPtr, p->size, 0, p->flags); return 1; }
REC(rt_malloc_async)
{
    P(cudaMallocAsync_v11020_params);
    ALLOC(p->devPtr, p->size, U(p->hStream), 0);
    return 1;
}
REC(rt_malloc_from_pool)
{
    P(cudaMallocFromPoolAsync_v11020_params);
    ALLOC(p->ptr, p->size, U(p->stream), 0);
    return 1;
}
REC(rt_malloc_pitch)
{
    P(cudaMallocPitch_v3020_params);
    ALLOC(p->devPtr, ana_pitched_bytes(r, p->pitch, p->width, p->height), 0, 0);
    return 1;
}
REC(rt_free) { P(cudaFree_v3020_params); ana_rec_free_done(c, api, r, U(p->devPtr), 0); return 1; }
REC(rt_free_host) { P(cudaFreeHost_v3020_params); ana_rec_free_done(c, api, r, U(p->ptr), 0); return 1; }
REC(rt_free_async)
{
    P(cudaFreeAsync_v11020_params);
    ana_rec_free_done(c, api, r, U(p->devPtr), U(p->hStream));
    return 1;
}

/* ---- driver launches, copies and sets ---- */

REC(cu_launch) /* the kernel is named by its GPU_KERNEL record */
{
    P(cuLaunchKernel_params);
    ana_rec_launch_done(c, api, r, 0, d3(p->gridDimX, p->gridDimY, p->gridDimZ),
                        d3(p->blockDimX, p->blockDimY, p->blockDimZ), p->sharedMemBytes, U(p->hStream),
                        &(ana_launch_args){ p->f, p->kernelParams, 1 });
    return 1;
}
REC(cu_launch_ex)
{
    P(cuLaunchKernelEx_params);
    const CUlaunchConfig *k = p->config;
    if (!k)
        return 0;
    ana_rec_launch_done(c, api, r, 0, d3(k->gridDimX, k->gridDimY, k->gridDimZ),
                        d3(k->blockDimX, k->blockDimY, k->blockDimZ), k->sharedMemBytes, U(k->hStream),
                        &(ana_launch_args){ p->f, p->kernelParams, 1 });
    return 1;
}
REC(cu_graph_launch)
{
    P(cuGraphLaunch_params);
    ana_rec_launch_done(c, api, r, 0, d3(0, 0, 0), d3(0, 0, 0), 0, U(p->hStream), NULL);
    return 1;
}

#define COPY(dst, src, bytes, dir, stream) ana_rec_memcpy_done(c, api, r, dst, src, bytes, dir, stream)

REC(cu_memcpy) { P(cuMemcpy_params); COPY(p->dst, p->src, p->ByteCount, cudaMemcpyDefault, 0); return 1; }
REC(cu_memcpy_async)
{
    P(cuMemcpyAsync_params);
    COPY(p->dst, p->src, p->ByteCount, cudaMemcpyDefault, U(p->hStream));
    return 1;
}
REC(cu_htod)
{
    P(cuMemcpyHtoD_v2_params);
    COPY(p->dstDevice, U(p->srcHost), p->ByteCount, cudaMemcpyHostToDevice, 0);
    return 1;
}
REC(cu_htod_async)
{
    P(cuMemcpyHtoDAsync_v2_params);
    COPY(p->dstDevice, U(p->srcHost), p->ByteCount, cudaMemcpyHostToDevice, U(p->hStream));
    return 1;
}
REC(cu_dtoh)
{
    P(cuMemcpyDtoH_v2_params);
    COPY(U(p->dstHost), p->srcDevice, p->ByteCount, cudaMemcpyDeviceToHost, 0);
    return 1;
}
REC(cu_dtoh_async)
{
    P(cuMemcpyDtoHAsync_v2_params);
    COPY(U(p->dstHost), p->srcDevice, p->ByteCount, cudaMemcpyDeviceToHost, U(p->hStream));
    return 1;
}
REC(cu_dtod)
{
    P(cuMemcpyDtoD_v2_params);
    COPY(p->dstDevice, p->srcDevice, p->ByteCount, cudaMemcpyDeviceToDevice, 0);
    return 1;
}
REC(cu_dtod_async)
{
    P(cuMemcpyDtoDAsync_v2_params);
    COPY(p->dstDevice, p->srcDevice, p->ByteCount, cudaMemcpyDeviceToDevice, U(p->hStream));
    return 1;
}
REC(cu_memset_d8)
{
    P(cuMemsetD8_v2_params);
    ana_rec_memset_done(c, api, r, p->dstDevice, p->uc, p->N, 0);
    return 1;
}
REC(cu_memset_d32)
{
    P(cuMemsetD32_v2_params);
    ana_rec_memset_done(c, api, r, p->dstDevice, p->ui, (uint64_t)p->N * 4, 0);
    return 1;
}
REC(cu_memset_d8_async)
{
    P(cuMemsetD8Async_params);
    ana_rec_memset_done(c, api, r, p->dstDevice, p->uc, p->N, U(p->hStream));
    return 1;
}
REC(cu_memset_d32_async)
{
    P(cuMemsetD32Async_params);
    ana_rec_memset_done(c, api, r, p->dstDevice, p->ui, (uint64_t)p->N * 4, U(p->hStream));
    return 1;
}

/* ---- driver memory and virtual memory (as preload/hooks/driver.c records them) ---- */

REC(cu_alloc) { P(cuMemAlloc_v2_params); ALLOC(p->dptr, p->bytesize, 0, 0); return 1; }
REC(cu_alloc_async) { P(cuMemAllocAsync_params); ALLOC(p->dptr, p->bytesize, U(p->hStream), 0); return 1; }
REC(cu_alloc_managed) { P(cuMemAllocManaged_params); ALLOC(p->dptr, p->bytesize, 0, p->flags); return 1; }
REC(cu_alloc_host) { P(cuMemAllocHost_v2_params); ALLOC(p->pp, p->bytesize, 0, 0); return 1; }
REC(cu_host_alloc) { P(cuMemHostAlloc_params); ALLOC(p->pp, p->bytesize, 0, p->Flags); return 1; }
REC(cu_alloc_from_pool)
{
    P(cuMemAllocFromPoolAsync_params);
    ALLOC(p->dptr, p->bytesize, U(p->hStream), 0);
    return 1;
}
REC(cu_alloc_pitch)
{
    P(cuMemAllocPitch_v2_params);
    ALLOC(p->dptr, ana_pitched_bytes(r, p->pPitch, p->WidthInBytes, p->Height), 0, 0);
    return 1;
}
REC(cu_mem_create)
{
    P(cuMemCreate_params);
    ana_rec_alloc_done(c, api, r, ANA_OUT(r, p->handle), p->size, ana_mem_create_device(p->prop), 0, p->flags);
    return 1;
}
REC(cu_free) { P(cuMemFree_v2_params); ana_rec_free_done(c, api, r, p->dptr, 0); return 1; }
REC(cu_free_async) { P(cuMemFreeAsync_params); ana_rec_free_done(c, api, r, p->dptr, U(p->hStream)); return 1; }
REC(cu_free_host) { P(cuMemFreeHost_params); ana_rec_free_done(c, api, r, U(p->p), 0); return 1; }
REC(cu_release) { P(cuMemRelease_params); ana_rec_free_done(c, api, r, p->handle, 0); return 1; }

#define VMM(va, size, handle, offset, device, flags) \
    ana_rec_vmm_done(c, api, r, va, size, handle, offset, device, flags)

REC(cu_reserve)
{
    P(cuMemAddressReserve_params);
    VMM(ANA_OUT(r, p->ptr), p->size, 0, 0, ana_current_device(), p->flags);
    return 1;
}
REC(cu_address_free)
{
    P(cuMemAddressFree_params);
    VMM(p->ptr, p->size, 0, 0, ana_current_device(), 0);
    return 1;
}
REC(cu_map)
{
    P(cuMemMap_params);
    VMM(p->ptr, p->size, p->handle, p->offset, ana_current_device(), p->flags);
    return 1;
}
REC(cu_unmap) { P(cuMemUnmap_params); VMM(p->ptr, p->size, 0, 0, ana_current_device(), 0); return 1; }
REC(cu_set_access)
{
    P(cuMemSetAccess_params);
    VMM(p->ptr, p->size, 0, 0, ana_access_device(p->desc, p->count), ana_access_flags(p->desc, p->count));
    return 1;
}

/* ---- what we subscribe to ---- */

#define RT(name, api, rec) { CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name, api, rec }
#define DRV(name, api, rec) { CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name, api, rec }

/* Every call we correlate (when a hook records it) or record (when none does). 3D peer
 * copies (cudaMemcpy3DPeer*) have no api number: they are neither. The *SymbolAsync copies
 * record the api number of their synchronous form. */
static const ana_cupti_call CALLS[] = {
    /* runtime launches */
    RT(cudaLaunchKernel_v7000, ANA_API_LAUNCH_KERNEL, rt_launch),
    RT(cudaLaunchKernel_ptsz_v7000, ANA_API_LAUNCH_KERNEL_PTSZ, rt_launch),
    RT(cudaLaunchKernelExC_v11060, ANA_API_LAUNCH_KERNEL_EXC, rt_launch_exc),
    RT(cudaLaunchKernelExC_ptsz_v11060, ANA_API_LAUNCH_KERNEL_EXC_PTSZ, rt_launch_exc),
    RT(cudaLaunchCooperativeKernel_v9000, ANA_API_LAUNCH_COOPERATIVE, rt_launch_cooperative),
    RT(cudaLaunchCooperativeKernel_ptsz_v9000, ANA_API_LAUNCH_COOPERATIVE, rt_launch_cooperative),
    RT(cudaGraphLaunch_v10000, ANA_API_GRAPH_LAUNCH, rt_graph_launch),
    RT(cudaGraphLaunch_ptsz_v10000, ANA_API_GRAPH_LAUNCH_PTSZ, rt_graph_launch),
    RT(__cudaLaunchKernel_v13000, ANA_API_STUB_LAUNCH_KERNEL, rt_stub_launch),
    RT(__cudaLaunchKernel_ptsz_v13000, ANA_API_STUB_LAUNCH_KERNEL_PTSZ, rt_stub_launch),
    /* runtime copies */
    RT(cudaMemcpy_v3020, ANA_API_MEMCPY, rt_memcpy),
    RT(cudaMemcpy_ptds_v7000, ANA_API_MEMCPY, rt_memcpy),
    RT(cudaMemcpyAsync_v3020, ANA_API_MEMCPY_ASYNC, rt_memcpy_async),
    RT(cudaMemcpyAsync_ptsz_v7000, ANA_API_MEMCPY_ASYNC, rt_memcpy_async),
    RT(cudaMemcpy2D_v3020, ANA_API_MEMCPY_2D, rt_memcpy_2d),
    RT(cudaMemcpy2D_ptds_v7000, ANA_API_MEMCPY_2D, rt_memcpy_2d),
    RT(cudaMemcpy2DAsync_v3020, ANA_API_MEMCPY_2D_ASYNC, rt_memcpy_2d_async),
    RT(cudaMemcpy2DAsync_ptsz_v7000, ANA_API_MEMCPY_2D_ASYNC, rt_memcpy_2d_async),
    RT(cudaMemcpyToSymbol_v3020, ANA_API_MEMCPY_TO_SYMBOL, rt_memcpy_to_symbol),
    RT(cudaMemcpyToSymbol_ptds_v7000, ANA_API_MEMCPY_TO_SYMBOL, rt_memcpy_to_symbol),
    RT(cudaMemcpyToSymbolAsync_v3020, ANA_API_MEMCPY_TO_SYMBOL, rt_memcpy_to_symbol_async),
    RT(cudaMemcpyToSymbolAsync_ptsz_v7000, ANA_API_MEMCPY_TO_SYMBOL, rt_memcpy_to_symbol_async),
    RT(cudaMemcpyFromSymbol_v3020, ANA_API_MEMCPY_FROM_SYMBOL, rt_memcpy_from_symbol),
    RT(cudaMemcpyFromSymbol_ptds_v7000, ANA_API_MEMCPY_FROM_SYMBOL, rt_memcpy_from_symbol),
    RT(cudaMemcpyFromSymbolAsync_v3020, ANA_API_MEMCPY_FROM_SYMBOL, rt_memcpy_from_symbol_async),
    RT(cudaMemcpyFromSymbolAsync_ptsz_v7000, ANA_API_MEMCPY_FROM_SYMBOL, rt_memcpy_from_symbol_async),
    RT(cudaMemcpyPeer_v4000, ANA_API_MEMCPY_PEER, rt_memcpy_peer),
    RT(cudaMemcpyPeerAsync_v4000, ANA_API_MEMCPY_PEER_ASYNC, rt_memcpy_peer_async),
    RT(cudaMemcpy3D_v3020, ANA_API_MEMCPY_3D, rt_memcpy_3d),
    RT(cudaMemcpy3D_ptds_v7000, ANA_API_MEMCPY_3D, rt_memcpy_3d),
    RT(cudaMemcpy3DAsync_v3020, ANA_API_MEMCPY_3D_ASYNC, rt_memcpy_3d_async),
    RT(cudaMemcpy3DAsync_ptsz_v7000, ANA_API_MEMCPY_3D_ASYNC, rt_memcpy_3d_async),
    /* runtime sets */
    RT(cudaMemset_v3020, ANA_API_MEMSET, rt_memset),
    RT(cudaMemset_ptds_v7000, ANA_API_MEMSET, rt_memset),
    RT(cudaMemsetAsync_v3020, ANA_API_MEMSET_ASYNC, rt_memset_async),
    RT(cudaMemsetAsync_ptsz_v7000, ANA_API_MEMSET_ASYNC, rt_memset_async),
    RT(cudaMemset2D_v3020, ANA_API_MEMSET_2D, rt_memset_2d),
    RT(cudaMemset2D_ptds_v7000, ANA_API_MEMSET_2D, rt_memset_2d),
    RT(cudaMemset2DAsync_v3020, ANA_API_MEMSET_2D_ASYNC, rt_memset_2d_async),
    RT(cudaMemset2DAsync_ptsz_v7000, ANA_API_MEMSET_2D_ASYNC, rt_memset_2d_async),
    RT(cudaMemset3D_v3020, ANA_API_MEMSET_3D, rt_memset_3d),
    RT(cudaMemset3D_ptds_v7000, ANA_API_MEMSET_3D, rt_memset_3d),
    RT(cudaMemset3DAsync_v3020, ANA_API_MEMSET_3D_ASYNC, rt_memset_3d_async),
    RT(cudaMemset3DAsync_ptsz_v7000, ANA_API_MEMSET_3D_ASYNC, rt_memset_3d_async),
    /* runtime memory */
    RT(cudaMalloc_v3020, ANA_API_MALLOC, rt_malloc),
    RT(cudaMallocPitch_v3020, ANA_API_MALLOC_PITCH, rt_malloc_pitch),
    RT(cudaMallocHost_v3020, ANA_API_MALLOC_HOST, rt_malloc_host),
    RT(cudaHostAlloc_v3020, ANA_API_HOST_ALLOC, rt_host_alloc),
    RT(cudaMallocManaged_v6000, ANA_API_MALLOC_MANAGED, rt_malloc_managed),
    RT(cudaMallocAsync_v11020, ANA_API_MALLOC_ASYNC, rt_malloc_async),
    RT(cudaMallocAsync_ptsz_v11020, ANA_API_MALLOC_ASYNC, rt_malloc_async),
    RT(cudaMallocFromPoolAsync_v11020, ANA_API_MALLOC_FROM_POOL_ASYNC, rt_malloc_from_pool),
    RT(cudaMallocFromPoolAsync_ptsz_v11020, ANA_API_MALLOC_FROM_POOL_ASYNC, rt_malloc_from_pool),
    RT(cudaFree_v3020, ANA_API_FREE, rt_free),
    RT(cudaFreeHost_v3020, ANA_API_FREE_HOST, rt_free_host),
    RT(cudaFreeAsync_v11020, ANA_API_FREE_ASYNC, rt_free_async),
    RT(cudaFreeAsync_ptsz_v11020, ANA_API_FREE_ASYNC, rt_free_async),
    /* driver launches */
    DRV(cuLaunchKernel, ANA_API_CU_LAUNCH_KERNEL, cu_launch),
    DRV(cuLaunchKernel_ptsz, ANA_API_CU_LAUNCH_KERNEL, cu_launch),
    DRV(cuLaunchKernelEx, ANA_API_CU_LAUNCH_KERNEL_EX, cu_launch_ex),
    DRV(cuLaunchKernelEx_ptsz, ANA_API_CU_LAUNCH_KERNEL_EX, cu_launch_ex),
    DRV(cuGraphLaunch, ANA_API_CU_GRAPH_LAUNCH, cu_graph_launch),
    DRV(cuGraphLaunch_ptsz, ANA_API_CU_GRAPH_LAUNCH, cu_graph_launch),
    /* driver copies and sets */
    DRV(cuMemcpy, ANA_API_CU_MEMCPY, cu_memcpy),
    DRV(cuMemcpy_ptds, ANA_API_CU_MEMCPY, cu_memcpy),
    DRV(cuMemcpyAsync, ANA_API_CU_MEMCPY_ASYNC, cu_memcpy_async),
    DRV(cuMemcpyAsync_ptsz, ANA_API_CU_MEMCPY_ASYNC, cu_memcpy_async),
    DRV(cuMemcpyHtoD_v2, ANA_API_CU_MEMCPY_HTOD, cu_htod),
    DRV(cuMemcpyHtoD_v2_ptds, ANA_API_CU_MEMCPY_HTOD, cu_htod),
    DRV(cuMemcpyHtoDAsync_v2, ANA_API_CU_MEMCPY_HTOD_ASYNC, cu_htod_async),
    DRV(cuMemcpyHtoDAsync_v2_ptsz, ANA_API_CU_MEMCPY_HTOD_ASYNC, cu_htod_async),
    DRV(cuMemcpyDtoH_v2, ANA_API_CU_MEMCPY_DTOH, cu_dtoh),
    DRV(cuMemcpyDtoH_v2_ptds, ANA_API_CU_MEMCPY_DTOH, cu_dtoh),
    DRV(cuMemcpyDtoHAsync_v2, ANA_API_CU_MEMCPY_DTOH_ASYNC, cu_dtoh_async),
    DRV(cuMemcpyDtoHAsync_v2_ptsz, ANA_API_CU_MEMCPY_DTOH_ASYNC, cu_dtoh_async),
    DRV(cuMemcpyDtoD_v2, ANA_API_CU_MEMCPY_DTOD, cu_dtod),
    DRV(cuMemcpyDtoD_v2_ptds, ANA_API_CU_MEMCPY_DTOD, cu_dtod),
    DRV(cuMemcpyDtoDAsync_v2, ANA_API_CU_MEMCPY_DTOD_ASYNC, cu_dtod_async),
    DRV(cuMemcpyDtoDAsync_v2_ptsz, ANA_API_CU_MEMCPY_DTOD_ASYNC, cu_dtod_async),
    DRV(cuMemsetD8_v2, ANA_API_CU_MEMSET_D8, cu_memset_d8),
    DRV(cuMemsetD8_v2_ptds, ANA_API_CU_MEMSET_D8, cu_memset_d8),
    DRV(cuMemsetD32_v2, ANA_API_CU_MEMSET_D32, cu_memset_d32),
    DRV(cuMemsetD32_v2_ptds, ANA_API_CU_MEMSET_D32, cu_memset_d32),
    DRV(cuMemsetD8Async, ANA_API_CU_MEMSET_D8_ASYNC, cu_memset_d8_async),
    DRV(cuMemsetD8Async_ptsz, ANA_API_CU_MEMSET_D8_ASYNC, cu_memset_d8_async),
    DRV(cuMemsetD32Async, ANA_API_CU_MEMSET_D32_ASYNC, cu_memset_d32_async),
    DRV(cuMemsetD32Async_ptsz, ANA_API_CU_MEMSET_D32_ASYNC, cu_memset_d32_async),
    /* driver memory and virtual memory */
    DRV(cuMemAlloc_v2, ANA_API_CU_MEM_ALLOC, cu_alloc),
    DRV(cuMemAllocAsync, ANA_API_CU_MEM_ALLOC_ASYNC, cu_alloc_async),
    DRV(cuMemAllocAsync_ptsz, ANA_API_CU_MEM_ALLOC_ASYNC, cu_alloc_async),
    DRV(cuMemAllocManaged, ANA_API_CU_MEM_ALLOC_MANAGED, cu_alloc_managed),
    DRV(cuMemAllocHost_v2, ANA_API_CU_MEM_ALLOC_HOST, cu_alloc_host),
    DRV(cuMemHostAlloc, ANA_API_CU_MEM_HOST_ALLOC, cu_host_alloc),
    DRV(cuMemHostAlloc_v2, ANA_API_CU_MEM_HOST_ALLOC, cu_host_alloc),
    DRV(cuMemAllocPitch_v2, ANA_API_CU_MEM_ALLOC_PITCH, cu_alloc_pitch),
    DRV(cuMemAllocFromPoolAsync, ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, cu_alloc_from_pool),
    DRV(cuMemAllocFromPoolAsync_ptsz, ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, cu_alloc_from_pool),
    DRV(cuMemCreate, ANA_API_CU_MEM_CREATE, cu_mem_create),
    DRV(cuMemFree_v2, ANA_API_CU_MEM_FREE, cu_free),
    DRV(cuMemFreeAsync, ANA_API_CU_MEM_FREE_ASYNC, cu_free_async),
    DRV(cuMemFreeAsync_ptsz, ANA_API_CU_MEM_FREE_ASYNC, cu_free_async),
    DRV(cuMemFreeHost, ANA_API_CU_MEM_FREE_HOST, cu_free_host),
    DRV(cuMemRelease, ANA_API_CU_MEM_RELEASE, cu_release),
    DRV(cuMemAddressReserve, ANA_API_CU_MEM_ADDRESS_RESERVE, cu_reserve),
    DRV(cuMemAddressFree, ANA_API_CU_MEM_ADDRESS_FREE, cu_address_free),
    DRV(cuMemMap, ANA_API_CU_MEM_MAP, cu_map),
    DRV(cuMemUnmap, ANA_API_CU_MEM_UNMAP, cu_unmap),
    DRV(cuMemSetAccess, ANA_API_CU_MEM_SET_ACCESS, cu_set_access),
};
#define N_CALLS (sizeof(CALLS) / sizeof(CALLS[0]))
_Static_assert(N_CALLS < 255, "entry numbers are kept in uint8_t");

/* Per domain, by callback id: 1 + the index of its CALLS entry, 0 for none. Written by
 * ana_cupti_calls_enable before any callback is enabled; read-only after. */
static uint8_t rt_entry[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_entry[CUPTI_DRIVER_TRACE_CBID_SIZE];

const ana_cupti_call *ana_cupti_call_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    unsigned i = 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
        i = rt_entry[cbid];
    else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
        i = drv_entry[cbid];
    return i ? &CALLS[i - 1] : NULL;
}

void ana_cupti_calls_enable(CUpti_SubscriberHandle s)
{
    for (size_t i = 0; i < N_CALLS; i++) {
        uint8_t *slot = CALLS[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API ? &rt_entry[CALLS[i].cbid]
                                                                       : &drv_entry[CALLS[i].cbid];
        *slot = (uint8_t)(i + 1);
    }
    for (size_t i = 0; i < N_CALLS; i++)
        ana_cupti_fn.enable_callback(1, s, CALLS[i].domain, CALLS[i].cbid);
}

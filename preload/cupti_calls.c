/* cupti_calls.c — the CUPTI subscriber callback: correlation ids for the calls the hooks
 * record, and API records for the calls no hook saw (docs/trace-format.md, "GPU activity
 * and correlation").
 *
 * At API entry, on the calling thread:
 *   - a hook is recording this call (ana_in_hook): the outermost enabled API's correlation
 *     id goes to ana_tls_corr, where the hook's record builder finds it; nothing else.
 *   - no hook is active (a library with the CUDA runtime linked in statically, a driver
 *     call made through a pointer no hook wrapped): the callback opens the bracket
 *     (ana_enter) and keeps it in TLS; at the matching exit it builds the record from the
 *     call's parameters (generated_cuda_*_meta.h) and result, with via = ANA_VIA_CUPTI.
 *     Calls nested in it find the bracket busy and are not recorded twice.
 * The common path (a hook is active) is one TLS test and one store. */
#define _GNU_SOURCE
#include "cupti_int.h"

#include <errno.h>

/* cupti.h (through cupti_int.h) brings the *_params structs of generated_cuda_meta.h and
 * generated_cuda_runtime_api_meta.h. */

#include "hooks.h"

typedef struct { CUpti_CallbackDomain domain; CUpti_CallbackId cbid; } cb_id;

#define RT(name) { CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name }
#define DRV(name) { CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name }

/* Every call we correlate; close_call knows how to record each. */
static const cb_id CALLS[] = {
    /* launches */
    RT(cudaLaunchKernel_v7000), RT(cudaLaunchKernel_ptsz_v7000), RT(cudaLaunchKernelExC_v11060),
    RT(cudaLaunchKernelExC_ptsz_v11060), RT(cudaLaunchCooperativeKernel_v9000),
    RT(cudaLaunchCooperativeKernel_ptsz_v9000), RT(cudaGraphLaunch_v10000), RT(cudaGraphLaunch_ptsz_v10000),
    RT(__cudaLaunchKernel_v13000), RT(__cudaLaunchKernel_ptsz_v13000),
    /* copies */
    RT(cudaMemcpy_v3020), RT(cudaMemcpy_ptds_v7000), RT(cudaMemcpyAsync_v3020), RT(cudaMemcpyAsync_ptsz_v7000),
    RT(cudaMemcpy2D_v3020), RT(cudaMemcpy2D_ptds_v7000), RT(cudaMemcpy2DAsync_v3020),
    RT(cudaMemcpy2DAsync_ptsz_v7000), RT(cudaMemcpyToSymbol_v3020), RT(cudaMemcpyToSymbol_ptds_v7000),
    RT(cudaMemcpyToSymbolAsync_v3020), RT(cudaMemcpyToSymbolAsync_ptsz_v7000), RT(cudaMemcpyFromSymbol_v3020),
    RT(cudaMemcpyFromSymbol_ptds_v7000), RT(cudaMemcpyFromSymbolAsync_v3020),
    RT(cudaMemcpyFromSymbolAsync_ptsz_v7000), RT(cudaMemcpyPeer_v4000), RT(cudaMemcpyPeerAsync_v4000),
    RT(cudaMemcpy3D_v3020), RT(cudaMemcpy3D_ptds_v7000), RT(cudaMemcpy3DAsync_v3020),
    RT(cudaMemcpy3DAsync_ptsz_v7000), RT(cudaMemcpy3DPeer_v4000), RT(cudaMemcpy3DPeer_ptds_v7000),
    RT(cudaMemcpy3DPeerAsync_v4000), RT(cudaMemcpy3DPeerAsync_ptsz_v7000),
    /* sets */
    RT(cudaMemset_v3020), RT(cudaMemset_ptds_v7000), RT(cudaMemsetAsync_v3020), RT(cudaMemsetAsync_ptsz_v7000),
    RT(cudaMemset2D_v3020), RT(cudaMemset2D_ptds_v7000), RT(cudaMemset2DAsync_v3020),
    RT(cudaMemset2DAsync_ptsz_v7000), RT(cudaMemset3D_v3020), RT(cudaMemset3D_ptds_v7000),
    RT(cudaMemset3DAsync_v3020), RT(cudaMemset3DAsync_ptsz_v7000),
    /* memory */
    RT(cudaMalloc_v3020), RT(cudaMallocPitch_v3020), RT(cudaMallocHost_v3020), RT(cudaHostAlloc_v3020),
    RT(cudaMallocManaged_v6000), RT(cudaMallocAsync_v11020), RT(cudaMallocAsync_ptsz_v11020),
    RT(cudaMallocFromPoolAsync_v11020), RT(cudaMallocFromPoolAsync_ptsz_v11020), RT(cudaFree_v3020),
    RT(cudaFreeHost_v3020), RT(cudaFreeAsync_v11020), RT(cudaFreeAsync_ptsz_v11020),
    /* driver launches */
    DRV(cuLaunchKernel), DRV(cuLaunchKernel_ptsz), DRV(cuLaunchKernelEx), DRV(cuLaunchKernelEx_ptsz),
    DRV(cuGraphLaunch), DRV(cuGraphLaunch_ptsz),
    /* driver copies and sets */
    DRV(cuMemcpy), DRV(cuMemcpy_ptds), DRV(cuMemcpyAsync), DRV(cuMemcpyAsync_ptsz), DRV(cuMemcpyHtoD_v2),
    DRV(cuMemcpyHtoD_v2_ptds), DRV(cuMemcpyHtoDAsync_v2), DRV(cuMemcpyHtoDAsync_v2_ptsz), DRV(cuMemcpyDtoH_v2),
    DRV(cuMemcpyDtoH_v2_ptds), DRV(cuMemcpyDtoHAsync_v2), DRV(cuMemcpyDtoHAsync_v2_ptsz), DRV(cuMemcpyDtoD_v2),
    DRV(cuMemcpyDtoD_v2_ptds), DRV(cuMemcpyDtoDAsync_v2), DRV(cuMemcpyDtoDAsync_v2_ptsz), DRV(cuMemsetD8_v2),
    DRV(cuMemsetD8_v2_ptds), DRV(cuMemsetD32_v2), DRV(cuMemsetD32_v2_ptds), DRV(cuMemsetD8Async),
    DRV(cuMemsetD8Async_ptsz), DRV(cuMemsetD32Async), DRV(cuMemsetD32Async_ptsz),
    /* driver memory and virtual memory */
    DRV(cuMemAlloc_v2), DRV(cuMemFree_v2), DRV(cuMemAllocAsync), DRV(cuMemAllocAsync_ptsz), DRV(cuMemFreeAsync),
    DRV(cuMemFreeAsync_ptsz), DRV(cuMemAllocManaged), DRV(cuMemAllocHost_v2), DRV(cuMemHostAlloc),
    DRV(cuMemHostAlloc_v2), DRV(cuMemFreeHost), DRV(cuMemAllocPitch_v2), DRV(cuMemAllocFromPoolAsync),
    DRV(cuMemAllocFromPoolAsync_ptsz), DRV(cuMemCreate), DRV(cuMemRelease), DRV(cuMemAddressReserve),
    DRV(cuMemAddressFree), DRV(cuMemMap), DRV(cuMemUnmap), DRV(cuMemSetAccess),
};

void ana_cupti_calls_enable(CUpti_SubscriberHandle s)
{
    for (size_t i = 0; i < sizeof(CALLS) / sizeof(CALLS[0]); i++)
        ana_cupti_fn.enable_callback(1, s, CALLS[i].domain, CALLS[i].cbid);
}

/* ---- records ---- */

/* The call recorded through CUPTI on this thread, between its entry and its exit. */
static __thread struct {
    ana_call c;
    uint32_t corr, cbid;
    int domain, open;
} tls_open __attribute__((tls_model("initial-exec")));

typedef struct {
    ana_record *r;
    const ana_call *c;
    int64_t ret;
} rec_ctx;

#define U(x) ((uint64_t)(uintptr_t)(x))
/* What an out-pointer holds after a successful call; 0 after a failed one. */
#define OUT(x, pp) ((x)->ret == 0 && (pp) ? U(*(pp)) : 0)

static void alloc(rec_ctx *x, uint32_t api, uint64_t ptr, uint64_t size, uint64_t stream, uint64_t flags)
{
    x->r->kind = ANA_K_ALLOC;
    x->r->u.alloc = (ana_rec_alloc){ api, x->ret, ptr, size, ana_current_device(), stream,
                                     x->c->stack, x->c->dur, flags, x->c->corr, ANA_VIA_CUPTI };
}

static void free_(rec_ctx *x, uint32_t api, uint64_t ptr, uint64_t stream)
{
    x->r->kind = ANA_K_FREE;
    x->r->u.free = (ana_rec_free){ api, x->ret, ptr, ana_current_device(), stream, x->c->stack,
                                   x->c->dur, x->c->corr, ANA_VIA_CUPTI };
}

static void copy(rec_ctx *x, uint32_t api, uint64_t dst, uint64_t src, uint64_t bytes, uint64_t dir,
                 uint64_t stream)
{
    x->r->kind = ANA_K_MEMCPY;
    x->r->u.memcpy = (ana_rec_memcpy){ api, x->ret, dst, src, bytes, dir, stream, x->c->stack,
                                       x->c->dur, x->c->corr, ANA_VIA_CUPTI };
}

/* Bytes of a 3D extent (width is in bytes for linear memory). */
static uint64_t extent_bytes(struct cudaExtent e) { return (uint64_t)e.width * e.height * e.depth; }

static void set(rec_ctx *x, uint32_t api, uint64_t ptr, int64_t value, uint64_t bytes, uint64_t stream)
{
    x->r->kind = ANA_K_MEMSET;
    x->r->u.memset = (ana_rec_memset){ api, x->ret, ptr, value, bytes, stream, x->c->stack,
                                       x->c->dur, x->c->corr, ANA_VIA_CUPTI };
}

static void launch(rec_ctx *x, uint32_t api, uint64_t kernel, dim3 g, dim3 b, uint64_t shmem,
                   uint64_t stream)
{
    x->r->kind = ANA_K_LAUNCH;
    x->r->u.launch = (ana_rec_launch){ api, x->ret, kernel, g.x, g.y, g.z, b.x, b.y, b.z, shmem,
                                       stream, x->c->stack, x->c->dur, x->c->corr, ANA_VIA_CUPTI };
}

static void vmm(rec_ctx *x, uint32_t api, uint64_t va, uint64_t size, uint64_t handle,
                uint64_t offset, int64_t device, uint64_t flags)
{
    x->r->kind = ANA_K_VMM;
    x->r->u.vmm = (ana_rec_vmm){ api, x->ret, va, size, handle, offset, device, flags,
                                 x->c->stack, x->c->dur, x->c->corr, ANA_VIA_CUPTI };
}

static dim3 d3(unsigned x, unsigned y, unsigned z) { return (dim3){ x, y, z }; }

/* __cudaLaunchKernel has a callback id but no params struct in the headers: its
 * parameters, in the order of the function's arguments. */
typedef struct { cudaKernel_t kernel; dim3 grid, block; void **args; size_t shmem; cudaStream_t stream; } stub_launch_params;

#define P(type) const type *p = (const type *)params
#define CASE2(a, b) case CUPTI_RUNTIME_TRACE_CBID_##a: case CUPTI_RUNTIME_TRACE_CBID_##b:

/* Runtime launches and memory; 1 when r was filled. */
static int runtime_launch_mem(CUpti_CallbackId cbid, const void *params, rec_ctx *x)
{
    switch (cbid) {
    CASE2(cudaLaunchKernel_v7000, cudaLaunchKernel_ptsz_v7000) {
        P(cudaLaunchKernel_v7000_params);
        uint32_t api = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ? ANA_API_LAUNCH_KERNEL : ANA_API_LAUNCH_KERNEL_PTSZ;
        launch(x, api, ana_kernel_id_of_fn(p->func), p->gridDim, p->blockDim, p->sharedMem, U(p->stream));
        return 1;
    }
    CASE2(cudaLaunchKernelExC_v11060, cudaLaunchKernelExC_ptsz_v11060) {
        P(cudaLaunchKernelExC_v11060_params);
        if (!p->config)
            return 0;
        uint32_t api = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ? ANA_API_LAUNCH_KERNEL_EXC : ANA_API_LAUNCH_KERNEL_EXC_PTSZ;
        launch(x, api, ana_kernel_id_of_fn(p->func), p->config->gridDim, p->config->blockDim,
               p->config->dynamicSmemBytes, U(p->config->stream));
        return 1;
    }
    CASE2(cudaLaunchCooperativeKernel_v9000, cudaLaunchCooperativeKernel_ptsz_v9000) {
        P(cudaLaunchCooperativeKernel_v9000_params);
        launch(x, ANA_API_LAUNCH_COOPERATIVE, ana_kernel_id_of_fn(p->func), p->gridDim, p->blockDim,
               p->sharedMem, U(p->stream));
        return 1;
    }
    CASE2(cudaGraphLaunch_v10000, cudaGraphLaunch_ptsz_v10000) {
        P(cudaGraphLaunch_v10000_params);
        uint32_t api = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ? ANA_API_GRAPH_LAUNCH : ANA_API_GRAPH_LAUNCH_PTSZ;
        launch(x, api, 0, d3(0, 0, 0), d3(0, 0, 0), 0, U(p->stream));
        return 1;
    }
    CASE2(__cudaLaunchKernel_v13000, __cudaLaunchKernel_ptsz_v13000) {
        P(stub_launch_params);
        uint32_t api = cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ? ANA_API_STUB_LAUNCH_KERNEL : ANA_API_STUB_LAUNCH_KERNEL_PTSZ;
        launch(x, api, ana_kernel_id_of_handle(p->kernel), p->grid, p->block, p->shmem, U(p->stream));
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
        P(cudaMalloc_v3020_params);
        alloc(x, ANA_API_MALLOC, OUT(x, p->devPtr), p->size, 0, 0);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
        P(cudaMallocPitch_v3020_params);
        size_t bytes = x->ret == 0 && p->pitch ? *p->pitch * p->height : p->width * p->height;
        alloc(x, ANA_API_MALLOC_PITCH, OUT(x, p->devPtr), bytes, 0, 0);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
        P(cudaMallocHost_v3020_params);
        alloc(x, ANA_API_MALLOC_HOST, OUT(x, p->ptr), p->size, 0, 0);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
        P(cudaHostAlloc_v3020_params);
        alloc(x, ANA_API_HOST_ALLOC, OUT(x, p->pHost), p->size, 0, p->flags);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
        P(cudaMallocManaged_v6000_params);
        alloc(x, ANA_API_MALLOC_MANAGED, OUT(x, p->devPtr), p->size, 0, p->flags);
        return 1;
    }
    CASE2(cudaMallocAsync_v11020, cudaMallocAsync_ptsz_v11020) {
        P(cudaMallocAsync_v11020_params);
        alloc(x, ANA_API_MALLOC_ASYNC, OUT(x, p->devPtr), p->size, U(p->hStream), 0);
        return 1;
    }
    CASE2(cudaMallocFromPoolAsync_v11020, cudaMallocFromPoolAsync_ptsz_v11020) {
        P(cudaMallocFromPoolAsync_v11020_params);
        alloc(x, ANA_API_MALLOC_FROM_POOL_ASYNC, OUT(x, p->ptr), p->size, U(p->stream), 0);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
        free_(x, ANA_API_FREE, U(((const cudaFree_v3020_params *)params)->devPtr), 0);
        return 1;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
        free_(x, ANA_API_FREE_HOST, U(((const cudaFreeHost_v3020_params *)params)->ptr), 0);
        return 1;
    CASE2(cudaFreeAsync_v11020, cudaFreeAsync_ptsz_v11020) {
        P(cudaFreeAsync_v11020_params);
        free_(x, ANA_API_FREE_ASYNC, U(p->devPtr), U(p->hStream));
        return 1;
    }
    }
    return 0;
}

/* Runtime copies and sets (ptds/ptsz variants share their base's layout and api number;
 * the symbol copies' async forms record the symbol copy's api). */
static int runtime_copy_set(CUpti_CallbackId cbid, const void *params, rec_ctx *x)
{
    switch (cbid) {
    CASE2(cudaMemcpy_v3020, cudaMemcpy_ptds_v7000) {
        P(cudaMemcpy_v3020_params);
        copy(x, ANA_API_MEMCPY, U(p->dst), U(p->src), p->count, p->kind, 0);
        return 1;
    }
    CASE2(cudaMemcpyAsync_v3020, cudaMemcpyAsync_ptsz_v7000) {
        P(cudaMemcpyAsync_v3020_params);
        copy(x, ANA_API_MEMCPY_ASYNC, U(p->dst), U(p->src), p->count, p->kind, U(p->stream));
        return 1;
    }
    CASE2(cudaMemcpy2D_v3020, cudaMemcpy2D_ptds_v7000) {
        P(cudaMemcpy2D_v3020_params);
        copy(x, ANA_API_MEMCPY_2D, U(p->dst), U(p->src), p->width * p->height, p->kind, 0);
        return 1;
    }
    CASE2(cudaMemcpy2DAsync_v3020, cudaMemcpy2DAsync_ptsz_v7000) {
        P(cudaMemcpy2DAsync_v3020_params);
        copy(x, ANA_API_MEMCPY_2D_ASYNC, U(p->dst), U(p->src), p->width * p->height, p->kind, U(p->stream));
        return 1;
    }
    CASE2(cudaMemcpyToSymbol_v3020, cudaMemcpyToSymbol_ptds_v7000) {
        P(cudaMemcpyToSymbol_v3020_params);
        copy(x, ANA_API_MEMCPY_TO_SYMBOL, U(p->symbol), U(p->src), p->count, p->kind, 0);
        return 1;
    }
    CASE2(cudaMemcpyToSymbolAsync_v3020, cudaMemcpyToSymbolAsync_ptsz_v7000) {
        P(cudaMemcpyToSymbolAsync_v3020_params);
        copy(x, ANA_API_MEMCPY_TO_SYMBOL, U(p->symbol), U(p->src), p->count, p->kind, U(p->stream));
        return 1;
    }
    CASE2(cudaMemcpyFromSymbol_v3020, cudaMemcpyFromSymbol_ptds_v7000) {
        P(cudaMemcpyFromSymbol_v3020_params);
        copy(x, ANA_API_MEMCPY_FROM_SYMBOL, U(p->dst), U(p->symbol), p->count, p->kind, 0);
        return 1;
    }
    CASE2(cudaMemcpyFromSymbolAsync_v3020, cudaMemcpyFromSymbolAsync_ptsz_v7000) {
        P(cudaMemcpyFromSymbolAsync_v3020_params);
        copy(x, ANA_API_MEMCPY_FROM_SYMBOL, U(p->dst), U(p->symbol), p->count, p->kind, U(p->stream));
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000: {
        P(cudaMemcpyPeer_v4000_params);
        copy(x, ANA_API_MEMCPY_PEER, U(p->dst), U(p->src), p->count, cudaMemcpyDeviceToDevice, 0);
        return 1;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000: {
        P(cudaMemcpyPeerAsync_v4000_params);
        copy(x, ANA_API_MEMCPY_PEER_ASYNC, U(p->dst), U(p->src), p->count, cudaMemcpyDeviceToDevice, U(p->stream));
        return 1;
    }
    CASE2(cudaMemset_v3020, cudaMemset_ptds_v7000) {
        P(cudaMemset_v3020_params);
        set(x, ANA_API_MEMSET, U(p->devPtr), p->value, p->count, 0);
        return 1;
    }
    CASE2(cudaMemsetAsync_v3020, cudaMemsetAsync_ptsz_v7000) {
        P(cudaMemsetAsync_v3020_params);
        set(x, ANA_API_MEMSET_ASYNC, U(p->devPtr), p->value, p->count, U(p->stream));
        return 1;
    }
    CASE2(cudaMemset2D_v3020, cudaMemset2D_ptds_v7000) {
        P(cudaMemset2D_v3020_params);
        set(x, ANA_API_MEMSET_2D, U(p->devPtr), p->value, p->width * p->height, 0);
        return 1;
    }
    CASE2(cudaMemset2DAsync_v3020, cudaMemset2DAsync_ptsz_v7000) {
        P(cudaMemset2DAsync_v3020_params);
        set(x, ANA_API_MEMSET_2D_ASYNC, U(p->devPtr), p->value, p->width * p->height, U(p->stream));
        return 1;
    }
    CASE2(cudaMemcpy3D_v3020, cudaMemcpy3D_ptds_v7000) {
        P(cudaMemcpy3D_v3020_params);
        if (p->p)
            copy(x, ANA_API_MEMCPY_3D, U(p->p->dstPtr.ptr), U(p->p->srcPtr.ptr), extent_bytes(p->p->extent),
                 p->p->kind, 0);
        return p->p != NULL;
    }
    CASE2(cudaMemcpy3DAsync_v3020, cudaMemcpy3DAsync_ptsz_v7000) {
        P(cudaMemcpy3DAsync_v3020_params);
        if (p->p)
            copy(x, ANA_API_MEMCPY_3D_ASYNC, U(p->p->dstPtr.ptr), U(p->p->srcPtr.ptr),
                 extent_bytes(p->p->extent), p->p->kind, U(p->stream));
        return p->p != NULL;
    }
    CASE2(cudaMemset3D_v3020, cudaMemset3D_ptds_v7000) {
        P(cudaMemset3D_v3020_params);
        set(x, ANA_API_MEMSET_3D, U(p->pitchedDevPtr.ptr), p->value, extent_bytes(p->extent), 0);
        return 1;
    }
    CASE2(cudaMemset3DAsync_v3020, cudaMemset3DAsync_ptsz_v7000) {
        P(cudaMemset3DAsync_v3020_params);
        set(x, ANA_API_MEMSET_3D_ASYNC, U(p->pitchedDevPtr.ptr), p->value, extent_bytes(p->extent),
            U(p->stream));
        return 1;
    }
    }
    /* 3D peer copies have no api number: correlated when a hook records them, not
     * recorded here. */
    return 0;
}

#define DCASE2(a, b) case CUPTI_DRIVER_TRACE_CBID_##a: case CUPTI_DRIVER_TRACE_CBID_##b:
#define DCASE(a) case CUPTI_DRIVER_TRACE_CBID_##a:

static int driver_launch_copy_set(CUpti_CallbackId cbid, const void *params, rec_ctx *x)
{
    switch (cbid) {
    DCASE2(cuLaunchKernel, cuLaunchKernel_ptsz) {
        P(cuLaunchKernel_params); /* the kernel is named by its GPU_KERNEL record */
        launch(x, ANA_API_CU_LAUNCH_KERNEL, 0, d3(p->gridDimX, p->gridDimY, p->gridDimZ),
               d3(p->blockDimX, p->blockDimY, p->blockDimZ), p->sharedMemBytes, U(p->hStream));
        return 1;
    }
    DCASE2(cuLaunchKernelEx, cuLaunchKernelEx_ptsz) {
        P(cuLaunchKernelEx_params);
        const CUlaunchConfig *k = p->config;
        if (!k)
            return 0;
        launch(x, ANA_API_CU_LAUNCH_KERNEL_EX, 0, d3(k->gridDimX, k->gridDimY, k->gridDimZ),
               d3(k->blockDimX, k->blockDimY, k->blockDimZ), k->sharedMemBytes, U(k->hStream));
        return 1;
    }
    DCASE2(cuGraphLaunch, cuGraphLaunch_ptsz)
        launch(x, ANA_API_CU_GRAPH_LAUNCH, 0, d3(0, 0, 0), d3(0, 0, 0), 0,
               U(((const cuGraphLaunch_params *)params)->hStream));
        return 1;
    DCASE2(cuMemcpy, cuMemcpy_ptds) {
        P(cuMemcpy_params);
        copy(x, ANA_API_CU_MEMCPY, p->dst, p->src, p->ByteCount, cudaMemcpyDefault, 0);
        return 1;
    }
    DCASE2(cuMemcpyAsync, cuMemcpyAsync_ptsz) {
        P(cuMemcpyAsync_params);
        copy(x, ANA_API_CU_MEMCPY_ASYNC, p->dst, p->src, p->ByteCount, cudaMemcpyDefault, U(p->hStream));
        return 1;
    }
    DCASE2(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds) {
        P(cuMemcpyHtoD_v2_params);
        copy(x, ANA_API_CU_MEMCPY_HTOD, p->dstDevice, U(p->srcHost), p->ByteCount, cudaMemcpyHostToDevice, 0);
        return 1;
    }
    DCASE2(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz) {
        P(cuMemcpyHtoDAsync_v2_params);
        copy(x, ANA_API_CU_MEMCPY_HTOD_ASYNC, p->dstDevice, U(p->srcHost), p->ByteCount,
             cudaMemcpyHostToDevice, U(p->hStream));
        return 1;
    }
    DCASE2(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds) {
        P(cuMemcpyDtoH_v2_params);
        copy(x, ANA_API_CU_MEMCPY_DTOH, U(p->dstHost), p->srcDevice, p->ByteCount, cudaMemcpyDeviceToHost, 0);
        return 1;
    }
    DCASE2(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz) {
        P(cuMemcpyDtoHAsync_v2_params);
        copy(x, ANA_API_CU_MEMCPY_DTOH_ASYNC, U(p->dstHost), p->srcDevice, p->ByteCount,
             cudaMemcpyDeviceToHost, U(p->hStream));
        return 1;
    }
    DCASE2(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds) {
        P(cuMemcpyDtoD_v2_params);
        copy(x, ANA_API_CU_MEMCPY_DTOD, p->dstDevice, p->srcDevice, p->ByteCount, cudaMemcpyDeviceToDevice, 0);
        return 1;
    }
    DCASE2(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz) {
        P(cuMemcpyDtoDAsync_v2_params);
        copy(x, ANA_API_CU_MEMCPY_DTOD_ASYNC, p->dstDevice, p->srcDevice, p->ByteCount,
             cudaMemcpyDeviceToDevice, U(p->hStream));
        return 1;
    }
    DCASE2(cuMemsetD8_v2, cuMemsetD8_v2_ptds) {
        P(cuMemsetD8_v2_params);
        set(x, ANA_API_CU_MEMSET_D8, p->dstDevice, p->uc, p->N, 0);
        return 1;
    }
    DCASE2(cuMemsetD32_v2, cuMemsetD32_v2_ptds) {
        P(cuMemsetD32_v2_params);
        set(x, ANA_API_CU_MEMSET_D32, p->dstDevice, p->ui, p->N * 4, 0);
        return 1;
    }
    DCASE2(cuMemsetD8Async, cuMemsetD8Async_ptsz) {
        P(cuMemsetD8Async_params);
        set(x, ANA_API_CU_MEMSET_D8_ASYNC, p->dstDevice, p->uc, p->N, U(p->hStream));
        return 1;
    }
    DCASE2(cuMemsetD32Async, cuMemsetD32Async_ptsz) {
        P(cuMemsetD32Async_params);
        set(x, ANA_API_CU_MEMSET_D32_ASYNC, p->dstDevice, p->ui, p->N * 4, U(p->hStream));
        return 1;
    }
    }
    return 0;
}

static int driver_memory(CUpti_CallbackId cbid, const void *params, rec_ctx *x)
{
    switch (cbid) {
    DCASE(cuMemAlloc_v2) {
        P(cuMemAlloc_v2_params);
        alloc(x, ANA_API_CU_MEM_ALLOC, OUT(x, p->dptr), p->bytesize, 0, 0);
        return 1;
    }
    DCASE2(cuMemAllocAsync, cuMemAllocAsync_ptsz) {
        P(cuMemAllocAsync_params);
        alloc(x, ANA_API_CU_MEM_ALLOC_ASYNC, OUT(x, p->dptr), p->bytesize, U(p->hStream), 0);
        return 1;
    }
    DCASE(cuMemAllocManaged) {
        P(cuMemAllocManaged_params);
        alloc(x, ANA_API_CU_MEM_ALLOC_MANAGED, OUT(x, p->dptr), p->bytesize, 0, p->flags);
        return 1;
    }
    DCASE(cuMemAllocHost_v2) {
        P(cuMemAllocHost_v2_params);
        alloc(x, ANA_API_CU_MEM_ALLOC_HOST, OUT(x, p->pp), p->bytesize, 0, 0);
        return 1;
    }
    DCASE2(cuMemHostAlloc, cuMemHostAlloc_v2) {
        P(cuMemHostAlloc_params);
        alloc(x, ANA_API_CU_MEM_HOST_ALLOC, OUT(x, p->pp), p->bytesize, 0, p->Flags);
        return 1;
    }
    DCASE(cuMemAllocPitch_v2) {
        P(cuMemAllocPitch_v2_params);
        size_t bytes = x->ret == 0 && p->pPitch ? *p->pPitch * p->Height : p->WidthInBytes * p->Height;
        alloc(x, ANA_API_CU_MEM_ALLOC_PITCH, OUT(x, p->dptr), bytes, 0, 0);
        return 1;
    }
    DCASE2(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz) {
        P(cuMemAllocFromPoolAsync_params);
        alloc(x, ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, OUT(x, p->dptr), p->bytesize, U(p->hStream), 0);
        return 1;
    }
    DCASE(cuMemCreate) {
        P(cuMemCreate_params);
        alloc(x, ANA_API_CU_MEM_CREATE, OUT(x, p->handle), p->size, 0, p->flags);
        return 1;
    }
    DCASE(cuMemFree_v2)
        free_(x, ANA_API_CU_MEM_FREE, ((const cuMemFree_v2_params *)params)->dptr, 0);
        return 1;
    DCASE2(cuMemFreeAsync, cuMemFreeAsync_ptsz) {
        P(cuMemFreeAsync_params);
        free_(x, ANA_API_CU_MEM_FREE_ASYNC, p->dptr, U(p->hStream));
        return 1;
    }
    DCASE(cuMemFreeHost)
        free_(x, ANA_API_CU_MEM_FREE_HOST, U(((const cuMemFreeHost_params *)params)->p), 0);
        return 1;
    DCASE(cuMemRelease)
        free_(x, ANA_API_CU_MEM_RELEASE, ((const cuMemRelease_params *)params)->handle, 0);
        return 1;
    DCASE(cuMemAddressReserve) {
        P(cuMemAddressReserve_params);
        vmm(x, ANA_API_CU_MEM_ADDRESS_RESERVE, OUT(x, p->ptr), p->size, 0, 0, ana_current_device(), p->flags);
        return 1;
    }
    DCASE(cuMemAddressFree) {
        P(cuMemAddressFree_params);
        vmm(x, ANA_API_CU_MEM_ADDRESS_FREE, p->ptr, p->size, 0, 0, ana_current_device(), 0);
        return 1;
    }
    DCASE(cuMemMap) {
        P(cuMemMap_params);
        vmm(x, ANA_API_CU_MEM_MAP, p->ptr, p->size, p->handle, p->offset, ana_current_device(), p->flags);
        return 1;
    }
    DCASE(cuMemUnmap) {
        P(cuMemUnmap_params);
        vmm(x, ANA_API_CU_MEM_UNMAP, p->ptr, p->size, 0, 0, ana_current_device(), 0);
        return 1;
    }
    DCASE(cuMemSetAccess) {
        P(cuMemSetAccess_params); /* device and flags of the first descriptor */
        int has = p->desc && p->count > 0;
        vmm(x, ANA_API_CU_MEM_SET_ACCESS, p->ptr, p->size, 0, 0,
            has ? p->desc[0].location.id : ana_current_device(), has ? (uint64_t)p->desc[0].flags : 0);
        return 1;
    }
    }
    return 0;
}

/* ---- the callback ---- */

static void open_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d)
{
    if (!ana_enter(&tls_open.c))
        return;
    ana_tls_corr = d->correlationId; /* calls nested in this one see it and stay quiet */
    tls_open.corr = d->correlationId;
    tls_open.cbid = cbid;
    tls_open.domain = domain;
    tls_open.open = 1;
}

static void close_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d)
{
    ana_call *c = &tls_open.c;
    tls_open.open = 0;
    c->saved_errno = errno;
    c->dur = ana_now_ns() - c->t0;
    c->corr = tls_open.corr;
    c->stack = ana_stack_capture();
    ana_record r = { .time_ns = c->t0 };
    rec_ctx x = { &r, c, 0 };
    const void *params = d->functionParams;
    int ok = 0;
    if (params && d->functionReturnValue) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
            x.ret = *(const cudaError_t *)d->functionReturnValue;
            ok = runtime_launch_mem(cbid, params, &x) || runtime_copy_set(cbid, params, &x);
        } else {
            x.ret = *(const CUresult *)d->functionReturnValue;
            ok = driver_launch_copy_set(cbid, params, &x) || driver_memory(cbid, params, &x);
        }
    }
    if (ok)
        ana_emit(c->t, &r);
    if (ok && r.kind == ANA_K_ALLOC && x.ret != 0 && ana_api_is_device_alloc(r.u.alloc.api))
        ana_collector_flush_now(200); /* the failure reaches the disk with what led to it */
    ana_leave(c);
}

void CUPTIAPI ana_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *d = data;
    if (d->callbackSite == CUPTI_API_ENTER) {
        if (!atomic_load_explicit(&ana_cupti_on, memory_order_relaxed))
            return; /* not yet, handed over, or a forked child */
        if (!ana_in_hook())
            open_call(domain, cbid, d);
        else if (!ana_tls_corr)
            ana_tls_corr = d->correlationId;
        return;
    }
    if (tls_open.open && tls_open.corr == d->correlationId && tls_open.cbid == cbid && tls_open.domain == (int)domain)
        close_call(domain, cbid, d);
}

/*
 * Simulated device activity: the CUPTI records (CUpti_ActivityKernel10, Memcpy6,
 * MemcpyPtoP4, Memset4) the sim hands to its observer, their correlation with the API
 * calls, the pageable/pinned cost model, stream overlap and CUDA graphs built by stream
 * capture. A test observer (anasim_set_observer) collects everything; expected durations
 * are computed here from the formulas in docs/sim.md ("Cost model").
 */
#include "anasim.h"

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stub_abi.h" /* the nvcc stub ABI */

static uint64_t kernel_ns(dim3 g, dim3 b)
{
    double threads = (double)g.x * g.y * g.z * (double)b.x * b.y * b.z;
    return (uint64_t)llround(3000.0 + threads * 0.02);
}
static uint64_t pinned_ns(double bytes) { return (uint64_t)llround(bytes / 25.0); }
static uint64_t pageable_ns(double bytes) { return (uint64_t)llround(bytes / 12.0); }
static uint64_t hbm_ns(double bytes) { return (uint64_t)llround(bytes / 1500.0); }

/* ---- a module with two kernels and a variable ------------------------------------------ */
static char fatbin_stand_in[16];
static void fake_kernel(void) {}
static void other_kernel(void) {}
static float shadow_table[16];

static void register_module(void)
{
    void **module = __cudaRegisterFatBinary(fatbin_stand_in);
    cr_assert_not_null(module);
    __cudaRegisterFunction(module, (const char *)fake_kernel, "_Z11fake_kernelv",
                           "_Z11fake_kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(module, (const char *)other_kernel, "_Z12other_kernelv",
                           "_Z12other_kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterVar(module, (char *)shadow_table, "shadow_table", "shadow_table", 0,
                      sizeof(shadow_table), 0, 0);
    __cudaRegisterFatBinaryEnd(module);
}

/* ---- the test observer ------------------------------------------------------------------ */
union rec {
    CUpti_Activity base;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemcpyPtoP4 peer;
    CUpti_ActivityMemset4 memset;
};

struct api_seen {
    CUpti_CallbackId cbid;
    uint32_t correlation;
    const void *func;            /* launches: params->func */
};

static union rec recs[64];
static size_t nrecs;
static struct api_seen calls[64];
static size_t ncalls;
static int want_activity = 1;

static void on_api(int exit_site, anasim_api *c)
{
    if (exit_site || c->nested || ncalls == 64)
        return;
    calls[ncalls] = (struct api_seen){ c->cbid, c->correlation, NULL };
    if (c->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        calls[ncalls].func = ((const cudaLaunchKernel_v7000_params *)c->params)->func;
    ncalls++;
}

/* Only the device-work kinds: memory records (MEMORY2, MEMORY_POOL) are not tested here. */
static int device_work(CUpti_ActivityKind kind)
{
    return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_MEMCPY ||
           kind == CUPTI_ACTIVITY_KIND_MEMCPY2 || kind == CUPTI_ACTIVITY_KIND_MEMSET;
}

static int on_wants(CUpti_ActivityKind kind) { return want_activity && device_work(kind); }

static void on_activity(const CUpti_Activity *r)
{
    if (!device_work(r->kind))
        return;
    cr_assert_lt(nrecs, 64);
    size_t size = r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
                  : r->kind == CUPTI_ACTIVITY_KIND_MEMCPY ? sizeof(CUpti_ActivityMemcpy6)
                  : r->kind == CUPTI_ACTIVITY_KIND_MEMCPY2 ? sizeof(CUpti_ActivityMemcpyPtoP4)
                  : r->kind == CUPTI_ACTIVITY_KIND_MEMSET ? sizeof(CUpti_ActivityMemset4) : 0;
    cr_assert_neq(size, 0, "unexpected record kind %d", (int)r->kind);
    memcpy(&recs[nrecs++], r, size);
}

static const anasim_observer observer = { on_api, on_wants, on_activity };

static void setup(void)
{
    register_module();
    anasim_set_observer(&observer);
}

static void teardown(void) { anasim_set_observer(NULL); }

/* The correlation id of the last API call seen with this cbid. */
static uint32_t last_correlation(CUpti_CallbackId cbid)
{
    for (size_t i = ncalls; i-- > 0;)
        if (calls[i].cbid == cbid)
            return calls[i].correlation;
    cr_assert_fail("no API call with cbid %u", (unsigned)cbid);
    return 0;
}

static const dim3 one = { 1, 1, 1 };
static const dim3 busy_grid = { 1u << 30, 1, 1 }, busy_block = { 1024, 1, 1 };

TestSuite(sim_activity, .init = setup, .fini = teardown);

/* ---- kernels ------------------------------------------------------------------------------ */

Test(sim_activity, kernels_get_one_record_each_timed_by_the_cost_model)
{
    const dim3 grids[3] = { { 1, 1, 1 }, { 1000, 2, 1 }, { 4096, 64, 1 } };
    const dim3 blocks[3] = { { 32, 1, 1 }, { 128, 2, 1 }, { 256, 1, 1 } };
    uint32_t corr[3];
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, grids[i], blocks[i], NULL,
                                      (size_t)i * 1024, s), cudaSuccess);
        corr[i] = last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
    }
    cr_assert_eq(nrecs, 3);
    for (int i = 0; i < 3; i++) {
        const CUpti_ActivityKernel10 *k = &recs[i].kernel;
        cr_assert_eq(k->kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cr_assert_eq(k->end - k->start, kernel_ns(grids[i], blocks[i]), "kernel %d", i);
        cr_assert_eq(k->completed, k->end);
        cr_assert_eq(k->queued, CUPTI_TIMESTAMP_UNKNOWN);
        cr_assert_eq(k->submitted, CUPTI_TIMESTAMP_UNKNOWN);
        cr_assert_eq(k->correlationId, corr[i]);
        cr_assert_neq(corr[i], 0);
        cr_assert_eq(k->deviceId, 0);
        cr_assert_eq(k->contextId, 1);
        cr_assert_geq(k->streamId, 13);
        cr_assert_eq(k->streamId, recs[0].kernel.streamId, "one stream, one id");
        cr_assert_eq(k->gridX, (int32_t)grids[i].x);
        cr_assert_eq(k->gridY, (int32_t)grids[i].y);
        cr_assert_eq(k->blockX, (int32_t)blocks[i].x);
        cr_assert_eq(k->blockY, (int32_t)blocks[i].y);
        cr_assert_eq(k->dynamicSharedMemory, i * 1024);
        cr_assert_eq(k->registersPerThread, 32);
        cr_assert_str_eq(k->name, "_Z11fake_kernelv");
        cr_assert_eq(k->launchType, CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
        cr_assert_eq(k->graphId, 0);
        cr_assert_eq(k->graphNodeId, 0);
        if (i > 0) {
            cr_assert_geq(k->start, recs[i - 1].kernel.end, "one stream serialises");
            cr_assert_gt(k->gridId, recs[i - 1].kernel.gridId);
            cr_assert_gt(corr[i], corr[i - 1]);
        }
    }
    cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_activity, stub_launch_reports_cudaLaunchKernel_with_the_host_function)
{
    cudaKernel_t k;
    cr_assert_eq(__cudaGetKernel(&k, (const void *)other_kernel), cudaSuccess);
    cr_assert_eq(__cudaLaunchKernel(k, one, one, NULL, 0, NULL), cudaSuccess);
    cr_assert_eq(ncalls, 1, "__cudaGetKernel is not an API call");
    cr_assert_eq(calls[0].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
    cr_assert_eq(calls[0].func, (const void *)other_kernel);
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0].kernel.correlationId, calls[0].correlation);
    cr_assert_str_eq(recs[0].kernel.name, "_Z12other_kernelv");
    cr_assert_eq(recs[0].kernel.streamId, 7, "the legacy default stream");
}

Test(sim_activity, non_blocking_streams_overlap)
{
    cudaStream_t a, b;
    cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, busy_grid, busy_block, NULL, 0, a),
                 cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, b), cudaSuccess);
    cr_assert_eq(nrecs, 2);
    cr_assert_neq(recs[0].kernel.streamId, recs[1].kernel.streamId);
    cr_assert_lt(recs[1].kernel.start, recs[0].kernel.end, "b does not wait for a");
    cr_assert_eq(recs[0].kernel.end - recs[0].kernel.start, kernel_ns(busy_grid, busy_block));
}

Test(sim_activity, nothing_is_built_when_no_observer_wants_it)
{
    char *dev;
    cr_assert_eq(cudaMalloc((void **)&dev, 4096), cudaSuccess);
    want_activity = 0;
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, NULL),
                 cudaSuccess);
    cr_assert_eq(cudaMemset(dev, 1, 4096), cudaSuccess);
    cr_assert_eq(cudaMemcpy(dev, dev + 2048, 1024, cudaMemcpyDeviceToDevice), cudaSuccess);
    cr_assert_eq(nrecs, 0);
    cr_assert_geq(ncalls, 3, "API calls are still reported");
    anasim_set_observer(NULL);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, NULL),
                 cudaSuccess);
    cr_assert_eq(nrecs, 0);
    cr_assert_eq(cudaFree(dev), cudaSuccess);
}

/* ---- copies and sets ---------------------------------------------------------------------- */

static const CUpti_ActivityMemcpy6 *only_memcpy(void)
{
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0].base.kind, CUPTI_ACTIVITY_KIND_MEMCPY);
    nrecs = 0;
    return &recs[0].memcpy;
}

Test(sim_activity, copies_report_direction_memory_kinds_and_rate)
{
    const size_t n = 3u << 20;
    char *dev, *pinned, *pageable = malloc(n);
    cudaStream_t s;
    cr_assert_eq(cudaMalloc((void **)&dev, 2 * n), cudaSuccess);
    cr_assert_eq(cudaMallocHost((void **)&pinned, n), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);

    cr_assert_eq(cudaMemcpy(dev, pageable, n, cudaMemcpyHostToDevice), cudaSuccess);
    const CUpti_ActivityMemcpy6 *r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    cr_assert_eq(r->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    cr_assert_eq(r->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    cr_assert_eq(r->flags, 0);
    cr_assert_eq(r->bytes, n);
    cr_assert_eq(r->end - r->start, pageable_ns(n));
    cr_assert_eq(r->streamId, 7);
    cr_assert_eq(r->copyCount, 1);
    cr_assert_eq(r->correlationId, last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020));

    cr_assert_eq(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice), cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    cr_assert_eq(r->end - r->start, pinned_ns(n));

    cr_assert_eq(cudaMemcpyAsync(pinned, dev + 7, n - 7, cudaMemcpyDeviceToHost, s),
                 cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
    cr_assert_eq(r->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    cr_assert_eq(r->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    cr_assert_eq(r->flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
    cr_assert_eq(r->bytes, n - 7);
    cr_assert_eq(r->end - r->start, pinned_ns(n - 7));
    cr_assert_geq(r->streamId, 13);
    cr_assert_eq(r->correlationId,
                 last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));

    cr_assert_eq(cudaMemcpyAsync(pageable, dev, n, cudaMemcpyDefault, s), cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, "inferred direction");
    cr_assert_eq(r->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    cr_assert_eq(r->end - r->start, pageable_ns(n));

    cr_assert_eq(cudaMemcpy(dev + n, dev, n, cudaMemcpyDeviceToDevice), cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    cr_assert_eq(r->end - r->start, hbm_ns(n));

    cr_assert_eq(cudaMemcpy(pageable, pinned, 100, cudaMemcpyHostToHost), cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
    cr_assert_eq(r->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    cr_assert_eq(r->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    cr_assert_eq(r->end, r->start, "the CPU copies: no device time");

    float table[16] = { 1.5f };
    cr_assert_eq(cudaMemcpyToSymbol(shadow_table, table, sizeof(table), 0,
                                    cudaMemcpyHostToDevice), cudaSuccess);
    r = only_memcpy();
    cr_assert_eq(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    cr_assert_eq(r->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
    cr_assert_eq(r->bytes, sizeof(table));
    cr_assert_eq(r->correlationId,
                 last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020));

    cr_assert_eq(cudaMemcpyPeer(dev + n, 0, dev, 0, 1000), cudaSuccess);
    cr_assert_eq(nrecs, 1);
    const CUpti_ActivityMemcpyPtoP4 *p = &recs[0].peer;
    cr_assert_eq(p->kind, CUPTI_ACTIVITY_KIND_MEMCPY2);
    cr_assert_eq(p->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
    cr_assert_eq(p->srcDeviceId, 0);
    cr_assert_eq(p->dstDeviceId, 0);
    cr_assert_eq(p->bytes, 1000);
    cr_assert_eq(p->end - p->start, hbm_ns(1000));
    cr_assert_eq(p->correlationId,
                 last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000));

    cr_assert_eq(cudaFreeHost(pinned), cudaSuccess);
    cr_assert_eq(cudaFree(dev), cudaSuccess);
    free(pageable);
}

Test(sim_activity, memsets_report_value_bytes_and_memory_kind)
{
    const size_t n = 1u << 20;
    char *dev;
    cudaStream_t s;
    cr_assert_eq(cudaMalloc((void **)&dev, n), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaMemset(dev, 0xab, n), cudaSuccess);
    cr_assert_eq(cudaMemsetAsync(dev, 7, 1000, s), cudaSuccess);
    cr_assert_eq(nrecs, 2);
    const CUpti_ActivityMemset4 *m = &recs[0].memset;
    cr_assert_eq(m->kind, CUPTI_ACTIVITY_KIND_MEMSET);
    cr_assert_eq(m->value, 0xab);
    cr_assert_eq(m->bytes, n);
    cr_assert_eq(m->end - m->start, hbm_ns(n));
    cr_assert_eq(m->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    cr_assert_eq(m->flags, 0);
    cr_assert_eq(m->streamId, 7);
    cr_assert_eq(m->correlationId, calls[ncalls - 2].correlation);
    cr_assert_eq(calls[ncalls - 2].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020);
    m = &recs[1].memset;
    cr_assert_eq(m->value, 7);
    cr_assert_eq(m->bytes, 1000);
    cr_assert_eq(m->end - m->start, hbm_ns(1000));
    cr_assert_eq(m->flags, CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC);
    cr_assert_eq(m->correlationId,
                 last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020));
    cr_assert_eq((unsigned char)dev[999], 7);
    cr_assert_eq((unsigned char)dev[1000], 0xab);
    cr_assert_eq(cudaFree(dev), cudaSuccess);
}

/* An Async copy with pageable memory holds the host until it is done (CUDA stages it):
 * work the thread submits next, even to an independent stream, starts after it. One with
 * pinned memory does not. */
static void async_copy_then_kernel(char *host, int *kernel_starts_after_copy)
{
    const size_t n = 1u << 20;
    char *dev;
    cudaStream_t a, b;
    cr_assert_eq(cudaMalloc((void **)&dev, n), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, busy_grid, busy_block, NULL, 0, a),
                 cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, a), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, b), cudaSuccess);
    cr_assert_eq(nrecs, 3);
    const CUpti_ActivityMemcpy6 *c = &recs[1].memcpy;
    cr_assert_eq(c->start, recs[0].kernel.end, "queued behind the busy kernel");
    *kernel_starts_after_copy = recs[2].kernel.start >= c->end;
    cr_assert_eq(cudaFree(dev), cudaSuccess);
}

Test(sim_activity, async_copy_with_pageable_memory_is_synchronous_for_the_host)
{
    char *pageable = malloc(1u << 20);
    int after;
    async_copy_then_kernel(pageable, &after);
    cr_assert(after);
    free(pageable);
}

Test(sim_activity, async_copy_with_pinned_memory_is_not)
{
    char *pinned;
    int after;
    cr_assert_eq(cudaMallocHost((void **)&pinned, 1u << 20), cudaSuccess);
    async_copy_then_kernel(pinned, &after);
    cr_assert_not(after);
}

/* ---- graphs ------------------------------------------------------------------------------- */

Test(sim_activity, captured_graph_replays_its_nodes_per_launch)
{
    const size_t n = 1u << 16;
    const dim3 grid = { 64, 1, 1 }, block = { 256, 1, 1 };
    char *dev;
    cudaStream_t s;
    cudaGraph_t g, info_graph;
    cudaGraphExec_t x;
    enum cudaStreamCaptureStatus st;
    size_t nodes = 0, ndeps = 5;
    const cudaGraphNode_t *deps;
    unsigned long long capture_id = 0;
    cr_assert_eq(cudaMalloc((void **)&dev, 2 * n), cudaSuccess);
    memset(dev, 0, 2 * n);
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);

    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusNone);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    cr_assert_eq(cudaGetLastError(), cudaErrorIllegalState);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, grid, block, NULL, 0, s),
                 cudaSuccess);
    cr_assert_eq(cudaMemsetAsync(dev, 0x5a, n, s), cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(dev + n, dev, n, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_eq(cudaStreamGetCaptureInfo(s, &st, &capture_id, &info_graph, &deps, NULL,
                                          &ndeps), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_neq(capture_id, 0);
    cr_assert_eq(ndeps, 1, "each node depends on the previous one");
    cr_assert_eq(nrecs, 0, "captured work does not run");
    cr_assert_eq(dev[0], 0, "captured sets move no bytes");
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_assert_eq(g, info_graph);
    cr_assert_eq(cudaGraphGetNodes(g, NULL, &nodes), cudaSuccess);
    cr_assert_eq(nodes, 3);
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);

    cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
    uint32_t first = last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
    cr_assert_eq((unsigned char)dev[n + n - 1], 0x5a, "the replay moves bytes");
    cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
    uint32_t second = last_correlation(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
    cr_assert_neq(first, second);

    cr_assert_eq(nrecs, 6);
    for (int launch = 0; launch < 2; launch++) {
        const union rec *r = &recs[3 * launch];
        uint32_t corr = launch ? second : first;
        cr_assert_eq(r[0].base.kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cr_assert_eq(r[1].base.kind, CUPTI_ACTIVITY_KIND_MEMSET);
        cr_assert_eq(r[2].base.kind, CUPTI_ACTIVITY_KIND_MEMCPY);
        cr_assert_eq(r[0].kernel.correlationId, corr);
        cr_assert_eq(r[1].memset.correlationId, corr);
        cr_assert_eq(r[2].memcpy.correlationId, corr);
        cr_assert_eq(r[0].kernel.end - r[0].kernel.start, kernel_ns(grid, block));
        cr_assert_eq(r[1].memset.end - r[1].memset.start, hbm_ns(n));
        cr_assert_eq(r[2].memcpy.end - r[2].memcpy.start, hbm_ns(n));
        cr_assert_geq(r[1].memset.start, r[0].kernel.end, "nodes run in order");
        cr_assert_geq(r[2].memcpy.start, r[1].memset.end);
        cr_assert_eq(r[2].memcpy.flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
        cr_assert_eq(r[2].memcpy.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
        cr_assert_neq(r[0].kernel.graphId, 0);
        cr_assert_eq(r[1].memset.graphId, r[0].kernel.graphId);
        cr_assert_eq(r[2].memcpy.graphId, r[0].kernel.graphId);
        cr_assert_neq(r[0].kernel.graphNodeId, 0);
        cr_assert_neq(r[0].kernel.graphNodeId, r[1].memset.graphNodeId);
        cr_assert_neq(r[1].memset.graphNodeId, r[2].memcpy.graphNodeId);
        cr_assert_eq(r[0].kernel.graphNodeId, recs[0].kernel.graphNodeId, "same node");
        cr_assert_eq(r[2].memcpy.graphNodeId, recs[2].memcpy.graphNodeId);
        cr_assert_eq(r[0].kernel.graphId, recs[0].kernel.graphId, "same exec");
    }
    cr_assert_geq(recs[3].kernel.start, recs[2].memcpy.end, "launches serialise");
    cr_assert_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_assert_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_assert_eq(cudaGraphDestroy(g), cudaErrorInvalidValue);
    cr_assert_eq(cudaFree(dev), cudaSuccess);
}

Test(sim_activity, synchronising_a_capturing_stream_invalidates_the_capture)
{
    cudaStream_t s;
    cudaGraph_t g = (cudaGraph_t)(void *)&g;
    enum cudaStreamCaptureStatus st;
    cr_assert_eq(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
                 cudaErrorStreamCaptureUnsupported, "the legacy stream cannot capture");
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusInvalidated);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, s),
                 cudaErrorStreamCaptureInvalidated);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cr_assert_null(g);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaErrorIllegalState, "no capture left");
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, s),
                 cudaSuccess);
    cr_assert_eq(nrecs, 1);
}

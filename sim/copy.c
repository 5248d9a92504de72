/*
 * copy.c — memcpy and memset in all their forms (1D, 2D, to/from symbols, peer, async,
 * per-thread default stream variants) and the activity records they produce.
 *
 * Bytes really move: device memory is host memory, so a copy is a memmove done on the
 * calling thread, under the sim lock (a concurrent cudaFree cannot unmap the range
 * mid-copy). The device side of a copy must lie inside one known region, otherwise the
 * call fails with cudaErrorInvalidValue as on a GPU instead of faulting; the host side
 * of an explicit host copy is trusted, like pageable memory is on a GPU. The copy then
 * occupies its stream for the time the cost model gives it, at the pinned or the
 * pageable rate depending on the host side (docs/sim.md, "Cost model"). A copy that
 * real CUDA makes the host wait for (every synchronous host<->device copy, and an Async
 * one from or to pageable memory, which CUDA stages) moves the thread's host floor to
 * its end. On a capturing stream an Async copy or set becomes a graph node instead.
 *
 * Every public entry point is one API call for the sim's CUPTI (api.h); each copy or set
 * that runs yields one CUpti_ActivityMemcpy6 / CUpti_ActivityMemcpyPtoP4 /
 * CUpti_ActivityMemset4 when an observer wants it, handed over after the lock is
 * released. The driver's copies and sets (anasim_mem_copy/set) take the same path,
 * synchronously on the legacy default stream. Work is validated once when submitted;
 * only a graph replay validates a captured op again.
 */
#include "sim.h"
#include "api.h"

#include <string.h>

/* The regions a copy or set touches (NULL: memory the sim does not know), looked up once
 * by the check and used again by the run: the device lock is held from one to the other. */
struct ends {
    const struct ana_sim_mem *dst, *src;
};

static int on_device(const struct ana_sim_mem *m)
{
    return m && m->kind != ANA_SIM_MEM_HOST && m->kind != ANA_SIM_MEM_REGISTERED;
}

/* cudaMemcpyDefault: infer the direction from where the pointers live. */
static enum cudaMemcpyKind infer_kind(const struct ends *e)
{
    int dd = on_device(e->dst), sd = on_device(e->src);
    if (dd && sd)
        return cudaMemcpyDeviceToDevice;
    if (dd)
        return cudaMemcpyHostToDevice;
    if (sd)
        return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
}

/* Validates a copy, peer copy or set op (op->dir: cudaMemcpyDefault is resolved here) and
 * finds its ends. The device side of a copy, and a set, must lie inside one region. */
static cudaError_t check_locked(struct ana_sim_op *op, struct ends *e)
{
    size_t dspan = op->dpitch * (op->height - 1) + op->width;
    size_t sspan = op->spitch * (op->height - 1) + op->width;
    e->dst = ana_sim_mem_find_locked(op->dst);
    e->src = NULL;
    if (op->kind == ANA_SIM_OP_SET)
        return ana_sim_mem_holds(e->dst, op->dst, dspan) ? cudaSuccess : cudaErrorInvalidValue;
    if ((unsigned)op->dir > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (!op->dst || !op->src)
        return cudaErrorInvalidValue;
    e->src = ana_sim_mem_find_locked(op->src);
    if (op->dir == cudaMemcpyDefault)
        op->dir = infer_kind(e);
    int dst_dev = op->dir == cudaMemcpyHostToDevice || op->dir == cudaMemcpyDeviceToDevice;
    int src_dev = op->dir == cudaMemcpyDeviceToHost || op->dir == cudaMemcpyDeviceToDevice;
    if ((dst_dev && !ana_sim_mem_holds(e->dst, op->dst, dspan)) ||
        (src_dev && !ana_sim_mem_holds(e->src, op->src, sspan)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* The CUPTI memory kind of an end (PAGEABLE when the sim does not know the memory). */
static CUpti_ActivityMemoryKind memory_kind(const struct ana_sim_mem *m)
{
    return m ? ana_sim_mem_activity_kind(m->kind) : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static uint8_t cupti_copy_kind(enum cudaMemcpyKind dir)
{
    switch (dir) {
    case cudaMemcpyHostToDevice:   return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case cudaMemcpyDeviceToHost:   return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case cudaMemcpyDeviceToDevice: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    default:                       return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    }
}

/* ---- running a copy or set (eagerly or as a graph node) --------------------------- */

struct span {
    uint64_t start, end;
    size_t bytes;
    CUpti_ActivityMemoryKind src_kind, dst_kind;
};

static void fill_memcpy(CUpti_ActivityMemcpy6 *r, const struct ana_sim_op *op,
                        const struct ana_sim_exec *x, const struct span *t)
{
    memset(r, 0, sizeof(*r));
    r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r->copyKind = cupti_copy_kind(op->dir);
    r->srcKind = (uint8_t)t->src_kind;
    r->dstKind = (uint8_t)t->dst_kind;
    r->flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r->bytes = t->bytes;
    r->start = t->start;
    r->end = t->end;
    r->contextId = 1;
    r->streamId = ana_sim_stream_id_locked(x->stream);
    r->correlationId = ana_sim_correlation();
    r->runtimeCorrelationId = r->correlationId;
    r->graphNodeId = x->node_id;
    r->graphId = x->graph_id;
    r->copyCount = 1;
}

static void fill_peer(CUpti_ActivityMemcpyPtoP4 *r, const struct ana_sim_op *op,
                      const struct ana_sim_exec *x, const struct span *t)
{
    memset(r, 0, sizeof(*r));
    r->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    r->srcKind = (uint8_t)t->src_kind;
    r->dstKind = (uint8_t)t->dst_kind;
    r->flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r->bytes = t->bytes;
    r->start = t->start;
    r->end = t->end;
    r->contextId = 1;
    r->streamId = ana_sim_stream_id_locked(x->stream);
    r->srcContextId = 1;         /* one device: source and destination are device 0 */
    r->dstContextId = 1;
    r->correlationId = ana_sim_correlation();
    r->graphNodeId = x->node_id;
    r->graphId = x->graph_id;
}

static void set_run_locked(const struct ana_sim_op *op, const struct ends *e,
                           const struct ana_sim_exec *x, union ana_sim_record *rec)
{
    /* Timed when issued, before the host does the work (which takes host time the
     * device model does not have). */
    size_t bytes = op->width * op->height;
    uint64_t dur = ana_sim_cost_memset_ns(bytes);
    uint64_t start = ana_sim_stream_enqueue_locked(x->stream, dur);
    for (size_t row = 0; row < op->height; row++)
        memset((char *)op->dst + row * op->dpitch, op->value, op->width);
    if (!ANA_SIM_WANTS(x->want, CUPTI_ACTIVITY_KIND_MEMSET))
        return;
    CUpti_ActivityMemset4 *r = &rec->memset;
    memset(r, 0, sizeof(*r));
    r->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r->value = (uint32_t)(unsigned char)op->value;
    r->bytes = bytes;
    r->start = start;
    r->end = start + dur;
    r->contextId = 1;
    r->streamId = ana_sim_stream_id_locked(x->stream);
    r->correlationId = ana_sim_correlation();
    r->flags = op->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    r->memoryKind = (uint16_t)memory_kind(e->dst);
    r->graphNodeId = x->node_id;
    r->graphId = x->graph_id;
}

/* Runs a validated op (check_locked found its ends). */
static void run_locked(const struct ana_sim_op *op, const struct ends *e,
                       const struct ana_sim_exec *x, union ana_sim_record *rec)
{
    rec->base.kind = CUPTI_ACTIVITY_KIND_INVALID;
    if (op->kind == ANA_SIM_OP_SET) {
        set_run_locked(op, e, x, rec);
        return;
    }
    enum cudaMemcpyKind dir = op->dir;
    struct span t = { 0, 0, op->width * op->height, memory_kind(e->src), memory_kind(e->dst) };
    CUpti_ActivityMemoryKind host = dir == cudaMemcpyHostToDevice ? t.src_kind : t.dst_kind;
    int pageable = host == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    if (dir == cudaMemcpyHostToHost) {
        /* Done by the CPU inside the call: never on a stream, no device time. */
        t.start = t.end = ana_sim_host_now_locked();
    } else {
        uint64_t dur = ana_sim_cost_memcpy_ns(t.bytes, dir, pageable);
        t.start = ana_sim_stream_enqueue_locked(x->stream, dur);
        t.end = t.start + dur;
        if (dir != cudaMemcpyDeviceToDevice && (!op->async || pageable))
            ana_sim_host_wait_locked(t.end);
    }
    /* Moved after the timing: the host's copying is not device time (see set_run_locked). */
    for (size_t row = 0; row < op->height; row++)
        memmove((char *)op->dst + row * op->dpitch,
                (const char *)op->src + row * op->spitch, op->width);
    if (op->kind == ANA_SIM_OP_PEER && ANA_SIM_WANTS(x->want, CUPTI_ACTIVITY_KIND_MEMCPY2))
        fill_peer(&rec->peer, op, x, &t);
    else if (op->kind == ANA_SIM_OP_COPY && ANA_SIM_WANTS(x->want, CUPTI_ACTIVITY_KIND_MEMCPY))
        fill_memcpy(&rec->memcpy, op, x, &t);
}

cudaError_t ana_sim_copy_replay_locked(const struct ana_sim_op *op,
                                       const struct ana_sim_exec *x,
                                       union ana_sim_record *rec)
{
    struct ana_sim_op checked = *op;
    struct ends e;
    rec->base.kind = CUPTI_ACTIVITY_KIND_INVALID;
    cudaError_t err = check_locked(&checked, &e);
    if (err == cudaSuccess)
        run_locked(&checked, &e, x, rec);
    return err;
}

/* ---- submitting a copy or set ----------------------------------------------------- */

enum { SYNC = 0, ASYNC = 1, PEER = 2 };

/* Validates op and runs it on its stream now, or records it while the stream captures
 * (an Async call; a synchronous one may not). Empty ops (width or height 0) only resolve
 * their stream, and for a copy check the direction. Sets no last error: the runtime's
 * entry points do (ANA_SIM_RT_RETURN), the driver's (anasim_mem_copy/set) must not. */
static cudaError_t submit(struct ana_sim_op *op, cudaStream_t stream, int ptsz)
{
    uint64_t want = ana_sim_wanted_kinds();
    union ana_sim_record rec = { .base.kind = CUPTI_ACTIVITY_KIND_INVALID };
    struct ana_sim_stream *s;
    struct ends e;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err == cudaSuccess && (op->width == 0 || op->height == 0)) {
        if (op->kind != ANA_SIM_OP_SET && (unsigned)op->dir > cudaMemcpyDefault)
            err = cudaErrorInvalidMemcpyDirection;
    } else if (err == cudaSuccess && (err = check_locked(op, &e)) == cudaSuccess) {
        if (ana_sim_capturing_locked(s)) {
            err = op->async ? ana_sim_capture_add_locked(s, op)
                            : ana_sim_capture_sync_locked(s);
        } else {
            struct ana_sim_exec x = { s, 0, 0, want };
            run_locked(op, &e, &x, &rec);
        }
    }
    ana_sim_leave();
    ana_sim_emit(&rec, 1);
    return err;
}

/* ---- memcpy ---------------------------------------------------------------------- */

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t stream, int ptsz, int mode)
{
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    struct ana_sim_op op = { .kind = (mode & PEER) ? ANA_SIM_OP_PEER : ANA_SIM_OP_COPY,
                             .async = mode & ASYNC, .dst = dst, .src = src,
                             .dpitch = dpitch, .spitch = spitch, .width = width,
                             .height = height, .dir = kind };
    return submit(&op, stream, ptsz);
}

static cudaError_t copy_1d(void *dst, const void *src, size_t count,
                           enum cudaMemcpyKind kind, cudaStream_t stream, int ptsz, int mode)
{
    return copy_2d(dst, count, src, count, count, 1, kind, stream, ptsz, mode);
}

ANA_SIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy, v3020,
                   copy_1d(dst, src, count, kind, NULL, 0, SYNC),
                   dst, src, count, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy_ptds, v7000,
                   copy_1d(dst, src, count, kind, NULL, 1, SYNC),
                   dst, src, count, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyAsync, v3020,
                   copy_1d(dst, src, count, kind, stream, 0, ASYNC),
                   dst, src, count, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                             enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyAsync_ptsz, v7000,
                   copy_1d(dst, src, count, kind, stream, 1, ASYNC),
                   dst, src, count, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy2D, v3020,
                   copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, 0, SYNC),
                   dst, dpitch, src, spitch, width, height, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy2D_ptds, v7000,
                   copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, 1, SYNC),
                   dst, dpitch, src, spitch, width, height, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpy2DAsync, v3020,
                   copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, 0, ASYNC),
                   dst, dpitch, src, spitch, width, height, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                               size_t spitch, size_t width, size_t height,
                                               enum cudaMemcpyKind kind,
                                               cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpy2DAsync_ptsz, v7000,
                   copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, 1, ASYNC),
                   dst, dpitch, src, spitch, width, height, kind, stream);
}

/* One device: a peer copy is a device-to-device copy on device 0, reported as a
 * peer-to-peer copy (CUpti_ActivityMemcpyPtoP4). */
static cudaError_t peer_copy(void *dst, int dstDevice, const void *src, int srcDevice,
                             size_t count, cudaStream_t stream, int mode)
{
    if (dstDevice != 0 || srcDevice != 0)
        return cudaErrorInvalidDevice;
    return copy_1d(dst, src, count, cudaMemcpyDeviceToDevice, stream, 0, mode | PEER);
}

ANA_SIM_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src,
                                            int srcDevice, size_t count, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyPeerAsync, v4000,
                   peer_copy(dst, dstDevice, src, srcDevice, count, stream, ASYNC),
                   dst, dstDevice, src, srcDevice, count, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src,
                                       int srcDevice, size_t count)
{
    ANA_SIM_TRACED(cudaMemcpyPeer, v4000,
                   peer_copy(dst, dstDevice, src, srcDevice, count, NULL, SYNC),
                   dst, dstDevice, src, srcDevice, count);
}

/* ---- memset ---------------------------------------------------------------------- */

static cudaError_t set_2d(void *devPtr, size_t pitch, int value, size_t width,
                          size_t height, cudaStream_t stream, int ptsz, int async)
{
    if (width > pitch)
        return cudaErrorInvalidValue;
    struct ana_sim_op op = { .kind = ANA_SIM_OP_SET, .async = async, .dst = devPtr,
                             .dpitch = pitch, .width = width, .height = height,
                             .value = value };
    return submit(&op, stream, ptsz);
}

ANA_SIM_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    ANA_SIM_TRACED(cudaMemset, v3020, set_2d(devPtr, count, value, count, 1, NULL, 0, 0),
                   devPtr, value, count);
}

ANA_SIM_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    ANA_SIM_TRACED(cudaMemset_ptds, v7000,
                   set_2d(devPtr, count, value, count, 1, NULL, 1, 0), devPtr, value, count);
}

ANA_SIM_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
                                        cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemsetAsync, v3020,
                   set_2d(devPtr, count, value, count, 1, stream, 0, 1), devPtr, value,
                   count, stream);
}

ANA_SIM_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
                                             cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemsetAsync_ptsz, v7000,
                   set_2d(devPtr, count, value, count, 1, stream, 1, 1), devPtr, value,
                   count, stream);
}

ANA_SIM_API cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width,
                                     size_t height)
{
    ANA_SIM_TRACED(cudaMemset2D, v3020,
                   set_2d(devPtr, pitch, value, width, height, NULL, 0, 0), devPtr, pitch,
                   value, width, height);
}

ANA_SIM_API cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value,
                                          size_t width, size_t height)
{
    ANA_SIM_TRACED(cudaMemset2D_ptds, v7000,
                   set_2d(devPtr, pitch, value, width, height, NULL, 1, 0), devPtr, pitch,
                   value, width, height);
}

ANA_SIM_API cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value,
                                          size_t width, size_t height, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemset2DAsync, v3020,
                   set_2d(devPtr, pitch, value, width, height, stream, 0, 1), devPtr,
                   pitch, value, width, height, stream);
}

ANA_SIM_API cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value,
                                               size_t width, size_t height,
                                               cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemset2DAsync_ptsz, v7000,
                   set_2d(devPtr, pitch, value, width, height, stream, 1, 1), devPtr,
                   pitch, value, width, height, stream);
}

/* ---- the driver's copies and sets (anasim.h) --------------------------------------- */

/* cuMemcpy*_v2 and cuMemsetD8_v2: the runtime's synchronous path on the legacy default
 * stream (which never captures), every refusal CUDA_ERROR_INVALID_VALUE. */
static CUresult driver_result(cudaError_t err)
{
    return err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

ANASIM_PRIVATE_API CUresult anasim_mem_copy(void *dst, const void *src, size_t n, int kind)
{
    if (kind < cudaMemcpyHostToDevice || kind > cudaMemcpyDeviceToDevice || !dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    if (n == 0)
        return CUDA_SUCCESS;
    return driver_result(copy_1d(dst, src, n, (enum cudaMemcpyKind)kind, cudaStreamLegacy, 0,
                                 SYNC));
}

ANASIM_PRIVATE_API CUresult anasim_mem_set(void *dst, unsigned char value, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    return driver_result(set_2d(dst, n, value, n, 1, cudaStreamLegacy, 0, 0));
}

/* ---- symbols --------------------------------------------------------------------- */

/* Copies between a registered __device__/__constant__ variable and memory. */
static cudaError_t symbol_copy(const void *symbol, void *mem, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, int to_symbol,
                               cudaStream_t stream, int ptsz, int mode)
{
    char *storage;
    size_t size;
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, &size);
    ana_sim_leave();
    if (!found)
        return cudaErrorInvalidSymbol;
    enum cudaMemcpyKind host_side = to_symbol ? cudaMemcpyHostToDevice
                                              : cudaMemcpyDeviceToHost;
    if (kind != host_side && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (offset > size || count > size - offset)
        return cudaErrorInvalidValue;
    if (to_symbol)
        return copy_1d(storage + offset, mem, count, kind, stream, ptsz, mode);
    return copy_1d(mem, storage + offset, count, kind, stream, ptsz, mode);
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src,
                                           size_t count, size_t offset,
                                           enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpyToSymbol, v3020,
                   symbol_copy(symbol, (void *)src, count, offset, kind, 1, NULL, 0, SYNC),
                   symbol, src, count, offset, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src,
                                                size_t count, size_t offset,
                                                enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpyToSymbol_ptds, v7000,
                   symbol_copy(symbol, (void *)src, count, offset, kind, 1, NULL, 1, SYNC),
                   symbol, src, count, offset, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count,
                                             size_t offset, enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpyFromSymbol, v3020,
                   symbol_copy(symbol, dst, count, offset, kind, 0, NULL, 0, SYNC),
                   dst, symbol, count, offset, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol,
                                                  size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpyFromSymbol_ptds, v7000,
                   symbol_copy(symbol, dst, count, offset, kind, 0, NULL, 1, SYNC),
                   dst, symbol, count, offset, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src,
                                                size_t count, size_t offset,
                                                enum cudaMemcpyKind kind,
                                                cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyToSymbolAsync, v3020,
                   symbol_copy(symbol, (void *)src, count, offset, kind, 1, stream, 0,
                               ASYNC),
                   symbol, src, count, offset, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src,
                                                     size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind,
                                                     cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyToSymbolAsync_ptsz, v7000,
                   symbol_copy(symbol, (void *)src, count, offset, kind, 1, stream, 1,
                               ASYNC),
                   symbol, src, count, offset, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol,
                                                  size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind,
                                                  cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyFromSymbolAsync, v3020,
                   symbol_copy(symbol, dst, count, offset, kind, 0, stream, 0, ASYNC),
                   dst, symbol, count, offset, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol,
                                                       size_t count, size_t offset,
                                                       enum cudaMemcpyKind kind,
                                                       cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyFromSymbolAsync_ptsz, v7000,
                   symbol_copy(symbol, dst, count, offset, kind, 0, stream, 1, ASYNC),
                   dst, symbol, count, offset, kind, stream);
}

static cudaError_t symbol_address(void **devPtr, const void *symbol)
{
    char *storage;
    size_t size;
    if (!devPtr)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, &size);
    ana_sim_leave();
    if (!found)
        return cudaErrorInvalidSymbol;
    *devPtr = storage;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    ANA_SIM_TRACED(cudaGetSymbolAddress, v3020, symbol_address(devPtr, symbol), devPtr,
                   symbol);
}

static cudaError_t symbol_size(size_t *size, const void *symbol)
{
    char *storage;
    if (!size)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, size);
    ana_sim_leave();
    return found ? cudaSuccess : cudaErrorInvalidSymbol;
}

ANA_SIM_API cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    ANA_SIM_TRACED(cudaGetSymbolSize, v3020, symbol_size(size, symbol), size, symbol);
}

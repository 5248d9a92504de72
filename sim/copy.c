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
 * released.
 */
#include "sim.h"
#include "api.h"

#include <string.h>

static int device_addressable(const void *p, size_t span)
{
    return ana_sim_mem_device_range_locked(p, span);
}

/* cudaMemcpyDefault: infer the direction from where the pointers live. */
static enum cudaMemcpyKind infer_kind(const void *dst, const void *src)
{
    const struct ana_sim_mem *d = ana_sim_mem_find_locked(dst);
    const struct ana_sim_mem *s = ana_sim_mem_find_locked(src);
    int dd = d && d->kind != ANA_SIM_MEM_HOST && d->kind != ANA_SIM_MEM_REGISTERED;
    int sd = s && s->kind != ANA_SIM_MEM_HOST && s->kind != ANA_SIM_MEM_REGISTERED;
    if (dd && sd)
        return cudaMemcpyDeviceToDevice;
    if (dd)
        return cudaMemcpyHostToDevice;
    if (sd)
        return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
}

/* Validates a (possibly pitched) copy whose spans are dspan/sspan bytes. */
static cudaError_t check_copy_locked(void *dst, size_t dspan, const void *src, size_t sspan,
                                     enum cudaMemcpyKind *kind)
{
    if ((unsigned)*kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    if (*kind == cudaMemcpyDefault)
        *kind = infer_kind(dst, src);
    int dst_dev = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
    int src_dev = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
    if ((dst_dev && !device_addressable(dst, dspan)) ||
        (src_dev && !device_addressable(src, sspan)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

CUpti_ActivityMemoryKind ana_sim_memory_kind_locked(const void *p)
{
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(p);
    if (!m)
        return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    switch (m->kind) {
    case ANA_SIM_MEM_DEVICE:
    case ANA_SIM_MEM_VMM:            return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case ANA_SIM_MEM_MANAGED:        return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    case ANA_SIM_MEM_HOST:
    case ANA_SIM_MEM_REGISTERED:     return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case ANA_SIM_MEM_SYMBOL:         return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
    case ANA_SIM_MEM_SYMBOL_MANAGED: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
    }
    return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
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

static cudaError_t set_run_locked(const struct ana_sim_op *op, const struct ana_sim_exec *x,
                                  union ana_sim_record *rec)
{
    if (!device_addressable(op->dst, op->dpitch * (op->height - 1) + op->width))
        return cudaErrorInvalidValue;
    /* Timed when issued, before the host does the work (which takes host time the
     * device model does not have). */
    size_t bytes = op->width * op->height;
    uint64_t dur = ana_sim_cost_memset_ns(bytes);
    uint64_t start = ana_sim_stream_enqueue_locked(x->stream, dur);
    for (size_t row = 0; row < op->height; row++)
        memset((char *)op->dst + row * op->dpitch, op->value, op->width);
    if (!(x->want & ANA_SIM_WANT_MEMSET))
        return cudaSuccess;
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
    r->memoryKind = (uint16_t)ana_sim_memory_kind_locked(op->dst);
    r->graphNodeId = x->node_id;
    r->graphId = x->graph_id;
    return cudaSuccess;
}

cudaError_t ana_sim_copy_run_locked(const struct ana_sim_op *op,
                                    const struct ana_sim_exec *x,
                                    union ana_sim_record *rec)
{
    rec->base.kind = CUPTI_ACTIVITY_KIND_INVALID;
    if (op->kind == ANA_SIM_OP_SET)
        return set_run_locked(op, x, rec);
    enum cudaMemcpyKind dir = op->dir;
    cudaError_t err = check_copy_locked(op->dst, op->dpitch * (op->height - 1) + op->width,
                                        op->src, op->spitch * (op->height - 1) + op->width,
                                        &dir);
    if (err != cudaSuccess)
        return err;
    struct span t = { 0, 0, op->width * op->height, ana_sim_memory_kind_locked(op->src),
                      ana_sim_memory_kind_locked(op->dst) };
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
    if (op->kind == ANA_SIM_OP_PEER && (x->want & ANA_SIM_WANT_MEMCPY2))
        fill_peer(&rec->peer, op, x, &t);
    else if (op->kind == ANA_SIM_OP_COPY && (x->want & ANA_SIM_WANT_MEMCPY))
        fill_memcpy(&rec->memcpy, op, x, &t);
    return cudaSuccess;
}

/* Runs op on s now, or records it while s captures (a synchronous call may not). */
static cudaError_t submit_locked(const struct ana_sim_op *op, struct ana_sim_stream *s,
                                 unsigned want, union ana_sim_record *rec)
{
    if (ana_sim_capturing_locked(s))
        return op->async ? ana_sim_capture_add_locked(s, op) : ana_sim_capture_sync_locked(s);
    struct ana_sim_exec x = { s, 0, 0, want };
    return ana_sim_copy_run_locked(op, &x, rec);
}

/* ---- memcpy ---------------------------------------------------------------------- */

enum { SYNC = 0, ASYNC = 1, PEER = 2 };

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t stream, int ptsz, int mode)
{
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    unsigned want = ana_sim_wanted_kinds();
    union ana_sim_record rec = { .base.kind = CUPTI_ACTIVITY_KIND_INVALID };
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err != cudaSuccess || width == 0 || height == 0) {
        if (err == cudaSuccess && (unsigned)kind > cudaMemcpyDefault)
            err = cudaErrorInvalidMemcpyDirection;
        goto out;
    }
    err = check_copy_locked(dst, dpitch * (height - 1) + width, src,
                            spitch * (height - 1) + width, &kind);
    if (err != cudaSuccess)
        goto out;
    struct ana_sim_op op = { .kind = (mode & PEER) ? ANA_SIM_OP_PEER : ANA_SIM_OP_COPY,
                             .async = mode & ASYNC, .dst = dst, .src = src,
                             .dpitch = dpitch, .spitch = spitch, .width = width,
                             .height = height, .dir = kind };
    err = submit_locked(&op, s, want, &rec);
out:
    ana_sim_leave();
    ana_sim_emit(&rec, 1);
    return err;
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
                   ana_sim_ret(copy_1d(dst, src, count, kind, NULL, 0, SYNC)),
                   dst, src, count, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy_ptds, v7000,
                   ana_sim_ret(copy_1d(dst, src, count, kind, NULL, 1, SYNC)),
                   dst, src, count, kind);
}

ANA_SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyAsync, v3020,
                   ana_sim_ret(copy_1d(dst, src, count, kind, stream, 0, ASYNC)),
                   dst, src, count, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                             enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpyAsync_ptsz, v7000,
                   ana_sim_ret(copy_1d(dst, src, count, kind, stream, 1, ASYNC)),
                   dst, src, count, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy2D, v3020,
                   ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL,
                                       0, SYNC)),
                   dst, dpitch, src, spitch, width, height, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind)
{
    ANA_SIM_TRACED(cudaMemcpy2D_ptds, v7000,
                   ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL,
                                       1, SYNC)),
                   dst, dpitch, src, spitch, width, height, kind);
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpy2DAsync, v3020,
                   ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind,
                                       stream, 0, ASYNC)),
                   dst, dpitch, src, spitch, width, height, kind, stream);
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                               size_t spitch, size_t width, size_t height,
                                               enum cudaMemcpyKind kind,
                                               cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaMemcpy2DAsync_ptsz, v7000,
                   ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind,
                                       stream, 1, ASYNC)),
                   dst, dpitch, src, spitch, width, height, kind, stream);
}

/* One device: a peer copy is a device-to-device copy on device 0, reported as a
 * peer-to-peer copy (CUpti_ActivityMemcpyPtoP4). */
static cudaError_t peer_copy(void *dst, int dstDevice, const void *src, int srcDevice,
                             size_t count, cudaStream_t stream, int mode)
{
    if (dstDevice != 0 || srcDevice != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    return ana_sim_ret(copy_1d(dst, src, count, cudaMemcpyDeviceToDevice, stream, 0,
                               mode | PEER));
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
        return ana_sim_ret(cudaErrorInvalidValue);
    unsigned want = ana_sim_wanted_kinds();
    union ana_sim_record rec = { .base.kind = CUPTI_ACTIVITY_KIND_INVALID };
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err != cudaSuccess || width == 0 || height == 0)
        goto out;
    if (!device_addressable(devPtr, pitch * (height - 1) + width)) {
        err = cudaErrorInvalidValue;
        goto out;
    }
    struct ana_sim_op op = { .kind = ANA_SIM_OP_SET, .async = async, .dst = devPtr,
                             .dpitch = pitch, .width = width, .height = height,
                             .value = value };
    err = submit_locked(&op, s, want, &rec);
out:
    ana_sim_leave();
    ana_sim_emit(&rec, 1);
    return ana_sim_ret(err);
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
        return ana_sim_ret(cudaErrorInvalidSymbol);
    enum cudaMemcpyKind host_side = to_symbol ? cudaMemcpyHostToDevice
                                              : cudaMemcpyDeviceToHost;
    if (kind != host_side && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return ana_sim_ret(cudaErrorInvalidMemcpyDirection);
    if (offset > size || count > size - offset)
        return ana_sim_ret(cudaErrorInvalidValue);
    if (to_symbol)
        return ana_sim_ret(copy_1d(storage + offset, mem, count, kind, stream, ptsz, mode));
    return ana_sim_ret(copy_1d(mem, storage + offset, count, kind, stream, ptsz, mode));
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
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, &size);
    ana_sim_leave();
    if (!found)
        return ana_sim_ret(cudaErrorInvalidSymbol);
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
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, size);
    ana_sim_leave();
    return ana_sim_ret(found ? cudaSuccess : cudaErrorInvalidSymbol);
}

ANA_SIM_API cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    ANA_SIM_TRACED(cudaGetSymbolSize, v3020, symbol_size(size, symbol), size, symbol);
}

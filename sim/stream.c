/*
 * stream.c — streams, events, the per-stream device clocks and the cost model.
 *
 * Each stream has a clock: the device time (CLOCK_MONOTONIC ns) at which its last
 * operation ends. An operation starts at max(stream clock, host now) and ends `cost`
 * later. Legacy default-stream semantics are kept: work on the legacy stream waits for
 * every blocking stream, and work on a blocking stream (including a per-thread default
 * stream) waits for the legacy stream; cudaStreamNonBlocking streams wait for no one.
 * All simulated work is complete as soon as it is submitted, from the host's point of
 * view: synchronisation returns at once and queries never answer cudaErrorNotReady.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

struct ana_sim_stream {
    uint64_t clock_ns;
    unsigned flags;
    int priority;
    int blocking;                /* synchronises with the legacy stream */
};

struct ana_sim_event {
    unsigned flags;
    int recorded;
    uint64_t time_ns;
};

static struct ana_sim_stream legacy_stream = { 0, 0, 0, 0 };
static __thread struct ana_sim_stream per_thread_stream = { 0, 0, 0, 1 };
static uint64_t blocking_max_ns;  /* end of the latest work on any blocking stream */
static struct ana_sim_map streams, events;
static __thread enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* ---- cost model ------------------------------------------------------------------ */

uint64_t ana_sim_cost_kernel_ns(dim3 g, dim3 b)
{
    double threads = (double)g.x * g.y * g.z * (double)b.x * b.y * b.z;
    return (uint64_t)llround(ANA_SIM_LAUNCH_NS + threads * ANA_SIM_THREAD_NS);
}

uint64_t ana_sim_cost_copy_ns(size_t bytes, enum cudaMemcpyKind kind)
{
    double rate = kind == cudaMemcpyDeviceToDevice ? ANA_SIM_HBM_BYTES_PER_NS
                                                   : ANA_SIM_PCIE_BYTES_PER_NS;
    return (uint64_t)llround((double)bytes / rate);
}

uint64_t ana_sim_cost_memset_ns(size_t bytes)
{
    return (uint64_t)llround((double)bytes / ANA_SIM_HBM_BYTES_PER_NS);
}

/* ---- clocks ---------------------------------------------------------------------- */

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Earliest device time at which new work on s can start. */
static uint64_t ready_time_locked(const struct ana_sim_stream *s)
{
    uint64_t t = max_u64(s->clock_ns, ana_sim_now_ns());
    if (s == &legacy_stream)
        t = max_u64(t, blocking_max_ns);
    else if (s->blocking)
        t = max_u64(t, legacy_stream.clock_ns);
    return t;
}

static void advance_locked(struct ana_sim_stream *s, uint64_t end)
{
    s->clock_ns = end;
    if (s->blocking)
        blocking_max_ns = max_u64(blocking_max_ns, end);
}

uint64_t ana_sim_stream_enqueue_locked(struct ana_sim_stream *s, uint64_t duration_ns)
{
    uint64_t start = ready_time_locked(s);
    advance_locked(s, start + duration_ns);
    return start;
}

cudaError_t ana_sim_stream_resolve_locked(cudaStream_t h, int ptsz,
                                          struct ana_sim_stream **out)
{
    if (h == cudaStreamLegacy || (h == NULL && !ptsz))
        *out = &legacy_stream;
    else if (h == cudaStreamPerThread || h == NULL)
        *out = &per_thread_stream;
    else if (!(*out = ana_sim_map_get(&streams, h)))
        return cudaErrorInvalidResourceHandle;
    return cudaSuccess;
}

void ana_sim_stream_reset_locked(void)
{
    ana_sim_map_clear(&streams, free);
    ana_sim_map_clear(&events, free);
}

/* ---- streams --------------------------------------------------------------------- */

/* Registers a new stream or event object and hands it out as *out; frees it on failure. */
static cudaError_t add_handle(struct ana_sim_map *map, void *obj, void **out)
{
    ana_sim_enter();
    int rc = ana_sim_map_put(map, obj, obj);
    ana_sim_leave();
    if (rc != 0) {
        free(obj);
        return ana_sim_ret(cudaErrorMemoryAllocation);
    }
    *out = obj;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream,
                                                     unsigned int flags, int priority)
{
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return ana_sim_ret(cudaErrorInvalidValue);
    struct ana_sim_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return ana_sim_ret(cudaErrorMemoryAllocation);
    if (priority > ANA_SIM_PRIORITY_LEAST)
        priority = ANA_SIM_PRIORITY_LEAST;
    if (priority < ANA_SIM_PRIORITY_GREATEST)
        priority = ANA_SIM_PRIORITY_GREATEST;
    s->flags = flags;
    s->priority = priority;
    s->blocking = !(flags & cudaStreamNonBlocking);
    return add_handle(&streams, s, (void **)pStream);
}

ANA_SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, ANA_SIM_PRIORITY_LEAST);
}

ANA_SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, ANA_SIM_PRIORITY_LEAST);
}

ANA_SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    ana_sim_enter();
    struct ana_sim_stream *s = ana_sim_map_del(&streams, stream);
    ana_sim_leave();
    free(s);
    return ana_sim_ret(s ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

static cudaError_t stream_check(cudaStream_t stream, int ptsz)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return stream_check(stream, 0);
}

ANA_SIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return stream_check(stream, 1);
}

ANA_SIM_API cudaError_t cudaStreamQuery(cudaStream_t stream) { return stream_check(stream, 0); }

ANA_SIM_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return stream_check(stream, 1);
}

static cudaError_t stream_get(cudaStream_t h, int ptsz, unsigned *flags, int *priority)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(h, ptsz, &s);
    if (err == cudaSuccess) {
        if (flags)
            *flags = s->flags;
        if (priority)
            *priority = s->priority;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, 0, flags, NULL) : ana_sim_ret(cudaErrorInvalidValue);
}

ANA_SIM_API cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return priority ? stream_get(hStream, 0, NULL, priority)
                    : ana_sim_ret(cudaErrorInvalidValue);
}

ANA_SIM_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, 1, flags, NULL) : ana_sim_ret(cudaErrorInvalidValue);
}

ANA_SIM_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    return priority ? stream_get(hStream, 1, NULL, priority)
                    : ana_sim_ret(cudaErrorInvalidValue);
}

/* Stream capture is not simulated: no stream is ever capturing. */
ANA_SIM_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                              enum cudaStreamCaptureStatus *pCaptureStatus)
{
    if (!pCaptureStatus)
        return ana_sim_ret(cudaErrorInvalidValue);
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return stream_check(stream, 0);
}

ANA_SIM_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
        enum cudaStreamCaptureStatus *pCaptureStatus)
{
    if (!pCaptureStatus)
        return ana_sim_ret(cudaErrorInvalidValue);
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return stream_check(stream, 1);
}

static cudaError_t capture_info(cudaStream_t stream, int ptsz,
        enum cudaStreamCaptureStatus *status, unsigned long long *id, cudaGraph_t *graph,
        const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *ndeps)
{
    if (!status)
        return ana_sim_ret(cudaErrorInvalidValue);
    *status = cudaStreamCaptureStatusNone;
    if (id)
        *id = 0;
    if (graph)
        *graph = NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    return stream_check(stream, ptsz);
}

ANA_SIM_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
        enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out,
        cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out,
        const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(stream, 0, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

ANA_SIM_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
        enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out,
        cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out,
        const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(stream, 1, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

ANA_SIM_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > cudaStreamCaptureModeRelaxed)
        return ana_sim_ret(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* ---- events ---------------------------------------------------------------------- */

ANA_SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming |
                           cudaEventInterprocess;
    if (!event || (flags & ~known) ||
        ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
        return ana_sim_ret(cudaErrorInvalidValue);
    struct ana_sim_event *e = calloc(1, sizeof(*e));
    if (!e)
        return ana_sim_ret(cudaErrorMemoryAllocation);
    e->flags = flags;
    return add_handle(&events, e, (void **)event);
}

ANA_SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

ANA_SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_del(&events, event);
    ana_sim_leave();
    free(e);
    return ana_sim_ret(e ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

/* An event marks the point where the stream's earlier work is done. */
static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, int ptsz)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    cudaError_t err = e ? ana_sim_stream_resolve_locked(stream, ptsz, &s)
                        : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess) {
        e->time_ns = ana_sim_stream_enqueue_locked(s, 0);
        e->recorded = 1;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 0);
}

ANA_SIM_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 1);
}

ANA_SIM_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                 unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return ana_sim_ret(cudaErrorInvalidValue);
    return event_record(event, stream, 0);
}

ANA_SIM_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event,
                                                      cudaStream_t stream,
                                                      unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return ana_sim_ret(cudaErrorInvalidValue);
    return event_record(event, stream, 1);
}

static cudaError_t event_check(cudaEvent_t event)
{
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    ana_sim_leave();
    return ana_sim_ret(e ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

ANA_SIM_API cudaError_t cudaEventQuery(cudaEvent_t event) { return event_check(event); }
ANA_SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event) { return event_check(event); }

ANA_SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    struct ana_sim_event *a = ana_sim_map_get(&events, start);
    struct ana_sim_event *b = ana_sim_map_get(&events, end);
    if (!a || !b || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & cudaEventDisableTiming))
        err = cudaErrorInvalidResourceHandle;
    else
        *ms = (float)(((double)b->time_ns - (double)a->time_ns) / 1e6);
    ana_sim_leave();
    return ana_sim_ret(err);
}

static cudaError_t wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              int ptsz)
{
    struct ana_sim_stream *s;
    if (flags & ~(unsigned)cudaEventWaitExternal)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    cudaError_t err = e ? ana_sim_stream_resolve_locked(stream, ptsz, &s)
                        : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && e->recorded && e->time_ns > s->clock_ns)
        advance_locked(s, e->time_ns);
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                            unsigned int flags)
{
    return wait_event(stream, event, flags, 0);
}

ANA_SIM_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                                 unsigned int flags)
{
    return wait_event(stream, event, flags, 1);
}

/*
 * stream.c — streams, events, the per-stream device clocks and the cost model.
 *
 * Each stream has a clock: the device time (CLOCK_MONOTONIC ns) at which its last
 * operation ends. An operation starts at max(stream clock, host now) and ends `cost`
 * later. Legacy default-stream semantics are kept: work on the legacy stream waits for
 * every blocking stream, and work on a blocking stream (including a per-thread default
 * stream) waits for the legacy stream; cudaStreamNonBlocking streams wait for no one.
 * All simulated work is complete as soon as it is submitted, from the host's point of
 * view: synchronisation returns at once and queries never answer cudaErrorNotReady. A
 * call that real CUDA makes the host wait in (a synchronous copy, cudaStreamSynchronize)
 * instead moves the calling thread's "host floor": its later work starts no earlier
 * than what it waited for, as if it had slept.
 *
 * Every public entry point is one API call for the sim's CUPTI (api.h).
 */
#include "sim.h"
#include "api.h"

#include <math.h>
#include <stdlib.h>

struct ana_sim_stream {
    uint64_t clock_ns;
    unsigned flags;
    int priority;
    int blocking;                /* synchronises with the legacy stream */
    uint32_t id;                 /* CUPTI-style stream id; 0 until first asked */
    struct ana_sim_capture *capture; /* graph.c, while capturing */
};

struct ana_sim_event {
    unsigned flags;
    int recorded;
    uint64_t time_ns;
};

/* Stream ids as CUPTI shows them: 7 for the legacy default stream, then 13, 14, ... for
 * each per-thread default stream and created stream, never reused. */
#define LEGACY_STREAM_ID 7u
#define FIRST_STREAM_ID  13u
static struct ana_sim_stream legacy_stream = { 0, 0, 0, 0, LEGACY_STREAM_ID, NULL };
static __thread struct ana_sim_stream per_thread_stream = { 0, 0, 0, 1, 0, NULL };
static __thread uint64_t host_floor_ns;  /* device time this thread has waited for */
static uint32_t next_stream_id = FIRST_STREAM_ID;
static uint64_t blocking_max_ns;  /* end of the latest work on any blocking stream */
static struct ana_sim_map streams, events;
static __thread enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* ---- cost model ------------------------------------------------------------------ */

uint64_t ana_sim_cost_kernel_ns(dim3 g, dim3 b)
{
    double threads = (double)g.x * g.y * g.z * (double)b.x * b.y * b.z;
    return (uint64_t)llround(ANA_SIM_LAUNCH_NS + threads * ANA_SIM_THREAD_NS);
}

uint64_t ana_sim_cost_memcpy_ns(size_t bytes, enum cudaMemcpyKind kind, int pageable)
{
    double rate;
    if (kind == cudaMemcpyHostToHost)
        return 0;
    if (kind == cudaMemcpyDeviceToDevice)
        rate = ANA_SIM_HBM_BYTES_PER_NS;
    else
        rate = pageable ? ANA_SIM_PAGEABLE_BYTES_PER_NS : ANA_SIM_PCIE_BYTES_PER_NS;
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
    uint64_t t = max_u64(s->clock_ns, ana_sim_host_now_locked());
    if (s == &legacy_stream)
        t = max_u64(t, blocking_max_ns);
    else if (s->blocking)
        t = max_u64(t, legacy_stream.clock_ns);
    return t;
}

uint64_t ana_sim_host_now_locked(void)
{
    return max_u64(ana_sim_now_ns(), host_floor_ns);
}

void ana_sim_host_wait_locked(uint64_t t)
{
    host_floor_ns = max_u64(host_floor_ns, t);
}

static uint64_t device_max_ns; /* end of the latest work on any stream */

uint64_t ana_sim_device_end_locked(void) { return device_max_ns; }

static void advance_locked(struct ana_sim_stream *s, uint64_t end)
{
    s->clock_ns = end;
    device_max_ns = max_u64(device_max_ns, end);
    if (s->blocking)
        blocking_max_ns = max_u64(blocking_max_ns, end);
}

uint64_t ana_sim_stream_enqueue_after_locked(struct ana_sim_stream *s, uint64_t duration_ns,
                                             uint64_t not_before_ns)
{
    uint64_t start = max_u64(ready_time_locked(s), not_before_ns);
    advance_locked(s, start + duration_ns);
    return start;
}

uint64_t ana_sim_stream_enqueue_locked(struct ana_sim_stream *s, uint64_t duration_ns)
{
    return ana_sim_stream_enqueue_after_locked(s, duration_ns, 0);
}

uint64_t ana_sim_stream_ready_locked(const struct ana_sim_stream *s)
{
    return ready_time_locked(s);
}

ANASIM_PRIVATE_API CUresult anasim_stream_ready(CUstream stream, int ptsz, uint64_t *t)
{
    struct ana_sim_stream *s;
    if (!t)
        return CUDA_ERROR_INVALID_VALUE;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked((cudaStream_t)stream, ptsz, &s);
    if (err == cudaSuccess)
        *t = ready_time_locked(s);
    ana_sim_leave();
    return err == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
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

cudaError_t ana_sim_stream_check(cudaStream_t h, int ptsz)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(h, ptsz, &s);
    ana_sim_leave();
    return err;
}

int ana_sim_stream_is_legacy(const struct ana_sim_stream *s) { return s == &legacy_stream; }

struct ana_sim_capture **ana_sim_stream_capture_slot_locked(struct ana_sim_stream *s)
{
    return &s->capture;
}

uint32_t ana_sim_stream_id_locked(const struct ana_sim_stream *s)
{
    /* Per-thread streams live in TLS and cannot be numbered at creation. */
    if (s->id == 0)
        ((struct ana_sim_stream *)s)->id = next_stream_id++;
    return s->id;
}

static void free_stream(void *val)
{
    ana_sim_capture_drop_locked(val);
    free(val);
}

void ana_sim_stream_reset_locked(void)
{
    ana_sim_map_clear(&streams, free_stream);
    ana_sim_map_clear(&events, free);
}

/* ---- streams --------------------------------------------------------------------- */

/* Registers a new stream or event object and hands it out as *out; frees it on failure. */
static cudaError_t add_handle_locked(struct ana_sim_map *map, void *obj, void **out)
{
    if (ana_sim_map_put(map, obj, obj) != 0) {
        free(obj);
        return cudaErrorMemoryAllocation;
    }
    *out = obj;
    return cudaSuccess;
}

static cudaError_t stream_create(cudaStream_t *pStream, unsigned flags, int priority)
{
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return cudaErrorInvalidValue;
    struct ana_sim_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return cudaErrorMemoryAllocation;
    if (priority > ANA_SIM_PRIORITY_LEAST)
        priority = ANA_SIM_PRIORITY_LEAST;
    if (priority < ANA_SIM_PRIORITY_GREATEST)
        priority = ANA_SIM_PRIORITY_GREATEST;
    s->flags = flags;
    s->priority = priority;
    s->blocking = !(flags & cudaStreamNonBlocking);
    ana_sim_enter();
    s->id = next_stream_id++;   /* taken even if registering fails, as ids never repeat */
    cudaError_t err = add_handle_locked(&streams, s, (void **)pStream);
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream,
                                                     unsigned int flags, int priority)
{
    ANA_SIM_TRACED(cudaStreamCreateWithPriority, v5050,
                   stream_create(pStream, flags, priority),
                   pStream, flags, priority);
}

ANA_SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    ANA_SIM_TRACED(cudaStreamCreateWithFlags, v5000,
                   stream_create(pStream, flags, ANA_SIM_PRIORITY_LEAST),
                   pStream, flags);
}

ANA_SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    ANA_SIM_TRACED(cudaStreamCreate, v3020,
                   stream_create(pStream, cudaStreamDefault, ANA_SIM_PRIORITY_LEAST),
                   pStream);
}

static cudaError_t stream_destroy(cudaStream_t stream)
{
    ana_sim_enter();
    struct ana_sim_stream *s = ana_sim_map_del(&streams, stream);
    if (s)
        ana_sim_capture_drop_locked(s);
    ana_sim_leave();
    free(s);
    return s ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

ANA_SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaStreamDestroy, v5050, stream_destroy(stream), stream);
}

/* Synchronize (wait = 1) or query a stream: illegal while it captures. Work is complete
 * when submitted, so a wait only moves this thread's host floor to the stream's clock. */
static cudaError_t stream_sync(cudaStream_t stream, int ptsz, int wait)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err == cudaSuccess)
        err = ana_sim_capture_sync_locked(s);
    if (err == cudaSuccess && wait)
        ana_sim_host_wait_locked(s->clock_ns);
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaStreamSynchronize, v3020, stream_sync(stream, 0, 1), stream);
}

ANA_SIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaStreamSynchronize_ptsz, v7000, stream_sync(stream, 1, 1), stream);
}

ANA_SIM_API cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaStreamQuery, v3020, stream_sync(stream, 0, 0), stream);
}

ANA_SIM_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaStreamQuery_ptsz, v7000, stream_sync(stream, 1, 0), stream);
}

static cudaError_t stream_get(cudaStream_t h, int ptsz, unsigned *flags, int *priority)
{
    struct ana_sim_stream *s;
    if (!flags && !priority)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(h, ptsz, &s);
    if (err == cudaSuccess) {
        if (flags)
            *flags = s->flags;
        if (priority)
            *priority = s->priority;
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    ANA_SIM_TRACED(cudaStreamGetFlags, v5050, stream_get(hStream, 0, flags, NULL),
                   hStream, flags);
}

ANA_SIM_API cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    ANA_SIM_TRACED(cudaStreamGetPriority, v5050, stream_get(hStream, 0, NULL, priority),
                   hStream, priority);
}

ANA_SIM_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    ANA_SIM_TRACED(cudaStreamGetFlags_ptsz, v7000, stream_get(hStream, 1, flags, NULL),
                   hStream, flags);
}

ANA_SIM_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    ANA_SIM_TRACED(cudaStreamGetPriority_ptsz, v7000,
                   stream_get(hStream, 1, NULL, priority), hStream, priority);
}

static cudaError_t exchange_capture_mode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    ANA_SIM_TRACED(cudaThreadExchangeStreamCaptureMode, v10010,
                   exchange_capture_mode(mode), mode);
}

/* ---- events ---------------------------------------------------------------------- */

static cudaError_t event_create(cudaEvent_t *event, unsigned flags)
{
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming |
                           cudaEventInterprocess;
    if (!event || (flags & ~known) ||
        ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
        return cudaErrorInvalidValue;
    struct ana_sim_event *e = calloc(1, sizeof(*e));
    if (!e)
        return cudaErrorMemoryAllocation;
    e->flags = flags;
    ana_sim_enter();
    cudaError_t err = add_handle_locked(&events, e, (void **)event);
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    ANA_SIM_TRACED(cudaEventCreateWithFlags, v3020, event_create(event, flags), event,
                   flags);
}

ANA_SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    ANA_SIM_TRACED(cudaEventCreate, v3020, event_create(event, cudaEventDefault), event);
}

static cudaError_t event_destroy(cudaEvent_t event)
{
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_del(&events, event);
    ana_sim_leave();
    free(e);
    return e ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

ANA_SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    ANA_SIM_TRACED(cudaEventDestroy, v3020, event_destroy(event), event);
}

/* An event marks the point where the stream's earlier work is done. Recorded into a
 * capturing stream it becomes no node (captures are single-stream) and changes nothing. */
static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, int ptsz,
                                unsigned flags)
{
    struct ana_sim_stream *s;
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    cudaError_t err = e ? ana_sim_stream_resolve_locked(stream, ptsz, &s)
                        : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && !ana_sim_capturing_locked(s)) {
        e->time_ns = ana_sim_stream_enqueue_locked(s, 0);
        e->recorded = 1;
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaEventRecord, v3020, event_record(event, stream, 0, 0), event, stream);
}

ANA_SIM_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaEventRecord_ptsz, v7000, event_record(event, stream, 1, 0), event,
                   stream);
}

ANA_SIM_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                 unsigned int flags)
{
    ANA_SIM_TRACED(cudaEventRecordWithFlags, v11010, event_record(event, stream, 0, flags),
                   event, stream, flags);
}

ANA_SIM_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event,
                                                      cudaStream_t stream,
                                                      unsigned int flags)
{
    ANA_SIM_TRACED(cudaEventRecordWithFlags_ptsz, v11010,
                   event_record(event, stream, 1, flags), event, stream, flags);
}

/* Query (wait = 0) or synchronize (wait = 1: the host floor moves to the event). */
static cudaError_t event_sync(cudaEvent_t event, int wait)
{
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    if (e && wait && e->recorded)
        ana_sim_host_wait_locked(e->time_ns);
    ana_sim_leave();
    return e ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

ANA_SIM_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    ANA_SIM_TRACED(cudaEventQuery, v3020, event_sync(event, 0), event);
}

ANA_SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    ANA_SIM_TRACED(cudaEventSynchronize, v3020, event_sync(event, 1), event);
}

static cudaError_t event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return cudaErrorInvalidValue;
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
    return err;
}

ANA_SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    ANA_SIM_TRACED(cudaEventElapsedTime, v12080, event_elapsed(ms, start, end), ms, start,
                   end);
}

/* A wait inside a capture would join streams into it; captures are single-stream, so it
 * changes nothing there. */
static cudaError_t wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              int ptsz)
{
    struct ana_sim_stream *s;
    if (flags & ~(unsigned)cudaEventWaitExternal)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct ana_sim_event *e = ana_sim_map_get(&events, event);
    cudaError_t err = e ? ana_sim_stream_resolve_locked(stream, ptsz, &s)
                        : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && e->recorded && e->time_ns > s->clock_ns &&
        !ana_sim_capturing_locked(s))
        advance_locked(s, e->time_ns);
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                            unsigned int flags)
{
    ANA_SIM_TRACED(cudaStreamWaitEvent, v3020, wait_event(stream, event, flags, 0), stream,
                   event, flags);
}

ANA_SIM_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                                 unsigned int flags)
{
    ANA_SIM_TRACED(cudaStreamWaitEvent_ptsz, v7000, wait_event(stream, event, flags, 1),
                   stream, event, flags);
}

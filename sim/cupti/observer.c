/*
 * observer.c — the sim's libcupti.so.13 as the device's observer (sim/anasim.h).
 *
 * At API entry: EXTERNAL_CORRELATION records for the ids this thread has pushed (outermost
 * calls only: nested driver calls share the correlation id), then the subscriber's
 * callback, then the start time. At exit: the end time, the callback, then the RUNTIME or
 * DRIVER record (CUpti_ActivityAPI). So an API record spans the call itself, not the
 * client's callbacks.
 *
 * Device records are copied, their timestamps moved to the client's time base, kernel
 * records given the kernel kind the client enabled, and their strings interned (CUPTI's
 * names are shared by all records of a kernel and outlive the buffer).
 *
 * Which kinds to build is published to the device as one mask whenever it changes
 * (attach, cuptiActivityEnable/Disable, cuptiFinalize), so the device never calls back to
 * ask; each record handed over is checked once more against the kinds enabled now.
 *
 * Thread-safety: per-thread state (external id stacks, API start times) is TLS; the time
 * offset is an atomic; the string table has its own lock; attaching, detaching and
 * publishing are serialised by one mutex, so the last mask published is the current one.
 */
#define _GNU_SOURCE
#include "cupti_sim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXT_DEPTH  64  /* pushed external ids per kind per thread */
#define CALL_DEPTH 32  /* nested API calls per thread */

static _Atomic uint64_t time_offset = ANA_CUPTI_DEFAULT_OFFSET_NS;
static _Atomic int thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static int attached;                  /* under attach_lock */

static __thread struct {
    uint64_t ids[EXT_DEPTH];
    int depth;
} tls_ext[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
static __thread struct { anasim_api *call; uint64_t start; } tls_calls[CALL_DEPTH];
static __thread int tls_call_depth;

/* ---- time -------------------------------------------------------------------------- */

uint64_t ana_cupti_client_time(uint64_t device_ns)
{
    return device_ns ? device_ns + atomic_load(&time_offset) : 0;
}

ANA_CUPTI_API CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *timestamp = ana_cupti_client_time(anasim_now_ns());
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
    if (!fn)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    /* Both clocks are read once first (a first call can be slow: lazy binding), then the
     * device clock before the client's, so converted times are never earlier than the
     * client's clock at the same moment. */
    (void)anasim_now_ns();
    (void)fn();
    uint64_t device = anasim_now_ns();
    uint64_t client = fn();
    atomic_store(&time_offset, client - device); /* modulo 2^64: may be "negative" */
    return CUPTI_SUCCESS;
}

/* ---- thread ids ---------------------------------------------------------------------- */

ANA_CUPTI_API CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
    if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return ana_cupti_ret(CUPTI_ERROR_NOT_SUPPORTED);
    atomic_store(&thread_id_type, type);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
    if (!type)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *type = (CUpti_ActivityThreadIdType)atomic_load(&thread_id_type);
    return CUPTI_SUCCESS;
}

/* DEFAULT: pthread_self() (NVIDIA's choice on Linux), SYSTEM: the kernel's thread id. */
static uint32_t thread_id(void)
{
    if (atomic_load(&thread_id_type) == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return (uint32_t)syscall(SYS_gettid);
    return (uint32_t)pthread_self();
}

/* ---- external correlation ---------------------------------------------------------- */

static int valid_ext_kind(CUpti_ExternalCorrelationKind kind)
{
    return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID &&
           kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

ANA_CUPTI_API CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                 uint64_t id)
{
    if (!valid_ext_kind(kind))
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    if (tls_ext[kind].depth == EXT_DEPTH)
        return ana_cupti_ret(CUPTI_ERROR_MAX_LIMIT_REACHED);
    tls_ext[kind].ids[tls_ext[kind].depth++] = id;
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                uint64_t *lastId)
{
    if (!valid_ext_kind(kind))
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    if (tls_ext[kind].depth == 0)
        return ana_cupti_ret(CUPTI_ERROR_QUEUE_EMPTY);
    uint64_t id = tls_ext[kind].ids[--tls_ext[kind].depth];
    if (lastId)
        *lastId = id;
    return CUPTI_SUCCESS;
}

static void emit_external(uint32_t correlation)
{
    if (!ana_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))
        return;
    for (int k = CUPTI_EXTERNAL_CORRELATION_KIND_INVALID + 1;
         k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
        if (tls_ext[k].depth == 0)
            continue;
        CUpti_ActivityExternalCorrelation r = {
            .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
            .externalKind = (CUpti_ExternalCorrelationKind)k,
            .externalId = tls_ext[k].ids[tls_ext[k].depth - 1],
            .correlationId = correlation,
        };
        ana_cupti_emit((const CUpti_Activity *)&r, 0);
    }
}

/* ---- API calls ------------------------------------------------------------------------ */

static void emit_api_record(const anasim_api *call, uint64_t start, uint64_t end)
{
    CUpti_ActivityKind kind = call->domain == CUPTI_CB_DOMAIN_RUNTIME_API
                                  ? CUPTI_ACTIVITY_KIND_RUNTIME
                                  : CUPTI_ACTIVITY_KIND_DRIVER;
    if (!ana_cupti_kind_enabled(kind) || !ana_cupti_api_record_enabled(kind, call->cbid))
        return;
    CUpti_ActivityAPI r = {
        .kind = kind,
        .cbid = call->cbid,
        .start = ana_cupti_client_time(start),
        .end = ana_cupti_client_time(end),
        .processId = anasim_pid(),
        .threadId = thread_id(),
        .correlationId = call->correlation,
        .returnValue = call->ret ? (uint32_t) * (const int *)call->ret : 0,
    };
    ana_cupti_emit((const CUpti_Activity *)&r, end);
}

static void on_api(int exit_site, anasim_api *call)
{
    if (!exit_site) {
        if (!call->nested)
            emit_external(call->correlation);
        ana_cupti_callback_dispatch(0, call);
        if (tls_call_depth < CALL_DEPTH) {
            tls_calls[tls_call_depth].call = call;
            tls_calls[tls_call_depth].start = anasim_now_ns();
        }
        tls_call_depth++;
        return;
    }
    uint64_t end = anasim_now_ns(), start = end;
    if (tls_call_depth > 0 && --tls_call_depth < CALL_DEPTH &&
        tls_calls[tls_call_depth].call == call)
        start = tls_calls[tls_call_depth].start;
    ana_cupti_callback_dispatch(1, call);
    emit_api_record(call, start, end);
}

/* ---- device records ----------------------------------------------------------------- */

/* Interned strings: one copy per distinct string, kept for the life of the process. */
static pthread_mutex_t strings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned { struct interned *next; char s[]; } *strings[256];

static const char *intern(const char *s)
{
    if (!s)
        return NULL;
    uint32_t h = 2166136261u;
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    pthread_mutex_lock(&strings_lock);
    struct interned *e = strings[h % 256];
    while (e && strcmp(e->s, s) != 0)
        e = e->next;
    if (!e && (e = malloc(sizeof *e + strlen(s) + 1))) {
        strcpy(e->s, s);
        e->next = strings[h % 256];
        strings[h % 256] = e;
    }
    pthread_mutex_unlock(&strings_lock);
    return e ? e->s : NULL;
}

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Moves every timestamp of r to the client's base; returns when (device clock) it is done.
 * `kinds`: the enabled kinds, which decide a kernel record's kind. */
static uint64_t convert(CUpti_Activity *r, uint64_t kinds)
{
    uint64_t done = 0;
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
        done = max2(k->end, k->completed);
        k->start = ana_cupti_client_time(k->start);
        k->end = ana_cupti_client_time(k->end);
        k->completed = ana_cupti_client_time(k->completed);
        k->queued = ana_cupti_client_time(k->queued);
        k->submitted = ana_cupti_client_time(k->submitted);
        k->name = intern(k->name);
        k->kind = kinds & ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                      ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                      : CUPTI_ACTIVITY_KIND_KERNEL;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)r;
        done = m->end;
        m->start = ana_cupti_client_time(m->start);
        m->end = ana_cupti_client_time(m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        CUpti_ActivityMemcpyPtoP4 *m = (CUpti_ActivityMemcpyPtoP4 *)r;
        done = m->end;
        m->start = ana_cupti_client_time(m->start);
        m->end = ana_cupti_client_time(m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)r;
        done = m->end;
        m->start = ana_cupti_client_time(m->start);
        m->end = ana_cupti_client_time(m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
        CUpti_ActivityMemory4 *m = (CUpti_ActivityMemory4 *)r;
        done = m->timestamp;
        m->timestamp = ana_cupti_client_time(m->timestamp);
        m->name = intern(m->name);
        m->source = intern(m->source);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: {
        CUpti_ActivityMemoryPool3 *p = (CUpti_ActivityMemoryPool3 *)r;
        done = p->timestamp;
        p->timestamp = ana_cupti_client_time(p->timestamp);
        break;
    }
    default:
        break;
    }
    return done;
}

static int wanted(uint64_t kinds, CUpti_ActivityKind kind)
{
    return (ana_cupti_wanted(kinds) & ANASIM_KIND_BIT(kind)) != 0;
}

static void on_activity(const CUpti_Activity *rec)
{
    union {
        CUpti_Activity a;
        CUpti_ActivityKernel10 k;
        CUpti_ActivityMemcpy6 m;
        CUpti_ActivityMemcpyPtoP4 p;
        CUpti_ActivityMemset4 s;
        CUpti_ActivityMemory4 mem;
        CUpti_ActivityMemoryPool3 pool;
    } copy;
    uint64_t kinds = ana_cupti_kinds();
    size_t size = ana_cupti_record_size(rec->kind);
    if (size == 0 || size > sizeof copy || !wanted(kinds, rec->kind))
        return;
    memcpy(&copy, rec, size);
    uint64_t done = convert(&copy.a, kinds);
    ana_cupti_emit(&copy.a, done);
}

/* The device asks only until the mask is published (anasim.h). */
static int on_wants(CUpti_ActivityKind kind) { return wanted(ana_cupti_kinds(), kind); }

static const anasim_observer observer = {
    .api = on_api,
    .wants = on_wants,
    .activity = on_activity,
};

static void publish_locked(void)
{
    if (attached)
        anasim_set_activity_mask(ana_cupti_wanted(ana_cupti_kinds()));
}

void ana_cupti_attach(void)
{
    pthread_mutex_lock(&attach_lock);
    if (!attached) {
        anasim_set_observer(&observer);
        attached = 1;
    }
    publish_locked();
    pthread_mutex_unlock(&attach_lock);
}

void ana_cupti_publish_kinds(void)
{
    pthread_mutex_lock(&attach_lock);
    publish_locked();
    pthread_mutex_unlock(&attach_lock);
}

void ana_cupti_observer_reset(void)
{
    pthread_mutex_lock(&attach_lock);
    if (attached)
        anasim_set_observer(NULL);
    attached = 0;
    pthread_mutex_unlock(&attach_lock);
    atomic_store(&time_offset, ANA_CUPTI_DEFAULT_OFFSET_NS);
}

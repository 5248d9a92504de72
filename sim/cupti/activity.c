/*
 * activity.c — activity kinds, the client's buffers and their delivery (sim libcupti.so.13).
 *
 * Records go into the current client buffer (from bufferRequested, called without our lock
 * held). When a record does not fit, the buffer is "full": it joins the FIFO of full
 * buffers and the worker thread hands it to bufferCompleted once all its records are
 * complete (their last timestamp <= the device clock now). A buffer that is NULL, smaller
 * than the record at hand or not 8-byte aligned costs that record (counted for
 * cuptiActivityGetNumDroppedRecords); a non-NULL one is given back at once with
 * validSize 0.
 *
 * cuptiActivityFlushAll(0) hands back every buffer (full or not) whose records are all
 * complete; with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED every buffer that holds a record. Both
 * return only when no delivery is in flight on another thread. ANATOMIST_SIM_CUPTI_LATE=1
 * holds every buffer back until a forced flush, cuptiFinalize or exit, and then delivers
 * them newest first.
 *
 * Thread-safety: one mutex guards the buffers; it is never held while the client's
 * bufferRequested or bufferCompleted runs (they may call CUPTI or CUDA).
 */
#define _GNU_SOURCE
#include "cupti_sim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API_WORDS     ((CUPTI_DRIVER_TRACE_CBID_SIZE + 63) / 64)
#define MAX_WAIT_NS   100000000ull /* worker re-checks incomplete full buffers this often */

_Static_assert((int)CUPTI_RUNTIME_TRACE_CBID_SIZE <= (int)CUPTI_DRIVER_TRACE_CBID_SIZE, "api bitmap");

struct abuf {
    uint8_t *ptr;
    size_t size, used, nrec, maxrec;
    uint64_t done_ns; /* device clock: when its last record is complete */
    struct abuf *next;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* worker: a buffer became full, the period changed, or stop */
static pthread_cond_t idle; /* flushers: a delivery finished */

static _Atomic uint64_t enabled;   /* ANASIM_KIND_BIT bits of the kinds the client enabled */
static _Atomic uint64_t api_off[2][API_WORDS]; /* [0] runtime, [1] driver: cbids turned off */

static struct {
    CUpti_BuffersCallbackRequestFunc requested;
    CUpti_BuffersCallbackCompleteFunc completed;
    struct abuf *cur, *spare, *full, *full_tail;
    size_t dropped;
    int late;
    uint32_t period_ms;
    int worker_started, stop, delivering, exit_hook;
    pthread_t worker;
} S;
static __thread int tls_in_request, tls_in_complete;

static void init_conds(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* the device clock */
    pthread_cond_init(&wake, &a);
    pthread_condattr_destroy(&a);
    pthread_cond_init(&idle, NULL);
}

static void after_fork_child(void)
{
    /* The parent's worker may have been waiting on the condition variables at the fork:
     * their copies hold its waiter counts, and a broadcast in the child would wait forever
     * for a waiter that is not there. */
    init_conds();
    pthread_mutex_init(&lock, NULL);
    /* The buffer lists may have been mid-update by another thread at the fork: the child
     * keeps none of them (leaked, never freed or delivered), as CUPTI does not survive a
     * fork; a child that uses CUPTI starts from empty lists. */
    S.cur = S.spare = S.full = S.full_tail = NULL;
    S.worker_started = 0; /* the worker did not survive the fork; restarted on demand */
    S.delivering = 0;
}

static void init(void)
{
    init_conds();
    const char *late = getenv("ANATOMIST_SIM_CUPTI_LATE");
    S.late = late && strcmp(late, "1") == 0;
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* ---- kinds ------------------------------------------------------------------------ */

size_t ana_cupti_record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:    return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:               return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:              return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:               return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2:              return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:          return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:               return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default:                                       return 0;
    }
}

uint64_t ana_cupti_kinds(void) { return atomic_load(&enabled); }

int ana_cupti_kind_enabled(CUpti_ActivityKind kind)
{
    return (ana_cupti_kinds() & ANASIM_KIND_BIT(kind)) != 0;
}

/* Kinds the sim does not produce are refused with CUPTI_ERROR_NOT_COMPATIBLE (so every
 * enabled kind has a bit: anasim.h checks the produced kinds are below 64). */
ANA_CUPTI_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_KIND);
    if (ana_cupti_record_size(kind) == 0)
        return ana_cupti_ret(CUPTI_ERROR_NOT_COMPATIBLE);
    anasim_note_init("cuptiActivityEnable"); /* CUPTI initialises the driver */
    pthread_once(&once, init);
    atomic_fetch_or(&enabled, ANASIM_KIND_BIT(kind));
    ana_cupti_attach();   /* publishes the kinds */
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_KIND);
    atomic_fetch_and(&enabled, ~ANASIM_KIND_BIT(kind));
    ana_cupti_publish_kinds();
    return CUPTI_SUCCESS;
}

static CUptiResult enable_api(int driver, CUpti_CallbackId cbid, uint8_t enable)
{
    uint32_t n = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    if (cbid == 0 || cbid >= n)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    uint64_t m = 1ull << (cbid % 64);
    if (enable)
        atomic_fetch_and(&api_off[driver][cbid / 64], ~m);
    else
        atomic_fetch_or(&api_off[driver][cbid / 64], m);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return enable_api(0, cbid, enable);
}

ANA_CUPTI_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
    return enable_api(1, cbid, enable);
}

int ana_cupti_api_record_enabled(CUpti_ActivityKind kind, CUpti_CallbackId cbid)
{
    int driver = kind == CUPTI_ACTIVITY_KIND_DRIVER;
    if (cbid >= (driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE))
        return 1;
    return !((atomic_load(&api_off[driver][cbid / 64]) >> (cbid % 64)) & 1);
}

/* ---- buffers ------------------------------------------------------------------------ */

static void *worker_main(void *arg);

static void retire_locked(struct abuf *b)
{
    b->next = NULL;
    if (S.full_tail)
        S.full_tail->next = b;
    else
        S.full = b;
    S.full_tail = b;
    if (!S.worker_started && S.completed &&
        pthread_create(&S.worker, NULL, worker_main, NULL) == 0)
        S.worker_started = 1;
    pthread_cond_signal(&wake);
}

static int fits(const struct abuf *b, size_t size)
{
    return b->used + size <= b->size && (b->maxrec == 0 || b->nrec < b->maxrec);
}

/* Asks the client for a buffer (lock dropped meanwhile). NULL: none usable for `need`. */
static struct abuf *request_locked(size_t need)
{
    CUpti_BuffersCallbackRequestFunc fn = S.requested;
    pthread_mutex_unlock(&lock);
    uint8_t *p = NULL;
    size_t size = 0, maxrec = 0;
    tls_in_request = 1;
    fn(&p, &size, &maxrec);
    tls_in_request = 0;
    struct abuf *b = p ? calloc(1, sizeof *b) : NULL;
    pthread_mutex_lock(&lock);
    if (!b)
        return NULL;
    *b = (struct abuf){.ptr = p, .size = size, .maxrec = maxrec};
    if (size < need || (uintptr_t)p % ACTIVITY_RECORD_ALIGNMENT != 0) {
        retire_locked(b); /* given back empty */
        return NULL;
    }
    return b;
}

void ana_cupti_emit(const CUpti_Activity *rec, uint64_t done_ns)
{
    size_t size = ana_cupti_record_size(rec->kind);
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    for (;;) {
        struct abuf *b = S.cur;
        if (b && fits(b, size)) {
            memcpy(b->ptr + b->used, rec, size);
            b->used += size;
            b->nrec++;
            if (done_ns > b->done_ns)
                b->done_ns = done_ns;
            break;
        }
        if (b) { /* full (or, if empty, too small for this record: given back) */
            S.cur = NULL;
            retire_locked(b);
        } else if (S.spare) {
            S.cur = S.spare;
            S.spare = S.spare->next;
        } else if (!S.requested || tls_in_request) {
            S.dropped++;
            break;
        } else if ((b = request_locked(size))) {
            if (S.cur) { /* another thread installed one meanwhile */
                b->next = S.spare;
                S.spare = b;
            } else {
                S.cur = b;
            }
        } else {
            S.dropped++;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* ---- delivery ----------------------------------------------------------------------- */

static struct abuf *reverse(struct abuf *l)
{
    struct abuf *r = NULL;
    while (l) {
        struct abuf *n = l->next;
        l->next = r;
        r = l;
        l = n;
    }
    return r;
}

/* Takes the buffers a flush hands back, in delivery order. with_current: a flush (not the
 * worker) also returns the partly filled current buffer. */
static struct abuf *take_locked(int forced, int with_current)
{
    uint64_t now = anasim_now_ns();
    if (with_current && S.cur && S.cur->nrec > 0 && (forced || S.cur->done_ns <= now)) {
        retire_locked(S.cur);
        S.cur = NULL;
    }
    if (S.late && !forced)
        return NULL;
    struct abuf *out = NULL, **out_tail = &out, **pp = &S.full, *kept = NULL;
    while (*pp) {
        struct abuf *b = *pp;
        if (forced || b->done_ns <= now) {
            *pp = b->next;
            b->next = NULL;
            *out_tail = b;
            out_tail = &b->next;
        } else {
            kept = b;
            pp = &b->next;
        }
    }
    S.full_tail = kept;
    return S.late ? reverse(out) : out;
}

/* Hands `list` to bufferCompleted with the lock dropped. */
static void deliver_locked(struct abuf *list)
{
    if (!list)
        return;
    CUpti_BuffersCallbackCompleteFunc fn = S.completed;
    S.delivering++;
    pthread_mutex_unlock(&lock);
    int outer = !tls_in_complete;
    tls_in_complete = 1;
    while (list) {
        struct abuf *b = list;
        list = b->next;
        if (fn)
            fn(NULL, 0, b->ptr, b->size, b->used);
        free(b);
    }
    if (outer)
        tls_in_complete = 0;
    pthread_mutex_lock(&lock);
    S.delivering--;
    pthread_cond_broadcast(&idle);
}

/* Flush on this thread, then wait for deliveries in flight elsewhere (not for our own,
 * when called from inside bufferCompleted). */
static void flush_locked(int forced)
{
    deliver_locked(take_locked(forced, 1));
    while (S.delivering > 0 && !tls_in_complete)
        pthread_cond_wait(&idle, &lock);
}

static void *worker_main(void *arg)
{
    pthread_mutex_lock(&lock);
    while (!S.stop) {
        deliver_locked(take_locked(0, 0));
        if (S.stop)
            break;
        uint64_t now = anasim_now_ns(), wait = 0;
        if (S.period_ms)
            wait = (uint64_t)S.period_ms * 1000000ull;
        for (struct abuf *b = S.full; b && !S.late; b = b->next) {
            uint64_t w = b->done_ns > now ? b->done_ns - now : 1;
            w = w < MAX_WAIT_NS ? w : MAX_WAIT_NS;
            wait = wait && wait < w ? wait : w;
        }
        if (!wait) {
            pthread_cond_wait(&wake, &lock);
            continue;
        }
        /* `wake` waits on CLOCK_MONOTONIC, the device clock `now` was read from. */
        uint64_t t = now + wait;
        struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
                               .tv_nsec = (long)(t % 1000000000ull) };
        pthread_cond_timedwait(&wake, &lock, &ts);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void stop_worker(void)
{
    pthread_mutex_lock(&lock);
    int started = S.worker_started;
    pthread_t w = S.worker;
    S.stop = 1;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    if (started && !pthread_equal(w, pthread_self()))
        pthread_join(w, NULL);
    pthread_mutex_lock(&lock);
    S.worker_started = 0;
    S.stop = 0;
    pthread_mutex_unlock(&lock);
}

/* Process exit: what is still held goes to the client (late mode included). */
static void at_exit(void)
{
    pthread_mutex_lock(&lock);
    if (S.completed)
        flush_locked(1);
    pthread_mutex_unlock(&lock);
    stop_worker();
}

ANA_CUPTI_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                         CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    S.requested = funcBufferRequested; /* one set per process: a later call replaces it */
    S.completed = funcBufferCompleted;
    if (!S.exit_hook)
        S.exit_hook = atexit(at_exit) == 0;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    if (!S.completed) {
        pthread_mutex_unlock(&lock);
        return ana_cupti_ret(CUPTI_ERROR_INVALID_OPERATION);
    }
    flush_locked((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

/* Deprecated in CUDA 13: context and stream are ignored, as NVIDIA's does. */
ANA_CUPTI_API CUptiResult cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    return cuptiActivityFlushAll(flag);
}

ANA_CUPTI_API CUptiResult cuptiActivityFlushPeriod(uint32_t time)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    S.period_ms = time;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                            size_t *dropped)
{
    if (!dropped)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    pthread_mutex_lock(&lock);
    *dropped = S.dropped; /* reset on read, as NVIDIA's */
    S.dropped = 0;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                     CUpti_Activity **record)
{
    if (!buffer || !record)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    size_t off = 0;
    if (*record) {
        size_t prev = ana_cupti_record_size((*record)->kind);
        if (prev == 0)
            return ana_cupti_ret(CUPTI_ERROR_INVALID_KIND);
        off = (size_t)((uint8_t *)*record - buffer) + prev;
    }
    if (off >= validBufferSizeBytes)
        return ana_cupti_ret(CUPTI_ERROR_MAX_LIMIT_REACHED);
    CUpti_Activity *r = (CUpti_Activity *)(buffer + off);
    size_t size = ana_cupti_record_size(r->kind);
    if (size == 0 || off + size > validBufferSizeBytes)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_KIND);
    *record = r;
    return CUPTI_SUCCESS;
}

/* ---- attributes: stored and answered; the sim's behaviour does not depend on them ---- */

#define ATTR_COUNT (CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS + 1)
static pthread_mutex_t attr_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t attr_value[ATTR_COUNT] = { /* NVIDIA's documented defaults */
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = 3200000,
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP] = 8388608,
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] = 250,
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE] = 25000,
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT] = 250,
    [CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER] = 0,
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] = 3,
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE] = 3,
    [CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED] = 0,
    [CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER] = 1,
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS] = 16777216,
};

/* The value's width: a uint8_t for the three flags, a size_t otherwise; 0 if unknown. */
static size_t attr_width(CUpti_ActivityAttribute attr)
{
    if ((unsigned)attr >= ATTR_COUNT)
        return 0;
    if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER ||
        attr == CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED ||
        attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER)
        return sizeof(uint8_t);
    return sizeof(size_t);
}

static CUptiResult attribute(int set, CUpti_ActivityAttribute attr, size_t *valueSize, void *value)
{
    size_t w = attr_width(attr);
    if (w == 0 || !valueSize || !value)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*valueSize < w)
        return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    pthread_mutex_lock(&attr_lock);
    if (set)
        attr_value[attr] = w == 1 ? *(uint8_t *)value : *(size_t *)value;
    else if (w == 1)
        *(uint8_t *)value = (uint8_t)attr_value[attr];
    else
        *(size_t *)value = (size_t)attr_value[attr];
    pthread_mutex_unlock(&attr_lock);
    *valueSize = w;
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
                                                    void *value)
{
    return ana_cupti_ret(attribute(0, attr, valueSize, value));
}

ANA_CUPTI_API CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
                                                    void *value)
{
    return ana_cupti_ret(attribute(1, attr, valueSize, value));
}

/* ---- finalize ------------------------------------------------------------------------ */

void ana_cupti_activity_reset(void)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    if (S.completed) { /* every buffer goes back, the empty ones with validSize 0 */
        if (S.cur) {
            retire_locked(S.cur);
            S.cur = NULL;
        }
        while (S.spare) {
            struct abuf *b = S.spare;
            S.spare = b->next;
            retire_locked(b);
        }
        flush_locked(1);
    }
    pthread_mutex_unlock(&lock);
    stop_worker();
    pthread_mutex_lock(&lock);
    S.requested = NULL;
    S.completed = NULL;
    S.period_ms = 0;
    pthread_mutex_unlock(&lock);
    atomic_store(&enabled, 0);
    ana_cupti_publish_kinds();
    memset((void *)api_off, 0, sizeof api_off);
}

/* Detaches from the device and forgets the subscriber, the kinds and the callbacks; the
 * next CUPTI call starts afresh. */
ANA_CUPTI_API CUptiResult cuptiFinalize(void)
{
    ana_cupti_observer_reset();
    ana_cupti_activity_reset();
    ana_cupti_subscriber_reset();
    return CUPTI_SUCCESS;
}

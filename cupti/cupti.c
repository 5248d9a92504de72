/* cupti.c — GPU activity through CUPTI: start, the buffer pool, collection, handing
 * CUPTI over to the program, fork (activity.h; docs/trace-format.md, "GPU activity and
 * correlation"). Called by lifecycle.c (start, fork) and, each pass, by the preload's
 * writer through the source lifecycle.c installed (ana_cupti_collect); the program's own
 * cupti* calls are interposed here. Calls library.c, calls.c (enabling the callbacks),
 * callback.c (the subscriber), decode.c, and the core (configuration, clock, warnings,
 * the writer's wake-up and forced flush, the real-symbol lookup).
 *
 * States (cupti_int.h, library.c: the one source of truth the callback reads too): OFF (not started,
 * unavailable, taken, or a forked child) -> ON -> HANDOVER (the program subscribed, or the
 * process exits: our last forced flush) -> GONE (ours is off).
 *
 * Threads: ana_cupti_start runs on the thread of the first CUDA call; CUPTI calls the
 * buffer callbacks on threads of its own; the collector alone flushes and decodes. The
 * buffer callbacks only move buffers between the free list and the completed queue under
 * `pool_lock`, a mutex held for a few instructions and never across a CUPTI call. The
 * collector announces each use of CUPTI in `collector_in`; whoever turns our collection
 * off waits for it to be 0 before disabling anything (a handshake, not a lock). */
#define _GNU_SOURCE
#include "cupti_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *lib;
static _Atomic int collector_in;
static CUpti_SubscriberHandle subscriber;
static int64_t offset_ns; /* added to CUPTI times when it could not use our clock */
static int program_buffers; /* the program registered activity buffers before our start */

/* The INFO "cupti" value; `status_gen` counts changes, the collector writes each one. */
static pthread_mutex_t status_lock = PTHREAD_MUTEX_INITIALIZER;
static char status[512];
static _Atomic unsigned status_gen;
static unsigned status_written; /* collector-owned */

/* The buffer pool: at most ana_cfg.cupti_buffers buffers of cupti_buffer_kb KiB. */
typedef struct { uint8_t *buf; size_t valid; } filled;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **free_bufs;  /* stack of free buffers */
static filled *done_bufs;    /* FIFO of completed buffers */
static unsigned n_free, n_done, done_head, n_made, pool_cap;
static size_t buf_bytes;

static const struct { CUpti_ActivityKind kind; const char *name; } KINDS[] = {
    { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL" },
    { CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY" },
    { CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2" },
    { CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET" },
    { CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2" },
    { CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL" },
};
#define N_KINDS (sizeof(KINDS) / sizeof(KINDS[0]))

static void set_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_status(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&status_lock);
    vsnprintf(status, sizeof(status), fmt, ap);
    pthread_mutex_unlock(&status_lock);
    va_end(ap);
    atomic_fetch_add(&status_gen, 1);
}

/* ---- buffers (CUPTI's threads) ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    int make = 0;
    pthread_mutex_lock(&pool_lock);
    if (!done_bufs)
        ; /* a forked child: no buffers of ours */
    else if (n_free)
        b = free_bufs[--n_free];
    else if (n_made < pool_cap)
        make = ++n_made;
    pthread_mutex_unlock(&pool_lock);
    if (make) {
        void *p = mmap(NULL, buf_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            b = p;
        } else {
            pthread_mutex_lock(&pool_lock);
            n_made--;
            pthread_mutex_unlock(&pool_lock);
        }
    }
    /* None free: CUPTI drops what it cannot store and counts it (GPU_DROPPED). */
    *buffer = b;
    *size = b ? buf_bytes : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    if (!buffer)
        return;
    pthread_mutex_lock(&pool_lock);
    if (!done_bufs)
        ; /* a forked child: the parent's buffer, left alone */
    else if (valid == 0)
        free_bufs[n_free++] = buffer;
    else
        done_bufs[(done_head + n_done++) % pool_cap] = (filled){ buffer, valid };
    int kick = valid != 0 && done_bufs;
    pthread_mutex_unlock(&pool_lock);
    /* A full buffer is worth writing now: the pool is capped, and a pool with no free
     * buffer makes CUPTI drop records. (Buffers are large, so this is rare.) */
    if (kick)
        ana_wake_kick();
}

static int pool_init(void)
{
    pool_cap = (unsigned)ana_cfg.cupti_buffers;
    buf_bytes = (size_t)ana_cfg.cupti_buffer_kb * 1024;
    size_t bytes = pool_cap * (sizeof(uint8_t *) + sizeof(filled));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    done_bufs = p;
    free_bufs = (uint8_t **)(done_bufs + pool_cap);
    return 0;
}

/* ---- loading and start ---- */

static uint64_t CUPTIAPI our_clock(void) { return ana_now_ns(); }

/* Our clock for CUPTI's timestamps, or else the offset between the two clocks. */
static void set_time_base(void)
{
    uint64_t g = 0;
    ana_cupti_fn.get_timestamp(&g); /* warms CUPTI's clock path: a registration that samples
                                     * both clocks then takes no first-call detour between */
    if (ana_cupti_fn.register_timestamp(our_clock) == CUPTI_SUCCESS)
        return;
    uint64_t a = ana_now_ns();
    ana_cupti_fn.get_timestamp(&g);
    uint64_t b = ana_now_ns();
    offset_ns = g ? (int64_t)(a + (b - a) / 2) - (int64_t)g : 0;
}

/* Enables each kind; returns how many; notes those CUPTI refused in `notes`. */
static int enable_kinds(char *notes, size_t cap)
{
    int on = 0;
    size_t n = 0;
    notes[0] = 0;
    for (size_t i = 0; i < N_KINDS; i++) {
        CUptiResult r = ana_cupti_fn.enable(KINDS[i].kind);
        if (r == CUPTI_SUCCESS)
            on++;
        else if (n < cap)
            n += (size_t)snprintf(notes + n, cap - n, "%s%s skipped: %s", n ? ", " : "",
                                  KINDS[i].name, ana_cupti_err_name(r));
    }
    return on;
}

static void say_taken(const char *what)
{
    set_status("taken by another tool: %s", what);
    ana_warn("CUPTI is in use by another tool (%s); recording API calls only", what);
}

static void unavailable(const char *why)
{
    set_status("unavailable: %s", why);
    ana_warn("GPU activity is not recorded (CUPTI unavailable: %s); recording API calls only", why);
}

static void at_exit(void);

void ana_cupti_start(void)
{
    if (!ana_cfg.cupti) {
        set_status("off (ANATOMIST_CUPTI=0)");
        return;
    }
    if (atomic_load(&ana_cupti_state) != ANA_CUPTI_OFF || lib)
        return; /* a forked child: see ana_cupti_atfork_child */
    char why[600];
    if (!(lib = ana_cupti_lib_open(why, sizeof(why))))
        return unavailable(why);
    const char *missing = ana_cupti_lib_resolve(lib);
    if (missing) {
        snprintf(why, sizeof(why), "libcupti.so.13 has no %s", missing);
        return unavailable(why);
    }
    if (program_buffers)
        return say_taken("the program registered its own activity buffers first");
    if (pool_init() < 0)
        return unavailable("no memory for the buffer pool");
    CUptiResult r = ana_cupti_fn.subscribe(&subscriber, ana_cupti_callback, NULL);
    if (r != CUPTI_SUCCESS)
        return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? say_taken(ana_cupti_err_name(r))
                                                                    : unavailable(ana_cupti_err_name(r));
    set_time_base();
    r = ana_cupti_fn.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        ana_cupti_fn.unsubscribe(subscriber);
        return say_taken(ana_cupti_err_name(r));
    }
    char notes[400];
    enable_kinds(notes, sizeof(notes));
    ana_cupti_calls_enable(subscriber);
    atomic_store(&ana_cupti_state, ANA_CUPTI_ON);
    if (notes[0])
        set_status("on (%s)", notes);
    else
        set_status("on");
    /* Registered after libcupti's own exit handlers, so it runs before them. */
    atexit(at_exit);
}

/* ---- collection (collector thread) ---- */

static void write_status(ana_gpu_put put, void *arg)
{
    unsigned gen = atomic_load(&status_gen);
    if (gen == status_written)
        return;
    char v[sizeof(status)];
    pthread_mutex_lock(&status_lock);
    memcpy(v, status, sizeof(v));
    pthread_mutex_unlock(&status_lock);
    ana_record r = ana_info_record("cupti", v, ana_now_ns());
    put(&r, arg);
    status_written = gen;
}

static void note_dropped(uint64_t n, uint64_t reason, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_DROPPED, .time_ns = ana_now_ns() };
    r.u.gpu_dropped = (ana_rec_gpu_dropped){ n, reason };
    put(&r, arg);
}

static int take_done(filled *f)
{
    pthread_mutex_lock(&pool_lock);
    int any = n_done > 0;
    if (any) {
        *f = done_bufs[done_head];
        done_head = (done_head + 1) % pool_cap;
        n_done--;
    }
    pthread_mutex_unlock(&pool_lock);
    return any;
}

static void decode_buffer(const filled *f, ana_gpu_put put, void *arg)
{
    CUpti_Activity *a = NULL;
    while (ana_cupti_fn.next_record(f->buf, f->valid, &a) == CUPTI_SUCCESS)
        ana_cupti_decode(a, offset_ns, put, arg);
    pthread_mutex_lock(&pool_lock);
    free_bufs[n_free++] = f->buf;
    pthread_mutex_unlock(&pool_lock);
}

void ana_cupti_collect(int forced, ana_gpu_put put, void *arg)
{
    write_status(put, arg);
    if (!done_bufs)
        return;
    atomic_fetch_add(&collector_in, 1);
    if (ana_cupti_on()) {
        /* The last flush before ours ends is forced too: stop_collecting asks for it. */
        ana_cupti_fn.flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
        size_t dropped = 0;
        if (ana_cupti_fn.dropped(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
            note_dropped(dropped, ANA_GPU_DROPPED_CUPTI, put, arg);
    }
    filled f;
    while (take_done(&f))
        decode_buffer(&f, put, arg);
    atomic_fetch_sub(&collector_in, 1);
}

/* ---- turning ours off ---- */

static void wait_collector_out(void)
{
    for (int i = 0; i < 5000 && atomic_load(&collector_in); i++) {
        struct timespec d = { 0, 1000000 };
        nanosleep(&d, NULL);
    }
}

/* Ends our collection for whichever of hand_over and at_exit comes first (ON -> HANDOVER
 * -> GONE); returns 0, doing nothing, when it was not ON. While HANDOVER, a forced flush
 * writes what CUPTI holds (ana_collector_flush_now: the pass it waits for, or one already
 * running, takes its force request); then the callback stops recording (GONE), and the
 * collector is out of CUPTI before the caller disables anything. */
static int stop_collecting(void)
{
    int expect = ANA_CUPTI_ON;
    if (!atomic_compare_exchange_strong(&ana_cupti_state, &expect, ANA_CUPTI_HANDOVER))
        return 0;
    ana_collector_flush_now(2000);
    atomic_store(&ana_cupti_state, ANA_CUPTI_GONE);
    wait_collector_out();
    return 1;
}

/* Our last forced flush is written; then our kinds, callbacks and subscription go. */
static void hand_over(const char *fn)
{
    if (!stop_collecting())
        return;
    for (size_t i = 0; i < N_KINDS; i++)
        ana_cupti_fn.disable(KINDS[i].kind);
    ana_cupti_fn.unsubscribe(subscriber);
    set_status("on until the program called %s; handed over to it from then on", fn);
    ana_warn("the program started its own CUPTI session (%s); GPU activity is no longer recorded, "
             "API calls still are", fn);
}

/* At exit, before libcupti's own exit handlers: everything CUPTI holds is written. The
 * collector's last pass then decodes only what is queued. */
static void at_exit(void) { stop_collecting(); }

void ana_cupti_atfork_child(void)
{
    /* CUPTI does not survive fork: the child's CUPTI calls and buffers are the parent's
     * stale state. The child records API calls only. */
    int was = atomic_load(&ana_cupti_state);
    atomic_store(&collector_in, 0);
    pthread_mutex_init(&pool_lock, NULL);
    pthread_mutex_init(&status_lock, NULL);
    n_done = done_head = 0;
    done_bufs = NULL; /* the child's collector touches no buffer */
    status_written = 0; /* the child's trace gets INFO "cupti" too */
    if (was != ANA_CUPTI_OFF) {
        atomic_store(&ana_cupti_state, ANA_CUPTI_GONE);
        set_status("off in a forked child (CUPTI does not survive fork)");
    }
    /* Never on in the parent: the child keeps the parent's verdict (start returns at once
     * when the library was tried), or, if the parent never started, tries on its own. */
}

/* ---- the program's own CUPTI use (interposed) ---- */

/* The program's own CUPTI function: the next definition after the preload, else the loaded
 * libcupti.so.13's (ours, loaded RTLD_LOCAL, is found by its soname). */
static void *real_sym(const char *name) { return ana_dl_real_sym("libcupti.so.13", NULL, name); }

/* Before the program's own call: ours steps aside if it runs, or notes that the program
 * was first. */
static void program_uses_cupti(const char *fn, int buffers)
{
    if (atomic_load(&ana_cupti_state) == ANA_CUPTI_ON)
        hand_over(fn);
    else if (!lib && buffers)
        program_buffers = 1; /* a program's early cuptiSubscribe makes ours fail by itself */
}

ANA_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
    static CUptiResult (*real)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    if (!real && !(*(void **)&real = real_sym("cuptiSubscribe")))
        return CUPTI_ERROR_NOT_INITIALIZED;
    program_uses_cupti("cuptiSubscribe", 0);
    return real(s, cb, ud);
}

ANA_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
                                         CUpti_SubscriberParams *params)
{
    static CUptiResult (*real)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *);
    if (!real && !(*(void **)&real = real_sym("cuptiSubscribe_v2")))
        return CUPTI_ERROR_NOT_INITIALIZED;
    program_uses_cupti("cuptiSubscribe_v2", 0);
    return real(s, cb, ud, params);
}

ANA_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                      CUpti_BuffersCallbackCompleteFunc done)
{
    static CUptiResult (*real)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    if (!real && !(*(void **)&real = real_sym("cuptiActivityRegisterCallbacks")))
        return CUPTI_ERROR_NOT_INITIALIZED;
    program_uses_cupti("cuptiActivityRegisterCallbacks", 1);
    return real(req, done);
}

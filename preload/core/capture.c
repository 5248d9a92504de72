/* capture.c — capture windows: what nsys users ask with --capture-range, --delay and
 * --duration (capture.h; docs/configuration.md, docs/trace-format.md "Capture
 * windows").
 *
 * A window is open while the range is (cudaProfilerStart .. cudaProfilerStop, or the NVTX
 * range named in ANATOMIST_CAPTURE_RANGE, or always without one) and the time is past
 * the delay and within the duration. Outside windows the hooks do not record launches,
 * copies, sets, library calls and NVTX ranges, and the writer drops the GPU activity of
 * calls made outside; allocations, frees, definitions and handles are always recorded, so
 * memory stays right across a window.
 *
 * Which call is inside: CUPTI's callback notes, at each API call's entry, its correlation
 * id in the open window's [lo, hi]; a call's record, and the GPU records with its id, are
 * kept when the id lies in a window's span (calls CUPTI did not see: when a window is
 * open as the record is made). So a kernel launched inside and run after the window's end
 * is kept, one launched before it and run inside is not.
 *
 * Threads: a window opens or closes under `lock` (never held across a call into CUDA);
 * the hooks read `ana_capture_all` (never changes after start-up) and, in capture mode
 * only, the window table; the writer alone writes the windows as INFO records.
 *
 * Called by the hooks (NVTX ranges, cudaProfilerStart/Stop), calls/ (whether a call is
 * kept), cupti/callback.c (correlation ids at entry), the writer (GPU records, INFO) and
 * lifecycle.c (start, exit, fork); calls the clock, the configuration and warnings. */
#define _GNU_SOURCE
#include "preload.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_WINDOWS 256

int ana_capture_all = 1;

enum { RANGE_NONE, RANGE_PROFILER_API, RANGE_NVTX };
static int range_kind;
static char nvtx_name[sizeof(ana_cfg.capture_range)];
static size_t nvtx_len;
static int has_time;
static uint64_t t_lo, t_hi = UINT64_MAX;

typedef struct window {
    uint64_t t0, t1;
    const char *why0, *why1;
    _Atomic uint32_t lo, hi; /* correlation ids of the calls that entered while open */
    _Atomic int closed;
} window;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static window win[MAX_WINDOWS];
static _Atomic int n_win;     /* windows opened */
static _Atomic int range_on;  /* the range is open (always without one) */
static _Atomic int open_;     /* a window is open */
static int said_full;
static int written_starts, written_stops; /* writer-owned */
/* NVTX: the domain and level of the push (on this thread) that opened the range, or the id
 * of its start. */
static __thread uint64_t tls_nvtx_key __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t nvtx_start_id;

static void transition(int on, uint64_t t, const char *why)
{
    pthread_mutex_lock(&lock);
    int n = atomic_load(&n_win);
    if (on != atomic_load(&open_)) {
        if (!on) {
            win[n - 1].t1 = t;
            win[n - 1].why1 = why;
            atomic_store(&win[n - 1].closed, 1);
            atomic_store(&open_, 0);
        } else if (n < MAX_WINDOWS) {
            win[n] = (window){ .t0 = t, .why0 = why };
            atomic_store_explicit(&n_win, n + 1, memory_order_release);
            atomic_store(&open_, 1);
        } else if (!said_full) {
            said_full = 1;
            ana_warn("more than %d capture windows: later ones are not recorded", MAX_WINDOWS);
        }
    }
    pthread_mutex_unlock(&lock);
}

/* Opens or closes the window as the range and the clock say; `why` names a range call
 * that changed the range (NULL: only the clock may have moved). Returns whether open. */
static int settle(uint64_t now, const char *why)
{
    if (!why && !has_time)
        return atomic_load(&open_); /* only range calls move a window without a clock */
    int in_time = !has_time || (now >= t_lo && now < t_hi);
    int on = atomic_load(&range_on) && in_time;
    if (on == atomic_load(&open_))
        return on;
    if (why)
        transition(on, now, why);
    else
        transition(on, on ? t_lo : t_hi, on ? "delay" : "duration");
    return atomic_load(&open_);
}

void ana_capture_init(void)
{
    const char *r = ana_cfg.capture_range;
    if (!strcmp(r, "cudaProfilerApi")) {
        range_kind = RANGE_PROFILER_API;
    } else if (!strncmp(r, "nvtx:", 5)) {
        range_kind = RANGE_NVTX;
        nvtx_len = strnlen(r + 5, sizeof(nvtx_name) - 1);
        memcpy(nvtx_name, r + 5, nvtx_len);
    }
    has_time = ana_cfg.delay_ms > 0 || ana_cfg.duration_ms > 0;
    if (has_time) {
        t_lo = ana_now_ns() + (uint64_t)ana_cfg.delay_ms * 1000000u;
        t_hi = ana_cfg.duration_ms > 0 ? t_lo + (uint64_t)ana_cfg.duration_ms * 1000000u : UINT64_MAX;
    }
    atomic_store(&range_on, range_kind == RANGE_NONE);
    ana_capture_all = range_kind == RANGE_NONE && !has_time;
    if (!ana_capture_all)
        settle(ana_now_ns(), NULL); /* a delay of 0: the window opens now */
}

int ana_capture_open_now(void)
{
    if (ANA_LIKELY(ana_capture_all))
        return 1;
    return settle(has_time ? ana_now_ns() : 0, NULL);
}

void ana_capture_note_corr(uint32_t corr)
{
    if (ANA_LIKELY(ana_capture_all) || !corr || !ana_capture_open_now())
        return;
    window *w = &win[atomic_load_explicit(&n_win, memory_order_acquire) - 1];
    uint32_t lo = 0, hi = atomic_load(&w->hi);
    atomic_compare_exchange_strong(&w->lo, &lo, corr);
    while (corr > hi && !atomic_compare_exchange_weak(&w->hi, &hi, corr))
        ;
}

/* Whether the call with this correlation id entered inside a window. */
static int corr_inside(uint64_t corr)
{
    for (int i = atomic_load_explicit(&n_win, memory_order_acquire) - 1; i >= 0; i--) {
        uint32_t lo = atomic_load(&win[i].lo), hi = atomic_load(&win[i].hi);
        if (lo && corr >= lo && corr <= hi)
            return 1;
        if (lo && corr > hi)
            return 0; /* ids grow: past this window's span, before the next one's */
    }
    return 0;
}

int ana_capture_keep_slow(uint64_t corr) { return corr ? corr_inside(corr) : ana_capture_open_now(); }

int ana_capture_keep_gpu(const ana_record *r)
{
    if (ANA_LIKELY(ana_capture_all))
        return 1;
    switch (r->kind) {
    case ANA_K_GPU_KERNEL: return corr_inside(r->u.gpu_kernel.corr);
    case ANA_K_GPU_MEMCPY: return corr_inside(r->u.gpu_memcpy.corr);
    case ANA_K_GPU_MEMSET: return corr_inside(r->u.gpu_memset.corr);
    default: return 1; /* memory activity: allocations live across windows */
    }
}

/* ---- the range calls ---- */

void ana_capture_profiler(int start)
{
    if (range_kind != RANGE_PROFILER_API)
        return;
    atomic_store(&range_on, start);
    settle(ana_now_ns(), start ? "cudaProfilerStart" : "cudaProfilerStop");
}

static int nvtx_match(const char *s, uint32_t len)
{
    return range_kind == RANGE_NVTX && len == nvtx_len && !memcmp(s, nvtx_name, len);
}

void ana_capture_nvtx_push(const char *s, uint32_t len, uint64_t key)
{
    if (!nvtx_match(s, len) || atomic_load(&range_on))
        return;
    tls_nvtx_key = key;
    atomic_store(&range_on, 1);
    settle(ana_now_ns(), "nvtx push");
}

void ana_capture_nvtx_pop(uint64_t key)
{
    if (range_kind != RANGE_NVTX || !key || tls_nvtx_key != key)
        return;
    tls_nvtx_key = 0;
    atomic_store(&range_on, 0);
    settle(ana_now_ns(), "nvtx pop");
}

void ana_capture_nvtx_start(const char *s, uint32_t len, uint64_t id)
{
    uint64_t none = 0;
    if (!nvtx_match(s, len) || atomic_load(&range_on) ||
        !atomic_compare_exchange_strong(&nvtx_start_id, &none, id))
        return;
    atomic_store(&range_on, 1);
    settle(ana_now_ns(), "nvtx start");
}

void ana_capture_nvtx_end(uint64_t id)
{
    uint64_t want = id;
    if (range_kind != RANGE_NVTX || !id || !atomic_compare_exchange_strong(&nvtx_start_id, &want, 0))
        return;
    atomic_store(&range_on, 0);
    settle(ana_now_ns(), "nvtx end");
}

/* ---- the trace ---- */

static void put_info(const char *key, const char *value, uint64_t t, ana_capture_put put, void *arg)
{
    ana_record r = ana_info_record(key, value, t);
    put(&r, arg);
}

void ana_capture_collect(ana_capture_put put, void *arg)
{
    if (ana_capture_all)
        return;
    if (has_time)
        ana_capture_open_now(); /* a window opens or closes with the clock, calls or not */
    int n = atomic_load_explicit(&n_win, memory_order_acquire);
    for (; written_starts < n; written_starts++)
        put_info("capture.start", win[written_starts].why0, win[written_starts].t0, put, arg);
    for (; written_stops < written_starts && atomic_load(&win[written_stops].closed); written_stops++)
        put_info("capture.stop", win[written_stops].why1, win[written_stops].t1, put, arg);
}

void ana_capture_at_exit(void)
{
    if (ana_capture_all)
        return;
    uint64_t now = ana_now_ns();
    if (has_time && atomic_load(&range_on) && !atomic_load(&open_) && atomic_load(&n_win) == 0 &&
        now >= t_lo)
        transition(1, t_lo, "delay"); /* the delay passed with no call to notice it */
    settle(now, NULL);
    if (atomic_load(&open_))
        transition(0, now, "exit");
    if (atomic_load(&n_win) > 0)
        return;
    if (range_kind == RANGE_PROFILER_API)
        ana_warn("capture range cudaProfilerApi: the program never called cudaProfilerStart; the "
                 "trace holds allocations and definitions only");
    else if (range_kind == RANGE_NVTX)
        ana_warn("capture range nvtx:%s: no NVTX range of that name was pushed or started; the "
                 "trace holds allocations and definitions only", nvtx_name);
    else
        ana_warn("the capture delay (%d ms) did not pass before the program ended; the trace "
                 "holds allocations and definitions only", ana_cfg.delay_ms);
}

void ana_capture_atfork_child(void)
{
    /* The child's trace starts with no window; one open in the parent goes on in it. */
    pthread_mutex_init(&lock, NULL);
    int was_open = atomic_load(&open_);
    atomic_store(&n_win, 0);
    atomic_store(&open_, 0);
    written_starts = written_stops = 0;
    if (was_open)
        transition(1, ana_now_ns(), "fork");
}

/* lifecycle.c — start-up, the session (trace file + collector), fork, exit, and the
 * hook bracket. The one module that owns the preload's global state transitions:
 *
 *   NONE --first recorded call--> STARTING --> OPEN --first call that needs a device-->
 *   DEVICE --> RUNNING --exit / failure--> OFF
 *
 * OPEN: the trace is being written but nothing of ours has touched the CUDA driver (an
 * NVTX range before any CUDA call); CUPTI starts when the program's first call that needs
 * a device (a runtime, driver or library hook) starts, before that call is forwarded.
 * Registration (__cudaRegisterFunction, run before main) starts nothing: on a GPU, a
 * driver initialised before the program forks breaks CUDA in the child, so the preload
 * never initialises it earlier than the program would. A forked child returns to NONE and
 * starts its own trace on its own first call. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "naming.h"
#include "nvtx.h"

enum { S_NONE, S_STARTING, S_OPEN, S_DEVICE, S_RUNNING, S_OFF };

/* The trace is being written (records may be appended by calls that need no device). */
static int trace_open(int s) { return s == S_OPEN || s == S_DEVICE || s == S_RUNNING; }

ana_config ana_cfg;
_Atomic int ana_active;
uintptr_t ana_self_lo, ana_self_hi;

static _Atomic int session = S_OFF; /* until the constructor has run */
static _Atomic int said_disabled;
static _Atomic int warnings;
static int forked_child;
static int collector_up; /* the session was running when the profiler disabled itself */
__thread int ana_tls_busy __attribute__((tls_model("initial-exec")));
__thread uint32_t ana_tls_corr __attribute__((tls_model("initial-exec")));

/* One line "anatomist: ..." on stderr in a single write (no stdio state touched);
 * errno is left as it was. */
static void vsay(const char *fmt, va_list ap)
{
    int e = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "anatomist: ");
    n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
    errno = e;
}

void ana_warn(const char *fmt, ...)
{
    if (atomic_fetch_add(&warnings, 1) >= 8)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static char disabled_why[256] = "the profiler stopped";

void ana_disable(const char *fmt, ...)
{
    int started = trace_open(atomic_load(&session));
    atomic_store(&ana_active, 0);
    atomic_store(&session, S_OFF);
    if (atomic_exchange(&said_disabled, 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    if (started)
        vsnprintf(disabled_why, sizeof(disabled_why), fmt, ap);
    va_end(ap);
    collector_up = started;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static int is_root(void)
{
    if (ana_cfg.root_pid > 0)
        return (long)getpid() == ana_cfg.root_pid;
    return !forked_child;
}

/* Creates the directories of path that are missing (mode 0777 less the umask). */
static int make_dirs(char *path)
{
    for (char *p = path + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = 0;
        int rc = mkdir(path, 0777);
        int e = errno;
        *p = '/';
        if (rc < 0 && e != EEXIST) {
            errno = e;
            return -1;
        }
    }
    return 0;
}

/* When TRACE.live says the trace at path is being written by a process that still runs:
 * this process exec'd (same pid; its new image's trace becomes NAME.1.anat, .2, ...), or
 * another process of the same program writes it (a child started with exec or posix_spawn
 * under plain LD_PRELOAD: this one's becomes NAME-PID.anat, as a forked child's would). */
static void avoid_live_trace(char *path, size_t cap, const char *host)
{
    ana_live_header h;
    if (ana_live_header_of(path, &h) < 0)
        return;
    uint64_t pid = h.pid;
    int elsewhere = ana_live_where(&h) == ANA_LIVE_ELSEWHERE;
    if (pid != (uint64_t)getpid() || elsewhere) {
        /* (a file from another host or pid namespace: its process may run; its pid is
         * no question to ask here) */
        if (elsewhere || kill((pid_t)pid, 0) == 0 || errno == EPERM)
            ana_output_expand(ana_cfg.output, host, (long)getpid(), ana_env_rank(), 0, path, cap);
        return;
    }
    for (int i = 1; i < 1000; i++) {
        char cand[1100], n[16];
        snprintf(cand, sizeof(cand), "%s", path);
        snprintf(n, sizeof(n), ".%d", i);
        if (ana_name_insert(cand, sizeof(cand) < cap ? sizeof(cand) : cap, n) == 0 &&
            access(cand, F_OK) != 0) {
            memcpy(path, cand, strlen(cand) + 1);
            return;
        }
    }
}

static int start(void)
{
    char host[256] = "localhost", path[1100], why[300];
    gethostname(host, sizeof(host) - 1);
    if (ana_output_expand(ana_cfg.output, host, (long)getpid(), ana_env_rank(), is_root(), path,
                          sizeof(path)) < 0) {
        ana_disable("output name from ANATOMIST_OUTPUT is too long; not profiling");
        return -1;
    }
    if (make_dirs(path) < 0) {
        ana_disable("cannot create the directory of the trace %s: %s; not profiling, the program "
                    "goes on", path, strerror(errno));
        return -1;
    }
    avoid_live_trace(path, sizeof(path), host);
    if (ana_collector_start(path, why, sizeof(why)) < 0) {
        ana_disable("cannot write the trace %s: %s; not profiling, the program goes on", path, why);
        return -1;
    }
    return 0;
}

/* 1 when a call (that needs a device, or not) may append records in state s. */
static int ready(int s, int device) { return s == S_RUNNING || (!device && trace_open(s)); }

int ana_session_ensure(int device)
{
    /* Each pass either finds the session ready, makes the next step itself (opening the
     * trace, then starting CUPTI for a device call), or waits for the thread making it. A
     * device call that finds the trace just opened by another thread's host call goes on to
     * start CUPTI itself rather than give up (it then went unrecorded, and its own inner
     * driver call was recorded in its place). At most ~2 s of waiting in all. */
    for (int waited = 0;;) {
        int s = atomic_load_explicit(&session, memory_order_acquire);
        if (ANA_LIKELY(ready(s, device)))
            return 1;
        int expect = S_NONE;
        if (s == S_NONE && atomic_compare_exchange_strong(&session, &expect, S_STARTING)) {
            if (start() < 0)
                return 0; /* ana_disable set OFF */
            atomic_store(&ana_active, 1);
            atomic_store_explicit(&session, S_OPEN, memory_order_release);
            ana_nvtx_session_started();
            continue;
        }
        expect = S_OPEN;
        if (s == S_OPEN && device && atomic_compare_exchange_strong(&session, &expect, S_DEVICE)) {
            ana_cupti_start(); /* before the first device call goes on: its GPU work is seen */
            expect = S_DEVICE; /* (unless the profiler disabled itself meanwhile) */
            atomic_compare_exchange_strong(&session, &expect, S_RUNNING);
            return atomic_load(&session) == S_RUNNING;
        }
        /* S_OFF ends it; S_NONE and S_OPEN lost a race just now and go round again. */
        if (s == S_OFF)
            return 0;
        if (s == S_STARTING || s == S_DEVICE) {
            if (waited++ >= 2000)
                return 0;
            struct timespec d = { 0, 1000000 };
            nanosleep(&d, NULL);
        }
    }
}

/* ana_enter's first call on a thread, or while the session is not running: starting the
 * session or the thread's buffer may set errno, which the program must not see. */
static __attribute__((noinline)) int enter_slow(ana_call *c, int device)
{
    if (atomic_load_explicit(&session, memory_order_relaxed) == S_OFF)
        return 0;
    int e = errno;
    ana_tls_busy = 1;
    if (!ana_session_ensure(device) || !(c->t = ana_thread_self())) {
        ana_tls_busy = 0;
        errno = e;
        return 0;
    }
    errno = e;
    return 1;
}

static inline int enter(ana_call *c, int device)
{
    if (ANA_UNLIKELY(ana_tls_busy))
        return 0;
    /* The usual case touches neither errno nor anything shared but `session`. */
    ana_thread *t = ana_tls_self;
    if (ANA_LIKELY(t != NULL && atomic_load_explicit(&session, memory_order_relaxed) == S_RUNNING)) {
        ana_tls_busy = 1;
        c->t = t;
    } else if (!enter_slow(c, device)) {
        return 0;
    }
    ana_tls_corr = 0;
    c->via = ANA_VIA_HOOK;
    c->caller = 0;
    c->t0 = ana_now_ns();
    return 1;
}

int ana_enter(ana_call *c) { return enter(c, 1); }
int ana_enter_host(ana_call *c) { return enter(c, 0); }

void ana_leave(ana_call *c)
{
    ana_tls_busy = 0;
    errno = c->saved_errno;
}

static void atfork_child(void)
{
    forked_child = 1;
    collector_up = 0;
    ana_tls_busy = 0;
    ana_clock_atfork_child();
    ana_live_atfork_child();
    ana_threads_atfork_child();
    ana_stacks_atfork_child();
    ana_kernels_atfork_child();
    ana_modules_reset();
    ana_cupti_atfork_child();
    ana_lib_atfork_child();
    ana_nvtx_atfork_child();
    ana_capture_atfork_child();
    ana_collector_atfork_child();
    atomic_store(&ana_active, 0);
    atomic_store(&session, (ana_cfg.disable || said_disabled) ? S_OFF : S_NONE);
}

/* errno is the program's: it sees the value it had before the preload loaded (0 at
 * start-up, whatever a dlopen left when NVTX loads the preload as its injection). */
static void init(void)
{
    ana_config_load(&ana_cfg, NULL, ana_warn);
    if (ana_cfg.disable)
        return;
    if (ana_config_absolute_output(&ana_cfg) < 0)
        ana_warn("cannot resolve ANATOMIST_OUTPUT=%s against the working directory (%s); it is "
                 "taken relative to the directory the program is in at its first CUDA call",
                 ana_cfg.output, strerror(errno));
    ana_modules_find_self((const void *)init, &ana_self_lo, &ana_self_hi);
    ana_clock_refresh(); /* whether the TSC can be used: learnt here, not in the first hook */
    ana_capture_init();
    if (ana_cfg.stacks)
        ana_stacks_init(); /* says why when stacks are off */
    ana_nvtx_setup();
    pthread_atfork(NULL, NULL, atfork_child);
    atomic_store(&session, S_NONE);
}

__attribute__((constructor)) static void ana_init(void)
{
    int e = errno;
    init();
    errno = e;
}

static void fini(void)
{
    int s = atomic_load(&session);
    if (!trace_open(s)) {
        /* Stopped by an internal error while running: the trace ends saying why (after a
         * write failure the writer has nothing more to write, and the live file says it). */
        if (collector_up)
            ana_collector_stop(ANA_END_DISABLED, disabled_why);
        return;
    }
    ana_tls_busy = 1; /* CUDA calls made by other destructors after this are not recorded */
    ana_capture_at_exit();
    atomic_store(&ana_active, 0);
    atomic_store(&session, S_OFF);
    ana_collector_stop(ANA_END_EXIT, "exit");
}

__attribute__((destructor)) static void ana_fini(void)
{
    int e = errno;
    fini();
    errno = e;
}

/* session.c — the session (the trace file and its writer, then GPU activity) and the
 * bracket every hook and CUPTI's callback put around a recorded call (session.h).
 * Called by the hooks, calls/, cupti/ (the bracket) and lifecycle.c; what
 * the session starts above the core (NVTX's first records, CUPTI) it reaches only through
 * the steps lifecycle.c installs (ana_session_set_steps), so the core calls neither.
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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "naming.h"

__thread int ana_tls_busy __attribute__((tls_model("initial-exec")));
__thread uint32_t ana_tls_corr __attribute__((tls_model("initial-exec")));
static int forked_child;
/* Installed by lifecycle.c before the session can start; read on the slow path only. */
static void (*step_opened)(void);
static void (*step_device)(void);

void ana_session_set_steps(void (*opened)(void), void (*device)(void))
{
    step_opened = opened;
    step_device = device;
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
static int ready(int s, int device) { return s == ANA_S_RUNNING || (!device && ana_trace_open(s)); }

int ana_session_ensure(int device)
{
    /* Each pass either finds the session ready, makes the next step itself (opening the
     * trace, then starting CUPTI for a device call), or waits for the thread making it. A
     * device call that finds the trace just opened by another thread's host call goes on to
     * start CUPTI itself rather than give up (it then went unrecorded, and its own inner
     * driver call was recorded in its place). At most ~2 s of waiting in all. */
    for (int waited = 0;;) {
        int s = atomic_load_explicit(&ana_session, memory_order_acquire);
        if (ANA_LIKELY(ready(s, device)))
            return 1;
        int expect = ANA_S_NONE;
        if (s == ANA_S_NONE && atomic_compare_exchange_strong(&ana_session, &expect, ANA_S_STARTING)) {
            if (start() < 0)
                return 0; /* ana_disable set OFF */
            atomic_store(&ana_active, 1);
            atomic_store_explicit(&ana_session, ANA_S_OPEN, memory_order_release);
            if (step_opened)
                step_opened();
            continue;
        }
        expect = ANA_S_OPEN;
        if (s == ANA_S_OPEN && device && atomic_compare_exchange_strong(&ana_session, &expect, ANA_S_DEVICE)) {
            if (step_device)
                step_device(); /* before the first device call goes on: its GPU work is seen */
            expect = ANA_S_DEVICE; /* (unless the profiler disabled itself meanwhile) */
            atomic_compare_exchange_strong(&ana_session, &expect, ANA_S_RUNNING);
            return atomic_load(&ana_session) == ANA_S_RUNNING;
        }
        /* OFF ends it; NONE and OPEN lost a race just now and go round again. */
        if (s == ANA_S_OFF)
            return 0;
        if (s == ANA_S_STARTING || s == ANA_S_DEVICE) {
            if (waited++ >= 2000)
                return 0;
            struct timespec d = { 0, 1000000 };
            nanosleep(&d, NULL);
        }
    }
}

/* ana_enter's first call on a thread, or while the session is not running: starting the
 * session or the thread's buffer may set errno, which the program must not see. */
int ana_enter_slow(ana_call *c, int device)
{
    if (atomic_load_explicit(&ana_session, memory_order_relaxed) == ANA_S_OFF)
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

void ana_session_atfork_child(void)
{
    forked_child = 1;
    ana_tls_busy = 0;
}

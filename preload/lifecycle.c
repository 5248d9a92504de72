/* lifecycle.c — the top of libanatomist.so: its constructor and destructor, fork, and
 * what starts what. Nothing in the preload calls this file; it calls the core
 * (configuration, clock, stacks, capture windows, the session and the writer), the hooks
 * (NVTX's set-up) and cupti/ (start, collection, fork), and installs the two calls the
 * core makes upward without naming them: the session's steps (NVTX's first records when
 * the trace opens, CUPTI's start on the first call that needs a device) and the writer's
 * source of GPU records (CUPTI's collection, each pass). The session's states are
 * core/session.c's. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "calls.h"
#include "activity.h"
#include "nvtx.h"
#include "unwind.h"

static void atfork_child(void)
{
    ana_session_atfork_child();
    ana_clock_atfork_child();
    ana_live_atfork_child();
    ana_threads_atfork_child();
    ana_unwind_atfork_child();
    if (ana_stacks_atfork_child())
        ana_py_atfork_child();
    ana_kernels_atfork_child();
    ana_modules_reset();
    ana_cupti_atfork_child();
    ana_lib_atfork_child();
    ana_nvtx_atfork_child();
    ana_capture_atfork_child();
    ana_collector_atfork_child();
    ana_state_atfork_child();
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
        ana_unwind_start(); /* says why when stacks are off */
    ana_nvtx_setup();
    ana_session_set_steps(ana_nvtx_session_started, ana_cupti_start);
    ana_collector_set_gpu(ana_cupti_collect);
    pthread_atfork(NULL, NULL, atfork_child);
    atomic_store(&ana_session, ANA_S_NONE);
}

__attribute__((constructor)) static void ana_init(void)
{
    int e = errno;
    init();
    errno = e;
}

static void fini(void)
{
    int s = atomic_load(&ana_session);
    if (!ana_trace_open(s)) {
        /* Stopped by an internal error while running: the trace ends saying why (after a
         * write failure the writer has nothing more to write, and the live file says it). */
        const char *why = ana_state_stopped_why();
        if (why)
            ana_collector_stop(ANA_END_DISABLED, why);
        return;
    }
    ana_tls_busy = 1; /* CUDA calls made by other destructors after this are not recorded */
    ana_capture_at_exit();
    atomic_store(&ana_active, 0);
    atomic_store(&ana_session, ANA_S_OFF);
    ana_collector_stop(ANA_END_EXIT, "exit");
}

__attribute__((destructor)) static void ana_fini(void)
{
    int e = errno;
    fini();
    errno = e;
}

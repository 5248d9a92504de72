/* session.h — the session, and the bracket every hook and CUPTI's callback use (session.c). */
#ifndef ANA_SESSION_H
#define ANA_SESSION_H

#include <errno.h>
#include <stdint.h>
#include "clock.h"
#include "defs.h"
#include "records.h"
#include "state.h"
#include "tbuf.h"

/* Starts the trace on the first recorded call, and GPU activity on the first call that
 * needs a device (`device`): registration never calls it, so the preload never initialises
 * the driver before the program does. Returns 1 when records may be appended. */
int ana_session_ensure(int device);
/* lifecycle.c, before the session can start: what the session's steps start above the
 * core. opened: on the thread that opened the trace, inside its bracket (NVTX's first
 * records); device: on the thread of the first call that needs a device, before that call
 * is forwarded (CUPTI). Either may be NULL. */
void ana_session_set_steps(void (*opened)(void), void (*device)(void));
/* After fork in the child, first: the child is not the root process; no bracket is open. */
void ana_session_atfork_child(void);

typedef struct ana_call {
    ana_thread *t;
    uint64_t t0;     /* when the call started */
    uint64_t dur;    /* how long the real call took */
    uint64_t stack;  /* interned stack id, 0 = none */
    uint64_t corr;   /* CUPTI correlation id of the call, 0 = unknown (set by the builder) */
    int saved_errno; /* errno as the real call left it */
    int via;         /* ANA_VIA_HOOK (set by ana_enter) or ANA_VIA_CUPTI (the callback's bracket) */
    uintptr_t caller; /* the hook's return address (ANA_CALLER), 0 = unknown: ALLOC's library
                       * outside a hooked library call */
} ana_call;

/* In an exported hook, after ana_enter succeeded: notes who called it. */
#define ANA_CALLER(c) ((c).caller = (uintptr_t)__builtin_return_address(0))

/* The bracket's slow path (session.c): the thread's first call, or the session not
 * running; returns 1 when the call is to be recorded, with c->t set and the bracket held. */
int ana_enter_slow(ana_call *c, int device);

/* 1 while the calling thread is inside a bracket (between ana_enter and ana_leave); hidden,
 * initial-exec, so that the hooks and CUPTI's callback read it inline. */
extern __thread int ana_tls_busy ANA_HIDDEN __attribute__((tls_model("initial-exec")));
/* Correlation: the CUPTI callback of the outermost API call a hook is in stores the call's
 * correlation id here at the call's entry (if it is still 0); ana_enter sets it to 0 and
 * the record builders read it after the real call returned. */
extern __thread uint32_t ana_tls_corr ANA_HIDDEN __attribute__((tls_model("initial-exec")));

/* Inline in every hook: the usual case (a nested call, or a recorded call on a thread
 * whose ring exists while the session runs) costs no call and touches neither errno nor
 * anything shared but `ana_session`. The start time is the call's one clock reading
 * unless call durations are on (calls.c, measure). */
static inline __attribute__((always_inline)) int ana_enter_dev(ana_call *c, int device)
{
    if (ANA_UNLIKELY(ana_tls_busy))
        return 0;
    ana_thread *t = ana_tls_self;
    int s = atomic_load_explicit(&ana_session, memory_order_relaxed);
    if (ANA_LIKELY(t != NULL && s == ANA_S_RUNNING)) {
        ana_tls_busy = 1;
        c->t = t;
    } else if (!ana_enter_slow(c, device)) {
        return 0;
    }
    ana_tls_corr = 0;
    c->via = ANA_VIA_HOOK;
    c->caller = 0;
    c->t0 = ana_now_ns();
    return 1;
}

/* Returns 1 when this call is to be recorded (then ana_leave must follow). For calls into
 * CUDA (they need a device: the first one starts CUPTI). */
static inline int ana_enter(ana_call *c) { return ana_enter_dev(c, 1); }
/* The same for calls that need no device (NVTX): they open the trace, never CUPTI. */
static inline int ana_enter_host(ana_call *c) { return ana_enter_dev(c, 0); }

/* Returns `call` (of type `type`), a call that is not recorded because it is nested in one
 * that is (the runtime's own driver calls, or a signal handler's call that interrupted a
 * hook), with the thread's correlation id kept: CUPTI's callback for the nested call must
 * not leave its id for the interrupted call's record. */
#define ANA_PASS(type, call)                \
    do {                                    \
        uint32_t ana_corr_ = ana_tls_corr;  \
        type ana_r_ = call;                 \
        ana_tls_corr = ana_corr_;           \
        return ana_r_;                      \
    } while (0)
/* Ends the bracket: the errno the real call left is the program's again. */
static inline void ana_leave(ana_call *c)
{
    ana_tls_busy = 0;
    errno = c->saved_errno;
}

/* CUPTI callbacks use it to tell calls a hook records from calls no hook saw. */
static inline int ana_in_hook(void) { return ana_tls_busy; }

#endif

/*
 * correlation.c — correlation ids and the observer (anasim.h).
 *
 * Each thread keeps the API call it is in (depth and the outermost call's id). The
 * outermost call takes the next process-wide id; nested calls (the runtime's own driver
 * calls) share it. The observer (libcupti.so.13 when a client subscribed or enabled
 * activity) is told of every call at entry and exit and receives every activity record.
 */
#include "sim.h"
#include "anasim.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static _Atomic(const anasim_observer *) observer;
static void forget_pid(void);
static void register_forget(void) { pthread_atfork(NULL, NULL, forget_pid); }
static _Atomic uint32_t next_correlation = 1;
static __thread uint32_t tls_depth, tls_correlation;

ANASIM_PRIVATE_API void anasim_set_observer(const anasim_observer *obs)
{
    atomic_store(&observer, obs);
}

ANASIM_PRIVATE_API uint64_t anasim_now_ns(void) { return ana_sim_now_ns(); }

ANASIM_PRIVATE_API void anasim_api_enter(anasim_api *call)
{
    call->nested = tls_depth > 0;
    if (tls_depth++ == 0)
        tls_correlation = atomic_fetch_add(&next_correlation, 1);
    call->correlation = tls_correlation;
    const anasim_observer *o = atomic_load(&observer);
    if (o && o->api)
        o->api(0, call);
}

ANASIM_PRIVATE_API void anasim_api_exit(anasim_api *call)
{
    const anasim_observer *o = atomic_load(&observer);
    if (o && o->api)
        o->api(1, call);
    if (tls_depth > 0 && --tls_depth == 0)
        tls_correlation = 0;
}

uint32_t ana_sim_correlation(void) { return tls_correlation; }

/* getpid() is a system call; activity records carry the pid, so it is cached (and
 * forgotten in a forked child). */
static _Atomic int cached_pid;
static void forget_pid(void) { atomic_store(&cached_pid, 0); }

uint32_t ana_sim_pid(void)
{
    int p = atomic_load_explicit(&cached_pid, memory_order_relaxed);
    if (!p) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, register_forget);
        p = (int)getpid();
        atomic_store(&cached_pid, p);
    }
    return (uint32_t)p;
}

int ana_sim_activity_wanted(CUpti_ActivityKind kind)
{
    const anasim_observer *o = atomic_load(&observer);
    return o && o->activity && (!o->wants || o->wants(kind));
}

void ana_sim_activity(const CUpti_Activity *rec)
{
    const anasim_observer *o = atomic_load(&observer);
    if (o && o->activity)
        o->activity(rec);
}

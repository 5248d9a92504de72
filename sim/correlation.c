/*
 * correlation.c — correlation ids and the observer (anasim.h): API calls, which activity
 * records the observer wants, and handing them over.
 *
 * Each thread keeps the API call it is in (depth and the outermost call's id). The
 * outermost call takes the next process-wide id; nested calls (the runtime's own driver
 * calls) share it. The observer (libcupti.so.13 when a client subscribed or enabled
 * activity) is told of every call at entry and exit and receives every activity record.
 *
 * Which records to build is asked once per API call, before the device lock is taken:
 * one atomic load of the mask the observer published (anasim_set_activity_mask), or, for
 * an observer that has published none, its wants() per kind the device produces. Records
 * are handed over after the lock is released: observer code never runs under it.
 */
#include "sim.h"
#include "anasim.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

/* wanted_kinds while the observer has published no mask: ask its wants(). Bit 0 stands
 * for CUPTI_ACTIVITY_KIND_INVALID, which no observer wants, so it is free to mark this. */
#define ASK_OBSERVER ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_INVALID)

static _Atomic(const anasim_observer *) observer;
static _Atomic uint64_t wanted_kinds;     /* ANASIM_KIND_BIT bits, or ASK_OBSERVER */
static void forget_pid(void);
static void register_forget(void) { pthread_atfork(NULL, NULL, forget_pid); }
static _Atomic uint32_t next_correlation = 1;
static __thread uint32_t tls_depth, tls_correlation;

ANASIM_PRIVATE_API void anasim_set_observer(const anasim_observer *obs)
{
    atomic_store(&observer, obs);
    atomic_store(&wanted_kinds, obs ? ASK_OBSERVER : 0);
}

ANASIM_PRIVATE_API void anasim_set_activity_mask(uint64_t kinds)
{
    atomic_store(&wanted_kinds, kinds & ~ASK_OBSERVER);
}

ANASIM_PRIVATE_API uint64_t anasim_now_ns(void) { return ana_sim_now_ns(); }

ANASIM_PRIVATE_API int anasim_api_enter(anasim_api *call)
{
    call->nested = tls_depth > 0;
    if (!call->nested)
        anasim_note_init(call->name);
    int refused = anasim_fork_refuses(call->name);
    if (tls_depth++ == 0)
        tls_correlation = atomic_fetch_add(&next_correlation, 1);
    call->correlation = tls_correlation;
    const anasim_observer *o = atomic_load(&observer);
    if (o && o->api)
        o->api(0, call);
    return refused;
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

ANASIM_PRIVATE_API uint32_t anasim_pid(void)
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

/* ---- activity records ------------------------------------------------------------- */

/* An observer without a published mask, asked for one kind. */
static int observer_wants(CUpti_ActivityKind kind)
{
    const anasim_observer *o = atomic_load(&observer);
    return o && o->activity && (!o->wants || o->wants(kind));
}

uint64_t ana_sim_wanted_kinds(void)
{
    static const CUpti_ActivityKind produced[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL,
    };
    uint64_t kinds = atomic_load(&wanted_kinds);
    if (!(kinds & ASK_OBSERVER))
        return kinds;
    kinds = 0;
    for (size_t i = 0; i < sizeof(produced) / sizeof(produced[0]); i++)
        if (observer_wants(produced[i]))
            kinds |= ANASIM_KIND_BIT(produced[i]);
    return kinds;
}

void ana_sim_activity(const CUpti_Activity *rec)
{
    const anasim_observer *o = atomic_load(&observer);
    if (o && o->activity)
        o->activity(rec);
}

void ana_sim_emit(const union ana_sim_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].base.kind != CUPTI_ACTIVITY_KIND_INVALID)
            ana_sim_activity(&recs[i].base);
}

/* tbuf.c — per-thread record rings (tbuf.h).
 *
 * Each ring has one producer (its thread) and one consumer (the collector): the producer
 * writes bytes and publishes them by a release store of `head`; the collector copies
 * [tail, head) into a chunk and, once the chunk is written, releases the space by storing
 * `tail`. Ring and counters are a slot of the live file (live.c), so a record is safe from
 * the moment `head` covers it. No locks, no malloc after a thread's first record. Thread
 * structs are never freed: a thread that exits is marked DEAD, drained by the collector,
 * then FREE for the next new thread to claim.
 *
 * Called by calls/, the hooks and the writer (thread list), session.c (a thread's first
 * ring) and lifecycle.c (fork); calls the live file, the writer's wake-up (wake.c) and the
 * configuration. */
#define _GNU_SOURCE
#include "preload.h"

#include "encode_fast.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic(ana_thread *) g_threads;
__thread ana_thread *ana_tls_self __attribute__((tls_model("initial-exec")));
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *p)
{
    ana_thread *t = p;
    if (ana_tls_self == t)
        ana_tls_self = NULL;
    atomic_store_explicit(&t->state, ANA_T_DEAD, memory_order_release);
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

ana_thread *ana_thread_list(void) { return atomic_load_explicit(&g_threads, memory_order_acquire); }

static ana_thread *claim_free(void)
{
    for (ana_thread *t = ana_thread_list(); t; t = t->next) {
        int expect = ANA_T_FREE;
        if (atomic_load_explicit(&t->state, memory_order_relaxed) == ANA_T_FREE &&
            atomic_compare_exchange_strong(&t->state, &expect, ANA_T_CLAIMING))
            return t;
    }
    return NULL;
}

uint64_t ana_ring_size(void)
{
    uint64_t size = 1;
    while (size < (uint64_t)ana_cfg.buffer_kb * 1024)
        size <<= 1;
    return size;
}

static ana_thread *create(void)
{
    uint64_t size = ana_ring_size();
    void *mem = mmap(NULL, sizeof(ana_thread), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    ana_thread *t = mem;
    if (!(t->ls = ana_live_slot_new(size))) {
        munmap(mem, sizeof(ana_thread));
        return NULL;
    }
    t->ring = (uint8_t *)t->ls + ANA_LIVE_SLOT_HEADER;
    t->size = size;
    atomic_store(&t->state, ANA_T_CLAIMING);
    ana_thread *head = atomic_load(&g_threads);
    do
        t->next = head;
    while (!atomic_compare_exchange_weak(&g_threads, &head, t));
    return t;
}

ana_thread *ana_thread_self(void)
{
    ana_thread *t = ana_tls_self;
    if (ANA_LIKELY(t != NULL))
        return t;
    pthread_once(&g_key_once, make_key);
    t = claim_free();
    if (!t && !(t = create()))
        return NULL;
    /* A recycled buffer was drained, written and committed before it became FREE: its
     * tail equals its head and nothing is pending. Its next records start from time 0. */
    ana_live_slot *ls = t->ls;
    t->tid = (uint64_t)syscall(SYS_gettid);
    t->prev_ns = 0;
    t->c_prev_ns = 0;
    t->c_named = 0;
    t->c_drop = t->c_dropb = 0;
    atomic_store(&ls->pend_seq, ANA_LIVE_NONE);
    atomic_store(&ls->base_ns, 0);
    atomic_store(&ls->dropped, 0);
    atomic_store(&ls->dropped_bytes, 0);
    atomic_store(&ls->drop_rep, 0);
    atomic_store(&ls->dropb_rep, 0);
    atomic_store(&ls->tid, t->tid);
    /* The collector ignores CLAIMING buffers, so the resets above cannot race with it. */
    atomic_store_explicit(&t->state, ANA_T_LIVE, memory_order_release);
    ana_tls_self = t;
    pthread_setspecific(g_key, t);
    return t;
}

/* Encodes into tmp and copies into the ring, wrapping; 0 when the record cannot be encoded
 * or does not fit (then counted as dropped). */
static size_t emit_copy(ana_thread *t, const ana_record *rec, uint64_t head, uint64_t tail)
{
    uint8_t tmp[ANA_RECORD_FIXED_MAX + 2048]; /* + a LAUNCH's 2 x 64 pointer words */
    size_t n = ana_record_encode_fast(tmp, sizeof(tmp), rec, t->prev_ns, ana_cfg.time_shift);
    if (ANA_UNLIKELY(n == 0))
        return 0;
    if (ANA_UNLIKELY(t->size - (head - tail) < n)) {
        atomic_fetch_add_explicit(&t->ls->dropped, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->ls->dropped_bytes, n, memory_order_relaxed);
        return 0;
    }
    uint64_t pos = head & (t->size - 1);
    size_t first = n < t->size - pos ? n : (size_t)(t->size - pos);
    memcpy(t->ring + pos, tmp, first);
    memcpy(t->ring, tmp + first, n - first);
    return n;
}

void ana_emit(ana_thread *t, const ana_record *rec)
{
    ana_live_slot *ls = t->ls;
    uint64_t head = atomic_load_explicit(&ls->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&ls->tail, memory_order_acquire);
    uint64_t pos = head & (t->size - 1);
    /* The usual case: room for the record's worst case, contiguous: encode in place (the
     * bytes past head are the producer's until head covers them). */
    size_t max = ana_record_encode_max(rec), n;
    if (ANA_LIKELY(max && t->size - (head - tail) >= max && t->size - pos >= max))
        n = ana_record_encode_room(t->ring + pos, rec, t->prev_ns, ana_cfg.time_shift);
    else
        n = emit_copy(t, rec, head, tail);
    if (ANA_UNLIKELY(n == 0))
        return;
    atomic_store_explicit(&ls->head, head + n, memory_order_release);
    t->prev_ns = rec->time_ns >> ana_cfg.time_shift; /* in ticks (ANATOMIST_TIME_RESOLUTION) */
    /* Half full: drain now rather than at the next flush tick, so bursts do not drop. */
    if (ANA_UNLIKELY(head + n - tail > t->size / 2) &&
        !atomic_load_explicit(&t->kicked, memory_order_relaxed)) {
        atomic_store_explicit(&t->kicked, 1, memory_order_relaxed);
        ana_wake_kick();
    }
}

void ana_threads_atfork_child(void)
{
    /* Records buffered before the fork belong to the parent, which writes them; slots in
     * its live file are not mapped here. Only the forking thread exists in the child, and
     * it starts a new buffer (in the child's own live file) at its next record. */
    atomic_store(&g_threads, NULL);
    ana_tls_self = NULL;
}

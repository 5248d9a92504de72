/* tbuf.h — per-thread rings (tbuf.c).
 * A ring and its counters are a slot (format/live.h): in the live file when there is one,
 * so that what a thread appended outlives the process. head, dropped and dropped_bytes are
 * the thread's; tail (released once the records are in the live file's staging area, or
 * written) and the rest are the collector's. */
#ifndef ANA_TBUF_H
#define ANA_TBUF_H

#include <stdatomic.h>
#include <stdint.h>
#include "defs.h"
#include "live.h"
#include "records.h"

typedef struct ana_thread {
    ana_live_slot *ls;
    uint8_t *ring;
    uint64_t size;         /* power of two */
    uint64_t prev_ns;      /* producer: time of the last appended record */
    _Atomic int state;     /* ANA_T_* */
    _Atomic int kicked;    /* the collector was woken for this ring filling up */
    uint64_t tid;
    /* collector-owned */
    uint64_t c_prev_ns, c_snap, c_drop, c_dropb;
    int c_state, c_named;
    struct ana_thread *next;
} ana_thread;

enum { ANA_T_FREE = 0, ANA_T_LIVE = 1, ANA_T_DEAD = 2, ANA_T_CLAIMING = 3 };

/* Bytes of each thread's ring: ANATOMIST_BUFFER_KB rounded up to a power of two. */
uint64_t ana_ring_size(void);
/* The calling thread's buffer, registering it on first use; NULL if none can be had. */
ana_thread *ana_thread_self(void);
/* The calling thread's buffer once registered, else NULL (what ana_thread_self reads first). */
extern __thread ana_thread *ana_tls_self ANA_HIDDEN __attribute__((tls_model("initial-exec")));
/* Encodes rec (rec->time_ns set by caller) into t's ring; counts a drop when full. */
void ana_emit(ana_thread *t, const ana_record *rec);
/* Head of the registry list (collector walks it; entries are never unlinked). */
ana_thread *ana_thread_list(void);
/* After fork in the child: forget every buffer (the parent writes what they hold; slots in
 * the parent's live file are not mapped in the child). */
void ana_threads_atfork_child(void);

#endif

/* steps_int.h — the state shared by steps.c, steps_seq.c and steps_place.c; private to
 * analyses/steps*.c (no other file includes it: the module's contract is steps.h).
 *
 * steps.c prepares a per-call hint (and key, when needed), pairs the NVTX ranges and finds
 * NVTX steps; steps_seq.c finds steps in the sequence of calls when there are no NVTX
 * steps (the optimizer method, then the period method) and places the phases of a step
 * without phase ranges by kernel names; steps_place.c assigns calls to steps and places
 * phases from ranges. Steps are added through ana_st_add_step; the state is owned by
 * ana_steps_find. */
#ifndef ANA_STEPS_INT_H
#define ANA_STEPS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/steps.h"
#include "model/trace.h"
#include "model/util.h"

enum { ST_NONE = 0, ST_FWD = 1, ST_BWD = 2, ST_OPT = 3 }; /* a call's effective hint */
enum { ST_SPAN = 0 };                                      /* a step of consecutive calls */

/* A closed NVTX range. */
typedef struct ana_st_range {
    uint64_t t0, t1, tid; /* tid: the thread of the push (start) */
    uint32_t name, depth, group;
    uint16_t domain;
    uint8_t kind; /* ANA_RANGE_PUSH or ANA_RANGE_START */
} ana_st_range;

/* A step before sorting: a range (kind PUSH/START; [t0, t1]) or calls [a, b] (ST_SPAN;
 * t0: the time of call a). */
typedef struct ana_st_step {
    uint64_t t0, t1;
    size_t a, b;
    uint8_t kind;
} ana_st_step;

/* A range that names a phase: the calls it holds [lo, hi), its place in the order ranges
 * are painted in (outer first: the innermost decides), the phase. */
typedef struct ana_st_pr {
    size_t lo, hi;
    uint32_t ord;
    uint8_t phase;
} ana_st_pr;

typedef struct ana_st {
    const ana_trace *t;
    size_t n;          /* t->n_calls */
    uint8_t *hint;     /* per call, two bits (ana_st_hint): ST_* */
    uint8_t *find_hint; /* per call, two bits, traces with graph launches and GPU activity:
                         * the hint steps are found with — a graph launch's kernels' hint,
                         * none for a launch captured into a graph (it ran nothing); else
                         * NULL */
    uint32_t *key;     /* per call: what repeats (a launch's kernel; a copy's API and size),
                        * numbered from 0 in order of first appearance; NULL until the
                        * optimizer and period methods need them (NVTX steps do not) */
    size_t n_keys;
    ana_st_pr *pr;     /* the ranges that name a phase, by first call (ana_st_nvtx_phases) */
    size_t n_pr;
    ana_st_range *ranges;
    size_t n_ranges, cap_ranges;
    ana_st_step *steps;
    size_t n_steps, cap_steps;
    char name[64];
    int method;
} ana_st;

/* A call's hint from a two-bit array (st->hint, st->find_hint), and setting one. */
static inline unsigned ana_st_hint(const uint8_t *h, size_t i)
{
    return (unsigned)(h[i >> 2] >> ((i & 3) * 2)) & 3u;
}
static inline void ana_st_set_hint(uint8_t *h, size_t i, unsigned v)
{
    unsigned sh = (unsigned)(i & 3) * 2;
    h[i >> 2] = (uint8_t)((h[i >> 2] & ~(3u << sh)) | (v & 3u) << sh);
}

/* Appends a step (both files find steps). */
static inline void ana_st_add_step(ana_st *st, ana_st_step s)
{
    ANA_GROW(st->steps, st->cap_steps, st->n_steps + 1);
    st->steps[st->n_steps++] = s;
}

/* steps_place.c: the phase a range name says (enum ana_phase), or -1; the calls a range
 * [t0, t1] holds, of every thread: calls [*lo, *hi). */
int ana_st_phase_of(const char *name);
void ana_st_window(const ana_st *st, uint64_t t0, uint64_t t1, size_t *lo, size_t *hi);
/* steps_place.c: the ranges that name a phase (st->pr); the calls to the steps found
 * (sorted by start; out->steps: each step's calls are consecutive); the steps' phases
 * (out->runs), returning the steps that have none. */
void ana_st_nvtx_phases(ana_st *st);
void ana_st_assign(ana_st *st, ana_steps *out);
size_t ana_st_phases(ana_st *st, ana_steps *out);
/* steps_seq.c: each adds the steps it finds and returns 1, or writes what it missed to
 * why and returns 0. */
int ana_st_optimizer(ana_st *st, char *why, size_t cap);
int ana_st_period(ana_st *st, char *why, size_t cap);
/* steps_seq.c: where each ST_SPAN step of st->steps (sorted) ends, by step (calloc'd). */
uint64_t *ana_st_span_ends(const ana_st *st);
/* steps_seq.c: the phases (enum ana_phase, into phase[0..n)) of one step's calls
 * [b, b + n) from kernel-name hints; 0 when it has no backward-hinted launch (nothing
 * written). */
int ana_st_name_phases(const ana_st *st, size_t b, size_t n, uint8_t *phase);

#endif

/* memcat_int.h — shared by memcat.c (evidence, sums) and memcat_rules.c (the rules).
 * Internal to the memory anatomy. */
#ifndef ANA_MEMCAT_INT_H
#define ANA_MEMCAT_INT_H

#include "analyses/memcat.h"

/* The step whose [start, end) holds time: -1 before the first step, -2 between two
 * steps, n_steps after the last (or no steps: -1). */
int32_t ana_mc_step_of(const ana_steps *s, uint64_t time_ns);

/* Phases and roles from the structure of the steps' uses (memcat_struct.c): use_alloc[i]
 * is the allocation (index into m->allocs) t->uses[i] fell in, or -1; phase[] (per call,
 * a copy of s->call_phase) gets structural phases where it is undecided (and over kernel
 * names' in steps with micro-batches: memcat_struct.c); sets
 * m->allocs[*].sflags and m->structure. */
void ana_mc_struct(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m,
                   const long *use_alloc, uint8_t *phase);

/* Decides m->allocs[*].cat and .why (memcat_rules.c). */
void ana_mc_decide(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m);

#endif

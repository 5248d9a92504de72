/* memcat_int.h — shared by memcat.c (evidence), memcat_sums.c (sums), memcat_struct.c and
 * memcat_rules.c (the rules).
 * Internal to the memory anatomy. */
#ifndef ANA_MEMCAT_INT_H
#define ANA_MEMCAT_INT_H

#include "analyses/memcat.h"
#include "model/spill.h"

/* The uses (trace.h, in time order) beside the allocation each fell in (int32_t items of a
 * spill, -1: none; memcat.c ana_mc_map_uses), read together front to back. */
typedef struct ana_mc_uses {
    ana_spill_cur u, a;
    ana_ptr_use *su; /* a span that crossed a block: copied here */
    int32_t *sa;
    size_t cap;
} ana_mc_uses;
void ana_mc_uses_open(ana_mc_uses *r, const ana_trace *t, const ana_spill *ua);
/* The next uses and their allocations (as many as both hold at once): their number, 0 at
 * the end; ana_mc_uses_take consumes them. */
size_t ana_mc_uses_next(ana_mc_uses *r, const ana_ptr_use **u, const int32_t **a);
static inline void ana_mc_uses_take(ana_mc_uses *r, size_t n)
{
    ana_spill_take(&r->u, n);
    ana_spill_take(&r->a, n);
}
/* Skips the uses before start_ns, then gives those before end_ns as two arrays (valid
 * until the next call): their number. Steps come in time order, so a pass over the
 * steps reads the uses once. */
size_t ana_mc_uses_span(ana_mc_uses *r, uint64_t start_ns, uint64_t end_ns, const ana_ptr_use **u,
                        const int32_t **a);
void ana_mc_uses_close(ana_mc_uses *r);

/* The step whose [start, end) holds time: -1 before the first step, -2 between two
 * steps, n_steps after the last (or no steps: -1). */
int32_t ana_mc_step_of(const ana_steps *s, uint64_t time_ns);

/* Phases and roles from the structure of the steps' uses (memcat_struct.c): use_alloc
 * holds the allocation (index into m->allocs) each use fell in, or -1; out->runs (empty)
 * get s's runs with structural phases where they are undecided (and over kernel names' in
 * steps with micro-batches: memcat_struct.c); sets m->allocs[*].sflags and m->structure. */
void ana_mc_struct(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m,
                   const ana_spill *use_alloc, ana_steps *out);

/* Decides m->allocs[*].cat and .why (memcat_rules.c). */
void ana_mc_decide(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m);

/* The sums once every allocation has its category (memcat_sums.c, from ana_memcat_build):
 * the bytes by category at each step's peak; the parameters the GEMM operands in the
 * weights imply (ua: the allocation of each use, as ana_mc_struct's use_alloc); the bytes
 * per parameter and the parameter count. */
void ana_mc_step_peaks(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                       ana_memcat *m);
double ana_mc_gemm_params(const ana_trace *t, const ana_mem_result *mem, const ana_memcat *m,
                          const ana_spill *ua);
void ana_mc_per_param(const ana_mem_result *mem, ana_memcat *m, double p_gemm);

#endif

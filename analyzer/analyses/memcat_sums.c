/* memcat_sums.c — the memory anatomy's sums (memcat.h): the step of a time, the bytes by
 * category live at an event, a time, a failure and at each step's peak, and the bytes per
 * parameter they imply. Part of analyses/: called by memcat.c (the build), the rules
 * (memcat_rules.c), the OOM post-mortem and the views; calls model/ only. */
#define _GNU_SOURCE
#include "analyses/memcat.h"
#include "analyses/memcat_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/sorter.h"
#include "model/util.h"

/* ------------------------------------------------------------------ steps */

/* The step the last search of this thread found: uses come in time order, so the next one
 * mostly lies in it or the step after (a hint only narrows the search; any is safe). */
static _Thread_local struct {
    const ana_steps *s;
    size_t at;
} ana_mc_step_hint;

/* memcat_int.h */
int32_t ana_mc_step_of(const ana_steps *s, uint64_t time_ns)
{
    if (s->n_steps == 0)
        return -1;
    if (time_ns < s->steps[0].start_ns)
        return -1;
    size_t lo = 0, hi = s->n_steps, h = ana_mc_step_hint.at; /* last step with start <= time */
    if (ana_mc_step_hint.s == s && h < hi && s->steps[h].start_ns <= time_ns) {
        if (h + 1 == hi || s->steps[h + 1].start_ns > time_ns)
            hi = h + 1;
        lo = h + 1 < hi ? h + 1 : h;
    }
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->steps[mid].start_ns <= time_ns)
            lo = mid;
        else
            hi = mid;
    }
    ana_mc_step_hint.s = s;
    ana_mc_step_hint.at = lo;
    if (time_ns < s->steps[lo].end_ns)
        return (int32_t)lo;
    return lo + 1 == s->n_steps ? (int32_t)s->n_steps : -2; /* between steps */
}

/* ------------------------------------------------------------------ sums */

const ana_mc_alloc *ana_memcat_of_life(const ana_memcat *m, size_t life)
{
    size_t lo = 0, hi = m->n_allocs; /* allocs are in the order of the lives */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->allocs[mid].life < life)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n_allocs && m->allocs[lo].life == life ? &m->allocs[lo] : NULL;
}

int ana_memcat_live_at(const ana_memcat *m, const ana_mem_result *mem, size_t a, size_t idx)
{
    const ana_mem_life *l = &mem->lives[m->allocs[a].life];
    return l->a_idx <= idx && (l->f_idx == ANA_MEM_LIVE || l->f_idx > idx);
}

uint64_t ana_memcat_at_event(const ana_memcat *m, const ana_mem_result *mem, size_t idx,
                             uint64_t out[ANA_MCAT_COUNT], uint64_t count[ANA_MCAT_COUNT])
{
    uint64_t total = 0;
    memset(out, 0, sizeof(uint64_t) * ANA_MCAT_COUNT);
    if (count)
        memset(count, 0, sizeof(uint64_t) * ANA_MCAT_COUNT);
    for (size_t a = 0; a < m->n_allocs; a++) {
        if (!ana_memcat_live_at(m, mem, a, idx))
            continue;
        uint64_t sz = mem->lives[m->allocs[a].life].size;
        out[m->allocs[a].cat] += sz;
        total += sz;
        if (count)
            count[m->allocs[a].cat]++;
    }
    return total;
}

uint64_t ana_memcat_at_time(const ana_memcat *m, const ana_mem_result *mem, const ana_trace *t,
                            uint64_t time_ns, uint64_t out[ANA_MCAT_COUNT])
{
    ana_mev_reader rd;
    ana_mev_reader_open(&rd, &t->mev);
    size_t lo = (size_t)ana_mev_after(&rd, time_ns); /* events at or before time: [0, lo) */
    ana_mev_reader_close(&rd);
    if (lo == 0) {
        memset(out, 0, sizeof(uint64_t) * ANA_MCAT_COUNT);
        return 0;
    }
    return ana_memcat_at_event(m, mem, lo - 1, out, NULL);
}

uint64_t ana_memcat_at_failure(const ana_memcat *m, const ana_mem_result *mem,
                               const ana_mem_failure *f, uint64_t out[ANA_MCAT_COUNT])
{
    /* The failed ALLOC charged nothing: what was live after it is what was live before. */
    return ana_memcat_at_event(m, mem, f->idx, out, NULL);
}

/* The step-peak walk's heap of allocations (indices into m->allocs) waiting to be
 * released, the earliest release on top. */
typedef struct ana_mc_pending {
    const ana_memcat *m;
    const ana_mem_result *mem;
} ana_mc_pending;

static uint64_t ana_mc_f_idx(const ana_mc_pending *p, size_t a)
{
    return p->mem->lives[p->m->allocs[a].life].f_idx;
}

static int ana_mc_released_first(void *arg, size_t a, size_t b)
{
    return ana_mc_f_idx(arg, a) < ana_mc_f_idx(arg, b);
}

/* Per step: the most bytes live during it — at its start, or after any event inside it.
 * The events in order, with the allocations (in the order they were made, so by a_idx)
 * added at their a_idx and taken away at their f_idx: the walk keeps what is live. */
void ana_mc_step_peaks(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                       ana_memcat *m)
{
    m->step_peak = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    m->step_peak_ns = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    if (!s->n_steps || !t->n_mev)
        return;
    ana_mc_pending p = { m, mem };
    ana_run_heap h = { .less = ana_mc_released_first, .arg = &p };
    size_t cap_h = 0, a = 0;
    uint64_t live = 0;
    size_t k = 0; /* steps whose start has passed: they begin with what was live then */
    ana_spill_iter it;
    const ana_mev *e;
    ana_spill_iter_begin(&it, &t->mev, 0);
    for (size_t i = 0; (e = ana_spill_iter_next(&it)); i++) {
        for (; k < s->n_steps && s->steps[k].start_ns <= e->time_ns; k++) {
            m->step_peak[k] = live;
            m->step_peak_ns[k] = s->steps[k].start_ns;
        }
        for (; a < m->n_allocs && mem->lives[m->allocs[a].life].a_idx == i; a++) {
            const ana_mem_life *l = &mem->lives[m->allocs[a].life];
            live += l->size;
            if (l->f_idx != ANA_MEM_LIVE) {
                ANA_GROW(h.v, cap_h, h.n + 1);
                ana_run_heap_add(&h, a);
            }
        }
        for (; h.n && ana_mc_f_idx(&p, h.v[0]) == i; ana_run_heap_next(&h, 1))
            live -= mem->lives[m->allocs[h.v[0]].life].size;
        int32_t st = ana_mc_step_of(s, e->time_ns);
        if (st >= 0 && (size_t)st < s->n_steps && live > m->step_peak[st]) {
            m->step_peak[st] = live;
            m->step_peak_ns[st] = e->time_ns;
        }
    }
    ana_spill_iter_end(&it);
    for (; k < s->n_steps; k++) {
        m->step_peak[k] = live;
        m->step_peak_ns[k] = s->steps[k].start_ns;
    }
    free(h.v);
}

/* ------------------------------------------------------------------ per parameter */

/* The parameters GEMMs read: over the distinct addresses GEMMs read inside allocations
 * that are weights and live at the peak, the elements of the operand read there (the
 * largest, where one address is read with several shapes). Biases and norms, which no
 * GEMM reads, are not in it. 0 when no GEMM read a weight. */
double ana_mc_gemm_params(const ana_trace *t, const ana_mem_result *mem, const ana_memcat *m,
                          const ana_spill *ua)
{
    ana_u64map seen; /* address -> elements */
    ana_u64map_init(&seen);
    double sum = 0;
    uint64_t v;
    ana_mc_uses r;
    const ana_ptr_use *us;
    const int32_t *as;
    size_t n;
    ana_mc_uses_open(&r, t, ua);
    while ((n = ana_mc_uses_next(&r, &us, &as))) {
        for (size_t i = 0; i < n; i++) {
            const ana_ptr_use *u = &us[i];
            int32_t a = as[i];
            if (a < 0 || ana_trace_use_kind(u) != ANA_USE_GEMM_IN ||
                m->allocs[a].cat != ANA_MCAT_WEIGHTS ||
                !ana_memcat_live_at(m, mem, (size_t)a, mem->peak_idx))
                continue;
            uint64_t el = ana_trace_use_arg(t, u) >> 8, p = ana_trace_use_ptr(t, u);
            if (!ana_u64map_get(&seen, p, &v)) {
                ana_u64map_put(&seen, p, el);
                sum += (double)el;
            } else if (el > v) {
                ana_u64map_put(&seen, p, el);
                sum += (double)(el - v);
            }
        }
        ana_mc_uses_take(&r, n);
    }
    ana_mc_uses_close(&r);
    ana_u64map_free(&seen);
    return sum;
}

/* 1 when a and b are within 10% of a (biases and norms no GEMM reads; rounding). */
static int ana_mc_agree(double a, double b) { return a > 0 && b > 0 && fabs(a - b) <= 0.1 * a; }

/* Bytes per parameter, and what they mean — only where two sources agree on the count
 * (docs/memory-anatomy.md, "Bytes per parameter"): the weights and their element size;
 * the elements of the weight operands GEMMs read; the gradients at 4 or 2 bytes each.
 * The weights' kind needs the GEMM operands or the gradients to agree; the optimizer's and
 * the gradients' kinds need the gradients (they count the trained parameters: with
 * frozen weights they hold fewer). Otherwise the count is not given, and params_why says
 * why. */
void ana_mc_per_param(const ana_mem_result *mem, ana_memcat *m, double p_gemm)
{
    uint64_t w16 = 0, w32 = 0;
    for (size_t a = 0; a < m->n_allocs; a++) {
        const ana_mc_alloc *x = &m->allocs[a];
        if (x->cat != ANA_MCAT_WEIGHTS || !ana_memcat_live_at(m, mem, a, mem->peak_idx))
            continue;
        if (x->elem == 2)
            w16 += mem->lives[x->life].size;
        else
            w32 += mem->lives[x->life].size; /* fp32 unless a use says otherwise */
    }
    if (!w16 && !w32)
        return;
    double p;
    const char *wk;
    if (w16 && w32 && fabs((double)w32 - 2.0 * (double)w16) <= 0.1 * (double)w32) {
        p = (double)w16 / 2.0;
        wk = "16-bit copies + fp32 master (mixed precision)";
    } else if (w16 && w32) {
        p = (double)w16 / 2.0 + ((double)w32 > 2.0 * (double)w16 ? ((double)w32 - 2.0 * (double)w16) / 4.0 : 0);
        wk = "16-bit and fp32";
    } else if (w16) {
        p = (double)w16 / 2.0;
        wk = "16-bit";
    } else {
        p = (double)w32 / 4.0;
        wk = "fp32";
    }
    double g = (double)m->at_peak[ANA_MCAT_GRADIENTS], o = (double)m->at_peak[ANA_MCAT_OPTIMIZER];
    m->params_weights = p;
    m->params_gemm = p_gemm;
    m->params_grads = ana_mc_agree(p, g / 4.0) ? g / 4.0 : ana_mc_agree(p, g / 2.0) ? g / 2.0 : g / 4.0;
    int by_gemm = ana_mc_agree(p, p_gemm), by_grads = ana_mc_agree(p, m->params_grads);
    /* neither gradients nor states anywhere, and little the rules could not place: a run
     * that does not train (inference), or plain SGD with gradients the rules missed */
    int no_training = g == 0 && o == 0 && (double)m->at_peak[ANA_MCAT_UNATTRIBUTED] < 0.05 * p * 4.0;
    if (!by_gemm && !by_grads && !no_training) {
        snprintf(m->params_why, sizeof(m->params_why),
                 "no second source agrees with the weights' %.0f parameters (GEMM weight operands: "
                 "%.0f; gradients: %.0f at 4 B, %.0f at 2 B)", p, p_gemm, g / 4.0, g / 2.0);
        return;
    }
    m->params = p;
    m->weights_kind = wk;
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        m->bpp[c] = (double)m->at_peak[c] / p;
    if (!by_grads && !no_training) {
        snprintf(m->params_why, sizeof(m->params_why),
                 "the gradients (%.0f parameters at 4 B) do not match the weights (%.0f): not every "
                 "weight is trained, or not every gradient is live at the peak; the optimizer's "
                 "and gradients' bytes per parameter are not interpreted", g / 4.0, p);
        return;
    }
    m->params_trained = 1;
    double ob = m->bpp[ANA_MCAT_OPTIMIZER], gb = m->bpp[ANA_MCAT_GRADIENTS];
    m->optimizer_kind = ob == 0 ? "none found (plain SGD, or no training)"
                      : ob < 0.25 ? "under 0.25 B/param (factored states, Adafactor-like)"
                      : fabs(ob - 8) < 0.6 ? "two fp32 states per parameter (AdamW)"
                      : fabs(ob - 4) < 0.4 ? "one fp32 state per parameter (SGD with momentum)"
                      : fabs(ob - 2) < 0.3 ? "two 8-bit states per parameter (8-bit AdamW)"
                      : NULL;
    m->gradients_kind = gb < 0.25 ? "none" : fabs(gb - 4) < 0.4 ? "fp32" : fabs(gb - 2) < 0.3 ? "16-bit" : NULL;
}


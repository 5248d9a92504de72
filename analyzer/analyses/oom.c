/* oom.c — see oom.h; the figures and formulas are documented in docs/oom.md.
 *
 * Build: pick the fatal failure, split what was live at it by category (memcat.h) and by
 * call stack, place it among the steps, then run the fits on those figures.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/oom.h"

#include "format/records.h"
#include "model/u64map.h"
#include "model/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANA_OOM_ERROR 2 /* cudaErrorMemoryAllocation = CUDA_ERROR_OUT_OF_MEMORY */

/* ------------------------------------------------------------------ names */

static const char *const ana_tech_keys[ANA_TECH_COUNT] = {
    "gradient_checkpointing", "micro_batch_accumulation", "optimizer_8bit",
    "optimizer_factored", "sgd_momentum", "mixed_precision", "fp32_training",
    "free_temporaries", "expandable_segments",
};

static const char *const ana_tech_names[ANA_TECH_COUNT] = {
    "gradient checkpointing",
    "a smaller micro-batch with gradient accumulation",
    "8-bit optimizer states",
    "a factored optimizer (Adafactor-like)",
    "SGD with momentum",
    "16-bit weights / mixed precision",
    "fp32 training (no 16-bit weight copies)",
    "freeing temporaries earlier",
    "expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
};

const char *ana_tech_key(int tech)
{
    return tech >= 0 && tech < ANA_TECH_COUNT ? ana_tech_keys[tech] : "?";
}

const char *ana_tech_name(int tech)
{
    return tech >= 0 && tech < ANA_TECH_COUNT ? ana_tech_names[tech] : "?";
}

const char *ana_oom_kind_name(int kind)
{
    switch (kind) {
    case ANA_OOM_EXHAUSTION: return "exhaustion";
    case ANA_OOM_FRAGMENTATION: return "fragmentation";
    default: return "unknown";
    }
}

/* ------------------------------------------------------------------ fits (pure) */

int ana_oom_kind_of(int has_meminfo, uint64_t free_bytes, uint64_t request)
{
    if (!has_meminfo)
        return ANA_OOM_UNKNOWN;
    return free_bytes < request ? ANA_OOM_EXHAUSTION : ANA_OOM_FRAGMENTATION;
}

uint64_t ana_oom_need(int kind, uint64_t request, uint64_t free_bytes)
{
    return kind == ANA_OOM_EXHAUSTION ? request - free_bytes : request;
}

__attribute__((format(printf, 6, 7)))
static void ana_fit_add(ana_oom_fit *out, size_t *n, int tech, int64_t saved, uint64_t need,
                        const char *fmt, ...)
{
    ana_oom_fit *x = &out[(*n)++];
    va_list ap;
    x->tech = tech;
    x->bytes_saved = saved;
    x->covers = saved >= 0 && (uint64_t)saved >= need;
    x->factor = 0;
    va_start(ap, fmt);
    vsnprintf(x->detail, sizeof(x->detail), fmt, ap);
    va_end(ap);
}

/* The smallest f in 2, 4, ..., 64 whose saving x(1 - 1/f) covers need; 64 if none. */
static uint32_t ana_fit_factor(uint64_t x, uint64_t need, uint64_t *saved)
{
    uint32_t f;
    for (f = 2; f <= 64; f *= 2) {
        *saved = x - (x + f - 1) / f; /* floor(x * (1 - 1/f)) */
        if (*saved >= need || f == 64)
            break;
    }
    return f;
}

/* Set-up: the failing request itself, made for a batch before any step ran, at 1/f. */
static void ana_fit_setup_batch(const ana_oom_figures *g, ana_oom_fit *out, size_t *n)
{
    uint64_t saved = 0;
    char a[32];
    uint32_t f = ana_fit_factor(g->request, g->need, &saved);
    ana_fit_add(out, n, ANA_TECH_MICROBATCH, (int64_t)saved, g->need,
                "the failing request %s, made before the first step and the size of no weight "
                "(a buffer sized for the batch, if it is one), x (1 - 1/%u): a micro-batch 1/%u "
                "of this one, %u accumulation steps per optimizer step",
                ana_fmt_bytes(g->request, a, sizeof(a)), f, f, f);
    out[*n - 1].factor = f;
}

/* The smallest f in 2, 4, ..., 64 whose saving (A + T)(1 - 1/f) covers need; 64 if none. */
static void ana_fit_microbatch(const ana_oom_figures *g, ana_oom_fit *out, size_t *n)
{
    uint64_t at = g->live[ANA_MCAT_ACTIVATIONS] + g->live[ANA_MCAT_TEMPORARY];
    uint64_t saved = 0;
    uint32_t f;
    char a[32], b[32];
    if (g->setup_batch)
        return ana_fit_setup_batch(g, out, n);
    if (!at)
        return;
    f = ana_fit_factor(at, g->need, &saved);
    ana_fit_add(out, n, ANA_TECH_MICROBATCH, (int64_t)saved, g->need,
                "(activations %s + temporary %s) x (1 - 1/%u): a micro-batch 1/%u of this "
                "one, %u accumulation steps per optimizer step",
                ana_fmt_bytes(g->live[ANA_MCAT_ACTIVATIONS], a, sizeof(a)), ana_fmt_bytes(g->live[ANA_MCAT_TEMPORARY], b, sizeof(b)),
                f, f, f);
    out[*n - 1].factor = f;
}

static void ana_fit_precision(const ana_oom_figures *g, ana_oom_fit *out, size_t *n)
{
    uint64_t w = g->live[ANA_MCAT_WEIGHTS], act = g->live[ANA_MCAT_ACTIVATIONS];
    int training = g->live[ANA_MCAT_OPTIMIZER] || g->live[ANA_MCAT_GRADIENTS];
    char a[32], b[32];
    if (g->weights_16bit || !w)
        return;
    if (!training) {
        ana_fit_add(out, n, ANA_TECH_MIXED_PRECISION, (int64_t)(w / 2), g->need,
                    "weights %s / 2: the same weights in 16 bits", ana_fmt_bytes(w, a, sizeof(a)));
        return;
    }
    if (g->params <= 0 || !act)
        return; /* no evidence of what 16-bit activations would save */
    int64_t copy = (int64_t)llround(2.0 * g->params);
    ana_fit_add(out, n, ANA_TECH_MIXED_PRECISION, (int64_t)(act / 2) - copy, g->need,
                "activations %s / 2 in 16 bits - 2 B x %.0f params for the 16-bit weight "
                "copies (%s) kept beside the fp32 master",
                ana_fmt_bytes(act, a, sizeof(a)), g->params, ana_fmt_bytes((uint64_t)copy, b, sizeof(b)));
}

static void ana_fit_optimizer(const ana_oom_figures *g, ana_oom_fit *out, size_t *n)
{
    uint64_t o = g->live[ANA_MCAT_OPTIMIZER];
    char a[32];
    if (!o)
        return;
    if (g->params > 0 && (double)o > 2.5 * g->params) {
        int64_t keep = (int64_t)llround(2.0 * g->params);
        ana_fit_add(out, n, ANA_TECH_OPTIM_8BIT, (int64_t)o - keep, g->need,
                    "optimizer states %s (%.1f B/param) - 2 B x %.0f params",
                    ana_fmt_bytes(o, a, sizeof(a)), (double)o / g->params, g->params);
    }
    ana_fit_add(out, n, ANA_TECH_OPTIM_FACTORED, (int64_t)o, g->need,
                "at most the optimizer states (%s): factored second moments keep a row and "
                "a column per matrix", ana_fmt_bytes(o, a, sizeof(a)));
}

static int ana_fit_cmp(const void *a, const void *b)
{
    const ana_oom_fit *x = a, *y = b;
    if (x->bytes_saved != y->bytes_saved)
        return x->bytes_saved > y->bytes_saved ? -1 : 1;
    return x->tech - y->tech;
}

size_t ana_oom_fits(const ana_oom_figures *g, ana_oom_fit out[ANA_OOM_MAX_FITS])
{
    size_t n = 0;
    uint64_t act = g->live[ANA_MCAT_ACTIVATIONS], tmp = g->live[ANA_MCAT_TEMPORARY];
    char a[32];
    if (act && g->act_allocs > 1) {
        double k = (double)g->act_allocs;
        ana_fit_add(out, &n, ANA_TECH_CHECKPOINTING, (int64_t)((double)act * (1.0 - 1.0 / sqrt(k))),
                    g->need, "activations %s x (1 - 1/sqrt(%llu)): keep the inputs of about "
                    "sqrt(k) of the %llu saved tensors, recompute the rest in backward",
                    ana_fmt_bytes(act, a, sizeof(a)), (unsigned long long)g->act_allocs,
                    (unsigned long long)g->act_allocs);
        out[n - 1].factor = (uint32_t)g->act_allocs;
    }
    ana_fit_microbatch(g, out, &n);
    ana_fit_optimizer(g, out, &n);
    ana_fit_precision(g, out, &n);
    if (tmp)
        ana_fit_add(out, &n, ANA_TECH_FREE_TEMPORARIES, (int64_t)tmp, g->need,
                    "the temporary buffers live at the failure (%s)", ana_fmt_bytes(tmp, a, sizeof(a)));
    if (g->kind == ANA_OOM_FRAGMENTATION)
        ana_fit_add(out, &n, ANA_TECH_EXPANDABLE, (int64_t)g->request, g->need,
                    "the request (%s): free memory in pieces becomes one mapped range",
                    ana_fmt_bytes(g->request, a, sizeof(a)));
    ana_sort(out, n, sizeof(*out), ana_fit_cmp);
    return n;
}

/* ------------------------------------------------------------------ live at the failure */

int ana_oom_weights_16bit(const ana_memcat *m, const ana_mem_result *mem, size_t idx)
{
    for (size_t a = 0; a < m->n_allocs; a++)
        if (m->allocs[a].cat == ANA_MCAT_WEIGHTS && m->allocs[a].elem == 2 &&
            ana_memcat_live_at(m, mem, a, idx))
            return 1;
    return 0;
}

typedef struct ana_oom_acc {
    ana_oom_site site;
    uint64_t by_cat[ANA_MCAT_COUNT];
} ana_oom_acc;

static int ana_oom_site_cmp(const void *a, const void *b)
{
    const ana_oom_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Groups by stack the allocations live at event idx. */
static void ana_oom_sites(const ana_memcat *m, const ana_mem_result *mem, size_t idx, ana_oom *o)
{
    ana_u64map at;
    ana_oom_acc *acc = ana_xcalloc(m->n_allocs + 1, sizeof(*acc));
    size_t n = 0;
    uint64_t k;
    ana_u64map_init(&at);
    for (size_t a = 0; a < m->n_allocs; a++) {
        if (!ana_memcat_live_at(m, mem, a, idx))
            continue;
        const ana_mem_life *l = &mem->lives[m->allocs[a].life];
        if (!ana_u64map_get(&at, l->stack, &k)) {
            k = n++;
            acc[k].site.stack = l->stack;
            ana_u64map_put(&at, l->stack, k);
        }
        acc[k].site.bytes += l->size;
        acc[k].site.count++;
        acc[k].by_cat[m->allocs[a].cat] += l->size;
    }
    ana_u64map_free(&at);
    o->sites = ana_xcalloc(n + 1, sizeof(*o->sites));
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int c = 1; c < ANA_MCAT_COUNT; c++)
            if (acc[i].by_cat[c] > acc[i].by_cat[best])
                best = c;
        o->sites[i] = acc[i].site;
        o->sites[i].cat = best;
    }
    o->n_sites = n;
    free(acc);
    ana_sort(o->sites, n, sizeof(*o->sites), ana_oom_site_cmp);
}

/* ------------------------------------------------------------------ steps and phases */

/* Inside step i: the phase of the next call of the step (the allocation was for the work
 * that follows), else of the previous one. */
static int ana_oom_phase_in(const ana_trace *t, const ana_steps *s, size_t i, uint64_t time_ns)
{
    size_t c = ana_trace_call_bound(t, time_ns, 1);
    int ph;
    if (!s->n_runs)
        return ANA_PHASE_UNDECIDED;
    if (c < t->n_calls && ana_steps_at(s, c, NULL, &ph) == (int32_t)i)
        return ph;
    if (c > 0 && ana_steps_at(s, c - 1, NULL, &ph) == (int32_t)i)
        return ph;
    return ANA_PHASE_UNDECIDED;
}

/* After the last step: the phase the latest phase-hinted launch since it ended names. */
static int ana_oom_phase_hinted(const ana_trace *t, uint64_t since_ns, uint64_t time_ns)
{
    for (size_t c = ana_trace_call_bound(t, time_ns, 1); c-- > 0;) {
        ana_api_call call = ana_trace_call(t, c);
        if (call.time_ns < since_ns)
            break;
        int ph = ana_steps_launch_phase(t, &call);
        if (ph != ANA_PHASE_UNDECIDED)
            return ph;
    }
    return ANA_PHASE_UNDECIDED;
}

static void ana_oom_locate(const ana_trace *t, const ana_steps *s, uint64_t time_ns, ana_oom *o)
{
    size_t i = 0;
    o->phase = ANA_PHASE_UNDECIDED;
    if (!s->n_steps) {
        o->where = ANA_OOM_NO_STEPS;
        return;
    }
    if (time_ns < s->steps[0].start_ns) {
        o->where = ANA_OOM_BEFORE_FIRST;
        return;
    }
    while (i + 1 < s->n_steps && s->steps[i + 1].start_ns <= time_ns)
        i++;
    if (time_ns < s->steps[i].end_ns) {
        o->where = ANA_OOM_IN_STEP;
        o->step = (int32_t)i + 1;
        o->steps_before = i;
        o->phase = ana_oom_phase_in(t, s, i, time_ns);
    } else if (i + 1 == s->n_steps) {
        o->where = ANA_OOM_AFTER_LAST;
        o->step = (int32_t)s->n_steps + 1;
        o->steps_before = s->n_steps;
        o->phase = ana_oom_phase_hinted(t, s->steps[i].end_ns, time_ns);
    } else {
        o->where = ANA_OOM_BETWEEN;
        o->step = (int32_t)i + 1;
        o->steps_before = i + 1;
    }
}

void ana_oom_where_text(const ana_oom *o, char *buf, size_t cap)
{
    switch (o->where) {
    case ANA_OOM_BEFORE_FIRST: snprintf(buf, cap, "before the first step"); break;
    case ANA_OOM_IN_STEP: snprintf(buf, cap, "in step %d", (int)o->step); break;
    case ANA_OOM_BETWEEN:
        snprintf(buf, cap, "between step %d and step %d", (int)o->step, (int)o->step + 1);
        break;
    case ANA_OOM_AFTER_LAST:
        snprintf(buf, cap, "in the step after step %d, which did not finish", (int)o->step - 1);
        break;
    default: snprintf(buf, cap, "no training steps were found"); break;
    }
}

/* ------------------------------------------------------------------ build */

/* The last out-of-memory failure of a device allocation; counts the others. */
static const ana_mem_failure *ana_oom_pick(const ana_mem_result *mem, ana_oom *o)
{
    const ana_mem_failure *last = NULL;
    for (size_t i = 0; i < mem->n_failures; i++) {
        const ana_mem_failure *f = &mem->failures[i];
        if (f->ev.cls != ANA_MEM_DEVICE)
            continue;
        if (f->ev.ret == ANA_OOM_ERROR) {
            o->failures++;
            last = f;
        } else {
            o->other_failures++;
        }
    }
    o->failures_cut = mem->failures_total > mem->n_failures;
    return last;
}

/* 1 when an allocation live at event idx that is weights has this size. */
static int ana_oom_weight_sized(const ana_memcat *m, const ana_mem_result *mem, size_t idx, uint64_t size)
{
    for (size_t a = 0; a < m->n_allocs; a++)
        if (m->allocs[a].cat == ANA_MCAT_WEIGHTS && mem->lives[m->allocs[a].life].size == size &&
            ana_memcat_live_at(m, mem, a, idx))
            return 1;
    return 0;
}

void ana_oom_build(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                   const ana_memcat *m, ana_oom *out)
{
    memset(out, 0, sizeof(*out));
    const ana_mem_failure *f = ana_oom_pick(mem, out);
    if (!f)
        return;
    out->present = 1;
    out->f = f;
    out->kind = ana_oom_kind_of(f->has_meminfo, f->free_bytes, f->ev.size);
    out->shortfall = out->kind == ANA_OOM_EXHAUSTION ? f->ev.size - f->free_bytes : 0;
    out->need = ana_oom_need(out->kind, f->ev.size, f->free_bytes);
    out->live_bytes = ana_memcat_at_event(m, mem, f->idx, out->live, out->live_count);
    ana_oom_sites(m, mem, f->idx, out);
    ana_oom_locate(t, s, f->ev.time_ns, out);
    ana_oom_figures g = { .act_allocs = out->live_count[ANA_MCAT_ACTIVATIONS],
                          .params = m->params,
                          .weights_16bit = ana_oom_weights_16bit(m, mem, f->idx),
                          .kind = out->kind, .request = f->ev.size, .need = out->need };
    memcpy(g.live, out->live, sizeof(g.live));
    g.setup_batch = (out->where == ANA_OOM_NO_STEPS || out->where == ANA_OOM_BEFORE_FIRST) &&
                    !ana_oom_weight_sized(m, mem, f->idx, f->ev.size);
    out->n_fits = ana_oom_fits(&g, out->fits);
}

void ana_oom_free(ana_oom *o)
{
    free(o->sites);
    memset(o, 0, sizeof(*o));
}

/* steps_place.c — the calls placed in the steps found (each call's step) and in their
 * phases (from NVTX phase ranges, else kernel-name hints: steps_seq.c), with the state of
 * steps_int.h; and what steps.c asks of a range: the phase its name says, the calls it
 * holds. Part of analyses/: called by steps.c only; calls analyses/ and model/ only.
 * The rules are documented in docs/steps.md. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/steps.h"
#include "analyses/steps_int.h"
#include "model/util.h"

/* ------------------------------------------------------------------ names and windows */

/* PyTorch's autograd: the engine's `autograd::engine::evaluate_function: X`, or a node
 * (`ReluBackward1`, `AddmmBackward`: letters, digits, `_`, `:`, ending in `Backward` and
 * optional digits). */
static int ana_st_autograd(const char *name)
{
    size_t n = strlen(name);
    if (!strncmp(name, "autograd::engine::evaluate_function:", 36))
        return 1;
    while (n && isdigit((unsigned char)name[n - 1]))
        n--;
    if (n <= 8 || memcmp(name + n - 8, "Backward", 8))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != ':')
            return 0;
    return 1;
}

/* The phase a range name says: an autograd name is backward; else by its words
 * (case-insensitive, trailing digits ignored): forward/fwd, backward/bwd,
 * optimizer/optim or zero_grad; -1 for none or more than one. */
int ana_st_phase_of(const char *name)
{
    int found = -1;
    if (ana_st_autograd(name))
        return ANA_PHASE_BACKWARD;
    char w[32], prev[32] = "";
    while (*name) {
        size_t n = 0;
        while (*name && !isalnum((unsigned char)*name))
            name++;
        while (isalnum((unsigned char)*name)) {
            if (n + 1 < sizeof(w))
                w[n++] = (char)tolower((unsigned char)*name);
            name++;
        }
        while (n && isdigit((unsigned char)w[n - 1]))
            n--;
        w[n] = 0;
        if (!n)
            continue;
        int p = !strcmp(w, "forward") || !strcmp(w, "fwd")    ? ANA_PHASE_FORWARD
                : !strcmp(w, "backward") || !strcmp(w, "bwd") ? ANA_PHASE_BACKWARD
                : !strcmp(w, "optimizer") || !strcmp(w, "optim") || !strcmp(w, "zerograd") ||
                        (!strcmp(w, "grad") && !strcmp(prev, "zero"))
                    ? ANA_PHASE_OPTIMIZER
                    : -1;
        if (p >= 0 && found >= 0 && p != found)
            return -1;
        if (p >= 0)
            found = p;
        memcpy(prev, w, n + 1);
    }
    return found;
}

/* The calls a range holds (steps_int.h): two binary searches over the calls. */
void ana_st_window(const ana_st *st, uint64_t t0, uint64_t t1, size_t *lo, size_t *hi)
{
    *lo = ana_trace_call_bound(st->t, t0, 0);
    *hi = ana_trace_call_bound(st->t, t1, 1);
}

/* Phases from ranges named forward/backward/optimizer: outer ranges first, so the
 * innermost one decides (start/end ranges count as outermost). */
static int ana_st_range_depth_cmp(const void *a, const void *b)
{
    const ana_st_range *x = *(const ana_st_range *const *)a, *y = *(const ana_st_range *const *)b;
    long dx = x->kind == ANA_RANGE_START ? -1 : (long)x->depth;
    long dy = y->kind == ANA_RANGE_START ? -1 : (long)y->depth;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int ana_st_pr_cmp(const void *a, const void *b)
{
    const ana_st_pr *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

void ana_st_nvtx_phases(ana_st *st)
{
    const ana_libs *l = &st->t->libs;
    const ana_st_range **v = ana_xcalloc(st->n_ranges + 1, sizeof(*v));
    int8_t *phase_of = ana_xmalloc(l->n_strs + 1);
    size_t n = 0;
    memset(phase_of, -2, l->n_strs + 1);
    for (size_t i = 0; i < st->n_ranges; i++) {
        uint32_t name = st->ranges[i].name;
        if (name < l->n_strs && phase_of[name] == -2)
            phase_of[name] = (int8_t)ana_st_phase_of(ana_libs_str(l, name));
        if (name < l->n_strs && phase_of[name] >= 0)
            v[n++] = &st->ranges[i];
    }
    ana_sort(v, n, sizeof(*v), ana_st_range_depth_cmp);
    st->pr = ana_xcalloc(n + 1, sizeof(*st->pr));
    for (size_t i = 0; i < n; i++) {
        size_t lo, hi;
        ana_st_window(st, v[i]->t0, v[i]->t1, &lo, &hi);
        if (lo < hi) /* painted in this order (ana_st_paint): ord */
            st->pr[st->n_pr++] = (ana_st_pr){ .lo = lo, .hi = hi, .ord = (uint32_t)i,
                                              .phase = (uint8_t)phase_of[v[i]->name] };
    }
    ana_sort(st->pr, st->n_pr, sizeof(*st->pr), ana_st_pr_cmp);
    free(phase_of);
    free(v);
}

/* ------------------------------------------------------------------ calls to steps */

static int ana_st_step_cmp(const void *a, const void *b)
{
    const ana_st_step *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->a < y->a ? -1 : x->a > y->a;
}


/* Each step's calls, into out->steps. A call in the windows of several steps (ranges
 * that overlap) belongs to the earliest: as the windows' first calls never go back (steps
 * come by start, and a window starts at its start), the calls of step i are those of its
 * window past every earlier window's end — consecutive calls. */
void ana_st_assign(ana_st *st, ana_steps *out)
{
    ana_sort(st->steps, st->n_steps, sizeof(*st->steps), ana_st_step_cmp);
    out->steps = ana_xcalloc(st->n_steps + 1, sizeof(*out->steps));
    out->n_steps = st->n_steps;
    uint64_t *span_end = st->method == ANA_STEPS_NVTX ? NULL : ana_st_span_ends(st);
    size_t reach = 0; /* the furthest end of the windows so far */
    for (size_t i = 0; i < st->n_steps; i++) {
        ana_st_step *s = &st->steps[i];
        ana_step *o = &out->steps[i];
        *o = (ana_step){ .start_ns = s->t0, .end_ns = s->kind == ST_SPAN ? span_end[i] : s->t1 };
        size_t lo, hi;
        if (s->kind == ST_SPAN) { /* the calls it may hold: its own, or its range's */
            lo = s->a;
            hi = s->b + 1;
        } else {
            ana_st_window(st, s->t0, s->t1, &lo, &hi);
        }
        lo = lo > reach ? lo : reach;
        hi = hi > lo ? hi : lo;
        o->first_call = lo;
        o->calls = hi - lo;
        reach = hi;
    }
    free(span_end);
}

/* ------------------------------------------------------------------ phases */

/* Phases of one step's calls from the ranges (nv[j]: the phase a range gives its call j,
 * or ANA_PHASE_COUNT): a call in no phase range is undecided, but for a step with backward
 * and no forward ranges, whose calls before the first backward one are forward (PyTorch:
 * everything before autograd starts). */
static void ana_st_range_phases(const uint8_t *nv, size_t n, uint8_t *phase)
{
    size_t fb = n;
    int fwd = 0;
    for (size_t j = 0; j < n; j++) {
        fwd |= nv[j] == ANA_PHASE_FORWARD;
        if (fb == n && nv[j] == ANA_PHASE_BACKWARD)
            fb = j;
    }
    for (size_t j = 0; j < n; j++)
        phase[j] = nv[j] < ANA_PHASE_COUNT ? nv[j]
                   : !fwd && j < fb        ? ANA_PHASE_FORWARD
                                           : ANA_PHASE_UNDECIDED;
}

static int ana_st_pr_ord_cmp(const void *a, const void *b)
{
    const ana_st_pr *x = *(const ana_st_pr *const *)a, *y = *(const ana_st_pr *const *)b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* The phase ranges over the calls [b, e) into nv[0..e - b), outer ranges first (the
 * innermost decides); *next and the active ranges act[0..*n_act) carry over from the
 * step before (steps come in order of their calls). Returns the calls a range placed. */
static size_t ana_st_paint(const ana_st *st, size_t b, size_t e, size_t *next,
                           const ana_st_pr **act, size_t *n_act, uint8_t *nv)
{
    size_t k = 0, placed = 0;
    for (size_t j = 0; j < *n_act; j++) /* those that end before b are done */
        if (act[j]->hi > b)
            act[k++] = act[j];
    for (; *next < st->n_pr && st->pr[*next].lo < e; ++*next)
        if (st->pr[*next].hi > b)
            act[k++] = &st->pr[*next];
    *n_act = k;
    ana_sort(act, k, sizeof(*act), ana_st_pr_ord_cmp);
    memset(nv, ANA_PHASE_COUNT, e - b);
    for (size_t j = 0; j < k; j++) {
        size_t lo = act[j]->lo > b ? act[j]->lo : b, hi = act[j]->hi < e ? act[j]->hi : e;
        memset(nv + (lo - b), act[j]->phase, hi > lo ? hi - lo : 0);
    }
    for (size_t j = 0; j < e - b; j++)
        placed += nv[j] < ANA_PHASE_COUNT;
    return placed;
}

/* Each step's phases, into out->runs (whose first run, every call outside the steps, is
 * there). Returns the steps that have no phases. */
size_t ana_st_phases(ana_st *st, ana_steps *out)
{
    size_t none = 0, most = 0, next = 0, n_act = 0;
    for (size_t s = 0; s < out->n_steps; s++)
        most = out->steps[s].calls > most ? out->steps[s].calls : most;
    uint8_t *ph = ana_xmalloc(most + 1), *nv = st->n_pr ? ana_xmalloc(most + 1) : NULL;
    const ana_st_pr **act = st->n_pr ? ana_xcalloc(st->n_pr + 1, sizeof(*act)) : NULL;
    for (size_t s = 0; s < out->n_steps; s++) {
        size_t b = out->steps[s].first_call, n = out->steps[s].calls;
        memset(ph, ANA_PHASE_UNDECIDED, n);
        if (st->n_pr && ana_st_paint(st, b, b + n, &next, act, &n_act, nv)) {
            ana_st_range_phases(nv, n, ph);
            out->steps[s].phases = ANA_PHASES_NVTX;
        } else if (ana_st_name_phases(st, b, n, ph)) {
            out->steps[s].phases = ANA_PHASES_NAMES;
        } else {
            none++;
        }
        int p = out->steps[s].phases;
        if (p == ANA_PHASES_NVTX || (p == ANA_PHASES_NAMES && out->phases == ANA_PHASES_NONE))
            out->phases = p;
        for (size_t j = 0; j < n; j++)
            ana_steps_put(out, b + j, (int32_t)s, ph[j]);
        if (b + n < st->n)
            ana_steps_put(out, b + n, -1, ANA_PHASE_UNDECIDED);
    }
    free(ph);
    free(nv);
    free(act);
    return none;
}

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
    if (n) { /* no phase ranges: no array, every call's NVTX phase is none */
        st->nv_phase = ana_xmalloc(st->n + 1);
        memset(st->nv_phase, ANA_PHASE_COUNT, st->n + 1);
    }
    for (size_t i = 0; i < n; i++) {
        size_t lo, hi;
        ana_st_window(st, v[i]->t0, v[i]->t1, &lo, &hi);
        for (size_t c = lo; c < hi; c++)
            st->nv_phase[c] = (uint8_t)phase_of[v[i]->name];
    }
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


void ana_st_assign(ana_st *st, ana_steps *out)
{
    ana_sort(st->steps, st->n_steps, sizeof(*st->steps), ana_st_step_cmp);
    out->steps = ana_xcalloc(st->n_steps + 1, sizeof(*out->steps));
    out->n_steps = st->n_steps;
    uint64_t *span_end = st->method == ANA_STEPS_NVTX ? NULL : ana_st_span_ends(st);
    for (size_t i = 0; i < st->n_steps; i++) {
        ana_st_step *s = &st->steps[i];
        ana_step *o = &out->steps[i];
        *o = (ana_step){ .start_ns = s->t0, .end_ns = s->kind == ST_SPAN ? span_end[i] : s->t1 };
        if (s->kind == ST_SPAN) { /* the calls it may hold: its own, or its range's */
            s->lo = s->a;
            s->hi = s->b + 1;
        } else {
            ana_st_window(st, s->t0, s->t1, &s->lo, &s->hi);
        }
        for (size_t c = s->lo; c < s->hi; c++) {
            if (out->call_step[c] < 0) { /* overlapping ranges: the earlier step keeps it */
                out->call_step[c] = (int32_t)i;
                o->calls++;
            }
        }
    }
    free(span_end);
}

/* ------------------------------------------------------------------ phases */

/* Phases of one step's calls L[0..n) from the ranges: a call in no phase range is
 * undecided, but for a step with backward and no forward ranges, whose calls before the
 * first backward one are forward (PyTorch: everything before autograd starts). */
static void ana_st_range_phases(const ana_st *st, const uint32_t *L, size_t n, uint8_t *phase)
{
    size_t fb = n;
    int fwd = 0;
    for (size_t j = 0; j < n; j++) {
        fwd |= st->nv_phase[L[j]] == ANA_PHASE_FORWARD;
        if (fb == n && st->nv_phase[L[j]] == ANA_PHASE_BACKWARD)
            fb = j;
    }
    for (size_t j = 0; j < n; j++)
        phase[L[j]] = st->nv_phase[L[j]] < ANA_PHASE_COUNT ? st->nv_phase[L[j]]
                      : !fwd && j < fb                     ? ANA_PHASE_FORWARD
                                                           : ANA_PHASE_UNDECIDED;
}

/* Each step's calls in order, then its phases. Returns the steps that have no phases.
 * A step's calls lie in its window (ana_st_assign gave them from there): they are gathered
 * from it into room for one step's, so that no array by call is needed — unless windows
 * overlap so much that the gathering would read the calls many times over (start/end
 * ranges may): then a counting sort by step of them all. */
size_t ana_st_phases(ana_st *st, ana_steps *out)
{
    size_t none = 0, total = 0, most = 0, *off = NULL;
    for (size_t s = 0; s < out->n_steps; s++) {
        size_t w = st->steps[s].hi - st->steps[s].lo;
        total += w;
        most = w > most ? w : most;
    }
    int gather = total <= 2 * st->n + 4096;
    uint32_t *L; /* call_step is 32-bit: so are calls */
    if (gather) {
        L = ana_xmalloc((most + 1) * sizeof(uint32_t));
    } else {
        /* the keys (when a method read them) are not read again: their array holds the
         * order */
        L = st->key ? st->key : ana_xmalloc((st->n + 1) * sizeof(uint32_t));
        st->key = NULL;
        off = ana_xcalloc(out->n_steps + 2, sizeof(size_t));
        for (size_t i = 0; i < st->n; i++)
            if (out->call_step[i] >= 0)
                off[out->call_step[i] + 1]++;
        for (size_t s = 0; s < out->n_steps; s++)
            off[s + 1] += off[s];
        size_t *fill = ana_xcalloc(out->n_steps + 1, sizeof(size_t));
        for (size_t i = 0; i < st->n; i++)
            if (out->call_step[i] >= 0) {
                size_t s = (size_t)out->call_step[i];
                L[off[s] + fill[s]++] = (uint32_t)i;
            }
        free(fill);
    }
    for (size_t s = 0; s < out->n_steps; s++) {
        const uint32_t *l = L;
        size_t n = 0, nv = 0;
        if (gather) {
            for (size_t c = st->steps[s].lo; c < st->steps[s].hi; c++)
                if (out->call_step[c] == (int32_t)s)
                    L[n++] = (uint32_t)c;
        } else {
            l = L + off[s];
            n = off[s + 1] - off[s];
        }
        for (size_t j = 0; j < n && st->nv_phase; j++)
            nv += st->nv_phase[l[j]] < ANA_PHASE_COUNT;
        if (nv) {
            ana_st_range_phases(st, l, n, out->call_phase);
            out->steps[s].phases = ANA_PHASES_NVTX;
        } else if (ana_st_name_phases(st, l, n, out->call_phase)) {
            out->steps[s].phases = ANA_PHASES_NAMES;
        } else {
            none++;
        }
        int p = out->steps[s].phases;
        if (p == ANA_PHASES_NVTX || (p == ANA_PHASES_NAMES && out->phases == ANA_PHASES_NONE))
            out->phases = p;
    }
    free(L);
    free(off);
    return none;
}

/* steps.c — see steps.h; the rules are documented in docs/steps.md.
 *
 * Every call gets a hint (forward, backward or optimizer, from classify.h), and a key
 * (what repeats: its kernel, or a copy's API and size) when the NVTX ranges give no steps.
 * Then, in order of evidence:
 *   NVTX      the closed ranges are grouped by (kind, domain, depth, name without its
 *             numbering, and for push/pop the thread); the group named like a step wins
 *             (repeated before single, then the smallest depth), else the outermost
 *             repeated group holding more than half of the calls;
 *   optimizer, period: steps_seq.c.
 * The calls are then placed in the steps and their phases (steps_place.c).
 * A range holds the calls of every thread between its two ends: frameworks launch the
 * backward pass from another thread than the one that pushed the step (PyTorch's
 * autograd engine). Phases: ranges named forward/backward/optimizer (and PyTorch's
 * autograd ranges, backward) place the calls inside them, a step's calls before its
 * backward being forward when no range says forward; a step without such ranges is
 * placed by kernel-name hints (steps_seq.c). All of it O(n log n) in the calls (a range's
 * window is two binary searches over the calls).
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/steps.h"
#include "analyses/nvtx.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/classify.h"
#include "analyses/steps_int.h"
#include "model/util.h"

/* ------------------------------------------------------------------ names */

/* The name without trailing numbering: "ProfilerStep#12" -> "ProfilerStep#",
 * "step 3/100" -> "step". Returns its length in buf. */
static size_t ana_st_stem(const char *s, char *buf, size_t cap)
{
    size_t n = strlen(s);
    while (n && (isdigit((unsigned char)s[n - 1]) || strchr(" _-:./,=\t", s[n - 1])))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return n;
}

/* Lower-cased letters and digits of s. */
static void ana_st_alnum(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        if (isalnum((unsigned char)*s))
            buf[n++] = (char)tolower((unsigned char)*s);
    buf[n] = 0;
}

static int ana_st_step_like(const char *stem)
{
    static const char *const names[] = { "step", "trainstep", "trainingstep", "iteration", "iter",
                                         "trainiter", "trainiteration", "trainingiteration",
                                         "profilerstep", "batch", "trainbatch", "trainingbatch",
                                         "globalstep", NULL };
    char a[64];
    ana_st_alnum(stem, a, sizeof(a));
    for (const char *const *p = names; *p; p++)
        if (!strcmp(a, *p))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ calls */

/* The hint of a call of this kind with this arg_w (a launch's kernel). */
static uint8_t ana_st_hint_of(const ana_trace *t, uint8_t *cache, unsigned kind, uint32_t arg_w)
{
    size_t k;
    if (kind != ANA_K_LAUNCH || !ana_trace_kernel_index(t, ana_trace_wide(t, arg_w), &k))
        return ST_NONE;
    if (!cache[k]) {
        static const uint8_t st_of[ANA_PHASE_COUNT] = {
            [ANA_PHASE_FORWARD] = ST_FWD, [ANA_PHASE_BACKWARD] = ST_BWD,
            [ANA_PHASE_OPTIMIZER] = ST_OPT, [ANA_PHASE_UNDECIDED] = ST_NONE };
        int ph = ana_phase_of_hints(ana_classify(t->kernels[k].name, ANA_CTX_NONE).hints);
        cache[k] = (uint8_t)(1 + st_of[ph]);
    }
    return (uint8_t)(cache[k] - 1);
}

/* A graph launch runs the graph's kernels, which its launch record does not name: its hint
 * is the strongest (optimizer, backward, forward) of the GPU kernels with its correlation
 * id — a step replayed as a CUDA graph ends with the optimizer like any other. corr ->
 * 1 + hint for every correlation id that ran a kernel, filled only for traces with graph
 * launches. */
static void ana_st_graph_hints(const ana_trace *t, uint8_t *cache, ana_u64map *out)
{
    ana_u64map_init(out);
    if (!t->graph_launches)
        return;
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *g; (g = ana_trace_gpu_next(&it));) {
        uint64_t corr = ana_trace_wide(t, g->corr_w), v = 0;
        if (ana_trace_gpu_lane(t, g)->type != ANA_GPU_KERNEL || !corr)
            continue;
        uint8_t h = ana_st_hint_of(t, cache, ANA_K_LAUNCH, g->arg_w);
        if (!ana_u64map_get(out, corr, &v) || 1u + h > v)
            ana_u64map_put(out, corr, 1u + h);
    }
    ana_trace_gpu_end(&it);
}

/* A call's key: the same number for calls of one kind, API and argument (kernel or bytes:
 * arg_w is one value's one code), numbered in order of first appearance. */
static uint32_t ana_st_key(ana_st *st, ana_u64map *keys, unsigned kind, unsigned api,
                           uint32_t arg_w)
{
    uint64_t k = (uint64_t)(kind & 0xff) << 48 | (uint64_t)(api & 0xffff) << 32 | arg_w, id;
    if (!ana_u64map_get(keys, k, &id))
        ana_u64map_put(keys, k, id = st->n_keys++);
    return (uint32_t)id;
}

/* The keys, once a method that reads them needs them (the NVTX one does not). */
static void ana_st_keys(ana_st *st)
{
    if (st->key)
        return;
    ana_u64map keys;
    ana_u64map_init(&keys);
    st->key = ana_xcalloc(st->n + 1, sizeof(uint32_t));
    for (size_t i = 0; i < st->n; i++) {
        ana_api_call c = ana_trace_call(st->t, i);
        const ana_call_site *cs = ana_trace_call_site(st->t, &c);
        unsigned api = cs->kind == ANA_K_LAUNCH ? 0 : cs->api; /* a launch: its kernel alone */
        st->key[i] = ana_st_key(st, &keys, cs->kind, api, c.arg_w);
    }
    ana_u64map_free(&keys);
}

static void ana_st_init(ana_st *st, const ana_trace *t)
{
    memset(st, 0, sizeof(*st));
    st->t = t;
    st->n = t->n_calls;
    st->hint = ana_xcalloc(st->n / 4 + 1, 1);
    uint8_t *cache = ana_xcalloc(t->n_kernels + 1, 1);
    ana_u64map graph;
    ana_st_graph_hints(t, cache, &graph);
    for (size_t i = 0; i < st->n; i++) {
        ana_api_call call = ana_trace_call(t, i);
        const ana_api_call *c = &call;
        const ana_call_site *cs = ana_trace_call_site(t, c);
        uint64_t h;
        unsigned own = ana_st_hint_of(t, cache, cs->kind, c->arg_w);
        ana_st_set_hint(st->hint, i, own);
        if (!t->graph_launches || !t->n_gpu)
            continue;
        if (!st->find_hint)
            st->find_hint = ana_xcalloc(st->n / 4 + 1, 1);
        ana_st_set_hint(st->find_hint, i, own);
        if (cs->kind != ANA_K_LAUNCH)
            continue;
        if (!ana_u64map_get(&graph, ana_trace_wide(t, c->corr_w), &h))
            /* no kernel ran for it: captured into a graph, not run — no step of its own
             * (its hint still places its phase, as the graph's kernels run it) */
            ana_st_set_hint(st->find_hint, i, ST_NONE);
        else if (ana_api_is_graph_launch(cs->api))
            ana_st_set_hint(st->find_hint, i, (unsigned)(h - 1)); /* its kernels' hint */
    }
    ana_u64map_free(&graph);
    free(cache);
}

static void ana_st_free(ana_st *st)
{
    free(st->hint);
    free(st->find_hint);
    free(st->key);
    free(st->pr);
    free(st->ranges);
    free(st->steps);
}

/* ------------------------------------------------------------------ NVTX */

/* Keeps each range nvtx.c's pairing closes. */
static void ana_st_add_range(void *arg, const ana_range_span *r)
{
    ana_st *st = arg;
    ANA_GROW(st->ranges, st->cap_ranges, st->n_ranges + 1);
    st->ranges[st->n_ranges++] = (ana_st_range){ .t0 = r->t0, .t1 = r->t1, .tid = r->tid,
                                                 .name = r->name, .depth = r->depth,
                                                 .domain = r->domain, .kind = r->kind };
}

/* Ranges of one (kind, domain, depth, stem). */
typedef struct ana_st_group {
    uint64_t count, calls;
    uint32_t name, depth; /* name: the first range's */
    int step_like, phase;
} ana_st_group;

static size_t ana_st_groups(ana_st *st, ana_st_group **out)
{
    const ana_libs *l = &st->t->libs;
    ana_st_group *g = NULL;
    size_t n = 0, cap = 0;
    ana_u64map idx;
    uint64_t k;
    char stem[256];
    ana_u64map_init(&idx);
    for (size_t i = 0; i < st->n_ranges; i++) {
        ana_st_range *r = &st->ranges[i];
        size_t len = ana_st_stem(ana_libs_str(l, r->name), stem, sizeof(stem));
        /* push/pop ranges group per thread: the steps come from one thread's ranges
         * (two threads' overlapping steps would share their calls) */
        uint64_t h[4] = { r->kind, r->domain, r->depth, r->kind == ANA_RANGE_PUSH ? r->tid : 0 };
        uint64_t key = ana_fnv1a(stem, len, ana_fnv1a(h, sizeof(h), ANA_FNV1A_SEED));
        if (!ana_u64map_get(&idx, key, &k)) {
            ANA_GROW(g, cap, n + 1);
            g[n] = (ana_st_group){ .name = r->name, .depth = r->depth,
                                   .step_like = ana_st_step_like(stem),
                                   .phase = ana_st_phase_of(ana_libs_str(l, r->name)) };
            ana_u64map_put(&idx, key, k = n++);
        }
        size_t lo, hi;
        ana_st_window(st, r->t0, r->t1, &lo, &hi);
        r->group = (uint32_t)k;
        g[k].count++;
        g[k].calls += hi - lo;
    }
    ana_u64map_free(&idx);
    *out = g;
    return n;
}

/* 1 when step-like group x is a better step than y: repeated before single, then the
 * smaller depth, then the more calls. */
static int ana_st_better(const ana_st_group *x, const ana_st_group *y)
{
    if ((x->count >= 2) != (y->count >= 2))
        return x->count >= 2;
    return x->depth < y->depth || (x->depth == y->depth && x->calls > y->calls);
}

/* The step group, or -1: named like a step (repeated, or a single range holding calls;
 * ana_st_better), else the outermost repeated range that is no phase and holds most of
 * the calls. */
static long ana_st_pick_group(const ana_st *st, const ana_st_group *g, size_t n)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!g[i].step_like || (g[i].count < 2 && !g[i].calls))
            continue;
        if (best < 0 || ana_st_better(&g[i], &g[best]))
            best = (long)i;
    }
    if (best >= 0)
        return best;
    for (size_t i = 0; i < n; i++) {
        if (g[i].count < 2 || g[i].depth || g[i].phase >= 0 || 2 * g[i].calls <= st->n)
            continue;
        if (best < 0 || g[i].calls > g[best].calls)
            best = (long)i;
    }
    return best;
}

static int ana_st_nvtx(ana_st *st, char *why, size_t cap)
{
    ana_st_group *g;
    size_t n = ana_st_groups(st, &g);
    long best = ana_st_pick_group(st, g, n);
    if (best < 0) {
        snprintf(why, cap, st->n_ranges ? "no NVTX range is named like a step or repeats"
                                         : "no NVTX ranges");
        free(g);
        return 0;
    }
    for (size_t i = 0; i < st->n_ranges; i++) {
        const ana_st_range *r = &st->ranges[i];
        if (r->group == (uint32_t)best)
            ana_st_add_step(st, (ana_st_step){ .t0 = r->t0, .t1 = r->t1, .kind = r->kind });
    }
    ana_st_stem(ana_libs_str(&st->t->libs, g[best].name), st->name, sizeof(st->name));
    free(g);
    return 1;
}

static uint64_t ana_st_median(const ana_steps *s)
{
    uint64_t *d = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    for (size_t i = 0; i < s->n_steps; i++)
        d[i] = s->steps[i].end_ns - s->steps[i].start_ns;
    uint64_t m = ana_median_u64(d, s->n_steps);
    free(d);
    return m;
}

/* ------------------------------------------------------------------ API */

static int ana_st_find(ana_st *st, char *why, size_t cap)
{
    char nv[48], opt[64], per[68]; /* each fits its longest message; together, why */
    if (ana_st_nvtx(st, nv, sizeof(nv)))
        return st->method = ANA_STEPS_NVTX;
    ana_st_keys(st);
    if (ana_st_optimizer(st, opt, sizeof(opt)))
        return st->method = ANA_STEPS_OPTIMIZER;
    if (ana_st_period(st, per, sizeof(per)))
        return st->method = ANA_STEPS_PERIOD;
    snprintf(why, cap, "no steps: %s; %s; %s", nv, opt, per);
    return 0;
}

void ana_steps_find(const ana_trace *t, ana_steps *out)
{
    memset(out, 0, sizeof(*out));
    if (t->n_calls) /* until steps are placed, every call is outside them */
        ana_steps_put(out, 0, -1, ANA_PHASE_UNDECIDED);
    if (!t->n_calls) {
        snprintf(out->why, sizeof(out->why), "no steps: no kernel launches or copies");
        return;
    }
    ana_st st;
    ana_st_init(&st, t);
    ana_nvtx_pair(t, ana_st_add_range, &st, NULL); /* unmatched ones are no ranges */
    /* steps are found with find_hint where it exists (graph launches); phases with the
     * calls' own hints */
    uint8_t *own = st.hint;
    if (st.find_hint)
        st.hint = st.find_hint;
    int found = ana_st_find(&st, out->why, sizeof(out->why));
    st.hint = own;
    if (found) {
        out->method = st.method;
        memcpy(out->name, st.name, sizeof(out->name));
        ana_st_assign(&st, out);
        ana_st_nvtx_phases(&st);
        size_t none = ana_st_phases(&st, out);
        out->median_ns = ana_st_median(out);
        if (none)
            snprintf(out->why, sizeof(out->why),
                     "phases undecided in %zu of %zu steps: no NVTX phase range and no "
                     "backward-hinted kernel", none, out->n_steps);
    }
    ana_st_free(&st);
}

void ana_steps_free(ana_steps *s)
{
    free(s->steps);
    free(s->runs);
    memset(s, 0, sizeof(*s));
}

const char *ana_steps_method_name(int m)
{
    static const char *const n[] = { "none", "nvtx", "optimizer", "period" };
    return m >= 0 && m < 4 ? n[m] : "none";
}

int ana_phase_of_hints(uint8_t h)
{
    return (h & ANA_HINT_OPTIMIZER)  ? ANA_PHASE_OPTIMIZER
         : (h & ANA_HINT_BACKWARD) ? ANA_PHASE_BACKWARD
         : (h & ANA_HINT_FORWARD)  ? ANA_PHASE_FORWARD
                                   : ANA_PHASE_UNDECIDED;
}

int ana_steps_launch_phase(const ana_trace *t, const ana_api_call *c)
{
    if (ana_trace_call_site(t, c)->kind != ANA_K_LAUNCH)
        return ANA_PHASE_UNDECIDED;
    const ana_trace_kernel *k = ana_trace_kernel_by_id(t, ana_trace_wide(t, c->arg_w));
    return ana_phase_of_hints(k && k->name ? ana_classify(k->name, ANA_CTX_NONE).hints : 0);
}

const char *ana_phase_name(int p)
{
    static const char *const n[] = { "forward", "backward", "optimizer", "undecided" };
    return p >= 0 && p < ANA_PHASE_COUNT ? n[p] : "undecided";
}

const char *ana_phases_method_name(int m)
{
    static const char *const n[] = { "none", "nvtx", "kernel names" };
    return m >= 0 && m < 3 ? n[m] : "none";
}

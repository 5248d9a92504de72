/* memcat_rules.c — the rules that give each device allocation its category (memcat.h),
 * in the order docs/memory-anatomy.md lists them. Each rule names itself (`why`), so a
 * report can say why a byte is where it is.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#define _GNU_SOURCE
#include "analyses/memcat.h"
#include "analyses/memcat_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "model/util.h"

enum ana_mc_why {
    W_NONE = 0, W_LIBRARY, W_DRIVER, W_WORKSPACE, W_REGION, W_SEGMENT, W_SETUP, W_AFTER,
    W_AFTER_LEAK, W_BETWEEN, W_ACT_STEP, W_GRAD_STEP, W_TEMP_STEP, W_TEMP_INFER,
    W_WEIGHTS_FWD_OPT, W_GRADS_BWD_OPT, W_MASTER, W_OPT_ONLY, W_WEIGHTS_FROZEN, W_ACT_ARENA,
    W_INPUT, W_TEMP_INFER_BUF, W_TEMP_BWD, W_UNDECIDED, W_OPT_UNDECIDED, W_LIFE_OPT, W_LIFE_GRAD,
    W_LIFE_WEIGHTS, W_UNTOUCHED, W_NO_STEPS, W_TAIL_FWD, W_TAIL_OTHER, W_TAIL_REPEAT,
    W_PRE_TRACE, W_KEPT_NO_PHASES, W_BWD_ONLY_KEPT, W_S_WEIGHT, W_S_GRADIENT, W_S_READ_ONLY,
    W_SETUP_LOADED, W_SETUP_SIZED, W_COUNT
};

static const char *const ana_mc_why_text[W_COUNT] = {
    [W_NONE] = "not decided",
    [W_LIBRARY] = "made inside a library call (cuBLAS, cuBLASLt, NCCL, cuDNN)",
    [W_DRIVER] = "made by the CUDA driver alone (no call of the program)",
    [W_WORKSPACE] = "handed to a library as its workspace",
    [W_REGION] = "named by an NVTX memory region",
    [W_SEGMENT] = "a caching-allocator segment (PyTorch): holds tensors of every kind; "
                  "profile with --torch-per-tensor to see them",
    [W_SETUP] = "made and released before the first step (set-up)",
    [W_AFTER] = "made and released after the last step",
    [W_AFTER_LEAK] = "made after the last step and never released",
    [W_BETWEEN] = "made and released between steps",
    [W_ACT_STEP] = "made in forward, released in backward of the same step",
    [W_GRAD_STEP] = "made in backward, read by the optimizer, released within the step",
    [W_TEMP_STEP] = "made and released within a step, not held from forward into backward",
    [W_TEMP_INFER] = "made and released within a step of a run without backward",
    [W_WEIGHTS_FWD_OPT] = "read in forward and updated by the optimizer",
    [W_GRADS_BWD_OPT] = "used in backward and by the optimizer, never in forward",
    [W_MASTER] = "loaded or read (by a GEMM or a copy) before the first step, then used "
                 "only by the optimizer (a master copy)",
    [W_OPT_ONLY] = "used only by the optimizer, neither loaded nor read before the first step",
    [W_WEIGHTS_FROZEN] = "loaded before the first step, read in steps, never updated",
    [W_ACT_ARENA] = "kept across steps, used in forward and in backward (reused every step)",
    [W_INPUT] = "a step's input: copied from the host in every step, used in forward",
    [W_TEMP_INFER_BUF] = "kept across steps of a run without backward, used in forward",
    [W_TEMP_BWD] = "kept across steps, used only in backward (backward's scratch)",
    [W_UNDECIDED] = "used only where the phase is undecided",
    [W_OPT_UNDECIDED] = "used by the optimizer and where the phase is undecided (forward-side "
                        "weights or a gradient the kernel names cannot place)",
    [W_LIFE_OPT] = "made in an optimizer phase and kept (lifetime only: no pointer evidence)",
    [W_LIFE_GRAD] = "made in backward and kept past its step (lifetime only)",
    [W_LIFE_WEIGHTS] = "loaded before the first step and kept (lifetime only)",
    [W_UNTOUCHED] = "kept across steps, but no call in a step used it",
    [W_NO_STEPS] = "no steps were found: lifetimes and phases say nothing",
    [W_TAIL_FWD] = "made in the forward of the step that failed",
    [W_TAIL_OTHER] = "made in the step that failed, not for its forward kernels",
    [W_TAIL_REPEAT] = "made in the step that failed where the step before made the same "
                      "allocation (same call stack, same place in the sequence): its category",
    [W_KEPT_NO_PHASES] = "kept across steps in a run whose phases could not be decided, where "
                         "buffers the size of the weights suggest training: what used it, the "
                         "evidence cannot tell",
    [W_BWD_ONLY_KEPT] = "kept from before the first step to the end, used only in backward, and "
                        "no optimizer use of any buffer was seen: a gradient the optimizer reads "
                        "unseen, or backward's scratch",
    [W_S_WEIGHT] = "kept across steps, read by GEMMs in most steps and never written by one, "
                   "touched by the update after the step's last GEMM",
    [W_S_GRADIENT] = "written by GEMMs in backward and read by the update after the step's "
                     "last GEMM",
    [W_S_READ_ONLY] = "read by GEMMs and never written by one (so not a gradient), used by the "
                      "optimizer",
    [W_SETUP_LOADED] = "copied from the host and kept, in a run where no step ran (its set-up): "
                       "weights (or an input staged early)",
    [W_SETUP_SIZED] = "the size of a weight copied from the host, but not copied itself, in a run "
                      "where no step ran: a gradient or an optimizer state, the set-up cannot "
                      "tell which",
    [W_PRE_TRACE] = "allocated before the trace began (imported trace): what it holds is unknown",
};

const char *ana_memcat_why(int why)
{
    return why >= 0 && why < W_COUNT ? ana_mc_why_text[why] : "?";
}

/* ------------------------------------------------------------------ names */

static int has(const char *s, const char *k) { return strcasestr(s, k) != NULL; }

int ana_mcat_of_name(const char *name)
{
    if (!name || !*name)
        return -1;
    /* A gradient of activations flows through backward only: backward's scratch. */
    if (has(name, "grad") && (has(name, "activ") || has(name, "act_") || has(name, "_act")))
        return ANA_MCAT_TEMPORARY;
    if (has(name, "grad"))
        return ANA_MCAT_GRADIENTS;
    if (has(name, "optim") || has(name, "adam") || has(name, "moment") || has(name, "exp_avg") ||
        has(name, "momentum"))
        return ANA_MCAT_OPTIMIZER;
    if (has(name, "workspace") || has(name, "nccl") || has(name, "cublas") || has(name, "cudnn"))
        return ANA_MCAT_FUNCTIONALITY;
    if (has(name, "temp") || has(name, "tmp") || has(name, "scratch"))
        return ANA_MCAT_TEMPORARY;
    if (has(name, "activ") || has(name, "acts") || has(name, "saved") || has(name, "input"))
        return ANA_MCAT_ACTIVATIONS;
    if (has(name, "weight") || has(name, "param") || has(name, "embed") || has(name, "master"))
        return ANA_MCAT_WEIGHTS;
    return -1;
}

/* ------------------------------------------------------------------ per-step facts */

typedef struct ana_mc_ctx {
    const ana_trace *t;
    const ana_steps *s;
    const ana_mem_result *mem;
    uint64_t *last_fwd, *first_bwd; /* per step: last forward / first backward call, 0 none */
    int backward;                  /* some call of the run is in backward */
    int phases;                    /* some step's phases were decided (NVTX or kernel names):
                                    * without, "no backward" says nothing about training */
    int opt_uses;                  /* some allocation was used in an optimizer phase */
    int state_sized;               /* most weights loaded before the first step have a buffer
                                    * of their size that was not loaded (a gradient or a state:
                                    * training, however its phases read) */
    size_t fail_idx;               /* event index of the last failed allocation, SIZE_MAX none */
    uint64_t *loaded;              /* runs without steps: sizes of the kept allocations copied
                                    * from the host, sorted */
    size_t n_loaded;
    int32_t n;                     /* steps */
} ana_mc_ctx;

static void ana_mc_ctx_init(ana_mc_ctx *c, const ana_trace *t, const ana_steps *s,
                            const ana_mem_result *mem)
{
    memset(c, 0, sizeof(*c));
    c->t = t, c->s = s, c->mem = mem, c->n = (int32_t)s->n_steps;
    c->phases = s->phases != ANA_PHASES_NONE;
    c->last_fwd = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    c->first_bwd = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    size_t hint = 0;
    for (size_t i = 0; i < t->n_calls && s->n_runs; i++) {
        int ph;
        int32_t st = ana_steps_at(s, i, &hint, &ph);
        if (st < 0 || st >= c->n)
            continue;
        uint64_t tm = ana_trace_call(t, i).time_ns;
        if (ph == ANA_PHASE_FORWARD)
            c->last_fwd[st] = tm;
        else if (ph == ANA_PHASE_BACKWARD) {
            c->backward = 1;
            if (!c->first_bwd[st])
                c->first_bwd[st] = tm;
        }
    }
    c->fail_idx = mem->n_failures ? mem->failures[mem->n_failures - 1].idx : SIZE_MAX;
}

static void ana_mc_ctx_free(ana_mc_ctx *c)
{
    free(c->loaded);
    free(c->last_fwd);
    free(c->first_bwd);
}

/* The phase of the work an allocation made after the last step was made for: that of
 * the first hinted launch after it (as inside steps); undecided when none followed —
 * in a step that died, the work it was made for never ran. */
static uint8_t ana_mc_tail_phase(const ana_mc_ctx *c, uint64_t time_ns)
{
    for (size_t i = ana_trace_call_bound(c->t, time_ns, 0); i < c->t->n_calls; i++) {
        ana_api_call call = ana_trace_call(c->t, i);
        int ph = ana_steps_launch_phase(c->t, &call);
        if (ph != ANA_PHASE_UNDECIDED)
            return (uint8_t)ph;
    }
    return ANA_PHASE_UNDECIDED;
}

static int ana_mc_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1 when a kept allocation copied from the host has this size (runs without steps). */
static int ana_mc_size_loaded(const ana_mc_ctx *c, uint64_t size)
{
    return c->n_loaded && bsearch(&size, c->loaded, c->n_loaded, sizeof(uint64_t), ana_mc_u64_cmp);
}

/* ------------------------------------------------------------------ the rules */

#define P(ph) (1u << (ph))
#define RULE(c, w) do { a->cat = (c); a->why = (w); return; } while (0)

/* Made and released inside one step. */
static void ana_mc_in_step(const ana_mc_ctx *c, ana_mc_alloc *a, const ana_mem_life *l)
{
    if (a->sflags & ANA_MCS_GRADIENT)
        RULE(ANA_MCAT_GRADIENTS, W_S_GRADIENT);
    if (!c->backward)
        RULE(ANA_MCAT_TEMPORARY, W_TEMP_INFER);
    int32_t st = a->step_alloc;
    if (c->last_fwd[st] && c->first_bwd[st] && l->t_alloc <= c->last_fwd[st] &&
        l->t_free >= c->first_bwd[st] && a->phase_alloc != ANA_PHASE_BACKWARD)
        RULE(ANA_MCAT_ACTIVATIONS, W_ACT_STEP); /* (made in backward: a micro-batch's scratch) */
    if (a->phase_alloc == ANA_PHASE_BACKWARD && (a->use_phases & P(ANA_PHASE_OPTIMIZER)))
        RULE(ANA_MCAT_GRADIENTS, W_GRAD_STEP);
    RULE(ANA_MCAT_TEMPORARY, W_TEMP_STEP);
}

/* Kept across steps (or from before the first step): what used it, and where. */
static void ana_mc_across(const ana_mc_ctx *c, ana_mc_alloc *a, const ana_mem_life *l)
{
    uint8_t u = a->use_phases;
    int fwd = u & P(ANA_PHASE_FORWARD), bwd = u & P(ANA_PHASE_BACKWARD),
        opt = u & P(ANA_PHASE_OPTIMIZER);
    int read_only = (a->sflags & (ANA_MCS_GEMM_IN | ANA_MCS_GEMM_OUT)) == ANA_MCS_GEMM_IN;
    if (a->sflags & ANA_MCS_WEIGHT)
        RULE(ANA_MCAT_WEIGHTS, W_S_WEIGHT);
    if (a->sflags & ANA_MCS_GRADIENT)
        RULE(ANA_MCAT_GRADIENTS, W_S_GRADIENT);
    if (opt) {
        if (fwd)
            RULE(ANA_MCAT_WEIGHTS, W_WEIGHTS_FWD_OPT);
        if (read_only && !(a->flags & ANA_MCF_STEP_INPUT))
            RULE(ANA_MCAT_WEIGHTS, W_S_READ_ONLY);
        if (bwd)
            RULE(ANA_MCAT_GRADIENTS, W_GRADS_BWD_OPT);
        if (a->flags & (ANA_MCF_LOADED | ANA_MCF_READ_EARLY))
            RULE(ANA_MCAT_WEIGHTS, W_MASTER);
        if (u & P(ANA_PHASE_UNDECIDED))
            RULE(ANA_MCAT_UNATTRIBUTED, W_OPT_UNDECIDED);
        RULE(ANA_MCAT_OPTIMIZER, W_OPT_ONLY);
    }
    if (fwd || bwd) {
        if ((a->flags & ANA_MCF_LOADED) && !(a->flags & ANA_MCF_STEP_INPUT))
            RULE(ANA_MCAT_WEIGHTS, W_WEIGHTS_FROZEN);
        if (!c->backward && !c->phases && c->state_sized)
            RULE(ANA_MCAT_UNATTRIBUTED, W_KEPT_NO_PHASES);
        if (!c->backward)
            RULE(ANA_MCAT_TEMPORARY, W_TEMP_INFER_BUF);
        if (fwd && (a->flags & ANA_MCF_STEP_INPUT))
            RULE(ANA_MCAT_ACTIVATIONS, W_INPUT);
        if (fwd)
            RULE(ANA_MCAT_ACTIVATIONS, W_ACT_ARENA);
        /* Kept from before the first step to the end: backward's scratch only where the
         * optimizer's uses were seen (its gradients would show them); else it may as well
         * be a gradient the optimizer reads unseen (a pointer table, a fused kernel). */
        if (!c->opt_uses && a->step_alloc == -1 && (l->t_free == UINT64_MAX || a->step_free == c->n))
            RULE(ANA_MCAT_UNATTRIBUTED, W_BWD_ONLY_KEPT);
        RULE(ANA_MCAT_TEMPORARY, W_TEMP_BWD);
    }
    if (u)
        RULE(ANA_MCAT_UNATTRIBUTED, W_UNDECIDED);
    if (a->flags & ANA_MCF_STEP_INPUT)
        RULE(ANA_MCAT_ACTIVATIONS, W_INPUT);
    /* No use inside a step: only its lifetime speaks, and only without pointer evidence
     * (with it, an allocation no step touched is not a gradient or a state). */
    if (a->flags & ANA_MCF_LOADED)
        RULE(ANA_MCAT_WEIGHTS, W_LIFE_WEIGHTS);
    if (a->step_alloc >= 0 && a->step_alloc < c->n && a->phase_alloc == ANA_PHASE_OPTIMIZER)
        RULE(ANA_MCAT_OPTIMIZER, W_LIFE_OPT);
    if (a->step_alloc >= 0 && a->step_alloc < c->n && a->phase_alloc == ANA_PHASE_BACKWARD)
        RULE(ANA_MCAT_GRADIENTS, W_LIFE_GRAD);
    RULE(ANA_MCAT_UNATTRIBUTED, W_UNTOUCHED);
}

/* Made after the last step. */
static void ana_mc_after(const ana_mc_ctx *c, ana_mc_alloc *a, const ana_mem_life *l)
{
    int live_at_fail = c->fail_idx != SIZE_MAX && l->a_idx < c->fail_idx &&
                       (l->f_idx == ANA_MEM_LIVE || l->f_idx > c->fail_idx);
    if (live_at_fail) {
        if (ana_mc_tail_phase(c, l->t_alloc) == ANA_PHASE_FORWARD)
            RULE(ANA_MCAT_ACTIVATIONS, W_TAIL_FWD);
        RULE(ANA_MCAT_TEMPORARY, W_TAIL_OTHER);
    }
    if (l->t_free == UINT64_MAX)
        RULE(ANA_MCAT_UNATTRIBUTED, W_AFTER_LEAK);
    RULE(ANA_MCAT_TEMPORARY, W_AFTER);
}

uint32_t ana_memcat_region(const ana_trace *t, const ana_mem_life *l)
{
    uint32_t best = 0;
    for (size_t i = 0; i < t->libs.n_regions && l->ptr; i++) {
        const ana_mem_region *g = &t->libs.regions[i];
        if (l->ptr >= g->address && l->ptr - g->address < g->size && g->name)
            best = g->name; /* the latest naming wins */
    }
    return best;
}

static void ana_mc_decide_one(const ana_mc_ctx *c, ana_mc_alloc *a)
{
    const ana_mem_life *l = &c->mem->lives[a->life];
    uint32_t region = ana_memcat_region(c->t, l);
    int named = region ? ana_mcat_of_name(ana_libs_str(&c->t->libs, region)) : -1;
    if (l->lib)
        RULE(ANA_MCAT_FUNCTIONALITY, W_LIBRARY);
    if (l->driver)
        RULE(ANA_MCAT_FUNCTIONALITY, W_DRIVER);
    if (a->flags & ANA_MCF_WORKSPACE)
        RULE(ANA_MCAT_FUNCTIONALITY, W_WORKSPACE);
    if (named >= 0)
        RULE((uint8_t)named, W_REGION);
    if (a->flags & ANA_MCF_SEGMENT)
        RULE(ANA_MCAT_UNATTRIBUTED, W_SEGMENT);
    if (ana_kineto_pre_trace(l->api, l->ptr))
        RULE(ANA_MCAT_UNATTRIBUTED, W_PRE_TRACE);
    if (c->n == 0) {
        /* No step ran (a set-up that failed, or a run without steps): copies from the host
         * speak, and sizes. */
        if ((a->flags & ANA_MCF_LOADED) && l->t_free == UINT64_MAX)
            RULE(ANA_MCAT_WEIGHTS, W_SETUP_LOADED);
        if (!(a->flags & ANA_MCF_LOADED) && l->t_free == UINT64_MAX &&
            ana_mc_size_loaded(c, l->size))
            RULE(ANA_MCAT_UNATTRIBUTED, W_SETUP_SIZED);
        RULE(ANA_MCAT_UNATTRIBUTED, W_NO_STEPS);
    }
    int32_t sa = a->step_alloc, sf = a->step_free;
    int freed = l->t_free != UINT64_MAX;
    if (sa == -1 && freed && sf == -1)
        RULE(ANA_MCAT_TEMPORARY, W_SETUP);
    if (sa == c->n)
        return ana_mc_after(c, a, l);
    if (sa == -2 && freed && sf == -2)
        RULE(ANA_MCAT_TEMPORARY, W_BETWEEN);
    if (sa >= 0 && freed && sf == sa)
        return ana_mc_in_step(c, a, l);
    ana_mc_across(c, a, l);
}

/* Steps repeat: the k-th allocation made after the last complete step (in the step that
 * failed, live at the failure or released before it) is the k-th of the same sequence in
 * the step before, and takes its category —
 * what the step before did with it (released it before backward, say) is evidence the
 * dying step never got to give. The sequence before starts at the latest earlier
 * allocation with the first one's call stack (no earlier than the start of the step
 * before the last); it is followed while the stacks agree. Library allocations are
 * skipped on both sides. Allocations are in the order they were made. */
static void ana_mc_repeat_last_step(const ana_mc_ctx *c, ana_memcat *m)
{
    if (c->n == 0 || c->fail_idx == SIZE_MAX)
        return;
    uint64_t last_end = c->s->steps[c->n - 1].end_ns;
    uint64_t floor_ns = c->s->steps[c->n >= 2 ? c->n - 2 : 0].start_ns;
    size_t first = 0;
    while (first < m->n_allocs && (c->mem->lives[m->allocs[first].life].t_alloc < last_end ||
                                   m->allocs[first].why == W_LIBRARY))
        first++;
    if (first == m->n_allocs)
        return;
    uint64_t stack0 = c->mem->lives[m->allocs[first].life].stack;
    size_t p = first;
    while (p-- > 0 && c->mem->lives[m->allocs[p].life].t_alloc >= floor_ns)
        if (c->mem->lives[m->allocs[p].life].stack == stack0)
            break;
    if (p == SIZE_MAX || c->mem->lives[m->allocs[p].life].t_alloc < floor_ns || !stack0)
        return;
    for (size_t i = first; i < m->n_allocs && p < first; i++, p++) {
        while (i < m->n_allocs && m->allocs[i].why == W_LIBRARY)
            i++;
        while (p < first && m->allocs[p].why == W_LIBRARY)
            p++;
        if (i == m->n_allocs || p == first)
            return;
        ana_mc_alloc *a = &m->allocs[i];
        const ana_mc_alloc *q = &m->allocs[p];
        if (c->mem->lives[q->life].stack != c->mem->lives[a->life].stack)
            return; /* the sequences part */
        if (a->why == W_TAIL_FWD || a->why == W_TAIL_OTHER || a->why == W_AFTER) {
            a->cat = q->cat;
            a->why = W_TAIL_REPEAT;
        }
    }
}

/* Training's signature without names: at least two weights loaded before the first step,
 * and at least half of them matched, size for size, by a buffer made before the first step
 * that was not loaded (each used once: a gradient or an optimizer state). */
static int ana_mc_state_sized(const ana_mc_ctx *c, const ana_memcat *m)
{
    uint64_t *w = ana_xcalloc(m->n_allocs + 1, sizeof(uint64_t)), *o = ana_xcalloc(m->n_allocs + 1, sizeof(uint64_t));
    size_t nw = 0, no = 0, matched = 0;
    for (size_t i = 0; i < m->n_allocs; i++) {
        const ana_mc_alloc *a = &m->allocs[i];
        const ana_mem_life *l = &c->mem->lives[a->life];
        if (a->step_alloc != -1 || l->lib || l->driver)
            continue;
        if (a->flags & ANA_MCF_LOADED)
            w[nw++] = l->size;
        else
            o[no++] = l->size;
    }
    ana_sort(w, nw, sizeof(*w), ana_mc_u64_cmp);
    ana_sort(o, no, sizeof(*o), ana_mc_u64_cmp);
    for (size_t i = 0, j = 0; i < nw && j < no;) {
        if (w[i] == o[j])
            matched++, i++, j++;
        else if (w[i] < o[j])
            i++;
        else
            j++;
    }
    free(w);
    free(o);
    return nw >= 2 && 2 * matched >= nw;
}

void ana_mc_decide(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m)
{
    ana_mc_ctx c;
    ana_mc_ctx_init(&c, t, s, mem);
    c.phases |= m->structure;
    for (size_t i = 0; i < m->n_allocs; i++)
        c.opt_uses |= (m->allocs[i].use_phases & P(ANA_PHASE_OPTIMIZER)) != 0;
    if (!c.phases && !c.backward) /* the only runs whose rules read it */
        c.state_sized = ana_mc_state_sized(&c, m);
    if (c.n == 0) {
        c.loaded = ana_xcalloc(m->n_allocs + 1, sizeof(uint64_t));
        for (size_t i = 0; i < m->n_allocs; i++) {
            const ana_mem_life *l = &mem->lives[m->allocs[i].life];
            if ((m->allocs[i].flags & ANA_MCF_LOADED) && l->t_free == UINT64_MAX && !l->lib && !l->driver)
                c.loaded[c.n_loaded++] = l->size;
        }
        ana_sort(c.loaded, c.n_loaded, sizeof(uint64_t), ana_mc_u64_cmp);
    }
    for (size_t i = 0; i < m->n_allocs; i++) {
        ana_mc_alloc *a = &m->allocs[i];
        ana_mc_decide_one(&c, a);
    }
    ana_mc_repeat_last_step(&c, m);
    ana_mc_ctx_free(&c);
}

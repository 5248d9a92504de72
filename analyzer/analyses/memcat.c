/* memcat.c — see memcat.h; the rules are documented in docs/memory-anatomy.md.
 *
 * Three passes: (1) each device life of the replay becomes an allocation with its step
 * and phase at birth and death; (2) every pointer use is placed in the allocation live at
 * its address and time (a sweep in time order over the live set sorted by address) and
 * marks the phases it was used in; (3) the rules decide a
 * category per allocation (memcat_rules.c), then the bytes at the peak and per step are
 * summed and the bytes per parameter inferred.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#define _GNU_SOURCE
#include "analyses/memcat.h"
#include "analyses/memcat_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/util.h"

_Static_assert(sizeof(ana_mc_alloc) == 24, "one per allocation of the run");

/* ------------------------------------------------------------------ phases */

/* The phase of a moment inside step `step`: that of the next call (`next`: an allocation
 * is made for the work that follows) or the previous one (a release follows its last use),
 * if that call belongs to the same step; else undecided. */
static uint8_t ana_mc_phase_at(const ana_trace *t, const ana_steps *s, int32_t step, uint64_t time_ns,
                               int next, size_t *run)
{
    if (step < 0 || (size_t)step >= s->n_steps || !s->n_runs)
        return ANA_PHASE_UNDECIDED;
    size_t i = ana_trace_call_bound(t, time_ns, 0);
    if (!next || i == t->n_calls) {
        if (i == 0)
            return ANA_PHASE_UNDECIDED;
        i--;
    }
    int ph;
    return ana_steps_at(s, i, run, &ph) == step ? (uint8_t)ph : ANA_PHASE_UNDECIDED;
}

/* ------------------------------------------------------------------ address index */

/* The allocations live at the sweep's current time, sorted by address: a use is looked up
 * by binary search (interior pointers included). Device allocations that are live at
 * the same time do not overlap, so the entry at or below the address is the only
 * candidate; a few more are looked at for the odd overlap (a mapping over a released
 * handle's range). Insertions and removals move the tail: O(live) each. */
typedef struct ana_mc_live {
    uint64_t ptr, end;
    size_t a; /* index into allocs */
} ana_mc_live;

typedef struct ana_mc_sweep {
    ana_mc_live *v;
    size_t n, cap;
    size_t *frees;   /* allocation indices with an address, by release time */
    size_t n_frees, next_alloc, next_free;
} ana_mc_sweep;

static _Thread_local const ana_mem_life *ana_mc_sort_lives;
static _Thread_local const ana_mc_alloc *ana_mc_sort_allocs;

static int ana_mc_free_cmp(const void *a, const void *b)
{
    const ana_mem_life *x = &ana_mc_sort_lives[ana_mc_sort_allocs[*(const size_t *)a].life];
    const ana_mem_life *y = &ana_mc_sort_lives[ana_mc_sort_allocs[*(const size_t *)b].life];
    if (x->t_free != y->t_free)
        return x->t_free < y->t_free ? -1 : 1;
    return x->f_idx < y->f_idx ? -1 : x->f_idx > y->f_idx;
}

/* First live entry with ptr > p. */
static size_t ana_mc_upper(const ana_mc_sweep *w, uint64_t p)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->v[mid].ptr <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void ana_mc_live_add(ana_mc_sweep *w, const ana_mem_life *l, size_t a)
{
    size_t at = ana_mc_upper(w, l->ptr);
    ANA_GROW(w->v, w->cap, w->n + 1);
    memmove(&w->v[at + 1], &w->v[at], (w->n - at) * sizeof(*w->v));
    w->v[at] = (ana_mc_live){ l->ptr, l->ptr + l->size, a };
    w->n++;
}

static void ana_mc_live_remove(ana_mc_sweep *w, const ana_mem_life *l, size_t a)
{
    for (size_t at = ana_mc_upper(w, l->ptr); at-- > 0 && w->v[at].ptr == l->ptr;)
        if (w->v[at].a == a) {
            memmove(&w->v[at], &w->v[at + 1], (w->n - at - 1) * sizeof(*w->v));
            w->n--;
            return;
        }
}

static void ana_mc_sweep_init(ana_mc_sweep *w, const ana_memcat *m, const ana_mem_result *mem)
{
    memset(w, 0, sizeof(*w));
    w->frees = ana_xcalloc(m->n_allocs + 1, sizeof(size_t));
    for (size_t i = 0; i < m->n_allocs; i++) {
        const ana_mem_life *l = &mem->lives[m->allocs[i].life];
        if (l->ptr && l->t_free != UINT64_MAX)
            w->frees[w->n_frees++] = i;
    }
    ana_mc_sort_lives = mem->lives;
    ana_mc_sort_allocs = m->allocs;
    ana_sort(w->frees, w->n_frees, sizeof(size_t), ana_mc_free_cmp);
}

/* Brings the live set to time t: allocations made at or before t are live, those released
 * before t are not (a use at the very time of the release still finds it). Allocations
 * are in the order they were made, so in t_alloc order. */
static void ana_mc_sweep_to(ana_mc_sweep *w, const ana_memcat *m, const ana_mem_result *mem, uint64_t t)
{
    for (;;) {
        const ana_mem_life *la = w->next_alloc < m->n_allocs
                                   ? &mem->lives[m->allocs[w->next_alloc].life] : NULL;
        const ana_mem_life *lf = w->next_free < w->n_frees
                                   ? &mem->lives[m->allocs[w->frees[w->next_free]].life] : NULL;
        int do_alloc = la && la->t_alloc <= t, do_free = lf && lf->t_free < t;
        if (do_alloc && do_free && lf->f_idx < la->a_idx)
            do_alloc = 0; /* replay order: the release came first */
        if (do_alloc) {
            if (la->ptr)
                ana_mc_live_add(w, la, w->next_alloc);
            w->next_alloc++;
        } else if (do_free) {
            ana_mc_live_remove(w, lf, w->frees[w->next_free]);
            w->next_free++;
        } else {
            return;
        }
    }
}

/* The live allocation whose bytes hold ptr, or -1. */
static long ana_mc_lookup(const ana_mc_sweep *w, uint64_t ptr)
{
    size_t at = ana_mc_upper(w, ptr);
    for (size_t k = 0; k < 8 && at-- > 0; k++)
        if (ptr < w->v[at].end)
            return (long)w->v[at].a;
    return -1;
}

static void ana_mc_sweep_free(ana_mc_sweep *w)
{
    free(w->v);
    free(w->frees);
}

/* ------------------------------------------------------------------ uses */

/* 1 when a kernel's name says it works on 16-bit data (bf16, fp16, half). */
static int ana_mc_name_is_16bit(const char *name)
{
    static const char *const keys[] = { "bf16", "bfloat16", "fp16", "half", "f16" };
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcasestr(name, keys[i]))
            return 1;
    return 0;
}

/* Bytes per element of a cudaDataType_t, 0 when unknown. */
static uint8_t ana_mc_type_bytes(uint64_t type)
{
    switch (type) {
    case 0: return 4;            /* R_32F */
    case 1: return 8;            /* R_64F */
    case 2: case 14: return 2;   /* R_16F, R_16BF */
    default: return 0;
    }
}

/* 1 when some call of a step is in backward or optimizer: the run trains. */
static int ana_mc_training(const ana_trace *t, const ana_steps *s)
{
    (void)t;
    for (size_t k = 0; k < s->n_runs; k++)
        if (s->runs[k].step >= 0 && (size_t)s->runs[k].step < s->n_steps &&
            (s->runs[k].phase == ANA_PHASE_BACKWARD || s->runs[k].phase == ANA_PHASE_OPTIMIZER))
            return 1;
    return 0;
}

/* In a run with neither backward nor optimizer (inference), every step is a forward
 * pass: its undecided uses are forward. (In training, the undecided stretch between the
 * last forward-named kernel and the first backward-named one holds forward work — the
 * loss, the last bias — and backward work alike — the first gradient GEMMs launched by a
 * library with neutral kernel names —, so it stays undecided.) Before the first step, a
 * GEMM or a copy that reads the allocation means its contents mattered before training
 * began; a kernel parameter does not count, as it may as well be a fill of zeros. */
static void ana_mc_note_use(const ana_trace *t, const ana_steps *s, int training, ana_mc_alloc *a,
                            const ana_ptr_use *u, int8_t *is16, size_t *run)
{
    a->uses++;
    a->flags |= ANA_MCF_TOUCHED;
    int32_t step = ana_mc_step_of(s, u->time_ns);
    unsigned kind = ana_trace_use_kind(u);
    int h2d = (kind == ANA_USE_COPY_DST && ana_trace_use_arg(t, u) == 1);
    if (kind == ANA_USE_WORKSPACE)
        a->flags |= ANA_MCF_WORKSPACE;
    if (step == -1 && h2d)
        a->flags |= ANA_MCF_LOADED; /* before the first step, or in a run without steps */
    if (step == -1 && s->n_steps && (kind == ANA_USE_GEMM_IN || kind == ANA_USE_COPY_SRC))
        a->flags |= ANA_MCF_READ_EARLY;
    if (step < 0 || (size_t)step >= s->n_steps || kind == ANA_USE_SET)
        return;
    if (h2d) {
        a->flags |= ANA_MCF_STEP_INPUT;
        return;
    }
    uint8_t ph = ana_mc_phase_at(t, s, step, u->time_ns, 1, run);
    if (ph == ANA_PHASE_UNDECIDED && !training)
        ph = ANA_PHASE_FORWARD;
    a->use_phases |= (uint8_t)(1u << ph);
    if (ph != ANA_PHASE_FORWARD)
        return;
    uint8_t e = 0;
    if (kind == ANA_USE_GEMM_IN)
        e = ana_mc_type_bytes(ana_trace_use_arg(t, u) & 255);
    else if (kind == ANA_USE_KERNEL) {
        const ana_trace_kernel *k = ana_trace_kernel_by_id(t, ana_trace_use_arg(t, u));
        int8_t *memo = k ? &is16[k - t->kernels] : NULL; /* names are tested once each */
        if (memo && *memo < 0)
            *memo = (int8_t)ana_mc_name_is_16bit(k->name);
        e = memo && *memo ? 2 : 0;
    }
    if (e && (a->elem == 0 || e < a->elem))
        a->elem = e;
}

/* The allocation each use fell in (-1: none), by a sweep in time order, into ua: 4 bytes
 * a use, as a trace holds about one use per record, so in a temporary file when the uses
 * are. */
static void ana_mc_map_uses(const ana_trace *t, const ana_mem_result *mem, ana_memcat *m,
                            ana_spill *ua)
{
    ana_mc_sweep w;
    if (m->n_allocs >= INT32_MAX) {
        fprintf(stderr, "anatomist: %s: too many allocations (2^31) to analyze\n", t->path);
        exit(ANA_EXIT_BAD);
    }
    ana_spill_init(ua, sizeof(int32_t), "uses' allocations");
    ua->block = t->use_spill.block / sizeof(ana_ptr_use) * sizeof(int32_t); /* as many items */
    if (ana_spill_in_file(&t->use_spill))
        ana_spill_to_file(ua);
    else
        ana_spill_reserve(ua, t->n_uses);
    ana_mc_sweep_init(&w, m, mem);
    ana_spill_cur c;
    ana_trace_uses_open(t, &c);
    const void *p;
    size_t n;
    int32_t out[4096];
    while ((n = ana_spill_peek(&c, &p))) {
        n = n < 4096 ? n : 4096;
        const ana_ptr_use *us = p;
        for (size_t i = 0; i < n; i++) {
            const ana_ptr_use *u = &us[i];
            ana_mc_sweep_to(&w, m, mem, u->time_ns);
            out[i] = (int32_t)ana_mc_lookup(&w, ana_trace_use_ptr(t, u));
            if (out[i] < 0) {
                m->uses_unmapped++;
                continue;
            }
            m->uses_mapped++;
            unsigned kind = ana_trace_use_kind(u);
            if (kind == ANA_USE_KERNEL || kind == ANA_USE_GEMM_IN || kind == ANA_USE_GEMM_OUT)
                m->evidence = 1;
        }
        ana_spill_push(ua, out, n);
        ana_spill_take(&c, n);
    }
    ana_spill_close(&c);
    ana_spill_seal(ua);
    ana_mc_sweep_free(&w);
}

static void ana_mc_place_uses(const ana_trace *t, const ana_steps *s, const ana_spill *ua,
                              ana_memcat *m)
{
    int training = ana_mc_training(t, s);
    int8_t *is16 = ana_xmalloc(t->n_kernels + 1);
    memset(is16, -1, t->n_kernels + 1);
    ana_mc_uses r;
    const ana_ptr_use *u;
    const int32_t *a;
    size_t n, run = 0; /* the uses come in time order */
    ana_mc_uses_open(&r, t, ua);
    while ((n = ana_mc_uses_next(&r, &u, &a))) {
        for (size_t i = 0; i < n; i++)
            if (a[i] >= 0)
                ana_mc_note_use(t, s, training, &m->allocs[a[i]], &u[i], is16, &run);
        ana_mc_uses_take(&r, n);
    }
    ana_mc_uses_close(&r);
    free(is16);
}

/* ------------------------------------------------------------------ set-up */

/* 1 when a frame of the stack lies in PyTorch's CUDA library (its caching allocator). */
static int ana_mc_is_segment(const ana_trace *t, uint64_t stack, ana_u64map *memo)
{
    uint64_t v;
    if (!stack || stack == ANA_MEM_STACK_DRIVER)
        return 0;
    if (ana_u64map_get(memo, stack, &v))
        return (int)v;
    const uint64_t *ip;
    size_t n = ana_stacks_frames(&t->stacks, stack, &ip);
    int seg = 0;
    for (size_t i = 0; i < n && !seg; i++) {
        const ana_trace_module *mod = ana_trace_module_at(t, ip[i] - (i > 0));
        const char *base = mod && mod->path ? strrchr(mod->path, '/') : NULL;
        base = base ? base + 1 : mod ? mod->path : NULL;
        seg = base && strncmp(base, "libc10_cuda", 11) == 0;
    }
    ana_u64map_put(memo, stack, (uint64_t)seg);
    return seg;
}

/* Each allocation's step and phase at birth and death. */
static void ana_mc_times(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s, ana_memcat *m)
{
    size_t run = 0; /* allocations come about in time order */
    for (size_t i = 0; i < m->n_allocs; i++) {
        ana_mc_alloc *a = &m->allocs[i];
        const ana_mem_life *l = &mem->lives[a->life];
        a->step_alloc = ana_mc_step_of(s, l->t_alloc);
        a->step_free = l->t_free == UINT64_MAX ? (int32_t)s->n_steps : ana_mc_step_of(s, l->t_free);
        a->phase_alloc = ana_mc_phase_at(t, s, a->step_alloc, l->t_alloc, 1, &run);
        a->phase_free = l->t_free == UINT64_MAX
                            ? ANA_PHASE_UNDECIDED
                            : ana_mc_phase_at(t, s, a->step_free, l->t_free, 0, &run);
    }
}

static void ana_mc_collect(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                           ana_memcat *m)
{
    ana_u64map memo;
    ana_u64map_init(&memo);
    m->allocs = ana_xcalloc(mem->n_lives + 1, sizeof(*m->allocs));
    for (size_t i = 0; i < mem->n_lives; i++) {
        const ana_mem_life *l = &mem->lives[i];
        if (l->cls != ANA_MEM_DEVICE)
            continue;
        ana_mc_alloc *a = &m->allocs[m->n_allocs++];
        a->life = (uint32_t)i;
        if (ana_mc_is_segment(t, l->stack, &memo))
            a->flags |= ANA_MCF_SEGMENT;
    }
    ana_u64map_free(&memo);
    ana_mc_times(t, mem, s, m);
}

/* ------------------------------------------------------------------ public */

void ana_memcat_build(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                      ana_memcat *out)
{
    memset(out, 0, sizeof(*out));
    ana_mc_collect(t, mem, s, out);
    ana_spill ua;
    ana_mc_map_uses(t, mem, out, &ua);
    /* The steps as the names and NVTX left them, with structure filling what they did not
     * decide (memcat_struct.c): every rule below reads these phases. */
    ana_steps sp = *s;
    if (s->n_runs && t->n_calls) {
        sp.runs = NULL, sp.n_runs = sp.cap_runs = 0;
        ana_mc_struct(t, s, mem, out, &ua, &sp);
        if (out->structure)
            ana_mc_times(t, mem, &sp, out);
    }
    ana_mc_place_uses(t, &sp, &ua, out);
    ana_mc_decide(t, &sp, mem, out);
    if (sp.runs != s->runs)
        free(sp.runs);
    out->peak_bytes = mem->peak_bytes;
    if (mem->peak_bytes)
        ana_memcat_at_event(out, mem, mem->peak_idx, out->at_peak, out->count_at_peak);
    for (size_t a = 0; a < out->n_allocs; a++)
        if ((out->allocs[a].flags & ANA_MCF_SEGMENT) && mem->peak_bytes &&
            ana_memcat_live_at(out, mem, a, mem->peak_idx)) {
            out->segments_at_peak++;
            out->segment_bytes_at_peak += mem->lives[out->allocs[a].life].size;
        }
    ana_mc_step_peaks(t, mem, s, out);
    ana_mc_per_param(mem, out, ana_mc_gemm_params(t, mem, out, &ua));
    ana_spill_free(&ua);
}

void ana_memcat_free(ana_memcat *m)
{
    free(m->allocs);
    free(m->step_peak);
    free(m->step_peak_ns);
    memset(m, 0, sizeof(*m));
}

static const char *const ana_mcat_names[ANA_MCAT_COUNT] = {
    "weights", "optimizer", "gradients", "activations", "temporary", "functionality", "unattributed",
};

const char *ana_mcat_name(int cat)
{
    return cat >= 0 && cat < ANA_MCAT_COUNT ? ana_mcat_names[cat] : "?";
}

/* memcat_struct.c — phases and roles from the structure of a step's pointer uses, where
 * NVTX ranges and kernel names leave them undecided (docs/memory-anatomy.md, "Structure
 * before names"). What a buffer is shows in how a step uses it:
 *
 *   weight     kept across steps, read by GEMMs (A or B) in most steps, never written by
 *              one;
 *   the update the launches after a step's last GEMM that touch a weight, and those of
 *              the kernel that touches the most buffers kept across steps there (the
 *              optimizer, found without its name: one launch per tensor or one for all);
 *   gradient   written by a GEMM and read by the update;
 *   16-bit copy a weight the update does not touch, written by a launch that touches a
 *              buffer the update does (its fp32 master: a cast kernel): a weight too;
 *   backward   begins at the first GEMM of the step that writes a gradient or reads a
 *              weight's address a second time (dX = dY·W reads what forward read); where the
 *              step's GEMMs write a gradient address twice (micro-batches accumulate), once
 *              every such address has been written, a GEMM that reads a weight and writes
 *              no gradient starts the next micro-batch's forward;
 *   evaluation a forward pass that starts over (reads the first weight address of the
 *              step's forward again) before any backward: its calls stay undecided.
 * The update is believed only with a sign of training beside it: a gradient the size of
 * a weight, or weights read by GEMMs twice in a step (forward and backward). Kernel names
 * and NVTX ranges, where they decided a call's phase, keep it: structure fills the rest —
 * but in a step where it saw micro-batches, its phases replace the names' (which read
 * every later micro-batch's forward as backward); NVTX ranges still win.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#define _GNU_SOURCE
#include "analyses/memcat.h"
#include "analyses/memcat_int.h"

#include <stdlib.h>
#include <string.h>

#include "model/u64map.h"
#include "model/util.h"

typedef struct ana_ms_step {
    uint64_t last_gemm;   /* time of its last GEMM use, 0 none */
    uint64_t first_gemm;  /* time of its first GEMM use, 0 none */
} ana_ms_step;

static int ana_ms_gemm(unsigned kind) { return kind == ANA_USE_GEMM_IN || kind == ANA_USE_GEMM_OUT; }

/* What the passes learn of each allocation, one byte each (ana_ms_struct's `b`). */
enum {
    ANA_MSB_GOUT = 1,   /* written by a GEMM in a step */
    ANA_MSB_W = 2,      /* a weight */
    ANA_MSB_UPD = 4,    /* touched by the update */
    ANA_MSB_INPUT = 8,  /* a step's input (copied from the host in the step) */
    ANA_MSB_SEEN = 16,  /* read by a GEMM in the step being read */
    ANA_MSB_TWICE = 32, /* read by two GEMMs in one step */
    ANA_MSB_COPY = 64,  /* a 16-bit working copy (ana_ms_working_copies) */
};

/* 1 when allocation a is kept across step k: made before it, released after it. */
static int ana_ms_kept(const ana_mc_alloc *a, int32_t k)
{
    return a->step_alloc < k && a->step_alloc != -2 && (a->step_free > k || a->step_free == -2);
}

/* Kernel index (into t->kernels) of a kernel use, or SIZE_MAX. */
static size_t ana_ms_kidx(const ana_trace *t, const ana_ptr_use *u)
{
    const ana_trace_kernel *k = ana_trace_kernel_by_id(t, ana_trace_use_arg(t, u));
    return k ? (size_t)(k - t->kernels) : SIZE_MAX;
}

/* Change points of one step's phases: from at[j] on, ph[j]. */
typedef struct ana_ms_points {
    uint64_t *at;
    uint8_t *ph;
    size_t n, cap;
} ana_ms_points;

/* Adds a change point; one at the same time as the last replaces it. */
static void ana_ms_push(ana_ms_points *p, uint64_t at, uint8_t ph)
{
    if (p->n && p->at[p->n - 1] == at)
        p->n--;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->at = ana_xrealloc(p->at, p->cap * sizeof(*p->at));
        p->ph = ana_xrealloc(p->ph, p->cap);
    }
    p->at[p->n] = at, p->ph[p->n] = ph, p->n++;
}

/* Just after the launch of the GEMM whose use is at time_ns (the call that follows it). */
static uint64_t ana_ms_after_launch(const ana_trace *t, uint64_t time_ns)
{
    size_t i = ana_trace_call_bound(t, time_ns, 0);
    return i < t->n_calls ? ana_trace_call(t, i).time_ns + 1 : time_ns + 1;
}

/* Step k's phases, into out (the runs of s up to its first call, copied from *done on),
 * with the points' where s's are undecided, or, with over_names, wherever the points
 * decide one. */
static void ana_ms_apply(const ana_trace *t, const ana_steps *s, int32_t k, const ana_ms_points *p,
                         int over_names, ana_steps *out, size_t *done)
{
    size_t b = s->steps[k].first_call, n = s->steps[k].calls, c = 0;
    uint8_t *phase = ana_xmalloc(n + 1);
    ana_steps_phases(s, b, n, phase);
    for (size_t j = 0; j < n && ana_trace_call(t, b + j).time_ns < s->steps[k].end_ns; j++) {
        uint64_t tm = ana_trace_call(t, b + j).time_ns;
        while (c + 1 < p->n && p->at[c + 1] <= tm)
            c++;
        if (!p->n || tm < p->at[0])
            continue;
        if (phase[j] == ANA_PHASE_UNDECIDED || (over_names && p->ph[c] != ANA_PHASE_UNDECIDED))
            phase[j] = p->ph[c];
    }
    ana_steps_copy(out, s, *done, b);
    for (size_t j = 0; j < n; j++)
        ana_steps_put(out, b + j, k, phase[j]);
    *done = b + n;
    free(phase);
}

/* A 16-bit working copy: a weight the update does not touch, written in a step, before its
 * first GEMM or after its last, by a launch that also touches a buffer the update does
 * touch and no GEMM writes (its fp32 master: a cast kernel before forward or after the
 * update; a bias add between GEMMs is not one). It counts as updated (ANA_MSB_UPD). */
static void ana_ms_working_copies(const ana_trace *t, const ana_steps *s, const ana_ms_step *st,
                                  int32_t n, const ana_spill *ua, uint8_t *b, size_t na)
{
    ana_mc_uses r;
    const ana_ptr_use *us;
    const int32_t *use_alloc;
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n; k++) {
        size_t hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &use_alloc);
        for (size_t i = 0; i < hi;) {
            /* one launch: the kernel uses at one time with one kernel */
            size_t j = i;
            const ana_ptr_use *u = &us[i];
            int master = 0;
            while (j < hi && us[j].time_ns == u->time_ns &&
                   ana_trace_use_kind(&us[j]) == ANA_USE_KERNEL &&
                   ana_trace_use_kind(u) == ANA_USE_KERNEL &&
                   ana_trace_use_arg(t, &us[j]) == ana_trace_use_arg(t, u)) {
                long a = use_alloc[j++];
                master |= a >= 0 && (b[a] & (ANA_MSB_UPD | ANA_MSB_GOUT | ANA_MSB_W)) == ANA_MSB_UPD;
            }
            if (j == i) {
                i++;
                continue;
            }
            if (st[k].first_gemm && u->time_ns >= st[k].first_gemm && u->time_ns <= st[k].last_gemm)
                master = 0; /* inside forward/backward */
            for (size_t q = i; q < j && master; q++) {
                long a = use_alloc[q];
                if (a >= 0 && (b[a] & (ANA_MSB_W | ANA_MSB_UPD)) == ANA_MSB_W)
                    b[a] |= ANA_MSB_COPY;
            }
            i = j;
        }
    }
    ana_mc_uses_close(&r);
    for (size_t a = 0; a < na; a++)
        if (b[a] & ANA_MSB_COPY)
            b[a] |= ANA_MSB_UPD;
}

/* Per step, for each kernel: launched after the step's last GEMM, or before it. */
static void ana_ms_kernel_sides(const ana_trace *t, const ana_steps *s, const ana_ms_step *st,
                                int32_t n, const ana_spill *ua, uint32_t *after, uint32_t *before,
                                size_t nk)
{
    int32_t *seen_a = ana_xcalloc(nk + 1, sizeof(int32_t)), *seen_b = ana_xcalloc(nk + 1, sizeof(int32_t));
    ana_mc_uses r;
    const ana_ptr_use *us;
    const int32_t *as;
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n; k++) {
        size_t hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &as);
        for (size_t i = 0; i < hi; i++) {
            const ana_ptr_use *u = &us[i];
            size_t ki;
            if (ana_trace_use_kind(u) != ANA_USE_KERNEL || (ki = ana_ms_kidx(t, u)) == SIZE_MAX)
                continue;
            int late = st[k].last_gemm && u->time_ns > st[k].last_gemm;
            int32_t *seen = late ? seen_a : seen_b;
            if (seen[ki] != k + 1)
                seen[ki] = k + 1, (late ? after : before)[ki]++;
        }
    }
    ana_mc_uses_close(&r);
    free(seen_a);
    free(seen_b);
}

static void ana_ms_struct(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem,
                          ana_memcat *m, const ana_spill *ua, ana_steps *out, size_t *done)
{
    int32_t n = (int32_t)s->n_steps;
    size_t na = m->n_allocs, nk = t->n_kernels;
    if (n < 1 || !na || !t->n_uses)
        return;
    /* Per allocation, 5 bytes: the steps whose GEMMs read it, and what the passes learn
     * (ANA_MSB_*). */
    ana_ms_step *st = ana_xcalloc((size_t)n + 1, sizeof(*st));
    uint32_t *gin_steps = ana_xcalloc(na + 1, sizeof(uint32_t));
    uint8_t *b = ana_xcalloc(na + 1, 1);
    size_t *seen = NULL, n_seen = 0, cap_seen = 0; /* the allocations ANA_MSB_SEEN marks */
    /* Each step's uses, its last GEMM, and per allocation its GEMM reads and writes. Each
     * pass below reads the steps' uses again, in time order (memcat_int.h ana_mc_uses). */
    ana_mc_uses r;
    const ana_ptr_use *us;
    const int32_t *use_alloc;
    size_t i, hi;
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n; k++) {
        hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &use_alloc);
        while (n_seen)
            b[seen[--n_seen]] &= (uint8_t)~ANA_MSB_SEEN;
        for (i = 0; i < hi; i++) {
            const ana_ptr_use *u = &us[i];
            unsigned kind = ana_trace_use_kind(u);
            long a = use_alloc[i];
            if (ana_ms_gemm(kind)) {
                st[k].last_gemm = u->time_ns;
                if (!st[k].first_gemm)
                    st[k].first_gemm = u->time_ns;
            }
            if (a < 0)
                continue;
            if (kind == ANA_USE_GEMM_OUT)
                b[a] |= ANA_MSB_GOUT;
            if (kind == ANA_USE_COPY_DST && ana_trace_use_arg(t, u) == 1)
                b[a] |= ANA_MSB_INPUT;
            if (kind == ANA_USE_GEMM_IN && (b[a] & ANA_MSB_SEEN))
                b[a] |= ANA_MSB_TWICE;
            else if (kind == ANA_USE_GEMM_IN) {
                b[a] |= ANA_MSB_SEEN, gin_steps[a]++;
                ANA_GROW(seen, cap_seen, n_seen + 1);
                seen[n_seen++] = (size_t)a;
            }
        }
    }
    ana_mc_uses_close(&r);
    free(seen);
    /* Weights: kept across steps, read by GEMMs in at least half of the steps that ran
     * GEMMs the trace saw (a step replayed as a CUDA graph shows none), never written by
     * one, not a step's input (copied from the host in the step). */
    size_t nw = 0;
    uint32_t active = 0;
    int twice = 0;
    for (int32_t k = 0; k < n; k++)
        active += st[k].last_gemm != 0;
    for (size_t a = 0; a < na; a++) {
        if ((b[a] & (ANA_MSB_GOUT | ANA_MSB_INPUT)) || 2 * gin_steps[a] < active || !gin_steps[a] ||
            !ana_ms_kept(&m->allocs[a], n > 1 ? 1 : 0))
            continue;
        b[a] |= ANA_MSB_W, nw++;
        twice |= (b[a] & ANA_MSB_TWICE) != 0;
    }
    /* The update's kernels: launched after the step's last GEMM in more steps than before
     * it (a layer-norm backward touches the weights after the last GEMM too, but it runs
     * before it as well; the last step may end with an evaluation's GEMMs); of them,
     * those that touch a weight there, and the one that touches the most distinct kept
     * buffers there. */
    uint8_t *kupd = ana_xcalloc(nk + 1, 1);
    uint32_t *kafter = ana_xcalloc(nk + 1, sizeof(uint32_t)), *kbefore = ana_xcalloc(nk + 1, sizeof(uint32_t));
    uint64_t *kcount = ana_xcalloc(nk + 1, sizeof(uint64_t));
    ana_ms_kernel_sides(t, s, st, n, ua, kafter, kbefore, nk);
    ana_u64map pairs;
    uint64_t dummy;
    ana_u64map_init(&pairs);
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n && nw; k++) {
        hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &use_alloc);
        for (i = 0; i < hi; i++) {
            const ana_ptr_use *u = &us[i];
            long a = use_alloc[i];
            size_t ki;
            if (u->time_ns <= st[k].last_gemm || !st[k].last_gemm || a < 0 ||
                ana_trace_use_kind(u) != ANA_USE_KERNEL || (ki = ana_ms_kidx(t, u)) == SIZE_MAX ||
                kafter[ki] <= kbefore[ki])
                continue;
            if (b[a] & ANA_MSB_W)
                kupd[ki] = 1;
            uint64_t key = ((uint64_t)ki << 32) | (uint64_t)a;
            if (!(b[a] & ANA_MSB_GOUT) && ana_ms_kept(&m->allocs[a], k) &&
                !ana_u64map_get(&pairs, key, &dummy)) {
                ana_u64map_put(&pairs, key, 1);
                kcount[ki]++;
            }
        }
    }
    ana_mc_uses_close(&r);
    ana_u64map_free(&pairs);
    size_t best = SIZE_MAX;
    for (size_t ki = 0; ki < nk; ki++)
        if (kcount[ki] >= 2 && (best == SIZE_MAX || kcount[ki] > kcount[best]))
            best = ki;
    if (best != SIZE_MAX)
        kupd[best] = 1;
    /* What the update touches (its launches anywhere in a step), and where each step's
     * update begins and ends; a sign of training beside it. */
    uint64_t *first_upd = ana_xcalloc((size_t)n + 1, sizeof(uint64_t)), *last_upd = ana_xcalloc((size_t)n + 1, sizeof(uint64_t));
    int sized = 0, any = 0;
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n; k++) {
        hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &use_alloc);
        for (i = 0; i < hi; i++) {
            const ana_ptr_use *u = &us[i];
            long a = use_alloc[i];
            size_t ki;
            if (ana_trace_use_kind(u) != ANA_USE_KERNEL || (ki = ana_ms_kidx(t, u)) == SIZE_MAX || !kupd[ki])
                continue;
            if (!first_upd[k])
                first_upd[k] = u->time_ns;
            last_upd[k] = u->time_ns;
            if (a >= 0)
                b[a] |= ANA_MSB_UPD, any = 1;
        }
    }
    ana_mc_uses_close(&r);
    /* A gradient the size of a weight: the weights' sizes in a set, then the candidates. */
    ana_u64map sizes;
    ana_u64map_init(&sizes);
    for (size_t a = 0; a < na && any; a++)
        if (b[a] & ANA_MSB_W)
            ana_u64map_put(&sizes, mem->lives[m->allocs[a].life].size, 1);
    for (size_t a = 0; a < na && any && !sized; a++)
        if ((b[a] & (ANA_MSB_UPD | ANA_MSB_GOUT | ANA_MSB_W)) == (ANA_MSB_UPD | ANA_MSB_GOUT))
            sized = ana_u64map_get(&sizes, mem->lives[m->allocs[a].life].size, &dummy);
    ana_u64map_free(&sizes);
    for (size_t a = 0; a < na; a++)
        m->allocs[a].sflags |= ((b[a] & ANA_MSB_GOUT) ? ANA_MCS_GEMM_OUT : 0) | (gin_steps[a] ? ANA_MCS_GEMM_IN : 0);
    if (!any || !(sized || twice))
        goto out;
    ana_ms_working_copies(t, s, st, n, ua, b, na);
    for (size_t a = 0; a < na; a++) {
        unsigned w = b[a] & ANA_MSB_W, upd = b[a] & ANA_MSB_UPD, gout = b[a] & ANA_MSB_GOUT;
        m->allocs[a].sflags |= (w && upd ? ANA_MCS_WEIGHT : 0) | (upd && gout && !w ? ANA_MCS_GRADIENT : 0) |
                               (upd ? ANA_MCS_UPDATED : 0);
    }
    m->structure = 1;
    /* Phases, step by step: forward from the start; backward from the first GEMM that
     * writes a gradient; forward again (the next micro-batch) as the header says; the
     * same until the update's first launch, the update to its last, then undecided. */
    ana_ms_points pt = { 0 };
    ana_mc_uses_open(&r, t, ua);
    for (int32_t k = 0; k < n; k++) {
        hi = ana_mc_uses_span(&r, s->steps[k].start_ns, s->steps[k].end_ns, &us, &use_alloc);
        uint64_t end = first_upd[k] ? first_upd[k] : UINT64_MAX, v;
        /* The gradient addresses the step's GEMMs write, and whether one is written twice
         * (micro-batches accumulate: only then does a forward follow a backward). */
        ana_u64map gp, wrote, read;
        ana_u64map_init(&gp);
        ana_u64map_init(&wrote);
        ana_u64map_init(&read);
        size_t ngp = 0, nwrote = 0;
        int accum = 0;
        for (i = 0; i < hi && us[i].time_ns < end; i++) {
            long a = use_alloc[i];
            if (a < 0 || ana_trace_use_kind(&us[i]) != ANA_USE_GEMM_OUT ||
                !(m->allocs[a].sflags & ANA_MCS_GRADIENT))
                continue;
            uint64_t p = ana_trace_use_ptr(t, &us[i]);
            if (ana_u64map_get(&gp, p, &v))
                accum = 1;
            else
                ana_u64map_put(&gp, p, 1), ngp++;
        }
        uint8_t cur = ANA_PHASE_FORWARD;
        uint64_t last_fwd_gemm = 0, p0 = 0; /* p0: the first weight address forward read */
        size_t restarts = 0;                /* micro-batch forwards after a backward */
        pt.n = 0;
        ana_ms_push(&pt, s->steps[k].start_ns, cur);
        for (i = 0; i < hi && us[i].time_ns < end; i++) {
            const ana_ptr_use *u = &us[i];
            unsigned kind = ana_trace_use_kind(u);
            long a = use_alloc[i];
            if (!ana_ms_gemm(kind) || a < 0)
                continue;
            uint64_t p = ana_trace_use_ptr(t, u);
            int grad = kind == ANA_USE_GEMM_OUT && (m->allocs[a].sflags & ANA_MCS_GRADIENT);
            int w = (b[a] & ANA_MSB_W) != 0;
            int again = kind == ANA_USE_GEMM_IN && w && cur == ANA_PHASE_FORWARD &&
                        ana_u64map_get(&read, p, &v);
            if (again && p == p0) {
                /* The forward pass starts over without a backward between: the one before
                 * was an evaluation (its buffers serve no backward), undecided. */
                if (pt.n && pt.ph[pt.n - 1] == ANA_PHASE_FORWARD)
                    pt.ph[pt.n - 1] = ANA_PHASE_UNDECIDED;
                ana_u64map_free(&read);
                ana_u64map_init(&read);
                ana_ms_push(&pt, u->time_ns, cur);
                again = 0;
            }
            if (kind == ANA_USE_GEMM_IN && w && cur == ANA_PHASE_FORWARD) {
                if (!p0)
                    p0 = p;
                ana_u64map_put(&read, p, 1);
            }
            if ((grad || again) && cur != ANA_PHASE_BACKWARD) {
                /* Between forward's last GEMM and backward's first lie the loss and its
                 * gradient: forward and backward work alike, undecided. */
                if (last_fwd_gemm)
                    ana_ms_push(&pt, ana_ms_after_launch(t, last_fwd_gemm), ANA_PHASE_UNDECIDED);
                cur = ANA_PHASE_BACKWARD, nwrote = 0;
                ana_u64map_free(&wrote);
                ana_u64map_init(&wrote);
                ana_ms_push(&pt, u->time_ns, cur);
            }
            if (cur == ANA_PHASE_FORWARD)
                last_fwd_gemm = u->time_ns;
            if (grad && !ana_u64map_get(&wrote, p, &v))
                ana_u64map_put(&wrote, p, 1), nwrote++;
            if (accum && cur == ANA_PHASE_BACKWARD && !grad && kind == ANA_USE_GEMM_IN && w &&
                nwrote >= ngp) {
                cur = ANA_PHASE_FORWARD, last_fwd_gemm = u->time_ns, restarts++;
                ana_u64map_free(&read);
                ana_u64map_init(&read);
                ana_u64map_put(&read, p, 1);
                ana_ms_push(&pt, u->time_ns, cur);
            }
        }
        ana_u64map_free(&gp);
        ana_u64map_free(&wrote);
        ana_u64map_free(&read);
        if (first_upd[k]) {
            ana_ms_push(&pt, first_upd[k], ANA_PHASE_OPTIMIZER);
            ana_ms_push(&pt, last_upd[k] + 1, ANA_PHASE_UNDECIDED);
        }
        /* Kernel names place forward only before the first backward-named launch: the
         * forwards of later micro-batches read as backward. Where the structure saw them,
         * it decides the step (NVTX ranges still win). */
        ana_ms_apply(t, s, k, &pt, restarts > 0 && s->steps[k].phases != ANA_PHASES_NVTX, out,
                     done);
    }
    ana_mc_uses_close(&r);
    free(pt.at);
    free(pt.ph);
out:
    free(first_upd);
    free(last_upd);
    free(kupd);
    free(kafter);
    free(kbefore);
    free(kcount);
    free(st);
    free(gin_steps);
    free(b);
}

void ana_mc_struct(const ana_trace *t, const ana_steps *s, const ana_mem_result *mem, ana_memcat *m,
                   const ana_spill *ua, ana_steps *out)
{
    size_t done = 0; /* the calls whose runs are in out */
    ana_ms_struct(t, s, mem, m, ua, out, &done);
    ana_steps_copy(out, s, done, t->n_calls);
}

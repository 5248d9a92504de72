/* anatomy.c — see anatomy.h: the time anatomy of a loaded trace.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/anatomy.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* What the library records say about call ids: GEMM calls (-> their GEMM record), NCCL
 * operations. Tables by id, as the ids count up (model/idmap.h). */
typedef struct ana_anat_ctx {
    ana_idmap gemm_calls; /* ana_libcalls_gemm_ids */
    uint32_t *gemm_shape; /* each GEMM call's shape, by its index */
    int gemm_unique;      /* each GEMM call id has one GEMM record */
    ana_idset coll_calls;
} ana_anat_ctx;

static void ana_anat_ctx_init(const ana_trace *t, ana_anat_ctx *c)
{
    const ana_libs *l = &t->libs;
    uint64_t lo = UINT64_MAX, hi = 0;
    c->gemm_unique = ana_libcalls_gemm_ids(l, &c->gemm_calls, &c->gemm_shape);
    ana_spill_iter it;
    const ana_coll_call *k;
    ana_spill_iter_begin(&it, &l->colls, 0);
    while ((k = ana_spill_iter_next(&it)))
        ana_id_span(k->call, &lo, &hi);
    ana_spill_iter_end(&it);
    for (size_t i = 0; i < l->n_group_ends; i++)
        ana_id_span(l->group_ends[i].call, &lo, &hi);
    ana_idset_init(&c->coll_calls, lo, hi, l->n_colls + l->n_group_ends);
    ana_spill_iter_begin(&it, &l->colls, 0);
    while ((k = ana_spill_iter_next(&it)))
        ana_idset_add(&c->coll_calls, k->call);
    ana_spill_iter_end(&it);
    for (size_t i = 0; i < l->n_group_ends; i++)
        ana_idset_add(&c->coll_calls, l->group_ends[i].call);
}

static void ana_anat_ctx_free(ana_anat_ctx *c)
{
    ana_idmap_free(&c->gemm_calls);
    free(c->gemm_shape);
    ana_idset_free(&c->coll_calls);
}

/* The context of activity a, issued by call c (NULL when no call has its corr). */
static int ana_anat_ctx_of(const ana_trace *t, const ana_anat_ctx *cx, const ana_gpu_act *a,
                           const ana_api_call *c)
{
    uint64_t v, call;
    if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL)
        return ANA_CTX_MEMORY;
    if (!c)
        return ANA_CTX_NONE;
    if ((call = ana_trace_wide(t, c->call_w))) {
        if (ana_u64map_get(&t->call_ctx, call, &v) && v < ANA_CTX_COUNT)
            return (int)v;
        if (ana_idmap_get(&cx->gemm_calls, call) != SIZE_MAX)
            return ANA_CTX_GEMM;
        if (ana_idset_has(&cx->coll_calls, call))
            return ANA_CTX_COMM;
    }
    unsigned lib = ana_trace_call_site(t, c)->lib;
    if (lib == ANA_LIB_NCCL)
        return ANA_CTX_COMM;
    return lib ? ANA_CTX_LIBRARY : ANA_CTX_NONE;
}

/* Classifications cached per (kernel index, context): names are demangled once. */
typedef struct ana_anat_cache {
    const ana_trace *t;
    ana_classification *v; /* n_kernels x ANA_CTX_COUNT */
    uint8_t *done;
} ana_anat_cache;

static ana_classification ana_anat_classify(ana_anat_cache *cc, const ana_gpu_act *a, int ctx,
                                            size_t *kidx)
{
    const ana_trace *t = cc->t;
    size_t k;
    *kidx = SIZE_MAX;
    if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL ||
        !ana_trace_kernel_index(t, ana_trace_wide(t, a->arg_w), &k))
        return ana_classify(NULL, ctx);
    *kidx = (size_t)k;
    size_t slot = (size_t)k * ANA_CTX_COUNT + (size_t)ctx;
    if (!cc->done[slot]) {
        cc->v[slot] = ana_classify(t->kernels[k].name, ctx);
        cc->done[slot] = 1;
    }
    return cc->v[slot];
}

/* A running union of intervals on one device (activities arrive sorted by device, start). */
typedef struct ana_anat_union {
    int32_t device;
    int open;
    uint64_t start, end, total;
} ana_anat_union;

static void ana_anat_union_add(const ana_trace *t, ana_anat_union *u, const ana_gpu_act *a)
{
    uint64_t s = a->start_ns, e = a->start_ns + ana_trace_wide(t, a->dur_w);
    int32_t device = ana_trace_gpu_lane(t, a)->device;
    if (u->open && u->device == device && s <= u->end) {
        if (e > u->end)
            u->end = e;
        return;
    }
    if (u->open)
        u->total += u->end - u->start;
    *u = (ana_anat_union){ .device = device, .open = 1, .start = s, .end = e, .total = u->total };
}

static uint64_t ana_anat_union_total(const ana_anat_union *u)
{
    return u->total + (u->open ? u->end - u->start : 0);
}

/* Kernel index -> its entry in g->knames (same name, or the same id when unnamed). */
static size_t *ana_anat_kname_index(const ana_trace *t, const ana_gpu_result *g)
{
    size_t *idx = ana_xcalloc(t->n_kernels + 1, sizeof(*idx));
    ana_u64map by_name;
    ana_u64map_init(&by_name);
    for (size_t i = 0; i < t->n_kernels; i++)
        idx[i] = SIZE_MAX;
    for (size_t i = 0; i < g->n_knames; i++) {
        const ana_trace_kernel *k = g->knames[i].k;
        if (!k->name) {
            idx[k - t->kernels] = i;
            continue;
        }
        uint64_t h = ana_fnv1a(k->name, strlen(k->name), ANA_FNV1A_SEED);
        uint64_t v;
        while (ana_u64map_get(&by_name, h, &v)) /* a collision: probe on */
            h++;
        ana_u64map_put(&by_name, h, i);
    }
    for (size_t i = 0; i < t->n_kernels; i++) {
        const char *name = t->kernels[i].name;
        if (!name || idx[i] != SIZE_MAX)
            continue;
        uint64_t h = ana_fnv1a(name, strlen(name), ANA_FNV1A_SEED), v;
        while (ana_u64map_get(&by_name, h, &v)) {
            if (strcmp(g->knames[v].k->name, name) == 0) {
                idx[i] = (size_t)v;
                break;
            }
            h++;
        }
    }
    ana_u64map_free(&by_name);
    return idx;
}

/* The GEMM FLOPs of each step: a GEMM call belongs to the step of its first launch. The
 * calls in order, each GEMM call's first found through the table by call id (a map by call
 * of every library call's first launch when two GEMM records share an id). */
static void ana_anat_step_flops(const ana_trace *t, const ana_anat_ctx *cx, ana_anatomy *a)
{
    const ana_libs *l = &t->libs;
    size_t run = 0; /* calls and GEMM calls come in order */
    int by_id = cx->gemm_unique;
    uint8_t *seen = by_id ? ana_xcalloc(l->n_gemms / 8 + 1, 1) : NULL;
    ana_u64map first;
    uint64_t v;
    ana_u64map_init(&first);
    for (size_t i = 0; i < t->n_calls; i++) {
        uint64_t call = ana_trace_wide(t, ana_trace_call(t, i).call_w);
        size_t g;
        int32_t step;
        if (call && !by_id && !ana_u64map_get(&first, call, &v))
            ana_u64map_put(&first, call, i);
        if (!call || !by_id || (g = ana_idmap_get(&cx->gemm_calls, call)) == SIZE_MAX ||
            ana_bit_get(seen, g))
            continue;
        ana_bit_set(seen, g);
        const ana_gemm_shape *s = &l->shapes[cx->gemm_shape[g]];
        if ((step = ana_steps_at(&a->steps, i, &run, NULL)) >= 0)
            ana_anat_rows_mut(&a->rows, (size_t)step)->flops += s->count ? s->flops / s->count : 0;
    }
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->gemms, 0);
    for (const ana_gemm_call *gc; !by_id && (gc = ana_spill_iter_next(&it));) {
        const ana_gemm_shape *s = &l->shapes[gc->shape];
        int32_t step;
        if (!ana_u64map_get(&first, gc->call, &v) ||
            (step = ana_steps_at(&a->steps, v, &run, NULL)) < 0)
            continue;
        ana_anat_rows_mut(&a->rows, (size_t)step)->flops += s->count ? s->flops / s->count : 0;
    }
    ana_spill_iter_end(&it);
    ana_u64map_free(&first);
    free(seen);
}

/* Achieved TFLOP/s of the GEMMs with linked kernels, the peak of their main precision
 * (the one with the most GEMM time) and the model-FLOPs utilisation. */
static void ana_anat_contractions(const ana_trace *t, const ana_gpu_result *g,
                                  const ana_libcalls *lc, ana_anatomy *a)
{
    uint64_t prec_ns[ANA_PREC_COUNT] = { 0 };
    double prec_peak[ANA_PREC_COUNT];
    for (int p = 0; p < ANA_PREC_COUNT; p++)
        prec_peak[p] = -1.0;
    a->gemm_flops = lc->gemm_timed_flops;
    a->gemm_timed_ns = lc->gemm_gpu_ns;
    a->achieved_tflops = a->gemm_timed_ns ? (double)a->gemm_flops / (double)a->gemm_timed_ns / 1e3
                                          : -1.0;
    for (size_t i = 0; i < lc->n_gemms; i++) {
        const ana_gemm_row *r = &lc->gemms[i];
        prec_ns[r->s->prec] += r->gpu_ns;
        if (prec_peak[r->s->prec] < 0)
            prec_peak[r->s->prec] = r->peak_tflops;
    }
    a->peak_prec = -1;
    a->peak_tflops = -1.0;
    for (int p = 0; p < ANA_PREC_COUNT; p++)
        if (prec_ns[p] && (a->peak_prec < 0 || prec_ns[p] > prec_ns[a->peak_prec]))
            a->peak_prec = p;
    if (a->peak_prec >= 0)
        a->peak_tflops = prec_peak[a->peak_prec];
    /* MFU: all GEMM FLOPs of the steps over the steps' wall time; without steps, over the
     * GPU's span. */
    uint64_t flops = 0, wall = 0;
    if (a->steps.n_steps) {
        for (size_t i = 0; i < a->steps.n_steps; i++) {
            flops += ana_anat_rows_mut(&a->rows, i)->flops;
            wall += a->steps.steps[i].end_ns - a->steps.steps[i].start_ns;
        }
    } else {
        for (size_t i = 0; i < t->libs.n_shapes; i++)
            flops += t->libs.shapes[i].flops;
        wall = g->last_ns - g->first_ns;
    }
    a->mfu_wall_ns = wall;
    a->mfu = -1.0;
    if (wall && a->peak_tflops > 0 && flops)
        a->mfu = (double)flops / (double)wall / 1e3 / a->peak_tflops;
}

void ana_anatomy_steps(const ana_trace *t, ana_anatomy *out)
{
    memset(out, 0, sizeof(*out));
    ana_steps_find(t, &out->steps);
}

void ana_anatomy_classify(const ana_trace *t, const ana_gpu_result *g, const ana_libcalls *lc,
                          ana_anatomy *a)
{
    a->busy_ns = g->busy_ns;
    a->idle_ns = g->idle_ns;
    a->span_ns = g->spans_ns;
    ana_anat_rows_init(&a->rows, a->steps.n_steps);
    ana_anat_union *unions = ana_xcalloc(a->steps.n_steps + 1, sizeof(*unions));
    a->knames = ana_xcalloc(g->n_knames + 1, sizeof(*a->knames));
    uint64_t *kname_ns = ana_xcalloc((g->n_knames + 1) * ANA_CLASS_COUNT, sizeof(*kname_ns));
    size_t *kname_of = ana_anat_kname_index(t, g);
    ana_anat_cache cc = { t, ana_xcalloc((t->n_kernels + 1) * ANA_CTX_COUNT, sizeof(*cc.v)),
                          ana_xcalloc((t->n_kernels + 1) * ANA_CTX_COUNT, 1) };
    ana_anat_ctx cx;
    ana_anat_ctx_init(t, &cx);

    ana_gpu_iter it;
    size_t run = 0; /* the activities come about in the order of their calls */
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *act; (act = ana_trace_gpu_next(&it));) {
        uint64_t dur = ana_trace_wide(t, act->dur_w);
        size_t ci = ana_trace_call_index(t, ana_trace_wide(t, act->corr_w));
        ana_api_call call;
        const ana_api_call *issued = NULL;
        if (ci != SIZE_MAX) {
            call = ana_trace_call(t, ci);
            issued = &call;
        }
        int ctx = ana_anat_ctx_of(t, &cx, act, issued);
        size_t kidx;
        ana_classification c = ana_anat_classify(&cc, act, ctx, &kidx);
        a->total.ns[c.cls] += dur;
        a->total.count[c.cls]++;
        if (ana_trace_gpu_lane(t, act)->type == ANA_GPU_KERNEL) {
            size_t kn = kidx != SIZE_MAX ? kname_of[kidx] : SIZE_MAX;
            if (kn != SIZE_MAX) {
                kname_ns[kn * ANA_CLASS_COUNT + c.cls] += dur;
                ana_anat_kname *e = &a->knames[kn];
                if (kname_ns[kn * ANA_CLASS_COUNT + c.cls] >= kname_ns[kn * ANA_CLASS_COUNT + e->cls])
                    *e = (ana_anat_kname){ c.cls, (uint8_t)ctx, c.hints, c.rule };
            }
            if (kidx == SIZE_MAX || !t->kernels[kidx].name)
                a->unnamed_ns += dur;
        }
        /* step and phase, through the call that issued it */
        int32_t step = -1;
        int phase = ANA_PHASE_UNDECIDED;
        if (issued)
            step = ana_steps_at(&a->steps, ci, &run, &phase);
        if (step < 0) {
            a->outside_ns += dur;
            continue;
        }
        if (phase >= ANA_PHASE_COUNT)
            phase = ANA_PHASE_UNDECIDED;
        a->phase_ns[phase] += dur;
        a->phase_class[phase].ns[c.cls] += dur;
        a->phase_class[phase].count[c.cls]++;
        ana_anat_step *s = ana_anat_rows_mut(&a->rows, (size_t)step);
        s->class_ns[c.cls] += dur;
        s->phase_ns[phase] += dur;
        if (!s->acts++ || act->start_ns < s->gpu_first_ns)
            s->gpu_first_ns = act->start_ns;
        if (act->start_ns + dur > s->gpu_last_ns)
            s->gpu_last_ns = act->start_ns + dur;
        ana_anat_union_add(t, &unions[step], act);
    }
    ana_trace_gpu_end(&it);
    for (size_t i = 0; i < a->steps.n_steps; i++)
        ana_anat_rows_mut(&a->rows, i)->busy_ns = ana_anat_union_total(&unions[i]);
    free(unions);
    uint64_t sum = 0;
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        sum += a->total.ns[c];
    a->overlap_ns = sum > a->busy_ns ? sum - a->busy_ns : 0;
    a->bwd_fwd_ratio = a->phase_ns[ANA_PHASE_FORWARD] && a->phase_ns[ANA_PHASE_BACKWARD]
                           ? (double)a->phase_ns[ANA_PHASE_BACKWARD] /
                                 (double)a->phase_ns[ANA_PHASE_FORWARD]
                           : -1.0;
    a->kernel_cls = ana_xcalloc(t->n_kernels + 1, 1);
    for (size_t i = 0; i < t->n_kernels; i++)
        a->kernel_cls[i] = kname_of[i] != SIZE_MAX ? a->knames[kname_of[i]].cls
                                                   : ana_classify(t->kernels[i].name, ANA_CTX_NONE).cls;
    ana_anat_step_flops(t, &cx, a);
    ana_anat_contractions(t, g, lc, a);
    ana_anat_ctx_free(&cx);
    free(cc.v);
    free(cc.done);
    free(kname_of);
    free(kname_ns);
    ana_anat_rows_pack(&a->rows, &a->steps);
}

void ana_anatomy_free(ana_anatomy *a)
{
    ana_steps_free(&a->steps);
    ana_anat_rows_free(&a->rows);
    free(a->knames);
    free(a->kernel_cls);
    memset(a, 0, sizeof(*a));
}

/* libcalls.c — see libcalls.h: linking library calls to their kernels, the GEMM table and
 * its findings, the NCCL table and the communicators.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/libcalls.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

ana_call_gpu *ana_libcalls_link(const ana_trace *t, const ana_u64map *want, ana_u64map *map,
                                size_t *n)
{
    ana_call_gpu *v = NULL;
    size_t cap = 0;
    *n = 0;
    ana_u64map_init(map);
    /* t->gpu is sorted by device, then start: the first kernel seen of a call is the
     * earliest on its device. */
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));) {
        ana_api_call c;
        uint64_t k, call;
        if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL ||
            !ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w), &c) ||
            !(call = ana_trace_wide(t, c.call_w)) || (want && !ana_u64map_get(want, call, &k)))
            continue;
        if (!ana_u64map_get(map, call, &k)) {
            ANA_GROW(v, cap, *n + 1);
            v[*n] = (ana_call_gpu){ .first_kernel = ana_trace_wide(t, a->arg_w),
                                    .device = ana_trace_gpu_lane(t, a)->device };
            k = (*n)++;
            ana_u64map_put(map, call, k);
        }
        v[k].gpu_ns += ana_trace_wide(t, a->dur_w);
        v[k].kernels++;
    }
    ana_trace_gpu_end(&it);
    return v;
}

void ana_libcalls_first_calls(const ana_trace *t, ana_u64map *map)
{
    ana_u64map_init(map);
    for (size_t i = t->n_calls; i-- > 0;) { /* backwards: the earliest call of each wins */
        uint64_t call = ana_trace_wide(t, ana_trace_call(t, i).call_w);
        if (call)
            ana_u64map_put(map, call, i);
    }
}

static const ana_call_gpu *ana_lc_get(const ana_u64map *map, const ana_call_gpu *v, uint64_t call)
{
    uint64_t k;
    return call && ana_u64map_get(map, call, &k) ? &v[k] : NULL;
}

static const ana_trace_device *ana_lc_device(const ana_trace *t, int64_t ordinal)
{
    for (size_t i = 0; i < t->n_devices; i++)
        if (t->devices[i].ordinal == ordinal)
            return &t->devices[i];
    return NULL;
}

/* Tensor cores want 8 (16-bit), 16 (fp8) or 4 (tf32) elements per dimension. */
static uint8_t ana_lc_multiple(int prec)
{
    switch (prec) {
    case ANA_PREC_FP16:
    case ANA_PREC_BF16: return 8;
    case ANA_PREC_FP8: return 16;
    case ANA_PREC_TF32: return 4;
    default: return 0;
    }
}

static int ana_lc_gemm_cmp(const void *a, const void *b)
{
    const ana_gemm_row *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    if (x->s->flops != y->s->flops)
        return x->s->flops > y->s->flops ? -1 : 1;
    return x->s->count > y->s->count ? -1 : x->s->count < y->s->count;
}

static void ana_lc_gemm_findings(ana_libcalls *lc, const ana_trace *t, const ana_gemm_row *r)
{
    if (r->misaligned) {
        lc->misaligned_shapes++;
        lc->misaligned_calls += r->s->count;
        lc->misaligned_gpu_ns += r->gpu_ns;
    }
    if (r->s->prec != ANA_PREC_FP32)
        return;
    if (!lc->fp32_shapes++) {
        const ana_trace_device *d = ana_lc_device(t, r->device);
        lc->fp32_peak = d ? ana_peak_tflops(d->cc_major, d->cc_minor, ANA_PREC_FP32) : -1.0;
        lc->tf32_peak = d ? ana_peak_tflops(d->cc_major, d->cc_minor, ANA_PREC_TF32) : -1.0;
    }
    lc->fp32_calls += r->s->count;
    lc->fp32_gpu_ns += r->gpu_ns;
}

int ana_libcalls_gemm_ids(const ana_libs *l, ana_idmap *x, uint32_t **shape)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    int unique = 1;
    ana_spill_iter it;
    const ana_gemm_call *g;
    ana_spill_iter_begin(&it, &l->gemms, 0);
    while ((g = ana_spill_iter_next(&it)))
        ana_id_span(g->call, &lo, &hi);
    ana_spill_iter_end(&it);
    ana_idmap_init(x, lo, hi, l->n_gemms);
    if (shape)
        *shape = ana_xmalloc((l->n_gemms + 1) * sizeof(**shape));
    ana_spill_iter_begin(&it, &l->gemms, 0);
    for (size_t i = 0; (g = ana_spill_iter_next(&it)); i++) {
        if (shape)
            (*shape)[i] = g->shape;
        if (g->call)
            unique &= ana_idmap_put(x, g->call, i < ANA_IDMAP_MAX ? i : ANA_IDMAP_MAX) &&
                      i < ANA_IDMAP_MAX;
    }
    ana_spill_iter_end(&it);
    return unique;
}

/* Each shape's GPU time, kernels and timed calls, from the GEMM calls' kernels in one
 * pass, without a record by call: a call is timed once (a bit by GEMM record), and a
 * shape's device is that of the first kernel seen of its earliest GEMM record with one.
 * 0 (nothing done) when two GEMM records share a call id. */
static int ana_lc_gemm_kernels(const ana_trace *t, ana_libcalls *lc)
{
    const ana_libs *l = &t->libs;
    ana_idmap ids;
    uint32_t *shape_of;
    int ok = ana_libcalls_gemm_ids(l, &ids, &shape_of);
    uint8_t *timed = ok ? ana_xcalloc(l->n_gemms / 8 + 1, 1) : NULL;
    size_t *first = ok ? ana_xcalloc(l->n_shapes + 1, sizeof(size_t)) : NULL;
    for (size_t i = 0; ok && i < l->n_shapes; i++)
        first[i] = SIZE_MAX;
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; ok && (a = ana_trace_gpu_next(&it));) {
        ana_api_call c;
        size_t i;
        if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL ||
            !ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w), &c) ||
            (i = ana_idmap_get(&ids, ana_trace_wide(t, c.call_w))) == SIZE_MAX)
            continue;
        uint32_t shape = shape_of[i];
        ana_gemm_row *r = &lc->gemms[shape];
        r->gpu_ns += ana_trace_wide(t, a->dur_w);
        r->kernels++;
        if (!ana_bit_get(timed, i)) {
            ana_bit_set(timed, i);
            r->timed_calls++;
            r->timed_flops += ana_gemm_call_flops(r->s);
        }
        if (i < first[shape]) {
            first[shape] = i;
            r->device = ana_trace_gpu_lane(t, a)->device;
        }
    }
    ana_trace_gpu_end(&it);
    ana_idmap_free(&ids);
    free(shape_of);
    free(timed);
    free(first);
    return ok;
}

static void ana_lc_gemms(const ana_trace *t, ana_libcalls *lc)
{
    const ana_libs *l = &t->libs;
    lc->n_gemms = l->n_shapes;
    lc->gemms = ana_xcalloc(l->n_shapes + 1, sizeof(*lc->gemms));
    for (size_t i = 0; i < l->n_shapes; i++)
        lc->gemms[i] = (ana_gemm_row){ .s = &l->shapes[i], .device = -1 };
    if (!ana_lc_gemm_kernels(t, lc)) { /* a call id twice: by call, as the records say */
        ana_u64map map;
        size_t n;
        ana_call_gpu *v = ana_libcalls_link(t, NULL, &map, &n);
        ana_spill_iter it;
        ana_spill_iter_begin(&it, &l->gemms, 0);
        for (const ana_gemm_call *g; (g = ana_spill_iter_next(&it));) {
            const ana_call_gpu *c = ana_lc_get(&map, v, g->call);
            ana_gemm_row *r = &lc->gemms[g->shape];
            if (!c)
                continue;
            r->gpu_ns += c->gpu_ns;
            r->kernels += c->kernels;
            r->timed_calls++;
            r->timed_flops += ana_gemm_call_flops(r->s);
            if (r->device < 0)
                r->device = c->device;
        }
        ana_spill_iter_end(&it);
        free(v);
        ana_u64map_free(&map);
    }
    for (size_t i = 0; i < lc->n_gemms; i++) {
        ana_gemm_row *r = &lc->gemms[i];
        const ana_gemm_shape *s = r->s;
        if (r->device < 0 && t->n_devices)
            r->device = t->devices[0].ordinal;
        const ana_trace_device *d = ana_lc_device(t, r->device);
        r->peak_tflops = d ? ana_peak_tflops(d->cc_major, d->cc_minor, s->prec) : -1.0;
        r->multiple = ana_lc_multiple(s->prec);
        if (r->multiple)
            r->misaligned = (uint8_t)((s->m % r->multiple != 0) | (s->n % r->multiple != 0) << 1 |
                                      (s->k % r->multiple != 0) << 2);
        lc->gemm_calls += s->count;
        lc->gemm_flops += s->flops;
        lc->gemm_gpu_ns += r->gpu_ns;
        lc->gemm_kernels += r->kernels;
        lc->gemm_timed_flops += r->timed_flops;
    }
    ana_sort(lc->gemms, lc->n_gemms, sizeof(*lc->gemms), ana_lc_gemm_cmp);
    lc->fp32_peak = lc->tf32_peak = -1.0;
    for (size_t i = 0; i < lc->n_gemms; i++)
        ana_lc_gemm_findings(lc, t, &lc->gemms[i]);
}

static int ana_lc_group_end_cmp(const void *a, const void *b)
{
    const ana_group_end *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* The earliest of ends[0..n) (sorted) on tid at or after time, or NULL. */
static const ana_group_end *ana_lc_group_end_after(const ana_group_end *ends, size_t n,
                                                   uint64_t tid, uint64_t time)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ends[mid].tid < tid || (ends[mid].tid == tid && ends[mid].time_ns < time))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ends[lo].tid == tid ? &ends[lo] : NULL;
}

/* Where the kernels of each collective are: its own call, or (grouped) the outermost
 * ncclGroupEnd its thread made next (a LIBCALL's time is its start, so the group's
 * operations start before it). Returns, per COLL, the call id whose kernels run it
 * (0 = none recorded). */
static uint64_t *ana_lc_group_owner(const ana_libs *l)
{
    uint64_t *owner = ana_xcalloc(l->n_colls + 1, sizeof(uint64_t));
    ana_group_end *ends = ana_xcalloc(l->n_group_ends + 1, sizeof(*ends));
    if (l->n_group_ends)
        memcpy(ends, l->group_ends, l->n_group_ends * sizeof(*ends));
    ana_sort(ends, l->n_group_ends, sizeof(*ends), ana_lc_group_end_cmp);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->colls, 0);
    for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
        const ana_group_end *e =
            c->group ? ana_lc_group_end_after(ends, l->n_group_ends, c->tid, c->time_ns) : NULL;
        owner[it.idx - 1] = !c->group ? c->call : e ? e->call : 0;
    }
    ana_spill_iter_end(&it);
    free(ends);
    return owner;
}

/* Sum of bytes of the collectives each owner call carries (for the split). */
static void ana_lc_owner_bytes(const ana_libs *l, const uint64_t *owner, ana_u64map *bytes,
                               ana_u64map *ops)
{
    ana_u64map_init(bytes);
    ana_u64map_init(ops);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->colls, 0);
    for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
        uint64_t b = 0, n = 0, o = owner[it.idx - 1];
        if (!o)
            continue;
        ana_u64map_get(bytes, o, &b);
        ana_u64map_get(ops, o, &n);
        ana_u64map_put(bytes, o, b + c->bytes);
        ana_u64map_put(ops, o, n + 1);
    }
    ana_spill_iter_end(&it);
}

static uint64_t ana_lc_share(uint64_t total, uint64_t part, uint64_t whole, uint64_t n)
{
    if (whole)
        return (uint64_t)((unsigned __int128)total * part / whole);
    return n ? total / n : 0;
}

static ana_coll_row *ana_lc_coll_row(ana_libcalls *lc, size_t *cap, ana_u64map *idx,
                                     const ana_trace *t, const ana_coll_call *c)
{
    const ana_nccl_comm *cm = ana_libs_comm_by_handle(&t->libs, c->comm);
    uint16_t api = c->api == ANA_API_NCCL_BCAST ? ANA_API_NCCL_BROADCAST : c->api;
    uint64_t comm_id = cm ? cm->comm_id : 0;
    uint64_t h = comm_id * 0x9e3779b97f4a7c15ull ^ c->bytes * 0xbf58476d1ce4e5b9ull ^
                 ((uint64_t)api << 8 | c->dtype), k;
    for (;; h++) {
        if (!ana_u64map_get(idx, h, &k))
            break;
        ana_coll_row *r = &lc->colls[k];
        if (r->api == api && r->dtype == c->dtype && r->bytes == c->bytes && r->comm_id == comm_id)
            return r;
    }
    ANA_GROW(lc->colls, *cap, lc->n_colls + 1);
    lc->colls[lc->n_colls] = (ana_coll_row){ .api = api, .dtype = c->dtype, .bytes = c->bytes,
                                             .comm = c->comm, .comm_id = comm_id,
                                             .ranks = cm && cm->size > 0 ? cm->size : -1 };
    ana_u64map_put(idx, h, lc->n_colls);
    return &lc->colls[lc->n_colls++];
}

/* Algorithm and protocol from a kernel name that names the row's operation (or none). */
static void ana_lc_coll_algo(const ana_trace *t, ana_coll_row *r, uint64_t kernel)
{
    const ana_trace_kernel *k = ana_trace_kernel_by_id(t, kernel);
    char op[16], algo[24], proto[8];
    if (r->kernel || !k || !k->name ||
        !ana_nccl_kernel_algo(k->name, op, sizeof(op), algo, sizeof(algo), proto, sizeof(proto)))
        return;
    if (op[0] && strcmp(op, ana_nccl_op_name(r->api)) != 0)
        return; /* a kernel of another operation of the group */
    r->kernel = kernel;
    memcpy(r->algorithm, algo, sizeof(algo));
    memcpy(r->protocol, proto, sizeof(proto));
}

static int ana_lc_coll_cmp(const void *a, const void *b)
{
    const ana_coll_row *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->api < y->api ? -1 : x->api > y->api;
}

typedef struct ana_lc_pending {
    uint64_t owner;
    size_t row;
} ana_lc_pending;

static int ana_lc_pending_cmp(const void *a, const void *b)
{
    const ana_lc_pending *x = a, *y = b;
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Rows whose first kernel named no algorithm of their operation (a group running several
 * operations): every kernel of their owner calls is looked at. */
static void ana_lc_coll_algos(const ana_trace *t, ana_libcalls *lc, const uint64_t *owner,
                              const size_t *row_of)
{
    const ana_libs *l = &t->libs;
    ana_lc_pending *p = ana_xcalloc(l->n_colls + 1, sizeof(*p));
    size_t n = 0;
    for (size_t i = 0; i < l->n_colls; i++)
        if (owner[i] && row_of[i] != SIZE_MAX && !lc->colls[row_of[i]].kernel)
            p[n++] = (ana_lc_pending){ owner[i], row_of[i] };
    ana_sort(p, n, sizeof(*p), ana_lc_pending_cmp);
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; n && (a = ana_trace_gpu_next(&it));) {
        ana_api_call c;
        size_t lo = 0, hi = n;
        if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL ||
            !ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w), &c))
            continue;
        uint64_t call = ana_trace_wide(t, c.call_w);
        while (lo < hi) { /* first pending entry of this owner */
            size_t mid = lo + (hi - lo) / 2;
            if (p[mid].owner < call)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < n && p[lo].owner == call; lo++)
            ana_lc_coll_algo(t, &lc->colls[p[lo].row], ana_trace_wide(t, a->arg_w));
    }
    ana_trace_gpu_end(&it);
    free(p);
}

/* The collectives' rows; map and v: the GPU time of the owner calls (owner[i], of colls[i]). */
static void ana_lc_colls(const ana_trace *t, const ana_u64map *map, const ana_call_gpu *v,
                         const uint64_t *owner, ana_libcalls *lc)
{
    const ana_libs *l = &t->libs;
    size_t *row_of = ana_xcalloc(l->n_colls + 1, sizeof(size_t));
    ana_u64map idx, bytes, ops;
    size_t cap = 0;
    ana_u64map_init(&idx);
    ana_lc_owner_bytes(l, owner, &bytes, &ops);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->colls, 0);
    for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
        size_t i = (size_t)it.idx - 1;
        row_of[i] = SIZE_MAX;
        if (!ana_nccl_op_name(c->api))
            continue;
        ana_coll_row *r = ana_lc_coll_row(lc, &cap, &idx, t, c);
        const ana_call_gpu *g = ana_lc_get(map, v, owner[i]);
        uint64_t whole = 0, n = 0, ns = 0;
        row_of[i] = (size_t)(r - lc->colls);
        r->count++;
        r->grouped += c->group != 0;
        lc->coll_calls++;
        if (!g) {
            lc->coll_unlinked++;
            continue;
        }
        ana_u64map_get(&bytes, owner[i], &whole);
        ana_u64map_get(&ops, owner[i], &n);
        ns = c->group ? ana_lc_share(g->gpu_ns, c->bytes, whole, n) : g->gpu_ns;
        r->gpu_ns += ns;
        lc->coll_gpu_ns += ns;
        ana_lc_coll_algo(t, r, g->first_kernel);
    }
    ana_spill_iter_end(&it);
    ana_lc_coll_algos(t, lc, owner, row_of);
    free(row_of);
    ana_u64map_free(&idx);
    ana_u64map_free(&bytes);
    ana_u64map_free(&ops);
    ana_sort(lc->colls, lc->n_colls, sizeof(*lc->colls), ana_lc_coll_cmp);
}

static void ana_lc_comms(const ana_trace *t, ana_libcalls *lc)
{
    const ana_libs *l = &t->libs;
    lc->comms = ana_xcalloc(l->n_comms + 1, sizeof(*lc->comms));
    for (size_t i = 0; i < l->n_comms; i++) {
        ana_comm_row *r = &lc->comms[lc->n_comms++];
        r->c = &l->comms[i];
        r->parent = r->c->api == ANA_API_NCCL_COMM_SPLIT
                        ? ana_libs_comm_by_handle(l, r->c->parent) : NULL;
        for (size_t k = 0; k < lc->n_colls; k++)
            if (lc->colls[k].comm_id == r->c->comm_id) {
                r->colls += lc->colls[k].count;
                r->gpu_ns += lc->colls[k].gpu_ns;
            }
    }
}

void ana_libcalls_analyze(const ana_trace *t, ana_libcalls *lc)
{
    ana_u64map map;
    size_t n;
    memset(lc, 0, sizeof(*lc));
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));)
        if (ana_trace_gpu_lane(t, a)->type == ANA_GPU_KERNEL)
            lc->kernel_ns += ana_trace_wide(t, a->dur_w);
    ana_trace_gpu_end(&it);
    ana_lc_gemms(t, lc);
    /* the GPU time of the calls that own collectives, kept by call (the GEMMs' went by
     * shape) */
    uint64_t *owner = ana_lc_group_owner(&t->libs);
    ana_u64map want;
    ana_u64map_init(&want);
    for (size_t i = 0; i < t->libs.n_colls; i++)
        if (owner[i])
            ana_u64map_put(&want, owner[i], 1);
    ana_call_gpu *v = ana_libcalls_link(t, &want, &map, &n);
    ana_u64map_free(&want);
    ana_lc_colls(t, &map, v, owner, lc);
    ana_lc_comms(t, lc);
    free(owner);
    free(v);
    ana_u64map_free(&map);
}

void ana_libcalls_free(ana_libcalls *lc)
{
    free(lc->gemms);
    free(lc->colls);
    free(lc->comms);
    memset(lc, 0, sizeof(*lc));
}

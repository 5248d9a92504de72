/* nvtx.c — see nvtx.h.
 *
 * The GPU time of a range is a difference of prefix sums: the API calls whose kernels
 * have GPU time, sorted by (thread, time) for push/pop ranges and by time for start/end
 * ranges, each with the running sum of that time; a range is two binary searches. */
#include "nvtx.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Calls with kernel time: (tid, time) and the prefix sums of their GPU time. */
typedef struct ana_nv_index {
    uint64_t *tid, *time, *pre; /* pre[i] = sum of the first i */
    size_t n;
} ana_nv_index;

typedef struct ana_nv_call {
    uint64_t tid, time, gpu_ns;
} ana_nv_call;

static int ana_nv_call_cmp(const void *a, const void *b)
{
    const ana_nv_call *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->time < y->time ? -1 : x->time > y->time;
}

/* GPU kernel time per API call (index into t->calls). */
static uint64_t *ana_nv_call_gpu(const ana_trace *t)
{
    uint64_t *gpu = ana_xcalloc(t->n_calls + 1, sizeof(uint64_t));
    for (size_t i = 0; i < t->n_gpu; i++) {
        const ana_api_call *c;
        if (t->gpu[i].type == ANA_GPU_KERNEL && (c = ana_trace_call_by_corr(t, t->gpu[i].corr)))
            gpu[c - t->calls] += t->gpu[i].dur_ns;
    }
    return gpu;
}

/* per_thread: keys (tid, time); otherwise (0, time). */
static void ana_nv_index_build(const ana_trace *t, const uint64_t *gpu, int per_thread,
                               ana_nv_index *x)
{
    ana_nv_call *v = ana_xcalloc(t->n_calls + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < t->n_calls; i++)
        if (gpu[i])
            v[n++] = (ana_nv_call){ per_thread ? t->calls[i].tid : 0, t->calls[i].time_ns, gpu[i] };
    qsort(v, n, sizeof(*v), ana_nv_call_cmp);
    x->n = n;
    x->tid = ana_xcalloc(n + 1, sizeof(uint64_t));
    x->time = ana_xcalloc(n + 1, sizeof(uint64_t));
    x->pre = ana_xcalloc(n + 1, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        x->tid[i] = v[i].tid;
        x->time[i] = v[i].time;
        x->pre[i + 1] = x->pre[i] + v[i].gpu_ns;
    }
    free(v);
}

static void ana_nv_index_free(ana_nv_index *x)
{
    free(x->tid);
    free(x->time);
    free(x->pre);
}

/* First index whose (tid, time) is not below (tid, time); after: not at or below. */
static size_t ana_nv_bound(const ana_nv_index *x, uint64_t tid, uint64_t time, int after)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int below = x->tid[mid] < tid ||
                    (x->tid[mid] == tid && (after ? x->time[mid] <= time : x->time[mid] < time));
        if (below)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t ana_nv_gpu(const ana_nv_index *x, uint64_t tid, uint64_t t0, uint64_t t1)
{
    return x->pre[ana_nv_bound(x, tid, t1, 1)] - x->pre[ana_nv_bound(x, tid, t0, 0)];
}

typedef struct ana_nv_rows {
    ana_range_row *v;
    size_t n, cap;
    ana_u64map idx;
} ana_nv_rows;

static ana_range_row *ana_nv_row(ana_nv_rows *r, uint8_t kind, uint16_t domain, uint32_t name,
                                 uint32_t depth)
{
    uint64_t d = depth < 0x3fff ? depth : 0x3fff, k;
    uint64_t key = (uint64_t)kind << 62 | d << 48 | (uint64_t)domain << 32 | name;
    if (!ana_u64map_get(&r->idx, key, &k)) {
        ANA_GROW(r->v, r->cap, r->n + 1);
        r->v[r->n] = (ana_range_row){ .kind = kind, .domain = domain, .name = name,
                                      .depth = (uint32_t)d };
        k = r->n++;
        ana_u64map_put(&r->idx, key, k);
    }
    return &r->v[k];
}

/* An open push or start. */
typedef struct ana_nv_open {
    uint64_t time_ns, tid;
    uint32_t name;
    uint16_t domain;
} ana_nv_open;

typedef struct ana_nv_stack {
    ana_nv_open *v;
    size_t n, cap;
} ana_nv_stack;

typedef struct ana_nv_state {
    ana_nv_stack *stacks; /* one per (thread, domain) */
    size_t n_stacks, cap_stacks;
    ana_u64map stack_idx;
    ana_nv_open *starts; /* open start/end ranges; slot reuse is not needed: few */
    size_t n_starts, cap_starts;
    ana_u64map start_idx; /* id -> index into starts */
    ana_nv_index by_thread, by_time;
} ana_nv_state;

static ana_nv_stack *ana_nv_stack_of(ana_nv_state *st, uint64_t tid, uint16_t domain)
{
    uint64_t key = tid << 16 | domain, k;
    if (!ana_u64map_get(&st->stack_idx, key, &k)) {
        ANA_GROW(st->stacks, st->cap_stacks, st->n_stacks + 1);
        st->stacks[st->n_stacks] = (ana_nv_stack){ 0 };
        k = st->n_stacks++;
        ana_u64map_put(&st->stack_idx, key, k);
    }
    return &st->stacks[k];
}

static void ana_nv_push_pop(ana_nv_state *st, ana_nv_rows *rows, ana_nvtx *out,
                            const ana_range_ev *e)
{
    ana_nv_stack *s = ana_nv_stack_of(st, e->tid, e->domain);
    if (e->op == ANA_RANGE_PUSH) {
        ANA_GROW(s->v, s->cap, s->n + 1);
        s->v[s->n++] = (ana_nv_open){ e->time_ns, e->tid, e->name, e->domain };
        return;
    }
    if (!s->n) {
        out->unmatched_pops++;
        return;
    }
    const ana_nv_open *o = &s->v[--s->n];
    ana_range_row *r = ana_nv_row(rows, ANA_RANGE_PUSH, o->domain, o->name, (uint32_t)s->n);
    r->count++;
    r->host_ns += e->time_ns - o->time_ns;
    r->gpu_ns += ana_nv_gpu(&st->by_thread, o->tid, o->time_ns, e->time_ns);
}

static void ana_nv_start_end(ana_nv_state *st, ana_nv_rows *rows, ana_nvtx *out,
                             const ana_range_ev *e)
{
    uint64_t k;
    if (e->op == ANA_RANGE_START) {
        ANA_GROW(st->starts, st->cap_starts, st->n_starts + 1);
        st->starts[st->n_starts] = (ana_nv_open){ e->time_ns, e->tid, e->name, e->domain };
        ana_u64map_put(&st->start_idx, e->id, st->n_starts++);
        return;
    }
    if (!ana_u64map_del(&st->start_idx, e->id, &k)) {
        out->unmatched_ends++;
        return;
    }
    const ana_nv_open *o = &st->starts[k];
    ana_range_row *r = ana_nv_row(rows, ANA_RANGE_START, o->domain, o->name, 0);
    r->count++;
    r->host_ns += e->time_ns - o->time_ns;
    r->gpu_ns += ana_nv_gpu(&st->by_time, 0, o->time_ns, e->time_ns);
}

static int ana_nv_row_cmp(const void *a, const void *b)
{
    const ana_range_row *x = a, *y = b;
    if (x->host_ns != y->host_ns)
        return x->host_ns > y->host_ns ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static void ana_nv_state_free(ana_nv_state *st)
{
    for (size_t i = 0; i < st->n_stacks; i++)
        free(st->stacks[i].v);
    free(st->stacks);
    free(st->starts);
    ana_u64map_free(&st->stack_idx);
    ana_u64map_free(&st->start_idx);
    ana_nv_index_free(&st->by_thread);
    ana_nv_index_free(&st->by_time);
}

void ana_nvtx_analyze(const ana_trace *t, ana_nvtx *out)
{
    const ana_libs *l = &t->libs;
    ana_nv_state st = { 0 };
    ana_nv_rows rows = { 0 }, marks = { 0 };
    memset(out, 0, sizeof(*out));
    ana_u64map_init(&st.stack_idx);
    ana_u64map_init(&st.start_idx);
    ana_u64map_init(&rows.idx);
    ana_u64map_init(&marks.idx);
    uint64_t *gpu = ana_nv_call_gpu(t);
    ana_nv_index_build(t, gpu, 1, &st.by_thread);
    ana_nv_index_build(t, gpu, 0, &st.by_time);
    free(gpu);
    for (size_t i = 0; i < l->n_ranges; i++) { /* sorted by time, then file order */
        const ana_range_ev *e = &l->ranges[i];
        if (e->op == ANA_RANGE_PUSH || e->op == ANA_RANGE_POP)
            ana_nv_push_pop(&st, &rows, out, e);
        else if (e->op == ANA_RANGE_START || e->op == ANA_RANGE_END)
            ana_nv_start_end(&st, &rows, out, e);
        else if (e->op == ANA_RANGE_MARK)
            ana_nv_row(&marks, ANA_RANGE_MARK, e->domain, e->name, 0)->count++;
    }
    for (size_t i = 0; i < st.n_stacks; i++)
        out->unclosed_pushes += st.stacks[i].n;
    out->unclosed_starts = st.start_idx.n;
    ana_nv_state_free(&st);
    qsort(rows.v, rows.n, sizeof(*rows.v), ana_nv_row_cmp);
    qsort(marks.v, marks.n, sizeof(*marks.v), ana_nv_row_cmp);
    out->rows = rows.v;
    out->n_rows = rows.n;
    out->marks = marks.v;
    out->n_marks = marks.n;
    ana_u64map_free(&rows.idx);
    ana_u64map_free(&marks.idx);
}

void ana_nvtx_free(ana_nvtx *n)
{
    free(n->rows);
    free(n->marks);
    memset(n, 0, sizeof(*n));
}

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
    ana_sort(v, n, sizeof(*v), ana_nv_call_cmp);
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

void ana_nvtx_pair(const ana_trace *t, ana_range_closed closed, void *arg,
                   ana_range_unmatched *unmatched)
{
    const ana_libs *l = &t->libs;
    ana_nv_stack *stacks = NULL, starts = { 0 }; /* stacks: one per (thread, domain) */
    size_t n_stacks = 0, cap_stacks = 0;
    ana_u64map stack_idx, start_idx; /* start_idx: id -> index into starts */
    ana_range_unmatched u = { 0 };
    uint64_t k;
    ana_u64map_init(&stack_idx);
    ana_u64map_init(&start_idx);
    for (size_t i = 0; i < l->n_ranges; i++) { /* sorted by time, then file order */
        const ana_range_ev *e = &l->ranges[i];
        ana_nv_open o = { e->time_ns, e->tid, e->name, e->domain };
        const ana_nv_open *c;
        if (e->op == ANA_RANGE_PUSH || e->op == ANA_RANGE_POP) {
            uint64_t key = e->tid << 16 | e->domain;
            if (!ana_u64map_get(&stack_idx, key, &k)) {
                ANA_GROW(stacks, cap_stacks, n_stacks + 1);
                stacks[n_stacks] = (ana_nv_stack){ 0 };
                ana_u64map_put(&stack_idx, key, k = n_stacks++);
            }
            ana_nv_stack *s = &stacks[k];
            if (e->op == ANA_RANGE_PUSH) {
                ANA_GROW(s->v, s->cap, s->n + 1);
                s->v[s->n++] = o;
                continue;
            }
            if (!s->n) {
                u.pops++;
                continue;
            }
            c = &s->v[--s->n];
            closed(arg, &(ana_range_span){ c->time_ns, e->time_ns, c->tid, c->name,
                                           (uint32_t)s->n, c->domain, ANA_RANGE_PUSH });
        } else if (e->op == ANA_RANGE_START) {
            /* slots are not reused: start/end ranges are few */
            ANA_GROW(starts.v, starts.cap, starts.n + 1);
            starts.v[starts.n] = o;
            ana_u64map_put(&start_idx, e->id, starts.n++);
        } else if (e->op == ANA_RANGE_END) {
            if (!ana_u64map_del(&start_idx, e->id, &k)) {
                u.ends++;
                continue;
            }
            c = &starts.v[k];
            closed(arg, &(ana_range_span){ c->time_ns, e->time_ns, c->tid, c->name, 0,
                                           c->domain, ANA_RANGE_START });
        }
    }
    for (size_t i = 0; i < n_stacks; i++) {
        u.pushes += stacks[i].n;
        free(stacks[i].v);
    }
    u.starts = start_idx.n;
    free(stacks);
    free(starts.v);
    ana_u64map_free(&stack_idx);
    ana_u64map_free(&start_idx);
    if (unmatched)
        *unmatched = u;
}

/* What the rows of closed ranges are computed from. */
typedef struct ana_nv_state {
    ana_nv_rows rows;
    ana_nv_index by_thread, by_time;
} ana_nv_state;

static void ana_nv_closed(void *arg, const ana_range_span *s)
{
    ana_nv_state *st = arg;
    ana_range_row *r = ana_nv_row(&st->rows, s->kind, s->domain, s->name, s->depth);
    r->count++;
    r->host_ns += s->t1 - s->t0;
    r->gpu_ns += s->kind == ANA_RANGE_PUSH ? ana_nv_gpu(&st->by_thread, s->tid, s->t0, s->t1)
                                           : ana_nv_gpu(&st->by_time, 0, s->t0, s->t1);
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

void ana_nvtx_analyze(const ana_trace *t, ana_nvtx *out)
{
    const ana_libs *l = &t->libs;
    ana_nv_state st = { 0 };
    ana_nv_rows marks = { 0 };
    ana_range_unmatched u;
    memset(out, 0, sizeof(*out));
    ana_u64map_init(&st.rows.idx);
    ana_u64map_init(&marks.idx);
    uint64_t *gpu = ana_nv_call_gpu(t);
    ana_nv_index_build(t, gpu, 1, &st.by_thread);
    ana_nv_index_build(t, gpu, 0, &st.by_time);
    free(gpu);
    ana_nvtx_pair(t, ana_nv_closed, &st, &u);
    for (size_t i = 0; i < l->n_ranges; i++)
        if (l->ranges[i].op == ANA_RANGE_MARK)
            ana_nv_row(&marks, ANA_RANGE_MARK, l->ranges[i].domain, l->ranges[i].name, 0)->count++;
    out->unmatched_pops = u.pops;
    out->unclosed_pushes = u.pushes;
    out->unmatched_ends = u.ends;
    out->unclosed_starts = u.starts;
    ana_nv_index_free(&st.by_thread);
    ana_nv_index_free(&st.by_time);
    ana_sort(st.rows.v, st.rows.n, sizeof(*st.rows.v), ana_nv_row_cmp);
    ana_sort(marks.v, marks.n, sizeof(*marks.v), ana_nv_row_cmp);
    out->rows = st.rows.v;
    out->n_rows = st.rows.n;
    out->marks = marks.v;
    out->n_marks = marks.n;
    ana_u64map_free(&st.rows.idx);
    ana_u64map_free(&marks.idx);
}

void ana_nvtx_free(ana_nvtx *n)
{
    free(n->rows);
    free(n->marks);
    memset(n, 0, sizeof(*n));
}

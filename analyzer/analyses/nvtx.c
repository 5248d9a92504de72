/* nvtx.c — see nvtx.h.
 *
 * The GPU time of a range is a difference of prefix sums: the API calls whose kernels
 * have GPU time, sorted by (thread, time) for push/pop ranges and by time for start/end
 * ranges, each with the running sum of that time; a range is two binary searches. The
 * indexes exist only while the ranges are paired, and only for a trace with ranges.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/nvtx.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* Calls with kernel time, as indices into t->calls (32-bit, as trace_index.c's corr
 * index) in key order: (tid, time) per thread, (0, time) otherwise; and the prefix sums
 * of their GPU time. 12 bytes per such call; the per-thread index of a trace whose
 * kernels were all launched by one thread shares the by-time one's arrays (owns = 0). */
typedef struct ana_nv_index {
    const ana_trace *t;
    uint32_t *call;
    uint64_t *pre; /* pre[i] = sum of the first i */
    size_t n;
    int per_thread, owns;
} ana_nv_index;

/* The thread of call i. */
static uint64_t ana_nv_tid(const ana_trace *t, size_t i)
{
    return ana_trace_wide(t, ana_trace_call_site_at(t, i)->tid_w);
}

/* The call (index into t->calls) of GPU activity a when it is a kernel that took time, with
 * that time in *dur; SIZE_MAX otherwise. */
static size_t ana_nv_kernel_call(const ana_trace *t, const ana_gpu_act *a, uint64_t *dur)
{
    *dur = ana_trace_wide(t, a->dur_w);
    if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL || !*dur)
        return SIZE_MAX;
    return ana_trace_call_index(t, ana_trace_wide(t, a->corr_w));
}

/* The by-time index: t->calls is already in time order. The calls that ran GPU time are
 * marked a bit each first, so that only they take room (12 bytes each), not every call. */
static void ana_nv_index_by_time(const ana_trace *t, ana_nv_index *x)
{
    size_t nw = t->n_calls / 64 + 1, n = 0, k;
    uint64_t *ran = ana_xcalloc(nw, sizeof(uint64_t)), dur;
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));)
        if ((k = ana_nv_kernel_call(t, a, &dur)) != SIZE_MAX)
            ran[k / 64] |= 1ull << (k % 64);
    ana_trace_gpu_end(&it);
    uint64_t *rank = ana_xmalloc(nw * sizeof(uint64_t)); /* marked calls before each word */
    for (size_t w = 0; w < nw; w++) {
        rank[w] = n;
        n += (size_t)__builtin_popcountll(ran[w]);
    }
    *x = (ana_nv_index){ .t = t, .n = n, .owns = 1 };
    x->call = ana_xcalloc(n + 1, sizeof(uint32_t));
    x->pre = ana_xcalloc(n + 1, sizeof(uint64_t));
    k = 0;
    for (size_t w = 0; w < nw; w++)
        for (uint64_t b = ran[w]; b; b &= b - 1)
            x->call[k++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
    ana_trace_gpu_begin(t, &it); /* each call's GPU time, then the running sums */
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));)
        if ((k = ana_nv_kernel_call(t, a, &dur)) != SIZE_MAX) {
            uint64_t below = ran[k / 64] & ((1ull << (k % 64)) - 1);
            x->pre[rank[k / 64] + (size_t)__builtin_popcountll(below) + 1] += dur;
        }
    ana_trace_gpu_end(&it);
    for (size_t j = 0; j < n; j++)
        x->pre[j + 1] += x->pre[j];
    free(rank);
    free(ran);
}

static int ana_nv_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The per-thread index from the by-time one: a stable bucket sort by thread keeps each
 * thread's calls in time order. */
static void ana_nv_index_by_thread(const ana_nv_index *bt, ana_nv_index *x)
{
    const ana_trace *t = bt->t;
    uint64_t *tids = NULL, k;
    size_t n_tids = 0, cap_tids = 0;
    ana_u64map at; /* tid -> bucket, then -> next slot of the bucket */
    ana_u64map_init(&at);
    for (size_t i = 0; i < bt->n; i++) {
        uint64_t tid = ana_nv_tid(t, bt->call[i]);
        if (!ana_u64map_get(&at, tid, &k)) {
            ANA_GROW(tids, cap_tids, n_tids + 1);
            tids[n_tids++] = tid;
            ana_u64map_put(&at, tid, 0);
        }
    }
    *x = *bt;
    x->per_thread = 1;
    x->owns = n_tids > 1;
    if (x->owns) {
        uint64_t *count = ana_xcalloc(n_tids, sizeof(uint64_t));
        ana_sort(tids, n_tids, sizeof(*tids), ana_nv_u64_cmp);
        for (size_t i = 0; i < n_tids; i++)
            ana_u64map_put(&at, tids[i], i);
        for (size_t i = 0; i < bt->n; i++) {
            ana_u64map_get(&at, ana_nv_tid(t, bt->call[i]), &k);
            count[k]++;
        }
        for (size_t i = 0, off = 0; i < n_tids; i++) { /* count -> first slot */
            uint64_t c = count[i];
            count[i] = off;
            off += c;
        }
        x->call = ana_xcalloc(bt->n + 1, sizeof(uint32_t));
        x->pre = ana_xcalloc(bt->n + 1, sizeof(uint64_t));
        for (size_t i = 0; i < bt->n; i++) { /* each call's GPU time, then the running sums */
            ana_u64map_get(&at, ana_nv_tid(t, bt->call[i]), &k);
            x->call[count[k]] = bt->call[i];
            x->pre[++count[k]] = bt->pre[i + 1] - bt->pre[i];
        }
        for (size_t i = 0; i < bt->n; i++)
            x->pre[i + 1] += x->pre[i];
        free(count);
    }
    free(tids);
    ana_u64map_free(&at);
}

static void ana_nv_index_free(ana_nv_index *x)
{
    if (x->owns) {
        free(x->call);
        free(x->pre);
    }
    memset(x, 0, sizeof(*x));
}

/* First index whose (tid, time) is not below (tid, time); after: not at or below. */
static size_t ana_nv_bound(const ana_nv_index *x, uint64_t tid, uint64_t time, int after)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        ana_api_call c = ana_trace_call(x->t, x->call[mid]);
        uint64_t ctid = x->per_thread ? ana_nv_tid(x->t, x->call[mid]) : 0;
        int below = ctid < tid || (ctid == tid && (after ? c.time_ns <= time : c.time_ns < time));
        if (below)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t ana_nv_gpu(const ana_nv_index *x, uint64_t tid, uint64_t t0, uint64_t t1)
{
    if (!x->n)
        return 0;
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
    if (l->n_ranges) { /* only ranges use the indexes */
        ana_nv_index_by_time(t, &st.by_time);
        ana_nv_index_by_thread(&st.by_time, &st.by_thread);
    }
    ana_nvtx_pair(t, ana_nv_closed, &st, &u);
    ana_nv_index_free(&st.by_thread);
    ana_nv_index_free(&st.by_time);
    for (size_t i = 0; i < l->n_ranges; i++)
        if (l->ranges[i].op == ANA_RANGE_MARK)
            ana_nv_row(&marks, ANA_RANGE_MARK, l->ranges[i].domain, l->ranges[i].name, 0)->count++;
    out->unmatched_pops = u.pops;
    out->unclosed_pushes = u.pushes;
    out->unmatched_ends = u.ends;
    out->unclosed_starts = u.starts;
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

/* nvtx.c — see nvtx.h.
 *
 * The GPU time of a range is a difference of prefix sums, taken offline by a sweep: each
 * closed range asks two queries, the GPU time of the kernels launched before its push
 * (start) and at or before its pop (end), and adds the second less the first. The kernels
 * (one item each: its call's thread and time, and its GPU time) are sorted by (thread,
 * time) for push/pop ranges and by time for start/end ranges, in an ana_sorter (runs of
 * ANATOMIST_SPILL_NVTX items spilled to a temporary file past that), and read back in
 * order beside the queries sorted the same way, with one running sum. So the memory is
 * the queries (two per range) and one run of items, whatever the number of calls; each
 * sweep exists only for a trace with ranges of its kind.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/nvtx.h"

#include "model/sorter.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* A kernel that took GPU time: its call's thread (the *_w form, 0 for the by-time sweep)
 * and time, and its GPU time (*_w). 16 bytes. */
typedef struct ana_nv_item {
    uint64_t time_ns;
    uint32_t tid_w, dur_w;
} ana_nv_item;

/* A range's question: the GPU time of the items below (tid, time), or at or below (after);
 * the answer is added to row `row` (after), or taken from it. */
typedef struct ana_nv_query {
    uint64_t tid, time_ns;
    uint32_t row, after;
} ana_nv_query;

/* Items in memory at most (64 MiB): a sweep past it sorts in runs in a temporary file. */
#define ANA_NV_RUN_DEFAULT (1u << 22)

/* The one place a GPU activity becomes its call's (thread, time): 1 with *it filled when a
 * is a kernel that took time and its correlation id finds its call, else 0. */
static int ana_nv_kernel(const ana_trace *t, const ana_gpu_act *a, ana_nv_item *it)
{
    ana_api_call c;
    if (!a->dur_w || ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL ||
        !ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w), &c))
        return 0;
    *it = (ana_nv_item){ c.time_ns, ana_trace_call_site(t, &c)->tid_w, a->dur_w };
    return 1;
}

/* The order of the items: (thread, time), the thread by value (the comparator reads the
 * trace from ana_sorter_ctx). */
static int ana_nv_item_cmp(const void *a, const void *b)
{
    const ana_nv_item *x = a, *y = b;
    if (x->tid_w != y->tid_w) {
        const ana_trace *t = ana_sorter_ctx;
        uint64_t p = ana_trace_wide(t, x->tid_w), q = ana_trace_wide(t, y->tid_w);
        return p < q ? -1 : 1;
    }
    return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int ana_nv_query_cmp(const void *a, const void *b)
{
    const ana_nv_query *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return (int)x->after - (int)y->after;
}

typedef struct ana_nv_queries {
    ana_nv_query *v;
    size_t n, cap;
} ana_nv_queries;

/* A sweep under way: the queries (sorted) not answered yet from `next`, and the GPU time
 * of the items read so far. */
typedef struct ana_nv_sweep {
    const ana_trace *t;
    const ana_nv_queries *q;
    size_t next;
    uint64_t sum;
    ana_range_row *rows;
} ana_nv_sweep;

/* The queries that an item of (tid, time) is not counted in are answered before it. */
static void ana_nv_answer(ana_nv_sweep *w, const uint64_t *tid, uint64_t time_ns)
{
    for (; w->next < w->q->n; w->next++) {
        const ana_nv_query *q = &w->q->v[w->next];
        if (tid && (*tid < q->tid || (*tid == q->tid &&
                                      (q->after ? time_ns <= q->time_ns : time_ns < q->time_ns))))
            return;
        w->rows[q->row].gpu_ns += q->after ? w->sum : -w->sum; /* uint64: mod 2^64 */
    }
}

static void ana_nv_emit(void *arg, const void *item)
{
    ana_nv_sweep *w = arg;
    const ana_nv_item *it = item;
    uint64_t tid = ana_trace_wide(w->t, it->tid_w);
    ana_nv_answer(w, &tid, it->time_ns);
    w->sum += ana_trace_wide(w->t, it->dur_w);
}

/* Answers the queries q (sorted here) into rows: per_thread, the items keyed (thread,
 * time), else (0, time). */
static void ana_nv_sweep_run(const ana_trace *t, ana_nv_queries *q, int per_thread,
                             ana_range_row *rows)
{
    ana_sorter s;
    ana_spill out;
    ana_gpu_iter gi;
    ana_nv_item it;
    ana_nv_sweep w = { t, q, 0, 0, rows };
    size_t run = ana_sorter_setting("ANATOMIST_SPILL_NVTX", ANA_NV_RUN_DEFAULT, sizeof(it));
    ana_sort(q->v, q->n, sizeof(*q->v), ana_nv_query_cmp);
    ana_sorter_init(&s, sizeof(it), run, 0, ana_nv_item_cmp, t, "kernels for NVTX ranges");
    ana_trace_gpu_begin(t, &gi);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&gi));)
        if (ana_nv_kernel(t, a, &it)) {
            if (!per_thread)
                it.tid_w = 0;
            *(ana_nv_item *)ana_sorter_slot(&s) = it;
        }
    ana_trace_gpu_end(&gi);
    ana_spill_init(&out, sizeof(it), "kernels for NVTX ranges");
    ana_sorter_finish(&s, &out, ana_nv_emit, &w);
    ana_spill_free(&out);
    ana_nv_answer(&w, NULL, 0); /* the rest: every item is below them */
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
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->ranges, 0);
    for (const ana_range_ev *e; (e = ana_spill_iter_next(&it));) { /* by time, file order */
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
    ana_spill_iter_end(&it);
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

/* What the rows of closed ranges are computed from: the queries of push/pop ranges (keyed
 * by thread) and of start/end ranges (keyed 0). */
typedef struct ana_nv_state {
    ana_nv_rows rows;
    ana_nv_queries by_thread, by_time;
} ana_nv_state;

static void ana_nv_closed(void *arg, const ana_range_span *s)
{
    ana_nv_state *st = arg;
    ana_range_row *r = ana_nv_row(&st->rows, s->kind, s->domain, s->name, s->depth);
    ana_nv_queries *q = s->kind == ANA_RANGE_PUSH ? &st->by_thread : &st->by_time;
    uint64_t tid = s->kind == ANA_RANGE_PUSH ? s->tid : 0;
    uint32_t row = (uint32_t)(r - st->rows.v);
    r->count++;
    r->host_ns += s->t1 - s->t0;
    ANA_GROW(q->v, q->cap, q->n + 2);
    q->v[q->n++] = (ana_nv_query){ tid, s->t0, row, 0 };
    q->v[q->n++] = (ana_nv_query){ tid, s->t1, row, 1 };
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
    ana_nvtx_pair(t, ana_nv_closed, &st, &u);
    if (st.by_thread.n) /* a sweep only for the ranges of its kind */
        ana_nv_sweep_run(t, &st.by_thread, 1, st.rows.v);
    if (st.by_time.n)
        ana_nv_sweep_run(t, &st.by_time, 0, st.rows.v);
    free(st.by_thread.v);
    free(st.by_time.v);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->ranges, 0);
    for (const ana_range_ev *e; (e = ana_spill_iter_next(&it));)
        if (e->op == ANA_RANGE_MARK)
            ana_nv_row(&marks, ANA_RANGE_MARK, e->domain, e->name, 0)->count++;
    ana_spill_iter_end(&it);
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

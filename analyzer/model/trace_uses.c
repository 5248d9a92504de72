/* trace_uses.c — which device pointers each successful call used (trace.h ana_ptr_use):
 * kernel parameters, GEMM operands, copies, sets, collectives, workspaces, and the
 * pointer tables a kernel reads (PTR_TABLE). The memory anatomy reads them
 * (analyses/memcat.h). Part of model/: called by trace_records.c and trace.c only. */
#include "model/trace.h"
#include "model/trace_int.h"
#include "model/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* By time; ana_sort_stable keeps the order of addition among equal times. */
static int ana_ptr_use_cmp(const void *a, const void *b)
{
    const ana_ptr_use *x = a, *y = b;
    return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* 256 MiB of uses in memory at most: below it, spilling would cost more CPU (about 40 %
 * more for `report` at 1e7 records, docs/overhead.md "Spilling") than the memory is worth */
#define ANA_USES_RUN_DEFAULT (1u << 24)

void ana_trace_uses_init(ana_trace *t)
{
    ana_spill_init(&t->use_spill, sizeof(ana_ptr_use), "pointer uses");
    ana_spill_init(&t->use_runs, sizeof(ana_ptr_use), "pointer uses");
    t->uses_run = ANA_USES_RUN_DEFAULT;
    const char *v = getenv("ANATOMIST_SPILL_USES");
    if (!v)
        return;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v == '-' || n > SIZE_MAX / sizeof(ana_ptr_use)) {
        static int said;
        if (!said++)
            fprintf(stderr, "anatomist: ignoring ANATOMIST_SPILL_USES=%s (expected a number of "
                            "uses, 0 for never); using %u\n", v, ANA_USES_RUN_DEFAULT);
        return;
    }
    t->uses_run = n ? (size_t)n : SIZE_MAX;
    /* a small setting (tests) reads the file in as small blocks, so that a step's uses
     * span several */
    if (n && n < ANA_SPILL_BLOCK / sizeof(ana_ptr_use))
        t->use_spill.block = t->use_runs.block = (size_t)n * sizeof(ana_ptr_use);
}

/* The uses in memory, sorted, become the next run of use_runs. */
static void ana_trace_use_run(ana_trace *t)
{
    ana_sort_stable(t->uses, t->n_run_uses, sizeof(*t->uses), ana_ptr_use_cmp);
    if (!t->n_run_uses)
        return;
    if (t->n_runs && t->uses[0].time_ns < t->runs_last_ns)
        t->runs_unordered = 1;
    t->runs_last_ns = t->uses[t->n_run_uses - 1].time_ns;
    ANA_GROW(t->run_starts, t->cap_runs, t->n_runs + 1);
    t->run_starts[t->n_runs++] = t->use_runs.n;
    ana_spill_to_file(&t->use_runs);
    ana_spill_push(&t->use_runs, t->uses, t->n_run_uses);
    t->n_run_uses = 0;
}

static void ana_trace_use(ana_trace *t, const ana_record *r, uint8_t kind, uint64_t ptr, uint64_t arg)
{
    if ((t->flags & ANA_LOAD_SUMMARY) || ptr == 0)
        return;
    if (t->n_run_uses >= t->uses_run)
        ana_trace_use_run(t);
    ANA_GROW(t->uses, t->cap_uses, t->n_run_uses + 1);
    t->uses[t->n_run_uses] = (ana_ptr_use){ .time_ns = r->time_ns,
                                            .ptr_w = ana_trace_use_ptr_w(t, ptr),
                                            .kind_arg = ana_trace_use_pack(t, kind, arg) };
    t->n_run_uses++;
    t->n_uses++;
}

/* A PTR_TABLE (the device pointers a host-to-device copy's bytes held) starts a table at
 * dst; a later write to the start of a table (a copy — the MEMCPY before its own PTR_TABLE
 * too —, a set) ends it. */
static void ana_trace_table(ana_trace *t, const ana_record *r, uint64_t dst, uint64_t bytes,
                            const ana_frames *ptrs)
{
    if (t->flags & ANA_LOAD_SUMMARY)
        return;
    size_t n = ptrs ? ptrs->n : 0;
    uint64_t v;
    if (!n && !ana_u64map_get(&t->table_dsts, dst, &v))
        return; /* no table ever started there */
    if (n)
        ana_u64map_put(&t->table_dsts, dst, 1);
    ANA_GROW(t->tables, t->cap_tables, t->n_tables + 1);
    ANA_GROW(t->table_ptrs, t->cap_table_ptrs, t->n_table_ptrs + n + 1);
    t->tables[t->n_tables] = (ana_ptr_table){ r->time_ns, dst, bytes, t->n_table_ptrs, n, t->n_tables };
    t->n_tables++;
    for (size_t i = 0; i < n; i++)
        t->table_ptrs[t->n_table_ptrs++] = ptrs->ip[i];
}

static int ana_table_cmp(const void *a, const void *b)
{
    const ana_ptr_table *x = a, *y = b; /* a copy's own end of a table, then its new table */
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Writes the uses, which come in time order, to use_spill, each kernel use followed — after
 * the other uses of its time — by the pointers of the tables it reads: a kernel use that
 * falls inside a table in force at its time (the latest write at that table's address
 * before it) reads the table's pointers, which become uses of that launch (same time,
 * same kernel). */
#define ANA_UO_BATCH 4096
typedef struct ana_use_out {
    ana_trace *t;
    ana_ptr_use *pend; /* the table pointers read at pend_time, not yet written */
    size_t n_pend, cap_pend;
    uint64_t pend_time;
    size_t *live, n_live, next; /* tables in force (indices), the next table by time */
    uint64_t last_time, last_kernel;
    size_t nb;
    ana_ptr_use batch[ANA_UO_BATCH];
} ana_use_out;

static void ana_uo_put(ana_use_out *o, const ana_ptr_use *u)
{
    o->batch[o->nb++] = *u;
    if (o->nb == ANA_UO_BATCH) {
        ana_spill_push(&o->t->use_spill, o->batch, o->nb);
        o->nb = 0;
    }
}

static void ana_uo_init(ana_use_out *o, ana_trace *t)
{
    memset(o, 0, offsetof(ana_use_out, batch));
    o->t = t;
    o->last_time = UINT64_MAX;
    ana_sort(t->tables, t->n_tables, sizeof(*t->tables), ana_table_cmp);
    o->live = ana_xcalloc(t->n_tables + 1, sizeof(size_t));
}

static void ana_uo_add(ana_use_out *o, const ana_ptr_use *u)
{
    ana_trace *t = o->t;
    if (o->n_pend && u->time_ns != o->pend_time) {
        for (size_t i = 0; i < o->n_pend; i++)
            ana_uo_put(o, &o->pend[i]);
        o->n_pend = 0;
    }
    ana_uo_put(o, u);
    for (; o->next < t->n_tables && t->tables[o->next].time_ns <= u->time_ns; o->next++) {
        size_t k = 0; /* the new write replaces a table at the same address */
        while (k < o->n_live && t->tables[o->live[k]].dst != t->tables[o->next].dst)
            k++;
        if (k == o->n_live)
            o->n_live++;
        o->live[k] = o->next;
    }
    if (!o->n_live || ana_trace_use_kind(u) != ANA_USE_KERNEL)
        return;
    uint64_t ptr = ana_trace_use_ptr(t, u);
    for (size_t k = 0; k < o->n_live; k++) {
        const ana_ptr_table *tb = &t->tables[o->live[k]];
        if (!tb->n || ptr < tb->dst || ptr - tb->dst >= tb->bytes)
            continue;
        uint64_t kernel = ana_trace_use_arg(t, u);
        if (u->time_ns != o->last_time || kernel != o->last_kernel)
            t->table_launches++;
        o->last_time = u->time_ns, o->last_kernel = kernel;
        ANA_GROW(o->pend, o->cap_pend, o->n_pend + tb->n);
        for (size_t j = 0; j < tb->n; j++)
            o->pend[o->n_pend++] = (ana_ptr_use){
                .time_ns = u->time_ns, .ptr_w = ana_trace_use_ptr_w(t, t->table_ptrs[tb->first + j]),
                .kind_arg = u->kind_arg };
        o->pend_time = u->time_ns;
    }
}

static void ana_uo_end(ana_use_out *o)
{
    for (size_t i = 0; i < o->n_pend; i++)
        ana_uo_put(o, &o->pend[i]);
    ana_spill_push(&o->t->use_spill, o->batch, o->nb);
    ana_spill_seal(&o->t->use_spill);
    o->t->n_uses = o->t->use_spill.n;
    free(o->pend);
    free(o->live);
}

/* The runs of use_runs, merged by time (equal times: the earlier run first, as the uses
 * were added) into o. Each run is read through a cursor of its own, with blocks small
 * enough that all of them together hold about 64 MiB. */
static void ana_trace_uses_merge(ana_trace *t, ana_use_out *o)
{
    size_t nr = t->n_runs, *heap = ana_xcalloc(nr + 1, sizeof(size_t)), nh = 0;
    ana_spill_cur *c = ana_xcalloc(nr + 1, sizeof(*c));
    const ana_ptr_use **head = ana_xcalloc(nr + 1, sizeof(*head));
    size_t *left = ana_xcalloc(nr + 1, sizeof(size_t));
    size_t block = ((64u << 20) / (nr + 1)) / sizeof(ana_ptr_use) * sizeof(ana_ptr_use);
    if (block < (64u << 10))
        block = 64u << 10;
#define ANA_RUN_LESS(a, b) (head[a]->time_ns < head[b]->time_ns || \
                            (head[a]->time_ns == head[b]->time_ns && (a) < (b)))
    for (size_t r = 0; r < nr; r++) {
        ana_spill_open(&c[r], &t->use_runs, t->run_starts[r],
                       r + 1 < nr ? t->run_starts[r + 1] : UINT64_MAX);
        c[r].block = block;
        const void *p;
        if (!(left[r] = ana_spill_peek(&c[r], &p)))
            continue;
        head[r] = p;
        size_t i = nh++; /* sift up */
        for (; i && ANA_RUN_LESS(r, heap[(i - 1) / 2]); i = (i - 1) / 2)
            heap[i] = heap[(i - 1) / 2];
        heap[i] = r;
    }
    while (nh) {
        size_t r = heap[0];
        ana_uo_add(o, head[r]);
        ana_spill_take(&c[r], 1);
        const void *p;
        if (--left[r] == 0)
            left[r] = ana_spill_peek(&c[r], &p);
        if (left[r])
            head[r] = (const ana_ptr_use *)c[r].at;
        else if (--nh) /* the run is done: the last in the heap takes its place */
            r = heap[nh];
        else
            break;
        size_t i = 0; /* sift r down from the top */
        for (;;) {
            size_t l = 2 * i + 1, m = l + 1, s = l;
            if (l >= nh)
                break;
            if (m < nh && ANA_RUN_LESS(heap[m], heap[l]))
                s = m;
            if (!ANA_RUN_LESS(heap[s], r))
                break;
            heap[i] = heap[s], i = s;
        }
        heap[i] = r;
    }
#undef ANA_RUN_LESS
    for (size_t r = 0; r < nr; r++)
        ana_spill_close(&c[r]);
    free(c);
    free(head);
    free(left);
    free(heap);
}

/* The pointers of successful calls (1.3 LAUNCH words and GEMM operands; copies, sets,
 * collectives and workspaces since 1.0-1.2). */
void ana_trace_uses_of(ana_trace *t, const ana_record *r)
{
    switch (r->kind) {
    case ANA_K_LAUNCH: {
        const ana_rec_launch *l = &r->u.launch;
        if (l->ret != 0)
            return;
        t->launch_ptrs += l->ptrs.n > 0;
        t->launch_ptrs_cut += l->ptrs.n >= ANA_TRACE_PTRS_CAP;
        for (uint32_t i = 0; i < l->ptrs.n; i++)
            ana_trace_use(t, r, ANA_USE_KERNEL, l->ptrs.ip[i], l->kernel);
        return;
    }
    case ANA_K_MEMCPY:
        if (r->u.memcpy.ret == 0) {
            ana_trace_use(t, r, ANA_USE_COPY_DST, r->u.memcpy.dst, r->u.memcpy.dir);
            ana_trace_use(t, r, ANA_USE_COPY_SRC, r->u.memcpy.src, r->u.memcpy.dir);
            ana_trace_table(t, r, r->u.memcpy.dst, r->u.memcpy.bytes, NULL);
        }
        return;
    case ANA_K_MEMSET:
        if (r->u.memset.ret == 0) {
            ana_trace_use(t, r, ANA_USE_SET, r->u.memset.ptr, 0);
            ana_trace_table(t, r, r->u.memset.ptr, r->u.memset.bytes, NULL);
        }
        return;
    case ANA_K_GEMM: {
        const ana_rec_gemm *g = &r->u.gemm;
        if (g->ret != 0)
            return;
        /* A holds m·k elements and B k·n, whatever the transposition (times the batch) */
        uint64_t bt = g->batch ? g->batch : 1;
        ana_trace_use(t, r, ANA_USE_GEMM_IN, g->a, (g->a_type & 255) | (g->m * g->k * bt) << 8);
        ana_trace_use(t, r, ANA_USE_GEMM_IN, g->b, (g->b_type & 255) | (g->k * g->n * bt) << 8);
        ana_trace_use(t, r, ANA_USE_GEMM_OUT, g->c, g->c_type);
        if (g->d != g->c)
            ana_trace_use(t, r, ANA_USE_GEMM_OUT, g->d, g->c_type);
        ana_trace_use(t, r, ANA_USE_WORKSPACE, g->ws, 0);
        return;
    }
    case ANA_K_PTR_TABLE:
        ana_trace_table(t, r, r->u.ptr_table.dst, r->u.ptr_table.bytes, &r->u.ptr_table.ptrs);
        return;
    case ANA_K_COLL:
        if (r->u.coll.ret == 0) {
            ana_trace_use(t, r, ANA_USE_COLL, r->u.coll.sendbuff, r->u.coll.dtype);
            if (r->u.coll.recvbuff != r->u.coll.sendbuff)
                ana_trace_use(t, r, ANA_USE_COLL, r->u.coll.recvbuff, r->u.coll.dtype);
        }
        return;
    case ANA_K_LIBCALL:
        if (r->u.libcall.ret == 0 && r->u.libcall.api == ANA_API_CUBLAS_SET_WORKSPACE)
            ana_trace_use(t, r, ANA_USE_WORKSPACE, r->u.libcall.arg, 0);
        return;
    default: return;
    }
}

/* Once every record is in: the uses in time order, with the pointers of the tables
 * kernels read, in use_spill — in memory when they never filled a run, else merged from
 * the runs into a temporary file. */
void ana_trace_uses_finish(ana_trace *t)
{
    if (!t->n_runs && !t->n_tables) { /* nothing to add: the sorted array is the spill */
        ana_sort_stable(t->uses, t->n_run_uses, sizeof(*t->uses), ana_ptr_use_cmp);
        ana_spill_adopt(&t->use_spill, t->uses, t->n_run_uses);
        t->uses = NULL;
        t->n_run_uses = t->cap_uses = 0;
        return;
    }
    if (t->n_runs && !t->runs_unordered && !t->n_tables) {
        /* runs that follow each other in time (a trace whose threads' segments came in
         * time order): one after the other, they are the uses in time order already */
        ana_trace_use_run(t);
        free(t->uses);
        t->uses = NULL;
        t->n_run_uses = t->cap_uses = 0;
        ana_spill_seal(&t->use_runs);
        ana_spill_free(&t->use_spill);
        t->use_spill = t->use_runs;
        ana_spill_init(&t->use_runs, sizeof(ana_ptr_use), "pointer uses");
        return;
    }
    ana_use_out *o = ana_xmalloc(sizeof(*o));
    ana_uo_init(o, t);
    if (!t->n_runs) {
        ana_sort_stable(t->uses, t->n_run_uses, sizeof(*t->uses), ana_ptr_use_cmp);
        for (size_t i = 0; i < t->n_run_uses; i++)
            ana_uo_add(o, &t->uses[i]);
    } else {
        ana_trace_use_run(t);
        ana_spill_seal(&t->use_runs);
        ana_spill_to_file(&t->use_spill);
        ana_trace_uses_merge(t, o);
    }
    free(t->uses);
    t->uses = NULL;
    t->n_run_uses = t->cap_uses = 0;
    ana_uo_end(o);
    ana_spill_free(&t->use_runs);
    free(o);
}

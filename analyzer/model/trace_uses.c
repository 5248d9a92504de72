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
    size_t run = ana_sorter_setting("ANATOMIST_SPILL_USES", ANA_USES_RUN_DEFAULT,
                                    sizeof(ana_ptr_use));
    ana_sorter_init(&t->use_sort, sizeof(ana_ptr_use), run, 1, ana_ptr_use_cmp, t, "pointer uses");
}

static void ana_trace_use(ana_trace *t, const ana_record *r, uint8_t kind, uint64_t ptr, uint64_t arg)
{
    if ((t->flags & ANA_LOAD_SUMMARY) || ptr == 0)
        return;
    uint32_t w = ana_trace_use_ptr_w(t, ptr), ka = ana_trace_use_pack(t, kind, arg);
    ana_ptr_use *u = ana_sorter_slot(&t->use_sort);
    *u = (ana_ptr_use){ .time_ns = r->time_ns, .ptr_w = w, .kind_arg = ka };
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
        for (size_t j = 0; j < tb->n; j++) {
            uint32_t w = ana_trace_use_ptr_w(t, t->table_ptrs[tb->first + j]);
            o->pend[o->n_pend++] = (ana_ptr_use){ .time_ns = u->time_ns, .ptr_w = w,
                                                  .kind_arg = u->kind_arg };
        }
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

static void ana_uo_emit(void *o, const void *u) { ana_uo_add(o, u); }

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
 * kernels read, in use_spill (in memory when they never filled a run). */
void ana_trace_uses_finish(ana_trace *t)
{
    if (!t->n_tables) { /* nothing to add */
        ana_sorter_finish(&t->use_sort, &t->use_spill, NULL, NULL);
        t->n_uses = t->use_spill.n;
        return;
    }
    ana_use_out *o = ana_xmalloc(sizeof(*o));
    ana_uo_init(o, t);
    ana_sorter_finish(&t->use_sort, &t->use_spill, ana_uo_emit, o);
    ana_uo_end(o);
    free(o);
}

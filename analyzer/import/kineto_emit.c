/* kineto_emit.c — the records the Kineto importer makes from what it kept (kineto_int.h):
 * GEMMs as their ops are read; collectives and `[memory]` events kept; then, once all
 * events are read, API calls with the kernel or bytes of their GPU event, memory with the
 * before-the-trace rule, properly nested ranges, collectives, the process and devices,
 * and the INFO records saying what was imported and skipped (docs/kineto-import.md).
 * Part of import/: called by kineto.c; calls model/ and format/ only. */
#include "import/kineto.h"
#include "import/kineto_int.h"

#include "model/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIN_SYN_BASE 0xffe0000000000000ull /* pseudo addresses: [memory] events without Addr */

/* ---- bookkeeping ------------------------------------------------------------------- */

void kin_skip_count(kin *k, const char *what, int silent)
{
    size_t i;
    for (i = 0; i < k->n_skips; i++)
        if (strcmp(k->skips[i].what, what) == 0)
            break;
    if (i == k->n_skips) {
        if (k->n_skips == KIN_MAX_SKIPS) {
            i = KIN_MAX_SKIPS - 1; /* the last slot takes the rest */
            snprintf(k->skips[i].what, sizeof(k->skips[i].what), "other");
            k->skips[i].silent = 0;
        } else {
            snprintf(k->skips[i].what, sizeof(k->skips[i].what), "%s", what);
            k->skips[i].silent = silent;
            k->n_skips++;
        }
    }
    k->skips[i].n++;
}

/* ---- GEMMs, collectives and memory of the events read ------------------------------ */

/* A matmul op with recorded shapes: its GEMM record (m × n output, k inner, row-major). */
void kin_gemm(kin *k, const char *op)
{
    static const struct { const char *op; int first, rank; } ops[] = {
        { "aten::mm", 0, 2 }, { "aten::addmm", 1, 2 }, { "aten::_addmm_activation", 1, 2 },
        { "aten::_scaled_mm", 0, 2 }, { "aten::_int_mm", 0, 2 }, { "aten::bmm", 0, 3 },
        { "aten::baddbmm", 1, 3 },
    };
    const kin_ev *e = &k->ev;
    size_t i;
    for (i = 0; i < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[i].op) != 0; i++)
        ;
    if (i == sizeof(ops) / sizeof(ops[0]))
        return;
    int a = ops[i].first, rk = ops[i].rank;
    int at = a < e->n_types ? kin_cuda_type(kin_str(k, e->types[a])) : -1;
    int bt = a + 1 < e->n_types ? kin_cuda_type(kin_str(k, e->types[a + 1])) : -1;
    if (a + 1 >= e->n_in || e->ndims[a] != rk || e->ndims[a + 1] != rk || at < 0 || bt < 0 ||
        !kin_has(e, A_EXT)) {
        k->gemm_unshaped++;
        return;
    }
    const int64_t *A = e->dims[a], *B = e->dims[a + 1];
    uint64_t batch = rk == 3 ? (uint64_t)A[0] : 1, m = (uint64_t)A[rk - 2];
    uint64_t kk = (uint64_t)A[rk - 1], n = (uint64_t)B[rk - 1];
    ana_record rec = { .kind = ANA_K_GEMM, .tid = e->tid, .time_ns = (uint64_t)e->ts };
    rec.u.gemm = (ana_rec_gemm){
        .api = rk == 3 ? ANA_API_CUBLAS_GEMM_STRIDED_BATCHED_EX : ANA_API_CUBLAS_GEMM_EX,
        .call = (uint64_t)e->num[A_EXT], .m = m, .n = n, .k = kk, .batch = batch,
        .a_type = (uint64_t)at, .b_type = (uint64_t)bt, .c_type = (uint64_t)at,
        .compute_type = 68, /* CUBLAS_COMPUTE_32F: PyTorch's default for these types */
        .flops = 2 * m * n * kk * batch, .dur_ns = (uint64_t)e->dur,
    };
    kin_add(k, &rec);
}

/* A collective the event describes (record_param_comms, or an NCCL kernel's args). */
void kin_coll_keep(kin *k, int from_kernel)
{
    const kin_ev *e = &k->ev;
    uint16_t api = kin_coll_api(kin_arg_str(k, A_COLL));
    uint64_t size = 0;
    int dtype = kin_nccl_type(kin_arg_str(k, A_DTYPE), &size);
    if (!api || !kin_has(e, A_EXT)) {
        kin_skip_count(k, "record_param_comms of no NCCL operation", 1);
        return;
    }
    const char *pg = kin_arg_str(k, A_PG), *ranks = kin_arg_str(k, A_PGRANKS);
    uint64_t h = ana_fnv1a(pg, strlen(pg), ANA_FNV1A_SEED);
    int64_t count = kin_num(e, api == ANA_API_NCCL_REDUCE_SCATTER ? A_OUT : A_IN, 0);
    ANA_GROW(k->colls, k->cap_colls, k->n_colls + 1);
    k->colls[k->n_colls++] = (kin_coll){
        .time = (uint64_t)e->ts, .tid = from_kernel ? 0 : e->tid, .ext = (uint64_t)e->num[A_EXT],
        .count = count > 0 ? (uint64_t)count : 0, .comm = h | 1,
        .comm_id = ana_fnv1a(ranks, strlen(ranks), h), .group = kin_num(e, A_GROUP, -1),
        .api = api, .dtype = (uint8_t)(dtype < 0 ? 255 : dtype), .from_kernel = (uint8_t)from_kernel,
    };
}

void kin_on_memory(kin *k)
{
    const kin_ev *e = &k->ev;
    int64_t type = kin_num(e, A_DEVTYPE, -1), bytes = kin_num(e, A_MBYTES, 0);
    if (type != 1) {
        kin_skip_count(k, type == 0 ? "[memory] on the CPU" : "[memory] on other devices", 1);
        return;
    }
    if (!bytes) {
        kin_skip_count(k, "[memory] of 0 bytes", 1);
        return;
    }
    ANA_GROW(k->mems, k->cap_mems, k->n_mems + 1);
    k->mems[k->n_mems] = (kin_mem){ (uint64_t)e->ts, e->tid, (uint64_t)kin_num(e, A_ADDR, 0),
                                    bytes, kin_num(e, A_TOTAL, -1), kin_num(e, A_DEVID, 0),
                                    k->n_mems };
    k->n_mems++;
}

/* ---- what is emitted at the end ---------------------------------------------------- */

static int kin_ctxop_cmp(const void *a, const void *b)
{
    const kin_ctxop *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the outer of two starting together first */
}

/* The External id of the innermost context op (matmul, convolution, ...) on the call's
 * thread whose span holds the call's start; 0 when none does. ctxops sorted by
 * kin_ctxop_cmp; ops of one thread nest, so the search walks back from the last op that
 * started before the call (a bounded number of ops that ended earlier). */
static uint64_t kin_enclosing_op(const kin *k, const kin_call *c)
{
    size_t lo = 0, hi = k->n_ctxops;
    while (lo < hi) { /* first op after (tid, time) */
        size_t mid = lo + (hi - lo) / 2;
        const kin_ctxop *o = &k->ctxops[mid];
        if (o->tid < c->tid || (o->tid == c->tid && o->start <= c->time))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, n = 0; i-- > 0 && n < 64; n++) {
        const kin_ctxop *o = &k->ctxops[i];
        if (o->tid != c->tid)
            break;
        if (o->end >= c->time)
            return o->ext;
    }
    return 0;
}

/* The op a runtime call was made in. Its External id names it — except in traces where a
 * runtime event's External id repeats its own correlation id (a variant of the profiler),
 * where an op with that number is another op: there the op whose span holds the call on
 * the same thread is the one (counted: import.calls_linked_by_time). */
static uint64_t kin_call_op(kin *k, const kin_call *c, uint64_t *by_time)
{
    if (!c->ext || c->ext != c->corr)
        return c->ext;
    uint64_t op = kin_enclosing_op(k, c);
    *by_time += op != 0;
    uint64_t ctx;
    return op ? op : (ana_u64map_get(&k->t->call_ctx, c->ext, &ctx) ? 0 : c->ext);
}

static void kin_emit_calls(kin *k)
{
    static const uint8_t dir_of_kind[] = { 4, 1, 2, 4, 4, 4, 4, 4, 3, 0, 3 }; /* cudaMemcpyKind */
    uint64_t by_time = 0;
    ana_sort(k->ctxops, k->n_ctxops, sizeof(*k->ctxops), kin_ctxop_cmp);
    for (size_t i = 0; i < k->n_calls; i++) {
        kin_call *c = &k->calls[i];
        uint64_t v = 0;
        c->ext = kin_call_op(k, c, &by_time);
        ana_record rec = { .kind = c->kind, .tid = c->tid, .time_ns = c->time };
        if (c->kind == ANA_K_LAUNCH) {
            ana_u64map_get(&k->corr_kernel, c->corr, &v);
            rec.u.launch = (ana_rec_launch){ .api = c->api, .kernel = v, .dur_ns = c->dur,
                                             .corr = c->corr, .via = ANA_VIA_CUPTI, .call = c->ext };
        } else if (c->kind == ANA_K_MEMCPY) {
            int known = ana_u64map_get(&k->corr_copy, c->corr, &v);
            rec.u.memcpy = (ana_rec_memcpy){ .api = c->api, .bytes = v >> 8,
                                             .dir = known && (v & 0xff) <= 10 ? dir_of_kind[v & 0xff] : 4,
                                             .dur_ns = c->dur, .corr = c->corr,
                                             .via = ANA_VIA_CUPTI, .call = c->ext };
        } else {
            ana_u64map_get(&k->corr_copy, c->corr, &v);
            rec.u.memset = (ana_rec_memset){ .api = c->api, .bytes = v >> 8, .dur_ns = c->dur,
                                             .corr = c->corr, .via = ANA_VIA_CUPTI, .call = c->ext };
        }
        kin_add(k, &rec);
    }
    if (by_time)
        kin_info(k, "import.calls_linked_by_time", "%llu runtime calls whose External id repeats "
                 "their correlation id, placed in the op that spans them", (unsigned long long)by_time);
}

static int kin_mem_cmp(const void *a, const void *b)
{
    const kin_mem *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void kin_mem_record(kin *k, int alloc, uint64_t time, uint64_t tid, uint64_t ptr,
                           uint64_t size, int64_t device)
{
    ana_record rec = { .kind = alloc ? ANA_K_ALLOC : ANA_K_FREE, .tid = tid, .time_ns = time };
    if (alloc)
        rec.u.alloc = (ana_rec_alloc){ .api = ANA_API_IMPORTED_ALLOC, .ptr = ptr, .size = size,
                                       .device = device };
    else
        rec.u.free = (ana_rec_free){ .api = ANA_API_IMPORTED_FREE, .ptr = ptr, .device = device };
    kin_add(k, &rec);
}

/* Frees are matched by address; events without one (the 2021 schema) by size, to the
 * latest live allocation of that size. A free that matches nothing released memory
 * allocated before the trace began: it becomes an allocation at the trace's start, and so
 * does the rest of the first `Total Allocated` not explained by them (docs). */
static void kin_emit_memory(kin *k)
{
    ana_u64map live, by_size;       /* address -> size; size -> index of the latest node */
    uint64_t *next = ana_xcalloc(k->n_mems + 1, sizeof(uint64_t)), pre_bytes = 0, pre_n = 0;
    int64_t first_total = -1, first_bytes = 0, max_total = -1, device = 0;
    ana_u64map_init(&live);
    ana_u64map_init(&by_size);
    ana_sort(k->mems, k->n_mems, sizeof(*k->mems), kin_mem_cmp);
    for (size_t i = 0; i < k->n_mems; i++) {
        kin_mem *m = &k->mems[i];
        uint64_t size = m->bytes > 0 ? (uint64_t)m->bytes : (uint64_t)0 - (uint64_t)m->bytes, v;
        if (m->total > max_total)
            max_total = m->total;
        if (i == 0)
            first_total = m->total, first_bytes = m->bytes, device = m->device;
        if (!m->addr && m->bytes > 0) { /* no address: a node on the list of its size */
            m->addr = KIN_SYN_BASE + i;
            next[i] = ana_u64map_get(&by_size, size, &v) ? v + 1 : 0;
            ana_u64map_put(&by_size, size, i);
        } else if (!m->addr) {
            if (ana_u64map_get(&by_size, size, &v)) {
                m->addr = k->mems[v].addr;
                if (next[v])
                    ana_u64map_put(&by_size, size, next[v] - 1);
                else
                    ana_u64map_del(&by_size, size, NULL);
                continue;
            }
            m->addr = ANA_KINETO_PRE_BASE + i;
        } else if (m->bytes > 0) {
            ana_u64map_put(&live, m->addr, size);
            continue;
        } else if (ana_u64map_del(&live, m->addr, NULL)) {
            continue;
        }
        if (m->bytes < 0) { /* memory from before the trace, released now */
            kin_mem_record(k, 1, k->t0, m->tid, m->addr, size, m->device);
            pre_bytes += size;
            pre_n++;
        }
    }
    if (first_total >= 0 && first_total - first_bytes > (int64_t)pre_bytes) {
        uint64_t rest = (uint64_t)(first_total - first_bytes) - pre_bytes;
        kin_mem_record(k, 1, k->t0, 0, ANA_KINETO_PRE_BASE - 1, rest, device);
        pre_bytes += rest;
        pre_n++;
    }
    for (size_t i = 0; i < k->n_mems; i++) {
        const kin_mem *m = &k->mems[i];
        kin_mem_record(k, m->bytes > 0, m->time, m->tid, m->addr,
                       m->bytes > 0 ? (uint64_t)m->bytes : 0, m->device);
    }
    if (pre_n)
        kin_info(k, "import.memory_before_trace", "%llu bytes in %llu allocations",
                 (unsigned long long)pre_bytes, (unsigned long long)pre_n);
    if (max_total >= 0)
        kin_info(k, "kineto.max_total_allocated", "%lld", (long long)max_total);
    ana_u64map_free(&live);
    ana_u64map_free(&by_size);
    free(next);
}

static int kin_range_cmp(const void *a, const void *b)
{
    const kin_range *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the enclosing range first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void kin_range_record(kin *k, uint64_t tid, uint64_t time, int op, const char *name)
{
    ana_record rec = { .kind = ANA_K_RANGE, .tid = tid, .time_ns = time };
    rec.u.range = (ana_rec_range){ .op = (uint64_t)op,
                                   .name = { name ? name : "", name ? (uint32_t)strlen(name) : 0 } };
    kin_add(k, &rec);
}

/* 1 when range r is not emitted: an autograd range inside another (only the outermost
 * evaluate_function of a nest; a node only when no evaluate_function or node holds it), or
 * an op the same as the range holding it (an optimizer step recorded both ways). */
static int kin_range_inner(const kin_range *r, const size_t *ag, const kin_range *top)
{
    if ((r->kind == KIN_R_EVAL && ag[KIN_R_EVAL]) ||
        (r->kind == KIN_R_NODE && (ag[KIN_R_EVAL] || ag[KIN_R_NODE])))
        return 1;
    return top && (r->kind != KIN_R_ANNOT || top->kind != KIN_R_ANNOT) &&
           top->start == r->start && top->end == r->end && strcmp(top->name, r->name) == 0;
}

/* Push/pop pairs, properly nested per thread: a range that outlives its parent is cut at
 * the parent's end (counted); nested autograd ranges are left out (kin_range_inner). */
static void kin_emit_ranges(kin *k)
{
    uint64_t *stack = ana_xcalloc(k->n_ranges + 1, sizeof(uint64_t)), cut = 0, ops[2] = { 0, 0 };
    size_t depth = 0, ag[KIN_R_OPTIM + 1] = { 0 }; /* ranges of each kind on the stack */
    ana_sort(k->ranges, k->n_ranges, sizeof(*k->ranges), kin_range_cmp);
    for (size_t i = 0; i <= k->n_ranges; i++) {
        kin_range *r = i < k->n_ranges ? &k->ranges[i] : NULL;
        while (depth && (!r || r->tid != k->ranges[stack[depth - 1]].tid ||
                         r->start >= k->ranges[stack[depth - 1]].end)) {
            const kin_range *top = &k->ranges[stack[--depth]];
            ag[top->kind]--;
            kin_range_record(k, top->tid, top->end, ANA_RANGE_POP, NULL);
        }
        if (!r)
            break;
        if (kin_range_inner(r, ag, depth ? &k->ranges[stack[depth - 1]] : NULL))
            continue;
        if (depth && r->end > k->ranges[stack[depth - 1]].end) {
            r->end = k->ranges[stack[depth - 1]].end;
            cut++;
        }
        if (r->kind != KIN_R_ANNOT)
            ops[r->kind == KIN_R_OPTIM]++;
        kin_range_record(k, r->tid, r->start, ANA_RANGE_PUSH, r->name);
        ag[r->kind]++;
        stack[depth++] = i;
    }
    if (cut)
        kin_info(k, "import.ranges_cut", "%llu ranges cut at their parent's end",
                 (unsigned long long)cut);
    if (ops[0] || ops[1])
        kin_info(k, "import.op_ranges", "%llu autograd, %llu optimizer",
                 (unsigned long long)ops[0], (unsigned long long)ops[1]);
    free(stack);
}

static void kin_emit_colls(kin *k)
{
    ana_u64map from_op, seen_comm;
    ana_u64map_init(&from_op);
    ana_u64map_init(&seen_comm);
    for (size_t i = 0; i < k->n_colls; i++)
        if (!k->colls[i].from_kernel)
            ana_u64map_put(&from_op, k->colls[i].ext, 1);
    for (size_t i = 0; i < k->n_colls; i++) {
        const kin_coll *c = &k->colls[i];
        uint64_t seq = 0, size = 0;
        if (c->from_kernel && ana_u64map_get(&from_op, c->ext, &seq))
            continue; /* the op said it already */
        if (c->from_kernel)
            ana_u64map_put(&from_op, c->ext, 1); /* one COLL per op, however many kernels */
        if (!ana_u64map_get(&seen_comm, c->comm, &seq)) {
            ana_record cm = { .kind = ANA_K_COMM, .time_ns = c->time, .tid = c->tid };
            cm.u.comm = (ana_rec_comm){ .api = ANA_API_NCCL_COMM_INIT_RANK, .comm = c->comm,
                                        .comm_id = c->comm_id, .rank = k->rank, .size = c->group,
                                        .device = -1 };
            kin_add(k, &cm);
            ana_u64map_put(&seen_comm, c->comm, 1);
        }
        seq = 0;
        ana_u64map_get(&k->comm_seq, c->comm, &seq);
        ana_u64map_put(&k->comm_seq, c->comm, ++seq);
        if (c->dtype != 255) {
            static const uint8_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
            size = c->dtype < sizeof(sizes) ? sizes[c->dtype] : 0;
        }
        ana_record rec = { .kind = ANA_K_COLL, .time_ns = c->time, .tid = c->tid };
        rec.u.coll = (ana_rec_coll){ .api = c->api, .call = c->ext, .comm = c->comm,
                                     .count = c->count, .dtype = c->dtype,
                                     .bytes = c->count * size, .peer = -1, .seq = seq };
        kin_add(k, &rec);
    }
    ana_u64map_free(&from_op);
    ana_u64map_free(&seen_comm);
}

void kin_info(kin *k, const char *key, const char *fmt, ...)
{
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    ana_record rec = { .kind = ANA_K_INFO, .time_ns = k->t0 };
    rec.u.info = (ana_rec_info){ { key, (uint32_t)strlen(key) }, { v, (uint32_t)strlen(v) } };
    kin_add(k, &rec);
}

/* "python_function 15230, ac2g 2301": the skipped events, silent ones or not. */
static void kin_skipped_text(const kin *k, int loud_only, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k->n_skips && n + 1 < cap; i++) {
        if (loud_only && k->skips[i].silent)
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s %llu", n ? ", " : "", k->skips[i].what,
                         (unsigned long long)k->skips[i].n);
        n += w > 0 ? (size_t)w : 0;
    }
}

static void kin_emit_process(kin *k)
{
    const char *exe = "";
    for (size_t i = 0; i < k->n_pnames; i++)
        if (k->has_pid && k->pnames[i].pid == k->pid) {
            exe = k->pnames[i].name;
            break;
        }
    ana_record rec = { .kind = ANA_K_PROCESS, .time_ns = k->t0 };
    rec.u.process = (ana_rec_process){
        .pid = k->pid, .rank = k->rank, .local_rank = -1, .world_size = k->world,
        .realtime_ns = k->base_ns >= 0 ? (uint64_t)k->base_ns + k->t0 : 0,
        .host = { "", 0 }, .exe = { exe, (uint32_t)strlen(exe) },
    };
    kin_add(k, &rec);
    for (size_t i = 0; i < k->n_devs; i++) {
        k->devs[i].time_ns = k->t0;
        kin_add(k, &k->devs[i]);
    }
}

void kin_finish(kin *k, uint64_t file_bytes)
{
    char buf[1024];
    ana_trace *t = k->t;
    if (k->base_ns < 0 && k->t0 > 946684800000000000ull)
        k->base_ns = 0; /* no base: the 2021 schema's timestamps are since the epoch */
    kin_emit_process(k);
    kin_emit_calls(k);
    kin_emit_memory(k);
    kin_emit_ranges(k);
    kin_emit_colls(k);
    kin_info(k, "import.format", "PyTorch profiler (Kineto) trace, %s",
             ana_jsonr_is_gzip(k->r) ? "gzip JSON" : "JSON");
    if (k->trace_name)
        kin_info(k, "kineto.trace_name", "%s", k->trace_name);
    if (k->schema[0])
        kin_info(k, "kineto.schema_version", "%s", k->schema);
    kin_info(k, "import.events", "%llu", (unsigned long long)k->events);
    kin_skipped_text(k, 0, buf, sizeof(buf));
    kin_info(k, "import.skipped", "%s", buf[0] ? buf : "none");
    if (!k->n_mems)
        kin_info(k, "import.device_memory", "not recorded: no [memory] events of a GPU (profile "
                                            "with profile_memory=True)");
    if (k->gemm_unshaped)
        kin_info(k, "import.matmuls_without_shapes", "%llu", (unsigned long long)k->gemm_unshaped);
    kin_skipped_text(k, 1, buf, sizeof(buf));
    if (buf[0])
        fprintf(stderr, "anatomist: %s: skipped %s\n", k->path, buf);
    t->stats.file_bytes = file_bytes;
    t->stats.raw_bytes = ana_jsonr_bytes_read(k->r);
    ana_trace_finish(t);
    t->source = "kineto";
}

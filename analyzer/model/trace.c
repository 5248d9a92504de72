/* trace.c — see trace.h. */
#include "model/capture.h"
#include "model/trace.h"
#include "import/kineto.h"
#include "safe_open.h"

#include "model/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ana_trace_alloc_class(uint64_t api)
{
    if (api >= UINT32_MAX)
        return ANA_MEM_OTHER;
    if (ana_api_is_host_alloc((uint32_t)api))
        return ANA_MEM_HOST_PINNED;
    return ana_api_is_device_alloc((uint32_t)api) ? ANA_MEM_DEVICE : ANA_MEM_OTHER;
}

/* Memory class of a GPU_MEMORY record's mem_kind. */
static uint8_t ana_trace_memkind_class(uint64_t kind)
{
    if (kind == ANA_MEMKIND_DEVICE || kind == ANA_MEMKIND_MANAGED)
        return ANA_MEM_DEVICE;
    return kind == ANA_MEMKIND_PINNED ? ANA_MEM_HOST_PINNED : ANA_MEM_OTHER;
}

static char *ana_str_dup(ana_str s) { return ana_xstrndup(s.s ? s.s : "", s.s ? s.len : 0); }
/* A string of the trace as it is shown (util.h ana_name_dup: escaped for text outputs). */
char *ana_str_name(ana_str s) { return ana_name_dup(s.s ? s.s : "", s.s ? s.len : 0); }

static size_t ana_api_slot(uint64_t api) { return api < ANA_API_COUNT ? (size_t)api : 0; }

static void ana_trace_on_process(ana_trace *t, const ana_record *r)
{
    const ana_rec_process *p = &r->u.process;
    ana_trace_process *tp = &t->process;
    if (tp->present)
        return; /* the first PROCESS record describes the process */
    tp->present = 1;
    tp->pid = p->pid;
    tp->ppid = p->ppid;
    tp->rank = p->rank;
    tp->local_rank = p->local_rank;
    tp->world_size = p->world_size;
    tp->realtime_ns = p->realtime_ns;
    tp->time_ns = r->time_ns;
    tp->host = ana_str_name(p->host);
    tp->exe = ana_str_name(p->exe);
    tp->argc = p->argv.n;
    tp->argv = ana_xcalloc(tp->argc + 1, sizeof(char *));
    for (size_t i = 0; i < tp->argc; i++)
        tp->argv[i] = ana_str_name(p->argv.v[i]);
}

/* libcupti, libcuda or libcudart, by file name. */
static int ana_trace_is_cuda_lib(const char *path)
{
    static const char *const libs[] = { "libcupti.so", "libcuda.so", "libcudart.so" };
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
        if (strncmp(base, libs[i], strlen(libs[i])) == 0)
            return 1;
    return 0;
}

/* Modules are re-announced at every change of the loader's list: a map of their hash
 * finds the earlier announcement without a scan (a hostile trace may hold millions). */
static uint64_t ana_trace_module_hash(const ana_rec_module *m)
{
    uint64_t k[3] = { m->bias, m->lo, m->hi };
    return ana_fnv1a(m->path.s, m->path.len, ana_fnv1a(k, sizeof(k), ANA_FNV1A_SEED));
}

static void ana_trace_on_module(ana_trace *t, const ana_rec_module *m)
{
    uint64_t h = ana_trace_module_hash(m), i;
    if (ana_u64map_get(&t->module_idx, h, &i)) {
        const ana_trace_module *o = &t->modules[i];
        if (o->lo == m->lo && o->hi == m->hi && o->bias == m->bias &&
            strlen(o->path) == m->path.len && memcmp(o->path, m->path.s, m->path.len) == 0)
            return;
    }
    ana_u64map_put(&t->module_idx, h, t->n_modules);
    ANA_GROW(t->modules, t->cap_modules, t->n_modules + 1);
    ana_trace_module *d = &t->modules[t->n_modules++];
    d->bias = m->bias;
    d->lo = m->lo;
    d->hi = m->hi;
    d->path = ana_str_dup(m->path); /* exact: the symbolizer opens it */
    d->shown = ana_str_name(m->path);
    d->cuda_lib = ana_trace_is_cuda_lib(d->path);
    d->build_id_len = m->build_id.len;
    d->build_id = ana_xmalloc(m->build_id.len + 1);
    if (m->build_id.len)
        memcpy(d->build_id, m->build_id.s, m->build_id.len);
}

static void ana_trace_on_device(ana_trace *t, const ana_rec_device *dv)
{
    if (ana_u64map_get(&t->device_idx, (uint64_t)dv->ordinal, &(uint64_t){ 0 }))
        return; /* the first DEVICE record of an ordinal describes it */
    ana_u64map_put(&t->device_idx, (uint64_t)dv->ordinal, t->n_devices);
    ANA_GROW(t->devices, t->cap_devices, t->n_devices + 1);
    t->devices[t->n_devices++] = (ana_trace_device){
        .ordinal = dv->ordinal, .name = ana_str_name(dv->name), .total_mem = dv->total_mem,
        .sm_count = dv->sm_count, .cc_major = dv->cc_major, .cc_minor = dv->cc_minor,
    };
}

static ana_trace_kernel *ana_trace_kernel_get(ana_trace *t, uint64_t id)
{
    uint64_t k;
    if (!ana_u64map_get(&t->kernel_idx, id, &k)) {
        ANA_GROW(t->kernels, t->cap_kernels, t->n_kernels + 1);
        t->kernels[t->n_kernels] = (ana_trace_kernel){ .id = id };
        k = t->n_kernels++;
        ana_u64map_put(&t->kernel_idx, id, k);
    }
    return &t->kernels[k];
}

static void ana_trace_on_kernel(ana_trace *t, const ana_rec_kernel *kr)
{
    ana_trace_kernel *k = ana_trace_kernel_get(t, kr->id);
    if (k->name)
        return;
    k->name = ana_str_name(kr->name);
    k->host_fn = kr->host_fn;
}

static uint16_t ana_u16(uint64_t v) { return (uint16_t)(v < 0xffff ? v : 0xffff); }
static uint8_t ana_u8(uint64_t v) { return (uint8_t)(v < 0xff ? v : 0); }

static int32_t ana_i32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* Keeps a LAUNCH/MEMCPY/MEMSET call for the GPU analysis (not in summary mode). */
static void ana_trace_add_call(ana_trace *t, const ana_record *r, uint64_t api, int64_t ret,
                               uint64_t stack, uint64_t corr, uint64_t via, uint64_t arg,
                               uint64_t call, uint64_t lib)
{
    if (t->flags & ANA_LOAD_SUMMARY)
        return;
    ANA_GROW(t->calls, t->cap_calls, t->n_calls + 1);
    t->calls[t->n_calls++] = (ana_api_call){
        .time_ns = r->time_ns, .corr_w = ana_trace_narrow(t, corr),
        .tid_w = ana_trace_narrow(t, r->tid), .stack_w = ana_trace_narrow(t, stack),
        .arg_w = ana_trace_narrow(t, arg), .call_w = ana_trace_narrow(t, call),
        .ret = ana_i32(ret), .api = ana_u16(api), .kind = (uint8_t)r->kind, .via = ana_u8(via),
        .lib = ana_u8(lib),
    };
}

static void ana_trace_use(ana_trace *t, const ana_record *r, uint8_t kind, uint64_t ptr, uint64_t arg)
{
    if ((t->flags & ANA_LOAD_SUMMARY) || ptr == 0)
        return;
    ANA_GROW(t->uses, t->cap_uses, t->n_uses + 1);
    t->uses[t->n_uses] = (ana_ptr_use){ .time_ns = r->time_ns, .ptr = ptr,
                                        .seq = (uint32_t)t->n_uses,
                                        .kind_arg = ana_trace_use_pack(t, kind, arg) };
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

static int ana_ptr_use_cmp(const void *a, const void *b)
{
    const ana_ptr_use *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int ana_table_cmp(const void *a, const void *b)
{
    const ana_ptr_table *x = a, *y = b; /* a copy's own end of a table, then its new table */
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Each kernel use that falls inside a table in force at its time (the latest write at
 * that table's address before it) reads the table's pointers: they become uses of that
 * launch (same time, same kernel). Uses are re-sorted after. */
static void ana_trace_expand_tables(ana_trace *t)
{
    if (!t->n_tables)
        return;
    ana_sort(t->tables, t->n_tables, sizeof(*t->tables), ana_table_cmp);
    size_t *live = ana_xcalloc(t->n_tables + 1, sizeof(size_t)), n_live = 0, next = 0;
    size_t n0 = t->n_uses;
    uint64_t last_time = UINT64_MAX, last_kernel = 0;
    for (size_t i = 0; i < n0; i++) {
        const ana_ptr_use u = t->uses[i];
        for (; next < t->n_tables && t->tables[next].time_ns <= u.time_ns; next++) {
            size_t k = 0; /* the new write replaces a table at the same address */
            while (k < n_live && t->tables[live[k]].dst != t->tables[next].dst)
                k++;
            if (k == n_live)
                n_live++;
            live[k] = next;
        }
        if (ana_trace_use_kind(&u) != ANA_USE_KERNEL)
            continue;
        for (size_t k = 0; k < n_live; k++) {
            const ana_ptr_table *tb = &t->tables[live[k]];
            if (!tb->n || u.ptr < tb->dst || u.ptr - tb->dst >= tb->bytes)
                continue;
            uint64_t kernel = ana_trace_use_arg(t, &u);
            if (u.time_ns != last_time || kernel != last_kernel)
                t->table_launches++;
            last_time = u.time_ns, last_kernel = kernel;
            for (size_t j = 0; j < tb->n; j++) {
                ANA_GROW(t->uses, t->cap_uses, t->n_uses + 1);
                t->uses[t->n_uses] = (ana_ptr_use){ .time_ns = u.time_ns, .ptr = t->table_ptrs[tb->first + j],
                                                    .seq = (uint32_t)t->n_uses, .kind_arg = u.kind_arg };
                t->n_uses++;
            }
        }
    }
    free(live);
    if (t->n_uses != n0)
        ana_sort(t->uses, t->n_uses, sizeof(*t->uses), ana_ptr_use_cmp);
}

/* The pointers of successful calls (1.3 LAUNCH words and GEMM operands; copies, sets,
 * collectives and workspaces since 1.0-1.2). */
static void ana_trace_uses_of(ana_trace *t, const ana_record *r)
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

static void ana_trace_on_launch(ana_trace *t, const ana_record *r)
{
    const ana_rec_launch *l = &r->u.launch;
    ana_trace_add_call(t, r, l->api, l->ret, l->stack, l->corr, l->via, l->kernel, l->call, l->lib);
    if (ana_api_is_graph_launch((uint32_t)l->api)) {
        /* A graph launch runs a graph's kernels, not one kernel: counted apart. */
        t->graph_launches++;
        t->failed_graph_launches += l->ret != 0;
        return;
    }
    ana_trace_kernel *k = ana_trace_kernel_get(t, l->kernel);
    t->launches++;
    k->launches++;
    if (l->ret != 0) {
        t->failed_launches++;
        k->failed++;
    }
}

static void ana_copy_count(ana_copy_stats *c, int64_t ret, uint64_t bytes)
{
    c->calls++;
    if (ret != 0)
        c->failed++;
    else
        c->bytes += bytes;
}

/* Returns a scratch event (not kept) in summary mode. */
static ana_mev *ana_trace_new_mev(ana_trace *t, const ana_record *r, uint8_t type)
{
    static ana_mev discard;
    if (t->flags & ANA_LOAD_SUMMARY)
        return &discard;
    ANA_GROW(t->mev, t->cap_mev, t->n_mev + 1);
    ana_mev *e = &t->mev[t->n_mev];
    memset(e, 0, sizeof(*e));
    e->time_ns = r->time_ns;
    e->seq = t->n_mev++;
    e->tid = r->tid;
    e->type = type;
    return e;
}

static void ana_trace_on_alloc(ana_trace *t, const ana_record *r)
{
    const ana_rec_alloc *a = &r->u.alloc;
    ana_api_stats *s = &t->alloc_by_api[ana_api_slot(a->api)];
    s->calls++;
    if (a->ret == 0) {
        s->ok++;
        s->bytes += a->size;
    } else {
        s->failed++;
    }
    ana_mev *e = ana_trace_new_mev(t, r, ANA_MEV_ALLOC);
    e->api = ana_u16(a->api);
    e->cls = (uint8_t)ana_trace_alloc_class(a->api);
    e->ret = a->ret;
    e->ptr = a->ptr;
    e->size = a->size;
    e->stack = a->stack;
    e->corr = a->corr;
    e->device = (int32_t)a->device;
    e->lib = a->lib < ANA_MEM_LIB_OTHER ? (uint8_t)a->lib : ANA_MEM_LIB_OTHER;
}

static void ana_trace_on_free(ana_trace *t, const ana_record *r)
{
    const ana_rec_free *f = &r->u.free;
    ana_api_stats *s = &t->free_by_api[ana_api_slot(f->api)];
    s->calls++;
    if (f->ret == 0)
        s->ok++;
    else
        s->failed++;
    ana_mev *e = ana_trace_new_mev(t, r, ANA_MEV_FREE);
    e->api = ana_u16(f->api);
    e->ret = f->ret;
    e->ptr = f->ptr;
    e->stack = f->stack;
    e->corr = f->corr;
    e->device = (int32_t)f->device;
}

/* Only mapping and unmapping change what is live; reserving address space does not. */
static void ana_trace_on_vmm(ana_trace *t, const ana_record *r)
{
    const ana_rec_vmm *v = &r->u.vmm;
    if (v->api != ANA_API_CU_MEM_MAP && v->api != ANA_API_CU_MEM_UNMAP)
        return;
    ana_mev *e = ana_trace_new_mev(t, r, v->api == ANA_API_CU_MEM_MAP ? ANA_MEV_MAP
                                                                      : ANA_MEV_UNMAP);
    e->api = ana_u16(v->api);
    e->ret = v->ret;
    e->ptr = v->va;
    e->size = v->size;
    e->handle = v->handle;
    e->stack = v->stack;
    e->corr = v->corr;
    e->device = (int32_t)v->device;
}

static void ana_trace_on_gpu_memory(ana_trace *t, const ana_record *r)
{
    const ana_rec_gpu_memory *m = &r->u.gpu_memory;
    if (m->op != ANA_GPU_MEM_ALLOC && m->op != ANA_GPU_MEM_RELEASE)
        return;
    ana_mev *e = ana_trace_new_mev(t, r, m->op == ANA_GPU_MEM_ALLOC ? ANA_MEV_GPU_ALLOC
                                                                    : ANA_MEV_GPU_FREE);
    e->cls = ana_trace_memkind_class(m->mem_kind);
    e->ptr = m->address;
    e->size = m->bytes;
    e->corr = m->corr;
    e->device = (int32_t)m->device;
}

/* Keeps a GPU activity; returns a scratch one (not kept) in summary mode, as
 * ana_trace_new_mev does. */
static ana_gpu_act *ana_trace_add_act(ana_trace *t, const ana_record *r, uint8_t type,
                                      uint64_t corr, uint64_t dur, uint64_t arg, int64_t device,
                                      uint64_t stream)
{
    static ana_gpu_act discard;
    if (t->flags & ANA_LOAD_SUMMARY)
        return &discard;
    ANA_GROW(t->gpu, t->cap_gpu, t->n_gpu + 1);
    ana_gpu_act *a = &t->gpu[t->n_gpu++];
    *a = (ana_gpu_act){
        .start_ns = r->time_ns, .dur_w = ana_trace_narrow(t, dur),
        .corr_w = ana_trace_narrow(t, corr), .arg_w = ana_trace_narrow(t, arg),
        .stream = (uint32_t)stream, .device = ana_i32(device), .type = type,
    };
    return a;
}

static void ana_trace_on_gpu_kernel(ana_trace *t, const ana_record *r)
{
    const ana_rec_gpu_kernel *g = &r->u.gpu_kernel;
    ana_trace_kernel *k = ana_trace_kernel_get(t, g->kernel);
    if (!k->gpu_count || g->dur_ns < k->gpu_min_ns)
        k->gpu_min_ns = g->dur_ns;
    if (g->dur_ns > k->gpu_max_ns)
        k->gpu_max_ns = g->dur_ns;
    k->gpu_count++;
    k->gpu_ns += g->dur_ns;
    ana_trace_add_act(t, r, ANA_GPU_KERNEL, g->corr, g->dur_ns, g->kernel, g->device, g->stream);
}

static void ana_trace_on_gpu_copy(ana_trace *t, const ana_record *r)
{
    if (r->kind == ANA_K_GPU_MEMSET) {
        const ana_rec_gpu_memset *m = &r->u.gpu_memset;
        ana_trace_add_act(t, r, ANA_GPU_MEMSET, m->corr, m->dur_ns, m->bytes, m->device, m->stream)
            ->dst_kind = ana_u8(m->mem_kind);
        return;
    }
    const ana_rec_gpu_memcpy *m = &r->u.gpu_memcpy;
    ana_gpu_act *a = ana_trace_add_act(t, r, ANA_GPU_MEMCPY, m->corr, m->dur_ns, m->bytes, m->device,
                                       m->stream);
    a->copy_kind = ana_u8(m->copy_kind);
    a->src_kind = ana_u8(m->src_kind);
    a->dst_kind = ana_u8(m->dst_kind);
}

static void ana_trace_on_gpu_dropped(ana_trace *t, const ana_rec_gpu_dropped *d)
{
    t->gpu_dropped_records += d->records;
    t->gpu_dropped_by_reason[d->reason <= 2 ? d->reason : 0] += d->records;
}

static void ana_trace_on_meminfo(ana_trace *t, const ana_record *r)
{
    const ana_rec_meminfo *m = &r->u.meminfo;
    ana_mev *e = ana_trace_new_mev(t, r, ANA_MEV_MEMINFO);
    e->api = (uint16_t)(m->reason < 0xffff ? m->reason : 0xffff);
    e->ptr = m->free;
    e->size = m->total;
    e->device = (int32_t)m->device;
}

static void ana_trace_on_info(ana_trace *t, const ana_rec_info *in)
{
    if (t->n_info >= ANA_TRACE_MAX_INFO)
        return;
    ANA_GROW(t->info, t->cap_info, t->n_info + 1);
    t->info[t->n_info++] = (ana_kv){ ana_str_name(in->key), ana_str_name(in->value) };
}

static void ana_trace_on_end(ana_trace *t, const ana_rec_end *e)
{
    if (t->has_end)
        return;
    t->has_end = 1;
    t->end_reason = e->reason;
    t->end_detail = ana_str_name(e->detail);
}

static void ana_trace_on_record(ana_trace *t, const ana_record *r)
{
    switch (r->kind) {
    case ANA_K_PROCESS: ana_trace_on_process(t, r); break;
    case ANA_K_MODULE: ana_trace_on_module(t, &r->u.module); break;
    case ANA_K_STACK:
        if (!(t->flags & ANA_LOAD_SUMMARY))
            ana_stacks_add(&t->stacks, r->u.stack.id, r->u.stack.frames.ip, r->u.stack.frames.n);
        break;
    case ANA_K_PYCODE:
        if (!(t->flags & ANA_LOAD_SUMMARY))
            ana_py_add(&t->py, &r->u.pycode);
        break;
    case ANA_K_KERNEL: ana_trace_on_kernel(t, &r->u.kernel); break;
    case ANA_K_ALLOC: ana_trace_on_alloc(t, r); break;
    case ANA_K_FREE: ana_trace_on_free(t, r); break;
    case ANA_K_MEMINFO: ana_trace_on_meminfo(t, r); break;
    case ANA_K_LAUNCH: ana_trace_on_launch(t, r); break;
    case ANA_K_MEMCPY: {
        const ana_rec_memcpy *m = &r->u.memcpy;
        ana_copy_count(&t->memcpy_total, m->ret, m->bytes);
        ana_copy_count(&t->memcpy_by_dir[m->dir < 5 ? m->dir : 5], m->ret, m->bytes);
        ana_trace_add_call(t, r, m->api, m->ret, m->stack, m->corr, m->via, m->bytes, m->call, m->lib);
        break;
    }
    case ANA_K_MEMSET: {
        const ana_rec_memset *m = &r->u.memset;
        ana_copy_count(&t->memset_total, m->ret, m->bytes);
        ana_trace_add_call(t, r, m->api, m->ret, m->stack, m->corr, m->via, m->bytes, m->call, m->lib);
        break;
    }
    case ANA_K_GPU_KERNEL: ana_trace_on_gpu_kernel(t, r); break;
    case ANA_K_GPU_MEMCPY:
    case ANA_K_GPU_MEMSET: ana_trace_on_gpu_copy(t, r); break;
    case ANA_K_GPU_MEMORY: ana_trace_on_gpu_memory(t, r); break;
    case ANA_K_GPU_DROPPED: ana_trace_on_gpu_dropped(t, &r->u.gpu_dropped); break;
    case ANA_K_VMM: ana_trace_on_vmm(t, r); break;
    case ANA_K_DEVICE: ana_trace_on_device(t, &r->u.device); break;
    case ANA_K_DROPPED:
        t->dropped_records += r->u.dropped.records;
        t->dropped_bytes += r->u.dropped.bytes;
        break;
    case ANA_K_END: ana_trace_on_end(t, &r->u.end); break;
    case ANA_K_INFO:
        if (!ana_capture_on_info(t, &r->u.info, r->time_ns))
            ana_trace_on_info(t, &r->u.info);
        break;
    case ANA_K_GEMM:
    case ANA_K_COLL:
    case ANA_K_COMM:
    case ANA_K_LIBCALL:
    case ANA_K_RANGE:
    case ANA_K_LABEL:
        if (!(t->flags & ANA_LOAD_SUMMARY))
            ana_libs_on_record(&t->libs, r);
        break;
    default: break;
    }
}

static void ana_trace_note_time(ana_trace *t, uint64_t time_ns)
{
    if (!t->has_time) {
        t->has_time = 1;
        t->first_ns = t->last_ns = time_ns;
        return;
    }
    if (time_ns < t->first_ns)
        t->first_ns = time_ns;
    if (time_ns > t->last_ns)
        t->last_ns = time_ns;
}

/* The trace whose arrays ana_trace_finish sorts: the comparators read its wide values. */
static const ana_trace *ana_trace_sorting;

static int ana_gpu_act_cmp(const void *a, const void *b)
{
    const ana_gpu_act *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    uint64_t cx = ana_trace_wide(ana_trace_sorting, x->corr_w);
    uint64_t cy = ana_trace_wide(ana_trace_sorting, y->corr_w);
    return cx < cy ? -1 : cx > cy;
}

static int ana_api_call_cmp(const void *a, const void *b)
{
    const ana_api_call *x = a, *y = b;
    const ana_trace *t = ana_trace_sorting;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    if (x->tid_w != y->tid_w) {
        uint64_t tx = ana_trace_wide(t, x->tid_w), ty = ana_trace_wide(t, y->tid_w);
        return tx < ty ? -1 : 1;
    }
    uint64_t cx = ana_trace_wide(t, x->corr_w), cy = ana_trace_wide(t, y->corr_w);
    return cx < cy ? -1 : cx > cy;
}

/* A launch recorded without its function (cuLaunchKernel: LAUNCH.kernel 0) takes the
 * kernel of the GPU_KERNEL with its corr, so the launch table names it. */
static void ana_trace_name_launches(ana_trace *t)
{
    for (size_t i = 0; i < t->n_gpu; i++) {
        const ana_gpu_act *a = &t->gpu[i];
        const ana_api_call *cc;
        uint64_t arg = ana_trace_wide(t, a->arg_w);
        if (a->type != ANA_GPU_KERNEL || !arg ||
            !(cc = ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w))))
            continue;
        ana_api_call *c = &t->calls[cc - t->calls];
        if (c->kind != ANA_K_LAUNCH || c->arg_w != 0 || ana_api_is_graph_launch(c->api))
            continue;
        ana_trace_kernel *k = ana_trace_kernel_get(t, arg); /* may grow the table */
        ana_trace_kernel *unknown = ana_trace_kernel_get(t, 0);
        unknown->launches--;
        k->launches++;
        if (c->ret != 0) {
            unknown->failed--;
            k->failed++;
        }
        c->arg_w = a->arg_w;
    }
}

/* 1 when ip lies in one of CUDA's own libraries (ana_trace_module.cuda_lib). A call
 * recorded by CUPTI's callback (not by a hook) was captured from inside libcupti, called
 * from the runtime or driver: those frames are CUDA's, not the program's. */
static int ana_trace_in_cuda_lib(uint64_t ip, void *arg)
{
    const ana_trace_module *m = ana_trace_module_at(arg, ip - 1);
    return m && m->cuda_lib;
}

/* Stack ids are resolved only now: a segment may use an id that a later segment of
 * another thread defines (docs/trace-format.md, "Interning"). */
void ana_trace_finish(ana_trace *t)
{
    ana_trace_index_modules(t);
    ana_py_merge(t);
    ana_stacks_trim_leading(&t->stacks, ana_trace_in_cuda_lib, t);
    ana_stacks_resolve(&t->stacks);
    for (size_t i = 0; i < t->n_mev; i++)
        t->mev[i].stack = ana_stacks_canon(&t->stacks, t->mev[i].stack);
    ana_mem_sort(t->mev, t->n_mev);
    ana_trace_sorting = t;
    ana_sort(t->gpu, t->n_gpu, sizeof(*t->gpu), ana_gpu_act_cmp);
    ana_sort(t->calls, t->n_calls, sizeof(*t->calls), ana_api_call_cmp);
    ana_trace_sorting = NULL;
    for (size_t i = 0; i < t->n_calls; i++)
        t->calls[i].stack_w = ana_trace_narrow(
            t, ana_stacks_canon(&t->stacks, ana_trace_wide(t, t->calls[i].stack_w)));
    ana_trace_index_calls(t);
    ana_trace_name_launches(t);
    ana_libs_finish(&t->libs);
    ana_sort(t->uses, t->n_uses, sizeof(*t->uses), ana_ptr_use_cmp);
    ana_trace_expand_tables(t);
}

ana_trace *ana_trace_new(const char *path, unsigned flags)
{
    ana_trace *t = ana_xcalloc(1, sizeof(*t));
    t->path = ana_name_dup(path, strlen(path)); /* a job directory's entries are anyone's names */
    t->flags = flags;
    t->source = "anatomist";
    ana_u64map_init(&t->kernel_idx);
    ana_u64map_init(&t->module_idx);
    ana_u64map_init(&t->device_idx);
    ana_u64map_init(&t->corr_map);
    ana_u64map_init(&t->call_ctx);
    ana_u64map_init(&t->wide_idx);
    ana_u64map_init(&t->table_dsts);
    ana_stacks_init(&t->stacks);
    ana_py_init(&t->py);
    ana_libs_init(&t->libs);
    return t;
}

void ana_trace_add(ana_trace *t, const ana_record *rec)
{
    if (rec->kind < ANA_K_COUNT)
        t->counts[rec->kind]++;
    ana_trace_note_time(t, rec->time_ns);
    ana_trace_on_record(t, rec);
    ana_trace_uses_of(t, rec);
}

/* 1 when the file starts like JSON ('{' or '[' after blanks) or gzip (1f 8b). */
static int ana_trace_is_foreign(const char *path)
{
    unsigned char b[64];
    /* What cannot be opened here (a FIFO, a device) the trace reader refuses in words. */
    int fd = ana_open_file(path, O_RDONLY, 0, NULL);
    if (fd < 0)
        return 0;
    ssize_t got = pread(fd, b, sizeof(b), 0);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return 1;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')
            continue;
        return b[i] == '{' || b[i] == '[';
    }
    return 0;
}

int ana_trace_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    ana_reader *rd;
    ana_record rec;
    int rc;
    *out = NULL;
    if (ana_trace_is_foreign(path))
        return ana_kineto_load(path, flags, out, err);
    if (ana_reader_open(path, &rd, err) != 0)
        return -1;
    ana_trace *t = ana_trace_new(path, flags);
    while ((rc = ana_reader_next(rd, &rec, err)) == 1)
        ana_trace_add(t, &rec);
    ana_reader_get_stats(rd, &t->stats);
    ana_reader_close(rd);
    if (rc < 0) {
        ana_trace_free(t);
        return -1;
    }
    ana_trace_finish(t);
    *out = t;
    return 0;
}

static void ana_trace_free_process(ana_trace_process *p)
{
    free(p->host);
    free(p->exe);
    for (size_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
}

void ana_trace_free(ana_trace *t)
{
    if (!t)
        return;
    ana_trace_free_process(&t->process);
    for (size_t i = 0; i < t->n_devices; i++)
        free(t->devices[i].name);
    for (size_t i = 0; i < t->n_modules; i++) {
        free(t->modules[i].path);
        free(t->modules[i].shown);
        free(t->modules[i].build_id);
    }
    for (size_t i = 0; i < t->n_kernels; i++)
        free(t->kernels[i].name);
    for (size_t i = 0; i < t->n_info; i++) {
        free(t->info[i].key);
        free(t->info[i].value);
    }
    free(t->devices);
    free(t->modules);
    free(t->kernels);
    free(t->info);
    ana_capture_free(t);
    free(t->mev);
    free(t->gpu);
    free(t->calls);
    free(t->uses);
    free(t->tables);
    free(t->table_ptrs);
    ana_u64map_free(&t->table_dsts);
    ana_u64map_free(&t->corr_map);
    free(t->corr_idx);
    ana_u64map_free(&t->call_ctx);
    free(t->wide);
    ana_u64map_free(&t->wide_idx);
    free(t->end_detail);
    free(t->path);
    ana_u64map_free(&t->kernel_idx);
    ana_u64map_free(&t->module_idx);
    ana_u64map_free(&t->device_idx);
    free(t->spans);
    ana_stacks_free(&t->stacks);
    ana_py_free(&t->py);
    ana_libs_free(&t->libs);
    free(t);
}

/* trace_records.c — each record of a trace into the model (trace.h ana_trace_add): counts,
 * interned tables (processes, modules, devices, kernels), the memory events, GPU
 * activities and API calls, INFO values and capture windows, library records (libs.h).
 * Part of model/: called by the importers through ana_trace_add and by trace.c; calls
 * only model/ and format/. */
#include "model/capture.h"
#include "model/trace.h"
#include "model/trace_int.h"
#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    size_t k;
    if (!ana_trace_kernel_index(t, id, &k)) {
        ANA_GROW(t->kernels, t->cap_kernels, t->n_kernels + 1);
        t->kernels[t->n_kernels] = (ana_trace_kernel){ .id = id };
        k = t->n_kernels++;
        if (id < ANA_TRACE_KERNEL_DENSE) {
            size_t n = t->n_kernel_dense ? t->n_kernel_dense : 64;
            while (n <= id)
                n *= 2;
            if (n != t->n_kernel_dense) {
                t->kernel_dense = ana_xrealloc(t->kernel_dense, n * sizeof(*t->kernel_dense));
                memset(t->kernel_dense + t->n_kernel_dense, 0,
                       (n - t->n_kernel_dense) * sizeof(*t->kernel_dense));
                t->n_kernel_dense = n;
            }
            t->kernel_dense[id] = (uint32_t)(k + 1);
        } else {
            ana_u64map_put(&t->kernel_idx, id, k);
        }
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
                               uint64_t stack, uint64_t corr, uint64_t arg,
                               uint64_t call, uint64_t lib)
{
    if (t->flags & ANA_LOAD_SUMMARY)
        return;
    ana_call_site s;
    memset(&s, 0, sizeof(s)); /* hashed and compared whole */
    s.tid_w = ana_trace_narrow(t, r->tid);
    s.stack_w = ana_trace_narrow(t, stack);
    s.ret = ana_i32(ret);
    s.api = ana_u16(api);
    s.kind = (uint8_t)r->kind;
    s.lib = ana_u8(lib);
    *(ana_api_call *)ana_sorter_slot(&t->call_sort) = (ana_api_call){
        .time_ns = r->time_ns, .corr_w = ana_trace_narrow(t, corr),
        .arg_w = ana_trace_narrow(t, arg), .call_w = ana_trace_narrow(t, call),
        .site = ana_trace_site_of(t, &s),
    };
}

static void ana_trace_on_launch(ana_trace *t, const ana_record *r)
{
    const ana_rec_launch *l = &r->u.launch;
    ana_trace_add_call(t, r, l->api, l->ret, l->stack, l->corr, l->kernel, l->call, l->lib);
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
    ana_mev *e = ana_sorter_slot(&t->mev_sort);
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

/* Keeps a GPU activity of lane l (its device, stream and type set here); nothing in
 * summary mode. */
static void ana_trace_add_act(ana_trace *t, const ana_record *r, ana_gpu_lane l, uint8_t type,
                              uint64_t corr, uint64_t dur, uint64_t arg, int64_t device,
                              uint64_t stream)
{
    if (t->flags & ANA_LOAD_SUMMARY)
        return;
    l.device = ana_i32(device);
    l.stream = (uint32_t)stream;
    l.type = type;
    ana_gpu_act v = {
        .start_ns = r->time_ns, .dur_w = ana_trace_narrow(t, dur),
        .corr_w = ana_trace_narrow(t, corr), .arg_w = ana_trace_narrow(t, arg),
        .lane = ana_trace_lane_of(t, &l),
    };
    *(ana_gpu_act *)ana_sorter_slot(&t->gpu_sort) = v;
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
    ana_trace_add_act(t, r, (ana_gpu_lane){ 0 }, ANA_GPU_KERNEL, g->corr, g->dur_ns, g->kernel,
                      g->device, g->stream);
}

static void ana_trace_on_gpu_copy(ana_trace *t, const ana_record *r)
{
    if (r->kind == ANA_K_GPU_MEMSET) {
        const ana_rec_gpu_memset *m = &r->u.gpu_memset;
        ana_trace_add_act(t, r, (ana_gpu_lane){ .dst_kind = ana_u8(m->mem_kind) }, ANA_GPU_MEMSET,
                          m->corr, m->dur_ns, m->bytes, m->device, m->stream);
        return;
    }
    const ana_rec_gpu_memcpy *m = &r->u.gpu_memcpy;
    ana_gpu_lane l = { .copy_kind = ana_u8(m->copy_kind), .src_kind = ana_u8(m->src_kind),
                       .dst_kind = ana_u8(m->dst_kind) };
    ana_trace_add_act(t, r, l, ANA_GPU_MEMCPY, m->corr, m->dur_ns, m->bytes, m->device, m->stream);
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
        ana_trace_add_call(t, r, m->api, m->ret, m->stack, m->corr, m->bytes, m->call, m->lib);
        break;
    }
    case ANA_K_MEMSET: {
        const ana_rec_memset *m = &r->u.memset;
        ana_copy_count(&t->memset_total, m->ret, m->bytes);
        ana_trace_add_call(t, r, m->api, m->ret, m->stack, m->corr, m->bytes, m->call, m->lib);
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

/* A launch recorded without its function (cuLaunchKernel: LAUNCH.kernel 0) takes the
 * kernel of the GPU_KERNEL with its corr, so the launch table names it. */
void ana_trace_name_launches(ana_trace *t)
{
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));) {
        uint64_t arg = ana_trace_wide(t, a->arg_w);
        size_t i;
        if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL || !arg ||
            (i = ana_trace_call_index(t, ana_trace_wide(t, a->corr_w))) == SIZE_MAX)
            continue;
        ana_api_call c = ana_trace_call(t, i);
        const ana_call_site *s = ana_trace_call_site(t, &c);
        if (s->kind != ANA_K_LAUNCH || c.arg_w != 0 || ana_api_is_graph_launch(s->api))
            continue;
        ana_trace_kernel *k = ana_trace_kernel_get(t, arg); /* may grow the table */
        ana_trace_kernel *unknown = ana_trace_kernel_get(t, 0);
        unknown->launches--;
        k->launches++;
        if (s->ret != 0) {
            unknown->failed--;
            k->failed++;
        }
        ana_calls_set_arg(&t->calls, i, a->arg_w);
    }
    ana_trace_gpu_end(&it);
    ana_calls_apply(&t->calls);
}

void ana_trace_add(ana_trace *t, const ana_record *rec)
{
    if (rec->kind < ANA_K_COUNT)
        t->counts[rec->kind]++;
    ana_trace_note_time(t, rec->time_ns);
    ana_trace_on_record(t, rec);
    ana_trace_uses_of(t, rec);
}


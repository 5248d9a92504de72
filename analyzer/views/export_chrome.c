/* export_chrome.c — a trace as a Chrome trace event file (JSON object format), for
 * Perfetto and chrome://tracing (docs/export.md, "Chrome trace").
 *
 * Tracks: a process per GPU device with a thread per CUDA stream (kernels, copies, sets)
 * and a thread per host thread that opened NVTX ranges (their GPU projection); a process
 * for the host with a thread per host thread (API calls, allocations and frees, GEMMs,
 * collectives, NVTX ranges and marks) and the counter "device memory" by category.
 * Timestamps are µs since the trace's first record, written exactly to the ns.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/export.h"

#include "analyses/classify.h"
#include "views/export_chrome_sf.h"
#include "views/report_write.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* Larger than any Linux pid or tid (pid_max is at most 2^22), so no real id collides. */
#define ANA_CHROME_GPU_PID 1000000000ull  /* + device */
#define ANA_CHROME_NVTX_TID 1000000000ull /* + index of the host thread */

typedef struct ana_chrome {
    const ana_report *r;
    const ana_trace *t;
    ana_json j;
    uint64_t pid;           /* of the host process */
    char **knames;          /* display name per t->kernels index */
    ana_gpu_act *acts;      /* the trace's GPU activities, in memory: an export holds them all */
    size_t n_acts;
    ana_u64map act_by_corr; /* corr -> first index into acts */
    ana_u64map tid_idx;     /* host tid -> index into tids */
    ana_u64map proj;        /* (device << 32 | tid index) of each projection track used */
    uint64_t *tids;
    size_t n_tids, cap_tids;
    uint64_t async_id;      /* ids of start/end ranges */
    ana_chrome_frames frames; /* stackFrames */
} ana_chrome;

/* Opens an event; the caller adds what else it has and closes it. */
static void ana_chrome_open(ana_chrome *c, const char *ph, const char *name, const char *cat,
                            uint64_t pid, uint64_t tid, uint64_t abs_ns)
{
    ana_json *j = &c->j;
    ana_json_obj_begin(j);
    ana_json_kstr(j, "ph", ph);
    if (name)
        ana_json_kstr(j, "name", name);
    if (cat)
        ana_json_kstr(j, "cat", cat);
    ana_json_ku64(j, "pid", pid);
    ana_json_ku64(j, "tid", tid);
    ana_json_key(j, "ts");
    ana_json_fixed(j, ana_trace_rel_ns(c->t, abs_ns), 3);
}

static void ana_chrome_dur(ana_chrome *c, uint64_t ns)
{
    ana_json_key(&c->j, "dur");
    ana_json_fixed(&c->j, ns, 3);
}

static void ana_chrome_instant(ana_chrome *c, const char *name, const char *cat, uint64_t tid,
                               uint64_t abs_ns)
{
    ana_chrome_open(c, "i", name, cat, c->pid, tid, abs_ns);
    ana_json_kstr(&c->j, "s", "t");
}

static void ana_chrome_args(ana_chrome *c)
{
    ana_json_key(&c->j, "args");
    ana_json_obj_begin(&c->j);
}

/* Closes the args object and the event. */
static void ana_chrome_close(ana_chrome *c)
{
    ana_json_obj_end(&c->j);
    ana_json_obj_end(&c->j);
}

static void ana_chrome_hex(ana_chrome *c, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
    ana_json_kstr(&c->j, key, b);
}

/* process_name or thread_name, and its sort index. */
static void ana_chrome_meta(ana_chrome *c, const char *what, uint64_t pid, uint64_t tid,
                            const char *name, uint64_t sort)
{
    char key[32];
    ana_json *j = &c->j;
    for (int i = 0; i < 2; i++) {
        snprintf(key, sizeof(key), "%s_%s", what, i ? "sort_index" : "name");
        ana_json_obj_begin(j);
        ana_json_kstr(j, "ph", "M");
        ana_json_kstr(j, "name", key);
        ana_json_ku64(j, "pid", pid);
        ana_json_ku64(j, "tid", tid);
        ana_chrome_args(c);
        if (i)
            ana_json_ku64(j, "sort_index", sort);
        else
            ana_json_kstr(j, "name", name);
        ana_chrome_close(c);
    }
}

static void ana_chrome_add_tid(ana_chrome *c, uint64_t tid)
{
    uint64_t v;
    if (ana_u64map_get(&c->tid_idx, tid, &v))
        return;
    ana_u64map_put(&c->tid_idx, tid, c->n_tids);
    ANA_GROW(c->tids, c->cap_tids, c->n_tids + 1);
    c->tids[c->n_tids++] = tid;
}

/* Every host thread that left an event, in order of first appearance by kind. */
static void ana_chrome_collect_tids(ana_chrome *c)
{
    const ana_trace *t = c->t;
    ana_u64map_init(&c->tid_idx);
    if (t->process.present)
        ana_chrome_add_tid(c, t->process.pid);
    for (size_t i = 0; i < t->n_calls; i++)
        ana_chrome_add_tid(c, ana_trace_wide(t, ana_trace_call_site_at(t, i)->tid_w));
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &t->mev, 0);
    for (const ana_mev *e; (e = ana_spill_iter_next(&it));)
        if (e->type == ANA_MEV_ALLOC || e->type == ANA_MEV_FREE)
            ana_chrome_add_tid(c, e->tid);
    ana_spill_iter_end(&it);
    ana_spill_iter_begin(&it, &t->libs.ranges, 0);
    for (const ana_range_ev *e; (e = ana_spill_iter_next(&it));)
        ana_chrome_add_tid(c, e->tid);
    ana_spill_iter_end(&it);
    ana_spill_iter_begin(&it, &t->libs.colls, 0);
    for (const ana_coll_call *k; (k = ana_spill_iter_next(&it));)
        ana_chrome_add_tid(c, k->tid);
    ana_spill_iter_end(&it);
}

static const char *ana_chrome_device_name(const ana_trace *t, int32_t device)
{
    for (size_t i = 0; i < t->n_devices; i++)
        if (t->devices[i].ordinal == device && t->devices[i].name)
            return t->devices[i].name;
    return "unknown device";
}

static void ana_chrome_tracks(ana_chrome *c)
{
    const ana_gpu_result *g = &c->r->gpu;
    char name[160];
    snprintf(name, sizeof(name), "host (pid %llu)", (unsigned long long)c->pid);
    ana_chrome_meta(c, "process", c->pid, c->pid, name, 0);
    for (size_t i = 0; i < c->n_tids; i++) {
        int main_thread = c->t->process.present && c->tids[i] == c->t->process.pid;
        snprintf(name, sizeof(name), "%s %llu", main_thread ? "main thread" : "thread",
                 (unsigned long long)c->tids[i]);
        ana_chrome_meta(c, "thread", c->pid, c->tids[i], name, i);
    }
    for (size_t i = 0; i < g->n_devices; i++) {
        int32_t d = g->devices[i].device;
        uint64_t pid = ANA_CHROME_GPU_PID + (uint32_t)d;
        snprintf(name, sizeof(name), "GPU %d (%s)", d, ana_chrome_device_name(c->t, d));
        ana_chrome_meta(c, "process", pid, pid, name, 1 + i);
    }
    for (size_t i = 0; i < g->n_streams; i++) {
        snprintf(name, sizeof(name), "stream %u", g->streams[i].stream);
        ana_chrome_meta(c, "thread", ANA_CHROME_GPU_PID + (uint32_t)g->streams[i].device,
                        g->streams[i].stream, name, i);
    }
}

/* A flow (format v2) from a call's slice to the GPU work it caused: both slices carry the
 * correlation id, so viewers bind the arrow to them exactly. */
static void ana_chrome_flow(ana_chrome *c, uint64_t corr, const char *dir)
{
    ana_json_ku64(&c->j, "bind_id", corr);
    ana_json_key(&c->j, dir);
    ana_json_bool(&c->j, 1);
}

static void ana_chrome_act(ana_chrome *c, const ana_gpu_act *a)
{
    const ana_trace *t = c->t;
    uint64_t arg = ana_trace_wide(t, a->arg_w), dur = ana_trace_wide(t, a->dur_w);
    uint64_t corr = ana_trace_wide(t, a->corr_w);
    const ana_gpu_lane *l = ana_trace_gpu_lane(t, a);
    const ana_trace_kernel *k = l->type == ANA_GPU_KERNEL ? ana_trace_kernel_by_id(t, arg) : NULL;
    const char *cat = ana_class_name(ANA_CLASS_MEMORY), *name = "memset";
    char buf[48];
    uint64_t pid = ANA_CHROME_GPU_PID + (uint32_t)l->device;
    if (l->type == ANA_GPU_KERNEL) {
        name = k ? c->knames[k - t->kernels] : "(unknown function)";
        cat = k ? ana_report_kernel_class(c->r, k) : ana_class_name(ANA_CLASS_OTHER);
    } else if (l->type == ANA_GPU_MEMCPY) {
        snprintf(buf, sizeof(buf), "memcpy %s", ana_gpu_dir_names[ana_gpu_dir_of(l->copy_kind)]);
        name = buf;
    }
    ana_chrome_open(c, "X", name, cat, pid, l->stream, a->start_ns);
    ana_chrome_dur(c, dur);
    if (corr && ana_trace_call_index(t, corr) != SIZE_MAX)
        ana_chrome_flow(c, corr, "flow_in");
    ana_chrome_args(c);
    ana_json_ku64(&c->j, "corr", corr);
    if (l->type == ANA_GPU_KERNEL) {
        ana_json_ku64(&c->j, "kernel_id", arg);
    } else {
        ana_json_ku64(&c->j, "bytes", arg);
        if (dur)
            ana_json_kdbl(&c->j, "gb_per_s", (double)arg / (double)dur);
    }
    if (l->type == ANA_GPU_MEMCPY) {
        int dir = ana_gpu_dir_of(l->copy_kind);
        if (dir == ANA_DIR_HTOD || dir == ANA_DIR_DTOH)
            ana_json_kstr(&c->j, "host_memory", ana_gpu_host_names[ana_gpu_host_of(l)]);
    }
    ana_chrome_close(c);
}

/* Closes the args object, names the event's call stack ("sf"), closes the event. */
static void ana_chrome_close_sf(ana_chrome *c, uint64_t stack)
{
    uint64_t leaf = ana_chrome_frames_leaf(&c->frames, stack);
    ana_json_obj_end(&c->j);
    if (leaf)
        ana_json_ku64(&c->j, "sf", leaf);
    ana_json_obj_end(&c->j);
}

static void ana_chrome_call(ana_chrome *c, const ana_api_call *a)
{
    char buf[32];
    const ana_call_site *s = ana_trace_call_site(c->t, a);
    uint64_t corr = ana_trace_wide(c->t, a->corr_w);
    ana_chrome_open(c, "X", ana_report_api_name(s->api, buf, sizeof(buf)), "api", c->pid,
                    ana_trace_wide(c->t, s->tid_w), a->time_ns);
    uint64_t act;
    ana_chrome_dur(c, 0);
    if (corr && ana_u64map_get(&c->act_by_corr, corr, &act))
        ana_chrome_flow(c, corr, "flow_out");
    ana_chrome_args(c);
    ana_json_ku64(&c->j, "corr", corr);
    ana_json_ki64(&c->j, "ret", s->ret);
    if (s->kind == ANA_K_LAUNCH) {
        const ana_trace_kernel *k = ana_trace_kernel_by_id(c->t, ana_trace_wide(c->t, a->arg_w));
        ana_json_kstr(&c->j, "kernel", k ? c->knames[k - c->t->kernels] : NULL);
    } else {
        ana_json_ku64(&c->j, "bytes", ana_trace_wide(c->t, a->arg_w));
    }
    ana_json_ku64(&c->j, "stack_id", ana_trace_wide(c->t, s->stack_w));
    ana_chrome_close_sf(c, ana_trace_wide(c->t, s->stack_w));
}

static void ana_chrome_life(ana_chrome *c, ana_mev_reader *rd, size_t i)
{
    const ana_mem_life *l = &c->r->mem.lives[i];
    char buf[32];
    const ana_mc_alloc *mc = ana_memcat_of_life(&c->r->mcat, i);
    const char *cat = mc ? ana_mcat_name(mc->cat) : NULL;
    ana_chrome_instant(c, ana_report_api_name(l->api, buf, sizeof(buf)), "memory",
                       ana_mev_get(rd, l->a_idx)->tid, l->t_alloc);
    ana_chrome_args(c);
    ana_json_ku64(&c->j, "size", l->size);
    ana_chrome_hex(c, "ptr", l->ptr);
    ana_json_kstr(&c->j, "category", cat);
    ana_json_ku64(&c->j, "stack_id", l->stack == ANA_MEM_STACK_DRIVER ? 0 : l->stack);
    ana_chrome_close_sf(c, l->stack);
    if (l->f_idx == ANA_MEM_LIVE)
        return;
    const ana_mev *f = ana_mev_get(rd, l->f_idx);
    ana_chrome_instant(c, ana_report_api_name(f->api, buf, sizeof(buf)), "memory", f->tid,
                       l->t_free);
    ana_chrome_args(c);
    ana_json_ku64(&c->j, "size", l->size);
    ana_chrome_hex(c, "ptr", l->ptr);
    ana_json_kstr(&c->j, "category", cat);
    ana_chrome_close(c);
}

static void ana_chrome_memory(ana_chrome *c)
{
    const ana_trace *t = c->t;
    char buf[32], name[64];
    ana_mev_reader rd;
    ana_spill_iter it;
    ana_mev_reader_open(&rd, &t->mev);
    for (size_t i = 0; i < c->r->mem.n_lives; i++)
        ana_chrome_life(c, &rd, i);
    ana_mev_reader_close(&rd);
    ana_spill_iter_begin(&it, &t->mev, 0);
    for (const ana_mev *e; (e = ana_spill_iter_next(&it));) {
        if (e->type != ANA_MEV_ALLOC || e->ret == 0)
            continue;
        snprintf(name, sizeof(name), "%s failed", ana_report_api_name(e->api, buf, sizeof(buf)));
        ana_chrome_instant(c, name, "memory", e->tid, e->time_ns);
        ana_chrome_args(c);
        ana_json_ku64(&c->j, "size", e->size);
        ana_json_ki64(&c->j, "ret", e->ret);
        ana_json_ku64(&c->j, "stack_id", e->stack);
        ana_chrome_close_sf(c, e->stack);
    }
    ana_spill_iter_end(&it);
}

/* GEMMs at their first kernel launch (the GEMM record has no time of its own). */
static void ana_chrome_gemms(ana_chrome *c)
{
    const ana_trace *t = c->t;
    ana_u64map first;
    uint64_t idx;
    char buf[32];
    ana_libcalls_first_calls(t, &first);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &t->libs.gemms, 0);
    for (const ana_gemm_call *g; (g = ana_spill_iter_next(&it));) {
        const ana_gemm_shape *s = &t->libs.shapes[g->shape];
        if (!ana_u64map_get(&first, g->call, &idx))
            continue;
        ana_chrome_instant(c, ana_report_api_name(s->api, buf, sizeof(buf)), "gemm",
                           ana_trace_wide(t, ana_trace_call_site_at(t, idx)->tid_w),
                           ana_trace_call(t, idx).time_ns);
        ana_chrome_args(c);
        ana_json_ku64(&c->j, "call", g->call);
        ana_json_ku64(&c->j, "m", s->m);
        ana_json_ku64(&c->j, "n", s->n);
        ana_json_ku64(&c->j, "k", s->k);
        ana_json_ku64(&c->j, "batch", s->batch);
        ana_json_kstr(&c->j, "precision", ana_prec_name(s->prec));
        ana_json_ku64(&c->j, "flops", ana_gemm_call_flops(s));
        ana_chrome_close(c);
    }
    ana_spill_iter_end(&it);
    ana_u64map_free(&first);
}

static void ana_chrome_colls(ana_chrome *c)
{
    char buf[32];
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &c->t->libs.colls, 0);
    for (const ana_coll_call *k; (k = ana_spill_iter_next(&it));) {
        ana_chrome_instant(c, ana_report_api_name(k->api, buf, sizeof(buf)), "nccl", k->tid,
                           k->time_ns);
        ana_chrome_args(c);
        ana_json_ku64(&c->j, "call", k->call);
        ana_json_kstr(&c->j, "op", ana_nccl_op_name(k->api));
        ana_json_ku64(&c->j, "bytes", k->bytes);
        ana_json_kstr(&c->j, "dtype", ana_nccl_type_name(k->dtype));
        ana_chrome_hex(c, "comm", k->comm);
        ana_json_ku64(&c->j, "group", k->group);
        ana_chrome_close(c);
    }
    ana_spill_iter_end(&it);
}

/* The GPU work a push/pop range launched: from the first start to the last end of the
 * activities of the calls its thread made inside it, on the device of the first. */
static void ana_chrome_projection(ana_chrome *c, const ana_range_span *s, const char *name)
{
    const ana_trace *t = c->t;
    uint64_t lo = UINT64_MAX, hi = 0, idx, tix = 0;
    int32_t device = 0;
    for (size_t i = ana_trace_call_bound(t, s->t0, 0); i < t->n_calls; i++) {
        ana_api_call call = ana_trace_call(t, i);
        const ana_api_call *a = &call;
        if (a->time_ns > s->t1)
            break;
        uint64_t corr = ana_trace_wide(t, a->corr_w);
        if (ana_trace_wide(t, ana_trace_call_site(t, a)->tid_w) != s->tid || !corr ||
            !ana_u64map_get(&c->act_by_corr, corr, &idx))
            continue;
        const ana_gpu_act *g = &c->acts[idx];
        int32_t gdev = ana_trace_gpu_lane(t, g)->device;
        if (lo == UINT64_MAX)
            device = gdev;
        else if (gdev != device)
            continue;
        lo = g->start_ns < lo ? g->start_ns : lo;
        uint64_t end = g->start_ns + ana_trace_wide(t, g->dur_w);
        hi = end > hi ? end : hi;
    }
    if (lo == UINT64_MAX)
        return;
    ana_u64map_get(&c->tid_idx, s->tid, &tix);
    ana_u64map_put(&c->proj, (uint64_t)(uint32_t)device << 32 | tix, 1);
    ana_chrome_open(c, "X", name, "nvtx", ANA_CHROME_GPU_PID + (uint32_t)device,
                    ANA_CHROME_NVTX_TID + tix, lo);
    ana_chrome_dur(c, hi - lo);
    ana_chrome_args(c);
    ana_json_ku64(&c->j, "host_tid", s->tid);
    ana_chrome_close(c);
}

static void ana_chrome_range(void *arg, const ana_range_span *s)
{
    ana_chrome *c = arg;
    const ana_libs *l = &c->t->libs;
    const char *name = ana_libs_str(l, s->name);
    if (s->kind == ANA_RANGE_PUSH) {
        ana_chrome_open(c, "X", name, "nvtx", c->pid, s->tid, s->t0);
        ana_chrome_dur(c, s->t1 - s->t0);
        ana_chrome_args(c);
        ana_json_kstr(&c->j, "domain", ana_libs_domain_name(l, s->domain));
        ana_json_ku64(&c->j, "depth", s->depth);
        ana_chrome_close(c);
        ana_chrome_projection(c, s, name);
        return;
    }
    /* start/end ranges may overlap anything: async slices, on the opener's thread */
    c->async_id++;
    for (int e = 0; e < 2; e++) {
        ana_chrome_open(c, e ? "e" : "b", name, "nvtx", c->pid, s->tid, e ? s->t1 : s->t0);
        ana_chrome_hex(c, "id", c->async_id);
        ana_chrome_args(c);
        ana_json_kstr(&c->j, "domain", ana_libs_domain_name(l, s->domain));
        ana_chrome_close(c);
    }
}

static void ana_chrome_nvtx(ana_chrome *c)
{
    const ana_libs *l = &c->t->libs;
    ana_nvtx_pair(c->t, ana_chrome_range, c, NULL);
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->ranges, 0);
    for (const ana_range_ev *e; (e = ana_spill_iter_next(&it));) {
        if (e->op != ANA_RANGE_MARK)
            continue;
        ana_chrome_instant(c, ana_libs_str(l, e->name), "nvtx", e->tid, e->time_ns);
        ana_chrome_args(c);
        ana_json_kstr(&c->j, "domain", ana_libs_domain_name(l, e->domain));
        ana_chrome_close(c);
    }
    ana_spill_iter_end(&it);
    /* the projection tracks, named after the threads that have one */
    for (size_t i = 0; i < c->proj.cap; i++) {
        if (!c->proj.used[i])
            continue;
        uint64_t tix = c->proj.keys[i] & 0xffffffffu;
        char name[64];
        snprintf(name, sizeof(name), "NVTX (GPU) of thread %llu", (unsigned long long)c->tids[tix]);
        ana_chrome_meta(c, "thread", ANA_CHROME_GPU_PID + (c->proj.keys[i] >> 32),
                        ANA_CHROME_NVTX_TID + tix, name, c->r->gpu.n_streams + tix);
    }
}

static void ana_chrome_counter(ana_chrome *c)
{
    const ana_report *r = c->r;
    ana_mem_point *p = NULL;
    size_t n = ana_memcat_timeline(&r->mcat, &r->mem, r->t, 0, &p);
    for (size_t i = 0; i < n; i++) {
        ana_chrome_open(c, "C", "device memory", NULL, c->pid, c->pid, p[i].time_ns);
        ana_chrome_args(c);
        for (int k = 0; k < ANA_MCAT_COUNT; k++)
            ana_json_ku64(&c->j, ana_mcat_name(k), p[i].by[k]);
        ana_chrome_close(c);
    }
    free(p);
}

static void ana_chrome_other(ana_chrome *c)
{
    const ana_trace *t = c->t;
    ana_json *j = &c->j;
    ana_json_key(j, "otherData");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "exporter", "anatomist export");
    ana_json_kstr(j, "trace", t->path);
    ana_json_kstr(j, "source", t->source);
    ana_json_ku64(j, "first_ns", t->first_ns);
    ana_json_ku64(j, "duration_ns", t->has_time ? t->last_ns - t->first_ns : 0);
    ana_json_ku64(j, "peak_bytes", c->r->mem.peak_bytes);
    ana_json_ku64(j, "peak_ns", ana_trace_rel_ns(t, c->r->mem.peak_time_ns));
    ana_json_obj_end(j);
}

static void ana_chrome_setup(ana_chrome *c, const ana_report *r, FILE *out)
{
    const ana_trace *t = r->t;
    memset(c, 0, sizeof(*c));
    c->r = r;
    c->t = t;
    c->pid = t->process.present ? t->process.pid : 0;
    ana_json_init(&c->j, out);
    c->j.inline_depth = 2; /* one event a line: millions of them, indented, triple the size */
    c->knames = ana_xcalloc(t->n_kernels + 1, sizeof(char *));
    for (size_t i = 0; i < t->n_kernels; i++)
        c->knames[i] = ana_report_kernel_name(&t->kernels[i]);
    ana_u64map_init(&c->act_by_corr);
    ana_u64map_init(&c->proj);
    ana_chrome_frames_init(&c->frames, &t->stacks, r->sym);
    c->acts = ana_trace_gpu_all(t, &c->n_acts);
    for (size_t i = c->n_acts; i-- > 0;) { /* backwards: the first activity of a corr wins */
        uint64_t corr = ana_trace_wide(t, c->acts[i].corr_w);
        if (corr)
            ana_u64map_put(&c->act_by_corr, corr, i);
    }
    ana_chrome_collect_tids(c);
}

static void ana_chrome_cleanup(ana_chrome *c)
{
    for (size_t i = 0; i < c->t->n_kernels; i++)
        free(c->knames[i]);
    free(c->knames);
    free(c->tids);
    free(c->acts);
    ana_u64map_free(&c->act_by_corr);
    ana_u64map_free(&c->tid_idx);
    ana_u64map_free(&c->proj);
    ana_chrome_frames_free(&c->frames);
}

int ana_export_chrome(const ana_report *r, FILE *out)
{
    ana_chrome c;
    ana_chrome_setup(&c, r, out);
    ana_json_obj_begin(&c.j);
    ana_json_kstr(&c.j, "displayTimeUnit", "ns");
    ana_json_key(&c.j, "traceEvents");
    ana_json_arr_begin(&c.j);
    ana_chrome_tracks(&c);
    for (size_t i = 0; i < c.n_acts; i++)
        ana_chrome_act(&c, &c.acts[i]);
    for (size_t i = 0; i < r->t->n_calls; i++) {
        ana_api_call call = ana_trace_call(r->t, i);
        ana_chrome_call(&c, &call);
    }
    ana_chrome_memory(&c);
    ana_chrome_gemms(&c);
    ana_chrome_colls(&c);
    ana_chrome_nvtx(&c);
    ana_chrome_counter(&c);
    ana_json_arr_end(&c.j);
    ana_chrome_frames_write(&c.frames, &c.j);
    ana_chrome_other(&c);
    ana_json_obj_end(&c.j);
    ana_json_finish(&c.j);
    ana_chrome_cleanup(&c);
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

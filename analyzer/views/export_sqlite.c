/* export_sqlite.c — a trace as an SQLite database, one table per kind of thing (schema in
 * docs/export.md, "SQLite"; the version is meta.schema_version). Every row is inserted
 * through a prepared statement inside one transaction, with the journal off: the file is
 * new, and a failed export is deleted by the caller, so nothing needs rolling back.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/export.h"

#include "analyses/classify.h"
#include "views/export_sqlite_schema.h"
#include "views/report_write.h"
#include "model/util.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ana_sq {
    sqlite3 *db;
    sqlite3_stmt *st; /* the insert being filled */
    int col;          /* its next parameter */
    int failed;
    char *err;
    size_t cap;
    sqlite3_stmt *str_ins, *str_sel;
    ana_u64map str_ids; /* address of a string -> strings.id */
    int64_t *kname_ids; /* strings.id of each t->kernels entry's display name */
    const ana_report *r;
    const ana_trace *t;
} ana_sq;

static void ana_sq_fail(ana_sq *q, const char *what)
{
    if (!q->failed)
        snprintf(q->err, q->cap, "%s: %s", what, sqlite3_errmsg(q->db));
    q->failed = 1;
}

static void ana_sq_exec(ana_sq *q, const char *sql)
{
    if (!q->failed && sqlite3_exec(q->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        ana_sq_fail(q, "sqlite");
}

static void ana_sq_begin(ana_sq *q, const char *sql)
{
    sqlite3_finalize(q->st);
    q->st = NULL;
    q->col = 1;
    if (!q->failed && sqlite3_prepare_v2(q->db, sql, -1, &q->st, NULL) != SQLITE_OK)
        ana_sq_fail(q, "sqlite prepare");
}

static void ana_sq_i(ana_sq *q, int64_t v)
{
    if (!q->failed && sqlite3_bind_int64(q->st, q->col++, v) != SQLITE_OK)
        ana_sq_fail(q, "sqlite bind");
}

/* Addresses and ids above INT64_MAX are stored as their two's-complement value. */
static void ana_sq_u(ana_sq *q, uint64_t v) { ana_sq_i(q, (int64_t)v); }

static void ana_sq_null(ana_sq *q)
{
    if (!q->failed && sqlite3_bind_null(q->st, q->col++) != SQLITE_OK)
        ana_sq_fail(q, "sqlite bind");
}

static void ana_sq_t(ana_sq *q, const char *s)
{
    if (!s)
        ana_sq_null(q);
    else if (!q->failed && sqlite3_bind_text(q->st, q->col++, s, -1, SQLITE_TRANSIENT) != SQLITE_OK)
        ana_sq_fail(q, "sqlite bind");
}

static void ana_sq_row(ana_sq *q)
{
    if (q->failed)
        return;
    if (sqlite3_step(q->st) != SQLITE_DONE)
        ana_sq_fail(q, "sqlite insert");
    sqlite3_reset(q->st);
    q->col = 1;
}

/* strings.id of s (interned once per address; equal strings share a row); -1 for NULL. */
static int64_t ana_sq_str(ana_sq *q, const char *s)
{
    uint64_t id;
    if (!s || q->failed)
        return -1;
    if (ana_u64map_get(&q->str_ids, (uintptr_t)s, &id))
        return (int64_t)id;
    sqlite3_bind_text(q->str_ins, 1, s, -1, SQLITE_STATIC);
    if (sqlite3_step(q->str_ins) != SQLITE_DONE)
        ana_sq_fail(q, "sqlite strings");
    sqlite3_reset(q->str_ins);
    sqlite3_bind_text(q->str_sel, 1, s, -1, SQLITE_STATIC);
    if (sqlite3_step(q->str_sel) == SQLITE_ROW)
        id = (uint64_t)sqlite3_column_int64(q->str_sel, 0);
    else
        ana_sq_fail(q, "sqlite strings"), id = 0;
    sqlite3_reset(q->str_sel);
    ana_u64map_put(&q->str_ids, (uintptr_t)s, id);
    return (int64_t)id;
}

/* A strings.id column (NULL for -1). */
static void ana_sq_sid(ana_sq *q, int64_t id) { id < 0 ? ana_sq_null(q) : ana_sq_i(q, id); }

static void ana_sq_meta(ana_sq *q, const char *key, const char *text, int64_t v)
{
    ana_sq_t(q, key);
    text ? ana_sq_t(q, text) : ana_sq_i(q, v);
    ana_sq_row(q);
}

static void ana_sq_meta_rows(ana_sq *q)
{
    const ana_trace *t = q->t;
    const ana_report *r = q->r;
    char ver[32], *cmd = ana_report_cmdline(t);
    snprintf(ver, sizeof(ver), "%u.%u", (unsigned)t->stats.major, (unsigned)t->stats.minor);
    ana_sq_begin(q, "INSERT INTO meta VALUES(?, ?)");
    ana_sq_meta(q, "schema_version", NULL, ANA_SQ_SCHEMA_VERSION);
    ana_sq_meta(q, "trace_path", t->path, 0);
    ana_sq_meta(q, "trace_format", ver, 0);
    ana_sq_meta(q, "source", t->source, 0);
    ana_sq_meta(q, "first_ns", NULL, (int64_t)t->first_ns);
    ana_sq_meta(q, "last_ns", NULL, (int64_t)t->last_ns);
    ana_sq_meta(q, "duration_ns", NULL, t->has_time ? (int64_t)(t->last_ns - t->first_ns) : 0);
    if (t->process.present) {
        ana_sq_meta(q, "pid", NULL, (int64_t)t->process.pid);
        ana_sq_meta(q, "host", t->process.host ? t->process.host : "", 0);
        ana_sq_meta(q, "rank", NULL, t->process.rank);
        ana_sq_meta(q, "world_size", NULL, t->process.world_size);
    }
    ana_sq_meta(q, "cmdline", cmd ? cmd : "", 0);
    ana_sq_meta(q, "peak_bytes", NULL, (int64_t)r->mem.peak_bytes);
    ana_sq_meta(q, "peak_ns", NULL, (int64_t)r->mem.peak_time_ns);
    ana_sq_meta(q, "peak_idx", NULL, (int64_t)r->mem.peak_idx);
    ana_sq_meta(q, "live_end_bytes", NULL, (int64_t)r->mem.live_end_bytes);
    ana_sq_meta(q, "steps_method", ana_steps_method_name(r->anat.steps.method), 0);
    free(cmd);
}

static void ana_sq_devices(ana_sq *q)
{
    const ana_trace *t = q->t;
    const ana_gpu_result *g = &q->r->gpu;
    ana_sq_begin(q, "INSERT OR REPLACE INTO devices VALUES(?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < t->n_devices; i++) {
        const ana_trace_device *d = &t->devices[i];
        ana_sq_i(q, d->ordinal);
        ana_sq_t(q, d->name);
        ana_sq_u(q, d->total_mem);
        ana_sq_u(q, d->sm_count);
        ana_sq_u(q, d->cc_major);
        ana_sq_u(q, d->cc_minor);
        ana_sq_row(q);
    }
    ana_sq_begin(q, "INSERT INTO streams VALUES(?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < g->n_streams; i++) {
        const ana_gpu_stream *s = &g->streams[i];
        ana_sq_i(q, s->device);
        ana_sq_u(q, s->stream);
        ana_sq_u(q, s->kernels);
        ana_sq_u(q, s->memcpys);
        ana_sq_u(q, s->memsets);
        ana_sq_u(q, s->busy_ns);
        ana_sq_row(q);
    }
}

static void ana_sq_kernel_names(ana_sq *q, char **names)
{
    const ana_trace *t = q->t;
    ana_sq_begin(q, "INSERT OR REPLACE INTO kernel_names VALUES(?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < t->n_kernels; i++) {
        const ana_trace_kernel *k = &t->kernels[i];
        q->kname_ids[i] = ana_sq_str(q, names[i]);
        ana_sq_u(q, k->id);
        ana_sq_sid(q, q->kname_ids[i]);
        ana_sq_sid(q, ana_sq_str(q, k->name));
        ana_sq_t(q, ana_report_kernel_class(q->r, k));
        ana_sq_u(q, k->launches);
        ana_sq_u(q, k->failed);
        ana_sq_row(q);
    }
}

static const char *ana_sq_mem_kind(uint8_t kind)
{
    static const char *const names[] = { "unknown", "pageable", "pinned", "device", "array",
                                         "managed", "device_static", "managed_static" };
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

/* One pass per table keeps each on one prepared statement. */
static void ana_sq_activities(ana_sq *q, int type)
{
    static const char *const sql[] = {
        "INSERT INTO kernels VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "INSERT INTO copies VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "INSERT INTO memsets VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
    };
    const ana_trace *t = q->t;
    ana_sq_begin(q, sql[type]);
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; !q->failed && (a = ana_trace_gpu_next(&it));) {
        uint64_t arg = ana_trace_wide(t, a->arg_w), dur = ana_trace_wide(t, a->dur_w);
        const ana_trace_kernel *k = type == ANA_GPU_KERNEL ? ana_trace_kernel_by_id(t, arg) : NULL;
        const ana_gpu_lane *l = ana_trace_gpu_lane(t, a);
        if (l->type != type)
            continue;
        ana_sq_u(q, a->start_ns);
        ana_sq_u(q, a->start_ns + dur);
        ana_sq_u(q, dur);
        ana_sq_u(q, arg); /* kernel_id, or bytes */
        if (type == ANA_GPU_KERNEL) {
            ana_sq_sid(q, k ? q->kname_ids[k - t->kernels] : -1);
            ana_sq_t(q, k ? ana_report_kernel_class(q->r, k) : ana_class_name(ANA_CLASS_OTHER));
        } else if (type == ANA_GPU_MEMCPY) {
            ana_sq_t(q, ana_gpu_dir_names[ana_gpu_dir_of(l->copy_kind)]);
            ana_sq_u(q, l->copy_kind);
            ana_sq_t(q, ana_sq_mem_kind(l->src_kind));
        }
        if (type != ANA_GPU_KERNEL)
            ana_sq_t(q, ana_sq_mem_kind(l->dst_kind));
        ana_sq_i(q, l->device);
        ana_sq_u(q, l->stream);
        ana_sq_u(q, ana_trace_wide(t, a->corr_w));
        ana_sq_row(q);
    }
    ana_trace_gpu_end(&it);
}

static void ana_sq_calls(ana_sq *q)
{
    static const char *const kinds[] = { [ANA_K_LAUNCH] = "launch", [ANA_K_MEMCPY] = "memcpy",
                                         [ANA_K_MEMSET] = "memset" };
    const ana_trace *t = q->t;
    const ana_steps *s = &q->r->anat.steps;
    char buf[32];
    size_t run = 0;
    ana_sq_begin(q, "INSERT INTO api_calls VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < t->n_calls && !q->failed; i++) {
        ana_api_call cv = ana_trace_call(t, i), *c = &cv;
        const ana_call_site *cs = ana_trace_call_site(t, c);
        int launch = cs->kind == ANA_K_LAUNCH;
        ana_sq_u(q, c->time_ns);
        ana_sq_u(q, ana_trace_wide(t, cs->tid_w));
        ana_sq_t(q, ana_report_api_name(cs->api, buf, sizeof(buf)));
        ana_sq_t(q, cs->kind <= ANA_K_MEMSET ? kinds[cs->kind] : NULL);
        ana_sq_u(q, ana_trace_wide(t, c->corr_w));
        ana_sq_i(q, cs->ret);
        launch ? ana_sq_u(q, ana_trace_wide(t, c->arg_w)) : ana_sq_null(q);
        launch ? ana_sq_null(q) : ana_sq_u(q, ana_trace_wide(t, c->arg_w));
        uint64_t call = ana_trace_wide(t, c->call_w), stack = ana_trace_wide(t, cs->stack_w);
        call ? ana_sq_u(q, call) : ana_sq_null(q);
        stack ? ana_sq_u(q, stack) : ana_sq_null(q);
        int phase;
        int32_t step = ana_steps_at(s, i, &run, &phase);
        step >= 0 ? ana_sq_i(q, step + 1) : ana_sq_null(q); /* from 1, as the report does */
        ana_sq_t(q, s->n_runs ? ana_phase_name(phase) : NULL);
        ana_sq_row(q);
    }
}

static void ana_sq_stack_col(ana_sq *q, uint64_t stack)
{
    stack && stack != ANA_MEM_STACK_DRIVER ? ana_sq_u(q, stack) : ana_sq_null(q);
}

static void ana_sq_life(ana_sq *q, ana_mev_reader *rd, const ana_mem_life *l,
                        const ana_mc_alloc *mc)
{
    const ana_mev *a = ana_mev_get(rd, l->a_idx);
    char buf[32];
    ana_sq_u(q, l->ptr);
    ana_sq_u(q, l->size);
    ana_sq_u(q, l->t_alloc);
    l->f_idx == ANA_MEM_LIVE ? ana_sq_null(q) : ana_sq_u(q, l->t_free);
    ana_sq_u(q, l->a_idx);
    l->f_idx == ANA_MEM_LIVE ? ana_sq_null(q) : ana_sq_u(q, l->f_idx);
    ana_sq_i(q, a->device);
    ana_sq_u(q, a->tid);
    ana_sq_t(q, l->driver ? NULL : ana_report_api_name(l->api, buf, sizeof(buf)));
    ana_sq_t(q, l->cls == ANA_MEM_DEVICE ? "device" : "pinned host");
    ana_sq_t(q, !l->lib ? NULL : ana_lib_name(l->lib) ? ana_lib_name(l->lib) : "other");
    ana_sq_stack_col(q, l->stack);
    ana_sq_t(q, mc ? ana_mcat_name(mc->cat) : NULL);
    ana_sq_t(q, mc ? ana_memcat_why(mc->why) : NULL);
    ana_sq_i(q, l->driver);
    ana_sq_i(q, l->vmm);
    ana_sq_row(q);
}

static void ana_sq_allocations(ana_sq *q)
{
    const ana_report *r = q->r;
    const ana_trace *t = q->t;
    char buf[32];
    ana_sq_begin(q, "INSERT INTO allocations VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                    " ?, ?)");
    ana_mev_reader rd;
    ana_spill_iter it;
    const ana_mev *e;
    ana_mev_reader_open(&rd, &t->mev);
    for (size_t i = 0; i < r->mem.n_lives && !q->failed; i++)
        ana_sq_life(q, &rd, &r->mem.lives[i], ana_memcat_of_life(&r->mcat, i));
    ana_mev_reader_close(&rd);
    ana_sq_begin(q, "INSERT INTO failed_allocations VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    ana_spill_iter_begin(&it, &t->mev, 0);
    for (size_t i = 0; !q->failed && (e = ana_spill_iter_next(&it)); i++) {
        if (e->type != ANA_MEV_ALLOC || e->ret == 0)
            continue;
        ana_sq_u(q, e->time_ns);
        ana_sq_u(q, e->tid);
        ana_sq_i(q, e->device);
        ana_sq_u(q, e->size);
        ana_sq_t(q, ana_report_api_name(e->api, buf, sizeof(buf)));
        ana_sq_i(q, e->ret);
        ana_sq_stack_col(q, e->stack);
        ana_sq_u(q, i);
        ana_sq_row(q);
    }
    ana_spill_iter_end(&it);
}

static void ana_sq_gemm(ana_sq *q, const ana_gemm_call *g, const ana_api_call *first,
                        const ana_call_gpu *gpu)
{
    const ana_gemm_shape *s = &q->t->libs.shapes[g->shape];
    char buf[32], tr[3];
    ana_report_gemm_trans(s, tr);
    ana_sq_u(q, g->call);
    first ? ana_sq_u(q, first->time_ns) : ana_sq_null(q);
    if (first)
        ana_sq_u(q, ana_trace_wide(q->t, ana_trace_call_site(q->t, first)->tid_w));
    else
        ana_sq_null(q);
    ana_sq_t(q, ana_report_api_name(s->api, buf, sizeof(buf)));
    ana_sq_u(q, s->m);
    ana_sq_u(q, s->n);
    ana_sq_u(q, s->k);
    ana_sq_u(q, s->batch);
    ana_sq_t(q, tr);
    ana_sq_t(q, ana_cuda_type_name(s->a_type));
    ana_sq_t(q, ana_cuda_type_name(s->b_type));
    ana_sq_t(q, ana_cuda_type_name(s->c_type));
    ana_sq_t(q, ana_compute_type_name(s->compute_type));
    ana_sq_t(q, ana_prec_name(s->prec));
    ana_sq_u(q, ana_gemm_call_flops(s));
    ana_sq_u(q, gpu ? gpu->gpu_ns : 0);
    ana_sq_u(q, gpu ? gpu->kernels : 0);
    ana_sq_row(q);
}

/* GEMMs (time and thread: of the call's first launch) and collectives. */
static void ana_sq_libcalls(ana_sq *q)
{
    const ana_trace *t = q->t;
    ana_u64map link, first;
    size_t n;
    uint64_t k;
    char buf[32];
    ana_call_gpu *v = ana_libcalls_link(t, NULL, &link, &n);
    ana_libcalls_first_calls(t, &first);
    ana_sq_begin(q, "INSERT OR REPLACE INTO gemms VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                    " ?, ?, ?, ?)");
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &t->libs.gemms, 0);
    for (const ana_gemm_call *g; !q->failed && (g = ana_spill_iter_next(&it));) {
        int has = ana_u64map_get(&first, g->call, &k);
        ana_api_call call = has ? ana_trace_call(t, k) : (ana_api_call){ 0 };
        ana_sq_gemm(q, g, has ? &call : NULL, ana_u64map_get(&link, g->call, &k) ? &v[k] : NULL);
    }
    ana_spill_iter_end(&it);
    ana_sq_begin(q, "INSERT INTO collectives VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    ana_spill_iter_begin(&it, &t->libs.colls, 0);
    for (const ana_coll_call *c; !q->failed && (c = ana_spill_iter_next(&it));) {
        const ana_nccl_comm *cm = ana_libs_comm_by_handle(&t->libs, c->comm);
        ana_sq_u(q, c->call);
        ana_sq_u(q, c->time_ns);
        ana_sq_u(q, c->tid);
        ana_sq_t(q, ana_report_api_name(c->api, buf, sizeof(buf)));
        ana_sq_t(q, ana_nccl_op_name(c->api));
        ana_sq_t(q, ana_nccl_type_name(c->dtype));
        ana_sq_u(q, c->bytes);
        ana_sq_u(q, c->comm);
        cm ? ana_sq_u(q, cm->comm_id) : ana_sq_null(q);
        cm ? ana_sq_i(q, cm->rank) : ana_sq_null(q);
        cm && cm->size > 0 ? ana_sq_i(q, cm->size) : ana_sq_null(q);
        ana_sq_u(q, c->group);
        ana_u64map_get(&link, c->call, &k) ? ana_sq_u(q, v[k].gpu_ns) : ana_sq_null(q);
        ana_sq_row(q);
    }
    ana_spill_iter_end(&it);
    free(v);
    ana_u64map_free(&link);
    ana_u64map_free(&first);
}

static void ana_sq_range(void *arg, const ana_range_span *s)
{
    ana_sq *q = arg;
    const ana_libs *l = &q->t->libs;
    ana_sq_t(q, s->kind == ANA_RANGE_PUSH ? "push" : "start");
    ana_sq_t(q, ana_libs_domain_name(l, s->domain));
    ana_sq_sid(q, ana_sq_str(q, ana_libs_str(l, s->name)));
    ana_sq_u(q, s->t0);
    ana_sq_u(q, s->t1);
    ana_sq_u(q, s->t1 - s->t0);
    ana_sq_u(q, s->tid);
    s->kind == ANA_RANGE_PUSH ? ana_sq_u(q, s->depth) : ana_sq_null(q);
    ana_sq_row(q);
}

static void ana_sq_nvtx(ana_sq *q)
{
    const ana_libs *l = &q->t->libs;
    ana_sq_begin(q, "INSERT INTO ranges VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    ana_nvtx_pair(q->t, ana_sq_range, q, NULL);
    ana_sq_begin(q, "INSERT INTO marks VALUES(?, ?, ?, ?)");
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->ranges, 0);
    for (const ana_range_ev *e; !q->failed && (e = ana_spill_iter_next(&it));) {
        if (e->op != ANA_RANGE_MARK)
            continue;
        ana_sq_u(q, e->time_ns);
        ana_sq_u(q, e->tid);
        ana_sq_t(q, ana_libs_domain_name(l, e->domain));
        ana_sq_sid(q, ana_sq_str(q, ana_libs_str(l, e->name)));
        ana_sq_row(q);
    }
    ana_spill_iter_end(&it);
}

static void ana_sq_steps(ana_sq *q)
{
    const ana_anatomy *a = &q->r->anat;
    ana_sq_begin(q, "INSERT INTO steps VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                    " ?, ?, ?)");
    ana_anat_rowcur rc;
    ana_anat_rowcur_init(&rc, &a->rows, &a->steps);
    for (size_t i = 0; i < a->steps.n_steps && !q->failed; i++) {
        const ana_step *s = &a->steps.steps[i];
        const ana_anat_step *row = ana_anat_row(&rc, i);
        ana_sq_u(q, i + 1);
        ana_sq_u(q, s->start_ns);
        ana_sq_u(q, s->end_ns);
        ana_sq_u(q, s->end_ns - s->start_ns);
        ana_sq_u(q, s->calls);
        ana_sq_u(q, row->acts);
        ana_sq_u(q, row->busy_ns);
        for (int c = 0; c < ANA_CLASS_COUNT; c++)
            ana_sq_u(q, row->class_ns[c]);
        for (int p = 0; p < ANA_PHASE_COUNT; p++)
            ana_sq_u(q, row->phase_ns[p]);
        ana_sq_u(q, row->flops);
        q->r->mcat.step_peak ? ana_sq_u(q, q->r->mcat.step_peak[i]) : ana_sq_null(q);
        ana_sq_row(q);
    }
}

/* Every call site (canonical stack id), innermost frame at depth 0, symbolized. */
static void ana_sq_stacks(ana_sq *q)
{
    const ana_stacks *st = &q->t->stacks;
    ana_sq_begin(q, "INSERT INTO stacks VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < st->n_entries && !q->failed; i++) {
        const uint64_t *ip;
        uint64_t id = st->entries[i].id;
        if (ana_stacks_canon(st, id) != id)
            continue;
        size_t n = ana_stacks_frames(st, id, &ip);
        for (size_t d = 0; d < n; d++) {
            const ana_frame *f = ana_sym_lookup(q->r->sym, ip[d]);
            ana_sq_u(q, id);
            ana_sq_u(q, d);
            ana_sq_u(q, f->address);
            ana_sq_t(q, f->module);
            ana_sq_u(q, f->offset);
            ana_sq_t(q, f->function);
            ana_sq_t(q, f->file);
            f->line ? ana_sq_i(q, f->line) : ana_sq_null(q);
            ana_sq_row(q);
        }
    }
}

static void ana_sq_fill(ana_sq *q)
{
    const ana_trace *t = q->t;
    char **names = ana_xcalloc(t->n_kernels + 1, sizeof(char *));
    for (size_t i = 0; i < t->n_kernels; i++)
        names[i] = ana_report_kernel_name(&t->kernels[i]);
    q->kname_ids = ana_xcalloc(t->n_kernels + 1, sizeof(int64_t));
    ana_sq_meta_rows(q);
    ana_sq_devices(q);
    ana_sq_kernel_names(q, names);
    for (int type = ANA_GPU_KERNEL; type <= ANA_GPU_MEMSET; type++)
        ana_sq_activities(q, type);
    ana_sq_calls(q);
    ana_sq_allocations(q);
    ana_sq_libcalls(q);
    ana_sq_nvtx(q);
    ana_sq_steps(q);
    ana_sq_stacks(q);
    sqlite3_finalize(q->st);
    q->st = NULL;
    for (size_t i = 0; i < t->n_kernels; i++)
        free(names[i]);
    free(names);
    free(q->kname_ids);
}

int ana_export_sqlite(const ana_report *r, const char *path, char *err, size_t cap)
{
    ana_sq q = { .err = err, .cap = cap, .r = r, .t = r->t };
    /* path is the empty file ana_cli_write_output made for us (an empty file is an empty
     * database): unlinking it first would free its name for someone else's link. */
    if (sqlite3_open_v2(path, &q.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s", q.db ? sqlite3_errmsg(q.db) : "cannot open the database");
        sqlite3_close(q.db);
        return -1;
    }
    ana_u64map_init(&q.str_ids);
    ana_sq_exec(&q, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;");
    ana_sq_exec(&q, ana_sq_schema);
    if (!q.failed && (sqlite3_prepare_v2(q.db, "INSERT OR IGNORE INTO strings(value) VALUES(?)",
                                         -1, &q.str_ins, NULL) != SQLITE_OK ||
                      sqlite3_prepare_v2(q.db, "SELECT id FROM strings WHERE value = ?", -1,
                                         &q.str_sel, NULL) != SQLITE_OK))
        ana_sq_fail(&q, "sqlite prepare");
    if (!q.failed)
        ana_sq_fill(&q);
    ana_sq_exec(&q, ana_sq_views);
    ana_sq_exec(&q, "COMMIT;");
    sqlite3_finalize(q.st);
    sqlite3_finalize(q.str_ins);
    sqlite3_finalize(q.str_sel);
    ana_u64map_free(&q.str_ids);
    if (sqlite3_close(q.db) != SQLITE_OK && !q.failed)
        ana_sq_fail(&q, "sqlite close");
    return q.failed ? -1 : 0;
}

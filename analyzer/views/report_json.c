/* report_json.c — `anatomist report --json` (schema "anatomist.report/1",
 * docs/report-schema.md). Later versions only add fields.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "model/capture.h"
#include "views/report_write.h"

#include "cuda_errors.h"
#include "analyses/ranks.h"
#include "model/util.h"

#include <stdlib.h>

static void ana_rj_trace(ana_json *j, const ana_report *r)
{
    const ana_trace *t = r->t;
    ana_json_key(j, "trace");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "path", t->path);
    ana_json_kstr(j, "source", t->source);
    ana_json_key(j, "format");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "major", t->stats.major);
    ana_json_ku64(j, "minor", t->stats.minor);
    ana_json_obj_end(j);
    ana_json_kstr(j, "ended", ana_ended_name(t->stats.ended));
    ana_json_key(j, "end_reason");
    if (t->has_end)
        ana_json_u64(j, t->end_reason);
    else
        ana_json_null(j);
    ana_json_ku64(j, "torn_bytes", t->stats.torn_bytes);
    ana_json_ku64(j, "dropped", t->dropped_records);
    ana_json_ku64(j, "unknown_records", t->stats.unknown_records);
    ana_json_ku64(j, "duration_ns", t->has_time ? t->last_ns - t->first_ns : 0);
    ana_capture_json(j, t);
    ana_json_process(j, t);
    ana_json_key(j, "devices");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < t->n_devices; i++) {
        const ana_trace_device *d = &t->devices[i];
        ana_json_obj_begin(j);
        ana_json_ki64(j, "ordinal", d->ordinal);
        ana_json_kstr(j, "name", d->name);
        ana_json_ku64(j, "total_mem", d->total_mem);
        ana_json_ku64(j, "sm_count", d->sm_count);
        ana_json_ku64(j, "cc_major", d->cc_major);
        ana_json_ku64(j, "cc_minor", d->cc_minor);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

static void ana_rj_groups(ana_json *j, const ana_report *r, const char *key,
                          const ana_mem_group *g, size_t n, int with_share)
{
    ana_json_key(j, key);
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, n); i++) {
        ana_json_obj_begin(j);
        ana_json_ku64(j, "bytes", g[i].bytes);
        ana_json_ku64(j, "count", g[i].count);
        if (with_share)
            ana_json_kdbl(j, "share", r->mem.peak_bytes
                                          ? (double)g[i].bytes / (double)r->mem.peak_bytes
                                          : 0.0);
        ana_json_key(j, "driver_only");
        ana_json_bool(j, g[i].stack == ANA_MEM_STACK_DRIVER);
        ana_report_json_stack(j, r, g[i].stack);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rj_memory(ana_json *j, const ana_report *r)
{
    const ana_mem_result *m = &r->mem;
    const ana_trace *t = r->t;
    ana_json_key(j, "memory");
    ana_json_obj_begin(j);
    ana_json_key(j, "recorded");
    ana_json_bool(j, ana_trace_memory_recorded(t));
    ana_json_ku64(j, "peak_bytes", m->peak_bytes);
    ana_json_ku64(j, "peak_at_ns", ana_trace_rel_ns(t, m->peak_time_ns));
    ana_json_ku64(j, "peak_count", m->peak_count);
    ana_json_ku64(j, "live_at_end_bytes", m->live_end_bytes);
    ana_json_ku64(j, "live_at_end_count", m->live_end_count);
    ana_json_ku64(j, "host_pinned_peak_bytes", m->host_peak_bytes);
    ana_json_ku64(j, "host_pinned_peak_at_ns", ana_trace_rel_ns(t, m->host_peak_time_ns));
    ana_json_ku64(j, "host_pinned_live_at_end_bytes", m->host_live_end_bytes);
    ana_json_ku64(j, "host_pinned_live_at_end_count", m->host_live_end_count);
    ana_json_ku64(j, "unknown_frees", m->unknown_frees);
    ana_json_ku64(j, "reused_pointers", m->reused_ptrs);
    ana_json_ku64(j, "vmm_at_peak_bytes", m->vmm_peak_bytes);
    ana_json_ku64(j, "vmm_released_while_mapped", m->vmm_late_releases);
    ana_json_ku64(j, "gpu_memory_duplicates", m->gpu_mem_duplicates);
    ana_json_ku64(j, "gpu_memory_replayed", m->gpu_mem_replayed);
    ana_json_ku64(j, "gpu_memory_ignored", m->gpu_mem_ignored);
    ana_json_ku64(j, "leak_sites", m->n_leaks);
    ana_rj_groups(j, r, "leaks", m->leaks, m->n_leaks, 0);
    ana_json_ku64(j, "peak_sites", m->n_peak_sites);
    ana_rj_groups(j, r, "top_sites", m->peak_sites, m->n_peak_sites, 1);
    ana_report_libs_memory_json(r, j);
    ana_report_memcat_json(r, j);
    ana_json_obj_end(j);
}

static void ana_rj_api_table(ana_json *j, const char *key, const ana_api_stats *s, int bytes)
{
    char buf[32];
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    for (size_t api = 0; api < ANA_API_COUNT; api++) {
        if (!s[api].calls)
            continue;
        ana_json_key(j, ana_report_api_name(api, buf, sizeof(buf)));
        ana_json_obj_begin(j);
        ana_json_ku64(j, "calls", s[api].calls);
        ana_json_ku64(j, "ok", s[api].ok);
        ana_json_ku64(j, "failed", s[api].failed);
        if (bytes)
            ana_json_ku64(j, "bytes", s[api].bytes);
        ana_json_obj_end(j);
    }
    ana_json_obj_end(j);
}

static void ana_rj_failure(ana_json *j, const ana_report *r, const ana_mem_failure *f)
{
    char buf[32], ebuf[32];
    ana_json_obj_begin(j);
    ana_json_kstr(j, "api", ana_report_api_name(f->ev.api, buf, sizeof(buf)));
    ana_json_ku64(j, "size", f->ev.size);
    ana_json_ki64(j, "ret", f->ev.ret);
    ana_json_kstr(j, "error", ana_cuda_error_describe(f->ev.ret, ebuf, sizeof(ebuf)));
    ana_json_ku64(j, "at_ns", ana_trace_rel_ns(r->t, f->ev.time_ns));
    ana_json_ki64(j, "device", f->ev.device);
    ana_json_ku64(j, "tid", f->ev.tid);
    ana_json_key(j, "free_bytes");
    f->has_meminfo ? ana_json_u64(j, f->free_bytes) : ana_json_null(j);
    ana_json_key(j, "total_bytes");
    f->has_meminfo ? ana_json_u64(j, f->total_bytes) : ana_json_null(j);
    ana_json_ku64(j, "live_bytes", f->live_bytes);
    ana_json_ku64(j, "host_pinned_live_bytes", f->host_live_bytes);
    ana_report_json_stack(j, r, f->ev.stack);
    ana_json_obj_end(j);
}

static void ana_rj_kernels(ana_json *j, const ana_report *r)
{
    const ana_trace *t = r->t;
    ana_json_ku64(j, "launches", t->launches);
    ana_json_ku64(j, "failed_launches", t->failed_launches);
    ana_json_ku64(j, "graph_launches", t->graph_launches);
    ana_json_ku64(j, "failed_graph_launches", t->failed_graph_launches);
    ana_json_key(j, "kernels");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < t->n_kernels; i++) {
        const ana_trace_kernel *k = &t->kernels[r->kernel_order[i]];
        if (!k->launches)
            continue;
        ana_json_obj_begin(j);
        ana_json_ku64(j, "id", k->id);
        ana_report_json_kernel_name(j, k);
        ana_json_kstr(j, "class", ana_report_kernel_class(r, k));
        ana_json_ku64(j, "count", k->launches);
        ana_json_kdbl(j, "share", (double)k->launches / (double)t->launches);
        ana_json_ku64(j, "failed", k->failed);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rj_copy(ana_json *j, const char *key, const ana_copy_stats *c)
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    ana_json_ku64(j, "calls", c->calls);
    ana_json_ku64(j, "failed", c->failed);
    ana_json_ku64(j, "bytes", c->bytes);
    ana_json_obj_end(j);
}

static void ana_rj_copies(ana_json *j, const ana_trace *t)
{
    ana_json_key(j, "copies");
    ana_json_obj_begin(j);
    ana_json_key(j, "memcpy");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "calls", t->memcpy_total.calls);
    ana_json_ku64(j, "failed", t->memcpy_total.failed);
    ana_json_ku64(j, "bytes", t->memcpy_total.bytes);
    ana_json_key(j, "by_direction");
    ana_json_obj_begin(j);
    for (size_t d = 0; d < ANA_MEMCPY_DIRS; d++)
        ana_rj_copy(j, ana_memcpy_dir_names[d], &t->memcpy_by_dir[d]);
    ana_json_obj_end(j);
    ana_json_obj_end(j);
    ana_rj_copy(j, "memset", &t->memset_total);
    ana_json_obj_end(j);
}

void ana_report_write_json(const ana_report *r, FILE *f)
{
    ana_json j;
    ana_json_init(&j, f);
    ana_report_write_json_value(r, &j);
    ana_json_finish(&j);
}

void ana_report_write_json_value(const ana_report *r, ana_json *j)
{
    ana_json_obj_begin(j);
    ana_json_kstr(j, "schema", "anatomist.report/1");
    ana_rj_trace(j, r);
    ana_report_time_json(r, j);
    ana_rj_memory(j, r);
    ana_report_oom_json(r, j);
    ana_report_advice_json(r, j);
    ana_json_key(j, "allocations");
    ana_json_obj_begin(j);
    ana_rj_api_table(j, "by_api", r->t->alloc_by_api, 1);
    ana_rj_api_table(j, "frees_by_api", r->t->free_by_api, 0);
    ana_json_obj_end(j);
    ana_json_ku64(j, "failed_allocations_total", r->mem.failures_total);
    ana_json_key(j, "failed_allocations");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < r->mem.n_failures; i++)
        ana_rj_failure(j, r, &r->mem.failures[i]);
    ana_json_arr_end(j);
    ana_rj_kernels(j, r);
    ana_rj_copies(j, r->t);
    ana_report_gpu_json(r, j);
    ana_report_libs_json(r, j);
    ana_report_rank_json(r, j); /* ranks.h: the summary a job report merges */
    ana_json_obj_end(j);
}

/* report_gpu_json.c — the "gpu" member of `anatomist report --json` (docs/report-schema.md,
 * `gpu`): the numbers of gpu.h as they are, times relative to the first record.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdlib.h>

static void ana_rgj_ratio(ana_json *j, const char *key, uint64_t num, uint64_t den)
{
    ana_json_key(j, key);
    if (den)
        ana_json_dbl(j, (double)num / (double)den);
    else
        ana_json_null(j);
}

/* Opens "key": {count, bytes, total_ns, gb_per_s}; the caller closes it (to add to it). */
static void ana_rgj_sum_open(ana_json *j, const char *key, const ana_gpu_sum *s, int bytes)
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    ana_json_ku64(j, "count", s->count);
    if (bytes)
        ana_json_ku64(j, "bytes", s->bytes);
    ana_json_ku64(j, "total_ns", s->total_ns);
    if (bytes)
        ana_rgj_ratio(j, "gb_per_s", s->bytes, s->total_ns); /* bytes/ns = GB/s */
}

static void ana_rgj_call(ana_json *j, const ana_report *r, const char *key,
                         const ana_api_call *c)
{
    char buf[32];
    ana_json_key(j, key);
    if (!c) {
        ana_json_null(j);
        return;
    }
    const ana_call_site *s = ana_trace_call_site(r->t, c);
    ana_json_obj_begin(j);
    ana_json_kstr(j, "api", ana_report_api_name(s->api, buf, sizeof(buf)));
    ana_json_ku64(j, "at_ns", ana_trace_rel_ns(r->t, c->time_ns));
    ana_json_ku64(j, "tid", ana_trace_wide(r->t, s->tid_w));
    ana_json_ku64(j, "corr", ana_trace_wide(r->t, c->corr_w));
    ana_json_ki64(j, "ret", s->ret);
    ana_report_json_stack(j, r, ana_trace_wide(r->t, s->stack_w));
    ana_json_obj_end(j);
}

static void ana_rgj_gap(ana_json *j, const ana_report *r, const ana_gpu_gap *p)
{
    static const char *const type[] = { "kernel", "memcpy", "memset" };
    ana_json_obj_begin(j);
    ana_json_ki64(j, "device", p->device);
    ana_json_ku64(j, "start_ns", ana_trace_rel_ns(r->t, p->start_ns));
    ana_json_ku64(j, "duration_ns", p->dur_ns);
    ana_json_key(j, "next");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "type", type[ana_trace_gpu_lane(r->t, &p->next)->type]);
    if (ana_trace_gpu_lane(r->t, &p->next)->type == ANA_GPU_KERNEL)
        ana_report_json_kernel_name(
            j, ana_trace_kernel_by_id(r->t, ana_trace_wide(r->t, p->next.arg_w)));
    else
        ana_json_ku64(j, "bytes", ana_trace_wide(r->t, p->next.arg_w));
    ana_json_ku64(j, "stream", ana_trace_gpu_lane(r->t, &p->next)->stream);
    ana_json_ku64(j, "corr", ana_trace_wide(r->t, p->next.corr_w));
    ana_json_obj_end(j);
    ana_rgj_call(j, r, "issued_by", p->has_after ? &p->after : NULL);
    ana_rgj_call(j, r, "last_call_before", p->has_before ? &p->before : NULL);
    ana_json_obj_end(j);
}

static void ana_rgj_devices(ana_json *j, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    ana_json_key(j, "devices");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < g->n_devices; i++) {
        const ana_gpu_device *d = &g->devices[i];
        uint64_t span = d->span_ns;
        ana_json_obj_begin(j);
        ana_json_ki64(j, "device", d->device);
        ana_json_ku64(j, "first_ns", ana_trace_rel_ns(r->t, d->first_ns));
        ana_json_ku64(j, "span_ns", span);
        ana_json_ku64(j, "busy_ns", d->busy_ns);
        ana_rgj_ratio(j, "busy_share", d->busy_ns, span);
        ana_json_ku64(j, "idle_ns", span - d->busy_ns);
        ana_json_ku64(j, "idle_gaps", d->gaps);
        ana_json_ku64(j, "idle_gaps_ns", d->gaps_ns);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rgj_kernels(ana_json *j, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    ana_json_ku64(j, "kernel_names", g->n_knames);
    ana_json_key(j, "kernels_by_time");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, g->n_knames); i++) {
        const ana_gpu_kname *k = &g->knames[i];
        ana_json_obj_begin(j);
        ana_report_json_kernel_name(j, k->k);
        ana_json_kstr(j, "class", ana_class_name(r->anat.knames[i].cls));
        ana_json_ku64(j, "ids", k->ids);
        ana_json_ku64(j, "count", k->count);
        ana_json_ku64(j, "total_ns", k->total_ns);
        ana_json_ku64(j, "mean_ns", k->count ? k->total_ns / k->count : 0);
        ana_json_ku64(j, "min_ns", k->min_ns);
        ana_json_ku64(j, "max_ns", k->max_ns);
        ana_rgj_ratio(j, "share", k->total_ns, g->busy_ns);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rgj_copies(ana_json *j, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    ana_json_key(j, "copies");
    ana_json_obj_begin(j);
    for (int d = 0; d < ANA_DIR_COUNT; d++) {
        ana_rgj_sum_open(j, ana_gpu_dir_names[d], &g->copies[d], 1);
        ana_json_key(j, "by_host_kind");
        ana_json_obj_begin(j);
        for (int h = 0; h < ANA_HOST_COUNT; h++) {
            ana_rgj_sum_open(j, ana_gpu_host_names[h], &g->copies_host[d][h], 1);
            ana_json_obj_end(j);
        }
        ana_json_obj_end(j);
        ana_json_obj_end(j);
    }
    ana_json_obj_end(j);
}

static void ana_rgj_streams(ana_json *j, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    ana_json_key(j, "streams");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < g->n_streams; i++) {
        const ana_gpu_stream *s = &g->streams[i];
        uint64_t span = s->device_span_ns;
        ana_json_obj_begin(j);
        ana_json_ki64(j, "device", s->device);
        ana_json_ku64(j, "stream", s->stream);
        ana_json_ku64(j, "kernels", s->kernels);
        ana_json_ku64(j, "memcpys", s->memcpys);
        ana_json_ku64(j, "memsets", s->memsets);
        ana_json_ku64(j, "busy_ns", s->busy_ns);
        ana_rgj_ratio(j, "utilization", s->busy_ns, span);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rgj_health(ana_json *j, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    const ana_trace *t = r->t;
    ana_json_key(j, "correlation");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "correlated", g->correlated);
    ana_json_ku64(j, "no_corr", g->no_corr);
    ana_json_ku64(j, "uncorrelated", g->uncorrelated);
    ana_json_key(j, "launches_without_gpu");
    g->cupti_ran ? ana_json_u64(j, g->launches_without_gpu) : ana_json_null(j);
    ana_json_obj_end(j);
    ana_json_key(j, "dropped");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "records", t->gpu_dropped_records);
    ana_json_ku64(j, "by_cupti", t->gpu_dropped_by_reason[ANA_GPU_DROPPED_CUPTI]);
    ana_json_ku64(j, "by_profiler", t->gpu_dropped_by_reason[ANA_GPU_DROPPED_DECODE]);
    ana_json_obj_end(j);
}

void ana_report_gpu_json(const ana_report *r, ana_json *j)
{
    const ana_gpu_result *g = &r->gpu;
    ana_json_key(j, "gpu");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "cupti", g->cupti);
    ana_json_ku64(j, "activities", g->n_acts);
    ana_json_ku64(j, "first_ns", g->n_acts ? ana_trace_rel_ns(r->t, g->first_ns) : 0);
    ana_json_ku64(j, "span_ns", g->last_ns - g->first_ns);
    ana_json_ku64(j, "busy_ns", g->busy_ns);
    ana_rgj_ratio(j, "busy_share", g->busy_ns, g->spans_ns);
    ana_json_ku64(j, "idle_ns", g->idle_ns);
    ana_rgj_sum_open(j, "kernels", &g->kernels, 0);
    ana_json_obj_end(j);
    ana_rgj_sum_open(j, "memcpy", &g->memcpy, 1);
    ana_json_obj_end(j);
    ana_rgj_sum_open(j, "memset", &g->memset, 1);
    ana_json_obj_end(j);
    ana_rgj_devices(j, r);
    ana_json_ku64(j, "idle_gap_min_ns", g->min_gap_ns);
    ana_json_ku64(j, "idle_gaps_count", g->gaps_total);
    ana_json_ku64(j, "idle_gaps_ns", g->gaps_ns);
    ana_json_key(j, "idle_gaps");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < g->n_gaps; i++)
        ana_rgj_gap(j, r, &g->gaps[i]);
    ana_json_arr_end(j);
    ana_rgj_kernels(j, r);
    ana_rgj_copies(j, r);
    ana_rgj_streams(j, r);
    ana_rgj_health(j, r);
    ana_json_obj_end(j);
}

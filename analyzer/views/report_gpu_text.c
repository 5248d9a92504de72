/* report_gpu_text.c — the GPU sections of `anatomist report` for people: busy and idle
 * time, kernels by GPU time, copies by direction and host memory kind, streams, and the
 * longest idle gaps with the API calls around them. Same numbers as the JSON "gpu".
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

#define ANA_RGT_NAME_MAX 80 /* kernel names are cut to this many bytes */

static double ana_rgt_pct(uint64_t num, uint64_t den)
{
    return den ? 100.0 * (double)num / (double)den : 0.0;
}

/* unit: singular and plural, "copy\0copies". */
static void ana_rgt_class(FILE *o, const char *what, const ana_gpu_sum *s, const char *unit)
{
    char tm[32], b[32];
    ana_fmt_ns(s->total_ns, tm, sizeof(tm));
    fprintf(o, "  %-12s %s in %llu %s", what, tm, (unsigned long long)s->count,
            s->count == 1 ? unit : unit + strlen(unit) + 1);
    if (strcmp(what, "kernels") != 0) {
        ana_fmt_bytes(s->bytes, b, sizeof(b));
        fprintf(o, ", %s", b);
    }
    fputc('\n', o);
}

static void ana_rgt_health(FILE *o, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    const ana_trace *t = r->t;
    fprintf(o, "  records      %llu matched to their API call, %llu without correlation id, "
               "%llu matching no API call\n",
            (unsigned long long)g->correlated, (unsigned long long)g->no_corr,
            (unsigned long long)g->uncorrelated);
    if (g->cupti_ran && g->launches_without_gpu)
        fprintf(o, "  launches     %llu of %llu successful launches have no GPU record\n",
                (unsigned long long)g->launches_without_gpu, (unsigned long long)g->launches_ok);
    if (t->gpu_dropped_records)
        fprintf(o, "  WARNING      %llu GPU activity records were lost (%llu by CUPTI, %llu by "
                   "the profiler): GPU times are low\n",
                (unsigned long long)t->gpu_dropped_records,
                (unsigned long long)t->gpu_dropped_by_reason[ANA_GPU_DROPPED_CUPTI],
                (unsigned long long)t->gpu_dropped_by_reason[ANA_GPU_DROPPED_DECODE]);
}

static void ana_rgt_summary(FILE *o, const ana_report *r)
{
    const char *cupti = r->gpu.cupti;
    const ana_gpu_result *g = &r->gpu;
    char a[32], b[32], c[32];
    fprintf(o, "\nGPU activity (CUPTI: %s)\n", cupti ? cupti : "unknown");
    ana_fmt_ns(g->last_ns - g->first_ns, a, sizeof(a));
    ana_fmt_ns(ana_trace_rel_ns(r->t, g->first_ns), b, sizeof(b));
    fprintf(o, "  span         %s, from %s\n", a, b);
    ana_fmt_ns(g->busy_ns, a, sizeof(a));
    fprintf(o, "  busy         %s (%.1f%% of the span%s)\n", a, ana_rgt_pct(g->busy_ns, g->spans_ns),
            g->n_devices > 1 ? "s of all devices" : "");
    ana_fmt_ns(g->idle_ns, a, sizeof(a));
    ana_fmt_ns(g->min_gap_ns, b, sizeof(b));
    ana_fmt_ns(g->gaps_ns, c, sizeof(c));
    fprintf(o, "  idle         %s; %llu gap%s of %s or more (%s)\n", a,
            (unsigned long long)g->gaps_total, g->gaps_total == 1 ? "" : "s", b, c);
    ana_rgt_class(o, "kernels", &g->kernels, "kernel\0kernels");
    ana_rgt_class(o, "memcpy", &g->memcpy, "copy\0copies");
    ana_rgt_class(o, "memset", &g->memset, "set\0sets");
    for (size_t i = 0; g->n_devices > 1 && i < g->n_devices; i++) {
        const ana_gpu_device *d = &g->devices[i];
        ana_fmt_ns(d->busy_ns, a, sizeof(a));
        ana_fmt_ns(d->span_ns, b, sizeof(b));
        fprintf(o, "  device %-5d busy %s of %s (%.1f%%)\n", d->device, a, b,
                ana_rgt_pct(d->busy_ns, d->span_ns));
    }
    ana_rgt_health(o, r);
}

static void ana_rgt_kernels(FILE *o, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    char tot[32], mean[32], mn[32], mx[32];
    size_t n = ana_report_limit(r, g->n_knames);
    if (!g->n_knames)
        return;
    fprintf(o, "\nGPU kernels by total time (%zu kernel%s)\n  %12s %6s %8s %12s %12s %12s  %s\n",
            g->n_knames, g->n_knames == 1 ? "" : "s", "total", "share", "count", "mean", "min",
            "max", "name");
    for (size_t i = 0; i < n; i++) {
        const ana_gpu_kname *k = &g->knames[i];
        char *name = ana_report_kernel_label(k->k, ANA_RGT_NAME_MAX);
        ana_fmt_ns(k->total_ns, tot, sizeof(tot));
        ana_fmt_ns(k->count ? k->total_ns / k->count : 0, mean, sizeof(mean));
        ana_fmt_ns(k->min_ns, mn, sizeof(mn));
        ana_fmt_ns(k->max_ns, mx, sizeof(mx));
        fprintf(o, "  %12s %5.1f%% %8llu %12s %12s %12s  %s\n", tot,
                ana_rgt_pct(k->total_ns, g->busy_ns), (unsigned long long)k->count, mean, mn, mx,
                name);
        free(name);
    }
    if (n < g->n_knames)
        fprintf(o, "  ... %zu more (use --top)\n", g->n_knames - n);
}

static void ana_rgt_copy_row(FILE *o, const char *dir, const char *host, const ana_gpu_sum *s)
{
    char b[32], tm[32], bw[32] = "-";
    ana_fmt_bytes(s->bytes, b, sizeof(b));
    ana_fmt_ns(s->total_ns, tm, sizeof(tm));
    if (s->total_ns)
        snprintf(bw, sizeof(bw), "%.2f", (double)s->bytes / (double)s->total_ns);
    fprintf(o, "  %-9s %-9s %8llu %11s %12s %9s\n", dir, host, (unsigned long long)s->count, b,
            tm, bw);
}

static void ana_rgt_copies(FILE *o, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    if (!g->memcpy.count && !g->memset.count)
        return;
    fprintf(o, "\nGPU copies and sets (GB/s = bytes / time on the GPU)\n  %-9s %-9s %8s %11s "
               "%12s %9s\n", "direction", "host mem", "count", "bytes", "time", "GB/s");
    for (int d = 0; d < ANA_DIR_COUNT; d++) {
        if (!g->copies[d].count)
            continue;
        if (d != ANA_DIR_HTOD && d != ANA_DIR_DTOH) {
            ana_rgt_copy_row(o, ana_gpu_dir_names[d], "", &g->copies[d]);
            continue;
        }
        for (int h = 0; h < ANA_HOST_COUNT; h++)
            if (g->copies_host[d][h].count)
                ana_rgt_copy_row(o, ana_gpu_dir_names[d], ana_gpu_host_names[h],
                                 &g->copies_host[d][h]);
    }
    if (g->memset.count)
        ana_rgt_copy_row(o, "memset", "", &g->memset);
}

static void ana_rgt_streams(FILE *o, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    char tm[32];
    fprintf(o, "\nGPU streams (utilization = busy / span of the device)\n  %6s %8s %8s %8s %6s "
               "%12s %6s\n", "device", "stream", "kernels", "copies", "sets", "busy", "util");
    for (size_t i = 0; i < g->n_streams; i++) {
        const ana_gpu_stream *s = &g->streams[i];
        uint64_t span = s->device_span_ns;
        ana_fmt_ns(s->busy_ns, tm, sizeof(tm));
        fprintf(o, "  %6d %8u %8llu %8llu %6llu %12s %5.1f%%\n", s->device, s->stream,
                (unsigned long long)s->kernels, (unsigned long long)s->memcpys,
                (unsigned long long)s->memsets, tm, ana_rgt_pct(s->busy_ns, span));
    }
}

static void ana_rgt_call(FILE *o, const ana_report *r, const char *what, const ana_api_call *c,
                         const ana_gpu_gap *p)
{
    char api[32], tm[32], d[32];
    if (!c) {
        fprintf(o, "      %s: (none in the trace)\n", what);
        return;
    }
    const ana_call_site *s = ana_trace_call_site(r->t, c);
    ana_fmt_ns(ana_trace_rel_ns(r->t, c->time_ns), tm, sizeof(tm));
    fprintf(o, "      %s: %s", what, ana_report_api_name(s->api, api, sizeof(api)));
    if (s->kind == ANA_K_LAUNCH && ana_trace_wide(r->t, c->arg_w)) {
        char *name = ana_report_kernel_label(
            ana_trace_kernel_by_id(r->t, ana_trace_wide(r->t, c->arg_w)), ANA_RGT_NAME_MAX);
        fprintf(o, " (%s)", name);
        free(name);
    }
    fprintf(o, " at %s, thread %llu", tm, (unsigned long long)ana_trace_wide(r->t, s->tid_w));
    if (p) {
        uint64_t gap_start = p->start_ns;
        ana_fmt_ns(c->time_ns >= gap_start ? c->time_ns - gap_start : gap_start - c->time_ns, d,
                   sizeof(d));
        fprintf(o, ", %s %s the GPU went idle", d, c->time_ns >= gap_start ? "after" : "before");
    }
    fputc('\n', o);
    ana_report_text_stack(o, r, ana_trace_wide(r->t, s->stack_w));
}

static void ana_rgt_gap(FILE *o, const ana_report *r, size_t i, const ana_gpu_gap *p)
{
    static const char *const type[] = { "kernel", "memcpy", "memset" };
    char dur[32], at[32];
    ana_fmt_ns(p->dur_ns, dur, sizeof(dur));
    ana_fmt_ns(ana_trace_rel_ns(r->t, p->start_ns), at, sizeof(at));
    fprintf(o, "  #%zu  %s idle on device %d from %s, until %s", i + 1, dur, p->device, at,
            type[ana_trace_gpu_lane(r->t, &p->next)->type]);
    if (ana_trace_gpu_lane(r->t, &p->next)->type == ANA_GPU_KERNEL) {
        char *name = ana_report_kernel_label(
            ana_trace_kernel_by_id(r->t, ana_trace_wide(r->t, p->next.arg_w)), ANA_RGT_NAME_MAX);
        fprintf(o, " %s", name);
        free(name);
    }
    fprintf(o, " on stream %u\n", ana_trace_gpu_lane(r->t, &p->next)->stream);
    ana_rgt_call(o, r, "last call before", p->has_before ? &p->before : NULL, NULL);
    if (p->has_after)
        ana_rgt_call(o, r, "issued by", &p->after, p);
    else if (ana_trace_wide(r->t, p->next.corr_w))
        fprintf(o, "      issued by: (no API call with correlation id %llu in the trace)\n",
                (unsigned long long)ana_trace_wide(r->t, p->next.corr_w));
    else
        fprintf(o, "      issued by: (unknown: the GPU record has no correlation id)\n");
}

static void ana_rgt_gaps(FILE *o, const ana_report *r)
{
    const ana_gpu_result *g = &r->gpu;
    char min[32], tot[32];
    ana_fmt_ns(g->min_gap_ns, min, sizeof(min));
    ana_fmt_ns(g->gaps_ns, tot, sizeof(tot));
    fprintf(o, "\nGPU idle gaps of %s or more (%llu, %s in all), longest first\n", min,
            (unsigned long long)g->gaps_total, tot);
    if (!g->gaps_total)
        fprintf(o, "  (none)\n");
    for (size_t i = 0; i < g->n_gaps; i++)
        ana_rgt_gap(o, r, i, &g->gaps[i]);
    if (g->n_gaps < g->gaps_total)
        fprintf(o, "  ... %llu more (use --top)\n", (unsigned long long)(g->gaps_total - g->n_gaps));
}

void ana_report_gpu_text(const ana_report *r, FILE *o)
{
    if (!r->gpu.n_acts) {
        fprintf(o, "\nGPU activity\n  no GPU activity recorded (CUPTI: %s)\n",
                r->gpu.cupti ? r->gpu.cupti : "the trace does not say whether it ran");
        if (r->t->gpu_dropped_records)
            ana_rgt_health(o, r);
        return;
    }
    ana_rgt_summary(o, r);
    ana_rgt_kernels(o, r);
    ana_rgt_copies(o, r);
    ana_rgt_streams(o, r);
    ana_rgt_gaps(o, r);
}

/* report_text.c — `anatomist report` for people: the same numbers as the JSON, ranked
 * lists cut at --top, stacks without the profiler's own frames.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "model/capture.h"
#include "views/report_write.h"

#include "cuda_errors.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

#define ANA_RT_NAME_MAX 100 /* kernel names are cut to this many bytes */

static const char *ana_rt_s(uint64_t n) { return n == 1 ? "" : "s"; }

static void ana_rt_header(FILE *o, const ana_report *r)
{
    const ana_trace *t = r->t;
    const ana_trace_process *p = &t->process;
    char d[32], b[32];
    fprintf(o, "anatomist report: %s\n", t->path);
    if (p->present) {
        char *cmd = ana_report_cmdline(t);
        fprintf(o, "  program    %s\n", cmd);
        fprintf(o, "  process    pid %llu", (unsigned long long)p->pid);
        if (p->ppid) /* imported traces know neither parent nor host */
            fprintf(o, " (parent %llu)", (unsigned long long)p->ppid);
        if (p->host && p->host[0])
            fprintf(o, " on %s", p->host);
        if (p->rank >= 0)
            fprintf(o, ", rank %lld of %lld", (long long)p->rank, (long long)p->world_size);
        fputc('\n', o);
        free(cmd);
    } else {
        fprintf(o, "  program    (no PROCESS record)\n");
    }
    for (size_t i = 0; i < t->n_devices; i++) {
        const ana_trace_device *dv = &t->devices[i];
        ana_fmt_bytes(dv->total_mem, b, sizeof(b));
        fprintf(o, "  device %lld   %s, %s, %llu SMs, compute capability %llu.%llu\n",
                (long long)dv->ordinal, dv->name, b, (unsigned long long)dv->sm_count,
                (unsigned long long)dv->cc_major, (unsigned long long)dv->cc_minor);
    }
    ana_fmt_ns(t->has_time ? t->last_ns - t->first_ns : 0, d, sizeof(d));
    fprintf(o, "  duration   %s\n", d);
    if (strcmp(t->source, "kineto") == 0 && t->stats.ended != ANA_ENDED_TRUNCATED)
        fprintf(o, "  ended      with the profiler's window (imported PyTorch profiler trace)");
    else
        fprintf(o, "  ended      %s", ana_ended_name(t->stats.ended));
    if (t->stats.torn_bytes)
        fprintf(o, " (%llu torn bytes discarded)", (unsigned long long)t->stats.torn_bytes);
    fputc('\n', o);
    ana_capture_text(o, t);
    if (t->dropped_records)
        fprintf(o, "  WARNING    %llu records were dropped by the profiler: counts are low\n",
                (unsigned long long)t->dropped_records);
}

static void ana_rt_memory(FILE *o, const ana_report *r)
{
    const ana_mem_result *m = &r->mem;
    char b[32], tm[32];
    fprintf(o, "\nDevice memory (as allocated through the traced APIs)\n");
    if (!ana_trace_memory_recorded(r->t)) {
        fprintf(o, "  not recorded       the trace has no [memory] events of a GPU (PyTorch "
                   "profiler: profile_memory=True)\n");
        return;
    }
    ana_fmt_bytes(m->peak_bytes, b, sizeof(b));
    ana_fmt_ns(ana_trace_rel_ns(r->t, m->peak_time_ns), tm, sizeof(tm));
    fprintf(o, "  peak               %s (%llu bytes, %llu allocation%s) at %s\n", b,
            (unsigned long long)m->peak_bytes, (unsigned long long)m->peak_count,
            ana_rt_s(m->peak_count), tm);
    ana_fmt_bytes(m->live_end_bytes, b, sizeof(b));
    fprintf(o, "  live %-13s %s in %llu allocation%s\n",
            r->t->stats.ended == ANA_ENDED_EXIT ? "at exit" : "at the end", b,
            (unsigned long long)m->live_end_count, ana_rt_s(m->live_end_count));
    ana_fmt_bytes(m->host_peak_bytes, b, sizeof(b));
    fprintf(o, "  pinned host peak   %s (%llu bytes)", b, (unsigned long long)m->host_peak_bytes);
    ana_fmt_bytes(m->host_live_end_bytes, b, sizeof(b));
    fprintf(o, ", %s live at the end\n", b);
    if (m->vmm_peak_bytes) {
        ana_fmt_bytes(m->vmm_peak_bytes, b, sizeof(b));
        fprintf(o, "  of the peak        %s created by cuMemCreate (virtual memory management)\n", b);
    }
    if (m->unknown_frees)
        fprintf(o, "  note               %llu frees of pointers not allocated in the trace\n",
                (unsigned long long)m->unknown_frees);
    if (m->gpu_mem_replayed || m->gpu_mem_duplicates)
        fprintf(o, "  driver records     %llu GPU_MEMORY records of traced calls ignored, %llu "
                   "replayed (seen by the driver only)\n",
                (unsigned long long)m->gpu_mem_duplicates, (unsigned long long)m->gpu_mem_replayed);
    ana_report_libs_memory_text(r, o);
}

static void ana_rt_apis(FILE *o, const char *title, const ana_api_stats *s, int bytes)
{
    char buf[32], b[32];
    int any = 0;
    for (size_t api = 0; api < ANA_API_COUNT; api++) {
        if (!s[api].calls)
            continue;
        if (!any++)
            fprintf(o, "\n%s\n  %-26s %10s %10s %8s%s\n", title, "api", "calls", "ok", "failed",
                    bytes ? "   bytes ok" : "");
        fprintf(o, "  %-26s %10llu %10llu %8llu", ana_report_api_name(api, buf, sizeof(buf)),
                (unsigned long long)s[api].calls, (unsigned long long)s[api].ok,
                (unsigned long long)s[api].failed);
        if (bytes) {
            ana_fmt_bytes(s[api].bytes, b, sizeof(b));
            fprintf(o, "   %s", b);
        }
        fputc('\n', o);
    }
    if (!any)
        fprintf(o, "\n%s\n  (none)\n", title);
}

static void ana_rt_groups(FILE *o, const ana_report *r, const ana_mem_group *g, size_t n,
                          int with_share)
{
    char b[32];
    for (size_t i = 0; i < ana_report_limit(r, n); i++) {
        ana_fmt_bytes(g[i].bytes, b, sizeof(b));
        fprintf(o, "  #%zu  %s in %llu allocation%s", i + 1, b, (unsigned long long)g[i].count,
                ana_rt_s(g[i].count));
        if (with_share && r->mem.peak_bytes)
            fprintf(o, " (%.1f%% of the peak)", 100.0 * (double)g[i].bytes / (double)r->mem.peak_bytes);
        fputc('\n', o);
        ana_report_text_stack(o, r, g[i].stack);
    }
    if (ana_report_limit(r, n) < n)
        fprintf(o, "  ... %zu more (use --top)\n", n - ana_report_limit(r, n));
}

static void ana_rt_sites(FILE *o, const ana_report *r)
{
    const ana_mem_result *m = &r->mem;
    fprintf(o, "\nTop allocation sites at the peak\n");
    if (!m->n_peak_sites)
        fprintf(o, "  (no device memory was allocated)\n");
    ana_rt_groups(o, r, m->peak_sites, m->n_peak_sites, 1);
    if (r->t->stats.ended == ANA_ENDED_EXIT)
        fprintf(o, "\nDevice memory still allocated at exit (leaks)\n");
    else if (strcmp(r->t->source, "kineto") == 0)
        fprintf(o, "\nDevice memory still allocated when the profiler's window closed\n");
    else
        fprintf(o, "\nDevice memory still allocated at the end of the trace "
                   "(the process did not exit cleanly)\n");
    if (!m->n_leaks)
        fprintf(o, "  (none)\n");
    ana_rt_groups(o, r, m->leaks, m->n_leaks, 0);
}

static void ana_rt_failure(FILE *o, const ana_report *r, const ana_mem_failure *f)
{
    char api[32], err[32], sz[32], tm[32], a[32], b[32], live[32];
    ana_fmt_bytes(f->ev.size, sz, sizeof(sz));
    ana_fmt_ns(ana_trace_rel_ns(r->t, f->ev.time_ns), tm, sizeof(tm));
    fprintf(o, "  %s of %s (%llu bytes) at %s: %s (%lld)\n",
            ana_report_api_name(f->ev.api, api, sizeof(api)), sz, (unsigned long long)f->ev.size,
            tm, ana_cuda_error_describe(f->ev.ret, err, sizeof(err)), (long long)f->ev.ret);
    ana_fmt_bytes(f->live_bytes, live, sizeof(live));
    if (f->has_meminfo) {
        ana_fmt_bytes(f->free_bytes, a, sizeof(a));
        ana_fmt_bytes(f->total_bytes, b, sizeof(b));
        fprintf(o, "      device reported %s free of %s; %s allocated through traced calls\n", a,
                b, live);
    } else {
        fprintf(o, "      %s allocated through traced calls (no memory info recorded)\n", live);
    }
    ana_report_text_stack(o, r, f->ev.stack);
}

static void ana_rt_failures(FILE *o, const ana_report *r)
{
    const ana_mem_result *m = &r->mem;
    if (!m->failures_total)
        return;
    fprintf(o, "\nFailed allocations (%llu)\n", (unsigned long long)m->failures_total);
    size_t n = ana_report_limit(r, m->n_failures);
    for (size_t i = 0; i < n; i++)
        ana_rt_failure(o, r, &m->failures[i]);
    if (m->failures_total > n)
        fprintf(o, "  ... %llu more (use --top or --json)\n",
                (unsigned long long)(m->failures_total - n));
}

static void ana_rt_kernels(FILE *o, const ana_report *r)
{
    const ana_trace *t = r->t;
    size_t shown = 0, n = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        n += t->kernels[i].launches != 0;
    fprintf(o, "\nKernels by launch count (%llu launches, %zu kernels, %llu failed)\n",
            (unsigned long long)t->launches, n, (unsigned long long)t->failed_launches);
    if (!t->launches)
        fprintf(o, "  (none)\n");
    for (size_t i = 0; i < t->n_kernels && shown < ana_report_limit(r, n); i++) {
        const ana_trace_kernel *k = &t->kernels[r->kernel_order[i]];
        if (!k->launches)
            continue;
        char *name = ana_report_kernel_label(k, ANA_RT_NAME_MAX);
        fprintf(o, "  %10llu %6.2f%% %6llu  %s\n", (unsigned long long)k->launches,
                100.0 * (double)k->launches / (double)t->launches, (unsigned long long)k->failed,
                name);
        free(name);
        shown++;
    }
    if (shown < n)
        fprintf(o, "  ... %zu more (use --top)\n", n - shown);
    if (t->graph_launches)
        fprintf(o, "  graph launches: %llu (%llu failed); their kernels are in the GPU tables\n",
                (unsigned long long)t->graph_launches, (unsigned long long)t->failed_graph_launches);
}

static void ana_rt_copies(FILE *o, const ana_trace *t)
{
    char b[32];
    fprintf(o, "\nCopies and sets\n  %-14s %10s %8s   %s\n", "", "calls", "failed", "bytes");
    for (size_t d = 0; d < ANA_MEMCPY_DIRS; d++) {
        const ana_copy_stats *c = &t->memcpy_by_dir[d];
        if (!c->calls)
            continue;
        ana_fmt_bytes(c->bytes, b, sizeof(b));
        fprintf(o, "  memcpy %-7s %10llu %8llu   %s\n", ana_memcpy_dir_names[d],
                (unsigned long long)c->calls, (unsigned long long)c->failed, b);
    }
    ana_fmt_bytes(t->memset_total.bytes, b, sizeof(b));
    fprintf(o, "  %-14s %10llu %8llu   %s\n", "memset", (unsigned long long)t->memset_total.calls,
            (unsigned long long)t->memset_total.failed, b);
}

void ana_report_write_text(const ana_report *r, FILE *o)
{
    ana_rt_header(o, r);
    ana_report_time_text(r, o);
    ana_report_memcat_text(r, o);
    ana_report_oom_text(r, o);
    ana_report_advice_text(r, o);
    ana_rt_memory(o, r);
    ana_rt_apis(o, "Allocation calls", r->t->alloc_by_api, 1);
    ana_rt_apis(o, "Free calls", r->t->free_by_api, 0);
    ana_rt_sites(o, r);
    ana_rt_failures(o, r);
    ana_rt_kernels(o, r);
    ana_rt_copies(o, r->t);
    ana_report_gpu_text(r, o);
    ana_report_libs_text(r, o);
}

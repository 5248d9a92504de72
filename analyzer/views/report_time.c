/* report_time.c — the time anatomy in `anatomist report`: GPU time by class (overall, per
 * step, per phase), top kernels per class, the contractions' TFLOP/s and MFU, forward vs
 * backward. Text for people and the JSON "time" and "steps" objects (docs/report-schema.md);
 * both print the same numbers from ana_anatomy (anatomy.h).
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

#define ANA_RTM_NAME_MAX 70 /* kernel names in text are cut to this many bytes */
#define ANA_RTM_TOP_PER_CLASS 3

static double ana_rtm_pct(uint64_t num, uint64_t den)
{
    return den ? 100.0 * (double)num / (double)den : 0.0;
}

/* Indices into r->gpu.knames of the class's kernels, longest first (knames is sorted so). */
static size_t ana_rtm_top(const ana_report *r, int cls, size_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < r->gpu.n_knames && n < max; i++)
        if (r->anat.knames[i].cls == cls)
            out[n++] = i;
    return n;
}

static void ana_rtm_text_classes(FILE *o, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    char tm[32], tk[32];
    fprintf(o, "  %-14s %12s %7s %10s\n", "class", "GPU time", "% busy", "activities");
    for (int c = 0; c < ANA_CLASS_COUNT; c++) {
        ana_fmt_ns(a->total.ns[c], tm, sizeof(tm));
        fprintf(o, "  %-14s %12s %6.1f%% %10llu\n", ana_class_name(c), tm,
                ana_rtm_pct(a->total.ns[c], a->busy_ns), (unsigned long long)a->total.count[c]);
    }
    ana_fmt_ns(a->idle_ns, tm, sizeof(tm));
    fprintf(o, "  %-14s %12s %6.1f%% of the span\n", "idle", tm, ana_rtm_pct(a->idle_ns, a->span_ns));
    if (a->overlap_ns) {
        ana_fmt_ns(a->overlap_ns, tm, sizeof(tm));
        fprintf(o, "  (streams overlapped: the classes add up to %s more than the busy time)\n", tm);
    }
    if (a->unnamed_ns) {
        ana_fmt_ns(a->unnamed_ns, tk, sizeof(tk));
        fprintf(o, "  (%s of kernels the trace never named: classed by context alone)\n", tk);
    }
}

static void ana_rtm_text_top(FILE *o, const ana_report *r)
{
    size_t idx[ANA_RTM_TOP_PER_CLASS];
    char tm[32];
    fprintf(o, "  top kernels per class:\n");
    for (int c = 0; c < ANA_CLASS_COUNT; c++) {
        size_t n = ana_rtm_top(r, c, idx, ANA_RTM_TOP_PER_CLASS);
        for (size_t i = 0; i < n; i++) {
            const ana_gpu_kname *k = &r->gpu.knames[idx[i]];
            char *name = ana_report_kernel_label(k->k, ANA_RTM_NAME_MAX);
            ana_fmt_ns(k->total_ns, tm, sizeof(tm));
            fprintf(o, "    %-14s %10s %5.1f%%  %s\n", i ? "" : ana_class_name(c), tm,
                    ana_rtm_pct(k->total_ns, r->anat.total.ns[c]), name);
            free(name);
        }
    }
}

static void ana_rtm_text_contractions(FILE *o, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    char tm[32];
    if (a->achieved_tflops < 0)
        return;
    ana_fmt_ns(a->gemm_timed_ns, tm, sizeof(tm));
    fprintf(o, "  contractions: %.3g FLOP of GEMMs in %s of their kernels: %.2f TFLOP/s",
            (double)a->gemm_flops, tm, a->achieved_tflops);
    if (a->peak_tflops > 0)
        fprintf(o, " (%.1f%% of the %s peak, %.1f TFLOP/s)", 100.0 * a->achieved_tflops / a->peak_tflops,
                ana_prec_name(a->peak_prec), a->peak_tflops);
    fputc('\n', o);
    if (a->mfu >= 0) {
        ana_fmt_ns(a->mfu_wall_ns, tm, sizeof(tm));
        fprintf(o, "  model FLOPs utilisation: %.2f%% (GEMM FLOPs over %s of %s at the peak)\n",
                100.0 * a->mfu, tm, a->steps.n_steps ? "the steps' wall time" : "the GPU span");
    }
}

static void ana_rtm_text_phases(FILE *o, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    char f[32], b[32], p[32], u[32];
    if (!a->steps.n_steps)
        return;
    if (a->steps.phases == ANA_PHASES_NONE) {
        fprintf(o, "  phases: not decided (%s)\n", a->steps.why[0] ? a->steps.why : "no evidence");
        return;
    }
    ana_fmt_ns(a->phase_ns[ANA_PHASE_FORWARD], f, sizeof(f));
    ana_fmt_ns(a->phase_ns[ANA_PHASE_BACKWARD], b, sizeof(b));
    ana_fmt_ns(a->phase_ns[ANA_PHASE_OPTIMIZER], p, sizeof(p));
    ana_fmt_ns(a->phase_ns[ANA_PHASE_UNDECIDED], u, sizeof(u));
    fprintf(o, "  phases (from %s): forward %s, backward %s, optimizer %s, undecided %s\n",
            ana_phases_method_name(a->steps.phases), f, b, p, u);
    if (a->bwd_fwd_ratio >= 0)
        fprintf(o, "  backward / forward = %.2f (the rule of thumb is about 2)\n", a->bwd_fwd_ratio);
}

static void ana_rtm_text_steps(FILE *o, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    const ana_steps *s = &a->steps;
    char tm[32], b[32];
    if (!s->n_steps) {
        fprintf(o, "  steps: none found (%s)\n", s->why[0] ? s->why : "no evidence");
        return;
    }
    ana_fmt_ns(s->median_ns, tm, sizeof(tm));
    fprintf(o, "  steps: %zu found by %s%s%s%s, median %s\n", s->n_steps,
            ana_steps_method_name(s->method), s->name[0] ? " (\"" : "", s->name,
            s->name[0] ? "\")" : "", tm);
    fprintf(o, "  %5s %10s %10s %6s", "step", "duration", "GPU busy", "idle%");
    static const char *const abbr[ANA_CLASS_COUNT] = { "contract", "normal", "elemwise",
                                                       "comm", "memory", "other" };
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        fprintf(o, " %9s", abbr[c]);
    fputc('\n', o);
    size_t n = ana_report_limit(r, s->n_steps);
    ana_anat_rowcur rc;
    ana_anat_rowcur_init(&rc, &a->rows, s);
    for (size_t i = 0; i < n; i++) {
        const ana_anat_step *row = ana_anat_row(&rc, i);
        uint64_t dur = s->steps[i].end_ns - s->steps[i].start_ns;
        uint64_t span = row->gpu_last_ns > row->gpu_first_ns ? row->gpu_last_ns - row->gpu_first_ns : 0;
        ana_fmt_ns(dur, tm, sizeof(tm));
        ana_fmt_ns(row->busy_ns, b, sizeof(b));
        /* busy is summed per device: on several devices it can exceed the span */
        fprintf(o, "  %5zu %10s %10s %5.1f%%", i + 1, tm, b,
                ana_rtm_pct(span > row->busy_ns ? span - row->busy_ns : 0, span));
        for (int c = 0; c < ANA_CLASS_COUNT; c++)
            fprintf(o, " %8.1f%%", ana_rtm_pct(row->class_ns[c], row->busy_ns));
        fputc('\n', o);
    }
    if (n < s->n_steps)
        fprintf(o, "  ... %zu more steps (--top 0 shows all)\n", s->n_steps - n);
    if (a->outside_ns) {
        ana_fmt_ns(a->outside_ns, tm, sizeof(tm));
        fprintf(o, "  outside every step: %s of GPU time\n", tm);
    }
}

void ana_report_time_text(const ana_report *r, FILE *o)
{
    const ana_anatomy *a = &r->anat;
    char busy[32], span[32];
    if (!r->t->n_gpu)
        return; /* the GPU section says why there is no GPU record */
    ana_fmt_ns(a->busy_ns, busy, sizeof(busy));
    ana_fmt_ns(a->span_ns, span, sizeof(span));
    fprintf(o, "\nWhere GPU time goes (busy %s of %s, %.1f%%)\n", busy, span,
            ana_rtm_pct(a->busy_ns, a->span_ns));
    ana_rtm_text_classes(o, r);
    ana_rtm_text_contractions(o, r);
    ana_rtm_text_steps(o, r);
    ana_rtm_text_phases(o, r);
    ana_rtm_text_top(o, r);
}

/* {"contraction": ns, ...} */
static void ana_rtm_json_classes(ana_json *j, const char *key, const uint64_t v[ANA_CLASS_COUNT])
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        ana_json_ku64(j, ana_class_name(c), v[c]);
    ana_json_obj_end(j);
}

/* "forward_ns": ..., "undecided_ns": ... members. */
static void ana_rtm_json_phase_ns(ana_json *j, const uint64_t ns[ANA_PHASE_COUNT])
{
    for (int p = 0; p < ANA_PHASE_COUNT; p++) {
        char key[32];
        snprintf(key, sizeof(key), "%s_ns", ana_phase_name(p));
        ana_json_ku64(j, key, ns[p]);
    }
}

static void ana_rtm_json_phases(ana_json *j, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    ana_json_key(j, "phases");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "method", a->steps.n_steps ? ana_phases_method_name(a->steps.phases) : "none");
    ana_rtm_json_phase_ns(j, a->phase_ns);
    ana_json_kdbl_known(j, "backward_to_forward", a->bwd_fwd_ratio);
    ana_json_key(j, "by_class");
    ana_json_obj_begin(j);
    for (int p = 0; p < ANA_PHASE_COUNT; p++)
        ana_rtm_json_classes(j, ana_phase_name(p), a->phase_class[p].ns);
    ana_json_obj_end(j);
    ana_json_obj_end(j);
}

static void ana_rtm_json_contraction(ana_json *j, const ana_report *r)
{
    const ana_anatomy *a = &r->anat;
    ana_json_key(j, "contraction");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "gemm_flops", a->gemm_flops);
    ana_json_ku64(j, "gemm_gpu_ns", a->gemm_timed_ns);
    ana_json_kdbl_known(j, "achieved_tflops", a->achieved_tflops);
    ana_json_kstr(j, "precision", a->peak_prec >= 0 ? ana_prec_name(a->peak_prec) : NULL);
    ana_json_kdbl_known(j, "peak_tflops", a->peak_tflops);
    ana_json_kdbl_known(j, "mfu", a->mfu);
    ana_json_ku64(j, "mfu_wall_ns", a->mfu_wall_ns);
    ana_json_obj_end(j);
}

static void ana_rtm_json_top(ana_json *j, const ana_report *r)
{
    size_t max = r->opt.top ? r->opt.top : r->gpu.n_knames;
    size_t *idx = ana_xcalloc(max + 1, sizeof(*idx));
    ana_json_key(j, "top_kernels");
    ana_json_obj_begin(j);
    for (int c = 0; c < ANA_CLASS_COUNT; c++) {
        size_t n = ana_rtm_top(r, c, idx, max);
        ana_json_key(j, ana_class_name(c));
        ana_json_arr_begin(j);
        for (size_t i = 0; i < n; i++) {
            const ana_gpu_kname *k = &r->gpu.knames[idx[i]];
            ana_json_obj_begin(j);
            ana_report_json_kernel_name(j, k->k);
            ana_json_ku64(j, "count", k->count);
            ana_json_ku64(j, "total_ns", k->total_ns);
            ana_json_kdbl(j, "share_of_class", r->anat.total.ns[c] ? (double)k->total_ns /
                                                   (double)r->anat.total.ns[c] : 0.0);
            ana_json_obj_end(j);
        }
        ana_json_arr_end(j);
    }
    ana_json_obj_end(j);
    free(idx);
}

void ana_report_time_json(const ana_report *r, ana_json *j)
{
    const ana_anatomy *a = &r->anat;
    ana_json_key(j, "time");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "busy_ns", a->busy_ns);
    ana_json_ku64(j, "idle_ns", a->idle_ns);
    ana_json_ku64(j, "span_ns", a->span_ns);
    ana_json_ku64(j, "overlap_ns", a->overlap_ns);
    ana_rtm_json_classes(j, "by_class", a->total.ns);
    ana_rtm_json_classes(j, "by_class_count", a->total.count);
    ana_json_key(j, "by_class_share");
    ana_json_obj_begin(j);
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        ana_json_kdbl(j, ana_class_name(c), a->busy_ns ? (double)a->total.ns[c] / (double)a->busy_ns : 0.0);
    ana_json_obj_end(j);
    ana_json_ku64(j, "unnamed_kernel_ns", a->unnamed_ns);
    ana_rtm_json_contraction(j, r);
    ana_rtm_json_phases(j, r);
    ana_rtm_json_top(j, r);
    ana_json_obj_end(j);

    const ana_steps *s = &a->steps;
    ana_json_key(j, "steps");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "count", s->n_steps);
    ana_json_ku64(j, "median_ns", s->median_ns);
    ana_json_kstr(j, "method", ana_steps_method_name(s->method));
    ana_json_kstr(j, "name", s->name[0] ? s->name : NULL);
    ana_json_kstr(j, "why", s->why[0] ? s->why : NULL);
    ana_json_ku64(j, "outside_ns", a->outside_ns);
    ana_json_key(j, "list");
    ana_json_arr_begin(j);
    ana_anat_rowcur rc;
    ana_anat_rowcur_init(&rc, &a->rows, s);
    for (size_t i = 0; i < s->n_steps; i++) {
        const ana_step *st = &s->steps[i];
        const ana_anat_step *row = ana_anat_row(&rc, i);
        ana_json_obj_begin(j);
        ana_json_ku64(j, "index", i + 1);
        ana_json_ku64(j, "start_ns", ana_trace_rel_ns(r->t, st->start_ns));
        ana_json_ku64(j, "duration_ns", st->end_ns - st->start_ns);
        ana_json_ku64(j, "calls", st->calls);
        ana_json_ku64(j, "gpu_busy_ns", row->busy_ns);
        ana_json_ku64(j, "gpu_span_ns", row->gpu_last_ns > row->gpu_first_ns ?
                                            row->gpu_last_ns - row->gpu_first_ns : 0);
        ana_json_ku64(j, "gemm_flops", row->flops);
        ana_rtm_json_classes(j, "by_class", row->class_ns);
        ana_json_kstr(j, "phases_from", ana_phases_method_name(st->phases));
        ana_json_key(j, "phases");
        ana_json_obj_begin(j);
        ana_rtm_json_phase_ns(j, row->phase_ns);
        ana_json_obj_end(j);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

/* "class" of a kernel: anatomy.h's kernel_cls. */
const char *ana_report_kernel_class(const ana_report *r, const ana_trace_kernel *k)
{
    return ana_class_name(r->anat.kernel_cls[k - r->t->kernels]);
}

/* report_oom.c — the report's "Out of memory" section and `oom` JSON object (oom.h), and
 * its memory advice (advice.h), as text and as JSON (docs/oom.md). Only formats: the
 * numbers are computed by ana_oom_build and ana_advice_build. `anatomist oom` prints the
 * same section and object.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "cuda_errors.h"
#include "model/util.h"

#include <stdlib.h>

#define ANA_RO_STEPS_SHOWN 5 /* peaks of the steps before, in text */
#define ANA_RO_SITES 5       /* allocation sites in text unless --top says fewer */

/* "-1.50 MiB" for a negative amount. */
static const char *ana_ro_sb(int64_t v, char *buf) /* buf: 32 bytes */
{
    if (v >= 0)
        return ana_fmt_bytes((uint64_t)v, buf, 32);
    buf[0] = '-';
    ana_fmt_bytes((uint64_t)-v, buf + 1, 31);
    return buf;
}

/* ------------------------------------------------------------------ text */

static void ana_ro_text_head(FILE *o, const ana_report *r, const ana_oom *x)
{
    const ana_mem_failure *f = x->f;
    char api[32], err[32], sz[32], tm[32], a[32], b[32], c[32];
    fprintf(o, "\nOut of memory (the last of %llu out-of-memory failure%s%s)\n",
            (unsigned long long)x->failures, x->failures == 1 ? "" : "s",
            x->failures_cut ? " kept: the first 999 and the last" : "");
    ana_fmt_ns(ana_trace_rel_ns(r->t, f->ev.time_ns), tm, sizeof(tm));
    fprintf(o, "  %s of %s (%llu bytes) at %s: %s\n",
            ana_report_api_name(f->ev.api, api, sizeof(api)), ana_fmt_bytes(f->ev.size, sz, sizeof(sz)),
            (unsigned long long)f->ev.size, tm, ana_cuda_error_describe(f->ev.ret, err, sizeof(err)));
    if (x->kind == ANA_OOM_EXHAUSTION)
        fprintf(o, "  exhaustion: the device had %s free of %s, %s short\n",
                ana_fmt_bytes(f->free_bytes, a, sizeof(a)), ana_fmt_bytes(f->total_bytes, b, sizeof(b)), ana_fmt_bytes(x->shortfall, c, sizeof(c)));
    else if (x->kind == ANA_OOM_FRAGMENTATION)
        fprintf(o, "  fragmentation: the device had %s free of %s, as much as asked for, "
                   "but no contiguous room\n", ana_fmt_bytes(f->free_bytes, a, sizeof(a)), ana_fmt_bytes(f->total_bytes, b, sizeof(b)));
    else
        fprintf(o, "  kind unknown: no free/total memory was recorded after it\n");
}

static void ana_ro_text_where(FILE *o, const ana_report *r, const ana_oom *x)
{
    char w[96], b[32];
    ana_oom_where_text(x, w, sizeof(w));
    fprintf(o, "  where: %s", w);
    if (x->where == ANA_OOM_IN_STEP || x->where == ANA_OOM_AFTER_LAST)
        fprintf(o, ", phase %s", ana_phase_name(x->phase));
    fputc('\n', o);
    if (!x->steps_before || !r->mcat.step_peak)
        return;
    size_t from = x->steps_before > ANA_RO_STEPS_SHOWN ? x->steps_before - ANA_RO_STEPS_SHOWN : 0;
    fprintf(o, "  peaks of the steps before:");
    if (from)
        fprintf(o, " ...");
    for (size_t i = from; i < x->steps_before; i++)
        fprintf(o, "%s step %zu %s", i > from ? "," : "", i + 1, ana_fmt_bytes(r->mcat.step_peak[i], b, sizeof(b)));
    fputc('\n', o);
}

/* The category holding the most bytes at the failure, or -1 when nothing was. Where
 * unattributed holds more than every decided category, it is unattributed: naming the
 * largest decided one would claim what the evidence cannot tell. */
static int ana_ro_dominant(const ana_oom *x)
{
    int best = -1;
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        if (x->live[c] && (best < 0 || x->live[c] > x->live[best]))
            best = c;
    return best;
}

static void ana_ro_text_live(FILE *o, const ana_oom *x)
{
    char b[32];
    uint64_t n = 0;
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        n += x->live_count[c];
    fprintf(o, "  live at the failure: %s in %llu allocation%s\n", ana_fmt_bytes(x->live_bytes, b, sizeof(b)),
            (unsigned long long)n, n == 1 ? "" : "s");
    for (int c = 0; c < ANA_MCAT_COUNT; c++) {
        if (!x->live[c])
            continue;
        fprintf(o, "    %-14s %12s %6.1f%%  (%llu)\n", ana_mcat_name(c), ana_fmt_bytes(x->live[c], b, sizeof(b)),
                100.0 * (double)x->live[c] / (double)x->live_bytes,
                (unsigned long long)x->live_count[c]);
    }
    int d = ana_ro_dominant(x);
    if (d >= 0)
        fprintf(o, "  most of it: %s (%s, %.1f%%)%s\n", ana_mcat_name(d), ana_fmt_bytes(x->live[d], b, sizeof(b)),
                100.0 * (double)x->live[d] / (double)x->live_bytes,
                d == ANA_MCAT_UNATTRIBUTED ? ": the evidence cannot tell what most of it is" : "");
}

static void ana_ro_text_fits(FILE *o, const ana_oom *x)
{
    char b[32];
    fprintf(o, "  what would fit (%s to save):\n", ana_fmt_bytes(x->need, b, sizeof(b)));
    if (!x->n_fits)
        fprintf(o, "    (no technique applies: no category at the failure holds bytes one "
                   "would shrink)\n");
    for (size_t i = 0; i < x->n_fits; i++) {
        const ana_oom_fit *ft = &x->fits[i];
        fprintf(o, "    %-6s %12s  %s\n             %s\n", ft->covers ? "fits" : "short",
                ana_ro_sb(ft->bytes_saved, b), ana_tech_name(ft->tech), ft->detail);
    }
}

static void ana_ro_text_sites(FILE *o, const ana_report *r, const ana_oom *x)
{
    char b[32];
    size_t n = ana_report_limit(r, x->n_sites);
    if (n > ANA_RO_SITES)
        n = ANA_RO_SITES;
    if (!n)
        return;
    fprintf(o, "  largest allocation sites live at the failure:\n");
    for (size_t i = 0; i < n; i++) {
        const ana_oom_site *s = &x->sites[i];
        fprintf(o, "    %s in %llu allocation%s (%s)\n", ana_fmt_bytes(s->bytes, b, sizeof(b)),
                (unsigned long long)s->count, s->count == 1 ? "" : "s", ana_mcat_name(s->cat));
        ana_report_text_stack(o, r, s->stack);
    }
    if (x->n_sites > n)
        fprintf(o, "    ... %zu more site%s (--json lists them)\n", x->n_sites - n,
                x->n_sites - n == 1 ? "" : "s");
}

void ana_report_oom_text(const ana_report *r, FILE *o)
{
    const ana_oom *x = &r->oom;
    if (!x->present)
        return;
    ana_ro_text_head(o, r, x);
    ana_ro_text_where(o, r, x);
    ana_ro_text_live(o, x);
    ana_ro_text_fits(o, x);
    fprintf(o, "  call stack of the failed allocation:\n");
    ana_report_text_stack(o, r, x->f->ev.stack);
    ana_ro_text_sites(o, r, x);
}

void ana_report_advice_text(const ana_report *r, FILE *o)
{
    const ana_advice *a = &r->advice;
    if (!a->n)
        return;
    fprintf(o, "\nMemory advice (from the categories at the peak)\n");
    for (size_t i = 0; i < a->n; i++)
        fprintf(o, "  * %s\n", a->items[i].text);
}

/* ------------------------------------------------------------------ JSON */

static void ana_ro_json_u64_known(ana_json *j, const char *key, int known, uint64_t v)
{
    ana_json_key(j, key);
    if (known)
        ana_json_u64(j, v);
    else
        ana_json_null(j);
}

static void ana_ro_json_where(ana_json *j, const ana_report *r, const ana_oom *x)
{
    char w[96];
    int stepped = x->where == ANA_OOM_IN_STEP || x->where == ANA_OOM_AFTER_LAST;
    ana_oom_where_text(x, w, sizeof(w));
    ana_json_key(j, "step");
    stepped ? ana_json_u64(j, (uint64_t)x->step) : ana_json_null(j);
    ana_json_key(j, "step_finished");
    stepped ? ana_json_bool(j, x->where == ANA_OOM_IN_STEP) : ana_json_null(j);
    ana_json_kstr(j, "phase", stepped ? ana_phase_name(x->phase) : NULL);
    ana_json_kstr(j, "where", w);
    ana_json_key(j, "steps_before");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < x->steps_before && r->mcat.step_peak; i++) {
        ana_json_obj_begin(j);
        ana_json_ku64(j, "step", i + 1);
        ana_json_ku64(j, "peak_bytes", r->mcat.step_peak[i]);
        ana_json_ku64(j, "peak_at_ns", ana_trace_rel_ns(r->t, r->mcat.step_peak_ns[i]));
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_ro_json_fits(ana_json *j, const ana_oom *x)
{
    ana_json_key(j, "fits");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < x->n_fits; i++) {
        const ana_oom_fit *ft = &x->fits[i];
        ana_json_obj_begin(j);
        ana_json_kstr(j, "technique", ana_tech_key(ft->tech));
        ana_json_kstr(j, "name", ana_tech_name(ft->tech));
        ana_json_ki64(j, "bytes_saved", ft->bytes_saved);
        ana_json_key(j, "covers");
        ana_json_bool(j, ft->covers);
        ana_json_key(j, "factor");
        ft->factor ? ana_json_u64(j, ft->factor) : ana_json_null(j);
        ana_json_kstr(j, "detail", ft->detail);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_ro_json_sites(ana_json *j, const ana_report *r, const ana_oom *x)
{
    size_t n = ana_report_limit(r, x->n_sites);
    ana_json_key(j, "top_sites");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        ana_json_obj_begin(j);
        ana_json_ku64(j, "bytes", x->sites[i].bytes);
        ana_json_ku64(j, "count", x->sites[i].count);
        ana_json_kstr(j, "category", ana_mcat_name(x->sites[i].cat));
        ana_report_json_stack(j, r, x->sites[i].stack);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

void ana_report_oom_json_value(const ana_report *r, ana_json *j)
{
    const ana_oom *x = &r->oom;
    const ana_mem_failure *f = x->f;
    char buf[32];
    if (!x->present) {
        ana_json_null(j);
        return;
    }
    ana_json_obj_begin(j);
    ana_json_ku64(j, "requested_bytes", f->ev.size);
    ana_json_kstr(j, "api", ana_report_api_name(f->ev.api, buf, sizeof(buf)));
    ana_json_kstr(j, "error", ana_cuda_error_describe(f->ev.ret, buf, sizeof(buf)));
    ana_json_ku64(j, "time_ns", ana_trace_rel_ns(r->t, f->ev.time_ns));
    ana_json_ki64(j, "device", f->ev.device);
    ana_json_ku64(j, "tid", f->ev.tid);
    ana_ro_json_u64_known(j, "free_bytes", f->has_meminfo, f->free_bytes);
    ana_ro_json_u64_known(j, "total_bytes", f->has_meminfo, f->total_bytes);
    ana_json_kstr(j, "kind", ana_oom_kind_name(x->kind));
    ana_ro_json_u64_known(j, "shortfall_bytes", x->kind != ANA_OOM_UNKNOWN, x->shortfall);
    ana_json_ku64(j, "needed_bytes", x->need);
    ana_json_ku64(j, "failures", x->failures);
    ana_json_ku64(j, "other_failures", x->other_failures);
    ana_report_json_stack(j, r, f->ev.stack);
    ana_json_ku64(j, "live_bytes", x->live_bytes);
    ana_report_json_categories(j, "live", x->live);
    ana_report_json_categories(j, "live_counts", x->live_count);
    int d = ana_ro_dominant(x);
    ana_json_kstr(j, "dominant", d >= 0 ? ana_mcat_name(d) : NULL);
    ana_ro_json_where(j, r, x);
    ana_ro_json_fits(j, x);
    ana_ro_json_sites(j, r, x);
    ana_json_obj_end(j);
}

void ana_report_oom_json(const ana_report *r, ana_json *j)
{
    ana_json_key(j, "oom");
    ana_report_oom_json_value(r, j);
}

void ana_report_advice_json(const ana_report *r, ana_json *j)
{
    const ana_advice *a = &r->advice;
    ana_json_key(j, "advice");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < a->n; i++) {
        const ana_advice_item *x = &a->items[i];
        ana_json_obj_begin(j);
        ana_json_kstr(j, "topic", x->topic);
        ana_json_kstr(j, "category", ana_mcat_name(x->cat));
        ana_json_kstr(j, "technique", ana_tech_key(x->tech));
        ana_json_ki64(j, "bytes_saved", x->bytes_saved);
        ana_json_kstr(j, "text", x->text);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

/* report_capture.c — the capture windows of a trace (model/capture.h) in the report's
 * header: the "captured" lines of the text and the trace.capture JSON object
 * (docs/report-schema.md). Part of views/: called by report_text.c and report_json.c. */
#include "views/report_write.h"
#include "model/capture.h"
#include "model/trace.h"
#include "model/util.h"

#include <stdio.h>
#include <string.h>

/* What opens a window, in words, for a trace whose window never opened. */
static void never_text(const ana_trace *t, char *buf, size_t cap)
{
    const char *r = ana_capture_range(t);
    if (!strcmp(r, "cudaProfilerApi"))
        snprintf(buf, cap, "the program never called cudaProfilerStart");
    else if (!strncmp(r, "nvtx:", 5))
        snprintf(buf, cap, "no NVTX range named \"%s\" was pushed or started", r + 5);
    else
        snprintf(buf, cap, "the program ended before the delay (%ld ms) passed",
                 ana_capture_ms(t, "ANATOMIST_DELAY_MS"));
}

static void settings_text(const ana_trace *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s", strcmp(ana_capture_range(t), "none") ? ana_capture_range(t) : "");
    long delay = ana_capture_ms(t, "ANATOMIST_DELAY_MS"), duration = ana_capture_ms(t, "ANATOMIST_DURATION_MS");
    if (delay > 0 && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%sdelay %ld ms", n ? ", " : "", delay);
    if (duration > 0 && n < cap)
        snprintf(buf + n, cap - n, "%sduration %ld ms", n ? ", " : "", duration);
}

void ana_capture_text(FILE *o, const ana_trace *t)
{
    if (!ana_capture_limited(t))
        return;
    char set[400], why[300], a[32], b[32], d[32];
    settings_text(t, set, sizeof(set));
    if (t->n_capture == 0) {
        never_text(t, why, sizeof(why));
        fprintf(o, "  captured   NOTHING (%s): %s; only allocations and definitions were "
                   "recorded\n", set, why);
        return;
    }
    ana_fmt_ns(ana_capture_covered_ns(t), d, sizeof(d));
    fprintf(o, "  captured   %s in %zu window%s (%s); outside, only allocations and definitions "
               "were recorded\n", d, t->n_capture, t->n_capture == 1 ? "" : "s", set);
    for (size_t i = 0; i < t->n_capture && i < 8; i++) {
        const ana_capture_win *w = &t->capture[i];
        ana_fmt_ns(ana_trace_rel_ns(t, w->start_ns), a, sizeof(a));
        ana_fmt_ns(ana_trace_rel_ns(t, ana_capture_stop(t, w)), b, sizeof(b));
        fprintf(o, "  window %-3zu %s (%s) to %s (%s)\n", i + 1, a, w->start_why, b,
                w->stop_why ? w->stop_why : "the end of the trace");
    }
    if (t->n_capture > 8)
        fprintf(o, "  ...        %zu more windows\n", t->n_capture - 8);
}

void ana_capture_json(ana_json *j, const ana_trace *t)
{
    ana_json_key(j, "capture");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "range", ana_capture_range(t));
    ana_json_ku64(j, "delay_ms", (uint64_t)ana_capture_ms(t, "ANATOMIST_DELAY_MS"));
    ana_json_ku64(j, "duration_ms", (uint64_t)ana_capture_ms(t, "ANATOMIST_DURATION_MS"));
    ana_json_key(j, "limited");
    ana_json_bool(j, ana_capture_limited(t));
    ana_json_ku64(j, "covered_ns", ana_capture_covered_ns(t));
    ana_json_key(j, "never_started");
    if (ana_capture_limited(t) && t->n_capture == 0) {
        char why[300];
        never_text(t, why, sizeof(why));
        ana_json_str(j, why);
    } else {
        ana_json_null(j);
    }
    ana_json_key(j, "windows");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < t->n_capture; i++) {
        const ana_capture_win *w = &t->capture[i];
        ana_json_obj_begin(j);
        ana_json_ku64(j, "start_ns", ana_trace_rel_ns(t, w->start_ns));
        ana_json_ku64(j, "stop_ns", ana_trace_rel_ns(t, ana_capture_stop(t, w)));
        ana_json_kstr(j, "start", w->start_why);
        ana_json_key(j, "stop");
        if (w->stop_why)
            ana_json_str(j, w->stop_why);
        else
            ana_json_null(j);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

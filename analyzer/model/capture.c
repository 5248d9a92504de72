/* capture.c — the capture windows of a trace (capture.h). */
#include "model/capture.h"

#include <stdlib.h>
#include <string.h>

#include "model/trace.h"
#include "model/util.h"

static int key_is(const ana_rec_info *in, const char *k)
{
    return in->key.len == strlen(k) && in->key.s && memcmp(in->key.s, k, in->key.len) == 0;
}

int ana_capture_on_info(ana_trace *t, const ana_rec_info *in, uint64_t time_ns)
{
    if (key_is(in, "capture.start")) {
        ANA_GROW(t->capture, t->cap_capture, t->n_capture + 1);
        t->capture[t->n_capture++] = (ana_capture_win){ time_ns, 0, ana_str_name(in->value), NULL };
        return 1;
    }
    if (!key_is(in, "capture.stop"))
        return 0;
    for (size_t i = 0; i < t->n_capture; i++) /* the first window still open */
        if (!t->capture[i].stop_why) {
            t->capture[i].stop_ns = time_ns;
            t->capture[i].stop_why = ana_str_name(in->value);
            break;
        }
    return 1;
}

static const char *range_of(const ana_trace *t)
{
    const char *r = ana_trace_info(t, "ANATOMIST_CAPTURE_RANGE");
    return r ? r : "none";
}

static long ms_of(const ana_trace *t, const char *key)
{
    const char *v = ana_trace_info(t, key);
    return v ? atol(v) : 0;
}

int ana_capture_limited(const ana_trace *t)
{
    return strcmp(range_of(t), "none") != 0 || ms_of(t, "ANATOMIST_DELAY_MS") > 0 ||
           ms_of(t, "ANATOMIST_DURATION_MS") > 0;
}

/* A window's end: its stop, else the trace's last record. */
static uint64_t stop_of(const ana_trace *t, const ana_capture_win *w)
{
    if (w->stop_why)
        return w->stop_ns;
    return t->has_time && t->last_ns > w->start_ns ? t->last_ns : w->start_ns;
}

static uint64_t covered_ns(const ana_trace *t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->n_capture; i++)
        sum += stop_of(t, &t->capture[i]) - t->capture[i].start_ns;
    return sum;
}

/* What opens a window, in words, for a trace whose window never opened. */
static void never_text(const ana_trace *t, char *buf, size_t cap)
{
    const char *r = range_of(t);
    if (!strcmp(r, "cudaProfilerApi"))
        snprintf(buf, cap, "the program never called cudaProfilerStart");
    else if (!strncmp(r, "nvtx:", 5))
        snprintf(buf, cap, "no NVTX range named \"%s\" was pushed or started", r + 5);
    else
        snprintf(buf, cap, "the program ended before the delay (%ld ms) passed",
                 ms_of(t, "ANATOMIST_DELAY_MS"));
}

static void settings_text(const ana_trace *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s", strcmp(range_of(t), "none") ? range_of(t) : "");
    long delay = ms_of(t, "ANATOMIST_DELAY_MS"), duration = ms_of(t, "ANATOMIST_DURATION_MS");
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
    ana_fmt_ns(covered_ns(t), d, sizeof(d));
    fprintf(o, "  captured   %s in %zu window%s (%s); outside, only allocations and definitions "
               "were recorded\n", d, t->n_capture, t->n_capture == 1 ? "" : "s", set);
    for (size_t i = 0; i < t->n_capture && i < 8; i++) {
        const ana_capture_win *w = &t->capture[i];
        ana_fmt_ns(ana_trace_rel_ns(t, w->start_ns), a, sizeof(a));
        ana_fmt_ns(ana_trace_rel_ns(t, stop_of(t, w)), b, sizeof(b));
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
    ana_json_kstr(j, "range", range_of(t));
    ana_json_ku64(j, "delay_ms", (uint64_t)ms_of(t, "ANATOMIST_DELAY_MS"));
    ana_json_ku64(j, "duration_ms", (uint64_t)ms_of(t, "ANATOMIST_DURATION_MS"));
    ana_json_key(j, "limited");
    ana_json_bool(j, ana_capture_limited(t));
    ana_json_ku64(j, "covered_ns", covered_ns(t));
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
        ana_json_ku64(j, "stop_ns", ana_trace_rel_ns(t, stop_of(t, w)));
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

void ana_capture_free(ana_trace *t)
{
    for (size_t i = 0; i < t->n_capture; i++) {
        free(t->capture[i].start_why);
        free(t->capture[i].stop_why);
    }
    free(t->capture);
}

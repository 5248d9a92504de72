/* capture.c — the capture windows of a trace (capture.h): kept from INFO records while
 * loading, and what they cover. Part of model/: called by trace_records.c and by the views
 * that print them (views/report_capture.c); calls model/ only. */
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

const char *ana_capture_range(const ana_trace *t)
{
    const char *r = ana_trace_info(t, "ANATOMIST_CAPTURE_RANGE");
    return r ? r : "none";
}

long ana_capture_ms(const ana_trace *t, const char *key)
{
    const char *v = ana_trace_info(t, key);
    return v ? atol(v) : 0;
}

int ana_capture_limited(const ana_trace *t)
{
    return strcmp(ana_capture_range(t), "none") != 0 || ana_capture_ms(t, "ANATOMIST_DELAY_MS") > 0 ||
           ana_capture_ms(t, "ANATOMIST_DURATION_MS") > 0;
}

/* A window's end: its stop, else the trace's last record. */
uint64_t ana_capture_stop(const ana_trace *t, const ana_capture_win *w)
{
    if (w->stop_why)
        return w->stop_ns;
    return t->has_time && t->last_ns > w->start_ns ? t->last_ns : w->start_ns;
}

uint64_t ana_capture_covered_ns(const ana_trace *t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->n_capture; i++)
        sum += ana_capture_stop(t, &t->capture[i]) - t->capture[i].start_ns;
    return sum;
}

void ana_capture_free(ana_trace *t)
{
    for (size_t i = 0; i < t->n_capture; i++) {
        free(t->capture[i].start_why);
        free(t->capture[i].stop_why);
    }
    free(t->capture);
}

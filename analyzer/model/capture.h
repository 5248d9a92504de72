/* capture.h — the capture windows a trace covers (docs/trace-format.md "Capture windows"):
 * what the preload recorded under ANATOMIST_CAPTURE_RANGE, ANATOMIST_DELAY_MS and
 * ANATOMIST_DURATION_MS, read from its INFO records. The report prints them
 * (views/report_capture.c).
 * Single-threaded, like the trace it reads. */
#ifndef ANA_CAPTURE_H
#define ANA_CAPTURE_H

#include <stdint.h>
#include <stdio.h>

#include "records.h"

struct ana_trace;

typedef struct ana_capture_win {
    uint64_t start_ns, stop_ns; /* trace times; stop_ns 0 = not closed in the trace */
    char *start_why, *stop_why; /* "cudaProfilerStart", "nvtx push", "delay", ...; NULL */
} ana_capture_win;

/* Loading: 1 when the INFO record (at time_ns) was a window edge, kept in t. */
int ana_capture_on_info(struct ana_trace *t, const ana_rec_info *in, uint64_t time_ns);
/* 1 when the trace was recorded with capture settings (only windows hold activity). */
int ana_capture_limited(const struct ana_trace *t);
/* What the preload was told (INFO records): ANATOMIST_CAPTURE_RANGE ("none" when unset)
 * and a number of milliseconds (ANATOMIST_DELAY_MS, ANATOMIST_DURATION_MS; 0 unset). */
const char *ana_capture_range(const struct ana_trace *t);
long ana_capture_ms(const struct ana_trace *t, const char *key);
/* A window's end: its stop, else the trace's last record. */
uint64_t ana_capture_stop(const struct ana_trace *t, const ana_capture_win *w);
/* The time the windows cover, summed. */
uint64_t ana_capture_covered_ns(const struct ana_trace *t);
void ana_capture_free(struct ana_trace *t);

#endif

/* capture.h — the capture windows a trace covers (docs/trace-format.md "Capture windows"):
 * what the preload recorded under ANATOMIST_CAPTURE_RANGE, ANATOMIST_DELAY_MS and
 * ANATOMIST_DURATION_MS, read from its INFO records, for `report` (text and JSON).
 * Single-threaded, like the trace it reads. */
#ifndef ANA_CAPTURE_H
#define ANA_CAPTURE_H

#include <stdint.h>
#include <stdio.h>

#include "model/json.h"
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
/* Report: the "capture" line(s) of the header (nothing without capture settings) and the
 * trace.capture JSON object (docs/report-schema.md). */
void ana_capture_text(FILE *o, const struct ana_trace *t);
void ana_capture_json(ana_json *j, const struct ana_trace *t);
void ana_capture_free(struct ana_trace *t);

#endif

/* diff.h — `anatomist diff BASE HEAD`: what changed between two runs (a pull request's
 * view): per-step time by class, memory by category at the peak, top kernel and top
 * allocation-site deltas, new and vanished kernels, a one-line verdict; thresholds for
 * --fail-on. Computed from two finished reports (report.h), which must outlive it.
 * Schema and --fail-on grammar in docs/diff.md. Not thread-safe. */
#ifndef ANA_DIFF_H
#define ANA_DIFF_H

#include <stdio.h>

#include "json.h"

struct ana_report;
typedef struct ana_diff ana_diff;

ana_diff *ana_diff_new(const struct ana_report *base, const struct ana_report *head);
void ana_diff_free(ana_diff *d);
/* The `diff --format json` document as a value (the HTML page embeds it). */
void ana_diff_write_json_value(const ana_diff *d, ana_json *j);
void ana_diff_write_json(const ana_diff *d, FILE *out);
/* A pull-request comment: tables and a one-line verdict, under 60 KB. */
void ana_diff_write_markdown(const ana_diff *d, FILE *out);

#endif

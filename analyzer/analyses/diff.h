/* diff.h — `anatomist diff BASE HEAD`: what changed between two runs (a pull request's
 * view): per-step time by class, memory by category at the peak, top kernel and top
 * allocation-site deltas, new and vanished kernels, a one-line verdict; thresholds for
 * --fail-on. Computed from two finished reports (report.h), which must outlive it.
 * Schema and --fail-on grammar in docs/diff.md; written by views/diff_write.h.
 * Not thread-safe. */
#ifndef ANA_DIFF_H
#define ANA_DIFF_H

#include <stdio.h>

#include "model/json.h"

struct ana_report;
typedef struct ana_diff ana_diff;

ana_diff *ana_diff_new(const struct ana_report *base, const struct ana_report *head);
void ana_diff_free(ana_diff *d);

/* Rows of the ranked lists (kernels, allocation sites, new/vanished names in markdown);
 * 0 = all. Default 10. */
void ana_diff_set_top(ana_diff *d, size_t top);

/* --fail-on: "KEY OP VALUE[,KEY OP VALUE...]" (docs/diff.md). KEY is a metric key
 * ("peak-memory", "time:contraction", "memory:weights"...), OP one of > >= < <=, VALUE
 * "+5%" (the relative change), "+100MiB" / "-2ms" / "+1000" (a signed change in the
 * metric's unit) or "70GiB" (unsigned: head's own value). */
enum ana_diff_cmp { ANA_DIFF_RATIO = 0, ANA_DIFF_DELTA = 1, ANA_DIFF_HEAD = 2 };
typedef struct ana_diff_limit {
    char spec[64]; /* the part as written, blanks trimmed */
    char key[32];
    char op[3];    /* ">", ">=", "<" or "<=" */
    int cmp;       /* enum ana_diff_cmp */
    double limit;  /* ANA_DIFF_RATIO: a fraction (+5% is 0.05); else in the metric's unit */
} ana_diff_limit;
#define ANA_DIFF_MAX_LIMITS 32
/* Parses spec into out[0..*n) (at most max). 0, or -1 with the offending part and the
 * reason in err. Needs no diff: a bad spec is refused before any trace is read. */
int ana_diff_limits_parse(const char *spec, ana_diff_limit *out, size_t max, size_t *n,
                          char *err, size_t cap);
/* Evaluates the limits on d (the JSON and markdown then list them) and returns how many
 * were crossed. msg (may be NULL) gets one line per crossed limit and per limit that
 * could not be evaluated (a figure one side does not know: never crossed). */
size_t ana_diff_check(ana_diff *d, const ana_diff_limit *lim, size_t n, FILE *msg);

#endif

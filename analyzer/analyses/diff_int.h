/* diff_int.h — private to the diff's files (analyses/diff*.c, ranks_diff.c and their
 * writers views/diff_*.c, views/ranks_diff_write.c): what a diff holds once computed
 * (every figure of both sides, already merged and ranked) and the formatting of a figure
 * by its unit (diff_figures.c), shared by the markdown, the verdict and the --fail-on
 * messages. */
#ifndef ANA_DIFF_INT_H
#define ANA_DIFF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/classify.h"
#include "analyses/diff.h"
#include "analyses/memcat.h"

/* Units of a figure: the JSON "unit" strings. */
enum ana_diff_unit { ANA_DU_NS, ANA_DU_BYTES, ANA_DU_COUNT, ANA_DU_RATIO };

/* One compared figure. A side that does not know it (no steps, no MFU) has has_* = 0. */
typedef struct ana_diff_row {
    const char *key, *label; /* "step-time", "time:contraction", "memory:weights"... */
    int unit;                /* enum ana_diff_unit */
    double base, head;       /* integers below 2^53 stay exact */
    uint8_t has_base, has_head;
} ana_diff_row;

/* A kernel name or an allocation site, with each side's figure. */
typedef struct ana_diff_item {
    char *name;
    uint64_t base, head;             /* GPU ns, or bytes live at the peak */
    uint64_t base_count, head_count; /* kernels: executions; sites: allocations */
    int cls;                         /* kernels: class (head's when in both) */
    uint8_t in_base, in_head;
} ana_diff_item;

enum { ANA_DIFF_METRICS = 8 };

typedef struct ana_diff_result {
    ana_diff_limit lim;
    uint8_t known;   /* value could be computed */
    uint8_t crossed;
    double value;    /* the ratio, the delta or head's value (lim.cmp) */
    char note[96];   /* why it was not evaluated ("" when it was) */
} ana_diff_result;

struct ana_diff {
    const struct ana_report *base, *head;
    int per_step; /* both sides have steps: time by class is the mean per step */
    size_t top;   /* rows of the ranked lists (0 = all) */
    ana_diff_row metrics[ANA_DIFF_METRICS];
    ana_diff_row classes[ANA_CLASS_COUNT];
    ana_diff_row cats[ANA_MCAT_COUNT];
    ana_diff_item *kernels; /* by |delta|, then the larger side, then name */
    size_t n_kernels, n_new, n_vanished;
    ana_diff_item *sites;   /* the same order */
    size_t n_sites;
    ana_diff_result *results;
    size_t n_results;
    char verdict[512];
};

/* "12.3 MiB", "1.234 ms", "42", "37.5%" (a ratio); deltas with a sign. */
void ana_diff_fmt(int unit, double v, char *buf, size_t cap);
void ana_diff_fmt_delta(int unit, double d, char *buf, size_t cap);
/* "+5.1%", "-3.0%", "new" (base 0 or unknown, head not), "gone", "0.0%", "n/a". */
void ana_diff_fmt_change(const ana_diff_row *r, char *buf, size_t cap);
/* delta = head - base and ratio = delta / base; 0 when not defined. */
int ana_diff_delta(const ana_diff_row *r, double *delta);
int ana_diff_ratio(const ana_diff_row *r, double *ratio);
/* The row of an item (kernel ns or site bytes). */
ana_diff_row ana_diff_item_row(const ana_diff_item *it, int unit);
/* Rows the ranked lists show: top, or all when top is 0. */
size_t ana_diff_shown(const ana_diff *d, size_t n);
const char *ana_diff_unit_name(int unit);
/* "new", "vanished", "changed" or "same". */
const char *ana_diff_item_status(const ana_diff_item *it);
/* The unit of a metric key (also "time:CLASS", "memory:CATEGORY"), or -1 when unknown;
 * its row in d, or NULL. */
int ana_diff_key_unit(const char *key);
const ana_diff_row *ana_diff_find(const ana_diff *d, const char *key);


/* Two jobs' diff (ranks_diff.h): its rows live in d, as a diff of two traces' would. */
#include "analyses/ranks.h"
struct ana_ranks_diff {
    const ana_ranks *side[2];
    ana_diff d;          /* rows and --fail-on results only (no reports behind it) */
    ana_diff_row extra[3]; /* work and collective time per step, slowest rank's step */
};

#endif

/* sorter.h — fixed-size items that come in any order, to be read sorted, without holding
 * more than a bounded number of them in memory (spill.h): items are added into a run in
 * memory; each time `run` of them have come, the run is sorted and written to a temporary
 * file; at the end the runs are merged (equal items: the earlier run first, so a stable
 * sort of each run makes the whole stable). A sorter that never filled a run sorts its
 * one run in memory, as a plain sort would.
 *
 * The comparator reads the sorter's ctx through ana_sorter_ctx (the model's comparators
 * need the trace's interned tables), which is the thread's own: sorters on different
 * threads do not meet; on one thread, one sorts at a time. */
#ifndef ANA_SORTER_H
#define ANA_SORTER_H

#include <stddef.h>
#include <stdint.h>

#include "model/spill.h"

typedef int (*ana_sorter_cmp)(const void *, const void *);

typedef struct ana_sorter {
    size_t item, run;       /* bytes per item; most items in memory (SIZE_MAX: no limit) */
    int stable;             /* runs sorted by ana_sort_stable (else ana_sort) */
    ana_sorter_cmp cmp;
    const void *ctx;
    uint8_t *buf;           /* the run being filled: n of cap items */
    size_t n, cap;
    uint64_t count;         /* items in all */
    ana_spill runs;         /* the runs written, one after the other */
    uint64_t *starts;       /* where each run begins in runs */
    size_t n_runs, cap_runs;
    uint8_t *last;          /* the last item of the last run written */
    int unordered;          /* a run began before the one before it ended */
    /* When set, each run (sorted) goes to keep(keep_arg, items, n) instead of the runs'
     * file: its owner keeps it its own way, flushes the last run with ana_sorter_flush
     * and merges them itself when they are unordered (ana_sorter_finish is not used). */
    void (*keep)(void *arg, const void *items, size_t n);
    void *keep_arg;
} ana_sorter;

/* The context of the sort under way, for its comparator: a sorter's ctx while it sorts or
 * merges; a caller of ana_sort with such a comparator sets it itself. */
extern _Thread_local const void *ana_sorter_ctx;

void ana_sorter_init(ana_sorter *s, size_t item, size_t run, int stable, ana_sorter_cmp cmp,
                     const void *ctx, const char *what);
/* Room for one more item, to be filled at once (writes a full run out first). */
void *ana_sorter_slot(ana_sorter *s);
/* Once every item is in: the items in sorted order. With emit NULL, they become out's
 * (the sorted array itself when they stayed in memory, the runs' file when the runs
 * followed each other); else emit gets each in turn, and out is put in a file first when
 * there were runs (emit is expected to push into it). The sorter is freed. */
void ana_sorter_finish(ana_sorter *s, ana_spill *out, void (*emit)(void *arg, const void *item),
                       void *arg);
void ana_sorter_free(ana_sorter *s);
/* The items not yet in a run become the last run (a sorter with keep). */
void ana_sorter_flush(ana_sorter *s);

/* A heap of numbers (indices into the caller's items), the least by less(arg, a, b) on
 * top: for a k-way merge, run numbers ordered by their heads (the lower run first between
 * equal heads, so that the merge is stable). v has room for every number the heap will
 * hold (the caller grows it). */
typedef struct ana_run_heap {
    size_t *v, n;
    int (*less)(void *arg, size_t a, size_t b);
    void *arg;
} ana_run_heap;
void ana_run_heap_add(ana_run_heap *h, size_t r);
/* The top run's head moved on, or the run ended (done): the heap back in order. */
void ana_run_heap_next(ana_run_heap *h, int done);

/* The number of items a setting (environment variable `name`) asks for: a number, 0 for
 * no limit (SIZE_MAX); def when unset or unreadable (said on stderr once per setting). */
size_t ana_sorter_setting(const char *name, size_t def, size_t item);

#endif

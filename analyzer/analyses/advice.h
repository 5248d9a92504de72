/* advice.h — memory advice for every report, each item tied to evidence in the memory
 * anatomy at the peak (memcat.h) and carrying the bytes it would save (docs/oom.md):
 *   - the largest category and the technique that shrinks it;
 *   - mixed precision that costs memory at this micro-batch (the 16-bit weight copies
 *     weigh more than the 16-bit activations save);
 *   - the optimizer states against 8-bit states (2 B/param) and SGD with momentum (4).
 * No evidence, no item: per-parameter advice needs a parameter count, a category needs
 * bytes at the peak.
 *
 * ana_advice_compute is pure arithmetic on hand-made figures (unit-tested);
 * ana_advice_build gathers the figures. Not thread-safe. */
#ifndef ANA_ADVICE_H
#define ANA_ADVICE_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/memcat.h"
#include "analyses/memory.h"
#include "analyses/oom.h"

typedef struct ana_advice_item {
    const char *topic;   /* "largest_category", "mixed_precision", "optimizer_states" */
    int cat;             /* enum ana_mcat the item is about */
    int tech;            /* enum ana_tech (oom.h) */
    int64_t bytes_saved; /* at the peak */
    char text[400];      /* one sentence with the evidence and the numbers */
} ana_advice_item;

#define ANA_ADVICE_MAX 6

typedef struct ana_advice {
    ana_advice_item items[ANA_ADVICE_MAX];
    size_t n;
} ana_advice;

/* What the advice is computed from: the memory at the peak. */
typedef struct ana_advice_figures {
    uint64_t cat[ANA_MCAT_COUNT];   /* bytes by category */
    uint64_t count[ANA_MCAT_COUNT]; /* allocations by category */
    double params;                  /* parameter count, 0 = unknown */
    int weights_16bit;              /* 1: the weights are (also) held in 16 bits */
} ana_advice_figures;

/* Fills out (n items, in the order of the list above). */
void ana_advice_compute(const ana_advice_figures *g, ana_advice *out);
/* The same from the memory anatomy at the device peak (nothing when there is no peak). */
void ana_advice_build(const ana_memcat *m, const ana_mem_result *mem, ana_advice *out);

#endif

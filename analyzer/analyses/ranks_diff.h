/* ranks_diff.h — `anatomist diff` of two jobs (each a set of ranks, ranks.h): the merged
 * figures side by side (step time as the median of the ranks' medians, peak memory of
 * the largest rank, GPU time summed over ranks, by class; memory by category, the
 * largest rank's), work and collective time per step, each rank's median step time and
 * both sides' stragglers (docs/ranks.md). The metric keys are diff.h's, so --fail-on
 * works as for two traces. Both jobs must outlive the diff. Written by views/diff_write.h.
 * Not thread-safe. */
#ifndef ANA_RANKS_DIFF_H
#define ANA_RANKS_DIFF_H

#include <stdio.h>

#include "analyses/diff.h"
#include "analyses/ranks.h"

typedef struct ana_ranks_diff ana_ranks_diff;

ana_ranks_diff *ana_ranks_diff_new(const ana_ranks *base, const ana_ranks *head);
void ana_ranks_diff_free(ana_ranks_diff *x);
/* As ana_diff_check: evaluates --fail-on limits, returns how many were crossed. */
size_t ana_ranks_diff_check(ana_ranks_diff *x, const ana_diff_limit *lim, size_t n, FILE *msg);

#endif

/* ranks_diff.c — see ranks_diff.h: two jobs' merged anatomies side by side. The figures
 * are diff.h's rows (the same keys, so --fail-on reads them with diff.h's grammar and
 * check), computed from the job reports of ranks.h. Written by views/ranks_diff_write.c.
 * Part of analyses/: called by `anatomist diff` of two jobs (cli/cmd_diff.c). */
#include "analyses/ranks_diff.h"

#include "analyses/diff_int.h"
#include "model/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t ana_rd_sum(const ana_ranks *rs, size_t off)
{
    uint64_t v = 0;
    for (size_t i = 0; i < rs->n; i++)
        v += *(const uint64_t *)((const char *)&rs->v[i] + off);
    return v;
}

static uint64_t ana_rd_max(const ana_ranks *rs, size_t off)
{
    uint64_t v = 0;
    for (size_t i = 0; i < rs->n; i++) {
        uint64_t x = *(const uint64_t *)((const char *)&rs->v[i] + off);
        v = x > v ? x : v;
    }
    return v;
}

/* Lower middle over the ranks of the member at off. */
static uint64_t ana_rd_median(const ana_ranks *rs, size_t off)
{
    uint64_t *v = ana_xcalloc(rs->n + 1, sizeof(uint64_t)), m;
    for (size_t i = 0; i < rs->n; i++)
        v[i] = *(const uint64_t *)((const char *)&rs->v[i] + off);
    m = ana_median_u64(v, rs->n);
    free(v);
    return m;
}

#define ANA_RD_OFF(m) offsetof(ana_rank, m)

/* Metric m (diff_int.h's order) of a job; 0 when it does not know it. */
static int ana_rd_metric(const ana_ranks *rs, int m, double *v)
{
    switch (m) {
    case 0: *v = (double)rs->job_step_median_ns; return rs->all_steps;
    case 1: *v = (double)ana_rd_max(rs, ANA_RD_OFF(peak_bytes)); return 1;
    case 2: *v = (double)ana_rd_sum(rs, ANA_RD_OFF(busy_ns)); return 1;
    case 3: *v = (double)ana_rd_sum(rs, ANA_RD_OFF(idle_ns)); return 1;
    case 4:
        *v = (double)(ana_rd_sum(rs, ANA_RD_OFF(kernel_ns)) +
                      ana_rd_sum(rs, ANA_RD_OFF(memcpy_ns)) +
                      ana_rd_sum(rs, ANA_RD_OFF(memset_ns)));
        return 1;
    case 5: *v = (double)ana_rd_sum(rs, ANA_RD_OFF(live_end_bytes)); return 1;
    case 6: *v = (double)ana_rd_sum(rs, ANA_RD_OFF(launches)); return 1;
    default: *v = 0; return 0; /* MFU: not merged across ranks */
    }
}

static const struct {
    const char *key, *label;
    int unit;
} ana_rd_defs[ANA_DIFF_METRICS] = {
    { "step-time", "step time (median of the ranks' medians)", ANA_DU_NS },
    { "peak-memory", "peak memory (largest rank)", ANA_DU_BYTES },
    { "gpu-busy", "GPU busy (sum over ranks)", ANA_DU_NS },
    { "gpu-idle", "GPU idle (sum over ranks)", ANA_DU_NS },
    { "gpu-time", "GPU time (sum over ranks)", ANA_DU_NS },
    { "memory-at-end", "memory live at the end (sum)", ANA_DU_BYTES },
    { "kernel-launches", "kernel launches (sum)", ANA_DU_COUNT },
    { "mfu", "model FLOPs utilisation", ANA_DU_RATIO },
};

static void ana_rd_rows(ana_ranks_diff *x)
{
    const ana_ranks *b = x->side[0], *h = x->side[1];
    uint64_t ns[2][ANA_CLASS_COUNT], cnt[ANA_CLASS_COUNT];
    ana_ranks_sum_classes(b, ns[0], cnt);
    ana_ranks_sum_classes(h, ns[1], cnt);
    for (int m = 0; m < ANA_DIFF_METRICS; m++) {
        ana_diff_row *r = &x->d.metrics[m];
        *r = (ana_diff_row){ ana_rd_defs[m].key, ana_rd_defs[m].label, ana_rd_defs[m].unit,
                             0, 0, 0, 0 };
        r->has_base = (uint8_t)ana_rd_metric(b, m, &r->base);
        r->has_head = (uint8_t)ana_rd_metric(h, m, &r->head);
    }
    static const char *const ckeys[ANA_CLASS_COUNT] = {
        "time:contraction", "time:normalization", "time:elementwise",
        "time:communication", "time:memory", "time:other" };
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        x->d.classes[c] = (ana_diff_row){ ckeys[c], ana_class_name(c), ANA_DU_NS,
                                          (double)ns[0][c], (double)ns[1][c], 1, 1 };
    static const char *const mkeys[ANA_MCAT_COUNT] = {
        "memory:weights", "memory:optimizer", "memory:gradients", "memory:activations",
        "memory:temporary", "memory:functionality", "memory:unattributed" };
    for (int c = 0; c < ANA_MCAT_COUNT; c++) {
        size_t off = ANA_RD_OFF(by_category) + (size_t)c * sizeof(uint64_t);
        x->d.cats[c] = (ana_diff_row){ mkeys[c], ana_mcat_name(c), ANA_DU_BYTES,
                                       (double)ana_rd_max(b, off), (double)ana_rd_max(h, off),
                                       1, 1 };
    }
    static const char *const elabel[3] = { "work per step (median of the ranks)",
                                           "collective time per step (median of the ranks)",
                                           "slowest rank's median step time" };
    size_t eoff[3] = { ANA_RD_OFF(work_median_ns), ANA_RD_OFF(coll_median_ns),
                       ANA_RD_OFF(step_median_ns) };
    for (int e = 0; e < 3; e++) {
        uint64_t vb = e < 2 ? ana_rd_median(b, eoff[e]) : ana_rd_max(b, eoff[e]);
        uint64_t vh = e < 2 ? ana_rd_median(h, eoff[e]) : ana_rd_max(h, eoff[e]);
        x->extra[e] = (ana_diff_row){ NULL, elabel[e], ANA_DU_NS, (double)vb, (double)vh,
                                      (uint8_t)b->all_steps, (uint8_t)h->all_steps };
    }
}

ana_ranks_diff *ana_ranks_diff_new(const ana_ranks *base, const ana_ranks *head)
{
    ana_ranks_diff *x = ana_xcalloc(1, sizeof(*x));
    x->side[0] = base;
    x->side[1] = head;
    ana_rd_rows(x);
    return x;
}

void ana_ranks_diff_free(ana_ranks_diff *x)
{
    if (!x)
        return;
    free(x->d.results);
    free(x);
}

size_t ana_ranks_diff_check(ana_ranks_diff *x, const ana_diff_limit *lim, size_t n, FILE *msg)
{
    return ana_diff_check(&x->d, lim, n, msg);
}

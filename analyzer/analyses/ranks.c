/* ranks.c — see ranks.h: the job's figures, its stragglers and the skew of its
 * collectives, from the ranks' summaries.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/ranks.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

void ana_ranks_add(ana_ranks *rs, ana_rank *k)
{
    ANA_GROW(rs->v, rs->cap, rs->n + 1);
    rs->v[rs->n++] = *k;
    memset(k, 0, sizeof(*k));
}

void ana_ranks_free(ana_ranks *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        ana_rank_free(&rs->v[i]);
    free(rs->v);
    free(rs->stragglers);
    free(rs->skew);
    free(rs->by_rank);
    memset(rs, 0, sizeof(*rs));
}

int ana_ranks_check(const ana_ranks *rs, char *err, size_t cap)
{
    for (size_t i = 0; i < rs->n; i++)
        for (size_t j = i + 1; j < rs->n; j++) {
            const ana_rank *a = &rs->v[i], *b = &rs->v[j];
            if (a->rank >= 0 && a->rank == b->rank) {
                snprintf(err, cap, "%s and %s are both rank %lld: traces of two jobs, or one "
                         "rank given twice (give one job's traces)", a->source, b->source,
                         (long long)a->rank);
                return -1;
            }
            if (a->world_size >= 0 && b->world_size >= 0 && a->world_size != b->world_size) {
                snprintf(err, cap, "%s has world size %lld but %s has %lld: traces of "
                         "different jobs (give one job's traces)", a->source,
                         (long long)a->world_size, b->source, (long long)b->world_size);
                return -1;
            }
        }
    return 0;
}

static int ana_ranks_cmp(const void *x, const void *y)
{
    const ana_rank *a = x, *b = y;
    /* ranks first in order, then summaries without a rank by source */
    if ((a->rank < 0) != (b->rank < 0))
        return a->rank < 0 ? 1 : -1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->source ? a->source : "", b->source ? b->source : "");
}

static int ana_ranks_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lower middle of v[0..n), sorting v in place; 0 when empty. */
static uint64_t ana_ranks_median(uint64_t *v, size_t n)
{
    if (!n)
        return 0;
    ana_sort(v, n, sizeof(uint64_t), ana_ranks_u64_cmp);
    return v[(n - 1) / 2];
}

void ana_ranks_sum_classes(const ana_ranks *rs, uint64_t ns[ANA_CLASS_COUNT],
                           uint64_t count[ANA_CLASS_COUNT])
{
    memset(ns, 0, ANA_CLASS_COUNT * sizeof(uint64_t));
    memset(count, 0, ANA_CLASS_COUNT * sizeof(uint64_t));
    for (size_t i = 0; i < rs->n; i++)
        for (int c = 0; c < ANA_CLASS_COUNT; c++) {
            ns[c] += rs->v[i].class_ns[c];
            count[c] += rs->v[i].class_count[c];
        }
}

int ana_rank_same_host(const ana_rank *a, const ana_rank *b)
{
    return a->host && b->host && strcmp(a->host, b->host) == 0;
}

/* ------------------------------------------------------------ stragglers */

const char *ana_rank_metric_name(int metric)
{
    static const char *const names[ANA_RM_COUNT] = { "step", "work", "collective" };
    return metric >= 0 && metric < ANA_RM_COUNT ? names[metric] : "?";
}

/* The value of metric m for rank k: per-step medians, or whole-run figures when some
 * rank has no steps (no step metric then: returns 0). */
static int ana_ranks_value(const ana_ranks *rs, const ana_rank *k, int m, uint64_t *v)
{
    uint64_t coll = k->coll_host_ns + k->class_ns[ANA_CLASS_COMMUNICATION];
    switch (m) {
    case ANA_RM_STEP: *v = k->step_median_ns; return rs->all_steps;
    case ANA_RM_WORK:
        if (rs->all_steps)
            *v = k->work_median_ns;
        else
            *v = k->duration_ns > coll ? k->duration_ns - coll : 0;
        return 1;
    default: *v = rs->all_steps ? k->coll_median_ns : coll; return 1;
    }
}

static uint64_t ana_ranks_absdiff(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* Tests rank i against the others for metric m; appends a straggler when it stands out. */
static void ana_ranks_test(ana_ranks *rs, size_t i, int m, uint64_t *others, uint64_t *dev)
{
    uint64_t x, v, med, mad;
    size_t n = 0;
    if (!ana_ranks_value(rs, &rs->v[i], m, &x))
        return;
    for (size_t j = 0; j < rs->n; j++)
        if (j != i && ana_ranks_value(rs, &rs->v[j], m, &v))
            others[n++] = v;
    if (!n)
        return;
    med = ana_ranks_median(others, n);
    for (size_t j = 0; j < n; j++)
        dev[j] = ana_ranks_absdiff(others[j], med);
    mad = ana_ranks_median(dev, n);
    uint64_t th = med / 10, robust = (uint64_t)(3.0 * 1.4826 * (double)mad + 0.5);
    if (robust > th)
        th = robust;
    if (rs->job_step_median_ns / 10 > th)
        th = rs->job_step_median_ns / 10;
    int bad = m == ANA_RM_COLL ? (x < med && med - x > th) : (x > med && x - med > th);
    if (!bad)
        return;
    ANA_GROW(rs->stragglers, rs->cap_stragglers, rs->n_stragglers + 1);
    rs->stragglers[rs->n_stragglers++] = (ana_straggler){ i, m, x, med, th };
}

static void ana_ranks_stragglers(ana_ranks *rs)
{
    uint64_t *others = ana_xcalloc(rs->n + 1, sizeof(uint64_t));
    uint64_t *dev = ana_xcalloc(rs->n + 1, sizeof(uint64_t));
    rs->n_stragglers = 0;
    if (rs->n >= 2)
        for (size_t i = 0; i < rs->n; i++)
            for (int m = 0; m < ANA_RM_COUNT; m++)
                ana_ranks_test(rs, i, m, others, dev);
    free(others);
    free(dev);
}

/* ------------------------------------------------------------ job */

static void ana_ranks_job(ana_ranks *rs)
{
    uint64_t *med = ana_xcalloc(rs->n + 1, sizeof(uint64_t));
    size_t n = 0;
    rs->world_size = rs->n ? rs->v[0].world_size : -1;
    rs->all_steps = rs->n > 0;
    for (size_t i = 0; i < rs->n; i++) {
        if (rs->v[i].world_size != rs->world_size)
            rs->world_size = -1;
        if (!rs->v[i].n_steps)
            rs->all_steps = 0;
        else
            med[n++] = rs->v[i].step_median_ns;
    }
    rs->job_step_median_ns = ana_ranks_median(med, n);
    free(med);
}

void ana_ranks_analyze(ana_ranks *rs)
{
    ana_sort(rs->v, rs->n, sizeof(*rs->v), ana_ranks_cmp);
    ana_ranks_job(rs);
    ana_ranks_stragglers(rs);
    ana_ranks_skew(rs);
}

/* memtimeline.c — the memory timeline by category (memcat.h, ana_memcat_timeline).
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/memcat.h"

#include <stdlib.h>
#include <string.h>

#include "model/util.h"

typedef struct ana_mt_delta {
    size_t idx;    /* event index */
    int64_t bytes; /* +size at a_idx, -size at f_idx */
    uint8_t cat;
} ana_mt_delta;

static int ana_mt_cmp(const void *a, const void *b)
{
    const ana_mt_delta *x = a, *y = b;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Every point: the state after each event that changed it. */
static size_t ana_mt_all(const ana_memcat *m, const ana_mem_result *mem, const ana_trace *t,
                         ana_mem_point **out)
{
    size_t nd = 0;
    ana_mt_delta *d = ana_xcalloc(2 * m->n_allocs + 1, sizeof(*d));
    for (size_t a = 0; a < m->n_allocs; a++) {
        const ana_mem_life *l = &mem->lives[m->allocs[a].life];
        d[nd++] = (ana_mt_delta){ l->a_idx, (int64_t)l->size, m->allocs[a].cat };
        if (l->f_idx != ANA_MEM_LIVE)
            d[nd++] = (ana_mt_delta){ l->f_idx, -(int64_t)l->size, m->allocs[a].cat };
    }
    ana_sort(d, nd, sizeof(*d), ana_mt_cmp);
    ana_mem_point *p = nd ? ana_xcalloc(nd, sizeof(*p)) : NULL;
    ana_mem_point cur = { 0 };
    size_t np = 0;
    ana_mev_reader rd;
    ana_mev_reader_open(&rd, &t->mev);
    for (size_t i = 0; i < nd; i++) {
        cur.by[d[i].cat] = (uint64_t)((int64_t)cur.by[d[i].cat] + d[i].bytes);
        cur.total = (uint64_t)((int64_t)cur.total + d[i].bytes);
        cur.time_ns = ana_mev_get(&rd, d[i].idx)->time_ns;
        /* one point per event: a second delta of the same event replaces it */
        if (i && d[i - 1].idx == d[i].idx)
            p[np - 1] = cur;
        else
            p[np++] = cur;
    }
    ana_mev_reader_close(&rd);
    free(d);
    *out = p;
    return np;
}

size_t ana_memcat_timeline(const ana_memcat *m, const ana_mem_result *mem, const ana_trace *t,
                           size_t max_points, ana_mem_point **out)
{
    ana_mem_point *p;
    size_t n = ana_mt_all(m, mem, t, &p);
    if (!max_points || n <= max_points) {
        *out = p;
        return n;
    }
    uint64_t t0 = p[0].time_ns, span = p[n - 1].time_ns - t0 + 1;
    size_t k = 0, i = 0;
    while (i < n) {
        uint64_t b = (uint64_t)((__uint128_t)(p[i].time_ns - t0) * max_points / span);
        size_t best = i;
        for (i++; i < n && (uint64_t)((__uint128_t)(p[i].time_ns - t0) * max_points / span) == b;
             i++)
            if (p[i].total > p[best].total)
                best = i;
        p[k++] = p[best];
    }
    /* the state at the end (usually what leaked) stays the last point */
    if (memcmp(&p[k - 1], &p[n - 1], sizeof(*p)) != 0)
        p[k++] = p[n - 1];
    *out = p;
    return k;
}

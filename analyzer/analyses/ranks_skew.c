/* ranks_skew.c — see ranks.h: collectives matched across ranks by communicator id and
 * sequence number, the spread of their arrivals and who arrived last.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/ranks.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct ana_skew_ev {
    uint64_t comm_id, seq, at, dur, bytes; /* at: arrival on the common clock */
    size_t idx;                            /* rank */
    uint32_t api;
} ana_skew_ev;

static int ana_skew_ev_cmp(const void *x, const void *y)
{
    const ana_skew_ev *a = x, *b = y;
    if (a->comm_id != b->comm_id)
        return a->comm_id < b->comm_id ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int ana_skew_cmp(const void *x, const void *y)
{
    const ana_skew_coll *a = x, *b = y;
    if (a->delay_ns != b->delay_ns)
        return a->delay_ns > b->delay_ns ? -1 : 1;
    if (a->spread_ns != b->spread_ns)
        return a->spread_ns > b->spread_ns ? -1 : 1;
    if (a->comm_id != b->comm_id)
        return a->comm_id < b->comm_id ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The common clock: CLOCK_MONOTONIC when every rank names one host, else CLOCK_REALTIME
 * when every rank knows it; each rank's base (the start of its trace) on it in base[]. */
static const char *ana_skew_clock(const ana_ranks *rs, uint64_t *base)
{
    int one_host = 1, real = 1;
    for (size_t i = 0; i < rs->n; i++) {
        const ana_rank *k = &rs->v[i];
        if (!k->host || strcmp(k->host, rs->v[0].host ? rs->v[0].host : "") != 0)
            one_host = 0;
        if (!k->start_real_ns)
            real = 0;
    }
    for (size_t i = 0; i < rs->n; i++)
        base[i] = one_host ? rs->v[i].start_mono_ns : rs->v[i].start_real_ns;
    return one_host ? "monotonic" : real ? "realtime" : NULL;
}

/* One matched collective from its arrivals e[0..n) (n >= 2, in arrival order). */
static void ana_skew_one(ana_ranks *rs, const ana_skew_ev *e, size_t n, uint64_t t0,
                         uint64_t *durs)
{
    ana_skew_coll *c = &rs->skew[rs->n_skew++];
    memset(c, 0, sizeof(*c));
    c->comm_id = e[0].comm_id;
    c->seq = e[0].seq;
    c->api = e[0].api;
    c->bytes = e[0].bytes;
    c->ranks = n;
    c->first = e[0].idx;
    c->last = e[n - 1].idx;
    c->spread_ns = e[n - 1].at - e[0].at;
    c->delay_ns = e[n - 1].at - e[n - 2].at;
    c->start_rel_ns = e[0].at > t0 ? e[0].at - t0 : 0;
    c->dur_last_ns = e[n - 1].dur;
    c->dur_min_ns = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        durs[i] = e[i].dur;
        if (e[i].dur < c->dur_min_ns)
            c->dur_min_ns = e[i].dur;
        if (e[i].dur > c->dur_max_ns)
            c->dur_max_ns = e[i].dur;
    }
    c->dur_median_ns = ana_median_u64(durs, n);
    rs->by_rank[c->last].last_count++;
    rs->by_rank[c->last].delay_ns += c->delay_ns;
}

/* Every rank's collectives with a known communicator, on the common clock. */
static ana_skew_ev *ana_skew_events(const ana_ranks *rs, const uint64_t *base, size_t *n)
{
    size_t total = 0, o = 0;
    for (size_t i = 0; i < rs->n; i++)
        total += rs->v[i].n_colls;
    ana_skew_ev *ev = ana_xcalloc(total + 1, sizeof(*ev));
    for (size_t i = 0; i < rs->n; i++)
        for (size_t c = 0; c < rs->v[i].n_colls; c++) {
            const ana_rank_coll *k = &rs->v[i].colls[c];
            if (!k->comm_id)
                continue;
            ev[o++] = (ana_skew_ev){ k->comm_id, k->seq, base[i] + k->start_ns, k->dur_ns,
                                     k->bytes, i, k->api };
        }
    *n = o;
    ana_sort(ev, o, sizeof(*ev), ana_skew_ev_cmp);
    return ev;
}

void ana_ranks_skew(ana_ranks *rs)
{
    uint64_t *base = ana_xcalloc(rs->n + 1, sizeof(uint64_t)), t0 = UINT64_MAX;
    size_t n = 0;
    free(rs->skew);
    free(rs->by_rank);
    rs->skew = NULL;
    rs->n_skew = 0;
    rs->unmatched = 0;
    rs->by_rank = ana_xcalloc(rs->n + 1, sizeof(*rs->by_rank));
    rs->late_rank = rs->n;
    rs->clock = ana_skew_clock(rs, base);
    if (!rs->clock || rs->n < 2) {
        free(base);
        return;
    }
    for (size_t i = 0; i < rs->n; i++)
        t0 = base[i] < t0 ? base[i] : t0;
    ana_skew_ev *ev = ana_skew_events(rs, base, &n);
    uint64_t *durs = ana_xcalloc(rs->n + n + 1, sizeof(uint64_t));
    rs->skew = ana_xcalloc(n / 2 + 1, sizeof(*rs->skew));
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && ev[j].comm_id == ev[i].comm_id && ev[j].seq == ev[i].seq;)
            j++;
        if (j - i < 2)
            rs->unmatched++;
        else
            ana_skew_one(rs, ev + i, j - i, t0, durs);
    }
    ana_sort(rs->skew, rs->n_skew, sizeof(*rs->skew), ana_skew_cmp);
    uint64_t most = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->by_rank[i].delay_ns > most) {
            most = rs->by_rank[i].delay_ns;
            rs->late_rank = i;
        }
    free(durs);
    free(ev);
    free(base);
}

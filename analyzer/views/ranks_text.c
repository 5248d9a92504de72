/* ranks_text.c — the job report as text: the merged anatomy, the per-rank table, the
 * stragglers with why each was flagged, and the skew of the collectives.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "analyses/ranks.h"
#include "views/ranks_write.h"

#include "analyses/libcalls.h"
#include "model/util.h"

#include <string.h>

static const char *ana_rt_ns(uint64_t ns, char *buf, size_t cap)
{
    ana_fmt_ns(ns, buf, cap);
    return buf;
}

static const char *ana_rt_rank(int64_t rank, char *buf, size_t cap)
{
    if (rank < 0)
        snprintf(buf, cap, "?");
    else
        snprintf(buf, cap, "%lld", (long long)rank);
    return buf;
}

static size_t ana_rt_hosts(const ana_ranks *rs)
{
    size_t n = 0;
    for (size_t i = 0; i < rs->n; i++) {
        size_t p = 0;
        while (p < i && !ana_rank_same_host(&rs->v[p], &rs->v[i]))
            p++;
        n += p == i;
    }
    return n;
}

static void ana_rt_job(const ana_ranks *rs, FILE *f)
{
    char ws[32];
    fprintf(f, "Job: %zu rank%s (world size %s) on %zu host%s", rs->n, rs->n == 1 ? "" : "s",
            ana_rt_rank(rs->world_size, ws, sizeof(ws)), ana_rt_hosts(rs),
            ana_rt_hosts(rs) == 1 ? "" : "s");
    if (rs->n && rs->v[0].exe)
        fprintf(f, ", program %s", rs->v[0].exe);
    fputc('\n', f);
    if (rs->world_size > 0 && (size_t)rs->world_size != rs->n)
        fprintf(f, "  (%lld of the world's ranks have no trace here)\n",
                (long long)rs->world_size - (long long)rs->n);
}

static void ana_rt_time(const ana_ranks *rs, FILE *f)
{
    uint64_t ns[ANA_CLASS_COUNT], count[ANA_CLASS_COUNT], busy = 0, idle = 0, host = 0, gpu = 0;
    uint64_t calls = 0;
    char a[32], b[32], c[32];
    ana_ranks_sum_classes(rs, ns, count);
    for (size_t i = 0; i < rs->n; i++) {
        busy += rs->v[i].busy_ns, idle += rs->v[i].idle_ns;
        host += rs->v[i].coll_host_ns, gpu += rs->v[i].coll_gpu_ns;
        calls += rs->v[i].coll_calls;
    }
    fprintf(f, "\nWhere GPU time goes (sums over the %zu ranks)\n", rs->n);
    fprintf(f, "  busy %s, idle %s\n", ana_rt_ns(busy, a, sizeof(a)),
            ana_rt_ns(idle, b, sizeof(b)));
    for (int k = 0; k < ANA_CLASS_COUNT; k++)
        if (ns[k] || count[k])
            fprintf(f, "  %-14s %12s  %llu activities\n", ana_class_name(k),
                    ana_rt_ns(ns[k], a, sizeof(a)), (unsigned long long)count[k]);
    fprintf(f, "  collectives: %llu calls, %s in the calls (host), %s of their kernels (GPU)\n",
            (unsigned long long)calls, ana_rt_ns(host, b, sizeof(b)), ana_rt_ns(gpu, c, sizeof(c)));
}

static void ana_rt_memory(const ana_ranks *rs, FILE *f)
{
    uint64_t max = 0, sum = 0, end = 0;
    size_t at = rs->n;
    char a[32], b[32], c[32], r[32];
    for (size_t i = 0; i < rs->n; i++) {
        if (at == rs->n || rs->v[i].peak_bytes > max)
            max = rs->v[i].peak_bytes, at = i;
        sum += rs->v[i].peak_bytes;
        end += rs->v[i].live_end_bytes;
    }
    fprintf(f, "\nDevice memory (each rank's own peak)\n");
    fprintf(f, "  largest peak %s (rank %s), sum of the peaks %s, live at the end %s\n",
            ana_fmt_bytes(max, a, sizeof(a)),
            ana_rt_rank(at < rs->n ? rs->v[at].rank : -1, r, sizeof(r)),
            ana_fmt_bytes(sum, b, sizeof(b)), ana_fmt_bytes(end, c, sizeof(c)));
}

static void ana_rt_table(const ana_ranks *rs, FILE *f)
{
    char r[32], s1[32], s2[32], s3[32], s4[32], s5[32], pk[32];
    fprintf(f, "\nPer rank (step times: mean, median; work and collective time: median per "
               "step)\n");
    fprintf(f, "  %4s  %-14s %8s %5s %10s %10s %10s %10s %10s %10s %8s\n", "rank", "host",
            "pid", "steps", "mean", "median", "work", "collective", "GPU busy", "peak",
            "records");
    for (size_t i = 0; i < rs->n; i++) {
        const ana_rank *k = &rs->v[i];
        fprintf(f, "  %4s  %-14.14s %8llu %5zu %10s %10s %10s %10s %10s %10s %8llu\n",
                ana_rt_rank(k->rank, r, sizeof(r)), k->host ? k->host : "?",
                (unsigned long long)k->pid, k->n_steps,
                ana_rt_ns(k->step_mean_ns, s1, sizeof(s1)),
                ana_rt_ns(k->step_median_ns, s2, sizeof(s2)),
                ana_rt_ns(k->work_median_ns, s3, sizeof(s3)),
                ana_rt_ns(k->coll_median_ns, s4, sizeof(s4)), ana_rt_ns(k->busy_ns, s5, sizeof(s5)),
                ana_fmt_bytes(k->peak_bytes, pk, sizeof(pk)), (unsigned long long)k->records);
    }
}

static void ana_rt_stragglers(const ana_ranks *rs, FILE *f)
{
    static const char *const what[ANA_RM_COUNT] = { "median step time", "work per step",
                                                    "collective time per step" };
    char r[32], v[32], m[32], t[32];
    fprintf(f, "\nStragglers (a rank whose value %s; basis: %s)\n", ANA_RANKS_RULE,
            rs->all_steps ? "per-step medians" : "whole run, some rank has no steps");
    if (!rs->n_stragglers)
        fprintf(f, "  none\n");
    for (size_t s = 0; s < rs->n_stragglers; s++) {
        const ana_straggler *g = &rs->stragglers[s];
        double m0 = (double)g->others_median_ns;
        double pct = m0 > 0 ? 100.0 * ((double)g->value_ns - m0) / m0 : 0.0;
        const char *name = what[g->metric];
        if (!rs->all_steps)
            name = g->metric == ANA_RM_WORK ? "work (time outside collectives)" : "collective time";
        fprintf(f, "  rank %s: %s %s is %+.0f%% against the other ranks' median %s "
                   "(threshold %s)%s\n",
                ana_rt_rank(rs->v[g->idx].rank, r, sizeof(r)), name,
                ana_rt_ns(g->value_ns, v, sizeof(v)), pct,
                ana_rt_ns(g->others_median_ns, m, sizeof(m)),
                ana_rt_ns(g->threshold_ns, t, sizeof(t)),
                g->metric == ANA_RM_COLL ? ": it arrives last, the others wait for it" : "");
    }
}

static void ana_rt_skew_rows(const ana_ranks *rs, size_t top, FILE *f)
{
    char r1[32], r2[32], a[32], b[32], c[32], d[32];
    size_t n = top && top < rs->n_skew ? top : rs->n_skew;
    fprintf(f, "  %-14s %5s %10s %10s %10s %5s %5s %10s %10s\n", "collective", "seq", "bytes",
            "spread", "delay", "last", "first", "dur last", "dur median");
    for (size_t i = 0; i < n; i++) {
        const ana_skew_coll *s = &rs->skew[i];
        const char *op = ana_nccl_op_name(s->api);
        fprintf(f, "  %-14s %5llu %10llu %10s %10s %5s %5s %10s %10s\n", op ? op : "?",
                (unsigned long long)s->seq, (unsigned long long)s->bytes,
                ana_rt_ns(s->spread_ns, a, sizeof(a)), ana_rt_ns(s->delay_ns, b, sizeof(b)),
                ana_rt_rank(rs->v[s->last].rank, r1, sizeof(r1)),
                ana_rt_rank(rs->v[s->first].rank, r2, sizeof(r2)),
                ana_rt_ns(s->dur_last_ns, c, sizeof(c)), ana_rt_ns(s->dur_median_ns, d, sizeof(d)));
    }
}

static void ana_rt_skew(const ana_ranks *rs, size_t top, FILE *f)
{
    char r[32], a[32];
    fprintf(f, "\nCollective skew");
    if (!rs->clock) {
        fprintf(f, "\n  not computed: the ranks share no clock (different hosts and no "
                   "realtime reading in some trace)\n");
        return;
    }
    fprintf(f, " (%zu collectives matched by communicator and sequence number, clock %s; "
               "%llu calls made by one rank only)\n",
            rs->n_skew, rs->clock, (unsigned long long)rs->unmatched);
    if (!rs->n_skew)
        return;
    if (rs->late_rank < rs->n) {
        const ana_skew_rank *b = &rs->by_rank[rs->late_rank];
        fprintf(f, "  rank %s arrived last at %llu of %zu collectives and delayed them by %s in "
                   "all: the others wait for it\n",
                ana_rt_rank(rs->v[rs->late_rank].rank, r, sizeof(r)),
                (unsigned long long)b->last_count, rs->n_skew,
                ana_rt_ns(b->delay_ns, a, sizeof(a)));
    }
    fprintf(f, "  last arrivals per rank:");
    for (size_t i = 0; i < rs->n; i++)
        fprintf(f, " %s:%llu", ana_rt_rank(rs->v[i].rank, r, sizeof(r)),
                (unsigned long long)rs->by_rank[i].last_count);
    fprintf(f, "\n  the most delayed (delay: last arrival minus the second-latest):\n");
    ana_rt_skew_rows(rs, top, f);
}

void ana_ranks_write_text(const ana_ranks *rs, size_t top, FILE *f)
{
    ana_rt_job(rs, f);
    for (size_t i = 0; i < rs->n; i++)
        fprintf(f, "  %s\n", rs->v[i].source);
    ana_rt_time(rs, f);
    ana_rt_memory(rs, f);
    ana_rt_table(rs, f);
    ana_rt_stragglers(rs, f);
    ana_rt_skew(rs, top, f);
}

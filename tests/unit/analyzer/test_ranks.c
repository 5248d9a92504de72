/* The job report of many ranks (ranks.h, docs/ranks.md) on hand-built summaries: the
 * straggler rule at its threshold, the matching of collectives and who arrived last, the
 * common clock, the refusal of mixed jobs, and the "rank" JSON member read back. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import/import.h"
#include "analyses/ranks.h"
#include "views/report_write.h"
#include "model/util.h"

#define MS 1000000ull

/* A rank with n_steps equal steps of step_ns, coll_ns of them in collectives. */
static ana_rank mk(int64_t rank, size_t n_steps, uint64_t step_ns, uint64_t coll_ns)
{
    ana_rank k;
    memset(&k, 0, sizeof(k));
    char src[32];
    snprintf(src, sizeof(src), "r%lld.anat", (long long)rank);
    k.source = ana_xstrdup(src);
    k.host = ana_xstrdup("h0");
    k.rank = rank, k.local_rank = rank, k.world_size = 8;
    k.pid = 1000 + (uint64_t)rank;
    k.n_steps = n_steps;
    k.step_ns = ana_xcalloc(n_steps + 1, sizeof(uint64_t));
    k.step_coll_ns = ana_xcalloc(n_steps + 1, sizeof(uint64_t));
    for (size_t i = 0; i < n_steps; i++)
        k.step_ns[i] = step_ns, k.step_coll_ns[i] = coll_ns;
    ana_rank_derive(&k);
    return k;
}

static void add(ana_ranks *rs, ana_rank k)
{
    ana_ranks_add(rs, &k);
}

Test(ranks, straggler_threshold)
{
    /* others: step 100 ms, work 10 ms, collective 90 ms; no spread, so the threshold is
     * max(10% of 10 ms, 0, 10% of 100 ms) = 10 ms for work and for collective time */
    ana_ranks rs;
    memset(&rs, 0, sizeof(rs));
    for (int q = 0; q < 8; q++) {
        uint64_t coll = 90 * MS;
        if (q == 3)
            coll = 90 * MS - 10 * MS; /* work 20 ms, collective 80 ms: at the threshold */
        if (q == 6)
            coll = 90 * MS - 10 * MS - 1; /* one ns beyond, both ways */
        add(&rs, mk(q, 5, 100 * MS, coll));
    }
    ana_ranks_analyze(&rs);
    cr_assert_eq(rs.job_step_median_ns, 100 * MS);
    cr_assert_eq(rs.n_stragglers, 2, "%zu stragglers", rs.n_stragglers);
    cr_expect_eq(rs.v[rs.stragglers[0].idx].rank, 6);
    cr_expect_eq(rs.stragglers[0].metric, ANA_RM_WORK);
    cr_expect_eq(rs.stragglers[0].value_ns, 20 * MS + 1);
    cr_expect_eq(rs.stragglers[0].others_median_ns, 10 * MS);
    cr_expect_eq(rs.stragglers[0].threshold_ns, 10 * MS);
    cr_expect_eq(rs.v[rs.stragglers[1].idx].rank, 6);
    cr_expect_eq(rs.stragglers[1].metric, ANA_RM_COLL);
    cr_expect_eq(rs.stragglers[1].value_ns, 80 * MS - 1);
    ana_ranks_free(&rs);
}

Test(ranks, late_rank_is_flagged_low_collective)
{
    ana_ranks rs;
    memset(&rs, 0, sizeof(rs));
    for (int q = 0; q < 4; q++) /* rank 2 works 40 ms more; the others wait for it */
        add(&rs, mk(q, 3, 50 * MS, q == 2 ? 2 * MS : 42 * MS));
    ana_ranks_analyze(&rs);
    cr_assert_eq(rs.n_stragglers, 2);
    for (size_t s = 0; s < 2; s++)
        cr_expect_eq(rs.v[rs.stragglers[s].idx].rank, 2);
    cr_expect_eq(rs.stragglers[0].metric, ANA_RM_WORK);
    cr_expect_eq(rs.stragglers[1].metric, ANA_RM_COLL);
    cr_expect_eq(rs.stragglers[1].value_ns, 2 * MS);
    ana_ranks_free(&rs);
}

static void colls(ana_rank *k, const uint64_t (*c)[3], size_t n)
{
    k->colls = ana_xcalloc(n, sizeof(*k->colls));
    k->n_colls = n;
    for (size_t i = 0; i < n; i++) /* comm_id, seq, start */
        k->colls[i] = (ana_rank_coll){ c[i][0], c[i][1], 64, c[i][2], 10, 170 };
}

Test(ranks, skew_matches_by_comm_and_seq)
{
    ana_ranks rs;
    memset(&rs, 0, sizeof(rs));
    ana_rank k[3];
    for (int q = 0; q < 3; q++) {
        k[q] = mk(q, 0, 0, 0);
        k[q].start_mono_ns = 1000 * (uint64_t)q; /* each trace began later */
    }
    /* on the common clock: seq 1 arrives at 100, 1100, 3000 (rank 2 last by 1900);
     * seq 2 at 5000, 5100, 5050 (rank 1 last by 50); comm 9 seq 1 only on rank 0;
     * comm 0 is never matched */
    static const uint64_t c0[][3] = { { 7, 1, 100 }, { 7, 2, 5000 }, { 9, 1, 1 }, { 0, 1, 0 } };
    static const uint64_t c1[][3] = { { 7, 1, 100 }, { 7, 2, 4100 }, { 0, 1, 0 } };
    static const uint64_t c2[][3] = { { 7, 1, 1000 }, { 7, 2, 3050 } };
    colls(&k[0], c0, 4);
    colls(&k[1], c1, 3);
    colls(&k[2], c2, 2);
    for (int q = 2; q >= 0; q--)
        add(&rs, k[q]);
    ana_ranks_analyze(&rs);
    cr_assert_str_eq(rs.clock, "monotonic");
    cr_assert_eq(rs.n_skew, 2);
    cr_expect_eq(rs.unmatched, 1);
    const ana_skew_coll *a = &rs.skew[0]; /* most delayed first */
    cr_expect_eq(a->seq, 1);
    cr_expect_eq(rs.v[a->last].rank, 2);
    cr_expect_eq(rs.v[a->first].rank, 0);
    cr_expect_eq(a->spread_ns, 2900);
    cr_expect_eq(a->delay_ns, 1900);
    cr_expect_eq(a->ranks, 3);
    cr_expect_eq(rs.skew[1].seq, 2);
    cr_expect_eq(rs.v[rs.skew[1].last].rank, 1);
    cr_expect_eq(rs.skew[1].delay_ns, 50);
    cr_expect_eq(rs.v[rs.late_rank].rank, 2);
    cr_expect_eq(rs.by_rank[2].delay_ns, 1900);
    cr_expect_eq(rs.by_rank[1].last_count, 1);
    ana_ranks_free(&rs);
}

Test(ranks, no_common_clock)
{
    ana_ranks rs;
    memset(&rs, 0, sizeof(rs));
    ana_rank a = mk(0, 0, 0, 0), b = mk(1, 0, 0, 0);
    free(b.host);
    b.host = ana_xstrdup("h1");
    a.start_real_ns = 5; /* b has no realtime reading */
    add(&rs, a);
    add(&rs, b);
    ana_ranks_analyze(&rs);
    cr_expect_null(rs.clock);
    cr_expect_eq(rs.n_skew, 0);
    ana_ranks_free(&rs);
}

Test(ranks, mixed_jobs_refused)
{
    char err[512];
    ana_ranks rs;
    memset(&rs, 0, sizeof(rs));
    add(&rs, mk(0, 0, 0, 0));
    add(&rs, mk(0, 0, 0, 0));
    cr_expect_eq(ana_ranks_check(&rs, err, sizeof(err)), -1);
    cr_expect(strstr(err, "both rank 0") != NULL, "%s", err);
    ana_ranks_free(&rs);
    memset(&rs, 0, sizeof(rs));
    ana_rank b = mk(1, 0, 0, 0);
    b.world_size = 4;
    add(&rs, mk(0, 0, 0, 0));
    add(&rs, b);
    cr_expect_eq(ana_ranks_check(&rs, err, sizeof(err)), -1);
    cr_expect(strstr(err, "world size") != NULL, "%s", err);
    ana_ranks_free(&rs);
}

Test(ranks, json_round_trip)
{
    char path[] = "/tmp/ana-test-ranks-XXXXXX", err[256];
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    ana_rank k = mk(3, 2, 7 * MS, 2 * MS), back;
    k.step_ns[1] = 9 * MS;
    k.start_real_ns = 123456789;
    k.class_ns[ANA_CLASS_COMMUNICATION] = 77;
    k.by_category[2] = 4096;
    k.peak_bytes = 1 << 20;
    ana_rank_derive(&k);
    static const uint64_t c[][3] = { { 0xfedcba9876543210ull, 4, 55 } };
    colls(&k, c, 1);
    ana_json j;
    ana_json_init(&j, f);
    ana_json_obj_begin(&j);
    ana_json_kstr(&j, "schema", "anatomist.report/1");
    ana_json_key(&j, "rank");
    ana_rank_write_json(&k, &j);
    ana_json_obj_end(&j);
    ana_json_finish(&j);
    fclose(f);
    cr_assert(ana_rank_json_is_report(path));
    cr_assert_eq(ana_rank_read_json(path, &back, err, sizeof(err)), 0, "%s", err);
    unlink(path);
    cr_expect_eq(back.rank, 3);
    cr_expect_str_eq(back.source, "r3.anat");
    cr_expect_eq(back.n_steps, 2);
    cr_expect_eq(back.step_ns[1], 9 * MS);
    cr_expect_eq(back.step_median_ns, 7 * MS);
    cr_expect_eq(back.step_mean_ns, 8 * MS);
    cr_expect_eq(back.work_median_ns, 5 * MS);
    cr_expect_eq(back.start_real_ns, 123456789);
    cr_expect_eq(back.class_ns[ANA_CLASS_COMMUNICATION], 77);
    cr_expect_eq(back.by_category[2], 4096);
    cr_expect_eq(back.peak_bytes, 1 << 20);
    cr_assert_eq(back.n_colls, 1);
    cr_expect_eq(back.colls[0].comm_id, 0xfedcba9876543210ull);
    cr_expect_eq(back.colls[0].seq, 4);
    cr_expect_eq(back.colls[0].start_ns, 55);
    cr_expect_eq(back.colls[0].api, 170);
    ana_rank_free(&back);
    ana_rank_free(&k);
}

/* test_memtimeline.c — the memory timeline by category (memcat.h, ana_memcat_timeline):
 * the running sums after each event equal what the test wrote, the peak survives
 * bucketing, and the last point is the state at the end. The categories themselves are
 * memcat's (tested in test_memcat.c); here each allocation's category is read from it and
 * the sums are computed by the test. */
#include "memcat_tb.h"

#include <stdlib.h>

/* Sizes of a run of ALLOC (+) and FREE (-) events on distinct buffers: a free releases the
 * buffer allocated by event index `of`. */
typedef struct step {
    int alloc; /* 1 alloc, 0 free */
    int lib;   /* alloc: made inside cuBLAS (functionality) */
    uint64_t size;
    int of;    /* free: index of the alloc step */
} step;

static const step k_steps[] = {
    { 1, 1, 1000, 0 }, { 1, 0, 200, 0 },  { 1, 1, 3000, 0 }, { 0, 0, 0, 1 },
    { 1, 0, 50, 0 },   { 0, 0, 0, 2 },    { 1, 0, 7000, 0 }, { 0, 0, 0, 6 },
    { 1, 1, 10, 0 },   { 0, 0, 0, 0 },
};
#define N_STEPS (sizeof(k_steps) / sizeof(k_steps[0]))

static void write_run(mb *m, size_t idx_of_step[N_STEPS])
{
    mb_init(m);
    for (size_t i = 0; i < N_STEPS; i++) {
        if (k_steps[i].alloc)
            idx_of_step[i] = mb_alloc_lib(m, BASE(i + 1), k_steps[i].size, k_steps[i].lib ? 1 : 0);
        else
            mb_free(m, BASE(k_steps[i].of + 1));
    }
}

/* The expected state after each step, by category, from what was written. */
static void expected(const mc_run *r, const size_t idx_of_step[N_STEPS],
                     uint64_t want[N_STEPS][ANA_MCAT_COUNT + 1])
{
    uint64_t cur[ANA_MCAT_COUNT + 1] = { 0 };
    for (size_t i = 0; i < N_STEPS; i++) {
        const step *s = &k_steps[i];
        size_t a = idx_of_step[s->alloc ? i : (size_t)s->of];
        uint64_t size = k_steps[s->alloc ? i : (size_t)s->of].size;
        int cat = r->m.allocs[a].cat;
        if (s->alloc) {
            cur[cat] += size;
            cur[ANA_MCAT_COUNT] += size;
        } else {
            cur[cat] -= size;
            cur[ANA_MCAT_COUNT] -= size;
        }
        memcpy(want[i], cur, sizeof(cur));
    }
}

/* The time of the trace's sorted event i, as written. */
static uint64_t mev_time(const ana_trace *t, size_t i)
{
    ana_mev_reader rd;
    ana_mev_reader_open(&rd, &t->mev);
    uint64_t ns = ana_mev_get(&rd, i)->time_ns;
    ana_mev_reader_close(&rd);
    return ns;
}

Test(memtimeline, every_event_is_a_point)
{
    mb m;
    mc_run r;
    size_t idx[N_STEPS] = { 0 };
    uint64_t want[N_STEPS][ANA_MCAT_COUNT + 1];
    write_run(&m, idx);
    mb_analyze(&m, &r);
    expected(&r, idx, want);
    ana_mem_point *p = NULL;
    size_t n = ana_memcat_timeline(&r.m, &r.mem, m.b.t, 0, &p);
    cr_assert_eq(n, N_STEPS, "points: %zu, events %zu", n, (size_t)N_STEPS);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(p[i].total, want[i][ANA_MCAT_COUNT], "point %zu total %llu, want %llu", i,
                     (unsigned long long)p[i].total, (unsigned long long)want[i][ANA_MCAT_COUNT]);
        for (int c = 0; c < ANA_MCAT_COUNT; c++)
            cr_expect_eq(p[i].by[c], want[i][c], "point %zu %s", i, ana_mcat_name(c));
        cr_expect_eq(p[i].time_ns, mev_time(m.b.t, i), "point %zu time", i);
    }
    /* one cuBLAS allocation and one of the program's: two categories, both seen */
    cr_expect_neq(r.m.allocs[idx[0]].cat, r.m.allocs[idx[1]].cat);
    free(p);
    mb_done(&m, &r);
}

Test(memtimeline, buckets_keep_the_peak_and_the_end)
{
    mb m;
    mc_run r;
    size_t idx[N_STEPS] = { 0 };
    uint64_t want[N_STEPS][ANA_MCAT_COUNT + 1];
    write_run(&m, idx);
    mb_analyze(&m, &r);
    expected(&r, idx, want);
    uint64_t peak = 0;
    for (size_t i = 0; i < N_STEPS; i++)
        if (want[i][ANA_MCAT_COUNT] > peak)
            peak = want[i][ANA_MCAT_COUNT];
    cr_assert_eq(peak, r.mem.peak_bytes, "the replay's peak is the written one");
    for (size_t max = 1; max <= 4; max++) {
        ana_mem_point *p = NULL;
        size_t n = ana_memcat_timeline(&r.m, &r.mem, m.b.t, max, &p);
        cr_expect_leq(n, max + 1, "max %zu: %zu points", max, n);
        uint64_t top = 0;
        for (size_t i = 0; i < n; i++) {
            top = p[i].total > top ? p[i].total : top;
            /* every point is the state after some event: no value is invented */
            size_t e = 0;
            while (e < N_STEPS && mev_time(m.b.t, e) != p[i].time_ns)
                e++;
            cr_assert_lt(e, N_STEPS, "max %zu: point %zu is at no event's time", max, i);
            cr_expect_eq(p[i].total, want[e][ANA_MCAT_COUNT], "max %zu point %zu", max, i);
            if (i)
                cr_expect_gt(p[i].time_ns, p[i - 1].time_ns, "max %zu: time order", max);
        }
        cr_expect_eq(top, peak, "max %zu: the peak is a point", max);
        cr_expect_eq(p[n - 1].time_ns, mev_time(m.b.t, N_STEPS - 1), "max %zu: last point", max);
        cr_expect_eq(p[n - 1].total, want[N_STEPS - 1][ANA_MCAT_COUNT],
                     "max %zu: the state at the end (60 bytes leaked) is the last point", max);
        free(p);
    }
    mb_done(&m, &r);
}

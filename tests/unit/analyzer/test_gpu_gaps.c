/* test_gpu_gaps.c — the GPU's idle gaps (analyzer/analyses/gpu.h): the longest max_gaps,
 * longest first (ties: earlier start, then lower device), kept without a list of every
 * gap, and every gap counted; on kernels the test lays out one after another on two
 * devices with gaps of lengths it draws, so the expected list is the test's own. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/gpu.h"
#include "model/trace.h"
#include "model/util.h"
#include "../random.h"

enum { KERNELS = 3000, MIN_GAP = 10000 };

typedef struct want_gap {
    int32_t device;
    uint64_t start, dur;
} want_gap;

static int want_cmp(const void *a, const void *b)
{
    const want_gap *x = a, *y = b;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->device < y->device ? -1 : x->device > y->device;
}

static want_gap want[2 * KERNELS];
static size_t n_want;

/* Two devices, KERNELS kernels each, back to back but for gaps: some below MIN_GAP (not
 * gaps), many of one length (ties), the rest drawn. */
static ana_trace *build(void)
{
    uint64_t rng = 424242;
    ana_trace *t = ana_trace_new("gaps", ANA_LOAD_ALL);
    n_want = 0;
    for (int32_t dev = 0; dev < 2; dev++) {
        uint64_t now = 1000000;
        for (size_t i = 0; i < KERNELS; i++) {
            uint64_t r = ana_xorshift64(&rng) % 10, gap = 0;
            if (i && r < 3)
                gap = 20000; /* ties */
            else if (i && r < 6)
                gap = MIN_GAP + ana_xorshift64(&rng) % 1000000;
            else if (i && r < 8)
                gap = ana_xorshift64(&rng) % MIN_GAP; /* too short to count */
            if (gap >= MIN_GAP)
                want[n_want++] = (want_gap){ dev, now, gap };
            now += gap;
            ana_record g = { .kind = ANA_K_GPU_KERNEL, .tid = 1, .time_ns = now };
            g.u.gpu_kernel = (ana_rec_gpu_kernel){ .dur_ns = 500, .kernel = 1, .device = dev,
                                                   .stream = 7 };
            ana_trace_add(t, &g);
            now += 500;
        }
    }
    ana_trace_finish(t);
    qsort(want, n_want, sizeof(*want), want_cmp);
    return t;
}

static void expect_gaps(const ana_gpu_result *g, size_t n)
{
    cr_assert_eq(g->n_gaps, n);
    cr_expect_eq(g->gaps_total, n_want);
    uint64_t ns = 0;
    for (size_t i = 0; i < n_want; i++)
        ns += want[i].dur;
    cr_expect_eq(g->gaps_ns, ns);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(g->gaps[i].dur_ns, want[i].dur, "gap %zu", i);
        cr_expect_eq(g->gaps[i].start_ns, want[i].start, "gap %zu", i);
        cr_expect_eq(g->gaps[i].device, want[i].device, "gap %zu", i);
        cr_expect_eq(g->gaps[i].next.start_ns, want[i].start + want[i].dur, "gap %zu", i);
    }
}

Test(gpu_gaps, longest_kept_and_all_counted)
{
    ana_trace *t = build();
    cr_assert_gt(n_want, 1000);
    static const size_t tops[] = { 1, 5, 37, 1000 };
    for (size_t k = 0; k < sizeof(tops) / sizeof(tops[0]); k++) {
        ana_gpu_result g;
        ana_gpu_analyze(t, MIN_GAP, tops[k], &g);
        expect_gaps(&g, tops[k]);
        ana_gpu_result_free(&g);
    }
    ana_gpu_result g;
    ana_gpu_analyze(t, MIN_GAP, 0, &g); /* 0: every gap */
    expect_gaps(&g, n_want);
    ana_gpu_result_free(&g);
    ana_gpu_analyze(t, MIN_GAP, n_want + 50, &g); /* room for more than there are */
    expect_gaps(&g, n_want);
    ana_gpu_result_free(&g);
    ana_trace_free(t);
}

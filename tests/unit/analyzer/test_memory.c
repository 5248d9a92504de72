/* Memory replay (analyzer/analyses/memory.c) on hand-built event lists. */
#include <criterion/criterion.h>

#include "analyses/memory.h"

#define DEV ANA_MEM_DEVICE
#define HOST ANA_MEM_HOST_PINNED

static ana_mev ev_alloc(uint64_t t, uint64_t ptr, uint64_t size, uint64_t stack, uint8_t cls)
{
    return (ana_mev){ .time_ns = t, .seq = t, .tid = 1, .ptr = ptr, .size = size,
                      .stack = stack, .api = 1, .type = ANA_MEV_ALLOC, .cls = cls };
}

static ana_mev ev_free(uint64_t t, uint64_t ptr)
{
    return (ana_mev){ .time_ns = t, .seq = t, .tid = 1, .ptr = ptr, .api = 10,
                      .type = ANA_MEV_FREE };
}

Test(memory, peak_and_leaks)
{
    /* 100, 200, 300; free the 200; 50 -> peak 600 at t=3, 450 live at the end. */
    ana_mev ev[] = {
        ev_alloc(1, 0x1000, 100, 1, DEV), ev_alloc(2, 0x2000, 200, 2, DEV),
        ev_alloc(3, 0x3000, 300, 1, DEV), ev_free(4, 0x2000), ev_alloc(5, 0x4000, 50, 2, DEV),
    };
    ana_mem_result r;
    ana_mem_replay(ev, 5, &r);
    cr_expect_eq(r.peak_bytes, 600);
    cr_expect_eq(r.peak_time_ns, 3);
    cr_expect_eq(r.peak_count, 3);
    cr_expect_eq(r.live_end_bytes, 450);
    cr_expect_eq(r.live_end_count, 3);
    cr_assert_eq(r.n_leaks, 2);
    cr_expect_eq(r.leaks[0].stack, 1);
    cr_expect_eq(r.leaks[0].bytes, 400);
    cr_expect_eq(r.leaks[0].count, 2);
    cr_expect_eq(r.leaks[1].stack, 2);
    cr_expect_eq(r.leaks[1].bytes, 50);
    cr_assert_eq(r.n_peak_sites, 2);
    cr_expect_eq(r.peak_sites[0].bytes, 400);
    cr_expect_eq(r.peak_sites[1].bytes, 200);
    cr_expect_eq(r.unknown_frees, 0);
    ana_mem_result_free(&r);
}

Test(memory, sort_is_by_time_then_file_order)
{
    ana_mev ev[] = { ev_alloc(30, 0x3, 300, 0, DEV), ev_alloc(10, 0x1, 100, 0, DEV),
                     ev_free(30, 0x1), ev_alloc(20, 0x2, 200, 0, DEV) };
    ev[0].seq = 0, ev[1].seq = 1, ev[2].seq = 2, ev[3].seq = 3;
    ana_mem_sort(ev, 4);
    cr_expect_eq(ev[0].time_ns, 10);
    cr_expect_eq(ev[1].time_ns, 20);
    cr_expect_eq(ev[2].type, ANA_MEV_ALLOC); /* same time: the earlier in the file first */
    cr_expect_eq(ev[3].type, ANA_MEV_FREE);
    ana_mem_result r;
    ana_mem_replay(ev, 4, &r);
    cr_expect_eq(r.peak_bytes, 600);
    cr_expect_eq(r.live_end_bytes, 500);
    ana_mem_result_free(&r);
}

Test(memory, failures_unknown_frees_and_host_memory)
{
    ana_mev ev[] = {
        ev_alloc(1, 0x1000, 1000, 0, DEV),
        ev_alloc(2, 0x9000, 64, 0, HOST),
        ev_alloc(3, 0, 5000, 7, DEV), /* fails */
        { .time_ns = 4, .seq = 4, .tid = 1, .ptr = 10, .size = 2000, .api = 1,
          .type = ANA_MEV_MEMINFO },
        ev_free(5, 0xbad),  /* unknown pointer: counted */
        ev_free(6, 0),      /* freeing NULL: nothing */
        ev_free(7, 0x9000),
        ev_alloc(8, 0x5000, 10, 0, ANA_MEM_OTHER), /* not device memory */
    };
    ev[2].ret = 2;
    ana_mem_result r;
    ana_mem_replay(ev, 8, &r);
    cr_assert_eq(r.failures_total, 1);
    cr_assert_eq(r.n_failures, 1);
    cr_expect_eq(r.failures[0].ev.size, 5000);
    cr_expect_eq(r.failures[0].ev.stack, 7);
    cr_expect_eq(r.failures[0].live_bytes, 1000);
    cr_expect_eq(r.failures[0].host_live_bytes, 64);
    cr_expect(r.failures[0].has_meminfo);
    cr_expect_eq(r.failures[0].free_bytes, 10);
    cr_expect_eq(r.failures[0].total_bytes, 2000);
    cr_expect_eq(r.unknown_frees, 1);
    cr_expect_eq(r.peak_bytes, 1000);
    cr_expect_eq(r.host_peak_bytes, 64);
    cr_expect_eq(r.host_peak_time_ns, 2);
    cr_expect_eq(r.host_live_end_bytes, 0);
    cr_expect_eq(r.live_end_bytes, 1000);
    ana_mem_result_free(&r);
}

Test(memory, reused_pointer_replaces_the_lost_allocation)
{
    ana_mev ev[] = { ev_alloc(1, 0x1000, 100, 0, DEV), ev_alloc(2, 0x1000, 30, 0, DEV) };
    ana_mem_result r;
    ana_mem_replay(ev, 2, &r);
    cr_expect_eq(r.reused_ptrs, 1);
    cr_expect_eq(r.live_end_bytes, 30);
    cr_expect_eq(r.live_end_count, 1);
    cr_expect_eq(r.peak_bytes, 100);
    ana_mem_result_free(&r);
}

Test(memory, churn_stays_linear)
{
    /* 200k alloc/free pairs over 1000 live slots: O(n) with the hash map. */
    enum { N = 200000, LIVE = 1000 };
    ana_mev *ev = calloc(2 * N, sizeof(*ev));
    size_t n = 0;
    for (uint64_t i = 0; i < N; i++) {
        ev[n] = ev_alloc(2 * i, 0x100000 + i * 16, 16, i % 3, DEV);
        ev[n].seq = n, n++;
        if (i >= LIVE) {
            ev[n] = ev_free(2 * i + 1, 0x100000 + (i - LIVE) * 16);
            ev[n].seq = n, n++;
        }
    }
    ana_mem_result r;
    ana_mem_replay(ev, n, &r);
    cr_expect_eq(r.peak_bytes, 16 * (LIVE + 1));
    cr_expect_eq(r.live_end_count, LIVE);
    cr_expect_eq(r.n_leaks, 3);
    ana_mem_result_free(&r);
    free(ev);
}

Test(memory, empty)
{
    ana_mem_result r;
    ana_mem_replay(NULL, 0, &r);
    cr_expect_eq(r.peak_bytes, 0);
    cr_expect_eq(r.n_peak_sites, 0);
    cr_expect_eq(r.n_leaks, 0);
    ana_mem_result_free(&r);
}

/* More failures than are kept: the first ones and the very last stay, so the failure that
 * ended a run is never lost. */
Test(memory, the_last_failure_is_always_kept)
{
    enum { N = ANA_MEM_MAX_FAILURES + 500 };
    static ana_mev ev[N + 1];
    ev[0] = ev_alloc(1, 0x1000, 64, 0, DEV);
    for (size_t i = 1; i <= N; i++) {
        ev[i] = ev_alloc(1 + i, 0, 100 + i, 0, DEV);
        ev[i].ret = 2;
    }
    ana_mem_result r;
    ana_mem_replay(ev, N + 1, &r);
    cr_assert_eq(r.failures_total, N);
    cr_assert_eq(r.n_failures, ANA_MEM_MAX_FAILURES);
    cr_expect_eq(r.failures[0].ev.size, 101);
    cr_expect_eq(r.failures[ANA_MEM_MAX_FAILURES - 2].ev.size, 100 + ANA_MEM_MAX_FAILURES - 1);
    cr_expect_eq(r.failures[ANA_MEM_MAX_FAILURES - 1].ev.size, 100 + N);
    cr_expect_eq(r.failures[ANA_MEM_MAX_FAILURES - 1].idx, N);
    cr_expect_eq(r.failures[ANA_MEM_MAX_FAILURES - 1].live_bytes, 64);
    ana_mem_result_free(&r);
}

/* GPU_MEMORY events with the correlation id of a traced allocation or free are that call
 * again (not replayed); others are the driver's own, replayed by address. The traced
 * calls' ids are kept as bits when dense (ids from 1000 on) and in a map when far apart
 * (every other id shifted by 2^40). */
Test(memory, gpu_memory_duplicates_dense_and_sparse_ids)
{
    for (int sparse = 0; sparse < 2; sparse++) {
        enum { N = 300 };
        static ana_mev ev[3 * N + 2];
        size_t n = 0;
        uint64_t t = 1;
        for (size_t i = 0; i < N; i++) {
            uint64_t corr = 1000 + i + (sparse && i % 2 ? 1ull << 40 : 0);
            ana_mev a = ev_alloc(t++, 0x10000 + 0x100 * i, 64, 1, DEV);
            a.corr = corr;
            ev[n++] = a;
            /* the driver's record of the same call: a duplicate */
            ev[n++] = (ana_mev){ .time_ns = t, .seq = t, .ptr = 0x10000 + 0x100 * i, .size = 64,
                                 .corr = corr, .type = ANA_MEV_GPU_ALLOC, .cls = DEV };
            t++;
        }
        /* a driver allocation of no traced call (a corr no call has, and none) */
        ev[n++] = (ana_mev){ .time_ns = t, .seq = t, .ptr = 0x900000, .size = 1000, .corr = 999,
                             .type = ANA_MEV_GPU_ALLOC, .cls = DEV };
        t++;
        ev[n++] = (ana_mev){ .time_ns = t, .seq = t, .ptr = 0x990000, .size = 10, .corr = 0,
                             .type = ANA_MEV_GPU_ALLOC, .cls = DEV };
        ana_mem_result r;
        ana_mem_replay(ev, n, &r);
        cr_expect_eq(r.gpu_mem_duplicates, N, "sparse %d", sparse);
        cr_expect_eq(r.gpu_mem_replayed, 2, "sparse %d", sparse);
        cr_expect_eq(r.peak_bytes, N * 64 + 1010, "sparse %d", sparse);
        ana_mem_result_free(&r);
    }
}

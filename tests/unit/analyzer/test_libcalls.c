/* test_libcalls.c — the GEMM rows of analyzer/analyses/libcalls.h on traces built in
 * memory: each shape's GPU time, kernels, timed calls and FLOPs, and its device, summed
 * from the kernels each GEMM call launched, with call ids dense (1, 2, ...), sparse (far
 * apart: the ids then go through a map), and two GEMM records sharing one id (each row
 * counts that call's kernels); the GEMM calls in memory and in a temporary file
 * (ANATOMIST_SPILL_GEMMS). The expected figures are what the test launched. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/libcalls.h"
#include "model/trace.h"

typedef struct gb {
    ana_trace *t;
    uint64_t now, corr;
} gb;

static void gb_add(gb *b, ana_record *r)
{
    r->tid = 1;
    r->time_ns = b->now += 100;
    ana_trace_add(b->t, r);
}

static void gb_device(gb *b, int64_t ordinal)
{
    ana_record r = { .kind = ANA_K_DEVICE };
    r.u.device = (ana_rec_device){ .ordinal = ordinal, .name = { "sim", 3 }, .cc_major = 9 };
    gb_add(b, &r);
}

/* A GEMM record of m x n x k under library call id `call`. */
static void gb_gemm(gb *b, uint64_t call, uint64_t m, uint64_t n, uint64_t k)
{
    ana_record r = { .kind = ANA_K_GEMM };
    r.u.gemm = (ana_rec_gemm){ .api = ANA_API_CUBLAS_SGEMM, .call = call, .m = m, .n = n, .k = k,
                               .batch = 1, .a_type = 0, .b_type = 0, .c_type = 0,
                               .compute_type = 68, .flops = 2 * m * n * k };
    gb_add(b, &r);
}

/* A launch made under library call `call` and its kernel of dur_ns on device dev. */
static void gb_kernel(gb *b, uint64_t call, uint64_t dur_ns, int64_t dev)
{
    ana_record r = { .kind = ANA_K_LAUNCH };
    r.u.launch = (ana_rec_launch){ .api = 20, .kernel = 0, .grid_x = 1, .grid_y = 1, .grid_z = 1,
                                   .block_x = 32, .block_y = 1, .block_z = 1, .corr = ++b->corr,
                                   .lib = ANA_LIB_CUBLAS, .call = call };
    gb_add(b, &r);
    ana_record g = { .kind = ANA_K_GPU_KERNEL };
    g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = b->corr, .dur_ns = dur_ns, .kernel = 0,
                                           .device = dev, .stream = 7 };
    gb_add(b, &g);
}

static const ana_gemm_row *row_of(const ana_libcalls *lc, uint64_t m)
{
    for (size_t i = 0; i < lc->n_gemms; i++)
        if (lc->gemms[i].s->m == m)
            return &lc->gemms[i];
    cr_assert_fail("no row of m = %llu", (unsigned long long)m);
    return NULL;
}

/* Shape A (m 8): calls c0 (kernels 100 + 50, devices 1 then 0), c1 (30, device 1);
 * shape B (m 16): call c2 (7, device 0) and call c3 with no kernel. */
static void build_and_check(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3)
{
    gb b = { ana_trace_new("gemms", ANA_LOAD_ALL), 1000000, 0 };
    gb_device(&b, 0);
    gb_device(&b, 1);
    gb_gemm(&b, c0, 8, 8, 8);
    gb_kernel(&b, c0, 100, 1);
    gb_kernel(&b, c0, 50, 0);
    gb_gemm(&b, c1, 8, 8, 8);
    gb_kernel(&b, c1, 30, 1);
    gb_gemm(&b, c2, 16, 8, 8);
    gb_kernel(&b, c2, 7, 0);
    gb_gemm(&b, c3, 16, 8, 8);
    ana_trace_finish(b.t);
    cr_assert_eq(b.t->libs.n_gemms, 4);
    const char *limit = getenv("ANATOMIST_SPILL_GEMMS");
    cr_assert_eq(ana_spill_in_file(&b.t->libs.gemms), limit && atoi(limit) > 0 && atoi(limit) < 4);
    ana_libcalls lc;
    ana_libcalls_analyze(b.t, &lc);
    cr_assert_eq(lc.n_gemms, 2);
    const ana_gemm_row *a = row_of(&lc, 8), *bb = row_of(&lc, 16);
    cr_expect_eq(a->gpu_ns, 180);
    cr_expect_eq(a->kernels, 3);
    cr_expect_eq(a->timed_calls, 2);
    cr_expect_eq(a->timed_flops, 2 * 2 * 8 * 8 * 8);
    /* c0's first kernel in the GPU's order (device 0 before device 1) ran on device 0 */
    cr_expect_eq(a->device, 0);
    cr_expect_eq(bb->gpu_ns, 7);
    cr_expect_eq(bb->kernels, 1);
    cr_expect_eq(bb->timed_calls, 1, "the call with no kernel is not timed");
    cr_expect_eq(bb->timed_flops, 2 * 16 * 8 * 8);
    cr_expect_eq(bb->device, 0);
    cr_expect_eq(lc.gemm_calls, 4);
    cr_expect_eq(lc.gemm_gpu_ns, 187);
    ana_libcalls_free(&lc);
    ana_trace_free(b.t);
}

Test(libcalls, gemm_rows_dense_ids) { build_and_check(1, 2, 3, 4); }

Test(libcalls, gemm_rows_sparse_ids)
{
    build_and_check(5, 1ull << 40, 77, (1ull << 40) + 3);
}

/* The same with the GEMM calls in a temporary file from the second on. */
Test(libcalls, gemm_rows_with_the_calls_spilled)
{
    setenv("ANATOMIST_SPILL_GEMMS", "1", 1);
    build_and_check(1, 2, 3, 4);
    build_and_check(5, 1ull << 40, 77, (1ull << 40) + 3);
    unsetenv("ANATOMIST_SPILL_GEMMS");
}

/* Two GEMM records of different shapes under one call id: each row counts the call's
 * kernels (the records say both ran in that call). */
static void sharing_a_call_id(void)
{
    gb b = { ana_trace_new("gemms", ANA_LOAD_ALL), 1000000, 0 };
    gb_device(&b, 0);
    gb_gemm(&b, 9, 8, 8, 8);
    gb_gemm(&b, 9, 16, 8, 8);
    gb_kernel(&b, 9, 40, 0);
    gb_gemm(&b, 10, 16, 8, 8);
    gb_kernel(&b, 10, 2, 0);
    ana_trace_finish(b.t);
    ana_libcalls lc;
    ana_libcalls_analyze(b.t, &lc);
    cr_assert_eq(lc.n_gemms, 2);
    cr_expect_eq(row_of(&lc, 8)->gpu_ns, 40);
    cr_expect_eq(row_of(&lc, 8)->timed_calls, 1);
    cr_expect_eq(row_of(&lc, 16)->gpu_ns, 42);
    cr_expect_eq(row_of(&lc, 16)->kernels, 2);
    cr_expect_eq(row_of(&lc, 16)->timed_calls, 2);
    ana_libcalls_free(&lc);
    ana_trace_free(b.t);
}

Test(libcalls, gemm_records_sharing_a_call_id) { sharing_a_call_id(); }

Test(libcalls, gemm_records_sharing_a_call_id_spilled)
{
    setenv("ANATOMIST_SPILL_GEMMS", "1", 1);
    sharing_a_call_id();
    unsetenv("ANATOMIST_SPILL_GEMMS");
}

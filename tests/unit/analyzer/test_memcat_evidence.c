/* test_memcat_evidence.c — the memory anatomy (analyzer/analyses/memcat.h): the evidence before the
 * lifetimes (NVTX memory regions, library memory and workspaces), inference runs and a run
 * without steps, on traces built in memory (memcat_tb.h). As in test_memcat.c, the
 * expected categories and sums follow from what the test wrote and docs/memory-anatomy.md,
 * not from the code. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyses/memcat.h"
#include "memcat_tb.h"
#include "analyses/memory.h"
#include "analyses/steps.h"

/* ---------------------------------------------------------------- NVTX memory regions */

Test(memcat, nvtx_region_names)
{
    static const struct { const char *name; int cat; } named[] = {
        { "model.grad_activations", TMP }, /* gradients of activations */
        { "act_grad.3", TMP },
        { "h_act.grad", TMP },
        { "Layer1.GRAD", GRA },            /* case-insensitive */
        { "weight_grad", GRA },            /* grad before weight */
        { "adam.exp_avg_sq", OPT },
        { "Momentum_buf", OPT },
        { "optimizer_params", OPT },       /* optim before param */
        { "cublas_workspace", FUN },
        { "nccl_buffers", FUN },
        { "embed_tmp", TMP },              /* tmp before embed */
        { "scratch", TMP },
        { "input_embeddings", ACT },       /* input before embed */
        { "saved_tensors", ACT },
        { "model.weight", WEI },
        { "master_copy", WEI },
        { "Embedding.table", WEI },
        { "buffer7", UNA },                /* states nothing; no steps decide the rest */
    };
    const size_t n = sizeof(named) / sizeof(named[0]);
    mb m;
    mc_run r;
    mb_init(&m);
    size_t idx[32];
    uint64_t sum[ANA_MCAT_COUNT] = { 0 };
    for (size_t i = 0; i < n; i++) {
        uint64_t size = 1000 + 10 * i;
        idx[i] = mb_alloc(&m, BASE(i + 1), size);
        mb_region(&m, BASE(i + 1), size, named[i].name);
        sum[named[i].cat] += size;
        cr_expect_eq(ana_mcat_of_name(named[i].name), named[i].cat == UNA ? -1 : named[i].cat,
                     "ana_mcat_of_name(\"%s\")", named[i].name);
    }
    /* a region over an allocation's interior only decides nothing */
    size_t iIn = mb_alloc(&m, BASE(40), 512);
    mb_region(&m, BASE(40) + 64, 256, "model.weight2");
    /* one region holding the first bytes of two allocations; the third starts at its end */
    const uint64_t Q = BASE(41);
    mb_region(&m, Q, 256, "param_bucket");
    size_t iQ1 = mb_alloc(&m, Q, 128), iQ2 = mb_alloc(&m, Q + 128, 128),
           iQ3 = mb_alloc(&m, Q + 256, 64);
    /* made inside cuBLAS: the library decides before the name */
    size_t iLib = mb_alloc_lib(&m, BASE(42), 2048, ANA_LIB_CUBLAS);
    mb_region(&m, BASE(42), 2048, "model.weight");
    sum[UNA] += 512 + 64;
    sum[WEI] += 256;
    sum[FUN] += 2048;
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 0);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(r.m.allocs[idx[i]].cat, named[i].cat, "\"%s\": %s (%s)", named[i].name,
                     ana_mcat_name(r.m.allocs[idx[i]].cat),
                     ana_memcat_why(r.m.allocs[idx[i]].why));
    expect_cat(&r, iIn, UNA);
    expect_cat(&r, iQ1, WEI);
    expect_cat(&r, iQ2, WEI);
    expect_cat(&r, iQ3, UNA);
    expect_cat(&r, iLib, FUN);
    expect_sums(r.m.at_peak, sum, "at the peak (everything is live at the end)");
    cr_expect_eq(ana_mcat_of_name("model.weights"), WEI);
    cr_expect_eq(ana_mcat_of_name("GRAD_ACT"), TMP);
    mb_done(&m, &r);
}

/* --------------------------------------------------- library memory and workspaces */

Test(memcat, library_allocations_and_workspaces)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t WS = BASE(1), WS2 = BASE(2), W = BASE(3), OUT = BASE(4), DRV = BASE(5),
                   L = BASE(6);
    uint64_t kg = tb_kernel(&m.b, "sm90_xmma_gemm_f32f32"), kb = tb_kernel(&m.b, "k_grad");
    size_t iWS = mb_alloc(&m, WS, 4096);
    mb_set_workspace(&m, WS, 4096);
    size_t iWS2 = mb_alloc(&m, WS2, 2048); /* cublasLtMatmul's workspace argument */
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000);
    size_t iOUT = mb_alloc(&m, OUT, 1000);
    size_t iDRV = mb_driver_alloc(&m, DRV, 8192);
    size_t iL = 0;
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        if (i == 0)
            iL = mb_alloc_lib(&m, L, 512, ANA_LIB_CUBLAS); /* cuBLAS's own */
        mb_gemm(&m, kg, 0, W, W, OUT, 0, WS);
        mb_gemm(&m, kg, 1, W, OUT, OUT, 0, WS2);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, OUT, W);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer"); /* workspaces used in forward and optimizer alike */
        mb_gemm(&m, kg, 0, W, W, W, 0, WS);
        mb_gemm(&m, kg, 1, W, W, W, 0, WS2);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    expect_cat(&r, iWS, FUN);
    expect_cat(&r, iWS2, FUN);
    expect_cat(&r, iDRV, FUN);
    expect_cat(&r, iL, FUN);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iOUT, ACT); /* forward, no step input, not loaded */
    cr_expect(r.m.allocs[iWS].flags & ANA_MCF_WORKSPACE);
    cr_expect(r.m.allocs[iWS2].flags & ANA_MCF_WORKSPACE);
    cr_expect(!(r.m.allocs[iW].flags & ANA_MCF_WORKSPACE));
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = 4000, [ACT] = 1000,
                                            [FUN] = 4096 + 2048 + 8192 + 512 };
    cr_expect_eq(r.m.peak_bytes, 4000 + 1000 + 4096 + 2048 + 8192 + 512);
    expect_sums(r.m.at_peak, want, "at the peak");
    mb_done(&m, &r);
}

/* ------------------------------------------------------------------------ inference */

Test(memcat, inference_without_backward)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), OUT = BASE(2), IN = BASE(3), KV = BASE(4);
    uint64_t ke = tb_kernel(&m.b, "k_embed"), ka = tb_kernel(&m.b, "k_attn");
    size_t iW = mb_alloc(&m, W, 8000);
    mb_h2d(&m, W, 8000);
    size_t iOUT = mb_alloc(&m, OUT, 1000);
    size_t iIN = mb_alloc(&m, IN, 500);
    size_t iKV[3];
    for (int i = 0; i < 3; i++) {
        tb_push(&m.b, "step");
        mb_h2d(&m, IN, 500);
        tb_push(&m.b, "forward");
        iKV[i] = mb_alloc(&m, KV, 2000);
        LAUNCH(&m, ke, W, IN, KV);
        LAUNCH(&m, ka, KV, W, OUT);
        mb_free(&m, KV);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 3, "%s", r.s.why);
    expect_cat(&r, iW, WEI);   /* loaded, read in forward */
    expect_cat(&r, iOUT, TMP); /* kept, forward: a run without backward */
    expect_cat(&r, iIN, TMP);  /* a step input, but no backward anywhere */
    for (int i = 0; i < 3; i++)
        expect_cat(&r, iKV[i], TMP);
    cr_expect_eq(r.m.peak_bytes, 11500);
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = 8000, [TMP] = 3500 };
    expect_sums(r.m.at_peak, want, "at the peak");
    cr_expect_float_eq(r.m.params, 2000.0, 1e-9);
    expect_bpp(&r.m, WEI, 4.0);
    expect_bpp(&r.m, OPT, 0.0);
    expect_kind(r.m.optimizer_kind, "none", "optimizer");
    mb_done(&m, &r);
}

/* Only 16-bit weights (an fp16 GEMM operand in forward): parameters = W16 / 2. */
Test(memcat, inference_with_16bit_weights_only)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), IN = BASE(2), OUT = BASE(3);
    uint64_t kg = tb_kernel(&m.b, "sm80_gemm_f16f16");
    size_t iW = mb_alloc(&m, W, 6000);
    mb_h2d(&m, W, 6000);
    size_t iIN = mb_alloc(&m, IN, 256), iOUT = mb_alloc(&m, OUT, 256);
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        mb_gemm(&m, kg, 0, W, IN, OUT, 2, 0); /* CUDA_R_16F */
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iIN, TMP);
    expect_cat(&r, iOUT, TMP);
    cr_expect_eq(r.m.allocs[iW].elem, 2);
    cr_expect_float_eq(r.m.params, 3000.0, 1e-9);
    expect_bpp(&r.m, WEI, 2.0);
    mb_done(&m, &r);
}

/* ------------------------------------------------------------------------- no steps */

Test(memcat, no_steps_only_copies_from_the_host_speak)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), X = BASE(2), A = BASE(3);
    uint64_t k1 = tb_kernel(&m.b, "k_a"), k2 = tb_kernel(&m.b, "k_b"), k3 = tb_kernel(&m.b, "k_c");
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000);
    size_t iX = mb_alloc(&m, X, 1000);
    LAUNCH(&m, k1, W, X);
    LAUNCH(&m, k2, X);
    size_t iA = mb_alloc(&m, A, 300);
    LAUNCH(&m, k3, W, A);
    mb_free(&m, A);
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.method, ANA_STEPS_NONE);
    expect_cat(&r, iW, WEI); /* copied from the host and kept: weights */
    expect_cat(&r, iX, UNA); /* not copied, and no copied buffer of its size */
    expect_cat(&r, iA, UNA); /* not the set-up temporary: rule 4 comes first */
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = 4000, [UNA] = 1300 };
    expect_sums(r.m.at_peak, want, "at the peak");
    mb_done(&m, &r);
}

/* test_memcat.c — the memory anatomy (analyzer/analyses/memcat.h) of training runs built in memory:
 * a per-tensor loop, an arena, master copies, lifetimes without pointers, a failure after
 * the last step, mixed precision; the other evidence (NVTX regions, libraries, inference,
 * no steps) is in test_memcat_evidence.c.
 *
 * Each test writes allocations of sizes it chose, the calls that use their pointers and
 * the NVTX step and phase ranges (memcat_tb.h), then checks each allocation's category
 * and the bytes by category at the peak, at a time, at a failed allocation, per step and
 * per parameter against what docs/memory-anatomy.md ("The evidence", "The rules, in
 * order", "Bytes per parameter") says of the trace it wrote: the expected numbers are
 * sums of the sizes the test chose, never read back from the code under test. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyses/memcat.h"
#include "memcat_tb.h"
#include "../random.h"
#include "analyses/memory.h"
#include "analyses/steps.h"

/* ------------------------------------------------------------ a per-tensor training loop */

Test(memcat, per_tensor_training_loop)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), G = BASE(2), M = BASE(3), V = BASE(4), X = BASE(5), A = BASE(6),
                   T = BASE(7), GS = BASE(8);
    uint64_t kf = tb_kernel(&m.b, "k_linear"), kb = tb_kernel(&m.b, "k_linear_dx"),
             kb2 = tb_kernel(&m.b, "k_linear_dw"), kb3 = tb_kernel(&m.b, "k_bias_dw"),
             ko = tb_kernel(&m.b, "k_update");
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000); /* loaded */
    size_t iG = mb_alloc(&m, G, 4000);
    size_t iM = mb_alloc(&m, M, 4000);
    mb_memset(&m, M, 4000); /* zeroed: not a load */
    size_t iX = mb_alloc(&m, X, 1000);
    size_t iA[3], iT[3], iGS[3], iV = 0;
    uint64_t t_fwd = 0, t_peak[3] = { 0 };
    for (int i = 0; i < 3; i++) {
        tb_push(&m.b, "step");
        mb_memset(&m, G, 4000); /* zero_grad before backward: not a (forward) use */
        mb_h2d(&m, X, 1000);    /* the batch: a step input */
        tb_push(&m.b, "forward");
        iA[i] = mb_alloc(&m, A, 2000);
        if (i == 0)
            t_fwd = m.b.now;
        LAUNCH(&m, kf, W, X, A);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, A, W, G);
        iT[i] = mb_alloc(&m, T, 500);
        if (i > 0)
            t_peak[i] = m.b.now;
        LAUNCH(&m, kb2, G, T);
        mb_free(&m, T);
        mb_free(&m, A);
        iGS[i] = mb_alloc(&m, GS, 600); /* a gradient of this step only */
        LAUNCH(&m, kb3, GS);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        if (i == 0) {
            iV = mb_alloc(&m, V, 4000); /* lazily, in the first optimizer phase */
            t_peak[0] = m.b.now;
        }
        LAUNCH(&m, ko, W, G, M, V, GS);
        mb_free(&m, GS);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.method, ANA_STEPS_NVTX, "%s", r.s.why);
    cr_assert_eq(r.s.n_steps, 3);
    cr_expect_eq(r.m.evidence, 1);

    expect_cat(&r, iW, WEI);  /* loaded, forward and optimizer */
    expect_cat(&r, iG, GRA);  /* backward and optimizer; the memsets are no use */
    expect_cat(&r, iM, OPT);  /* optimizer only, not loaded */
    expect_cat(&r, iV, OPT);
    expect_cat(&r, iX, ACT);  /* forward, a step input */
    for (int i = 0; i < 3; i++) {
        expect_cat(&r, iA[i], ACT);  /* forward to backward */
        expect_cat(&r, iT[i], TMP);  /* within backward */
        expect_cat(&r, iGS[i], GRA); /* made in backward, used by the optimizer */
    }
    const ana_mc_alloc *a = r.m.allocs;
    cr_expect(a[iW].flags & ANA_MCF_LOADED);
    cr_expect(!(a[iM].flags & ANA_MCF_LOADED), "a memset is not a load");
    cr_expect(!(a[iG].flags & ANA_MCF_LOADED));
    cr_expect(a[iX].flags & ANA_MCF_STEP_INPUT);
    cr_expect(!(a[iX].flags & ANA_MCF_LOADED));
    cr_expect_eq(a[iG].use_phases, (1 << ANA_PHASE_BACKWARD) | (1 << ANA_PHASE_OPTIMIZER),
                 "G used in 0x%x", a[iG].use_phases);
    cr_expect_eq(a[iM].use_phases, 1 << ANA_PHASE_OPTIMIZER);
    cr_expect_eq(a[iW].step_alloc, -1);
    cr_expect_eq(a[iW].step_free, 3);
    cr_expect_eq(a[iV].step_alloc, 0);
    cr_expect_eq(a[iV].phase_alloc, ANA_PHASE_OPTIMIZER);
    cr_expect_eq(a[iA[1]].step_alloc, 1);
    cr_expect_eq(a[iA[1]].step_free, 1);
    cr_expect_eq(a[iA[1]].phase_alloc, ANA_PHASE_FORWARD);
    cr_expect_eq(a[iT[2]].phase_alloc, ANA_PHASE_BACKWARD);
    cr_expect_eq(a[iT[2]].phase_free, ANA_PHASE_BACKWARD);
    cr_expect_eq(a[iGS[2]].phase_free, ANA_PHASE_OPTIMIZER);

    /* before the loop: W G M X = 13000; a step adds A 2000 and T 500 in backward, then
     * GS 600 once they are gone; step 0's V (4000) comes after them: its most is
     * 13000 + 600 + 4000 = 17600, the later steps' 13000 + 4000 + 2500 = 19500 */
    cr_expect_eq(r.m.peak_bytes, 19500);
    cr_expect_eq(r.mem.peak_bytes, 19500);
    const uint64_t want_peak[ANA_MCAT_COUNT] = { [WEI] = 4000, [OPT] = 8000, [GRA] = 4000,
                                                 [ACT] = 1000 + 2000, [TMP] = 500 };
    expect_sums(r.m.at_peak, want_peak, "at the peak");
    const uint64_t want_count[ANA_MCAT_COUNT] = { [WEI] = 1, [OPT] = 2, [GRA] = 1, [ACT] = 2,
                                                  [TMP] = 1 };
    expect_sums(r.m.count_at_peak, want_count, "allocations at the peak");
    static const uint64_t want_step[3] = { 17600, 19500, 19500 };
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(r.m.step_peak[i], want_step[i], "step %d: %llu", i,
                     (unsigned long long)r.m.step_peak[i]);
        cr_expect_eq(r.m.step_peak_ns[i], t_peak[i], "step %d reached its most at the %s", i,
                     i ? "temporary" : "second moment");
    }

    uint64_t at[ANA_MCAT_COUNT];
    uint64_t total = ana_memcat_at_time(&r.m, &r.mem, m.b.t, t_fwd, at);
    cr_expect_eq(total, 15000); /* step 0's forward: no V, no T yet */
    const uint64_t want_fwd[ANA_MCAT_COUNT] = { [WEI] = 4000, [OPT] = 4000, [GRA] = 4000,
                                                [ACT] = 3000 };
    expect_sums(at, want_fwd, "in step 0's forward");

    /* fp32 only: 4000 B of weights are 1000 parameters */
    cr_expect_float_eq(r.m.params, 1000.0, 1e-9);
    expect_bpp(&r.m, WEI, 4.0);
    expect_bpp(&r.m, OPT, 8.0);
    expect_bpp(&r.m, GRA, 4.0);
    expect_kind(r.m.optimizer_kind, "AdamW", "optimizer");
    expect_kind(r.m.gradients_kind, "fp32", "gradients");
    mb_done(&m, &r);
}

/* docs/memory-anatomy.md, "Uses": in training an undecided use stays undecided, before
 * backward (the loss) as after it ("used only in undecided stretches → unattributed"). */
Test(memcat, undecided_uses_in_training_stay_undecided)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), LOSS = BASE(2), STAT = BASE(3);
    uint64_t kf = tb_kernel(&m.b, "k_linear"), kl = tb_kernel(&m.b, "k_loss"),
             kb = tb_kernel(&m.b, "k_linear_dx"), ko = tb_kernel(&m.b, "k_update"),
             ks = tb_kernel(&m.b, "k_stats");
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000);
    size_t iL = mb_alloc(&m, LOSS, 16), iS = mb_alloc(&m, STAT, 16);
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        LAUNCH(&m, kf, W);
        tb_pop(&m.b);
        LAUNCH(&m, kl, LOSS); /* between forward and backward: undecided, before backward */
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, W);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, ko, W);
        tb_pop(&m.b);
        LAUNCH(&m, ks, STAT); /* after the optimizer: undecided, after backward */
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iL, UNA); /* used only between forward and backward */
    expect_cat(&r, iS, UNA);
    mb_done(&m, &r);
}

/* ------------------------------------------------------------------------- an arena */

Test(memcat, arena_found_by_interior_pointers)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t P = BASE(1), Z = P + 10000, G = BASE(2), M = G + 10000, AC = BASE(3);
    uint64_t ke = tb_kernel(&m.b, "k_embed"), kf = tb_kernel(&m.b, "k_block"),
             kb = tb_kernel(&m.b, "k_block_grad"), ko = tb_kernel(&m.b, "k_adamw");
    size_t iP = mb_alloc(&m, P, 10000);  /* every parameter */
    size_t iZ = mb_alloc(&m, Z, 64);     /* right after the arena: its first byte is P's end */
    size_t iG = mb_alloc(&m, G, 10000);  /* every gradient */
    size_t iM = mb_alloc(&m, M, 20000);  /* m and v, right after the gradients */
    const uint64_t BW = BASE(4);
    size_t iBW = mb_alloc(&m, BW, 128);  /* backward's own buffer, reused every step */
    mb_h2d(&m, P, 4000);
    mb_h2d(&m, P + 4000, 6000);
    size_t iAC = 0;
    for (int i = 0; i < 3; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        if (i == 0)
            iAC = mb_alloc(&m, AC, 6000); /* kept: reused every step */
        LAUNCH(&m, ke, P, AC);
        LAUNCH(&m, kf, P + 4000, AC, AC + 2000, Z);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, AC + 2000, P + 4000, G + 4000);
        LAUNCH(&m, kb, AC, G);
        LAUNCH(&m, kb, BW + 64);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, ko, P, G, M, M + 10000);
        LAUNCH(&m, ko, P + 9996, G + 9996, M + 9996, M + 19996);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 3, "%s", r.s.why);
    expect_cat(&r, iP, WEI);
    expect_cat(&r, iZ, ACT); /* used in forward through its first byte, not P's */
    expect_cat(&r, iG, GRA);
    expect_cat(&r, iM, OPT); /* its first byte is G's end */
    expect_cat(&r, iAC, ACT);
    expect_cat(&r, iBW, TMP); /* kept, only backward */
    cr_expect(r.m.allocs[iP].flags & ANA_MCF_LOADED);
    /* uses per allocation: P 2 copies + 5 a step; Z 1, G 4, M 4, AC 5 a step */
    static const uint64_t want_uses[5] = { 2 + 15, 3, 12, 12, 15 };
    const size_t idx[5] = { iP, iZ, iG, iM, iAC };
    for (int k = 0; k < 5; k++)
        cr_expect_eq(r.m.allocs[idx[k]].uses, want_uses[k], "allocation %zu: %llu uses", idx[k],
                     (unsigned long long)r.m.allocs[idx[k]].uses);
    cr_expect_eq(r.m.uses_mapped, 59 + 3);
    cr_expect_eq(r.m.peak_bytes, 46064 + 128);
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = 10000, [OPT] = 20000, [GRA] = 10000,
                                            [ACT] = 6064, [TMP] = 128 };
    expect_sums(r.m.at_peak, want, "at the peak");
    cr_expect_float_eq(r.m.params, 2500.0, 1e-9);
    expect_bpp(&r.m, WEI, 4.0);
    expect_bpp(&r.m, OPT, 8.0);
    expect_bpp(&r.m, GRA, 4.0);
    mb_done(&m, &r);
}

/* ------------------------------------------------------------- an fp32 master copy */

Test(memcat, loaded_optimizer_only_buffer_is_a_master_copy)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), MS = BASE(2), M = BASE(3);
    uint64_t kf = tb_kernel(&m.b, "k_fwd_gemm"), kb = tb_kernel(&m.b, "k_bwd_gemm"),
             ko = tb_kernel(&m.b, "k_momentum"), kc = tb_kernel(&m.b, "k_copy_params");
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000);
    size_t iMS = mb_alloc(&m, MS, 4000);
    mb_h2d(&m, MS, 4000); /* the master copy, loaded from the checkpoint */
    size_t iM = mb_alloc(&m, M, 4000); /* a state: optimizer only, never loaded */
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        LAUNCH(&m, kf, W);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, W);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, ko, MS, M);
        LAUNCH(&m, kc, MS, W);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iMS, WEI);
    expect_cat(&r, iM, OPT);
    cr_expect(r.m.allocs[iMS].flags & ANA_MCF_LOADED);
    /* only fp32 weights (no 16-bit forward use): 8000 B / 4 — but neither gradients nor
     * GEMM operands say so too: no count, no reading of the optimizer's 2 B/param */
    cr_expect_float_eq(r.m.params_weights, 2000.0, 1e-9);
    cr_expect_float_eq(r.m.params, 0.0, 1e-9);
    cr_expect_null(r.m.optimizer_kind);
    cr_expect(r.m.params_why[0], "the report says why");
    mb_done(&m, &r);
}

/* "only the optimizer: loaded before the first step → weights (a master copy), else →
 * optimizer": a state zeroed by a fill kernel (not a memset, not a host-to-device copy)
 * before the first step is not loaded. */
Test(memcat, state_zeroed_by_a_kernel_before_the_first_step_is_optimizer)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), M = BASE(2);
    uint64_t kz = tb_kernel(&m.b, "k_fill_zero"), kf = tb_kernel(&m.b, "k_fwd"),
             kb = tb_kernel(&m.b, "k_bwd"), ko = tb_kernel(&m.b, "k_momentum");
    size_t iW = mb_alloc(&m, W, 4000);
    mb_h2d(&m, W, 4000);
    size_t iM = mb_alloc(&m, M, 4000);
    LAUNCH(&m, kz, M); /* zero the state on the device */
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        LAUNCH(&m, kf, W);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, W);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, ko, W, M);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iM, OPT);
    cr_expect(!(r.m.allocs[iM].flags & ANA_MCF_LOADED));
    mb_done(&m, &r);
}

/* -------------------------------------------------- lifetimes only (no pointers) */

Test(memcat, lifetime_rules_without_pointers)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t S0 = BASE(1), P = BASE(2), F = BASE(3), A = BASE(4), GD = BASE(5),
                   T = BASE(6), O = BASE(7), S1 = BASE(8);
    uint64_t kf = tb_kernel(&m.b, "k1"), kb = tb_kernel(&m.b, "k2"), ko = tb_kernel(&m.b, "k3");
    size_t iS0 = mb_alloc(&m, S0, 100);
    mb_free(&m, S0); /* set-up */
    size_t iP = mb_alloc(&m, P, 1000);
    size_t iF = 0, iGD = 0, iO = 0, iS1 = 0, iA[3], iT[3];
    for (int i = 0; i < 3; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        LAUNCH0(&m, kf);
        if (i == 0)
            iF = mb_alloc(&m, F, 300); /* made in forward and kept, never used */
        iA[i] = mb_alloc(&m, A, 200);
        LAUNCH0(&m, kf);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH0(&m, kb);
        if (i == 0)
            iGD = mb_alloc(&m, GD, 400); /* made in backward, kept past the step */
        iT[i] = mb_alloc(&m, T, 50);
        LAUNCH0(&m, kb);
        mb_free(&m, T);
        mb_free(&m, A);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        if (i == 0)
            iO = mb_alloc(&m, O, 800); /* made in an optimizer phase, kept */
        LAUNCH0(&m, ko);
        if (i == 2)
            mb_free(&m, GD); /* released in a later step */
        tb_pop(&m.b);
        tb_pop(&m.b);
        if (i == 0) {
            iS1 = mb_alloc(&m, S1, 100); /* between two steps */
            mb_free(&m, S1);
        }
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 3, "%s", r.s.why);
    cr_expect_eq(r.m.evidence, 0);
    expect_cat(&r, iS0, TMP);
    expect_cat(&r, iS1, TMP);
    expect_cat(&r, iP, UNA);
    expect_cat(&r, iF, UNA);
    expect_cat(&r, iGD, GRA);
    expect_cat(&r, iO, OPT);
    for (int i = 0; i < 3; i++) {
        expect_cat(&r, iA[i], ACT);
        expect_cat(&r, iT[i], TMP);
    }
    /* step 0 ends with P F GD O = 2500; steps 1 and 2 add A and T: 2750 */
    cr_expect_eq(r.m.peak_bytes, 2750);
    const uint64_t want[ANA_MCAT_COUNT] = { [OPT] = 800, [GRA] = 400, [ACT] = 200, [TMP] = 50,
                                            [UNA] = 1300 };
    expect_sums(r.m.at_peak, want, "at the peak");
    static const uint64_t want_step[3] = { 2500, 2750, 2750 };
    for (int i = 0; i < 3; i++)
        cr_expect_eq(r.m.step_peak[i], want_step[i], "step %d: %llu", i,
                     (unsigned long long)r.m.step_peak[i]);
    mb_done(&m, &r);
}

/* ---------------------------------------------------- a failure after the last step */

Test(memcat, failure_after_the_last_complete_step)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W = BASE(1), G = BASE(2), M = BASE(3), A = BASE(4), S = BASE(5),
                   T = BASE(6), E = BASE(7);
    uint64_t kf = tb_kernel(&m.b, "_Z11mlp_forwardv"), kb = tb_kernel(&m.b, "_Z12mlp_backwardv"),
             ko = tb_kernel(&m.b, "_Z12adamw_updatev");
    size_t iW = mb_alloc(&m, W, 1000);
    mb_h2d(&m, W, 1000);
    size_t iG = mb_alloc(&m, G, 1000);
    size_t iM = mb_alloc(&m, M, 2000);
    size_t iA[2];
    for (int i = 0; i < 2; i++) {
        tb_push(&m.b, "step");
        tb_push(&m.b, "forward");
        iA[i] = mb_alloc(&m, A, 300);
        LAUNCH(&m, kf, W, A);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        LAUNCH(&m, kb, A, W, G);
        mb_free(&m, A);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, ko, W, G, M);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    /* the third step runs out of memory in its backward and never ends */
    tb_push(&m.b, "step");
    tb_push(&m.b, "forward");
    LAUNCH(&m, kf, W);
    size_t iA3 = mb_alloc(&m, A, 300); /* forward: forward-named launches around it */
    LAUNCH(&m, kf, W, A);
    size_t iS = mb_alloc(&m, S, 50);   /* released before the failure */
    LAUNCH(&m, kf, S);
    mb_free(&m, S);
    tb_pop(&m.b);
    tb_push(&m.b, "backward");
    LAUNCH(&m, kb, A, W, G);
    size_t iT = mb_alloc(&m, T, 100);  /* made in backward, live at the failure */
    mb_alloc_fail(&m, 1ull << 40);
    mb_free(&m, T); /* the error unwinds */
    mb_free(&m, A);
    size_t iE = mb_alloc(&m, E, 10);   /* after the failure, never released */
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 2, "%s", r.s.why);
    cr_assert_eq(r.mem.n_failures, 1);
    expect_cat(&r, iW, WEI);
    expect_cat(&r, iG, GRA);
    expect_cat(&r, iM, OPT);
    expect_cat(&r, iA[0], ACT);
    expect_cat(&r, iA[1], ACT);
    expect_cat(&r, iA3, ACT); /* live at the failure, made in forward */
    expect_cat(&r, iT, TMP);  /* live at the failure, made in backward */
    expect_cat(&r, iS, TMP);  /* after the last step, released */
    expect_cat(&r, iE, UNA);  /* after the last step, never released */
    cr_expect_eq(r.m.allocs[iA3].step_alloc, 2, "after the last step: n_steps");
    uint64_t at[ANA_MCAT_COUNT];
    uint64_t total = ana_memcat_at_failure(&r.m, &r.mem, &r.mem.failures[0], at);
    cr_expect_eq(total, 4400);
    cr_expect_eq(r.mem.failures[0].live_bytes, 4400);
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = 1000, [OPT] = 2000, [GRA] = 1000,
                                            [ACT] = 300, [TMP] = 100 };
    expect_sums(at, want, "at the failure");
    cr_expect_eq(r.m.peak_bytes, 4400); /* reached with T, just before the failure */
    expect_sums(r.m.at_peak, want, "at the peak");
    cr_expect_eq(r.m.step_peak[0], 4300);
    cr_expect_eq(r.m.step_peak[1], 4300);
    mb_done(&m, &r);
}

/* ------------------------------------------ step peaks under many releases in any order */

/* Buffers made before and inside 40 steps, each released at a random later moment (inside
 * a step, between two, or never), so that many wait to be released at once and in an
 * order unlike the one they were made in: each step's most, computed here as the records
 * are written (live at its start, then after each record inside it). */
Test(memcat, step_peaks_with_releases_in_any_order)
{
    mb m;
    mc_run r;
    mb_init(&m);
    uint64_t seed = 0x57e9, kf = tb_kernel(&m.b, "_Z4workv");
    enum { STEPS = 40, MOST = 400 };
    uint64_t ptr[MOST], size[MOST], live = 0, want[STEPS];
    size_t n_live = 0, made = 0;
    for (int i = 0; i < 30; i++, made++) { /* before the first step: some never released */
        ptr[n_live] = BASE(made), size[n_live] = 1 + ana_xorshift64(&seed) % 5000;
        mb_alloc(&m, ptr[n_live], size[n_live]);
        live += size[n_live++];
    }
    for (int k = 0; k < STEPS; k++) {
        tb_push(&m.b, "step");
        want[k] = live;
        LAUNCH0(&m, kf);
        for (int e = 0; e < 12; e++) {
            if (n_live < MOST && (n_live < 10 || ana_xorshift64(&seed) % 3)) {
                ptr[n_live] = BASE(made++), size[n_live] = 1 + ana_xorshift64(&seed) % 5000;
                mb_alloc(&m, ptr[n_live], size[n_live]);
                live += size[n_live++];
            } else {
                size_t j = 10 + ana_xorshift64(&seed) % (n_live - 10); /* the first 10 stay */
                mb_free(&m, ptr[j]);
                live -= size[j];
                ptr[j] = ptr[--n_live], size[j] = size[n_live];
            }
            want[k] = live > want[k] ? live : want[k];
        }
        tb_pop(&m.b);
        for (int e = 0; e < 3 && n_live > 10; e++) { /* between steps: counted in none */
            size_t j = 10 + ana_xorshift64(&seed) % (n_live - 10);
            mb_free(&m, ptr[j]);
            live -= size[j];
            ptr[j] = ptr[--n_live], size[j] = size[n_live];
        }
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, STEPS, "%s", r.s.why);
    cr_assert(n_live > 10 && made > 200, "the test wrote %zu buffers, %zu live at the end", made,
              n_live);
    for (int k = 0; k < STEPS; k++)
        cr_expect_eq(r.m.step_peak[k], want[k], "step %d: %llu, want %llu", k,
                     (unsigned long long)r.m.step_peak[k], (unsigned long long)want[k]);
    mb_done(&m, &r);
}

/* ------------------------------------------ mixed precision: bytes per parameter */

/* 16-bit working copies W16 (2000 B, a GEMM operand of type 14 in forward) and LN16 (200 B,
 * read by a kernel named bf16), their fp32 masters (4000 + 400 B, loaded, optimizer only),
 * 16-bit gradients (2200 B), AdamW's m and v (4400 B each). frozen: an extra fp32 weight
 * (4000 B, loaded, forward only). */
static void mixed_precision(int frozen)
{
    mb m;
    mc_run r;
    mb_init(&m);
    const uint64_t W32 = BASE(1), LN32 = BASE(2), W16 = BASE(3), LN16 = BASE(4), GW = BASE(5),
                   GLN = BASE(6), M = BASE(7), V = BASE(8), IN = BASE(9), AC = BASE(10),
                   EMB = BASE(11);
    uint64_t kg = tb_kernel(&m.b, "sm90_xmma_gemm_bf16bf16_bf16f32"),
             kln = tb_kernel(&m.b, "layernorm_fwd_bf16_kernel"),
             kemb = tb_kernel(&m.b, "k_embedding"), kbw = tb_kernel(&m.b, "k_ln_grad"),
             kopt = tb_kernel(&m.b, "k_adamw"), kcast = tb_kernel(&m.b, "k_cast_params");
    size_t iW32 = mb_alloc(&m, W32, 4000);
    mb_h2d(&m, W32, 4000);
    size_t iLN32 = mb_alloc(&m, LN32, 400);
    mb_h2d(&m, LN32, 400);
    size_t iW16 = mb_alloc(&m, W16, 2000), iLN16 = mb_alloc(&m, LN16, 200);
    LAUNCH(&m, kcast, W32, W16); /* before the first step: neither a step use nor a load */
    LAUNCH(&m, kcast, LN32, LN16);
    size_t iGW = mb_alloc(&m, GW, 2000), iGLN = mb_alloc(&m, GLN, 200);
    size_t iM = mb_alloc(&m, M, 4400), iV = mb_alloc(&m, V, 4400);
    size_t iIN = mb_alloc(&m, IN, 512);
    size_t iEMB = 0;
    if (frozen) {
        iEMB = mb_alloc(&m, EMB, 4000);
        mb_h2d(&m, EMB, 4000);
    }
    size_t iAC[3];
    for (int i = 0; i < 3; i++) {
        tb_push(&m.b, "step");
        mb_h2d(&m, IN, 512);
        tb_push(&m.b, "forward");
        iAC[i] = mb_alloc(&m, AC, 1024);
        if (frozen)
            LAUNCH(&m, kemb, EMB, IN);
        mb_gemm(&m, kg, 1, W16, IN, AC, 14, 0);
        LAUNCH(&m, kln, LN16, AC);
        tb_pop(&m.b);
        tb_push(&m.b, "backward");
        mb_gemm(&m, kg, 1, AC, IN, GW, 14, 0);
        LAUNCH(&m, kbw, AC, LN16, GLN);
        mb_free(&m, AC);
        tb_pop(&m.b);
        tb_push(&m.b, "optimizer");
        LAUNCH(&m, kopt, W32, GW, M, V);
        LAUNCH(&m, kopt, LN32, GLN, M + 4000, V + 4000);
        LAUNCH(&m, kcast, W32, W16);
        LAUNCH(&m, kcast, LN32, LN16);
        tb_pop(&m.b);
        tb_pop(&m.b);
    }
    mb_analyze(&m, &r);
    cr_assert_eq(r.s.n_steps, 3, "%s", r.s.why);
    expect_cat(&r, iW32, WEI);
    expect_cat(&r, iLN32, WEI);
    expect_cat(&r, iW16, WEI);
    expect_cat(&r, iLN16, WEI);
    expect_cat(&r, iGW, GRA);
    expect_cat(&r, iGLN, GRA);
    expect_cat(&r, iM, OPT);
    expect_cat(&r, iV, OPT);
    expect_cat(&r, iIN, ACT);
    for (int i = 0; i < 3; i++)
        expect_cat(&r, iAC[i], ACT);
    cr_expect_eq(r.m.allocs[iW16].elem, 2, "a bf16 GEMM operand in forward");
    cr_expect_eq(r.m.allocs[iLN16].elem, 2, "read in forward by a kernel named bf16");
    if (frozen)
        expect_cat(&r, iEMB, WEI); /* loaded, forward only: frozen */

    uint64_t w16 = 2200, w32 = 4400 + (frozen ? 4000 : 0);
    cr_expect_eq(r.m.peak_bytes, w16 + w32 + 2200 + 8800 + 512 + 1024);
    const uint64_t want[ANA_MCAT_COUNT] = { [WEI] = w16 + w32, [OPT] = 8800, [GRA] = 2200,
                                            [ACT] = 512 + 1024 };
    expect_sums(r.m.at_peak, want, "at the peak");
    /* W32 = 2·W16: W16 / 2 parameters; otherwise W16 / 2 + (W32 − 2·W16) / 4 */
    double params = frozen ? 1100.0 + (8400.0 - 4400.0) / 4.0 : 1100.0;
    cr_expect_float_eq(r.m.params_weights, params, 1e-9, "params %.1f, want %.1f", r.m.params_weights, params);
    if (frozen) {
        /* the gradients count 1100 trained parameters, the weights 2100: no second source
         * agrees, so neither the count nor what the bytes mean is given */
        cr_expect_float_eq(r.m.params, 0.0, 1e-9);
        cr_expect_null(r.m.optimizer_kind);
        cr_expect(strstr(r.m.params_why, "gradients") != NULL, "%s", r.m.params_why);
        mb_done(&m, &r);
        return;
    }
    cr_expect_float_eq(r.m.params, params, 1e-9, "params %.1f, want %.1f", r.m.params, params);
    expect_bpp(&r.m, WEI, (double)(w16 + w32) / params);
    expect_bpp(&r.m, OPT, 8800.0 / params);
    expect_bpp(&r.m, GRA, 2200.0 / params);
    if (!frozen) {
        expect_kind(r.m.optimizer_kind, "AdamW", "optimizer");
        expect_kind(r.m.gradients_kind, "16-bit", "gradients");
        cr_expect_not_null(r.m.weights_kind, "6 B/param: mixed-precision weights");
    }
    mb_done(&m, &r);
}

Test(memcat, mixed_precision_six_bytes_per_parameter) { mixed_precision(0); }
Test(memcat, mixed_precision_with_frozen_fp32_weights) { mixed_precision(1); }

/* test_steps.c — steps and phases (analyzer/analyses/steps.h) found from NVTX ranges, on traces
 * built in memory; the optimizer-anchored and period methods are in test_steps_seq.c.
 *
 * Each test writes KERNEL, LAUNCH, MEMCPY, GPU_KERNEL and RANGE records with known times
 * through the trace builder of steps_tb.h, so the expected steps, bounds and phases follow
 * from the sequence the test wrote (docs/steps.md), not from the code. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analyses/steps.h"
#include "steps_tb.h"
#include "model/trace.h"

/* ------------------------------------------------------------------ NVTX */

Test(steps, nvtx_steps_with_nested_phases)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k_matmul"); /* no hint: phases come from the ranges only */
    tb_launch(&b, k);                       /* before the loop: in no step */
    uint64_t push[3], pop[3];
    size_t first[3];
    for (int i = 0; i < 3; i++) {
        push[i] = tb_push(&b, "train_step");
        first[i] = tb_memcpy(&b, 64); /* outside every phase range */
        tb_push(&b, "## forward ##");
        tb_launch(&b, k);
        tb_launch(&b, k);
        tb_pop(&b);
        tb_push(&b, "loss.backward");
        tb_launch(&b, k);
        tb_push(&b, "inner"); /* nested, not a phase: still backward */
        tb_launch(&b, k);
        tb_pop(&b);
        tb_pop(&b);
        tb_push(&b, "Optimizer.step#AdamW.step");
        tb_launch(&b, k);
        tb_pop(&b);
        if (i == 1) /* another thread, inside the step but outside its phase ranges */
            tb_launch_on(&b, TID + 1, k, 0);
        pop[i] = tb_pop(&b);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_expect_str_eq(s.name, "train_step");
    cr_assert_eq(s.n_steps, 3);
    cr_expect_eq(s.phases, ANA_PHASES_NVTX);
    cr_expect_eq(ana_steps_step(&s, 0), -1);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(s.steps[i].start_ns, push[i]);
        cr_expect_eq(s.steps[i].end_ns, pop[i]);
        cr_expect_eq(s.steps[i].calls, i == 1 ? 7 : 6);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NVTX);
        static const int want[] = { U, F, F, B, B, O };
        expect_phases(&s, first[i], want, 6);
        for (size_t c = first[i]; c < first[i] + 6; c++)
            cr_expect_eq(ana_steps_step(&s, c), i);
    }
    cr_expect_eq(ana_steps_step(&s, first[1] + 6), 1, "the other thread's launch, in the step's time");
    cr_expect_eq(ana_steps_phase(&s, first[1] + 6), U, "outside every phase range");
    cr_expect_eq(s.median_ns, pop[0] - push[0]); /* all three last equally long but step 1 */
    cr_expect_lt(pop[0] - push[0], pop[1] - push[1]);
    tb_free(&b, &s);
}

Test(steps, profiler_step_numbers_group_as_one_name)
{
    tb b;
    ana_steps s;
    char name[32];
    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k");
    uint64_t d[4];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "ProfilerStep#%d", 5 + i * 3); /* 5, 8, 11, 14 */
        uint64_t t0 = tb_push(&b, name);
        for (int j = 0; j <= i; j++) /* 1, 2, 3, 4 launches */
            tb_launch(&b, k);
        d[i] = tb_pop(&b) - t0;
    }
    tb_push(&b, "ProfilerStep#99"); /* never popped: no step */
    tb_launch(&b, k);
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_expect_str_eq(s.name, "ProfilerStep#");
    cr_assert_eq(s.n_steps, 4);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(s.steps[i].calls, (uint64_t)i + 1);
    cr_expect_eq(ana_steps_step(&s, 10), -1);
    cr_expect_eq(s.median_ns, d[1]); /* lower middle of four increasing durations */
    tb_free(&b, &s);
}

Test(steps, unnamed_outer_range_holding_most_launches)
{
    tb b;
    ana_steps s;
    static const char *const phases[] = { "forward", "AddmmBackward0", "Optimizer.step#SGD.step",
                                          "autograd::engine::evaluate_function: ReluBackward0" };
    for (int p = 0; p < 4; p++) { /* phases, not steps, though they repeat and hold most */
        tb_init(&b);
        uint64_t k = tb_kernel(&b, "k");
        for (int i = 0; i < 3; i++) {
            tb_push(&b, phases[p]);
            tb_launch(&b, k);
            tb_launch(&b, k);
            tb_launch(&b, k);
            tb_pop(&b);
        }
        tb_find(&b, &s);
        cr_expect_neq(s.method, ANA_STEPS_NVTX, "%s: a phase range is no step", phases[p]);
        tb_free(&b, &s);
    }

    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k");
    tb_launch(&b, k);
    for (int i = 0; i < 3; i++) {
        tb_push(&b, "loop body");
        tb_launch(&b, k);
        tb_launch(&b, k);
        tb_pop(&b);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_expect_str_eq(s.name, "loop body");
    cr_expect_eq(s.n_steps, 3);
    tb_free(&b, &s);
}

/* PyTorch's shape: the step (and its phase ranges, in mode 2) pushed on the main thread
 * A, the backward kernels launched by the autograd engine's thread B inside its own range
 * (mode 0: a range of no phase; 1 and 2: evaluate_function, backward). first[i]: the step's
 * first call; its calls are fwd fwd (A) bwd bwd (B) sgd (A). */
static void autograd_steps(tb *b, int mode, uint64_t *push, uint64_t *pop, size_t *first)
{
    const uint64_t A = TID, B = TID + 1;
    uint64_t fwd = tb_kernel(b, "_Z11mlp_forwardv"), bwd = tb_kernel(b, "_Z12mlp_backwardv"),
             sgd = tb_kernel(b, "_Z10sgd_updatev");
    char name[32];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "ProfilerStep#%d", i);
        push[i] = tb_push_on(b, A, name);
        if (mode == 2)
            tb_push_on(b, A, "## forward ##");
        first[i] = tb_launch_on(b, A, fwd, 0);
        tb_launch_on(b, A, fwd, 0);
        if (mode == 2) {
            tb_pop_on(b, A);
            tb_push_on(b, A, "loss.backward");
        }
        tb_push_on(b, B, mode ? "autograd::engine::evaluate_function: MmBackward0" : "engine");
        tb_launch_on(b, B, bwd, 0);
        tb_launch_on(b, B, bwd, 0);
        tb_pop_on(b, B);
        if (mode == 2) {
            tb_pop_on(b, A);
            tb_push_on(b, A, "Optimizer.step#SGD.step");
        }
        tb_launch_on(b, A, sgd, 0);
        if (mode == 2)
            tb_pop_on(b, A);
        pop[i] = tb_pop_on(b, A);
    }
}

Test(steps, step_ranges_hold_other_threads_launches)
{
    /* mode 1: forward before the autograd range; the update in no range is undecided */
    static const int want[3][5] = { { F, F, B, B, O }, { F, F, B, B, U }, { F, F, B, B, O } };
    for (int mode = 0; mode < 3; mode++) {
        tb b;
        ana_steps s;
        uint64_t push[3], pop[3];
        size_t first[3];
        tb_init(&b);
        autograd_steps(&b, mode, push, pop, first);
        tb_find(&b, &s);
        cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
        cr_expect_str_eq(s.name, "ProfilerStep#");
        cr_assert_eq(s.n_steps, 3);
        int by = mode ? ANA_PHASES_NVTX : ANA_PHASES_NAMES;
        cr_expect_eq(s.phases, by);
        for (int i = 0; i < 3; i++) {
            cr_expect_eq(s.steps[i].start_ns, push[i]);
            cr_expect_eq(s.steps[i].end_ns, pop[i]);
            cr_expect_eq(s.steps[i].calls, 5, "step %d holds thread B's two launches", i);
            cr_expect_eq(s.steps[i].phases, by);
            for (size_t c = first[i]; c < first[i] + 5; c++)
                cr_expect_eq(ana_steps_step(&s, c), i, "call %zu (mode %d)", c, mode);
            cr_expect_eq(ana_trace_wide(b.t, ana_trace_call_site_at(b.t, first[i] + 2)->tid_w),
                         TID + 1);
            expect_phases(&s, first[i], want[mode], 5);
        }
        tb_free(&b, &s);
    }
}

Test(steps, overlapping_step_ranges_of_two_threads)
{
    /* A's "step" ranges hold 3, 3 and 2 calls, B's (inside A's first two) 1 each: the steps
     * are A's, B's ranges are none, and B's launches belong to A's steps. */
    tb b;
    ana_steps s;
    const uint64_t A = TID, B = TID + 1;
    uint64_t push[3], pop[3];
    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k");
    for (int i = 0; i < 3; i++) {
        push[i] = tb_push_on(&b, A, "step");
        tb_launch_on(&b, A, k, 0);
        if (i < 2) {
            tb_push_on(&b, B, "step");
            tb_launch_on(&b, B, k, 0);
            tb_pop_on(&b, B);
        }
        tb_launch_on(&b, A, k, 0);
        pop[i] = tb_pop_on(&b, A);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_assert_eq(s.n_steps, 3);
    static const uint64_t calls[] = { 3, 3, 2 };
    static const int32_t step_of[] = { 0, 0, 0, 1, 1, 1, 2, 2 };
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(s.steps[i].start_ns, push[i]);
        cr_expect_eq(s.steps[i].end_ns, pop[i]);
        cr_expect_eq(s.steps[i].calls, calls[i]);
    }
    for (size_t c = 0; c < 8; c++)
        cr_expect_eq(ana_steps_step(&s, c), step_of[c], "call %zu", c);
    cr_expect_eq(ana_trace_wide(b.t, ana_trace_call_site_at(b.t, 1)->tid_w), B);
    /* durations: 6 records after the push (600 ns) for steps 0 and 1, 3 for step 2 */
    cr_expect_eq(pop[0] - push[0], 600);
    cr_expect_eq(pop[2] - push[2], 300);
    cr_expect_eq(s.median_ns, 600);
    tb_free(&b, &s);
}

/* Start/end "step" ranges that overlap: range r opens before block r of calls and closes
 * after block r + w (or the last). A call belongs to the earliest range holding it, and its
 * phase is the forward or backward range around it. With w = 3 each step's calls are
 * gathered from its window; with every range open to the end the windows hold the calls
 * ~10 times over, and the steps' calls are sorted out all at once instead: the same
 * answers, computed here from what was written. */
Test(steps, overlapping_start_end_ranges)
{
    enum { R = 20, K = 25 };
    static const size_t widths[] = { 3, R };
    for (size_t v = 0; v < 2; v++) {
        size_t w = widths[v];
        tb b;
        ana_steps s;
        size_t first[R];
        tb_init(&b);
        uint64_t k = tb_kernel(&b, "k_gemm");
        for (size_t r = 0; r < R; r++) {
            tb_range_on(&b, TID, ANA_RANGE_START, "step", r + 1);
            tb_push(&b, "forward");
            for (size_t j = 0; j < K; j++) {
                if (j == K / 2) {
                    tb_pop(&b);
                    tb_push(&b, "backward");
                }
                size_t c = tb_launch(&b, k);
                if (j == 0)
                    first[r] = c;
            }
            tb_pop(&b);
            for (size_t q = 0; q <= r; q++) /* ranges whose last block this was */
                if (q + w == r || (r == R - 1 && q + w > r))
                    tb_range_on(&b, TID, ANA_RANGE_END, "", q + 1);
        }
        tb_find(&b, &s);
        cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
        cr_assert_eq(s.n_steps, R, "width %zu", w);
        uint64_t calls[R] = { 0 };
        for (size_t blk = 0; blk < R; blk++) {
            size_t owner = blk > w ? blk - w : 0; /* the earliest range holding the block */
            calls[owner] += K;
            for (size_t j = 0; j < K; j++) {
                cr_expect_eq(ana_steps_step(&s, first[blk] + j), (int32_t)owner, "width %zu call %zu",
                             w, first[blk] + j);
                cr_expect_eq(ana_steps_phase(&s, first[blk] + j), j < K / 2 ? F : B);
            }
        }
        for (size_t r = 0; r < R; r++)
            cr_expect_eq(s.steps[r].calls, calls[r], "width %zu step %zu", w, r);
        tb_free(&b, &s);
    }
}

/* One profiled step around a decode loop (v 0): the named range is the one step, not
 * the loop's iterations. The same loop in an unnamed range (1) or after a named range
 * holding no call (2) is cut by its period; a repeated named range inside a single one (3)
 * gives the steps. */
Test(steps, single_named_range_is_a_step)
{
    static const char *const names[] = { "ProfilerStep#6", "generate", "ProfilerStep#6", "iteration" };
    for (int v = 0; v < 4; v++) {
        tb b;
        ana_steps s;
        tb_init(&b);
        uint64_t emb = tb_kernel(&b, "embed"), gemm = tb_kernel(&b, "gemm"),
                 smp = tb_kernel(&b, "sample");
        tb_memcpy(&b, 4096); /* before the range: in no step */
        if (v == 2) {
            tb_push(&b, names[v]);
            tb_pop(&b);
        }
        uint64_t t0 = v != 2 ? tb_push(&b, names[v]) : 0;
        tb_launch(&b, emb);
        for (int i = 0; i < 4; i++) {
            if (v == 3)
                tb_push(&b, "step");
            tb_launch(&b, gemm);
            tb_launch(&b, gemm);
            tb_launch(&b, smp);
            if (v == 3)
                tb_pop(&b);
        }
        uint64_t t1 = v != 2 ? tb_pop(&b) : 0;
        tb_find(&b, &s);
        if (v == 0) {
            cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
            cr_expect_str_eq(s.name, "ProfilerStep#");
            cr_assert_eq(s.n_steps, 1);
            cr_expect_eq(s.steps[0].start_ns, t0);
            cr_expect_eq(s.steps[0].end_ns, t1);
            cr_expect_eq(s.steps[0].calls, 13);
            cr_expect_eq(ana_steps_step(&s, 0), -1);
            cr_expect_eq(s.median_ns, t1 - t0);
            cr_expect_neq(strstr(s.why, "1 of 1 steps"), NULL, "%s", s.why); /* no phases */
        } else if (v == 3) {
            cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
            cr_expect_str_eq(s.name, "step");
            cr_expect_eq(s.n_steps, 4);
        } else {
            cr_expect_eq(s.method, ANA_STEPS_PERIOD, "v %d: %s", v, s.why);
            cr_expect_eq(s.n_steps, 4, "v %d", v);
        }
        tb_free(&b, &s);
    }
}

/* A PyTorch step placed by its autograd and optimizer ranges alone: what it launches
 * before autograd starts (the batch's copy, the forward, the loss) is forward, zero_grad
 * stays optimizer, a launch between autograd ranges is undecided. Step 2 has a forward
 * range: its calls in no phase range stay undecided. */
Test(steps, forward_before_backward_ranges)
{
    static const int want[2][10] = { { F, O, F, F, F, B, U, B, O, U },
                                     { U, O, F, F, U, B, U, B, O, U } };
    const uint64_t A = TID, B = TID + 1;
    tb b;
    ana_steps s;
    char name[32];
    size_t first[3];
    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k_gemm"); /* no hint */
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "ProfilerStep#%d", i);
        tb_push_on(&b, A, name);
        first[i] = tb_memcpy(&b, 4096);
        tb_push_on(&b, A, "Optimizer.zero_grad#SGD.zero_grad");
        tb_launch_on(&b, A, k, 0);
        tb_pop_on(&b, A);
        if (i == 2)
            tb_push_on(&b, A, "## forward ##");
        tb_launch_on(&b, A, k, 0);
        tb_launch_on(&b, A, k, 0);
        if (i == 2)
            tb_pop_on(&b, A);
        tb_launch_on(&b, A, k, 0);         /* the loss */
        tb_push_on(&b, B, "ReluBackward1"); /* an autograd node, 2021 style */
        tb_launch_on(&b, B, k, 0);
        tb_pop_on(&b, B);
        tb_launch_on(&b, B, k, 0); /* between autograd ranges */
        tb_push_on(&b, B, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
        tb_launch_on(&b, B, k, 0);
        tb_pop_on(&b, B);
        tb_push_on(&b, A, "Optimizer.step#SGD.step");
        tb_launch_on(&b, A, k, 0);
        tb_pop_on(&b, A);
        tb_memcpy(&b, 4); /* the loss read back */
        tb_pop_on(&b, A);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_assert_eq(s.n_steps, 3);
    cr_expect_eq(s.phases, ANA_PHASES_NVTX);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(s.steps[i].calls, 10);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NVTX);
        expect_phases(&s, first[i], want[i == 2], 10);
    }
    tb_free(&b, &s);
}

/* ------------------------------------------------------------------ any method */

Test(steps, empty_trace)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    tb_find(&b, &s);
    cr_expect_eq(s.method, ANA_STEPS_NONE);
    cr_expect_eq(s.n_steps, 0);
    cr_expect_neq(s.why[0], 0);
    tb_free(&b, &s);
}

Test(steps, names)
{
    cr_expect_str_eq(ana_steps_method_name(ANA_STEPS_PERIOD), "period");
    cr_expect_str_eq(ana_phase_name(ANA_PHASE_UNDECIDED), "undecided");
    cr_expect_str_eq(ana_phases_method_name(ANA_PHASES_NAMES), "kernel names");
}

/* test_steps.c — steps and phases (analyzer/steps.h) on traces built in memory.
 *
 * Each test writes KERNEL, LAUNCH, MEMCPY, GPU_KERNEL and RANGE records with known times
 * through ana_trace_new/ana_trace_add/ana_trace_finish, so the expected steps, bounds and
 * phases follow from the sequence the test wrote (docs/steps.md), not from the code. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "steps.h"
#include "trace.h"

#define TID 7
#define MAX_CALLS 512

/* A trace under construction: the clock advances 100 ns per record; every call keeps
 * its time so tests can name calls by the order they were written. */
typedef struct tb {
    ana_trace *t;
    uint64_t now, corr, next_kernel;
    uint64_t call_time[MAX_CALLS];
    size_t n_calls;
} tb;

static void tb_init(tb *b)
{
    memset(b, 0, sizeof(*b));
    b->t = ana_trace_new("mem.anat", ANA_LOAD_ALL);
    b->now = 1000000;
    b->next_kernel = 1;
}

static uint64_t tb_kernel(tb *b, const char *name)
{
    ana_record r = { .kind = ANA_K_KERNEL, .tid = TID, .time_ns = b->now };
    r.u.kernel = (ana_rec_kernel){ .id = b->next_kernel, .host_fn = 0x1000 + b->next_kernel,
                                   .name = { name, (uint32_t)strlen(name) } };
    ana_trace_add(b->t, &r);
    return b->next_kernel++;
}

/* A launch of kernel id on thread tid; kernel 0 with gpu_kernel: a library launch named
 * by its GPU_KERNEL record (as cuLaunchKernel's are). Returns the call's number. */
static size_t tb_launch_on(tb *b, uint64_t tid, uint64_t kernel, uint64_t gpu_kernel)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = tid, .time_ns = b->now };
    r.u.launch = (ana_rec_launch){ .api = 20, .kernel = kernel, .grid_x = 1, .grid_y = 1,
                                   .grid_z = 1, .block_x = 32, .block_y = 1, .block_z = 1,
                                   .corr = ++b->corr };
    ana_trace_add(b->t, &r);
    if (gpu_kernel) {
        ana_record g = { .kind = ANA_K_GPU_KERNEL, .tid = tid, .time_ns = b->now + 10 };
        g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = b->corr, .dur_ns = 20, .kernel = gpu_kernel };
        ana_trace_add(b->t, &g);
    }
    b->call_time[b->n_calls] = b->now;
    return b->n_calls++;
}

static size_t tb_launch(tb *b, uint64_t kernel) { return tb_launch_on(b, TID, kernel, 0); }

static size_t tb_memcpy(tb *b, uint64_t bytes)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_MEMCPY, .tid = TID, .time_ns = b->now };
    r.u.memcpy = (ana_rec_memcpy){ .api = 31, .bytes = bytes, .dir = 1, .corr = ++b->corr };
    ana_trace_add(b->t, &r);
    b->call_time[b->n_calls] = b->now;
    return b->n_calls++;
}

/* A RANGE record on thread tid; returns its time. */
static uint64_t tb_range_on(tb *b, uint64_t tid, uint64_t op, const char *name, uint64_t id)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_RANGE, .tid = tid, .time_ns = b->now };
    r.u.range = (ana_rec_range){ .op = op, .id = id, .name = { name, (uint32_t)strlen(name) } };
    ana_trace_add(b->t, &r);
    return b->now;
}

static uint64_t tb_push_on(tb *b, uint64_t tid, const char *name)
{
    return tb_range_on(b, tid, ANA_RANGE_PUSH, name, 0);
}

static uint64_t tb_pop_on(tb *b, uint64_t tid) { return tb_range_on(b, tid, ANA_RANGE_POP, "", 0); }
static uint64_t tb_push(tb *b, const char *name) { return tb_push_on(b, TID, name); }
static uint64_t tb_pop(tb *b) { return tb_pop_on(b, TID); }

/* Finishes the trace and finds its steps; the calls must be in the model in the order
 * they were written (increasing times, whatever their thread). */
static void tb_find(tb *b, ana_steps *s)
{
    ana_trace_finish(b->t);
    cr_assert_eq(b->t->n_calls, b->n_calls);
    for (size_t i = 0; i < b->n_calls; i++)
        cr_assert_eq(b->t->calls[i].time_ns, b->call_time[i]);
    ana_steps_find(b->t, s);
}

static void tb_free(tb *b, ana_steps *s)
{
    ana_steps_free(s);
    ana_trace_free(b->t);
}

static void expect_phases(const ana_steps *s, size_t from, const int *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(s->call_phase[from + i], want[i], "call %zu: phase %s, want %s", from + i,
                     ana_phase_name(s->call_phase[from + i]), ana_phase_name(want[i]));
}

enum { F = ANA_PHASE_FORWARD, B = ANA_PHASE_BACKWARD, O = ANA_PHASE_OPTIMIZER, U = ANA_PHASE_UNDECIDED };

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
    cr_expect_eq(s.call_step[0], -1);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(s.steps[i].start_ns, push[i]);
        cr_expect_eq(s.steps[i].end_ns, pop[i]);
        cr_expect_eq(s.steps[i].calls, i == 1 ? 7 : 6);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NVTX);
        static const int want[] = { U, F, F, B, B, O };
        expect_phases(&s, first[i], want, 6);
        for (size_t c = first[i]; c < first[i] + 6; c++)
            cr_expect_eq(s.call_step[c], i);
    }
    cr_expect_eq(s.call_step[first[1] + 6], 1, "the other thread's launch, in the step's time");
    cr_expect_eq(s.call_phase[first[1] + 6], U, "outside every phase range");
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
    cr_expect_eq(s.call_step[10], -1);
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
                cr_expect_eq(s.call_step[c], i, "call %zu (mode %d)", c, mode);
            cr_expect_eq(b.t->calls[first[i] + 2].tid, TID + 1);
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
        cr_expect_eq(s.call_step[c], step_of[c], "call %zu", c);
    cr_expect_eq(b.t->calls[1].tid, B);
    /* durations: 6 records after the push (600 ns) for steps 0 and 1, 3 for step 2 */
    cr_expect_eq(pop[0] - push[0], 600);
    cr_expect_eq(pop[2] - push[2], 300);
    cr_expect_eq(s.median_ns, 600);
    tb_free(&b, &s);
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
            cr_expect_eq(s.call_step[0], -1);
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

/* ------------------------------------------------------------------ optimizer */

/* Kernels of a mixed-precision trainer; adamw launched as a library kernel (LAUNCH kernel
 * 0, named by its GPU_KERNEL). */
typedef struct gpt_kernels {
    uint64_t init, emb, ln_fwd, gemm, xent, ln_bwd, emb_bwd, adamw, cast;
} gpt_kernels;

static gpt_kernels gpt_define(tb *b)
{
    return (gpt_kernels){ tb_kernel(b, "_Z11init_paramsPfm"),
                          tb_kernel(b, "_Z15encoder_forwardPfPKi"),
                          tb_kernel(b, "_Z17layernorm_forwardPfPKf"),
                          tb_kernel(b, "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8"),
                          tb_kernel(b, "_Z12crossentropyPfPKf"),
                          tb_kernel(b, "_Z23layernorm_backward_dataPfPKf"),
                          tb_kernel(b, "_Z20encoder_backward_wtePfPKf"),
                          tb_kernel(b, "_Z5adamwIfEvPfPKfS0_S0_m"),
                          tb_kernel(b, "_Z11cast_paramsIfEvPfPKfm") };
}

/* One step: returns the number of its first call; the phases kernel names give. extra:
 * 1 a kernel inside the forward part, 2 a copy before the first hinted launch. */
static size_t gpt_step(tb *b, const gpt_kernels *k, int extra)
{
    size_t first = tb_memcpy(b, 4096);      /* the batch: F (forward region) */
    if (extra & 2)
        tb_memcpy(b, 8);                     /* F: warm-up before the first hinted launch */
    tb_launch(b, k->emb);                    /* F */
    tb_launch(b, k->ln_fwd);                 /* F */
    tb_launch(b, k->gemm);                   /* F: between forward-hinted launches */
    if (extra & 1)
        tb_launch(b, k->init);               /* F: warm-up work inside the first step */
    tb_launch(b, k->ln_fwd);                 /* F: the last forward-hinted */
    tb_launch(b, k->gemm);                   /* U */
    tb_launch(b, k->xent);                   /* U */
    tb_launch(b, k->ln_bwd);                 /* B: the first backward-hinted */
    tb_launch(b, k->gemm);                   /* B */
    tb_launch(b, k->emb_bwd);                /* B */
    for (int i = 0; i < 3; i++)
        tb_launch_on(b, TID, 0, k->adamw);   /* O */
    tb_launch(b, k->cast);                   /* O: follows every run */
    tb_memcpy(b, 4);                         /* U: the loss, follows every run */
    return first;
}

static const int GPT_PHASES[] = { F, F, F, F, F, U, U, B, B, B, O, O, O, O, U };
#define GPT_CALLS 15

Test(steps, optimizer_anchored_steps)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    gpt_kernels k = gpt_define(&b);
    size_t pro = tb_memcpy(&b, 1 << 20); /* weights */
    tb_launch(&b, k.cast);               /* the first cast, before any update */
    size_t first[4];
    for (int i = 0; i < 4; i++)
        first[i] = gpt_step(&b, &k, 0);
    size_t eval = tb_memcpy(&b, 4096); /* an evaluation forward after training */
    tb_launch(&b, k.emb);
    tb_launch(&b, k.ln_fwd);
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_OPTIMIZER, "%s", s.why);
    cr_expect_str_eq(s.name, "");
    cr_assert_eq(s.n_steps, 4);
    cr_expect_eq(s.call_step[pro], -1);
    cr_expect_eq(s.call_step[pro + 1], -1);
    for (size_t c = eval; c < eval + 3; c++)
        cr_expect_eq(s.call_step[c], -1, "call %zu after the last step", c);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(s.steps[i].calls, GPT_CALLS);
        cr_expect_eq(s.steps[i].start_ns, b.call_time[first[i]]);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NAMES);
        for (size_t c = first[i]; c < first[i] + GPT_CALLS; c++)
            cr_expect_eq(s.call_step[c], i, "call %zu", c);
        expect_phases(&s, first[i], GPT_PHASES, GPT_CALLS);
    }
    for (int i = 0; i < 3; i++)
        cr_expect_eq(s.steps[i].end_ns, b.call_time[first[i + 1]]);
    /* the last step ends with its last call (a copy without GPU record) */
    cr_expect_eq(s.steps[3].end_ns, b.call_time[first[3] + GPT_CALLS - 1]);
    cr_expect_eq(s.median_ns, b.call_time[first[1]] - b.call_time[first[0]]);
    cr_expect_eq(s.phases, ANA_PHASES_NAMES);
    cr_expect_str_eq(s.why, "");
    tb_free(&b, &s);
}

Test(steps, optimizer_steps_with_a_longer_first_step)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    gpt_kernels k = gpt_define(&b);
    tb_memcpy(&b, 1 << 20);
    size_t first[3];
    for (int i = 0; i < 3; i++)
        first[i] = gpt_step(&b, &k, i == 0 ? 3 : 0);
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_OPTIMIZER, "%s", s.why);
    cr_assert_eq(s.n_steps, 3);
    cr_expect_eq(s.steps[0].calls, GPT_CALLS + 2);
    cr_expect_eq(s.steps[0].start_ns, b.call_time[first[0]]);
    cr_expect_eq(s.steps[0].end_ns, b.call_time[first[1]]);
    cr_expect_eq(s.steps[1].calls, GPT_CALLS);
    cr_expect_eq(s.steps[1].start_ns, b.call_time[first[1]]);
    cr_expect_eq(s.call_step[0], -1);
    cr_expect_eq(s.call_phase[first[0] + 1], F, "the warm-up copy lies in the forward region");
    cr_expect_eq(s.call_phase[first[0] + 5], F, "the warm-up kernel lies in the forward region");
    tb_free(&b, &s);
}

Test(steps, undecided_window_and_no_backward)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    uint64_t fwd = tb_kernel(&b, "_Z11mlp_forwardv"), x = tb_kernel(&b, "_Z4losev"),
             bwd = tb_kernel(&b, "_Z12mlp_backwardv"), sgd = tb_kernel(&b, "_Z10sgd_updatev");
    size_t first[3];
    for (int i = 0; i < 3; i++) {
        first[i] = tb_launch(&b, fwd);
        tb_launch(&b, x);
        tb_launch(&b, x);
        if (i != 1) /* step 1 has no backward-hinted launch */
            tb_launch(&b, bwd);
        tb_launch(&b, sgd);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_OPTIMIZER, "%s", s.why);
    cr_assert_eq(s.n_steps, 3);
    static const int want[] = { F, U, U, B, O };
    expect_phases(&s, first[0], want, 5);
    expect_phases(&s, first[2], want, 5);
    static const int none[] = { U, U, U, U };
    expect_phases(&s, first[1], none, 4);
    cr_expect_eq(s.steps[1].phases, ANA_PHASES_NONE);
    cr_expect_eq(s.steps[0].phases, ANA_PHASES_NAMES);
    cr_expect_eq(s.phases, ANA_PHASES_NAMES);
    cr_expect_neq(strstr(s.why, "1 of 3 steps"), NULL, "%s", s.why);
    tb_free(&b, &s);
}

/* ------------------------------------------------------------------ period */

/* Kernels a..e with no hint; step = a b c b d (5 calls), b twice per step. */
static size_t plain_step(tb *b, const uint64_t *k, int extra)
{
    size_t first = tb_launch(b, k[0]);
    tb_launch(b, k[1]);
    if (extra) { /* warm-up: a handle and a workspace made during the first step */
        tb_launch(b, k[5]);
        tb_memcpy(b, 256);
        tb_launch(b, k[5]);
    }
    tb_launch(b, k[2]);
    tb_launch(b, k[1]);
    tb_launch(b, k[3]);
    return first;
}

static void plain_kernels(tb *b, uint64_t *k)
{
    static const char *const names[] = { "embed", "gemm", "softmax", "relu", "scale_copy", "setup" };
    for (int i = 0; i < 6; i++)
        k[i] = tb_kernel(b, names[i]);
}

Test(steps, periodic_sequence_without_optimizer_kernels)
{
    tb b;
    ana_steps s;
    uint64_t k[6];
    tb_init(&b);
    plain_kernels(&b, k);
    tb_launch(&b, k[4]); /* prologue */
    tb_memcpy(&b, 1 << 20);
    size_t first[5];
    for (int i = 0; i < 5; i++)
        first[i] = plain_step(&b, k, 0);
    size_t partial = tb_launch(&b, k[0]); /* the job stopped inside a step */
    tb_launch(&b, k[1]);
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_PERIOD, "%s", s.why);
    cr_assert_eq(s.n_steps, 5);
    cr_expect_eq(s.call_step[0], -1);
    cr_expect_eq(s.call_step[1], -1);
    cr_expect_eq(s.call_step[partial], -1);
    cr_expect_eq(s.call_step[partial + 1], -1);
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(s.steps[i].calls, 5);
        cr_expect_eq(s.steps[i].start_ns, b.call_time[first[i]]);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NONE);
        for (size_t c = first[i]; c < first[i] + 5; c++)
            cr_expect_eq(s.call_phase[c], U);
    }
    for (int i = 0; i < 4; i++)
        cr_expect_eq(s.steps[i].end_ns, b.call_time[first[i + 1]]);
    cr_expect_eq(s.steps[4].end_ns, b.call_time[first[4] + 4]);
    cr_expect_eq(s.median_ns, 500);
    cr_expect_eq(s.phases, ANA_PHASES_NONE);
    cr_expect_neq(strstr(s.why, "5 of 5 steps"), NULL, "%s", s.why);
    tb_free(&b, &s);
}

Test(steps, periodic_first_step_with_extra_launches)
{
    tb b;
    ana_steps s;
    uint64_t k[6];
    tb_init(&b);
    plain_kernels(&b, k);
    tb_memcpy(&b, 1 << 20);
    size_t first[4];
    for (int i = 0; i < 4; i++)
        first[i] = plain_step(&b, k, i == 0);
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_PERIOD, "%s", s.why);
    cr_assert_eq(s.n_steps, 4);
    cr_expect_eq(s.call_step[0], -1);
    cr_expect_eq(s.steps[0].calls, 8);
    cr_expect_eq(s.steps[0].start_ns, b.call_time[first[0]]);
    cr_expect_eq(s.steps[0].end_ns, b.call_time[first[1]]);
    for (int i = 1; i < 4; i++) {
        cr_expect_eq(s.steps[i].calls, 5);
        cr_expect_eq(s.steps[i].start_ns, b.call_time[first[i]]);
    }
    tb_free(&b, &s);
}

Test(steps, inference_without_repetition_has_no_steps)
{
    tb b;
    ana_steps s;
    char name[16];
    tb_init(&b);
    uint64_t k[12];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "layer%d_fwd", i);
        k[i] = tb_kernel(&b, name);
    }
    tb_memcpy(&b, 1 << 20);
    for (int i = 0; i < 12; i++) /* one pass through a model, one kernel each */
        tb_launch(&b, k[i]);
    tb_launch(&b, k[3]); /* a kernel seen twice is no repetition of the sequence */
    tb_memcpy(&b, 16);
    tb_find(&b, &s);
    cr_expect_eq(s.method, ANA_STEPS_NONE);
    cr_expect_eq(s.n_steps, 0);
    cr_expect_eq(s.median_ns, 0);
    cr_expect_neq(strstr(s.why, "no steps"), NULL, "%s", s.why);
    cr_expect_neq(strstr(s.why, "NVTX"), NULL, "%s", s.why);
    for (size_t i = 0; i < b.n_calls; i++) {
        cr_expect_eq(s.call_step[i], -1);
        cr_expect_eq(s.call_phase[i], U);
    }
    tb_free(&b, &s);
}

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

/* test_steps_seq.c — steps and phases (analyzer/analyses/steps.h) found from the launch sequence
 * alone, on traces built in memory: steps anchored on runs of optimizer kernels, steps cut
 * by the sequence's period, and a sequence with no steps. NVTX steps are in test_steps.c.
 *
 * Each test writes KERNEL, LAUNCH and MEMCPY records with known times through the trace
 * builder of steps_tb.h, so the expected steps, bounds and phases follow from the sequence
 * the test wrote (docs/steps.md), not from the code. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analyses/steps.h"
#include "steps_tb.h"
#include "model/trace.h"

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
    cr_expect_eq(ana_steps_step(&s, pro), -1);
    cr_expect_eq(ana_steps_step(&s, pro + 1), -1);
    for (size_t c = eval; c < eval + 3; c++)
        cr_expect_eq(ana_steps_step(&s, c), -1, "call %zu after the last step", c);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(s.steps[i].calls, GPT_CALLS);
        cr_expect_eq(s.steps[i].start_ns, b.call_time[first[i]]);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NAMES);
        for (size_t c = first[i]; c < first[i] + GPT_CALLS; c++)
            cr_expect_eq(ana_steps_step(&s, c), i, "call %zu", c);
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
    cr_expect_eq(ana_steps_step(&s, 0), -1);
    cr_expect_eq(ana_steps_phase(&s, first[0] + 1), F, "the warm-up copy lies in the forward region");
    cr_expect_eq(ana_steps_phase(&s, first[0] + 5), F, "the warm-up kernel lies in the forward region");
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
    cr_expect_eq(ana_steps_step(&s, 0), -1);
    cr_expect_eq(ana_steps_step(&s, 1), -1);
    cr_expect_eq(ana_steps_step(&s, partial), -1);
    cr_expect_eq(ana_steps_step(&s, partial + 1), -1);
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(s.steps[i].calls, 5);
        cr_expect_eq(s.steps[i].start_ns, b.call_time[first[i]]);
        cr_expect_eq(s.steps[i].phases, ANA_PHASES_NONE);
        for (size_t c = first[i]; c < first[i] + 5; c++)
            cr_expect_eq(ana_steps_phase(&s, c), U);
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
    cr_expect_eq(ana_steps_step(&s, 0), -1);
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
        cr_expect_eq(ana_steps_step(&s, i), -1);
        cr_expect_eq(ana_steps_phase(&s, i), U);
    }
    tb_free(&b, &s);
}

/* A graph launch (api 26) and the GPU kernels it ran (its correlation id, a graph id). */
static size_t graph_launch(tb *b, const uint64_t *kernels, size_t n)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = TID, .time_ns = b->now };
    r.u.launch = (ana_rec_launch){ .api = 26, .corr = ++b->corr };
    ana_trace_add(b->t, &r);
    for (size_t i = 0; i < n; i++) {
        ana_record g = { .kind = ANA_K_GPU_KERNEL, .tid = TID, .time_ns = b->now + 10 + 30 * i };
        g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = b->corr, .dur_ns = 20, .kernel = kernels[i], .graph = 1,
                                               .graph_node = i + 1 };
        ana_trace_add(b->t, &g);
    }
    b->call_time[b->n_calls] = b->now;
    return b->n_calls++;
}

/* A step replayed as a CUDA graph: an eager step, a capture (its launches recorded but not
 * run: no GPU kernel has their correlation ids) followed by the first replay, then more
 * replays, each between an upload and a download. Every replay ends with the optimizer
 * (its GPU kernels say so), so each is a step; the capture is part of the first one. */
Test(steps, a_step_replayed_as_a_cuda_graph)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    uint64_t fwd = tb_kernel(&b, "linear_forward_kernel"), bwd = tb_kernel(&b, "linear_backward_kernel"),
             opt = tb_kernel(&b, "sgd_momentum_kernel");
    const uint64_t step_kernels[] = { fwd, fwd, bwd, bwd, opt, opt };
    size_t first[6];
    first[0] = tb_memcpy(&b, 4096); /* eager step */
    for (size_t i = 0; i < 6; i++)
        tb_launch_on(&b, TID, step_kernels[i], step_kernels[i]);
    tb_memcpy(&b, 4);
    first[1] = tb_memcpy(&b, 4096); /* the capture, then the first replay */
    for (size_t i = 0; i < 6; i++)
        tb_launch(&b, step_kernels[i]);
    graph_launch(&b, step_kernels, 6);
    tb_memcpy(&b, 4);
    for (int k = 2; k < 6; k++) {
        first[k] = tb_memcpy(&b, 4096);
        graph_launch(&b, step_kernels, 6);
        tb_memcpy(&b, 4);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_OPTIMIZER, "%s", s.why);
    cr_assert_eq(s.n_steps, 6);
    /* the first step's upload is not told from what precedes it (nothing here) */
    cr_expect_leq(s.steps[0].start_ns, b.call_time[first[0] + 1]);
    for (int k = 1; k < 6; k++)
        cr_expect_eq(s.steps[k].start_ns, b.call_time[first[k]], "step %d", k);
    tb_free(&b, &s);
}

/* The last step ends when its calls' GPU work ends, if that is after its last call: the
 * latest end among its calls' GPU kernels; GPU work of an earlier step's call, however
 * late, leaves that step ending where the next begins. */
Test(steps, the_last_step_ends_with_its_gpu_work)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    gpt_kernels k = gpt_define(&b);
    size_t first[4];
    for (int i = 0; i < 4; i++)
        first[i] = gpt_step(&b, &k, 0);
    uint64_t last = b.call_time[first[3] + GPT_CALLS - 1];
    /* every call took one correlation id, in order: call n has n + 1 */
    struct { size_t call; uint64_t start, dur; } late[] = {
        { first[3] + 1, last + 5000, 700 },  /* ends last + 5700: the step's end */
        { first[3] + 2, last + 100, 300 },   /* ends earlier */
        { first[1] + 3, last + 90000, 10 },  /* an earlier step's call */
    };
    for (size_t i = 0; i < 3; i++) {
        ana_record g = { .kind = ANA_K_GPU_KERNEL, .tid = TID, .time_ns = late[i].start };
        g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = late[i].call + 1, .dur_ns = late[i].dur,
                                               .kernel = k.gemm };
        ana_trace_add(b.t, &g);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.n_steps, 4, "%s", s.why);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(ana_trace_wide(b.t, ana_trace_call(b.t, late[i].call).corr_w),
                     late[i].call + 1);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(s.steps[i].end_ns, b.call_time[first[i + 1]]);
    cr_expect_eq(s.steps[3].end_ns, last + 5700);
    tb_free(&b, &s);
}

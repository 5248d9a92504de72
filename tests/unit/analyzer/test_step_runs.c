/* test_step_runs.c — each call's step and phase kept as runs (analyzer/analyses/steps.h:
 * ana_steps_put, ana_steps_at, ana_steps_phases, ana_steps_copy), and a phase range that
 * spans two steps, whose calls the steps place one step at a time.
 *
 * The runs are checked against an array by call that the test fills itself; the phases
 * against what the ranges the test wrote say (docs/steps.md). And the time anatomy's
 * rows by step, packed (anatomy.h), against a copy of what the test put in them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/steps.h"
#include "steps_tb.h"

enum { N = 20000 };

static int32_t want_step[N];
static uint8_t want_phase[N];

/* A labelling of N calls in runs of 1..40 calls, steps -1..60, phases 0..3. */
static void label(unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < N;) {
        size_t len = 1 + (size_t)rand() % 40;
        int32_t st = rand() % 62 - 1;
        uint8_t ph = (uint8_t)(rand() % 4);
        for (size_t j = 0; j < len && i < N; j++, i++)
            want_step[i] = st, want_phase[i] = ph;
    }
}

static void expect_call(const ana_steps *s, size_t c, size_t *hint)
{
    int ph = -1;
    int32_t st = ana_steps_at(s, c, hint, &ph);
    cr_expect_eq(st, want_step[c], "call %zu: step %d, want %d", c, st, want_step[c]);
    cr_expect_eq(ph, want_phase[c], "call %zu: phase %d, want %d", c, ph, want_phase[c]);
}

Test(step_runs, read_back_in_order_at_random_and_by_window)
{
    label(7);
    ana_steps s;
    memset(&s, 0, sizeof(s));
    size_t changes = 1;
    for (size_t i = 0; i < N; i++) {
        if (i % 97 == 5) /* a run put and then replaced at the same call */
            ana_steps_put(&s, i, 99, ANA_PHASE_OPTIMIZER);
        ana_steps_put(&s, i, want_step[i], want_phase[i]);
        changes += i && (want_step[i] != want_step[i - 1] || want_phase[i] != want_phase[i - 1]);
    }
    cr_expect_eq(s.n_runs, changes, "one run per change: %zu, want %zu", s.n_runs, changes);
    size_t hint = 0;
    for (size_t c = 0; c < N; c++)
        expect_call(&s, c, &hint);
    hint = 0;
    for (size_t c = N; c-- > 0;) /* backwards: the hint is no help, and must do no harm */
        expect_call(&s, c, &hint);
    srand(11);
    for (int k = 0; k < 5000; k++) {
        size_t c = (size_t)rand() % N;
        expect_call(&s, c, k % 2 ? &hint : NULL);
        cr_expect_eq(ana_steps_step(&s, c), want_step[c]);
        cr_expect_eq(ana_steps_phase(&s, c), want_phase[c]);
    }
    uint8_t ph[300];
    for (int k = 0; k < 200; k++) {
        size_t b = (size_t)rand() % N, n = (size_t)rand() % 300;
        n = b + n > N ? N - b : n;
        ana_steps_phases(&s, b, n, ph);
        for (size_t j = 0; j < n; j++)
            cr_expect_eq(ph[j], want_phase[b + j], "window at %zu, call %zu", b, b + j);
    }
    free(s.runs);
}

Test(step_runs, copy_with_some_calls_changed)
{
    label(3);
    ana_steps src, dst;
    memset(&src, 0, sizeof(src));
    memset(&dst, 0, sizeof(dst));
    for (size_t i = 0; i < N; i++)
        ana_steps_put(&src, i, want_step[i], want_phase[i]);
    /* windows [a, a + len) changed, in order, as the memory anatomy changes steps */
    size_t done = 0;
    srand(5);
    while (done < N) {
        size_t a = done + (size_t)rand() % 500, len = (size_t)rand() % 60;
        if (a >= N)
            break;
        len = a + len > N ? N - a : len;
        ana_steps_copy(&dst, &src, done, a);
        for (size_t j = a; j < a + len; j++) {
            if (rand() % 3 == 0)
                want_phase[j] = (uint8_t)(rand() % 4);
            ana_steps_put(&dst, j, want_step[j], want_phase[j]);
        }
        done = a + len;
    }
    ana_steps_copy(&dst, &src, done, N);
    size_t hint = 0;
    for (size_t c = 0; c < N; c++)
        expect_call(&dst, c, &hint);
    for (size_t k = 1; k < dst.n_runs; k++) {
        cr_expect_lt(dst.runs[k - 1].first, dst.runs[k].first);
        cr_expect(dst.runs[k - 1].step != dst.runs[k].step ||
                      dst.runs[k - 1].phase != dst.runs[k].phase,
                  "runs %zu and %zu alike: not merged", k - 1, k);
    }
    free(src.runs);
    free(dst.runs);
}

Test(step_runs, none_for_no_calls)
{
    ana_steps s;
    memset(&s, 0, sizeof(s));
    int ph = -1;
    cr_expect_eq(ana_steps_at(&s, 0, NULL, &ph), -1);
    cr_expect_eq(ph, ANA_PHASE_UNDECIDED);
}

/* A start/end "forward" range opened in step 0 and closed in step 1: the one range places
 * calls of two steps. */
Test(step_runs, phase_range_across_two_steps)
{
    tb b;
    ana_steps s;
    tb_init(&b);
    uint64_t k = tb_kernel(&b, "k_matmul"); /* no hint: phases come from the ranges only */
    size_t first[3];
    for (int i = 0; i < 3; i++) {
        tb_push(&b, "step");
        first[i] = tb_launch(&b, k);
        tb_launch(&b, k);
        if (i == 0)
            tb_range_on(&b, TID + 1, ANA_RANGE_START, "forward", 1);
        if (i == 1)
            tb_range_on(&b, TID + 1, ANA_RANGE_END, "", 1);
        tb_launch(&b, k);
        tb_launch(&b, k);
        tb_pop(&b);
    }
    tb_find(&b, &s);
    cr_assert_eq(s.method, ANA_STEPS_NVTX, "%s", s.why);
    cr_assert_eq(s.n_steps, 3);
    /* step 0: its first two calls before the range (undecided), then forward; step 1:
     * forward until the range ends, then in no phase range with a forward one in the step
     * (undecided; without it, they would read as forward); step 2: no phase range */
    static const int w0[] = { U, U, F, F }, w1[] = { F, F, U, U }, w2[] = { U, U, U, U };
    expect_phases(&s, first[0], w0, 4);
    expect_phases(&s, first[1], w1, 4);
    expect_phases(&s, first[2], w2, 4);
    cr_expect_eq(s.steps[0].phases, ANA_PHASES_NVTX);
    cr_expect_eq(s.steps[1].phases, ANA_PHASES_NVTX);
    cr_expect_eq(s.steps[2].phases, ANA_PHASES_NONE);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(s.steps[i].first_call, first[i]);
        cr_expect_eq(s.steps[i].calls, 4);
        for (size_t c = first[i]; c < first[i] + 4; c++)
            cr_expect_eq(ana_steps_step(&s, c), i, "call %zu", c);
    }
    tb_free(&b, &s);
}

/* ------------------------------------------ the steps' rows, packed (anatomy.h) */

#include "analyses/anatomy.h"
#include "../random.h"

/* 150,000 rows (three blocks) of values of every varint length, with steps without GPU
 * work and GPU work that starts before its step: read back in order, then at random, the
 * same as a copy the test kept. */
Test(anatomy_rows, packed_rows_read_back_in_any_order)
{
    enum { ROWS = 150000 };
    ana_steps s = { 0 };
    s.n_steps = ROWS;
    s.steps = calloc(ROWS, sizeof(*s.steps));
    ana_anat_step *want = calloc(ROWS, sizeof(*want));
    cr_assert(s.steps && want);
    uint64_t seed = 0x12ab;
    ana_anat_rows r;
    ana_anat_rows_init(&r, ROWS);
    for (size_t i = 0; i < ROWS; i++) {
        s.steps[i].start_ns = 1000000 + i * 1000;
        ana_anat_step *x = ana_anat_rows_mut(&r, i);
        x->acts = ana_xorshift64(&seed) % 4 ? ana_random_value(&seed) | 1 : 0;
        if (x->acts) {
            x->gpu_first_ns = s.steps[i].start_ns + ana_random_value(&seed); /* wraps below */
            x->gpu_last_ns = x->gpu_first_ns + (ana_xorshift64(&seed) >> (ana_xorshift64(&seed) % 64));
        }
        x->busy_ns = ana_random_value(&seed);
        x->flops = ana_random_value(&seed);
        for (int c = 0; c < ANA_CLASS_COUNT; c++)
            x->class_ns[c] = ana_random_value(&seed);
        for (int p = 0; p < ANA_PHASE_COUNT; p++)
            x->phase_ns[p] = ana_random_value(&seed);
        want[i] = *x;
    }
    ana_anat_rows_pack(&r, &s);
    cr_assert_null(r.blk, "packed: the full rows are gone");
    cr_assert_lt(r.n_bytes, (size_t)ROWS * sizeof(ana_anat_step), "%zu bytes", r.n_bytes);
    ana_anat_rowcur c;
    ana_anat_rowcur_init(&c, &r, &s);
    for (size_t i = 0; i < ROWS; i++)
        cr_assert(memcmp(ana_anat_row(&c, i), &want[i], sizeof(*want)) == 0, "row %zu in order", i);
    for (int q = 0; q < 20000; q++) {
        size_t i = (size_t)(ana_xorshift64(&seed) % ROWS);
        cr_assert(memcmp(ana_anat_row(&c, i), &want[i], sizeof(*want)) == 0, "row %zu at random", i);
    }
    ana_anat_rows_free(&r);
    free(s.steps);
    free(want);
}

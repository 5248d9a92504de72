/* steps_tb.h — a trace builder for the unit tests of analyzer/analyses/steps.h (test_steps.c,
 * test_steps_seq.c), shared so both build their traces the same way.
 *
 * tb_* write KERNEL, LAUNCH, MEMCPY, GPU_KERNEL and RANGE records with known times through
 * ana_trace_new/ana_trace_add/ana_trace_finish: the clock advances 100 ns per record, each
 * call's time is kept in call_time[] by its number (the order it was written), so a test
 * can name calls and compute the expected steps, bounds and phases from what it wrote
 * (docs/steps.md), not from the code. tb_find checks the trace model holds the calls in
 * that order before it finds the steps; tb_free frees the steps and the trace.
 * expect_phases checks a run of calls' phases; F, B, O, U name the phases. Everything is
 * static inline: include it in test files only, after criterion.h is available. */
#ifndef ANA_TESTS_STEPS_TB_H
#define ANA_TESTS_STEPS_TB_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "analyses/steps.h"
#include "model/trace.h"

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

static inline void tb_init(tb *b)
{
    memset(b, 0, sizeof(*b));
    b->t = ana_trace_new("mem.anat", ANA_LOAD_ALL);
    b->now = 1000000;
    b->next_kernel = 1;
}

static inline uint64_t tb_kernel(tb *b, const char *name)
{
    ana_record r = { .kind = ANA_K_KERNEL, .tid = TID, .time_ns = b->now };
    r.u.kernel = (ana_rec_kernel){ .id = b->next_kernel, .host_fn = 0x1000 + b->next_kernel,
                                   .name = { name, (uint32_t)strlen(name) } };
    ana_trace_add(b->t, &r);
    return b->next_kernel++;
}

/* A launch of kernel id on thread tid; kernel 0 with gpu_kernel: a library launch named
 * by its GPU_KERNEL record (as cuLaunchKernel's are). Returns the call's number. */
static inline size_t tb_launch_on(tb *b, uint64_t tid, uint64_t kernel, uint64_t gpu_kernel)
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

static inline size_t tb_launch(tb *b, uint64_t kernel)
{
    return tb_launch_on(b, TID, kernel, 0);
}

static inline size_t tb_memcpy(tb *b, uint64_t bytes)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_MEMCPY, .tid = TID, .time_ns = b->now };
    r.u.memcpy = (ana_rec_memcpy){ .api = 31, .bytes = bytes, .dir = 1, .corr = ++b->corr };
    ana_trace_add(b->t, &r);
    b->call_time[b->n_calls] = b->now;
    return b->n_calls++;
}

/* A RANGE record on thread tid; returns its time. */
static inline uint64_t tb_range_on(tb *b, uint64_t tid, uint64_t op, const char *name, uint64_t id)
{
    b->now += 100;
    ana_record r = { .kind = ANA_K_RANGE, .tid = tid, .time_ns = b->now };
    r.u.range = (ana_rec_range){ .op = op, .id = id, .name = { name, (uint32_t)strlen(name) } };
    ana_trace_add(b->t, &r);
    return b->now;
}

static inline uint64_t tb_push_on(tb *b, uint64_t tid, const char *name)
{
    return tb_range_on(b, tid, ANA_RANGE_PUSH, name, 0);
}

static inline uint64_t tb_pop_on(tb *b, uint64_t tid)
{
    return tb_range_on(b, tid, ANA_RANGE_POP, "", 0);
}

static inline uint64_t tb_push(tb *b, const char *name) { return tb_push_on(b, TID, name); }
static inline uint64_t tb_pop(tb *b) { return tb_pop_on(b, TID); }

/* Finishes the trace and finds its steps; the calls must be in the model in the order
 * they were written (increasing times, whatever their thread). */
static inline void tb_find(tb *b, ana_steps *s)
{
    ana_trace_finish(b->t);
    cr_assert_eq(b->t->n_calls, b->n_calls);
    for (size_t i = 0; i < b->n_calls; i++)
        cr_assert_eq(ana_trace_call(b->t, i).time_ns, b->call_time[i]);
    ana_steps_find(b->t, s);
}

static inline void tb_free(tb *b, ana_steps *s)
{
    ana_steps_free(s);
    ana_trace_free(b->t);
}

static inline void expect_phases(const ana_steps *s, size_t from, const int *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(ana_steps_phase(s, from + i), want[i], "call %zu: phase %s, want %s", from + i,
                     ana_phase_name(ana_steps_phase(s, from + i)), ana_phase_name(want[i]));
}

enum { F = ANA_PHASE_FORWARD, B = ANA_PHASE_BACKWARD, O = ANA_PHASE_OPTIMIZER, U = ANA_PHASE_UNDECIDED };

#endif /* ANA_TESTS_STEPS_TB_H */

/* The time source (clock.c): readings against clock_gettime(CLOCK_MONOTONIC) read right
 * before and after them, on several threads, across the first line and its redraws. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "preload.h"

#define TOL_NS 2000    /* stated accuracy: a reading within 2 us of the bracketing clock reads */
#define RUN_NS 1500000000ull
#define THREADS 4

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct result {
    int index, refresh; /* refresh: thread 0 calls ana_clock_refresh as the collector does */
    uint64_t readings, outside, backwards;
    int64_t worst; /* ns outside [before, after], the largest seen */
};

static void *reader(void *arg)
{
    struct result *r = arg;
    uint64_t end = mono() + RUN_NS, prev = 0, seed = (uint64_t)r->index * 7919 + 1;
    while (mono() < end) {
        for (int i = 0; i < 2000; i++) {
            uint64_t before = mono(), x = ana_now_ns(), after = mono();
            int64_t off = x < before ? (int64_t)(before - x) : x > after ? (int64_t)(x - after) : 0;
            if (off > r->worst)
                r->worst = off;
            r->outside += off > TOL_NS;
            r->backwards += x < prev;
            prev = x;
            r->readings++;
            if (r->refresh && r->index == 0 && i % 100 == 0)
                ana_clock_refresh(); /* as the collector does at each pass */
        }
        /* Pauses of 0..3 ms: readings land early and late in the line's intervals. */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        struct timespec d = { 0, (long)((seed >> 33) % 3000000) };
        nanosleep(&d, NULL);
    }
    return NULL;
}

static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int yes = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "flags", 5) == 0) {
            yes = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    if (f)
        fclose(f);
    return yes;
#else
    return 0;
#endif
}

static void run_readers(struct result *res, int refresh)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        res[i] = (struct result){ .index = i, .refresh = refresh };
        cr_assert_eq(pthread_create(&th[i], NULL, reader, &res[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
}

static void expect_within(struct result *res)
{
    for (int i = 0; i < THREADS; i++) {
        cr_log_info("thread %d: %llu readings, worst %lld ns outside", i, (unsigned long long)res[i].readings,
                    (long long)res[i].worst);
        cr_expect_gt(res[i].readings, 1000);
        cr_expect_eq(res[i].outside, 0, "thread %d: %llu of %llu readings more than %d ns outside (worst %lld)",
                     i, (unsigned long long)res[i].outside, (unsigned long long)res[i].readings, TOL_NS,
                     (long long)res[i].worst);
        cr_expect_eq(res[i].backwards, 0, "thread %d: %llu readings before the one before", i,
                     (unsigned long long)res[i].backwards);
    }
}

Test(clock, readings_lie_between_the_clock_reads_around_them_and_never_go_back)
{
    ana_cfg.tsc = 1;
    ana_clock_refresh(); /* the constructor's call */
    struct result res[THREADS];
    run_readers(res, 1);
    expect_within(res);
    cr_expect_eq(ana_clock_uses_tsc(), cpu_has_invariant_tsc(),
                 "the TSC is used exactly where /proc/cpuinfo says it is invariant");
}

/* The thread that redraws an expired line is preempted for 300 us between reading its
 * pair and publishing (as on a loaded machine): the other threads' readings must still
 * follow the clock, not stand still at the old line's end, and never go back when the
 * new line appears. Nobody refreshes early: every redraw happens at an expiry. */
static void stall(void)
{
    struct timespec d = { 0, 300000 };
    nanosleep(&d, NULL);
}

Test(clock, a_preempted_redraw_does_not_stop_the_other_threads_clocks)
{
    ana_cfg.tsc = 1;
    ana_clock_refresh();
    ana_clock_redraw_hook = stall;
    struct result res[THREADS];
    run_readers(res, 0);
    ana_clock_redraw_hook = NULL;
    expect_within(res);
}

Test(clock, without_the_tsc_readings_are_the_clock_itself)
{
    ana_cfg.tsc = 0; /* ANATOMIST_TSC=0 */
    ana_clock_refresh();
    for (int i = 0; i < 100000; i++) {
        uint64_t before = mono(), x = ana_now_ns(), after = mono();
        cr_assert(before <= x && x <= after, "%llu not in [%llu, %llu]", (unsigned long long)x,
                  (unsigned long long)before, (unsigned long long)after);
    }
    cr_expect_eq(ana_clock_uses_tsc(), 0);
}

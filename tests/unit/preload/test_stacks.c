#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "preload.h"
#include "unwind.h"

/* What ana_stacks_emit_new hands over, by id. */
#define MAXID 20000
static uint32_t got_n[MAXID];
static uint64_t got_first[MAXID], got_last[MAXID];
static int got_times[MAXID];
static int emitted_count;

static void collect(uint64_t id, const uint64_t *ips, uint32_t n, void *arg)
{
    (void)arg;
    cr_assert_lt(id, MAXID);
    got_n[id] = n;
    got_first[id] = n ? ips[0] : 0;
    got_last[id] = n ? ips[n - 1] : 0;
    got_times[id]++;
    emitted_count++;
}

static void setup(void)
{
    static int done;
    if (!done) {
        cr_assert_eq(ana_unwind_start(), 0, "libunwind.so.8 must load for this test");
        done = 1;
    }
    ana_stacks_emit_new(collect, NULL); /* drain anything earlier tests left */
    memset(got_times, 0, sizeof(got_times));
    emitted_count = 0;
}

Test(stacks, interning_is_by_content, .init = setup)
{
    uint64_t a[3] = { 0x1000, 0x2000, 0x3000 };
    uint64_t b[3] = { 0x1000, 0x2000, 0x3001 };
    uint64_t id_a = ana_stack_intern(a, 3);
    uint64_t id_b = ana_stack_intern(b, 3);
    uint64_t id_a2 = ana_stack_intern(a, 2);
    cr_assert_neq(id_a, 0);
    cr_expect_neq(id_a, id_b);
    cr_expect_neq(id_a, id_a2, "a prefix is another stack");
    cr_expect_eq(ana_stack_intern(a, 3), id_a);
    uint64_t copy[3];
    memcpy(copy, a, sizeof(copy));
    cr_expect_eq(ana_stack_intern(copy, 3), id_a, "same frames at another address");

    ana_stacks_emit_new(collect, NULL);
    cr_expect_eq(emitted_count, 3);
    cr_expect_eq(got_n[id_a], 3);
    cr_expect_eq(got_last[id_b], 0x3001);
    cr_expect_eq(got_n[id_a2], 2);
    ana_stacks_emit_new(collect, NULL);
    cr_expect_eq(emitted_count, 3, "nothing is emitted twice");

    /* A forked child must define every stack again in its own trace. */
    ana_stacks_atfork_child();
    memset(got_times, 0, sizeof(got_times));
    ana_stacks_emit_new(collect, NULL);
    cr_expect_eq(got_times[id_a], 1);
    cr_expect_eq(got_times[id_b], 1);
}

#define THREADS 4
#define DISTINCT 500
#define PER_THREAD 4000
static uint64_t ids_seen[THREADS][PER_THREAD];
static int which[THREADS][PER_THREAD];

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    unsigned seed = 77u + (unsigned)me;
    for (int i = 0; i < PER_THREAD; i++) {
        int k = rand_r(&seed) % DISTINCT;
        uint64_t f[4] = { 0x400000 + (uint64_t)k, 0x500000, 0x600000 + (uint64_t)(k % 7), (uint64_t)k * 977 };
        which[me][i] = k;
        ids_seen[me][i] = ana_stack_intern(f, (uint32_t)(1 + k % 4));
    }
    return NULL;
}

Test(stacks, concurrent_interning_gives_consistent_ids, .init = setup)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    ana_stacks_emit_new(collect, NULL);
    /* Every id handed out was emitted exactly once, with the frames of its stack. */
    int distinct_ids = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            uint64_t id = ids_seen[t][i];
            int k = which[t][i];
            cr_assert_neq(id, 0);
            cr_assert_eq(got_times[id], 1, "id %llu emitted %d times", (unsigned long long)id, got_times[id]);
            cr_assert_eq(got_n[id], (uint32_t)(1 + k % 4));
            cr_assert_eq(got_first[id], 0x400000 + (uint64_t)k);
        }
    for (int id = 0; id < MAXID; id++)
        distinct_ids += got_times[id];
    /* Duplicates only arise when two threads define the same new stack at once. */
    cr_expect_geq(distinct_ids, DISTINCT);
    cr_expect_leq(distinct_ids, DISTINCT + DISTINCT / 10, "%d ids for %d stacks", distinct_ids, DISTINCT);
}

__attribute__((noinline)) static uint64_t probe_inner(void)
{
    uint64_t id = ana_stack_capture();
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return id;
}

__attribute__((noinline)) uint64_t probe_outer(void)
{
    uint64_t id = probe_inner();
    __asm__ volatile("" ::: "memory");
    return id;
}

static uint64_t frames_of[MAXID][8];
static void keep_frames(uint64_t id, const uint64_t *ips, uint32_t n, void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < n && i < 8; i++)
        frames_of[id][i] = ips[i];
    got_n[id] = n;
}

Test(stacks, capture_sees_the_callers, .init = setup)
{
    uint64_t ids[2];
    volatile int two = 2; /* a loop the compiler cannot unroll into two call sites */
    for (int i = 0; i < two; i++)
        ids[i] = probe_outer();
    uint64_t id = ids[0];
    cr_assert_neq(id, 0);
    cr_expect_eq(ids[1], id, "the same call site gives the same stack");
    ana_stacks_emit_new(keep_frames, NULL);
    cr_assert_geq(got_n[id], 3);
    /* Some early frame returns into probe_outer (the call of probe_inner). */
    int found = 0;
    for (int i = 0; i < 8 && i < (int)got_n[id]; i++) {
        Dl_info info;
        if (dladdr((void *)(uintptr_t)(frames_of[id][i] - 1), &info) && info.dli_sname &&
            !strcmp(info.dli_sname, "probe_outer"))
            found = 1;
    }
    cr_expect(found, "probe_outer is on the captured stack");
    ana_cfg.stacks = 0;
    cr_expect_eq(ana_stack_capture(), 0, "stacks off: no capture");
    ana_cfg.stacks = 1;
}

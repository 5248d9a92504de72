/* The model's lookups against linear scans: ana_trace_call_bound (which gallops from where
 * the last search ended) for times asked in order and at random, ana_trace_call_by_corr
 * with dense and sparse correlation ids, ana_sort (insertion sort while an array is
 * nearly in order, qsort past that) and ana_sort_stable against a plain stable sort, the
 * dense index's groups of consecutive calls, the 32-bit fields of calls, GPU activities
 * and pointer uses holding values of 2^31 and up (wide values), and kernel ids on both
 * sides of the dense table's bound. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/trace.h"
#include "model/util.h"
#include "../random.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next64(void) { return ana_xorshift64(&rng); }

/* n LAUNCH records at times drawn from [0, span) (ties likely when span is small), corr
 * ids from [1, corr_span) or 0. */
static ana_trace *build(size_t n, uint64_t span, uint64_t corr_span)
{
    ana_trace *t = ana_trace_new("mem", ANA_LOAD_ALL);
    for (size_t i = 0; i < n; i++) {
        ana_record r = { .kind = ANA_K_LAUNCH, .tid = 1 + next64() % 3,
                         .time_ns = 1000 + next64() % span };
        r.u.launch.kernel = 1 + next64() % 5;
        r.u.launch.corr = (next64() & 7) ? 1 + next64() % corr_span : 0;
        ana_trace_add(t, &r);
    }
    ana_trace_finish(t);
    return t;
}

static size_t bound_scan(const ana_trace *t, uint64_t time, int after)
{
    size_t i = 0;
    for (; i < t->n_calls; i++) {
        uint64_t x = ana_trace_call(t, i).time_ns;
        if (after ? x > time : x >= time)
            break;
    }
    return i;
}

static size_t corr_scan(const ana_trace *t, uint64_t corr)
{
    for (size_t i = 0; corr && i < t->n_calls; i++)
        if (ana_trace_wide(t, ana_trace_call(t, i).corr_w) == corr)
            return i;
    return SIZE_MAX;
}

static void check(const ana_trace *t, uint64_t span, uint64_t corr_span)
{
    for (int round = 0; round < 2; round++) {
        uint64_t time = 900;
        for (int q = 0; q < 3000; q++) {
            /* in order (round 0: small steps, sometimes back) or anywhere (round 1) */
            time = round == 0 ? time + next64() % 7 - (next64() % 5 == 0 ? 9 : 0)
                              : 900 + next64() % (span + 200);
            int after = (int)(next64() & 1);
            cr_assert_eq(ana_trace_call_bound(t, time, after), bound_scan(t, time, after),
                         "time %llu after %d", (unsigned long long)time, after);
        }
    }
    for (uint64_t c = 0; c < corr_span + 5; c++)
        cr_assert_eq(ana_trace_call_index(t, c), corr_scan(t, c), "corr %llu",
                     (unsigned long long)c);
    cr_assert_eq(ana_trace_call_index(t, UINT64_MAX), SIZE_MAX);
}

Test(trace_index, call_bound_and_corr)
{
    uint64_t shapes[][3] = { { 2000, 1500, 2500 }, { 2000, 100000, 1u << 30 }, { 1, 10, 3 },
                             { 0, 10, 3 }, { 500, 20, 100 } };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        ana_trace *t = build(shapes[i][0], shapes[i][1], shapes[i][2]);
        check(t, shapes[i][1], shapes[i][2] > 10000 ? 10000 : shapes[i][2]);
        ana_trace_free(t);
    }
}

/* n launches, call i at time 1000 + i (index i in time order) with id corr[i]. */
static ana_trace *launches(const char *name, const uint64_t *corr, size_t n)
{
    ana_trace *t = ana_trace_new(name, ANA_LOAD_ALL);
    for (size_t i = 0; i < n; i++) {
        ana_record r = { .kind = ANA_K_LAUNCH, .tid = 1, .time_ns = 1000 + i };
        r.u.launch.kernel = 1;
        r.u.launch.corr = corr[i];
        ana_trace_add(t, &r);
    }
    ana_trace_finish(t);
    cr_assert_eq(t->n_calls, n);
    return t;
}

/* Ids whose calls lie further apart in time order than the dense index's 2-byte distance
 * reaches (65534 calls) are found too: call i has id i + 1, but for a few pairs swapped
 * across the whole trace, and a few ids repeat (the earliest call keeps them). */
Test(trace_index, corr_far_from_its_neighbours)
{
    enum { N = 70000 };
    static uint64_t corr[N];
    for (size_t i = 0; i < N; i++)
        corr[i] = i + 1;
    static const size_t swaps[][2] = { { 5, 69000 }, { 64, 65600 }, { 100, 100 + 65534 },
                                       { 200, 200 + 65533 } };
    for (size_t k = 0; k < sizeof(swaps) / sizeof(swaps[0]); k++) {
        uint64_t x = corr[swaps[k][0]];
        corr[swaps[k][0]] = corr[swaps[k][1]];
        corr[swaps[k][1]] = x;
    }
    corr[N - 1] = corr[3]; /* a repeat: call 3 keeps the id */
    ana_trace *t = launches("far", corr, N);
    for (size_t i = 0; i + 1 < N; i++)
        cr_assert_eq(ana_trace_call_index(t, corr[i]), i, "corr %llu",
                     (unsigned long long)corr[i]);
    cr_assert_eq(ana_trace_call_index(t, N), SIZE_MAX); /* the id the repeat replaced */
    cr_assert_eq(ana_trace_call_index(t, N + 1), SIZE_MAX);
    ana_trace_free(t);
}

/* Ids as a process's calls take them: counting up with gaps (ids of calls that are not
 * kept), a few calls without one, a few neighbours swapped (two threads) and repeats. Every
 * id is found where the test put its first call, and the groups of 64 ids whose calls are
 * consecutive keep no row of distances (16 bytes per 64 ids). */
Test(trace_index, corr_consecutive_groups_with_gaps_swaps_and_repeats)
{
    enum { N = 50000 };
    static uint64_t corr[N];
    uint64_t id = 1000;
    size_t none = 0, swapped = 0, repeated = 0;
    for (size_t i = 0; i < N; i++) { /* the first 500 before ids were kept */
        id += 1 + (next64() % 4 == 0 ? next64() % 3 : 0);
        corr[i] = i < 500 || next64() % 1000 == 0 ? 0 : id;
        none += i >= 500 && !corr[i];
    }
    for (size_t i = 100; i + 1 < N; i += 1 + next64() % 2000) {
        uint64_t x = corr[i];
        corr[i] = corr[i + 1], corr[i + 1] = x, swapped++;
    }
    for (size_t i = 200; i < N; i += 1 + next64() % 3000)
        corr[i] = corr[i - 1 - next64() % 100], repeated++;
    ana_trace *t = launches("ids", corr, N);
    cr_assert(t->corr_g, "a dense index");
    size_t span = (size_t)(id - 1000 + 1);
    size_t *first = malloc(span * sizeof(size_t));
    for (size_t k = 0; k < span; k++)
        first[k] = SIZE_MAX;
    for (size_t i = 0; i < N; i++)
        if (corr[i] && first[corr[i] - 1000] == SIZE_MAX)
            first[corr[i] - 1000] = i;
    for (size_t k = 0; k < span; k++)
        cr_assert_eq(ana_trace_call_index(t, 1000 + k), first[k], "corr %zu", 1000 + k);
    cr_assert_eq(ana_trace_call_index(t, 999), SIZE_MAX);
    cr_assert_eq(ana_trace_call_index(t, id + 1), SIZE_MAX);
    size_t groups = (size_t)(t->corr_n / ANA_CORR_GROUP + 1), rows = t->n_corr_d / ANA_CORR_GROUP;
    /* each swap, repeat or call without an id among others unsettles at most two groups */
    cr_expect_leq(rows, 2 * (swapped + repeated + none),
                  "%zu rows for %zu swaps, %zu repeats, %zu calls without id (%zu groups)", rows,
                  swapped, repeated, none, groups);
    cr_expect_gt(rows, 0, "the swaps and repeats need rows");
    free(first);
    ana_trace_free(t);
}

typedef struct item {
    uint32_t key, order;
} item;

static int item_cmp(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int item_stable_cmp(const void *a, const void *b)
{
    const item *x = a, *y = b;
    int c = item_cmp(a, b);
    return c ? c : (x->order < y->order ? -1 : x->order > y->order);
}

Test(trace_index, sort_is_a_stable_sort)
{
    static item v[5000], w[5000];
    for (int round = 0; round < 200; round++) {
        size_t n = next64() % 5000;
        uint64_t swaps = round % 4 == 0 ? n * 2 : next64() % 40; /* shuffled, or nearly sorted */
        for (size_t i = 0; i < n; i++)
            v[i] = (item){ (uint32_t)(i / 3), (uint32_t)i };
        for (uint64_t s = 0; s < swaps && n > 1; s++) {
            size_t a = next64() % n, b = round % 2 ? (a + 1 + next64() % 5) % n : next64() % n;
            item x = v[a];
            v[a] = v[b];
            v[b] = x;
        }
        for (size_t i = 0; i < n; i++)
            v[i].order = (uint32_t)i; /* stable: equal keys keep this order */
        memcpy(w, v, n * sizeof(*v));
        ana_sort(v, n, sizeof(*v), item_cmp);
        if (n > 1)
            qsort(w, n, sizeof(*w), item_stable_cmp);
        for (size_t i = 0; i < n; i++) /* qsort's own order of equal keys is its business */
            cr_assert(round % 4 == 0 ? v[i].key == w[i].key : !memcmp(&v[i], &w[i], sizeof(*v)),
                      "round %d, item %zu of %zu", round, i, n);
    }
}

/* ana_sort_stable keeps equal keys in their order in every round, shuffled ones included
 * (where its insertion pass gives up part-way and the merge sort finishes). */
Test(trace_index, sort_stable_keeps_order_of_equals)
{
    static item v[5000], w[5000];
    for (int round = 0; round < 200; round++) {
        size_t n = next64() % 5000;
        uint64_t swaps = round % 2 == 0 ? n * 2 : next64() % 40;
        for (size_t i = 0; i < n; i++)
            v[i] = (item){ (uint32_t)(next64() % (round % 3 ? 50 : 5000)), (uint32_t)i };
        for (uint64_t s = 0; s < swaps && n > 1; s++) {
            size_t a = next64() % n, b = next64() % n;
            item x = v[a];
            v[a] = v[b];
            v[b] = x;
        }
        for (size_t i = 0; i < n; i++)
            v[i].order = (uint32_t)i;
        memcpy(w, v, n * sizeof(*v));
        ana_sort_stable(v, n, sizeof(*v), item_cmp); /* compares keys only */
        if (n > 1)
            qsort(w, n, sizeof(*w), item_stable_cmp);
        for (size_t i = 0; i < n; i++)
            cr_assert(!memcmp(&v[i], &w[i], sizeof(*v)), "round %d, item %zu of %zu", round, i, n);
    }
}

/* Values the model keeps in 32 bits (28 for a use's arg) read back whole: small ones, the
 * edges of the ranges and 64-bit ones; calls at one time sort by their whole tid. */
Test(trace_index, wide_values_read_back)
{
    static const uint64_t vals[] = { 1, 0x7fffffffull, 0x80000000ull, 0xffffffffull,
                                     1ull << 40, UINT64_MAX - 1, 0x7ffffffull, 0x8000000ull };
    const size_t n = sizeof(vals) / sizeof(vals[0]);
    ana_trace *t = ana_trace_new("mem", ANA_LOAD_ALL);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = vals[i], ptr = 0x7f0000000000ull + i * 64;
        /* tid: the larger value first in the file, at the same time */
        ana_record r = { .kind = ANA_K_LAUNCH, .tid = vals[n - 1 - i], .time_ns = 5000 };
        r.u.launch = (ana_rec_launch){ .kernel = v, .stack = v, .corr = v, .call = v,
                                       .ptrs = { &ptr, 1 } };
        ana_trace_add(t, &r);
        ana_record g = { .kind = ANA_K_GPU_KERNEL, .time_ns = 6000 + i };
        g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = v, .dur_ns = v, .kernel = v };
        ana_trace_add(t, &g);
    }
    ana_trace_finish(t);
    cr_assert_eq(t->n_calls, n);
    cr_assert_eq(t->n_gpu, n);
    cr_assert_eq(t->n_uses, n);
    ana_spill_cur uc;
    const void *pv;
    size_t k, got = 0;
    ana_ptr_use *uses = ana_xcalloc(n, sizeof(*uses));
    ana_trace_uses_open(t, &uc);
    while ((k = ana_spill_peek(&uc, &pv)) && got + k <= n) {
        memcpy(uses + got, pv, k * sizeof(*uses));
        got += k;
        ana_spill_take(&uc, k);
    }
    ana_spill_close(&uc);
    cr_assert_eq(got, n);
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (size_t i = 0; i < n; i++) {
        ana_api_call call = ana_trace_call(t, i);
        const ana_api_call *c = &call;
        uint64_t tid = ana_trace_wide(t, ana_trace_call_site(t, c)->tid_w);
        if (i)
            cr_assert_lt(ana_trace_wide(t, ana_trace_call_site_at(t, i - 1)->tid_w), tid,
                         "call %zu", i);
        /* the call with this tid was the file's record n-1-k where vals[n-1-k] == tid */
        size_t k = 0;
        while (vals[n - 1 - k] != tid)
            k++;
        cr_assert_eq(ana_trace_wide(t, c->corr_w), vals[k], "call %zu", i);
        cr_assert_eq(ana_trace_wide(t, c->arg_w), vals[k]);
        cr_assert_eq(ana_trace_wide(t, c->call_w), vals[k]);
        /* no STACK: its own canon */
        cr_assert_eq(ana_trace_wide(t, ana_trace_call_site(t, c)->stack_w), vals[k]);
        cr_assert_eq(ana_trace_call_index(t, vals[k]), i);
        const ana_gpu_act *a = ana_trace_gpu_next(&it); /* by start: file order */
        cr_assert_not_null(a);
        cr_assert_eq(a->start_ns, 6000 + i);
        cr_assert_eq(ana_trace_wide(t, a->corr_w), vals[i]);
        cr_assert_eq(ana_trace_wide(t, a->dur_w), vals[i]);
        cr_assert_eq(ana_trace_wide(t, a->arg_w), vals[i]);
        const ana_ptr_use *u = &uses[i]; /* same time: file order */
        cr_assert_eq(ana_trace_use_ptr(t, u), 0x7f0000000000ull + i * 64);
        cr_assert_eq(ana_trace_use_kind(u), ANA_USE_KERNEL);
        cr_assert_eq(ana_trace_use_arg(t, u), vals[i]);
    }
    cr_assert_null(ana_trace_gpu_next(&it));
    ana_trace_gpu_end(&it);
    free(uses);
    ana_trace_free(t);
}

/* Kernel ids below ANA_TRACE_KERNEL_DENSE are looked up in an array, the others in a map:
 * both find what KERNEL and LAUNCH records named, and nothing else. */
Test(trace_index, kernel_ids_small_and_large)
{
    static const uint64_t ids[] = { 0, 5, 63, 64, 1000, ANA_TRACE_KERNEL_DENSE - 1,
                                    ANA_TRACE_KERNEL_DENSE, 1ull << 40, UINT64_MAX };
    const size_t n = sizeof(ids) / sizeof(ids[0]);
    ana_trace *t = ana_trace_new("mem", ANA_LOAD_ALL);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        int len = snprintf(name, sizeof(name), "k%zu", i);
        ana_record r = { .kind = ANA_K_KERNEL };
        r.u.kernel = (ana_rec_kernel){ .id = ids[i], .name = { name, (uint32_t)len } };
        ana_trace_add(t, &r);
        ana_record l = { .kind = ANA_K_LAUNCH, .tid = 1, .time_ns = 100 + i };
        l.u.launch.kernel = ids[i];
        ana_trace_add(t, &l);
    }
    ana_trace_finish(t);
    cr_assert_eq(t->n_kernels, n);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "k%zu", i);
        const ana_trace_kernel *k = ana_trace_kernel_by_id(t, ids[i]);
        cr_assert(k, "id %llu", (unsigned long long)ids[i]);
        cr_assert_eq(k->id, ids[i]);
        cr_assert_str_eq(k->name, name);
        cr_assert_eq(k->launches, 1);
    }
    static const uint64_t absent[] = { 1, 6, 65, ANA_TRACE_KERNEL_DENSE + 1, 1ull << 41 };
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        cr_assert_null(ana_trace_kernel_by_id(t, absent[i]));
    ana_trace_free(t);
}

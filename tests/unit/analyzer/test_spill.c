/* Spills (model/spill.h) and what is read through them: items read back in memory and in
 * a file, whole and by ranges, with blocks of every size; a trace's pointer uses in time
 * order (equal times in the order they were added) however many runs they were spilled
 * in (ANATOMIST_SPILL_USES), against a stable sort done here; the pointers of a pointer
 * table placed after every other use of the launch's time; the GPU activities, API calls,
 * memory events and NVTX ranges in their orders however many runs they were spilled in. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/sorter.h"
#include "model/spill.h"
#include "model/trace.h"
#include "model/util.h"
#include "../random.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next64(void) { return ana_xorshift64(&rng); }

/* Reads items [from, to) of s with takes of random sizes; checks item i is i * 3 + 1. */
static void check_range(const ana_spill *s, uint64_t from, uint64_t to, size_t block)
{
    ana_spill_cur c;
    ana_spill_open(&c, s, from, to);
    if (block)
        c.block = block;
    uint64_t at = from, end = to < s->n ? to : s->n;
    const void *p;
    size_t n;
    while ((n = ana_spill_peek(&c, &p))) {
        size_t k = 1 + next64() % n;
        const uint64_t *v = p;
        for (size_t i = 0; i < k; i++)
            cr_assert_eq(v[i], (at + i) * 3 + 1, "item %llu", (unsigned long long)(at + i));
        ana_spill_take(&c, k);
        at += k;
    }
    cr_assert_eq(at, end, "read to %llu of %llu", (unsigned long long)at, (unsigned long long)end);
    ana_spill_close(&c);
}

Test(spill, items_back_in_memory_and_in_a_file)
{
    for (int file = 0; file < 2; file++)
        for (int when = 0; when < 2; when++) { /* to the file before the items, or midway */
            ana_spill s;
            ana_spill_init(&s, sizeof(uint64_t), "test items");
            uint64_t n = 0, total = 240000, *batch = ana_xmalloc(200000 * sizeof(uint64_t));
            int big = 0;
            if (file && !when)
                ana_spill_to_file(&s);
            while (n < total) {
                size_t k = 1 + next64() % 300;
                if (!big && n > 5000) /* one batch larger than a block (a run) */
                    k = 200000, big = 1;
                k = k < total - n ? k : (size_t)(total - n);
                for (size_t i = 0; i < k; i++)
                    batch[i] = (n + i) * 3 + 1;
                ana_spill_push(&s, batch, k);
                n += k;
                if (file && when && n > 210000)
                    ana_spill_to_file(&s);
            }
            free(batch);
            ana_spill_seal(&s);
            cr_assert_eq(ana_spill_in_file(&s), file);
            cr_assert_eq(s.n, total);
            size_t blocks[] = { 0, 8, 24, 4096 };
            for (size_t b = 0; b < 4; b++) {
                check_range(&s, 0, UINT64_MAX, blocks[b]);
                check_range(&s, 777, 15000, blocks[b]);
                check_range(&s, 19999, 300000, blocks[b]);
                check_range(&s, 5000, 5000, blocks[b]);
            }
            ana_spill_free(&s);
        }
}

/* A spill with a limit in memory stays there up to it and goes to its file with the push
 * that would pass it; every item reads back. */
Test(spill, items_past_the_limit_go_to_the_file)
{
    ana_spill s;
    ana_spill_init(&s, sizeof(uint64_t), "test items");
    s.in_memory = 1000;
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t v = i * 3 + 1;
        ana_spill_push(&s, &v, 1);
    }
    cr_assert(!ana_spill_in_file(&s), "1000 items of 1000 stay in memory");
    uint64_t two[2] = { 1000 * 3 + 1, 1001 * 3 + 1 };
    ana_spill_push(&s, two, 2);
    cr_assert(ana_spill_in_file(&s), "the push past 1000 goes to the file");
    ana_spill_seal(&s);
    cr_assert_eq(s.n, 1002);
    check_range(&s, 0, UINT64_MAX, 0);
    ana_spill_free(&s);
}

typedef struct want_use {
    uint64_t time, ptr;
    size_t order;
} want_use;

static int want_cmp(const void *a, const void *b)
{
    const want_use *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Every use of t, in the order the cursor gives them, as (time, address). */
static size_t read_uses(const ana_trace *t, want_use *out, size_t cap)
{
    ana_spill_cur c;
    ana_trace_uses_open(t, &c);
    const void *p;
    size_t n, got = 0;
    while ((n = ana_spill_peek(&c, &p))) {
        const ana_ptr_use *u = p;
        for (size_t i = 0; i < n; i++) {
            cr_assert_lt(got, cap);
            out[got++] = (want_use){ u[i].time_ns, ana_trace_use_ptr(t, &u[i]), 0 };
        }
        ana_spill_take(&c, n);
    }
    ana_spill_close(&c);
    return got;
}

static void uses_in_order(int ordered)
{
    enum { N = 3000 };
    const char *runs[] = { NULL, "0", "1", "7", "64", "100000" };
    want_use *want = ana_xcalloc(3 * N, sizeof(*want)), *got = ana_xcalloc(3 * N, sizeof(*got));
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        if (runs[r])
            setenv("ANATOMIST_SPILL_USES", runs[r], 1);
        else
            unsetenv("ANATOMIST_SPILL_USES");
        ana_trace *t = ana_trace_new("spill", ANA_LOAD_ALL);
        size_t nw = 0;
        for (size_t i = 0; i < N; i++) {
            uint64_t ptrs[3];
            /* many equal times; in order, equal times across the runs' bounds too */
            ana_record rec = { .kind = ANA_K_LAUNCH, .tid = 1 + next64() % 4,
                               .time_ns = ordered ? 1000 + i / 4 : 1000 + next64() % 500 };
            uint32_t k = 1 + (uint32_t)(next64() % 3);
            for (uint32_t j = 0; j < k; j++) {
                ptrs[j] = 0x7f0000000000ull + (i * 4 + j) * 256;
                want[nw] = (want_use){ rec.time_ns, ptrs[j], nw };
                nw++;
            }
            rec.u.launch = (ana_rec_launch){ .kernel = 1 + i % 5, .ptrs = { ptrs, k } };
            ana_trace_add(t, &rec);
        }
        ana_trace_finish(t);
        qsort(want, nw, sizeof(*want), want_cmp);
        const char *rs = runs[r] ? runs[r] : "default";
        cr_assert_eq(t->n_uses, nw, "runs %s", rs);
        cr_assert_eq(read_uses(t, got, 3 * N), nw);
        for (size_t i = 0; i < nw; i++)
            cr_assert(got[i].time == want[i].time && got[i].ptr == want[i].ptr,
                      "runs %s, use %zu: %llu %llx, want %llu %llx", rs, i,
                      (unsigned long long)got[i].time, (unsigned long long)got[i].ptr,
                      (unsigned long long)want[i].time, (unsigned long long)want[i].ptr);
        /* the setting spills only when the uses outgrow it */
        int spilled = runs[r] && strcmp(runs[r], "0") && (size_t)atoi(runs[r]) < nw;
        cr_assert_eq(ana_spill_in_file(&t->use_spill), spilled, "runs %s", rs);
        if (spilled) /* the runs merged only when they overlapped */
            cr_assert_eq(t->use_sort.unordered, !ordered, "runs %s", runs[r]);
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_USES");
    free(want);
    free(got);
}

/* Runs that overlap in time are merged; runs that follow each other are read as they are. */
Test(spill, uses_in_time_order_whatever_the_runs) { uses_in_order(0); }
Test(spill, uses_in_time_order_runs_in_order) { uses_in_order(1); }

static void add_launch(ana_trace *t, uint64_t tid, uint64_t time, uint64_t kernel, uint64_t *ptrs,
                       uint32_t n)
{
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = tid, .time_ns = time };
    r.u.launch = (ana_rec_launch){ .kernel = kernel, .ptrs = { ptrs, n } };
    ana_trace_add(t, &r);
}

/* A table at D (two pointers P1, P2) copied at 100; at 200 one launch hands a kernel D + 8,
 * another (added after it) X; at 300 a launch hands Y. The table's pointers are uses of
 * the first launch, after X (the other use of time 200), before Y. Whether the uses were
 * spilled or not, in runs that overlap (Y first in the file) or follow each other. */
Test(spill, table_pointers_follow_the_uses_of_their_time)
{
    const uint64_t D = 0x7f0000001000ull, P1 = 0x7f0000100000ull, P2 = 0x7f0000200000ull;
    const uint64_t X = 0x7f0000300000ull, Y = 0x7f0000400000ull;
    const char *runs[] = { "0", "1", "2" };
    for (size_t r = 0; r < 6; r++) {
        int ordered = r >= 3;
        setenv("ANATOMIST_SPILL_USES", runs[r % 3], 1);
        ana_trace *t = ana_trace_new("tables", ANA_LOAD_ALL);
        uint64_t y = Y, x = X, d8 = D + 8, tp[2] = { P1, P2 }, at[2] = { 0, 8 };
        if (!ordered)
            add_launch(t, 2, 300, 4, &y, 1); /* a later time first in the file */
        ana_record m = { .kind = ANA_K_MEMCPY, .tid = 1, .time_ns = 100 };
        m.u.memcpy = (ana_rec_memcpy){ .dst = D, .src = 0x5000, .bytes = 16, .dir = 1 };
        ana_trace_add(t, &m);
        ana_record pt = { .kind = ANA_K_PTR_TABLE, .tid = 1, .time_ns = 100 };
        pt.u.ptr_table = (ana_rec_ptr_table){ .dst = D, .bytes = 16, .ptrs = { tp, 2 },
                                              .ptr_at = { at, 2 } };
        ana_trace_add(t, &pt);
        add_launch(t, 1, 200, 9, &d8, 1);
        add_launch(t, 3, 200, 5, &x, 1);
        if (ordered)
            add_launch(t, 2, 300, 4, &y, 1);
        ana_trace_finish(t);
        if (r % 3) /* spilled: merged only when the runs overlapped */
            cr_assert_eq(t->use_sort.unordered, !ordered, "runs %s", runs[r % 3]);
        want_use got[16];
        size_t n = read_uses(t, got, 16);
        /* the copy's destination and source (time 100), then 200's, then Y */
        const want_use want[] = { { 100, D, 0 },  { 100, 0x5000, 0 }, { 200, D + 8, 0 },
                                  { 200, X, 0 },  { 200, P1, 0 },     { 200, P2, 0 },
                                  { 300, Y, 0 } };
        cr_assert_eq(n, 7, "runs %s: %zu uses", runs[r % 3], n);
        for (size_t i = 0; i < n; i++)
            cr_assert(got[i].time == want[i].time && got[i].ptr == want[i].ptr,
                      "runs %s, use %zu: %llu %llx", runs[r % 3], i,
                      (unsigned long long)got[i].time, (unsigned long long)got[i].ptr);
        cr_assert_eq(t->table_launches, 1);
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_USES");
}

/* A temporary file that cannot be made ends the command with exit status 2 (and says
 * where and why on stderr), rather than an analysis going on without its items. */
Test(spill, no_room_for_the_file_exits_2, .exit_code = 2)
{
    setenv("TMPDIR", "/nonexistent-anatomist-dir", 1);
    ana_spill s;
    ana_spill_init(&s, sizeof(uint64_t), "test items");
    ana_spill_to_file(&s);
    ana_spill_free(&s); /* not reached */
}

/* GPU activities on two devices, at random starts, come back sorted by device, then
 * start, then correlation id, each once, however many runs they were spilled in. */
Test(spill, gpu_activities_sorted_whatever_the_runs)
{
    enum { N = 2000 };
    const char *runs[] = { "0", "1", "5", "64" };
    for (size_t r = 0; r < 4; r++) {
        setenv("ANATOMIST_SPILL_GPU", runs[r], 1);
        ana_trace *t = ana_trace_new("gpu", ANA_LOAD_ALL);
        uint64_t corr_sum = 0;
        for (size_t i = 0; i < N; i++) {
            ana_record g = { .kind = ANA_K_GPU_KERNEL, .time_ns = 5000 + next64() % 300 };
            g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = 1 + i, .dur_ns = 10, .kernel = 3,
                                                   .device = (int64_t)(next64() % 2) };
            corr_sum += 1 + i;
            ana_trace_add(t, &g);
        }
        ana_trace_finish(t);
        cr_assert_eq(t->n_gpu, N);
        ana_gpu_iter it;
        ana_trace_gpu_begin(t, &it);
        size_t n = 0;
        uint64_t sum = 0;
        ana_gpu_act prev = { 0 };
        for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it)); n++) {
            int32_t d = ana_trace_gpu_lane(t, a)->device;
            uint64_t corr = ana_trace_wide(t, a->corr_w);
            if (n) {
                int32_t pd = ana_trace_gpu_lane(t, &prev)->device;
                uint64_t pc = ana_trace_wide(t, prev.corr_w);
                cr_assert(pd < d || (pd == d && (prev.start_ns < a->start_ns ||
                                                 (prev.start_ns == a->start_ns && pc < corr))),
                          "runs %s: activity %zu out of order", runs[r], n);
            }
            sum += corr;
            prev = *a;
        }
        ana_trace_gpu_end(&it);
        cr_assert_eq(n, N, "runs %s", runs[r]);
        cr_assert_eq(sum, corr_sum, "runs %s", runs[r]);
        cr_assert_eq(ana_spill_in_file(&t->gpu_spill), strcmp(runs[r], "0") && atoi(runs[r]) < N);
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_GPU");
}

/* The settings: a number of items, 0 for no limit; anything else is said once per setting
 * on stderr (however many traces read it) and the default used. */
Test(spill, settings_read_and_refused_once_each, .init = cr_redirect_stderr)
{
    setenv("ANATOMIST_SPILL_USES", "1234", 1);
    cr_assert_eq(ana_sorter_setting("ANATOMIST_SPILL_USES", 7, 16), 1234);
    setenv("ANATOMIST_SPILL_USES", "0", 1);
    cr_assert_eq(ana_sorter_setting("ANATOMIST_SPILL_USES", 7, 16), SIZE_MAX);
    unsetenv("ANATOMIST_SPILL_USES");
    cr_assert_eq(ana_sorter_setting("ANATOMIST_SPILL_USES", 7, 16), 7);
    setenv("ANATOMIST_SPILL_USES", "12k", 1);
    setenv("ANATOMIST_SPILL_GPU", "-5", 1);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ana_sorter_setting("ANATOMIST_SPILL_USES", 7, 16), 7);
        cr_assert_eq(ana_sorter_setting("ANATOMIST_SPILL_GPU", 9, 24), 9);
    }
    unsetenv("ANATOMIST_SPILL_USES");
    unsetenv("ANATOMIST_SPILL_GPU");
    fflush(stderr);
    cr_assert_stderr_eq_str(
        "anatomist: ignoring ANATOMIST_SPILL_USES=12k (expected a number of items, 0 for no "
        "limit); using 7\n"
        "anatomist: ignoring ANATOMIST_SPILL_GPU=-5 (expected a number of items, 0 for no "
        "limit); using 9\n");
}

/* A call as the test made it: what the model must give back at its place in time order. */
typedef struct want_call {
    uint64_t time, tid, corr, arg, call, order;
} want_call;

static int want_call_cmp(const void *a, const void *b)
{
    const want_call *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order; /* equal: file order */
}

/* API calls read back by index, at random and by time, the same however they were kept:
 * in memory, or sorted in runs and packed (ANATOMIST_SPILL_CALLS). Times with ties and
 * gaps past 2^32 ns, threads, correlation ids, library calls and sizes of 2^31 and up,
 * and launches recorded without their kernel that take the kernel of their GPU_KERNEL
 * (the earliest one when two share the id). */
static void calls_read_back(int ordered)
{
    enum { N = 5000 };
    static want_call want[N];
    static uint64_t named[N]; /* kernel a launch without one takes, 0 = none */
    const char *runs[] = { "0", "1", "7", "300", "100000" };
    uint64_t time = 1000;
    for (size_t i = 0; i < N; i++) {
        uint64_t r = next64();
        time += r % 4 == 0 ? !!ordered : r % 4 == 1 ? (1ull << 33) + next64() % 1000
                                                   : 1 + next64() % 5000;
        /* some out of order, unless in order: then their runs follow each other */
        uint64_t at = !ordered && next64() % 8 == 0 ? time - next64() % 900 : time;
        want_call *w = &want[i];
        *w = (want_call){ .time = at, .order = i };
        w->tid = next64() % 5 == 0 ? (1ull << 40) + 7 : 1 + next64() % 3;
        w->corr = next64() % 9 == 0 ? 0 : 10 + i;
        w->arg = next64() % 6 == 0 ? 0 : next64() % 3 == 0 ? (1ull << 35) + i : 1 + next64() % 9;
        w->call = next64() % 3 ? 0 : next64() % 2 ? 5000 + i / 4 : (1ull << 36) + i;
        /* (launches named afterwards pack the calls again: only when out of order) */
        named[i] = !ordered && want[i].arg == 0 && want[i].corr ? 100 + next64() % 5 : 0;
    }
    for (size_t ri = 0; ri < sizeof(runs) / sizeof(runs[0]); ri++) {
        setenv("ANATOMIST_SPILL_CALLS", runs[ri], 1);
        ana_trace *t = ana_trace_new("calls", ANA_LOAD_ALL);
        for (size_t i = 0; i < N; i++) {
            const want_call *w = &want[i];
            ana_record r = { .kind = ANA_K_LAUNCH, .tid = w->tid, .time_ns = w->time };
            r.u.launch = (ana_rec_launch){ .kernel = w->arg, .corr = w->corr, .call = w->call,
                                           .stack = 1 + i % 4 };
            ana_trace_add(t, &r);
            if (named[i]) { /* the kernel, and a later one with another id under the same corr */
                ana_record g = { .kind = ANA_K_GPU_KERNEL, .time_ns = w->time + 50 };
                g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = w->corr, .dur_ns = 5,
                                                       .kernel = named[i] };
                ana_trace_add(t, &g);
                g.time_ns += 1000;
                g.u.gpu_kernel.kernel = named[i] + 50;
                ana_trace_add(t, &g);
            }
        }
        ana_trace_finish(t);
        static want_call sorted[N];
        memcpy(sorted, want, sizeof(want));
        for (size_t i = 0; i < N; i++)
            if (named[i])
                sorted[i].arg = named[i];
        qsort(sorted, N, sizeof(*sorted), want_call_cmp);
        cr_assert_eq(t->n_calls, N, "runs %s", runs[ri]);
        int packed = atoi(runs[ri]) > 0 && atoi(runs[ri]) < N;
        cr_assert_eq(t->calls.raw == NULL, packed, "runs %s", runs[ri]);
        if (packed && ordered) /* the packed runs are the calls: no merge */
            cr_assert_eq(t->calls.n_runs, (N + atoi(runs[ri]) - 1) / atoi(runs[ri]));
        if (packed && !ordered && atoi(runs[ri]) == 1) /* merged from runs of one */
            cr_assert_eq(t->calls.n_runs, 0);
        for (size_t k = 0; k < 2 * N; k++) { /* in order, then at random */
            size_t i = k < N ? k : (size_t)(next64() % N);
            ana_api_call c = ana_trace_call(t, i);
            const want_call *w = &sorted[i];
            cr_assert_eq(c.time_ns, w->time, "runs %s, call %zu", runs[ri], i);
            cr_assert_eq(ana_trace_wide(t, ana_trace_call_site(t, &c)->tid_w), w->tid);
            cr_assert_eq(ana_trace_wide(t, c.corr_w), w->corr, "runs %s, call %zu", runs[ri], i);
            cr_assert_eq(ana_trace_wide(t, c.arg_w), w->arg, "runs %s, call %zu", runs[ri], i);
            cr_assert_eq(ana_trace_wide(t, c.call_w), w->call, "runs %s, call %zu", runs[ri], i);
            cr_assert_eq(ana_trace_wide(t, ana_trace_call_site(t, &c)->stack_w), 1 + w->order % 4);
            if (w->corr)
                cr_assert_eq(ana_trace_call_index(t, w->corr), i);
        }
        for (int q = 0; q < 3000; q++) { /* by time: against a scan of the expected order */
            uint64_t at = q % 2 ? sorted[next64() % N].time + next64() % 3 - 1
                                : 900 + next64() % (time + 2000);
            int after = (int)(next64() & 1);
            size_t s = 0;
            while (s < N && (after ? sorted[s].time <= at : sorted[s].time < at))
                s++;
            cr_assert_eq(ana_trace_call_bound(t, at, after), s, "runs %s, time %llu after %d",
                         runs[ri], (unsigned long long)at, after);
        }
        /* in time order, as most callers ask (the packed calls start from the last
         * answer): around every call's time, before and after it */
        size_t below = 0, at_or_below = 0; /* calls below at, at or below at */
        uint64_t at = 0;
        for (size_t i = 0; i < N; i++)
            for (int d = -1; d <= 1; d++) {
                if (sorted[i].time + (uint64_t)d > at) /* never back */
                    at = sorted[i].time + (uint64_t)d;
                while (below < N && sorted[below].time < at)
                    below++;
                while (at_or_below < N && sorted[at_or_below].time <= at)
                    at_or_below++;
                int after = (int)(next64() & 1);
                cr_assert_eq(ana_trace_call_bound(t, at, after), after ? at_or_below : below,
                             "runs %s, in order at %llu after %d", runs[ri],
                             (unsigned long long)at, after);
            }
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_CALLS");
}

Test(spill, calls_read_back_whatever_the_runs) { calls_read_back(0); }
Test(spill, calls_read_back_runs_in_order) { calls_read_back(1); }

/* Packed calls read by threads at once, each in its own model slot (as a report's analyses
 * are): each reads every call, in order from its own start and at random, against what one
 * thread read alone; a cache shared between them (more blocks than it holds) would hand one
 * thread a block another is decoding in its place. */
typedef struct slot_reader {
    const ana_trace *t;
    const ana_api_call *want;
    unsigned slot;
    size_t wrong;
} slot_reader;

static void *read_in_slot(void *arg)
{
    slot_reader *r = arg;
    ana_model_slot = r->slot;
    uint64_t rng2 = 77 + r->slot;
    size_t n = r->t->n_calls;
    for (size_t k = 0; k < 6 * n; k++) {
        size_t i = k % 2 ? (size_t)(ana_xorshift64(&rng2) % n) : (k / 2 + r->slot * n / 3) % n;
        ana_api_call c = ana_trace_call(r->t, i);
        r->wrong += memcmp(&c, &r->want[i], sizeof(c)) != 0;
    }
    return NULL;
}

Test(spill, packed_calls_read_by_threads_at_once)
{
    enum { N = 3 * ANA_CALLS_BLOCK * ANA_CALLS_CACHE, THREADS = 3 }; /* 3 caches' worth */
    setenv("ANATOMIST_SPILL_CALLS", "700", 1);
    ana_trace *t = ana_trace_new("calls", ANA_LOAD_ALL);
    for (size_t i = 0; i < N; i++) {
        ana_record r = { .kind = ANA_K_LAUNCH, .tid = 1 + i % 3, .time_ns = 1000 + i * 7 - i % 5 };
        r.u.launch = (ana_rec_launch){ .kernel = 1 + next64() % 9, .corr = 10 + i, .stack = 1 };
        ana_trace_add(t, &r);
    }
    ana_trace_finish(t);
    unsetenv("ANATOMIST_SPILL_CALLS");
    cr_assert(t->calls.raw == NULL && t->n_calls == N);
    static ana_api_call want[N]; /* one thread's reading, its times the ones added */
    for (size_t i = 0; i < N; i++) {
        want[i] = ana_trace_call(t, i);
        cr_assert_eq(want[i].time_ns, 1000 + i * 7 - i % 5, "call %zu", i);
    }
    pthread_t th[THREADS];
    slot_reader r[THREADS];
    for (unsigned k = 0; k < THREADS; k++) {
        r[k] = (slot_reader){ t, want, k + 1, 0 };
        cr_assert_eq(pthread_create(&th[k], NULL, read_in_slot, &r[k]), 0);
    }
    for (unsigned k = 0; k < THREADS; k++) {
        pthread_join(th[k], NULL);
        cr_assert_eq(r[k].wrong, 0, "thread %u read %zu calls wrong", k, r[k].wrong);
    }
    ana_trace_free(t);
}

/* Memory events at random times (many equal) come back in time order, equal times in file
 * order, however many runs they were spilled in (ANATOMIST_SPILL_MEMORY); a reader by
 * index (ana_mev_get: 16 cached blocks of 1,024, fewer than the events' 20 blocks, the
 * last one partial) finds each at its index in any order, and ana_mev_after each time's
 * end, against a sort done here. */
Test(spill, memory_events_in_time_order_and_by_index)
{
    enum { N = 20000 };
    static want_use want[N];
    const char *runs[] = { "0", "7", "64", "5000" };
    for (size_t r = 0; r < 4; r++) {
        setenv("ANATOMIST_SPILL_MEMORY", runs[r], 1);
        ana_trace *t = ana_trace_new("mev", ANA_LOAD_ALL);
        for (size_t i = 0; i < N; i++) {
            ana_record a = { .kind = ANA_K_ALLOC, .time_ns = 1000 + next64() % 7000, .tid = 9 };
            a.u.alloc = (ana_rec_alloc){ .api = 1, .ptr = 0x1000 + 64 * i, .size = 1 + i };
            want[i] = (want_use){ .time = a.time_ns, .order = i };
            ana_trace_add(t, &a);
        }
        ana_trace_finish(t);
        qsort(want, N, sizeof(want[0]), want_cmp);
        cr_assert_eq(t->n_mev, N, "runs %s", runs[r]);
        cr_assert_eq(ana_spill_in_file(&t->mev), strcmp(runs[r], "0") && atoi(runs[r]) < N);
        ana_spill_iter it;
        ana_spill_iter_begin(&it, &t->mev, 0);
        size_t n = 0;
        for (const ana_mev *e; (e = ana_spill_iter_next(&it)); n++)
            cr_assert(e->time_ns == want[n].time && e->size == 1 + want[n].order,
                      "runs %s: event %zu is the one written %llu at %llu", runs[r], n,
                      (unsigned long long)(e->size - 1), (unsigned long long)e->time_ns);
        ana_spill_iter_end(&it);
        cr_assert_eq(n, N, "runs %s", runs[r]);
        ana_mev_reader rd;
        ana_mev_reader_open(&rd, &t->mev);
        for (size_t k = 0; k < 4 * N; k++) {
            size_t i = k < N ? N - 1 - k : (size_t)(next64() % N); /* backwards, then at random */
            cr_assert_eq(ana_mev_get(&rd, i)->size, 1 + want[i].order, "runs %s: index %zu",
                         runs[r], i);
        }
        for (uint64_t time = 990; time < 8010; time += 7) {
            size_t after = 0;
            while (after < N && want[after].time <= time)
                after++;
            cr_assert_eq(ana_mev_after(&rd, time), after, "runs %s: after %llu", runs[r],
                         (unsigned long long)time);
        }
        ana_mev_reader_close(&rd);
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_MEMORY");
}

/* NVTX ranges at random times (many equal) come back in time order, equal times in file
 * order, however many runs they were spilled in (ANATOMIST_SPILL_RANGES), against a sort
 * done here. */
Test(spill, ranges_in_time_order_whatever_the_runs)
{
    enum { N = 5000 };
    static want_use want[N]; /* a range's time and its place in the file */
    const char *runs[] = { "0", "7", "64", "3000" };
    for (size_t r = 0; r < 4; r++) {
        setenv("ANATOMIST_SPILL_RANGES", runs[r], 1);
        ana_trace *t = ana_trace_new("ranges", ANA_LOAD_ALL);
        for (size_t i = 0; i < N; i++) {
            ana_record g = { .kind = ANA_K_RANGE, .time_ns = 100 + next64() % 900, .tid = 4 };
            g.u.range = (ana_rec_range){ .op = ANA_RANGE_MARK, .id = i,
                                         .name = { "mark", 4 } };
            want[i] = (want_use){ .time = g.time_ns, .order = i };
            ana_trace_add(t, &g);
        }
        ana_trace_finish(t);
        qsort(want, N, sizeof(want[0]), want_cmp);
        cr_assert_eq(t->libs.n_ranges, N, "runs %s", runs[r]);
        cr_assert_eq(ana_spill_in_file(&t->libs.ranges),
                     strcmp(runs[r], "0") && atoi(runs[r]) < N);
        ana_spill_iter it;
        ana_spill_iter_begin(&it, &t->libs.ranges, 0);
        size_t n = 0;
        for (const ana_range_ev *e; (e = ana_spill_iter_next(&it)); n++)
            cr_assert(e->time_ns == want[n].time && e->id == want[n].order,
                      "runs %s: range %zu is the one written %llu at %llu", runs[r], n,
                      (unsigned long long)e->id, (unsigned long long)e->time_ns);
        ana_spill_iter_end(&it);
        cr_assert_eq(n, N, "runs %s", runs[r]);
        ana_trace_free(t);
    }
    unsetenv("ANATOMIST_SPILL_RANGES");
}

/* The GPU time of NVTX ranges (analyses/nvtx.c): push/pop ranges on two threads, nested,
 * and start/end ranges that end on another thread, with kernels launched inside them, at
 * their exact bounds and outside; a kernel that took no time, a copy, a launch whose
 * kernel never ran, activities whose correlation id finds no call, two activities of one
 * call. Each row's GPU time against sums taken here, with the kernels sorted in memory and
 * in runs of three (ANATOMIST_SPILL_NVTX). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/nvtx.h"
#include "model/trace.h"
#include "model/util.h"
#include "../random.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

/* A kernel as the test sees it: its launch's thread and time, the GPU time it took. */
typedef struct nv_kernel {
    uint64_t tid, time, dur;
} nv_kernel;

/* A closed range as the test opened it. */
typedef struct nv_span {
    const char *name;
    int kind; /* ANA_RANGE_PUSH or ANA_RANGE_START */
    uint32_t depth;
    uint64_t tid, t0, t1;
} nv_span;

typedef struct nv_case {
    ana_trace *t;
    nv_kernel k[2048];
    size_t nk;
    nv_span s[64];
    size_t ns;
    uint64_t corr;
} nv_case;

static void range(nv_case *c, uint64_t tid, uint64_t time, int op, uint64_t id, const char *name)
{
    ana_record r = { .kind = ANA_K_RANGE, .tid = tid, .time_ns = time };
    r.u.range = (ana_rec_range){ .op = (uint64_t)op, .id = id,
                                 .name = { name ? name : "", name ? (uint32_t)strlen(name) : 0 } };
    ana_trace_add(c->t, &r);
}

/* A launch at time on tid; its kernel runs `runs` times (dur each) unless runs is 0. */
static void launch(nv_case *c, uint64_t tid, uint64_t time, uint64_t dur, int runs)
{
    uint64_t corr = ++c->corr;
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = tid, .time_ns = time };
    r.u.launch = (ana_rec_launch){ .kernel = 1 + corr % 3, .corr = corr };
    ana_trace_add(c->t, &r);
    for (int i = 0; i < runs; i++) {
        ana_record g = { .kind = ANA_K_GPU_KERNEL, .time_ns = time + 5 + (uint64_t)i * 1000 };
        g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = corr, .dur_ns = dur, .kernel = 1,
                                               .device = (int64_t)(corr % 2) };
        ana_trace_add(c->t, &g);
        if (dur)
            c->k[c->nk++] = (nv_kernel){ tid, time, dur };
    }
}

static void span(nv_case *c, const char *name, int kind, uint32_t depth, uint64_t tid,
                 uint64_t t0, uint64_t t1)
{
    c->s[c->ns++] = (nv_span){ name, kind, depth, tid, t0, t1 };
}

/* The trace; records in time order (launches before ranges of the same time and after,
 * both: the analysis must not care). */
static void build(nv_case *c)
{
    memset(c, 0, sizeof(*c));
    c->t = ana_trace_new("nvtx", ANA_LOAD_ALL);
    launch(c, 1, 90, 7, 1);   /* before every range */
    launch(c, 2, 100, 11, 1); /* at thread 2's push, before it in the file */
    range(c, 1, 100, ANA_RANGE_PUSH, 0, "outer");
    range(c, 2, 100, ANA_RANGE_PUSH, 0, "outer");
    launch(c, 1, 100, 13, 1); /* at thread 1's push, after it */
    launch(c, 1, 120, 17, 2); /* runs twice */
    range(c, 1, 120, ANA_RANGE_START, 7, "async");
    launch(c, 2, 120, 19, 1);
    launch(c, 1, 130, 0, 1); /* no GPU time */
    launch(c, 1, 140, 23, 0); /* never ran */
    ana_record m = { .kind = ANA_K_MEMCPY, .tid = 1, .time_ns = 145 };
    m.u.memcpy = (ana_rec_memcpy){ .dst = 0x7f0000000000ull, .src = 0x5000, .bytes = 64,
                                   .dir = 1, .corr = ++c->corr };
    ana_trace_add(c->t, &m);
    ana_record gm = { .kind = ANA_K_GPU_MEMCPY, .time_ns = 146 };
    gm.u.gpu_memcpy = (ana_rec_gpu_memcpy){ .corr = c->corr, .dur_ns = 29, .bytes = 64 };
    ana_trace_add(c->t, &gm); /* a copy: not a kernel */
    ana_record orphan = { .kind = ANA_K_GPU_KERNEL, .time_ns = 147 };
    orphan.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = 999999, .dur_ns = 31, .kernel = 1 };
    ana_trace_add(c->t, &orphan); /* its corr finds no call */
    range(c, 1, 150, ANA_RANGE_PUSH, 0, "inner");
    launch(c, 1, 150, 37, 1);
    launch(c, 2, 160, 41, 1);
    range(c, 1, 200, ANA_RANGE_START, 8, "async"); /* a range of no length at 200 */
    launch(c, 1, 200, 43, 1);
    launch(c, 2, 200, 47, 1);
    range(c, 1, 200, ANA_RANGE_POP, 0, NULL);
    range(c, 1, 200, ANA_RANGE_END, 8, NULL);
    span(c, "inner", ANA_RANGE_PUSH, 1, 1, 150, 200);
    span(c, "async", ANA_RANGE_START, 0, 1, 200, 200);
    /* many kernels on both threads, some at equal times, inside and outside */
    for (uint64_t time = 201; time < 300; time++)
        for (uint64_t n = ana_xorshift64(&rng) % 4; n; n--)
            launch(c, 1 + ana_xorshift64(&rng) % 2, time, 1 + ana_xorshift64(&rng) % 1000, 1);
    range(c, 2, 250, ANA_RANGE_END, 7, NULL); /* ended on another thread */
    span(c, "async", ANA_RANGE_START, 0, 1, 120, 250);
    launch(c, 2, 300, 53, 1);
    launch(c, 1, 300, 59, 1);
    range(c, 2, 300, ANA_RANGE_POP, 0, NULL);
    range(c, 1, 300, ANA_RANGE_POP, 0, NULL);
    span(c, "outer", ANA_RANGE_PUSH, 0, 2, 100, 300);
    span(c, "outer", ANA_RANGE_PUSH, 0, 1, 100, 300);
    launch(c, 1, 301, 61, 1); /* after every range */
    launch(c, 2, 400, 67, 1);
    range(c, 2, 410, ANA_RANGE_PUSH, 0, "empty"); /* no kernel inside */
    range(c, 2, 420, ANA_RANGE_POP, 0, NULL);
    span(c, "empty", ANA_RANGE_PUSH, 0, 2, 410, 420);
    ana_trace_finish(c->t);
}

/* The GPU time of the test's spans of row r, from the kernels as launched. */
static uint64_t want_gpu(const nv_case *c, const ana_libs *l, const ana_range_row *r)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < c->ns; i++) {
        const nv_span *s = &c->s[i];
        if (s->kind != r->kind || s->depth != r->depth || strcmp(s->name, ana_libs_str(l, r->name)))
            continue;
        for (size_t j = 0; j < c->nk; j++) {
            const nv_kernel *k = &c->k[j];
            if ((s->kind == ANA_RANGE_START || k->tid == s->tid) && k->time >= s->t0 &&
                k->time <= s->t1)
                sum += k->dur;
        }
    }
    return sum;
}

Test(nvtx, gpu_time_of_ranges_in_memory_and_spilled)
{
    const char *runs[] = { NULL, "3", "1", "0" };
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        const char *rs = runs[r] ? runs[r] : "default";
        if (runs[r])
            setenv("ANATOMIST_SPILL_NVTX", runs[r], 1);
        else
            unsetenv("ANATOMIST_SPILL_NVTX");
        nv_case *c = ana_xcalloc(1, sizeof(*c));
        rng = 0x2545f4914f6cdd1dull; /* the same trace each time */
        build(c);
        cr_assert_gt(c->nk, 100, "kernels: %zu", c->nk);
        ana_nvtx n;
        ana_nvtx_analyze(c->t, &n);
        cr_assert_eq(n.n_rows, 4, "runs %s: %zu rows", rs, n.n_rows);
        for (size_t i = 0; i < n.n_rows; i++) {
            const ana_range_row *row = &n.rows[i];
            size_t count = 0;
            for (size_t j = 0; j < c->ns; j++)
                count += c->s[j].kind == row->kind && c->s[j].depth == row->depth &&
                         !strcmp(c->s[j].name, ana_libs_str(&c->t->libs, row->name));
            cr_assert_eq(row->count, count, "runs %s, row %s", rs,
                         ana_libs_str(&c->t->libs, row->name));
            uint64_t want = want_gpu(c, &c->t->libs, row);
            cr_assert_eq(row->gpu_ns, want, "runs %s, row %s (kind %u): gpu %llu, want %llu",
                         rs, ana_libs_str(&c->t->libs, row->name), row->kind,
                         (unsigned long long)row->gpu_ns, (unsigned long long)want);
        }
        cr_assert_eq(n.unmatched_pops + n.unclosed_pushes + n.unmatched_ends + n.unclosed_starts,
                     0);
        ana_nvtx_free(&n);
        ana_trace_free(c->t);
        free(c);
    }
    unsetenv("ANATOMIST_SPILL_NVTX");
}

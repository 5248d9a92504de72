#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include "preload.h"
#include "varint.h"

/* Reads t's ring the way the collector does: records from tail to head, dt-chained. */
static int consume(ana_thread *t, uint64_t *prev_ns, uint64_t *sizes, int max)
{
    uint64_t tl = atomic_load(&t->ls->tail), h = atomic_load(&t->ls->head);
    uint8_t buf[1 << 17];
    size_t n = (size_t)(h - tl);
    cr_assert_leq(n, sizeof(buf));
    for (size_t i = 0; i < n; i++)
        buf[i] = t->ring[(tl + i) & (t->size - 1)];
    int count = 0;
    static uint8_t scratch_mem[4096];
    for (size_t at = 0; at < n;) {
        uint32_t kind;
        size_t plen, hn = ana_record_header(buf + at, n - at, &kind, &plen);
        cr_assert_gt(hn, 0);
        ana_record rec;
        ana_scratch sc = { scratch_mem, sizeof(scratch_mem), 0 };
        cr_assert_eq(ana_record_decode(kind, buf + at + hn, plen, *prev_ns, &rec, &sc), ANA_DEC_OK);
        *prev_ns = rec.time_ns;
        if (count < max)
            sizes[count] = rec.u.alloc.size;
        count++;
        at += hn + plen;
    }
    atomic_store(&t->ls->tail, h);
    return count;
}

Test(tbuf, records_round_trip_and_a_full_ring_counts_drops)
{
    ana_thread *t = ana_thread_self();
    cr_assert_not_null(t);
    cr_assert_eq(t, ana_thread_self(), "one buffer per thread");
    cr_assert_eq(t->size, 64 * 1024);
    uint64_t prev = 0, sizes[8192];
    int appended = 0;
    /* Fill well past the ring's capacity without consuming. */
    for (int i = 0; i < 8000; i++) {
        ana_record r = { .kind = ANA_K_ALLOC, .time_ns = 1000000 + (uint64_t)i * 3 };
        r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = 0x7f0000000000ull + (uint64_t)i * 4096,
                                     .size = (uint64_t)i, .stack = 5 };
        uint64_t before = atomic_load(&t->ls->head);
        ana_emit(t, &r);
        appended += atomic_load(&t->ls->head) != before;
    }
    uint64_t dropped = atomic_load(&t->ls->dropped);
    cr_expect_eq(appended + (int)dropped, 8000);
    cr_expect_gt(dropped, 0, "64 KiB cannot hold 8000 records of ~14 bytes");
    int got = consume(t, &prev, sizes, 8192);
    cr_expect_eq(got, appended);
    for (int i = 0; i < got; i++)
        cr_assert_eq(sizes[i], (uint64_t)i, "records come out in order");
    cr_expect_eq(prev, 1000000 + (uint64_t)(got - 1) * 3, "times survive the dt chain");
    /* Space is free again once consumed: wrapping around works. */
    for (int i = 0; i < 3000; i++) {
        ana_record r = { .kind = ANA_K_ALLOC, .time_ns = 2000000 + (uint64_t)i };
        r.u.alloc.size = 100000 + (uint64_t)i;
        ana_emit(t, &r);
        if (i % 1000 == 999) {
            int c = consume(t, &prev, sizes, 8192);
            cr_assert_eq(c, 1000);
            cr_assert_eq(sizes[999], 100000 + (uint64_t)i);
        }
    }
    cr_expect_eq(atomic_load(&t->ls->dropped), dropped, "no new drops while consumed in time");
}

static void *other(void *arg)
{
    *(ana_thread **)arg = ana_thread_self();
    return NULL;
}

Test(tbuf, threads_get_their_own_buffers_and_dead_ones_are_recycled)
{
    ana_thread *mine = ana_thread_self(), *a = NULL, *b = NULL;
    pthread_t th;
    pthread_create(&th, NULL, other, &a);
    pthread_join(th, NULL);
    cr_assert_not_null(a);
    cr_expect_neq(a, mine);
    cr_expect_eq(atomic_load(&a->state), ANA_T_DEAD, "an exited thread's buffer is DEAD");
    atomic_store(&a->state, ANA_T_FREE); /* what the collector does once it is drained */
    pthread_create(&th, NULL, other, &b);
    pthread_join(th, NULL);
    cr_expect_eq(b, a, "a FREE buffer is reused");
}

/* The hot path's encoders (encode_fast.h) against the table encoder (codec.c): byte for
 * byte, on random records of every fast kind, at every time resolution. */
#include <criterion/criterion.h>
#include <string.h>
#include "encode_fast.h"
#include "records.h"
#include "../random.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next64(void) { return ana_xorshift64(&rng); }
static uint64_t value(void) { return ana_random_value(&rng); }

static uint64_t ips[2][200];
static char name[70000];

/* A random record of `kind`: every 8-byte field of its struct random. */
static void fill(ana_record *r, uint32_t kind)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->time_ns = value();
    uint64_t *w = (uint64_t *)&r->u;
    size_t words = 0;
    switch (kind) {
    case ANA_K_ALLOC: words = sizeof(ana_rec_alloc) / 8; break;
    case ANA_K_FREE: words = sizeof(ana_rec_free) / 8; break;
    case ANA_K_MEMCPY: words = sizeof(ana_rec_memcpy) / 8; break;
    case ANA_K_MEMSET: words = sizeof(ana_rec_memset) / 8; break;
    case ANA_K_VMM: words = sizeof(ana_rec_vmm) / 8; break;
    case ANA_K_LAUNCH: words = offsetof(ana_rec_launch, ptrs) / 8; break;
    case ANA_K_RANGE: words = offsetof(ana_rec_range, name) / 8; break;
    }
    for (size_t i = 0; i < words; i++)
        w[i] = value();
    if (kind == ANA_K_LAUNCH) {
        /* 0..64 words usually; now and then more than 128 (a payload over 16 KiB). */
        uint32_t n = (next64() & 15) == 0 ? 150 + (uint32_t)(next64() % 50) : (uint32_t)(next64() % 65);
        for (uint32_t i = 0; i < n; i++) {
            ips[0][i] = value();
            ips[1][i] = (next64() % 4096) * 8;
        }
        r->u.launch.ptrs = (ana_frames){ ips[0], n };
        r->u.launch.ptr_at = (ana_frames){ ips[1], n };
    }
    if (kind == ANA_K_RANGE) {
        uint64_t pick = next64() % 8;
        uint32_t n = pick == 0 ? 0 : pick == 1 ? 200 + (uint32_t)(next64() % 20000) : (uint32_t)(next64() % 60);
        for (uint32_t i = 0; i < n; i++)
            name[i] = (char)('a' + next64() % 26);
        r->u.range.name = (ana_str){ pick == 2 ? NULL : name, n };
    }
}

static const uint32_t kinds[] = { ANA_K_ALLOC, ANA_K_FREE, ANA_K_LAUNCH, ANA_K_MEMCPY,
                                  ANA_K_MEMSET, ANA_K_VMM, ANA_K_RANGE };

static uint8_t want[1 << 17], got[1 << 17];

Test(encode_fast, byte_identical_to_the_table_encoder)
{
    for (int iter = 0; iter < 200000; iter++) {
        ana_record r;
        fill(&r, kinds[iter % 7]);
        unsigned shift = (next64() & 1) ? 0 : (unsigned)(next64() % (ANA_TIME_SHIFT_MAX + 1));
        uint64_t prev = (next64() & 1) ? (r.time_ns >> shift) - (next64() % 100000) : value();
        ana_record ticks = r;
        ana_record_to_ticks(&ticks, shift);
        size_t n = ana_record_encode(want, sizeof(want), &ticks, prev);
        cr_assert_gt(n, 0);
        size_t max = ana_record_encode_max(&r);
        cr_assert_gt(max, 0, "kind %u is a fast kind", r.kind);
        memset(got, 0x5a, max + 64);
        size_t m = ana_record_encode_fast(got, max, &r, prev, shift);
        cr_assert_eq(m, n, "kind %u shift %u: %zu bytes, the table encoder %zu", r.kind, shift, m, n);
        cr_assert(memcmp(got, want, n) == 0, "kind %u shift %u: bytes differ", r.kind, shift);
        for (size_t i = max; i < max + 64; i++)
            cr_assert_eq(got[i], 0x5a, "kind %u wrote past its bound %zu", r.kind, max);
    }
}

Test(encode_fast, small_buffers_and_other_kinds_take_the_table_encoder)
{
    ana_record r;
    fill(&r, ANA_K_ALLOC);
    r.u.alloc.ptr = 0x7f0000001000ull;
    size_t n = ana_record_encode(want, sizeof(want), &r, 7);
    cr_assert_gt(n, 0);
    /* Less room than the worst case: what the table encoder gives with that room. */
    cr_assert_lt(n, ana_record_encode_max(&r));
    for (size_t cap = n - 1; cap < n + 12; cap++) {
        size_t w = ana_record_encode(want, cap, &r, 7);
        cr_assert_eq(ana_record_encode_fast(got, cap, &r, 7, 0), w, "cap %zu", cap);
        cr_assert(memcmp(got, want, w) == 0);
    }
    /* A kind without a fast encoder, with a time resolution. */
    ana_record k = { .kind = ANA_K_GPU_KERNEL, .time_ns = 123456789 };
    k.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = 5, .dur_ns = 3000, .kernel = 2, .grid_x = 64 };
    cr_assert_eq(ana_record_encode_max(&k), 0);
    ana_record t = k;
    ana_record_to_ticks(&t, 10);
    n = ana_record_encode(want, sizeof(want), &t, 100);
    cr_assert_eq(ana_record_encode_fast(got, sizeof(got), &k, 100, 10), n);
    cr_assert(memcmp(got, want, n) == 0);
    cr_assert_eq(k.time_ns, 123456789, "the caller's record is left as it was");
}

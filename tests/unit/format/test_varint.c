#include <criterion/criterion.h>
#include <string.h>

#include "varint.h"

Test(varint, round_trips_edge_values)
{
    const uint64_t vals[] = { 0, 1, 127, 128, 255, 16383, 16384, (1ull << 32) - 1, 1ull << 32,
                              (1ull << 56) + 3, UINT64_MAX - 1, UINT64_MAX };
    /* Expected lengths: ceil(bits/7), computed by hand. */
    const size_t lens[] = { 1, 1, 1, 2, 2, 2, 3, 5, 5, 9, 10, 10 };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        uint8_t b[ANA_VARINT_MAX];
        size_t n = ana_varint_put(b, vals[i]);
        cr_expect_eq(n, lens[i], "length of %llu", (unsigned long long)vals[i]);
        uint64_t back = 0;
        cr_expect_eq(ana_varint_get(b, n, &back), n);
        cr_expect_eq(back, vals[i]);
        /* One byte short must fail, not read past the end. */
        cr_expect_eq(ana_varint_get(b, n - 1, &back), 0);
    }
}

Test(varint, known_encoding_of_300)
{
    uint8_t b[ANA_VARINT_MAX];
    cr_assert_eq(ana_varint_put(b, 300), 2);
    cr_expect_eq(b[0], 0xAC);
    cr_expect_eq(b[1], 0x02);
}

Test(varint, rejects_overlong_and_overflowing)
{
    uint8_t eleven[11];
    memset(eleven, 0x80, sizeof(eleven));
    eleven[10] = 0;
    uint64_t v;
    cr_expect_eq(ana_varint_get(eleven, sizeof(eleven), &v), 0);
    uint8_t over[10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
    cr_expect_eq(ana_varint_get(over, sizeof(over), &v), 0);
}

Test(zigzag, maps_small_magnitudes_to_small_codes)
{
    cr_expect_eq(ana_zigzag(0), 0);
    cr_expect_eq(ana_zigzag(-1), 1);
    cr_expect_eq(ana_zigzag(1), 2);
    cr_expect_eq(ana_zigzag(-2), 3);
    cr_expect_eq(ana_zigzag(INT64_MIN), UINT64_MAX);
    const int64_t vals[] = { 0, 5, -5, INT64_MAX, INT64_MIN, -123456789 };
    for (size_t i = 0; i < 6; i++)
        cr_expect_eq(ana_unzigzag(ana_zigzag(vals[i])), vals[i]);
}

/* The decoder of LEB128 as docs/trace-format.md defines it, a byte at a time. */
static size_t ref_get(const uint8_t *p, size_t avail, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < avail && i < 10; i++) {
        if (i == 9 && p[i] > 1)
            return 0;
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

static uint64_t xs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    xs ^= xs << 13;
    xs ^= xs >> 7;
    xs ^= xs << 17;
    return xs;
}

/* With 8 bytes or more to read, values of every length and random bytes (ends anywhere,
 * none, overlong) decode as the byte-at-a-time rule says, by ana_varint_get and by the
 * one-load ana_varint_get8 (which leaves varints over 8 bytes to the other). */
Test(varint, long_buffers_decode_as_the_byte_rule)
{
    for (int round = 0; round < 200000; round++) {
        uint8_t b[24];
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (uint8_t)rnd();
        size_t avail = 8 + (size_t)(rnd() % 17);
        if (round % 2) {
            unsigned bits = (unsigned)(rnd() % 65);
            uint64_t v = bits == 64 ? rnd() : rnd() & ((1ull << bits) - 1);
            size_t n = ana_varint_put(b, v);
            uint64_t back = ~v;
            if (avail < n) { /* it ends early */
                cr_assert_eq(ana_varint_get(b, avail, &back), 0);
                continue;
            }
            cr_assert_eq(ana_varint_get(b, avail, &back), n);
            cr_assert_eq(back, v, "value %llu", (unsigned long long)v);
            back = ~v;
            cr_assert_eq(ana_varint_get8(b, &back), n <= 8 ? n : 0);
            if (n <= 8)
                cr_assert_eq(back, v, "value %llu", (unsigned long long)v);
        } else {
            if (round % 4 == 0) /* long runs of continuation bytes */
                for (size_t i = 0; i < rnd() % 12; i++)
                    b[i] |= 0x80;
            uint64_t x = 1, y = 2, z = 3;
            size_t nx = ana_varint_get(b, avail, &x), ny = ref_get(b, avail, &y);
            cr_assert_eq(nx, ny, "round %d", round);
            if (ny)
                cr_assert_eq(x, y, "round %d", round);
            size_t nz = ana_varint_get8(b, &z); /* up to 8 bytes, else 0 */
            cr_assert_eq(nz, ny <= 8 ? ny : 0, "round %d", round);
            if (nz)
                cr_assert_eq(z, y, "round %d", round);
        }
    }
}

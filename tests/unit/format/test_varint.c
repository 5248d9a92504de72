#include <criterion/criterion.h>
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

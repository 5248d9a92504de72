/* Small pure pieces of the analyzer: CUDA error names, the hash map, the stack table,
 * sizes, JSON escaping, demangling. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_errors.h"
#include "model/idmap.h"
#include "model/json.h"
#include "model/stacks.h"
#include "model/u64map.h"
#include "model/util.h"

#include "../random.h"

Test(cuda_error, names)
{
    char buf[32];
    cr_expect_str_eq(ana_cuda_error_name(0), "cudaSuccess");
    cr_expect_str_eq(ana_cuda_error_name(1), "cudaErrorInvalidValue");
    cr_expect_str_eq(ana_cuda_error_name(2), "cudaErrorMemoryAllocation");
    cr_expect_str_eq(ana_cuda_error_name(35), "cudaErrorInsufficientDriver");
    cr_expect_str_eq(ana_cuda_error_name(98), "cudaErrorInvalidDeviceFunction");
    cr_expect_str_eq(ana_cuda_error_name(100), "cudaErrorNoDevice");
    cr_expect_str_eq(ana_cuda_error_name(101), "cudaErrorInvalidDevice");
    cr_expect_str_eq(ana_cuda_error_name(400), "cudaErrorInvalidResourceHandle");
    cr_expect_str_eq(ana_cuda_error_name(999), "cudaErrorUnknown");
    cr_expect_null(ana_cuda_error_name(12345));
    cr_expect_null(ana_cuda_error_name(-1));
    cr_expect_str_eq(ana_cuda_error_describe(12345, buf, sizeof(buf)), "error 12345");
    cr_expect_str_eq(ana_cuda_error_describe(2, buf, sizeof(buf)), "cudaErrorMemoryAllocation");
}

Test(u64map, put_get_delete_under_churn)
{
    ana_u64map m;
    uint64_t v;
    ana_u64map_init(&m);
    for (uint64_t i = 0; i < 10000; i++)
        ana_u64map_put(&m, i * 4096, i);
    for (uint64_t i = 0; i < 10000; i += 2)
        cr_assert(ana_u64map_del(&m, i * 4096, NULL));
    cr_expect_eq(m.n, 5000);
    for (uint64_t i = 0; i < 10000; i++) {
        int found = ana_u64map_get(&m, i * 4096, &v);
        cr_assert_eq(found, (int)(i & 1), "key %llu", (unsigned long long)i);
        if (found)
            cr_assert_eq(v, i);
    }
    ana_u64map_put(&m, 0, 42); /* key 0 is a key like any other */
    cr_expect(ana_u64map_get(&m, 0, &v) && v == 42);
    cr_expect(!ana_u64map_del(&m, 12345, NULL));
    ana_u64map_free(&m);
}

/* ids to indexes: a table when they are dense, a map when they are far apart; the first
 * value of an id stays; ids never put are not found. */
Test(idmap, dense_and_sparse_ids)
{
    for (int sparse = 0; sparse < 2; sparse++) {
        enum { N = 5000 };
        uint64_t step = sparse ? 1000003 : 3, lo = 77;
        ana_idmap x;
        ana_idmap_init(&x, lo, lo + (N - 1) * step, N);
        cr_expect_eq(x.at != NULL, !sparse, "a table for dense ids only");
        for (size_t i = 0; i < N; i++)
            cr_expect_eq(ana_idmap_put(&x, lo + i * step, i), 1);
        cr_expect_eq(ana_idmap_put(&x, lo + 7 * step, 99), 0, "an id put twice keeps its first");
        for (size_t i = 0; i < N; i++) {
            cr_expect_eq(ana_idmap_get(&x, lo + i * step), i);
            cr_expect_eq(ana_idmap_get(&x, lo + i * step + 1), SIZE_MAX);
        }
        cr_expect_eq(ana_idmap_get(&x, 0), SIZE_MAX);
        cr_expect_eq(ana_idmap_get(&x, lo - 1), SIZE_MAX);
        cr_expect_eq(ana_idmap_get(&x, UINT64_MAX), SIZE_MAX);
        ana_idmap_free(&x);
    }
    ana_idmap none;
    ana_idmap_init(&none, UINT64_MAX, 0, 0); /* no ids */
    cr_expect_eq(ana_idmap_get(&none, 5), SIZE_MAX);
    ana_idmap_free(&none);
}

/* Sets of ids: bits when dense, a map when far apart; ids never added are not in. */
Test(idmap, id_sets_dense_and_sparse)
{
    for (int sparse = 0; sparse < 2; sparse++) {
        enum { N = 4000 };
        uint64_t step = sparse ? 99991 : 5, lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < N; i++)
            ana_id_span(1000 + i * step, &lo, &hi);
        ana_id_span(0, &lo, &hi); /* no id: left out */
        cr_expect_eq(lo, 1000);
        cr_expect_eq(hi, 1000 + (N - 1) * step);
        ana_idset x;
        ana_idset_init(&x, lo, hi, N);
        cr_expect_eq(x.bits != NULL, !sparse, "bits for dense ids only");
        for (size_t i = 0; i < N; i += 2) /* every other one */
            ana_idset_add(&x, 1000 + i * step);
        for (size_t i = 0; i < N; i++) {
            cr_expect_eq(ana_idset_has(&x, 1000 + i * step), i % 2 == 0, "id %zu", i);
            cr_expect_eq(ana_idset_has(&x, 1000 + i * step + 1), 0);
        }
        cr_expect_eq(ana_idset_has(&x, 999), 0);
        cr_expect_eq(ana_idset_has(&x, UINT64_MAX), 0);
        ana_idset_free(&x);
    }
}

Test(stacks, identical_frames_merge_to_the_smallest_id)
{
    ana_stacks s;
    uint64_t a[] = { 1, 2, 3 }, b[] = { 1, 2, 4 };
    const uint64_t *ip;
    ana_stacks_init(&s);
    ana_stacks_add(&s, 9, a, 3);
    ana_stacks_add(&s, 4, a, 3);
    ana_stacks_add(&s, 5, b, 3);
    ana_stacks_add(&s, 4, b, 3); /* a second definition of 4 is ignored */
    ana_stacks_resolve(&s);
    cr_expect_eq(ana_stacks_canon(&s, 9), 4);
    cr_expect_eq(ana_stacks_canon(&s, 4), 4);
    cr_expect_eq(ana_stacks_canon(&s, 5), 5);
    cr_expect_eq(ana_stacks_canon(&s, 77), 77); /* undefined: itself, no frames */
    cr_expect_eq(ana_stacks_frames(&s, 77, &ip), 0);
    cr_expect_eq(ana_stacks_canon(&s, 0), 0);
    cr_assert_eq(ana_stacks_frames(&s, 9, &ip), 3);
    cr_expect_eq(ip[2], 3);
    ana_stacks_free(&s);
}

Test(util, sizes)
{
    uint64_t v;
    cr_expect(ana_parse_size("16GiB", &v) == 0 && v == 16ull << 30);
    cr_expect(ana_parse_size("512M", &v) == 0 && v == 512ull << 20);
    cr_expect(ana_parse_size("1.5 gb", &v) == 0 && v == 1500000000ull);
    cr_expect(ana_parse_size("1000000000", &v) == 0 && v == 1000000000ull);
    cr_expect(ana_parse_size("0", &v) != 0);
    cr_expect(ana_parse_size("lots", &v) != 0);
    cr_expect(ana_parse_size("12Q", &v) != 0);
    cr_expect(ana_parse_size("99999999999999999999", &v) != 0);
    cr_expect(ana_parse_uint("42", 100, &v) == 0 && v == 42);
    cr_expect(ana_parse_uint("420", 100, &v) != 0);
    cr_expect(ana_parse_uint("-1", 100, &v) != 0);
    cr_expect(ana_parse_uint("", 100, &v) != 0);
}

static int test_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every rank of arrays with few distinct values (long runs of equals), many, all equal,
 * sorted and reversed, against a sorted copy. */
Test(util, select_every_rank)
{
    uint64_t seed = 0x5e1ec7, v[257], w[257], sorted[257];
    for (int round = 0; round < 40; round++) {
        size_t n = 1 + (size_t)(ana_xorshift64(&seed) % 257);
        uint64_t mod = round % 4 == 0 ? 1 : round % 4 == 1 ? 3 : round % 4 == 2 ? 50 : UINT64_MAX;
        for (size_t i = 0; i < n; i++)
            v[i] = mod == UINT64_MAX ? ana_xorshift64(&seed) : ana_xorshift64(&seed) % mod;
        if (round % 10 == 8)
            ana_sort(v, n, sizeof(*v), test_u64_cmp);
        if (round % 10 == 9)
            for (size_t i = 0; i < n; i++)
                v[i] = n - i;
        memcpy(sorted, v, n * sizeof(*v));
        qsort(sorted, n, sizeof(*v), test_u64_cmp);
        for (size_t k = 0; k < n; k++) {
            memcpy(w, v, n * sizeof(*v));
            cr_assert_eq(ana_select_u64(w, n, k), sorted[k], "round %d, n %zu, k %zu", round, n, k);
            qsort(w, n, sizeof(*w), test_u64_cmp); /* only reordered */
            cr_assert(memcmp(w, sorted, n * sizeof(*w)) == 0, "round %d: values changed", round);
        }
    }
}

/* The bits of random words, of words with one bit, none and all, counted one by one. */
Test(util, popcount_counts_every_bit)
{
    uint64_t seed = 0xb17c0;
    for (int i = 0; i < 10000; i++) {
        uint64_t x = i < 64 ? 1ull << i : i == 64 ? 0 : i == 65 ? ~0ull : ana_xorshift64(&seed);
        if (i % 3 == 0 && i > 65)
            x &= ana_xorshift64(&seed); /* sparser */
        unsigned want = 0;
        for (int b = 0; b < 64; b++)
            want += (unsigned)(x >> b & 1);
        cr_assert_eq(ana_popcount64(x), want, "%llx", (unsigned long long)x);
    }
}

Test(util, formatting_and_demangling)
{
    char buf[32];
    ana_fmt_bytes(600, buf, sizeof(buf));
    cr_expect_str_eq(buf, "600 B");
    ana_fmt_bytes(3ull << 30, buf, sizeof(buf));
    cr_expect_str_eq(buf, "3.00 GiB");
    ana_fmt_ns(3000, buf, sizeof(buf));
    cr_expect_str_eq(buf, "3.000 us");
    char *d = ana_demangle("_Z6matmulPKfS0_Pfi");
    cr_expect_str_eq(d, "matmul(float const*, float const*, float*, int)");
    free(d);
    cr_expect_null(ana_demangle("relu_kernel"));
    cr_expect_null(ana_demangle("_Znot valid"));
}

Test(json, escapes_and_repairs_utf8)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ana_json j;
    ana_json_init(&j, f);
    ana_json_obj_begin(&j);
    ana_json_kstr(&j, "s", "a\"b\\c\n\x01\xff\xc3\xa9");
    ana_json_key(&j, "a");
    ana_json_arr_begin(&j);
    ana_json_u64(&j, 1);
    ana_json_null(&j);
    ana_json_arr_end(&j);
    ana_json_key(&j, "e");
    ana_json_arr_begin(&j);
    ana_json_arr_end(&j);
    ana_json_obj_end(&j);
    ana_json_finish(&j);
    fclose(f);
    cr_expect_str_eq(out, "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001\\ufffd\xc3\xa9\",\n"
                          "  \"a\": [\n    1,\n    null\n  ],\n  \"e\": []\n}\n");
    free(out);
}

Test(json, fixed_point_and_inline_nesting)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ana_json j;
    ana_json_init(&j, f);
    j.inline_depth = 1; /* what is nested in the top-level array stays on one line */
    ana_json_arr_begin(&j);
    ana_json_fixed(&j, 1234567, 3);
    ana_json_fixed(&j, 5, 3);
    ana_json_fixed(&j, 42, 0);
    ana_json_obj_begin(&j);
    ana_json_ku64(&j, "a", 1);
    ana_json_key(&j, "b");
    ana_json_arr_begin(&j);
    ana_json_fixed(&j, 18446744073709551615ull, 9);
    ana_json_arr_end(&j);
    ana_json_obj_end(&j);
    ana_json_arr_end(&j);
    ana_json_finish(&j);
    fclose(f);
    cr_expect_str_eq(out, "[\n  1234.567,\n  0.005,\n  42,\n  {\"a\": 1,\"b\": [18446744073.709551615]}\n]\n");
    free(out);
}

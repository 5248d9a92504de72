/* The streaming JSON reader (jsonr.h): tokens, string escapes, numbers and their exact
 * conversion, nesting and its limit, truncated versus malformed text with the offsets of
 * errors, skipping, and gzip input through a file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "model/jsonr.h"

/* Tokens of text until END or ERROR; returns how many were read, last in *last. */
static int drain(const char *text, int *last, ana_jsonr **out)
{
    ana_jsonr *r = ana_jsonr_open_mem(text, strlen(text));
    int n = 0, t;
    while ((t = ana_jsonr_next(r)) > 0)
        n++;
    *last = t;
    if (out)
        *out = r;
    else
        ana_jsonr_close(r);
    return n;
}

Test(jsonr, tokens_in_order)
{
    static const char text[] = " {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}} ";
    static const int want[] = { ANA_JSON_OBJ_BEGIN, ANA_JSON_KEY, ANA_JSON_ARR_BEGIN,
                                ANA_JSON_NUMBER, ANA_JSON_NUMBER, ANA_JSON_TRUE, ANA_JSON_FALSE,
                                ANA_JSON_NULL, ANA_JSON_STRING, ANA_JSON_ARR_END, ANA_JSON_KEY,
                                ANA_JSON_OBJ_BEGIN, ANA_JSON_OBJ_END, ANA_JSON_OBJ_END,
                                ANA_JSON_END };
    ana_jsonr *r = ana_jsonr_open_mem(text, strlen(text));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int t = ana_jsonr_next(r);
        cr_assert_eq(t, want[i], "token %zu: %d, want %d", i, t, want[i]);
        if (i == 1)
            cr_expect_str_eq(ana_jsonr_text(r, NULL), "a");
        if (i == 4)
            cr_expect_str_eq(ana_jsonr_text(r, NULL), "-2.5e3");
        if (i == 3)
            cr_expect_eq(ana_jsonr_depth(r), 2);
    }
    cr_expect_eq(ana_jsonr_next(r), ANA_JSON_END); /* stays at the end */
    ana_jsonr_close(r);
}

Test(jsonr, string_escapes)
{
    static const char text[] =
        "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20ac\", \"\\ud83d\\ude00\", "
        "\"\\ud83d\", \"\\ude00x\", \"\\ud83dA\", \"\\u0041\\u0000z\", \"\xc3\xa9\"]";
    static const char *const want[] = { "a\"b\\c/d\b\f\n\r\t", "\xc3\xa9\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80", "\xef\xbf\xbd", "\xef\xbf\xbdx",
                                        "\xef\xbf\xbd" "A", "A", "\xc3\xa9" };
    ana_jsonr *r = ana_jsonr_open_mem(text, strlen(text));
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_ARR_BEGIN);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t len;
        cr_assert_eq(ana_jsonr_next(r), ANA_JSON_STRING, "%zu: %s", i, ana_jsonr_error(r));
        cr_expect_str_eq(ana_jsonr_text(r, &len), want[i], "string %zu", i);
        if (i == 6)
            cr_expect_eq(len, 3); /* "A", NUL, "z" */
    }
    ana_jsonr_close(r);
}

Test(jsonr, bad_strings)
{
    static const char *const bad[] = { "\"a\\x\"", "\"\\u12G4\"", "\"a\tb\"", "\"a\nb\"" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int last;
        ana_jsonr *r;
        drain(bad[i], &last, &r);
        cr_expect_eq(last, ANA_JSON_ERROR, "%s", bad[i]);
        cr_expect_eq(ana_jsonr_truncated(r), 0, "%s", bad[i]);
        ana_jsonr_close(r);
    }
}

Test(jsonr, numbers_validated)
{
    static const char *const good[] = { "0", "-0", "1.5", "1e3", "1E+3", "-1.25e-2", "123456789012345678901234567890" };
    static const char *const bad[] = { "01", "-", "1.", ".5", "1e", "+1", "1.2.3", "--1", "0x10" };
    int last;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_expect_eq(drain(good[i], &last, NULL), 1, "%s", good[i]);
        cr_expect_eq(last, ANA_JSON_END, "%s", good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        drain(bad[i], &last, NULL);
        cr_expect_eq(last, ANA_JSON_ERROR, "%s", bad[i]);
    }
}

Test(jsonr, decimal_exact)
{
    static const struct { const char *text; int scale; int64_t want; } cases[] = {
        { "1428625746340.715", 3, 1428625746340715 }, { "4458676522690.655", 3, 4458676522690655 },
        { "1623142623460111", 3, 1623142623460111000 }, { "0.0004", 3, 0 }, { "0.0005", 3, 1 },
        { "2.9995", 3, 3000 }, { "-1.5", 0, -2 }, { "1.5e2", 0, 150 }, { "15e-1", 0, 2 },
        { "-18317312", 0, -18317312 }, { "0", 3, 0 }, { "9223372036854775807", 0, INT64_MAX },
        { "-9223372036854775808", 0, INT64_MIN }, { "1e-400", 3, 0 }, { "0e999999", 3, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = 12345;
        cr_expect_eq(ana_jsonr_decimal(cases[i].text, strlen(cases[i].text), cases[i].scale, &v), 0,
                     "%s", cases[i].text);
        cr_expect_eq(v, cases[i].want, "%s: %lld", cases[i].text, (long long)v);
    }
    int64_t v;
    cr_expect_eq(ana_jsonr_decimal("9223372036854775808", 19, 0, &v), -1);
    cr_expect_eq(ana_jsonr_decimal("1e30", 4, 0, &v), -1);
    cr_expect_eq(ana_jsonr_decimal("1e99999", 7, 3, &v), -1);
    cr_expect_eq(ana_jsonr_decimal("abc", 3, 0, &v), -1);
}

Test(jsonr, depth_limit)
{
    size_t n = ANA_JSONR_MAX_DEPTH + 1;
    char *deep = calloc(2 * n + 1, 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    int last;
    ana_jsonr *r;
    drain(deep, &last, &r);
    cr_expect_eq(last, ANA_JSON_ERROR);
    cr_expect_eq(ana_jsonr_offset(r), ANA_JSONR_MAX_DEPTH);
    cr_expect_neq(strstr(ana_jsonr_error(r), "nesting"), NULL, "%s", ana_jsonr_error(r));
    ana_jsonr_close(r);
    deep[n - 1] = ' '; /* exactly the limit: fine */
    deep[n] = ' ';
    cr_expect_eq(drain(deep, &last, NULL), 2 * ANA_JSONR_MAX_DEPTH);
    cr_expect_eq(last, ANA_JSON_END);
    free(deep);
}

Test(jsonr, truncated_versus_malformed)
{
    static const struct { const char *text; int truncated; uint64_t offset; } cases[] = {
        { "{\"a\": [1, 2", 1, 11 }, { "{\"a\": \"abc", 1, 10 }, { "{\"a\"", 1, 4 },
        { "[tru", 1, 4 }, { "{\"a\": 1,", 1, 8 }, { "[\"\\u12", 1, 6 },
        { "{\"a\": 1 \"b\": 2}", 0, 8 }, { "[1, 2}", 0, 5 }, { "{\"a\" 1}", 0, 5 },
        { "{1: 2}", 0, 1 }, { "[1] [2]", 0, 4 }, { "[nul]", 0, 4 }, { "[1,]", 0, 3 },
        { "", 0, 0 }, { "   ", 0, 3 }, { "[01]", 0, 1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int last;
        ana_jsonr *r;
        drain(cases[i].text, &last, &r);
        cr_expect_eq(last, ANA_JSON_ERROR, "'%s'", cases[i].text);
        cr_expect_eq(ana_jsonr_truncated(r), cases[i].truncated, "'%s': %s", cases[i].text,
                     ana_jsonr_error(r));
        cr_expect_eq(ana_jsonr_offset(r), cases[i].offset, "'%s': offset %llu (%s)",
                     cases[i].text, (unsigned long long)ana_jsonr_offset(r), ana_jsonr_error(r));
        cr_expect_eq(ana_jsonr_next(r), ANA_JSON_ERROR); /* sticky */
        ana_jsonr_close(r);
    }
}

Test(jsonr, skip_subtrees)
{
    static const char text[] =
        "{\"skip\": {\"a\": [1, {\"b\": \"x\\\"]}\"}], \"c\": {}}, \"keep\": 7, \"s\": \"v\"}";
    ana_jsonr *r = ana_jsonr_open_mem(text, strlen(text));
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_OBJ_BEGIN);
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_KEY);
    int t = ana_jsonr_next(r);
    cr_assert_eq(t, ANA_JSON_OBJ_BEGIN);
    cr_assert_eq(ana_jsonr_skip(r, t), 0);
    cr_expect_eq(ana_jsonr_depth(r), 1);
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_KEY);
    cr_expect_str_eq(ana_jsonr_text(r, NULL), "keep");
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_NUMBER);
    cr_expect_eq(ana_jsonr_skip(r, ANA_JSON_NUMBER), 0); /* a scalar: nothing to skip */
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_KEY);
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_STRING);
    cr_expect_str_eq(ana_jsonr_text(r, NULL), "v");
    cr_expect_eq(ana_jsonr_next(r), ANA_JSON_OBJ_END);
    cr_expect_eq(ana_jsonr_next(r), ANA_JSON_END);
    ana_jsonr_close(r);
    /* skipping into a truncated subtree reports the truncation */
    r = ana_jsonr_open_mem("[[1, [2, ", 9);
    cr_assert_eq(ana_jsonr_next(r), ANA_JSON_ARR_BEGIN);
    cr_assert_eq(ana_jsonr_skip(r, ana_jsonr_next(r)), -1);
    cr_expect_eq(ana_jsonr_truncated(r), 1);
    ana_jsonr_close(r);
}

/* Writes text gzip-compressed (cut to `keep` bytes of the compressed stream when > 0). */
static void write_gz(const char *path, const char *text, size_t keep)
{
    uLongf cap = compressBound(strlen(text)) + 64;
    unsigned char *buf = malloc(cap);
    z_stream z = { 0 };
    cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)text;
    z.avail_in = (uInt)strlen(text);
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    deflateEnd(&z);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(buf, 1, keep && keep < n ? keep : n, f);
    fclose(f);
    free(buf);
}

Test(jsonr, gzip_file)
{
    /* larger than the reader's block, so tokens cross refills */
    size_t n = 200000;
    char *text = malloc(n * 12 + 16), *p = text;
    p += sprintf(p, "[");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s\"k%zu\"", i ? "," : "", i);
    sprintf(p, "]");
    char path[] = "/tmp/ana-jsonr-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    write_gz(path, text, 0);
    char msg[256];
    ana_jsonr *r = ana_jsonr_open(path, msg, sizeof(msg));
    cr_assert_not_null(r, "%s", msg);
    cr_expect_eq(ana_jsonr_is_gzip(r), 1);
    int t, strings = 0, ok = 1;
    char want[32];
    while ((t = ana_jsonr_next(r)) > 0)
        if (t == ANA_JSON_STRING) {
            snprintf(want, sizeof(want), "k%d", strings++);
            ok &= strcmp(ana_jsonr_text(r, NULL), want) == 0;
        }
    cr_expect_eq(t, ANA_JSON_END, "%s", ana_jsonr_error(r));
    cr_expect_eq(strings, (int)n);
    cr_expect(ok);
    cr_expect_eq(ana_jsonr_bytes_read(r), strlen(text));
    ana_jsonr_close(r);
    /* the stream cut short: an error marked truncated, every string before it read */
    write_gz(path, text, 30000);
    r = ana_jsonr_open(path, msg, sizeof(msg));
    cr_assert_not_null(r);
    strings = 0;
    while ((t = ana_jsonr_next(r)) > 0)
        strings += t == ANA_JSON_STRING;
    cr_expect_eq(t, ANA_JSON_ERROR);
    cr_expect_eq(ana_jsonr_truncated(r), 1, "%s", ana_jsonr_error(r));
    cr_expect_gt(strings, 1000);
    cr_expect_neq(strstr(ana_jsonr_error(r), "gzip"), NULL, "%s", ana_jsonr_error(r));
    ana_jsonr_close(r);
    /* a plain file */
    FILE *f = fopen(path, "wb");
    fputs("{\"x\": 1}", f);
    fclose(f);
    r = ana_jsonr_open(path, msg, sizeof(msg));
    cr_expect_eq(ana_jsonr_is_gzip(r), 0);
    cr_expect_eq(ana_jsonr_next(r), ANA_JSON_OBJ_BEGIN);
    ana_jsonr_close(r);
    unlink(path);
    cr_expect_null(ana_jsonr_open(path, msg, sizeof(msg)));
    cr_expect_neq(strstr(msg, "cannot open"), NULL, "%s", msg);
    free(text);
}

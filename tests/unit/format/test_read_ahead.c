/* The reader's read-ahead thread (ana_reader_set_read_ahead) changes nothing but time: on a
 * trace of 24 chunks, whole, cut at every length and with bytes flipped at random, what
 * the reader returns — every record, how the trace ended, the torn bytes, the error and its
 * offset — is the same with it and without it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reader.h"
#include "writer.h"

#define CHUNKS 24
#define PER_CHUNK 60

static uint64_t write_trace(const char *path)
{
    ana_tw *tw = ana_tw_open(path, 3);
    cr_assert_not_null(tw);
    ana_chunkbuf cb = { 0 };
    for (int k = 0; k < CHUNKS; k++) {
        ana_chunkbuf_reset(&cb);
        for (int i = 0; i < PER_CHUNK; i++) {
            ana_record r = { .kind = ANA_K_ALLOC, .tid = 11 + (uint64_t)(k % 3),
                             .time_ns = 1000 * (uint64_t)k + (uint64_t)i };
            r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = 0x10000 + 64 * (uint64_t)i,
                                         .size = 1000 * (uint64_t)k + (uint64_t)i };
            cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
        }
        if (k == CHUNKS - 1) {
            ana_record e = { .kind = ANA_K_END, .time_ns = 999999 };
            e.u.end = (ana_rec_end){ .reason = ANA_END_EXIT, .detail = { "exit", 4 } };
            cr_assert_eq(ana_chunkbuf_add(&cb, &e), 0);
        }
        cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    }
    uint64_t size = ana_tw_bytes(tw);
    ana_chunkbuf_free(&cb);
    ana_tw_close(tw);
    return size;
}

/* Everything a read gives back, as one comparable value. */
struct outcome {
    int rc;
    uint64_t records, sizes, times, chunks, torn;
    ana_ended ended;
    uint64_t err_offset, err_chunk, err_payload;
    char msg[256];
};

static struct outcome read_all(const char *path, int ahead, int skip)
{
    struct outcome o;
    memset(&o, 0, sizeof(o));
    ana_reader *r;
    ana_error err;
    memset(&err, 0, sizeof(err));
    if (ana_reader_open(path, &r, &err) < 0) {
        o.rc = -2;
        snprintf(o.msg, sizeof(o.msg), "%s", err.msg);
        return o;
    }
    ana_reader_set_live(r, 0);
    if (ahead)
        cr_assert_eq(ana_reader_set_read_ahead(r, 1), 0);
    if (skip && ana_reader_skip_to_last_chunk(r, &err) < 0)
        o.rc = -3;
    ana_record rec;
    while (o.rc == 0 && (o.rc = ana_reader_next(r, &rec, &err)) == 1) {
        o.records++;
        o.times = o.times * 31 + rec.time_ns;
        if (rec.kind == ANA_K_ALLOC)
            o.sizes = o.sizes * 31 + rec.u.alloc.size;
        o.rc = 0;
    }
    ana_reader_stats st;
    ana_reader_get_stats(r, &st);
    ana_reader_close(r);
    o.chunks = st.chunks;
    o.torn = st.torn_bytes;
    o.ended = st.ended;
    if (o.rc < 0) {
        o.err_offset = err.offset;
        o.err_chunk = err.chunk_offset;
        o.err_payload = err.payload_offset;
        snprintf(o.msg, sizeof(o.msg), "%s", err.msg);
    }
    return o;
}

static void same(const char *path, const char *what, uint64_t at)
{
    for (int skip = 0; skip < 2; skip++) {
        struct outcome a = read_all(path, 0, skip), b = read_all(path, 1, skip);
        cr_assert_eq(a.rc, b.rc, "%s %llu: rc %d / %d (%s / %s)", what, (unsigned long long)at,
                     a.rc, b.rc, a.msg, b.msg);
        cr_assert_str_eq(a.msg, b.msg, "%s %llu", what, (unsigned long long)at);
        cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "%s %llu (skip %d): records %llu / %llu, "
                  "chunks %llu / %llu, ended %d / %d", what, (unsigned long long)at, skip,
                  (unsigned long long)a.records, (unsigned long long)b.records,
                  (unsigned long long)a.chunks, (unsigned long long)b.chunks, a.ended, b.ended);
    }
}

static uint8_t *slurp(const char *path, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t *d = malloc(size);
    cr_assert_eq(fread(d, 1, size, f), size);
    fclose(f);
    return d;
}

static void put(const char *path, const uint8_t *d, uint64_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(d, 1, n, f), n);
    fclose(f);
}

Test(read_ahead, a_whole_trace_reads_the_same_and_all_of_it)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ana-ra-%d.anat", getpid());
    write_trace(path);
    struct outcome o = read_all(path, 1, 0);
    cr_assert_eq(o.rc, 0, "%s", o.msg);
    cr_expect_eq(o.records, CHUNKS * PER_CHUNK + 1);
    cr_expect_eq(o.chunks, CHUNKS);
    cr_expect_eq(o.ended, ANA_ENDED_EXIT);
    same(path, "whole", 0);
    unlink(path);
}

Test(read_ahead, every_cut_and_random_flips_end_the_same_way)
{
    char path[64], bad[80];
    snprintf(path, sizeof(path), "/tmp/ana-ra-%d.anat", getpid());
    snprintf(bad, sizeof(bad), "%s.bad", path);
    uint64_t size = write_trace(path);
    uint8_t *data = slurp(path, size);
    for (uint64_t len = ANA_HEADER_SIZE; len <= size; len += 1 + len % 7) {
        put(bad, data, len);
        same(bad, "cut at", len);
    }
    srand(4242);
    uint8_t *copy = malloc(size);
    for (int i = 0; i < 600; i++) {
        memcpy(copy, data, size);
        uint64_t at = ANA_HEADER_SIZE + (uint64_t)rand() % (size - ANA_HEADER_SIZE);
        copy[at] ^= (uint8_t)(1 + rand() % 255);
        put(bad, copy, size);
        same(bad, "flip at", at);
    }
    free(copy);
    free(data);
    unlink(bad);
    unlink(path);
}

/* The reader's worker threads (ana_reader_set_threads) change nothing but time: on traces of
 * many chunks (plain and packed; small records, definitions, long strings, kinds this
 * reader does not know, a chunk of thousands of records), whole, cut at every length and
 * with bytes flipped at random, what the reader returns — every record, the stats after
 * each one, how the trace ended, the torn bytes, the error and its offset — is the same
 * with 2, 3 and 8 threads (and with read-ahead: one) as with none. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reader.h"
#include "writer.h"

#define CHUNKS 24
#define PER_CHUNK 60

/* A record of kind 200 (unknown to this reader): skipped by length. */
static void add_unknown(ana_chunkbuf *cb)
{
    static const uint8_t rec[] = { 0xC8, 0x01, 3, 1, 2, 3 };
    cr_assert_eq(ana_chunkbuf_add(cb, &(ana_record){ .kind = ANA_K_FREE, .tid = cb->seg_tid }), 0);
    if (cb->len + sizeof(rec) > cb->cap) {
        cb->buf = realloc(cb->buf, cb->cap = 2 * cb->cap + sizeof(rec));
        cr_assert_not_null(cb->buf);
    }
    memcpy(cb->buf + cb->len, rec, sizeof(rec));
    cb->len += sizeof(rec);
}

/* Chunk k: PER_CHUNK allocations of three threads; every fifth chunk a STACK definition and
 * an unknown record; chunk 7 INFO records of long values (one of them asks for more room
 * than one of the workers' 1 MiB blocks has); chunk 11 thousands of records; every other
 * chunk packed. */
static void fill_chunk(ana_chunkbuf *cb, int k, char *big)
{
    int n = k == 11 ? 5000 : PER_CHUNK;
    for (int i = 0; i < n; i++) {
        ana_record r = { .kind = ANA_K_ALLOC, .tid = 11 + (uint64_t)((k + i / 20) % 3),
                         .time_ns = 1000 * (uint64_t)k + (uint64_t)i };
        r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = 0x10000 + 64 * (uint64_t)i,
                                     .size = 1000 * (uint64_t)k + (uint64_t)i };
        cr_assert_eq(ana_chunkbuf_add(cb, &r), 0);
        if (k % 5 == 0 && i == 7) {
            static const uint64_t ip[] = { 0x401000, 0x402000, 0x7f0000001000 };
            ana_record st = { .kind = ANA_K_STACK, .tid = r.tid, .time_ns = r.time_ns };
            st.u.stack = (ana_rec_stack){ .id = 1 + (uint64_t)k, .frames = { ip, 3 } };
            cr_assert_eq(ana_chunkbuf_add(cb, &st), 0);
            add_unknown(cb);
        }
    }
    for (int i = 0; k == 7 && i < 7; i++) {
        size_t len = i == 3 ? 70000 : 3000 + 997 * (size_t)i;
        memset(big, 'a' + i % 26, len);
        big[len] = 0;
        ana_record info = ana_info_record("key", big, 1000 * (uint64_t)k + 100);
        info.tid = 11;
        cr_assert_eq(ana_chunkbuf_add(cb, &info), 0);
    }
}

/* When flip_chunk >= 0: that chunk's records get one byte flipped before they are
 * compressed, so that the chunk reads whole and its records are what is wrong. */
static int flip_chunk = -1;
static size_t flip_at;
static uint8_t flip_xor;

static uint64_t write_trace(const char *path)
{
    ana_tw *tw = ana_tw_open(path, 3);
    cr_assert_not_null(tw);
    ana_chunkbuf cb = { 0 };
    char *big = malloc(128 << 10);
    for (int k = 0; k < CHUNKS; k++) {
        ana_chunkbuf_reset(&cb);
        fill_chunk(&cb, k, big);
        if (k == CHUNKS - 1) {
            ana_record e = { .kind = ANA_K_END, .time_ns = 999999 };
            e.u.end = (ana_rec_end){ .reason = ANA_END_EXIT, .detail = { "exit", 4 } };
            cr_assert_eq(ana_chunkbuf_add(&cb, &e), 0);
        }
        if (k == flip_chunk)
            cb.buf[flip_at % cb.len] ^= flip_xor;
        ana_tw_set_pack(tw, k % 2);
        cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    }
    cr_assert_gt(ana_tw_packed(tw), 0);
    uint64_t size = ana_tw_bytes(tw);
    free(big);
    ana_chunkbuf_free(&cb);
    ana_tw_close(tw);
    return size;
}

/* A hash of a string's content. */
static uint64_t hstr(uint64_t h, ana_str s)
{
    for (uint32_t i = 0; i < s.len; i++)
        h = h * 31 + (uint8_t)s.s[i];
    return h * 31 + s.len;
}

/* Everything a read gives back, as one comparable value. */
struct outcome {
    int rc;
    uint64_t records, sizes, times, tids, strings, stats, chunks, torn;
    ana_ended ended;
    uint64_t err_offset, err_chunk, err_payload;
    char msg[256];
};

/* threads: 0 = as opened, -1 = ana_reader_set_read_ahead, else ana_reader_set_threads. */
static struct outcome read_all(const char *path, int threads, int skip)
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
    if (threads < 0)
        cr_assert_eq(ana_reader_set_read_ahead(r, 1), 0);
    else if (threads > 0)
        cr_assert_eq(ana_reader_set_threads(r, threads), 0);
    if (skip && ana_reader_skip_to_last_chunk(r, &err) < 0)
        o.rc = -3;
    ana_record rec;
    while (o.rc == 0 && (o.rc = ana_reader_next(r, &rec, &err)) == 1) {
        o.records++;
        o.times = o.times * 31 + rec.time_ns;
        o.tids = o.tids * 31 + rec.tid * 64 + rec.kind;
        if (rec.kind == ANA_K_ALLOC)
            o.sizes = o.sizes * 31 + rec.u.alloc.size;
        if (rec.kind == ANA_K_INFO)
            o.strings = hstr(hstr(o.strings, rec.u.info.key), rec.u.info.value);
        for (uint32_t i = 0; rec.kind == ANA_K_STACK && i < rec.u.stack.frames.n; i++)
            o.strings = o.strings * 31 + rec.u.stack.frames.ip[i] + rec.u.stack.id;
        ana_reader_stats st;
        ana_reader_get_stats(r, &st);
        o.stats = ((o.stats * 31 + st.unknown_records) * 31 + st.chunks) * 31 + st.raw_bytes +
                  st.packed_chunks * 7 + (uint64_t)st.ended;
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

/* Reads path alone and with each thread count (skip: after ana_reader_skip_to_last_chunk,
 * which stops the threads at once, so one count is enough) and checks they agree. */
static void same(const char *path, const char *what, uint64_t at)
{
    static const int threads[] = { 1, 2, 3, 8 };
    for (int skip = 0; skip < 2; skip++) {
        struct outcome a = read_all(path, 0, skip);
        for (size_t t = 0; t < (skip ? 1 : sizeof(threads) / sizeof(threads[0])); t++) {
            struct outcome b = read_all(path, threads[skip ? 2 : t], skip);
            int n = threads[skip ? 2 : t];
            cr_assert_eq(a.rc, b.rc, "%s %llu (%d threads): rc %d / %d (%s / %s)", what,
                         (unsigned long long)at, n, a.rc, b.rc, a.msg, b.msg);
            cr_assert_str_eq(a.msg, b.msg, "%s %llu (%d threads)", what, (unsigned long long)at, n);
            cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "%s %llu (skip %d, %d threads): records "
                      "%llu / %llu, chunks %llu / %llu, ended %d / %d", what,
                      (unsigned long long)at, skip, n, (unsigned long long)a.records,
                      (unsigned long long)b.records, (unsigned long long)a.chunks,
                      (unsigned long long)b.chunks, a.ended, b.ended);
        }
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
    struct outcome o = read_all(path, 3, 0);
    cr_assert_eq(o.rc, 0, "%s", o.msg);
    cr_expect_eq(o.records, (CHUNKS - 1) * PER_CHUNK + 5000 + 5 * 2 + 7 + 1);
    cr_expect_eq(o.chunks, CHUNKS);
    cr_expect_eq(o.ended, ANA_ENDED_EXIT);
    same(path, "whole", 0);
    struct outcome alone = read_all(path, 0, 0), ahead = read_all(path, -1, 0);
    cr_assert(memcmp(&alone, &ahead, sizeof(alone)) == 0, "read-ahead: one thread");
    unlink(path);
}

Test(read_ahead, every_cut_and_random_flips_end_the_same_way)
{
    char path[64], bad[80];
    snprintf(path, sizeof(path), "/tmp/ana-ra-%d.anat", getpid());
    snprintf(bad, sizeof(bad), "%s.bad", path);
    uint64_t size = write_trace(path);
    uint8_t *data = slurp(path, size);
    for (uint64_t len = ANA_HEADER_SIZE; len <= size; len += 1 + len % 13) {
        put(bad, data, len);
        same(bad, "cut at", len);
    }
    srand(4242);
    uint8_t *copy = malloc(size);
    for (int i = 0; i < 400; i++) {
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

Test(read_ahead, records_damaged_inside_a_whole_chunk_fail_the_same_way)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ana-ra-%d.anat", getpid());
    srand(777);
    for (int i = 0; i < 300; i++) {
        flip_chunk = rand() % CHUNKS;
        flip_at = (size_t)rand();
        flip_xor = (uint8_t)(1 + rand() % 255);
        write_trace(path);
        same(path, "records flipped in chunk", (uint64_t)flip_chunk);
    }
    flip_chunk = -1;
    unlink(path);
}

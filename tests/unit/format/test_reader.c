#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reader.h"
#include "writer.h"
#include "varint.h"

/* A trace of 3 chunks: chunk 0 has 40 allocs by thread 11 then 40 frees by thread 12,
 * chunk 1 has 30 launches by thread 11, chunk 2 has END (when with_end). */
#define N_ALLOC 40
#define N_LAUNCH 30

static void tmpname(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/ana-test-%d-XXXXXX", getpid());
    int fd = mkstemp(buf);
    cr_assert_geq(fd, 0);
    close(fd);
}

static uint64_t write_sample(const char *path, int with_end, uint64_t chunk_ends[3])
{
    ana_tw *tw = ana_tw_open(path, 3);
    cr_assert_not_null(tw);
    ana_chunkbuf cb = { 0 };
    for (int i = 0; i < N_ALLOC; i++) {
        ana_record r = { .kind = ANA_K_ALLOC, .tid = 11, .time_ns = 1000 + 10 * (uint64_t)i };
        r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = 0x10000 + 256 * (uint64_t)i, .size = 100 + (uint64_t)i };
        cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
    }
    for (int i = 0; i < N_ALLOC; i++) {
        ana_record r = { .kind = ANA_K_FREE, .tid = 12, .time_ns = 5000 + (uint64_t)i };
        r.u.free = (ana_rec_free){ .api = ANA_API_FREE, .ptr = 0x10000 + 256 * (uint64_t)i };
        cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
    }
    cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    chunk_ends[0] = ana_tw_bytes(tw);
    ana_chunkbuf_reset(&cb);
    for (int i = 0; i < N_LAUNCH; i++) {
        ana_record r = { .kind = ANA_K_LAUNCH, .tid = 11, .time_ns = 9000 + (uint64_t)i };
        r.u.launch = (ana_rec_launch){ .api = ANA_API_STUB_LAUNCH_KERNEL, .kernel = 1, .grid_x = (uint64_t)i };
        cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
    }
    cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    chunk_ends[1] = ana_tw_bytes(tw);
    if (with_end) {
        ana_chunkbuf_reset(&cb);
        ana_record e = { .kind = ANA_K_END, .tid = 0, .time_ns = 20000 };
        e.u.end = (ana_rec_end){ .reason = ANA_END_EXIT, .detail = { "exit", 4 } };
        cr_assert_eq(ana_chunkbuf_add(&cb, &e), 0);
        cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    }
    chunk_ends[2] = ana_tw_bytes(tw);
    ana_chunkbuf_free(&cb);
    ana_tw_close(tw);
    return chunk_ends[2];
}

static uint8_t *slurp(const char *path, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t *data = malloc(size);
    cr_assert_eq(fread(data, 1, size, f), size);
    fclose(f);
    return data;
}

struct counts { int alloc, free, launch, end, other; uint64_t size_sum, last_free_t; int bad_tid; };

/* Returns the reader's final status (0 end, -1 error). */
static int read_all(const char *path, struct counts *c, ana_reader_stats *st, ana_error *err)
{
    memset(c, 0, sizeof(*c));
    ana_reader *r;
    if (ana_reader_open(path, &r, err) < 0)
        return -1;
    ana_record rec;
    int rc;
    while ((rc = ana_reader_next(r, &rec, err)) == 1) {
        switch (rec.kind) {
        case ANA_K_ALLOC: c->alloc++; c->size_sum += rec.u.alloc.size; c->bad_tid |= rec.tid != 11; break;
        case ANA_K_FREE: c->free++; c->last_free_t = rec.time_ns; c->bad_tid |= rec.tid != 12; break;
        case ANA_K_LAUNCH: c->launch++; break;
        case ANA_K_END: c->end++; break;
        default: c->other++;
        }
    }
    ana_reader_get_stats(r, st);
    ana_reader_close(r);
    return rc;
}

Test(reader, reads_back_everything_with_threads_and_times)
{
    char path[64];
    tmpname(path, sizeof(path));
    uint64_t ends[3];
    write_sample(path, 1, ends);
    struct counts c;
    ana_reader_stats st;
    ana_error err;
    cr_assert_eq(read_all(path, &c, &st, &err), 0, "%s", err.msg);
    cr_expect_eq(c.alloc, N_ALLOC);
    cr_expect_eq(c.free, N_ALLOC);
    cr_expect_eq(c.launch, N_LAUNCH);
    cr_expect_eq(c.end, 1);
    cr_expect_eq(c.other, 0);
    cr_expect_eq(c.bad_tid, 0);
    cr_expect_eq(c.size_sum, N_ALLOC * 100 + N_ALLOC * (N_ALLOC - 1) / 2);
    cr_expect_eq(c.last_free_t, 5000 + N_ALLOC - 1);
    cr_expect_eq(st.chunks, 3);
    cr_expect_eq(st.ended, ANA_ENDED_EXIT);
    cr_expect_str_eq(ana_ended_name(st.ended), "exit");
    unlink(path);
}

Test(reader, every_truncation_is_a_clean_end_with_whole_chunks)
{
    char path[64], cut[80];
    tmpname(path, sizeof(path));
    uint64_t ends[3];
    uint64_t size = write_sample(path, 1, ends);
    uint8_t *data = slurp(path, size);
    snprintf(cut, sizeof(cut), "%s.cut", path);
    for (uint64_t len = ANA_HEADER_SIZE; len <= size; len++) {
        FILE *o = fopen(cut, "wb");
        fwrite(data, 1, len, o);
        fclose(o);
        struct counts c;
        ana_reader_stats st;
        ana_error err;
        int rc = read_all(cut, &c, &st, &err);
        cr_assert_eq(rc, 0, "cut at %llu: %s", (unsigned long long)len, err.msg);
        int whole = (len >= ends[0]) + (len >= ends[1]) + (len >= ends[2]);
        cr_assert_eq(c.alloc, whole >= 1 ? N_ALLOC : 0, "cut at %llu", (unsigned long long)len);
        cr_assert_eq(c.launch, whole >= 2 ? N_LAUNCH : 0, "cut at %llu", (unsigned long long)len);
        ana_ended want = len == size ? ANA_ENDED_EXIT
                         : (len == ANA_HEADER_SIZE || len == ends[0] || len == ends[1]) ? ANA_ENDED_TRUNCATED
                                                                                        : ANA_ENDED_TORN;
        cr_assert_eq(st.ended, want, "cut at %llu: ended %s", (unsigned long long)len, ana_ended_name(st.ended));
        if (want == ANA_ENDED_TORN) {
            uint64_t start = len < ends[0] ? ANA_HEADER_SIZE : len < ends[1] ? ends[0] : ends[1];
            cr_assert_eq(st.torn_bytes, len - start);
        }
    }
    free(data);
    unlink(cut);
    unlink(path);
}

/* Only the last complete chunk is read; a cut inside it ends the trace as a full read would. */
Test(reader, skips_to_the_last_chunk)
{
    char path[64], cut[80];
    tmpname(path, sizeof(path));
    uint64_t ends[3];
    uint64_t size = write_sample(path, 1, ends);
    uint8_t *data = slurp(path, size);
    snprintf(cut, sizeof(cut), "%s.cut", path);
    uint64_t lens[] = { size, ends[1], ends[1] + 5, ends[0] + 3, ends[0], ANA_HEADER_SIZE };
    /* records of the chunk read: END; launches; launches then torn; allocs and frees then
     * torn; allocs and frees; none */
    int want_end[] = { 1, 0, 0, 0, 0, 0 }, want_launch[] = { 0, N_LAUNCH, N_LAUNCH, 0, 0, 0 };
    int want_alloc[] = { 0, 0, 0, N_ALLOC, N_ALLOC, 0 };
    ana_ended want[] = { ANA_ENDED_EXIT, ANA_ENDED_TRUNCATED, ANA_ENDED_TORN, ANA_ENDED_TORN,
                         ANA_ENDED_TRUNCATED, ANA_ENDED_TRUNCATED };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        FILE *o = fopen(cut, "wb");
        fwrite(data, 1, lens[i], o);
        fclose(o);
        ana_reader *r;
        ana_error err;
        cr_assert_eq(ana_reader_open(cut, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(ana_reader_skip_to_last_chunk(r, &err), 0, "%s", err.msg);
        ana_record rec;
        int end = 0, launch = 0, alloc = 0, rc;
        while ((rc = ana_reader_next(r, &rec, &err)) == 1) {
            end += rec.kind == ANA_K_END;
            launch += rec.kind == ANA_K_LAUNCH;
            alloc += rec.kind == ANA_K_ALLOC;
        }
        cr_assert_eq(rc, 0, "cut at %llu: %s", (unsigned long long)lens[i], err.msg);
        ana_reader_stats st;
        ana_reader_get_stats(r, &st);
        ana_reader_close(r);
        cr_expect_eq(end, want_end[i], "cut at %llu", (unsigned long long)lens[i]);
        cr_expect_eq(launch, want_launch[i], "cut at %llu", (unsigned long long)lens[i]);
        cr_expect_eq(alloc, want_alloc[i], "cut at %llu", (unsigned long long)lens[i]);
        cr_expect_eq(st.ended, want[i], "cut at %llu: %s", (unsigned long long)lens[i], ana_ended_name(st.ended));
    }
    free(data);
    unlink(cut);
    unlink(path);
}

Test(reader, flipped_bytes_never_crash)
{
    char path[64], bad[80];
    tmpname(path, sizeof(path));
    uint64_t ends[3];
    uint64_t size = write_sample(path, 1, ends);
    uint8_t *data = slurp(path, size);
    snprintf(bad, sizeof(bad), "%s.bad", path);
    srand(12345);
    int errors = 0;
    for (int i = 0; i < 2000; i++) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data, size);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++)
            copy[(size_t)rand() % size] ^= (uint8_t)(1 + rand() % 255);
        FILE *o = fopen(bad, "wb");
        fwrite(copy, 1, size, o);
        fclose(o);
        free(copy);
        struct counts c;
        ana_reader_stats st;
        ana_error err;
        int rc = read_all(bad, &c, &st, &err);
        cr_assert(rc == 0 || rc == -1);
        if (rc < 0) {
            errors++;
            cr_assert(err.msg[0] != 0, "an error has a message");
            cr_assert_leq(err.offset, size, "error offset lies in the file");
        }
    }
    /* zstd checksums make nearly every flip inside a frame detectable. */
    cr_expect_gt(errors, 1500, "only %d of 2000 corruptions were reported", errors);
    free(data);
    unlink(bad);
    unlink(path);
}

Test(reader, refuses_newer_major_and_non_traces)
{
    char path[64];
    tmpname(path, sizeof(path));
    uint8_t h[ANA_HEADER_SIZE] = { 0 };
    memcpy(h, "ANATRACE", 8);
    h[8] = ANA_FORMAT_MAJOR + 1;
    h[12] = ANA_HEADER_SIZE;
    FILE *f = fopen(path, "wb");
    fwrite(h, 1, sizeof(h), f);
    fclose(f);
    ana_reader *r;
    ana_error err;
    cr_assert_eq(ana_reader_open(path, &r, &err), -1);
    cr_expect(strstr(err.msg, "newer") != NULL, "message: %s", err.msg);
    f = fopen(path, "wb");
    fputs("{\"traceEvents\": []} this is JSON, not a trace", f);
    fclose(f);
    cr_assert_eq(ana_reader_open(path, &r, &err), -1);
    cr_expect(strstr(err.msg, "not an Anatomist trace") != NULL, "message: %s", err.msg);
    char msg[1024];
    ana_error_format(&err, msg, sizeof(msg));
    cr_expect(strstr(msg, path) != NULL && strstr(msg, "offset 0") != NULL, "formatted: %s", msg);
    cr_assert_eq(ana_reader_open("/nonexistent/x.anat", &r, &err), -1);
    unlink(path);
}

Test(reader, skips_unknown_kinds_and_requires_a_leading_segment)
{
    char path[64];
    tmpname(path, sizeof(path));
    /* SEGMENT, an unknown kind 100 with 3 payload bytes, one FREE. */
    uint8_t raw[64];
    size_t n = 0;
    ana_record seg = { .kind = ANA_K_SEGMENT };
    seg.u.segment = (ana_rec_segment){ .tid = 7, .base_ns = 100 };
    n += ana_record_encode(raw + n, sizeof(raw) - n, &seg, 0);
    raw[n++] = 100;
    raw[n++] = 3;
    raw[n++] = 1; raw[n++] = 2; raw[n++] = 3;
    ana_record fr = { .kind = ANA_K_FREE, .time_ns = 150 };
    fr.u.free.ptr = 99;
    n += ana_record_encode(raw + n, sizeof(raw) - n, &fr, 100);
    ana_tw *tw = ana_tw_open(path, 1);
    cr_assert_eq(ana_tw_chunk(tw, raw, n), 0);
    /* A second chunk that starts with a FREE instead of a SEGMENT: corrupt. */
    size_t m = ana_record_encode(raw, sizeof(raw), &fr, 0);
    uint64_t second = ana_tw_bytes(tw);
    cr_assert_eq(ana_tw_chunk(tw, raw, m), 0);
    ana_tw_close(tw);

    ana_reader *r;
    ana_error err;
    cr_assert_eq(ana_reader_open(path, &r, &err), 0);
    ana_record rec;
    cr_assert_eq(ana_reader_next(r, &rec, &err), 1);
    cr_expect_eq(rec.kind, ANA_K_FREE);
    cr_expect_eq(rec.tid, 7);
    cr_expect_eq(rec.time_ns, 150);
    cr_expect_eq(rec.u.free.ptr, 99);
    cr_assert_eq(ana_reader_next(r, &rec, &err), -1);
    cr_expect_eq(err.chunk_offset, second);
    cr_expect_eq(err.payload_offset, 0);
    cr_expect_eq(err.kind, ANA_K_FREE);
    ana_reader_stats st;
    ana_reader_get_stats(r, &st);
    cr_expect_eq(st.unknown_records, 1);
    ana_reader_close(r);
    unlink(path);
}

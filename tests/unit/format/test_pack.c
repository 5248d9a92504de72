/* Packed chunks (pack.h): byte-exact round trips on random and on loop-like chunks, what
 * is not packed, hostile packed input, and packed traces read like unpacked ones. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "pack.h"
#include "reader.h"
#include "records.h"
#include "writer.h"
#include "../random.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next64(void) { return ana_xorshift64(&rng); }

/* Values of every varint length, 0 more often than ana_random_value gives it. */
static uint64_t value(void) { return (next64() & 3) == 0 ? 0 : ana_random_value(&rng); }

static uint64_t frames[3][300];
static char text[4][3000];
static ana_str strs[8];

static ana_str rstr(int i)
{
    uint32_t n = (uint32_t)(next64() % 8 == 0 ? 1000 + next64() % 2000 : next64() % 40);
    for (uint32_t k = 0; k < n; k++)
        text[i][k] = (char)(next64() & 0xff); /* any byte, high bits included */
    return (ana_str){ text[i], n };
}

static ana_frames rframes(int i)
{
    uint32_t n = (uint32_t)(next64() % 8 == 0 ? 130 + next64() % 150 : next64() % 20);
    for (uint32_t k = 0; k < n; k++)
        frames[i][k] = value();
    return (ana_frames){ frames[i], n };
}

/* Kinds made only of 8-byte numbers, and their sizes. */
static const struct {
    uint32_t kind;
    size_t size;
} numeric[] = {
    { ANA_K_ALLOC, sizeof(ana_rec_alloc) },           { ANA_K_FREE, sizeof(ana_rec_free) },
    { ANA_K_MEMINFO, sizeof(ana_rec_meminfo) },       { ANA_K_MEMCPY, sizeof(ana_rec_memcpy) },
    { ANA_K_MEMSET, sizeof(ana_rec_memset) },         { ANA_K_DROPPED, sizeof(ana_rec_dropped) },
    { ANA_K_GPU_KERNEL, sizeof(ana_rec_gpu_kernel) }, { ANA_K_GPU_MEMCPY, sizeof(ana_rec_gpu_memcpy) },
    { ANA_K_GPU_MEMSET, sizeof(ana_rec_gpu_memset) }, { ANA_K_GPU_MEMORY, sizeof(ana_rec_gpu_memory) },
    { ANA_K_GPU_POOL, sizeof(ana_rec_gpu_pool) },     { ANA_K_GPU_DROPPED, sizeof(ana_rec_gpu_dropped) },
    { ANA_K_VMM, sizeof(ana_rec_vmm) },               { ANA_K_GEMM, sizeof(ana_rec_gemm) },
    { ANA_K_COLL, sizeof(ana_rec_coll) },             { ANA_K_COMM, sizeof(ana_rec_comm) },
    { ANA_K_LIBCALL, sizeof(ana_rec_libcall) },
};
#define NNUM (sizeof(numeric) / sizeof(numeric[0]))

/* A random record of any known kind but SEGMENT. */
static void random_record(ana_record *r)
{
    memset(r, 0, sizeof(*r));
    r->time_ns = value();
    r->tid = next64() % 5;
    uint64_t pick = next64() % (NNUM + 10);
    if (pick < NNUM) {
        r->kind = numeric[pick].kind;
        uint64_t *w = (uint64_t *)&r->u;
        for (size_t i = 0; i < numeric[pick].size / 8; i++)
            w[i] = value();
        return;
    }
    switch (pick - NNUM) {
    case 0:
        r->kind = ANA_K_LAUNCH;
        for (size_t i = 0; i < offsetof(ana_rec_launch, ptrs) / 8; i++)
            ((uint64_t *)&r->u)[i] = value();
        r->u.launch.ptrs = rframes(0);
        r->u.launch.ptr_at = rframes(1);
        break;
    case 1:
        r->kind = ANA_K_RANGE;
        r->u.range = (ana_rec_range){ value(), value(), value(), value(), value(), rstr(0) };
        break;
    case 2:
        r->kind = ANA_K_LABEL;
        r->u.label = (ana_rec_label){ value(), value(), value(), value(), rstr(0) };
        break;
    case 3:
        r->kind = ANA_K_STACK;
        r->u.stack = (ana_rec_stack){ value(), rframes(2) };
        break;
    case 4:
        r->kind = ANA_K_KERNEL;
        r->u.kernel = (ana_rec_kernel){ value(), value(), rstr(0) };
        break;
    case 5:
        r->kind = ANA_K_THREAD;
        r->u.thread = (ana_rec_thread){ value(), rstr(0) };
        break;
    case 6:
        r->kind = ANA_K_INFO;
        r->u.info = (ana_rec_info){ rstr(0), rstr(1) };
        break;
    case 7: {
        r->kind = ANA_K_PROCESS;
        uint32_t n = (uint32_t)(next64() % 5);
        for (uint32_t i = 0; i < n; i++)
            strs[i] = rstr(2 + (int)(i & 1));
        r->u.process = (ana_rec_process){ value(), value(), (int64_t)value(), (int64_t)value(),
                                          (int64_t)value(), value(), rstr(0), rstr(1), { strs, n } };
        break;
    }
    case 8:
        r->kind = ANA_K_MODULE;
        r->u.module = (ana_rec_module){ value(), value(), value(), rstr(0), rstr(1) };
        break;
    default:
        r->kind = ANA_K_END;
        r->u.end = (ana_rec_end){ value(), rstr(0) };
        break;
    }
}

/* A kind 2.0 did not have (PTR_TABLE) is never packed: a 2.0 reader could not unpack its
 * columns, but skips it by length in an unpacked chunk. */
Test(pack, a_chunk_with_a_pointer_table_is_not_packed)
{
    ana_chunkbuf cb = { 0 };
    uint64_t ptrs[2] = { 0x7f0000001000ull, 0x7f0000002000ull }, at[2] = { 0, 8 };
    ana_record a = { .kind = ANA_K_MEMCPY, .time_ns = 5 };
    a.u.memcpy = (ana_rec_memcpy){ .api = 31, .dst = 0x7f0000003000ull, .bytes = 16, .dir = 1 };
    ana_record t = { .kind = ANA_K_PTR_TABLE, .time_ns = 5 };
    t.u.ptr_table = (ana_rec_ptr_table){ 0x7f0000003000ull, 16, { ptrs, 2 }, { at, 2 }, 0 };
    cr_assert_eq(ana_chunkbuf_add(&cb, &a), 0);
    cr_assert_eq(ana_chunkbuf_add(&cb, &t), 0);
    ana_packer *pk = ana_packer_new();
    static uint8_t out[1 << 16];
    cr_expect_eq(ana_pack(pk, cb.buf, cb.len, out, sizeof(out)), 0);
    ana_packer_free(pk);
    ana_chunkbuf_free(&cb);
}

/* Packs cb's payload and unpacks it: the bytes must come back exactly. The packed size. */
static size_t round_trip(ana_packer *pk, const ana_chunkbuf *cb)
{
    size_t cap = ana_pack_bound(cb->len);
    uint8_t *packed = malloc(cap), *back = malloc(cb->len + 1);
    size_t pn = ana_pack(pk, cb->buf, cb->len, packed, cap);
    cr_assert_gt(pn, 0, "a payload of this version's records packs");
    cr_assert_leq(pn, cap);
    cr_assert_eq(ana_unpack(packed, pn, back, cb->len), cb->len);
    cr_assert(memcmp(back, cb->buf, cb->len) == 0, "unpacking gives back the same bytes");
    /* with less room than the records need, unpacking fails rather than overrun */
    cr_assert_eq(ana_unpack(packed, pn, back, cb->len - 1), 0);
    free(packed);
    free(back);
    return pn;
}

Test(pack, random_chunks_of_every_kind_come_back_byte_for_byte)
{
    ana_packer *pk = ana_packer_new();
    cr_assert_not_null(pk);
    for (int chunk = 0; chunk < 300; chunk++) {
        ana_chunkbuf cb = { 0 };
        cb.shift = chunk % 3 == 0 ? (unsigned)(next64() % (ANA_TIME_SHIFT_MAX + 1)) : 0;
        int n = 1 + (int)(next64() % 400);
        for (int i = 0; i < n; i++) {
            ana_record r;
            random_record(&r);
            cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
        }
        round_trip(pk, &cb);
        ana_chunkbuf_free(&cb);
    }
    ana_packer_free(pk);
}

/* A training loop as the preload records it: a thread launching kernels (correlation ids
 * counting up, a GEMM's call id on the launches it makes), and the GPU records of those
 * launches on the profiler's thread, all with nanosecond jitter. */
static void loop_chunk(ana_chunkbuf *cb, int steps, uint64_t *corr, uint64_t *t)
{
    static const uint64_t kernels[] = { 3, 7, 7, 9, 4, 11, 3, 12 };
    for (int s = 0; s < steps; s++) {
        uint64_t first = *corr + 1, launched[8];
        for (int k = 0; k < 8; k++) {
            ana_record r = { .kind = ANA_K_LAUNCH, .tid = 4242 };
            *t += 4000 + next64() % 700;
            r.time_ns = *t;
            r.u.launch = (ana_rec_launch){ .api = 20, .kernel = kernels[k], .grid_x = 128 * (uint64_t)(k + 1),
                                           .block_x = 256, .stream = 7, .stack = 10 + (uint64_t)k,
                                           .dur_ns = 2500 + next64() % 400, .corr = ++*corr,
                                           .lib = k == 5 ? 1 : 0, .call = k == 5 ? (uint64_t)s + 1 : 0 };
            launched[k] = *t;
            cr_assert_eq(ana_chunkbuf_add(cb, &r), 0);
        }
        uint64_t end = 0;
        for (int k = 0; k < 8; k++) {
            ana_record g = { .kind = ANA_K_GPU_KERNEL, .tid = 0 };
            uint64_t start = launched[k] + 3000 + next64() % 300;
            g.time_ns = start > end ? start : end + 1000;
            g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = first + (uint64_t)k, .dur_ns = 8000 + next64() % 900,
                                                   .kernel = kernels[k], .device = 0, .context = 1,
                                                   .stream = 13, .grid_x = 128 * (uint64_t)(k + 1),
                                                   .block_x = 256, .regs = 64 };
            end = g.time_ns + g.u.gpu_kernel.dur_ns;
            cr_assert_eq(ana_chunkbuf_add(cb, &g), 0);
        }
    }
}

static size_t zsize(const void *p, size_t n)
{
    size_t cap = ZSTD_compressBound(n);
    void *c = malloc(cap);
    size_t z = ZSTD_compress(c, cap, p, n, 3);
    cr_assert(!ZSTD_isError(z));
    free(c);
    return z;
}

Test(pack, a_training_loop_compresses_to_less_than_half)
{
    ana_packer *pk = ana_packer_new();
    ana_chunkbuf cb = { 0 };
    uint64_t corr = 1000, t = 1ull << 40;
    loop_chunk(&cb, 2000, &corr, &t);
    size_t cap = ana_pack_bound(cb.len);
    uint8_t *packed = malloc(cap);
    size_t pn = ana_pack(pk, cb.buf, cb.len, packed, cap);
    cr_assert_gt(pn, 0);
    size_t plain = zsize(cb.buf, cb.len), small = zsize(packed, pn);
    /* 32,000 records: the times and durations carry ~3 random bytes per record pair,
     * everything else repeats or counts */
    cr_assert_lt(small * 2, plain, "packed %zu bytes, plain %zu bytes", small, plain);
    round_trip(pk, &cb);
    free(packed);
    ana_chunkbuf_free(&cb);
    ana_packer_free(pk);
}

/* A chunk of one FREE record with one of its payload's varints (index `which`: 0 = dt,
 * 1 = api) written a byte longer than it needs, or with its last `cut` bytes missing.
 * Returns the payload's size. */
static size_t odd_free(uint8_t *out, int which, int cut)
{
    ana_chunkbuf cb = { 0 };
    ana_record f = { .kind = ANA_K_FREE, .tid = 1, .time_ns = 5 };
    f.u.free = (ana_rec_free){ .api = 10, .ptr = 0x7f00, .stack = 3, .dur_ns = 900, .corr = 3 };
    cr_assert_eq(ana_chunkbuf_add(&cb, &f), 0);
    /* SEGMENT: kind, length, tid 1, base 5; then the FREE: kind, length, dt 0, api 10, ... */
    cr_assert_eq(cb.buf[4], ANA_K_FREE);
    uint8_t plen = cb.buf[5];
    const uint8_t *pay = cb.buf + 6;
    cr_assert(pay[0] == 0 && pay[1] == 10);
    memcpy(out, cb.buf, 5);
    size_t n = 6;
    for (int i = 0; i < plen - cut; i++) {
        if (i == which) {
            out[n++] = (uint8_t)(pay[i] | 0x80);
            out[n++] = 0x00;
        } else {
            out[n++] = pay[i];
        }
    }
    out[5] = (uint8_t)(n - 6);
    ana_chunkbuf_free(&cb);
    return n;
}

Test(pack, what_would_not_come_back_exactly_is_not_packed)
{
    ana_packer *pk = ana_packer_new();
    uint8_t in[128], out[4096], back[128];
    /* as written: packs */
    size_t n = odd_free(in, -1, 0);
    cr_assert_gt(ana_pack(pk, in, n, out, sizeof(out)), 0);
    /* dt in two bytes where one does: its column would give back one */
    n = odd_free(in, 0, 0);
    cr_assert_eq(ana_pack(pk, in, n, out, sizeof(out)), 0);
    /* a record shorter than its kind (absent trailing fields of an older writer) */
    n = odd_free(in, -1, 2);
    cr_assert_eq(ana_pack(pk, in, n, out, sizeof(out)), 0);
    /* a kind this version does not know */
    const uint8_t unknown[] = { ANA_K_SEGMENT, 2, 1, 0, 100, 2, 0, 0 };
    cr_assert_eq(ana_pack(pk, unknown, sizeof(unknown), out, sizeof(out)), 0);
    /* too little room for the packed payload */
    n = odd_free(in, -1, 0);
    cr_assert_eq(ana_pack(pk, in, n, out, 8), 0);
    /* a long varint in a field copied as it is (FREE's api) packs, and comes back */
    n = odd_free(in, 1, 0);
    size_t pn = ana_pack(pk, in, n, out, sizeof(out));
    cr_assert_gt(pn, 0);
    cr_assert_eq(ana_unpack(out, pn, back, sizeof(back)), n);
    cr_assert(memcmp(back, in, n) == 0);
    ana_packer_free(pk);
}

Test(pack, hostile_packed_input_is_refused_not_overrun)
{
    ana_packer *pk = ana_packer_new();
    ana_chunkbuf cb = { 0 };
    uint64_t corr = 1, t = 1000;
    loop_chunk(&cb, 20, &corr, &t);
    for (int i = 0; i < 30; i++) {
        ana_record r;
        random_record(&r);
        ana_chunkbuf_add(&cb, &r);
    }
    size_t cap = ana_pack_bound(cb.len);
    uint8_t *packed = malloc(cap), *bad = malloc(cap), *back = malloc(cb.len);
    size_t pn = ana_pack(pk, cb.buf, cb.len, packed, cap);
    cr_assert_gt(pn, 0);
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(bad, packed, pn);
        size_t n = pn;
        int flips = 1 + (int)(next64() % 4);
        for (int k = 0; k < flips; k++)
            bad[next64() % n] ^= (uint8_t)(1u << (next64() % 8));
        int cut = iter % 5 == 0;
        if (cut)
            n = next64() % pn;
        size_t got = ana_unpack(bad, n, back, cb.len);
        cr_assert_leq(got, cb.len);
        /* the column lengths no longer add up to what is there */
        if (cut)
            cr_assert_eq(got, 0, "a packed payload cut to %zu of %zu bytes was unpacked", n, pn);
    }
    free(packed);
    free(bad);
    free(back);
    ana_chunkbuf_free(&cb);
    ana_packer_free(pk);
}

/* Writes the same records with packing on or off; returns the path. */
static void write_trace(const char *path, int pack, uint64_t seed)
{
    ana_tw *tw = ana_tw_open(path, 3);
    cr_assert_not_null(tw);
    ana_tw_set_pack(tw, pack);
    rng = seed;
    uint64_t corr = 1, t = 1ull << 33;
    for (int c = 0; c < 4; c++) {
        ana_chunkbuf cb = { 0 };
        loop_chunk(&cb, 50, &corr, &t);
        for (int i = 0; i < 100; i++) {
            ana_record r;
            random_record(&r);
            cr_assert_eq(ana_chunkbuf_add(&cb, &r), 0);
        }
        cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
        ana_chunkbuf_free(&cb);
    }
    cr_assert_eq(ana_tw_packed(tw), pack ? 4u : 0u);
    cr_assert_eq(ana_tw_close(tw), 0);
}

Test(pack, packed_traces_read_as_the_same_records)
{
    char a[] = "/tmp/ana_pack_aXXXXXX", b[] = "/tmp/ana_pack_bXXXXXX";
    close(mkstemp(a));
    close(mkstemp(b));
    write_trace(a, 1, 77);
    write_trace(b, 0, 77);
    ana_reader *ra, *rb;
    ana_error err;
    cr_assert_eq(ana_reader_open(a, &ra, &err), 0);
    cr_assert_eq(ana_reader_open(b, &rb, &err), 0);
    ana_reader_set_live(ra, 0);
    ana_reader_set_live(rb, 0);
    uint64_t n = 0;
    for (;;) {
        ana_record x, y;
        int ga = ana_reader_next(ra, &x, &err), gb = ana_reader_next(rb, &y, &err);
        cr_assert_eq(ga, gb, "record %llu", (unsigned long long)n);
        cr_assert_geq(ga, 0, "%s", err.msg);
        if (ga == 0)
            break;
        uint8_t ex[70000], ey[70000];
        size_t nx = ana_record_encode(ex, sizeof(ex), &x, 0), ny = ana_record_encode(ey, sizeof(ey), &y, 0);
        cr_assert(nx == ny && memcmp(ex, ey, nx) == 0 && x.tid == y.tid && x.time_ns == y.time_ns,
                  "record %llu differs", (unsigned long long)n);
        n++;
    }
    cr_assert_eq(n, 4 * (50 * 16 + 100));
    ana_reader_stats sa, sb;
    ana_reader_get_stats(ra, &sa);
    ana_reader_get_stats(rb, &sb);
    cr_assert_eq(sa.packed_chunks, 4);
    cr_assert_eq(sb.packed_chunks, 0);
    cr_assert_eq(sa.major, 2);
    cr_assert_lt(sa.file_bytes, sb.file_bytes);
    ana_reader_close(ra);
    ana_reader_close(rb);
    unlink(a);
    unlink(b);
}

Test(pack, a_trace_begun_by_a_1x_writer_is_continued_unpacked)
{
    char a[] = "/tmp/ana_pack_cXXXXXX";
    close(mkstemp(a));
    write_trace(a, 0, 5);
    /* make its header say 1.5, as an older preload wrote it */
    FILE *f = fopen(a, "r+b");
    uint16_t v[2] = { 1, 5 };
    fseek(f, 8, SEEK_SET);
    fwrite(v, 2, 2, f);
    fclose(f);
    ana_reader *r;
    ana_error err;
    cr_assert_eq(ana_reader_open(a, &r, &err), 0);
    ana_record rec;
    while (ana_reader_next(r, &rec, &err) > 0)
        ;
    ana_reader_stats st;
    ana_reader_get_stats(r, &st);
    ana_reader_close(r);
    int fd = open(a, O_RDWR);
    ana_tw *tw = ana_tw_append_fd(fd, 3, st.file_bytes, st.chunks);
    cr_assert_not_null(tw);
    ana_chunkbuf cb = { 0 };
    uint64_t corr = 1, t = 5;
    loop_chunk(&cb, 10, &corr, &t);
    cr_assert_eq(ana_tw_chunk(tw, cb.buf, cb.len), 0);
    cr_assert_eq(ana_tw_packed(tw), 0, "a 1.x reader could not read a packed chunk");
    ana_tw_close(tw);
    ana_chunkbuf_free(&cb);
    unlink(a);
}

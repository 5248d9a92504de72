/* Packed chunks read straight from their columns (pack.h, ana_unpacker; ahead.h,
 * ana_batch_decode with `direct`) give what unpacking them and decoding the bytes gives:
 * the same records, every field of each (kind, thread, time, each field of the kind's row
 * list: numbers, strings, string lists, frames by content), the same place where decoding
 * stops and the same result. On the packed chunks of bench/gen_trace traces (seeds, thread
 * counts beyond the packer's 64 per chunk, a time shift), on the chunk payloads of the
 * sample traces the fuzz seeds hold (tests/fuzz/corpus/trace) packed here, on chunks of
 * records of every kind with random fields, and on those payloads cut short, with bytes
 * flipped and with a raw size off by one. The good chunks
 * must all be read straight, so that the comparison is not of the old way with itself. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ahead.h"
#include "codec_int.h"
#include "pack.h"
#include "safe_open.h"

#ifndef GEN_TRACE
#error "GEN_TRACE: the path of bench/gen_trace"
#endif
#ifndef FUZZ_SEEDS
#error "FUZZ_SEEDS: the folder of the trace seeds"
#endif

static void same_str(ana_str a, ana_str b)
{
    cr_assert_eq(a.len, b.len);
    cr_assert(a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

/* Every field of two records of the same kind. */
static void same_record(const ana_record *a, const ana_record *b)
{
    cr_assert_eq(a->kind, b->kind);
    cr_assert_eq(a->tid, b->tid);
    cr_assert_eq(a->time_ns, b->time_ns);
    cr_assert(a->kind > 0 && a->kind < ANA_K_COUNT);
    const uint8_t *x = (const uint8_t *)&a->u, *y = (const uint8_t *)&b->u;
    for (const struct ana_field *f = ana_fields[a->kind]; f->type != F_END; f++) {
        const void *p = x + f->off, *q = y + f->off;
        if (f->type == F_U || f->type == F_S) {
            cr_assert_eq(*(const uint64_t *)p, *(const uint64_t *)q, "kind %u field at %u",
                         a->kind, f->off);
        } else if (f->type == F_STR || f->type == F_BLOB) {
            same_str(*(const ana_str *)p, *(const ana_str *)q);
        } else if (f->type == F_STRV) {
            const ana_strv *s = p, *t = q;
            cr_assert_eq(s->n, t->n);
            for (uint32_t i = 0; i < s->n; i++)
                same_str(s->v[i], t->v[i]);
        } else {
            const ana_frames *s = p, *t = q;
            cr_assert_eq(s->n, t->n);
            cr_assert(s->n == 0 || memcmp(s->ip, t->ip, s->n * sizeof(uint64_t)) == 0);
        }
    }
}

static struct {
    uint64_t payloads, direct, records;
} seen;

/* A batch holding the packed payload in[0, n) of a chunk of rsize bytes of records. */
static void batch_of(ana_batch *b, const uint8_t *in, size_t n, size_t rsize)
{
    memset(b, 0, sizeof(*b));
    b->c.packed = 1;
    b->c.pbuf = malloc(n + 1);
    b->c.raw = malloc(rsize + 1);
    cr_assert(b->c.pbuf && b->c.raw);
    memcpy(b->c.pbuf, in, n);
    b->c.pcap = n + 1;
    b->c.got = b->c.fcs = n;
    b->c.rcap = rsize + 1;
    b->c.rsize = (uint32_t)rsize;
}

/* Decodes the payload both ways and compares. 1 when it was read straight. */
static int both_ways(const uint8_t *in, size_t n, size_t rsize, unsigned shift)
{
    ana_batch d, u; /* straight from the columns where it can; unpacked */
    batch_of(&d, in, n, rsize);
    batch_of(&u, in, n, rsize);
    ana_batch_decode(&d, shift, 1);
    ana_batch_decode(&u, shift, 0);
    cr_assert_eq(u.direct, 0);
    cr_assert_eq(d.result, u.result);
    cr_assert_eq(d.n, u.n);
    cr_assert_eq(d.stop.rpos, u.stop.rpos);
    cr_assert_eq(d.stop.seg_tid, u.stop.seg_tid);
    cr_assert_eq(d.stop.prev_ns, u.stop.prev_ns);
    cr_assert_eq(d.stop.in_segment, u.stop.in_segment);
    cr_assert_eq(d.unknown_tail, u.unknown_tail);
    size_t od = 0, ou = 0;
    for (size_t i = 0; i < d.n; i++) {
        ana_record a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        cr_assert_eq(ana_ahead_next(&d, i, &od, &a), ana_ahead_next(&u, i, &ou, &b));
        same_record(&a, &b);
    }
    int direct = d.direct;
    seen.payloads++;
    seen.direct += (uint64_t)direct;
    seen.records += d.n;
    ana_batch_free(&d);
    ana_batch_free(&u);
    return direct;
}

/* Each packed chunk of the trace at path through f (the payload, its raw size, the shift). */
static void each_packed(const char *path, void (*f)(const uint8_t *, size_t, size_t, unsigned))
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", path);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    uint8_t h[ANA_HEADER_SIZE];
    cr_assert_eq(ana_pread_all(fd, h, sizeof(h), 0), 0);
    uint32_t hsize;
    uint64_t flags;
    memcpy(&hsize, h + 12, 4);
    memcpy(&flags, h + 16, 8);
    ana_chunk c = { .keep_packed = 1, .dctx = ZSTD_createDCtx() };
    uint64_t pos = hsize, seq = 0, packed = 0;
    while (ana_chunk_fetch(fd, (uint64_t)sb.st_size, pos, seq, &c) == ANA_FETCH_OK) {
        if (c.packed) {
            f(c.pbuf, c.got, c.rsize, (unsigned)(flags & ANA_FLAG_TIME_SHIFT_MASK));
            packed++;
        }
        pos += ANA_CHUNK_HEADER_SIZE + c.csize;
        seq++;
    }
    cr_assert_eq(pos, (uint64_t)sb.st_size, "%s: every chunk read", path);
    cr_assert_gt(packed, 0, "%s: packed chunks", path);
    ana_chunk_free(&c);
    close(fd);
}

static void whole(const uint8_t *in, size_t n, size_t rsize, unsigned shift)
{
    both_ways(in, n, rsize, shift);
}

static void straight(const uint8_t *in, size_t n, size_t rsize, unsigned shift)
{
    cr_assert(both_ways(in, n, rsize, shift), "a good packed chunk is read straight");
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* The payload cut at lengths (every one of the first 64, then spread out), with bytes
 * flipped, and its raw size off by one. */
static void damaged(const uint8_t *in, size_t n, size_t rsize, unsigned shift)
{
    both_ways(in, n, rsize - 1, shift);
    both_ways(in, n, rsize + 1, shift);
    for (size_t k = 0; k < n; k += k < 64 ? 1 : n / 40 + 1)
        both_ways(in, k, rsize, shift);
    uint8_t *bad = malloc(n);
    cr_assert_not_null(bad);
    for (int i = 0; i < 120; i++) {
        memcpy(bad, in, n);
        size_t at = (size_t)(next_rand() % n);
        /* the directory and the first columns (kinds, dt) matter most: half the flips */
        if (i % 2)
            at %= n < 256 ? n : 256;
        bad[at] ^= (uint8_t)(1u << (next_rand() % 8));
        if (i % 3 == 0)
            bad[(at + 1) % n] = (uint8_t)next_rand();
        both_ways(bad, n, rsize, shift);
    }
    free(bad);
}

static char dir[] = "/tmp/ana-unpack-direct-XXXXXX";

static const char *gen(const char *args, char *path, size_t cap)
{
    if (access(dir, F_OK) != 0) { /* first call, or a test before removed it */
        memcpy(dir + sizeof(dir) - 7, "XXXXXX", 6);
        cr_assert_not_null(mkdtemp(dir));
    }
    snprintf(path, cap, "%s/t%d.anat", dir, (int)(next_rand() % 1000000));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s --out %s > /dev/null", GEN_TRACE, args, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    return path;
}

Test(unpack_direct, gen_trace_chunks_read_straight_as_unpacked)
{
    static const char *const runs[] = {
        "--records 120000 --seed 1",
        "--records 120000 --seed 7 --threads 4",
        "--records 150000 --seed 3 --threads 70", /* more threads than a chunk's contexts */
        "--records 100000 --seed 11 --threads 2 --time-shift 4",
        "--records 60000 --seed 5 --threads 3 --level 1",
    };
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        char path[256];
        memset(&seen, 0, sizeof(seen));
        each_packed(gen(runs[i], path, sizeof(path)), straight);
        cr_assert_eq(seen.direct, seen.payloads);
        cr_assert_gt(seen.records, 50000, "%s", runs[i]);
        unlink(path);
    }
    rmdir(dir);
}

Test(unpack_direct, gen_trace_chunks_damaged_both_ways)
{
    char path[256];
    memset(&seen, 0, sizeof(seen));
    each_packed(gen("--records 30000 --seed 2 --threads 3", path, sizeof(path)), damaged);
    cr_assert_gt(seen.payloads, 100);
    cr_assert_lt(seen.direct, seen.payloads); /* damage was found */
    cr_assert_gt(seen.direct, 0);            /* and some survived it (flipped values) */
    unlink(path);
    rmdir(dir);
}

/* The chunk payloads of a seed file (pieces between "ACHK"), each packed here: through f. */
static void seed_payloads(const char *path, void (*f)(const uint8_t *, size_t, size_t, unsigned),
                          ana_packer *pk)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    if (size >= 8 && memcmp(buf, "ANATRACE", 8) == 0) {
        free(buf);
        return; /* a whole file: the gen_trace tests read files */
    }
    const uint8_t *p = buf, *end = buf + size;
    while (p < end) {
        const uint8_t *q = memmem(p, (size_t)(end - p), "ACHK", 4);
        size_t n = (size_t)((q ? q : end) - p);
        size_t cap = ana_pack_bound(n);
        uint8_t *packed = malloc(cap);
        cr_assert_not_null(packed);
        size_t pn = n ? ana_pack(pk, p, n, packed, cap) : 0;
        if (pn)
            f(packed, pn, n, 0);
        free(packed);
        p = q ? q + 4 : end;
    }
    free(buf);
}

Test(unpack_direct, sample_trace_payloads_both_ways)
{
    ana_packer *pk = ana_packer_new();
    DIR *d = opendir(FUZZ_SEEDS);
    cr_assert_not_null(d);
    memset(&seen, 0, sizeof(seen));
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", FUZZ_SEEDS, e->d_name);
        /* every seed whole; every eighth damaged too */
        seed_payloads(path, whole, pk);
        if (files++ % 8 == 0)
            seed_payloads(path, damaged, pk);
    }
    closedir(d);
    ana_packer_free(pk);
    cr_assert_gt(seen.payloads, 100);
    cr_assert_gt(seen.direct, 100);
}

/* A value of a random width (0 to 64 bits). */
static uint64_t rand_width(void)
{
    unsigned w = (unsigned)(next_rand() % 65);
    return w == 0 ? 0 : next_rand() >> (64 - w);
}

static const char text[] = "the quick brown fox jumps over the lazy dog 0123456789";

/* A record of that kind at t, every field of its row list random (strings, string lists
 * and frames point into what the caller keeps until it is encoded). */
static ana_record random_record(uint32_t kind, uint64_t t, ana_str *strs, uint64_t *ips)
{
    ana_record r;
    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.time_ns = t;
    uint8_t *x = (uint8_t *)&r.u;
    for (const struct ana_field *f = ana_fields[kind]; f->type != F_END; f++) {
        uint64_t v = rand_width();
        if (f->type == F_U || f->type == F_S) {
            memcpy(x + f->off, &v, sizeof(v));
        } else if (f->type == F_STR || f->type == F_BLOB) {
            *(ana_str *)(x + f->off) = (ana_str){ text + v % 10, (uint32_t)(v % 40) };
        } else if (f->type == F_STRV) {
            uint32_t n = (uint32_t)(v % 4);
            for (uint32_t i = 0; i < n; i++)
                strs[i] = (ana_str){ text + i, (uint32_t)(next_rand() % 30) };
            *(ana_strv *)(x + f->off) = (ana_strv){ strs, n };
        } else {
            uint32_t n = (uint32_t)(v % 6);
            for (uint32_t i = 0; i < n; i++)
                ips[i] = rand_width();
            *(ana_frames *)(x + f->off) = (ana_frames){ ips, n };
            ips += 8; /* LAUNCH and PTR_TABLE have two lists */
        }
    }
    return r;
}

/* Chunks of records of every kind 2.0 packs with random fields, threads switching by
 * SEGMENTs (more of them than a chunk's 64 contexts), each packed and read both ways. */
Test(unpack_direct, every_kind_random_fields)
{
    ana_packer *pk = ana_packer_new();
    size_t cap = 1 << 20;
    uint8_t *raw = malloc(cap), *packed = malloc(ana_pack_bound(cap));
    cr_assert(pk && raw && packed);
    memset(&seen, 0, sizeof(seen));
    int chunks = 0;
    for (int k = 0; k < 40; k++) {
        size_t n = 0;
        uint64_t prev = 0;
        for (int i = 0; i < 3000; i++) {
            ana_str strs[4];
            uint64_t ips[16];
            ana_record r;
            if (i % 40 == 0) {
                r = (ana_record){ .kind = ANA_K_SEGMENT };
                r.u.segment = (ana_rec_segment){ 100 + next_rand() % 90,
                                                 next_rand() >> (next_rand() % 64) };
                prev = r.u.segment.base_ns;
            } else {
                uint32_t kind = 1 + (uint32_t)(next_rand() % (ANA_K_PTR_TABLE - 1));
                if (kind == ANA_K_SEGMENT || i % 3 == 0)
                    kind = ANA_K_LAUNCH + (uint32_t)(i % 2) * (ANA_K_GPU_KERNEL - ANA_K_LAUNCH);
                /* times mostly forward by a little, sometimes anywhere */
                uint64_t t = i % 17 ? prev + next_rand() % 5000 : next_rand();
                r = random_record(kind, t, strs, ips);
            }
            size_t w = ana_record_encode(raw + n, cap - n, &r, prev);
            cr_assert_gt(w, 0);
            n += w;
            if (r.kind != ANA_K_SEGMENT)
                prev = r.time_ns;
        }
        size_t pn = ana_pack(pk, raw, n, packed, ana_pack_bound(cap));
        if (!pn)
            continue; /* a counter the packing cannot code */
        chunks++;
        both_ways(packed, pn, n, (unsigned)(k % 3) * 3);
        if (k % 8 == 0)
            damaged(packed, pn, n, 0);
    }
    cr_assert_gt(chunks, 30);
    cr_assert_gt(seen.direct, 30);
    free(raw);
    free(packed);
    ana_packer_free(pk);
}

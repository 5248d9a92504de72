/* pack_study — what packed chunks (format/pack.c) do to a trace's size and CPU: reads every
 * chunk of each trace given, and compresses its records at zstd LEVEL both as they are and
 * packed, checking that each packed chunk unpacks to the same bytes.
 *   pack_study [-l LEVEL] TRACE...
 * Prints records, bytes per record both ways, and pack / unpack / compress / decompress
 * CPU per record. PACK_COLS=1: each column compressed on its own; PACK_ZERO=1: what each
 * column costs in its chunk (the chunk compressed with that column zeroed, subtracted).
 * Not a test; docs/overhead.md, "Trace size". */
#define _GNU_SOURCE
#include "codec_int.h"
#include "pack.h"
#include "records.h"
#include "varint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A packed chunk's column directory (at most 1024 columns): the offset of the first
 * column's bytes; ids and lengths in id[] and len[]. */
static size_t directory(const uint8_t *p, size_t n, uint64_t *ncols, uint64_t *id, uint64_t *len)
{
    uint64_t nrec = 0;
    *ncols = 0;
    size_t at = ana_varint_get(p, n, &nrec);
    at += ana_varint_get(p + at, n - at, ncols);
    if (*ncols > 1024)
        *ncols = 1024;
    for (uint64_t i = 0; i < *ncols; i++) {
        at += ana_varint_get(p + at, n - at, &id[i]);
        at += ana_varint_get(p + at, n - at, &len[i]);
    }
    return at;
}

/* Bytes of each column compressed on its own, summed over chunks (PACK_COLS=1). */
static double col_bytes[1 + ANA_K_COUNT * 32], col_raw[1 + ANA_K_COUNT * 32];

static void column_sizes(ZSTD_CCtx *cc, const uint8_t *p, size_t n)
{
    uint64_t ncols, id[1024], len[1024];
    size_t at = directory(p, n, &ncols, id, len);
    uint8_t *cb = malloc(ZSTD_compressBound(n));
    for (uint64_t i = 0; i < ncols; i++) {
        col_bytes[id[i]] += (double)ZSTD_compress2(cc, cb, ZSTD_compressBound(n), p + at, len[i]);
        col_raw[id[i]] += (double)len[i];
        at += len[i];
    }
    free(cb);
}

/* What each column costs in the chunk as compressed (PACK_ZERO=1): the chunk's compressed
 * size less its size with that column's bytes all zero (same length), summed over chunks. */
static double col_marginal[1 + ANA_K_COUNT * 32];

static void column_marginals(ZSTD_CCtx *cc, const uint8_t *p, size_t n, size_t whole)
{
    uint64_t ncols, id[1024], len[1024];
    size_t at = directory(p, n, &ncols, id, len);
    uint8_t *z = malloc(n), *cb = malloc(ZSTD_compressBound(n));
    for (uint64_t i = 0; i < ncols; i++) {
        memcpy(z, p, n);
        memset(z + at, 0, len[i]);
        size_t c = ZSTD_compress2(cc, cb, ZSTD_compressBound(n), z, n);
        col_marginal[id[i]] += (double)whole - (double)c;
        at += len[i];
    }
    free(z), free(cb);
}

/* ---- PACK_ALT=1: other codings of the host time columns, measured on the same chunks ----
 * For every kind but SEGMENT and the GPU activity kinds, slot 0 (dt) and the dur_ns slot are
 * re-coded, each variant a set of the flags below (variant 0: none, as packed: a check).
 * GAP: dt less the previous record's dur_ns in the thread (the time from the end of one call
 * to the start of the next: a call's duration is then coded once, not twice); SITE_DT,
 * SITE_DUR: the zigzag difference from the value of the previous record of the same call
 * site (a record's fields but its time, duration, corr and call, hashed); TRANS: the site
 * is the pair (previous record's site, this site); PLANES: each column in byte planes
 * (low byte, second byte, the rest as a varint). Each: the chunk's columns, those
 * replaced, compressed as one frame. */
enum { GAP = 1, SITE_DT = 2, SITE_DUR = 4, TRANS = 8, PLANES = 16 };
static const int variants[] = { 0, SITE_DT | SITE_DUR, SITE_DT | SITE_DUR | TRANS, PLANES,
                                SITE_DT | SITE_DUR | PLANES, SITE_DUR, GAP, GAP | PLANES,
                                GAP | SITE_DUR, GAP | SITE_DUR | PLANES,
                                GAP | SITE_DT | SITE_DUR | PLANES };
#define NALT (int)(sizeof(variants) / sizeof(variants[0]))
#define SITES 8192
static double alt_bytes[NALT];

struct altcol {
    uint8_t *b;
    size_t len, cap;
};

static void put_byte(struct altcol *c, uint8_t v)
{
    if (c->len == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4096;
        c->b = realloc(c->b, c->cap);
    }
    c->b[c->len++] = v;
}

static void put_var(struct altcol *c, uint64_t v)
{
    uint8_t t[ANA_VARINT_MAX];
    size_t n = ana_varint_put(t, v);
    for (size_t i = 0; i < n; i++)
        put_byte(c, t[i]);
}

/* Columns of one variant: [col][plane]; plane 0 alone unless split. */
static struct altcol alt[NALT][1 + ANA_K_COUNT * 32][3];

static void put_alt(int v, int col, uint64_t z)
{
    if (variants[v] & PLANES) {
        put_byte(&alt[v][col][0], (uint8_t)z);
        put_byte(&alt[v][col][1], (uint8_t)(z >> 8));
        put_var(&alt[v][col][2], z >> 16);
    } else {
        put_var(&alt[v][col][0], z);
    }
}

static int dur_slot(uint32_t kind)
{
    const struct ana_field *f = ana_fields[kind];
    for (int i = 0; f && f[i].type != F_END; i++)
        if (f[i].role == R_DUR)
            return 1 + i;
    return -1;
}

static uint64_t *dur_ptr(ana_record *rec, uint32_t kind)
{
    const struct ana_field *f = ana_fields[kind];
    for (int i = 0; f && f[i].type != F_END; i++)
        if (f[i].role == R_DUR)
            return (uint64_t *)((uint8_t *)&rec->u + f[i].off);
    return NULL;
}

/* A record's call site: its encoding with time, duration, corr and call zeroed. */
static uint64_t site_of(ana_record *rec, uint32_t kind)
{
    ana_record c = *rec;
    const struct ana_field *f = ana_fields[kind];
    for (int i = 0; f && f[i].type != F_END; i++)
        if (f[i].role != R_NONE)
            *(uint64_t *)((uint8_t *)&c.u + f[i].off) = 0;
    static uint8_t buf[1 << 16];
    size_t n = ana_record_encode(buf, sizeof(buf), &c, c.time_ns);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ buf[i]) * 1099511628211ull;
    return h | 1;
}

static inline int is_gpu(uint32_t k)
{
    return k == ANA_K_GPU_KERNEL || k == ANA_K_GPU_MEMCPY || k == ANA_K_GPU_MEMSET;
}

static void alt_codings(ZSTD_CCtx *cc, const uint8_t *raw, size_t n, const uint8_t *p,
                        size_t pn)
{
    static struct { uint64_t key, dt, gap, dur; } site[2][SITES];
    static ana_scratch sc;
    memset(site, 0, sizeof(site));
    for (int v = 0; v < NALT; v++)
        for (int c = 0; c < 1 + ANA_K_COUNT * 32; c++)
            for (int pl = 0; pl < 3; pl++)
                alt[v][c][pl].len = 0;
    uint64_t prev_ns = 0, prev_site = 0, prev_dur = 0;
    for (size_t at = 0; at < n;) {
        uint32_t kind;
        size_t plen, h = ana_record_header(raw + at, n - at, &kind, &plen);
        if (!h)
            return;
        if (sc.cap < plen * 17 + 256) {
            sc.cap = plen * 17 + 256;
            sc.buf = realloc(sc.buf, sc.cap);
        }
        sc.used = 0;
        ana_record rec;
        if (ana_record_decode(kind, raw + at + h, plen, prev_ns, &rec, &sc) != ANA_DEC_OK)
            return;
        at += h + plen;
        uint64_t dt = rec.time_ns - prev_ns;
        prev_ns = rec.time_ns;
        if (kind == ANA_K_SEGMENT)
            prev_dur = 0;
        if (kind == ANA_K_SEGMENT || is_gpu(kind))
            continue;
        int ds = dur_slot(kind), c0 = 1 + (int)kind * 32;
        uint64_t *dp = dur_ptr(&rec, kind), dur = dp ? *dp : 0, st = site_of(&rec, kind);
        uint64_t gap = dt - prev_dur;
        prev_dur = dur;
        uint64_t keys[2] = { st, (st * 31 + prev_site) | 1 };
        prev_site = st;
        uint64_t pdt[2][2], pdur[2];
        for (int k = 0; k < 2; k++) {
            __typeof__(&site[0][0]) e = &site[k][keys[k] % SITES];
            int hit = e->key == keys[k];
            pdt[k][0] = hit ? e->dt : 0;
            pdt[k][1] = hit ? e->gap : 0;
            pdur[k] = hit ? e->dur : 0;
            *e = (__typeof__(*e)){ keys[k], dt, gap, dur };
        }
        for (int v = 0; v < NALT; v++) {
            int f = variants[v], k = !!(f & TRANS);
            uint64_t x = f & GAP ? gap : dt;
            if (f & SITE_DT)
                x -= pdt[k][!!(f & GAP)];
            put_alt(v, c0, ana_zigzag((int64_t)x));
            if (ds > 0)
                put_alt(v, c0 + ds, f & SITE_DUR ? ana_zigzag((int64_t)(dur - pdur[k])) : dur);
        }
    }
    /* the packed chunk's columns, each replaced where a variant has its own */
    uint64_t ncols, id[1024], len[1024];
    size_t at = directory(p, pn, &ncols, id, len);
    for (int v = 0; v < NALT; v++) {
        size_t need = 0;
        for (uint64_t i = 0; i < ncols; i++) {
            struct altcol *ac = alt[v][id[i]];
            need += ac[0].len ? ac[0].len + ac[1].len + ac[2].len : len[i];
        }
        size_t ccap = ZSTD_compressBound(need), o = 0, a = at;
        uint8_t *buf = malloc(need ? need : 1), *cb = malloc(ccap);
        for (uint64_t i = 0; i < ncols; i++) {
            struct altcol *ac = alt[v][id[i]];
            if (!ac[0].len) {
                memcpy(buf + o, p + a, len[i]);
                o += len[i];
            }
            for (int pl = 0; pl < 3; pl++)
                if (ac[pl].len) {
                    memcpy(buf + o, ac[pl].b, ac[pl].len);
                    o += ac[pl].len;
                }
            a += len[i];
        }
        alt_bytes[v] += (double)ZSTD_compress2(cc, cb, ccap, buf, o);
        free(buf), free(cb);
    }
}

static uint64_t count_records(const uint8_t *p, size_t n)
{
    uint64_t k, len, c = 0;
    for (size_t at = 0; at < n; c++) {
        size_t a = ana_varint_get(p + at, n - at, &k);
        size_t b = a ? ana_varint_get(p + at + a, n - at - a, &len) : 0;
        if (!b)
            break;
        at += a + b + len;
    }
    return c;
}

int main(int argc, char **argv)
{
    int level = 3, i = 1;
    if (argc > 2 && !strcmp(argv[1], "-l")) {
        level = atoi(argv[2]);
        i = 3;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: pack_study [-l LEVEL] TRACE...\n");
        return 2;
    }
    ana_packer *pk = ana_packer_new();
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
    for (; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *file = malloc((size_t)sz);
        if (fread(file, 1, (size_t)sz, f) != (size_t)sz)
            return 2;
        fclose(f);
        uint64_t recs = 0, plain = 0, packed = 0, raw_total = 0, packed_raw = 0, unpackable = 0;
        double t_pack = 0, t_unpack = 0, t_c_plain = 0, t_c_packed = 0, t_d_packed = 0, t_d_plain = 0;
        /* buffers for the largest chunk, touched once before timing */
        size_t maxr = 0;
        for (size_t a = ANA_HEADER_SIZE; a + ANA_CHUNK_HEADER_SIZE <= (size_t)sz && !memcmp(file + a, "ACH", 3);) {
            uint32_t cs, rs;
            memcpy(&cs, file + a + 4, 4);
            memcpy(&rs, file + a + 8, 4);
            maxr = rs > maxr ? rs : maxr;
            a += ANA_CHUNK_HEADER_SIZE + cs;
        }
        size_t cb = ZSTD_compressBound(ana_pack_bound(maxr)), pcap = ana_pack_bound(maxr);
        uint8_t *cbuf = malloc(cb), *pbuf = malloc(pcap), *back = malloc(maxr);
        uint8_t *content = malloc(pcap), *raw = malloc(maxr);
        memset(cbuf, 1, cb), memset(pbuf, 1, pcap), memset(back, 1, maxr), memset(content, 1, pcap), memset(raw, 1, maxr);
        size_t at = ANA_HEADER_SIZE;
        while (at + ANA_CHUNK_HEADER_SIZE <= (size_t)sz && !memcmp(file + at, "ACH", 3)) {
            uint32_t csize, rsize;
            memcpy(&csize, file + at + 4, 4);
            memcpy(&rsize, file + at + 8, 4);
            const uint8_t *frame = file + at + ANA_CHUNK_HEADER_SIZE;
            unsigned long long fcs = ZSTD_getFrameContentSize(frame, csize);
            ZSTD_decompressDCtx(dc, content, fcs, frame, csize);
            if (file[at + 3] == 'P') {
                if (ana_unpack(content, fcs, raw, rsize) != rsize) {
                    fprintf(stderr, "%s: chunk at %zu does not unpack\n", argv[i], at);
                    return 1;
                }
            } else {
                memcpy(raw, content, rsize);
            }
            at += ANA_CHUNK_HEADER_SIZE + csize;
            recs += count_records(raw, rsize);
            raw_total += rsize;
            double t0 = now();
            size_t c1 = ZSTD_compress2(cc, cbuf, cb, raw, rsize);
            double t1 = now();
            ZSTD_decompressDCtx(dc, back, rsize, cbuf, c1);
            double t2 = now();
            size_t pn = ana_pack(pk, raw, rsize, pbuf, pcap);
            double t3 = now();
            plain += c1;
            t_c_plain += t1 - t0;
            t_d_plain += t2 - t1;
            if (!pn) {
                unpackable++;
                packed += c1;
                continue;
            }
            size_t c2 = ZSTD_compress2(cc, cbuf, cb, pbuf, pn);
            double t4 = now();
            ZSTD_decompressDCtx(dc, pbuf, pn, cbuf, c2);
            double t5 = now();
            size_t un = ana_unpack(pbuf, pn, back, rsize);
            double t6 = now();
            if (un != rsize || memcmp(back, raw, rsize)) {
                fprintf(stderr, "%s: chunk at %zu: packing is not exact\n", argv[i], at);
                return 1;
            }
            packed += c2;
            packed_raw += pn;
            if (getenv("PACK_COLS"))
                column_sizes(cc, pbuf, pn);
            if (getenv("PACK_ALT"))
                alt_codings(cc, raw, rsize, pbuf, pn);
            if (getenv("PACK_ZERO"))
                column_marginals(cc, pbuf, pn, c2);
            t_pack += t3 - t2;
            t_c_packed += t4 - t3;
            t_d_packed += t5 - t4;
            t_unpack += t6 - t5;
        }
        free(cbuf), free(pbuf), free(back), free(content), free(raw);
        double r = recs ? (double)recs : 1;
        printf("%s: %llu records, %.1f raw B/record; zstd -%d: plain %.2f B/record, packed %.2f "
               "B/record (%.2fx smaller, packed raw %.1f B/record, %llu chunks not packable)\n",
               argv[i], (unsigned long long)recs, raw_total / r, level, plain / r, packed / r,
               packed ? (double)plain / packed : 0, packed_raw / r, (unsigned long long)unpackable);
        printf("  CPU ns/record: compress plain %.1f, pack %.1f + compress packed %.1f; "
               "decompress plain %.1f, decompress packed %.1f + unpack %.1f\n",
               t_c_plain * 1e9 / r, t_pack * 1e9 / r, t_c_packed * 1e9 / r, t_d_plain * 1e9 / r,
               t_d_packed * 1e9 / r, t_unpack * 1e9 / r);
        free(file);
        if (getenv("PACK_COLS"))
            for (int c = 0; c < 1 + ANA_K_COUNT * 32; c++)
                if (col_bytes[c] > 0.01 * packed) {
                    printf("  column %-12s slot %2d: %.3f B/record (raw %.2f)\n",
                           c ? ana_kind_name((uint32_t)((c - 1) / 32)) : "kinds", c ? (c - 1) % 32 : 0,
                           col_bytes[c] / r, col_raw[c] / r);
                    col_bytes[c] = col_raw[c] = 0;
                }
        if (getenv("PACK_ALT"))
            for (int v = 0; v < NALT; v++) {
                int f = variants[v];
                printf("  host times coded as%s%s%s%s%s%s: %.3f B/record\n", f ? "" : " packed",
                       f & GAP ? " GAP" : "", f & SITE_DT ? " SITE_DT" : "",
                       f & SITE_DUR ? " SITE_DUR" : "", f & TRANS ? " TRANS" : "",
                       f & PLANES ? " PLANES" : "", alt_bytes[v] / r);
                alt_bytes[v] = 0;
            }
        if (getenv("PACK_ZERO"))
            for (int c = 0; c < 1 + ANA_K_COUNT * 32; c++)
                if (col_marginal[c] > 0.005 * packed) {
                    printf("  zeroed %-12s slot %2d: -%.3f B/record\n",
                           c ? ana_kind_name((uint32_t)((c - 1) / 32)) : "kinds",
                           c ? (c - 1) % 32 : 0, col_marginal[c] / r);
                    col_marginal[c] = 0;
                }
    }
    ana_packer_free(pk);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    return 0;
}

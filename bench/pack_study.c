/* pack_study — what packed chunks (format/pack.c) do to a trace's size and CPU: reads every
 * chunk of each trace given, and compresses its records at zstd LEVEL both as they are and
 * packed, checking that each packed chunk unpacks to the same bytes.
 *   pack_study [-l LEVEL] TRACE...
 * Prints records, bytes per record both ways, and pack / unpack / compress / decompress
 * CPU per record. Not a test; bench/README in docs/overhead.md. */
#define _GNU_SOURCE
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

/* Bytes of each column compressed on its own, summed over chunks (PACK_COLS=1). */
static double col_bytes[1 + ANA_K_COUNT * 32], col_raw[1 + ANA_K_COUNT * 32];

static void column_sizes(ZSTD_CCtx *cc, const uint8_t *p, size_t n)
{
    uint64_t nrec = 0, ncols = 0, id[1024], len[1024];
    size_t at = ana_varint_get(p, n, &nrec);
    at += ana_varint_get(p + at, n - at, &ncols);
    for (uint64_t i = 0; i < ncols && i < 1024; i++) {
        at += ana_varint_get(p + at, n - at, &id[i]);
        at += ana_varint_get(p + at, n - at, &len[i]);
    }
    uint8_t *cb = malloc(ZSTD_compressBound(n));
    for (uint64_t i = 0; i < ncols && i < 1024; i++) {
        col_bytes[id[i]] += (double)ZSTD_compress2(cc, cb, ZSTD_compressBound(n), p + at, len[i]);
        col_raw[id[i]] += (double)len[i];
        at += len[i];
    }
    free(cb);
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
    }
    ana_packer_free(pk);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    return 0;
}

/* fuzz_trace.c — libFuzzer target: bytes -> a .anat file -> ana_import_load -> the report.
 *
 * Two kinds of input, so that mutations reach the record decoders although the records
 * on disk are zstd-compressed (a flipped compressed byte only tests zstd's checks):
 *   * an input that starts with "ANATRACE" is the file as it is: header, chunk framing,
 *     compressed frames;
 *   * any other input is the decompressed payload of the chunks, separated by the four
 *     bytes "ACHK": the target adds a valid header and compresses each piece into a valid
 *     chunk (sequence numbers in order), so that only the records are hostile. A piece
 *     that packs (format/pack.h) is written as a packed chunk, so the reader unpacks it;
 *     each piece is also handed to the unpacker as if it were a packed payload, and it and
 *     its packed form are read both ways (straight from the columns, and unpacked then
 *     decoded: ana_batch_decode): a difference aborts.
 * tests/fuzz/anat_unpack turns a trace into the second kind (the seeds). */
#include "ahead.h"
#include "codec_int.h"
#include "fuzz_common.h"
#include "pack.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* A batch holding in[0, n) as a packed payload of rsize bytes of records. */
static void batch_of(ana_batch *b, const uint8_t *in, size_t n, size_t rsize)
{
    memset(b, 0, sizeof(*b));
    b->c.packed = 1;
    b->c.pbuf = malloc(n + 1);
    b->c.raw = malloc(rsize + 1);
    if (!b->c.pbuf || !b->c.raw)
        abort();
    memcpy(b->c.pbuf, in, n);
    b->c.got = n;
    b->c.rsize = (uint32_t)rsize;
}

static int same_str(ana_str a, ana_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.s, b.s, a.len) == 0);
}

/* Every field of the kind's row list, and kind, thread and time. */
static int same_record(const ana_record *a, const ana_record *b)
{
    if (a->kind != b->kind || a->tid != b->tid || a->time_ns != b->time_ns ||
        a->kind == 0 || a->kind >= ANA_K_COUNT)
        return 0;
    const uint8_t *x = (const uint8_t *)&a->u, *y = (const uint8_t *)&b->u;
    for (const struct ana_field *f = ana_fields[a->kind]; f->type != F_END; f++) {
        const void *p = x + f->off, *q = y + f->off;
        int same = 1;
        if (f->type == F_U || f->type == F_S) {
            same = memcmp(p, q, 8) == 0;
        } else if (f->type == F_STR || f->type == F_BLOB) {
            same = same_str(*(const ana_str *)p, *(const ana_str *)q);
        } else if (f->type == F_STRV) {
            const ana_strv *s = p, *t = q;
            same = s->n == t->n;
            for (uint32_t i = 0; same && i < s->n; i++)
                same = same_str(s->v[i], t->v[i]);
        } else {
            const ana_frames *s = p, *t = q;
            same = s->n == t->n &&
                   (s->n == 0 || memcmp(s->ip, t->ip, s->n * sizeof(uint64_t)) == 0);
        }
        if (!same)
            return 0;
    }
    return 1;
}

/* in[0, n) as a packed payload of rsize bytes, read straight and unpacked: aborts when
 * they differ in anything the reader would see. */
static void both_ways(const uint8_t *in, size_t n, size_t rsize)
{
    if (rsize == 0 || rsize > ANA_CHUNK_MAX)
        return;
    ana_batch d, u;
    batch_of(&d, in, n, rsize);
    batch_of(&u, in, n, rsize);
    ana_batch_decode(&d, 0, 1);
    ana_batch_decode(&u, 0, 0);
    if (d.result != u.result || d.n != u.n || d.stop.rpos != u.stop.rpos ||
        d.stop.seg_tid != u.stop.seg_tid || d.stop.prev_ns != u.stop.prev_ns ||
        d.stop.in_segment != u.stop.in_segment || d.unknown_tail != u.unknown_tail)
        abort();
    size_t od = 0, ou = 0;
    for (size_t i = 0; i < d.n; i++) {
        ana_record a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        if (ana_ahead_next(&d, i, &od, &a) != ana_ahead_next(&u, i, &ou, &b) ||
            !same_record(&a, &b))
            abort();
    }
    ana_batch_free(&d);
    ana_batch_free(&u);
}

/* Appends one chunk holding raw[0..n) at *len in *buf, growing it: packed where it packs. */
static void ana_fuzz_chunk(ZSTD_CCtx *cc, uint8_t **buf, size_t *len, const uint8_t *raw,
                           size_t n, uint32_t seq)
{
    static ana_packer *pk;
    if (!pk && !(pk = ana_packer_new()))
        abort();
    size_t pcap = ana_pack_bound(n), ucap = 4 * n + 64;
    uint8_t *packed = malloc(pcap), *out = malloc(ucap);
    if (!packed || !out)
        abort();
    size_t un = ana_unpack(raw, n, out, ucap); /* hostile columns: must not overrun */
    both_ways(raw, n, un ? un : n);
    size_t pn = ana_pack(pk, raw, n, packed, pcap);
    if (pn)
        both_ways(packed, pn, n);
    const uint8_t *content = pn ? packed : raw;
    size_t cn = pn ? pn : n;
    size_t cap = ANA_CHUNK_HEADER_SIZE + ZSTD_compressBound(cn);
    uint8_t *nb = realloc(*buf, *len + cap);
    if (!nb)
        abort();
    *buf = nb;
    uint8_t *h = nb + *len;
    size_t c = ZSTD_compress2(cc, h + ANA_CHUNK_HEADER_SIZE, cap - ANA_CHUNK_HEADER_SIZE, content, cn);
    if (ZSTD_isError(c))
        abort();
    memcpy(h, pn ? "ACHP" : "ACHK", 4);
    put32(h + 4, (uint32_t)c);
    put32(h + 8, (uint32_t)n);
    put32(h + 12, seq);
    *len += ANA_CHUNK_HEADER_SIZE + c;
    free(packed);
    free(out);
}

/* The file of the payload-kind input (see above); *len its size. malloc'd. */
static uint8_t *ana_fuzz_frame(const uint8_t *data, size_t size, size_t *len)
{
    uint8_t *buf = calloc(1, ANA_HEADER_SIZE);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (!buf || !cc)
        abort();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    memcpy(buf, "ANATRACE", 8);
    uint16_t major = ANA_FORMAT_MAJOR, minor = ANA_FORMAT_MINOR;
    memcpy(buf + 8, &major, 2);
    memcpy(buf + 10, &minor, 2);
    put32(buf + 12, ANA_HEADER_SIZE);
    size_t at = ANA_HEADER_SIZE, start = 0;
    uint32_t seq = 0;
    for (size_t i = 0; i <= size; i++) {
        int sep = i + 4 <= size && memcmp(data + i, "ACHK", 4) == 0;
        if (!sep && i < size)
            continue;
        if (i > start)
            ana_fuzz_chunk(cc, &buf, &at, data + start, i - start, seq++);
        start = i + 4;
        i += 3;
    }
    ZSTD_freeCCtx(cc);
    *len = at;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd;
    if (size >= 8 && memcmp(data, "ANATRACE", 8) == 0) {
        fd = ana_fuzz_file(data, size, path, sizeof(path));
    } else {
        size_t len;
        uint8_t *file = ana_fuzz_frame(data, size, &len);
        fd = ana_fuzz_file(file, len, path, sizeof(path));
        free(file);
    }
    if (fd < 0)
        abort();
    ana_fuzz_load(path);
    close(fd);
    return 0;
}

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
 *     each piece is also handed to the unpacker as if it were a packed payload.
 * tests/fuzz/anat_unpack turns a trace into the second kind (the seeds). */
#include "fuzz_common.h"
#include "pack.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

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
    (void)ana_unpack(raw, n, out, ucap); /* hostile columns: must not overrun */
    size_t pn = ana_pack(pk, raw, n, packed, pcap);
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

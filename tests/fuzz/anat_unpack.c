/* anat_unpack.c — turns a .anat trace into an input of fuzz_trace's payload kind: the
 * decompressed payload of each chunk, the chunks separated by "ACHK" (fuzz_trace.c).
 * Used to make the seeds of tests/fuzz/corpus/trace from sample traces.
 *
 * Usage: anat_unpack TRACE OUT [MAX_CHUNKS]   (exit 0, or 2 with a message) */
#include "pack.h"
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static int dump_payloads(FILE *in, FILE *out, unsigned long max_chunks)
{
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    if (fseek(in, ANA_HEADER_SIZE, SEEK_SET) != 0)
        return -1;
    for (unsigned long n = 0; n < max_chunks && fread(h, 1, sizeof(h), in) == sizeof(h); n++) {
        uint32_t csize, rsize;
        memcpy(&csize, h + 4, 4);
        memcpy(&rsize, h + 8, 4);
        int packed = memcmp(h, "ACHP", 4) == 0; /* (2.0) unpacked after decompression */
        if ((memcmp(h, "ACHK", 4) != 0 && !packed) || csize > ANA_CHUNK_MAX || rsize > ANA_CHUNK_MAX)
            return -1;
        size_t pcap = ana_pack_bound(rsize);
        uint8_t *c = malloc(csize ? csize : 1), *r = malloc(rsize ? rsize : 1), *p = malloc(pcap);
        int ok = c && r && p && fread(c, 1, csize, in) == csize;
        if (ok && packed) {
            size_t pn = ZSTD_decompress(p, pcap, c, csize);
            ok = !ZSTD_isError(pn) && ana_unpack(p, pn, r, rsize) == rsize;
        } else if (ok) {
            ok = ZSTD_decompress(r, rsize, c, csize) == rsize;
        }
        free(p);
        if (ok && n > 0)
            fwrite("ACHK", 1, 4, out);
        if (ok)
            fwrite(r, 1, rsize, out);
        free(c);
        free(r);
        if (!ok)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: anat_unpack TRACE OUT [MAX_CHUNKS]\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    unsigned long max = argc > 3 ? strtoul(argv[3], NULL, 10) : (unsigned long)-1;
    int rc = in && out ? dump_payloads(in, out, max) : -1;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "anat_unpack: cannot unpack %s into %s\n", argv[1], argv[2]);
    return rc ? 2 : 0;
}

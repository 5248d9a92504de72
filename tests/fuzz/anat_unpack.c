/* anat_unpack.c — turns a .anat trace into an input of fuzz_trace's payload kind: the
 * decompressed payload of each chunk, the chunks separated by "ACHK" (fuzz_trace.c).
 * Used to make the seeds of tests/fuzz/corpus/trace from sample traces.
 *
 * Usage: anat_unpack TRACE OUT [MAX_CHUNKS]   (exit 0, or 2 with a message) */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static int ana_unpack(FILE *in, FILE *out, unsigned long max_chunks)
{
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    if (fseek(in, ANA_HEADER_SIZE, SEEK_SET) != 0)
        return -1;
    for (unsigned long n = 0; n < max_chunks && fread(h, 1, sizeof(h), in) == sizeof(h); n++) {
        uint32_t csize, rsize;
        memcpy(&csize, h + 4, 4);
        memcpy(&rsize, h + 8, 4);
        if (memcmp(h, "ACHK", 4) != 0 || csize > ANA_CHUNK_MAX || rsize > ANA_CHUNK_MAX)
            return -1;
        uint8_t *c = malloc(csize ? csize : 1), *r = malloc(rsize ? rsize : 1);
        int ok = c && r && fread(c, 1, csize, in) == csize &&
                 ZSTD_decompress(r, rsize, c, csize) == rsize;
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
    int rc = in && out ? ana_unpack(in, out, max) : -1;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "anat_unpack: cannot unpack %s into %s\n", argv[1], argv[2]);
    return rc ? 2 : 0;
}

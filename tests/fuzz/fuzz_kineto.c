/* fuzz_kineto.c — libFuzzer target: bytes -> the PyTorch/Kineto JSON importer (kineto.h,
 * jsonr.h) -> the report.
 *
 * The input is imported as it is (plain text, or gzip when it starts with 1f 8b: mutated
 * gzip streams); an input of which the length is a multiple of 4 is also gzip-compressed
 * by the target and imported again, so that the gzip path reads the same hostile text
 * through zlib (buffer refills at other places). */
#include "fuzz_common.h"
#include "import/kineto.h"

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

static void ana_fuzz_import(const void *data, size_t size)
{
    char path[64];
    int fd = ana_fuzz_file(data, size, path, sizeof(path));
    if (fd < 0)
        abort();
    ana_trace *t;
    ana_error err;
    char msg[1024];
    if (ana_kineto_load(path, ANA_LOAD_ALL, &t, &err) == 0)
        ana_fuzz_report(t);
    else
        ana_error_format(&err, msg, sizeof(msg));
    close(fd);
}

/* data gzip-compressed (with a gzip header, as `gzip` writes); malloc'd. */
static uint8_t *ana_fuzz_gzip(const uint8_t *data, size_t size, size_t *len)
{
    z_stream z = { 0 };
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    size_t cap = deflateBound(&z, (uLong)size) + 64;
    uint8_t *out = malloc(cap);
    if (!out)
        abort();
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    *len = z.total_out;
    deflateEnd(&z);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ana_fuzz_import(data, size);
    if (size % 4 == 0) {
        size_t len;
        uint8_t *gz = ana_fuzz_gzip(data, size, &len);
        ana_fuzz_import(gz, len);
        free(gz);
    }
    return 0;
}

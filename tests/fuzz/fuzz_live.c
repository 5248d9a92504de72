/* fuzz_live.c — libFuzzer target: bytes -> a trace's live file (format/live.h) -> the
 * reader's recovery (reader rule 6) -> ana_import_load -> the report.
 *
 * A live file sits beside a trace where anyone who can write the directory can put one, so
 * the reader must survive any content. The input is the live file; its first 24 bytes are
 * set to a valid magic, version, header size and the trace's id, so that mutations reach
 * the rings and counters instead of stopping at the identity checks (which the corruption
 * test covers). The trace beside it is a header with no chunk: everything read comes from
 * the live file. Seeds: corpus/live, from make_live_seeds.py. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "live.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE_ID 0x1234567890abcdefull

static int put_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int ok = write(fd, data, size) == (ssize_t)size;
    close(fd);
    return ok ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    char trace[96], live[104];
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/dev/shm/ana-fuzz-live-%d", (int)getpid());
        mkdir(dir, 0700);
    }
    snprintf(trace, sizeof(trace), "%s/t.anat", dir);
    snprintf(live, sizeof(live), "%s%s", trace, ANA_LIVE_SUFFIX);
    uint8_t h[ANA_HEADER_SIZE] = { 0 };
    uint16_t major = ANA_FORMAT_MAJOR, minor = ANA_FORMAT_MINOR;
    uint32_t hsize = ANA_HEADER_SIZE, lversion = ANA_LIVE_VERSION, lhsize = ANA_LIVE_HEADER_SIZE;
    uint64_t id = TRACE_ID;
    memcpy(h, "ANATRACE", 8);
    memcpy(h + 8, &major, 2);
    memcpy(h + 10, &minor, 2);
    memcpy(h + 12, &hsize, 4);
    memcpy(h + 24, &id, 8);
    uint8_t *l = malloc(size < 24 ? 24 : size);
    if (!l)
        abort();
    memcpy(l, data, size);
    memcpy(l, ANA_LIVE_MAGIC, 8);
    memcpy(l + 8, &lversion, 4);
    memcpy(l + 12, &lhsize, 4);
    memcpy(l + 16, &id, 8);
    if (put_file(trace, h, sizeof(h)) < 0 || put_file(live, l, size < 24 ? 24 : size) < 0)
        abort();
    free(l);
    ana_fuzz_load(trace);
    return 0;
}

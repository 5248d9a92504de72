/* fuzz_common.c — see fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include "views/report_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int ana_fuzz_file(const void *data, size_t size, char *path, size_t cap)
{
    int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        p += n;
        size -= (size_t)n;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static FILE *ana_fuzz_sink(void)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (!sink)
        abort();
    return sink;
}

void ana_fuzz_report(ana_trace *t)
{
    ana_report_opts ro = { .top = 10, .symbols = 0, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report r;
    ana_report_build(&r, t, &ro);
    ana_report_write_text(&r, ana_fuzz_sink());
    ana_report_write_json(&r, ana_fuzz_sink());
    ana_report_free(&r);
    ana_trace_free(t);
}

void ana_fuzz_load(const char *path)
{
    static const unsigned modes[] = { ANA_LOAD_ALL, ANA_LOAD_SUMMARY };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        ana_trace *t;
        ana_error err;
        char msg[1024];
        if (ana_import_load(path, modes[i], &t, &err) != 0) {
            ana_error_format(&err, msg, sizeof(msg));
            continue;
        }
        if (modes[i] == ANA_LOAD_ALL)
            ana_fuzz_report(t);
        else
            ana_trace_free(t);
    }
}

/* live_recover.c — writing a live file's records into its trace for good (live.h).
 * The top of format/: called by the analyzer's `recover` and by the preload (a dead process's
 * live file); calls reader.c, live_read.c, writer.c. */
#define _GNU_SOURCE
#include "live.h"
#include "reader.h"
#include "records.h"
#include "safe_open.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads the whole trace (not its live file): how many whole chunks, where they end, which
 * ids it defines, whether it has an END. 0, or -1 with msg. */
static int scan(const char *path, ana_reader **rd, ana_reader_stats *st, char *msg, size_t cap)
{
    ana_error err;
    ana_record rec;
    int rc;
    if (ana_reader_open(path, rd, &err) != 0) {
        ana_error_format(&err, msg, cap);
        return -1;
    }
    ana_reader_set_live(*rd, 0);
    while ((rc = ana_reader_next(*rd, &rec, &err)) == 1)
        ;
    if (rc < 0) {
        ana_error_format(&err, msg, cap);
        ana_reader_close(*rd);
        *rd = NULL;
        return -1;
    }
    ana_reader_get_stats(*rd, st);
    return 0;
}

static int append(const char *path, const ana_reader *rd, const ana_reader_stats *st,
                  const ana_live_result *res, const char *detail, char *msg, size_t cap)
{
    int fd = ana_open_file(path, O_RDWR, ANA_OPEN_NOFOLLOW, NULL);
    ana_tw *tw = fd < 0 ? NULL : ana_tw_append_fd(fd, 3, ana_reader_good_end(rd), st->chunks);
    if (!tw) {
        snprintf(msg, cap, "%s: cannot write: %s", path, ana_open_strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0, from = 0; i < res->npieces && rc == 0; from = res->pieces[i++])
        rc = ana_tw_chunk(tw, res->payload + from, res->pieces[i] - from);
    if (rc == 0 && !res->has_end)
        rc = ana_tw_end(tw, res->last_ns << ana_tw_time_shift(tw), ANA_END_RECOVERED, detail);
    if (rc == 0 && fsync(fd) < 0)
        rc = -1;
    int e = errno;
    if (ana_tw_close(tw) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0)
        snprintf(msg, cap, "%s: cannot write: %s", path, strerror(e));
    return rc;
}

void ana_live_identity(uint8_t boot_id[16], uint64_t *pidns)
{
    memset(boot_id, 0, 16);
    *pidns = 0;
    char text[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    /* 36 characters: 32 hex digits in groups joined by '-' */
    for (ssize_t i = 0, k = 0; i < n && k < 32; i++) {
        int c = text[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v >= 0)
            boot_id[k / 2] |= (uint8_t)(v << (k % 2 ? 0 : 4)), k++;
    }
    struct stat sb;
    if (stat("/proc/self/ns/pid", &sb) == 0)
        *pidns = (uint64_t)sb.st_ino;
}

int ana_live_where(const ana_live_header *h)
{
    static const uint8_t zero[16];
    if (memcmp(h->boot_id, zero, 16) == 0 || h->pidns == 0)
        return ANA_LIVE_UNKNOWN;
    uint8_t boot[16];
    uint64_t ns;
    ana_live_identity(boot, &ns);
    return memcmp(boot, h->boot_id, 16) == 0 && ns == h->pidns ? ANA_LIVE_HERE : ANA_LIVE_ELSEWHERE;
}

int ana_live_header_of(const char *trace_path, ana_live_header *h)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s%s", trace_path, ANA_LIVE_SUFFIX);
    struct stat sb;
    int fd = ana_open_file(path, O_RDONLY, ANA_OPEN_NOFOLLOW, &sb);
    if (fd < 0)
        return -1;
    memset(h, 0, sizeof(*h));
    int rc = (uint64_t)sb.st_size >= sizeof(*h) ? ana_pread_all(fd, h, sizeof(*h), 0) : -1;
    close(fd);
    return rc < 0 || memcmp(h->magic, ANA_LIVE_MAGIC, 8) != 0 ? -1 : 0;
}

/* 1 (msg says why) when the process that writes trace_path's live file may still run: its
 * pid answers here, or the file comes from another host or pid namespace, where its pid
 * cannot be asked. */
static int may_run(const char *trace_path, uint64_t pid, char *msg, size_t cap)
{
    ana_live_header h;
    if (ana_live_header_of(trace_path, &h) == 0 && ana_live_where(&h) == ANA_LIVE_ELSEWHERE) {
        snprintf(msg, cap, "%s: its live file was written on another host, boot or pid "
                           "namespace (pid %llu there), so whether that process still runs "
                           "cannot be told from here; recover it where it ran, or with --force "
                           "once it has ended", trace_path, (unsigned long long)pid);
        return 1;
    }
    if (pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
        snprintf(msg, cap, "%s: the process that writes it (pid %llu) is still running; recover "
                           "it once that process has ended (or --force if that pid is another "
                           "process now)", trace_path, (unsigned long long)pid);
        return 1;
    }
    return 0;
}

int ana_live_recover(const char *trace_path, const char *detail, int force,
                     ana_live_recovery *info, char *msg, size_t cap)
{
    memset(info, 0, sizeof(*info));
    ana_reader *rd;
    ana_reader_stats st;
    if (scan(trace_path, &rd, &st, msg, cap) < 0)
        return -1;
    char live[4096];
    snprintf(live, sizeof(live), "%s%s", trace_path, ANA_LIVE_SUFFIX);
    ana_live_result res;
    int rc = ana_live_load(trace_path, st.trace_id, st.chunks, ana_reader_known(rd), &res, msg, cap);
    if (rc == 1 && (st.ended == ANA_ENDED_EXIT || st.ended == ANA_ENDED_RECOVERED)) {
        unlink(live); /* the trace ended after all: the live file is a leftover */
        rc = 0;
    } else if (rc == 1 && !force && may_run(trace_path, res.pid, msg, cap)) {
        info->pid = res.pid;
        rc = -2;
    } else if (rc == 1) {
        info->records = res.records;
        info->threads = res.threads;
        info->pid = res.pid;
        info->wrote_end = !res.has_end;
        rc = append(trace_path, rd, &st, &res, detail, msg, cap);
        if (rc == 0) {
            unlink(live);
            rc = 1;
        }
    }
    ana_live_result_free(&res);
    ana_reader_close(rd);
    return rc;
}

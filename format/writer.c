/* writer.c — trace file header and chunk framing (docs/trace-format.md, "File layout").
 * Called by the preload's writer thread and live_recover.c; calls pack.c and codec.c. */
#define _GNU_SOURCE
#include "writer.h"
#include "pack.h"
#include "records.h"
#include "varint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

struct ana_tw {
    int fd;
    ZSTD_CCtx *cctx;
    uint8_t *cbuf;
    size_t ccap;
    uint64_t bytes, chunks;
    unsigned shift; /* (1.5) the header's time shift */
    int pack;       /* (2.0) chunks are packed where they can be */
    ana_packer *pk; /* made at the first packed chunk */
    uint8_t *pbuf;
    size_t pcap;
    uint64_t packed;
};

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Writes all of buf, retrying short writes and EINTR. */
static int write_all(int fd, const struct iovec *iov_in, int iovcnt)
{
    struct iovec iov[4];
    memcpy(iov, iov_in, (size_t)iovcnt * sizeof(*iov));
    struct iovec *v = iov;
    while (iovcnt > 0) {
        ssize_t w = writev(fd, v, iovcnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        while (iovcnt > 0 && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            v->iov_base = (uint8_t *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static ana_tw *tw_new(int fd, int level)
{
    ana_tw *tw = calloc(1, sizeof(*tw));
    if (!tw)
        return NULL;
    tw->fd = fd;
    tw->cctx = ZSTD_createCCtx();
    if (!tw->cctx) {
        free(tw);
        errno = ENOMEM;
        return NULL;
    }
    ZSTD_CCtx_setParameter(tw->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(tw->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(tw->cctx, ZSTD_c_contentSizeFlag, 1);
    tw->pack = 1;
    return tw;
}

static void tw_free(ana_tw *tw)
{
    int e = errno;
    ZSTD_freeCCtx(tw->cctx);
    free(tw->cbuf);
    ana_packer_free(tw->pk);
    free(tw->pbuf);
    free(tw);
    errno = e;
}

ana_tw *ana_tw_open_fd_id(int fd, int level, uint64_t trace_id)
{
    ana_tw *tw = tw_new(fd, level);
    if (!tw)
        return NULL;
    uint8_t h[ANA_HEADER_SIZE] = { 0 };
    memcpy(h, "ANATRACE", 8);
    put16(h + 8, ANA_FORMAT_MAJOR);
    put16(h + 10, ANA_FORMAT_MINOR);
    put32(h + 12, ANA_HEADER_SIZE);
    memcpy(h + 24, &trace_id, 8);
    struct iovec iov = { h, sizeof(h) };
    if (write_all(fd, &iov, 1) < 0) {
        tw_free(tw);
        return NULL;
    }
    tw->bytes = sizeof(h);
    return tw;
}

ana_tw *ana_tw_open_fd(int fd, int level) { return ana_tw_open_fd_id(fd, level, 0); }

static ana_tw *open_fd_or_close(int fd, int level, uint64_t trace_id)
{
    if (fd < 0)
        return NULL;
    ana_tw *tw = ana_tw_open_fd_id(fd, level, trace_id);
    if (!tw) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return tw;
}

ana_tw *ana_tw_open(const char *path, int level)
{
    return open_fd_or_close(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), level, 0);
}

int ana_file_create(const char *path, char *why, size_t cap)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        int e = errno;
        struct stat sb;
        if (e != EEXIST || lstat(path, &sb) < 0) {
            if (e == EEXIST)
                continue; /* removed meanwhile: try again */
            snprintf(why, cap, "%s", strerror(e));
            errno = e;
            return -1;
        }
        if (S_ISLNK(sb.st_mode)) {
            snprintf(why, cap, "it is a symbolic link, which is never followed; remove it or "
                               "choose another output name");
            errno = ELOOP;
            return -1;
        }
        if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
            snprintf(why, cap, "it exists and is not a regular file of this user; remove it or "
                               "choose another output name");
            errno = EEXIST;
            return -1;
        }
        if (unlink(path) < 0 && errno != ENOENT) {
            snprintf(why, cap, "cannot replace it: %s", strerror(errno));
            return -1;
        }
    }
    snprintf(why, cap, "it keeps reappearing; choose another output name");
    errno = EEXIST;
    return -1;
}

ana_tw *ana_tw_create(const char *path, int level, uint64_t trace_id, char *why, size_t cap)
{
    int fd = ana_file_create(path, why, cap);
    ana_tw *tw = open_fd_or_close(fd, level, trace_id);
    if (fd >= 0 && !tw) {
        /* No header (a file size limit below it, a full disk): no stub is left that a
         * reader would take for a damaged trace. */
        int e = errno;
        snprintf(why, cap, "%s", strerror(e));
        unlink(path);
        errno = e;
    }
    return tw;
}

ana_tw *ana_tw_append_fd(int fd, int level, uint64_t bytes, uint64_t chunks)
{
    if (ftruncate(fd, (off_t)bytes) < 0 || lseek(fd, (off_t)bytes, SEEK_SET) < 0)
        return NULL;
    ana_tw *tw = tw_new(fd, level);
    if (!tw)
        return NULL;
    tw->bytes = bytes;
    tw->chunks = chunks;
    /* from the header: major (offset 8) and flags (offset 16) */
    uint8_t h[16];
    if (bytes >= ANA_HEADER_SIZE && pread(fd, h, sizeof(h), 8) == (ssize_t)sizeof(h)) {
        tw->shift = h[8] <= ANA_TIME_SHIFT_MAX ? h[8] : 0;
        /* a trace begun by a 1.x writer is continued with chunks its readers can read */
        if (h[0] + 256 * h[1] < 2)
            tw->pack = 0;
    }
    return tw;
}

int ana_tw_set_time_shift(ana_tw *tw, unsigned shift)
{
    if (shift > ANA_TIME_SHIFT_MAX || tw->chunks) {
        errno = EINVAL;
        return -1;
    }
    uint8_t flags[8] = { (uint8_t)shift };
    if (pwrite(tw->fd, flags, 8, 16) != 8)
        return -1;
    tw->shift = shift;
    return 0;
}

unsigned ana_tw_time_shift(const ana_tw *tw) { return tw->shift; }

void ana_tw_set_pack(ana_tw *tw, int on) { tw->pack = on; }
uint64_t ana_tw_packed(const ana_tw *tw) { return tw->packed; }

/* Makes *buf hold at least need bytes: 0, or -1 (it is left as it was). */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    uint8_t *nb = realloc(*buf, need);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

/* The chunk's records packed (pack.h) into tw->pbuf: their size, or 0 to write them as
 * they are (packing off or not possible, or no memory for it). */
static size_t pack_chunk(ana_tw *tw, const void *raw, size_t n)
{
    if (!tw->pack)
        return 0;
    if (!tw->pk && !(tw->pk = ana_packer_new()))
        return 0;
    if (grow(&tw->pbuf, &tw->pcap, ana_pack_bound(n)) < 0)
        return 0;
    return ana_pack(tw->pk, raw, n, tw->pbuf, tw->pcap);
}

int ana_tw_chunk(ana_tw *tw, const void *raw, size_t n)
{
    if (n == 0 || n > ANA_CHUNK_MAX) {
        errno = EINVAL;
        return -1;
    }
    size_t pn = pack_chunk(tw, raw, n);
    const void *content = pn ? tw->pbuf : raw;
    size_t cn = pn ? pn : n;
    if (grow(&tw->cbuf, &tw->ccap, ZSTD_compressBound(cn)) < 0) {
        errno = ENOMEM;
        return -1;
    }
    size_t c = ZSTD_compress2(tw->cctx, tw->cbuf, tw->ccap, content, cn);
    if (ZSTD_isError(c) || c > ANA_CHUNK_MAX) {
        errno = EIO;
        return -1;
    }
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    memcpy(h, pn ? "ACHP" : "ACHK", 4);
    put32(h + 4, (uint32_t)c);
    put32(h + 8, (uint32_t)n);
    put32(h + 12, (uint32_t)tw->chunks);
    struct iovec iov[2] = { { h, sizeof(h) }, { tw->cbuf, c } };
    if (write_all(tw->fd, iov, 2) < 0) {
        /* What went out of this chunk would read as a torn tail: take it back, so that a
         * chunk written later (by `anatomist recover`) follows a whole one. */
        int e = errno;
        if (ftruncate(tw->fd, (off_t)tw->bytes) == 0)
            lseek(tw->fd, (off_t)tw->bytes, SEEK_SET);
        errno = e;
        return -1;
    }
    tw->bytes += sizeof(h) + c;
    tw->chunks++;
    tw->packed += pn != 0;
    return 0;
}

int ana_tw_end(ana_tw *tw, uint64_t time_ns, uint64_t reason, const char *detail)
{
    uint8_t buf[ANA_RECORD_FIXED_MAX + 600];
    time_ns >>= tw->shift;
    ana_record seg = { .kind = ANA_K_SEGMENT }, end = { .kind = ANA_K_END, .time_ns = time_ns };
    seg.u.segment = (ana_rec_segment){ 0, time_ns };
    end.u.end = (ana_rec_end){ reason, { detail, (uint32_t)strnlen(detail, 512) } };
    size_t n = ana_record_encode(buf, sizeof(buf), &seg, 0);
    n += ana_record_encode(buf + n, sizeof(buf) - n, &end, time_ns);
    return ana_tw_chunk(tw, buf, n);
}

uint64_t ana_tw_bytes(const ana_tw *tw) { return tw->bytes; }
int ana_tw_fd(const ana_tw *tw) { return tw->fd; }

int ana_tw_set_fd(ana_tw *tw, int fd)
{
    if (fd >= 0 && lseek(fd, (off_t)tw->bytes, SEEK_SET) < 0)
        return -1;
    tw->fd = fd;
    return 0;
}
uint64_t ana_tw_chunks(const ana_tw *tw) { return tw->chunks; }

int ana_tw_close(ana_tw *tw)
{
    if (!tw)
        return 0;
    int rc = close(tw->fd);
    tw_free(tw);
    return rc;
}

/* ---- in-memory chunk payloads ---- */

static int cb_reserve(ana_chunkbuf *cb, size_t n)
{
    if (cb->cap - cb->len >= n)
        return 0;
    size_t cap = cb->cap ? cb->cap : 4096;
    while (cap - cb->len < n)
        cap *= 2;
    uint8_t *nb = realloc(cb->buf, cap);
    if (!nb)
        return -1;
    cb->buf = nb;
    cb->cap = cap;
    return 0;
}

static size_t var_bytes(const ana_record *rec)
{
    /* Generous upper bound of the variable-size content of a record. */
    switch (rec->kind) {
    case ANA_K_PROCESS: {
        size_t n = rec->u.process.host.len + rec->u.process.exe.len;
        for (uint32_t i = 0; i < rec->u.process.argv.n; i++)
            n += rec->u.process.argv.v[i].len + ANA_VARINT_MAX;
        return n;
    }
    case ANA_K_THREAD: return rec->u.thread.name.len;
    case ANA_K_MODULE: return rec->u.module.path.len + rec->u.module.build_id.len;
    case ANA_K_STACK: return (size_t)rec->u.stack.frames.n * ANA_VARINT_MAX;
    case ANA_K_LAUNCH:
        return ((size_t)rec->u.launch.ptrs.n + rec->u.launch.ptr_at.n) * ANA_VARINT_MAX;
    case ANA_K_PTR_TABLE:
        return ((size_t)rec->u.ptr_table.ptrs.n + rec->u.ptr_table.ptr_at.n) * ANA_VARINT_MAX;
    case ANA_K_PYCODE:
        return (size_t)rec->u.pycode.qualname.len + rec->u.pycode.file.len + rec->u.pycode.linetable.len;
    case ANA_K_RANGE: return rec->u.range.name.len;
    case ANA_K_LABEL: return rec->u.label.name.len;
    case ANA_K_KERNEL: return rec->u.kernel.name.len;
    case ANA_K_DEVICE: return rec->u.device.name.len;
    case ANA_K_END: return rec->u.end.detail.len;
    case ANA_K_INFO: return rec->u.info.key.len + rec->u.info.value.len;
    default: return 0;
    }
}

int ana_chunkbuf_add(ana_chunkbuf *cb, const struct ana_record *rec_in)
{
    ana_record ticks;
    const ana_record *rec = rec_in;
    if (cb->shift) {
        ticks = *rec_in;
        ana_record_to_ticks(&ticks, cb->shift);
        rec = &ticks;
    }
    if (!cb->in_segment || cb->seg_tid != rec->tid) {
        ana_record seg = { .kind = ANA_K_SEGMENT, .tid = rec->tid };
        seg.u.segment.tid = rec->tid;
        seg.u.segment.base_ns = rec->time_ns;
        if (cb_reserve(cb, ANA_RECORD_FIXED_MAX) < 0)
            return -1;
        size_t n = ana_record_encode(cb->buf + cb->len, cb->cap - cb->len, &seg, 0);
        if (!n)
            return -1;
        cb->len += n;
        cb->in_segment = 1;
        cb->seg_tid = rec->tid;
        cb->prev_ns = rec->time_ns;
    }
    size_t bound = ana_record_bound(var_bytes(rec));
    if (cb_reserve(cb, bound) < 0)
        return -1;
    size_t n = ana_record_encode(cb->buf + cb->len, cb->cap - cb->len, rec, cb->prev_ns);
    if (!n)
        return -1;
    cb->len += n;
    cb->prev_ns = rec->time_ns;
    return 0;
}

void ana_chunkbuf_reset(ana_chunkbuf *cb)
{
    cb->len = 0;
    cb->in_segment = 0;
}

void ana_chunkbuf_free(ana_chunkbuf *cb)
{
    free(cb->buf);
    memset(cb, 0, sizeof(*cb));
}

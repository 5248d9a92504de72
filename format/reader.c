/* reader.c — streaming reader implementing the "Reader rules" of docs/trace-format.md.
 * Called by the analyzer and live_recover.c; calls chunk.c, ahead.c, codec.c, live_read.c,
 * safe_open.c. */
#define _GNU_SOURCE
#include "reader.h"
#include "ahead.h"
#include "chunk.h"
#include "live.h"
#include "safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

struct ana_reader {
    int fd;
    char path[512];
    uint64_t size, pos;      /* file size, offset of the next chunk header */
    uint64_t chunk_off;      /* offset of the current chunk */
    ana_chunk c;             /* the chunk read here (c.raw: its records; live: the payload) */
    const uint8_t *raw;      /* the current records: c.raw, or those of cur */
    size_t rlen;
    ana_dec d;               /* where decoding them stands */
    ana_scratch scratch;
    ana_ahead *ahead;        /* NULL: no worker threads */
    ana_batch *own;          /* without them: the batch a packed chunk is read into */
    ana_batch *cur;          /* the batch of the current chunk (the workers' or own), or NULL */
    size_t bi, boff;         /* cur's next record and its offset in cur->recs; bi past
                              * cur->n: decoding on from cur->stop */
    int live_off, in_live, live_done;
    ana_live_known known;
    ana_reader_stats st;
};

static int fail(ana_error *err, const ana_reader *r, const char *path, uint64_t off,
                uint64_t chunk_off, uint64_t payload_off, uint32_t kind, const char *fmt, ...)
{
    if (!err)
        return -1;
    memset(err, 0, sizeof(*err));
    snprintf(err->path, sizeof(err->path), "%.500s%s", r ? r->path : path,
             r && r->in_live ? ANA_LIVE_SUFFIX : "");
    err->offset = off;
    err->chunk_offset = chunk_off;
    err->payload_offset = payload_off;
    err->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return -1;
}

void ana_error_format(const ana_error *err, char *buf, size_t cap)
{
    char where[160] = "";
    if (err->payload_offset != UINT64_MAX) {
        const char *kn = ana_kind_name(err->kind);
        char kbuf[32];
        if (!kn) {
            snprintf(kbuf, sizeof(kbuf), "%u", err->kind);
            kn = kbuf;
        }
        snprintf(where, sizeof(where), " (chunk at %llu, payload offset %llu%s%s)",
                 (unsigned long long)err->chunk_offset, (unsigned long long)err->payload_offset,
                 err->kind ? ", record " : "", err->kind ? kn : "");
    }
    snprintf(buf, cap, "%s: offset %llu%s: %s", err->path, (unsigned long long)err->offset,
             where, err->msg);
}

const char *ana_ended_name(ana_ended e)
{
    switch (e) {
    case ANA_ENDED_EXIT: return "exit";
    case ANA_ENDED_TRUNCATED: return "truncated";
    case ANA_ENDED_TORN: return "torn";
    case ANA_ENDED_RECOVERED: return "recovered";
    default: return "unknown";
    }
}

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int ana_reader_open(const char *path, ana_reader **out, ana_error *err)
{
    *out = NULL;
    /* A FIFO or device at the name would block or act on open: regular files only. */
    struct stat sb;
    int fd = ana_open_file(path, O_RDONLY, 0, &sb);
    if (fd < 0)
        return fail(err, NULL, path, 0, 0, UINT64_MAX, 0, "cannot open: %s",
                    ana_open_strerror(errno));
    uint8_t h[ANA_HEADER_SIZE];
    if ((uint64_t)sb.st_size < ANA_HEADER_SIZE || ana_pread_all(fd, h, sizeof(h), 0) < 0) {
        close(fd);
        return fail(err, NULL, path, 0, 0, UINT64_MAX, 0,
                    "not an Anatomist trace: shorter than the %d-byte header", ANA_HEADER_SIZE);
    }
    if (memcmp(h, "ANATRACE", 8) != 0) {
        close(fd);
        return fail(err, NULL, path, 0, 0, UINT64_MAX, 0,
                    "not an Anatomist trace (bad magic; expected \"ANATRACE\")");
    }
    uint16_t major = get16(h + 8), minor = get16(h + 10);
    uint32_t hsize = get32(h + 12);
    if (major > ANA_FORMAT_MAJOR) {
        close(fd);
        return fail(err, NULL, path, 8, 0, UINT64_MAX, 0,
                    "trace format %u.%u is newer than this analyzer reads (%d.x); upgrade anatomist",
                    major, minor, ANA_FORMAT_MAJOR);
    }
    if (major == 0 || hsize < ANA_HEADER_SIZE || hsize > sb.st_size) {
        close(fd);
        return fail(err, NULL, path, 8, 0, UINT64_MAX, 0, "corrupt header (version %u, size %u)",
                    major, hsize);
    }
    ana_reader *r = calloc(1, sizeof(*r));
    if (!r || !(r->c.dctx = ZSTD_createDCtx())) {
        free(r);
        close(fd);
        return fail(err, NULL, path, 0, 0, UINT64_MAX, 0, "out of memory");
    }
    r->fd = fd;
    snprintf(r->path, sizeof(r->path), "%s", path);
    r->size = (uint64_t)sb.st_size;
    r->pos = hsize;
    r->st.major = major;
    r->st.minor = minor;
    r->st.trace_id = get64(h + 24);
    r->st.time_shift = (unsigned)(get64(h + 16) & ANA_FLAG_TIME_SHIFT_MASK);
    if (r->st.time_shift > ANA_TIME_SHIFT_MAX) {
        ana_reader_close(r);
        return fail(err, NULL, path, 16, 0, UINT64_MAX, 0, "corrupt header (time shift %u)",
                    (unsigned)(get64(h + 16) & ANA_FLAG_TIME_SHIFT_MASK));
    }
    r->st.file_bytes = r->size;
    *out = r;
    return 0;
}

/* At the end of the chunks of a trace without END: the records its live file holds
 * beyond them become one more payload. 1 = loaded, 0 = none. */
static int load_live(ana_reader *r)
{
    if (r->live_off || r->live_done || r->st.ended == ANA_ENDED_EXIT ||
        r->st.ended == ANA_ENDED_RECOVERED)
        return 0;
    r->live_done = 1;
    ana_live_result res;
    int rc = ana_live_load(r->path, r->st.trace_id, r->st.chunks, &r->known, &res,
                           r->st.live_error, sizeof(r->st.live_error));
    if (rc <= 0)
        return 0;
    r->st.recovered_records = res.records;
    r->st.recovered_threads = res.threads;
    r->st.recovered_bad_bytes = res.bad_bytes;
    r->st.defs_lost = res.defs_lost;
    r->st.ended = ANA_ENDED_RECOVERED;
    if (res.len == 0) {
        ana_live_result_free(&res);
        return 0;
    }
    free(r->c.raw);
    r->raw = r->c.raw = res.payload;
    r->c.rcap = r->rlen = res.len;
    res.payload = NULL;
    ana_live_result_free(&res);
    r->d = (ana_dec){ 0 };
    r->chunk_off = 0;
    r->in_live = 1;
    return 1;
}

/* The end of the chunks: `how` unless an END was read, then the live file's records. */
static int chunks_end(ana_reader *r, ana_ended how, uint64_t torn)
{
    if (r->st.ended != ANA_ENDED_EXIT && r->st.ended != ANA_ENDED_RECOVERED && !r->in_live) {
        r->st.ended = how;
        r->st.torn_bytes = torn;
    }
    return load_live(r);
}

/* Starts n worker threads (ahead.h). 0, or -1 when none could start. */
static int start_workers(ana_reader *r, int n)
{
    if (r->ahead || r->in_live)
        return 0;
    r->ahead = ana_ahead_start(r->fd, r->size, r->pos, r->st.chunks, r->st.time_shift, n);
    return r->ahead ? 0 : -1;
}

int ana_reader_set_threads(ana_reader *r, int n) { return n < 2 ? 0 : start_workers(r, n); }
int ana_reader_set_read_ahead(ana_reader *r, int on) { return on ? start_workers(r, 1) : 0; }

/* Reads the next chunk here, into own's chunk (*c): a packed one is decoded into own,
 * straight from its columns where it can (ahead.h, ana_batch_decode), and becomes cur;
 * the records of another are decoded one at a time from its bytes. */
static enum ana_fetch read_own(ana_reader *r, ana_chunk **c)
{
    if (!r->own) {
        ana_batch *b = calloc(1, sizeof(*b));
        if (!b || !(b->c.dctx = ZSTD_createDCtx())) {
            free(b);
            return ANA_FETCH_NOMEM;
        }
        b->c.keep_packed = 1;
        r->own = b;
    }
    *c = &r->own->c;
    enum ana_fetch fr = ana_chunk_fetch(r->fd, r->size, r->pos, r->st.chunks, *c);
    if (fr != ANA_FETCH_OK || !(*c)->packed)
        return fr;
    r->own->result = ANA_FETCH_OK;
    ana_batch_decode(r->own, r->st.time_shift, 1);
    if (r->own->result != ANA_FETCH_OK)
        return (enum ana_fetch)r->own->result;
    r->cur = r->own;
    return ANA_FETCH_OK;
}

/* Loads the next chunk: the workers' batch of it when they have it whole, else read here.
 * 1 = loaded, 0 = end of file (ended set), -1 = error. */
static int load_chunk(ana_reader *r, ana_error *err)
{
    if (r->in_live)
        return 0;
    if (r->cur && r->cur != r->own)
        ana_ahead_release(r->ahead, r->cur);
    r->cur = r->ahead ? ana_ahead_take(r->ahead, r->pos, r->st.chunks) : NULL;
    ana_chunk *c = r->cur ? &r->cur->c : &r->c;
    enum ana_fetch fr = r->cur ? ANA_FETCH_OK : read_own(r, &c);
    uint64_t left = r->size - r->pos, h = ANA_CHUNK_HEADER_SIZE;
    switch (fr) {
    case ANA_FETCH_OK: break;
    case ANA_FETCH_END: return chunks_end(r, ANA_ENDED_TRUNCATED, 0);
    case ANA_FETCH_TORN: return chunks_end(r, ANA_ENDED_TORN, left);
    case ANA_FETCH_MAGIC:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "bad chunk magic");
    case ANA_FETCH_SIZES:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0,
                    "chunk sizes out of range (compressed %u, raw %u)", c->csize, c->rsize);
    case ANA_FETCH_SEQ:
        return fail(err, r, NULL, r->pos + 12, r->pos, UINT64_MAX, 0,
                    "chunk sequence number %u where %llu was expected", c->seq,
                    (unsigned long long)r->st.chunks);
    case ANA_FETCH_NOMEM:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "out of memory");
    case ANA_FETCH_READ:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "read error: %s",
                    strerror(errno));
    case ANA_FETCH_FCS:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "compressed frame is damaged (content size does not match the chunk header)");
    case ANA_FETCH_ZSTD:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "compressed frame is damaged (%s)",
                    ZSTD_isError(c->got) ? ZSTD_getErrorName(c->got) : "short content");
    case ANA_FETCH_UNPACK:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "packed chunk is damaged (its columns do not make %u bytes of records)",
                    c->rsize);
    }
    r->chunk_off = r->pos;
    r->pos += h + c->csize;
    r->raw = c->raw;
    r->rlen = c->rsize;
    r->d = (ana_dec){ 0 };
    r->bi = r->boff = 0;
    r->st.chunks++;
    r->st.packed_chunks += c->packed;
    r->st.raw_bytes += c->rsize;
    return 1;
}

/* What a record read tells the reader itself, in file order: the definitions it has seen,
 * an END. */
static void noted(ana_reader *r, const ana_record *rec)
{
    uint32_t kind = rec->kind;
    if (ana_live_is_def(kind))
        ana_live_known_add(&r->known, kind, kind == ANA_K_STACK    ? rec->u.stack.id
                                            : kind == ANA_K_KERNEL ? rec->u.kernel.id
                                                                   : rec->u.pycode.id);
    else if (kind == ANA_K_END && !r->in_live)
        r->st.ended = rec->u.end.reason == ANA_END_RECOVERED ? ANA_ENDED_RECOVERED : ANA_ENDED_EXIT;
}

/* The next record of the workers' batch: 1 = rec filled; 0 = none left (then decoding goes
 * on here from where the worker stopped). */
static int from_batch(ana_reader *r, ana_record *rec)
{
    ana_batch *b = r->cur;
    if (r->bi < b->n) {
        r->st.unknown_records += ana_ahead_next(b, r->bi++, &r->boff, rec);
        noted(r, rec);
        return 1;
    }
    if (r->bi++ == b->n) {
        r->st.unknown_records += b->unknown_tail;
        r->d = b->stop;
    }
    return 0;
}

int ana_reader_next(ana_reader *r, ana_record *rec, ana_error *err)
{
    for (;;) {
        if (r->cur && r->bi <= r->cur->n && from_batch(r, rec))
            return 1;
        if (r->d.rpos >= r->rlen) {
            int c = load_chunk(r, err);
            if (c <= 0)
                return c;
            continue;
        }
        uint64_t at;
        uint32_t kind;
        switch (ana_chunk_step(&r->d, r->raw, r->rlen, r->st.time_shift, rec, &r->scratch, 0,
                               &at, &kind)) {
        case ANA_STEP_REC: noted(r, rec); return 1;
        case ANA_STEP_SEGMENT: continue;
        case ANA_STEP_UNKNOWN: r->st.unknown_records++; continue;
        case ANA_STEP_HEADER:
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, 0,
                        "record header runs past the end of its chunk");
        case ANA_STEP_NO_SEGMENT:
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind,
                        "chunk does not begin with a SEGMENT record");
        case ANA_STEP_FULL: /* not when the scratch may grow */
        case ANA_STEP_NOMEM:
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind, "out of memory");
        case ANA_STEP_MALFORMED:
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind,
                        "malformed record payload");
        }
    }
}

int ana_reader_skip_to_last_chunk(ana_reader *r, ana_error *err)
{
    ana_ahead_stop(r->ahead); /* what they read ahead is not the chunk wanted next */
    r->live_off = 1;
    if (r->in_live)
        return 0;
    uint64_t pos = r->pos, seq = r->st.chunks, last = UINT64_MAX, last_seq = 0;
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    while (r->size - pos >= sizeof(h) && ana_pread_all(r->fd, h, sizeof(h), pos) == 0) {
        uint32_t csize = get32(h + 4), rsize = get32(h + 8);
        if (memcmp(h, "ACHK", 4) != 0 && memcmp(h, "ACHP", 4) != 0)
            return fail(err, r, NULL, pos, pos, UINT64_MAX, 0, "bad chunk magic");
        if (csize == 0 || csize > ANA_CHUNK_MAX || rsize == 0 || rsize > ANA_CHUNK_MAX)
            return fail(err, r, NULL, pos, pos, UINT64_MAX, 0,
                        "chunk sizes out of range (compressed %u, raw %u)", csize, rsize);
        if (get32(h + 12) != seq)
            return fail(err, r, NULL, pos + 12, pos, UINT64_MAX, 0,
                        "chunk sequence number %u where %llu was expected", get32(h + 12),
                        (unsigned long long)seq);
        if (r->size - pos - sizeof(h) < csize)
            break; /* torn: load_chunk says so when it gets there */
        last = pos;
        last_seq = seq++;
        pos += sizeof(h) + csize;
    }
    if (last != UINT64_MAX) {
        r->pos = last;
        r->st.chunks = last_seq;
        r->d.rpos = r->rlen;
        r->d.in_segment = 0;
        r->bi = SIZE_MAX; /* none of cur's records either */
    }
    return 0;
}

void ana_reader_get_stats(const ana_reader *r, ana_reader_stats *st) { *st = r->st; }
void ana_reader_set_live(ana_reader *r, int on) { r->live_off = !on; }
const struct ana_live_known *ana_reader_known(const ana_reader *r) { return &r->known; }
uint64_t ana_reader_good_end(const ana_reader *r) { return r->pos; }

void ana_reader_close(ana_reader *r)
{
    if (!r)
        return;
    ana_ahead_free(r->ahead);
    if (r->own)
        ana_batch_free(r->own);
    free(r->own);
    close(r->fd);
    ana_chunk_free(&r->c);
    free(r->scratch.buf);
    ana_live_known_free(&r->known);
    free(r);
}

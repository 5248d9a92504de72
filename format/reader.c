/* reader.c — streaming reader implementing the "Reader rules" of docs/trace-format.md.
 * Called by the analyzer and live_recover.c; calls decode_fast.c, pack.c, codec.c,
 * live_read.c, safe_open.c. */
#define _GNU_SOURCE
#include "reader.h"
#include "decode_fast.h"
#include "live.h"
#include "pack.h"
#include "safe_open.h"
#include "varint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* One chunk read and decompressed: its buffers (kept between chunks) and what it held. */
typedef struct chunk {
    uint8_t *cbuf, *raw, *pbuf; /* compressed frame, records, a packed chunk's columns */
    size_t ccap, rcap, pcap;
    ZSTD_DCtx *dctx;
    uint32_t csize, rsize, seq;
    int packed;
    size_t got;          /* what ZSTD_decompressDCtx returned */
    unsigned long long fcs;
} chunk;

/* What fetch found at a chunk header's offset (load_chunk words each one). */
enum fetch_result {
    FETCH_OK, FETCH_END, FETCH_TORN, FETCH_MAGIC, FETCH_SIZES, FETCH_SEQ, FETCH_NOMEM,
    FETCH_READ, FETCH_FCS, FETCH_ZSTD, FETCH_UNPACK
};

/* The read-ahead thread (ana_reader_set_read_ahead): while the caller decodes a chunk's
 * records it reads and decompresses the next chunk into chunks of its own; load_chunk
 * takes that chunk if it is the one it wants and fetch found it whole, and otherwise reads
 * it itself, so that every end and every error is found and worded by load_chunk alone,
 * in the order of the file. */
typedef struct ahead {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int asked, done, stop; /* asked: pos/seq are wanted; done: c and result are ready */
    uint64_t pos, seq;
    enum fetch_result result;
    chunk c;
} ahead;

struct ana_reader {
    int fd;
    char path[512];
    uint64_t size, pos;      /* file size, offset of the next chunk header */
    uint64_t chunk_off;      /* offset of the current chunk */
    chunk c;                 /* the current chunk (c.raw: the records; live: the payload) */
    size_t rlen, rpos;
    ana_scratch scratch;
    ahead *ahead;            /* NULL: no read-ahead thread */
    uint64_t seg_tid, prev_ns;
    int in_segment;
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

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    uint8_t *nb = realloc(*buf, need);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = need;
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
    r->c.raw = res.payload;
    r->c.rcap = r->rlen = res.len;
    res.payload = NULL;
    ana_live_result_free(&res);
    r->rpos = 0;
    r->chunk_off = 0;
    r->in_segment = 0;
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

/* Reads the chunk whose header is at pos, expected to be number seq, into c: FETCH_OK, or what
 * is wrong with it. Touches nothing but c (the read-ahead thread runs it too). */
static enum fetch_result fetch(int fd, uint64_t size, uint64_t pos, uint64_t seq, chunk *c)
{
    uint64_t left = size - pos;
    if (left == 0)
        return FETCH_END;
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    if (left < sizeof(h) || ana_pread_all(fd, h, sizeof(h), pos) < 0)
        return FETCH_TORN;
    c->csize = get32(h + 4), c->rsize = get32(h + 8), c->seq = get32(h + 12);
    c->packed = memcmp(h, "ACHP", 4) == 0;
    if (memcmp(h, "ACHK", 4) != 0 && !c->packed)
        return FETCH_MAGIC;
    if (c->csize == 0 || c->csize > ANA_CHUNK_MAX || c->rsize == 0 || c->rsize > ANA_CHUNK_MAX)
        return FETCH_SIZES;
    if (c->seq != seq)
        return FETCH_SEQ;
    if (left - sizeof(h) < c->csize)
        return FETCH_TORN;
    if (grow(&c->cbuf, &c->ccap, c->csize) < 0 || grow(&c->raw, &c->rcap, c->rsize) < 0)
        return FETCH_NOMEM;
    if (ana_pread_all(fd, c->cbuf, c->csize, pos + sizeof(h)) < 0)
        return FETCH_READ;
    c->fcs = ZSTD_getFrameContentSize(c->cbuf, c->csize);
    if (c->packed ? c->fcs > ana_pack_bound(c->rsize) : c->fcs != c->rsize)
        return FETCH_FCS;
    if (c->packed && grow(&c->pbuf, &c->pcap, (size_t)c->fcs) < 0)
        return FETCH_NOMEM;
    c->got = ZSTD_decompressDCtx(c->dctx, c->packed ? c->pbuf : c->raw, (size_t)c->fcs,
                                 c->cbuf, c->csize);
    if (ZSTD_isError(c->got) || c->got != c->fcs)
        return FETCH_ZSTD;
    if (c->packed && ana_unpack(c->pbuf, c->got, c->raw, c->rsize) != c->rsize)
        return FETCH_UNPACK;
    return FETCH_OK;
}

static void *ahead_main(void *arg)
{
    ana_reader *r = arg;
    ahead *a = r->ahead;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && (!a->asked || a->done))
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop)
            break;
        uint64_t pos = a->pos, seq = a->seq;
        pthread_mutex_unlock(&a->mu);
        enum fetch_result fr = fetch(r->fd, r->size, pos, seq, &a->c);
        pthread_mutex_lock(&a->mu);
        a->result = fr;
        a->done = 1;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Asks the read-ahead thread for the chunk at pos (number seq). */
static void ahead_ask(ahead *a, uint64_t pos, uint64_t seq)
{
    pthread_mutex_lock(&a->mu);
    a->pos = pos;
    a->seq = seq;
    a->asked = 1;
    a->done = 0;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* The chunk at pos when the read-ahead thread has it whole: swapped into r->c, 1.
 * Otherwise (another position asked, or the chunk is not whole) 0, and nothing is asked
 * any more. Waits for a chunk being read. */
static int ahead_take(ana_reader *r)
{
    ahead *a = r->ahead;
    pthread_mutex_lock(&a->mu);
    if (!a->asked) {
        pthread_mutex_unlock(&a->mu);
        return 0;
    }
    while (!a->done)
        pthread_cond_wait(&a->cv, &a->mu);
    int ok = a->pos == r->pos && a->seq == r->st.chunks && a->result == FETCH_OK;
    a->asked = 0;
    if (ok) {
        chunk t = r->c;
        r->c = a->c;
        a->c = t;
    }
    pthread_mutex_unlock(&a->mu);
    return ok;
}

int ana_reader_set_read_ahead(ana_reader *r, int on)
{
    if (!on || r->ahead || r->in_live)
        return 0;
    ahead *a = calloc(1, sizeof(*a));
    if (!a || !(a->c.dctx = ZSTD_createDCtx())) {
        free(a);
        return -1;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    r->ahead = a;
    if (pthread_create(&a->thread, NULL, ahead_main, r) != 0) {
        r->ahead = NULL;
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        ZSTD_freeDCtx(a->c.dctx);
        free(a);
        return -1;
    }
    return 0;
}

static void ahead_stop(ana_reader *r)
{
    ahead *a = r->ahead;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    ZSTD_freeDCtx(a->c.dctx);
    free(a->c.cbuf);
    free(a->c.raw);
    free(a->c.pbuf);
    free(a);
    r->ahead = NULL;
}

/* Loads the next chunk. 1 = loaded, 0 = end of file (ended set), -1 = error. */
static int load_chunk(ana_reader *r, ana_error *err)
{
    if (r->in_live)
        return 0;
    chunk *c = &r->c;
    enum fetch_result fr = r->ahead && ahead_take(r)
                               ? FETCH_OK
                               : fetch(r->fd, r->size, r->pos, r->st.chunks, c);
    uint64_t left = r->size - r->pos, h = ANA_CHUNK_HEADER_SIZE;
    switch (fr) {
    case FETCH_OK: break;
    case FETCH_END: return chunks_end(r, ANA_ENDED_TRUNCATED, 0);
    case FETCH_TORN: return chunks_end(r, ANA_ENDED_TORN, left);
    case FETCH_MAGIC:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "bad chunk magic");
    case FETCH_SIZES:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0,
                    "chunk sizes out of range (compressed %u, raw %u)", c->csize, c->rsize);
    case FETCH_SEQ:
        return fail(err, r, NULL, r->pos + 12, r->pos, UINT64_MAX, 0,
                    "chunk sequence number %u where %llu was expected", c->seq,
                    (unsigned long long)r->st.chunks);
    case FETCH_NOMEM:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "out of memory");
    case FETCH_READ:
        return fail(err, r, NULL, r->pos, r->pos, UINT64_MAX, 0, "read error: %s",
                    strerror(errno));
    case FETCH_FCS:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "compressed frame is damaged (content size does not match the chunk header)");
    case FETCH_ZSTD:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "compressed frame is damaged (%s)",
                    ZSTD_isError(c->got) ? ZSTD_getErrorName(c->got) : "short content");
    case FETCH_UNPACK:
        return fail(err, r, NULL, r->pos + h, r->pos, UINT64_MAX, 0,
                    "packed chunk is damaged (its columns do not make %u bytes of records)",
                    c->rsize);
    }
    r->chunk_off = r->pos;
    r->pos += h + c->csize;
    r->rlen = c->rsize;
    r->rpos = 0;
    r->in_segment = 0;
    r->st.chunks++;
    r->st.packed_chunks += c->packed;
    r->st.raw_bytes += c->rsize;
    if (r->ahead)
        ahead_ask(r->ahead, r->pos, r->st.chunks);
    return 1;
}

int ana_reader_next(ana_reader *r, ana_record *rec, ana_error *err)
{
    for (;;) {
        if (r->rpos >= r->rlen) {
            int c = load_chunk(r, err);
            if (c <= 0)
                return c;
            continue;
        }
        uint64_t at = r->rpos;
        uint32_t kind;
        size_t plen;
        size_t hn = ana_record_header(r->c.raw + at, r->rlen - at, &kind, &plen);
        if (!hn)
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, 0,
                        "record header runs past the end of its chunk");
        const uint8_t *payload = r->c.raw + at + hn;
        r->rpos = at + hn + plen;
        if (!r->in_segment && kind != ANA_K_SEGMENT)
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind,
                        "chunk does not begin with a SEGMENT record");
        if (kind == 0 || kind >= ANA_K_COUNT) {
            r->st.unknown_records++;
            continue;
        }
        /* Worst case of the decoded size: each byte of an argv of empty strings becomes a
         * 16-byte ana_str and a NUL (one-byte frames only become 8-byte addresses), plus
         * the alignment of each array. */
        size_t need = plen * 17 + 256;
        if (grow(&r->scratch.buf, &r->scratch.cap, need) < 0)
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind, "out of memory");
        r->scratch.used = 0;
        int d = ana_record_decode_fast(kind, payload, plen, r->prev_ns, rec, &r->scratch);
        if (d != ANA_DEC_OK)
            return fail(err, r, NULL, r->chunk_off, r->chunk_off, at, kind,
                        d == ANA_DEC_NOMEM ? "out of memory" : "malformed record payload");
        if (kind == ANA_K_SEGMENT) {
            r->in_segment = 1;
            r->seg_tid = rec->u.segment.tid;
            r->prev_ns = rec->u.segment.base_ns;
            continue;
        }
        rec->tid = r->seg_tid;
        r->prev_ns = rec->time_ns; /* in ticks (1.5) */
        ana_record_from_ticks(rec, r->st.time_shift);
        if (ana_live_is_def(kind))
            ana_live_known_add(&r->known, kind, kind == ANA_K_STACK    ? rec->u.stack.id
                                                : kind == ANA_K_KERNEL ? rec->u.kernel.id
                                                                       : rec->u.pycode.id);
        else if (kind == ANA_K_END && !r->in_live)
            r->st.ended = rec->u.end.reason == ANA_END_RECOVERED ? ANA_ENDED_RECOVERED : ANA_ENDED_EXIT;
        return 1;
    }
}

int ana_reader_skip_to_last_chunk(ana_reader *r, ana_error *err)
{
    ahead_stop(r); /* what it read ahead is not the chunk wanted next */
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
        r->rpos = r->rlen;
        r->in_segment = 0;
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
    ahead_stop(r);
    close(r->fd);
    ZSTD_freeDCtx(r->c.dctx);
    free(r->c.cbuf);
    free(r->c.raw);
    free(r->c.pbuf);
    free(r->scratch.buf);
    ana_live_known_free(&r->known);
    free(r);
}

/* live_read.c — reading what a live file holds beyond its trace (live.h).
 *
 * The file may come from a process killed at any instruction, or from anyone: every field
 * is checked against the file's size before it is used, and a slot that does not add up is
 * skipped and counted, never trusted.
 *
 * Called by reader.c (a trace's live file) and live_recover.c; calls codec.c and safe_open.c.
 */
#define _GNU_SOURCE
#include "live.h"
#include "reader.h"
#include "records.h"
#include "safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE_MAX (ANA_CHUNK_MAX - 64u)
#define RING_MAX (64ull << 20)
#define STAGE_MAX (256ull << 20)

static uint64_t known_bits(uint32_t kind)
{
    return kind == ANA_K_STACK ? ANA_LIVE_KNOWN_STACKS : kind == ANA_K_KERNEL ? ANA_LIVE_KNOWN_KERNELS
                                                                              : ANA_LIVE_KNOWN_PYCODES;
}

void ana_live_known_add(ana_live_known *k, uint32_t kind, uint64_t id)
{
    uint8_t **map = kind == ANA_K_STACK ? &k->stacks : kind == ANA_K_KERNEL ? &k->kernels
                    : kind == ANA_K_PYCODE ? &k->pycodes : NULL;
    uint64_t bits = known_bits(kind);
    if (!map || id >= bits)
        return;
    if (!*map && !(*map = calloc(bits / 8, 1)))
        return;
    (*map)[id >> 3] |= (uint8_t)(1u << (id & 7));
}

static int known_has(const ana_live_known *k, uint32_t kind, uint64_t id)
{
    const uint8_t *map = !k ? NULL : kind == ANA_K_STACK ? k->stacks : kind == ANA_K_KERNEL ? k->kernels : k->pycodes;
    uint64_t bits = known_bits(kind);
    return map && id < bits && (map[id >> 3] >> (id & 7)) & 1;
}

void ana_live_known_free(ana_live_known *k)
{
    free(k->stacks);
    free(k->kernels);
    free(k->pycodes);
    k->stacks = k->kernels = k->pycodes = NULL;
}

void ana_live_result_free(ana_live_result *res)
{
    free(res->payload);
    free(res->pieces);
    memset(res, 0, sizeof(*res));
}

/* ---- the output: pieces, each opened by a SEGMENT ---- */

typedef struct out {
    ana_live_result *res;
    size_t cap, piece_start, pieces_cap;
    uint64_t tid, prev_ns; /* the open segment */
    int open;
    uint64_t last_ns;      /* latest record time seen, for the records made here */
} out;

static int reserve(out *o, size_t n)
{
    ana_live_result *r = o->res;
    if (o->cap - r->len >= n)
        return 0;
    size_t cap = o->cap ? o->cap : 1 << 16;
    while (cap - r->len < n)
        cap *= 2;
    uint8_t *nb = realloc(r->payload, cap);
    if (!nb)
        return -1;
    r->payload = nb;
    o->cap = cap;
    return 0;
}

static int close_piece(out *o)
{
    ana_live_result *r = o->res;
    if (r->len == o->piece_start)
        return 0;
    if (r->npieces == o->pieces_cap) {
        size_t nc = o->pieces_cap ? o->pieces_cap * 2 : 16;
        size_t *np = realloc(r->pieces, nc * sizeof(*np));
        if (!np)
            return -1;
        r->pieces = np;
        o->pieces_cap = nc;
    }
    r->pieces[r->npieces++] = r->len;
    o->piece_start = r->len;
    o->open = 0;
    return 0;
}

/* Makes room for a record of n bytes of thread tid whose predecessor's time is prev_ns:
 * a new SEGMENT (and piece, when the current one would pass PIECE_MAX) if needed. */
static int segment_for(out *o, uint64_t tid, uint64_t prev_ns, size_t n)
{
    if (o->open && o->tid == tid && o->res->len - o->piece_start + n <= PIECE_MAX)
        return 0;
    if (o->res->len - o->piece_start + n + 32 > PIECE_MAX && close_piece(o) < 0)
        return -1;
    if (reserve(o, 32) < 0)
        return -1;
    ana_record seg = { .kind = ANA_K_SEGMENT };
    seg.u.segment = (ana_rec_segment){ tid, prev_ns };
    o->res->len += ana_record_encode(o->res->payload + o->res->len, 32, &seg, 0);
    o->open = 1;
    o->tid = tid;
    o->prev_ns = prev_ns;
    return 0;
}

/* Appends encoded record bytes of thread tid; prev_ns is the time they are relative to. */
static int put_raw(out *o, uint64_t tid, uint64_t prev_ns, const uint8_t *p, size_t n)
{
    if (segment_for(o, tid, prev_ns, n) < 0 || reserve(o, n) < 0)
        return -1;
    memcpy(o->res->payload + o->res->len, p, n);
    o->res->len += n;
    o->res->records++;
    return 0;
}

/* Appends a record made here, in the process segment, at the latest time seen. */
static int put_rec(out *o, ana_record *rec, size_t var)
{
    rec->time_ns = o->last_ns;
    size_t bound = ana_record_bound(var);
    if (segment_for(o, 0, o->last_ns, bound) < 0 || reserve(o, bound) < 0)
        return -1;
    size_t n = ana_record_encode(o->res->payload + o->res->len, bound, rec, o->prev_ns);
    if (!n)
        return -1;
    o->res->len += n;
    o->prev_ns = rec->time_ns;
    o->res->records++;
    return 0;
}

/* ---- the file ---- */

/* Copies [from, to) of a ring of `size` bytes at file offset `off` into buf. */
static int read_ring(int fd, uint64_t off, uint64_t size, uint64_t from, uint64_t to, uint8_t *buf)
{
    uint64_t n = to - from, pos = from & (size - 1);
    uint64_t first = n < size - pos ? n : size - pos;
    if (ana_pread_all(fd, buf, first, off + pos) < 0)
        return -1;
    return n > first ? ana_pread_all(fd, buf + first, n - first, off) : 0;
}

static int pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* The id of a STACK, KERNEL or PYCODE record's payload; 0 when it does not decode. */
static int def_id(uint32_t kind, const uint8_t *p, size_t plen, ana_scratch *sc, uint64_t *id)
{
    ana_record rec;
    if (plen * 9 + 64 > sc->cap) {
        free(sc->buf);
        sc->buf = malloc(sc->cap = plen * 9 + 64);
    }
    sc->used = 0;
    if (!sc->buf || ana_record_decode(kind, p, plen, 0, &rec, sc) != ANA_DEC_OK)
        return 0;
    *id = kind == ANA_K_STACK ? rec.u.stack.id : kind == ANA_K_KERNEL ? rec.u.kernel.id : rec.u.pycode.id;
    return 1;
}

/* The staging area (version 2): the payload of chunk stage_seq as far as the writer had
 * built it, when the trace does not hold that chunk. Its STACK and KERNEL ids go to seen. */
static void load_stage(int fd, const ana_live_header *h, uint64_t fsize, uint64_t chunks,
                       ana_live_known *seen, out *o)
{
    uint64_t len = h->stage_len, tid = 0, t = 0, id = 0;
    if (h->version < 2 || h->stage_off == 0 || h->stage_seq < chunks || len == 0)
        return;
    if (h->stage_off < ANA_LIVE_HEADER_SIZE || h->stage_off > fsize || h->stage_size > STAGE_MAX ||
        fsize - h->stage_off < h->stage_size || len > h->stage_size) {
        o->res->bad_bytes += len < STAGE_MAX ? len : 0;
        return;
    }
    uint8_t *buf = malloc(len);
    ana_scratch sc = { 0 };
    int seg = 0;
    if (!buf || ana_pread_all(fd, buf, len, h->stage_off) < 0)
        goto out;
    for (size_t at = 0; at < len;) {
        uint32_t kind;
        size_t plen, hn = ana_record_header(buf + at, len - at, &kind, &plen);
        int64_t dt = 0;
        ana_record sr;
        sc.used = 0;
        int ok = hn && hn + plen <= PIECE_MAX - 64;
        if (ok && kind == ANA_K_SEGMENT)
            ok = ana_record_decode(kind, buf + at + hn, plen, 0, &sr, &sc) == ANA_DEC_OK;
        else
            ok = ok && seg && ana_record_peek_dt(buf + at + hn, plen, &dt) &&
                 (!ana_live_is_def(kind) || def_id(kind, buf + at + hn, plen, &sc, &id));
        if (!ok) {
            o->res->bad_bytes += len - at;
            break;
        }
        if (kind == ANA_K_END) { /* not written: the trace ends as the header says */
            t += (uint64_t)dt;
            o->open = 0;
        } else if (kind == ANA_K_SEGMENT) {
            tid = sr.u.segment.tid;
            t = sr.u.segment.base_ns;
            seg = 1;
            o->open = 0; /* each staged segment stays one */
        } else {
            if (ana_live_is_def(kind))
                ana_live_known_add(seen, kind, id);
            if (put_raw(o, tid, t, buf + at, hn + plen) < 0)
                break;
            t += (uint64_t)dt;
            o->prev_ns = t;
            if (t > o->last_ns && t < UINT64_MAX / 2)
                o->last_ns = t;
        }
        at += hn + plen;
    }
out:
    free(sc.buf);
    free(buf);
}

/* The definitions ring: STACK, KERNEL and PYCODE records (dt 0) that neither the trace nor the
 * stage defines, at the time the trace began. */
static void load_defs(int fd, const ana_live_header *h, uint64_t fsize, const ana_live_known *known,
                      const ana_live_known *seen, out *o)
{
    uint64_t head = h->defs_head, tail = h->defs_tail;
    if (!pow2(h->defs_size) || h->defs_size > RING_MAX || h->defs_off < ANA_LIVE_HEADER_SIZE ||
        h->defs_off > fsize || fsize - h->defs_off < h->defs_size || head < tail ||
        head - tail > h->defs_size) {
        o->res->bad_bytes += head > tail && head - tail < RING_MAX ? head - tail : 0;
        return;
    }
    uint8_t *buf = malloc(head - tail + 1);
    ana_scratch sc = { 0 };
    if (!buf || read_ring(fd, h->defs_off, h->defs_size, tail, head, buf) < 0)
        goto out;
    for (size_t at = 0, n = (size_t)(head - tail); at < n;) {
        uint32_t kind;
        size_t plen, hn = ana_record_header(buf + at, n - at, &kind, &plen);
        uint64_t id;
        if (!hn || !ana_live_is_def(kind) ||
            !def_id(kind, buf + at + hn, plen, &sc, &id)) {
            o->res->bad_bytes += n - at;
            break;
        }
        if (!known_has(known, kind, id) && !known_has(seen, kind, id) &&
            put_raw(o, 0, h->created_ns, buf + at, hn + plen) < 0)
            break;
        at += hn + plen;
    }
out:
    free(sc.buf);
    free(buf);
}

/* One slot's records past what the trace holds, checked record by record. */
static void load_slot(int fd, uint64_t off, const ana_live_header *h, uint64_t chunks, out *o)
{
    ana_live_slot s;
    if (ana_pread_all(fd, &s, sizeof(s), off) < 0 || memcmp(s.magic, ANA_LIVE_SLOT_MAGIC, 8) != 0 ||
        !pow2(s.ring_size) || s.ring_size > RING_MAX ||
        s.ring_size + ANA_LIVE_SLOT_HEADER != h->slot_stride) {
        o->res->bad_bytes += h->slot_stride;
        return;
    }
    /* Pending values hold once the trace has chunk pend_seq, or (2) the stage holds the range. */
    int staged = h->version >= 2 && h->stage_off && s.pend_seq == h->stage_seq &&
                 h->stage_len >= s.pend_stage;
    int pend = s.pend_seq != ANA_LIVE_NONE && (s.pend_seq < chunks || staged);
    uint64_t tail = pend ? s.pend_tail : s.tail, base = pend ? s.pend_base : s.base_ns;
    uint64_t drop = pend ? s.pend_drop : s.drop_rep, dropb = pend ? s.pend_dropb : s.dropb_rep;
    uint64_t head = s.head, tid = s.tid;
    if (head < tail || head - tail > s.ring_size) {
        o->res->bad_bytes += s.ring_size;
        return;
    }
    o->open = 0; /* a segment of its own, even for a thread id seen before */
    if (head > tail) {
        uint8_t *buf = malloc(head - tail);
        if (!buf || read_ring(fd, off + ANA_LIVE_SLOT_HEADER, s.ring_size, tail, head, buf) < 0) {
            free(buf);
            return;
        }
        uint64_t t = base;
        for (size_t at = 0, n = (size_t)(head - tail); at < n;) {
            uint32_t kind;
            size_t plen, hn = ana_record_header(buf + at, n - at, &kind, &plen);
            int64_t dt;
            if (!hn || kind == ANA_K_SEGMENT || hn + plen > PIECE_MAX - 64 ||
                !ana_record_peek_dt(buf + at + hn, plen, &dt)) {
                o->res->bad_bytes += n - at;
                break;
            }
            if (put_raw(o, tid, t, buf + at, hn + plen) < 0)
                break;
            t += (uint64_t)dt;
            o->prev_ns = t;
            if (t > o->last_ns && t < UINT64_MAX / 2)
                o->last_ns = t;
            at += hn + plen;
        }
        free(buf);
        o->res->threads++;
    }
    if (s.dropped > drop && s.dropped_bytes >= dropb) {
        ana_record r = { .kind = ANA_K_DROPPED };
        r.u.dropped = (ana_rec_dropped){ tid, s.dropped - drop, s.dropped_bytes - dropb };
        o->open = 0; /* in the process segment, at the latest time */
        put_rec(o, &r, 0);
    }
}

static int open_live(const char *trace_path, int *fd, uint64_t *fsize, char *msg, size_t cap)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s%s", trace_path, ANA_LIVE_SUFFIX) >= sizeof(path))
        return 0;
    /* Anyone who can write the directory can plant this name: a FIFO there would block
     * the reader for ever, a link would steer it (safe_open.h). */
    struct stat sb;
    *fd = ana_open_file(path, O_RDONLY, ANA_OPEN_NOFOLLOW, &sb);
    if (*fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        snprintf(msg, cap, "%s: cannot open: %s", path, ana_open_strerror(errno));
        return -1;
    }
    *fsize = (uint64_t)sb.st_size;
    return 1;
}

int ana_live_load(const char *trace_path, uint64_t trace_id, uint64_t chunks,
                  const ana_live_known *known, ana_live_result *res, char *msg, size_t cap)
{
    memset(res, 0, sizeof(*res));
    int fd;
    uint64_t fsize = 0;
    int rc = open_live(trace_path, &fd, &fsize, msg, cap);
    if (rc <= 0)
        return rc;
    ana_live_header h;
    if (fsize < ANA_LIVE_HEADER_SIZE || ana_pread_all(fd, &h, sizeof(h), 0) < 0 ||
        memcmp(h.magic, ANA_LIVE_MAGIC, 8) != 0 || h.header_size != ANA_LIVE_HEADER_SIZE) {
        close(fd);
        snprintf(msg, cap, "%s%s: not a live file of an Anatomist trace", trace_path, ANA_LIVE_SUFFIX);
        return -1;
    }
    if ((h.version != 1 && h.version != ANA_LIVE_VERSION) || trace_id == 0 || h.trace_id != trace_id) {
        close(fd); /* another version, or the live file of another run: not this trace's */
        return 0;
    }
    out o = { .res = res };
    ana_live_known seen = { 0 };
    res->pid = h.pid;
    res->defs_lost = h.defs_lost;
    load_stage(fd, &h, fsize, chunks, &seen, &o);
    load_defs(fd, &h, fsize, known, &seen, &o);
    ana_live_known_free(&seen);
    /* Slots lie past the header, wholly inside the file: at most as many as fit. */
    uint64_t nslots = 0;
    if (h.slot_stride > ANA_LIVE_SLOT_HEADER && h.slots_off >= ANA_LIVE_HEADER_SIZE && h.slots_off <= fsize) {
        nslots = h.nslots;
        if (nslots > (fsize - h.slots_off) / h.slot_stride)
            nslots = (fsize - h.slots_off) / h.slot_stride;
    }
    for (uint64_t i = 0; i < nslots; i++)
        load_slot(fd, h.slots_off + i * h.slot_stride, &h, chunks, &o);
    if (h.end_reason) {
        h.end_detail[sizeof(h.end_detail) - 1] = 0;
        ana_record e = { .kind = ANA_K_END };
        size_t dl = strlen(h.end_detail);
        e.u.end = (ana_rec_end){ h.end_reason, { h.end_detail, (uint32_t)dl } };
        o.open = 0;
        res->has_end = put_rec(&o, &e, dl) == 0;
    }
    close(fd);
    res->last_ns = o.last_ns;
    if (close_piece(&o) < 0) {
        ana_live_result_free(res);
        snprintf(msg, cap, "out of memory reading %s%s", trace_path, ANA_LIVE_SUFFIX);
        return -1;
    }
    return 1;
}

int ana_live_pid_of(const char *trace_path, uint64_t *pid)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s%s", trace_path, ANA_LIVE_SUFFIX);
    int fd = ana_open_file(path, O_RDONLY, ANA_OPEN_NOFOLLOW, NULL);
    if (fd < 0)
        return -1;
    ana_live_header h;
    int rc = ana_pread_all(fd, &h, sizeof(h), 0);
    close(fd);
    if (rc < 0 || memcmp(h.magic, ANA_LIVE_MAGIC, 8) != 0)
        return -1;
    *pid = h.pid;
    return 0;
}

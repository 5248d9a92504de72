/* ahead.c — the reader's worker threads (ahead.h): each claims the next chunk of the file,
 * in order, reads, decompresses and decodes it into its batch while the reader's caller is
 * at an earlier one; the reader takes the batches in the order of the file.
 * Called by reader.c; calls chunk.c, unpack.c, codec.c (and reads its table of fields),
 * safe_open.c. */
#include "ahead.h"
#include "codec_int.h"
#include "pack.h"
#include "safe_open.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD_BLOCK (1u << 20) /* the records' strings and frames go in blocks this big */
#define AHEAD_MAX_THREADS 256

/* A batch is FREE (a worker may claim the next chunk into it), BUSY (a worker is at it),
 * READY (done, not taken yet) or TAKEN (the reader has it). */
enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_TAKEN };

struct ana_ahead {
    int fd;
    uint64_t size;
    unsigned time_shift;
    pthread_mutex_t mu;
    pthread_cond_t work, done; /* work: a batch came free or stop; done: one became READY */
    int stop, scan_over;       /* scan_over: the chunk at scan_pos is not whole and right */
    uint64_t scan_pos, scan_seq; /* the next chunk to claim */
    ana_batch *slots;          /* chunk number s goes into slots[s % nslots] */
    int nslots, nthreads;
    pthread_t *threads;
};

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Whether the chunk header at scan_pos is one a worker should claim: whole, as the next
 * chunk; *csize its compressed size. Anything else the reader finds and words itself. */
static int scan_header(const ana_ahead *a, uint32_t *csize)
{
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    uint64_t left = a->size - a->scan_pos;
    if (left < sizeof(h) || ana_pread_all(a->fd, h, sizeof(h), a->scan_pos) < 0)
        return 0;
    uint32_t rsize = get32(h + 8);
    *csize = get32(h + 4);
    return (memcmp(h, "ACHK", 4) == 0 || memcmp(h, "ACHP", 4) == 0) && *csize != 0 &&
           *csize <= ANA_CHUNK_MAX && rsize != 0 && rsize <= ANA_CHUNK_MAX &&
           get32(h + 12) == a->scan_seq && left - sizeof(h) >= *csize;
}

/* Room for strings and frames: the first block; after block *blk filled, the next; when
 * *blk is empty and still too small for a record, itself twice as big. 0, or -1. */
static int more_room(ana_batch *b, size_t *blk)
{
    if (*blk < b->nblocks && b->blocks[*blk].used == 0) {
        ana_scratch *s = &b->blocks[*blk];
        if (s->cap > ANA_CHUNK_MAX * (size_t)32)
            return -1;
        return ana_chunk_grow(&s->buf, &s->cap, s->cap * 2);
    }
    if (*blk < b->nblocks && ++*blk < b->nblocks)
        return 0;
    ana_scratch *nb = realloc(b->blocks, (b->nblocks + 1) * sizeof(*nb));
    if (!nb)
        return -1;
    b->blocks = nb;
    nb[b->nblocks] = (ana_scratch){ 0 };
    if (ana_chunk_grow(&nb[b->nblocks].buf, &nb[b->nblocks].cap, AHEAD_BLOCK) < 0)
        return -1;
    *blk = b->nblocks++;
    return 0;
}

/* Bytes of ana_record.u the decoder writes for each kind (its fields' extent in codec.c's
 * table, which decode_fast.c fills the same), rounded up to 8. */
static uint16_t extent[ANA_K_COUNT];
static pthread_once_t extent_once = PTHREAD_ONCE_INIT;

static void extent_init(void)
{
    for (uint32_t k = 1; k < ANA_K_COUNT; k++)
        for (const struct ana_field *f = ana_fields[k]; f->type != F_END; f++) {
            size_t n = f->type == F_U || f->type == F_S ? sizeof(uint64_t)
                     : f->type == F_STRV                ? sizeof(ana_strv)
                     : f->type == F_FRAMES              ? sizeof(ana_frames)
                                                        : sizeof(ana_str);
            size_t end = (f->off + n + 7) & ~(size_t)7;
            if (end > extent[k])
                extent[k] = (uint16_t)end;
        }
}

/* Room in b for one more record, decoded in place. 0, or -1 (no memory). */
static int room_for_rec(ana_batch *b)
{
    if (b->n == b->ucap) {
        size_t ucap = b->ucap ? b->ucap * 2 : 4096;
        uint32_t *u = realloc(b->unknown_before, ucap * sizeof(*u));
        if (!u)
            return -1;
        b->unknown_before = u;
        b->ucap = ucap;
    }
    if (b->cap - b->len >= sizeof(ana_record))
        return 0;
    return ana_chunk_grow(&b->recs, &b->cap, b->cap ? b->cap * 2 : (1u << 20));
}

/* The bytes of a record of that kind a batch keeps. */
static size_t rec_size(uint32_t kind) { return offsetof(ana_record, u) + extent[kind]; }

uint32_t ana_ahead_next(const ana_batch *b, size_t i, size_t *off, ana_record *rec)
{
    const ana_record *in = (const ana_record *)(b->recs + *off);
    size_t n = rec_size(in->kind);
    memcpy(rec, in, n);
    *off += n;
    return b->unknown_before[i];
}

/* Decodes b's records until the end of the chunk or the first one the reader must see to
 * (an error, or no memory here): b->stop is where it stopped. */
static void decode(ana_batch *b, unsigned time_shift)
{
    ana_dec d = { 0 };
    uint32_t unknown = 0;
    size_t blk = 0;
    int room = b->nblocks || more_room(b, &blk) == 0; /* else all is left to the reader */
    while (room && d.rpos < b->c.rsize && room_for_rec(b) == 0) {
        ana_dec before = d;
        uint64_t at;
        uint32_t kind;
        ana_record *rec = (ana_record *)(b->recs + b->len); /* 8-aligned: rec_size is */
        enum ana_step s = ana_chunk_step(&d, b->c.raw, b->c.rsize, time_shift, rec,
                                         &b->blocks[blk], 1, &at, &kind);
        if (s == ANA_STEP_SEGMENT)
            continue;
        if (s == ANA_STEP_UNKNOWN) {
            unknown++;
            continue;
        }
        if (s == ANA_STEP_REC) {
            b->unknown_before[b->n++] = unknown;
            b->len += rec_size(kind);
            unknown = 0;
            continue;
        }
        d = before;
        if (s != ANA_STEP_FULL || more_room(b, &blk) < 0)
            break;
    }
    b->stop = d;
    b->unknown_tail = unknown;
}

/* The block of b a record's frames go in: the current one when it has need bytes free. */
struct room {
    ana_batch *b;
    size_t *blk;
};

static ana_scratch *room_get(void *ctx, size_t need)
{
    struct room *r = ctx;
    while (r->b->blocks[*r->blk].cap - r->b->blocks[*r->blk].used < need)
        if (more_room(r->b, r->blk) < 0)
            return NULL;
    return &r->b->blocks[*r->blk];
}

/* A record the unpacker rebuilt (a kind it does not read straight) decoded as decode()
 * does: 0, or -1 when it is one the reader must see to. */
static int decode_rebuilt(ana_batch *b, ana_dec *d, unsigned time_shift, const uint8_t *raw,
                          size_t len, size_t *blk)
{
    for (;;) {
        ana_dec one = *d;
        one.rpos = 0;
        uint64_t at;
        uint32_t kind;
        ana_record *rec = (ana_record *)(b->recs + b->len);
        enum ana_step s = ana_chunk_step(&one, raw, len, time_shift, rec, &b->blocks[*blk], 1,
                                         &at, &kind);
        if (s == ANA_STEP_FULL && more_room(b, blk) == 0)
            continue;
        if (s != ANA_STEP_REC && s != ANA_STEP_SEGMENT)
            return -1;
        *d = one;
        if (s == ANA_STEP_REC) {
            b->unknown_before[b->n++] = 0;
            b->len += rec_size(kind);
        }
        return 0;
    }
}

/* A packed chunk decoded straight from its columns (pack.h, ana_unpacker), what the reader
 * would read from its unpacked records: 0, or -1 when the unpacker gives up or a record is
 * one the reader must see to (then the chunk is to be unpacked and decoded by decode()). */
static int decode_packed(ana_batch *b, unsigned time_shift)
{
    if (!b->unp && !(b->unp = ana_unpacker_new()))
        return -1;
    if (ana_unpacker_open(b->unp, b->c.pbuf, b->c.got, b->c.rsize) < 0)
        return -1;
    ana_dec d = { 0 };
    size_t blk = 0;
    struct room rm = { b, &blk };
    ana_room room = { room_get, &rm, NULL };
    if (!b->nblocks && more_room(b, &blk) < 0)
        return -1;
    for (;;) {
        if (room_for_rec(b) < 0)
            return -1;
        ana_record *rec = (ana_record *)(b->recs + b->len);
        const uint8_t *raw;
        size_t len;
        switch (ana_unpacker_next(b->unp, rec, &room, &raw, &len)) {
        case ANA_UNP_REC:
            if (!d.in_segment)
                return -1; /* the reader says the chunk does not begin with a SEGMENT */
            rec->tid = d.seg_tid;
            d.prev_ns = rec->time_ns; /* in ticks (1.5) */
            if (time_shift)
                ana_record_from_ticks(rec, time_shift);
            b->unknown_before[b->n++] = 0;
            b->len += rec_size(rec->kind);
            continue;
        case ANA_UNP_RAW:
            if (decode_rebuilt(b, &d, time_shift, raw, len, &blk) < 0)
                return -1;
            room.cur = NULL; /* b->blocks may have moved */
            continue;
        case ANA_UNP_END:
            d.rpos = b->c.rsize;
            b->stop = d;
            return 0;
        default:
            return -1;
        }
    }
}

/* b empty, for its chunk's records. */
static void batch_reset(ana_batch *b)
{
    for (size_t i = 0; i < b->nblocks; i++)
        b->blocks[i].used = 0;
    b->n = b->len = 0;
    b->stop = (ana_dec){ 0 };
    b->unknown_tail = 0;
}

void ana_batch_decode(ana_batch *b, unsigned time_shift, int direct)
{
    pthread_once(&extent_once, extent_init);
    int columns = b->c.packed && !b->c.raw_filled; /* the records are still in columns */
    batch_reset(b);
    b->direct = 0;
    if (columns && direct) {
        if (decode_packed(b, time_shift) == 0) {
            b->direct = 1;
            return;
        }
        batch_reset(b);
    }
    if (columns) {
        if (ana_unpack(b->c.pbuf, b->c.got, b->c.raw, b->c.rsize) != b->c.rsize) {
            b->result = ANA_FETCH_UNPACK; /* the reader reads it again and says so */
            return;
        }
        b->c.raw_filled = 1;
    }
    decode(b, time_shift);
}

void ana_batch_free(ana_batch *b)
{
    ana_chunk_free(&b->c);
    ana_unpacker_free(b->unp);
    free(b->recs);
    free(b->unknown_before);
    for (size_t k = 0; k < b->nblocks; k++)
        free(b->blocks[k].buf);
    free(b->blocks);
}

static void *worker(void *arg)
{
    ana_ahead *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && (a->scan_over || a->slots[a->scan_seq % a->nslots].state != SLOT_FREE))
            pthread_cond_wait(&a->work, &a->mu);
        if (a->stop)
            break;
        ana_batch *b = &a->slots[a->scan_seq % a->nslots];
        uint32_t csize;
        if (!scan_header(a, &csize)) {
            a->scan_over = 1;
            pthread_cond_signal(&a->done);
            continue;
        }
        b->pos = a->scan_pos;
        b->seq = a->scan_seq;
        b->state = SLOT_BUSY;
        a->scan_pos += ANA_CHUNK_HEADER_SIZE + csize;
        a->scan_seq++;
        pthread_mutex_unlock(&a->mu);
        b->c.keep_packed = 1;
        b->result = ana_chunk_fetch(a->fd, a->size, b->pos, b->seq, &b->c);
        batch_reset(b);
        if (b->result == ANA_FETCH_OK)
            ana_batch_decode(b, a->time_shift, 1);
        pthread_mutex_lock(&a->mu);
        b->state = SLOT_READY;
        pthread_cond_signal(&a->done); /* the reader's thread is the one that waits */
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

ana_ahead *ana_ahead_start(int fd, uint64_t size, uint64_t pos, uint64_t seq,
                           unsigned time_shift, int threads)
{
    if (threads < 1)
        return NULL;
    if (threads > AHEAD_MAX_THREADS)
        threads = AHEAD_MAX_THREADS;
    ana_ahead *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    pthread_once(&extent_once, extent_init);
    /* A batch for each worker and one for the reader's caller. */
    *a = (ana_ahead){ .fd = fd, .size = size, .time_shift = time_shift, .scan_pos = pos,
                      .scan_seq = seq, .nslots = threads + 1 };
    a->slots = calloc((size_t)a->nslots, sizeof(*a->slots));
    a->threads = calloc((size_t)threads, sizeof(*a->threads));
    int ok = a->slots && a->threads;
    for (int i = 0; ok && i < a->nslots; i++)
        ok = (a->slots[i].c.dctx = ZSTD_createDCtx()) != NULL;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->done, NULL);
    while (ok && a->nthreads < threads &&
           pthread_create(&a->threads[a->nthreads], NULL, worker, a) == 0)
        a->nthreads++;
    if (a->nthreads == 0) {
        ana_ahead_free(a);
        return NULL;
    }
    return a;
}

ana_batch *ana_ahead_take(ana_ahead *a, uint64_t pos, uint64_t seq)
{
    pthread_mutex_lock(&a->mu);
    ana_batch *b = &a->slots[seq % a->nslots];
    for (;;) {
        if (a->stop)
            break;
        if ((b->state == SLOT_BUSY || b->state == SLOT_READY) && b->seq == seq) {
            while (b->state == SLOT_BUSY)
                pthread_cond_wait(&a->done, &a->mu);
            if (b->pos == pos && b->result == ANA_FETCH_OK) {
                b->state = SLOT_TAKEN;
                pthread_mutex_unlock(&a->mu);
                return b;
            }
            b->state = SLOT_FREE;
            pthread_cond_signal(&a->work);
            break;
        }
        if (a->scan_over || a->scan_seq > seq)
            break;
        pthread_cond_wait(&a->done, &a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

void ana_ahead_release(ana_ahead *a, ana_batch *b)
{
    pthread_mutex_lock(&a->mu);
    b->state = SLOT_FREE;
    pthread_cond_signal(&a->work); /* one more chunk to claim: one worker */
    pthread_mutex_unlock(&a->mu);
}

void ana_ahead_stop(ana_ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->work);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    a->nthreads = 0;
}

void ana_ahead_free(ana_ahead *a)
{
    if (!a)
        return;
    ana_ahead_stop(a);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->done);
    for (int i = 0; a->slots && i < a->nslots; i++)
        ana_batch_free(&a->slots[i]);
    free(a->slots);
    free(a->threads);
    free(a);
}

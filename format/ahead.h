/* ahead.h — the reader's worker threads (ana_reader_set_threads): they read, decompress and
 * decode the chunks ahead of the one the reader's caller is at, each chunk into a batch of
 * records, and hand the batches to the reader in the order of the file. Not part of the
 * format library's interface: only reader.c uses it.
 *
 * A worker stops decoding a chunk at the first record that is not whole and well formed
 * (or that it has no memory for) and leaves the rest to the reader, which decodes on from
 * there as it would alone: every error is found and worded by the reader. A chunk a worker
 * could not read whole is not handed over at all (the reader reads it itself and says
 * what is wrong). Memory: at most threads + 1 batches (one chunk each) exist at a time.
 * Thread-safety: one caller thread (the reader's); the workers are internal. */
#ifndef ANA_AHEAD_H
#define ANA_AHEAD_H

#include "chunk.h"

typedef struct ana_ahead ana_ahead;

/* One chunk as a worker left it. */
typedef struct ana_batch {
    ana_chunk c;                /* the chunk: c.raw its records, c.rsize their bytes */
    uint64_t pos, seq;          /* its header's offset, its number */
    uint8_t *recs;              /* the records decoded, in order: n of them (ana_ahead_next) */
    size_t n, len, cap;         /* records; bytes of recs used, allocated */
    uint32_t *unknown_before;   /* per record: records of unknown kinds skipped before it */
    size_t ucap;
    uint64_t unknown_tail;      /* records of unknown kinds skipped after the last one */
    ana_dec stop;               /* where the worker stopped: rpos == c.rsize when at the end */
    ana_scratch *blocks;        /* the records' strings and frames */
    size_t nblocks;
    struct ana_unpacker *unp;   /* a packed chunk's columns read (pack.h), kept for the next */
    int direct;                 /* 1: the records were read straight from the columns */
    int state, result;          /* (ahead.c) */
} ana_batch;

/* Record i of b, at *off of b->recs, into rec; *off moves past it. A batch keeps each record
 * as the start of an ana_record, decoded in place: its kind, tid and time and as many bytes
 * of its union as the decoder writes for the kind (a whole ana_record is 256 bytes, most of
 * them unused, and the copies are what a batch costs). So rec gets what decoding it would
 * have written there. Returns the records of unknown kinds skipped before it. */
uint32_t ana_ahead_next(const ana_batch *b, size_t i, size_t *off, ana_record *rec);

/* Decodes the chunk b->c (read whole, ana_chunk_fetch, packed ones with keep_packed) into
 * b: a packed one straight from its columns when `direct` and the unpacker reads it all
 * (pack.h), else (or when it gives up) unpacked and decoded record by record up to the end
 * or the first record the reader must see to. Either way b holds the same records and
 * stops at the same place (tests/unit/format/test_unpack_direct.c); b->result becomes
 * ANA_FETCH_UNPACK when the columns do not unpack. What the workers do with each chunk,
 * and the reader alone with each packed one. */
void ana_batch_decode(ana_batch *b, unsigned time_shift, int direct);
void ana_batch_free(ana_batch *b); /* its buffers and its chunk's, not b itself */

/* Starts that many workers (threads >= 1) on the file fd (size bytes) whose chunk number
 * seq begins at pos, times in ticks of 2^time_shift ns. NULL when not even one can start
 * (the reader then reads alone); fewer threads than asked when only some can. */
ana_ahead *ana_ahead_start(int fd, uint64_t size, uint64_t pos, uint64_t seq,
                           unsigned time_shift, int threads);

/* The batch of chunk number seq at pos, waiting for a worker still at it; NULL when no
 * worker read that chunk whole (the reader reads it itself). The reader owns it until
 * ana_ahead_release. */
ana_batch *ana_ahead_take(ana_ahead *a, uint64_t pos, uint64_t seq);
void ana_ahead_release(ana_ahead *a, ana_batch *b);

/* Stops the workers (ana_ahead_take returns NULL from then on); a batch the reader holds
 * stays valid until ana_ahead_free. */
void ana_ahead_stop(ana_ahead *a);
void ana_ahead_free(ana_ahead *a); /* stops them first; NULL is fine */

#endif

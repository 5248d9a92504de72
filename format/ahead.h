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
    uint8_t *recs;              /* the records decoded, in order: n of them, each an
                                 * ana_batch_rec and its kind's fields (ana_ahead_next) */
    size_t n, len, cap;         /* records; bytes of recs used, allocated */
    uint64_t unknown_tail;      /* records of unknown kinds skipped after the last one */
    ana_dec stop;               /* where the worker stopped: rpos == c.rsize when at the end */
    ana_scratch *blocks;        /* the records' strings and frames */
    size_t nblocks;
    int state, result;          /* (ahead.c) */
} ana_batch;

/* A record in a batch: what ana_reader_next fills but the fields of its kind, which
 * follow it (as many bytes as the decoder writes of them, a multiple of 8: a copy of a
 * whole ana_record is 256 bytes, most of them unused, and copies are what a batch costs). */
typedef struct ana_batch_rec {
    uint32_t unknown_before;    /* records of unknown kinds skipped before it */
    uint32_t kind;
    uint64_t tid, time_ns;
} ana_batch_rec;

/* The record at *off of b into rec (its kind's fields only, as the decoder writes them);
 * *off moves past it. Returns the records of unknown kinds skipped before it. */
uint32_t ana_ahead_next(const ana_batch *b, size_t *off, ana_record *rec);

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

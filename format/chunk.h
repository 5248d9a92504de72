/* chunk.h — one chunk of a trace: read, decompressed (and unpacked), its records decoded
 * one at a time (docs/trace-format.md, "Reader rules" 2-5). Not part of the format
 * library's interface: the reader (reader.c) and its worker threads (ahead.c) share it.
 *
 * Reentrant: a chunk and a decoding state belong to one thread at a time. Nothing here
 * words an error; the reader does, from what these return, so that the message and offset
 * of every problem come from one place whoever found it. */
#ifndef ANA_CHUNK_H
#define ANA_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "records.h"

/* A chunk's buffers (kept from one chunk to the next) and what it held. */
typedef struct ana_chunk {
    uint8_t *cbuf, *raw, *pbuf; /* compressed frame, records, a packed chunk's columns */
    size_t ccap, rcap, pcap;
    ZSTD_DCtx *dctx;
    uint32_t csize, rsize, seq;
    int packed;
    int keep_packed;     /* the caller's choice: a packed chunk's columns stay in pbuf (got
                          * bytes of them), raw is not filled (ahead.c reads them) */
    int raw_filled;      /* raw holds the chunk's records (not so: kept packed) */
    size_t got;          /* what ZSTD_decompressDCtx returned */
    unsigned long long fcs;
} ana_chunk;

/* What ana_chunk_fetch found at a chunk header's offset. */
enum ana_fetch {
    ANA_FETCH_OK, ANA_FETCH_END, ANA_FETCH_TORN, ANA_FETCH_MAGIC, ANA_FETCH_SIZES,
    ANA_FETCH_SEQ, ANA_FETCH_NOMEM, ANA_FETCH_READ, ANA_FETCH_FCS, ANA_FETCH_ZSTD,
    ANA_FETCH_UNPACK
};

/* Reads the chunk whose header is at pos of the file fd (size bytes), expected to be number
 * seq, into c (whose dctx the caller made). Touches nothing but c. */
enum ana_fetch ana_chunk_fetch(int fd, uint64_t size, uint64_t pos, uint64_t seq, ana_chunk *c);
void ana_chunk_free(ana_chunk *c); /* its buffers and dctx, not c itself */

/* Grows *buf to at least need bytes. 0, or -1 (left as it was). */
int ana_chunk_grow(uint8_t **buf, size_t *cap, size_t need);

/* Where decoding a chunk's records stands. Each chunk opens with a SEGMENT, so this is the
 * chunk's own: it starts zeroed at every chunk. */
typedef struct ana_dec {
    size_t rpos;             /* offset of the next record in the records */
    uint64_t seg_tid, prev_ns;
    int in_segment;
} ana_dec;

/* What one ana_chunk_step did. The errors leave d->rpos where the reader rules want the
 * next attempt to begin (past the record, but for a bad header). */
enum ana_step {
    ANA_STEP_REC,        /* rec filled: a record in ns, its tid the segment's */
    ANA_STEP_SEGMENT,    /* a SEGMENT, consumed */
    ANA_STEP_UNKNOWN,    /* a record of a kind this reader does not know, skipped */
    ANA_STEP_FULL,       /* (append only) the scratch has no room: nothing consumed
                          * that matters, the caller restores d and gives more room */
    ANA_STEP_HEADER,     /* error: the record header runs past the chunk */
    ANA_STEP_NO_SEGMENT, /* error: the chunk does not begin with a SEGMENT */
    ANA_STEP_NOMEM,      /* error: no memory for the scratch */
    ANA_STEP_MALFORMED   /* error: the payload does not decode */
};

/* Decodes the record at d->rpos of raw[0, rlen) (d->rpos < rlen) into rec, its strings and
 * frames into sc: after what sc holds when append, else over it (sc grown as needed).
 * *at and *kind: where the record began and its kind, for the reader's messages. */
enum ana_step ana_chunk_step(ana_dec *d, const uint8_t *raw, size_t rlen, unsigned time_shift,
                             ana_record *rec, ana_scratch *sc, int append, uint64_t *at,
                             uint32_t *kind);

#endif

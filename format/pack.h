/* pack.h — packed chunks (docs/trace-format.md, "Packed chunks"): the records of a chunk
 * re-coded column by column, so that what repeats from step to step compresses.
 * ana_unpack(ana_pack(x)) == x, byte for byte. Packing: pack.c; unpacking, and reading the
 * records straight from the columns (ana_unpacker): unpack.c. Reentrant; a packer or an
 * unpacker belongs to one thread at a time. */
#ifndef ANA_PACK_H
#define ANA_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

typedef struct ana_packer ana_packer; /* column buffers, reused from chunk to chunk */

ana_packer *ana_packer_new(void);
void ana_packer_free(ana_packer *pk);

/* The most bytes ana_pack writes for a payload of raw_n bytes. */
size_t ana_pack_bound(size_t raw_n);

/* Packs a chunk payload (whole records) into out: the packed size, or 0 when the payload
 * holds what packing would not give back exactly (a kind or trailing field this version
 * does not know, a varint longer than it needs to be) or memory ran out: then the chunk is
 * written unpacked. */
size_t ana_pack(ana_packer *pk, const uint8_t *raw, size_t n, uint8_t *out, size_t cap);

/* Unpacks into out (cap bytes): the payload's size, or 0 when the input is not a whole
 * packed payload that fits. */
size_t ana_unpack(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* ---- the records of a packed payload straight from its columns ---- */

/* Reading a packed payload record by record without rebuilding its bytes: the kinds
 * decode_fast.c decodes are filled straight from the columns; the others (definitions,
 * strings, the segments) are rebuilt one at a time, for the caller to decode as before.
 * Any record either step would refuse (or the payload ana_unpack would) makes it give up
 * (ANA_UNP_BAD): the caller then unpacks the payload and decodes it the old way, whose
 * errors are the ones to report. The state (columns, model, buffers) is reused from one
 * payload to the next. */
typedef struct ana_unpacker ana_unpacker;

ana_unpacker *ana_unpacker_new(void);
void ana_unpacker_free(ana_unpacker *u);

/* Starts on the packed payload in[0, n) whose records take rsize bytes unpacked (the chunk
 * header's raw size). 0, or -1 when its header or directory is not right. */
int ana_unpacker_open(ana_unpacker *u, const uint8_t *in, size_t n, size_t rsize);

/* Where the frames of a record read straight go: cur while it has the room, else what get
 * gives, a scratch with at least need bytes free (it may move on to another; NULL: no
 * memory), which becomes cur. The caller sets cur to NULL when it moves scratches itself. */
typedef struct ana_room {
    ana_scratch *(*get)(void *ctx, size_t need);
    void *ctx;
    ana_scratch *cur;
} ana_room;

enum ana_unpacked {
    ANA_UNP_REC, /* rec: its kind, time_ns (in ticks, as decoding its bytes after those of
                  * the record before gives it) and the kind's struct of rec->u, the same
                  * fields ana_record_decode_fast writes, with the same values; not tid */
    ANA_UNP_RAW, /* *raw: the record's bytes (kind, length, payload) as ana_unpack writes
                  * them, *len of them, until the next call */
    ANA_UNP_END, /* no more: every column read to its end, rsize bytes of records in all */
    ANA_UNP_BAD  /* give up (see above); the unpacker is of no more use for this payload */
};

int ana_unpacker_next(ana_unpacker *u, ana_record *rec, ana_room *room,
                      const uint8_t **raw, size_t *len);

#endif

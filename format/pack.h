/* pack.h — packed chunks (docs/trace-format.md, "Packed chunks"): the records of a chunk
 * re-coded column by column, so that what repeats from step to step compresses.
 * ana_unpack(ana_pack(x)) == x, byte for byte. */
#ifndef ANA_PACK_H
#define ANA_PACK_H

#include <stddef.h>
#include <stdint.h>

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

#endif

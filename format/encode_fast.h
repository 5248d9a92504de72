/* encode_fast.h — hand-written encoders for the record kinds the preload's hooks write most
 * (ALLOC, FREE, LAUNCH, MEMCPY, MEMSET, VMM, RANGE).
 *
 * Contract: ana_record_encode_fast() writes exactly the bytes that ana_record_to_ticks()
 * followed by ana_record_encode() would write (tests/unit/format/test_encode_fast.c checks
 * it on random records), without copying the record and without the table walk; other
 * kinds go through those two. Allocation-free and reentrant: runs on the preload's hot
 * path. */
#ifndef ANA_ENCODE_FAST_H
#define ANA_ENCODE_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* The most bytes ana_record_encode_fast() writes for rec when its kind is one of the fast
 * kinds; 0 for any other kind. */
size_t ana_record_encode_max(const ana_record *rec);

/* Encodes rec with its time and duration in ticks of 2^shift ns (shift 0: nanoseconds);
 * prev_tick is the previous record's time in the same ticks. Returns the bytes written,
 * or 0 when cap is too small or the kind is unknown (as ana_record_encode). */
size_t ana_record_encode_fast(uint8_t *buf, size_t cap, const ana_record *rec, uint64_t prev_tick,
                              unsigned shift);

/* ana_record_encode_fast for a record of a fast kind into a buffer known to hold
 * ana_record_encode_max(rec) bytes (the caller has checked: nothing is here). */
size_t ana_record_encode_room(uint8_t *buf, const ana_record *rec, uint64_t prev_tick, unsigned shift);

#endif

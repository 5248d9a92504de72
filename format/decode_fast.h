/* decode_fast.h — hand-written decoders for the record kinds a trace holds most of
 * (LAUNCH, GPU_KERNEL, ALLOC, FREE, MEMCPY, MEMSET, GPU_MEMCPY, GPU_MEMSET, GEMM, COLL,
 * LIBCALL), for the reader.
 *
 * Contract: ana_record_decode_fast() returns what ana_record_decode() returns and, when that
 * is ANA_DEC_OK, fills the same fields of rec with the same values (frames: the same
 * content, in the same scratch) — tests/unit/format/test_decode_fast.c checks it on random
 * and damaged payloads. It writes only the kind's own struct of rec->u, not the whole union.
 * Other kinds go through ana_record_decode(). Allocation-free and reentrant. */
#ifndef ANA_DECODE_FAST_H
#define ANA_DECODE_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

int ana_record_decode_fast(uint32_t kind, const uint8_t *payload, size_t len, uint64_t prev_ns,
                           ana_record *rec, ana_scratch *scratch);

#endif

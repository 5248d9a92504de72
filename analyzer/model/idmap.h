/* idmap.h — ids (library call ids, which count up in a process) to indexes below 2^32: a
 * table by id, 4 bytes per id of the span, when the ids are dense (a span under four
 * times their number), else a u64map (~34 bytes per id). Built once, then read; not
 * thread-safe. */
#ifndef ANA_IDMAP_H
#define ANA_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "model/u64map.h"

typedef struct ana_idmap {
    uint64_t lo, span;
    uint32_t *at; /* dense: 1 + value, 0 none */
    ana_u64map map;
} ana_idmap;

/* Room for n ids between lo and hi (inclusive; hi < lo: none). */
void ana_idmap_init(ana_idmap *x, uint64_t lo, uint64_t hi, size_t n);
/* Keeps id -> v (v < UINT32_MAX) unless id is there already: returns 0 then, 1 else.
 * An id outside [lo, hi] of a dense map is refused (0). */
int ana_idmap_put(ana_idmap *x, uint64_t id, size_t v);
/* The value of id, or SIZE_MAX. */
size_t ana_idmap_get(const ana_idmap *x, uint64_t id);
void ana_idmap_free(ana_idmap *x);

#endif

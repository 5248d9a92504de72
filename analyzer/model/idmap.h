/* idmap.h — ids that count up in a process (library call ids, correlation ids) to
 * indexes below 2^32: a table by id, 4 bytes per id of the span, when the ids are dense (a
 * span under four times their number), else a u64map (~34 bytes per id); and sets of such
 * ids, a bit by id when dense. Built once, then read; not thread-safe. */
#ifndef ANA_IDMAP_H
#define ANA_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "model/u64map.h"

/* Widens [*lo, *hi] to id; 0 (no id) is left out. Start from lo UINT64_MAX, hi 0. */
static inline void ana_id_span(uint64_t id, uint64_t *lo, uint64_t *hi)
{
    if (id)
        *lo = id < *lo ? id : *lo, *hi = id > *hi ? id : *hi;
}

/* The largest value a map keeps. */
#define ANA_IDMAP_MAX ((size_t)UINT32_MAX - 2)

typedef struct ana_idmap {
    uint64_t lo, span;
    uint32_t *at; /* dense: 1 + value, 0 none */
    ana_u64map map;
} ana_idmap;

/* Room for n ids between lo and hi (inclusive; hi < lo: none). */
void ana_idmap_init(ana_idmap *x, uint64_t lo, uint64_t hi, size_t n);
/* Keeps id -> v (v <= ANA_IDMAP_MAX) unless id is there already: returns 0 then, 1 else.
 * An id outside [lo, hi] of a dense map is refused (0). */
int ana_idmap_put(ana_idmap *x, uint64_t id, size_t v);
/* The value of id, or SIZE_MAX. */
size_t ana_idmap_get(const ana_idmap *x, uint64_t id);
void ana_idmap_free(ana_idmap *x);

/* A set of ids: a bit by id of the span when they are dense (a span under 64 times their
 * number), else a u64map. */
typedef struct ana_idset {
    uint64_t lo, span;
    uint8_t *bits;
    ana_u64map map;
} ana_idset;

/* Room for n ids between lo and hi (inclusive; hi < lo: none). */
void ana_idset_init(ana_idset *x, uint64_t lo, uint64_t hi, size_t n);
/* Adds id (one outside [lo, hi] of a dense set is left out). */
void ana_idset_add(ana_idset *x, uint64_t id);
int ana_idset_has(const ana_idset *x, uint64_t id);
void ana_idset_free(ana_idset *x);

#endif

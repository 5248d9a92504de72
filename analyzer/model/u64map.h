/* u64map.h — open-addressing hash map from uint64_t keys to uint64_t values.
 *
 * Used for live allocations (pointer -> slot), stack and kernel ids, and the symbol cache.
 * Every key is allowed, 0 included. Linear probing with backward-shift deletion, so
 * lookups stay O(1) under heavy alloc/free churn. Not thread-safe. */
#ifndef ANA_U64MAP_H
#define ANA_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ana_u64map {
    uint64_t *keys, *vals;
    uint8_t *used;
    size_t cap, n; /* cap is a power of two (or 0) */
} ana_u64map;

void ana_u64map_init(ana_u64map *m);
void ana_u64map_free(ana_u64map *m);
/* Returns 1 and sets *val when key is present, else 0. */
int ana_u64map_get(const ana_u64map *m, uint64_t key, uint64_t *val);
/* Inserts or replaces. */
void ana_u64map_put(ana_u64map *m, uint64_t key, uint64_t val);
/* Removes key; returns 1 when it was present (and sets *val when val is not NULL). */
int ana_u64map_del(ana_u64map *m, uint64_t key, uint64_t *val);
/* Iteration: for (size_t i = 0; i < m->cap; i++) if (m->used[i]) ... */

#endif

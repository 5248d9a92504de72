/* u64map.c — see u64map.h.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/u64map.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

static size_t ana_u64map_slot(uint64_t key, size_t mask)
{
    /* splitmix64 finalizer: pointers and small ids both spread well. */
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebull;
    key ^= key >> 31;
    return (size_t)key & mask;
}

void ana_u64map_init(ana_u64map *m) { memset(m, 0, sizeof(*m)); }

void ana_u64map_free(ana_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

static void ana_u64map_rehash(ana_u64map *m, size_t ncap)
{
    ana_u64map old = *m;
    m->keys = ana_xmalloc(ncap * sizeof(uint64_t));
    m->vals = ana_xmalloc(ncap * sizeof(uint64_t));
    m->used = ana_xcalloc(ncap, 1);
    m->cap = ncap;
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.used[i])
            ana_u64map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
    free(old.used);
}

int ana_u64map_get(const ana_u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = ana_u64map_slot(key, mask); m->used[i]; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
    }
    return 0;
}

void ana_u64map_put(ana_u64map *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3)
        ana_u64map_rehash(m, m->cap ? m->cap * 2 : 64);
    size_t mask = m->cap - 1;
    size_t i = ana_u64map_slot(key, mask);
    for (; m->used[i]; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
}

/* Backward-shift deletion: moves later members of the probe run into the hole so that
 * no tombstones accumulate. */
static void ana_u64map_unhole(ana_u64map *m, size_t hole)
{
    size_t mask = m->cap - 1;
    for (size_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = ana_u64map_slot(m->keys[j], mask);
        /* j may move to hole when home is not cyclically within (hole, j]. */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        m->keys[hole] = m->keys[j];
        m->vals[hole] = m->vals[j];
        m->used[hole] = 1;
        m->used[j] = 0;
        hole = j;
    }
}

int ana_u64map_del(ana_u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = ana_u64map_slot(key, mask); m->used[i]; i = (i + 1) & mask) {
        if (m->keys[i] != key)
            continue;
        if (val)
            *val = m->vals[i];
        m->used[i] = 0;
        m->n--;
        ana_u64map_unhole(m, i);
        return 1;
    }
    return 0;
}

/*
 * table.c — pointer-keyed hash map with linear probing and tombstones.
 *
 * Used for the handle tables (streams, events, kernels, module variables): programs such
 * as PyTorch register tens of thousands of kernels, so lookups must not be linear.
 * Not thread-safe by itself; callers hold the sim lock.
 */
#include "sim.h"

#include <stdlib.h>

#define TOMBSTONE ((const void *)(uintptr_t)1)

static size_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static size_t find_slot(const struct ana_sim_map *m, const void *key)
{
    size_t mask = m->cap - 1;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key || m->keys[i] == NULL)
            return i;
    }
}

void *ana_sim_map_get(const struct ana_sim_map *m, const void *key)
{
    if (m->cap == 0 || key == NULL || key == TOMBSTONE)
        return NULL;
    size_t i = find_slot(m, key);
    return m->keys[i] == key ? m->vals[i] : NULL;
}

static int grow(struct ana_sim_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    while (m->len * 2 >= cap)
        cap *= 2;
    struct ana_sim_map n = { calloc(cap, sizeof(void *)), calloc(cap, sizeof(void *)),
                             cap, 0, 0 };
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] && m->keys[i] != TOMBSTONE) {
            size_t j = find_slot(&n, m->keys[i]);
            n.keys[j] = m->keys[i];
            n.vals[j] = m->vals[i];
            n.len++;
        }
    }
    n.used = n.len;
    free(m->keys);
    free(m->vals);
    *m = n;
    return 0;
}

int ana_sim_map_put(struct ana_sim_map *m, const void *key, void *val)
{
    if (key == NULL || key == TOMBSTONE)
        return -1;
    if ((m->used + 1) * 4 >= m->cap * 3 && grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1, tomb = SIZE_MAX;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
        if (m->keys[i] == TOMBSTONE && tomb == SIZE_MAX)
            tomb = i;
        if (m->keys[i] == NULL) {
            if (tomb != SIZE_MAX)
                i = tomb;
            else
                m->used++;
            m->keys[i] = key;
            m->vals[i] = val;
            m->len++;
            return 0;
        }
    }
}

void *ana_sim_map_del(struct ana_sim_map *m, const void *key)
{
    if (m->cap == 0 || key == NULL || key == TOMBSTONE)
        return NULL;
    size_t i = find_slot(m, key);
    if (m->keys[i] != key)
        return NULL;
    void *val = m->vals[i];
    m->keys[i] = TOMBSTONE;
    m->vals[i] = NULL;
    m->len--;
    return val;
}

void ana_sim_map_clear(struct ana_sim_map *m, void (*fn)(void *val))
{
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] && m->keys[i] != TOMBSTONE && fn)
            fn(m->vals[i]);
    }
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->len = m->used = 0;
}

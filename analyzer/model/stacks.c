/* stacks.c — see stacks.h.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/stacks.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

void ana_stacks_init(ana_stacks *s)
{
    memset(s, 0, sizeof(*s));
    ana_u64map_init(&s->by_id);
    ana_u64map_init(&s->by_hash);
}

void ana_stacks_free(ana_stacks *s)
{
    ana_u64map_free(&s->by_id);
    ana_u64map_free(&s->by_hash);
    free(s->entries);
    free(s->frames);
    memset(s, 0, sizeof(*s));
}

void ana_stacks_add(ana_stacks *s, uint64_t id, const uint64_t *ip, size_t n)
{
    uint64_t idx;
    if (id == 0 || ana_u64map_get(&s->by_id, id, &idx))
        return;
    ANA_GROW(s->entries, s->cap_entries, s->n_entries + 1);
    /* + 1: frames is never NULL once a stack exists, even an empty one (s->frames + 0) */
    ANA_GROW(s->frames, s->cap_frames, s->n_frames + n + 1);
    if (n)
        memcpy(s->frames + s->n_frames, ip, n * sizeof(uint64_t));
    struct ana_stack_entry *e = &s->entries[s->n_entries];
    e->id = e->canon = id;
    e->first = s->n_frames;
    e->n = n;
    s->n_frames += n;
    ana_u64map_put(&s->by_id, id, s->n_entries++);
}

static uint64_t ana_stacks_hash(const uint64_t *ip, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= ip[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static int ana_stacks_same(const ana_stacks *s, const struct ana_stack_entry *a,
                           const struct ana_stack_entry *b)
{
    return a->n == b->n &&
           memcmp(s->frames + a->first, s->frames + b->first, a->n * sizeof(uint64_t)) == 0;
}

void ana_stacks_trim_leading(ana_stacks *s, int (*drop)(uint64_t ip, void *arg), void *arg)
{
    for (size_t i = 0; i < s->n_entries; i++) {
        struct ana_stack_entry *e = &s->entries[i];
        size_t k = 0;
        while (k < e->n && drop(s->frames[e->first + k], arg))
            k++;
        if (k < e->n) {
            e->first += k;
            e->n -= k;
        }
    }
}

/* Entries are visited in ascending id order so that the canonical id of a group is its
 * smallest id, whatever the file order was. */
static int ana_stacks_cmp_id(const void *a, const void *b)
{
    const struct ana_stack_entry *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

void ana_stacks_resolve(ana_stacks *s)
{
    ana_sort(s->entries, s->n_entries, sizeof(s->entries[0]), ana_stacks_cmp_id);
    ana_u64map_free(&s->by_id);
    ana_u64map_init(&s->by_id);
    for (size_t i = 0; i < s->n_entries; i++) {
        struct ana_stack_entry *e = &s->entries[i];
        uint64_t h = ana_stacks_hash(s->frames + e->first, e->n), j;
        ana_u64map_put(&s->by_id, e->id, i);
        /* A hash collision between different frames keeps both ids apart: merging is
         * only ever done on identical frames. */
        if (ana_u64map_get(&s->by_hash, h, &j) && ana_stacks_same(s, &s->entries[j], e))
            e->canon = s->entries[j].canon;
        else if (!ana_u64map_get(&s->by_hash, h, &j))
            ana_u64map_put(&s->by_hash, h, i);
    }
    s->resolved = 1;
}

uint64_t ana_stacks_canon(const ana_stacks *s, uint64_t id)
{
    uint64_t idx;
    if (id == 0 || !ana_u64map_get(&s->by_id, id, &idx))
        return id;
    return s->entries[idx].canon;
}

size_t ana_stacks_frames(const ana_stacks *s, uint64_t id, const uint64_t **ip)
{
    uint64_t idx;
    *ip = NULL;
    if (id == 0 || !ana_u64map_get(&s->by_id, id, &idx))
        return 0;
    *ip = s->frames + s->entries[idx].first;
    return s->entries[idx].n;
}

/* idmap.c — see idmap.h. Part of model/: calls model/ only. */
#include "model/idmap.h"

#include <stdlib.h>
#include <string.h>

#include "model/util.h"

void ana_idmap_init(ana_idmap *x, uint64_t lo, uint64_t hi, size_t n)
{
    memset(x, 0, sizeof(*x));
    ana_u64map_init(&x->map);
    if (n && hi >= lo && hi - lo < 4 * (uint64_t)n + 4096) {
        x->lo = lo, x->span = hi - lo + 1;
        x->at = ana_xcalloc((size_t)x->span, sizeof(uint32_t));
    }
}

int ana_idmap_put(ana_idmap *x, uint64_t id, size_t v)
{
    uint64_t old;
    if (!x->at) {
        if (ana_u64map_get(&x->map, id, &old))
            return 0;
        ana_u64map_put(&x->map, id, v);
        return 1;
    }
    if (id < x->lo || id - x->lo >= x->span || x->at[id - x->lo])
        return 0;
    x->at[id - x->lo] = (uint32_t)(v + 1);
    return 1;
}

size_t ana_idmap_get(const ana_idmap *x, uint64_t id)
{
    uint64_t v;
    if (x->at)
        return id >= x->lo && id - x->lo < x->span && x->at[id - x->lo]
                   ? (size_t)x->at[id - x->lo] - 1
                   : SIZE_MAX;
    return ana_u64map_get(&x->map, id, &v) ? (size_t)v : SIZE_MAX;
}

void ana_idmap_free(ana_idmap *x)
{
    free(x->at);
    ana_u64map_free(&x->map);
    memset(x, 0, sizeof(*x));
}

void ana_idset_init(ana_idset *x, uint64_t lo, uint64_t hi, size_t n)
{
    memset(x, 0, sizeof(*x));
    ana_u64map_init(&x->map);
    if (n && hi >= lo && hi - lo < 64 * (uint64_t)n + 4096) {
        x->lo = lo, x->span = hi - lo + 1;
        x->bits = ana_xcalloc((size_t)(x->span / 8 + 1), 1);
    }
}

void ana_idset_add(ana_idset *x, uint64_t id)
{
    if (!x->bits)
        ana_u64map_put(&x->map, id, 1);
    else if (id >= x->lo && id - x->lo < x->span)
        ana_bit_set(x->bits, (size_t)(id - x->lo));
}

int ana_idset_has(const ana_idset *x, uint64_t id)
{
    uint64_t v;
    if (x->bits)
        return id >= x->lo && id - x->lo < x->span && ana_bit_get(x->bits, (size_t)(id - x->lo));
    return ana_u64map_get(&x->map, id, &v);
}

void ana_idset_free(ana_idset *x)
{
    free(x->bits);
    ana_u64map_free(&x->map);
    memset(x, 0, sizeof(*x));
}

/*
 * registry.c — the set of live handles of one library. Handles are few (one per thread or
 * per library user), so a locked array is enough; a lookup is one short scan.
 */
#include "blas_sim.h"

#include <stdlib.h>

int blas_registry_add(struct blas_registry *r, void *p)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        void **items = realloc(r->items, cap * sizeof(*items));
        if (!items)
            rc = -1;
        else {
            r->items = items;
            r->cap = cap;
        }
    }
    if (rc == 0)
        r->items[r->n++] = p;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static size_t find_locked(const struct blas_registry *r, const void *p)
{
    size_t i = 0;
    while (i < r->n && r->items[i] != p)
        i++;
    return i;
}

int blas_registry_has(struct blas_registry *r, const void *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&r->lock);
    int found = find_locked(r, p) < r->n;
    pthread_mutex_unlock(&r->lock);
    return found;
}

int blas_registry_remove(struct blas_registry *r, void *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&r->lock);
    size_t i = find_locked(r, p);
    int found = i < r->n;
    if (found)
        r->items[i] = r->items[--r->n];
    pthread_mutex_unlock(&r->lock);
    return found;
}

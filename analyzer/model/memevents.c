/* memevents.c — the order of the model's memory events and their readers (memevents.h).
 * Called by the loader (trace.c), the analyses and tests that build events by hand; calls
 * nothing above model/. */
#include "model/memevents.h"

#include <stdlib.h>
#include <string.h>

#include "model/util.h"

int ana_mev_cmp(const void *a, const void *b)
{
    const ana_mev *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ana_mem_sort(ana_mev *ev, size_t n) { ana_sort(ev, n, sizeof(*ev), ana_mev_cmp); }

void ana_mev_spill_of(ana_spill *s, const ana_mev *ev, size_t n)
{
    ana_spill_init(s, sizeof(ana_mev), "memory events");
    s->mem = (uint8_t *)(uintptr_t)ev;
    s->n = s->cap = n;
}

void ana_mev_reader_open(ana_mev_reader *r, const ana_spill *s)
{
    memset(r, 0, sizeof(*r));
    r->s = s;
}

const ana_mev *ana_mev_get(ana_mev_reader *r, uint64_t idx)
{
    if (!ana_spill_in_file(r->s))
        return (const ana_mev *)(const void *)r->s->mem + idx;
    uint64_t b = idx / ANA_MEV_BLOCK;
    size_t way = (size_t)(b % ANA_MEV_WAYS);
    ana_mev *blk;
    if (!r->blocks)
        r->blocks = ana_xmalloc((size_t)ANA_MEV_WAYS * ANA_MEV_BLOCK * sizeof(ana_mev));
    blk = r->blocks + way * ANA_MEV_BLOCK;
    if (r->tag[way] != b + 1) {
        uint64_t from = b * ANA_MEV_BLOCK, left = r->s->n - from;
        ana_spill_read(r->s, from, left < ANA_MEV_BLOCK ? (size_t)left : ANA_MEV_BLOCK, blk);
        r->tag[way] = b + 1;
    }
    return blk + idx % ANA_MEV_BLOCK;
}

void ana_mev_reader_close(ana_mev_reader *r)
{
    free(r->blocks);
    memset(r, 0, sizeof(*r));
}

uint64_t ana_mev_after(ana_mev_reader *r, uint64_t time_ns)
{
    uint64_t lo = 0, hi = r->s->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ana_mev_get(r, mid)->time_ns <= time_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

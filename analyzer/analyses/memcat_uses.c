/* memcat_uses.c — the uses of a trace beside the allocation each fell in, read together
 * in time order, block by block or a step at a time (memcat_int.h ana_mc_uses). Part of
 * analyses/: called by memcat.c, memcat_struct.c and memcat_sums.c; calls model/ only. */
#include "analyses/memcat_int.h"

#include <stdlib.h>
#include <string.h>

#include "model/util.h"

void ana_mc_uses_open(ana_mc_uses *r, const ana_trace *t, const ana_spill *ua)
{
    memset(r, 0, sizeof(*r));
    ana_trace_uses_open(t, &r->u);
    ana_spill_open(&r->a, ua, 0, UINT64_MAX);
}

size_t ana_mc_uses_next(ana_mc_uses *r, const ana_ptr_use **u, const int32_t **a)
{
    const void *pu, *pa;
    size_t nu = ana_spill_peek(&r->u, &pu), na = ana_spill_peek(&r->a, &pa);
    *u = pu, *a = pa;
    return nu < na ? nu : na;
}

size_t ana_mc_uses_span(ana_mc_uses *r, uint64_t start_ns, uint64_t end_ns, const ana_ptr_use **u,
                        const int32_t **a)
{
    const ana_ptr_use *pu;
    const int32_t *pa;
    size_t n, i, got = 0;
    while ((n = ana_mc_uses_next(r, &pu, &pa))) {
        for (i = 0; i < n && pu[i].time_ns < start_ns; i++)
            ;
        ana_mc_uses_take(r, i);
        if (i < n)
            break;
    }
    while ((n = ana_mc_uses_next(r, &pu, &pa))) {
        for (i = 0; i < n && pu[i].time_ns < end_ns; i++)
            ;
        if (i < n && !got) { /* the span ends inside this view: no copy */
            ana_mc_uses_take(r, i);
            *u = pu, *a = pa;
            return i;
        }
        if (got + i > r->cap) {
            r->cap = 2 * (got + i);
            r->su = ana_xrealloc(r->su, r->cap * sizeof(*r->su));
            r->sa = ana_xrealloc(r->sa, r->cap * sizeof(*r->sa));
        }
        memcpy(r->su + got, pu, i * sizeof(*pu));
        memcpy(r->sa + got, pa, i * sizeof(*pa));
        got += i;
        ana_mc_uses_take(r, i);
        if (i < n)
            break;
    }
    *u = r->su, *a = r->sa;
    return got;
}

void ana_mc_uses_close(ana_mc_uses *r)
{
    ana_spill_close(&r->u);
    ana_spill_close(&r->a);
    free(r->su);
    free(r->sa);
    memset(r, 0, sizeof(*r));
}

/* memevents.c — the order of the model's memory events (memevents.h). Called by the
 * loader (trace.c) and by tests that build events by hand; calls nothing above model/. */
#include "model/memevents.h"

#include "model/util.h"

static int ana_mev_cmp(const void *a, const void *b)
{
    const ana_mev *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ana_mem_sort(ana_mev *ev, size_t n) { ana_sort(ev, n, sizeof(*ev), ana_mev_cmp); }

/* trace_modules.c — which module holds an address (trace.h): the modules' ranges as
 * disjoint sorted spans, built once by ana_trace_finish, searched by bisection. A trace
 * re-announces modules at every change of the loader's list, and a hostile one may hold
 * millions: a scan per address would make symbolizing quadratic.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/trace.h"
#include "model/util.h"

#include <stdlib.h>

/* A max-heap of module indices (the latest announcement on top). */
static void ana_trace_heap_push(size_t *h, size_t *n, size_t v)
{
    size_t i = (*n)++;
    for (; i && h[(i - 1) / 2] < v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static void ana_trace_heap_pop(size_t *h, size_t *n)
{
    size_t v = h[--*n], i = 0, c;
    while ((c = 2 * i + 1) < *n) {
        if (c + 1 < *n && h[c + 1] > h[c])
            c++;
        if (h[c] <= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static int ana_trace_span_cmp(const void *a, const void *b)
{
    const ana_trace_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int ana_trace_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* t->spans by a sweep over every module's bounds: between two consecutive bounds the
 * owner is the latest module open there (O(M log M); a scan per address would make a
 * hostile trace of many modules and stacks quadratic). */
void ana_trace_index_modules(ana_trace *t)
{
    size_t n = t->n_modules, na = 0, nc = 0, k = 0, nh = 0;
    ana_trace_span *iv = ana_xcalloc(n + 1, sizeof(*iv)); /* module i as [lo, hi, i] */
    uint64_t *cs = ana_xcalloc(2 * n + 1, sizeof(*cs));
    size_t *heap = ana_xcalloc(n + 1, sizeof(*heap));
    for (size_t i = 0; i < n; i++) {
        const ana_trace_module *m = &t->modules[i];
        if (m->lo >= m->hi)
            continue;
        iv[na++] = (ana_trace_span){ m->lo, m->hi, i };
        cs[nc++] = m->lo;
        cs[nc++] = m->hi;
    }
    ana_sort(iv, na, sizeof(*iv), ana_trace_span_cmp);
    ana_sort(cs, nc, sizeof(*cs), ana_trace_u64_cmp);
    t->n_spans = 0;
    for (size_t c = 0; c + 1 < nc; c++) {
        if (cs[c] == cs[c + 1])
            continue;
        while (k < na && iv[k].lo <= cs[c])
            ana_trace_heap_push(heap, &nh, iv[k++].module);
        while (nh && t->modules[heap[0]].hi <= cs[c])
            ana_trace_heap_pop(heap, &nh);
        if (!nh)
            continue;
        ana_trace_span *last = t->n_spans ? &t->spans[t->n_spans - 1] : NULL;
        if (last && last->module == heap[0] && last->hi == cs[c]) {
            last->hi = cs[c + 1];
            continue;
        }
        ANA_GROW(t->spans, t->cap_spans, t->n_spans + 1);
        t->spans[t->n_spans++] = (ana_trace_span){ cs[c], cs[c + 1], heap[0] };
    }
    t->spans_for = n;
    free(iv);
    free(cs);
    free(heap);
}

const ana_trace_module *ana_trace_module_at(const ana_trace *t, uint64_t addr)
{
    /* The latest announcement wins when ranges overlap (a library unloaded and another
     * loaded at the same place). */
    if (t->n_modules && t->spans_for == t->n_modules) {
        size_t lo = 0, hi = t->n_spans; /* the first span that starts after addr */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (t->spans[mid].lo <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        const ana_trace_span *sp = lo ? &t->spans[lo - 1] : NULL;
        return sp && addr < sp->hi ? &t->modules[sp->module] : NULL;
    }
    for (size_t i = t->n_modules; i-- > 0;)
        if (addr >= t->modules[i].lo && addr < t->modules[i].hi)
            return &t->modules[i];
    return NULL;
}

/* memory.c — see memory.h.
 *
 * Two passes over the events: the first finds the peak and the final live set, the second
 * stops at the peak to group what was live then. Both are O(n) with hash tables. */
#include "memory.h"

#include "u64map.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct ana_mem_slot {
    uint64_t size, stack;
    uint8_t cls;
} ana_mem_slot;

typedef struct ana_mem_state {
    ana_u64map live; /* ptr -> slot index */
    ana_mem_slot *slots;
    size_t n_slots, cap_slots;
    uint64_t *free_slots;
    size_t n_free, cap_free;
    uint64_t bytes[3], count[3]; /* by class */
    uint64_t unknown_frees, reused_ptrs;
} ana_mem_state;

static int ana_mev_cmp(const void *a, const void *b)
{
    const ana_mev *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ana_mem_sort(ana_mev *ev, size_t n) { qsort(ev, n, sizeof(*ev), ana_mev_cmp); }

static void ana_mem_state_init(ana_mem_state *st)
{
    memset(st, 0, sizeof(*st));
    ana_u64map_init(&st->live);
}

static void ana_mem_state_free(ana_mem_state *st)
{
    ana_u64map_free(&st->live);
    free(st->slots);
    free(st->free_slots);
}

static void ana_mem_release(ana_mem_state *st, uint64_t slot)
{
    ana_mem_slot *s = &st->slots[slot];
    st->bytes[s->cls] -= s->size;
    st->count[s->cls]--;
    ANA_GROW(st->free_slots, st->cap_free, st->n_free + 1);
    st->free_slots[st->n_free++] = slot;
}

static void ana_mem_on_alloc(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (e->ret != 0 || e->ptr == 0 || e->cls == ANA_MEM_OTHER)
        return;
    if (ana_u64map_del(&st->live, e->ptr, &slot)) {
        /* The free of this pointer was lost (dropped records): trust the newer call. */
        st->reused_ptrs++;
        ana_mem_release(st, slot);
    }
    if (st->n_free) {
        slot = st->free_slots[--st->n_free];
    } else {
        ANA_GROW(st->slots, st->cap_slots, st->n_slots + 1);
        slot = st->n_slots++;
    }
    st->slots[slot] = (ana_mem_slot){ .size = e->size, .stack = e->stack, .cls = e->cls };
    st->bytes[e->cls] += e->size;
    st->count[e->cls]++;
    ana_u64map_put(&st->live, e->ptr, slot);
}

static void ana_mem_on_free(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (e->ret != 0 || e->ptr == 0) /* freeing NULL is a legal no-op */
        return;
    if (ana_u64map_del(&st->live, e->ptr, &slot))
        ana_mem_release(st, slot);
    else
        st->unknown_frees++;
}

static void ana_mem_apply(ana_mem_state *st, const ana_mev *e)
{
    if (e->type == ANA_MEV_ALLOC)
        ana_mem_on_alloc(st, e);
    else if (e->type == ANA_MEV_FREE)
        ana_mem_on_free(st, e);
}

static int ana_mem_group_cmp(const void *a, const void *b)
{
    const ana_mem_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Groups the live device allocations by stack, largest first. */
static ana_mem_group *ana_mem_group_live(const ana_mem_state *st, size_t *n_out)
{
    ana_u64map idx;
    ana_mem_group *g = NULL;
    size_t n = 0, cap = 0;
    ana_u64map_init(&idx);
    for (size_t i = 0; i < st->live.cap; i++) {
        if (!st->live.used[i])
            continue;
        const ana_mem_slot *s = &st->slots[st->live.vals[i]];
        uint64_t k;
        if (s->cls != ANA_MEM_DEVICE)
            continue;
        if (!ana_u64map_get(&idx, s->stack, &k)) {
            ANA_GROW(g, cap, n + 1);
            g[n] = (ana_mem_group){ .stack = s->stack };
            k = n++;
            ana_u64map_put(&idx, s->stack, k);
        }
        g[k].bytes += s->size;
        g[k].count++;
    }
    ana_u64map_free(&idx);
    if (n)
        qsort(g, n, sizeof(*g), ana_mem_group_cmp);
    *n_out = n;
    return g;
}

static void ana_mem_on_failure(ana_mem_result *res, const ana_mem_state *st, const ana_mev *e,
                               ana_u64map *pending)
{
    res->failures_total++;
    if (res->n_failures >= ANA_MEM_MAX_FAILURES)
        return;
    ana_mem_failure *f = &res->failures[res->n_failures];
    memset(f, 0, sizeof(*f));
    f->ev = *e;
    f->live_bytes = st->bytes[ANA_MEM_DEVICE];
    f->host_live_bytes = st->bytes[ANA_MEM_HOST_PINNED];
    ana_u64map_put(pending, e->tid, res->n_failures++);
}

/* A MEMINFO with reason 1 belongs to the latest failed allocation of its thread. */
static void ana_mem_on_meminfo(ana_mem_result *res, const ana_mev *e, ana_u64map *pending)
{
    uint64_t k;
    if (e->api != 1 || !ana_u64map_del(pending, e->tid, &k))
        return;
    ana_mem_failure *f = &res->failures[k];
    f->has_meminfo = 1;
    f->free_bytes = e->ptr;
    f->total_bytes = e->size;
    f->meminfo_device = e->device;
}

static void ana_mem_track_peaks(ana_mem_result *res, const ana_mem_state *st, const ana_mev *e,
                                size_t i, size_t *peak_idx)
{
    if (st->bytes[ANA_MEM_DEVICE] > res->peak_bytes) {
        res->peak_bytes = st->bytes[ANA_MEM_DEVICE];
        res->peak_time_ns = e->time_ns;
        res->peak_count = st->count[ANA_MEM_DEVICE];
        *peak_idx = i;
    }
    if (st->bytes[ANA_MEM_HOST_PINNED] > res->host_peak_bytes) {
        res->host_peak_bytes = st->bytes[ANA_MEM_HOST_PINNED];
        res->host_peak_time_ns = e->time_ns;
    }
}

static void ana_mem_sites_at_peak(const ana_mev *ev, size_t peak_idx, ana_mem_result *res)
{
    ana_mem_state st;
    ana_mem_state_init(&st);
    for (size_t i = 0; i <= peak_idx; i++)
        ana_mem_apply(&st, &ev[i]);
    res->peak_sites = ana_mem_group_live(&st, &res->n_peak_sites);
    ana_mem_state_free(&st);
}

void ana_mem_replay(const ana_mev *ev, size_t n, ana_mem_result *res)
{
    ana_mem_state st;
    ana_u64map pending;
    size_t peak_idx = 0;
    memset(res, 0, sizeof(*res));
    res->failures = ana_xcalloc(ANA_MEM_MAX_FAILURES, sizeof(ana_mem_failure));
    ana_mem_state_init(&st);
    ana_u64map_init(&pending);
    for (size_t i = 0; i < n; i++) {
        const ana_mev *e = &ev[i];
        if (e->type == ANA_MEV_ALLOC && e->ret != 0)
            ana_mem_on_failure(res, &st, e, &pending);
        else if (e->type == ANA_MEV_MEMINFO)
            ana_mem_on_meminfo(res, e, &pending);
        ana_mem_apply(&st, e);
        ana_mem_track_peaks(res, &st, e, i, &peak_idx);
    }
    res->live_end_bytes = st.bytes[ANA_MEM_DEVICE];
    res->live_end_count = st.count[ANA_MEM_DEVICE];
    res->host_live_end_bytes = st.bytes[ANA_MEM_HOST_PINNED];
    res->host_live_end_count = st.count[ANA_MEM_HOST_PINNED];
    res->unknown_frees = st.unknown_frees;
    res->reused_ptrs = st.reused_ptrs;
    res->leaks = ana_mem_group_live(&st, &res->n_leaks);
    ana_mem_state_free(&st);
    ana_u64map_free(&pending);
    if (res->peak_bytes > 0)
        ana_mem_sites_at_peak(ev, peak_idx, res);
}

void ana_mem_result_free(ana_mem_result *res)
{
    free(res->leaks);
    free(res->peak_sites);
    free(res->failures);
    memset(res, 0, sizeof(*res));
}

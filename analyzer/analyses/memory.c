/* memory.c — see memory.h.
 *
 * Two passes over the events: the first finds the peak and the final live set, the second
 * stops at the peak to group what was live then. Both are O(n) with hash tables.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/memory.h"

#include "records.h"
#include "model/idmap.h"
#include "model/u64map.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct ana_mem_slot {
    uint64_t size, stack;
    uint32_t maps;    /* cuMemCreate: live mappings of the handle */
    uint8_t cls, lib;
    uint8_t live;     /* charged: the slot is not on the free list */
    uint8_t vmm;      /* made by cuMemCreate */
    uint8_t released; /* cuMemCreate: cuMemRelease seen, waiting for the last unmap */
    size_t life;      /* index into the state's lives */
} ana_mem_slot;

typedef struct ana_mem_state {
    ana_u64map live;    /* ptr -> slot index */
    ana_u64map handles; /* cuMemCreate handle not yet released -> slot index */
    ana_u64map vas;     /* mapped va -> slot index of the handle mapped there */
    ana_u64map va_size; /* mapped va -> bytes mapped there */
    const ana_idset *dup_corrs; /* corrs of traced calls (GPU_MEMORY de-duplication) */
    ana_mem_slot *slots;
    size_t n_slots, cap_slots;
    uint64_t *free_slots;
    size_t n_free, cap_free;
    uint64_t bytes[3], count[3]; /* by class */
    uint64_t lib_bytes[ANA_MEM_LIBS]; /* device bytes by library */
    uint64_t vmm_bytes;
    uint64_t unknown_frees, reused_ptrs, vmm_late, gpu_dup, gpu_replayed, gpu_ignored;
    const ana_mev *now; /* the event being applied */
    size_t now_idx;
    ana_mem_life *lives; /* NULL when not kept (the second pass) */
    size_t n_lives, cap_lives;
    int keep_lives;
} ana_mem_state;

static void ana_mem_state_init(ana_mem_state *st, const ana_idset *dup_corrs)
{
    memset(st, 0, sizeof(*st));
    ana_u64map_init(&st->live);
    ana_u64map_init(&st->handles);
    ana_u64map_init(&st->vas);
    ana_u64map_init(&st->va_size);
    st->dup_corrs = dup_corrs;
}

static void ana_mem_state_free(ana_mem_state *st)
{
    ana_u64map_free(&st->live);
    ana_u64map_free(&st->handles);
    ana_u64map_free(&st->vas);
    ana_u64map_free(&st->va_size);
    free(st->slots);
    free(st->free_slots);
    free(st->lives);
}

_Static_assert(sizeof(ana_mem_life) == 56, "one per allocation of the run");

static uint64_t ana_mem_charge(ana_mem_state *st, uint64_t size, uint64_t stack, uint8_t cls,
                               uint8_t vmm, uint8_t lib)
{
    uint64_t slot;
    if (st->n_free) {
        slot = st->free_slots[--st->n_free];
    } else {
        ANA_GROW(st->slots, st->cap_slots, st->n_slots + 1);
        slot = st->n_slots++;
    }
    st->slots[slot] = (ana_mem_slot){ .size = size, .stack = stack, .cls = cls, .lib = lib,
                                      .live = 1, .vmm = vmm, .life = st->n_lives };
    if (st->keep_lives) {
        const ana_mev *e = st->now;
        ANA_GROW(st->lives, st->cap_lives, st->n_lives + 1);
        st->lives[st->n_lives++] = (ana_mem_life){
            .ptr = vmm ? 0 : e->ptr, .size = size, .stack = stack, .t_alloc = e->time_ns,
            .t_free = UINT64_MAX, .a_idx = st->now_idx, .f_idx = ANA_MEM_LIVE,
            .api = e->type == ANA_MEV_ALLOC ? e->api : 0, .cls = cls, .lib = lib, .vmm = vmm,
            .driver = e->type == ANA_MEV_GPU_ALLOC };
    }
    st->bytes[cls] += size;
    if (cls == ANA_MEM_DEVICE)
        st->lib_bytes[lib] += size;
    st->count[cls]++;
    if (vmm)
        st->vmm_bytes += size;
    return slot;
}

static void ana_mem_release(ana_mem_state *st, uint64_t slot)
{
    ana_mem_slot *s = &st->slots[slot];
    st->bytes[s->cls] -= s->size;
    st->count[s->cls]--;
    if (s->cls == ANA_MEM_DEVICE)
        st->lib_bytes[s->lib] -= s->size;
    if (s->vmm)
        st->vmm_bytes -= s->size;
    s->live = 0;
    if (st->keep_lives) {
        st->lives[s->life].t_free = st->now->time_ns;
        st->lives[s->life].f_idx = st->now_idx;
    }
    ANA_GROW(st->free_slots, st->cap_free, st->n_free + 1);
    st->free_slots[st->n_free++] = slot;
}

/* NVIDIA frees the physical memory of a handle once it is released and unmapped: a
 * released handle that is still mapped waits for its last unmap. Returns 1 then. */
static int ana_mem_drop_handle(ana_mem_state *st, uint64_t slot)
{
    if (st->slots[slot].maps) {
        st->slots[slot].released = 1;
        return 1;
    }
    ana_mem_release(st, slot);
    return 0;
}

static void ana_mem_on_create(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (ana_u64map_del(&st->handles, e->ptr, &slot)) {
        st->reused_ptrs++; /* its release was lost: trust the newer call */
        ana_mem_drop_handle(st, slot);
    }
    slot = ana_mem_charge(st, e->size, e->stack, e->cls, 1, e->lib);
    ana_u64map_put(&st->handles, e->ptr, slot);
}

static void ana_mem_on_alloc(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (e->ret != 0 || e->ptr == 0 || e->cls == ANA_MEM_OTHER)
        return;
    if (e->api == ANA_API_CU_MEM_CREATE) {
        ana_mem_on_create(st, e);
        return;
    }
    if (ana_u64map_del(&st->live, e->ptr, &slot)) {
        /* The free of this pointer was lost (dropped records): trust the newer call. */
        st->reused_ptrs++;
        ana_mem_release(st, slot);
    }
    ana_u64map_put(&st->live, e->ptr, ana_mem_charge(st, e->size, e->stack, e->cls, 0, e->lib));
}

static void ana_mem_on_release(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (!ana_u64map_del(&st->handles, e->ptr, &slot))
        st->unknown_frees++;
    else if (ana_mem_drop_handle(st, slot))
        st->vmm_late++;
}

static void ana_mem_on_free(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (e->ret != 0 || e->ptr == 0) /* freeing NULL is a legal no-op */
        return;
    if (e->api == ANA_API_CU_MEM_RELEASE)
        ana_mem_on_release(st, e);
    else if (ana_u64map_del(&st->live, e->ptr, &slot))
        ana_mem_release(st, slot);
    else
        st->unknown_frees++;
}

static void ana_mem_on_map(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (e->ret != 0 || !ana_u64map_get(&st->handles, e->handle, &slot))
        return; /* a handle created before the trace began: its bytes were never counted */
    if (ana_u64map_get(&st->vas, e->ptr, &slot))
        return; /* mapping over a live mapping fails in CUDA; keep the first */
    st->slots[slot].maps++;
    if (st->keep_lives && st->lives[st->slots[slot].life].ptr == 0)
        st->lives[st->slots[slot].life].ptr = e->ptr;
    ana_u64map_put(&st->vas, e->ptr, slot);
    ana_u64map_put(&st->va_size, e->ptr, e->size);
}

/* Removes the mapping at va (which must be present). */
static void ana_mem_unmap_at(ana_mem_state *st, uint64_t va)
{
    uint64_t slot;
    ana_u64map_del(&st->vas, va, &slot);
    ana_u64map_del(&st->va_size, va, NULL);
    ana_mem_slot *s = &st->slots[slot];
    if (s->maps && --s->maps == 0 && s->released)
        ana_mem_release(st, slot);
}

/* cuMemUnmap takes a range, which may cover several mappings: the common case (one
 * mapping, unmapped whole) is one lookup; otherwise every mapping is looked at. */
static void ana_mem_on_unmap(ana_mem_state *st, const ana_mev *e)
{
    uint64_t mapped;
    if (e->ret != 0)
        return;
    if (ana_u64map_get(&st->va_size, e->ptr, &mapped)) {
        ana_mem_unmap_at(st, e->ptr);
        if (mapped >= e->size)
            return;
    }
    for (size_t i = 0; i < st->vas.cap; i++) {
        if (!st->vas.used[i] || st->vas.keys[i] < e->ptr || st->vas.keys[i] - e->ptr >= e->size)
            continue;
        ana_mem_unmap_at(st, st->vas.keys[i]);
        i--; /* backward-shift deletion may have moved another entry here */
    }
}

static int ana_mem_is_dup(const ana_mem_state *st, const ana_mev *e)
{
    return e->corr && ana_idset_has(st->dup_corrs, e->corr);
}

static void ana_mem_on_gpu(ana_mem_state *st, const ana_mev *e)
{
    uint64_t slot;
    if (ana_mem_is_dup(st, e)) {
        st->gpu_dup++;
        return;
    }
    st->gpu_replayed++;
    if (e->type == ANA_MEV_GPU_FREE) {
        if (ana_u64map_del(&st->live, e->ptr, &slot))
            ana_mem_release(st, slot);
        else
            st->gpu_ignored++; /* freed through a traced call already, or never seen */
        return;
    }
    if (e->cls == ANA_MEM_OTHER || ana_u64map_get(&st->live, e->ptr, &slot)) {
        st->gpu_ignored++; /* not device/pinned memory, or a traced call made it live */
        return;
    }
    ana_u64map_put(&st->live, e->ptr,
                   ana_mem_charge(st, e->size, ANA_MEM_STACK_DRIVER, e->cls, 0, 0));
}

static void ana_mem_apply(ana_mem_state *st, const ana_mev *e, size_t idx)
{
    st->now = e;
    st->now_idx = idx;
    switch (e->type) {
    case ANA_MEV_ALLOC: ana_mem_on_alloc(st, e); break;
    case ANA_MEV_FREE: ana_mem_on_free(st, e); break;
    case ANA_MEV_MAP: ana_mem_on_map(st, e); break;
    case ANA_MEV_UNMAP: ana_mem_on_unmap(st, e); break;
    case ANA_MEV_GPU_ALLOC:
    case ANA_MEV_GPU_FREE: ana_mem_on_gpu(st, e); break;
    default: break;
    }
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
    for (size_t i = 0; i < st->n_slots; i++) {
        const ana_mem_slot *s = &st->slots[i];
        uint64_t k;
        if (!s->live || s->cls != ANA_MEM_DEVICE)
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
        ana_sort(g, n, sizeof(*g), ana_mem_group_cmp);
    *n_out = n;
    return g;
}

static void ana_mem_on_failure(ana_mem_result *res, const ana_mem_state *st, const ana_mev *e,
                               ana_u64map *pending)
{
    res->failures_total++;
    /* Full: the last slot takes the newest, so the failure that ended a run is kept. */
    size_t slot = res->n_failures < ANA_MEM_MAX_FAILURES ? res->n_failures++ : ANA_MEM_MAX_FAILURES - 1;
    ana_mem_failure *f = &res->failures[slot];
    memset(f, 0, sizeof(*f));
    f->ev = *e;
    f->idx = st->now_idx;
    f->live_bytes = st->bytes[ANA_MEM_DEVICE];
    f->host_live_bytes = st->bytes[ANA_MEM_HOST_PINNED];
    ana_u64map_put(pending, e->tid, slot);
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
        res->vmm_peak_bytes = st->vmm_bytes;
        memcpy(res->peak_by_lib, st->lib_bytes, sizeof(res->peak_by_lib));
        *peak_idx = i;
    }
    if (st->bytes[ANA_MEM_HOST_PINNED] > res->host_peak_bytes) {
        res->host_peak_bytes = st->bytes[ANA_MEM_HOST_PINNED];
        res->host_peak_time_ns = e->time_ns;
    }
}

/* The live device allocations whose address lies in each range. */
static void ana_mem_cover(const ana_mem_state *st, ana_mem_range *ranges, size_t n_ranges)
{
    for (size_t r = 0; r < n_ranges; r++) {
        ana_mem_range *g = &ranges[r];
        for (size_t i = 0; i < st->live.cap; i++) {
            const ana_mem_slot *s;
            if (!st->live.used[i] || st->live.keys[i] < g->address ||
                st->live.keys[i] - g->address >= g->size)
                continue;
            s = &st->slots[st->live.vals[i]];
            if (s->cls != ANA_MEM_DEVICE)
                continue;
            g->peak_bytes += s->size;
            g->peak_count++;
        }
    }
}

static void ana_mem_sites_at_peak(const ana_spill *ev, size_t peak_idx, const ana_idset *dup,
                                  ana_mem_range *ranges, size_t n_ranges, ana_mem_result *res)
{
    ana_mem_state st;
    ana_spill_iter it;
    const ana_mev *e;
    ana_mem_state_init(&st, dup);
    ana_spill_iter_begin(&it, ev, 0);
    for (size_t i = 0; i <= peak_idx && (e = ana_spill_iter_next(&it)); i++)
        ana_mem_apply(&st, e, i);
    ana_spill_iter_end(&it);
    res->peak_sites = ana_mem_group_live(&st, &res->n_peak_sites);
    ana_mem_cover(&st, ranges, n_ranges);
    ana_mem_state_free(&st);
}

static int ana_mem_is_call(const ana_mev *e)
{
    return e->corr && (e->type == ANA_MEV_ALLOC || e->type == ANA_MEV_FREE ||
                       e->type == ANA_MEV_MAP || e->type == ANA_MEV_UNMAP);
}

/* The correlation ids of the calls the hooks saw, for GPU_MEMORY de-duplication; the
 * GPU_MEMORY record may come before or after its call, so this is a pass of its own. None
 * are kept when no GPU_MEMORY event needs them; a bit by id when they are dense. */
static void ana_mem_dup_corrs(const ana_spill *ev, ana_idset *dup)
{
    uint64_t lo = UINT64_MAX, hi = 0, calls = 0;
    int gpu = 0;
    ana_spill_iter it;
    const ana_mev *e;
    ana_spill_iter_begin(&it, ev, 0);
    while ((e = ana_spill_iter_next(&it))) {
        gpu |= e->type == ANA_MEV_GPU_ALLOC || e->type == ANA_MEV_GPU_FREE;
        if (ana_mem_is_call(e)) {
            ana_id_span(e->corr, &lo, &hi);
            calls++;
        }
    }
    ana_spill_iter_end(&it);
    ana_idset_init(dup, lo, hi, gpu ? calls : 0);
    if (!gpu)
        return;
    ana_spill_iter_begin(&it, ev, 0);
    while ((e = ana_spill_iter_next(&it)))
        if (ana_mem_is_call(e))
            ana_idset_add(dup, e->corr);
    ana_spill_iter_end(&it);
}

void ana_mem_replay(const ana_mev *ev, size_t n, ana_mem_result *res)
{
    ana_spill s;
    ana_mev_spill_of(&s, ev, n);
    ana_mem_replay_ranges(&s, NULL, 0, res);
}

void ana_mem_replay_ranges(const ana_spill *ev, ana_mem_range *ranges, size_t n_ranges,
                           ana_mem_result *res)
{
    ana_mem_state st;
    ana_u64map pending;
    ana_idset dup;
    ana_spill_iter it;
    const ana_mev *e;
    size_t peak_idx = 0;
    memset(res, 0, sizeof(*res));
    res->failures = ana_xcalloc(ANA_MEM_MAX_FAILURES, sizeof(ana_mem_failure));
    ana_mem_dup_corrs(ev, &dup);
    ana_mem_state_init(&st, &dup);
    st.keep_lives = 1;
    ana_u64map_init(&pending);
    ana_spill_iter_begin(&it, ev, 0);
    for (size_t i = 0; (e = ana_spill_iter_next(&it)); i++) {
        st.now_idx = i;
        if (e->type == ANA_MEV_ALLOC && e->ret != 0)
            ana_mem_on_failure(res, &st, e, &pending);
        else if (e->type == ANA_MEV_MEMINFO)
            ana_mem_on_meminfo(res, e, &pending);
        ana_mem_apply(&st, e, i);
        ana_mem_track_peaks(res, &st, e, i, &peak_idx);
    }
    ana_spill_iter_end(&it);
    res->live_end_bytes = st.bytes[ANA_MEM_DEVICE];
    res->live_end_count = st.count[ANA_MEM_DEVICE];
    res->host_live_end_bytes = st.bytes[ANA_MEM_HOST_PINNED];
    res->host_live_end_count = st.count[ANA_MEM_HOST_PINNED];
    res->unknown_frees = st.unknown_frees;
    res->reused_ptrs = st.reused_ptrs;
    res->vmm_late_releases = st.vmm_late;
    res->gpu_mem_duplicates = st.gpu_dup;
    res->gpu_mem_replayed = st.gpu_replayed;
    res->gpu_mem_ignored = st.gpu_ignored;
    memcpy(res->end_by_lib, st.lib_bytes, sizeof(res->end_by_lib));
    res->leaks = ana_mem_group_live(&st, &res->n_leaks);
    res->lives = st.lives;
    res->n_lives = st.n_lives;
    res->peak_idx = peak_idx;
    st.lives = NULL;
    ana_mem_state_free(&st);
    ana_u64map_free(&pending);
    if (res->peak_bytes > 0)
        ana_mem_sites_at_peak(ev, peak_idx, &dup, ranges, n_ranges, res);
    ana_idset_free(&dup);
}

void ana_mem_result_free(ana_mem_result *res)
{
    free(res->leaks);
    free(res->peak_sites);
    free(res->failures);
    free(res->lives);
    memset(res, 0, sizeof(*res));
}

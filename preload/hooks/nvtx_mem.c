/* nvtx_mem.c — NVTX memory regions (nvToolsExtMem.h) as LABEL records (what 8), for
 * the memory extension of the preload's NVTX injection (nvtx_int.h). Called by the
 * program's NVTX (the slots nvtx.c has it fill, ana_nvtx_mem_fill); calls nvtx_text.c and
 * the core.
 *
 * Heaps are kept in a table (a handle points at its slot); regions of address-based heaps
 * (NVTX_MEM_TYPE_VIRTUAL_ADDRESS) in a lock-free open-addressing table keyed by start
 * address, which gives a region's size to the LABEL that names it and the regions a heap
 * reset ends. A key, once in the table, stays (a region unregistered has size 0). A
 * region's handle is its start address, so regions named or unregistered by handle and by
 * pointer are the same. Other region types are accepted and not recorded.
 *
 * Records: register → LABEL(8, domain, start, size, ""); resize → the same with the new
 * size; name → LABEL(8, domain, start, size as registered or 0, name); unregister, and each
 * live region of a heap reset or unregistered → LABEL(8, domain, start, 0, ""). */
#include "nvtx_int.h"

#define ANA_NVTX_HEAPS 256
#define ANA_NVTX_REGIONS (1u << 16)

typedef struct heap {
    _Atomic int used;
} heap;
static heap heaps[ANA_NVTX_HEAPS];

typedef struct region {
    _Atomic uint64_t addr, size;
    _Atomic uint32_t heap; /* 1 + index in heaps; 0 for the process-wide heap */
} region;
static region regions[ANA_NVTX_REGIONS];

static uint32_t heap_index(nvtxMemHeapHandle_t h)
{
    const heap *p = (const heap *)(void *)h;
    return p >= heaps && p < heaps + ANA_NVTX_HEAPS ? 1 + (uint32_t)(p - heaps) : 0;
}

/* The slot of addr (claimed when `claim`), or NULL: address 0, not found, or table full
 * along addr's probe sequence. */
static region *region_at(uint64_t addr, int claim)
{
    if (!addr)
        return NULL;
    uint64_t h = addr * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < 128; i++) {
        region *r = &regions[(uint32_t)((h >> 40) + i) & (ANA_NVTX_REGIONS - 1)];
        uint64_t k = atomic_load_explicit(&r->addr, memory_order_acquire);
        if (k == addr)
            return r;
        if (k)
            continue;
        if (!claim)
            return NULL;
        if (atomic_compare_exchange_strong(&r->addr, &k, addr) || k == addr)
            return r;
    }
    return NULL;
}

static uint64_t ref_addr(uint32_t type, nvtxMemRegionRef_t ref)
{
    /* A region's handle is its start address: both kinds of reference name the same. */
    return type == NVTX_MEM_REGION_REF_TYPE_POINTER || type == NVTX_MEM_REGION_REF_TYPE_HANDLE
               ? (uint64_t)(uintptr_t)ref.pointer : 0;
}

/* The i-th element of an array of `stride`-byte elements, or NULL when stride is short. */
static const void *elem(const void *base, size_t stride, size_t need, size_t i)
{
    return base && stride >= need ? (const char *)base + stride * i : NULL;
}

static nvtxMemHeapHandle_t NVTX_API ana_MemHeapRegister(nvtxDomainHandle_t d, nvtxMemHeapDesc_t const *desc)
{
    for (int i = 0; i < ANA_NVTX_HEAPS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&heaps[i].used, &free_slot, 1))
            return (nvtxMemHeapHandle_t)(void *)&heaps[i];
    }
    return NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE;
}

/* Ends every region of heap `hi` (LABEL size 0, no name). */
static void heap_clear(nvtxDomainHandle_t d, uint32_t hi)
{
    ana_call c;
    int rec = ana_nvtx_rec_begin(&c);
    for (uint32_t i = 0; i < ANA_NVTX_REGIONS; i++) {
        region *r = &regions[i];
        uint64_t addr = atomic_load(&r->addr), size = atomic_load(&r->size);
        if (!addr || !size || atomic_load(&r->heap) != hi)
            continue;
        atomic_store(&r->size, 0);
        if (rec)
            ana_nvtx_rec_label(&c, ANA_LABEL_MEM_REGION, ana_nvtx_dom_id(d), addr, 0, NULL);
    }
    if (rec)
        ana_leave(&c);
}

static void NVTX_API ana_MemHeapReset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h)
{
    heap_clear(d, heap_index(h));
}

static void NVTX_API ana_MemHeapUnregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h)
{
    uint32_t hi = heap_index(h);
    if (!hi)
        return; /* the process-wide heap cannot be unregistered */
    heap_clear(d, hi);
    atomic_store(&heaps[hi - 1].used, 0);
}

static void NVTX_API ana_MemRegionsRegister(nvtxDomainHandle_t d, nvtxMemRegionsRegisterBatch_t const *b)
{
    if (!b || b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS)
        return;
    ana_call c;
    int rec = ana_nvtx_rec_begin(&c);
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemVirtualRangeDesc_t *v =
            elem(b->regionDescElements, b->regionDescElementSize, sizeof(*v), i);
        if (!v)
            break;
        uint64_t addr = (uint64_t)(uintptr_t)v->ptr;
        region *r = region_at(addr, 1);
        if (r) {
            atomic_store(&r->heap, heap_index(b->heap));
            atomic_store(&r->size, v->size);
        }
        if (b->regionHandleElementsOut)
            b->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)(uintptr_t)v->ptr;
        if (rec)
            ana_nvtx_rec_label(&c, ANA_LABEL_MEM_REGION, ana_nvtx_dom_id(d), addr, v->size, NULL);
    }
    if (rec)
        ana_leave(&c);
}

static void NVTX_API ana_MemRegionsResize(nvtxDomainHandle_t d, nvtxMemRegionsResizeBatch_t const *b)
{
    if (!b || b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS)
        return;
    ana_call c;
    int rec = ana_nvtx_rec_begin(&c);
    for (size_t i = 0; i < b->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *v =
            elem(b->regionDescElements, b->regionDescElementSize, sizeof(*v), i);
        if (!v)
            break;
        uint64_t addr = (uint64_t)(uintptr_t)v->ptr;
        region *r = region_at(addr, 0);
        if (r)
            atomic_store(&r->size, v->size);
        if (rec)
            ana_nvtx_rec_label(&c, ANA_LABEL_MEM_REGION, ana_nvtx_dom_id(d), addr, v->size, NULL);
    }
    if (rec)
        ana_leave(&c);
}

static void NVTX_API ana_MemRegionsUnregister(nvtxDomainHandle_t d, nvtxMemRegionsUnregisterBatch_t const *b)
{
    if (!b)
        return;
    ana_call c;
    int rec = ana_nvtx_rec_begin(&c);
    for (size_t i = 0; i < b->refCount; i++) {
        const nvtxMemRegionRef_t *ref = elem(b->refElements, b->refElementSize, sizeof(*ref), i);
        uint64_t addr = ref ? ref_addr(b->refType, *ref) : 0;
        if (!addr)
            break;
        region *r = region_at(addr, 0);
        if (r)
            atomic_store(&r->size, 0);
        if (rec)
            ana_nvtx_rec_label(&c, ANA_LABEL_MEM_REGION, ana_nvtx_dom_id(d), addr, 0, NULL);
    }
    if (rec)
        ana_leave(&c);
}

static void NVTX_API ana_MemRegionsName(nvtxDomainHandle_t d, nvtxMemRegionsNameBatch_t const *b)
{
    if (!b)
        return;
    ana_call c;
    if (!ana_nvtx_rec_begin(&c))
        return;
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemRegionNameDesc_t *n = elem(b->regionElements, b->regionElementSize, sizeof(*n), i);
        uint64_t addr = n ? ref_addr(n->regionRefType, n->region) : 0;
        if (!addr)
            break;
        region *r = region_at(addr, 0);
        ana_nvtx_text t;
        ana_nvtx_text_of(&t, (int32_t)n->nameType, n->name);
        uint64_t size = r ? atomic_load(&r->size) : 0;
        ana_nvtx_rec_label(&c, ANA_LABEL_MEM_REGION, ana_nvtx_dom_id(d), addr, size, &t);
    }
    ana_leave(&c);
}

/* Fills the memory extension's slots (segment 1 of module NVTX_EXT_MODULEID_MEM). */
void ana_nvtx_mem_fill(intptr_t *slots, size_t n)
{
#define M(name) { NVTX3EXT_CBID_nvtx##name, (intptr_t)ana_##name }
    static const struct { unsigned id; intptr_t fn; } fns[] = {
        M(MemHeapRegister), M(MemHeapUnregister), M(MemHeapReset), M(MemRegionsRegister),
        M(MemRegionsResize), M(MemRegionsUnregister), M(MemRegionsName) };
#undef M
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (slots && fns[i].id < n)
            slots[fns[i].id] = fns[i].fn;
}


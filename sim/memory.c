/*
 * memory.c — simulated device memory: the allocation table, capacity accounting, the
 * device-model side of every allocation and free (anasim_mem_*, called by the sim's
 * libcuda.so.1, which the runtime's cudaMalloc & co call in turn: see malloc.c), the
 * ranges cuMemMap makes device memory, the CUPTI memory activity records, host
 * registration and cudaPointerGetAttributes.
 *
 * Every allocation is its own mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE) so that
 * untouched device memory costs no host RAM (an 80 GiB device works on a 24 GiB host).
 * Device and managed allocations are charged against the capacity in multiples of
 * ANA_SIM_ALLOC_GRANULE; pinned host memory, registered memory and module variables
 * are not; cuMemCreate handles are charged by the driver through anasim_vmm_charge.
 * Freed mappings of up to 1 MiB are kept in a small cache and handed out again
 * (a real cudaMalloc does not return zeroed memory either): an mmap/munmap pair per
 * allocation would make the sim's own cost, and its TLB shootdowns when the process has
 * several threads, swamp what it is used to measure. The table is an array sorted by
 * base address: exact lookups for free and range lookups (interior pointers) for copies
 * and pointer attributes.
 *
 * Activity records are built only when an observer wants them, after the device lock is
 * dropped, with the correlation id of the API call in flight.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct ana_sim_mem *regions;
static size_t nregions, cap_regions;
static uint64_t used_bytes;                /* sum of `charged`, plus cuMemCreate handles */
static uint64_t epoch = 1;                 /* bumped by cudaDeviceReset */
static uint64_t pool_used;                 /* bytes allocated from the default pool */
static int pool_announced;                 /* MEMORY_POOL CREATED record sent */

/* The device has one memory pool, its default pool; its handle is this address. */
static char default_pool;

int ana_sim_mem_pool_valid(const void *pool) { return pool == (const void *)&default_pool; }

#define MAP_CACHE_SLOTS 64
#define MAP_CACHE_MAX_LEN (1u << 20)
static struct { void *base; size_t len; } map_cache[MAP_CACHE_SLOTS];
static size_t map_cached;

/* A mapping of exactly len bytes: from the cache, else a new one. Caller holds the lock. */
static void *map_get(size_t len)
{
    for (size_t i = 0; i < map_cached; i++)
        if (map_cache[i].len == len) {
            void *p = map_cache[i].base;
            map_cache[i] = map_cache[--map_cached];
            return p;
        }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Gives a mapping back: kept for reuse when small and there is room, else unmapped. */
static void map_put(void *p, size_t len)
{
    if (len <= MAP_CACHE_MAX_LEN && map_cached < MAP_CACHE_SLOTS) {
        map_cache[map_cached].base = p;
        map_cache[map_cached++].len = len;
        return;
    }
    munmap(p, len);
}

/* Index of the first region whose base is > p. */
static size_t upper_bound(const void *p)
{
    size_t lo = 0, hi = nregions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((const char *)regions[mid].base <= (const char *)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct ana_sim_mem *ana_sim_mem_find_locked(const void *p)
{
    size_t i = upper_bound(p);
    if (i == 0 || !p)
        return NULL;
    const struct ana_sim_mem *m = &regions[i - 1];
    size_t extent = m->size ? m->size : 1;
    return (const char *)p < m->base + extent ? m : NULL;
}

int ana_sim_mem_holds(const struct ana_sim_mem *m, const void *p, size_t n)
{
    return m && n <= m->size - (size_t)((const char *)p - m->base);
}

int ana_sim_mem_device_range_locked(const void *p, size_t n)
{
    return ana_sim_mem_holds(ana_sim_mem_find_locked(p), p, n);
}

CUpti_ActivityMemoryKind ana_sim_mem_activity_kind(enum ana_sim_mem_kind kind)
{
    switch (kind) {
    case ANA_SIM_MEM_DEVICE:
    case ANA_SIM_MEM_VMM:            return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case ANA_SIM_MEM_MANAGED:        return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    case ANA_SIM_MEM_HOST:
    case ANA_SIM_MEM_REGISTERED:     return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case ANA_SIM_MEM_SYMBOL:         return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
    case ANA_SIM_MEM_SYMBOL_MANAGED: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
    }
    return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

static const struct ana_sim_mem *find_exact(const void *p)
{
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(p);
    return m && m->base == p ? m : NULL;
}

int ana_sim_mem_overlaps_locked(const void *p, size_t n)
{
    size_t i = upper_bound((const char *)p + n - 1); /* regions[i-1]: last base < p+n */
    if (i == 0)
        return 0;
    const struct ana_sim_mem *m = &regions[i - 1];
    return m->base + (m->size ? m->size : 1) > (const char *)p;
}

cudaError_t ana_sim_mem_add_locked(const struct ana_sim_mem *m)
{
    if (nregions == cap_regions) {
        size_t cap = cap_regions ? cap_regions * 2 : 256;
        struct ana_sim_mem *r = realloc(regions, cap * sizeof(*r));
        if (!r)
            return cudaErrorMemoryAllocation;
        regions = r;
        cap_regions = cap;
    }
    size_t i = upper_bound(m->base);
    memmove(&regions[i + 1], &regions[i], (nregions - i) * sizeof(*regions));
    regions[i] = *m;
    nregions++;
    used_bytes += m->charged;
    return cudaSuccess;
}

void ana_sim_mem_remove_locked(const void *base)
{
    const struct ana_sim_mem *m = find_exact(base);
    if (!m)
        return;
    size_t i = (size_t)(m - regions);
    used_bytes -= m->charged;
    if (m->map_len)
        map_put(m->base, m->map_len);
    memmove(&regions[i], &regions[i + 1], (nregions - i - 1) * sizeof(*regions));
    nregions--;
}

void ana_sim_mem_reset_locked(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < nregions; i++) {
        struct ana_sim_mem *m = &regions[i];
        if (m->kind == ANA_SIM_MEM_SYMBOL || m->kind == ANA_SIM_MEM_SYMBOL_MANAGED) {
            regions[kept++] = *m;
            continue;
        }
        if (m->map_len)
            munmap(m->base, m->map_len);
    }
    nregions = kept;
    used_bytes = 0;
    pool_used = 0;
    pool_announced = 0;
    epoch++;
}


/* ---- activity records --------------------------------------------------------------- */

/* What a MEMORY2 record says; built under the lock, sent after it is dropped. */
struct mem_event {
    CUpti_ActivityMemoryOperationType op;
    CUpti_ActivityMemoryKind kind;
    uint64_t address, bytes;
    int async;
    uint32_t stream_id;
    int from_pool;          /* fill memoryPoolConfig */
    uint64_t pool_used;     /* after the operation */
    int announce_pool;      /* first use of the default pool: MEMORY_POOL CREATED first */
};

#define FROM_POOL 0x80000000u   /* ana_sim_mem.flags: allocated from the default pool */

static void announce_pool(uint32_t correlation)
{
    CUpti_ActivityMemoryPool3 r;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    r.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
    r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    r.correlationId = correlation;
    r.processId = anasim_pid();
    r.deviceId = 0;
    r.address = (uint64_t)(uintptr_t)&default_pool;
    r.timestamp = ana_sim_now_ns();
    ana_sim_activity((const CUpti_Activity *)&r);
}

static void emit(const struct mem_event *e)
{
    uint32_t correlation = ana_sim_correlation();
    uint64_t want = ana_sim_wanted_kinds();
    if (e->announce_pool && ANA_SIM_WANTS(want, CUPTI_ACTIVITY_KIND_MEMORY_POOL))
        announce_pool(correlation);
    if (!ANA_SIM_WANTS(want, CUPTI_ACTIVITY_KIND_MEMORY2))
        return;
    CUpti_ActivityMemory4 r;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = e->op;
    r.memoryKind = e->kind;
    r.correlationId = correlation;
    r.address = e->address;
    r.bytes = e->bytes;
    r.timestamp = ana_sim_now_ns();
    r.processId = anasim_pid();
    r.deviceId = 0;
    r.contextId = 1;
    r.streamId = e->stream_id;
    r.isAsync = (uint32_t)e->async;
    if (e->from_pool) {
        r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        r.memoryPoolConfig.address = (uint64_t)(uintptr_t)&default_pool;
        r.memoryPoolConfig.releaseThreshold = 0;
        r.memoryPoolConfig.pool.size = e->pool_used;
        r.memoryPoolConfig.utilizedSize = e->pool_used;
    }
    ana_sim_activity((const CUpti_Activity *)&r);
}

/* ---- the device model's allocations (anasim.h) ------------------------------------- */

static const struct {
    enum ana_sim_mem_kind kind;
    int charged;
} kinds[] = {
    [ANASIM_MEM_DEVICE] = { ANA_SIM_MEM_DEVICE, 1 },
    [ANASIM_MEM_MANAGED] = { ANA_SIM_MEM_MANAGED, 1 },
    [ANASIM_MEM_PINNED] = { ANA_SIM_MEM_HOST, 0 },
};

/* Resolves the stream of a stream-ordered call; its id goes into the record. */
static CUresult async_stream_locked(CUstream h, int ptsz, uint32_t *id)
{
    struct ana_sim_stream *s;
    if (ana_sim_stream_resolve_locked((cudaStream_t)h, ptsz, &s) != cudaSuccess)
        return CUDA_ERROR_INVALID_HANDLE;
    *id = ana_sim_stream_id_locked(s);
    return CUDA_SUCCESS;
}

/* Maps (whole pages) and records a region; charged kinds fail when the device is full. */
static CUresult add_allocation_locked(const anasim_alloc *req, size_t charge, size_t page,
                                      void **out)
{
    if (charge > ana_sim_capacity_locked() - used_bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t len = anasim_round_up(req->size, page);
    void *p = map_get(len);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned flags = req->flags | (req->async ? FROM_POOL : 0);
    struct ana_sim_mem m = { p, req->size, charge, len, kinds[req->kind].kind, flags };
    if (ana_sim_mem_add_locked(&m) != cudaSuccess) {
        map_put(p, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = p;
    return CUDA_SUCCESS;
}

ANASIM_PRIVATE_API CUresult anasim_mem_alloc(const anasim_alloc *req, void **out)
{
    if (!req || !out || req->size == 0 || (unsigned)req->kind > ANASIM_MEM_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (req->size > SIZE_MAX - page - ANA_SIM_ALLOC_GRANULE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t granule = ANA_SIM_ALLOC_GRANULE;
    size_t charge = kinds[req->kind].charged ? anasim_round_up(req->size, granule) : 0;
    struct mem_event ev = { CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                            ana_sim_mem_activity_kind(kinds[req->kind].kind), 0, req->size,
                            req->async, 0, req->async, 0, 0 };
    CUresult err = CUDA_SUCCESS;
    void *p = NULL;
    ana_sim_enter();
    if (req->async && req->pool && !ana_sim_mem_pool_valid(req->pool))
        err = CUDA_ERROR_INVALID_VALUE;
    if (err == CUDA_SUCCESS && req->async)
        err = async_stream_locked(req->stream, req->ptsz, &ev.stream_id);
    if (err == CUDA_SUCCESS)
        err = add_allocation_locked(req, charge, page, &p);
    if (err == CUDA_SUCCESS && req->async) {
        pool_used += charge;
        ev.pool_used = pool_used;
        ev.announce_pool = !pool_announced;
        pool_announced = 1;
    }
    ana_sim_leave();
    if (err != CUDA_SUCCESS)
        return err;
    *out = p;
    ev.address = (uint64_t)(uintptr_t)p;
    emit(&ev);
    return CUDA_SUCCESS;
}

ANASIM_PRIVATE_API CUresult anasim_mem_free(void *p, int host, int async, CUstream stream,
                                            int ptsz)
{
    struct mem_event ev = { CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                            CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, (uint64_t)(uintptr_t)p, 0,
                            async, 0, 0, 0, 0 };
    CUresult err = CUDA_SUCCESS;
    ana_sim_enter();
    if (async)
        err = async_stream_locked(stream, ptsz, &ev.stream_id);
    const struct ana_sim_mem *m = p ? find_exact(p) : NULL;
    if (err == CUDA_SUCCESS && p) {
        int ok = m && (host ? m->kind == ANA_SIM_MEM_HOST
                            : m->kind == ANA_SIM_MEM_DEVICE || m->kind == ANA_SIM_MEM_MANAGED);
        if (!ok)
            err = CUDA_ERROR_INVALID_VALUE;
    }
    if (err == CUDA_SUCCESS && m) {
        ev.kind = ana_sim_mem_activity_kind(m->kind);
        ev.bytes = m->size;
        if (m->flags & FROM_POOL) {
            pool_used -= m->charged;
            ev.from_pool = 1;
            ev.pool_used = pool_used;
        }
        ana_sim_mem_remove_locked(p);
    }
    ana_sim_leave();
    if (err == CUDA_SUCCESS && p)
        emit(&ev);
    return err;
}

ANASIM_PRIVATE_API void anasim_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    ana_sim_enter();
    uint64_t cap = ana_sim_capacity_locked();
    *total_bytes = (size_t)cap;
    *free_bytes = (size_t)(cap > used_bytes ? cap - used_bytes : 0);
    ana_sim_leave();
}

ANASIM_PRIVATE_API CUresult anasim_mem_range(const void *p, void **base, size_t *size)
{
    CUresult err = CUDA_ERROR_NOT_FOUND;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(p);
    if (m && m->kind != ANA_SIM_MEM_REGISTERED) {
        if (base)
            *base = m->base;
        if (size)
            *size = m->size;
        err = CUDA_SUCCESS;
    }
    ana_sim_leave();
    return err;
}

/* ---- virtual memory management (cuMemCreate, cuMemMap) ------------------------------ */

ANASIM_PRIVATE_API CUresult anasim_vmm_charge(size_t bytes, uint64_t *charge_epoch)
{
    CUresult err = CUDA_SUCCESS;
    ana_sim_enter();
    if (bytes > ana_sim_capacity_locked() - used_bytes) {
        err = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        used_bytes += bytes;
        *charge_epoch = epoch;
    }
    ana_sim_leave();
    if (err == CUDA_SUCCESS) {
        struct mem_event ev = { CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, bytes, 0, 0, 0, 0, 0 };
        emit(&ev);
    }
    return err;
}

ANASIM_PRIVATE_API void anasim_vmm_uncharge(size_t bytes, uint64_t charge_epoch)
{
    ana_sim_enter();
    int current = charge_epoch == epoch;
    if (current)
        used_bytes -= bytes < used_bytes ? bytes : used_bytes;
    ana_sim_leave();
    if (current) {
        struct mem_event ev = { CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                                CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, bytes, 0, 0, 0, 0, 0 };
        emit(&ev);
    }
}

/* Index of the mapped range ending exactly at p, or nregions. */
static size_t vmm_ending_at(const char *p)
{
    size_t i = upper_bound(p - 1);
    if (i == 0)
        return nregions;
    struct ana_sim_mem *m = &regions[i - 1];
    return m->kind == ANA_SIM_MEM_VMM && m->base + m->size == p ? i - 1 : nregions;
}

ANASIM_PRIVATE_API CUresult anasim_vmm_map(void *va, size_t size)
{
    char *lo = va, *hi = lo + size;
    CUresult err = CUDA_SUCCESS;
    ana_sim_enter();
    if (ana_sim_mem_overlaps_locked(lo, size)) {
        err = CUDA_ERROR_INVALID_VALUE;   /* overlaps something the table knows */
        goto out;
    }
    size_t i = upper_bound(lo);           /* the first region above lo */
    size_t prev = vmm_ending_at(lo);
    int next = i < nregions && regions[i].base == hi && regions[i].kind == ANA_SIM_MEM_VMM;
    if (prev < nregions) {                /* grow the range below, absorb the one above */
        regions[prev].size += size;
        if (next) {
            regions[prev].size += regions[i].size;
            ana_sim_mem_remove_locked(regions[i].base);
        }
    } else if (next) {                    /* grow the range above downwards */
        regions[i].base = lo;
        regions[i].size += size;
    } else {
        struct ana_sim_mem m = { lo, size, 0, 0, ANA_SIM_MEM_VMM, 0 };
        if (ana_sim_mem_add_locked(&m) != cudaSuccess)
            err = CUDA_ERROR_OUT_OF_MEMORY;
    }
out:
    ana_sim_leave();
    return err;
}

ANASIM_PRIVATE_API void anasim_vmm_unmap(void *va, size_t size)
{
    char *lo = va, *hi = lo + size;
    ana_sim_enter();
    const struct ana_sim_mem *c = ana_sim_mem_find_locked(lo);
    if (c && c->kind == ANA_SIM_MEM_VMM && hi <= c->base + c->size) {
        struct ana_sim_mem *m = &regions[c - regions];
        char *end = m->base + m->size;
        if (m->base == lo && end == hi) {
            ana_sim_mem_remove_locked(lo);
        } else if (m->base == lo) {
            m->base = hi;
            m->size = (size_t)(end - hi);
        } else {
            m->size = (size_t)(lo - m->base);
            if (hi < end) {
                struct ana_sim_mem right = { hi, (size_t)(end - hi), 0, 0, ANA_SIM_MEM_VMM, 0 };
                ana_sim_mem_add_locked(&right);
            }
        }
    }
    /* Not found: cudaDeviceReset already forgot the range. */
    ana_sim_leave();
}

/* ---- the default memory pool -------------------------------------------------------- */

ANA_SIM_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool)
        return ana_sim_ret(cudaErrorInvalidValue);
    if (device != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)(void *)&default_pool;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    return cudaDeviceGetDefaultMemPool(memPool, device);
}

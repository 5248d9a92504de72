/*
 * memory.c — simulated device memory: the allocation table, capacity accounting, the
 * allocation/free entry points, cudaMemGetInfo and cudaPointerGetAttributes.
 *
 * Every allocation is its own mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE) so that
 * untouched device memory costs no host RAM (an 80 GiB device works on a 24 GiB host).
 * Device and managed allocations are charged against the capacity in multiples of
 * ANA_SIM_ALLOC_GRANULE; pinned host memory, registered memory and module variables
 * are not. Freed mappings of up to 1 MiB are kept in a small cache and handed out again
 * (a real cudaMalloc does not return zeroed memory either): an mmap/munmap pair per
 * allocation would make the sim's own cost, and its TLB shootdowns when the process has
 * several threads, swamp what it is used to measure. The table is an array sorted by base address: exact lookups for free and
 * range lookups (interior pointers) for copies and pointer attributes.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct ana_sim_mem *regions;
static size_t nregions, cap_regions;
static uint64_t used_bytes;                /* sum of `charged` */

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

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

int ana_sim_mem_device_range_locked(const void *p, size_t n)
{
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(p);
    return m && n <= m->size - (size_t)((const char *)p - m->base);
}

static const struct ana_sim_mem *find_exact(const void *p)
{
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(p);
    return m && m->base == p ? m : NULL;
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
}

/* Allocates and records a region; charged kinds fail when the device is full. */
static cudaError_t alloc_region(void **out, size_t size, enum ana_sim_mem_kind kind,
                                unsigned flags)
{
    int charged = kind == ANA_SIM_MEM_DEVICE || kind == ANA_SIM_MEM_MANAGED;
    size_t charge = charged ? round_up(size, ANA_SIM_ALLOC_GRANULE) : 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page - ANA_SIM_ALLOC_GRANULE)
        return cudaErrorMemoryAllocation;
    ana_sim_enter();
    cudaError_t err = cudaSuccess;
    if (charge > ana_sim_capacity_locked() - used_bytes) {
        err = cudaErrorMemoryAllocation;
        goto out;
    }
    size_t len = round_up(size, page);
    void *p = map_get(len);
    if (!p) {
        err = cudaErrorMemoryAllocation;
        goto out;
    }
    struct ana_sim_mem m = { p, size, charge, len, kind, flags };
    err = ana_sim_mem_add_locked(&m);
    if (err != cudaSuccess) {
        map_put(p, len);
        goto out;
    }
    *out = p;
out:
    ana_sim_leave();
    return err;
}

/* Frees a region of one of the two accepted kinds; NULL is a no-op success. */
static cudaError_t free_region(void *p, enum ana_sim_mem_kind a, enum ana_sim_mem_kind b)
{
    if (!p)
        return cudaSuccess;
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = find_exact(p);
    if (m && (m->kind == a || m->kind == b)) {
        ana_sim_mem_remove_locked(p);
        err = cudaSuccess;
    }
    ana_sim_leave();
    return err;
}

/* ---- device allocations --------------------------------------------------------- */

static cudaError_t malloc_device(void **devPtr, size_t size)
{
    if (!devPtr)
        return cudaErrorInvalidValue;
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    return alloc_region(devPtr, size, ANA_SIM_MEM_DEVICE, 0);
}

ANA_SIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    return ana_sim_ret(malloc_device(devPtr, size));
}

ANA_SIM_API cudaError_t cudaFree(void *devPtr)
{
    return ana_sim_ret(free_region(devPtr, ANA_SIM_MEM_DEVICE, ANA_SIM_MEM_MANAGED));
}

static cudaError_t check_stream(cudaStream_t stream, int ptsz)
{
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    ana_sim_leave();
    return err;
}

/* Stream-ordered allocation: the memory is usable at once, so ordering is moot. */
ANA_SIM_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    cudaError_t err = check_stream(stream, 0);
    return ana_sim_ret(err != cudaSuccess ? err : malloc_device(devPtr, size));
}

ANA_SIM_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream)
{
    cudaError_t err = check_stream(stream, 1);
    return ana_sim_ret(err != cudaSuccess ? err : malloc_device(devPtr, size));
}

ANA_SIM_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    cudaError_t err = check_stream(stream, 0);
    return ana_sim_ret(err != cudaSuccess ? err
                       : free_region(devPtr, ANA_SIM_MEM_DEVICE, ANA_SIM_MEM_MANAGED));
}

ANA_SIM_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream)
{
    cudaError_t err = check_stream(stream, 1);
    return ana_sim_ret(err != cudaSuccess ? err
                       : free_region(devPtr, ANA_SIM_MEM_DEVICE, ANA_SIM_MEM_MANAGED));
}

/* The device has one memory pool, its default pool; its handle is this address. */
static char default_pool;

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

ANA_SIM_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
                                                cudaMemPool_t memPool, cudaStream_t stream)
{
    if (memPool != (cudaMemPool_t)(void *)&default_pool)
        return ana_sim_ret(cudaErrorInvalidValue);
    return cudaMallocAsync(ptr, size, stream);
}

ANA_SIM_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
                                                     cudaMemPool_t memPool,
                                                     cudaStream_t stream)
{
    if (memPool != (cudaMemPool_t)(void *)&default_pool)
        return ana_sim_ret(cudaErrorInvalidValue);
    return cudaMallocAsync_ptsz(ptr, size, stream);
}

ANA_SIM_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
                                        size_t height)
{
    if (!devPtr || !pitch)
        return ana_sim_ret(cudaErrorInvalidValue);
    size_t p = round_up(width, ANA_SIM_PITCH_ALIGN);
    if (height && p > SIZE_MAX / height)
        return ana_sim_ret(cudaErrorMemoryAllocation);
    cudaError_t err = malloc_device(devPtr, p * height);
    if (err == cudaSuccess)
        *pitch = p;
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr || size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return ana_sim_ret(cudaErrorInvalidValue);
    return ana_sim_ret(alloc_region(devPtr, size, ANA_SIM_MEM_MANAGED, flags));
}

/* ---- pinned and registered host memory ------------------------------------------ */

ANA_SIM_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped |
                           cudaHostAllocWriteCombined;
    if (!pHost || (flags & ~known))
        return ana_sim_ret(cudaErrorInvalidValue);
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    return ana_sim_ret(alloc_region(pHost, size, ANA_SIM_MEM_HOST, flags));
}

ANA_SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

ANA_SIM_API cudaError_t cudaFreeHost(void *ptr)
{
    return ana_sim_ret(free_region(ptr, ANA_SIM_MEM_HOST, ANA_SIM_MEM_HOST));
}

ANA_SIM_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    const unsigned known = cudaHostRegisterPortable | cudaHostRegisterMapped |
                           cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
    if (!ptr || size == 0 || (flags & ~known))
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    size_t i = upper_bound((const char *)ptr + size - 1);
    if (i > 0 && regions[i - 1].base + regions[i - 1].size > (char *)ptr) {
        err = cudaErrorHostMemoryAlreadyRegistered;
    } else {
        struct ana_sim_mem m = { ptr, size, 0, 0, ANA_SIM_MEM_REGISTERED, flags };
        err = ana_sim_mem_add_locked(&m);
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaHostUnregister(void *ptr)
{
    cudaError_t err = cudaErrorHostMemoryNotRegistered;
    ana_sim_enter();
    const struct ana_sim_mem *m = find_exact(ptr);
    if (m && m->kind == ANA_SIM_MEM_REGISTERED) {
        ana_sim_mem_remove_locked(ptr);
        err = cudaSuccess;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

/* Unified addressing: the device address of pinned or registered memory is its host
 * address (canUseHostPointerForRegisteredMem = 1). */
ANA_SIM_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost,
                                                 unsigned int flags)
{
    if (!pDevice || flags != 0)
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(pHost);
    if (m && (m->kind == ANA_SIM_MEM_HOST || m->kind == ANA_SIM_MEM_REGISTERED)) {
        *pDevice = pHost;
        err = cudaSuccess;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    if (!pFlags)
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(pHost);
    if (m && m->kind == ANA_SIM_MEM_HOST) {
        *pFlags = m->flags;
        err = cudaSuccess;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

/* ---- queries and hints ---------------------------------------------------------- */

ANA_SIM_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    if (!free || !total)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    uint64_t cap = ana_sim_capacity_locked();
    *total = (size_t)cap;
    *free = (size_t)(cap > used_bytes ? cap - used_bytes : 0);
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                                 const void *ptr)
{
    if (!attributes)
        return ana_sim_ret(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof(*attributes));
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(ptr);
    if (m) {
        void *p = (void *)ptr;
        attributes->device = 0;
        switch (m->kind) {
        case ANA_SIM_MEM_DEVICE:
        case ANA_SIM_MEM_SYMBOL:
            attributes->type = cudaMemoryTypeDevice;
            attributes->devicePointer = p;
            break;
        case ANA_SIM_MEM_MANAGED:
        case ANA_SIM_MEM_SYMBOL_MANAGED:
            attributes->type = cudaMemoryTypeManaged;
            attributes->devicePointer = attributes->hostPointer = p;
            break;
        case ANA_SIM_MEM_HOST:
        case ANA_SIM_MEM_REGISTERED:
            attributes->type = cudaMemoryTypeHost;
            attributes->devicePointer = attributes->hostPointer = p;
            break;
        }
    }
    ana_sim_leave();
    return cudaSuccess;
}

static cudaError_t check_managed_range(const void *devPtr, size_t count)
{
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(devPtr);
    if (m && ana_sim_mem_device_range_locked(devPtr, count))
        err = cudaSuccess;
    ana_sim_leave();
    return err;
}

/* Hints only: there is one memory, so nothing migrates. */
ANA_SIM_API cudaError_t cudaMemAdvise(const void *devPtr, size_t count,
                                      enum cudaMemoryAdvise advice,
                                      struct cudaMemLocation location)
{
    return ana_sim_ret(check_managed_range(devPtr, count));
}

static cudaError_t prefetch(const void *devPtr, size_t count, cudaStream_t stream, int ptsz)
{
    cudaError_t err = check_stream(stream, ptsz);
    return err != cudaSuccess ? err : check_managed_range(devPtr, count);
}

ANA_SIM_API cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count,
                                             struct cudaMemLocation location,
                                             unsigned int flags, cudaStream_t stream)
{
    return ana_sim_ret(prefetch(devPtr, count, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count,
                                                  struct cudaMemLocation location,
                                                  unsigned int flags, cudaStream_t stream)
{
    return ana_sim_ret(prefetch(devPtr, count, stream, 1));
}

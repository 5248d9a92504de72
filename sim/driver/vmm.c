/*
 * vmm.c — virtual memory management: cuMemGetAllocationGranularity, cuMemCreate,
 * cuMemRelease, cuMemAddressReserve, cuMemAddressFree, cuMemMap, cuMemUnmap,
 * cuMemSetAccess — what PyTorch's expandable segments are built on.
 *
 * A physical handle is a memfd of its size (untouched pages cost no host RAM) and is
 * charged against the device capacity when created (anasim_vmm_charge). A reserved range
 * is an mmap(PROT_NONE) of address space. cuMemMap maps the handle's memfd over part of a
 * reservation (MAP_FIXED|MAP_SHARED, readable and writable at once) and tells the device
 * model that the range is device memory (anasim_vmm_map), so the runtime's copies, sets
 * and pointer attributes accept it; cuMemUnmap puts PROT_NONE address space back. As
 * NVIDIA documents, a handle's memory is given back only when it has been released AND is
 * no longer mapped. cuMemSetAccess validates (the range must be mapped) but changes
 * nothing: the sim never faults on a device access.
 *
 * Objects live in small linked lists behind one mutex, which is never held across
 * anasim_vmm_charge/uncharge (they call the observer, which may call the driver).
 */
#define _GNU_SOURCE
#include "driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define GRAN ((size_t)ANA_DRV_GRANULARITY)

struct handle {
    CUmemGenericAllocationHandle id;
    int fd;
    size_t size;
    unsigned maps;          /* mappings using it */
    int released;           /* cuMemRelease was called */
    uint64_t epoch;         /* of its charge (anasim_vmm_charge) */
    struct handle *next;
};

struct range {              /* a reservation or a mapping */
    char *base;
    size_t size;
    struct handle *h;       /* mappings only */
    struct range *next;
};

static pthread_mutex_t vmm_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct handle *handles;
static struct range *reservations, *mappings;
static CUmemGenericAllocationHandle next_id = 1;

static int aligned(size_t v) { return v % GRAN == 0; }

static struct handle *find_handle_locked(CUmemGenericAllocationHandle id)
{
    for (struct handle *h = handles; h; h = h->next)
        if (h->id == id)
            return h;
    return NULL;
}

static void unlink_handle_locked(struct handle *h)
{
    for (struct handle **pp = &handles; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            return;
        }
}

/* Gives a handle's memory back (after the mutex is dropped). */
static void destroy_handle(struct handle *h)
{
    close(h->fd);
    anasim_vmm_uncharge(h->size, h->epoch);
    free(h);
}

/* The only allocation the device offers: pinned memory on device 0. */
static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return prop->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* ---- granularity, physical handles ------------------------------------------------- */

static CUresult granularity(size_t *g, const CUmemAllocationProp *prop,
                            CUmemAllocationGranularity_flags option)
{
    if (!g || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
               option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_prop(prop);
    if (r == CUDA_SUCCESS)
        *g = GRAN;
    return r;
}

ANA_DRV_API CUresult cuMemGetAllocationGranularity(size_t *granularity_out,
        const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option)
{
    cuMemGetAllocationGranularity_params p = { .granularity = granularity_out, .prop = prop,
                                               .option = option };
    ANA_DRV_RETURN_INIT(cuMemGetAllocationGranularity, &p,
                        granularity(granularity_out, prop, option));
}

static CUresult create(CUmemGenericAllocationHandle *out, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!out || flags != 0 || size == 0 || !aligned(size))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return r;
    struct handle *h = calloc(1, sizeof(*h));
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = anasim_vmm_charge(size, &h->epoch)) != CUDA_SUCCESS) {
        free(h);
        return r;
    }
    h->size = size;
    h->fd = memfd_create("anatomist-sim-vmm", MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
        if (h->fd >= 0)
            close(h->fd);
        anasim_vmm_uncharge(size, h->epoch);
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&vmm_mutex);
    h->id = next_id++;
    h->next = handles;
    handles = h;
    *out = h->id;
    pthread_mutex_unlock(&vmm_mutex);
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags)
{
    cuMemCreate_params p = { .handle = handle, .size = size, .prop = prop, .flags = flags };
    ANA_DRV_RETURN_INIT(cuMemCreate, &p, create(handle, size, prop, flags));
}

static CUresult release(CUmemGenericAllocationHandle id)
{
    CUresult r = CUDA_SUCCESS;
    struct handle *gone = NULL;
    pthread_mutex_lock(&vmm_mutex);
    struct handle *h = find_handle_locked(id);
    if (!h || h->released) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        h->released = 1;
        if (h->maps == 0) {
            unlink_handle_locked(h);
            gone = h;
        }
    }
    pthread_mutex_unlock(&vmm_mutex);
    if (gone)
        destroy_handle(gone);
    return r;
}

ANA_DRV_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    cuMemRelease_params p = { .handle = handle };
    ANA_DRV_RETURN_INIT(cuMemRelease, &p, release(handle));
}

/* ---- address reservations ----------------------------------------------------------- */

static CUresult reserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                        unsigned long long flags)
{
    if (!ptr || size == 0 || !aligned(size) || flags != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > GRAN ? alignment : GRAN;
    if (size > SIZE_MAX - align)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Over-reserve, then trim to an aligned range; `addr` is only a hint. */
    char *raw = mmap(anasim_ptr(addr), size + align, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    char *base = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (base > raw)
        munmap(raw, (size_t)(base - raw));
    if (raw + size + align > base + size)
        munmap(base + size, (size_t)(raw + size + align - (base + size)));
    struct range *res = calloc(1, sizeof(*res));
    if (!res) {
        munmap(base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    res->base = base;
    res->size = size;
    pthread_mutex_lock(&vmm_mutex);
    res->next = reservations;
    reservations = res;
    pthread_mutex_unlock(&vmm_mutex);
    *ptr = anasim_dptr(base);
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags)
{
    cuMemAddressReserve_params p = { .ptr = ptr, .size = size, .alignment = alignment,
                                     .addr = addr, .flags = flags };
    ANA_DRV_RETURN_INIT(cuMemAddressReserve, &p, reserve(ptr, size, alignment, addr, flags));
}

/* Bytes of [lo, hi) covered by mappings; *partial is set when a mapping sticks out. */
static size_t mapped_bytes_locked(const char *lo, const char *hi, int *partial)
{
    size_t n = 0;
    *partial = 0;
    for (struct range *m = mappings; m; m = m->next) {
        const char *a = m->base > lo ? m->base : lo;
        const char *b = m->base + m->size < hi ? m->base + m->size : hi;
        if (a >= b)
            continue;
        n += (size_t)(b - a);
        if (m->base < lo || m->base + m->size > hi)
            *partial = 1;
    }
    return n;
}

/* Mapped memory must be unmapped before its range is freed. */
static CUresult address_free(CUdeviceptr ptr, size_t size)
{
    char *base = anasim_ptr(ptr);
    int partial;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_mutex);
    for (struct range **pp = &reservations; *pp; pp = &(*pp)->next) {
        struct range *res = *pp;
        if (res->base != base || res->size != size)
            continue;
        if (mapped_bytes_locked(base, base + size, &partial) == 0) {
            *pp = res->next;
            munmap(res->base, res->size);
            free(res);
            r = CUDA_SUCCESS;
        }
        break;
    }
    pthread_mutex_unlock(&vmm_mutex);
    return r;
}

ANA_DRV_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    cuMemAddressFree_params p = { .ptr = ptr, .size = size };
    ANA_DRV_RETURN_INIT(cuMemAddressFree, &p, address_free(ptr, size));
}

static int reserved_locked(const char *lo, const char *hi)
{
    for (struct range *res = reservations; res; res = res->next)
        if (lo >= res->base && hi <= res->base + res->size)
            return 1;
    return 0;
}

/* ---- mappings ----------------------------------------------------------------------- */

static CUresult map_locked(char *va, size_t size, size_t offset, struct handle *h)
{
    int partial;
    if (!reserved_locked(va, va + size) || mapped_bytes_locked(va, va + size, &partial))
        return CUDA_ERROR_INVALID_VALUE;
    if (offset > h->size || size > h->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    struct range *m = calloc(1, sizeof(*m));
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, h->fd,
             (off_t)offset) == MAP_FAILED) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = anasim_vmm_map(va, size);
    if (r != CUDA_SUCCESS) {
        mmap(va, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        free(m);
        return r;
    }
    m->base = va;
    m->size = size;
    m->h = h;
    m->next = mappings;
    mappings = m;
    h->maps++;
    return CUDA_SUCCESS;
}

static CUresult map(CUdeviceptr ptr, size_t size, size_t offset,
                    CUmemGenericAllocationHandle id, unsigned long long flags)
{
    if (!ptr || size == 0 || flags != 0 || !aligned(size) || !aligned(offset) ||
        !aligned((size_t)ptr))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_mutex);
    struct handle *h = find_handle_locked(id);
    CUresult r = h && !h->released ? map_locked(anasim_ptr(ptr), size, offset, h)
                                   : CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_unlock(&vmm_mutex);
    return r;
}

ANA_DRV_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    cuMemMap_params p = { .ptr = ptr, .size = size, .offset = offset, .handle = handle,
                          .flags = flags };
    ANA_DRV_RETURN_INIT(cuMemMap, &p, map(ptr, size, offset, handle, flags));
}

/* The range must be made of whole mappings. Handles released while mapped are given back
 * when their last mapping goes. */
static CUresult unmap(CUdeviceptr ptr, size_t size)
{
    char *lo = anasim_ptr(ptr), *hi = lo + size;
    struct handle *gone = NULL;
    int partial;
    pthread_mutex_lock(&vmm_mutex);
    if (!ptr || size == 0 || mapped_bytes_locked(lo, hi, &partial) != size || partial) {
        pthread_mutex_unlock(&vmm_mutex);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (struct range **pp = &mappings; *pp;) {
        struct range *m = *pp;
        if (m->base < lo || m->base >= hi) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        mmap(m->base, m->size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        anasim_vmm_unmap(m->base, m->size);
        if (--m->h->maps == 0 && m->h->released) {
            unlink_handle_locked(m->h);
            m->h->next = gone;
            gone = m->h;
        }
        free(m);
    }
    pthread_mutex_unlock(&vmm_mutex);
    while (gone) {
        struct handle *next = gone->next;
        destroy_handle(gone);
        gone = next;
    }
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    cuMemUnmap_params p = { .ptr = ptr, .size = size };
    ANA_DRV_RETURN_INIT(cuMemUnmap, &p, unmap(ptr, size));
}

static CUresult set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                           size_t count)
{
    if (!ptr || size == 0 || !desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        CUmemAccess_flags f = desc[i].flags;
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (desc[i].location.id != 0)
            return CUDA_ERROR_INVALID_DEVICE;
    }
    char *lo = anasim_ptr(ptr);
    int partial;
    pthread_mutex_lock(&vmm_mutex);
    size_t mapped = mapped_bytes_locked(lo, lo + size, &partial);
    pthread_mutex_unlock(&vmm_mutex);
    return mapped == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

ANA_DRV_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                    size_t count)
{
    cuMemSetAccess_params p = { .ptr = ptr, .size = size, .desc = desc, .count = count };
    ANA_DRV_RETURN_INIT(cuMemSetAccess, &p, set_access(ptr, size, desc, count));
}

/* driver.c — the CUDA driver's entry points the preload wraps: the memory ones, allocations
 * and frees (ALLOC, FREE with driver api numbers) and the virtual-memory calls (VMM
 * records); their slots (hooks.h, "driver entry points"); and cuGetProcAddress[_v2],
 * which hands out the wrappers. The slot table names each wrapper and each wrapper reads
 * its slot, so they live in one file. Called by the program, and by lookup.c
 * (ana_drv_wrap, ana_drv_hooks_on); calls calls/ (the builders) and the core.
 *
 * Programs reach these wrappers two ways. Linked against libcuda (-lcuda), they bind to the
 * preload's exports by name; the real function is then found by name on the first call.
 * Obtaining entry points at run time (dlsym of libcuda, cuGetProcAddress,
 * cudaGetDriverEntryPoint — what the CUDA runtime, PyTorch and NCCL do), they get a wrapper
 * from a lookup (lookup.c, cuGetProcAddress below), which has set its slot's real
 * function. Either way a wrapper is the usual bracket: ana_enter, the real call, a record, the result unchanged, errno preserved.
 * A driver call made inside another hook's bracket (the runtime's cudaMalloc calling
 * cuMemAlloc_v2) passes straight through unrecorded: one call of the program, one record.
 *
 * Exported names are the current ABI's (cuMemAlloc_v2, ...); libcuda's unsuffixed legacy
 * names (cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemAllocPitch) take 32-bit sizes and
 * pointers and are neither exported nor wrapped. With ANATOMIST_DRIVER_HOOKS=0 the
 * wrappers only forward. */
#include "hooks.h"

#include <errno.h>
#include <string.h>

#undef cuGetProcAddress /* cuda.h maps it to _v2; the legacy export is defined below */

/* Declared by cuda.h only when a program is compiled for per-thread default streams. */
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream);
/* The legacy four-argument cuGetProcAddress (below), defined under its exported name. */
CUresult ana_cu_get_proc_address_legacy(const char *symbol, void **pfn, int version, cuuint64_t flags)
    __asm__("cuGetProcAddress");

/* DRV_HOOK(slot, name, params, args, record): the exported wrapper `name`; `record` may use
 * `c` (the bracket) and `r` (the CUresult). */
#define DRV_HOOK(slot, name, params, args, record)                         \
    ANA_EXPORT CUresult CUDAAPI name params                                 \
    {                                                                       \
        CUresult(CUDAAPI * real) params =                                   \
            (CUresult(CUDAAPI *) params)ana_drv_real_fast(slot);            \
        if (ANA_UNLIKELY(!real))                                            \
            return (CUresult)ana_drv_missing(slot);                         \
        ana_call c; /* nested in a recorded call (the runtime's own): pass */ \
        if (ana_tls_busy || !ana_drv_hooks_on() || !ana_enter(&c))          \
            ANA_PASS(CUresult, real args);                                  \
        ANA_CALLER(c);                                                      \
        CUresult r = real args;                                             \
        record;                                                             \
        return r;                                                           \
    }

#define DEV ana_current_device()
#define ALLOC(api, ptr, size, stream, flags) \
    ana_rec_alloc_done(&c, api, r, ANA_OUT(r, ptr), size, DEV, ANA_U64(stream), flags)
#define FREE(api, ptr, stream) ana_rec_free_done(&c, api, r, ANA_U64(ptr), ANA_U64(stream))

DRV_HOOK(ANA_DFN_MEM_ALLOC, cuMemAlloc_v2, (CUdeviceptr *p, size_t n), (p, n),
         ALLOC(ANA_API_CU_MEM_ALLOC, p, n, 0, 0))
DRV_HOOK(ANA_DFN_MEM_ALLOC_ASYNC, cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s),
         ALLOC(ANA_API_CU_MEM_ALLOC_ASYNC, p, n, s, 0))
DRV_HOOK(ANA_DFN_MEM_ALLOC_ASYNC_PTSZ, cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s),
         ALLOC(ANA_API_CU_MEM_ALLOC_ASYNC, p, n, s, 0))
DRV_HOOK(ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC, cuMemAllocFromPoolAsync,
         (CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s),
         ALLOC(ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, p, n, s, 0))
DRV_HOOK(ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ, cuMemAllocFromPoolAsync_ptsz,
         (CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s),
         ALLOC(ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, p, n, s, 0))
DRV_HOOK(ANA_DFN_MEM_ALLOC_MANAGED, cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned int f), (p, n, f),
         ALLOC(ANA_API_CU_MEM_ALLOC_MANAGED, p, n, 0, f))
DRV_HOOK(ANA_DFN_MEM_ALLOC_HOST, cuMemAllocHost_v2, (void **p, size_t n), (p, n),
         ALLOC(ANA_API_CU_MEM_ALLOC_HOST, p, n, 0, 0))
DRV_HOOK(ANA_DFN_MEM_HOST_ALLOC, cuMemHostAlloc, (void **p, size_t n, unsigned int f), (p, n, f),
         ALLOC(ANA_API_CU_MEM_HOST_ALLOC, p, n, 0, f))
/* Pitched: the bytes are pitch × height, as for cudaMallocPitch. */
DRV_HOOK(ANA_DFN_MEM_ALLOC_PITCH, cuMemAllocPitch_v2,
         (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int elem), (p, pitch, w, h, elem),
         ALLOC(ANA_API_CU_MEM_ALLOC_PITCH, p, ana_pitched_bytes(r, pitch, w, h), 0, 0))

DRV_HOOK(ANA_DFN_MEM_FREE, cuMemFree_v2, (CUdeviceptr p), (p), FREE(ANA_API_CU_MEM_FREE, p, 0))
DRV_HOOK(ANA_DFN_MEM_FREE_ASYNC, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s),
         FREE(ANA_API_CU_MEM_FREE_ASYNC, p, s))
DRV_HOOK(ANA_DFN_MEM_FREE_ASYNC_PTSZ, cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s),
         FREE(ANA_API_CU_MEM_FREE_ASYNC, p, s))
DRV_HOOK(ANA_DFN_MEM_FREE_HOST, cuMemFreeHost, (void *p), (p), FREE(ANA_API_CU_MEM_FREE_HOST, p, 0))

/* Physical allocations: ALLOC/FREE whose ptr is the allocation handle. */
DRV_HOOK(ANA_DFN_MEM_CREATE, cuMemCreate,
         (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp *prop, unsigned long long f),
         (h, n, prop, f),
         ana_rec_alloc_done(&c, ANA_API_CU_MEM_CREATE, r, ANA_OUT(r, h), n, ana_mem_create_device(prop), 0, f))
DRV_HOOK(ANA_DFN_MEM_RELEASE, cuMemRelease, (CUmemGenericAllocationHandle h), (h),
         ana_rec_free_done(&c, ANA_API_CU_MEM_RELEASE, r, (uint64_t)h, 0))

/* Virtual memory: VMM records (va, size, handle, offset, flags). */
#define VMM(api, va, size, handle, offset, device, flags) \
    ana_rec_vmm_done(&c, api, r, ANA_U64(va), size, (uint64_t)(handle), offset, device, flags)

DRV_HOOK(ANA_DFN_MEM_ADDRESS_RESERVE, cuMemAddressReserve,
         (CUdeviceptr * p, size_t n, size_t align, CUdeviceptr addr, unsigned long long f), (p, n, align, addr, f),
         VMM(ANA_API_CU_MEM_ADDRESS_RESERVE, ANA_OUT(r, p), n, 0, 0, DEV, f))
DRV_HOOK(ANA_DFN_MEM_ADDRESS_FREE, cuMemAddressFree, (CUdeviceptr p, size_t n), (p, n),
         VMM(ANA_API_CU_MEM_ADDRESS_FREE, p, n, 0, 0, DEV, 0))
DRV_HOOK(ANA_DFN_MEM_MAP, cuMemMap,
         (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f),
         (p, n, off, h, f), VMM(ANA_API_CU_MEM_MAP, p, n, h, off, DEV, f))
DRV_HOOK(ANA_DFN_MEM_UNMAP, cuMemUnmap, (CUdeviceptr p, size_t n), (p, n),
         VMM(ANA_API_CU_MEM_UNMAP, p, n, 0, 0, DEV, 0))
/* Access: device and flags of the first descriptor (the usual single one). */
DRV_HOOK(ANA_DFN_MEM_SET_ACCESS, cuMemSetAccess,
         (CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t count), (p, n, d, count),
         VMM(ANA_API_CU_MEM_SET_ACCESS, p, n, 0, 0, ana_access_device(d, count), ana_access_flags(d, count)))

/* The slots. Versions: the CUDA version that introduced the function under its base name
 * (cudaTypedefs.h, PFN_<name>_v<version>). */
#define SLOT(name, base, version, ptsz) { #name, base, version, ptsz, (void *)name, NULL }
ana_drv_fn ana_drv_fns[ANA_DFN_COUNT] = {
    [ANA_DFN_MEM_ALLOC] = SLOT(cuMemAlloc_v2, "cuMemAlloc", 3020, 0),
    [ANA_DFN_MEM_FREE] = SLOT(cuMemFree_v2, "cuMemFree", 3020, 0),
    [ANA_DFN_MEM_ALLOC_ASYNC] = SLOT(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0),
    [ANA_DFN_MEM_ALLOC_ASYNC_PTSZ] = SLOT(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1),
    [ANA_DFN_MEM_FREE_ASYNC] = SLOT(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0),
    [ANA_DFN_MEM_FREE_ASYNC_PTSZ] = SLOT(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1),
    [ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC] = SLOT(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0),
    [ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ] =
        SLOT(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1),
    [ANA_DFN_MEM_ALLOC_MANAGED] = SLOT(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0),
    [ANA_DFN_MEM_ALLOC_HOST] = SLOT(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0),
    [ANA_DFN_MEM_HOST_ALLOC] = SLOT(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0),
    [ANA_DFN_MEM_FREE_HOST] = SLOT(cuMemFreeHost, "cuMemFreeHost", 2000, 0),
    [ANA_DFN_MEM_ALLOC_PITCH] = SLOT(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0),
    [ANA_DFN_MEM_CREATE] = SLOT(cuMemCreate, "cuMemCreate", 10020, 0),
    [ANA_DFN_MEM_RELEASE] = SLOT(cuMemRelease, "cuMemRelease", 10020, 0),
    [ANA_DFN_MEM_ADDRESS_RESERVE] = SLOT(cuMemAddressReserve, "cuMemAddressReserve", 10020, 0),
    [ANA_DFN_MEM_ADDRESS_FREE] = SLOT(cuMemAddressFree, "cuMemAddressFree", 10020, 0),
    [ANA_DFN_MEM_MAP] = SLOT(cuMemMap, "cuMemMap", 10020, 0),
    [ANA_DFN_MEM_UNMAP] = SLOT(cuMemUnmap, "cuMemUnmap", 10020, 0),
    [ANA_DFN_MEM_SET_ACCESS] = SLOT(cuMemSetAccess, "cuMemSetAccess", 10020, 0),
    [ANA_DFN_GET_PROC_ADDRESS] = { "cuGetProcAddress", "cuGetProcAddress", 11030, 0,
                                   (void *)ana_cu_get_proc_address_legacy, NULL },
    [ANA_DFN_GET_PROC_ADDRESS_V2] = SLOT(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0),
};

/* ---- slots ----------------------------------------------------------------------------- */

int ana_drv_hooks_on(void)
{
    static _Atomic int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (ANA_UNLIKELY(v < 0)) {
        ana_config cfg; /* the constructor may not have run yet: read the settings here */
        ana_config_load(&cfg, NULL, NULL);
        v = cfg.driver_hooks && !cfg.disable;
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

void *ana_drv_real(int i)
{
    ana_drv_fn *f = &ana_drv_fns[i];
    void *p = atomic_load_explicit(&f->real, memory_order_acquire);
    if (ANA_LIKELY(p))
        return p;
    int e = errno;
    /* A program linked against libcuda: the next definition after the preload, or a
     * libcuda loaded in a local scope (invisible to RTLD_NEXT). */
    p = ana_dl_real_sym("libcuda.so.1", NULL, f->name);
    errno = e;
    if (!p || p == f->wrapper)
        return NULL;
    void *expect = NULL;
    if (!atomic_compare_exchange_strong(&f->real, &expect, p))
        p = expect;
    return p;
}

int ana_drv_missing(int i)
{
    ana_warn("cannot find the CUDA driver's %s; returning an error to the caller", ana_drv_fns[i].name);
    return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
}

/* -2: fn is one of our wrappers; a slot whose real function is fn; -1: none. */
static int slot_of_fn(const void *fn)
{
    for (int i = 0; i < ANA_DFN_COUNT; i++) {
        if (ana_drv_fns[i].wrapper == fn)
            return -2;
        if (atomic_load_explicit(&ana_drv_fns[i].real, memory_order_acquire) == fn)
            return i;
    }
    return -1;
}

static int slot_of_name(const char *name)
{
    if (name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < ANA_DFN_COUNT; i++)
        if (strcmp(ana_drv_fns[i].name, name) == 0)
            return i;
    return -1;
}

/* The newest slot of `base` that `version` asks for; a per-thread-stream variant only when
 * the flags ask for one (functions without one answer both ways). */
static int slot_of_base(const char *base, int version, uint64_t flags)
{
    int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    int best = -1;
    long best_score = -1;
    for (int i = 0; i < ANA_DFN_COUNT; i++) {
        const ana_drv_fn *f = &ana_drv_fns[i];
        if (strcmp(f->base, base) != 0 || version < f->min_version || (f->ptsz && !want_ptsz))
            continue;
        long score = 2L * f->min_version + (f->ptsz == want_ptsz);
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

void *ana_drv_wrap(const char *symbol, void *fn, int by_base, int version, uint64_t flags)
{
    if (!fn || !symbol || !ana_drv_hooks_on())
        return fn;
    int e = errno;
    void *out = fn;
    int i = slot_of_fn(fn);
    if (i == -1)
        i = by_base ? slot_of_base(symbol, version, flags) : slot_of_name(symbol);
    if (i >= 0 && ana_dl_in_libcuda(fn)) {
        void *expect = NULL;
        if (atomic_compare_exchange_strong(&ana_drv_fns[i].real, &expect, fn) || expect == fn)
            out = ana_drv_fns[i].wrapper;
    }
    errno = e;
    return out;
}

/* ---- cuGetProcAddress ----------------------------------------------------------------- */

ANA_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *status)
{
    CUresult(CUDAAPI * real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
            ana_drv_real(ANA_DFN_GET_PROC_ADDRESS_V2);
    if (ANA_UNLIKELY(!real))
        return (CUresult)ana_drv_missing(ANA_DFN_GET_PROC_ADDRESS_V2);
    CUresult r = real(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = ana_drv_wrap(symbol, *pfn, 1, version, flags);
    return r;
}

/* The legacy four-argument cuGetProcAddress (CUDA 11.3–11.8), libcuda's unsuffixed export. */
ANA_EXPORT CUresult ana_cu_get_proc_address_legacy(const char *symbol, void **pfn, int version,
                                                   cuuint64_t flags) __asm__("cuGetProcAddress");
ANA_EXPORT CUresult ana_cu_get_proc_address_legacy(const char *symbol, void **pfn, int version,
                                                   cuuint64_t flags)
{
    CUresult(CUDAAPI * real)(const char *, void **, int, cuuint64_t) =
        (CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t))ana_drv_real(ANA_DFN_GET_PROC_ADDRESS);
    if (ANA_UNLIKELY(!real))
        return (CUresult)ana_drv_missing(ANA_DFN_GET_PROC_ADDRESS);
    CUresult r = real(symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = ana_drv_wrap(symbol, *pfn, 1, version, flags);
    return r;
}

/* hooks_dl.c — how driver entry points obtained at run time become the preload's wrappers,
 * and runtime functions looked up by name its hooks.
 *
 * Most programs and libraries never link libcuda: the CUDA runtime, PyTorch and NCCL
 * dlopen("libcuda.so.1") and dlsym it, or call cuGetProcAddress[_v2], or the runtime's
 * cudaGetDriverEntryPoint[ByVersion][_ptsz]. Each of these lookups is interposed here:
 * the real lookup runs, and when what it returns is a libcuda function that
 * hooks_driver.c wraps (or cuGetProcAddress itself), the slot of that function keeps the
 * real pointer and the caller gets the wrapper. Everything else passes through untouched,
 * and so does everything when ANATOMIST_DRIVER_HOOKS=0.
 *
 * dlsym and dlvsym enter through dl_entry.c, which keeps RTLD_NEXT and RTLD_DEFAULT
 * lookups in glibc with the caller's return address; only lookups with a real handle
 * arrive here (ana_dlsym_impl). A runtime function found on a real handle (the runtime's
 * own, as ctypes looks functions up) is handed out as the preload's hook of that name when
 * that hook forwards to it (rt_wrap). cuGetProcAddress maps a base name to a slot by version and
 * per-thread-stream flag (cuMemAlloc at 3020 and later is cuMemAlloc_v2, cuMemAllocAsync
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is cuMemAllocAsync_ptsz).
 *
 * Safety: a slot's real function is set once; a later lookup that returns a different
 * function for the same slot is handed that function unwrapped, so a program never calls
 * an implementation other than the one it was given. A returned function outside libcuda
 * (another interposer, a runtime trampoline) is never wrapped: its slot could otherwise
 * lead back to the wrapper. Lookups touch no lock of ours and allocate nothing. */
#define _GNU_SOURCE
#include "hooks.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#undef cuGetProcAddress /* cuda.h maps it to _v2; the legacy export is defined below */

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

/* ---- dlsym / dlvsym with a real handle (dl_entry.c sends them here) -------------------- */

void *ana_dlsym_impl(void *handle, const char *name) __attribute__((visibility("hidden")));
void *ana_dlvsym_impl(void *handle, const char *name, const char *version)
    __attribute__((visibility("hidden")));

/* Only names of slots can be wrapped: the common lookup returns after two compares. */
static int maybe_driver_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u' && name[2] == 'M' ? 1
           : name && strncmp(name, "cuGetProcAddress", 16) == 0;
}

/* Names the preload's runtime hooks have (hooks_mem.c, hooks_launch.c, ...). */
static int maybe_runtime_name(const char *name)
{
    return name && (strncmp(name, "cuda", 4) == 0 || strncmp(name, "__cuda", 6) == 0);
}

static int rt_hooks_on(void)
{
    static _Atomic int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (ANA_UNLIKELY(v < 0)) {
        ana_config cfg; /* as in ana_drv_hooks_on: the constructor may not have run yet */
        ana_config_load(&cfg, NULL, NULL);
        v = !cfg.disable;
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

/* A lookup on the runtime's own handle (ctypes and cffi dlopen libcudart RTLD_LOCAL and
 * dlsym each function; so do loaders that pick a runtime at run time) finds the runtime's
 * function, not the preload's hook of that name: its calls would reach the profiler only
 * through the driver wrappers (a cudaMalloc recorded as the cuMemAlloc_v2 it makes) or
 * CUPTI's callbacks (not yet subscribed during the process's first call). So the caller
 * gets the hook, when the hook forwards to exactly the function the lookup found (the one
 * ana_resolve gives it); any other function is handed out as found. */
static void *rt_wrap(const char *name, void *fn)
{
    if (!rt_hooks_on())
        return fn;
    int e = errno;
    void *hook = ana_dl_own_export(name), *out = fn;
    if (hook && hook != fn && ana_resolve(name) == fn)
        out = hook;
    /* ana_resolve's lookups may fail on the way (RTLD_NEXT finds no runtime when it was
     * loaded in a local scope); the program's own lookup succeeded, and a successful
     * lookup leaves no error for dlerror() to report. */
    dlerror();
    errno = e;
    return out;
}

static void *wrap_found(const char *name, void *p)
{
    if (!p)
        return p;
    if (maybe_driver_name(name))
        return ana_drv_wrap(name, p, 0, 0, 0);
    return maybe_runtime_name(name) ? rt_wrap(name, p) : p;
}

void *ana_dlsym_impl(void *handle, const char *name)
{
    return wrap_found(name, ana_real_dlsym(handle, name));
}

void *ana_dlvsym_impl(void *handle, const char *name, const char *version)
{
    return wrap_found(name, ana_real_dlvsym(handle, name, version));
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

/* ---- cudaGetDriverEntryPoint & co (the runtime's lookups) ----------------------------- */

/* The runtime's flags as cuGetProcAddress flags: the _ptsz entry points mean per-thread
 * default stream unless the legacy stream is asked for. */
static uint64_t cu_flags(unsigned long long flags, int ptsz)
{
    uint64_t f = flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream);
    if (ptsz && !(f & cudaEnableLegacyStream))
        f |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return f;
}

#define EP_PARAMS (const char *s, void **fp, unsigned long long f, enum cudaDriverEntryPointQueryResult *st)
#define EPV_PARAMS                                                                         \
    (const char *s, void **fp, unsigned int v, unsigned long long f,                       \
     enum cudaDriverEntryPointQueryResult *st)

/* Without a version the runtime answers for its own (CUDART_VERSION of the headers we
 * build against: the versions of every slot are far older). */
#define EP_HOOK(name, params, args, version, ptsz)                                         \
    ANA_EXPORT cudaError_t name params                                                     \
    {                                                                                      \
        ANA_REAL(name, params);                                                            \
        cudaError_t r = real args;                                                         \
        if (r == cudaSuccess && fp)                                                        \
            *fp = ana_drv_wrap(s, *fp, 1, (int)(version), cu_flags(f, ptsz));              \
        return r;                                                                          \
    }

EP_HOOK(cudaGetDriverEntryPoint, EP_PARAMS, (s, fp, f, st), CUDART_VERSION, 0)
EP_HOOK(cudaGetDriverEntryPoint_ptsz, EP_PARAMS, (s, fp, f, st), CUDART_VERSION, 1)
EP_HOOK(cudaGetDriverEntryPointByVersion, EPV_PARAMS, (s, fp, v, f, st), v, 0)
EP_HOOK(cudaGetDriverEntryPointByVersion_ptsz, EPV_PARAMS, (s, fp, v, f, st), v, 1)

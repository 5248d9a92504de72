/* lookup.c — how driver entry points obtained at run time become the preload's wrappers,
 * and runtime functions looked up by name its hooks: dlsym/dlvsym with a real handle (from
 * dl_entry.c's entry points) and the runtime's cudaGetDriverEntryPoint*. cuGetProcAddress
 * and the slots it shares with these lookups are driver.c's (ana_drv_wrap). Called by the
 * program (through dl_entry.c); calls driver.c, runtime.c (a runtime function missing),
 * calls/ (ana_resolve) and the core (configuration, real symbols).
 *
 * Most programs and libraries never link libcuda: the CUDA runtime, PyTorch and NCCL
 * dlopen("libcuda.so.1") and dlsym it, or call cuGetProcAddress[_v2], or the runtime's
 * cudaGetDriverEntryPoint[ByVersion][_ptsz]. Each of these lookups is interposed here:
 * the real lookup runs, and when what it returns is a libcuda function that
 * driver.c wraps (or cuGetProcAddress itself), the slot of that function keeps the
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

/* Names the preload's runtime hooks have (runtime.c, launch.c, ...). */
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

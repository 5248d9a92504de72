/* hooks.h — shared by the interposed CUDA entry points (preload/hooks/: runtime.c,
 * launch.c, driver.c, lookup.c, dl_entry.c). Only files that must see CUDA types include
 * it. Every wrapper: resolve the real function, bracket with ana_enter, call the real
 * function, record with a builder of calls.h, return its result unchanged. */
#ifndef ANA_HOOKS_H
#define ANA_HOOKS_H

#include "calls.h"
#include "preload.h"

/* Says once that `name` cannot be found; returns the error the wrapper gives back. */
cudaError_t ana_missing(const char *name);

/* Declares `real`, the real function of this wrapper (returns cudaError_t). */
#define ANA_REAL(name, params)                                                   \
    static cudaError_t(*real_ptr) params;                                         \
    if (ANA_UNLIKELY(!real_ptr))                                                  \
        real_ptr = (cudaError_t(*) params)ana_resolve(#name);                     \
    if (ANA_UNLIKELY(!real_ptr))                                                  \
        return ana_missing(#name);                                                \
    cudaError_t(*const real) params = real_ptr

/* Defines the exported wrapper `name`: resolve, bracket, call, record, return. `record`
 * is a statement that may use `c` (the bracket) and `r` (what the real call returned). */
#define ANA_HOOK(name, params, args, record)  \
    ANA_EXPORT cudaError_t name params        \
    {                                         \
        ANA_REAL(name, params);               \
        ana_call c;                           \
        if (!ana_enter(&c))                   \
            ANA_PASS(cudaError_t, real args); \
        ANA_CALLER(c);                        \
        cudaError_t r = real args;            \
        record;                               \
        return r;                             \
    }

/* ---- driver entry points: driver.c (slots, wrappers, cuGetProcAddress), lookup.c ----
 * Each wrapped driver function has one slot: its exported name, the base name and lowest
 * version under which cuGetProcAddress hands it out, our wrapper, and the real function the
 * wrapper calls. A slot's real function is set once — by the first lookup that hands it out
 * (dlsym of libcuda, cuGetProcAddress, cudaGetDriverEntryPoint), or, for a program linked
 * against libcuda, by name on the wrapper's first call — and never changes after. */
typedef struct ana_drv_fn {
    const char *name;   /* exported symbol, "cuMemAlloc_v2" */
    const char *base;   /* what cuGetProcAddress takes, "cuMemAlloc" */
    int min_version;    /* lowest cudaVersion for which `base` means this function */
    int ptsz;           /* 1: the per-thread-default-stream variant */
    void *wrapper;
    void *_Atomic real;
} ana_drv_fn;

/* The slots, ANA_DFN_COUNT of them (driver.c). */
extern ana_drv_fn ana_drv_fns[];
enum {
    ANA_DFN_MEM_ALLOC, ANA_DFN_MEM_FREE, ANA_DFN_MEM_ALLOC_ASYNC, ANA_DFN_MEM_ALLOC_ASYNC_PTSZ,
    ANA_DFN_MEM_FREE_ASYNC, ANA_DFN_MEM_FREE_ASYNC_PTSZ, ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC,
    ANA_DFN_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ, ANA_DFN_MEM_ALLOC_MANAGED, ANA_DFN_MEM_ALLOC_HOST,
    ANA_DFN_MEM_HOST_ALLOC, ANA_DFN_MEM_FREE_HOST, ANA_DFN_MEM_ALLOC_PITCH, ANA_DFN_MEM_CREATE,
    ANA_DFN_MEM_RELEASE, ANA_DFN_MEM_ADDRESS_RESERVE, ANA_DFN_MEM_ADDRESS_FREE, ANA_DFN_MEM_MAP,
    ANA_DFN_MEM_UNMAP, ANA_DFN_MEM_SET_ACCESS, ANA_DFN_GET_PROC_ADDRESS,
    ANA_DFN_GET_PROC_ADDRESS_V2, ANA_DFN_COUNT
};

/* 1 when driver entry points are wrapped and recorded (ANATOMIST_DRIVER_HOOKS=1 and the
 * preload not disabled). Read from the environment on first use: lookups may come before
 * the preload's constructor has run. */
int ana_drv_hooks_on(void);
/* Slot i's real function, resolving it by name when no lookup has set it (the next
 * definition after the preload, else the libcuda.so.1 loaded in a local scope); NULL when
 * there is none. */
void *ana_drv_real(int i);
/* The same, inline where the slot is set (every call but the first few). */
static inline void *ana_drv_real_fast(int i)
{
    void *p = atomic_load_explicit(&ana_drv_fns[i].real, memory_order_acquire);
    return ANA_LIKELY(p != NULL) ? p : ana_drv_real(i);
}
/* Says once that slot i's function cannot be found; returns the CUresult the wrapper gives
 * back (CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND). */
int ana_drv_missing(int i);
/* What a lookup should hand out for `fn`, which the real lookup returned for `symbol`
 * (cudaVersion, cuGetProcAddress flags): our wrapper when fn is a libcuda function we wrap
 * and its slot's real function is (or now becomes) fn; fn itself otherwise. Preserves
 * errno. `by_base`: symbol is a base name (cuGetProcAddress), else an exported name (dlsym). */
void *ana_drv_wrap(const char *symbol, void *fn, int by_base, int version, uint64_t flags);

#endif

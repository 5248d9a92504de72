/* hooks.h — shared by the interposed CUDA entry points (hooks_*.c). Only files that must
 * see CUDA types include it. Every wrapper: resolve the real function, bracket with
 * ana_enter, call the real function, record, return its result unchanged. */
#ifndef ANA_HOOKS_H
#define ANA_HOOKS_H

#include <cuda_runtime_api.h>

#include "preload.h"

/* The next definition of `name` after the preload (the real CUDA runtime, wherever it was
 * loaded), or NULL. */
void *ana_resolve(const char *name);
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
            return real args;                 \
        cudaError_t r = real args;            \
        record;                               \
        return r;                             \
    }

/* Record builders: each ends the bracket (ana_leave), preserving the errno the real call
 * left. */
void ana_rec_alloc_done(ana_call *c, uint32_t api, cudaError_t r, void **p, size_t size,
                        cudaStream_t stream, uint64_t flags);
void ana_rec_free_done(ana_call *c, uint32_t api, cudaError_t r, const void *ptr, cudaStream_t stream);
void ana_rec_launch_done(ana_call *c, uint32_t api, cudaError_t r, uint64_t kernel, dim3 grid,
                         dim3 block, size_t shmem, cudaStream_t stream);
void ana_rec_memcpy_done(ana_call *c, uint32_t api, cudaError_t r, const void *dst, const void *src,
                         size_t bytes, int dir, cudaStream_t stream);
void ana_rec_memset_done(ana_call *c, uint32_t api, cudaError_t r, const void *ptr, int value,
                         size_t bytes, cudaStream_t stream);
void ana_record_device(int ordinal, const struct cudaDeviceProp *p);
/* Records the device unless a DEVICE record for that ordinal exists already. */
void ana_record_device_once(int ordinal, const struct cudaDeviceProp *p);
/* The calling thread's current device, as last set through cudaSetDevice (0 by default). */
int ana_current_device(void);
void ana_set_current_device(int dev);

/* ---- driver entry points: hooks_driver.c (wrappers), hooks_dl.c (lookups) ----
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

/* The slots, ANA_DFN_COUNT of them (hooks_driver.c). */
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
/* Says once that slot i's function cannot be found; returns the CUresult the wrapper gives
 * back (CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND). */
int ana_drv_missing(int i);
/* What a lookup should hand out for `fn`, which the real lookup returned for `symbol`
 * (cudaVersion, cuGetProcAddress flags): our wrapper when fn is a libcuda function we wrap
 * and its slot's real function is (or now becomes) fn; fn itself otherwise. Preserves
 * errno. `by_base`: symbol is a base name (cuGetProcAddress), else an exported name (dlsym). */
void *ana_drv_wrap(const char *symbol, void *fn, int by_base, int version, uint64_t flags);

/* ---- glibc's own dlsym/dlvsym, past the preload's interposed ones (dl_entry.c) ---- */
/* Found once, without calling dlsym (the preload exports its own): NULL only when the C
 * library has none. The preload's own lookups that must not be wrapped go through these. */
void *ana_real_dlsym(void *handle, const char *name);
void *ana_real_dlvsym(void *handle, const char *name, const char *version);
/* 1 when addr lies in the CUDA driver (a module whose soname is libcuda.so.1). */
int ana_dl_in_libcuda(const void *addr);
/* `name` in a libcuda.so.1 already loaded (in any scope), or NULL. Never loads one. */
void *ana_dl_libcuda_sym(const char *name);

/* Record builders of driver calls (CUresult ret; ptr/handle as integers). */
void ana_rec_drv_alloc_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t size,
                            int64_t device, uint64_t stream, uint64_t flags);
void ana_rec_drv_free_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t stream);
void ana_rec_vmm_done(ana_call *c, uint32_t api, int r, uint64_t va, uint64_t size,
                      uint64_t handle, uint64_t offset, int64_t device, uint64_t flags);

#endif

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

#endif

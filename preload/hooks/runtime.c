/* runtime.c — interposed allocation, copy, set and device entry points of the CUDA
 * runtime. Per-thread-default-stream variants (_ptds, _ptsz) record the base api number.
 * Also what every runtime wrapper does when the runtime lacks its function (ana_missing).
 * Called by the program, and by launch.c and lookup.c (ana_missing); calls calls/ (the
 * record builders) and the core (the bracket, capture windows). */
#include "hooks.h"

#include <errno.h>

cudaError_t ana_missing(const char *name)
{
    ana_disable("cannot find the CUDA runtime's %s; returning an error to the caller", name);
    return cudaErrorSharedObjectSymbolNotFound;
}

#define ALLOC_HOOK(name, api, params, args, ptrp, size, stream, flags)                              \
    ANA_HOOK(name, params, args,                                                                 \
             ana_rec_alloc_done(&c, api, r, ANA_OUT(r, ptrp), size, ana_current_device(), ANA_U64(stream), flags))

ALLOC_HOOK(cudaMalloc, ANA_API_MALLOC, (void **p, size_t n), (p, n), p, n, 0, 0)
ALLOC_HOOK(cudaMallocAsync, ANA_API_MALLOC_ASYNC, (void **p, size_t n, cudaStream_t s), (p, n, s), p, n, s, 0)
ALLOC_HOOK(cudaMallocAsync_ptsz, ANA_API_MALLOC_ASYNC, (void **p, size_t n, cudaStream_t s), (p, n, s), p, n, s, 0)
ALLOC_HOOK(cudaMallocFromPoolAsync, ANA_API_MALLOC_FROM_POOL_ASYNC,
           (void **p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s), p, n, s, 0)
ALLOC_HOOK(cudaMallocFromPoolAsync_ptsz, ANA_API_MALLOC_FROM_POOL_ASYNC,
           (void **p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s), p, n, s, 0)
ALLOC_HOOK(cudaMallocManaged, ANA_API_MALLOC_MANAGED, (void **p, size_t n, unsigned int f), (p, n, f), p, n, 0, f)
ALLOC_HOOK(cudaMallocHost, ANA_API_MALLOC_HOST, (void **p, size_t n), (p, n), p, n, 0, 0)
ALLOC_HOOK(cudaHostAlloc, ANA_API_HOST_ALLOC, (void **p, size_t n, unsigned int f), (p, n, f), p, n, 0, f)

ANA_EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    ANA_REAL(cudaMallocPitch, (void **, size_t *, size_t, size_t));
    ana_call c;
    if (!ana_enter(&c))
        ANA_PASS(cudaError_t, real(p, pitch, width, height));
    ANA_CALLER(c);
    cudaError_t r = real(p, pitch, width, height);
    ana_rec_alloc_done(&c, ANA_API_MALLOC_PITCH, r, ANA_OUT(r, p), ana_pitched_bytes(r, pitch, width, height),
                       ana_current_device(), 0, 0);
    return r;
}

#define FREE_HOOK(name, api, params, args, ptr, stream) \
    ANA_HOOK(name, params, args, ana_rec_free_done(&c, api, r, ANA_U64(ptr), ANA_U64(stream)))

FREE_HOOK(cudaFree, ANA_API_FREE, (void *p), (p), p, 0)
FREE_HOOK(cudaFreeAsync, ANA_API_FREE_ASYNC, (void *p, cudaStream_t s), (p, s), p, s)
FREE_HOOK(cudaFreeAsync_ptsz, ANA_API_FREE_ASYNC, (void *p, cudaStream_t s), (p, s), p, s)
FREE_HOOK(cudaFreeHost, ANA_API_FREE_HOST, (void *p), (p), p, 0)

#define COPY_HOOK(name, api, params, args, dst, src, bytes, dir, stream) \
    ANA_HOOK(name, params, args,                                                  \
             ana_rec_memcpy_done(&c, api, r, ANA_U64(dst), ANA_U64(src), bytes, dir, ANA_U64(stream)))

#define MC_PARAMS (void *d, const void *s, size_t n, enum cudaMemcpyKind k)
#define MCA_PARAMS (void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
#define MC2_PARAMS (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
#define MC2A_PARAMS (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st)
#define TOSYM_PARAMS (const void *sym, const void *s, size_t n, size_t off, enum cudaMemcpyKind k)
#define FROMSYM_PARAMS (void *d, const void *sym, size_t n, size_t off, enum cudaMemcpyKind k)

COPY_HOOK(cudaMemcpy, ANA_API_MEMCPY, MC_PARAMS, (d, s, n, k), d, s, n, k, 0)
COPY_HOOK(cudaMemcpy_ptds, ANA_API_MEMCPY, MC_PARAMS, (d, s, n, k), d, s, n, k, 0)
COPY_HOOK(cudaMemcpyAsync, ANA_API_MEMCPY_ASYNC, MCA_PARAMS, (d, s, n, k, st), d, s, n, k, st)
COPY_HOOK(cudaMemcpyAsync_ptsz, ANA_API_MEMCPY_ASYNC, MCA_PARAMS, (d, s, n, k, st), d, s, n, k, st)
COPY_HOOK(cudaMemcpy2D, ANA_API_MEMCPY_2D, MC2_PARAMS, (d, dp, s, sp, w, h, k), d, s, w * h, k, 0)
COPY_HOOK(cudaMemcpy2D_ptds, ANA_API_MEMCPY_2D, MC2_PARAMS, (d, dp, s, sp, w, h, k), d, s, w * h, k, 0)
COPY_HOOK(cudaMemcpy2DAsync, ANA_API_MEMCPY_2D_ASYNC, MC2A_PARAMS, (d, dp, s, sp, w, h, k, st), d, s, w * h, k, st)
COPY_HOOK(cudaMemcpy2DAsync_ptsz, ANA_API_MEMCPY_2D_ASYNC, MC2A_PARAMS, (d, dp, s, sp, w, h, k, st), d, s, w * h, k, st)
COPY_HOOK(cudaMemcpyToSymbol, ANA_API_MEMCPY_TO_SYMBOL, TOSYM_PARAMS, (sym, s, n, off, k), sym, s, n, k, 0)
COPY_HOOK(cudaMemcpyToSymbol_ptds, ANA_API_MEMCPY_TO_SYMBOL, TOSYM_PARAMS, (sym, s, n, off, k), sym, s, n, k, 0)
COPY_HOOK(cudaMemcpyFromSymbol, ANA_API_MEMCPY_FROM_SYMBOL, FROMSYM_PARAMS, (d, sym, n, off, k), d, sym, n, k, 0)
COPY_HOOK(cudaMemcpyFromSymbol_ptds, ANA_API_MEMCPY_FROM_SYMBOL, FROMSYM_PARAMS, (d, sym, n, off, k), d, sym, n, k, 0)
COPY_HOOK(cudaMemcpyPeer, ANA_API_MEMCPY_PEER, (void *d, int dd, const void *s, int sd, size_t n),
          (d, dd, s, sd, n), d, s, n, cudaMemcpyDeviceToDevice, 0)
COPY_HOOK(cudaMemcpyPeerAsync, ANA_API_MEMCPY_PEER_ASYNC,
          (void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st), (d, dd, s, sd, n, st), d, s, n,
          cudaMemcpyDeviceToDevice, st)

#define SET_HOOK(name, api, params, args, ptr, value, bytes, stream) \
    ANA_HOOK(name, params, args, ana_rec_memset_done(&c, api, r, ANA_U64(ptr), value, bytes, ANA_U64(stream)))

SET_HOOK(cudaMemset, ANA_API_MEMSET, (void *p, int v, size_t n), (p, v, n), p, v, n, 0)
SET_HOOK(cudaMemset_ptds, ANA_API_MEMSET, (void *p, int v, size_t n), (p, v, n), p, v, n, 0)
SET_HOOK(cudaMemsetAsync, ANA_API_MEMSET_ASYNC, (void *p, int v, size_t n, cudaStream_t s), (p, v, n, s), p, v, n, s)
SET_HOOK(cudaMemsetAsync_ptsz, ANA_API_MEMSET_ASYNC, (void *p, int v, size_t n, cudaStream_t s), (p, v, n, s), p, v, n, s)
SET_HOOK(cudaMemset2D, ANA_API_MEMSET_2D, (void *p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h), p, v, w * h, 0)
SET_HOOK(cudaMemset2D_ptds, ANA_API_MEMSET_2D, (void *p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h), p, v, w * h, 0)
SET_HOOK(cudaMemset2DAsync, ANA_API_MEMSET_2D_ASYNC, (void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),
         (p, pitch, v, w, h, s), p, v, w * h, s)
SET_HOOK(cudaMemset2DAsync_ptsz, ANA_API_MEMSET_2D_ASYNC, (void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),
         (p, pitch, v, w, h, s), p, v, w * h, s)

/* Not recorded as calls: they keep the per-thread device and the device records right. */
ANA_EXPORT cudaError_t cudaSetDevice(int dev)
{
    ANA_REAL(cudaSetDevice, (int));
    cudaError_t r = real(dev);
    if (r == cudaSuccess)
        ana_set_current_device(dev);
    return r;
}

ANA_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    ANA_REAL(cudaGetDeviceProperties, (struct cudaDeviceProp *, int));
    ana_call c;
    if (!ana_enter(&c))
        return real(p, dev);
    cudaError_t r = real(p, dev);
    c.saved_errno = errno;
    if (r == cudaSuccess && p)
        ana_record_device_once(dev, p);
    ana_leave(&c);
    return r;
}

/* The capture range cudaProfilerApi (capture.c): the window opens after cudaProfilerStart
 * returned and closes after cudaProfilerStop returned. Not recorded as calls. */
ANA_EXPORT cudaError_t cudaProfilerStart(void)
{
    ANA_REAL(cudaProfilerStart, (void));
    cudaError_t r = real();
    int e = errno;
    ana_capture_profiler(1);
    errno = e;
    return r;
}

ANA_EXPORT cudaError_t cudaProfilerStop(void)
{
    ANA_REAL(cudaProfilerStop, (void));
    cudaError_t r = real();
    int e = errno;
    ana_capture_profiler(0);
    errno = e;
    return r;
}

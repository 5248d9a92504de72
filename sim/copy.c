/*
 * copy.c — memcpy and memset in all their forms (1D, 2D, to/from symbols, async, per-
 * thread default stream variants).
 *
 * Bytes really move: device memory is host memory, so a copy is a memmove done on the
 * calling thread, under the sim lock (a concurrent cudaFree cannot unmap the range
 * mid-copy). The device side of a copy must lie inside one known region, otherwise the
 * call fails with cudaErrorInvalidValue as on a GPU instead of faulting; the host side
 * of an explicit host copy is trusted, like pageable memory is on a GPU. The copy then
 * occupies its stream for the time the cost model gives it.
 */
#include "sim.h"

#include <string.h>

static int device_addressable(const void *p, size_t span)
{
    return ana_sim_mem_device_range_locked(p, span);
}

/* cudaMemcpyDefault: infer the direction from where the pointers live. */
static enum cudaMemcpyKind infer_kind(const void *dst, const void *src)
{
    const struct ana_sim_mem *d = ana_sim_mem_find_locked(dst);
    const struct ana_sim_mem *s = ana_sim_mem_find_locked(src);
    int dd = d && d->kind != ANA_SIM_MEM_HOST && d->kind != ANA_SIM_MEM_REGISTERED;
    int sd = s && s->kind != ANA_SIM_MEM_HOST && s->kind != ANA_SIM_MEM_REGISTERED;
    if (dd && sd)
        return cudaMemcpyDeviceToDevice;
    if (dd)
        return cudaMemcpyHostToDevice;
    if (sd)
        return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
}

/* Validates a (possibly pitched) copy whose spans are dspan/sspan bytes. */
static cudaError_t check_copy_locked(void *dst, size_t dspan, const void *src, size_t sspan,
                                     enum cudaMemcpyKind *kind)
{
    if ((unsigned)*kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    if (*kind == cudaMemcpyDefault)
        *kind = infer_kind(dst, src);
    int dst_dev = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
    int src_dev = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
    if ((dst_dev && !device_addressable(dst, dspan)) ||
        (src_dev && !device_addressable(src, sspan)))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

static void charge_copy_locked(struct ana_sim_stream *s, size_t bytes,
                               enum cudaMemcpyKind kind)
{
    /* A host-to-host copy is done by the CPU and never reaches a stream. */
    if (kind != cudaMemcpyHostToHost)
        ana_sim_stream_enqueue_locked(s, ana_sim_cost_copy_ns(bytes, kind));
}

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t stream, int ptsz)
{
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err != cudaSuccess || width == 0 || height == 0) {
        if (err == cudaSuccess && (unsigned)kind > cudaMemcpyDefault)
            err = cudaErrorInvalidMemcpyDirection;
        goto out;
    }
    err = check_copy_locked(dst, dpitch * (height - 1) + width, src,
                            spitch * (height - 1) + width, &kind);
    if (err != cudaSuccess)
        goto out;
    for (size_t row = 0; row < height; row++)
        memmove((char *)dst + row * dpitch, (const char *)src + row * spitch, width);
    charge_copy_locked(s, width * height, kind);
out:
    ana_sim_leave();
    return err;
}

static cudaError_t copy_1d(void *dst, const void *src, size_t count,
                           enum cudaMemcpyKind kind, cudaStream_t stream, int ptsz)
{
    return copy_2d(dst, count, src, count, count, 1, kind, stream, ptsz);
}

ANA_SIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind)
{
    return ana_sim_ret(copy_1d(dst, src, count, kind, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind)
{
    return ana_sim_ret(copy_1d(dst, src, count, kind, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return ana_sim_ret(copy_1d(dst, src, count, kind, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                             enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return ana_sim_ret(copy_1d(dst, src, count, kind, stream, 1));
}

ANA_SIM_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind)
{
    return ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind)
{
    return ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                          size_t spitch, size_t width, size_t height,
                                          enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                               size_t spitch, size_t width, size_t height,
                                               enum cudaMemcpyKind kind,
                                               cudaStream_t stream)
{
    return ana_sim_ret(copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, 1));
}

/* One device: a peer copy is a device-to-device copy on device 0. */
ANA_SIM_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src,
                                            int srcDevice, size_t count, cudaStream_t stream)
{
    if (dstDevice != 0 || srcDevice != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    return ana_sim_ret(copy_1d(dst, src, count, cudaMemcpyDeviceToDevice, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src,
                                       int srcDevice, size_t count)
{
    return cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, count, NULL);
}

/* ---- memset ---------------------------------------------------------------------- */

static cudaError_t set_2d(void *devPtr, size_t pitch, int value, size_t width,
                          size_t height, cudaStream_t stream, int ptsz)
{
    if (width > pitch)
        return cudaErrorInvalidValue;
    struct ana_sim_stream *s;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err != cudaSuccess || width == 0 || height == 0)
        goto out;
    if (!device_addressable(devPtr, pitch * (height - 1) + width)) {
        err = cudaErrorInvalidValue;
        goto out;
    }
    for (size_t row = 0; row < height; row++)
        memset((char *)devPtr + row * pitch, value, width);
    ana_sim_stream_enqueue_locked(s, ana_sim_cost_memset_ns(width * height));
out:
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return ana_sim_ret(set_2d(devPtr, count, value, count, 1, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return ana_sim_ret(set_2d(devPtr, count, value, count, 1, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
                                        cudaStream_t stream)
{
    return ana_sim_ret(set_2d(devPtr, count, value, count, 1, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
                                             cudaStream_t stream)
{
    return ana_sim_ret(set_2d(devPtr, count, value, count, 1, stream, 1));
}

ANA_SIM_API cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width,
                                     size_t height)
{
    return ana_sim_ret(set_2d(devPtr, pitch, value, width, height, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value,
                                          size_t width, size_t height)
{
    return ana_sim_ret(set_2d(devPtr, pitch, value, width, height, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value,
                                          size_t width, size_t height, cudaStream_t stream)
{
    return ana_sim_ret(set_2d(devPtr, pitch, value, width, height, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value,
                                               size_t width, size_t height,
                                               cudaStream_t stream)
{
    return ana_sim_ret(set_2d(devPtr, pitch, value, width, height, stream, 1));
}

/* ---- symbols --------------------------------------------------------------------- */

/* Copies between a registered __device__/__constant__ variable and memory. */
static cudaError_t symbol_copy(const void *symbol, void *mem, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, int to_symbol,
                               cudaStream_t stream, int ptsz)
{
    char *storage;
    size_t size;
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, &size);
    ana_sim_leave();
    if (!found)
        return cudaErrorInvalidSymbol;
    enum cudaMemcpyKind host_side = to_symbol ? cudaMemcpyHostToDevice
                                              : cudaMemcpyDeviceToHost;
    if (kind != host_side && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (offset > size || count > size - offset)
        return cudaErrorInvalidValue;
    if (to_symbol)
        return copy_1d(storage + offset, mem, count, kind, stream, ptsz);
    return copy_1d(mem, storage + offset, count, kind, stream, ptsz);
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src,
                                           size_t count, size_t offset,
                                           enum cudaMemcpyKind kind)
{
    return ana_sim_ret(symbol_copy(symbol, (void *)src, count, offset, kind, 1, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src,
                                                size_t count, size_t offset,
                                                enum cudaMemcpyKind kind)
{
    return ana_sim_ret(symbol_copy(symbol, (void *)src, count, offset, kind, 1, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count,
                                             size_t offset, enum cudaMemcpyKind kind)
{
    return ana_sim_ret(symbol_copy(symbol, dst, count, offset, kind, 0, NULL, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol,
                                                  size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind)
{
    return ana_sim_ret(symbol_copy(symbol, dst, count, offset, kind, 0, NULL, 1));
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src,
                                                size_t count, size_t offset,
                                                enum cudaMemcpyKind kind,
                                                cudaStream_t stream)
{
    return ana_sim_ret(symbol_copy(symbol, (void *)src, count, offset, kind, 1, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src,
                                                     size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind,
                                                     cudaStream_t stream)
{
    return ana_sim_ret(symbol_copy(symbol, (void *)src, count, offset, kind, 1, stream, 1));
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol,
                                                  size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind,
                                                  cudaStream_t stream)
{
    return ana_sim_ret(symbol_copy(symbol, dst, count, offset, kind, 0, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol,
                                                       size_t count, size_t offset,
                                                       enum cudaMemcpyKind kind,
                                                       cudaStream_t stream)
{
    return ana_sim_ret(symbol_copy(symbol, dst, count, offset, kind, 0, stream, 1));
}

ANA_SIM_API cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    char *storage;
    size_t size;
    if (!devPtr)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, &size);
    ana_sim_leave();
    if (!found)
        return ana_sim_ret(cudaErrorInvalidSymbol);
    *devPtr = storage;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    char *storage;
    if (!size)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    int found = ana_sim_symbol_find_locked(symbol, &storage, size);
    ana_sim_leave();
    return ana_sim_ret(found ? cudaSuccess : cudaErrorInvalidSymbol);
}

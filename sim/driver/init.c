/*
 * init.c — cuInit, the version, the one device and its primary context.
 *
 * As with NVIDIA's driver, every entry point except cuInit, cuDriverGetVersion,
 * cuGetErrorName/String and cuGetProcAddress answers CUDA_ERROR_NOT_INITIALIZED until
 * cuInit(0) has succeeded (the runtime calls it when it loads this library; the check is
 * ANA_DRV_RETURN_INIT's). Contexts are simpler than NVIDIA's: there is one, the device's
 * primary context; memory calls do not require it to be current (NVIDIA's would answer
 * CUDA_ERROR_INVALID_CONTEXT), and cuCtxGetDevice answers device 0 even when no context is
 * current. cuCtxSynchronize is the runtime's cudaDeviceSynchronize.
 */
#include "driver.h"

#include <stdatomic.h>
#include <stdio.h>

/* The primary context's handle: the address of this object, never dereferenced. */
static char primary_context;
#define PRIMARY ((CUcontext)(void *)&primary_context)

static atomic_int initialised;
static _Atomic unsigned primary_refs;
static __thread CUcontext current;

CUresult ana_drv_initialised(void)
{
    return atomic_load(&initialised) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult init(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&initialised, 1);
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuInit(unsigned int Flags)
{
    cuInit_params p = { .Flags = Flags };
    ANA_DRV_RETURN(cuInit, &p, init(Flags));
}

static CUresult driver_version(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = ANA_SIM_CUDA_VERSION;
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuDriverGetVersion(int *driverVersion)
{
    cuDriverGetVersion_params p = { .driverVersion = driverVersion };
    ANA_DRV_RETURN(cuDriverGetVersion, &p, driver_version(driverVersion));
}

/* ---- the device ------------------------------------------------------------------- */

/* A non-NULL output, and device 0. */
static CUresult check(const void *out, CUdevice dev)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult device_get(CUdevice *device, int ordinal)
{
    CUresult r = check(device, ordinal);
    if (r == CUDA_SUCCESS)
        *device = 0;
    return r;
}

ANA_DRV_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    cuDeviceGet_params p = { .device = device, .ordinal = ordinal };
    ANA_DRV_RETURN_INIT(cuDeviceGet, &p, device_get(device, ordinal));
}

static CUresult device_count(int *count)
{
    CUresult r = check(count, 0);
    if (r == CUDA_SUCCESS)
        *count = 1;
    return r;
}

ANA_DRV_API CUresult cuDeviceGetCount(int *count)
{
    cuDeviceGetCount_params p = { .count = count };
    ANA_DRV_RETURN_INIT(cuDeviceGetCount, &p, device_count(count));
}

static CUresult device_name(char *name, int len, CUdevice dev)
{
    CUresult r = check(name, dev);
    if (r == CUDA_SUCCESS && len <= 0)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        snprintf(name, (size_t)len, "%s", ANA_SIM_DEVICE_NAME);
    return r;
}

ANA_DRV_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    cuDeviceGetName_params p = { .name = name, .len = len, .dev = dev };
    ANA_DRV_RETURN_INIT(cuDeviceGetName, &p, device_name(name, len, dev));
}

static CUresult total_mem(size_t *bytes, CUdevice dev)
{
    size_t free_bytes;
    CUresult r = check(bytes, dev);
    if (r == CUDA_SUCCESS)
        anasim_mem_info(&free_bytes, bytes);
    return r;
}

ANA_DRV_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    cuDeviceTotalMem_v2_params p = { .bytes = bytes, .dev = dev };
    ANA_DRV_RETURN_INIT(cuDeviceTotalMem_v2, &p, total_mem(bytes, dev));
}

static CUresult attribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = check(pi, dev);
    return r == CUDA_SUCCESS ? anasim_device_attribute((int)attrib, pi) : r;
}

ANA_DRV_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    cuDeviceGetAttribute_params p = { .pi = pi, .attrib = attrib, .dev = dev };
    ANA_DRV_RETURN_INIT(cuDeviceGetAttribute, &p, attribute(pi, attrib, dev));
}

/* ---- the primary context ---------------------------------------------------------- */

static CUresult retain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check(pctx, dev);
    if (r == CUDA_SUCCESS) {
        atomic_fetch_add(&primary_refs, 1);
        *pctx = PRIMARY;
    }
    return r;
}

ANA_DRV_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    cuDevicePrimaryCtxRetain_params p = { .pctx = pctx, .dev = dev };
    ANA_DRV_RETURN_INIT(cuDevicePrimaryCtxRetain, &p, retain(pctx, dev));
}

/* Releasing more often than retained is CUDA_ERROR_INVALID_CONTEXT. The context (and the
 * memory in it) lives on: cudaDeviceReset is what destroys it in the sim. */
static CUresult release(CUdevice dev)
{
    CUresult r = check(&primary_refs, dev);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned n = atomic_load(&primary_refs);
    while (n > 0 && !atomic_compare_exchange_weak(&primary_refs, &n, n - 1))
        ;
    return n > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

ANA_DRV_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    cuDevicePrimaryCtxRelease_v2_params p = { .dev = dev };
    ANA_DRV_RETURN_INIT(cuDevicePrimaryCtxRelease_v2, &p, release(dev));
}

ANA_DRV_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    cuDevicePrimaryCtxRelease_params p = { .dev = dev };
    ANA_DRV_RETURN_INIT(cuDevicePrimaryCtxRelease, &p, release(dev));
}

static CUresult get_current(CUcontext *pctx)
{
    CUresult r = check(pctx, 0);
    if (r == CUDA_SUCCESS)
        *pctx = current;
    return r;
}

ANA_DRV_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    cuCtxGetCurrent_params p = { .pctx = pctx };
    ANA_DRV_RETURN_INIT(cuCtxGetCurrent, &p, get_current(pctx));
}

static CUresult set_current(CUcontext ctx)
{
    if (ctx && ctx != PRIMARY)
        return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    cuCtxSetCurrent_params p = { .ctx = ctx };
    ANA_DRV_RETURN_INIT(cuCtxSetCurrent, &p, set_current(ctx));
}

ANA_DRV_API CUresult cuCtxGetDevice(CUdevice *device)
{
    cuCtxGetDevice_params p = { .device = device };
    ANA_DRV_RETURN_INIT(cuCtxGetDevice, &p, device_get(device, 0));
}

/* The runtime's cudaDeviceSynchronize: work is complete when it is submitted, and the
 * calling thread's later work starts after everything submitted so far. */
static CUresult synchronize(void)
{
    anasim_device_synchronize();
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuCtxSynchronize(void)
{
    ANA_DRV_RETURN_INIT(cuCtxSynchronize, NULL, synchronize());
}

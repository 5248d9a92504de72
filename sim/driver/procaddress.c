/*
 * procaddress.c — cuGetProcAddress_v2 (and the older cuGetProcAddress without the status
 * argument): driver entry points by base name, CUDA version and stream flavour.
 *
 * The table lists every entry point this library implements under the base name a caller
 * asks for ("cuMemAlloc"), with the CUDA version that introduced each variant: a request
 * gets the newest variant not newer than its cudaVersion ("cuMemAlloc" for 3020 or later
 * is cuMemAlloc_v2). With CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread
 * (_ptsz) variant is preferred where one exists. An unknown name answers
 * CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, a known one asked for
 * with a version older than all its variants CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT (NVIDIA's libraries answer the same error,
 * which the runtime turns into cudaErrorSymbolNotFound). A cudaVersion newer than the
 * driver's is accepted (NVIDIA documents CUDA_ERROR_INVALID_VALUE): programs built with a
 * newer toolkit keep working on the sim. Works before cuInit, as NVIDIA's does.
 */
#include "driver.h"   /* also declares cuGetProcAddress, cuDevicePrimaryCtxRelease */

#include <string.h>

typedef void (*fn_t)(void);

static const struct entry {
    const char *name;   /* base name */
    int version;        /* CUDA version that introduced this variant */
    int ptsz;           /* the per-thread-default-stream variant */
    fn_t fn;
} table[] = {
#define E(name, version, ptsz, fn) { name, version, ptsz, (fn_t)(fn) }
    E("cuInit", 2000, 0, cuInit),
    E("cuDriverGetVersion", 2020, 0, cuDriverGetVersion),
    E("cuGetErrorName", 6000, 0, cuGetErrorName),
    E("cuGetErrorString", 6000, 0, cuGetErrorString),
    E("cuGetProcAddress", 11030, 0, cuGetProcAddress),
    E("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2),
    E("cuDeviceGet", 2000, 0, cuDeviceGet),
    E("cuDeviceGetCount", 2000, 0, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, 0, cuDeviceGetName),
    E("cuDeviceTotalMem", 3020, 0, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, 0, cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", 7000, 0, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 7000, 0, cuDevicePrimaryCtxRelease),
    E("cuDevicePrimaryCtxRelease", 11000, 0, cuDevicePrimaryCtxRelease_v2),
    E("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent),
    E("cuCtxSetCurrent", 4000, 0, cuCtxSetCurrent),
    E("cuCtxGetDevice", 2000, 0, cuCtxGetDevice),
    E("cuCtxSynchronize", 2000, 0, cuCtxSynchronize),
    E("cuMemAlloc", 3020, 0, cuMemAlloc_v2),
    E("cuMemFree", 3020, 0, cuMemFree_v2),
    E("cuMemAllocPitch", 3020, 0, cuMemAllocPitch_v2),
    E("cuMemAllocManaged", 6000, 0, cuMemAllocManaged),
    E("cuMemAllocHost", 3020, 0, cuMemAllocHost_v2),
    E("cuMemHostAlloc", 2020, 0, cuMemHostAlloc),
    E("cuMemFreeHost", 2000, 0, cuMemFreeHost),
    E("cuMemAllocAsync", 11020, 0, cuMemAllocAsync),
    E("cuMemAllocAsync", 11020, 1, cuMemAllocAsync_ptsz),
    E("cuMemFreeAsync", 11020, 0, cuMemFreeAsync),
    E("cuMemFreeAsync", 11020, 1, cuMemFreeAsync_ptsz),
    E("cuMemAllocFromPoolAsync", 11020, 0, cuMemAllocFromPoolAsync),
    E("cuMemAllocFromPoolAsync", 11020, 1, cuMemAllocFromPoolAsync_ptsz),
    E("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2),
    E("cuMemGetAddressRange", 3020, 0, cuMemGetAddressRange_v2),
    E("cuMemGetAllocationGranularity", 10020, 0, cuMemGetAllocationGranularity),
    E("cuMemCreate", 10020, 0, cuMemCreate),
    E("cuMemRelease", 10020, 0, cuMemRelease),
    E("cuMemAddressReserve", 10020, 0, cuMemAddressReserve),
    E("cuMemAddressFree", 10020, 0, cuMemAddressFree),
    E("cuMemMap", 10020, 0, cuMemMap),
    E("cuMemUnmap", 10020, 0, cuMemUnmap),
    E("cuMemSetAccess", 10020, 0, cuMemSetAccess),
    E("cuMemsetD8", 3020, 0, cuMemsetD8_v2),
    E("cuMemcpyHtoD", 3020, 0, cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", 3020, 0, cuMemcpyDtoH_v2),
    E("cuMemcpyDtoD", 3020, 0, cuMemcpyDtoD_v2),
    E("cuLaunchKernel", 4000, 0, cuLaunchKernel),
    E("cuLaunchKernel", 7000, 1, cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, 0, cuLaunchKernelEx),
    E("cuLaunchKernelEx", 11060, 1, cuLaunchKernelEx_ptsz),
    E("cuFuncGetName", 12030, 0, cuFuncGetName),
    E("cuFuncGetParamInfo", 12040, 0, cuFuncGetParamInfo),
    E("cuKernelGetParamInfo", 12040, 0, cuKernelGetParamInfo),
#undef E
};

/* The newest variant of `name` for `version` in the requested stream flavour. */
static const struct entry *lookup(const char *name, int version, int ptsz, int *known)
{
    const struct entry *best = NULL;
    *known = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        const struct entry *e = &table[i];
        if (strcmp(e->name, name) != 0)
            continue;
        *known = 1;
        if (e->ptsz != ptsz || e->version > version)
            continue;
        if (!best || e->version > best->version)
            best = e;
    }
    return best;
}

static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    const cuuint64_t known_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (!symbol || !pfn || (flags & ~known_flags))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    int known;
    const struct entry *e = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        e = lookup(symbol, version, 1, &known);
    if (!e)
        e = lookup(symbol, version, 0, &known);
    if (status)
        *status = e ? CU_GET_PROC_ADDRESS_SUCCESS
                : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!e)
        return CUDA_ERROR_NOT_FOUND;
    memcpy(pfn, &e->fn, sizeof(e->fn));   /* function pointer to object pointer */
    return CUDA_SUCCESS;
}

ANA_DRV_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
    cuGetProcAddress_v2_params p = { .symbol = symbol, .pfn = pfn, .cudaVersion = cudaVersion,
                                     .flags = flags, .symbolStatus = symbolStatus };
    ANA_DRV_RETURN(cuGetProcAddress_v2, &p,
                   get_proc(symbol, pfn, cudaVersion, flags, symbolStatus));
}

ANA_DRV_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags)
{
    cuGetProcAddress_params p = { .symbol = symbol, .pfn = pfn, .cudaVersion = cudaVersion,
                                  .flags = flags };
    ANA_DRV_RETURN(cuGetProcAddress, &p, get_proc(symbol, pfn, cudaVersion, flags, NULL));
}

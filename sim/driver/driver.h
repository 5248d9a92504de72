/*
 * driver.h — internal contract of the sim's libcuda.so.1 (the CUDA driver API).
 *
 * What it does: answers the driver entry points NVIDIA's libcuda.so.1 exports (unversioned
 * symbols, like NVIDIA's) on the simulated device. It owns no device state: memory,
 * capacity, streams and clocks live in the sim's libcudart.so.13, reached through the
 * private anasim_* interface (../anasim.h); this library only keeps what is the driver's
 * alone — the initialised flag, the current context, and the virtual-memory objects
 * (physical handles and reserved address ranges, vmm.c).
 *
 * Every exported entry point is bracketed by anasim_api_enter/exit (domain
 * CUPTI_CB_DOMAIN_DRIVER_API, the cbid of cupti_driver_cbid.h, the params struct of
 * generated_cuda_meta.h), so a CUPTI client sees driver calls — the application's own and
 * those the runtime makes inside its calls, which share the runtime call's correlation id.
 *
 * Thread-safety: every entry point is thread-safe; vmm.c has its own mutex and never holds
 * it across a call into libcudart that could call back.
 *
 * cuda.h renames many entry points with macros (cuMemAlloc is cuMemAlloc_v2); the
 * sources define the real names (cuMemAlloc_v2), and this header #undefs a macro where
 * NVIDIA's library also exports the older name (cuGetProcAddress,
 * cuDevicePrimaryCtxRelease).
 */
#ifndef ANA_DRV_H
#define ANA_DRV_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "anasim.h"

#define ANA_DRV_API __attribute__((visibility("default")))

/* Exported per-thread-stream entry points that cuda.h declares only with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM. */
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream hStream);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra);

/* Exported under names cuda.h maps to newer versions (cuGetProcAddress is
 * cuGetProcAddress_v2 there, cuDevicePrimaryCtxRelease ..._v2): the older entry points. */
#undef cuGetProcAddress
#undef cuDevicePrimaryCtxRelease
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);

/* The device name, version and pitch alignment are the runtime's (anasim.h). */
#define ANA_DRV_GRANULARITY  (2u << 20)                   /* VMM granularity, bytes */

/* Brackets one driver API call for the observer and returns `expr`, evaluated between
 * entry and exit. `fn` names the cbid (CUPTI_DRIVER_TRACE_CBID_<fn>) and the reported name;
 * params points to its <fn>_params struct, or is NULL for a call without parameters. */
#define ANA_DRV_RETURN(fn, params, expr)                                                   \
    ANASIM_RETURN(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##fn, #fn, (params),     \
                  CUresult, expr)

/* ANA_DRV_RETURN for an entry point that needs cuInit: CUDA_ERROR_NOT_INITIALIZED before
 * it (and `expr` is not evaluated), else `expr`. Every entry point but cuInit,
 * cuDriverGetVersion, cuGetErrorName/String and cuGetProcAddress(_v2) uses it. */
#define ANA_DRV_RETURN_INIT(fn, params, expr)                                              \
    ANA_DRV_RETURN(fn, params,                                                             \
                   ana_drv_initialised() == CUDA_SUCCESS ? (expr) : CUDA_ERROR_NOT_INITIALIZED)

/* init.c: CUDA_SUCCESS once cuInit has succeeded, CUDA_ERROR_NOT_INITIALIZED before. */
CUresult ana_drv_initialised(void);

/* errors.c: "CUDA_ERROR_OUT_OF_MEMORY" for 2, NULL for a code CUDA 13.0 does not have. */
const char *ana_drv_error_name(CUresult r);

#endif /* ANA_DRV_H */

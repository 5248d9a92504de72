/*
 * launch.c — the driver's kernel launches (cuLaunchKernel, cuLaunchKernelEx, their _ptsz
 * forms), cuFuncGetName and the parameter layouts (cuFuncGetParamInfo, cuKernelGetParamInfo,
 * read from the kernel's cubin by the runtime: anasim_kernel_param_info).
 *
 * A kernel is named by a handle the runtime gives out: cudaGetFuncBySymbol's
 * cudaFunction_t (a CUfunction, as CUDA lets the two be cast) or cudaGetKernel's
 * cudaKernel_t (a CUkernel, which cuLaunchKernel also accepts). The launch runs through the
 * runtime's device path (anasim_kernel_launch): the same validation, cost model, stream
 * capture and CUpti_ActivityKernel10 record as a runtime launch, with the correlation id of
 * this driver call. Kernels do not run, so kernelParams and extra are not read; passing
 * both is CUDA_ERROR_INVALID_VALUE, as NVIDIA documents. A handle that is not a loaded
 * kernel (a host stub, a foreign pointer, NULL) is CUDA_ERROR_INVALID_HANDLE.
 */
#include "driver.h"


static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                       unsigned smem, CUstream stream, int ptsz, int cooperative,
                       void **kernelParams, void **extra)
{
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE;
    anasim_launch req = { .func = f, .smem = smem, .stream = stream, .ptsz = ptsz,
                          .cooperative = cooperative };
    for (int i = 0; i < 3; i++) {
        req.grid[i] = grid[i];
        req.block[i] = block[i];
    }
    return anasim_kernel_launch(&req);
}

#define LAUNCH_ARGS(p)                                                                    \
    (const unsigned[3]){ (p)->gridDimX, (p)->gridDimY, (p)->gridDimZ },                   \
    (const unsigned[3]){ (p)->blockDimX, (p)->blockDimY, (p)->blockDimZ }, (p)->sharedMemBytes

ANA_DRV_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    cuLaunchKernel_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                blockDimZ, sharedMemBytes, hStream, kernelParams, extra };
    ANA_DRV_RETURN_INIT(cuLaunchKernel, &p,
                        launch(f, LAUNCH_ARGS(&p), hStream, 0, 0, kernelParams, extra));
}

ANA_DRV_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                         unsigned int gridDimY, unsigned int gridDimZ,
                                         unsigned int blockDimX, unsigned int blockDimY,
                                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                                         CUstream hStream, void **kernelParams, void **extra)
{
    cuLaunchKernel_ptsz_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                     blockDimZ, sharedMemBytes, hStream, kernelParams, extra };
    ANA_DRV_RETURN_INIT(cuLaunchKernel_ptsz, &p,
                        launch(f, LAUNCH_ARGS(&p), hStream, 1, 0, kernelParams, extra));
}

/* Launch attributes other than cooperative (clusters, priorities, ...) do not change the
 * cost model and are accepted as given. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, int ptsz,
                          void **kernelParams, void **extra)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    int cooperative = 0;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            cooperative = config->attrs[i].value.cooperative != 0;
    return launch(f, LAUNCH_ARGS(config), config->hStream, ptsz, cooperative, kernelParams,
                  extra);
}

ANA_DRV_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    cuLaunchKernelEx_params p = { config, f, kernelParams, extra };
    ANA_DRV_RETURN_INIT(cuLaunchKernelEx, &p, launch_ex(config, f, 0, kernelParams, extra));
}

ANA_DRV_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **kernelParams, void **extra)
{
    cuLaunchKernelEx_ptsz_params p = { config, f, kernelParams, extra };
    ANA_DRV_RETURN_INIT(cuLaunchKernelEx_ptsz, &p,
                        launch_ex(config, f, 1, kernelParams, extra));
}

static CUresult func_name(const char **name, CUfunction f)
{
    return name ? anasim_kernel_name(f, name) : CUDA_ERROR_INVALID_VALUE;
}

ANA_DRV_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    cuFuncGetName_params p = { name, hfunc };
    ANA_DRV_RETURN_INIT(cuFuncGetName, &p, func_name(name, hfunc));
}

ANA_DRV_API CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                        size_t *paramSize)
{
    cuFuncGetParamInfo_params p = { func, paramIndex, paramOffset, paramSize };
    ANA_DRV_RETURN_INIT(cuFuncGetParamInfo, &p,
                        anasim_kernel_param_info(func, paramIndex, paramOffset, paramSize));
}

/* A CUkernel is the same kernel record as a CUfunction here (cudaGetKernel's handle). */
ANA_DRV_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                          size_t *paramOffset, size_t *paramSize)
{
    cuKernelGetParamInfo_params p = { kernel, paramIndex, paramOffset, paramSize };
    ANA_DRV_RETURN_INIT(cuKernelGetParamInfo, &p,
                        anasim_kernel_param_info(kernel, paramIndex, paramOffset, paramSize));
}

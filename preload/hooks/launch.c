/* launch.c — kernel registration (names) and every kernel-launch entry point of the CUDA
 * runtime. Called by the program only; calls calls/ (the LAUNCH builder), runtime.c
 * (ana_missing) and the core (the bracket, kernel names). */
#include "hooks.h"

#include <errno.h>

/* Registration learns names; it records and starts nothing (nvcc-built programs and
 * `import torch` register before main: a session or CUPTI started here would initialise
 * the driver before a program that forks workers has forked them). */
ANA_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                       const char *deviceName, int thread_limit, uint3 *tid,
                                       uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    typedef void (*fn_t)(void **, const char *, char *, const char *, int, uint3 *, uint3 *, dim3 *, dim3 *, int *);
    static fn_t real;
    if (!real)
        real = (fn_t)ana_resolve("__cudaRegisterFunction");
    if (real)
        real(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
    else
        ana_missing("__cudaRegisterFunction");
    if (ana_cfg.disable || ana_tls_busy)
        return;
    int e = errno;
    ana_kernel_register(hostFun, deviceName ? deviceName : deviceFun);
    errno = e;
}

ANA_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    ANA_REAL(__cudaGetKernel, (cudaKernel_t *, const void *));
    cudaError_t r = real(kernel, hostFun);
    if (r == cudaSuccess && kernel) {
        int e = errno;
        ana_kernel_map_handle(*kernel, hostFun);
        errno = e;
    }
    return r;
}

#define LAUNCH_PARAMS (const void *f, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)
#define STUB_PARAMS (cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)

/* The parameter layout is asked of what the launch names (a host stub or a cudaKernel_t:
 * cudaFuncGetParamInfo takes both). */
#define LAUNCH_HOOK(name, api, params, first, kernel_id)                                \
    ANA_HOOK(name, params, (first, g, b, a, sh, s),                                     \
             ana_rec_launch_done(&c, api, r, kernel_id, g, b, sh, ANA_U64(s),           \
                                 &(ana_launch_args){ (const void *)first, a, 0 }))

LAUNCH_HOOK(cudaLaunchKernel, ANA_API_LAUNCH_KERNEL, LAUNCH_PARAMS, f, ana_kernel_id_of_fn(f))
LAUNCH_HOOK(cudaLaunchKernel_ptsz, ANA_API_LAUNCH_KERNEL_PTSZ, LAUNCH_PARAMS, f, ana_kernel_id_of_fn(f))
LAUNCH_HOOK(__cudaLaunchKernel, ANA_API_STUB_LAUNCH_KERNEL, STUB_PARAMS, k, ana_kernel_id_of_handle(k))
LAUNCH_HOOK(__cudaLaunchKernel_ptsz, ANA_API_STUB_LAUNCH_KERNEL_PTSZ, STUB_PARAMS, k, ana_kernel_id_of_handle(k))

#define EXC_HOOK(name, api)                                                                   \
    ANA_EXPORT cudaError_t name(const cudaLaunchConfig_t *cfg, const void *f, void **a)        \
    {                                                                                          \
        ANA_REAL(name, (const cudaLaunchConfig_t *, const void *, void **));                   \
        ana_call c;                                                                            \
        if (!cfg || !ana_enter(&c))                                                            \
            ANA_PASS(cudaError_t, real(cfg, f, a));                                            \
        cudaError_t r = real(cfg, f, a);                                                       \
        ana_rec_launch_done(&c, api, r, ana_kernel_id_of_fn(f), cfg->gridDim, cfg->blockDim,   \
                            cfg->dynamicSmemBytes, ANA_U64(cfg->stream),                       \
                            &(ana_launch_args){ f, a, 0 });                                    \
        return r;                                                                              \
    }

EXC_HOOK(cudaLaunchKernelExC, ANA_API_LAUNCH_KERNEL_EXC)
EXC_HOOK(cudaLaunchKernelExC_ptsz, ANA_API_LAUNCH_KERNEL_EXC_PTSZ)

/* Cooperative launches: the same record as cudaLaunchKernel, both variants api 18. */
LAUNCH_HOOK(cudaLaunchCooperativeKernel, ANA_API_LAUNCH_COOPERATIVE, LAUNCH_PARAMS, f, ana_kernel_id_of_fn(f))
LAUNCH_HOOK(cudaLaunchCooperativeKernel_ptsz, ANA_API_LAUNCH_COOPERATIVE, LAUNCH_PARAMS, f, ana_kernel_id_of_fn(f))

/* Graph launches: which kernels a graph runs is not known here (kernel 0, no dimensions);
 * GPU activity records carry them when CUPTI runs. */
static const dim3 no_dims = { 0, 0, 0 };
#define GRAPH_HOOK(name, api)                                                               \
    ANA_HOOK(name, (cudaGraphExec_t g, cudaStream_t s), (g, s),                             \
             ana_rec_launch_done(&c, api, r, 0, no_dims, no_dims, 0, ANA_U64(s), NULL))

GRAPH_HOOK(cudaGraphLaunch, ANA_API_GRAPH_LAUNCH)
GRAPH_HOOK(cudaGraphLaunch_ptsz, ANA_API_GRAPH_LAUNCH_PTSZ)

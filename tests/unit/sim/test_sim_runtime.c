/*
 * Simulated runtime: per-thread last error, error strings, device queries, streams and
 * events, the cost model (expected values computed here from the formulas in
 * docs/sim.md), kernel registration through the nvcc stub ABI, and module variables.
 */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "stub_abi.h" /* the nvcc stub ABI */

static double kernel_ms(double threads) { return (3000.0 + threads * 0.02) / 1e6; }
static double pageable_ms(double bytes) { return bytes / 12e9 * 1e3; }
static double hbm_ms(double bytes) { return bytes / 1.5e12 * 1e3; }

static char fatbin_stand_in[16];
static void fake_kernel(void) {}
static void other_kernel(void) {}
static void never_registered(void) {}
static float shadow_table[16];
static int *managed_shadow;
static void **module;

static void register_module(void)
{
    module = __cudaRegisterFatBinary(fatbin_stand_in);
    cr_assert_not_null(module);
    __cudaRegisterFunction(module, (const char *)fake_kernel, "_Z11fake_kernelv",
                           "_Z11fake_kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(module, (const char *)other_kernel, "_Z12other_kernelv",
                           "_Z12other_kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterVar(module, (char *)shadow_table, "shadow_table", "shadow_table", 0,
                      sizeof(shadow_table), 0, 0);
    __cudaRegisterManagedVar(module, (void **)&managed_shadow, "managed_shadow",
                             "managed_shadow", 0, sizeof(int), 0, 0);
    __cudaRegisterFatBinaryEnd(module);
}

/* Makes a stream busy far into the future (~22 s of device time), so that work queued
 * behind it starts exactly when the previous work ends, independent of host time. */
static void make_busy(cudaStream_t s)
{
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, (dim3){ 1u << 30, 1, 1 },
                                  (dim3){ 1024, 1, 1 }, NULL, 0, s), cudaSuccess);
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    cr_assert_eq(cudaEventSynchronize(b), cudaSuccess);
    cr_assert_eq(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return ms;
}

TestSuite(sim_runtime, .init = register_module);

static void *fail_in_thread(void *arg)
{
    cudaError_t *seen = arg;
    seen[0] = cudaSetDevice(3);
    seen[1] = cudaGetLastError();
    seen[2] = cudaGetLastError();
    return NULL;
}

Test(sim_runtime, last_error_is_per_thread)
{
    cudaError_t seen[3];
    pthread_t t;
    cr_assert_eq(cudaMalloc(NULL, 1), cudaErrorInvalidValue);
    pthread_create(&t, NULL, fail_in_thread, seen);
    pthread_join(t, NULL);
    cr_assert_eq(seen[0], cudaErrorInvalidDevice);
    cr_assert_eq(seen[1], cudaErrorInvalidDevice);
    cr_assert_eq(seen[2], cudaSuccess);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue, "not the other thread's");
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue, "peek does not reset");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "a success does not set the last error");
}

Test(sim_runtime, error_names_and_strings)
{
    cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
    cr_assert_str_eq(cudaGetErrorString(cudaSuccess), "no error");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorInvalidResourceHandle),
                     "cudaErrorInvalidResourceHandle");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorUnknown), "unknown error");
    cr_assert_str_eq(cudaGetErrorString((cudaError_t)12345), "unrecognized error code");
    cr_assert_str_eq(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
}

Test(sim_runtime, device_queries)
{
    int n = 0, v = 0;
    struct cudaDeviceProp p;
    cr_assert_eq(cudaGetDeviceCount(&n), cudaSuccess);
    cr_assert_eq(n, 1);
    cr_assert_eq(cudaGetDevice(&v), cudaSuccess);
    cr_assert_eq(v, 0);
    cr_assert_eq(cudaSetDevice(1), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    cr_assert_str_eq(p.name, "Anatomist Simulated H100");
    cr_assert_eq(p.multiProcessorCount, 132);
    cr_assert_eq(p.major, 9);
    cr_assert_eq(p.minor, 0);
    cr_assert_eq(p.warpSize, 32);
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    cr_assert_eq(v, 132);
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
    cr_assert_eq(v, 9);
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrMax, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaRuntimeGetVersion(&v), cudaSuccess);
    cr_assert_eq(v, 13000);
    cr_assert_eq(cudaDriverGetVersion(&v), cudaSuccess);
    cr_assert_eq(v, 13000);
    size_t lim = 0;
    cr_assert_eq(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 24), cudaSuccess);
    cr_assert_eq(cudaDeviceGetLimit(&lim, cudaLimitMallocHeapSize), cudaSuccess);
    cr_assert_eq(lim, 1 << 24);
    /* Driver entry points come from the sim's libcuda.so.1 (docs/sim.md, "Driver"). */
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, cudaEnableDefault,
                                                  &st),
                 cudaSuccess);
    cr_assert_not_null(fn);
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    fn = (void *)1;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuNoSuchEntryPoint", &fn, 13000,
                                                  cudaEnableDefault, &st),
                 cudaErrorSymbolNotFound);
    cr_assert_null(fn);
    cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
    cr_assert_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
}

Test(sim_runtime, kernel_elapsed_time_matches_cost_model)
{
    cudaStream_t s;
    cudaEvent_t a, b;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&a), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&b), cudaSuccess);
    make_busy(s);
    cr_assert_eq(cudaEventRecord(a, s), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, (dim3){ 1000, 2, 1 },
                                  (dim3){ 256, 1, 1 }, NULL, 0, s), cudaSuccess);
    cr_assert_eq(cudaEventRecord(b, s), cudaSuccess);
    cr_assert_float_eq(elapsed(a, b), kernel_ms(1000.0 * 2 * 256), 1e-6);

    /* The <<<>>> path: push/pop configuration, handle from __cudaGetKernel. */
    cudaKernel_t k = NULL;
    dim3 g, blk;
    size_t smem;
    cudaStream_t st;
    cr_assert_eq(__cudaPushCallConfiguration((dim3){ 7, 1, 1 }, (dim3){ 32, 4, 1 }, 0, s), 0);
    cr_assert_eq(__cudaGetKernel(&k, (const void *)other_kernel), cudaSuccess);
    cr_assert_eq(__cudaPopCallConfiguration(&g, &blk, &smem, &st), cudaSuccess);
    cr_assert_eq(st, s);
    cr_assert_eq(cudaEventRecord(a, s), cudaSuccess);
    cr_assert_eq(__cudaLaunchKernel(k, g, blk, NULL, smem, st), cudaSuccess);
    cr_assert_eq(cudaEventRecord(b, s), cudaSuccess);
    cr_assert_float_eq(elapsed(a, b), kernel_ms(7.0 * 32 * 4), 1e-6);
}

Test(sim_runtime, copy_and_set_elapsed_time_match_cost_model)
{
    cudaStream_t s;
    cudaEvent_t a, b;
    static char host[1 << 20];
    char *d = NULL;
    cr_assert_eq(cudaMalloc((void **)&d, 4 << 20), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&a), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&b), cudaSuccess);
    make_busy(s);
    cr_assert_eq(cudaEventRecord(a, s), cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(d, host, 1 << 20, cudaMemcpyHostToDevice, s), cudaSuccess);
    cr_assert_eq(cudaEventRecord(b, s), cudaSuccess);
    cr_assert_float_eq(elapsed(a, b), pageable_ms(1 << 20), 1e-6); /* static host buffer: pageable */

    cr_assert_eq(cudaEventRecord(a, s), cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(d + 3000000, d, 1000000, cudaMemcpyDeviceToDevice, s),
                 cudaSuccess);
    cr_assert_eq(cudaMemsetAsync(d, 0, 3000000, s), cudaSuccess);
    cr_assert_eq(cudaEventRecord(b, s), cudaSuccess);
    cr_assert_float_eq(elapsed(a, b), hbm_ms(1000000) + hbm_ms(3000000), 1e-6);
}

Test(sim_runtime, legacy_stream_synchronises_with_blocking_streams)
{
    cudaStream_t blocking, nonblocking;
    cudaEvent_t a, b, c;
    cr_assert_eq(cudaStreamCreate(&blocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&a), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&b), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&c), cudaSuccess);
    cr_assert_eq(cudaEventRecord(a, nonblocking), cudaSuccess);
    make_busy(blocking);
    cr_assert_eq(cudaEventRecord(b, 0), cudaSuccess);            /* waits for `blocking` */
    cr_assert_eq(cudaEventRecord(c, nonblocking), cudaSuccess);  /* waits for no one */
    double busy = kernel_ms((double)(1u << 30) * 1024);
    cr_assert_float_eq(elapsed(a, b), busy, busy * 1e-3);
    cr_assert_lt(elapsed(a, c), 1000.0f, "a non-blocking stream is not held up");
    /* A stream waiting on an event starts after it. */
    cr_assert_eq(cudaStreamWaitEvent(nonblocking, b, 0), cudaSuccess);
    cr_assert_eq(cudaEventRecord(c, nonblocking), cudaSuccess);
    cr_assert_geq(elapsed(b, c), 0.0f);
    cr_assert_lt(elapsed(b, c), 1000.0f);
}

Test(sim_runtime, event_errors)
{
    cudaEvent_t timed, untimed, fresh;
    float ms;
    cr_assert_eq(cudaEventCreate(&timed), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&fresh), cudaSuccess);
    cr_assert_eq(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
    cr_assert_eq(cudaEventCreateWithFlags(&untimed, cudaEventInterprocess), cudaErrorInvalidValue);
    cr_assert_eq(cudaEventRecord(timed, cudaStreamPerThread), cudaSuccess);
    cr_assert_eq(cudaEventRecord(untimed, cudaStreamLegacy), cudaSuccess);
    cr_assert_eq(cudaEventQuery(fresh), cudaSuccess, "a never-recorded event is complete");
    cr_assert_eq(cudaEventElapsedTime(&ms, timed, fresh), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventElapsedTime(&ms, timed, untimed), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventElapsedTime(NULL, timed, timed), cudaErrorInvalidValue);
    cr_assert_eq(cudaEventElapsedTime(&ms, timed, timed), cudaSuccess);
    cr_assert_float_eq(ms, 0.0f, 1e-9);
    cr_assert_eq(cudaEventDestroy(fresh), cudaSuccess);
    cr_assert_eq(cudaEventQuery(fresh), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventDestroy(fresh), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

Test(sim_runtime, stream_handles)
{
    cudaStream_t s;
    int prio = 0;
    unsigned flags = 7;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusActive;
    cr_assert_eq(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100), cudaSuccess);
    cr_assert_eq(cudaStreamGetPriority(s, &prio), cudaSuccess);
    cr_assert_eq(prio, -5, "priorities are clamped to the device range");
    cr_assert_eq(cudaStreamGetFlags(s, &flags), cudaSuccess);
    cr_assert_eq(flags, cudaStreamNonBlocking);
    cr_assert_eq(cudaStreamIsCapturing(s, &cap), cudaSuccess);
    cr_assert_eq(cap, cudaStreamCaptureStatusNone);
    cr_assert_eq(cudaStreamQuery(0), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, (dim3){ 1, 1, 1 },
                                  (dim3){ 1, 1, 1 }, NULL, 0, s),
                 cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamCreateWithFlags(&s, 0x40), cudaErrorInvalidValue);
}

Test(sim_runtime, launch_validation)
{
    cudaKernel_t k = (cudaKernel_t)1;
    const void *f = (const void *)fake_kernel;
    dim3 one = { 1, 1, 1 };
    cr_assert_eq(__cudaGetKernel(&k, (const void *)never_registered),
                 cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cudaLaunchKernel((const void *)never_registered, one, one, NULL, 0, 0),
                 cudaErrorInvalidDeviceFunction);
    cr_assert_eq(__cudaLaunchKernel(NULL, one, one, NULL, 0, 0), cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cudaLaunchKernel(f, (dim3){ 0, 1, 1 }, one, NULL, 0, 0),
                 cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaLaunchKernel(f, one, (dim3){ 32, 32, 2 }, NULL, 0, 0),
                 cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaLaunchKernel(f, one, (dim3){ 1024, 1, 1 }, NULL, 0, 0), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel(f, one, one, NULL, 64 << 10, 0), cudaErrorInvalidValue,
                 "more than 48 KiB of dynamic shared memory needs an opt-in");
    cr_assert_eq(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10),
                 cudaSuccess);
    cr_assert_eq(cudaLaunchKernel(f, one, one, NULL, 64 << 10, 0), cudaSuccess);
    struct cudaFuncAttributes fa;
    cr_assert_eq(cudaFuncGetAttributes(&fa, f), cudaSuccess);
    cr_assert_eq(fa.maxDynamicSharedSizeBytes, 64 << 10);
    const char *name = NULL;
    cr_assert_eq(cudaFuncGetName(&name, f), cudaSuccess);
    cr_assert_str_eq(name, "_Z11fake_kernelv");
    int blocks = 0;
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0), cudaSuccess);
    cr_assert_eq(blocks, 8, "2048 threads per SM / 256");
    cudaLaunchConfig_t cfg = { .gridDim = { 2, 1, 1 }, .blockDim = { 64, 1, 1 } };
    cr_assert_eq(cudaLaunchKernelExC(&cfg, f, NULL), cudaSuccess);
}

Test(sim_runtime, unregistered_module_kernels_fail)
{
    dim3 one = { 1, 1, 1 };
    __cudaUnregisterFatBinary(module);
    cr_assert_eq(cudaLaunchKernel((const void *)fake_kernel, one, one, NULL, 0, 0),
                 cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cudaMemcpyToSymbol(shadow_table, "x", 1, 0, cudaMemcpyHostToDevice),
                 cudaErrorInvalidSymbol);
}

Test(sim_runtime, module_variables)
{
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)i * 1.5f, out[i] = -1;
    cr_assert_eq(cudaMemcpyFromSymbol(out, shadow_table, sizeof out, 0,
                                      cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_float_eq(out[3], 0.0f, 0, "variables start zero-filled");
    cr_assert_eq(cudaMemcpyToSymbol(shadow_table, in, sizeof in, 0, cudaMemcpyHostToDevice),
                 cudaSuccess);
    cr_assert_eq(cudaMemcpyFromSymbol(out, shadow_table, 8 * sizeof(float), 8 * sizeof(float),
                                      cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_float_eq(out[0], in[8], 0);
    cr_assert_eq(cudaMemcpyToSymbol(shadow_table, in, sizeof in, 4, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue);
    cr_assert_eq(cudaMemcpyToSymbol(shadow_table, in, 4, 0, cudaMemcpyDeviceToHost),
                 cudaErrorInvalidMemcpyDirection);
    cr_assert_eq(cudaMemcpyToSymbol(in, in, 4, 0, cudaMemcpyHostToDevice),
                 cudaErrorInvalidSymbol);
    void *addr = NULL;
    size_t size = 0;
    cr_assert_eq(cudaGetSymbolAddress(&addr, shadow_table), cudaSuccess);
    cr_assert_eq(cudaGetSymbolSize(&size, shadow_table), cudaSuccess);
    cr_assert_eq(size, sizeof(shadow_table));
    cr_assert_float_eq(((float *)addr)[5], in[5], 0);
    cr_assert_eq(cudaDeviceReset(), cudaSuccess);
    cr_assert_eq(cudaGetSymbolAddress(&addr, shadow_table), cudaSuccess,
                 "module variables survive a reset");
    /* __managed__: the runtime points the host shadow at the storage. */
    cr_assert_not_null(managed_shadow);
    *managed_shadow = 42;
    struct cudaPointerAttributes pa;
    cr_assert_eq(cudaPointerGetAttributes(&pa, managed_shadow), cudaSuccess);
    cr_assert_eq(pa.type, cudaMemoryTypeManaged);
}

// api_tour.cu — a broad, deterministic tour of the CUDA runtime API.
//
// Prints one line per call, `<api> -> <return code>`, and nothing else: no pointers,
// no timings, no values that could change between runs. Tests run it against NVIDIA's
// libcudart (where, without a driver, every call fails) with and without the profiler
// preload and require identical output, and against the simulated device (sim/),
// where the calls succeed or fail as they would on a GPU. It must never crash, so every
// pointer a failed call may have left NULL is checked before use. Exit code is 0.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define TOUR(name, call) std::printf("%s -> %d\n", name, (int)(call))

__device__ float tour_table[64];

__global__ void tour_scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a * tour_table[i % 64];
}

__global__ void tour_dynamic_smem(float *x)
{
    extern __shared__ float tile[];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

static void host_only_function() {}

static void tour_device()
{
    int v = 0;
    cudaDeviceProp prop;
    size_t limit = 0;
    unsigned flags = 0;
    TOUR("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&v));
    TOUR("cudaDriverGetVersion", cudaDriverGetVersion(&v));
    TOUR("cudaGetDeviceCount", cudaGetDeviceCount(&v));
    TOUR("cudaGetDevice", cudaGetDevice(&v));
    TOUR("cudaSetDevice(0)", cudaSetDevice(0));
    TOUR("cudaSetDevice(invalid)", cudaSetDevice(64));
    TOUR("cudaPeekAtLastError", cudaPeekAtLastError());
    TOUR("cudaGetLastError", cudaGetLastError());
    TOUR("cudaGetLastError(again)", cudaGetLastError());
    TOUR("cudaGetDeviceProperties(0)", cudaGetDeviceProperties(&prop, 0));
    TOUR("cudaGetDeviceProperties(invalid)", cudaGetDeviceProperties(&prop, 64));
    TOUR("cudaDeviceGetAttribute(MultiProcessorCount)",
         cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    TOUR("cudaDeviceGetAttribute(ComputeCapabilityMajor)",
         cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
    TOUR("cudaSetDeviceFlags", cudaSetDeviceFlags(cudaDeviceScheduleAuto));
    TOUR("cudaGetDeviceFlags", cudaGetDeviceFlags(&flags));
    TOUR("cudaDeviceSetLimit(MallocHeapSize)",
         cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20));
    TOUR("cudaDeviceGetLimit(MallocHeapSize)",
         cudaDeviceGetLimit(&limit, cudaLimitMallocHeapSize));
    TOUR("cudaDeviceCanAccessPeer", cudaDeviceCanAccessPeer(&v, 0, 0));
    TOUR("cudaDeviceEnablePeerAccess(self)", cudaDeviceEnablePeerAccess(0, 0));
    int least = 0, greatest = 0;
    TOUR("cudaDeviceGetStreamPriorityRange",
         cudaDeviceGetStreamPriorityRange(&least, &greatest));
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult qr;
    TOUR("cudaGetDriverEntryPointByVersion",
         cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, cudaEnableDefault, &qr));
    TOUR("cudaGetLastError", cudaGetLastError());
}

static void tour_memory(float **dev_out, float **managed_out)
{
    size_t free_b = 0, total_b = 0, pitch = 0;
    void *dev = nullptr, *big = nullptr, *pitched = nullptr, *managed = nullptr;
    void *pinned = nullptr, *mapped = nullptr, *mapped_dev = nullptr;
    TOUR("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b));
    TOUR("cudaMalloc(1 MiB)", cudaMalloc(&dev, 1 << 20));
    TOUR("cudaMalloc(1 PiB)", cudaMalloc(&big, 1ull << 50));
    TOUR("cudaGetLastError", cudaGetLastError());
    TOUR("cudaGetLastError(again)", cudaGetLastError());
    TOUR("cudaMalloc(0)", cudaMalloc(&big, 0));
    TOUR("cudaMallocPitch", cudaMallocPitch(&pitched, &pitch, 1000, 16));
    TOUR("cudaMallocManaged", cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal));
    TOUR("cudaMallocManaged(bad flags)", cudaMallocManaged(&big, 4096, 7));
    TOUR("cudaMallocHost", cudaMallocHost(&pinned, 1 << 16));
    TOUR("cudaHostAlloc(Mapped)", cudaHostAlloc(&mapped, 4096, cudaHostAllocMapped));
    TOUR("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
    TOUR("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b));

    cudaPointerAttributes attr;
    int on_stack = 0;
    TOUR("cudaPointerGetAttributes(device)", cudaPointerGetAttributes(&attr, dev));
    TOUR("cudaPointerGetAttributes(managed)", cudaPointerGetAttributes(&attr, managed));
    TOUR("cudaPointerGetAttributes(pinned)", cudaPointerGetAttributes(&attr, pinned));
    TOUR("cudaPointerGetAttributes(stack)", cudaPointerGetAttributes(&attr, &on_stack));

    char *pageable = static_cast<char *>(std::malloc(8192));
    void *pageable_dev = nullptr;
    TOUR("cudaHostRegister", cudaHostRegister(pageable, 8192, cudaHostRegisterDefault));
    TOUR("cudaHostRegister(again)", cudaHostRegister(pageable, 8192, cudaHostRegisterDefault));
    TOUR("cudaHostGetDevicePointer(registered)",
         cudaHostGetDevicePointer(&pageable_dev, pageable, 0));
    TOUR("cudaHostUnregister", cudaHostUnregister(pageable));
    TOUR("cudaHostUnregister(again)", cudaHostUnregister(pageable));
    std::free(pageable);

    TOUR("cudaFree(pitched)", cudaFree(pitched));
    TOUR("cudaFree(stack pointer)", cudaFree(&on_stack));
    TOUR("cudaGetLastError", cudaGetLastError());
    TOUR("cudaFree(nullptr)", cudaFree(nullptr));
    TOUR("cudaFreeHost(mapped)", cudaFreeHost(mapped));
    TOUR("cudaFreeHost(pinned)", cudaFreeHost(pinned));
    *dev_out = static_cast<float *>(dev);
    *managed_out = static_cast<float *>(managed);
}

static void tour_copies(float *dev)
{
    float host[256], table[64];
    for (int i = 0; i < 256; i++)
        host[i] = (float)i;
    for (int i = 0; i < 64; i++)
        table[i] = 1.0f;
    void *sym = nullptr;
    size_t sym_size = 0;
    TOUR("cudaMemcpy(HostToDevice)", cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
    TOUR("cudaMemcpy(DeviceToHost)", cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    TOUR("cudaMemcpy(DeviceToDevice)",
         cudaMemcpy(dev ? dev + 256 : nullptr, dev, sizeof host, cudaMemcpyDeviceToDevice));
    TOUR("cudaMemcpy(Default)", cudaMemcpy(host, dev, sizeof host, cudaMemcpyDefault));
    TOUR("cudaMemcpy(bad kind)", cudaMemcpy(host, dev, sizeof host, (cudaMemcpyKind)42));
    TOUR("cudaMemcpyAsync", cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, 0));
    TOUR("cudaMemcpy2D", cudaMemcpy2D(dev, 512, host, 64, 64, 4, cudaMemcpyHostToDevice));
    TOUR("cudaMemcpy2D(bad pitch)", cudaMemcpy2D(dev, 32, host, 64, 64, 4, cudaMemcpyHostToDevice));
    TOUR("cudaMemcpy2DAsync",
         cudaMemcpy2DAsync(host, 64, dev, 512, 64, 4, cudaMemcpyDeviceToHost, 0));
    TOUR("cudaMemset", cudaMemset(dev, 0, 4096));
    TOUR("cudaMemsetAsync", cudaMemsetAsync(dev, 0xff, 4096, 0));
    TOUR("cudaMemset2D", cudaMemset2D(dev, 512, 0, 100, 8));
    TOUR("cudaMemcpyToSymbol", cudaMemcpyToSymbol(tour_table, table, sizeof table));
    TOUR("cudaMemcpyFromSymbol", cudaMemcpyFromSymbol(table, tour_table, sizeof table));
    TOUR("cudaMemcpyToSymbol(too big)", cudaMemcpyToSymbol(tour_table, host, sizeof host));
    TOUR("cudaGetSymbolAddress", cudaGetSymbolAddress(&sym, tour_table));
    TOUR("cudaGetSymbolSize", cudaGetSymbolSize(&sym_size, tour_table));
    TOUR("cudaGetLastError", cudaGetLastError());
}

static void tour_streams_and_kernels(float *dev, float *managed)
{
    cudaStream_t s1 = nullptr, s2 = nullptr, s3 = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr, untimed = nullptr;
    float ms = 0.0f;
    int blocks = 0;
    TOUR("cudaStreamCreate", cudaStreamCreate(&s1));
    TOUR("cudaStreamCreateWithFlags(NonBlocking)",
         cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    TOUR("cudaStreamCreateWithPriority", cudaStreamCreateWithPriority(&s3, 0, -1));
    TOUR("cudaEventCreate(start)", cudaEventCreate(&start));
    TOUR("cudaEventCreate(stop)", cudaEventCreate(&stop));
    TOUR("cudaEventCreateWithFlags(DisableTiming)",
         cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));

    TOUR("cudaEventRecord(start)", cudaEventRecord(start, s1));
    tour_scale<<<4, 64, 0, s1>>>(dev, 2.0f, 256);
    TOUR("tour_scale<<<4,64>>> (cudaGetLastError)", cudaGetLastError());
    float a = 0.5f;
    int n = 256;
    void *args[] = { &dev, &a, &n };
    TOUR("cudaLaunchKernel",
         cudaLaunchKernel((const void *)tour_scale, dim3(4), dim3(64), args, 0, s1));
    TOUR("cudaLaunchKernel(block too big)",
         cudaLaunchKernel((const void *)tour_scale, dim3(1), dim3(2048), args, 0, s1));
    TOUR("cudaLaunchKernel(not a kernel)",
         cudaLaunchKernel((const void *)host_only_function, dim3(1), dim3(1), args, 0, s1));
    TOUR("cudaGetLastError", cudaGetLastError());
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(128);
    cfg.stream = s3;
    TOUR("cudaLaunchKernelEx", cudaLaunchKernelEx(&cfg, tour_scale, dev, 1.5f, 256));
    TOUR("cudaEventRecord(stop)", cudaEventRecord(stop, s1));
    TOUR("cudaEventRecord(untimed)", cudaEventRecord(untimed, s1));
    TOUR("cudaStreamWaitEvent", cudaStreamWaitEvent(s2, stop, 0));
    TOUR("cudaEventSynchronize", cudaEventSynchronize(stop));
    TOUR("cudaEventQuery", cudaEventQuery(stop));
    TOUR("cudaEventElapsedTime", cudaEventElapsedTime(&ms, start, stop));
    TOUR("cudaEventElapsedTime(untimed)", cudaEventElapsedTime(&ms, start, untimed));
    TOUR("cudaGetLastError", cudaGetLastError());

    cudaFuncAttributes fa;
    TOUR("cudaFuncGetAttributes", cudaFuncGetAttributes(&fa, (const void *)tour_scale));
    TOUR("cudaFuncSetAttribute(MaxDynamicSharedMemorySize)",
         cudaFuncSetAttribute((const void *)tour_dynamic_smem,
                              cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    tour_dynamic_smem<<<1, 32, 100 * 1024, s2>>>(dev);
    TOUR("tour_dynamic_smem<<<1,32,100KiB>>> (cudaGetLastError)", cudaGetLastError());
    TOUR("cudaOccupancyMaxActiveBlocksPerMultiprocessor",
         cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tour_scale, 256, 0));
    TOUR("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
         cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, tour_scale, 256, 0,
                                                                cudaOccupancyDefault));

    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    TOUR("cudaMemAdvise", cudaMemAdvise(managed, 4096, cudaMemAdviseSetReadMostly, loc));
    TOUR("cudaMemPrefetchAsync", cudaMemPrefetchAsync(managed, 4096, loc, 0, s1));
    if (managed && cudaStreamSynchronize(s1) == cudaSuccess)
        managed[0] = 1.0f;

    cudaStreamCaptureStatus cap;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    TOUR("cudaStreamIsCapturing", cudaStreamIsCapturing(s1, &cap));
    TOUR("cudaStreamGetCaptureInfo", cudaStreamGetCaptureInfo(s1, &cap));
    TOUR("cudaThreadExchangeStreamCaptureMode", cudaThreadExchangeStreamCaptureMode(&mode));
    TOUR("cudaStreamQuery", cudaStreamQuery(s1));
    TOUR("cudaStreamSynchronize", cudaStreamSynchronize(s1));
    TOUR("cudaStreamSynchronize(legacy)", cudaStreamSynchronize(cudaStreamLegacy));
    TOUR("cudaStreamSynchronize(per-thread)", cudaStreamSynchronize(cudaStreamPerThread));

    void *async_buf = nullptr;
    TOUR("cudaMallocAsync", cudaMallocAsync(&async_buf, 1 << 20, s1));
    TOUR("cudaFreeAsync", cudaFreeAsync(async_buf, s1));

    TOUR("cudaEventDestroy(start)", cudaEventDestroy(start));
    TOUR("cudaEventDestroy(stop)", cudaEventDestroy(stop));
    TOUR("cudaEventDestroy(untimed)", cudaEventDestroy(untimed));
    TOUR("cudaStreamDestroy(s1)", cudaStreamDestroy(s1));
    TOUR("cudaStreamDestroy(s2)", cudaStreamDestroy(s2));
    TOUR("cudaStreamDestroy(s3)", cudaStreamDestroy(s3));
}

int main()
{
    float *dev = nullptr, *managed = nullptr;
    TOUR("cudaProfilerStart", cudaProfilerStart());
    tour_device();
    tour_memory(&dev, &managed);
    tour_copies(dev);
    tour_streams_and_kernels(dev, managed);
    TOUR("cudaFree(managed)", cudaFree(managed));
    TOUR("cudaFree(dev)", cudaFree(dev));
    TOUR("cudaFree(dev again)", cudaFree(dev));
    TOUR("cudaDeviceSynchronize", cudaDeviceSynchronize());
    TOUR("cudaProfilerStop", cudaProfilerStop());
    TOUR("cudaDeviceReset", cudaDeviceReset());
    TOUR("cudaGetLastError", cudaGetLastError());
    return 0;
}

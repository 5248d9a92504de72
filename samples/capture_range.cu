// capture_range — a training-like loop that marks the part to profile, as trainers do for
// nsys: with cudaProfilerStart/Stop, with an NVTX range, or not at all (for --delay and
// --duration, by its timing).
//
//   capture_range profiler M FIRST LAST   M iterations; cudaProfilerStart before iteration
//                                         FIRST, cudaProfilerStop after iteration LAST
//                                         (-1: never called)
//   capture_range nvtx M FIRST LAST       the same with the NVTX range "capture" pushed
//                                         before FIRST and popped after LAST
//   capture_range timed M MS              M iterations MS milliseconds apart
//
// Each iteration allocates a buffer of 4096 + i bytes (kept until the end), sets it,
// launches `fill` 3 times, copies 64 bytes back, and (profiler and nvtx modes) pushes and
// pops the NVTX range "step" around that. At the end every buffer is freed. The last
// stdout line is the ledger: iterations, launches/sets/copies made inside the marked part,
// allocations, and (timed) each iteration's CLOCK_MONOTONIC time in ns just before its
// first launch, and the time main started.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "sample_common.h"

#define LAUNCHES 3
#define MAX_ITERS 1000

__global__ void fill(float *p, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *bufs[MAX_ITERS];
static unsigned long long when[MAX_ITERS];

static void iteration(int i)
{
    char host[64];
    CUDA_CHECK(cudaMalloc(&bufs[i], 4096 + i));
    CUDA_CHECK(cudaMemset(bufs[i], 0, 4096));
    when[i] = now_ns();
    for (int k = 0; k < LAUNCHES; k++)
        fill<<<4, 256>>>((float *)bufs[i], (float)k, 1024);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(host, bufs[i], sizeof(host), cudaMemcpyDeviceToHost));
}

int main(int argc, char **argv)
{
    unsigned long long main_ns = now_ns();
    if (argc < 4)
        fatal("usage: capture_range profiler|nvtx M FIRST LAST | timed M MS");
    const char *mode = argv[1];
    int m = atoi(argv[2]);
    if (m < 1 || m > MAX_ITERS)
        fatal("M must be 1..%d", MAX_ITERS);
    int timed = !strcmp(mode, "timed"), nvtx = !strcmp(mode, "nvtx");
    int first = timed ? -1 : atoi(argv[3]), last = timed || argc < 5 ? -1 : atoi(argv[4]);
    int ms = timed ? atoi(argv[3]) : 0;
    int inside = 0;
    for (int i = 0; i < m; i++) {
        if (i == first) {
            if (nvtx)
                nvtxRangePushA("capture");
            else
                CUDA_CHECK(cudaProfilerStart());
        }
        if (!timed)
            nvtxRangePushA("step");
        iteration(i);
        if (!timed)
            nvtxRangePop();
        if (first >= 0 && i >= first && (last < 0 || i <= last))
            inside++;
        if (i == last) {
            if (nvtx)
                nvtxRangePop();
            else
                CUDA_CHECK(cudaProfilerStop());
        }
        if (timed) {
            struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000 };
            nanosleep(&d, NULL);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < m; i++)
        CUDA_CHECK(cudaFree(bufs[i]));
    printf("ledger {\"iterations\":%d,\"launches_inside\":%d,\"memsets_inside\":%d,"
           "\"copies_inside\":%d,\"allocs\":%d,\"main_ns\":%llu,\"launch_ns\":[",
           m, inside * LAUNCHES, inside, inside, m, main_ns);
    for (int i = 0; i < m; i++)
        printf("%s%llu", i ? "," : "", when[i]);
    printf("]}\n");
    return 0;
}

// two_streams — kernels on two concurrent streams, with a known idle gap between two
// phases. Used to check the profiler's per-stream timelines, its launch records (kernel,
// stream, grid, block) and its idle-time accounting.
//
// Two cudaStreamNonBlocking streams. Each phase enqueues N kernels on each stream, back
// to back and alternating (stream 0, stream 1, stream 0, ...), each with its own known
// grid and block, then waits with cudaDeviceSynchronize. Between the phases the host
// sleeps (usleep) for a known time while the device has nothing to do. The program keeps
// its own ledger — every launch, the sleep's length and its CLOCK_MONOTONIC start and end
// — and prints it as JSON on the last stdout line.
//
//   two_streams [--launches N] [--sleep-ms MS] [--check]     defaults: 4, 20
//
// --launches: kernels per stream per phase. --check copies both streams' buffers back
// and verifies them (meaningful on a real GPU only: the simulated device does not
// execute kernels).
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sample_common.h"

#define NSTREAMS 2
#define MAX_LAUNCHES 512
static const int ELEMS = 1 << 20;  // floats per stream buffer

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// ---------------------------------------------------------------- the ledger

static struct {
    struct { const char *kernel; int stream, phase; dim3 grid, block; } launches[MAX_LAUNCHES];
    int nlaunches;
    long sleep_us;
    int sleep_after_launches;  // how many launches came before the sleep
    long long sleep_start_ns, sleep_end_ns;
    size_t alloc_bytes, memset_bytes;
} ledger;

static void count_launch(const char *kernel, int stream, int phase, dim3 grid, dim3 block)
{
    if (ledger.nlaunches == MAX_LAUNCHES)
        fatal("two_streams: too many launches");
    ledger.launches[ledger.nlaunches].kernel = kernel;
    ledger.launches[ledger.nlaunches].stream = stream;
    ledger.launches[ledger.nlaunches].phase = phase;
    ledger.launches[ledger.nlaunches].grid = grid;
    ledger.launches[ledger.nlaunches++].block = block;
}

static void print_ledger(void)
{
    printf("ledger {\"streams\":%d,\"alloc_bytes\":%zu,\"memset_calls\":%d,"
           "\"memset_bytes\":%zu,\"sleep_us\":%ld,\"sleep_after_launches\":%d,"
           "\"sleep_start_ns\":%lld,\"sleep_end_ns\":%lld,\"launches\":[",
           NSTREAMS, ledger.alloc_bytes, NSTREAMS, ledger.memset_bytes, ledger.sleep_us,
           ledger.sleep_after_launches,
           ledger.sleep_start_ns, ledger.sleep_end_ns);
    for (int i = 0; i < ledger.nlaunches; i++) {
        dim3 g = ledger.launches[i].grid, b = ledger.launches[i].block;
        printf("%s{\"kernel\":\"%s\",\"stream\":%d,\"phase\":%d,\"grid\":[%u,%u,%u],"
               "\"block\":[%u,%u,%u]}",
               i ? "," : "", ledger.launches[i].kernel, ledger.launches[i].stream,
               ledger.launches[i].phase, g.x, g.y, g.z, b.x, b.y, b.z);
    }
    printf("]}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------- kernels

// x[i] += a, grid-stride (so any grid covers the buffer)
extern "C" __global__ void add_scalar(float *x, int n, float a)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] += a;
}

// x[i] *= a, with a 2-D grid of 2-D blocks (so a launch's y dimensions are not all 1)
extern "C" __global__ void scale_2d(float *x, int n, float a)
{
    int threads = blockDim.x * blockDim.y * gridDim.x * gridDim.y;
    int t = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y +
            threadIdx.y * blockDim.x + threadIdx.x;
    for (int i = t; i < n; i += threads)
        x[i] *= a;
}

// ---------------------------------------------------------------- the work

static cudaStream_t streams[NSTREAMS];
static float *bufs[NSTREAMS];
static float expect[NSTREAMS];  // every element of bufs[s] after the work (from 0)

// Launch k of a phase on stream s: even k add 1 with a 1-D launch, odd k double with a
// 2-D launch. The grid depends on (phase, k, s), so no two launches of a run share a
// kernel and shape: each one is recognisable in a trace.
static void launch(int phase, int k, int s)
{
    if (k % 2 == 0) {
        dim3 grid(16 + 4 * k + 2 * (phase - 1) + s), block(128 + 32 * (k % 4));
        add_scalar<<<grid, block, 0, streams[s]>>>(bufs[s], ELEMS, 1.0f);
        CUDA_CHECK(cudaGetLastError());
        count_launch("add_scalar", s, phase, grid, block);
        expect[s] += 1.0f;
    } else {
        dim3 grid(4 + k, 2 + 2 * (phase - 1) + s), block(16, 8 + 4 * s);
        scale_2d<<<grid, block, 0, streams[s]>>>(bufs[s], ELEMS, 2.0f);
        CUDA_CHECK(cudaGetLastError());
        count_launch("scale_2d", s, phase, grid, block);
        expect[s] *= 2.0f;
    }
}

static void phase(int number, int launches_per_stream)
{
    for (int k = 0; k < launches_per_stream; k++)
        for (int s = 0; s < NSTREAMS; s++)
            launch(number, k, s);
    CUDA_CHECK(cudaDeviceSynchronize());
}

static int check_buffers(void)
{
    int bad = 0;
    float *h = (float *)malloc(ELEMS * sizeof(float));
    if (!h)
        fatal("two_streams: out of host memory");
    for (int s = 0; s < NSTREAMS; s++) {
        CUDA_CHECK(cudaMemcpy(h, bufs[s], ELEMS * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < ELEMS; i++)
            bad += h[i] != expect[s];
    }
    free(h);
    printf("check %s: %d wrong elements\n", bad ? "FAILED" : "passed", bad);
    return bad != 0;
}

static int parse_int(const char *flag, const char *s, int max)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!s || *end || v < 0 || v > max)
        fatal("two_streams: %s needs an integer in 0..%d", flag, max);
    return (int)v;
}

int main(int argc, char **argv)
{
    int per_stream = 4, sleep_ms = 20, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--launches"))
            per_stream = parse_int(argv[i], argv[i + 1], MAX_LAUNCHES / (2 * NSTREAMS)), i++;
        else if (!strcmp(argv[i], "--sleep-ms"))
            sleep_ms = parse_int(argv[i], argv[i + 1], 60000), i++;
        else
            fatal("usage: two_streams [--launches N] [--sleep-ms MS] [--check]");
    }

    for (int s = 0; s < NSTREAMS; s++) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CUDA_CHECK(cudaMalloc((void **)&bufs[s], ELEMS * sizeof(float)));
        ledger.alloc_bytes += ELEMS * sizeof(float);
        CUDA_CHECK(cudaMemset(bufs[s], 0, ELEMS * sizeof(float)));  // one per stream
        ledger.memset_bytes += ELEMS * sizeof(float);
    }

    phase(1, per_stream);
    // The device is idle now: both streams were drained by cudaDeviceSynchronize.
    ledger.sleep_after_launches = ledger.nlaunches;
    ledger.sleep_us = sleep_ms * 1000L;
    ledger.sleep_start_ns = now_ns();
    usleep((useconds_t)ledger.sleep_us);
    ledger.sleep_end_ns = now_ns();
    phase(2, per_stream);

    int failures = check ? check_buffers() : 0;
    for (int s = 0; s < NSTREAMS; s++) {
        CUDA_CHECK(cudaFree(bufs[s]));
        CUDA_CHECK(cudaStreamDestroy(streams[s]));
    }
    print_ledger();
    return failures ? 1 : 0;
}

// graph_replay — work recorded once with stream capture and replayed as a CUDA graph, as
// PyTorch's CUDA graphs (torch.cuda.graph / CUDAGraph.replay) do, next to a few ordinary
// launches. Used to check that the profiler tells kernels that ran inside a graph from
// launches the host made, and counts each graph kernel once per replay.
//
// Captured on a non-blocking stream: one cudaMemsetAsync and three kernels
// (x = 0; x += 1; x *= 3; x[i] += i). The graph is instantiated and launched K times,
// then three ordinary kernels run (x += 1 twice, x *= 2). During capture the launch
// calls are recorded, not executed. The program keeps its own ledger (graph nodes, graph
// launches, ordinary launches, how often each kernel ran, every launch's grid and block)
// and prints it as JSON on the last stdout line.
//
//   graph_replay [K] [--check]     default K: 5
//
// --check copies x back after the replays and at the end and verifies it (meaningful on
// a real GPU only: the simulated device does not execute kernels).
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_common.h"

#define N (1 << 16)  // floats in x: i + 5 stays exact in a float
#define MAX_LAUNCHES 16

// ---------------------------------------------------------------- kernels

extern "C" __global__ void add_const(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += a;
}

extern "C" __global__ void scale(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

extern "C" __global__ void add_index(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += (float)i;
}

// ---------------------------------------------------------------- the ledger

// A launch call the host made: captured (becomes a graph node, runs once per replay)
// or ordinary (runs once).
static struct {
    struct { const char *kernel; int captured; dim3 grid, block; } launches[MAX_LAUNCHES];
    int nlaunches;
    int graph_kernel_nodes, graph_memset_nodes;
    size_t graph_memset_bytes;
    int graph_launches;
} ledger;

static void count_launch(const char *kernel, int captured, dim3 grid, dim3 block)
{
    if (ledger.nlaunches == MAX_LAUNCHES)
        fatal("graph_replay: too many launches");
    ledger.launches[ledger.nlaunches].kernel = kernel;
    ledger.launches[ledger.nlaunches].captured = captured;
    ledger.launches[ledger.nlaunches].grid = grid;
    ledger.launches[ledger.nlaunches++].block = block;
    ledger.graph_kernel_nodes += captured;
}

// LAUNCH(kernel, captured, grid, block, stream, args...)
#define LAUNCH(kernel, captured, grid, block, stream, ...)                           \
    do {                                                                             \
        kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__);                       \
        CUDA_CHECK(cudaGetLastError());                                              \
        count_launch(#kernel, (captured), (grid), (block));                          \
    } while (0)

static void print_ledger(void)
{
    int ordinary = ledger.nlaunches - ledger.graph_kernel_nodes;
    printf("ledger {\"graph_nodes\":%d,\"graph_kernel_nodes\":%d,\"graph_memset_nodes\":%d,"
           "\"graph_memset_bytes\":%zu,\"graph_launches\":%d,\"captured_launch_calls\":%d,"
           "\"ordinary_launches\":%d,\"kernels_executed\":{",
           ledger.graph_kernel_nodes + ledger.graph_memset_nodes, ledger.graph_kernel_nodes,
           ledger.graph_memset_nodes, ledger.graph_memset_bytes, ledger.graph_launches,
           ledger.graph_kernel_nodes, ordinary);
    // How often each kernel ran: once per replay if captured, once if ordinary. Each
    // name is printed at its first launch, with the sum over all its launches.
    int printed = 0;
    for (int i = 0; i < ledger.nlaunches; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= strcmp(ledger.launches[j].kernel, ledger.launches[i].kernel) != 0;
        if (!first)
            continue;
        long runs = 0;
        for (int j = i; j < ledger.nlaunches; j++)
            if (!strcmp(ledger.launches[j].kernel, ledger.launches[i].kernel))
                runs += ledger.launches[j].captured ? ledger.graph_launches : 1;
        printf("%s\"%s\":%ld", printed++ ? "," : "", ledger.launches[i].kernel, runs);
    }
    printf("},\"memsets_executed\":%d,\"launches\":[",
           ledger.graph_memset_nodes * ledger.graph_launches);
    for (int i = 0; i < ledger.nlaunches; i++) {
        dim3 g = ledger.launches[i].grid, b = ledger.launches[i].block;
        printf("%s{\"kernel\":\"%s\",\"captured\":%s,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}",
               i ? "," : "", ledger.launches[i].kernel,
               ledger.launches[i].captured ? "true" : "false", g.x, g.y, g.z, b.x, b.y, b.z);
    }
    printf("]}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------- check

static int check_x(const float *x, const char *when, float (*expect)(int))
{
    static float h[N];
    int bad = 0;
    CUDA_CHECK(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        bad += h[i] != expect(i);
    printf("check %s %s: %d wrong elements\n", when, bad ? "FAILED" : "passed", bad);
    return bad != 0;
}
static float after_replays(int i) { return 3.0f + (float)i; }
static float at_end(int i) { return (5.0f + (float)i) * 2.0f; }

// ---------------------------------------------------------------- main

int main(int argc, char **argv)
{
    int K = 5, check = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        char *end;
        long v = strtol(argv[i], &end, 10);
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (*argv[i] && !*end && v >= 1 && v <= 1000000)
            K = (int)v;
        else
            fatal("usage: graph_replay [K (1..1000000)] [--check]");
    }

    cudaStream_t s;
    float *x;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc((void **)&x, N * sizeof(float)));

    // Record: nothing below runs until the graph is launched.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CUDA_CHECK(cudaMemsetAsync(x, 0, N * sizeof(float), s));
    ledger.graph_memset_nodes++, ledger.graph_memset_bytes += N * sizeof(float);
    LAUNCH(add_const, 1, dim3(N / 256), dim3(256), s, x, N, 1.0f);
    LAUNCH(scale, 1, dim3(N / 128), dim3(128), s, x, N, 3.0f);
    LAUNCH(add_index, 1, dim3(N / 512), dim3(512), s, x, N);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

    for (int k = 0; k < K; k++) {
        CUDA_CHECK(cudaGraphLaunch(exec, s));
        ledger.graph_launches++;
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (check)
        failures += check_x(x, "after replays", after_replays);

    LAUNCH(add_const, 0, dim3(N / 64), dim3(64), s, x, N, 1.0f);
    LAUNCH(add_const, 0, dim3(N / 1024), dim3(1024), s, x, N, 1.0f);
    LAUNCH(scale, 0, dim3(N / 32), dim3(32), s, x, N, 2.0f);
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (check)
        failures += check_x(x, "at end", at_end);

    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaStreamDestroy(s));
    print_ledger();
    return failures ? 1 : 0;
}

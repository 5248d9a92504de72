/* pause_probe — a program that is traced while a test looks at its output files: it makes
 * one cudaMalloc (which starts the profiler's session), prints "ready", waits for a line
 * on stdin, frees, and prints `ledger {"mallocs":1,"frees":1}`. A test that kills it after
 * "ready" sees what a crash leaves behind. Exits 1 on a CUDA error. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p = NULL;
    char line[64];
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess) {
        printf("pause_probe: cudaMalloc failed\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        line[0] = 0;
    if (cudaFree(p) != cudaSuccess) {
        printf("pause_probe: cudaFree failed\n");
        return 1;
    }
    printf("ledger {\"mallocs\":1,\"frees\":1}\n");
    return 0;
}

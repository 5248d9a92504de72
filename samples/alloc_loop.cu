// alloc_loop — allocates device memory at a steady pace and reports each allocation, once
// cudaMalloc has returned, with its CLOCK_MONOTONIC time; after COUNT allocations it ends
// the way DEATH says. Used by the crash-survival tests: however the process dies, its trace
// must hold every allocation it reported.
//
//   alloc_loop [INTERVAL_MS [COUNT [DEATH]]]     defaults: 5 ms, 100000, wait
//
// DEATH: wait (pause until killed), return (from main, status 0), abort, segv (a null write), exit (_exit: no
// destructors), host-oom (touch host memory until the kernel's OOM killer ends it: run it
// in a memory cgroup), throw (an uncaught C++ exception), oom-throw (allocate 1 MiB blocks until
// cudaMalloc fails, report them, then throw as a framework does on out of memory).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <unistd.h>
#include <cuda_runtime.h>

static int *volatile segv_target = nullptr; // read at run time: a real null write
char *volatile host_block;                    // host-oom: where each block is published

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int interval_ms = argc > 1 ? atoi(argv[1]) : 5;
    int count = argc > 2 ? atoi(argv[2]) : 100000;
    for (int i = 0; i < count; i++) {
        void *p = NULL;
        size_t bytes = 4096 + (size_t)i; // each allocation's size names it
        cudaError_t e = cudaMalloc(&p, bytes);
        if (e != cudaSuccess) {
            fprintf(stderr, "cudaMalloc: %s\n", cudaGetErrorString(e));
            return 1;
        }
        printf("alloc %d %zu %lld\n", i, bytes, now_ns());
        fflush(stdout);
        usleep((useconds_t)interval_ms * 1000);
    }
    const char *death = argc > 3 ? argv[3] : "wait";
    if (!strcmp(death, "oom-throw")) {
        for (int i = 0;; i++) {
            void *p = NULL;
            if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
                break;
            printf("block %d\n", i);
        }
        printf("oom\n");
        fflush(stdout);
        throw std::runtime_error("CUDA out of memory");
    }
    printf("done\n");
    fflush(stdout);
    if (!strcmp(death, "return"))
        return 0;
    if (!strcmp(death, "abort"))
        abort();
    if (!strcmp(death, "segv"))
        *segv_target = 1;
    if (!strcmp(death, "exit"))
        _exit(3);
    if (!strcmp(death, "host-oom"))
        for (;;) {
            // Each block is published through a volatile pointer: a block nobody could read
            // may be elided with its memset, and a loop left without side effects may be
            // assumed to end (the sanitizer build compiled it to a fall-through to pause()).
            char *p = (char *)malloc(16 << 20);
            if (p) {
                memset(p, 1, 16 << 20);
                host_block = p;
            }
        }
    if (!strcmp(death, "throw"))
        throw std::runtime_error("an uncaught exception");
    for (;;)
        pause();
}

// alloc_loop — allocates device memory at a steady pace and reports each allocation with
// its CLOCK_MONOTONIC time, then waits to be killed. Used by the crash-survival test: a
// process killed with SIGKILL must leave a trace holding every allocation older than the
// flush interval.
//
//   alloc_loop [INTERVAL_MS [COUNT]]     defaults: 5 ms, 100000
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>
#include <cuda_runtime.h>

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
    printf("done\n");
    fflush(stdout);
    for (;;)
        pause();
}

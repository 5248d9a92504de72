// threads_alloc — several host threads allocating, launching and freeing at once, as a
// data-parallel trainer's threads or a serving process do. Prints what it did; the
// concurrency test checks that the trace holds every call (or counts it as dropped).
//
//   threads_alloc [THREADS [ITERATIONS]]     defaults: 8, 20000
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <cuda_runtime.h>

__global__ void touch(char *p) { p[threadIdx.x] = 1; }

struct work {
    int id, iters, failures;
};

static void *worker(void *arg)
{
    work *w = (work *)arg;
    for (int i = 0; i < w->iters; i++) {
        char *p = NULL;
        size_t bytes = 256 + (size_t)w->id; // each thread's allocations have their own size
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            w->failures++;
            continue;
        }
        touch<<<1, 32>>>(p);
        if (cudaGetLastError() != cudaSuccess)
            w->failures++;
        if (cudaFree(p) != cudaSuccess)
            w->failures++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 8;
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (nthreads < 1 || nthreads > 256 || iters < 0) {
        fprintf(stderr, "usage: threads_alloc [THREADS 1..256 [ITERATIONS]]\n");
        return 2;
    }
    pthread_t th[256];
    work w[256];
    for (int t = 0; t < nthreads; t++) {
        w[t] = work{t, iters, 0};
        pthread_create(&th[t], NULL, worker, &w[t]);
    }
    int failures = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        failures += w[t].failures;
    }
    long calls = (long)nthreads * iters;
    printf("ledger {\"threads\":%d,\"alloc_calls\":%ld,\"free_calls\":%ld,\"launches\":%ld,"
           "\"failures\":%d}\n", nthreads, calls, calls, calls, failures);
    return failures ? 1 : 0;
}

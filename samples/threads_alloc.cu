// threads_alloc — several host threads allocating, launching and freeing at once, as a
// data-parallel trainer's threads or a serving process do. Prints what it did; the
// concurrency tests check that the trace holds every call (or counts it as dropped).
//
//   threads_alloc [--unique] [THREADS [ITERATIONS]]     defaults: 8, 20000
//
// By default thread t allocates 256 + t bytes every iteration. With --unique, every call
// is told apart: iteration i of thread t (of T) allocates 256 + t + T * i bytes and launches a
// grid of (1 + i % 1000, 1 + i / 1000) blocks, so that a test can find each call's record
// and see that none is missing (without being counted as dropped) or written twice.
//
// Output: one line per thread, `thread {"t":T,"tid":TID,"allocs":N,"frees":N,"launches":N,
// "bytes":B,"failures":F}` (TID is the kernel's thread id, as THREAD records carry it),
// then the ledger `ledger {"threads":...,"alloc_calls":...,"free_calls":...,"launches":...,
// "failures":...}`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void touch(char *p) { p[threadIdx.x] = 1; }

struct work {
    int id, nthreads, iters, unique;
    long tid, allocs, frees, launches, failures;
    unsigned long long bytes;
};

static size_t size_of(const work *w, int i)
{
    return w->unique ? 256 + (size_t)w->id + (size_t)w->nthreads * (size_t)i : 256 + (size_t)w->id;
}

static void *worker(void *arg)
{
    work *w = (work *)arg;
    w->tid = (long)syscall(SYS_gettid);
    for (int i = 0; i < w->iters; i++) {
        char *p = NULL;
        size_t bytes = size_of(w, i);
        w->allocs++;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            w->failures++;
            continue;
        }
        w->bytes += bytes;
        dim3 grid = w->unique ? dim3(1 + i % 1000, 1 + i / 1000) : dim3(1);
        touch<<<grid, 32>>>(p);
        w->launches++;
        if (cudaGetLastError() != cudaSuccess)
            w->failures++;
        w->frees++;
        if (cudaFree(p) != cudaSuccess)
            w->failures++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int unique = argc > 1 && strcmp(argv[1], "--unique") == 0;
    argv += unique, argc -= unique;
    int nthreads = argc > 1 ? atoi(argv[1]) : 8;
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (nthreads < 1 || nthreads > 256 || iters < 0 || (unique && iters > 1000000)) {
        fprintf(stderr, "usage: threads_alloc [--unique] [THREADS 1..256 [ITERATIONS]]\n");
        return 2;
    }
    static pthread_t th[256];
    static work w[256];
    for (int t = 0; t < nthreads; t++) {
        w[t] = work{t, nthreads, iters, unique, 0, 0, 0, 0, 0, 0};
        pthread_create(&th[t], NULL, worker, &w[t]);
    }
    long failures = 0, allocs = 0, frees = 0, launches = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        failures += w[t].failures;
        allocs += w[t].allocs, frees += w[t].frees, launches += w[t].launches;
        printf("thread {\"t\":%d,\"tid\":%ld,\"allocs\":%ld,\"frees\":%ld,\"launches\":%ld,\"bytes\":%llu,"
               "\"failures\":%ld}\n", t, w[t].tid, w[t].allocs, w[t].frees, w[t].launches, w[t].bytes,
               w[t].failures);
    }
    printf("ledger {\"threads\":%d,\"alloc_calls\":%ld,\"free_calls\":%ld,\"launches\":%ld,"
           "\"failures\":%ld}\n", nthreads, allocs, frees, launches, failures);
    return failures ? 1 : 0;
}

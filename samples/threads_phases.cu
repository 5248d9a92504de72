// threads_phases — threads started before the process's first CUDA call and threads
// started after it, as in a server whose thread pool exists before CUDA is initialised and
// grows later. The file defines no kernel, so nothing calls CUDA before main does (nvcc's
// registration of kernels runs before main and would be the first CUDA call).
//
//   threads_phases [EARLY [LATE [ITERATIONS]]]     defaults: 4, 4, 200
//
// EARLY threads are started first and wait at a barrier; then all but the last make their
// first CUDA calls at the same moment (the process's first: they race to start it); the
// last early thread waits until the LATE threads, started after the others finished, have
// finished too, and only then makes its calls. Thread t of T = EARLY + LATE allocates
// 256 + t + T * i bytes in iteration i, sets them with cudaMemset and frees them.
//
// Output: per thread `thread {"t":..,"tid":..,"early":0|1,"created_ns":..,"allocs":..,
// "memsets":..,"frees":..,"failures":..}` (created_ns: CLOCK_MONOTONIC when it was
// started), then `ledger {"threads":..,"calls":..,"failures":..}`.
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

struct work {
    int t, nthreads, iters, early;
    long tid, allocs, memsets, frees, failures;
    unsigned long long created_ns;
};

static pthread_barrier_t start_line;
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t late_cond = PTHREAD_COND_INITIALIZER;
static int late_done;

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void calls(work *w)
{
    for (int i = 0; i < w->iters; i++) {
        size_t bytes = 256 + (size_t)w->t + (size_t)w->nthreads * i;
        void *p = NULL;
        w->allocs++;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            w->failures++;
            continue;
        }
        w->memsets++;
        w->failures += cudaMemset(p, i & 0xff, bytes) != cudaSuccess;
        w->frees++;
        w->failures += cudaFree(p) != cudaSuccess;
    }
}

static void *early(void *arg)
{
    work *w = (work *)arg;
    w->tid = (long)syscall(SYS_gettid);
    pthread_barrier_wait(&start_line);
    if (w->early == 2) { // the last early thread: after the late ones
        pthread_mutex_lock(&late_lock);
        while (!late_done)
            pthread_cond_wait(&late_cond, &late_lock);
        pthread_mutex_unlock(&late_lock);
    }
    calls(w);
    return NULL;
}

static void *late(void *arg)
{
    work *w = (work *)arg;
    w->tid = (long)syscall(SYS_gettid);
    calls(w);
    return NULL;
}

int main(int argc, char **argv)
{
    int ne = argc > 1 ? atoi(argv[1]) : 4, nl = argc > 2 ? atoi(argv[2]) : 4;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    if (ne < 1 || nl < 0 || ne + nl > 64 || iters < 0) {
        fprintf(stderr, "usage: threads_phases [EARLY 1.. [LATE [ITERATIONS]]] (at most 64 threads)\n");
        return 2;
    }
    static work w[64];
    static pthread_t th[64];
    int n = ne + nl;
    pthread_barrier_init(&start_line, NULL, (unsigned)ne + 1);
    for (int t = 0; t < ne; t++) {
        w[t] = work{ t, n, iters, t == ne - 1 && ne > 1 ? 2 : 1, 0, 0, 0, 0, 0, now_ns() };
        pthread_create(&th[t], NULL, early, &w[t]);
    }
    pthread_barrier_wait(&start_line); // the early threads' first calls start now
    for (int t = 0; t < ne; t++)
        if (w[t].early == 1)
            pthread_join(th[t], NULL);
    for (int t = ne; t < n; t++) {
        w[t] = work{ t, n, iters, 0, 0, 0, 0, 0, 0, now_ns() };
        pthread_create(&th[t], NULL, late, &w[t]);
    }
    for (int t = ne; t < n; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_lock(&late_lock);
    late_done = 1;
    pthread_cond_signal(&late_cond);
    pthread_mutex_unlock(&late_lock);
    if (w[ne - 1].early == 2)
        pthread_join(th[ne - 1], NULL);
    long failures = 0, total = 0;
    for (int t = 0; t < n; t++) {
        failures += w[t].failures;
        total += w[t].allocs + w[t].memsets + w[t].frees;
        printf("thread {\"t\":%d,\"tid\":%ld,\"early\":%d,\"created_ns\":%llu,\"allocs\":%ld,\"memsets\":%ld,"
               "\"frees\":%ld,\"failures\":%ld}\n", t, w[t].tid, w[t].early ? 1 : 0, w[t].created_ns, w[t].allocs,
               w[t].memsets, w[t].frees, w[t].failures);
    }
    printf("ledger {\"threads\":%d,\"calls\":%ld,\"failures\":%ld}\n", n, total, failures);
    return failures ? 1 : 0;
}

/* clock_probe — record times against the program's own clock (test_clock.py).
 *
 *   clock_probe THREADS SECONDS
 *
 * Each thread, for SECONDS, makes bursts of 20 cudaMalloc + cudaFree pairs with pauses of
 * 0..20 ms between bursts, reading clock_gettime(CLOCK_MONOTONIC) right before and right
 * after each call. Each allocation has a size no other call has (the record's tag). Prints
 * per call, after the run:
 *
 *   call KIND TID SIZE BEFORE AFTER      (KIND A = cudaMalloc, F = cudaFree of that block)
 *
 * and exits 0, or 1 when a call failed. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct call {
    char kind;
    uint64_t size, before, after;
};

struct worker {
    int index, threads;
    double seconds;
    long tid;
    struct call *calls;
    size_t n, cap;
    int failed;
};

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    w->tid = (long)syscall(SYS_gettid);
    uint64_t end = mono() + (uint64_t)(w->seconds * 1e9), seed = (uint64_t)w->index + 1, k = 0;
    while (mono() < end && w->n + 40 <= w->cap) {
        for (int i = 0; i < 20; i++, k++) {
            uint64_t size = 256 * (1 + (uint64_t)w->index + (uint64_t)w->threads * k);
            void *p = NULL;
            struct call *a = &w->calls[w->n++], *f = &w->calls[w->n++];
            a->kind = 'A', f->kind = 'F';
            a->size = f->size = size;
            a->before = mono();
            cudaError_t r = cudaMalloc(&p, size);
            a->after = mono();
            f->before = mono();
            cudaError_t r2 = cudaFree(p);
            f->after = mono();
            w->failed |= r != cudaSuccess || r2 != cudaSuccess;
        }
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        struct timespec d = { 0, (long)((seed >> 33) % 20000000) };
        nanosleep(&d, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    double seconds = argc > 2 ? atof(argv[2]) : 3;
    if (threads < 1 || threads > 64 || seconds <= 0) {
        fprintf(stderr, "usage: clock_probe THREADS SECONDS\n");
        return 2;
    }
    pthread_t th[64];
    struct worker w[64];
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ .index = i, .threads = threads, .seconds = seconds, .cap = 200000 };
        w[i].calls = calloc(w[i].cap, sizeof(struct call));
        if (!w[i].calls || pthread_create(&th[i], NULL, work, &w[i]) != 0)
            return 1;
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        failed |= w[i].failed;
    }
    for (int i = 0; i < threads; i++)
        for (size_t j = 0; j < w[i].n; j++)
            printf("call %c %ld %llu %llu %llu\n", w[i].calls[j].kind, w[i].tid,
                   (unsigned long long)w[i].calls[j].size, (unsigned long long)w[i].calls[j].before,
                   (unsigned long long)w[i].calls[j].after);
    for (int i = 0; i < threads; i++)
        free(w[i].calls);
    return failed;
}

// peer_alloc — one malloc-heavy program for two profilers, so that each can be measured
// on the allocation events of its own domain: N allocate+free pairs of 64 KiB, each made
// from ~30 frames deep (a chain of non-inlined calls, like a framework's allocator).
// Built twice from this file (bench/CMakeLists.txt):
//   peer_malloc      malloc/free (what heaptrack records; needs no CUDA at all)
//   peer_cudamalloc  cudaMalloc/cudaFree (what Anatomist records; run it on the simulated
//                    device with LD_LIBRARY_PATH=BUILD_DIR/sim)
// bench/peers.sh runs both with and without their tool; bench/startup.sh runs
// peer_cudamalloc with --pairs 1 --reps 1 --warmup 0 as a minimal CUDA program.
//
//   peer_malloc|peer_cudamalloc [--pairs N] [--reps R] [--warmup W] [--bytes B] [--depth D]
//                               [--sizes K]     defaults: 200000, 5, 1000, 65536, 30, 1
//
// With --sizes K, pair i allocates B + (i % K) * 256 bytes: K distinct sizes instead of one,
// so that a trace cannot reduce every event to a repeat of the one before.
//
// Output (stdout), one value per line:
//   pair_ns X        best over R timed runs of N pairs: ns per allocate+free pair
//   pairs P          pairs made in all (W + R * N): the events a tool saw are 2 * P
//   self_maxrss_kib K  this process's peak resident set (getrusage RUSAGE_SELF)
//   self_cpu_ns C    this process's user+system CPU, all its threads (a tool's writer
//                    thread included; a tool's helper process is not)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef PEER_CUDA
#include <cuda_runtime_api.h>
#endif

static long pairs = 200000, warmup = 1000;
static int reps = 5;
static long nsizes = 1;
static size_t bytes = 64 << 10;
static volatile int depth = 30;  // volatile: the recursion cannot be unrolled away
static void *volatile sink;      // the pointer escapes: the compiler cannot drop the pair

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#ifdef PEER_CUDA
static void pair(long i)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes + (size_t)(i % nsizes) * 256) != cudaSuccess || (sink = p, cudaFree(p)) != cudaSuccess) {
        fprintf(stderr, "peer_cudamalloc: cudaMalloc/cudaFree failed\n");
        exit(1);
    }
}
#else
static void pair(long i)
{
    void *p = malloc(bytes + (size_t)(i % nsizes) * 256);
    if (!p) {
        fprintf(stderr, "peer_malloc: malloc failed\n");
        exit(1);
    }
    sink = p;
    free(p);
}
#endif

static double time_pairs(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        pair(i);
    return now_ns() - t0;
}

static void run_all(void)
{
    time_pairs(warmup);
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double v = time_pairs(pairs) / (double)pairs;
        best = v < best ? v : best;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("pair_ns %.1f\n", best);
    printf("pairs %ld\n", warmup + reps * pairs);
    printf("self_maxrss_kib %ld\n", ru.ru_maxrss);
    printf("self_cpu_ns %.0f\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
                                     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3);
}

// Descends `level` frames, then measures from there. The empty asm after the call keeps
// it from becoming a tail call (which would collapse the frames).
__attribute__((noinline)) static void descend(int level)
{
    if (level <= 0) {
        run_all();
        return;
    }
    descend(level - 1);
    __asm__ __volatile__("" ::: "memory");
}

static long arg_long(const char *flag, const char *s, long min)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < min) {
        fprintf(stderr, "peer_alloc: %s needs an integer >= %ld\n", flag, min);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--pairs")) pairs = arg_long(a, v, 1);
        else if (!strcmp(a, "--reps")) reps = (int)arg_long(a, v, 1);
        else if (!strcmp(a, "--warmup")) warmup = arg_long(a, v, 0);
        else if (!strcmp(a, "--bytes")) bytes = (size_t)arg_long(a, v, 1);
        else if (!strcmp(a, "--depth")) depth = (int)arg_long(a, v, 0);
        else if (!strcmp(a, "--sizes")) nsizes = arg_long(a, v, 1);
        else {
            fprintf(stderr, "usage: %s [--pairs N] [--reps R] [--warmup W] [--bytes B] [--depth D] [--sizes K]\n",
                    argv[0]);
            return 2;
        }
    }
    descend(depth);
    return 0;
}

// bench_hooks — CPU cost per cudaMalloc+cudaFree pair, per kernel launch, per cuBLAS GEMM
// call and per NVTX push/pop pair, measured in-process. bench/run.sh runs it with and without the Anatomist preload; the
// difference is what the hooks add per call (docs/overhead.md).
//
// The calls are made from ~30 frames deep (non-inlined recursion whose depth the
// compiler cannot see), because stack capture costs grow with depth and a real
// framework calls cudaMalloc from deep inside its allocator.
//
// --depth N sets how deep (default 30). --sites N issues the timed cudaMalloc/cudaFree
// pairs and launches from N call sites in turn (default 1): with 2 or more, consecutive
// calls have different stacks at the same stack position, which the preload's stack
// cache must tell apart (a miss each time); with 1 every call repeats the last stack (a
// hit). --stack-only measures only alloc_free_pair_ns and launch_ns: run it with
// ANATOMIST_STACKS=0 and =1 (and each ANATOMIST_UNWIND) to get what the stack path adds.
// --cpu-time times with the calling thread's CPU clock instead of the wall clock: on a
// loaded machine it leaves out the time the thread waited for a core (and, as ever with
// this bench, the profiler's writer thread, which runs beside it).
//
// Output (stdout), one value per line, best of --reps repetitions:
//   alloc_free_pair_ns X
//   launch_ns Y
//   launch_args_ns V     (a kernel with 3 pointer, 1 int and 1 float parameter: what
//                         ANATOMIST_KERNEL_ARGS reads at every launch)
//   gemm_ns Z            (cublasSgemm_v2, 8x8x8: the library's own work stays small)
//   nvtx_push_pop_ns W   (nvtxRangePushA + nvtxRangePop)
//   h2d_table_ns T       (a 256-byte cudaMemcpy host to device whose source holds 16 device
//                         addresses: a pointer table, which ANATOMIST_KERNEL_ARGS reads)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t alloc_bytes = 64 << 10;
static long alloc_iters = 200000, launch_iters = 500000, gemm_iters = 20000, nvtx_iters = 200000,
            warmup = 1000;
static int reps = 5, nstreams = 32;
// Launches go round-robin to nstreams non-blocking streams: an empty kernel costs the
// simulated device 3 us while the host issues one in well under 1 us, so on one stream the
// device would fall seconds behind the host (a real GPU would block the host long before),
// and GPU activity records are only handed over once the device has run their work.
static cudaStream_t streams[256];
static volatile int depth = 30;  // volatile: the recursion cannot be unrolled away
static int nsites = 1, stack_only = 0;

// The call sites of --sites: the same code at different addresses, so the stacks of their
// calls differ in one return address only.
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")
#define SITE(n) \
    __attribute__((noinline)) static void site##n(void (*op)(long), long i) { op(i); KEEP_FRAME(); }
SITE(0) SITE(1) SITE(2) SITE(3)
static void (*const sites[4])(void (*)(long), long) = { site0, site1, site2, site3 };
static inline void at_site(void (*op)(long), long i) { sites[i % nsites](op, i); }

static void check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "bench_hooks: %s failed: %s\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

static clockid_t timing_clock = CLOCK_MONOTONIC;  // --cpu-time: this thread's CPU time

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(timing_clock, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__global__ void empty_kernel(void) {}
__global__ void args_kernel(const float *a, const float *b, float *c, int n, float s)
{
    if (n < 0)
        c[0] = a[0] + b[0] * s;
}

static void alloc_free_op(long i)
{
    void *p;
    (void)i;
    check(cudaMalloc(&p, alloc_bytes), "cudaMalloc");
    check(cudaFree(p), "cudaFree");
}

static double time_alloc_free(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        at_site(alloc_free_op, i);
    return now_ns() - t0;
}

static void launch_op(long i) { empty_kernel<<<1, 1, 0, streams[i % nstreams]>>>(); }

static double time_launch(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        at_site(launch_op, i);
    check(cudaGetLastError(), "kernel launch");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // amortised over n
    return now_ns() - t0;
}

static float *args_buf;  // what args_kernel's pointers point into

static double time_launch_args(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        args_kernel<<<1, 1, 0, streams[i % nstreams]>>>(args_buf, args_buf + 64, args_buf + 128, 64, 2.0f);
    check(cudaGetLastError(), "kernel launch");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return now_ns() - t0;
}

static void *table_host[32], *table_dev;  // 16 device addresses, then 16 other words

static double time_h2d_table(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        check(cudaMemcpy(table_dev, table_host, sizeof(table_host), cudaMemcpyHostToDevice), "cudaMemcpy");
    return now_ns() - t0;
}

static cublasHandle_t blas;
static float *gemm_buf;  // A, B and C of an 8x8x8 GEMM
enum { GEMM_N = 8 };

static double time_gemm(long n)
{
    const float one = 1.0f, zero = 0.0f;
    float *a = gemm_buf, *b = a + GEMM_N * GEMM_N, *c = b + GEMM_N * GEMM_N;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        cublasStatus_t st = cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, a,
                                        GEMM_N, b, GEMM_N, &zero, c, GEMM_N);
        if (st != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "bench_hooks: cublasSgemm failed: %d\n", (int)st);
            exit(1);
        }
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return now_ns() - t0;
}

static double time_nvtx(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("bench");
        nvtxRangePop();
    }
    return now_ns() - t0;
}

typedef double (*timed_fn)(long n);

// Best per-operation time over `reps` runs of fn(iters).
static double best_of(timed_fn fn, long iters)
{
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double v = fn(iters) / iters;
        best = v < best ? v : best;
    }
    return best;
}

// The same, each run made of bursts of `burst` operations with an untimed 20 ms pause
// after each: calls that each append records faster than the profiler's writer thread
// drains them (NVTX ranges: two records per ~100 ns) would otherwise fill its per-thread
// buffer and take the cheaper drop path, flattering the measurement. A burst's records
// fit the default 1 MiB buffer.
static double best_of_bursts(timed_fn fn, long iters, long burst)
{
    double best = 1e300;
    const struct timespec pause = { 0, 20 * 1000 * 1000 };
    for (int r = 0; r < reps; r++) {
        double total = 0;
        for (long done = 0; done < iters; done += burst) {
            total += fn(burst < iters - done ? burst : iters - done);
            nanosleep(&pause, NULL);
        }
        double v = total / iters;
        best = v < best ? v : best;
    }
    return best;
}

static void run_all(void)
{
    for (int s = 0; s < nstreams; s++)
        check(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench_hooks: cublasCreate failed\n");
        exit(1);
    }
    check(cudaMalloc(&gemm_buf, 3 * GEMM_N * GEMM_N * sizeof(float)), "cudaMalloc");
    check(cudaMemset(gemm_buf, 0, 3 * GEMM_N * GEMM_N * sizeof(float)), "cudaMemset");
    time_alloc_free(warmup);
    time_launch(warmup);
    check(cudaMalloc(&args_buf, 256 * sizeof(float)), "cudaMalloc");
    time_launch_args(warmup);
    check(cudaMalloc(&table_dev, sizeof(table_host)), "cudaMalloc");
    for (int i = 0; i < 32; i++)
        table_host[i] = i < 16 ? (void *)(args_buf + 8 * i) : (void *)(uintptr_t)(i * 3);
    time_h2d_table(warmup);
    time_gemm(warmup);
    time_nvtx(warmup);
    printf("alloc_free_pair_ns %.1f\n", best_of(time_alloc_free, alloc_iters));
    printf("launch_ns %.1f\n", best_of(time_launch, launch_iters));
    if (stack_only) {
        cublasDestroy(blas);
        return;
    }
    printf("launch_args_ns %.1f\n", best_of(time_launch_args, launch_iters));
    printf("gemm_ns %.1f\n", best_of_bursts(time_gemm, gemm_iters, 2000));
    printf("nvtx_push_pop_ns %.1f\n", best_of_bursts(time_nvtx, nvtx_iters, 10000));
    printf("h2d_table_ns %.1f\n", best_of_bursts(time_h2d_table, alloc_iters, 10000));
    cublasDestroy(blas);
}

// Descends `level` frames, then measures from there. The empty asm after the call
// keeps the call from becoming a tail call (which would collapse the frames).
__attribute__((noinline)) static void descend(int level)
{
    if (level <= 0) {
        run_all();
        return;
    }
    descend(level - 1);
    __asm__ __volatile__("" ::: "memory");
}

static long arg_long(const char *flag, const char *s)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v <= 0) {
        fprintf(stderr, "bench_hooks: %s needs a positive integer\n", flag);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--alloc-iters")) alloc_iters = arg_long(a, v);
        else if (!strcmp(a, "--launch-iters")) launch_iters = arg_long(a, v);
        else if (!strcmp(a, "--gemm-iters")) gemm_iters = arg_long(a, v);
        else if (!strcmp(a, "--nvtx-iters")) nvtx_iters = arg_long(a, v);
        else if (!strcmp(a, "--reps")) reps = (int)arg_long(a, v);
        else if (!strcmp(a, "--bytes")) alloc_bytes = (size_t)arg_long(a, v);
        else if (!strcmp(a, "--depth")) depth = (int)arg_long(a, v);
        else if (!strcmp(a, "--streams") && arg_long(a, v) <= 256) nstreams = (int)arg_long(a, v);
        else if (!strcmp(a, "--sites") && arg_long(a, v) <= 4) nsites = (int)arg_long(a, v);
        else if (!strcmp(a, "--stack-only")) stack_only = 1, i--;
        else if (!strcmp(a, "--cpu-time")) timing_clock = CLOCK_THREAD_CPUTIME_ID, i--;
        else {
            fprintf(stderr, "usage: bench_hooks [--alloc-iters N] [--launch-iters N] [--gemm-iters N] "
                            "[--nvtx-iters N] [--reps N] [--bytes N] [--depth N] [--streams N<=256] [--sites N<=4] "
                            "[--stack-only] [--cpu-time]\n");
            return 2;
        }
    }
    descend(depth);
    return 0;
}

// signal_storm — CUDA calls with signals arriving in the middle of them, as in programs
// with a profiling timer, a watchdog or a job scheduler's signals.
//
//   signal_storm storm THREADS ITERATIONS
//       THREADS workers allocate, launch and free as threads_alloc --unique does (thread t
//       of T allocates 256 + t + T * i bytes in iteration i, launches a grid of
//       (1 + i % 1000, 1 + i / 1000)), then copy a 255-byte pattern to the device and back.
//       Meanwhile an interval timer sends SIGALRM to the process every 50 us (SA_RESTART)
//       and another thread sends SIGUSR1 to the workers in turn as fast as it can (sigqueue,
//       without SA_RESTART, so system calls they interrupt fail with EINTR). The handlers
//       do ordinary work: count, read the clock, hash, and leave errno as they found it.
//   signal_storm inhook ITERATIONS [cuda]
//   signal_storm between ITERATIONS [cuda]
//       One thread allocates 4096 + i bytes and frees them, ITERATIONS times. `inhook`: the
//       program's own clock_gettime (exported, so that it replaces the C library's for
//       every module) raises SIGUSR2 when a module other than the program and the CUDA
//       libraries asks the time during one of these calls — that is, inside a profiler's
//       hook around the call, outside CUDA's own lock — at most twice per call. `between`:
//       the program raises SIGUSR2 itself after each call. With `cuda`, the SIGUSR2
//       handler allocates (900000 + n bytes, n = its n-th run) and frees; without, it
//       counts only.
//
// Output: `thread {"t":..,"tid":..,"allocs":..,"launches":..,"frees":..,"copy_ok":..}` per
// worker, `handler {"runs":..,"cuda_allocs":..,"cuda_failures":..}` (inhook/between),
// `signals {...}` (how many arrived: timing, not a result), and the ledger
// `ledger {"threads":..,"calls":..,"failures":..}`. Exit status 1 when a CUDA call failed
// or a copy came back different.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void touch(char *p) { p[threadIdx.x] = 1; }

struct work {
    int id, nthreads, iters;
    long tid, allocs, launches, frees, failures, copy_ok;
};

static volatile sig_atomic_t workers_done;
static int workers_finished; // atomically incremented by each worker as it returns
static volatile sig_atomic_t alrm_runs, usr1_runs;
static __thread volatile unsigned long tls_hash;

static void ordinary(int sig)
{
    int e = errno;
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts); // not the interposed one
    unsigned long h = tls_hash ^ (unsigned long)ts.tv_nsec ^ (unsigned long)getpid();
    for (int i = 0; i < 64; i++)
        h = h * 6364136223846793005ul + 1442695040888963407ul;
    tls_hash = h;
    if (sig == SIGALRM)
        alrm_runs = alrm_runs + 1;
    else
        usr1_runs = usr1_runs + 1;
    errno = e;
}

static void *worker(void *arg)
{
    work *w = (work *)arg;
    w->tid = (long)syscall(SYS_gettid);
    for (int i = 0; i < w->iters; i++) {
        char *p = NULL;
        w->allocs++;
        if (cudaMalloc(&p, 256 + (size_t)w->id + (size_t)w->nthreads * i) != cudaSuccess) {
            w->failures++;
            continue;
        }
        touch<<<dim3(1 + i % 1000, 1 + i / 1000), 32>>>(p);
        w->launches++;
        w->failures += cudaGetLastError() != cudaSuccess;
        w->frees++;
        w->failures += cudaFree(p) != cudaSuccess;
    }
    static const int N = 255; // smaller than any allocation of the loop
    unsigned char out[N], back[N];
    for (int i = 0; i < N; i++)
        out[i] = (unsigned char)(i * 7 + w->id);
    unsigned char *d = NULL;
    w->copy_ok = cudaMalloc(&d, N) == cudaSuccess && cudaMemcpy(d, out, N, cudaMemcpyHostToDevice) == cudaSuccess &&
                 cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost) == cudaSuccess && cudaFree(d) == cudaSuccess &&
                 memcmp(out, back, N) == 0;
    __atomic_add_fetch(&workers_finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

struct targets {
    pthread_t *th;
    int n;
};

// Sends SIGUSR1 to each worker in turn until they are all done (workers are joined only
// after this thread stops, so their ids stay valid).
static void *storm(void *arg)
{
    targets *g = (targets *)arg;
    for (long n = 0; !workers_done; n++) {
        union sigval v;
        v.sival_int = (int)n;
        pthread_sigqueue(g->th[n % g->n], SIGUSR1, v);
        sched_yield();
    }
    return NULL;
}

static void on(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static int run_storm(int nthreads, int iters)
{
    static work w[64];
    static pthread_t th[64];
    on(SIGALRM, ordinary, SA_RESTART);
    on(SIGUSR1, ordinary, 0);
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    setitimer(ITIMER_REAL, &it, NULL);
    for (int t = 0; t < nthreads; t++) {
        w[t] = work{ t, nthreads, iters, 0, 0, 0, 0, 0, 0 };
        pthread_create(&th[t], NULL, worker, &w[t]);
    }
    // The timer's signals go to the workers, not to this thread, which only waits.
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);
    pthread_t stormer;
    targets g = { th, nthreads };
    pthread_create(&stormer, NULL, storm, &g);
    long failures = 0, calls = 0;
    while (__atomic_load_n(&workers_finished, __ATOMIC_ACQUIRE) < nthreads) {
        struct timespec d = { 0, 1000000 };
        nanosleep(&d, NULL);
    }
    workers_done = 1;
    pthread_join(stormer, NULL);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    for (int t = 0; t < nthreads; t++) {
        failures += w[t].failures + !w[t].copy_ok;
        calls += w[t].allocs + w[t].launches + w[t].frees;
        printf("thread {\"t\":%d,\"tid\":%ld,\"allocs\":%ld,\"launches\":%ld,\"frees\":%ld,\"copy_ok\":%ld}\n", t,
               w[t].tid, w[t].allocs, w[t].launches, w[t].frees, w[t].copy_ok);
    }
    printf("signals {\"alrm\":%ld,\"usr1\":%ld}\n", (long)alrm_runs, (long)usr1_runs);
    printf("ledger {\"threads\":%d,\"calls\":%ld,\"failures\":%ld}\n", nthreads, calls, failures);
    return failures ? 1 : 0;
}

/* ---- a signal inside a hook ---- */

static __thread int tls_arm;       // raises left for the current call
static int handler_cuda;
static volatile sig_atomic_t hruns, hallocs, hfail, raised_inside;

static int from_profiler(const void *pc)
{
    Dl_info di;
    if (!dladdr(pc, &di) || !di.dli_fname)
        return 0;
    return strstr(di.dli_fname, "libanatomist") != NULL;
}

// Replaces the C library's for every module of the process (the program is linked with
// --export-dynamic): the time is the kernel's; a call from the profiler during an armed
// CUDA call raises SIGUSR2 right there.
extern "C" int clock_gettime(clockid_t id, struct timespec *ts) noexcept
{
    int r = (int)syscall(SYS_clock_gettime, id, ts);
    if (tls_arm > 0 && from_profiler(__builtin_return_address(0))) {
        tls_arm--;
        raised_inside = raised_inside + 1;
        int e = errno;
        raise(SIGUSR2);
        errno = e;
    }
    return r;
}

static void usr2(int sig)
{
    (void)sig;
    int e = errno;
    hruns = hruns + 1;
    if (handler_cuda) {
        void *q = NULL;
        size_t n = 900000 + (size_t)hallocs;
        if (cudaMalloc(&q, n) == cudaSuccess && cudaFree(q) == cudaSuccess)
            hallocs = hallocs + 1;
        else
            hfail = hfail + 1;
    }
    errno = e;
}

static int run_single(int inside, int iters, int cuda)
{
    handler_cuda = cuda;
    on(SIGUSR2, usr2, SA_RESTART);
    long failures = 0, allocs = 0, frees = 0;
    long tid = (long)syscall(SYS_gettid);
    for (int i = 0; i < iters; i++) {
        void *p = NULL;
        tls_arm = inside ? 2 : 0;
        allocs++;
        int ok = cudaMalloc(&p, 4096 + (size_t)i) == cudaSuccess;
        tls_arm = inside ? 2 : 0;
        frees += ok;
        ok = ok && cudaFree(p) == cudaSuccess;
        tls_arm = 0;
        failures += !ok;
        if (!inside)
            raise(SIGUSR2);
    }
    printf("thread {\"t\":0,\"tid\":%ld,\"allocs\":%ld,\"launches\":0,\"frees\":%ld,\"copy_ok\":1}\n", tid,
           allocs, frees);
    printf("handler {\"runs\":%ld,\"raised_inside\":%ld,\"cuda_allocs\":%ld,\"cuda_failures\":%ld}\n",
           (long)hruns, (long)raised_inside, (long)hallocs, (long)hfail);
    printf("ledger {\"threads\":1,\"calls\":%ld,\"failures\":%ld}\n", allocs + frees, failures + hfail);
    return failures || hfail ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "storm") && argc > 3) {
        int t = atoi(argv[2]), n = atoi(argv[3]);
        if (t >= 1 && t <= 64 && n >= 0 && n <= 1000000)
            return run_storm(t, n);
    } else if ((!strcmp(mode, "inhook") || !strcmp(mode, "between")) && argc > 2) {
        int cuda = argc > 3 && !strcmp(argv[3], "cuda");
        return run_single(mode[0] == 'i', atoi(argv[2]), cuda);
    }
    fprintf(stderr, "usage: signal_storm storm THREADS ITERATIONS | inhook|between ITERATIONS [cuda]\n");
    return 2;
}

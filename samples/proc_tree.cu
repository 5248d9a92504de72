// proc_tree — a process that makes others the ways training jobs do: DataLoader-style
// workers forked without exec (some using CUDA, some not; some ending with exit, some
// with _exit as Python's multiprocessing does), a program that replaces itself with exec,
// and a child started with posix_spawn. Every role allocates its own sizes, so a test can
// tell whose records a trace holds.
//
//   proc_tree fork N     parent allocates (sizes 1000 + k) with a second thread allocating
//                        throughout (2000 + k), forks N workers, allocates again (3000 + k);
//                        worker w: w % 3 == 0 makes no CUDA call, 1 allocates, launches and
//                        frees (sizes 100000 * (w + 1) + k) and exits with exit(), 2 does the
//                        same and ends with _exit().
//   proc_tree exec PROG  allocates (5000 + k), then exec's PROG: `self` runs this program
//                        again as `proc_tree after-exec` (allocates 6000 + k), else PROG is
//                        run with no arguments (a program that makes no CUDA call).
//   proc_tree spawn      allocates (7000 + k), posix_spawn's `proc_tree spawned` (allocates
//                        8000 + k), allocates again (7500 + k), waits for it.
//
// Each role allocates, launches on and frees K = 20 buffers (the forking parent's second
// thread as many as it can until the workers are done, at most 1000), and prints one line
// `role {"role":...,"pid":...,"base":B,"n":N,...}`: it allocated sizes B .. B + N - 1. A fork is
// made under the program's own lock, which the other thread holds around each of its CUDA
// calls (pthread_atfork): CUDA is not fork-safe, a careful program does not fork in the
// middle of one of its calls.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include "sample_common.h"

extern char **environ;

__global__ void fill(int *p, int v) { p[threadIdx.x] = v; }

enum { K = 20 };

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop_busy;

// Allocates, launches on and frees one buffer of `bytes`; returns 0 on success.
static int one(size_t bytes)
{
    int *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return 1;
    fill<<<1, 32>>>(p, (int)bytes);
    int bad = cudaGetLastError() != cudaSuccess;
    return cudaFree(p) != cudaSuccess || bad;
}

static int batch(size_t base)
{
    int bad = 0;
    for (int k = 0; k < K; k++)
        bad += one(base + k);
    return bad;
}

static void role(const char *name, size_t base, int n, int bad, const char *extra)
{
    printf("role {\"role\":\"%s\",\"pid\":%d,\"ppid\":%d,\"base\":%zu,\"n\":%d,\"failures\":%d%s}\n",
           name, (int)getpid(), (int)getppid(), base, n, bad, extra);
    fflush(stdout);
}

static void *busy(void *arg)
{
    int *n = (int *)arg;
    while (!stop_busy && *n < 1000) {
        pthread_mutex_lock(&cuda_lock);
        if (one(2000 + *n))
            fatal("busy thread: a CUDA call failed");
        pthread_mutex_unlock(&cuda_lock);
        (*n)++;
    }
    return NULL;
}

static void lock(void) { pthread_mutex_lock(&cuda_lock); }
static void unlock(void) { pthread_mutex_unlock(&cuda_lock); }

static int worker(int w)
{
    if (w % 3 == 0) {
        role("worker", 0, 0, 0, ",\"cuda\":0");
        return 0;
    }
    int bad = batch(100000 * (size_t)(w + 1));
    role("worker", 100000 * (size_t)(w + 1), K, bad, w % 3 == 1 ? ",\"cuda\":1,\"end\":\"exit\""
                                                               : ",\"cuda\":1,\"end\":\"_exit\"");
    return bad ? 1 : 0;
}

static int do_fork(int n)
{
    int bad = batch(1000), busy_n = 0;
    pthread_atfork(lock, unlock, unlock);
    pthread_t th;
    pthread_create(&th, NULL, busy, &busy_n);
    std::vector<pid_t> kids;
    for (int w = 0; w < n; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = worker(w);
            if (w % 3 == 2)
                _exit(rc);
            exit(rc);
        }
        kids.push_back(pid);
    }
    bad += batch(3000);
    int failed = 0;
    for (pid_t k : kids) {
        int st = 0;
        waitpid(k, &st, 0);
        failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    stop_busy = 1;
    pthread_join(th, NULL);
    role("parent", 1000, K, bad, "");
    role("parent_after", 3000, K, 0, "");
    role("busy", 2000, busy_n, 0, "");
    return bad || failed ? 1 : 0;
}

static int do_exec(const char *prog)
{
    int bad = batch(5000);
    role("before_exec", 5000, K, bad, "");
    if (strcmp(prog, "self") == 0)
        execl("/proc/self/exe", "proc_tree", "after-exec", (char *)NULL);
    else
        execl(prog, prog, (char *)NULL);
    fatal("exec %s failed", prog);
}

static int do_spawn(void)
{
    int bad = batch(7000);
    char *argv[] = { (char *)"proc_tree", (char *)"spawned", NULL };
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0)
        fatal("posix_spawn failed");
    bad += batch(7500);
    int st = 0;
    waitpid(pid, &st, 0);
    role("spawner", 7000, K, bad, "");
    role("spawner_after", 7500, K, 0, "");
    return bad || !WIFEXITED(st) || WEXITSTATUS(st) ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "fork") && argc > 2)
        return do_fork(atoi(argv[2]));
    if (!strcmp(mode, "exec") && argc > 2)
        return do_exec(argv[2]);
    if (!strcmp(mode, "spawn"))
        return do_spawn();
    if (!strcmp(mode, "after-exec") || !strcmp(mode, "spawned")) {
        size_t base = mode[0] == 'a' ? 6000 : 8000;
        int bad = batch(base);
        role(mode, base, K, bad, "");
        return bad ? 1 : 0;
    }
    fprintf(stderr, "usage: proc_tree fork N | exec self|PROG | spawn\n");
    return 2;
}

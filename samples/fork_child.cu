// fork_child — a parent that forks children without exec, as DataLoader workers are made.
//
//   fork_child           the parent allocates, then forks two children: one makes no CUDA
//                        call, the other allocates. Only the second must leave a trace.
//                        (CUDA does not survive fork: on a GPU the second child's calls
//                        fail; the simulated device lets them run.)
//   fork_child early N   the fork a careful program makes: before any CUDA call of its
//                        own (nvcc's registration of `bump` has run before main, and an
//                        NVTX range is pushed and popped). The child allocates, launches
//                        `bump` N times and frees; then the parent does the same once.
//                        Prints "child PID STATUS"; the child's status is 0 when every
//                        CUDA call it made succeeded.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void bump(int *p) { p[threadIdx.x] += 1; }

// Allocates, launches bump n times, synchronises, frees: 0 when every call succeeded.
static int work(int n)
{
    int *d = NULL;
    if (cudaMalloc(&d, 4096) != cudaSuccess)
        return 1;
    for (int i = 0; i < n; i++)
        bump<<<1, 32>>>(d);
    int bad = cudaGetLastError() != cudaSuccess;
    bad |= cudaDeviceSynchronize() != cudaSuccess;
    bad |= cudaFree(d) != cudaSuccess;
    return bad;
}

static int early(int n)
{
    nvtxRangePushA("before fork");
    nvtxRangePop();
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        exit(work(n));
    int s = 0;
    waitpid(child, &s, 0);
    int rc = work(1);
    printf("child %d %d\n", (int)child, WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s));
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "early"))
        return early(atoi(argv[2]));
    void *p = NULL;
    if (cudaMalloc(&p, 1000) != cudaSuccess)
        return 1;
    fflush(stdout);
    pid_t quiet = fork();
    if (quiet == 0)
        _exit(0); // no CUDA call: no trace
    pid_t busy = fork();
    if (busy == 0) {
        void *q = NULL;
        int rc = cudaMalloc(&q, 12345) == cudaSuccess && cudaFree(q) == cudaSuccess ? 0 : 1;
        exit(rc); // a normal exit: its trace ends cleanly
    }
    int s1 = 0, s2 = 0;
    waitpid(quiet, &s1, 0);
    waitpid(busy, &s2, 0);
    cudaFree(p);
    printf("quiet %d %d\nbusy %d %d\n", (int)quiet, WEXITSTATUS(s1), (int)busy, WEXITSTATUS(s2));
    return 0;
}

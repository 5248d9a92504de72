// fork_child — a parent that forks two children without exec, as DataLoader workers are
// made: one makes no CUDA call, the other allocates. Only the second must leave a trace.
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

int main(void)
{
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

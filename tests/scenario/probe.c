/* probe — what a traced program can observe of the preload: errno across CUDA calls, and
 * which library its backtrace() comes from (libunwind, which the preload loads, exports
 * one too). Prints facts, one per line; the test compares them with and without it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>

int main(void)
{
    void *p = NULL;
    errno = 4242;
    cudaError_t r = cudaMalloc(&p, 64);
    printf("cudaMalloc -> %d, errno %d\n", (int)r, errno);
    errno = 77;
    r = cudaFree(p);
    printf("cudaFree -> %d, errno %d\n", (int)r, errno);
    errno = 5;
    r = cudaMalloc(&p, (size_t)1 << 60);
    printf("huge cudaMalloc -> %d, errno %d, last error %d\n", (int)r, errno, (int)cudaGetLastError());
    Dl_info info;
    void *bt = dlsym(RTLD_DEFAULT, "backtrace");
    const char *lib = bt && dladdr(bt, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    printf("backtrace from %s\n", lib ? lib + 1 : "nowhere");
    return 0;
}

// sample_common.h — what every sample program shares: fatal() and CUDA_CHECK, which
// stop the program with the failing call, its file and line, and CUDA's message.
#ifndef ANA_SAMPLE_COMMON_H
#define ANA_SAMPLE_COMMON_H

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, unused));
static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

#define CUDA_CHECK(call)                                                             \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess)                                                       \
            fatal("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,                 \
                  cudaGetErrorString(e_));                                           \
    } while (0)

#endif

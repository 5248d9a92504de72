/*
 * gemm_cost.h — every constant of the simulated cuBLAS's GEMM timing and kernel shapes, in
 * one place (docs/sim.md "Durations" under "cuBLAS and cuBLASLt" documents the same numbers; the profiler's
 * tests compute expected durations from that text).
 *
 *   main kernel    duration_ns = llround(BASE + 2·m·n·k·batch / peak_flops_per_ns)
 *   split-K reduce duration_ns = llround(BASE + m·n·batch·PARTIAL_BYTES·SPLITS / HBM)
 *
 * A GEMM is split-K (two kernels: the main one, then the reduction) when
 * k >= SPLITK_RATIO·max(m, n) and k >= SPLITK_MIN_K.
 *
 * Header only, no state; thread-safe.
 */
#ifndef BLAS_SIM_GEMM_COST_H
#define BLAS_SIM_GEMM_COST_H

#include <math.h>
#include <stdint.h>

/* Fixed cost of every GEMM kernel (launch, prologue, epilogue), ns. */
#define BLAS_SIM_KERNEL_BASE_NS 2000.0

/* H100 SXM dense peaks in FLOP per ns (TFLOP/s × 1000). */
#define BLAS_SIM_PEAK_FP64_PER_NS 67000.0   /* fp64 tensor cores: 67 TFLOP/s */
#define BLAS_SIM_PEAK_FP32_PER_NS 67000.0   /* fp32 without TF32: 67 TFLOP/s */
#define BLAS_SIM_PEAK_TF32_PER_NS 494700.0  /* TF32 tensor cores: 494.7 TFLOP/s */
#define BLAS_SIM_PEAK_HALF_PER_NS 989400.0  /* fp16 / bf16 tensor cores: 989.4 TFLOP/s */

/* Split-K: when, how many partial products, and what their reduction moves. */
#define BLAS_SIM_SPLITK_MIN_K         4096
#define BLAS_SIM_SPLITK_RATIO         4
#define BLAS_SIM_SPLITK_SPLITS        4
#define BLAS_SIM_SPLITK_PARTIAL_BYTES 4       /* fp32 partial sums */
#define BLAS_SIM_HBM_BYTES_PER_NS     3350.0  /* 3.35 TB/s */

/* Threads per block of every GEMM kernel; the reduction's output tile. */
#define BLAS_SIM_BLOCK_THREADS  256u
#define BLAS_SIM_REDUCE_TILE_M  32
#define BLAS_SIM_REDUCE_TILE_N  16
#define BLAS_SIM_GRID_Z_MAX     65535u        /* batch beyond this shares gridDim.z */

/* What cuBLAS allocates per handle as its default workspace on Hopper (32 MiB). */
#define BLAS_SIM_DEFAULT_WORKSPACE_BYTES ((size_t)32 << 20)

/* The tensor-core class of a GEMM: which peak times it. */
typedef enum blas_math {
    BLAS_MATH_FP64,   /* fp64 inputs */
    BLAS_MATH_FP32,   /* fp32 inputs, fp32 math */
    BLAS_MATH_TF32,   /* fp32 inputs, CUBLAS_COMPUTE_32F_FAST_TF32 (or TF32 math mode) */
    BLAS_MATH_HALF,   /* fp16/bf16 inputs, or fp32 inputs with 32F_FAST_16F / _16BF */
} blas_math;

static inline double blas_peak_per_ns(blas_math math)
{
    switch (math) {
    case BLAS_MATH_FP64: return BLAS_SIM_PEAK_FP64_PER_NS;
    case BLAS_MATH_FP32: return BLAS_SIM_PEAK_FP32_PER_NS;
    case BLAS_MATH_TF32: return BLAS_SIM_PEAK_TF32_PER_NS;
    default:             return BLAS_SIM_PEAK_HALF_PER_NS;
    }
}

static inline uint64_t blas_main_kernel_ns(blas_math math, int64_t m, int64_t n, int64_t k,
                                           int64_t batch)
{
    double flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
    return (uint64_t)llround(BLAS_SIM_KERNEL_BASE_NS + flops / blas_peak_per_ns(math));
}

static inline uint64_t blas_reduce_kernel_ns(int64_t m, int64_t n, int64_t batch)
{
    double bytes = (double)m * (double)n * (double)batch * BLAS_SIM_SPLITK_PARTIAL_BYTES *
                   BLAS_SIM_SPLITK_SPLITS;
    return (uint64_t)llround(BLAS_SIM_KERNEL_BASE_NS + bytes / BLAS_SIM_HBM_BYTES_PER_NS);
}

static inline int blas_is_split_k(int64_t m, int64_t n, int64_t k)
{
    int64_t mn = m > n ? m : n;
    return k >= BLAS_SIM_SPLITK_MIN_K && k >= BLAS_SIM_SPLITK_RATIO * mn;
}

#endif /* BLAS_SIM_GEMM_COST_H */

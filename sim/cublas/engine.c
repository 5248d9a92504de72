/*
 * engine.c — the simulated cuBLAS's GEMM, computed on the CPU at call time (device memory
 * is host memory): D = epilogue(alpha·op(A)·op(B) + beta·C), column-major, for fp64, fp32,
 * fp16 (IEEE binary16) and bf16 matrices, strided or pointer-array batches.
 *
 * Precision: fp64 compute types accumulate in double; every other compute type (32F and
 * its FAST_* forms, 16F) accumulates in float, and 16-bit results are rounded once, to
 * nearest even, when stored. beta == 0 means C is not read (NaN in C does not propagate).
 *
 * Speed: op(A) and op(B) are first unpacked into contiguous buffers of the compute type,
 * then each column of D accumulates as a sequence of axpy's over op(A)'s columns (the i-k-j
 * order: the inner loop is contiguous and vectorises). This file is built with -O2 even in
 * Debug builds (CMakeLists.txt).
 *
 * Before computing, blas_gemm_check_memory checks that every byte the GEMM touches lies in
 * device memory known to the sim (anasim_mem_range), which NVIDIA's library does not do
 * (a bad pointer faults asynchronously there).
 */
#include "blas_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anasim.h"

size_t blas_type_size(cudaDataType t)
{
    switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    default: return 0;
    }
}

cublasStatus_t blas_check_types(cublasComputeType_t compute, cudaDataType scale,
                                cudaDataType ab, cudaDataType cd)
{
    int ok = 0;
    switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
        ok = scale == CUDA_R_16F && ab == CUDA_R_16F && cd == CUDA_R_16F;
        break;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        ok = scale == CUDA_R_32F &&
             ((ab == CUDA_R_32F && cd == CUDA_R_32F) ||
              ((ab == CUDA_R_16F || ab == CUDA_R_16BF) && (cd == ab || cd == CUDA_R_32F)));
        break;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        ok = scale == CUDA_R_32F && ab == CUDA_R_32F && cd == CUDA_R_32F;
        break;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        ok = scale == CUDA_R_64F && ab == CUDA_R_64F && cd == CUDA_R_64F;
        break;
    default:
        break;
    }
    return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

blas_math blas_gemm_math(const blas_gemm *g)
{
    switch (g->a.type) {
    case CUDA_R_64F: return BLAS_MATH_FP64;
    case CUDA_R_16F:
    case CUDA_R_16BF: return BLAS_MATH_HALF;
    default: break;
    }
    if (g->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
        return BLAS_MATH_TF32;
    if (g->compute == CUBLAS_COMPUTE_32F_FAST_16F || g->compute == CUBLAS_COMPUTE_32F_FAST_16BF)
        return BLAS_MATH_HALF;
    return BLAS_MATH_FP32;
}

/* ---- elements ------------------------------------------------------------------------ */

static double load(const void *p, cudaDataType t, int64_t i)
{
    switch (t) {
    case CUDA_R_16F: {
        _Float16 h;
        memcpy(&h, (const char *)p + 2 * i, 2);
        return (double)h;
    }
    case CUDA_R_16BF: {
        uint16_t b;
        memcpy(&b, (const char *)p + 2 * i, 2);
        uint32_t u = (uint32_t)b << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case CUDA_R_32F: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

/* float to bf16, round to nearest even; NaN stays a (quiet) NaN. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* v is a value of the compute type (a float, or a double for fp64 GEMMs): one rounding. */
static void store(void *p, cudaDataType t, int64_t i, double v)
{
    switch (t) {
    case CUDA_R_16F: {
        _Float16 h = (_Float16)v;
        memcpy((char *)p + 2 * i, &h, 2);
        break;
    }
    case CUDA_R_16BF: {
        uint16_t b = to_bf16((float)v);
        memcpy((char *)p + 2 * i, &b, 2);
        break;
    }
    case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}

/* ---- memory checks ------------------------------------------------------------------- */

/* [p + lo, p + hi) lies inside one allocation of device memory. */
static int inside(const void *p, int64_t lo, uint64_t hi)
{
    uintptr_t start = (uintptr_t)p + (uintptr_t)lo, end;
    if (!p || __builtin_add_overflow((uintptr_t)p, (uintptr_t)hi, &end))
        return 0;
    void *base;
    size_t size;
    if (anasim_mem_range((const void *)start, &base, &size) != CUDA_SUCCESS)
        return 0;
    return end <= (uintptr_t)base + size;
}

/* The bytes one instance spans: ((cols - 1)·ld + rows)·element size. */
static int extent(const blas_matrix *x, uint64_t *bytes)
{
    uint64_t es = blas_type_size(x->type), e;
    if (x->rows == 0 || x->cols == 0) {
        *bytes = 0;
        return 0;
    }
    if (__builtin_mul_overflow((uint64_t)(x->cols - 1), (uint64_t)x->ld, &e) ||
        __builtin_add_overflow(e, (uint64_t)x->rows, &e) || __builtin_mul_overflow(e, es, &e))
        return -1;
    *bytes = e;
    return 0;
}

static int matrix_ok(const blas_matrix *x, int64_t batch)
{
    uint64_t bytes;
    if (extent(x, &bytes) != 0)
        return 0;
    if (bytes == 0 || batch == 0)
        return 1;
    if (x->array) {
        if (!inside(x->array, 0, (uint64_t)batch * sizeof(void *)))
            return 0;
        for (int64_t b = 0; b < batch; b++)
            if (!inside(x->array[b], 0, bytes))
                return 0;
        return 1;
    }
    int64_t span = (batch - 1) * x->stride * (int64_t)blas_type_size(x->type);
    int64_t lo = span < 0 ? span : 0;
    uint64_t hi = (uint64_t)(span > 0 ? span : 0) + bytes;
    return inside(x->ptr, lo, hi);
}

static int scalar_ok(const blas_gemm *g, const void *s)
{
    return g->alpha_on_device ? inside(s, 0, blas_type_size(g->scale_type)) : s != NULL;
}

cublasStatus_t blas_gemm_check_memory(const blas_gemm *g)
{
    if (!scalar_ok(g, g->alpha) || !scalar_ok(g, g->beta))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    int reads_c = load(g->beta, g->scale_type, 0) != 0.0;
    if (!matrix_ok(&g->a, g->batch) || !matrix_ok(&g->b, g->batch) ||
        (reads_c && !matrix_ok(&g->c, g->batch)) || !matrix_ok(&g->d, g->batch))
        return CUBLAS_STATUS_EXECUTION_FAILED;
    if (g->epilogue & CUBLASLT_EPILOGUE_BIAS) {
        blas_matrix bias = { .ptr = g->bias, .type = g->bias_type, .rows = g->m, .cols = 1,
                             .ld = g->m, .stride = g->bias_stride };
        if (!matrix_ok(&bias, g->batch))
            return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- compute ------------------------------------------------------------------------- */

/* Instance b of a batched matrix. */
static const void *instance(const blas_matrix *x, int64_t b)
{
    if (x->array)
        return x->array[b];
    return (const char *)x->ptr + b * x->stride * (int64_t)blas_type_size(x->type);
}

/* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the tanh form of GELU. */
static double gelu(double x)
{
    const double k = 0.7978845608028654; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

static double epilogue(const blas_gemm *g, const void *bias, int64_t i, double v)
{
    if (g->epilogue & CUBLASLT_EPILOGUE_BIAS)
        v += load(bias, g->bias_type, i);
    if (g->epilogue & CUBLASLT_EPILOGUE_RELU)
        v = v > 0 ? v : 0;
    if (g->epilogue & CUBLASLT_EPILOGUE_GELU)
        v = gelu(v);
    return v;
}

/* One instance in compute type T: unpack op(A) (m×k) and op(B) (k×n), then axpy's. */
#define DEFINE_GEMM_ONE(NAME, T)                                                          \
    static int NAME(const blas_gemm *g, const void *A, const void *B, const void *C,     \
                    void *D, const void *bias, T alpha, T beta)                          \
    {                                                                                    \
        int64_t m = g->m, n = g->n, k = g->k;                                            \
        T *ap = malloc(sizeof(T) * (size_t)m * (size_t)k);                               \
        T *bp = malloc(sizeof(T) * (size_t)k * (size_t)n);                               \
        T *acc = malloc(sizeof(T) * (size_t)m);                                          \
        if (!ap || !bp || !acc) {                                                        \
            free(ap), free(bp), free(acc);                                               \
            return -1;                                                                   \
        }                                                                                \
        for (int64_t p = 0; p < k; p++)                                                  \
            for (int64_t i = 0; i < m; i++)                                              \
                ap[i + p * m] = (T)load(A, g->a.type,                                    \
                                        g->transa ? p + i * g->a.ld : i + p * g->a.ld);  \
        for (int64_t j = 0; j < n; j++)                                                  \
            for (int64_t p = 0; p < k; p++)                                              \
                bp[p + j * k] = (T)load(B, g->b.type,                                    \
                                        g->transb ? j + p * g->b.ld : p + j * g->b.ld);  \
        for (int64_t j = 0; j < n; j++) {                                                \
            for (int64_t i = 0; i < m; i++)                                              \
                acc[i] = 0;                                                              \
            for (int64_t p = 0; p < k; p++) {                                            \
                const T b = bp[p + j * k], *a = ap + p * m;                              \
                for (int64_t i = 0; i < m; i++)                                          \
                    acc[i] += a[i] * b;                                                  \
            }                                                                            \
            for (int64_t i = 0; i < m; i++) {                                            \
                T v = alpha * acc[i];                                                    \
                if (beta != 0)                                                           \
                    v += beta * (T)load(C, g->c.type, i + j * g->c.ld);                  \
                if (g->epilogue != CUBLASLT_EPILOGUE_DEFAULT)                            \
                    v = (T)epilogue(g, bias, i, v);                                      \
                store(D, g->d.type, i + j * g->d.ld, v);                                 \
            }                                                                            \
        }                                                                                \
        free(ap), free(bp), free(acc);                                                   \
        return 0;                                                                        \
    }

DEFINE_GEMM_ONE(gemm_one_float, float)
DEFINE_GEMM_ONE(gemm_one_double, double)

cublasStatus_t blas_gemm_compute(const blas_gemm *g)
{
    int dbl = g->compute == CUBLAS_COMPUTE_64F || g->compute == CUBLAS_COMPUTE_64F_PEDANTIC;
    double alpha = load(g->alpha, g->scale_type, 0), beta = load(g->beta, g->scale_type, 0);
    for (int64_t b = 0; b < g->batch; b++) {
        const void *bias = g->bias ? (const char *)g->bias + b * g->bias_stride *
                                                                 (int64_t)blas_type_size(g->bias_type)
                                   : NULL;
        const void *A = instance(&g->a, b), *B = instance(&g->b, b);
        const void *C = beta != 0 ? instance(&g->c, b) : NULL;
        void *D = (void *)instance(&g->d, b);
        int rc = dbl ? gemm_one_double(g, A, B, C, D, bias, alpha, beta)
                     : gemm_one_float(g, A, B, C, D, bias, (float)alpha, (float)beta);
        if (rc != 0)
            return CUBLAS_STATUS_ALLOC_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

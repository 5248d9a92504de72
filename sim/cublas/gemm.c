/*
 * gemm.c — the simulated libcublas.so.13's GEMMs that cublasLt can express: Sgemm, Dgemm,
 * Hgemm, GemmEx and the strided batched forms (and their _64 forms). Each is checked here,
 * then handed to cublasLtMatmul@libcublasLt.so.13 — a normal call to the imported symbol,
 * resolved by the dynamic linker, as NVIDIA's cuBLAS runs most GEMMs — with descriptors
 * built in place (cublasLt*Init_internal), the handle's Lt handle, workspace and stream,
 * and an algo naming the legacy xmma kernels. So a profiler that interposes cublasLtMatmul
 * sees a cuBLAS call containing a cuBLASLt call.
 *
 * m, n or k = 0 (or batch 0) succeeds at once and launches nothing. TF32 math mode
 * (CUBLAS_TF32_TENSOR_OP_MATH) turns a CUBLAS_COMPUTE_32F GEMM of fp32 matrices into
 * CUBLAS_COMPUTE_32F_FAST_TF32.
 */
#include "cublas_sim.h"

/* cuda_fp16.h declares __half for C++ only, so cublas_api.h hides the half-precision entry
 * points from C: declared here with the same ABI (a pointer to two bytes). */
typedef __half_raw blas_half;
cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const blas_half *alpha, const blas_half *A, int lda,
                           const blas_half *B, int ldb, const blas_half *beta, blas_half *C,
                           int ldc);
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const blas_half *alpha, const blas_half *A, int lda,
                                         long long int strideA, const blas_half *B, int ldb,
                                         long long int strideB, const blas_half *beta,
                                         blas_half *C, int ldc, long long int strideC,
                                         int batchCount);
cublasStatus_t cublasHgemm_64(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                              const blas_half *alpha, const blas_half *A, int64_t lda,
                              const blas_half *B, int64_t ldb, const blas_half *beta,
                              blas_half *C, int64_t ldc);
cublasStatus_t cublasHgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const blas_half *alpha,
                                            const blas_half *A, int64_t lda,
                                            long long int strideA, const blas_half *B,
                                            int64_t ldb, long long int strideB,
                                            const blas_half *beta, blas_half *C, int64_t ldc,
                                            long long int strideC, int64_t batchCount);

static int known_op(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static int64_t at_least_1(int64_t v) { return v > 1 ? v : 1; }

static cudaDataType scale_of(cublasComputeType_t compute)
{
    switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return CUDA_R_16F;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: return CUDA_R_64F;
    default: return CUDA_R_32F;
    }
}

cublasStatus_t cublas_check_call(cublasHandle_t handle, struct gemm_call *c,
                                 struct gemm_checked *g)
{
    struct cublasContext *h = cublas_handle(handle);
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    int ta = c->transa != CUBLAS_OP_N, tb = c->transb != CUBLAS_OP_N;
    if (!known_op(c->transa) || !known_op(c->transb) || c->m < 0 || c->n < 0 || c->k < 0 ||
        c->batch < 0 || c->lda < at_least_1(ta ? c->k : c->m) ||
        c->ldb < at_least_1(tb ? c->n : c->k) || c->ldc < at_least_1(c->m))
        return CUBLAS_STATUS_INVALID_VALUE;
    cudaDataType scale = scale_of(c->compute);
    if (c->atype != c->btype ||
        blas_check_types(c->compute, scale, c->atype, c->ctype) != CUBLAS_STATUS_SUCCESS)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    unsigned math = (unsigned)h->math & 0xfu;
    if (c->compute == CUBLAS_COMPUTE_32F && c->atype == CUDA_R_32F &&
        math == CUBLAS_TF32_TENSOR_OP_MATH)
        c->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    *g = (struct gemm_checked){ .h = h, .scale = scale, .ta = ta, .tb = tb,
                                .empty = c->m == 0 || c->n == 0 || c->k == 0 || c->batch == 0 };
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t set_i32(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                              int32_t v)
{
    return cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v));
}

static cublasStatus_t layout(cublasLtMatrixLayout_t l, cudaDataType type, int64_t rows,
                             int64_t cols, int64_t ld, int64_t stride, int32_t batch)
{
    cublasStatus_t st = cublasLtMatrixLayoutInit(l, type, (uint64_t)rows, (uint64_t)cols, ld);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                              sizeof(batch));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof(stride));
    return st;
}

cublasStatus_t cublas_gemm_via_lt(cublasHandle_t handle, struct gemm_call *c)
{
    struct gemm_checked g;
    cublasStatus_t st = cublas_check_call(handle, c, &g);
    if (st != CUBLAS_STATUS_SUCCESS || g.empty)
        return st;
    if (c->batch > INT32_MAX)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    struct cublasContext *h = g.h;
    int ta = g.ta, tb = g.tb;
    int32_t batch = (int32_t)c->batch;
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t la, lb, lc;
    st = cublasLtMatmulDescInit(&desc, c->compute, g.scale);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = set_i32(&desc, CUBLASLT_MATMUL_DESC_TRANSA, c->transa);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = set_i32(&desc, CUBLASLT_MATMUL_DESC_TRANSB, c->transb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = set_i32(&desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, h->pointer_mode);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(&la, c->atype, ta ? c->k : c->m, ta ? c->m : c->k, c->lda, c->stride_a,
                    batch);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(&lb, c->btype, tb ? c->n : c->k, tb ? c->k : c->n, c->ldb, c->stride_b,
                    batch);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = layout(&lc, c->ctype, c->m, c->n, c->ldc, c->stride_c, batch);
    if (st != CUBLAS_STATUS_SUCCESS)
        return CUBLAS_STATUS_INTERNAL_ERROR;
    cublasLtMatmulAlgo_t algo;
    blas_algo_init(&algo, BLAS_FAMILY_XMMA);
    return cublasLtMatmul(h->lt, &desc, c->alpha, c->A, &la, c->B, &lb, c->beta, c->C, &lc,
                          c->C, &lc, &algo, h->workspace, h->workspace_bytes, h->stream);
}

/* ---- entry points ------------------------------------------------------------------- */

#define GEMM(T, ty, comp, m_, n_, k_, lda_, ldb_, ldc_, sa, sb, sc, batch_)              \
    (struct gemm_call)                                                                    \
    {                                                                                     \
        .transa = transa, .transb = transb, .m = (m_), .n = (n_), .k = (k_),             \
        .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C, .atype = (ty),             \
        .btype = (ty), .ctype = (ty), .lda = (lda_), .ldb = (ldb_), .ldc = (ldc_),       \
        .stride_a = (sa), .stride_b = (sb), .stride_c = (sc), .batch = (batch_),          \
        .compute = (comp)                                                                 \
    }

#define DEFINE_TYPED_GEMM(NAME, T, IDX, ty, comp)                                         \
    BLAS_SIM_API cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,     \
                                     cublasOperation_t transb, IDX m, IDX n, IDX k,       \
                                     const T *alpha, const T *A, IDX lda, const T *B,     \
                                     IDX ldb, const T *beta, T *C, IDX ldc)               \
    {                                                                                     \
        struct gemm_call c = GEMM(T, ty, comp, m, n, k, lda, ldb, ldc, 0, 0, 0, 1);       \
        return cublas_gemm_via_lt(handle, &c);                                            \
    }

DEFINE_TYPED_GEMM(cublasSgemm_v2, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
DEFINE_TYPED_GEMM(cublasSgemm_v2_64, float, int64_t, CUDA_R_32F, CUBLAS_COMPUTE_32F)
DEFINE_TYPED_GEMM(cublasDgemm_v2, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
DEFINE_TYPED_GEMM(cublasDgemm_v2_64, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F)
DEFINE_TYPED_GEMM(cublasHgemm, blas_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F)
DEFINE_TYPED_GEMM(cublasHgemm_64, blas_half, int64_t, CUDA_R_16F, CUBLAS_COMPUTE_16F)

#define DEFINE_TYPED_STRIDED(NAME, T, IDX, ty, comp)                                      \
    BLAS_SIM_API cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,     \
                                     cublasOperation_t transb, IDX m, IDX n, IDX k,       \
                                     const T *alpha, const T *A, IDX lda,                 \
                                     long long int strideA, const T *B, IDX ldb,          \
                                     long long int strideB, const T *beta, T *C, IDX ldc, \
                                     long long int strideC, IDX batchCount)               \
    {                                                                                     \
        struct gemm_call c = GEMM(T, ty, comp, m, n, k, lda, ldb, ldc, strideA, strideB,  \
                                  strideC, batchCount);                                   \
        return cublas_gemm_via_lt(handle, &c);                                            \
    }

DEFINE_TYPED_STRIDED(cublasSgemmStridedBatched, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
DEFINE_TYPED_STRIDED(cublasSgemmStridedBatched_64, float, int64_t, CUDA_R_32F,
                     CUBLAS_COMPUTE_32F)
DEFINE_TYPED_STRIDED(cublasDgemmStridedBatched, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
DEFINE_TYPED_STRIDED(cublasDgemmStridedBatched_64, double, int64_t, CUDA_R_64F,
                     CUBLAS_COMPUTE_64F)
DEFINE_TYPED_STRIDED(cublasHgemmStridedBatched, blas_half, int, CUDA_R_16F,
                     CUBLAS_COMPUTE_16F)
DEFINE_TYPED_STRIDED(cublasHgemmStridedBatched_64, blas_half, int64_t, CUDA_R_16F,
                     CUBLAS_COMPUTE_16F)

#define EX_CALL(sa, sb, sc, batch_)                                                       \
    (struct gemm_call)                                                                    \
    {                                                                                     \
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha,      \
        .beta = beta, .A = A, .B = B, .C = C, .atype = Atype, .btype = Btype,            \
        .ctype = Ctype, .lda = lda, .ldb = ldb, .ldc = ldc, .stride_a = (sa),            \
        .stride_b = (sb), .stride_c = (sc), .batch = (batch_), .compute = computeType     \
    }

/* cublasGemmAlgo_t only picks among NVIDIA's kernels: every value runs the same here. */
#define DEFINE_GEMM_EX(NAME, IDX)                                                         \
    BLAS_SIM_API cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa,     \
                                     cublasOperation_t transb, IDX m, IDX n, IDX k,       \
                                     const void *alpha, const void *A, cudaDataType Atype, \
                                     IDX lda, const void *B, cudaDataType Btype, IDX ldb, \
                                     const void *beta, void *C, cudaDataType Ctype,       \
                                     IDX ldc, cublasComputeType_t computeType,            \
                                     cublasGemmAlgo_t algo)                               \
    {                                                                                     \
        struct gemm_call c = EX_CALL(0, 0, 0, 1);                                         \
        return cublas_gemm_via_lt(handle, &c);                                            \
    }

DEFINE_GEMM_EX(cublasGemmEx, int)
DEFINE_GEMM_EX(cublasGemmEx_64, int64_t)

#define DEFINE_GEMM_STRIDED_EX(NAME, IDX)                                                 \
    BLAS_SIM_API cublasStatus_t NAME(                                                     \
        cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, IDX m, \
        IDX n, IDX k, const void *alpha, const void *A, cudaDataType Atype, IDX lda,      \
        long long int strideA, const void *B, cudaDataType Btype, IDX ldb,                \
        long long int strideB, const void *beta, void *C, cudaDataType Ctype, IDX ldc,    \
        long long int strideC, IDX batchCount, cublasComputeType_t computeType,           \
        cublasGemmAlgo_t algo)                                                            \
    {                                                                                     \
        struct gemm_call c = EX_CALL(strideA, strideB, strideC, batchCount);              \
        return cublas_gemm_via_lt(handle, &c);                                            \
    }

DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

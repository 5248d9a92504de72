/*
 * batched.c — the simulated libcublas.so.13's pointer-array batched GEMMs
 * (cublasSgemmBatched, cublasGemmBatchedEx): checked like the other GEMMs, then run by the
 * engine directly (no cublasLtMatmul call), as one xmma kernel with the batch in gridDim.z.
 * The arrays of pointers are device memory (checked, then read on the host: device
 * memory is host memory in the sim).
 */
#include "cublas_sim.h"

cublasStatus_t cublas_gemm_batched(cublasHandle_t handle, struct gemm_call *c)
{
    struct gemm_checked ok;
    cublasStatus_t st = cublas_check_call(handle, c, &ok);
    if (st != CUBLAS_STATUS_SUCCESS || ok.empty)
        return st;
    struct cublasContext *h = ok.h;
    int ta = ok.ta, tb = ok.tb;
    blas_gemm g = {
        .transa = ta, .transb = tb, .m = c->m, .n = c->n, .k = c->k, .batch = c->batch,
        .a = { .array = c->Aarray, .type = c->atype, .rows = ta ? c->k : c->m,
               .cols = ta ? c->m : c->k, .ld = c->lda },
        .b = { .array = c->Barray, .type = c->btype, .rows = tb ? c->n : c->k,
               .cols = tb ? c->k : c->n, .ld = c->ldb },
        .c = { .array = (const void *const *)c->Carray, .type = c->ctype, .rows = c->m,
               .cols = c->n, .ld = c->ldc },
        .compute = c->compute, .scale_type = ok.scale, .alpha = c->alpha, .beta = c->beta,
        .alpha_on_device = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE,
        .epilogue = CUBLASLT_EPILOGUE_DEFAULT,
    };
    g.d = g.c;
    st = blas_gemm_check_memory(&g);
    return st == CUBLAS_STATUS_SUCCESS ? blas_gemm_run(&g, BLAS_FAMILY_XMMA, h->stream) : st;
}

BLAS_SIM_API cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k,
                                               const float *alpha, const float *const Aarray[],
                                               int lda, const float *const Barray[], int ldb,
                                               const float *beta, float *const Carray[],
                                               int ldc, int batchCount)
{
    struct gemm_call c = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha,
        .beta = beta, .Aarray = (const void *const *)Aarray,
        .Barray = (const void *const *)Barray, .Carray = (void *const *)Carray,
        .atype = CUDA_R_32F, .btype = CUDA_R_32F, .ctype = CUDA_R_32F, .lda = lda,
        .ldb = ldb, .ldc = ldc, .batch = batchCount, .compute = CUBLAS_COMPUTE_32F,
    };
    return cublas_gemm_batched(handle, &c);
}

BLAS_SIM_API cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *const Aarray[], cudaDataType Atype, int lda,
    const void *const Barray[], cudaDataType Btype, int ldb, const void *beta,
    void *const Carray[], cudaDataType Ctype, int ldc, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gemm_call c = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .alpha = alpha,
        .beta = beta, .Aarray = Aarray, .Barray = Barray, .Carray = Carray, .atype = Atype,
        .btype = Btype, .ctype = Ctype, .lda = lda, .ldb = ldb, .ldc = ldc,
        .batch = batchCount, .compute = computeType,
    };
    return cublas_gemm_batched(handle, &c);
}

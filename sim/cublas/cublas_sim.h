/*
 * cublas_sim.h — the simulated libcublas.so.13's handle and GEMM plumbing, shared by its
 * files (handle.c, gemm.c, batched.c).
 *
 * A handle owns: its stream (0 = the legacy default stream), math and pointer modes, one
 * cublasLt handle (every GEMM Lt can express goes through cublasLtMatmul, called through
 * the dynamic linker), the default workspace (32 MiB of device memory from cuMemAlloc_v2,
 * held from cublasCreate_v2 to cublasDestroy_v2) and the workspace in use (the default
 * one, or the user's from cublasSetWorkspace_v2 until the next cublasSetStream_v2).
 *
 * Thread-safety: one handle per thread is the documented rule; sharing one does not crash
 * (fields are plain words) but the settings then race, as with NVIDIA's.
 */
#ifndef BLAS_SIM_CUBLAS_H
#define BLAS_SIM_CUBLAS_H

#include "blas_sim.h"

struct cublasContext {
    cudaStream_t stream;
    cublasMath_t math;
    cublasPointerMode_t pointer_mode;
    cublasLtHandle_t lt;
    void *default_workspace;
    void *workspace;
    size_t workspace_bytes;
};

/* The live handle h, or NULL for NULL or a destroyed handle. */
struct cublasContext *cublas_handle(cublasHandle_t h);

/* One GEMM as the legacy API describes it (strided batches; batch 1 for plain GEMMs). */
struct gemm_call {
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    const void *alpha, *beta;
    const void *A, *B;
    void *C;
    const void *const *Aarray, *const *Barray; /* pointer-array batches, else NULL */
    void *const *Carray;
    cudaDataType atype, btype, ctype;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    int64_t batch;
    cublasComputeType_t compute;
};

/* What checking a GEMM found. */
struct gemm_checked {
    struct cublasContext *h;   /* the live handle */
    cudaDataType scale;        /* alpha's and beta's type */
    int ta, tb;                /* A, B transposed (CUBLAS_OP_T or CUBLAS_OP_C) */
    int empty;                 /* m, n, k or batch is 0: nothing to compute or launch */
};

/* Checks the call as NVIDIA documents it: CUBLAS_STATUS_NOT_INITIALIZED for a bad
 * handle; CUBLAS_STATUS_INVALID_VALUE for m, n, k or batch < 0, an unknown transpose or
 * lda < max(1, rows of A as stored), same for ldb, ldc < max(1, m);
 * CUBLAS_STATUS_NOT_SUPPORTED for a type combination the sim does not compute. On
 * success *g is filled in and the compute type reflects the TF32 math mode; an empty GEMM
 * then succeeds at once, launching nothing. */
cublasStatus_t cublas_check_call(cublasHandle_t handle, struct gemm_call *c,
                                 struct gemm_checked *g);
/* Strided (or single) GEMMs: through cublasLtMatmul. */
cublasStatus_t cublas_gemm_via_lt(cublasHandle_t handle, struct gemm_call *c);
/* Pointer-array batches: the engine directly. */
cublasStatus_t cublas_gemm_batched(cublasHandle_t handle, struct gemm_call *c);

#endif /* BLAS_SIM_CUBLAS_H */

/*
 * A cuBLAS GEMM contains a cuBLASLt call: the test defines its own cublasLtMatmul, which
 * the dynamic linker binds libcublas.so.13's import of cublasLtMatmul@libcublasLt.so.13 to
 * (as a profiler's preload would be bound), reads the shapes from the descriptors with
 * the documented Get calls, and forwards to the real one (dlsym RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

typedef cublasStatus_t (*matmul_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                    const void *, cublasLtMatrixLayout_t, const void *,
                                    cublasLtMatrixLayout_t, const void *, const void *,
                                    cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);

static int calls;
static uint64_t seen_rows_a, seen_cols_a, seen_rows_d, seen_cols_d;
static int32_t seen_transa, seen_batch, seen_compute;
static size_t seen_workspace;

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                              cudaStream_t stream)
{
    calls++;
    size_t n;
    cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &seen_transa, 4, &n);
    cublasLtMatrixLayoutGetAttribute(Adesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &seen_rows_a, 8, &n);
    cublasLtMatrixLayoutGetAttribute(Adesc, CUBLASLT_MATRIX_LAYOUT_COLS, &seen_cols_a, 8, &n);
    cublasLtMatrixLayoutGetAttribute(Ddesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &seen_rows_d, 8, &n);
    cublasLtMatrixLayoutGetAttribute(Ddesc, CUBLASLT_MATRIX_LAYOUT_COLS, &seen_cols_d, 8, &n);
    cublasLtMatrixLayoutGetAttribute(Ddesc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &seen_batch, 4, &n);
    cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &seen_compute, 4, &n);
    seen_workspace = ws_bytes;
    matmul_fn real = (matmul_fn)dlsym(RTLD_NEXT, "cublasLtMatmul");
    cr_assert_not_null(real);
    return real(h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, ws, ws_bytes,
                stream);
}

Test(sim_blas_nested, sgemm_calls_cublasLtMatmul)
{
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), 0);
    enum { M = 3, N = 2, K = 4 };
    float a[K * M], b[K * N], c[M * N];
    for (int i = 0; i < K * M; i++) a[i] = (float)(i + 1);
    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 3);
    float *A, *B, *C;
    cudaMalloc((void **)&A, sizeof(a)), cudaMalloc((void **)&B, sizeof(b));
    cudaMalloc((void **)&C, sizeof(c));
    cudaMemcpy(A, a, sizeof(a), cudaMemcpyHostToDevice);
    cudaMemcpy(B, b, sizeof(b), cudaMemcpyHostToDevice);
    float one = 1, zero = 0;
    cr_assert_eq(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, K, B, K, &zero, C, M),
                 CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(calls, 1);
    cr_assert_eq(seen_transa, CUBLAS_OP_T);
    cr_assert(seen_rows_a == K && seen_cols_a == M, "A is stored k×m");
    cr_assert(seen_rows_d == M && seen_cols_d == N && seen_batch == 1);
    cr_assert_eq(seen_workspace, (size_t)32 << 20);   /* the handle's default workspace */
    cudaMemcpy(c, C, sizeof(c), cudaMemcpyDeviceToHost);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            float s = 0;
            for (int p = 0; p < K; p++)
                s += a[p + i * K] * b[p + j * K];
            cr_assert_float_eq(c[i + j * M], s, 1e-5);
        }
    /* A strided batch goes through Lt too; a pointer-array batch does not. */
    cr_assert_eq(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, K, 0, B,
                                           K, 0, &zero, C, M, 0, 2), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(calls, 2);
    cr_assert_eq(seen_batch, 2);
    const float *ap[1] = { A }, *bp[1] = { B };
    float *cp[1] = { C };
    const float **Ap, **Bp;
    float **Cp;
    cudaMalloc((void **)&Ap, 8), cudaMalloc((void **)&Bp, 8), cudaMalloc((void **)&Cp, 8);
    cudaMemcpy(Ap, ap, 8, cudaMemcpyHostToDevice);
    cudaMemcpy(Bp, bp, 8, cudaMemcpyHostToDevice);
    cudaMemcpy(Cp, cp, 8, cudaMemcpyHostToDevice);
    cr_assert_eq(cublasSgemmBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, Ap, K, Bp, K,
                                    &zero, Cp, M, 1), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(calls, 2);
    /* TF32 math mode shows in the descriptor's compute type; the user's workspace is passed. */
    void *ws;
    cudaMalloc(&ws, 1 << 20);
    cr_assert_eq(cublasSetWorkspace(h, ws, 1 << 20), 0);
    cr_assert_eq(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), 0);
    cr_assert_eq(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, A, CUDA_R_32F, K, B,
                              CUDA_R_32F, K, &zero, C, CUDA_R_32F, M, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(calls, 3);
    cr_assert_eq(seen_compute, CUBLAS_COMPUTE_32F_FAST_TF32);
    cr_assert_eq(seen_workspace, (size_t)1 << 20);
    cr_assert_eq(cublasDestroy(h), 0);
    cudaFree(ws);
}

/*
 * The simulated libcublas.so.13 and libcublasLt.so.13 (docs/sim.md "cuBLAS and cuBLASLt"): GEMM results
 * against a naive triple loop in double computed here, the descriptor attribute protocol,
 * error codes, the handle's default workspace, and the kernels' CUPTI activity records —
 * names and durations computed here from the documented formula and constants, never by
 * calling the library's own cost code.
 */
#include "anasim.h"

#include <criterion/criterion.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* cublas_api.h declares the half-precision entry points for C++ only. */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const _Float16 *, const _Float16 *, int, const _Float16 *, int,
                           const _Float16 *, _Float16 *, int);

/* ---- helpers ---------------------------------------------------------------------------- */

static void *dev(size_t bytes)
{
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, bytes), cudaSuccess);
    return p;
}

static void *to_dev(const void *host, size_t bytes)
{
    void *p = dev(bytes);
    cr_assert_eq(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
}

static void from_dev(void *host, const void *d, size_t bytes)
{
    cr_assert_eq(cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

/* Deterministic values that are exact in fp16 and bf16: multiples of 1/4 in [-2, 2]. */
static double val(int i, int salt) { return (double)(((i * 7 + salt * 13) % 17) - 8) / 4.0; }

/* C = alpha·op(A)·op(B) + beta·C, column-major, in double. */
static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const double *A,
                     int lda, const double *B, int ldb, double beta, double *C, int ldc)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
            C[i + j * ldc] = alpha * s + beta * C[i + j * ldc];
        }
}

static cublasHandle_t handle;
static void setup(void) { cr_assert_eq(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS); }
static void teardown(void) { cr_assert_eq(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS); }

/* ---- results ---------------------------------------------------------------------------- */

static void check_sgemm(cublasOperation_t ta, cublasOperation_t tb)
{
    const int m = 37, n = 29, k = 23;
    int arows = ta == CUBLAS_OP_N ? m : k, acols = ta == CUBLAS_OP_N ? k : m;
    int brows = tb == CUBLAS_OP_N ? k : n, bcols = tb == CUBLAS_OP_N ? n : k;
    int lda = arows + 3, ldb = brows + 5, ldc = m + 2;
    size_t na = (size_t)lda * acols, nb = (size_t)ldb * bcols, nc = (size_t)ldc * n;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
    double *ad = malloc(na * 8), *bd = malloc(nb * 8), *cd = malloc(nc * 8);
    for (size_t i = 0; i < na; i++) ad[i] = a[i] = (float)val((int)i, 1);
    for (size_t i = 0; i < nb; i++) bd[i] = b[i] = (float)val((int)i, 2);
    for (size_t i = 0; i < nc; i++) cd[i] = c[i] = (float)val((int)i, 3);
    float *A = to_dev(a, na * 4), *B = to_dev(b, nb * 4), *C = to_dev(c, nc * 4);
    float alpha = 1.5f, beta = -0.5f;
    cr_assert_eq(cublasSgemm(handle, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc),
                 CUBLAS_STATUS_SUCCESS);
    ref_gemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, 1.5, ad, lda, bd, ldb, -0.5, cd, ldc);
    from_dev(c, C, nc * 4);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ldc; i++) {
            double want = i < m ? cd[i + j * ldc] : val(i + j * ldc, 3); /* padding untouched */
            cr_assert_float_eq(c[i + j * ldc], want, 1e-3, "op %d%d (%d,%d)", ta, tb, i, j);
        }
    cudaFree(A), cudaFree(B), cudaFree(C);
    free(a), free(b), free(c), free(ad), free(bd), free(cd);
}

Test(sim_blas, sgemm_all_transposes, .init = setup, .fini = teardown)
{
    check_sgemm(CUBLAS_OP_N, CUBLAS_OP_N);
    check_sgemm(CUBLAS_OP_T, CUBLAS_OP_N);
    check_sgemm(CUBLAS_OP_N, CUBLAS_OP_T);
    check_sgemm(CUBLAS_OP_T, CUBLAS_OP_T);
}

Test(sim_blas, dgemm, .init = setup, .fini = teardown)
{
    const int m = 19, n = 11, k = 33, lda = 20, ldb = 11, ldc = 19; /* A: m×k, B^T: n×k */
    double a[20 * 33], b[11 * 33], c[19 * 11], want[19 * 11];
    for (int i = 0; i < 20 * 33; i++) a[i] = val(i, 4) + 1e-9 * i;
    for (int i = 0; i < 11 * 33; i++) b[i] = val(i, 5);
    for (int i = 0; i < 19 * 11; i++) want[i] = c[i] = val(i, 6);
    double *A = to_dev(a, sizeof(a)), *B = to_dev(b, sizeof(b)), *C = to_dev(c, sizeof(c));
    double alpha = 0.25, beta = 2.0;
    cr_assert_eq(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, A, lda, B, ldb,
                             &beta, C, ldc), CUBLAS_STATUS_SUCCESS);
    ref_gemm(0, 1, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    from_dev(c, C, sizeof(c));
    for (int i = 0; i < 19 * 11; i++)
        cr_assert_float_eq(c[i], want[i], 1e-12, "element %d", i);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

/* 16-bit inputs, fp32 output: inputs are exact in both formats, products and sums of
 * quarters are exact in fp32, so only fp32 accumulation error remains. */
static void check_gemm_ex_16(cudaDataType t)
{
    const int m = 13, n = 9, k = 21;
    uint16_t a[13 * 21], b[21 * 9];
    double ad[13 * 21], bd[21 * 9], want[13 * 9] = { 0 };
    for (int i = 0; i < 13 * 21; i++) {
        ad[i] = val(i, 7);
        if (t == CUDA_R_16F) {
            _Float16 h = (_Float16)ad[i];
            memcpy(&a[i], &h, 2);
        } else {
            float f = (float)ad[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            a[i] = (uint16_t)(u >> 16); /* exact: the low half is zero */
        }
    }
    for (int i = 0; i < 21 * 9; i++) {
        bd[i] = val(i, 8);
        if (t == CUDA_R_16F) {
            _Float16 h = (_Float16)bd[i];
            memcpy(&b[i], &h, 2);
        } else {
            float f = (float)bd[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            b[i] = (uint16_t)(u >> 16);
        }
    }
    void *A = to_dev(a, sizeof(a)), *B = to_dev(b, sizeof(b));
    float *C = dev(sizeof(float) * m * n), c[13 * 9];
    float alpha = 2.0f, beta = 0.0f;
    cr_assert_eq(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A, t, k, B, t,
                              k, &beta, C, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_SUCCESS);
    /* A is stored k×m (transposed): lda = k. */
    ref_gemm(1, 0, m, n, k, 2.0, ad, k, bd, k, 0.0, want, m);
    from_dev(c, C, sizeof(c));
    for (int i = 0; i < m * n; i++)
        cr_assert_float_eq(c[i], want[i], 1e-4, "type %d element %d", (int)t, i);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

Test(sim_blas, gemm_ex_bf16_and_fp16_inputs, .init = setup, .fini = teardown)
{
    check_gemm_ex_16(CUDA_R_16BF);
    check_gemm_ex_16(CUDA_R_16F);
}

Test(sim_blas, hgemm_rounds_to_half, .init = setup, .fini = teardown)
{
    /* 1 + 2^-11 is halfway between two halves: round to nearest even gives 1. */
    _Float16 a[2] = { (_Float16)1.0f, (_Float16)0.00048828125f }, b[2] = { 1, 1 }, c = 0;
    _Float16 *A = to_dev(a, 4), *B = to_dev(b, 4), *C = to_dev(&c, 2);
    _Float16 alpha = 1, beta = 0;
    cr_assert_eq(cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, A, 1, B, 2,
                             &beta, C, 1), CUBLAS_STATUS_SUCCESS);
    from_dev(&c, C, 2);
    cr_assert_eq((float)c, 1.0f);
    a[1] = (_Float16)0.0009765625f; /* 1 + 2^-10: exactly representable */
    cudaMemcpy(A, a, 4, cudaMemcpyHostToDevice);
    cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, A, 1, B, 2, &beta, C, 1);
    from_dev(&c, C, 2);
    cr_assert_eq((float)c, 1.0009765625f);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

Test(sim_blas, strided_batched, .init = setup, .fini = teardown)
{
    enum { M = 5, N = 7, K = 3, BATCH = 3, SA = M * K + 4, SB = K * N + 1, SC = M * N + 2 };
    float a[SA * BATCH], b[SB * BATCH], c[SC * BATCH];
    double ad[SA * BATCH], bd[SB * BATCH], cd[SC * BATCH];
    for (int i = 0; i < SA * BATCH; i++) ad[i] = a[i] = (float)val(i, 9);
    for (int i = 0; i < SB * BATCH; i++) bd[i] = b[i] = (float)val(i, 10);
    for (int i = 0; i < SC * BATCH; i++) cd[i] = c[i] = (float)val(i, 11);
    float *A = to_dev(a, sizeof(a)), *B = to_dev(b, sizeof(b)), *C = to_dev(c, sizeof(c));
    float alpha = 1, beta = 1;
    cr_assert_eq(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha,
                                           A, M, SA, B, K, SB, &beta, C, M, SC, BATCH),
                 CUBLAS_STATUS_SUCCESS);
    for (int x = 0; x < BATCH; x++)
        ref_gemm(0, 0, M, N, K, 1, ad + x * SA, M, bd + x * SB, K, 1, cd + x * SC, M);
    from_dev(c, C, sizeof(c));
    for (int i = 0; i < SC * BATCH; i++)
        cr_assert_float_eq(c[i], cd[i], 1e-4, "element %d", i);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

Test(sim_blas, pointer_array_batched, .init = setup, .fini = teardown)
{
    enum { M = 6, N = 4, K = 5, BATCH = 3 };
    float a[BATCH][M * K], b[BATCH][K * N], c[BATCH][M * N];
    double ad[BATCH][M * K], bd[BATCH][K * N], cd[BATCH][M * N];
    const float *ap[BATCH], *bp[BATCH];
    float *cp[BATCH];
    for (int x = 0; x < BATCH; x++) {
        for (int i = 0; i < M * K; i++) ad[x][i] = a[x][i] = (float)val(i + x, 12);
        for (int i = 0; i < K * N; i++) bd[x][i] = b[x][i] = (float)val(i + 2 * x, 13);
        for (int i = 0; i < M * N; i++) cd[x][i] = c[x][i] = 0;
        ap[x] = to_dev(a[x], sizeof(a[x]));
        bp[x] = to_dev(b[x], sizeof(b[x]));
        cp[x] = to_dev(c[x], sizeof(c[x]));
        ref_gemm(0, 0, M, N, K, -1, ad[x], M, bd[x], K, 0, cd[x], M);
    }
    const float **Ap = to_dev(ap, sizeof(ap)), **Bp = to_dev(bp, sizeof(bp));
    float **Cp = to_dev(cp, sizeof(cp));
    float alpha = -1, beta = 0;
    cr_assert_eq(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, Ap, M,
                                    Bp, K, &beta, Cp, M, BATCH), CUBLAS_STATUS_SUCCESS);
    for (int x = 0; x < BATCH; x++) {
        from_dev(c[x], cp[x], sizeof(c[x]));
        for (int i = 0; i < M * N; i++)
            cr_assert_float_eq(c[x][i], cd[x][i], 1e-4, "batch %d element %d", x, i);
    }
}

static double gelu_ref(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

Test(sim_blas, lt_matmul_gelu_bias)
{
    enum { M = 9, N = 5, K = 7 };
    float a[K * M], b[K * N], bias[M], d[M * N];
    double ad[K * M], bd[K * N], want[M * N] = { 0 };
    for (int i = 0; i < K * M; i++) ad[i] = a[i] = (float)val(i, 14);
    for (int i = 0; i < K * N; i++) bd[i] = b[i] = (float)val(i, 15);
    for (int i = 0; i < M; i++) bias[i] = (float)val(i, 16);
    ref_gemm(1, 0, M, N, K, 0.5, ad, K, bd, K, 0, want, M); /* D = 0.5·Aᵀ·B */
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++)
            want[i + j * M] = gelu_ref(want[i + j * M] + bias[i]);
    float *A = to_dev(a, sizeof(a)), *B = to_dev(b, sizeof(b)), *Bias = to_dev(bias, sizeof(bias));
    float *D = dev(sizeof(d));

    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulPreference_t pref;
    cr_assert_eq(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), 0);
    int32_t t = CUBLAS_OP_T;
    uint32_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, 4), 0);
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, 4), 0);
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &Bias,
                                                sizeof(Bias)), 0);
    cr_assert_eq(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, K, M, K), 0);
    cr_assert_eq(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K), 0);
    cr_assert_eq(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, M, N, M), 0);
    cr_assert_eq(cublasLtMatmulPreferenceCreate(&pref), 0);
    uint64_t max_ws = 1 << 20;
    cr_assert_eq(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &max_ws, 8), 0);
    cublasLtMatmulHeuristicResult_t res[4];
    int nres = 0;
    cr_assert_eq(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 4, res, &nres), 0);
    cr_assert_eq(nres, 1);
    cr_assert_eq(res[0].state, CUBLAS_STATUS_SUCCESS);
    cr_assert_leq(res[0].workspaceSize, max_ws);
    float alpha = 0.5f, beta = 0;
    cr_assert_eq(cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &res[0].algo,
                                NULL, 0, 0), CUBLAS_STATUS_SUCCESS);
    from_dev(d, D, sizeof(d));
    for (int i = 0; i < M * N; i++)
        cr_assert_float_eq(d[i], want[i], 1e-4, "element %d: %g vs %g", i, d[i], want[i]);
    /* A foreign algo is refused. */
    cublasLtMatmulAlgo_t bogus = { { 0 } };
    cr_assert_eq(cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &bogus, NULL,
                                0, 0), CUBLAS_STATUS_INVALID_VALUE);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    cr_assert_eq(cublasLtDestroy(lt), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(cublasLtDestroy(lt), CUBLAS_STATUS_NOT_INITIALIZED);
}

/* ---- descriptors ------------------------------------------------------------------------ */

Test(sim_blas, descriptor_attribute_protocol)
{
    cublasLtMatmulDesc_t op;
    cr_assert_eq(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F), 0);
    int32_t v = -1;
    size_t written = 0;
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, 4,
                                                &written), 0);
    cr_assert_eq(v, CUBLAS_COMPUTE_32F_FAST_TF32);
    cr_assert_eq(written, 4);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &v, 4, NULL), 0);
    cr_assert_eq(v, CUBLAS_OP_N);
    uint32_t epi = 0;
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, 4, NULL), 0);
    cr_assert_eq(epi, CUBLASLT_EPILOGUE_DEFAULT);
    /* Size queries: sizeInBytes 0 gives the size and writes nothing. */
    written = 0;
    v = 77;
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &v, 0,
                                                &written), 0);
    cr_assert_eq(written, sizeof(void *));
    cr_assert_eq(v, 77);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 0,
                                                &written), 0);
    cr_assert_eq(written, 4);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 0, NULL),
                 CUBLAS_STATUS_INVALID_VALUE);
    /* Too small, NULL buffer, wrong size on set. */
    int16_t small;
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &small, 2,
                                                &written), CUBLAS_STATUS_INVALID_VALUE);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, NULL, 4,
                                                &written), CUBLAS_STATUS_INVALID_VALUE);
    int64_t big = 1;
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &big, 8),
                 CUBLAS_STATUS_INVALID_VALUE);
    /* Round trips. */
    void *bias = (void *)0x1234500;
    int32_t bias_type = CUDA_R_16BF, pm = CUBLASLT_POINTER_MODE_DEVICE;
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, 8), 0);
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bias_type, 4), 0);
    cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, 4), 0);
    void *bias_back = NULL;
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &bias_back, 8, &written), 0);
    cr_assert_eq(bias_back, bias);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &v, 4,
                                                NULL), 0);
    cr_assert_eq(v, CUDA_R_16BF);
    cr_assert_eq(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &v, 4,
                                                NULL), 0);
    cr_assert_eq(v, CUBLASLT_POINTER_MODE_DEVICE);
    cublasLtMatmulDescDestroy(op);

    cublasLtMatrixLayout_t l;
    cr_assert_eq(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 300, 200, 320), 0);
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0, stride = 0;
    int32_t batch = 0, order = -1;
    uint32_t type = 99;
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 8, &written), 0);
    cr_assert_eq(written, 8);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, 8, NULL), 0);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, 8, NULL), 0);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, 4, NULL), 0);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, 4, NULL), 0);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4, NULL), 0);
    cr_assert(rows == 300 && cols == 200 && ld == 320 && type == CUDA_R_16F);
    cr_assert(order == CUBLASLT_ORDER_COL && batch == 1);
    batch = 8;
    stride = 320 * 200;
    cr_assert_eq(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4), 0);
    cr_assert_eq(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, 8), 0);
    batch = 0;
    stride = 0;
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4, NULL), 0);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, 8, NULL), 0);
    cr_assert(batch == 8 && stride == 320 * 200);
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &batch, 4, NULL),
                 CUBLAS_STATUS_INVALID_VALUE); /* rows is a uint64_t */
    cr_assert_eq(cublasLtMatrixLayoutGetAttribute(l, (cublasLtMatrixLayoutAttribute_t)99, &rows,
                                                  8, NULL), CUBLAS_STATUS_INVALID_VALUE);
    cublasLtMatrixLayoutDestroy(l);

    cublasLtMatmulPreference_t pref;
    cr_assert_eq(cublasLtMatmulPreferenceCreate(&pref), 0);
    uint64_t ws = 123;
    cr_assert_eq(cublasLtMatmulPreferenceGetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &ws, 8, &written), 0);
    cr_assert(ws == 0 && written == 8);
    ws = 4 << 20;
    cr_assert_eq(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &ws, 8), 0);
    ws = 0;
    cr_assert_eq(cublasLtMatmulPreferenceGetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &ws, 8, NULL), 0);
    cr_assert_eq(ws, 4u << 20);
    cublasLtMatmulPreferenceDestroy(pref);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(sim_blas, error_codes, .init = setup, .fini = teardown)
{
    float *A = dev(64 * 64 * 4), *B = dev(64 * 64 * 4), *C = dev(64 * 64 * 4);
    float alpha = 1, beta = 0;
    cr_assert_eq(cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, A, 4, B, 4, &beta,
                             C, 4), CUBLAS_STATUS_NOT_INITIALIZED);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &alpha, A, 7, B, 4,
                             &beta, C, 8), CUBLAS_STATUS_INVALID_VALUE);   /* lda < m */
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 8, 4, 6, &alpha, A, 5, B, 6,
                             &beta, C, 8), CUBLAS_STATUS_INVALID_VALUE);   /* lda < k */
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &alpha, A, 4, B, 4,
                             &beta, C, 4), CUBLAS_STATUS_INVALID_VALUE);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, A, 4, B, 4,
                             &beta, C, 3), CUBLAS_STATUS_INVALID_VALUE);   /* ldc < m */
    cr_assert_eq(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, A, CUDA_R_8I, 4,
                              B, CUDA_R_8I, 4, &beta, C, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_NOT_SUPPORTED);
    cr_assert_eq(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, A, CUDA_R_32F, 4,
                              B, CUDA_R_16F, 4, &beta, C, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT), CUBLAS_STATUS_NOT_SUPPORTED);
    /* A host pointer, and a matrix running past the end of its allocation. */
    float host[16] = { 0 };
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, host, 4, B, 4,
                             &beta, C, 4), CUBLAS_STATUS_EXECUTION_FAILED);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha, A, 65, B, 64,
                             &beta, C, 64), CUBLAS_STATUS_EXECUTION_FAILED);
    /* m = 0: success, nothing computed. */
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 0, 4, 4, &alpha, host, 1, host, 4,
                             &beta, host, 1), CUBLAS_STATUS_SUCCESS);
    cr_assert_str_eq(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
    cr_assert_str_eq(cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED),
                     "the library was not initialized");
    cr_assert_str_eq(cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
    int ver = 0;
    cr_assert_eq(cublasGetVersion(handle, &ver), 0);
    cr_assert_eq(ver, CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

Test(sim_blas, destroyed_handle_and_modes)
{
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), 0);
    cublasMath_t mode;
    cublasPointerMode_t pm;
    cr_assert_eq(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), 0);
    cr_assert_eq(cublasGetMathMode(h, &mode), 0);
    cr_assert_eq(mode, CUBLAS_TF32_TENSOR_OP_MATH);
    cr_assert_eq(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE), 0);
    cr_assert_eq(cublasGetPointerMode(h, &pm), 0);
    cr_assert_eq(pm, CUBLAS_POINTER_MODE_DEVICE);
    cudaStream_t s, got;
    cudaStreamCreate(&s);
    cr_assert_eq(cublasSetStream(h, s), 0);
    cr_assert_eq(cublasGetStream(h, &got), 0);
    cr_assert_eq(got, s);
    cr_assert_eq(cublasDestroy(h), 0);
    cr_assert_eq(cublasDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
    cr_assert_eq(cublasSetStream(h, s), CUBLAS_STATUS_NOT_INITIALIZED);
    cudaStreamDestroy(s);
}

Test(sim_blas, device_pointer_mode, .init = setup, .fini = teardown)
{
    float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 0, 0, 1 }, ab[2] = { 3, 0 }, c[4];
    float *A = to_dev(a, 16), *B = to_dev(b, 16), *C = dev(16), *AB = to_dev(ab, 8);
    cr_assert_eq(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE), 0);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, AB, A, 2, B, 2, AB + 1,
                             C, 2), CUBLAS_STATUS_SUCCESS);
    from_dev(c, C, 16);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(c[i], 3 * a[i], 1e-6);
    /* alpha in host memory while the mode says device: refused, not read. */
    float host_alpha = 1;
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &host_alpha, A, 2, B, 2,
                             AB + 1, C, 2), CUBLAS_STATUS_EXECUTION_FAILED);
}

/* ---- workspace -------------------------------------------------------------------------- */

Test(sim_blas, default_workspace_is_32_mib)
{
    size_t free0, free1, free2, total;
    cr_assert_eq(cudaMemGetInfo(&free0, &total), cudaSuccess);
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), 0);
    cr_assert_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
    cr_assert_eq(free0 - free1, (size_t)32 << 20);
    void *mine = dev(1 << 20);
    cr_assert_eq(cublasSetWorkspace(h, mine, 1 << 20), 0);
    cr_assert_eq(cublasSetWorkspace(h, (char *)mine + 8, 1024), CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(mine);
    cr_assert_eq(cublasDestroy(h), 0);
    cr_assert_eq(cudaMemGetInfo(&free2, &total), cudaSuccess);
    cr_assert_eq(free2, free0);
    /* cublasLt allocates nothing. */
    cublasLtHandle_t lt;
    cr_assert_eq(cublasLtCreate(&lt), 0);
    cr_assert_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
    cr_assert_eq(free1, free0);
    cublasLtDestroy(lt);
}

/* ---- threads ---------------------------------------------------------------------------- */

/* Each thread: its own handle and stream, 20 GEMMs of a known result (all-ones A and B:
 * every element of C is k). */
static void *gemm_worker(void *arg)
{
    (void)arg;
    enum { N = 24 };
    float ones[N * N], c[N * N];
    for (int i = 0; i < N * N; i++) ones[i] = 1;
    cublasHandle_t h;
    cudaStream_t s;
    float *A, *C;
    if (cublasCreate(&h) != 0 || cudaStreamCreate(&s) != cudaSuccess ||
        cudaMalloc((void **)&A, sizeof(ones)) != cudaSuccess ||
        cudaMalloc((void **)&C, sizeof(c)) != cudaSuccess)
        return (void *)1;
    cudaMemcpy(A, ones, sizeof(ones), cudaMemcpyHostToDevice);
    cublasSetStream(h, s);
    float one = 1, zero = 0;
    intptr_t bad = 0;
    for (int r = 0; r < 20; r++)
        bad |= cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, &one, A, N, A, N, &zero, C, N) != 0;
    cudaMemcpy(c, C, sizeof(c), cudaMemcpyDeviceToHost);
    for (int i = 0; i < N * N; i++)
        bad |= c[i] != (float)N;
    cudaFree(A), cudaFree(C), cudaStreamDestroy(s);
    bad |= cublasDestroy(h) != 0;
    return (void *)bad;
}

Test(sim_blas, handles_on_several_threads)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, gemm_worker, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *bad = (void *)1;
        pthread_join(t[i], &bad);
        cr_assert_null(bad, "thread %d", i);
    }
}

/* ANATOMIST_SIM_BLAS_COMPUTE=0 (read at the first GEMM of the process; Criterion runs each
 * test in its own process): the call succeeds and C keeps its bytes. */
Test(sim_blas, compute_off_leaves_c_untouched)
{
    cr_assert_eq(setenv("ANATOMIST_SIM_BLAS_COMPUTE", "0", 1), 0);
    cr_assert_eq(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
    float a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 }, c[4] = { -1, -2, -3, -4 };
    float *A = to_dev(a, sizeof(a)), *B = to_dev(b, sizeof(b)), *C = to_dev(c, sizeof(c));
    float alpha = 1.0f, beta = 0.0f, out[4];
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, A, 2, B, 2, &beta, C, 2),
                 CUBLAS_STATUS_SUCCESS);
    from_dev(out, C, sizeof(out));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], c[i], "C[%d] = %g, was %g", i, out[i], c[i]);
    cudaFree(A), cudaFree(B), cudaFree(C);
    cr_assert_eq(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS);
}

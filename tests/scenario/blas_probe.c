/* blas_probe.c — calls cuBLAS and cuBLASLt the way a trainer does, for test_blas_hooks.py.
 *
 * A handle on a created stream with TF32 math, then GEMMs through many entry points (odd
 * shapes, every transpose, leading dimensions larger than needed, strided and pointer-array
 * batches, a legacy cudaDataType_t compute type), a workspace set between them, one
 * cublasLtMatmul with descriptors of its own (batch 2, RELU epilogue), and the handles
 * destroyed. Every GEMM's result is checked against a CPU reference computed here
 * (`result NAME ok|FAIL`, with a checksum that must not change under the preload), and the
 * last stdout line is the ledger: `ledger {json}` with what each call was given, in order.
 * Exit status 0 when every call succeeded and every result matched. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char ledger[16384];
static size_t ledger_len;
static int failures;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ledger_len += (size_t)vsnprintf(ledger + ledger_len, sizeof(ledger) - ledger_len, fmt, ap);
    va_end(ap);
}

#define CHECK(what, call)                                                                    \
    do {                                                                                     \
        int rc_ = (int)(call);                                                               \
        if (rc_ != 0) {                                                                      \
            printf("error %s returned %d\n", what, rc_);                                     \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* ---- host matrices (column-major, double for the reference) ---- */

static double value_at(int seed, int64_t i) { return (double)((seed * 7 + i * 13) % 7 - 3); }

/* op(X)(r, c) of a matrix stored with leading dimension ld. */
static double op_at(const double *x, int trans, int64_t ld, int64_t r, int64_t c)
{
    return trans == CUBLAS_OP_N ? x[r + c * ld] : x[c + r * ld];
}

/* C = alpha op(A) op(B) + beta C, m×n, inner k. */
static void ref_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                     const double *b, int64_t ldb, double beta, double *c, int64_t ldc, int relu)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += op_at(a, ta, lda, i, p) * op_at(b, tb, ldb, p, j);
            double v = alpha * s + beta * c[i + j * ldc];
            c[i + j * ldc] = relu && v < 0 ? 0 : v;
        }
}

/* One operand batch on host (double) and device (float or double). */
typedef struct mat {
    int64_t elems; /* per matrix */
    int batch, dbl;
    double *h;
    void *d;
} mat;

static mat mat_new(int64_t rows, int64_t cols, int64_t ld, int batch, int dbl, int seed)
{
    (void)rows;
    mat x = { ld * cols, batch, dbl, NULL, NULL };
    x.h = calloc((size_t)(x.elems * batch), sizeof(double));
    for (int64_t i = 0; i < x.elems * batch; i++)
        x.h[i] = value_at(seed, i);
    size_t es = dbl ? sizeof(double) : sizeof(float);
    void *tmp = malloc((size_t)(x.elems * batch) * es);
    for (int64_t i = 0; i < x.elems * batch; i++)
        if (dbl)
            ((double *)tmp)[i] = x.h[i];
        else
            ((float *)tmp)[i] = (float)x.h[i];
    CHECK("cudaMalloc", cudaMalloc(&x.d, (size_t)(x.elems * batch) * es));
    CHECK("cudaMemcpy", cudaMemcpy(x.d, tmp, (size_t)(x.elems * batch) * es, cudaMemcpyHostToDevice));
    free(tmp);
    return x;
}

static void *mat_at(const mat *x, int b) { return (char *)x->d + (size_t)(b * x->elems) * (x->dbl ? 8 : 4); }

/* Compares the device result with the reference; prints `result NAME ok|FAIL checksum`. */
static void verify(const char *name, const mat *c)
{
    size_t n = (size_t)(c->elems * c->batch), es = c->dbl ? 8 : 4;
    void *tmp = malloc(n * es);
    CHECK("cudaMemcpy", cudaMemcpy(tmp, c->d, n * es, cudaMemcpyDeviceToHost));
    double err = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v = c->dbl ? ((double *)tmp)[i] : ((float *)tmp)[i];
        err = fmax(err, fabs(v - c->h[i]) / fmax(1.0, fabs(c->h[i])));
        sum += v * (double)(i % 17 + 1);
    }
    int ok = err < 1e-4;
    failures += !ok;
    printf("result %s %s %.6f\n", name, ok ? "ok" : "FAIL", sum);
    free(tmp);
}

/* The ledger entry of one GEMM: what it was given. */
static void note_gemm(const char *name, int ta, int tb, int64_t m, int64_t n, int64_t k, int batch, int64_t lda,
                      int64_t ldb, int64_t ldc, int at, int bt, int ct, int compute, int64_t ws, int epi)
{
    note("%s{\"name\":\"%s\",\"ta\":%d,\"tb\":%d,\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%d,"
         "\"lda\":%lld,\"ldb\":%lld,\"ldc\":%lld,\"a_type\":%d,\"b_type\":%d,\"c_type\":%d,\"compute\":%d,"
         "\"workspace\":%lld,\"epilogue\":%d}",
         ledger_len && ledger[ledger_len - 1] != '[' ? "," : "", name, ta, tb, (long long)m, (long long)n,
         (long long)k, batch, (long long)lda, (long long)ldb, (long long)ldc, at, bt, ct, compute, (long long)ws,
         epi);
}

/* Operands of op(A) m×k, op(B) k×n, C m×n with leading dimensions ld + pad. */
typedef struct gemm_case {
    const char *name;
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int batch, dbl;
    mat a, b, c;
} gemm_case;

static gemm_case make_case(const char *name, int ta, int tb, int64_t m, int64_t n, int64_t k, int pad, int batch,
                           int dbl)
{
    gemm_case g = { name, ta, tb, m, n, k, 0, 0, m + pad, batch, dbl, { 0 }, { 0 }, { 0 } };
    g.lda = (ta == CUBLAS_OP_N ? m : k) + pad;
    g.ldb = (tb == CUBLAS_OP_N ? k : n) + pad;
    g.a = mat_new(0, ta == CUBLAS_OP_N ? k : m, g.lda, batch, dbl, 1);
    g.b = mat_new(0, tb == CUBLAS_OP_N ? n : k, g.ldb, batch, dbl, 2);
    g.c = mat_new(0, n, g.ldc, batch, dbl, 3);
    return g;
}

/* The host copies only: the device matrices stay allocated, as the test expects. */
static void case_free(gemm_case *g)
{
    free(g->a.h), free(g->b.h), free(g->c.h);
}

static void reference(gemm_case *g, double alpha, double beta, int relu)
{
    for (int b = 0; b < g->batch; b++)
        ref_gemm(g->ta, g->tb, g->m, g->n, g->k, alpha, g->a.h + b * g->a.elems, g->lda, g->b.h + b * g->b.elems,
                 g->ldb, beta, g->c.h + b * g->c.elems, g->ldc, relu);
}

/* A device array of the batch's matrix pointers (the *Batched entry points). */
static void **pointers(const mat *x)
{
    void *host[8], **dev = NULL;
    for (int b = 0; b < x->batch; b++)
        host[b] = mat_at(x, b);
    CHECK("cudaMalloc", cudaMalloc((void **)&dev, sizeof(void *) * (size_t)x->batch));
    CHECK("cudaMemcpy", cudaMemcpy(dev, host, sizeof(void *) * (size_t)x->batch, cudaMemcpyHostToDevice));
    return dev;
}

static void lt_matmul(cublasLtHandle_t lt, cudaStream_t stream, void *ws, size_t ws_bytes)
{
    /* D = relu(op(A) B), A stored k×m (transa T), batch 2, D in place of C. */
    gemm_case g = make_case("cublasLtMatmul", CUBLAS_OP_T, CUBLAS_OP_N, 10, 6, 8, 2, 2, 0);
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t ad, bd, cd;
    int32_t ta = CUBLAS_OP_T, batch = 2;
    uint32_t epi = CUBLASLT_EPILOGUE_RELU;
    CHECK("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK("SetAttribute", cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CHECK("SetAttribute", cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    CHECK("LayoutCreate", cublasLtMatrixLayoutCreate(&ad, CUDA_R_32F, (uint64_t)g.k, (uint64_t)g.m, g.lda));
    CHECK("LayoutCreate", cublasLtMatrixLayoutCreate(&bd, CUDA_R_32F, (uint64_t)g.k, (uint64_t)g.n, g.ldb));
    CHECK("LayoutCreate", cublasLtMatrixLayoutCreate(&cd, CUDA_R_32F, (uint64_t)g.m, (uint64_t)g.n, g.ldc));
    cublasLtMatrixLayout_t all[3] = { ad, bd, cd };
    int64_t strides[3] = { g.a.elems, g.b.elems, g.c.elems };
    for (int i = 0; i < 3; i++) {
        CHECK("LayoutSet", cublasLtMatrixLayoutSetAttribute(all[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                            sizeof(batch)));
        CHECK("LayoutSet", cublasLtMatrixLayoutSetAttribute(all[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                            &strides[i], sizeof(strides[i])));
    }
    float alpha = 1.0f, beta = 0.5f;
    CHECK("cublasLtMatmul", cublasLtMatmul(lt, desc, &alpha, g.a.d, ad, g.b.d, bd, &beta, g.c.d, cd, g.c.d, cd, NULL,
                                           ws, ws_bytes, stream));
    note_gemm(g.name, g.ta, g.tb, g.m, g.n, g.k, 2, g.lda, g.ldb, g.ldc, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              CUBLAS_COMPUTE_32F, (int64_t)ws_bytes, (int)epi);
    reference(&g, alpha, beta, 1);
    CHECK("cudaStreamSynchronize", cudaStreamSynchronize(stream));
    verify(g.name, &g.c);
    case_free(&g);
    cublasLtMatrixLayoutDestroy(ad), cublasLtMatrixLayoutDestroy(bd), cublasLtMatrixLayoutDestroy(cd);
    cublasLtMatmulDescDestroy(desc);
}

int main(void)
{
    cublasHandle_t h;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *ws;
    const size_t ws_bytes = 4u << 20, lt_ws_bytes = 1u << 20;
    CHECK("cudaStreamCreate", cudaStreamCreate(&stream));
    CHECK("cudaMalloc", cudaMalloc(&ws, ws_bytes + lt_ws_bytes));
    CHECK("cublasCreate_v2", cublasCreate(&h));
    CHECK("cublasSetStream_v2", cublasSetStream(h, stream));
    CHECK("cublasSetMathMode", cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    note("{\"handle\":%llu,\"stream\":%llu,\"ws_ptr\":%llu,\"ws_bytes\":%zu,\"gemms\":[",
         (unsigned long long)(uintptr_t)h, (unsigned long long)(uintptr_t)stream, (unsigned long long)(uintptr_t)ws,
         ws_bytes);

    float fa = 1.5f, fb = 0.5f;
    double da = -1.0, db = 2.0;
    int64_t wsn = 0; /* the workspace the next GEMMs run with */
    int math = CUBLAS_TF32_TENSOR_OP_MATH;
    int math_at[16], n = 0, legacy_ret;

    gemm_case s1 = make_case("cublasSgemm_v2", CUBLAS_OP_N, CUBLAS_OP_N, 37, 19, 23, 3, 1, 0);
    CHECK("cublasSgemm_v2", cublasSgemm(h, s1.ta, s1.tb, (int)s1.m, (int)s1.n, (int)s1.k, &fa, s1.a.d, (int)s1.lda,
                                         s1.b.d, (int)s1.ldb, &fb, s1.c.d, (int)s1.ldc));
    note_gemm(s1.name, s1.ta, s1.tb, s1.m, s1.n, s1.k, 1, s1.lda, s1.ldb, s1.ldc, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              CUBLAS_COMPUTE_32F, wsn, 0), math_at[n++] = math;
    reference(&s1, fa, fb, 0);

    CHECK("cublasSetWorkspace_v2", cublasSetWorkspace(h, ws, ws_bytes));
    wsn = (int64_t)ws_bytes;

    gemm_case d1 = make_case("cublasDgemm_v2", CUBLAS_OP_T, CUBLAS_OP_N, 17, 29, 13, 0, 1, 1);
    CHECK("cublasDgemm_v2", cublasDgemm(h, d1.ta, d1.tb, (int)d1.m, (int)d1.n, (int)d1.k, &da, d1.a.d, (int)d1.lda,
                                         d1.b.d, (int)d1.ldb, &db, d1.c.d, (int)d1.ldc));
    note_gemm(d1.name, d1.ta, d1.tb, d1.m, d1.n, d1.k, 1, d1.lda, d1.ldb, d1.ldc, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
              CUBLAS_COMPUTE_64F, wsn, 0), math_at[n++] = math;
    reference(&d1, da, db, 0);

    CHECK("cublasSetMathMode", cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    math = CUBLAS_DEFAULT_MATH;

    gemm_case s64 = make_case("cublasSgemm_v2_64", CUBLAS_OP_N, CUBLAS_OP_T, 8, 12, 5, 1, 1, 0);
    CHECK("cublasSgemm_v2_64", cublasSgemm_v2_64(h, s64.ta, s64.tb, s64.m, s64.n, s64.k, &fa, s64.a.d, s64.lda,
                                                  s64.b.d, s64.ldb, &fb, s64.c.d, s64.ldc));
    note_gemm(s64.name, s64.ta, s64.tb, s64.m, s64.n, s64.k, 1, s64.lda, s64.ldb, s64.ldc, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, CUBLAS_COMPUTE_32F, wsn, 0), math_at[n++] = math;
    reference(&s64, fa, fb, 0);

    /* A legacy compute type: cudaDataType_t CUDA_R_32F (0) where cublasComputeType_t goes. */
    gemm_case e1 = make_case("cublasGemmEx", CUBLAS_OP_T, CUBLAS_OP_T, 11, 7, 9, 2, 1, 0);
    /* cuBLAS may answer CUBLAS_STATUS_NOT_SUPPORTED (the sim does): then C is unchanged. */
    legacy_ret = cublasGemmEx(h, e1.ta, e1.tb, (int)e1.m, (int)e1.n, (int)e1.k, &fa, e1.a.d, CUDA_R_32F, (int)e1.lda,
                              e1.b.d, CUDA_R_32F, (int)e1.ldb, &fb, e1.c.d, CUDA_R_32F, (int)e1.ldc,
                              (cublasComputeType_t)CUDA_R_32F, CUBLAS_GEMM_DEFAULT);
    if (legacy_ret != CUBLAS_STATUS_SUCCESS && legacy_ret != CUBLAS_STATUS_NOT_SUPPORTED)
        CHECK("cublasGemmEx (legacy compute type)", legacy_ret);
    note_gemm(e1.name, e1.ta, e1.tb, e1.m, e1.n, e1.k, 1, e1.lda, e1.ldb, e1.ldc, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, wsn, 0), math_at[n++] = math;
    if (legacy_ret == CUBLAS_STATUS_SUCCESS)
        reference(&e1, fa, fb, 0);

    gemm_case e2 = make_case("cublasGemmEx", CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, 0, 1, 0);
    CHECK("cublasGemmEx", cublasGemmEx(h, e2.ta, e2.tb, (int)e2.m, (int)e2.n, (int)e2.k, &fa, e2.a.d, CUDA_R_32F,
                                       (int)e2.lda, e2.b.d, CUDA_R_32F, (int)e2.ldb, &fb, e2.c.d, CUDA_R_32F,
                                       (int)e2.ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    note_gemm(e2.name, e2.ta, e2.tb, e2.m, e2.n, e2.k, 1, e2.lda, e2.ldb, e2.ldc, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              CUBLAS_COMPUTE_32F_FAST_TF32, wsn, 0), math_at[n++] = math;
    reference(&e2, fa, fb, 0);

    gemm_case sb = make_case("cublasSgemmStridedBatched", CUBLAS_OP_N, CUBLAS_OP_N, 5, 6, 7, 1, 3, 0);
    CHECK("cublasSgemmStridedBatched",
          cublasSgemmStridedBatched(h, sb.ta, sb.tb, (int)sb.m, (int)sb.n, (int)sb.k, &fa, sb.a.d, (int)sb.lda,
                                    sb.a.elems, sb.b.d, (int)sb.ldb, sb.b.elems, &fb, sb.c.d, (int)sb.ldc, sb.c.elems,
                                    sb.batch));
    note_gemm(sb.name, sb.ta, sb.tb, sb.m, sb.n, sb.k, sb.batch, sb.lda, sb.ldb, sb.ldc, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, CUBLAS_COMPUTE_32F, wsn, 0), math_at[n++] = math;
    reference(&sb, fa, fb, 0);

    gemm_case xb = make_case("cublasGemmStridedBatchedEx", CUBLAS_OP_T, CUBLAS_OP_N, 9, 4, 6, 0, 2, 1);
    CHECK("cublasGemmStridedBatchedEx",
          cublasGemmStridedBatchedEx(h, xb.ta, xb.tb, (int)xb.m, (int)xb.n, (int)xb.k, &da, xb.a.d, CUDA_R_64F,
                                     (int)xb.lda, xb.a.elems, xb.b.d, CUDA_R_64F, (int)xb.ldb, xb.b.elems, &db, xb.c.d,
                                     CUDA_R_64F, (int)xb.ldc, xb.c.elems, xb.batch, CUBLAS_COMPUTE_64F,
                                     CUBLAS_GEMM_DEFAULT));
    note_gemm(xb.name, xb.ta, xb.tb, xb.m, xb.n, xb.k, xb.batch, xb.lda, xb.ldb, xb.ldc, CUDA_R_64F, CUDA_R_64F,
              CUDA_R_64F, CUBLAS_COMPUTE_64F, wsn, 0), math_at[n++] = math;
    reference(&xb, da, db, 0);

    gemm_case pb = make_case("cublasSgemmBatched", CUBLAS_OP_N, CUBLAS_OP_T, 6, 5, 4, 2, 2, 0);
    void **pa = pointers(&pb.a), **pbp = pointers(&pb.b), **pc = pointers(&pb.c);
    CHECK("cublasSgemmBatched",
          cublasSgemmBatched(h, pb.ta, pb.tb, (int)pb.m, (int)pb.n, (int)pb.k, &fa, (const float *const *)pa,
                             (int)pb.lda, (const float *const *)pbp, (int)pb.ldb, &fb, (float *const *)pc, (int)pb.ldc,
                             pb.batch));
    note_gemm(pb.name, pb.ta, pb.tb, pb.m, pb.n, pb.k, pb.batch, pb.lda, pb.ldb, pb.ldc, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, CUBLAS_COMPUTE_32F, wsn, 0), math_at[n++] = math;
    reference(&pb, fa, fb, 0);

    gemm_case xp = make_case("cublasGemmBatchedEx", CUBLAS_OP_N, CUBLAS_OP_N, 3, 3, 3, 0, 2, 0);
    void **xa = pointers(&xp.a), **xbp = pointers(&xp.b), **xc = pointers(&xp.c);
    CHECK("cublasGemmBatchedEx",
          cublasGemmBatchedEx(h, xp.ta, xp.tb, (int)xp.m, (int)xp.n, (int)xp.k, &fa, (const void *const *)xa,
                              CUDA_R_32F, (int)xp.lda, (const void *const *)xbp, CUDA_R_32F, (int)xp.ldb, &fb,
                              (void *const *)xc, CUDA_R_32F, (int)xp.ldc, xp.batch, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    note_gemm(xp.name, xp.ta, xp.tb, xp.m, xp.n, xp.k, xp.batch, xp.lda, xp.ldb, xp.ldc, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, CUBLAS_COMPUTE_32F, wsn, 0), math_at[n++] = math;
    reference(&xp, fa, fb, 0);

    CHECK("cublasLtCreate", cublasLtCreate(&lt));
    lt_matmul(lt, stream, (char *)ws + ws_bytes, lt_ws_bytes);
    math_at[n++] = 0;
    CHECK("cublasLtDestroy", cublasLtDestroy(lt));

    CHECK("cudaStreamSynchronize", cudaStreamSynchronize(stream));
    gemm_case *all[] = { &s1, &d1, &s64, &e1, &e2, &sb, &xb, &pb, &xp };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        verify(all[i]->name, &all[i]->c);
        case_free(all[i]);
    }
    CHECK("cublasDestroy_v2", cublasDestroy(h));
    note("],\"math\":[");
    for (int i = 0; i < n; i++)
        note("%s%d", i ? "," : "", math_at[i]);
    note("],\"legacy_ret\":%d,\"lt_handle\":%llu,\"lt_ws_ptr\":%llu,\"ok\":%s}", legacy_ret,
         (unsigned long long)(uintptr_t)lt,
         (unsigned long long)(uintptr_t)((char *)ws + ws_bytes), failures ? "false" : "true");
    printf("ledger %s\n", ledger);
    return failures ? 1 : 0;
}

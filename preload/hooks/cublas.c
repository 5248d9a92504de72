/* cublas.c — interposed entry points of cuBLAS (libcublas.so.13) and cuBLASLt
 * (libcublasLt.so.13): handles and settings become LIBCALL records, matrix multiplications
 * GEMM records (docs/trace-format.md, "Library calls").
 *
 * The wrappers are unversioned exports; the program's versioned references
 * (cublasSgemm_v2@libcublas.so.13) bind to them because the preload comes first. The `_64`
 * forms record the number of their 32-bit form. A GEMM record holds what the call says
 * (shape, transposes, leading dimensions, types) and what the handle says at the call
 * (stream and math mode, read with the real getters; the workspace set by
 * cublasSetWorkspace_v2, remembered here) and, since 1.3, its pointers: A, B, C (D = C)
 * as passed — the pointer-array batched forms' arrays themselves, not their elements —
 * and the handle's workspace; cublasLtMatmul's own A, B, C, D and workspace. A compute type given to a GemmEx-family entry
 * point as a legacy cudaDataType_t (< 64, which cuBLAS still accepts) is recorded as the
 * cublasComputeType_t it stands for. A negative dimension (the call fails) is recorded as 0.
 *
 * cuBLAS computes through cuBLASLt (NVIDIA's library reaches cublasLtMatmul through its
 * PLT): that nested call is forwarded unrecorded (ana_lib_enter), so one GEMM is one record.
 *
 * Thread-safety: the workspace table is lock-free (one slot per handle, claimed by CAS);
 * cuBLAS handles are not shared between threads mid-configuration, so two threads never
 * race on one handle's slot.
 *
 * Called by the program only; calls calls/libctx.c (the library-call bracket) and the core
 * (rings, real symbols, warnings). */
#include "hooks_lib.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#define CUBLAS_SO "libcublas.so.13"
#define CUBLASLT_SO "libcublasLt.so.13"

/* ---- workspace bytes per handle ---- */

#define WS_SLOTS 1024u
#define WS_GONE ((uintptr_t)1) /* a destroyed handle's slot, reusable */
static struct { _Atomic uintptr_t handle; _Atomic uint64_t bytes, ptr; } ws[WS_SLOTS];

static uint32_t ws_hash(uintptr_t h) { return (uint32_t)((h * 0x9E3779B97F4A7C15ull) >> 40) & (WS_SLOTS - 1); }

static int ws_find(uintptr_t h)
{
    for (uint32_t i = 0, s = ws_hash(h); i < 64; i++, s = (s + 1) & (WS_SLOTS - 1)) {
        uintptr_t k = atomic_load_explicit(&ws[s].handle, memory_order_acquire);
        if (k == h)
            return (int)s;
        if (k == 0)
            return -1;
    }
    return -1;
}

static void ws_set(cublasHandle_t handle, uint64_t ptr, uint64_t bytes)
{
    uintptr_t h = (uintptr_t)handle;
    int s = ws_find(h);
    for (uint32_t i = 0, p = ws_hash(h); s < 0 && i < 64; i++, p = (p + 1) & (WS_SLOTS - 1)) {
        uintptr_t k = atomic_load_explicit(&ws[p].handle, memory_order_relaxed);
        if ((k == 0 || k == WS_GONE) && atomic_compare_exchange_strong(&ws[p].handle, &k, h))
            s = (int)p;
    }
    if (s >= 0) {
        atomic_store_explicit(&ws[s].bytes, bytes, memory_order_relaxed);
        atomic_store_explicit(&ws[s].ptr, ptr, memory_order_relaxed);
    }
}

static uint64_t ws_get(cublasHandle_t handle)
{
    int s = ws_find((uintptr_t)handle);
    return s < 0 ? 0 : atomic_load_explicit(&ws[s].bytes, memory_order_relaxed);
}

/* The workspace's address (GEMM.ws), 0 when none was set. */
static uint64_t ws_ptr_get(cublasHandle_t handle)
{
    int s = ws_find((uintptr_t)handle);
    return s < 0 ? 0 : atomic_load_explicit(&ws[s].ptr, memory_order_relaxed);
}

static void ws_forget(cublasHandle_t handle)
{
    int s = ws_find((uintptr_t)handle);
    if (s >= 0) {
        atomic_store_explicit(&ws[s].bytes, 0, memory_order_relaxed);
        atomic_store_explicit(&ws[s].ptr, 0, memory_order_relaxed);
        atomic_store_explicit(&ws[s].handle, WS_GONE, memory_order_release);
    }
}

/* ---- the wrappers' shape ---- */

/* The real call, bracketed; then `after` (whether recorded or not), then `record` when the
 * call is recorded (not nested in another library call). r is the real call's status. */
#define BLAS_HOOK_THEN(soname, lib, name, params, args, after, record)                        \
    ANA_EXPORT cublasStatus_t name params                                                     \
    {                                                                                         \
        ANA_LIB_REAL(soname, soname, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, name, params); \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, lib);                                                     \
        cublasStatus_t r = real args;                                                         \
        ana_lib_leave(&c);                                                                    \
        after;                                                                                \
        if (rec) {                                                                            \
            record;                                                                           \
        }                                                                                     \
        return r;                                                                             \
    }
#define BLAS_HOOK(soname, lib, name, params, args, record)                                     \
    BLAS_HOOK_THEN(soname, lib, name, params, args, (void)0, record)

static void libcall_emit(ana_libcall *c, uint32_t lib, uint32_t api, cublasStatus_t r, uint64_t handle,
                         uint64_t arg, uint64_t arg2)
{
    ana_record rec = { .kind = ANA_K_LIBCALL };
    rec.u.libcall = (ana_rec_libcall){ .lib = lib, .api = api, .ret = r, .call = c->id, .handle = handle,
                                       .arg = arg, .arg2 = arg2, .stack = c->stack, .dur_ns = c->dur };
    ana_lib_emit(c, &rec);
}

/* ---- handles and settings ---- */

#define BLAS_CALL(api, handle, arg, arg2) libcall_emit(&c, ANA_LIB_CUBLAS, api, r, handle, arg, arg2)

/* A new handle at a destroyed one's address has no workspace set. */
static void ws_created(cublasStatus_t r, const cublasHandle_t *handle)
{
    if (r == CUBLAS_STATUS_SUCCESS && handle)
        ws_forget(*handle);
}

BLAS_HOOK_THEN(CUBLAS_SO, ANA_LIB_CUBLAS, cublasCreate_v2, (cublasHandle_t *handle), (handle),
               ws_created(r, handle), BLAS_CALL(ANA_API_CUBLAS_CREATE, ANA_OUT(r, handle), 0, 0))

ANA_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    ANA_LIB_REAL(CUBLAS_SO, CUBLAS_SO, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasDestroy_v2,
                 (cublasHandle_t));
    ana_libcall c;
    int rec = ana_lib_enter(&c, ANA_LIB_CUBLAS);
    cublasStatus_t r = real(handle);
    ana_lib_leave(&c);
    if (r == CUBLAS_STATUS_SUCCESS)
        ws_forget(handle);
    if (rec)
        BLAS_CALL(ANA_API_CUBLAS_DESTROY, ANA_U64(handle), 0, 0);
    return r;
}

ANA_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *ptr, size_t bytes)
{
    ANA_LIB_REAL(CUBLAS_SO, CUBLAS_SO, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasSetWorkspace_v2,
                 (cublasHandle_t, void *, size_t));
    ana_libcall c;
    int rec = ana_lib_enter(&c, ANA_LIB_CUBLAS);
    cublasStatus_t r = real(handle, ptr, bytes);
    ana_lib_leave(&c);
    if (r == CUBLAS_STATUS_SUCCESS)
        ws_set(handle, ANA_U64(ptr), bytes);
    if (rec)
        BLAS_CALL(ANA_API_CUBLAS_SET_WORKSPACE, ANA_U64(handle), ANA_U64(ptr), bytes);
    return r;
}

BLAS_HOOK(CUBLAS_SO, ANA_LIB_CUBLAS, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s),
          BLAS_CALL(ANA_API_CUBLAS_SET_STREAM, ANA_U64(h), ANA_U64(s), 0))
BLAS_HOOK(CUBLAS_SO, ANA_LIB_CUBLAS, cublasSetMathMode, (cublasHandle_t h, cublasMath_t mode), (h, mode),
          BLAS_CALL(ANA_API_CUBLAS_SET_MATH_MODE, ANA_U64(h), (uint64_t)mode, 0))

/* ---- cuBLAS GEMMs ---- */

typedef struct gemm_args {
    int64_t m, n, k, batch, lda, ldb, ldc;
    int64_t trans_a, trans_b, a_type, b_type, c_type, compute;
} gemm_args;

static uint64_t dim(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

/* The cublasComputeType_t a legacy cudaDataType_t compute type stands for (cuBLAS's
 * backward-compatible reading of it); other values as they are. */
static uint64_t compute_type(int64_t t)
{
    switch (t) {
    case CUDA_R_32F: case CUDA_C_32F: return CUBLAS_COMPUTE_32F;
    case CUDA_R_64F: case CUDA_C_64F: return CUBLAS_COMPUTE_64F;
    case CUDA_R_16F: return CUBLAS_COMPUTE_16F;
    case CUDA_R_32I: return CUBLAS_COMPUTE_32I;
    default: return dim(t);
    }
}

static void gemm_fill(ana_rec_gemm *e, const gemm_args *g)
{
    e->m = dim(g->m), e->n = dim(g->n), e->k = dim(g->k), e->batch = dim(g->batch);
    e->trans_a = dim(g->trans_a), e->trans_b = dim(g->trans_b);
    e->lda = dim(g->lda), e->ldb = dim(g->ldb), e->ldc = dim(g->ldc);
    e->a_type = dim(g->a_type), e->b_type = dim(g->b_type), e->c_type = dim(g->c_type);
    e->compute_type = compute_type(g->compute);
    e->flops = ana_sat_mul(ana_sat_mul(ana_sat_mul(ana_sat_mul(2, e->m), e->n), e->k), e->batch);
}

/* a, b, c: the operand and result pointers as passed (for the pointer-array batched
 * forms, the arrays' own addresses); the result is written in place (d = c). */
static void gemm_emit(ana_libcall *c, uint32_t api, cublasStatus_t r, cublasHandle_t h, const gemm_args *g,
                      uint64_t a, uint64_t b, uint64_t cm)
{
    static void *get_stream, *get_math;
    cublasStatus_t (*gs)(cublasHandle_t, cudaStream_t *) =
        (cublasStatus_t(*)(cublasHandle_t, cudaStream_t *))ANA_LIB_GETTER(get_stream, CUBLAS_SO, CUBLAS_SO,
                                                                           "cublasGetStream_v2");
    cublasStatus_t (*gm)(cublasHandle_t, cublasMath_t *) =
        (cublasStatus_t(*)(cublasHandle_t, cublasMath_t *))ANA_LIB_GETTER(get_math, CUBLAS_SO, CUBLAS_SO,
                                                                          "cublasGetMathMode");
    cudaStream_t stream = NULL;
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    if (h && gs && gs(h, &stream) != CUBLAS_STATUS_SUCCESS)
        stream = NULL;
    if (h && gm && gm(h, &mode) != CUBLAS_STATUS_SUCCESS)
        mode = CUBLAS_DEFAULT_MATH;
    ana_record rec = { .kind = ANA_K_GEMM };
    ana_rec_gemm *e = &rec.u.gemm;
    *e = (ana_rec_gemm){ .api = api, .ret = r, .call = c->id, .handle = ANA_U64(h), .stream = ANA_U64(stream),
                         .math_mode = (uint64_t)mode, .workspace = ws_get(h), .stack = c->stack,
                         .dur_ns = c->dur, .a = a, .b = b, .c = cm, .d = cm, .ws = ws_ptr_get(h) };
    gemm_fill(e, g);
    ana_lib_emit(c, &rec);
}

/* cublas_api.h declares the fp16 entry points for C++ only (__half is a C++ class): in C
 * their elements are passed as what they are, pointers to 16-bit values. */
typedef uint16_t ana_half;

/* Parameter lists by family; T the element type, I the integer type (int, or int64_t for
 * the _64 forms). The names are those the GEMM(...) record statements use. */
#define P_TYPED(T, I)                                                                          \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const T *alpha, \
     const T *A, I lda, const T *B, I ldb, const T *beta, T *C, I ldc)
#define A_TYPED (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
#define P_STRIDED(T, I)                                                                        \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const T *alpha, \
     const T *A, I lda, long long sa, const T *B, I ldb, long long sb, const T *beta, T *C, I ldc, \
     long long sc, I batch)
#define A_STRIDED (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch)
#define P_BATCHED(T, I)                                                                        \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const T *alpha, \
     const T *const A[], I lda, const T *const B[], I ldb, const T *beta, T *const C[], I ldc, I batch)
#define A_BATCHED (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch)
#define P_EX(I)                                                                                \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const void *alpha, \
     const void *A, cudaDataType at, I lda, const void *B, cudaDataType bt, I ldb, const void *beta, \
     void *C, cudaDataType ct, I ldc, cublasComputeType_t comp, cublasGemmAlgo_t algo)
#define A_EX (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo)
#define P_STRIDED_EX(I)                                                                        \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const void *alpha, \
     const void *A, cudaDataType at, I lda, long long sa, const void *B, cudaDataType bt, I ldb,  \
     long long sb, const void *beta, void *C, cudaDataType ct, I ldc, long long sc, I batch,     \
     cublasComputeType_t comp, cublasGemmAlgo_t algo)
#define A_STRIDED_EX (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, comp, algo)
#define P_BATCHED_EX(I)                                                                        \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const void *alpha, \
     const void *const A[], cudaDataType at, I lda, const void *const B[], cudaDataType bt, I ldb, \
     const void *beta, void *const C[], cudaDataType ct, I ldc, I batch, cublasComputeType_t comp, \
     cublasGemmAlgo_t algo)
#define A_BATCHED_EX (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch, comp, algo)
#define P_SGEMM_EX(I)                                                                          \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, I n, I k, const float *alpha, \
     const void *A, cudaDataType at, I lda, const void *B, cudaDataType bt, I ldb, const float *beta, \
     void *C, cudaDataType ct, I ldc)
#define A_SGEMM_EX (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc)

#define GEMM(api, batch, at, bt, ct, comp)                                                     \
    gemm_emit(&c, api, r, h,                                                                  \
              &(gemm_args){ m, n, k, batch, lda, ldb, ldc, ta, tb, at, bt, ct, comp },         \
              ANA_U64(A), ANA_U64(B), ANA_U64(C))
#define GEMM_HOOK(name, params, args, record) BLAS_HOOK(CUBLAS_SO, ANA_LIB_CUBLAS, name, params, args, record)

/* One typed entry point in its 32-bit and _64 forms. */
#define TYPED_PAIR(name, name64, P, A, api, batch, ty, comp, T)                                \
    GEMM_HOOK(name, P(T, int), A, GEMM(api, batch, ty, ty, ty, comp))                          \
    GEMM_HOOK(name64, P(T, int64_t), A, GEMM(api, batch, ty, ty, ty, comp))

TYPED_PAIR(cublasSgemm_v2, cublasSgemm_v2_64, P_TYPED, A_TYPED, ANA_API_CUBLAS_SGEMM, 1, CUDA_R_32F,
           CUBLAS_COMPUTE_32F, float)
TYPED_PAIR(cublasDgemm_v2, cublasDgemm_v2_64, P_TYPED, A_TYPED, ANA_API_CUBLAS_DGEMM, 1, CUDA_R_64F,
           CUBLAS_COMPUTE_64F, double)
TYPED_PAIR(cublasHgemm, cublasHgemm_64, P_TYPED, A_TYPED, ANA_API_CUBLAS_HGEMM, 1, CUDA_R_16F,
           CUBLAS_COMPUTE_16F, ana_half)
TYPED_PAIR(cublasSgemmStridedBatched, cublasSgemmStridedBatched_64, P_STRIDED, A_STRIDED,
           ANA_API_CUBLAS_SGEMM_STRIDED_BATCHED, batch, CUDA_R_32F, CUBLAS_COMPUTE_32F, float)
TYPED_PAIR(cublasDgemmStridedBatched, cublasDgemmStridedBatched_64, P_STRIDED, A_STRIDED,
           ANA_API_CUBLAS_DGEMM_STRIDED_BATCHED, batch, CUDA_R_64F, CUBLAS_COMPUTE_64F, double)
TYPED_PAIR(cublasHgemmStridedBatched, cublasHgemmStridedBatched_64, P_STRIDED, A_STRIDED,
           ANA_API_CUBLAS_HGEMM_STRIDED_BATCHED, batch, CUDA_R_16F, CUBLAS_COMPUTE_16F, ana_half)
TYPED_PAIR(cublasSgemmBatched, cublasSgemmBatched_64, P_BATCHED, A_BATCHED, ANA_API_CUBLAS_SGEMM_BATCHED, batch,
           CUDA_R_32F, CUBLAS_COMPUTE_32F, float)
TYPED_PAIR(cublasDgemmBatched, cublasDgemmBatched_64, P_BATCHED, A_BATCHED, ANA_API_CUBLAS_DGEMM_BATCHED, batch,
           CUDA_R_64F, CUBLAS_COMPUTE_64F, double)
TYPED_PAIR(cublasHgemmBatched, cublasHgemmBatched_64, P_BATCHED, A_BATCHED, ANA_API_CUBLAS_HGEMM_BATCHED, batch,
           CUDA_R_16F, CUBLAS_COMPUTE_16F, ana_half)

/* The Ex family: types and compute type from the arguments. */
#define EX_PAIR(name, name64, P, A, api, batch, comp)                                          \
    GEMM_HOOK(name, P(int), A, GEMM(api, batch, at, bt, ct, comp))                              \
    GEMM_HOOK(name64, P(int64_t), A, GEMM(api, batch, at, bt, ct, comp))

EX_PAIR(cublasGemmEx, cublasGemmEx_64, P_EX, A_EX, ANA_API_CUBLAS_GEMM_EX, 1, comp)
EX_PAIR(cublasGemmStridedBatchedEx, cublasGemmStridedBatchedEx_64, P_STRIDED_EX, A_STRIDED_EX,
        ANA_API_CUBLAS_GEMM_STRIDED_BATCHED_EX, batch, comp)
EX_PAIR(cublasGemmBatchedEx, cublasGemmBatchedEx_64, P_BATCHED_EX, A_BATCHED_EX, ANA_API_CUBLAS_GEMM_BATCHED_EX,
        batch, comp)
EX_PAIR(cublasSgemmEx, cublasSgemmEx_64, P_SGEMM_EX, A_SGEMM_EX, ANA_API_CUBLAS_SGEMM_EX, 1, CUBLAS_COMPUTE_32F)

/* ---- cuBLASLt ---- */

#define LT_CALL(api, handle) libcall_emit(&c, ANA_LIB_CUBLASLT, api, r, handle, 0, 0)

BLAS_HOOK(CUBLASLT_SO, ANA_LIB_CUBLASLT, cublasLtCreate, (cublasLtHandle_t *handle), (handle),
          LT_CALL(ANA_API_CUBLASLT_CREATE, ANA_OUT(r, handle)))

BLAS_HOOK(CUBLASLT_SO, ANA_LIB_CUBLASLT, cublasLtDestroy, (cublasLtHandle_t h), (h),
          LT_CALL(ANA_API_CUBLASLT_DESTROY, ANA_U64(h)))

typedef struct lt_layout { uint32_t type; uint64_t rows, cols; int64_t ld; int32_t batch; } lt_layout;

/* What a layout says; zeros (batch 1) for what cannot be read. */
static lt_layout lt_layout_of(cublasLtMatrixLayout_t l)
{
    static void *getter;
    cublasStatus_t (*get)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *, size_t, size_t *) =
        (cublasStatus_t(*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *, size_t, size_t *))
            ANA_LIB_GETTER(getter, CUBLASLT_SO, CUBLASLT_SO, "cublasLtMatrixLayoutGetAttribute");
    lt_layout v = { .batch = 1 };
    size_t w;
    if (!l || !get)
        return v;
    get(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &v.type, sizeof(v.type), &w);
    get(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &v.rows, sizeof(v.rows), &w);
    get(l, CUBLASLT_MATRIX_LAYOUT_COLS, &v.cols, sizeof(v.cols), &w);
    get(l, CUBLASLT_MATRIX_LAYOUT_LD, &v.ld, sizeof(v.ld), &w);
    if (get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &v.batch, sizeof(v.batch), &w) != CUBLAS_STATUS_SUCCESS)
        v.batch = 1;
    return v;
}

/* The matmul descriptor's attribute `a` into an int32_t/uint32_t; 0 when it cannot be read. */
static uint32_t lt_desc_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a)
{
    static void *getter;
    cublasStatus_t (*get)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *, size_t, size_t *) =
        (cublasStatus_t(*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *, size_t, size_t *))
            ANA_LIB_GETTER(getter, CUBLASLT_SO, CUBLASLT_SO, "cublasLtMatmulDescGetAttribute");
    uint32_t v = 0;
    size_t w;
    if (!d || !get || get(d, a, &v, sizeof(v), &w) != CUBLAS_STATUS_SUCCESS)
        return 0;
    return v;
}

/* m = rows of D, n = cols of D, k = the inner dimension: cols of op(A). */
static void lt_emit(ana_libcall *c, cublasStatus_t r, cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                    cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd, cublasLtMatrixLayout_t dd,
                    size_t workspace, cudaStream_t stream, const uint64_t ptrs[5])
{
    lt_layout a = lt_layout_of(ad), b = lt_layout_of(bd), d = lt_layout_of(dd);
    uint32_t ta = lt_desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA);
    uint32_t tb = lt_desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB);
    gemm_args g = { (int64_t)d.rows, (int64_t)d.cols, (int64_t)(ta == CUBLAS_OP_N ? a.cols : a.rows), d.batch,
                    a.ld, b.ld, d.ld, ta, tb, a.type, b.type, d.type,
                    (int32_t)lt_desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) };
    ana_record rec = { .kind = ANA_K_GEMM };
    ana_rec_gemm *e = &rec.u.gemm;
    *e = (ana_rec_gemm){ .api = ANA_API_CUBLASLT_MATMUL, .ret = r, .call = c->id, .handle = ANA_U64(h),
                         .stream = ANA_U64(stream), .math_mode = 0,
                         .epilogue = lt_desc_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE),
                         .workspace = workspace, .stack = c->stack, .dur_ns = c->dur,
                         .a = ptrs[0], .b = ptrs[1], .c = ptrs[2], .d = ptrs[3], .ws = ptrs[4] };
    gemm_fill(e, &g);
    ana_lib_emit(c, &rec);
}

ANA_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                                         const void *A, cublasLtMatrixLayout_t ad, const void *B,
                                         cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                                         cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                                         const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                                         cudaStream_t stream)
{
    ANA_LIB_REAL(CUBLASLT_SO, CUBLASLT_SO, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmul,
                 (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                  const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                  void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t));
    ana_libcall c;
    int rec = ana_lib_enter(&c, ANA_LIB_CUBLASLT);
    cublasStatus_t r = real(h, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, ws_bytes, stream);
    ana_lib_leave(&c);
    if (rec)
        lt_emit(&c, r, h, desc, ad, bd, dd ? dd : cd, ws_bytes, stream,
                (const uint64_t[5]){ ANA_U64(A), ANA_U64(B), ANA_U64(C), ANA_U64(D), ANA_U64(ws) });
    return r;
}

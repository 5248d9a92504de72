/*
 * lt_matmul.c — cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul of the simulated
 * libcublasLt.so.13.
 *
 * Both first turn the descriptors into one blas_gemm (plan()): column-major layouts only
 * (another order, a pointer-array batch mode or a planar-complex layout is
 * CUBLAS_STATUS_NOT_SUPPORTED), D is m×n, op(A) m×k, op(B) k×n, C shaped like D, every
 * ld >= max(1, rows), one batch count for all four (else CUBLAS_STATUS_INVALID_VALUE);
 * the (compute, scale, A/B, C/D) types one of blas_check_types' combinations, host or
 * device pointer mode, TRANSC N and the epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU,
 * GELU_BIAS (else CUBLAS_STATUS_NOT_SUPPORTED). The heuristic answers one algo (the nvjet
 * family) needing no workspace. cublasLtMatmul runs the algo it is given (libcublas's
 * name the xmma family) or, with algo NULL, the heuristic's; m, n or k = 0 launches
 * nothing.
 */
#include "lt.h"

#include <math.h>

static int known_epilogue(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU ||
           e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS;
}

static cublasStatus_t matrix(const struct lt_layout *l, blas_matrix *x, int32_t *batch)
{
    if (!l || l->magic != LT_MAGIC_LAYOUT)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (l->order != CUBLASLT_ORDER_COL || l->batch_mode != CUBLASLT_BATCH_MODE_STRIDED ||
        l->plane != 0)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (l->rows > INT64_MAX / 2 || l->cols > INT64_MAX / 2 ||
        l->ld < (int64_t)(l->rows > 1 ? l->rows : 1) || l->batch < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    *x = (blas_matrix){ .type = (cudaDataType)l->type, .rows = (int64_t)l->rows,
                        .cols = (int64_t)l->cols, .ld = l->ld, .stride = l->stride };
    *batch = l->batch;
    return CUBLAS_STATUS_SUCCESS;
}

#define TRY(expr)                                                                         \
    do {                                                                                  \
        cublasStatus_t try_st_ = (expr);                                                  \
        if (try_st_ != CUBLAS_STATUS_SUCCESS)                                             \
            return try_st_;                                                               \
    } while (0)

static cublasStatus_t plan_shapes(blas_gemm *g, const cublasLtMatrixLayout_t L[4])
{
    int32_t batch[4];
    TRY(matrix((const struct lt_layout *)L[0], &g->a, &batch[0]));
    TRY(matrix((const struct lt_layout *)L[1], &g->b, &batch[1]));
    TRY(matrix((const struct lt_layout *)L[2], &g->c, &batch[2]));
    TRY(matrix((const struct lt_layout *)L[3], &g->d, &batch[3]));
    g->m = g->d.rows;
    g->n = g->d.cols;
    g->k = g->transa ? g->a.rows : g->a.cols;
    if ((g->transa ? g->a.cols : g->a.rows) != g->m ||
        (g->transb ? g->b.cols : g->b.rows) != g->k ||
        (g->transb ? g->b.rows : g->b.cols) != g->n || g->c.rows != g->m ||
        g->c.cols != g->n || batch[0] != batch[3] || batch[1] != batch[3] ||
        batch[2] != batch[3])
        return CUBLAS_STATUS_INVALID_VALUE;
    g->batch = batch[3];
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t plan(cublasLtMatmulDesc_t desc, const cublasLtMatrixLayout_t L[4],
                           blas_gemm *g)
{
    const struct lt_desc *d = (const struct lt_desc *)desc;
    if (!d || d->magic != LT_MAGIC_DESC)
        return CUBLAS_STATUS_INVALID_VALUE;
    *g = (blas_gemm){
        .transa = lt_desc_value(d, CUBLASLT_MATMUL_DESC_TRANSA) != CUBLAS_OP_N,
        .transb = lt_desc_value(d, CUBLASLT_MATMUL_DESC_TRANSB) != CUBLAS_OP_N,
        .compute = (cublasComputeType_t)lt_desc_value(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
        .scale_type = (cudaDataType)lt_desc_value(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE),
        .epilogue = (uint32_t)lt_desc_value(d, CUBLASLT_MATMUL_DESC_EPILOGUE),
        .bias = (const void *)(uintptr_t)lt_desc_value(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER),
        .bias_stride = (int64_t)lt_desc_value(d, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE),
    };
    TRY(plan_shapes(g, L));
    uint64_t pmode = lt_desc_value(d, CUBLASLT_MATMUL_DESC_POINTER_MODE);
    if ((pmode != CUBLASLT_POINTER_MODE_HOST && pmode != CUBLASLT_POINTER_MODE_DEVICE) ||
        lt_desc_value(d, CUBLASLT_MATMUL_DESC_TRANSC) != CUBLAS_OP_N ||
        !known_epilogue(g->epilogue) || g->d.type != g->c.type || g->a.type != g->b.type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    g->alpha_on_device = pmode == CUBLASLT_POINTER_MODE_DEVICE;
    TRY(blas_check_types(g->compute, g->scale_type, g->a.type, g->c.type));
    int32_t bias_type = (int32_t)lt_desc_value(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
    g->bias_type = bias_type == -1 ? g->d.type : (cudaDataType)bias_type;
    if (g->epilogue & CUBLASLT_EPILOGUE_BIAS) {
        if (!blas_type_size(g->bias_type))
            return CUBLAS_STATUS_NOT_SUPPORTED;
        if (!g->bias)
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
    cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
    int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount)
{
    if (!lt_handle_live(lightHandle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    const struct lt_pref *pref = (const struct lt_pref *)preference;
    if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount || !pref ||
        pref->magic != LT_MAGIC_PREF)
        return CUBLAS_STATUS_INVALID_VALUE;
    blas_gemm g;
    const cublasLtMatrixLayout_t L[4] = { Adesc, Bdesc, Cdesc, Ddesc };
    TRY(plan(operationDesc, L, &g));
    cublasLtMatmulHeuristicResult_t *r = &heuristicResultsArray[0];
    *r = (cublasLtMatmulHeuristicResult_t){ .workspaceSize = 0,
                                            .state = CUBLAS_STATUS_SUCCESS };
    blas_algo_init(&r->algo, BLAS_FAMILY_NVJET);
    /* Blocks of the 128x64 tile over H100's 132 SMs. */
    double tiles = ceil((double)g.m / 128) * ceil((double)g.n / 64) * (double)g.batch;
    r->wavesCount = (float)(tiles / 132.0);
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
                                           cublasLtMatmulDesc_t computeDesc, const void *alpha,
                                           const void *A, cublasLtMatrixLayout_t Adesc,
                                           const void *B, cublasLtMatrixLayout_t Bdesc,
                                           const void *beta, const void *C,
                                           cublasLtMatrixLayout_t Cdesc, void *D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t *algo, void *workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream)
{
    if (!lt_handle_live(lightHandle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    blas_gemm g;
    const cublasLtMatrixLayout_t L[4] = { Adesc, Bdesc, Cdesc, Ddesc };
    TRY(plan(computeDesc, L, &g));
    int family = algo ? blas_algo_family(algo) : BLAS_FAMILY_NVJET;
    if (!family || !alpha || !beta || (workspaceSizeInBytes && !workspace))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g.m == 0 || g.n == 0 || g.k == 0)
        return CUBLAS_STATUS_SUCCESS;
    g.a.ptr = A;
    g.b.ptr = B;
    g.c.ptr = C;
    g.d.ptr = D;
    g.alpha = alpha;
    g.beta = beta;
    TRY(blas_gemm_check_memory(&g));
    return blas_gemm_run(&g, (blas_family)family, stream);
}

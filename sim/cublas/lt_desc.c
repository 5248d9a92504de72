/*
 * lt_desc.c — cublasLt's descriptors: matmul descriptors, matrix layouts and matmul
 * preferences; Create/Init_internal/Destroy/SetAttribute/GetAttribute.
 *
 * Attribute protocol (as cublasLt.h documents it, exactly — the profiler reads shapes
 * with these calls): SetAttribute needs a non-NULL buf and sizeInBytes equal to the
 * attribute's size; GetAttribute with sizeInBytes 0 writes the needed size to sizeWritten
 * (which must not be NULL) and nothing else; otherwise buf must not be NULL and
 * sizeInBytes must equal the attribute's size, and sizeWritten (if not NULL) gets the
 * bytes written. Anything else, an unknown attribute or a NULL descriptor is
 * CUBLAS_STATUS_INVALID_VALUE. Values are not validated here but by cublasLtMatmul and
 * the heuristic (except enumerations whose range is fixed: transposes, pointer mode,
 * order, batch mode).
 */
#include "lt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct attr_slot {
    uint16_t offset;   /* into the descriptor */
    uint8_t size;      /* 0: no such attribute */
    int32_t max;       /* > 0: an int32 enumeration whose values lie in [0, max] */
};

#define V8(i) { offsetof(struct lt_desc, v8) + 8 * (i), 8, 0 }
#define V4(i) { offsetof(struct lt_desc, v4) + 4 * (i), 4, 0 }
#define V4_UPTO(i, max) { offsetof(struct lt_desc, v4) + 4 * (i), 4, (max) }
static const struct attr_slot desc_attrs[] = {
    [CUBLASLT_MATMUL_DESC_COMPUTE_TYPE] = V4(0),
    [CUBLASLT_MATMUL_DESC_SCALE_TYPE] = V4(1),
    [CUBLASLT_MATMUL_DESC_POINTER_MODE] =
        V4_UPTO(2, CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST),
    [CUBLASLT_MATMUL_DESC_TRANSA] = V4_UPTO(3, CUBLAS_OP_C),
    [CUBLASLT_MATMUL_DESC_TRANSB] = V4_UPTO(4, CUBLAS_OP_C),
    [CUBLASLT_MATMUL_DESC_TRANSC] = V4_UPTO(5, CUBLAS_OP_C),
    [CUBLASLT_MATMUL_DESC_FILL_MODE] = V4(6),
    [CUBLASLT_MATMUL_DESC_EPILOGUE] = V4(7),
    [CUBLASLT_MATMUL_DESC_BIAS_POINTER] = V8(0),
    [CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE] = V8(1),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER] = V8(2),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD] = V8(3),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE] = V8(4),
    [CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE] = V8(5),
    [CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET] = V4(8),
    [CUBLASLT_MATMUL_DESC_A_SCALE_POINTER] = V8(6),
    [CUBLASLT_MATMUL_DESC_B_SCALE_POINTER] = V8(7),
    [CUBLASLT_MATMUL_DESC_C_SCALE_POINTER] = V8(8),
    [CUBLASLT_MATMUL_DESC_D_SCALE_POINTER] = V8(9),
    [CUBLASLT_MATMUL_DESC_AMAX_D_POINTER] = V8(10),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE] = V4(9),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER] = V8(11),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER] = V8(12),
    [CUBLASLT_MATMUL_DESC_FAST_ACCUM] = { offsetof(struct lt_desc, v4) + 4 * 10, 1, 0 },
    [CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE] = V4(11),
    [CUBLASLT_MATMUL_DESC_A_SCALE_MODE] = V4(12),
    [CUBLASLT_MATMUL_DESC_B_SCALE_MODE] = V4(13),
    [CUBLASLT_MATMUL_DESC_C_SCALE_MODE] = V4(14),
    [CUBLASLT_MATMUL_DESC_D_SCALE_MODE] = V4(15),
    [CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE] = V4(16),
    [CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER] = V8(13),
    [CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE] = V4(17),
    [CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR] = V8(14),
};

#define L_UPTO(field, max)                                                                 \
    { offsetof(struct lt_layout, field), sizeof(((struct lt_layout *)0)->field), (max) }
#define L(field) L_UPTO(field, 0)
static const struct attr_slot layout_attrs[] = {
    [CUBLASLT_MATRIX_LAYOUT_TYPE] = L(type),
    [CUBLASLT_MATRIX_LAYOUT_ORDER] = L_UPTO(order, CUBLASLT_ORDER_COL32_2R_4R4),
    [CUBLASLT_MATRIX_LAYOUT_ROWS] = L(rows),
    [CUBLASLT_MATRIX_LAYOUT_COLS] = L(cols),
    [CUBLASLT_MATRIX_LAYOUT_LD] = L(ld),
    [CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT] = L(batch),
    [CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET] = L(stride),
    [CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET] = L(plane),
    [CUBLASLT_MATRIX_LAYOUT_BATCH_MODE] = L_UPTO(batch_mode, CUBLASLT_BATCH_MODE_POINTER_ARRAY),
};

#define P(field) { offsetof(struct lt_pref, field), sizeof(((struct lt_pref *)0)->field), 0 }
static const struct attr_slot pref_attrs[] = {
    [CUBLASLT_MATMUL_PREF_SEARCH_MODE] = P(search),
    [CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES] = P(max_workspace),
    [CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK] = P(reduction),
    [CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = P(align[0]),
    [CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES] = P(align[1]),
    [CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES] = P(align[2]),
    [CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES] = P(align[3]),
    [CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT] = P(waves),
    [CUBLASLT_MATMUL_PREF_IMPL_MASK] = P(impl_mask),
};

#define NATTRS(t) (sizeof(t) / sizeof((t)[0]))

static const struct attr_slot *slot(const struct attr_slot *tab, size_t n, int attr)
{
    return attr >= 0 && (size_t)attr < n && tab[attr].size ? &tab[attr] : NULL;
}

/* An int32 that must lie in [0, max]; buf holds sizeof(int32_t) bytes. */
static int in_range(const void *buf, int32_t max)
{
    int32_t v;
    memcpy(&v, buf, sizeof(v));
    return v >= 0 && v <= max;
}

static cublasStatus_t attr_set(void *obj, uint32_t magic, const struct attr_slot *s,
                               const void *buf, size_t size)
{
    if (!obj || *(const uint32_t *)obj != magic || !s || !buf || size != s->size ||
        (s->max > 0 && !in_range(buf, s->max)))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy((char *)obj + s->offset, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t attr_get(const void *obj, uint32_t magic, const struct attr_slot *s,
                               void *buf, size_t size, size_t *written)
{
    if (!obj || *(const uint32_t *)obj != magic || !s)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (!written)
            return CUBLAS_STATUS_INVALID_VALUE;
        *written = s->size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size != s->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, (const char *)obj + s->offset, size);
    if (written)
        *written = s->size;
    return CUBLAS_STATUS_SUCCESS;
}

uint64_t lt_desc_value(const struct lt_desc *d, cublasLtMatmulDescAttributes_t attr)
{
    const struct attr_slot *s = slot(desc_attrs, NATTRS(desc_attrs), attr);
    uint64_t v = 0;
    memcpy(&v, (const char *)d + s->offset, s->size);
    return v;
}

/* ---- what the three kinds share ------------------------------------------------------ */

/* Init_internal's checks: a descriptor, with room for `need` bytes. */
static cublasStatus_t init_check(const void *obj, size_t size, size_t need)
{
    if (!obj)
        return CUBLAS_STATUS_INVALID_VALUE;
    return size < need ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_SUCCESS;
}

/* Create's allocation: `size` bytes of heap for the descriptor to be stored in *out (which
 * must not be NULL). */
static cublasStatus_t create_alloc(const void *out, size_t size, void **obj)
{
    if (!out)
        return CUBLAS_STATUS_INVALID_VALUE;
    *obj = malloc(size);
    return *obj ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

/* Destroy: clears the magic (its first 4 bytes: no magic has bits above them) and frees. */
static cublasStatus_t destroy(void *obj)
{
    if (obj)
        memset(obj, 0, sizeof(uint32_t));
    free(obj);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- matmul descriptors ------------------------------------------------------------- */

BLAS_SIM_API cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc,
                                                            size_t size,
                                                            cublasComputeType_t computeType,
                                                            cudaDataType_t scaleType)
{
    cublasStatus_t st = init_check(matmulDesc, size, sizeof(cublasLtMatmulDescOpaque_t));
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    struct lt_desc *d = (struct lt_desc *)matmulDesc;
    memset(d, 0, sizeof(*d));
    d->magic = LT_MAGIC_DESC;
    d->v4[0] = (uint32_t)computeType;
    d->v4[1] = (uint32_t)scaleType;
    d->v4[2] = CUBLASLT_POINTER_MODE_HOST;
    d->v4[3] = d->v4[4] = d->v4[5] = CUBLAS_OP_N;
    d->v4[6] = CUBLAS_FILL_MODE_FULL;
    d->v4[7] = CUBLASLT_EPILOGUE_DEFAULT;
    d->v4[11] = (uint32_t)-1;   /* BIAS_DATA_TYPE: the output's */
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType)
{
    void *d;
    cublasStatus_t st = create_alloc(matmulDesc, sizeof(cublasLtMatmulDescOpaque_t), &d);
    return st != CUBLAS_STATUS_SUCCESS ? st
           : cublasLtMatmulDescInit_internal(*matmulDesc = d,
                                             sizeof(cublasLtMatmulDescOpaque_t), computeType,
                                             scaleType);
}

BLAS_SIM_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    return destroy(matmulDesc);
}

/* ---- matrix layouts ----------------------------------------------------------------- */

BLAS_SIM_API cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout,
                                                              size_t size, cudaDataType type,
                                                              uint64_t rows, uint64_t cols,
                                                              int64_t ld)
{
    cublasStatus_t st = init_check(matLayout, size, sizeof(cublasLtMatrixLayoutOpaque_t));
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    struct lt_layout *l = (struct lt_layout *)matLayout;
    *l = (struct lt_layout){ .magic = LT_MAGIC_LAYOUT, .type = (uint32_t)type,
                             .order = CUBLASLT_ORDER_COL, .batch = 1,
                             .batch_mode = CUBLASLT_BATCH_MODE_STRIDED, .rows = rows,
                             .cols = cols, .ld = ld };
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld)
{
    void *l;
    cublasStatus_t st = create_alloc(matLayout, sizeof(cublasLtMatrixLayoutOpaque_t), &l);
    return st != CUBLAS_STATUS_SUCCESS ? st
           : cublasLtMatrixLayoutInit_internal(*matLayout = l,
                                               sizeof(cublasLtMatrixLayoutOpaque_t), type, rows,
                                               cols, ld);
}

BLAS_SIM_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    return destroy(matLayout);
}

/* ---- matmul preferences ------------------------------------------------------------- */

BLAS_SIM_API cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                                  size_t size)
{
    cublasStatus_t st = init_check(pref, size, sizeof(cublasLtMatmulPreferenceOpaque_t));
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *(struct lt_pref *)pref = (struct lt_pref){
        .magic = LT_MAGIC_PREF, .search = CUBLASLT_SEARCH_BEST_FIT,
        .reduction = CUBLASLT_REDUCTION_SCHEME_MASK, .align = { 256, 256, 256, 256 },
        .impl_mask = UINT64_MAX,
    };
    return CUBLAS_STATUS_SUCCESS;
}

BLAS_SIM_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    void *p;
    cublasStatus_t st = create_alloc(pref, sizeof(cublasLtMatmulPreferenceOpaque_t), &p);
    return st != CUBLAS_STATUS_SUCCESS ? st
           : cublasLtMatmulPreferenceInit_internal(*pref = p,
                                                   sizeof(cublasLtMatmulPreferenceOpaque_t));
}

BLAS_SIM_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    return destroy(pref);
}

/* ---- attributes ---------------------------------------------------------------------- */

/* cublasLt<kind>SetAttribute and cublasLt<kind>GetAttribute over the kind's table. */
#define ATTRIBUTE_FNS(kind, obj_t, attr_t, magic, tab)                                     \
    BLAS_SIM_API cublasStatus_t cublasLt##kind##SetAttribute(obj_t obj, attr_t attr,      \
                                                             const void *buf,             \
                                                             size_t sizeInBytes)          \
    {                                                                                     \
        return attr_set(obj, magic, slot(tab, NATTRS(tab), attr), buf, sizeInBytes);      \
    }                                                                                     \
    BLAS_SIM_API cublasStatus_t cublasLt##kind##GetAttribute(                             \
        obj_t obj, attr_t attr, void *buf, size_t sizeInBytes, size_t *sizeWritten)       \
    {                                                                                     \
        return attr_get(obj, magic, slot(tab, NATTRS(tab), attr), buf, sizeInBytes,       \
                        sizeWritten);                                                     \
    }

ATTRIBUTE_FNS(MatmulDesc, cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, LT_MAGIC_DESC,
              desc_attrs)
ATTRIBUTE_FNS(MatrixLayout, cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
              LT_MAGIC_LAYOUT, layout_attrs)
ATTRIBUTE_FNS(MatmulPreference, cublasLtMatmulPreference_t,
              cublasLtMatmulPreferenceAttributes_t, LT_MAGIC_PREF, pref_attrs)

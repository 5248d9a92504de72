/*
 * lt.h — the simulated libcublasLt.so.13's descriptors, as its files share them.
 *
 * Each descriptor fits in NVIDIA's semi-opaque type (cublasLtMatmulDescOpaque_t 256 bytes,
 * cublasLtMatrixLayoutOpaque_t and cublasLtMatmulPreferenceOpaque_t 64 bytes), so that
 * both cublasLt*Create (heap) and cublasLt*Init_internal (the caller's memory, as
 * libcublas uses it) work. A magic number marks an initialised one; attributes are kept
 * at fixed offsets (lt_desc.c's tables), with the sizes the header documents.
 */
#ifndef BLAS_SIM_LT_H
#define BLAS_SIM_LT_H

#include "blas_sim.h"

#define LT_MAGIC_DESC   0x6c74646du  /* "ltdm" */
#define LT_MAGIC_LAYOUT 0x6c746c79u  /* "ltly" */
#define LT_MAGIC_PREF   0x6c747066u  /* "ltpf" */

/* The matmul descriptor: 8-byte attributes in v8, 4-byte (and 1-byte) ones in v4. */
struct lt_desc {
    uint64_t magic;
    uint64_t v8[16];
    uint32_t v4[18];
};
_Static_assert(sizeof(struct lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "fits");

struct lt_layout {
    uint32_t magic, type;
    int32_t order, batch;
    uint32_t batch_mode, pad;
    uint64_t rows, cols;
    int64_t ld, stride, plane;
};
_Static_assert(sizeof(struct lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "fits");

struct lt_pref {
    uint32_t magic, search, reduction, align[4];
    float waves;
    uint64_t max_workspace, impl_mask;
};
_Static_assert(sizeof(struct lt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "fits");

/* A matmul descriptor attribute as stored (int32/uint32 as uint32; pointers and int64 as
 * uint64). The attribute must be a known one. */
uint64_t lt_desc_value(const struct lt_desc *d, cublasLtMatmulDescAttributes_t attr);

/* lt_handle.c: 1 when h is a live handle from cublasLtCreate. */
int lt_handle_live(cublasLtHandle_t h);

#endif /* BLAS_SIM_LT_H */

/*
 * blas_sim.h — what the simulated libcublas.so.13 and libcublasLt.so.13 share (compiled
 * into both, hidden: neither library exports anything NVIDIA's does not).
 *
 *   drv.c       the driver, reached as NVIDIA's statically linked runtime reaches it:
 *               dlopen("libcuda.so.1") + cuGetProcAddress_v2 (cuInit, cuMemAlloc,
 *               cuMemFree, cuLaunchKernel for CUDA 13000).
 *   engine.c    the CPU GEMM (column-major, fp64/fp32/fp16/bf16, Lt epilogues) and the
 *               device-memory checks that come before it.
 *   launch.c    the GEMM's kernels: names, grids, durations (gemm_cost.h), cuLaunchKernel.
 *   registry.c  live handles, so that a NULL or destroyed handle is answered, not followed.
 *   status.c    status names and strings (NVIDIA's texts).
 *
 * The opaque cublasLtMatmulAlgo_t carries the kernel family (blas_algo_*): libcublas hands
 * cublasLtMatmul an algo naming the legacy "sm90_xmma_gemm_..._cublas" kernels, while the
 * application's own Lt calls get the heuristic's "nvjet_..." kernels — as with NVIDIA's
 * libraries, where the algo decides the kernel.
 *
 * Thread-safety: everything here is thread-safe (the registry has its own mutex; the
 * driver is loaded once).
 */
#ifndef BLAS_SIM_H
#define BLAS_SIM_H

#include <cublas_api.h>
#include <cublasLt.h>
#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm_cost.h"

#define BLAS_SIM_API __attribute__((visibility("default")))

/* ---- drv.c ------------------------------------------------------------------------- */
struct blas_driver {
    CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*mem_free)(CUdeviceptr dptr);
    CUresult (*launch)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned smem, CUstream stream,
                       void **params, void **extra);
};
/* The driver's entry points, loaded and cuInit(0)-ed on first use; NULL (after one line
 * on stderr) when libcuda.so.1 cannot be loaded. */
const struct blas_driver *blas_driver(void);

/* ---- status.c ---------------------------------------------------------------------- */
const char *blas_status_name(cublasStatus_t s);
const char *blas_status_string(cublasStatus_t s);

/* ---- registry.c -------------------------------------------------------------------- */
struct blas_registry {
    pthread_mutex_t lock;
    void **items;
    size_t n, cap;
};
#define BLAS_REGISTRY_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }
int blas_registry_add(struct blas_registry *r, void *p);       /* 0, or -1 out of memory */
int blas_registry_has(struct blas_registry *r, const void *p); /* 1 while added */
int blas_registry_remove(struct blas_registry *r, void *p);    /* 1 if it was there */

/* ---- the algo ---------------------------------------------------------------------- */
typedef enum blas_family {
    BLAS_FAMILY_NVJET = 1,   /* cublasLt's heuristic: what the application's Lt calls get */
    BLAS_FAMILY_XMMA = 2,    /* what libcublas asks for: legacy cuBLAS kernels */
} blas_family;
#define BLAS_ALGO_MAGIC 0x616e6167656d6d00ull   /* algo.data[0] = MAGIC | family */
static inline void blas_algo_init(cublasLtMatmulAlgo_t *algo, blas_family family)
{
    for (int i = 0; i < 8; i++)
        algo->data[i] = 0;
    algo->data[0] = BLAS_ALGO_MAGIC | (uint64_t)family;
}
/* The family an algo names, or 0 when it is not one of ours. */
static inline int blas_algo_family(const cublasLtMatmulAlgo_t *algo)
{
    uint64_t f = algo->data[0] ^ BLAS_ALGO_MAGIC;
    return f == BLAS_FAMILY_NVJET || f == BLAS_FAMILY_XMMA ? (int)f : 0;
}

/* ---- engine.c: one GEMM (or a batch of them) ---------------------------------------- */
/* One operand: rows×cols column-major with leading dimension ld, per batch instance. */
typedef struct blas_matrix {
    const void *ptr;            /* strided batches: instance b at ptr + b·stride elements */
    const void *const *array;   /* pointer-array batches (device array of pointers), or NULL */
    cudaDataType type;
    int64_t rows, cols, ld, stride;
} blas_matrix;

typedef struct blas_gemm {
    int transa, transb;         /* 0: N; 1: T (CUBLAS_OP_C on real data is T) */
    int64_t m, n, k, batch;
    blas_matrix a, b, c, d;     /* d.ptr is written; c may equal d */
    cublasComputeType_t compute;
    cudaDataType scale_type;    /* type of *alpha and *beta */
    const void *alpha, *beta;   /* host or device memory, per alpha_on_device */
    int alpha_on_device;
    uint32_t epilogue;          /* CUBLASLT_EPILOGUE_*, bits: 1 default, 2 ReLU, 4 bias, 32 GELU */
    const void *bias;           /* epilogues with BIAS: m elements of bias_type */
    cudaDataType bias_type;
    int64_t bias_stride;        /* elements between the batch instances' bias vectors */
} blas_gemm;

/* The element size of a supported matrix type (16F, 16BF, 32F, 64F), 0 for others. */
size_t blas_type_size(cudaDataType t);
/* CUBLAS_STATUS_SUCCESS when (compute, scale, A/B, C/D types) is a combination the sim
 * computes, CUBLAS_STATUS_NOT_SUPPORTED otherwise. */
cublasStatus_t blas_check_types(cublasComputeType_t compute, cudaDataType scale,
                                cudaDataType ab, cudaDataType cd);
/* The tensor-core class that times the GEMM (gemm_cost.h). */
blas_math blas_gemm_math(const blas_gemm *g);
/* Every byte the GEMM reads or writes (matrices with the extent their ld and batch stride
 * imply, pointer arrays and what they point to, device alpha/beta, bias) lies inside
 * device memory: CUBLAS_STATUS_SUCCESS, else CUBLAS_STATUS_EXECUTION_FAILED. */
cublasStatus_t blas_gemm_check_memory(const blas_gemm *g);
/* Computes D = epilogue(alpha·op(A)·op(B) + beta·C) for every batch instance, on the CPU.
 * Call only after blas_gemm_check_memory; CUBLAS_STATUS_ALLOC_FAILED if scratch memory
 * cannot be had. */
cublasStatus_t blas_gemm_compute(const blas_gemm *g);

/* ---- launch.c ---------------------------------------------------------------------- */
/* 0 when ANATOMIST_SIM_BLAS_COMPUTE=0: GEMMs are launched and timed but not computed. */
int blas_compute_on(void);
/* Runs the GEMM as the device sees it, on `stream` (0: the legacy default stream): checks
 * the stream (unknown: CUBLAS_STATUS_EXECUTION_FAILED), computes the result unless the
 * stream is capturing or computing is off (blas_compute_on), then launches its kernel(s) through cuLaunchKernel, each timed by
 * gemm_cost.h through anasim_next_launch. Memory must have been checked. */
cublasStatus_t blas_gemm_run(const blas_gemm *g, blas_family family, cudaStream_t stream);
/* The main kernel's name for this GEMM and family (tests and docs describe the rule). */
void blas_kernel_name(const blas_gemm *g, blas_family family, char *buf, size_t size);

#endif /* BLAS_SIM_H */

/*
 * launch.c — a GEMM as the device sees it: its kernel(s), named as NVIDIA's look, launched
 * with cuLaunchKernel on the caller's stream and timed by gemm_cost.h.
 *
 * Names (docs/sim.md "cuBLAS and cuBLASLt", "Kernels"):
 *   xmma (libcublas):  sm90_xmma_gemm_{ab}{ab}_{math}{acc}_{scale}_{la}{lb}_n_tilesize
 *                      {TM}x{TN}x{TK}_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas
 *   nvjet (Lt):        nvjet_{x}{y}{z}_128x64_64x8_1x1_v_bz_{A}{B}T
 *   split-K reduction: void cublasLt::splitKreduce_kernel<32, 16, int, float, ...>(...)
 *
 * Grids: the main kernel has ceil(m/TM)·ceil(n/TN) blocks in x, the split count in y (1
 * unless split-K) and the batch in z (at most 65535); the reduction ceil(m/32)·ceil(n/16)
 * in x and the batch in z; 256 threads per block, no dynamic shared memory.
 */
#include "blas_sim.h"

#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anasim.h"

#define XMMA_SUFFIX "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
#define NVJET_TILE_M 128
#define NVJET_TILE_N 64
#define REDUCE_NAME                                                                        \
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "  \
    "false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, "      \
    "float*, float const*, float const*, float const*, float const*, float*, void*, long, " \
    "float*, int*)"

static const char *type_tag(cudaDataType t)
{
    switch (t) {
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_64F: return "f64";
    default: return "f32";
    }
}

static char type_letter(cudaDataType t)
{
    switch (t) {
    case CUDA_R_16F: return 'h';
    case CUDA_R_16BF: return 'b';
    case CUDA_R_64F: return 'd';
    default: return 's';
    }
}

/* The type the tensor cores multiply in: the inputs', or what a FAST_* compute type
 * down-converts fp32 inputs to. */
static cudaDataType math_type(const blas_gemm *g, blas_math math)
{
    if (math == BLAS_MATH_HALF && g->a.type == CUDA_R_32F)
        return g->compute == CUBLAS_COMPUTE_32F_FAST_16BF ? CUDA_R_16BF : CUDA_R_16F;
    return g->a.type;
}

static cudaDataType acc_type(const blas_gemm *g)
{
    switch (g->compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: return CUDA_R_64F;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

/* The xmma kernels' tile: (TM, TN, TK). */
static void xmma_tile(blas_math math, int tile[3])
{
    static const int tiles[][3] = {
        [BLAS_MATH_FP64] = { 64, 64, 16 }, [BLAS_MATH_FP32] = { 128, 128, 8 },
        [BLAS_MATH_TF32] = { 128, 128, 32 }, [BLAS_MATH_HALF] = { 128, 128, 64 },
    };
    for (int i = 0; i < 3; i++)
        tile[i] = tiles[math][i];
}

void blas_kernel_name(const blas_gemm *g, blas_family family, char *buf, size_t size)
{
    blas_math math = blas_gemm_math(g);
    cudaDataType mt = math_type(g, math);
    if (family == BLAS_FAMILY_XMMA) {
        int tile[3];
        xmma_tile(math, tile);
        snprintf(buf, size, "sm90_xmma_gemm_%s%s_%s%s_%s_%c%c_n_tilesize%dx%dx%d" XMMA_SUFFIX,
                 type_tag(g->a.type), type_tag(g->b.type),
                 math == BLAS_MATH_TF32 ? "tf32" : type_tag(mt), type_tag(acc_type(g)),
                 type_tag(g->scale_type), g->transa ? 't' : 'n', g->transb ? 't' : 'n',
                 tile[0], tile[1], tile[2]);
        return;
    }
    int tf32 = math == BLAS_MATH_TF32;
    char in = tf32 ? 't' : type_letter(mt);
    char out = tf32 && g->d.type == CUDA_R_32F ? 't' : type_letter(g->d.type);
    snprintf(buf, size, "nvjet_%c%c%c_128x64_64x8_1x1_v_bz_%c%cT", in,
             type_letter(acc_type(g)), out, g->transa ? 'T' : 'N', g->transb ? 'T' : 'N');
}

static unsigned blocks(int64_t m, int64_t n, int tm, int tn)
{
    int64_t x = ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
    return x > INT_MAX ? INT_MAX : (unsigned)x;
}

static unsigned grid_z(int64_t batch)
{
    return batch > BLAS_SIM_GRID_Z_MAX ? BLAS_SIM_GRID_Z_MAX : (unsigned)batch;
}

static cublasStatus_t launch(const struct blas_driver *drv, const char *name, unsigned gx,
                             unsigned gy, unsigned gz, cudaStream_t stream, uint64_t ns)
{
    const void *fn = anasim_library_kernel(name);
    if (!fn)
        return CUBLAS_STATUS_ALLOC_FAILED;
    anasim_next_launch(0, ns);
    CUresult r = drv->launch((CUfunction)fn, gx, gy, gz, BLAS_SIM_BLOCK_THREADS, 1, 1, 0,
                             (CUstream)stream, NULL, NULL);
    return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

/* ANATOMIST_SIM_BLAS_COMPUTE=0: GEMMs launch and are timed but compute nothing (their
 * output is left as it was), so that the CPU time the products would take does not show
 * as host time between launches. Read once. */
int blas_compute_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("ANATOMIST_SIM_BLAS_COMPUTE");
        on = !(v && strcmp(v, "0") == 0);
    }
    return on;
}

/* Whether work submitted to `stream` would be captured into a graph instead of running. */
static int capturing(cudaStream_t stream)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(stream, &st) == cudaSuccess &&
           st != cudaStreamCaptureStatusNone;
}

cublasStatus_t blas_gemm_run(const blas_gemm *g, blas_family family, cudaStream_t stream)
{
    const struct blas_driver *drv = blas_driver();
    if (!drv)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    uint64_t ready;
    if (anasim_stream_ready((CUstream)stream, 0, &ready) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    if (blas_compute_on() && !capturing(stream)) {
        cublasStatus_t st = blas_gemm_compute(g);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    char name[256];
    blas_kernel_name(g, family, name, sizeof(name));
    blas_math math = blas_gemm_math(g);
    int split = blas_is_split_k(g->m, g->n, g->k);
    int tile[3] = { NVJET_TILE_M, NVJET_TILE_N, 0 };
    if (family == BLAS_FAMILY_XMMA)
        xmma_tile(math, tile);
    cublasStatus_t st = launch(drv, name, blocks(g->m, g->n, tile[0], tile[1]),
                               split ? BLAS_SIM_SPLITK_SPLITS : 1, grid_z(g->batch), stream,
                               blas_main_kernel_ns(math, g->m, g->n, g->k, g->batch));
    if (st == CUBLAS_STATUS_SUCCESS && split)
        st = launch(drv, REDUCE_NAME,
                    blocks(g->m, g->n, BLAS_SIM_REDUCE_TILE_M, BLAS_SIM_REDUCE_TILE_N), 1,
                    grid_z(g->batch), stream, blas_reduce_kernel_ns(g->m, g->n, g->batch));
    return st;
}

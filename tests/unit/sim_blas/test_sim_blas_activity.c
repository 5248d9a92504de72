/*
 * The simulated cuBLAS's kernels as a CUPTI client sees them: one CUpti_ActivityKernel10
 * per kernel (two for split-K), launched through the driver's cuLaunchKernel on the
 * handle's stream, with the documented names, grids and durations. Expected durations are
 * computed here from docs/sim.md "cuBLAS and cuBLASLt"'s formula and constants:
 *   main   llround(2000 + 2·m·n·k·batch / (TFLOP/s · 1000))
 *   reduce llround(2000 + m·n·batch·4·4 / 3350)
 */
#include "anasim.h"

#include <criterion/criterion.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#define XMMA_TAIL "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
#define REDUCE_NAME                                                                        \
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "  \
    "false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, "      \
    "float*, float const*, float const*, float const*, float const*, float*, void*, long, " \
    "float*, int*)"

static uint64_t main_ns(double tflops, double m, double n, double k, double batch)
{
    return (uint64_t)llround(2000.0 + 2.0 * m * n * k * batch / (tflops * 1000.0));
}
static uint64_t reduce_ns(double m, double n, double batch)
{
    return (uint64_t)llround(2000.0 + m * n * batch * 4.0 * 4.0 / 3350.0);
}

/* ---- observer --------------------------------------------------------------------------- */
struct kernel_seen {
    char name[320];
    uint64_t ns;
    unsigned grid[3], block;
    uint32_t stream, correlation;
};
static struct kernel_seen kernels[16];
static size_t nkernels;
static uint32_t launch_correlation[16];
static size_t nlaunches;

static void on_api(int exit_site, anasim_api *c)
{
    if (!exit_site && c->domain == CUPTI_CB_DOMAIN_DRIVER_API &&
        c->cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel && nlaunches < 16)
        launch_correlation[nlaunches++] = c->correlation;
}
static int on_wants(CUpti_ActivityKind kind) { return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; }
static void on_activity(const CUpti_Activity *r)
{
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || nkernels == 16)
        return;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
    struct kernel_seen *s = &kernels[nkernels++];
    snprintf(s->name, sizeof(s->name), "%s", k->name);
    s->ns = k->end - k->start;
    s->grid[0] = (unsigned)k->gridX, s->grid[1] = (unsigned)k->gridY, s->grid[2] = (unsigned)k->gridZ;
    s->block = (unsigned)k->blockX;
    s->stream = k->streamId;
    s->correlation = k->correlationId;
}
static const anasim_observer observer = { on_api, on_wants, on_activity };

static cublasHandle_t handle;
static float *A, *B, *C;

static void setup(void)
{
    cr_assert_eq(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
    size_t big = (size_t)1100 * 4096 * 4; /* the largest operand below */
    cr_assert_eq(cudaMalloc((void **)&A, big), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&B, big), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&C, big), cudaSuccess);
    cudaMemset(A, 0, big), cudaMemset(B, 0, big), cudaMemset(C, 0, big);
    nkernels = nlaunches = 0;
    anasim_set_observer(&observer);
}

static void teardown(void)
{
    anasim_set_observer(NULL);
    cudaFree(A), cudaFree(B), cudaFree(C);
    cublasDestroy(handle);
}

static const float one = 1, zero = 0;

Test(sim_blas_activity, sgemm_kernel_name_grid_duration, .init = setup, .fini = teardown)
{
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 300, 200, 100, &one, A, 300, B,
                             100, &zero, C, 300), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 1);
    cr_assert_str_eq(kernels[0].name, "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8"
                                      XMMA_TAIL);
    cr_assert_eq(kernels[0].ns, main_ns(67, 300, 200, 100, 1));
    cr_assert_eq(kernels[0].grid[0], 3 * 2);  /* ceil(300/128)·ceil(200/128) */
    cr_assert_eq(kernels[0].grid[2], 1);
    cr_assert_eq(kernels[0].block, 256);
    cr_assert_eq(kernels[0].stream, 7);       /* the legacy default stream */
    cr_assert_eq(nlaunches, 1);               /* launched through cuLaunchKernel */
    cr_assert_eq(kernels[0].correlation, launch_correlation[0]);
}

Test(sim_blas_activity, tf32_math_mode, .init = setup, .fini = teardown)
{
    cr_assert_eq(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH), 0);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 256, 256, 512, &one, A, 512, B,
                             512, &zero, C, 256), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 1);
    cr_assert_str_eq(kernels[0].name, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"
                                      XMMA_TAIL);
    cr_assert_eq(kernels[0].ns, main_ns(494.7, 256, 256, 512, 1));
}

Test(sim_blas_activity, bf16_strided_batched, .init = setup, .fini = teardown)
{
    cr_assert_eq(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, 64, 32, 128, &one,
                                            A, CUDA_R_16BF, 128, 128 * 64, B, CUDA_R_16BF, 128,
                                            128 * 32, &zero, C, CUDA_R_16BF, 64, 64 * 32, 5,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 1);
    cr_assert_str_eq(kernels[0].name, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
                                      XMMA_TAIL);
    cr_assert_eq(kernels[0].ns, main_ns(989.4, 64, 32, 128, 5));
    cr_assert_eq(kernels[0].grid[2], 5);
}

Test(sim_blas_activity, split_k_is_two_kernels, .init = setup, .fini = teardown)
{
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 8192, &one, A, 64, B,
                             8192, &zero, C, 64), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 2);
    cr_assert_str_eq(kernels[0].name, "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8"
                                      XMMA_TAIL);
    cr_assert_eq(kernels[0].ns, main_ns(67, 64, 64, 8192, 1));
    cr_assert_str_eq(kernels[1].name, REDUCE_NAME);
    cr_assert_eq(kernels[1].ns, reduce_ns(64, 64, 1));
    cr_assert_eq(nlaunches, 2);
    /* k = 4096 with m = 1100 > k/4: not split. */
    nkernels = 0;
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1100, 8, 4096, &one, A, 1100, B,
                             4096, &zero, C, 1100), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 1);
}

Test(sim_blas_activity, lt_direct_call_gets_nvjet, .init = setup, .fini = teardown)
{
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cr_assert_eq(cublasLtCreate(&lt), 0);
    cr_assert_eq(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F), 0);
    int32_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, 4);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 96, 200, 96);  /* A: k×m, used transposed */
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 96, 50, 96);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 200, 50, 200);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cr_assert_eq(cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, NULL, 0,
                                s), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(nkernels, 1);
    cr_assert_str_eq(kernels[0].name, "nvjet_tst_128x64_64x8_1x1_v_bz_TNT");
    cr_assert_eq(kernels[0].ns, main_ns(494.7, 200, 50, 96, 1));
    cr_assert_eq(kernels[0].grid[0], 2 * 1); /* ceil(200/128)·ceil(50/64) */
    cr_assert_neq(kernels[0].stream, 7);
    cudaStreamDestroy(s);
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
}

Test(sim_blas_activity, captured_gemm_is_a_graph_node, .init = setup, .fini = teardown)
{
    float a = 2, b = 3, c = 0;
    cudaMemcpy(A, &a, 4, cudaMemcpyHostToDevice);
    cudaMemcpy(B, &b, 4, cudaMemcpyHostToDevice);
    cudaMemcpy(C, &c, 4, cudaMemcpyHostToDevice);
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cr_assert_eq(cublasSetStream(handle, s), 0);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, A, 1, B, 1, &zero,
                             C, 1), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(cudaStreamEndCapture(s, &graph), cudaSuccess);
    cudaMemcpy(&c, C, 4, cudaMemcpyDeviceToHost);
    cr_assert_eq(c, 0.0f);           /* not computed while capturing */
    cr_assert_eq(nkernels, 0);
    size_t nodes = 0;
    cr_assert_eq(cudaGraphGetNodes(graph, NULL, &nodes), cudaSuccess);
    cr_assert_eq(nodes, 1);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(exec, s), cudaSuccess);
    cr_assert_eq(nkernels, 1);
    cr_assert_eq(kernels[0].ns, main_ns(67, 1, 1, 1, 1));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
}

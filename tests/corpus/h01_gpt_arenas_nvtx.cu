// h01_gpt_arenas_nvtx.cu
//
// A GPT-2-like decoder trainer in the style of a single-file C/CUDA trainer (a small
// "llm.c"): 4 layers, 4 heads, width 256, sequence 64, batch 8, vocabulary 8192, all fp32.
// All parameters live in ONE cudaMalloc (an arena carved into tensors by offsets), all
// parameter gradients in one more (allocated lazily by the first backward pass), and the
// AdamW first and second moments in one each (allocated lazily by the first update). All
// activations (including the scratch the backward pass reuses) live in one arena sized for
// batch x sequence and allocated once before training; the token inputs and targets have
// their own small buffers, and the per-token loss values a separate small buffer. Every
// matmul (the linear layers and the batched attention products) goes through
// cublasLtMatmul in fp32 with a 32 MiB workspace the program allocates. The functions are
// wrapped in NVTX ranges named after them: "gpt2_forward", "gpt2_zero_grad",
// "gpt2_backward", "gpt2_update". It trains 4 steps on a synthetic token stream, then runs
// one validation-only forward pass (no backward, no update) inside a "gpt2_forward" range.
// GEMM results are not needed on the simulated device (kernel bodies do not run there),
// so the header below turns the sim's CPU GEMM arithmetic off to keep the run short.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublasLt.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// ----------------------------------------------------------------------------
// error checking

static void cuda_check(cudaError_t err, const char* file, int line) {
    if (err != cudaSuccess) {
        fprintf(stderr, "[CUDA ERROR] at %s:%d: %s\n", file, line, cudaGetErrorString(err));
        exit(1);
    }
}
#define cudaCheck(err) cuda_check((err), __FILE__, __LINE__)

static void cublas_check(cublasStatus_t status, const char* file, int line) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "[cuBLAS ERROR] %d at %s:%d\n", (int)status, file, line);
        exit(1);
    }
}
#define cublasCheck(status) cublas_check((status), __FILE__, __LINE__)

// ----------------------------------------------------------------------------
// device memory ledger: every cudaMalloc/cudaFree of the program goes through here

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY, P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* purpose_names[P_COUNT] = {"weights", "optimizer", "gradients", "activations",
                                             "temporary", "functionality", "mixed"};

struct LedgerEntry { void* ptr; size_t bytes; int purpose; };
static LedgerEntry ledger_entries[64];
static int ledger_count = 0;
static size_t live_bytes = 0;
static size_t live_by[P_COUNT] = {0};
static size_t peak_bytes = 0;
static size_t peak_by[P_COUNT] = {0};

static void* device_malloc(size_t bytes, Purpose purpose) {
    void* ptr = NULL;
    cudaCheck(cudaMalloc(&ptr, bytes));
    if (ledger_count == 64) { fprintf(stderr, "ledger full\n"); exit(1); }
    ledger_entries[ledger_count++] = {ptr, bytes, (int)purpose};
    live_bytes += bytes;
    live_by[purpose] += bytes;
    if (live_bytes > peak_bytes) {
        peak_bytes = live_bytes;
        memcpy(peak_by, live_by, sizeof(peak_by));
    }
    return ptr;
}

static void device_free(void* ptr) {
    if (ptr == NULL) return;
    for (int i = 0; i < ledger_count; i++) {
        if (ledger_entries[i].ptr == ptr) {
            cudaCheck(cudaFree(ptr));
            live_bytes -= ledger_entries[i].bytes;
            live_by[ledger_entries[i].purpose] -= ledger_entries[i].bytes;
            ledger_entries[i] = ledger_entries[--ledger_count];
            return;
        }
    }
    fprintf(stderr, "device_free: unknown pointer %p\n", ptr);
    exit(1);
}

// ----------------------------------------------------------------------------
// kernels

#define WARP_SIZE 32

__device__ __forceinline__ float warp_reduce_sum(float val) {
    for (int offset = 16; offset > 0; offset /= 2) val += __shfl_xor_sync(0xffffffff, val, offset);
    return val;
}

__device__ __forceinline__ float warp_reduce_max(float val) {
    for (int offset = 16; offset > 0; offset /= 2) val = fmaxf(val, __shfl_xor_sync(0xffffffff, val, offset));
    return val;
}

// out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]
__global__ void encoder_forward_kernel(float* out, const int* inp, const float* wte, const float* wpe,
                                       int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * C) return;
    int c = idx % C;
    int bt = idx / C;
    int t = bt % T;
    int ix = inp[bt];
    out[idx] = wte[ix * C + c] + wpe[t * C + c];
}

// one warp per row
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C) {
    int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += WARP_SIZE) sum += x[i];
    float m = warp_reduce_sum(sum) / C;
    float var = 0.0f;
    for (int i = lane; i < C; i += WARP_SIZE) { float d = x[i] - m; var += d * d; }
    float s = rsqrtf(warp_reduce_sum(var) / C + 1e-5f);
    float* o = out + (size_t)row * C;
    for (int i = lane; i < C; i += WARP_SIZE) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    if (lane == 0) { mean[row] = m; rstd[row] = s; }
}

// (B, T, 3, NH, HS) -> q, k, v each (B, NH, T, HS)
__global__ void permute_kernel(float* q, float* k, float* v, const float* inp, int B, int T, int NH, int HS) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * HS) return;
    int b = idx / (NH * T * HS);
    int rest = idx % (NH * T * HS);
    int nh = rest / (T * HS);
    rest = rest % (T * HS);
    int t = rest / HS;
    int d = rest % HS;
    int inp_idx = b * T * 3 * NH * HS + t * 3 * NH * HS + nh * HS + d;
    q[idx] = inp[inp_idx];
    k[idx] = inp[inp_idx + NH * HS];
    v[idx] = inp[inp_idx + 2 * NH * HS];
}

__global__ void permute_backward_kernel(float* dinp, const float* dq, const float* dk, const float* dv,
                                        int B, int T, int NH, int HS) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * HS) return;
    int b = idx / (NH * T * HS);
    int rest = idx % (NH * T * HS);
    int nh = rest / (T * HS);
    rest = rest % (T * HS);
    int t = rest / HS;
    int d = rest % HS;
    int inp_idx = b * T * 3 * NH * HS + t * 3 * NH * HS + nh * HS + d;
    dinp[inp_idx] = dq[idx];
    dinp[inp_idx + NH * HS] = dk[idx];
    dinp[inp_idx + 2 * NH * HS] = dv[idx];
}

// (B, NH, T, HS) -> (B, T, NH, HS)
__global__ void unpermute_kernel(const float* inp, float* out, int B, int T, int NH, int HS) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * HS) return;
    int b = idx / (NH * T * HS);
    int rest = idx % (NH * T * HS);
    int nh = rest / (T * HS);
    rest = rest % (T * HS);
    int t = rest / HS;
    int d = rest % HS;
    out[b * T * NH * HS + t * NH * HS + nh * HS + d] = inp[idx];
}

__global__ void unpermute_backward_kernel(float* dinp, const float* dout, int B, int T, int NH, int HS) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * T * HS) return;
    int b = idx / (NH * T * HS);
    int rest = idx % (NH * T * HS);
    int nh = rest / (T * HS);
    rest = rest % (T * HS);
    int t = rest / HS;
    int d = rest % HS;
    dinp[idx] = dout[b * T * NH * HS + t * NH * HS + nh * HS + d];
}

// causal softmax over rows of (B*NH, T, T), one warp per row, scores scaled by inv_temperature
__global__ void softmax_forward_kernel(float* out, const float* inp, float inv_temperature, int N, int T) {
    int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    if (row >= N * T) return;
    int own_pos = row % T;
    const float* x = inp + (size_t)row * T;
    float* y = out + (size_t)row * T;
    float maxval = -INFINITY;
    for (int i = lane; i <= own_pos; i += WARP_SIZE) maxval = fmaxf(maxval, x[i]);
    maxval = warp_reduce_max(maxval);
    float sum = 0.0f;
    for (int i = lane; i <= own_pos; i += WARP_SIZE) sum += expf(inv_temperature * (x[i] - maxval));
    float norm = 1.0f / warp_reduce_sum(sum);
    for (int i = lane; i < T; i += WARP_SIZE)
        y[i] = (i <= own_pos) ? expf(inv_temperature * (x[i] - maxval)) * norm : 0.0f;
}

__global__ void softmax_backward_kernel(float* dpreatt, const float* datt, const float* att, float scale, int N, int T) {
    int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    if (row >= N * T) return;
    int own_pos = row % T;
    const float* a = att + (size_t)row * T;
    const float* da = datt + (size_t)row * T;
    float* dp = dpreatt + (size_t)row * T;
    float dot = 0.0f;
    for (int i = lane; i <= own_pos; i += WARP_SIZE) dot += a[i] * da[i];
    dot = warp_reduce_sum(dot);
    for (int i = lane; i < T; i += WARP_SIZE)
        dp[i] = (i <= own_pos) ? scale * a[i] * (da[i] - dot) : 0.0f;
}

__global__ void residual_forward_kernel(float* out, const float* inp1, const float* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) out[idx] = inp1[idx] + inp2[idx];
}

#define GELU_SCALING_FACTOR 0.7978845608028654f  // sqrt(2/pi)

__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        float x = inp[idx];
        float cube = 0.044715f * x * x * x;
        out[idx] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        float x = inp[idx];
        float cube = 0.044715f * x * x * x;
        float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
        float tanh_out = tanhf(tanh_arg);
        float coshf_out = coshf(tanh_arg);
        float sech_out = 1.0f / (coshf_out * coshf_out);
        float local_grad = 0.5f * (1.0f + tanh_out) +
                           x * 0.5f * sech_out * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[idx] = local_grad * dout[idx];
    }
}

// dbias[oc] += sum over rows of dout[row, oc]
__global__ void matmul_backward_bias_kernel(float* dbias, const float* dout, int N, int OC) {
    int oc = blockIdx.x * blockDim.x + threadIdx.x;
    if (oc >= OC) return;
    float sum = 0.0f;
    for (int row = 0; row < N; row++) sum += dout[(size_t)row * OC + oc];
    dbias[oc] += sum;
}

// one warp per row; dinp is accumulated into (it is the residual stream's gradient)
__global__ void layernorm_backward_kernel(float* dinp, float* dweight, float* dbias, const float* dout,
                                          const float* inp, const float* weight, const float* mean,
                                          const float* rstd, int N, int C) {
    int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    if (row >= N) return;
    const float* dout_bt = dout + (size_t)row * C;
    const float* inp_bt = inp + (size_t)row * C;
    float* dinp_bt = dinp + (size_t)row * C;
    float mean_bt = mean[row];
    float rstd_bt = rstd[row];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = lane; i < C; i += WARP_SIZE) {
        float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
        float dnorm_i = weight[i] * dout_bt[i];
        dnorm_mean += dnorm_i;
        dnorm_norm_mean += dnorm_i * norm_bti;
    }
    dnorm_mean = warp_reduce_sum(dnorm_mean) / C;
    dnorm_norm_mean = warp_reduce_sum(dnorm_norm_mean) / C;
    for (int i = lane; i < C; i += WARP_SIZE) {
        float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
        float dnorm_i = weight[i] * dout_bt[i];
        atomicAdd(&dbias[i], dout_bt[i]);
        atomicAdd(&dweight[i], norm_bti * dout_bt[i]);
        dinp_bt[i] += (dnorm_i - dnorm_mean - norm_bti * dnorm_norm_mean) * rstd_bt;
    }
}

__global__ void encoder_backward_kernel(float* dwte, float* dwpe, const float* dout, const int* inp,
                                        int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * T * C) return;
    int c = idx % C;
    int bt = idx / C;
    int t = bt % T;
    int ix = inp[bt];
    atomicAdd(&dwte[ix * C + c], dout[idx]);
    atomicAdd(&dwpe[t * C + c], dout[idx]);
}

// one block per (b,t) row: softmax over the vocabulary, cross-entropy loss, and optionally
// dlogits = (probs - onehot(target)) * dloss written in place over the logits
__global__ void fused_classifier_kernel(float* logits, float* losses, float dloss, const int* targets,
                                        int V, bool write_dlogits) {
    __shared__ float shared[32];
    int row = blockIdx.x;
    int warp = threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    int num_warps = blockDim.x / WARP_SIZE;
    float* x = logits + (size_t)row * V;

    float maxval = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) maxval = fmaxf(maxval, x[i]);
    maxval = warp_reduce_max(maxval);
    if (lane == 0) shared[warp] = maxval;
    __syncthreads();
    maxval = (lane < num_warps) ? shared[lane] : -INFINITY;
    maxval = warp_reduce_max(maxval);
    __syncthreads();

    float sum = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(x[i] - maxval);
    sum = warp_reduce_sum(sum);
    if (lane == 0) shared[warp] = sum;
    __syncthreads();
    sum = (lane < num_warps) ? shared[lane] : 0.0f;
    sum = warp_reduce_sum(sum);

    int ix = targets[row];
    if (threadIdx.x == 0) losses[row] = logf(sum) + maxval - x[ix];
    __syncthreads();
    if (write_dlogits) {
        float scale = 1.0f / sum;
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float prob = expf(x[i] - maxval) * scale;
            x[i] = (prob - (i == ix ? 1.0f : 0.0f)) * dloss;
        }
    }
}

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t n,
                             float learning_rate, float beta1, float beta2, float beta1_correction,
                             float beta2_correction, float eps, float weight_decay) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float grad = grads[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    float m_hat = mi / beta1_correction;
    float v_hat = vi / beta2_correction;
    params[i] -= learning_rate * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * params[i]);
}

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ----------------------------------------------------------------------------
// cuBLASLt matmul

static cublasLtHandle_t cublaslt_handle;
static void* cublaslt_workspace = NULL;
static const size_t cublaslt_workspace_size = 32 * 1024 * 1024;

// column-major: d (m x n) = op(a) (m x k) * op(b) (k x n) [+ bias over rows] [+ d if accumulate],
// batched over `batch` instances with the given element strides
static void matmul_cublaslt(float* d, const float* a, const float* b, const float* bias, int m, int n, int k,
                            bool transA, bool transB, int batch, long strideA, long strideB, long strideOut,
                            bool accumulate) {
    cublasLtMatmulDesc_t operation_desc;
    cublasCheck(cublasLtMatmulDescCreate(&operation_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(operation_desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
    cublasCheck(cublasLtMatmulDescSetAttribute(operation_desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));

    cublasLtMatrixLayout_t A_layout, B_layout, C_layout;
    cublasCheck(transA ? cublasLtMatrixLayoutCreate(&A_layout, CUDA_R_32F, k, m, k)
                       : cublasLtMatrixLayoutCreate(&A_layout, CUDA_R_32F, m, k, m));
    cublasCheck(transB ? cublasLtMatrixLayoutCreate(&B_layout, CUDA_R_32F, n, k, n)
                       : cublasLtMatrixLayoutCreate(&B_layout, CUDA_R_32F, k, n, k));
    cublasCheck(cublasLtMatrixLayoutCreate(&C_layout, CUDA_R_32F, m, n, m));
    if (batch > 1) {
        cublasLtMatrixLayout_t layouts[3] = {A_layout, B_layout, C_layout};
        long strides[3] = {strideA, strideB, strideOut};
        for (int i = 0; i < 3; i++) {
            int64_t stride = strides[i];
            cublasCheck(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
            cublasCheck(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
        }
    }

    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (bias != NULL) {
        epilogue = CUBLASLT_EPILOGUE_BIAS;
        cublasCheck(cublasLtMatmulDescSetAttribute(operation_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
    cublasCheck(cublasLtMatmulDescSetAttribute(operation_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));

    cublasLtMatmulPreference_t preference;
    cublasCheck(cublasLtMatmulPreferenceCreate(&preference));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &cublaslt_workspace_size, sizeof(cublaslt_workspace_size)));
    cublasLtMatmulHeuristicResult_t heuristic;
    int returned_results = 0;
    cublasCheck(cublasLtMatmulAlgoGetHeuristic(cublaslt_handle, operation_desc, A_layout, B_layout, C_layout, C_layout,
                                               preference, 1, &heuristic, &returned_results));
    if (returned_results == 0) {
        fprintf(stderr, "No cuBLASLt algorithm: m=%d n=%d k=%d bias=%d\n", m, n, k, bias != NULL);
        exit(1);
    }

    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    cublasCheck(cublasLtMatmul(cublaslt_handle, operation_desc, &alpha, a, A_layout, b, B_layout, &beta, d, C_layout,
                               d, C_layout, &heuristic.algo, cublaslt_workspace, cublaslt_workspace_size, 0));

    cublasCheck(cublasLtMatmulPreferenceDestroy(preference));
    cublasCheck(cublasLtMatmulDescDestroy(operation_desc));
    cublasCheck(cublasLtMatrixLayoutDestroy(A_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(B_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(C_layout));
}

// ----------------------------------------------------------------------------
// layer launchers (row-major tensors)

static void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
    encoder_forward_kernel<<<ceil_div(B * T * C, 256), 256>>>(out, inp, wte, wpe, B, T, C);
    cudaCheck(cudaGetLastError());
}

static void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
    encoder_backward_kernel<<<ceil_div(B * T * C, 256), 256>>>(dwte, dwpe, dout, inp, B, T, C);
    cudaCheck(cudaGetLastError());
}

static void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                              const float* bias, int N, int C) {
    layernorm_forward_kernel<<<ceil_div(N * WARP_SIZE, 256), 256>>>(out, mean, rstd, inp, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

static void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, const float* mean, const float* rstd, int N, int C) {
    layernorm_backward_kernel<<<ceil_div(N * WARP_SIZE, 256), 256>>>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    cudaCheck(cudaGetLastError());
}

// out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias
static void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) {
    matmul_cublaslt(out, weight, inp, bias, OC, N, C, true, false, 1, 0, 0, 0, false);
}

// dinp = dout @ weight; dweight += dout^T @ inp; dbias += colsum(dout)
static void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, int N, int C, int OC) {
    matmul_cublaslt(dinp, weight, dout, NULL, C, N, OC, false, false, 1, 0, 0, 0, false);
    matmul_cublaslt(dweight, inp, dout, NULL, C, OC, N, false, true, 1, 0, 0, 0, true);
    if (dbias != NULL) {
        matmul_backward_bias_kernel<<<ceil_div(OC, 256), 256>>>(dbias, dout, N, OC);
        cudaCheck(cudaGetLastError());
    }
}

static void residual_forward(float* out, const float* inp1, const float* inp2, int N) {
    residual_forward_kernel<<<ceil_div(N, 256), 256>>>(out, inp1, inp2, N);
    cudaCheck(cudaGetLastError());
}

static void gelu_forward(float* out, const float* inp, int N) {
    gelu_forward_kernel<<<ceil_div(N, 256), 256>>>(out, inp, N);
    cudaCheck(cudaGetLastError());
}

static void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
    gelu_backward_kernel<<<ceil_div(N, 256), 256>>>(dinp, inp, dout, N);
    cudaCheck(cudaGetLastError());
}

// out (B,T,C) from qkv inp (B,T,3C); qkvr receives q,k,v (B,NH,T,HS); att the causal softmax.
// inp is dead after the permute and is reused as the pre-softmax scores; vaccum is scratch.
static void attention_forward(float* out, float* qkvr, float* att, float* inp, float* vaccum,
                              int B, int T, int C, int NH) {
    int HS = C / NH;
    float* q = qkvr + 0 * B * T * C;
    float* k = qkvr + 1 * B * T * C;
    float* v = qkvr + 2 * B * T * C;
    permute_kernel<<<ceil_div(B * NH * T * HS, 256), 256>>>(q, k, v, inp, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
    float* preatt = inp;
    // preatt (B*NH, T, T) = q @ k^T
    matmul_cublaslt(preatt, k, q, NULL, T, T, HS, true, false, B * NH, (long)T * HS, (long)T * HS, (long)T * T, false);
    float scale = 1.0f / sqrtf((float)HS);
    softmax_forward_kernel<<<ceil_div(B * NH * T * WARP_SIZE, 256), 256>>>(att, preatt, scale, B * NH, T);
    cudaCheck(cudaGetLastError());
    // vaccum (B*NH, T, HS) = att @ v
    matmul_cublaslt(vaccum, v, att, NULL, HS, T, T, false, false, B * NH, (long)T * HS, (long)T * T, (long)T * HS, false);
    unpermute_kernel<<<ceil_div(B * NH * T * HS, 256), 256>>>(vaccum, out, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
}

// dinp (B,T,3C) from dout (B,T,C); scratch must hold B*T*C + 3*B*T*C + 2*B*NH*T*T floats
static void attention_backward(float* dinp, float* scratch, const float* dout, const float* qkvr, const float* att,
                               int B, int T, int C, int NH) {
    int HS = C / NH;
    const float* q = qkvr + 0 * B * T * C;
    const float* k = qkvr + 1 * B * T * C;
    const float* v = qkvr + 2 * B * T * C;
    float* dvaccum = scratch;
    float* dq = dvaccum + B * T * C;
    float* dk = dq + B * T * C;
    float* dv = dk + B * T * C;
    float* datt = dv + B * T * C;
    float* dpreatt = datt + B * NH * T * T;
    unpermute_backward_kernel<<<ceil_div(B * NH * T * HS, 256), 256>>>(dvaccum, dout, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
    // datt = dvaccum @ v^T
    matmul_cublaslt(datt, v, dvaccum, NULL, T, T, HS, true, false, B * NH, (long)T * HS, (long)T * HS, (long)T * T, false);
    // dv = att^T @ dvaccum
    matmul_cublaslt(dv, dvaccum, att, NULL, HS, T, T, false, true, B * NH, (long)T * HS, (long)T * T, (long)T * HS, false);
    float scale = 1.0f / sqrtf((float)HS);
    softmax_backward_kernel<<<ceil_div(B * NH * T * WARP_SIZE, 256), 256>>>(dpreatt, datt, att, scale, B * NH, T);
    cudaCheck(cudaGetLastError());
    // dq = dpreatt @ k ; dk = dpreatt^T @ q
    matmul_cublaslt(dq, k, dpreatt, NULL, HS, T, T, false, false, B * NH, (long)T * HS, (long)T * T, (long)T * HS, false);
    matmul_cublaslt(dk, q, dpreatt, NULL, HS, T, T, false, true, B * NH, (long)T * HS, (long)T * T, (long)T * HS, false);
    permute_backward_kernel<<<ceil_div(B * NH * T * HS, 256), 256>>>(dinp, dq, dk, dv, B, T, NH, HS);
    cudaCheck(cudaGetLastError());
}

static void fused_classifier(float* logits, float* losses, float dloss, const int* targets, int BT, int V,
                             bool write_dlogits) {
    fused_classifier_kernel<<<BT, 512>>>(logits, losses, dloss, targets, V, write_dlogits);
    cudaCheck(cudaGetLastError());
}

// ----------------------------------------------------------------------------
// GPT-2 model

typedef struct {
    int max_seq_len;  // 64
    int vocab_size;   // 8192
    int num_layers;   // 4
    int num_heads;    // 4
    int channels;     // 256
} GPT2Config;

#define NUM_PARAMETER_TENSORS 16
typedef struct {
    float* wte;       // (V, C)
    float* wpe;       // (maxT, C)
    float* ln1w;      // (L, C)
    float* ln1b;      // (L, C)
    float* qkvw;      // (L, 3C, C)
    float* qkvb;      // (L, 3C)
    float* attprojw;  // (L, C, C)
    float* attprojb;  // (L, C)
    float* ln2w;      // (L, C)
    float* ln2b;      // (L, C)
    float* fcw;       // (L, 4C, C)
    float* fcb;       // (L, 4C)
    float* fcprojw;   // (L, C, 4C)
    float* fcprojb;   // (L, C)
    float* lnfw;      // (C)
    float* lnfb;      // (C)
} ParameterTensors;

static void fill_in_parameter_sizes(size_t* param_sizes, GPT2Config config) {
    size_t V = config.vocab_size, C = config.channels, maxT = config.max_seq_len, L = config.num_layers;
    param_sizes[0] = V * C;
    param_sizes[1] = maxT * C;
    param_sizes[2] = L * C;
    param_sizes[3] = L * C;
    param_sizes[4] = L * (3 * C) * C;
    param_sizes[5] = L * (3 * C);
    param_sizes[6] = L * C * C;
    param_sizes[7] = L * C;
    param_sizes[8] = L * C;
    param_sizes[9] = L * C;
    param_sizes[10] = L * (4 * C) * C;
    param_sizes[11] = L * (4 * C);
    param_sizes[12] = L * C * (4 * C);
    param_sizes[13] = L * C;
    param_sizes[14] = C;
    param_sizes[15] = C;
}

// one allocation for all tensors, pointed into by offsets
static float* malloc_and_point_parameters(ParameterTensors* params, const size_t* param_sizes, Purpose purpose) {
    size_t num_parameters = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) num_parameters += param_sizes[i];
    float* params_memory = (float*)device_malloc(num_parameters * sizeof(float), purpose);
    float** ptrs[] = {&params->wte, &params->wpe, &params->ln1w, &params->ln1b, &params->qkvw, &params->qkvb,
                      &params->attprojw, &params->attprojb, &params->ln2w, &params->ln2b, &params->fcw,
                      &params->fcb, &params->fcprojw, &params->fcprojb, &params->lnfw, &params->lnfb};
    float* iter = params_memory;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        *(ptrs[i]) = iter;
        iter += param_sizes[i];
    }
    return params_memory;
}

#define NUM_ACTIVATION_TENSORS 23
typedef struct {
    float* encoded;      // (B, T, C)
    float* ln1;          // (L, B, T, C)
    float* ln1_mean;     // (L, B, T)
    float* ln1_rstd;     // (L, B, T)
    float* qkvr;         // (L, B, T, 3C) q, k, v permuted to (B, NH, T, HS)
    float* att;          // (L, B, NH, T, T)
    float* atty;         // (L, B, T, C)
    float* attproj;      // (L, B, T, C)
    float* residual2;    // (L, B, T, C)
    float* ln2;          // (L, B, T, C)
    float* ln2_mean;     // (L, B, T)
    float* ln2_rstd;     // (L, B, T)
    float* fch;          // (L, B, T, 4C)
    float* fch_gelu;     // (L, B, T, 4C)
    float* fcproj;       // (L, B, T, C)
    float* residual3;    // (L, B, T, C)
    float* lnf;          // (B, T, C)
    float* lnf_mean;     // (B, T)
    float* lnf_rstd;     // (B, T)
    float* output;       // (B, T, V) logits; dlogits in backward; scratch elsewhere
    float* scratch_bt4c; // (B, T, 4C) qkv and pre-softmax scores in forward; d(fch), d(qkv) in backward
    float* scratch_btc;  // (B, T, C) gradient of the residual stream in backward
    float* scratch_btc2; // (B, T, C) gradient of a layer's input in backward
} ActivationTensors;

static void fill_in_activation_sizes(size_t* act_sizes, int B, int T, GPT2Config config) {
    size_t C = config.channels, NH = config.num_heads, L = config.num_layers, V = config.vocab_size;
    size_t out_size = V;
    if (out_size < 3 * C) out_size = 3 * C;
    if (out_size < NH * T) out_size = NH * T;
    act_sizes[0] = B * T * C;
    act_sizes[1] = L * B * T * C;
    act_sizes[2] = L * B * T;
    act_sizes[3] = L * B * T;
    act_sizes[4] = L * B * T * 3 * C;
    act_sizes[5] = L * B * NH * T * T;
    act_sizes[6] = L * B * T * C;
    act_sizes[7] = L * B * T * C;
    act_sizes[8] = L * B * T * C;
    act_sizes[9] = L * B * T * C;
    act_sizes[10] = L * B * T;
    act_sizes[11] = L * B * T;
    act_sizes[12] = L * B * T * 4 * C;
    act_sizes[13] = L * B * T * 4 * C;
    act_sizes[14] = L * B * T * C;
    act_sizes[15] = L * B * T * C;
    act_sizes[16] = B * T * C;
    act_sizes[17] = B * T;
    act_sizes[18] = B * T;
    act_sizes[19] = B * T * out_size;
    act_sizes[20] = B * T * 4 * C;
    act_sizes[21] = B * T * C;
    act_sizes[22] = B * T * C;
}

static float* malloc_and_point_activations(ActivationTensors* acts, const size_t* act_sizes) {
    size_t num_activations = 0;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) num_activations += act_sizes[i];
    float* acts_memory = (float*)device_malloc(num_activations * sizeof(float), P_ACTIVATIONS);
    float** ptrs[] = {&acts->encoded, &acts->ln1, &acts->ln1_mean, &acts->ln1_rstd, &acts->qkvr, &acts->att,
                      &acts->atty, &acts->attproj, &acts->residual2, &acts->ln2, &acts->ln2_mean, &acts->ln2_rstd,
                      &acts->fch, &acts->fch_gelu, &acts->fcproj, &acts->residual3, &acts->lnf, &acts->lnf_mean,
                      &acts->lnf_rstd, &acts->output, &acts->scratch_bt4c, &acts->scratch_btc, &acts->scratch_btc2};
    float* iter = acts_memory;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) {
        *(ptrs[i]) = iter;
        iter += act_sizes[i];
    }
    return acts_memory;
}

typedef struct {
    GPT2Config config;
    ParameterTensors params;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    float* params_memory;
    size_t num_parameters;
    ParameterTensors grads;
    float* grads_memory;
    float* m_memory;
    float* v_memory;
    ActivationTensors acts;
    size_t act_sizes[NUM_ACTIVATION_TENSORS];
    float* acts_memory;
    size_t num_activations;
    int batch_size;
    int seq_len;
    int* inputs;        // (B, T) on device
    int* targets;       // (B, T) on device
    float* losses;      // (B, T) per-token losses on device
    float* cpu_losses;  // (B, T) pinned host copy
    float mean_loss;
} GPT2;

// simple deterministic random numbers for initialisation and the synthetic data
static uint64_t rng_state = 0x853c49e6748fea9bULL;
static uint32_t random_u32(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}
static float random_f32(void) { return (random_u32() >> 8) / 16777216.0f; }
static float random_normal(void) {
    float u1 = random_f32() + 1e-7f, u2 = random_f32();
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}

static void gpt2_build(GPT2* model, GPT2Config config) {
    model->config = config;
    fill_in_parameter_sizes(model->param_sizes, config);
    model->num_parameters = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) model->num_parameters += model->param_sizes[i];
    model->params_memory = malloc_and_point_parameters(&model->params, model->param_sizes, P_WEIGHTS);

    // GPT-2 initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2L), LN = (1, 0), biases 0
    float* host = (float*)malloc(model->num_parameters * sizeof(float));
    if (!host) { fprintf(stderr, "host malloc failed\n"); exit(1); }
    size_t offset = 0;
    float residual_scale = 1.0f / sqrtf(2.0f * config.num_layers);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        size_t n = model->param_sizes[i];
        bool is_layernorm_weight = (i == 2 || i == 8 || i == 14);
        bool is_bias = (i == 3 || i == 5 || i == 7 || i == 9 || i == 11 || i == 13 || i == 15);
        bool is_residual_proj = (i == 6 || i == 12);
        for (size_t j = 0; j < n; j++) {
            float val;
            if (is_layernorm_weight) val = 1.0f;
            else if (is_bias) val = 0.0f;
            else val = 0.02f * random_normal() * (is_residual_proj ? residual_scale : 1.0f);
            host[offset + j] = val;
        }
        offset += n;
    }
    cudaCheck(cudaMemcpy(model->params_memory, host, model->num_parameters * sizeof(float), cudaMemcpyHostToDevice));
    free(host);

    model->grads_memory = NULL;
    model->m_memory = NULL;
    model->v_memory = NULL;
    model->acts_memory = NULL;
    model->inputs = NULL;
    model->targets = NULL;
    model->losses = NULL;
    model->cpu_losses = NULL;
    model->mean_loss = -1.0f;
}

// activations for a fixed (B, T), allocated once before training
static void gpt2_allocate_state(GPT2* model, int B, int T) {
    model->batch_size = B;
    model->seq_len = T;
    fill_in_activation_sizes(model->act_sizes, B, T, model->config);
    model->num_activations = 0;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) model->num_activations += model->act_sizes[i];
    model->acts_memory = malloc_and_point_activations(&model->acts, model->act_sizes);
    printf("allocated %zu MiB for activations\n", (model->num_activations * sizeof(float)) >> 20);
    model->inputs = (int*)device_malloc(B * T * sizeof(int), P_ACTIVATIONS);
    model->targets = (int*)device_malloc(B * T * sizeof(int), P_ACTIVATIONS);
    model->losses = (float*)device_malloc(B * T * sizeof(float), P_TEMPORARY);
    cudaCheck(cudaMallocHost((void**)&model->cpu_losses, B * T * sizeof(float)));
}

static void gpt2_forward(GPT2* model, const int* inputs, const int* targets) {
    nvtxRangePushA("gpt2_forward");
    int B = model->batch_size, T = model->seq_len;
    int V = model->config.vocab_size, L = model->config.num_layers;
    int NH = model->config.num_heads, C = model->config.channels;

    cudaCheck(cudaMemcpy(model->inputs, inputs, B * T * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->targets, targets, B * T * sizeof(int), cudaMemcpyHostToDevice));

    ParameterTensors params = model->params;
    ActivationTensors acts = model->acts;
    encoder_forward(acts.encoded, model->inputs, params.wte, params.wpe, B, T, C);

    float* residual;
    for (int l = 0; l < L; l++) {
        residual = l == 0 ? acts.encoded : acts.residual3 + (size_t)(l - 1) * B * T * C;

        float* l_ln1w = params.ln1w + l * C;
        float* l_ln1b = params.ln1b + l * C;
        float* l_qkvw = params.qkvw + (size_t)l * 3 * C * C;
        float* l_qkvb = params.qkvb + l * 3 * C;
        float* l_attprojw = params.attprojw + (size_t)l * C * C;
        float* l_attprojb = params.attprojb + l * C;
        float* l_ln2w = params.ln2w + l * C;
        float* l_ln2b = params.ln2b + l * C;
        float* l_fcw = params.fcw + (size_t)l * 4 * C * C;
        float* l_fcb = params.fcb + l * 4 * C;
        float* l_fcprojw = params.fcprojw + (size_t)l * C * 4 * C;
        float* l_fcprojb = params.fcprojb + l * C;

        float* l_ln1 = acts.ln1 + (size_t)l * B * T * C;
        float* l_ln1_mean = acts.ln1_mean + l * B * T;
        float* l_ln1_rstd = acts.ln1_rstd + l * B * T;
        float* l_qkvr = acts.qkvr + (size_t)l * B * T * 3 * C;
        float* l_att = acts.att + (size_t)l * B * NH * T * T;
        float* l_atty = acts.atty + (size_t)l * B * T * C;
        float* l_attproj = acts.attproj + (size_t)l * B * T * C;
        float* l_residual2 = acts.residual2 + (size_t)l * B * T * C;
        float* l_ln2 = acts.ln2 + (size_t)l * B * T * C;
        float* l_ln2_mean = acts.ln2_mean + l * B * T;
        float* l_ln2_rstd = acts.ln2_rstd + l * B * T;
        float* l_fch = acts.fch + (size_t)l * B * T * 4 * C;
        float* l_fch_gelu = acts.fch_gelu + (size_t)l * B * T * 4 * C;
        float* l_fcproj = acts.fcproj + (size_t)l * B * T * C;
        float* l_residual3 = acts.residual3 + (size_t)l * B * T * C;
        float* qkv = acts.scratch_bt4c;  // (B, T, 3C)

        layernorm_forward(l_ln1, l_ln1_mean, l_ln1_rstd, residual, l_ln1w, l_ln1b, B * T, C);
        matmul_forward(qkv, l_ln1, l_qkvw, l_qkvb, B * T, C, 3 * C);
        attention_forward(l_atty, l_qkvr, l_att, qkv, acts.output, B, T, C, NH);
        matmul_forward(l_attproj, l_atty, l_attprojw, l_attprojb, B * T, C, C);
        residual_forward(l_residual2, residual, l_attproj, B * T * C);
        layernorm_forward(l_ln2, l_ln2_mean, l_ln2_rstd, l_residual2, l_ln2w, l_ln2b, B * T, C);
        matmul_forward(l_fch, l_ln2, l_fcw, l_fcb, B * T, C, 4 * C);
        gelu_forward(l_fch_gelu, l_fch, B * T * 4 * C);
        matmul_forward(l_fcproj, l_fch_gelu, l_fcprojw, l_fcprojb, B * T, 4 * C, C);
        residual_forward(l_residual3, l_residual2, l_fcproj, B * T * C);
    }

    residual = acts.residual3 + (size_t)(L - 1) * B * T * C;
    layernorm_forward(acts.lnf, acts.lnf_mean, acts.lnf_rstd, residual, params.lnfw, params.lnfb, B * T, C);
    matmul_forward(acts.output, acts.lnf, params.wte, NULL, B * T, C, V);

    // per-token losses (logits are left intact; the backward pass turns them into dlogits)
    fused_classifier(acts.output, model->losses, 0.0f, model->targets, B * T, V, false);
    cudaCheck(cudaMemcpy(model->cpu_losses, model->losses, B * T * sizeof(float), cudaMemcpyDeviceToHost));
    float mean_loss = 0.0f;
    for (int i = 0; i < B * T; i++) mean_loss += model->cpu_losses[i];
    model->mean_loss = mean_loss / (B * T);
    nvtxRangePop();
}

static void gpt2_zero_grad(GPT2* model) {
    nvtxRangePushA("gpt2_zero_grad");
    if (model->grads_memory != NULL) {
        cudaCheck(cudaMemset(model->grads_memory, 0, model->num_parameters * sizeof(float)));
    }
    nvtxRangePop();
}

static void gpt2_backward(GPT2* model) {
    nvtxRangePushA("gpt2_backward");
    if (model->mean_loss == -1.0f) {
        fprintf(stderr, "Error: must forward with targets before backward\n");
        exit(1);
    }
    // lazily allocate the memory for the gradients of the weights
    if (model->grads_memory == NULL) {
        model->grads_memory = malloc_and_point_parameters(&model->grads, model->param_sizes, P_GRADIENTS);
        printf("allocated %zu MiB for parameter gradients\n", (model->num_parameters * sizeof(float)) >> 20);
        cudaCheck(cudaMemset(model->grads_memory, 0, model->num_parameters * sizeof(float)));
    }

    int B = model->batch_size, T = model->seq_len;
    int V = model->config.vocab_size, L = model->config.num_layers;
    int NH = model->config.num_heads, C = model->config.channels;

    ParameterTensors params = model->params;
    ParameterTensors grads = model->grads;
    ActivationTensors acts = model->acts;
    float* dresidual = acts.scratch_btc;
    float* dbtc = acts.scratch_btc2;
    float* dbt4c = acts.scratch_bt4c;

    // dlogits in place over the logits, mean reduction over all B*T tokens
    const float dloss = 1.0f / (B * T);
    fused_classifier(acts.output, model->losses, dloss, model->targets, B * T, V, true);

    matmul_backward(dbtc, grads.wte, NULL, acts.output, acts.lnf, params.wte, B * T, C, V);
    float* residual = acts.residual3 + (size_t)(L - 1) * B * T * C;
    cudaCheck(cudaMemset(dresidual, 0, (size_t)B * T * C * sizeof(float)));
    layernorm_backward(dresidual, grads.lnfw, grads.lnfb, dbtc, residual, params.lnfw, acts.lnf_mean, acts.lnf_rstd,
                       B * T, C);

    for (int l = L - 1; l >= 0; l--) {
        residual = l == 0 ? acts.encoded : acts.residual3 + (size_t)(l - 1) * B * T * C;

        float* l_ln1w = params.ln1w + l * C;
        float* l_qkvw = params.qkvw + (size_t)l * 3 * C * C;
        float* l_attprojw = params.attprojw + (size_t)l * C * C;
        float* l_ln2w = params.ln2w + l * C;
        float* l_fcw = params.fcw + (size_t)l * 4 * C * C;
        float* l_fcprojw = params.fcprojw + (size_t)l * C * 4 * C;

        float* dl_ln1w = grads.ln1w + l * C;
        float* dl_ln1b = grads.ln1b + l * C;
        float* dl_qkvw = grads.qkvw + (size_t)l * 3 * C * C;
        float* dl_qkvb = grads.qkvb + l * 3 * C;
        float* dl_attprojw = grads.attprojw + (size_t)l * C * C;
        float* dl_attprojb = grads.attprojb + l * C;
        float* dl_ln2w = grads.ln2w + l * C;
        float* dl_ln2b = grads.ln2b + l * C;
        float* dl_fcw = grads.fcw + (size_t)l * 4 * C * C;
        float* dl_fcb = grads.fcb + l * 4 * C;
        float* dl_fcprojw = grads.fcprojw + (size_t)l * C * 4 * C;
        float* dl_fcprojb = grads.fcprojb + l * C;

        float* l_ln1 = acts.ln1 + (size_t)l * B * T * C;
        float* l_ln1_mean = acts.ln1_mean + l * B * T;
        float* l_ln1_rstd = acts.ln1_rstd + l * B * T;
        float* l_qkvr = acts.qkvr + (size_t)l * B * T * 3 * C;
        float* l_att = acts.att + (size_t)l * B * NH * T * T;
        float* l_atty = acts.atty + (size_t)l * B * T * C;
        float* l_residual2 = acts.residual2 + (size_t)l * B * T * C;
        float* l_ln2 = acts.ln2 + (size_t)l * B * T * C;
        float* l_ln2_mean = acts.ln2_mean + l * B * T;
        float* l_ln2_rstd = acts.ln2_rstd + l * B * T;
        float* l_fch = acts.fch + (size_t)l * B * T * 4 * C;
        float* l_fch_gelu = acts.fch_gelu + (size_t)l * B * T * 4 * C;

        // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2))))
        matmul_backward(dbt4c, dl_fcprojw, dl_fcprojb, dresidual, l_fch_gelu, l_fcprojw, B * T, 4 * C, C);
        gelu_backward(dbt4c, l_fch, dbt4c, B * T * 4 * C);
        matmul_backward(dbtc, dl_fcw, dl_fcb, dbt4c, l_ln2, l_fcw, B * T, C, 4 * C);
        layernorm_backward(dresidual, dl_ln2w, dl_ln2b, dbtc, l_residual2, l_ln2w, l_ln2_mean, l_ln2_rstd, B * T, C);
        // attention: residual2 = residual + attproj(attention(qkv(ln1(residual))))
        matmul_backward(dbtc, dl_attprojw, dl_attprojb, dresidual, l_atty, l_attprojw, B * T, C, C);
        attention_backward(dbt4c, acts.output, dbtc, l_qkvr, l_att, B, T, C, NH);
        matmul_backward(dbtc, dl_qkvw, dl_qkvb, dbt4c, l_ln1, l_qkvw, B * T, C, 3 * C);
        layernorm_backward(dresidual, dl_ln1w, dl_ln1b, dbtc, residual, l_ln1w, l_ln1_mean, l_ln1_rstd, B * T, C);
    }
    encoder_backward(grads.wte, grads.wpe, dresidual, model->inputs, B, T, C);
    nvtxRangePop();
}

static void gpt2_update(GPT2* model, float learning_rate, float beta1, float beta2, float eps, float weight_decay, int t) {
    nvtxRangePushA("gpt2_update");
    // lazily allocate the AdamW moments on the first update
    if (model->m_memory == NULL) {
        model->m_memory = (float*)device_malloc(model->num_parameters * sizeof(float), P_OPTIMIZER);
        model->v_memory = (float*)device_malloc(model->num_parameters * sizeof(float), P_OPTIMIZER);
        cudaCheck(cudaMemset(model->m_memory, 0, model->num_parameters * sizeof(float)));
        cudaCheck(cudaMemset(model->v_memory, 0, model->num_parameters * sizeof(float)));
        printf("allocated %zu MiB for AdamW optimizer state m\n", (model->num_parameters * sizeof(float)) >> 20);
        printf("allocated %zu MiB for AdamW optimizer state v\n", (model->num_parameters * sizeof(float)) >> 20);
    }
    float beta1_correction = 1.0f - powf(beta1, t);
    float beta2_correction = 1.0f - powf(beta2, t);
    int block_size = 512;
    int num_blocks = (int)((model->num_parameters + block_size - 1) / block_size);
    adamw_kernel<<<num_blocks, block_size>>>(model->params_memory, model->grads_memory, model->m_memory,
                                             model->v_memory, model->num_parameters, learning_rate, beta1, beta2,
                                             beta1_correction, beta2_correction, eps, weight_decay);
    cudaCheck(cudaGetLastError());
    nvtxRangePop();
}

static void gpt2_free(GPT2* model) {
    device_free(model->params_memory);
    device_free(model->grads_memory);
    device_free(model->m_memory);
    device_free(model->v_memory);
    device_free(model->acts_memory);
    device_free(model->inputs);
    device_free(model->targets);
    device_free(model->losses);
    cudaCheck(cudaFreeHost(model->cpu_losses));
}

// ----------------------------------------------------------------------------
// synthetic data: a token stream with some local structure, cut into (B, T+1) windows

static void next_batch(int* tokens, int B, int T, int V) {
    for (int b = 0; b < B; b++) {
        int tok = (int)(random_u32() % V);
        for (int t = 0; t <= T; t++) {
            tokens[b * (T + 1) + t] = tok;
            tok = (random_u32() % 4 == 0) ? (int)(random_u32() % V) : (tok * 31 + 7) % V;
        }
    }
}

static void split_batch(const int* tokens, int* inputs, int* targets, int B, int T) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = tokens[b * (T + 1) + t];
            targets[b * T + t] = tokens[b * (T + 1) + t + 1];
        }
    }
}

int main(void) {
    cudaCheck(cudaSetDevice(0));
    cublasCheck(cublasLtCreate(&cublaslt_handle));
    cublaslt_workspace = device_malloc(cublaslt_workspace_size, P_FUNCTIONALITY);

    GPT2Config config;
    config.max_seq_len = 64;
    config.vocab_size = 8192;
    config.num_layers = 4;
    config.num_heads = 4;
    config.channels = 256;

    GPT2 model;
    gpt2_build(&model, config);
    printf("[GPT-2] max_seq_len=%d vocab_size=%d num_layers=%d num_heads=%d channels=%d\n", config.max_seq_len,
           config.vocab_size, config.num_layers, config.num_heads, config.channels);
    printf("num_parameters: %zu\n", model.num_parameters);

    const int B = 8, T = 64, train_steps = 4;
    gpt2_allocate_state(&model, B, T);

    int* tokens = (int*)malloc(B * (T + 1) * sizeof(int));
    int* inputs = (int*)malloc(B * T * sizeof(int));
    int* targets = (int*)malloc(B * T * sizeof(int));

    int steps_done = 0, forward_passes = 0;
    for (int step = 1; step <= train_steps; step++) {
        next_batch(tokens, B, T, config.vocab_size);
        split_batch(tokens, inputs, targets, B, T);
        gpt2_forward(&model, inputs, targets);
        forward_passes++;
        gpt2_zero_grad(&model);
        gpt2_backward(&model);
        gpt2_update(&model, 3e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, step);
        cudaCheck(cudaDeviceSynchronize());
        steps_done++;
        printf("step %d/%d: train loss %f\n", step, train_steps, model.mean_loss);
    }

    // one validation pass on a held-out batch: forward only
    rng_state = 0x9e3779b97f4a7c15ULL;
    next_batch(tokens, B, T, config.vocab_size);
    split_batch(tokens, inputs, targets, B, T);
    gpt2_forward(&model, inputs, targets);
    forward_passes++;
    cudaCheck(cudaDeviceSynchronize());
    printf("val loss %f\n", model.mean_loss);

    free(tokens);
    free(inputs);
    free(targets);
    gpt2_free(&model);
    device_free(cublaslt_workspace);
    cublasCheck(cublasLtDestroy(cublaslt_handle));

    printf("ledger {\"program\":\"h01_gpt_arenas_nvtx\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%zu,\"param_dtype\":\"fp32\","
           "\"master_weights\":false,\"optimizer\":\"adamw\",\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           steps_done, forward_passes, model.num_parameters, peak_bytes);
    for (int p = 0; p < P_COUNT; p++) printf("%s\"%s\":%zu", p ? "," : "", purpose_names[p], peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

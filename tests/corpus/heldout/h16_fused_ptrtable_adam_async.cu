// h16_fused_ptrtable_adam_async
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// An fp32 trainer for a 6-layer MLP, every layer a 768x768 linear layer with bias
// (ReLU between layers), using cuBLAS SGEMM for forward and backward and an MSE loss
// against a regression target. The AdamW update is ONE fused kernel launch per step:
// at set-up the program builds, on the host, a table with one entry per parameter
// tensor (pointers to the parameter, its gradient, Adam's first and second moments,
// and the element count), uploads it once with cudaMemcpy into a small device buffer
// before the first step, and the kernel receives only that table's address and the
// tensor count (the step's hyper-parameters and bias corrections go through a
// __constant__ symbol). Weights, gradients and Adam moments are persistent cudaMalloc
// allocations, one per tensor; the gradients are zeroed with cudaMemsetAsync on the
// compute stream at the start of each step and the weight-gradient GEMMs accumulate
// into them. Everything that lives only within a step -- the input batch and its
// targets, the layer outputs kept for backward, the gradient w.r.t. activations, the
// loss partial sums and the loss scalar -- comes from cudaMallocAsync / cudaFreeAsync
// on the compute stream. 5 steps, then a ledger of what was allocated and why.

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>

#define CUDA_CHECK(call)                                                            \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        if (err_ != cudaSuccess) {                                                  \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(err_));                                      \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define CUBLAS_CHECK(call)                                                          \
    do {                                                                            \
        cublasStatus_t st_ = (call);                                                \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__,    \
                    #call, (int)st_);                                               \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

// ---------------------------------------------------------------------------------
// Model / run configuration
// ---------------------------------------------------------------------------------
static const int kLayers = 6;
static const int kWidth = 768;
static const int kBatch = 256;
static const int kSteps = 5;
static const int kLossBlocks = 64;
static const int kThreads = 256;

// ---------------------------------------------------------------------------------
// Allocation ledger
// ---------------------------------------------------------------------------------
enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeNames[P_COUNT] = {"weights", "optimizer", "gradients",
                                             "activations", "temporary", "functionality",
                                             "mixed"};

struct LiveAlloc { void* ptr; size_t bytes; int purpose; };

static std::vector<LiveAlloc> g_live;
static unsigned long long g_live_by[P_COUNT];
static unsigned long long g_live_total = 0;
static unsigned long long g_peak_total = 0;
static unsigned long long g_peak_by[P_COUNT];

static void ledger_add(void* p, size_t bytes, int purpose) {
    if (p == nullptr || bytes == 0) return;
    g_live.push_back({p, bytes, purpose});
    g_live_by[purpose] += bytes;
    g_live_total += bytes;
    if (g_live_total > g_peak_total) {
        g_peak_total = g_live_total;
        memcpy(g_peak_by, g_live_by, sizeof(g_peak_by));
    }
}

static void ledger_remove(void* p) {
    if (p == nullptr) return;
    for (size_t i = 0; i < g_live.size(); ++i) {
        if (g_live[i].ptr == p) {
            g_live_by[g_live[i].purpose] -= g_live[i].bytes;
            g_live_total -= g_live[i].bytes;
            g_live[i] = g_live.back();
            g_live.pop_back();
            return;
        }
    }
    fprintf(stderr, "ledger: free of unknown pointer %p\n", p);
    exit(1);
}

template <typename T>
static T* dev_alloc(size_t count, int purpose) {
    void* p = nullptr;
    size_t bytes = count * sizeof(T);
    CUDA_CHECK(cudaMalloc(&p, bytes));
    ledger_add(p, bytes, purpose);
    return static_cast<T*>(p);
}

static void dev_free(void* p) {
    if (!p) return;
    CUDA_CHECK(cudaFree(p));
    ledger_remove(p);
}

template <typename T>
static T* dev_alloc_async(size_t count, int purpose, cudaStream_t s) {
    void* p = nullptr;
    size_t bytes = count * sizeof(T);
    CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
    ledger_add(p, bytes, purpose);
    return static_cast<T*>(p);
}

static void dev_free_async(void* p, cudaStream_t s) {
    if (!p) return;
    CUDA_CHECK(cudaFreeAsync(p, s));
    ledger_remove(p);
}

// ---------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------

// One entry per parameter tensor, read by the fused optimizer kernel.
struct AdamTensorEntry {
    float* param;
    const float* grad;
    float* exp_avg;
    float* exp_avg_sq;
    long long numel;
};

struct AdamHyper {
    float lr;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;
    float bias_corr1;   // 1 - beta1^t
    float bias_corr2;   // 1 - beta2^t
};

__constant__ AdamHyper c_adam;

// Y[b, j] = Y[b, j] + bias[j], optionally followed by ReLU. Row-major [rows x cols].
__global__ void bias_act_forward(float* __restrict__ y, const float* __restrict__ bias,
                                 int rows, int cols, int relu) {
    long long n = (long long)rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = y[i] + bias[i % cols];
        y[i] = relu ? fmaxf(v, 0.0f) : v;
    }
}

// MSE loss: loss = mean((pred - target)^2); dpred = 2 (pred - target) / n.
// Each block writes its partial sum of squared errors.
__global__ void mse_forward_backward(const float* __restrict__ pred,
                                     const float* __restrict__ target,
                                     float* __restrict__ dpred,
                                     float* __restrict__ partials, long long n) {
    __shared__ float sdata[kThreads];
    float acc = 0.0f;
    float scale = 2.0f / (float)n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float d = pred[i] - target[i];
        acc += d * d;
        dpred[i] = scale * d;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = sdata[0];
}

__global__ void finalize_loss(const float* __restrict__ partials, int nparts,
                              float* __restrict__ loss, long long n) {
    __shared__ float sdata[kThreads];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) acc += partials[i];
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = sdata[0] / (float)n;
}

// dx *= (h > 0), in place; h is the ReLU output of the forward pass.
__global__ void relu_backward(float* __restrict__ dx, const float* __restrict__ h,
                              long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if (h[i] <= 0.0f) dx[i] = 0.0f;
    }
}

// dbias[j] += sum_b dy[b, j]. Row-major dy [rows x cols]; one thread per column.
__global__ void bias_backward(const float* __restrict__ dy, float* __restrict__ dbias,
                              int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float acc = 0.0f;
    for (int b = 0; b < rows; ++b) acc += dy[(long long)b * cols + j];
    dbias[j] += acc;
}

// Fused AdamW over every parameter tensor, driven by a device-resident pointer table.
__global__ void fused_adamw_table(const AdamTensorEntry* __restrict__ table,
                                  int num_tensors) {
    const AdamHyper h = c_adam;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const float step_size = h.lr / h.bias_corr1;
    const float inv_sqrt_bc2 = rsqrtf(h.bias_corr2);
    for (int t = 0; t < num_tensors; ++t) {
        AdamTensorEntry e = table[t];
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < e.numel;
             i += stride) {
            float g = e.grad[i];
            float p = e.param[i];
            float m = h.beta1 * e.exp_avg[i] + (1.0f - h.beta1) * g;
            float v = h.beta2 * e.exp_avg_sq[i] + (1.0f - h.beta2) * g * g;
            e.exp_avg[i] = m;
            e.exp_avg_sq[i] = v;
            p -= h.lr * h.weight_decay * p;
            p -= step_size * m / (sqrtf(v) * inv_sqrt_bc2 + h.eps);
            e.param[i] = p;
        }
    }
}

// ---------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float rand_uniform() {  // in [-1, 1)
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(g_rng >> 40);
    return (float)r / (float)(1u << 23) - 1.0f;
}

static int grid_for(long long n) {
    long long g = (n + kThreads - 1) / kThreads;
    if (g > 1024) g = 1024;
    if (g < 1) g = 1;
    return (int)g;
}

static void print_ledger(int steps_done, int forward_passes, long long params) {
    printf("ledger {\"program\":\"h16_fused_ptrtable_adam_async\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"adamw\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           steps_done, forward_passes, params, g_peak_total);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%llu", p ? "," : "", kPurposeNames[p], g_peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------
int main() {
    CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));
    CUBLAS_CHECK(cublasSetStream(blas, stream));

    int sm_count = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
    if (sm_count <= 0) sm_count = 1;

    // ---- parameters: per layer W [out x in] row-major, b [out] ----
    const size_t w_elems = (size_t)kWidth * kWidth;
    const size_t b_elems = (size_t)kWidth;
    float* W[kLayers];
    float* Bv[kLayers];
    float* dW[kLayers];
    float* dB[kLayers];
    float* mW[kLayers];
    float* vW[kLayers];
    float* mB[kLayers];
    float* vB[kLayers];
    long long params = 0;

    std::vector<float> host_w(w_elems), host_b(b_elems);
    const float w_scale = 1.0f / sqrtf((float)kWidth);
    for (int l = 0; l < kLayers; ++l) {
        W[l] = dev_alloc<float>(w_elems, P_WEIGHTS);
        Bv[l] = dev_alloc<float>(b_elems, P_WEIGHTS);
        for (size_t i = 0; i < w_elems; ++i) host_w[i] = rand_uniform() * w_scale;
        for (size_t i = 0; i < b_elems; ++i) host_b[i] = rand_uniform() * w_scale;
        CUDA_CHECK(cudaMemcpy(W[l], host_w.data(), w_elems * sizeof(float),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(Bv[l], host_b.data(), b_elems * sizeof(float),
                              cudaMemcpyHostToDevice));
        params += (long long)(w_elems + b_elems);
    }
    for (int l = 0; l < kLayers; ++l) {
        dW[l] = dev_alloc<float>(w_elems, P_GRADIENTS);
        dB[l] = dev_alloc<float>(b_elems, P_GRADIENTS);
    }
    for (int l = 0; l < kLayers; ++l) {
        mW[l] = dev_alloc<float>(w_elems, P_OPTIMIZER);
        vW[l] = dev_alloc<float>(w_elems, P_OPTIMIZER);
        mB[l] = dev_alloc<float>(b_elems, P_OPTIMIZER);
        vB[l] = dev_alloc<float>(b_elems, P_OPTIMIZER);
        CUDA_CHECK(cudaMemset(mW[l], 0, w_elems * sizeof(float)));
        CUDA_CHECK(cudaMemset(vW[l], 0, w_elems * sizeof(float)));
        CUDA_CHECK(cudaMemset(mB[l], 0, b_elems * sizeof(float)));
        CUDA_CHECK(cudaMemset(vB[l], 0, b_elems * sizeof(float)));
    }

    // ---- optimizer pointer table: built on the host, uploaded once ----
    const int num_tensors = 2 * kLayers;
    std::vector<AdamTensorEntry> host_table;
    host_table.reserve(num_tensors);
    for (int l = 0; l < kLayers; ++l) {
        host_table.push_back({W[l], dW[l], mW[l], vW[l], (long long)w_elems});
        host_table.push_back({Bv[l], dB[l], mB[l], vB[l], (long long)b_elems});
    }
    AdamTensorEntry* d_table = dev_alloc<AdamTensorEntry>(num_tensors, P_FUNCTIONALITY);
    CUDA_CHECK(cudaMemcpy(d_table, host_table.data(),
                          num_tensors * sizeof(AdamTensorEntry), cudaMemcpyHostToDevice));

    // ---- pinned host staging for the batch and the loss ----
    const size_t act_elems = (size_t)kBatch * kWidth;
    float* h_x = nullptr;
    float* h_y = nullptr;
    float* h_loss = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_x, act_elems * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&h_y, act_elems * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float one = 1.0f, zero = 0.0f;
    int steps_done = 0, forward_passes = 0;

    for (int step = 1; step <= kSteps; ++step) {
        // -- step start: zero the persistent gradients on the compute stream --
        for (int l = 0; l < kLayers; ++l) {
            CUDA_CHECK(cudaMemsetAsync(dW[l], 0, w_elems * sizeof(float), stream));
            CUDA_CHECK(cudaMemsetAsync(dB[l], 0, b_elems * sizeof(float), stream));
        }

        // -- batch: inputs and regression targets --
        for (size_t i = 0; i < act_elems; ++i) h_x[i] = rand_uniform();
        for (size_t i = 0; i < act_elems; ++i) h_y[i] = 0.5f * rand_uniform();
        float* x = dev_alloc_async<float>(act_elems, P_ACTIVATIONS, stream);
        float* y = dev_alloc_async<float>(act_elems, P_ACTIVATIONS, stream);
        CUDA_CHECK(cudaMemcpyAsync(x, h_x, act_elems * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(y, h_y, act_elems * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));

        // -- forward: h[l] = act(h[l-1] W[l]^T + b[l]) --
        float* h[kLayers];
        const float* in = x;
        for (int l = 0; l < kLayers; ++l) {
            h[l] = dev_alloc_async<float>(act_elems, P_ACTIVATIONS, stream);
            // column-major view: h^T (out x B) = op_T(Wc) * Xc, with Wc = W^T, Xc = in^T
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kWidth, kBatch, kWidth,
                                     &one, W[l], kWidth, in, kWidth, &zero, h[l], kWidth));
            bias_act_forward<<<grid_for(act_elems), kThreads, 0, stream>>>(
                h[l], Bv[l], kBatch, kWidth, l + 1 < kLayers ? 1 : 0);
            CUDA_CHECK(cudaGetLastError());
            in = h[l];
        }
        ++forward_passes;

        // -- loss and its gradient --
        float* dcur = dev_alloc_async<float>(act_elems, P_TEMPORARY, stream);
        float* partials = dev_alloc_async<float>(kLossBlocks, P_TEMPORARY, stream);
        float* d_loss = dev_alloc_async<float>(1, P_TEMPORARY, stream);
        mse_forward_backward<<<kLossBlocks, kThreads, 0, stream>>>(
            h[kLayers - 1], y, dcur, partials, (long long)act_elems);
        CUDA_CHECK(cudaGetLastError());
        finalize_loss<<<1, kThreads, 0, stream>>>(partials, kLossBlocks, d_loss,
                                                  (long long)act_elems);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpyAsync(h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost,
                                   stream));
        dev_free_async(partials, stream);
        dev_free_async(d_loss, stream);
        dev_free_async(h[kLayers - 1], stream);  // predictions no longer needed
        dev_free_async(y, stream);

        // -- backward --
        for (int l = kLayers - 1; l >= 0; --l) {
            float* layer_in = (l == 0) ? x : h[l - 1];
            // dW[l] (out x in, row-major) += dY^T X  ->  col-major: Xc * dYc^T
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kWidth, kWidth, kBatch,
                                     &one, layer_in, kWidth, dcur, kWidth, &one, dW[l],
                                     kWidth));
            bias_backward<<<(kWidth + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
                dcur, dB[l], kBatch, kWidth);
            CUDA_CHECK(cudaGetLastError());
            if (l > 0) {
                float* dprev = dev_alloc_async<float>(act_elems, P_TEMPORARY, stream);
                // dX = dY W  ->  col-major: Wc * dYc
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kWidth, kBatch,
                                         kWidth, &one, W[l], kWidth, dcur, kWidth, &zero,
                                         dprev, kWidth));
                relu_backward<<<grid_for(act_elems), kThreads, 0, stream>>>(
                    dprev, h[l - 1], (long long)act_elems);
                CUDA_CHECK(cudaGetLastError());
                dev_free_async(dcur, stream);
                dev_free_async(h[l - 1], stream);
                dcur = dprev;
            } else {
                dev_free_async(dcur, stream);
                dev_free_async(x, stream);
            }
        }

        // -- optimizer: one fused AdamW launch over the pointer table --
        AdamHyper hp;
        hp.lr = lr;
        hp.beta1 = beta1;
        hp.beta2 = beta2;
        hp.eps = eps;
        hp.weight_decay = wd;
        hp.bias_corr1 = 1.0f - powf(beta1, (float)step);
        hp.bias_corr2 = 1.0f - powf(beta2, (float)step);
        CUDA_CHECK(cudaMemcpyToSymbolAsync(c_adam, &hp, sizeof(hp), 0,
                                           cudaMemcpyHostToDevice, stream));
        fused_adamw_table<<<2 * sm_count, kThreads, 0, stream>>>(d_table, num_tensors);
        CUDA_CHECK(cudaGetLastError());

        CUDA_CHECK(cudaStreamSynchronize(stream));
        ++steps_done;
        printf("step %d loss %.6f\n", step, (double)*h_loss);
    }

    // ---- teardown ----
    CUDA_CHECK(cudaStreamSynchronize(stream));
    dev_free(d_table);
    for (int l = 0; l < kLayers; ++l) {
        dev_free(mW[l]); dev_free(vW[l]); dev_free(mB[l]); dev_free(vB[l]);
        dev_free(dW[l]); dev_free(dB[l]);
        dev_free(W[l]); dev_free(Bv[l]);
    }
    CUDA_CHECK(cudaFreeHost(h_x));
    CUDA_CHECK(cudaFreeHost(h_y));
    CUDA_CHECK(cudaFreeHost(h_loss));
    CUBLAS_CHECK(cublasDestroy(blas));
    CUDA_CHECK(cudaStreamDestroy(stream));

    print_ledger(steps_done, forward_passes, params);
    return 0;
}

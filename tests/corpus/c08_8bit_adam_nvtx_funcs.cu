// c08_8bit_adam_nvtx_funcs — 4-layer fp32 MLP classifier trained with block-wise 8-bit AdamW.
//
// Spec: a 4-layer MLP (1024 -> 1024 -> 1024 -> 1024 -> 1000 classes, ReLU between layers,
// fp32 weights and biases, one cudaMalloc per tensor) is trained for 4 steps on synthetic
// batches of 256 samples with softmax cross-entropy. The optimizer is 8-bit AdamW: for every
// parameter tensor the first moment m and the second moment v are stored as one uint8 per
// element (m with a signed, offset-128 linear code, v as sqrt(v) with an unsigned linear code),
// each quantised per block of 256 elements with one fp32 scale per block; every tensor gets
// four optimizer allocations (m codes, v codes, m scales, v scales). Gradients are persistent
// buffers zeroed with cudaMemset at the start of every step and accumulated into (beta = 1).
// All matmuls go through cublasLtMatmul in fp32 (bias and ReLU fused as epilogues in the
// forward pass) with a 32 MiB workspace the program allocates and passes to every call. The
// input batch and labels live in persistent device buffers refilled every step; each layer's
// output activation is cudaMalloc'ed in forward and cudaFree'd in backward once that layer's
// backward is done; gradients with respect to activations and the loss gradient are scratch
// buffers of the backward pass. NVTX (header-only nvtx3) push/pop ranges carry the names of
// the program's own functions, nested as the calls are (train_iteration > model_forward >
// mlp_block, ...). The simulated device is told not to compute GEMM results (they are
// still checked, launched and timed) so that the run stays short.
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
#include <map>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        cudaError_t err_ = (call);                                                          \
        if (err_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__, __LINE__,               \
                    cudaGetErrorName(err_), cudaGetErrorString(err_));                      \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define LT_CHECK(call)                                                                      \
    do {                                                                                    \
        cublasStatus_t st_ = (call);                                                        \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: cuBLASLt error %s (%d)\n", __FILE__, __LINE__,          \
                    cublasLtGetStatusName(st_), (int)st_);                                  \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// NVTX range named after the enclosing function.
struct NvtxScope {
    explicit NvtxScope(const char* name) { nvtxRangePushA(name); }
    ~NvtxScope() { nvtxRangePop(); }
    NvtxScope(const NvtxScope&) = delete;
    NvtxScope& operator=(const NvtxScope&) = delete;
};
#define NVTX_FUNCTION_RANGE() NvtxScope nvtx_scope_(__func__)

// ---------------------------------------------------------------------------------------
// Device-memory ledger: every cudaMalloc/cudaFree of the program goes through here.
// ---------------------------------------------------------------------------------------
enum Purpose {
    P_WEIGHTS = 0,
    P_OPTIMIZER,
    P_GRADIENTS,
    P_ACTIVATIONS,
    P_TEMPORARY,
    P_FUNCTIONALITY,
    P_MIXED,
    P_COUNT
};
static const char* kPurposeNames[P_COUNT] = {"weights",     "optimizer",     "gradients", "activations",
                                             "temporary",   "functionality", "mixed"};

enum Phase { PH_SETUP = 0, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char* kPhaseNames[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
    std::map<void*, std::pair<size_t, Purpose>> live;
    size_t live_by[P_COUNT] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[P_COUNT] = {0};
    Phase phase = PH_SETUP;
    int step = 0;  // 1-based step in progress, 0 in set-up
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
    // out-of-memory record
    bool oom = false;
    size_t oom_requested = 0;
    Purpose oom_purpose = P_TEMPORARY;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    size_t oom_live_total = 0;
    size_t oom_live_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void print_purpose_object(const size_t* by) {
    printf("{");
    for (int i = 0; i < P_COUNT; ++i) printf("%s\"%s\":%zu", i ? "," : "", kPurposeNames[i], by[i]);
    printf("}");
}

static void print_ledger() {
    const Ledger& L = g_ledger;
    printf("ledger {\"program\":\"c08_8bit_adam_nvtx_funcs\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw8bit\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":",
           L.steps_done, L.forward_passes, L.params, L.peak_total);
    print_purpose_object(L.peak_by);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null");
    } else {
        int dom = 0;
        for (int i = 1; i < P_COUNT; ++i)
            if (L.oom_live_by[i] > L.oom_live_by[dom]) dom = i;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%zu,\"live_by_purpose\":",
               L.oom_requested, kPurposeNames[L.oom_purpose], kPhaseNames[L.oom_phase], L.oom_step,
               L.oom_live_total);
        print_purpose_object(L.oom_live_by);
        printf(",\"dominant\":\"%s\"}", kPurposeNames[dom]);
    }
    printf("}\n");
    fflush(stdout);
}

template <typename T>
static T* device_alloc(size_t count, Purpose purpose, const char* what) {
    void* p = nullptr;
    size_t bytes = count * sizeof(T);
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        Ledger& L = g_ledger;
        L.oom = true;
        L.oom_requested = bytes;
        L.oom_purpose = purpose;
        L.oom_phase = L.phase;
        L.oom_step = L.step;
        L.oom_live_total = L.live_total;
        memcpy(L.oom_live_by, L.live_by, sizeof(L.live_by));
        fprintf(stderr, "out of device memory allocating %zu bytes for %s\n", bytes, what);
        print_ledger();
        exit(3);
    }
    CUDA_CHECK(err);
    Ledger& L = g_ledger;
    L.live[p] = std::make_pair(bytes, purpose);
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak_total) {
        L.peak_total = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof(L.live_by));
    }
    return static_cast<T*>(p);
}

static void device_free(void* p) {
    if (!p) return;
    Ledger& L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "device_free: unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    L.live_by[it->second.second] -= it->second.first;
    L.live_total -= it->second.first;
    L.live.erase(it);
}

// ---------------------------------------------------------------------------------------
// Model and optimizer configuration
// ---------------------------------------------------------------------------------------
static const int kBatch = 256;
static const int kNumLayers = 4;
static const int kDims[kNumLayers + 1] = {1024, 1024, 1024, 1024, 1000};  // in, hidden x3, classes
static const int kSteps = 4;
static const size_t kLtWorkspaceBytes = 32u << 20;  // NVIDIA's recommendation for Hopper
static const int kQuantBlock = 256;                 // elements per 8-bit quantisation block

struct AdamW8bitConfig {
    float lr = 1e-3f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 1e-2f;
};

// One parameter tensor with its gradient and its 8-bit optimizer state.
struct ParamTensor {
    const char* name;
    size_t numel;
    size_t num_blocks;
    float* data;        // weights
    float* grad;        // gradients (persistent)
    uint8_t* m_codes;   // first moment, 8-bit codes
    uint8_t* v_codes;   // second moment, 8-bit codes
    float* m_absmax;    // one scale per block
    float* v_absmax;    // one scale per block
};

struct Linear {
    int in, out;
    ParamTensor weight;  // [out x in], column-major (ld = out)
    ParamTensor bias;    // [out]
};

struct Model {
    Linear layers[kNumLayers];
};

struct Activations {
    const float* input;                   // [in0 x B], persistent input buffer
    float* out[kNumLayers] = {nullptr};   // output of each layer (ReLU'd, last = logits)
};

struct Context {
    cublasLtHandle_t lt;
    void* workspace;
    size_t workspace_bytes;
    cudaStream_t stream;
};

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

// db[j] += sum_b dy[j + b * rows]
__global__ void bias_grad_kernel(const float* __restrict__ dy, float* __restrict__ db, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= rows) return;
    float acc = 0.f;
    for (int b = 0; b < cols; ++b) acc += dy[(size_t)b * rows + j];
    db[j] += acc;
}

// dx[i] *= (y[i] > 0): backward of ReLU, using the layer's ReLU output.
__global__ void relu_backward_kernel(float* __restrict__ dx, const float* __restrict__ y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.f) dx[i] = 0.f;
}

template <int BLOCK>
__device__ float block_reduce_max(float v, float* smem) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = (threadIdx.x < BLOCK / 32) ? smem[threadIdx.x] : -INFINITY;
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (threadIdx.x == 0) smem[0] = v;
    __syncthreads();
    float r = smem[0];
    __syncthreads();
    return r;
}

template <int BLOCK>
__device__ float block_reduce_sum(float v, float* smem) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = (threadIdx.x < BLOCK / 32) ? smem[threadIdx.x] : 0.f;
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) smem[0] = v;
    __syncthreads();
    float r = smem[0];
    __syncthreads();
    return r;
}

// Softmax cross-entropy over the columns of logits [classes x batch]:
// dlogits = (softmax - onehot) / batch, loss += -log p[label] / batch.
template <int BLOCK>
__global__ void softmax_xent_kernel(const float* __restrict__ logits, const int* __restrict__ labels,
                                    float* __restrict__ dlogits, float* __restrict__ loss, int classes,
                                    int batch) {
    __shared__ float smem[BLOCK / 32];
    int b = blockIdx.x;
    const float* col = logits + (size_t)b * classes;
    float* dcol = dlogits + (size_t)b * classes;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += BLOCK) mx = fmaxf(mx, col[c]);
    mx = block_reduce_max<BLOCK>(mx, smem);
    float s = 0.f;
    for (int c = threadIdx.x; c < classes; c += BLOCK) s += __expf(col[c] - mx);
    s = block_reduce_sum<BLOCK>(s, smem);
    int label = labels[b];
    float inv_batch = 1.f / batch;
    for (int c = threadIdx.x; c < classes; c += BLOCK) {
        float p = __expf(col[c] - mx) / s;
        dcol[c] = (p - (c == label ? 1.f : 0.f)) * inv_batch;
    }
    if (threadIdx.x == 0) atomicAdd(loss, -(col[label] - mx - logf(s)) * inv_batch);
}

// One 8-bit AdamW update. One thread block per quantisation block of kQuantBlock elements.
// m is coded as 128 + round(127 * m / absmax(m)), v as round(255 * sqrt(v) / max(sqrt(v))).
__global__ void __launch_bounds__(kQuantBlock)
adamw8bit_kernel(float* __restrict__ param, const float* __restrict__ grad, uint8_t* __restrict__ m_codes,
                 uint8_t* __restrict__ v_codes, float* __restrict__ m_absmax, float* __restrict__ v_absmax,
                 size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                 float bias_corr1, float bias_corr2) {
    __shared__ float smem[kQuantBlock / 32];
    size_t i = (size_t)blockIdx.x * kQuantBlock + threadIdx.x;
    bool valid = i < n;
    float m = 0.f, v_sqrt = 0.f;
    if (valid) {
        float m_scale = m_absmax[blockIdx.x];
        float v_scale = v_absmax[blockIdx.x];
        float m_old = ((int)m_codes[i] - 128) * (1.f / 127.f) * m_scale;
        float vs_old = v_codes[i] * (1.f / 255.f) * v_scale;
        float g = grad[i];
        m = beta1 * m_old + (1.f - beta1) * g;
        float v = beta2 * vs_old * vs_old + (1.f - beta2) * g * g;
        v_sqrt = sqrtf(v);
        float w = param[i];
        w -= lr * weight_decay * w;  // decoupled weight decay
        w -= lr * (m / bias_corr1) / (v_sqrt / sqrtf(bias_corr2) + eps);
        param[i] = w;
    }
    // New per-block scales (all threads take part; scales were read above).
    float new_m_scale = block_reduce_max<kQuantBlock>(fabsf(m), smem);
    float new_v_scale = block_reduce_max<kQuantBlock>(v_sqrt, smem);
    if (valid) {
        int mq = new_m_scale > 0.f ? __float2int_rn(m / new_m_scale * 127.f) : 0;
        int vq = new_v_scale > 0.f ? __float2int_rn(v_sqrt / new_v_scale * 255.f) : 0;
        m_codes[i] = (uint8_t)(128 + max(-127, min(127, mq)));
        v_codes[i] = (uint8_t)max(0, min(255, vq));
    }
    if (threadIdx.x == 0) {
        m_absmax[blockIdx.x] = new_m_scale;
        v_absmax[blockIdx.x] = new_v_scale;
    }
}

// ---------------------------------------------------------------------------------------
// cuBLASLt matmul: C = alpha * op(A) * op(B) + beta * C (+ epilogue), column-major fp32.
// ---------------------------------------------------------------------------------------
static void lt_matmul(const Context& ctx, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                      int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc, cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                      const float* bias = nullptr) {
    cublasLtMatmulDesc_t op;
    LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (bias) LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));

    cublasLtMatrixLayout_t a_desc, b_desc, c_desc;
    LT_CHECK(cublasLtMatrixLayoutCreate(&a_desc, CUDA_R_32F, transa == CUBLAS_OP_N ? m : k,
                                        transa == CUBLAS_OP_N ? k : m, lda));
    LT_CHECK(cublasLtMatrixLayoutCreate(&b_desc, CUDA_R_32F, transb == CUBLAS_OP_N ? k : n,
                                        transb == CUBLAS_OP_N ? n : k, ldb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&c_desc, CUDA_R_32F, m, n, ldc));

    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = ctx.workspace_bytes;
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));

    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.lt, op, a_desc, b_desc, c_desc, c_desc, pref, 1, &heuristic, &found));
    if (found == 0) {
        fprintf(stderr, "cublasLtMatmulAlgoGetHeuristic: no algorithm for %dx%dx%d\n", m, n, k);
        exit(1);
    }
    LT_CHECK(cublasLtMatmul(ctx.lt, op, &alpha, A, a_desc, B, b_desc, &beta, C, c_desc, C, c_desc,
                            &heuristic.algo, ctx.workspace, ctx.workspace_bytes, ctx.stream));

    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    LT_CHECK(cublasLtMatrixLayoutDestroy(c_desc));
    LT_CHECK(cublasLtMatrixLayoutDestroy(b_desc));
    LT_CHECK(cublasLtMatrixLayoutDestroy(a_desc));
    LT_CHECK(cublasLtMatmulDescDestroy(op));
}

// ---------------------------------------------------------------------------------------
// Host-side helpers
// ---------------------------------------------------------------------------------------
struct Lcg {
    uint64_t state;
    explicit Lcg(uint64_t seed) : state(seed) {}
    uint32_t next_u32() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (uint32_t)(state >> 33);
    }
    float uniform() { return (next_u32() & 0xffffff) / 16777216.f; }  // [0, 1)
    float symmetric(float bound) { return (2.f * uniform() - 1.f) * bound; }
};

static void init_param_tensor(ParamTensor& t, const char* name, size_t numel) {
    NVTX_FUNCTION_RANGE();
    t.name = name;
    t.numel = numel;
    t.num_blocks = (numel + kQuantBlock - 1) / kQuantBlock;
    t.data = device_alloc<float>(numel, P_WEIGHTS, name);
    g_ledger.params += (long long)numel;
}

static void init_model(Model& model, Lcg& rng) {
    NVTX_FUNCTION_RANGE();
    static char names[kNumLayers][2][32];
    for (int l = 0; l < kNumLayers; ++l) {
        Linear& lin = model.layers[l];
        lin.in = kDims[l];
        lin.out = kDims[l + 1];
        snprintf(names[l][0], sizeof(names[l][0]), "layers.%d.weight", l);
        snprintf(names[l][1], sizeof(names[l][1]), "layers.%d.bias", l);
        init_param_tensor(lin.weight, names[l][0], (size_t)lin.out * lin.in);
        init_param_tensor(lin.bias, names[l][1], (size_t)lin.out);

        // Kaiming-uniform style init on the host, then upload.
        std::vector<float> h_w(lin.weight.numel);
        float bound = sqrtf(6.f / lin.in);
        for (auto& w : h_w) w = rng.symmetric(bound);
        CUDA_CHECK(cudaMemcpy(lin.weight.data, h_w.data(), h_w.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(lin.bias.data, 0, lin.bias.numel * sizeof(float)));
    }
}

static void alloc_grad_and_state(ParamTensor& t) {
    t.grad = device_alloc<float>(t.numel, P_GRADIENTS, t.name);
    t.m_codes = device_alloc<uint8_t>(t.numel, P_OPTIMIZER, t.name);
    t.v_codes = device_alloc<uint8_t>(t.numel, P_OPTIMIZER, t.name);
    t.m_absmax = device_alloc<float>(t.num_blocks, P_OPTIMIZER, t.name);
    t.v_absmax = device_alloc<float>(t.num_blocks, P_OPTIMIZER, t.name);
    CUDA_CHECK(cudaMemset(t.m_codes, 128, t.numel));  // code 128 == 0.0
    CUDA_CHECK(cudaMemset(t.v_codes, 0, t.numel));
    CUDA_CHECK(cudaMemset(t.m_absmax, 0, t.num_blocks * sizeof(float)));
    CUDA_CHECK(cudaMemset(t.v_absmax, 0, t.num_blocks * sizeof(float)));
}

static void init_optimizer(Model& model) {
    NVTX_FUNCTION_RANGE();
    for (int l = 0; l < kNumLayers; ++l) {
        alloc_grad_and_state(model.layers[l].weight);
        alloc_grad_and_state(model.layers[l].bias);
    }
}

static void free_param_tensor(ParamTensor& t) {
    device_free(t.v_absmax);
    device_free(t.m_absmax);
    device_free(t.v_codes);
    device_free(t.m_codes);
    device_free(t.grad);
    device_free(t.data);
}

// ---------------------------------------------------------------------------------------
// Training step
// ---------------------------------------------------------------------------------------
static void zero_grad(Model& model, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    for (int l = 0; l < kNumLayers; ++l) {
        Linear& lin = model.layers[l];
        CUDA_CHECK(cudaMemset(lin.weight.grad, 0, lin.weight.numel * sizeof(float)));
        CUDA_CHECK(cudaMemset(lin.bias.grad, 0, lin.bias.numel * sizeof(float)));
    }
    (void)ctx;
}

// y = act(W x + b): one Linear (+ ReLU unless it is the classifier head).
static float* mlp_block(const Linear& lin, const float* x, bool relu, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    float* y = device_alloc<float>((size_t)lin.out * kBatch, P_ACTIVATIONS, "activation");
    lt_matmul(ctx, CUBLAS_OP_N, CUBLAS_OP_N, lin.out, kBatch, lin.in, 1.f, lin.weight.data, lin.out, x, lin.in,
              0.f, y, lin.out, relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, lin.bias.data);
    return y;
}

static void model_forward(const Model& model, Activations& acts, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    g_ledger.phase = PH_FORWARD;
    const float* x = acts.input;
    for (int l = 0; l < kNumLayers; ++l) {
        acts.out[l] = mlp_block(model.layers[l], x, /*relu=*/l + 1 < kNumLayers, ctx);
        x = acts.out[l];
    }
    g_ledger.forward_passes++;
}

// Returns dL/dlogits (scratch) and accumulates the mean loss into d_loss.
static float* loss_and_grad(const float* logits, const int* labels, float* d_loss, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    g_ledger.phase = PH_BACKWARD;
    const int classes = kDims[kNumLayers];
    float* dlogits = device_alloc<float>((size_t)classes * kBatch, P_TEMPORARY, "dlogits");
    CUDA_CHECK(cudaMemsetAsync(d_loss, 0, sizeof(float), ctx.stream));
    softmax_xent_kernel<256><<<kBatch, 256, 0, ctx.stream>>>(logits, labels, dlogits, d_loss, classes, kBatch);
    KERNEL_CHECK();
    return dlogits;
}

// Given dy = dL/dy of this block's output, accumulate dW, db and return dL/dx (or null for
// the first block), masked by the ReLU of the previous block (whose output is x).
static float* mlp_block_backward(Linear& lin, const float* x, bool x_is_relu, const float* dy, bool need_dx,
                                 const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    // dW += dy * x^T     [out x B] * [B x in]
    lt_matmul(ctx, CUBLAS_OP_N, CUBLAS_OP_T, lin.out, lin.in, kBatch, 1.f, dy, lin.out, x, lin.in, 1.f,
              lin.weight.grad, lin.out);
    // db += rowsum(dy)
    bias_grad_kernel<<<(lin.out + 255) / 256, 256, 0, ctx.stream>>>(dy, lin.bias.grad, lin.out, kBatch);
    KERNEL_CHECK();
    if (!need_dx) return nullptr;
    // dx = W^T * dy      [in x out] * [out x B]
    float* dx = device_alloc<float>((size_t)lin.in * kBatch, P_TEMPORARY, "dx");
    lt_matmul(ctx, CUBLAS_OP_T, CUBLAS_OP_N, lin.in, kBatch, lin.out, 1.f, lin.weight.data, lin.out, dy, lin.out,
              0.f, dx, lin.in);
    if (x_is_relu) {
        size_t n = (size_t)lin.in * kBatch;
        relu_backward_kernel<<<(unsigned)((n + 255) / 256), 256, 0, ctx.stream>>>(dx, x, n);
        KERNEL_CHECK();
    }
    return dx;
}

static void model_backward(Model& model, Activations& acts, float* dlogits, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    g_ledger.phase = PH_BACKWARD;
    float* dy = dlogits;
    for (int l = kNumLayers - 1; l >= 0; --l) {
        const float* x = l > 0 ? acts.out[l - 1] : acts.input;
        float* dx = mlp_block_backward(model.layers[l], x, /*x_is_relu=*/l > 0, dy, /*need_dx=*/l > 0, ctx);
        device_free(dy);
        device_free(acts.out[l]);  // this block's output is no longer needed
        acts.out[l] = nullptr;
        dy = dx;
    }
}

static void adamw8bit_tensor_update(ParamTensor& t, const AdamW8bitConfig& cfg, int step, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    float bc1 = 1.f - powf(cfg.beta1, (float)step);
    float bc2 = 1.f - powf(cfg.beta2, (float)step);
    adamw8bit_kernel<<<(unsigned)t.num_blocks, kQuantBlock, 0, ctx.stream>>>(
        t.data, t.grad, t.m_codes, t.v_codes, t.m_absmax, t.v_absmax, t.numel, cfg.lr, cfg.beta1, cfg.beta2,
        cfg.eps, cfg.weight_decay, bc1, bc2);
    KERNEL_CHECK();
}

static void apply_update(Model& model, const AdamW8bitConfig& cfg, int step, const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    g_ledger.phase = PH_OPTIMIZER;
    for (int l = 0; l < kNumLayers; ++l) {
        adamw8bit_tensor_update(model.layers[l].weight, cfg, step, ctx);
        adamw8bit_tensor_update(model.layers[l].bias, cfg, step, ctx);
    }
}

static void load_batch(float* d_x, int* d_labels, int step, std::vector<float>& h_x, std::vector<int>& h_y,
                       const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    // Synthetic data: class-dependent means plus noise, deterministic per step.
    Lcg rng(0x5eed0000ull + (uint64_t)step);
    const int in = kDims[0], classes = kDims[kNumLayers];
    for (int b = 0; b < kBatch; ++b) {
        int label = (int)(rng.next_u32() % classes);
        h_y[b] = label;
        for (int i = 0; i < in; ++i)
            h_x[(size_t)b * in + i] = rng.symmetric(1.f) + ((i % classes) == label ? 2.f : 0.f);
    }
    CUDA_CHECK(cudaMemcpyAsync(d_x, h_x.data(), h_x.size() * sizeof(float), cudaMemcpyHostToDevice, ctx.stream));
    CUDA_CHECK(cudaMemcpyAsync(d_labels, h_y.data(), h_y.size() * sizeof(int), cudaMemcpyHostToDevice, ctx.stream));
}

static float train_iteration(Model& model, Activations& acts, float* d_x, int* d_labels, float* d_loss,
                             const AdamW8bitConfig& cfg, int step, std::vector<float>& h_x, std::vector<int>& h_y,
                             const Context& ctx) {
    NVTX_FUNCTION_RANGE();
    g_ledger.phase = PH_STEP_START;
    g_ledger.step = step;
    load_batch(d_x, d_labels, step, h_x, h_y, ctx);
    zero_grad(model, ctx);
    model_forward(model, acts, ctx);
    float* dlogits = loss_and_grad(acts.out[kNumLayers - 1], d_labels, d_loss, ctx);
    model_backward(model, acts, dlogits, ctx);
    apply_update(model, cfg, step, ctx);
    float loss = 0.f;
    CUDA_CHECK(cudaMemcpyAsync(&loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost, ctx.stream));
    CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    g_ledger.steps_done++;
    return loss;
}

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    Context ctx;
    ctx.stream = 0;
    LT_CHECK(cublasLtCreate(&ctx.lt));
    ctx.workspace_bytes = kLtWorkspaceBytes;
    ctx.workspace = device_alloc<uint8_t>(kLtWorkspaceBytes, P_FUNCTIONALITY, "cublasLt workspace");

    Lcg rng(1234);
    Model model;
    init_model(model, rng);
    init_optimizer(model);
    AdamW8bitConfig cfg;

    // Persistent input batch, labels and loss scalar.
    float* d_x = device_alloc<float>((size_t)kDims[0] * kBatch, P_ACTIVATIONS, "input batch");
    int* d_labels = device_alloc<int>(kBatch, P_ACTIVATIONS, "labels");
    float* d_loss = device_alloc<float>(1, P_TEMPORARY, "loss");
    std::vector<float> h_x((size_t)kDims[0] * kBatch);
    std::vector<int> h_y(kBatch);

    printf("8-bit AdamW MLP: %lld parameters, batch %d, %d steps\n", g_ledger.params, kBatch, kSteps);
    Activations acts;
    acts.input = d_x;
    for (int step = 1; step <= kSteps; ++step) {
        float loss = train_iteration(model, acts, d_x, d_labels, d_loss, cfg, step, h_x, h_y, ctx);
        printf("step %d loss %.6f\n", step, loss);
    }

    CUDA_CHECK(cudaDeviceSynchronize());
    device_free(d_loss);
    device_free(d_labels);
    device_free(d_x);
    for (int l = kNumLayers - 1; l >= 0; --l) {
        free_param_tensor(model.layers[l].bias);
        free_param_tensor(model.layers[l].weight);
    }
    device_free(ctx.workspace);
    LT_CHECK(cublasLtDestroy(ctx.lt));
    if (g_ledger.live_total != 0) {
        fprintf(stderr, "leak: %zu bytes still live\n", g_ledger.live_total);
        return 1;
    }
    print_ledger();
    return 0;
}

// c07_adafactor_accum: bf16 MLP trained with Adafactor and gradient accumulation.
//
// A 4-layer MLP classifier (1024 -> 1024 -> 1024 -> 1024 -> 1000, ReLU between layers)
// whose weights and biases live only in bf16 (no fp32 master copy). It is trained with an
// Adafactor optimizer (HF-style, relative_step=False, scale_parameter=False, lr 1e-3,
// clip_threshold 1.0, beta2_t = 1 - t^-0.8): each weight matrix keeps a factored
// second moment, one fp32 row vector (length out) and one fp32 column vector (length in);
// each bias keeps a full fp32 second-moment vector. Gradients are accumulated over 4
// micro-batches of 64 samples per update into persistent fp32 accumulators (one per
// tensor), which are zeroed with cudaMemset after every update. Every micro-batch
// allocates its input, labels and the activations it keeps for backward in its forward
// pass and frees them during its backward pass; activation gradients are short-lived
// temporaries of the backward pass. The matmuls are cublasGemmEx calls (bf16 inputs, fp32
// compute; weight gradients accumulate straight into the fp32 accumulators with beta = 1);
// bias, activation, loss and optimizer math are hand-written kernels. The program runs 3
// updates (12 micro-batches), printing the mean loss of each update, and then its ledger.
// (The simulated device does not run kernel bodies, so the GEMMs' CPU results would be
// meaningless here; the env line below only skips computing them to keep the run short.)
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CUBLAS_CHECK(call)                                                                \
    do {                                                                                  \
        cublasStatus_t st_ = (call);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cublasGetStatusString(st_));                                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Device memory ledger: every cudaMalloc / cudaFree of the program goes through here.
// ---------------------------------------------------------------------------------------

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char *kPhaseName[] = {"setup", "step_start", "forward", "backward",
                                   "optimizer"};

struct LiveAlloc {
    void *ptr;
    size_t bytes;
    Purpose purpose;
};

struct Ledger {
    std::vector<LiveAlloc> live;
    uint64_t live_by[P_COUNT] = {0};
    uint64_t live_total = 0;
    uint64_t peak_total = 0;
    uint64_t peak_by[P_COUNT] = {0};
    Phase phase = PH_SETUP;
    int step = 0;  // 1-based number of the update in progress, 0 in set-up
    int steps_done = 0;
    int forward_passes = 0;
    uint64_t params = 0;
    bool oom = false;
    uint64_t oom_requested = 0;
    Purpose oom_purpose = P_TEMPORARY;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    uint64_t oom_live_by[P_COUNT] = {0};
    uint64_t oom_live_total = 0;
};
static Ledger g_ledger;

static void print_ledger() {
    const Ledger &L = g_ledger;
    std::string s = "{\"program\":\"c07_adafactor_accum\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":4,\"forward_passes\":%d"
             ",\"params\":%llu,\"param_dtype\":\"bf16\",\"master_weights\":false"
             ",\"optimizer\":\"adafactor\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
             L.steps_done, L.forward_passes, (unsigned long long)L.params,
             (unsigned long long)L.peak_total);
    s += buf;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%llu", p ? "," : "", kPurposeName[p],
                 (unsigned long long)L.peak_by[p]);
        s += buf;
    }
    s += "},\"pools_at_peak\":[],\"oom\":";
    if (!L.oom) {
        s += "null";
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (L.oom_live_by[p] > L.oom_live_by[dom]) dom = p;
        snprintf(buf, sizeof buf,
                 "{\"requested_bytes\":%llu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d"
                 ",\"live_bytes\":%llu,\"live_by_purpose\":{",
                 (unsigned long long)L.oom_requested, kPurposeName[L.oom_purpose],
                 kPhaseName[L.oom_phase], L.oom_step,
                 (unsigned long long)L.oom_live_total);
        s += buf;
        for (int p = 0; p < P_COUNT; ++p) {
            snprintf(buf, sizeof buf, "%s\"%s\":%llu", p ? "," : "", kPurposeName[p],
                     (unsigned long long)L.oom_live_by[p]);
            s += buf;
        }
        snprintf(buf, sizeof buf, "},\"dominant\":\"%s\"}", kPurposeName[dom]);
        s += buf;
    }
    s += "}";
    printf("ledger %s\n", s.c_str());
    fflush(stdout);
}

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose, const char *what) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        Ledger &L = g_ledger;
        L.oom = true;
        L.oom_requested = bytes;
        L.oom_purpose = purpose;
        L.oom_phase = L.phase;
        L.oom_step = L.step;
        memcpy(L.oom_live_by, L.live_by, sizeof L.live_by);
        L.oom_live_total = L.live_total;
        fprintf(stderr, "out of memory allocating %zu bytes for %s\n", bytes, what);
        print_ledger();
        exit(3);
    }
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what,
                cudaGetErrorString(err));
        exit(1);
    }
    Ledger &L = g_ledger;
    L.live.push_back({p, bytes, purpose});
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak_total) {
        L.peak_total = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof L.live_by);
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    Ledger &L = g_ledger;
    for (size_t i = 0; i < L.live.size(); ++i) {
        if (L.live[i].ptr == p) {
            CUDA_CHECK(cudaFree(p));
            L.live_by[L.live[i].purpose] -= L.live[i].bytes;
            L.live_total -= L.live[i].bytes;
            L.live.erase(L.live.begin() + i);
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------------------------------
// Model configuration
// ---------------------------------------------------------------------------------------

static const int kLayers = 4;
static const int kDims[kLayers + 1] = {1024, 1024, 1024, 1024, 1000};
static const int kMicroBatch = 64;
static const int kAccumSteps = 4;
static const int kUpdates = 3;
static const float kLr = 1e-3f;
static const float kEps1 = 1e-30f;
static const float kClipThreshold = 1.0f;
static const float kDecayRate = -0.8f;

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

__device__ __forceinline__ float block_reduce_sum(float v) {
    __shared__ float warp_sums[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    int nwarps = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < nwarps) ? warp_sums[threadIdx.x] : 0.f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;  // valid in thread 0
}

__device__ __forceinline__ float block_reduce_max(float v) {
    __shared__ float warp_max[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) warp_max[warp] = v;
    __syncthreads();
    int nwarps = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < nwarps) ? warp_max[threadIdx.x] : -INFINITY;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    return v;
}

// y[b, j] = relu(y[b, j] + bias[j]) in place (bf16 activations, row-major [batch, n]).
__global__ void bias_relu_bf16(bf16 *y, const bf16 *bias, int batch, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * n) return;
    float v = __bfloat162float(y[idx]) + __bfloat162float(bias[idx % n]);
    y[idx] = __float2bfloat16(v > 0.f ? v : 0.f);
}

// logits[b, j] += bias[j] (fp32 logits).
__global__ void bias_add_f32(float *y, const bf16 *bias, int batch, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * n) return;
    y[idx] += __bfloat162float(bias[idx % n]);
}

// One block per sample: softmax cross-entropy. Writes dlogits = (softmax - onehot) / batch
// in bf16 and adds the sample's loss / (batch * accum) to *loss.
__global__ void softmax_xent_fwd_bwd(const float *logits, const int *labels, bf16 *dlogits,
                                     float *loss, int n, float inv_batch, float inv_accum) {
    int b = blockIdx.x;
    const float *row = logits + (size_t)b * n;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_reduce_max(m);
    __shared__ float s_max, s_sum;
    if (threadIdx.x == 0) s_max = m;
    __syncthreads();
    m = s_max;
    float s = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) s += __expf(row[j] - m);
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) s_sum = s;
    __syncthreads();
    s = s_sum;
    int label = labels[b];
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float p = __expf(row[j] - m) / s;
        dlogits[(size_t)b * n + j] = __float2bfloat16((p - (j == label ? 1.f : 0.f)) * inv_batch);
    }
    if (threadIdx.x == 0) {
        float l = logf(s) + m - row[label];
        atomicAdd(loss, l * inv_batch * inv_accum);
    }
}

// dx *= (h > 0) in place: ReLU backward using the layer's kept (post-ReLU) output.
__global__ void relu_backward_bf16(bf16 *dx, const bf16 *h, int count) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= count) return;
    if (!(__bfloat162float(h[idx]) > 0.f)) dx[idx] = __float2bfloat16(0.f);
}

// db_acc[j] += sum_b dy[b, j]: one thread per output feature.
__global__ void bias_grad_accum(float *db_acc, const bf16 *dy, int batch, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float s = 0.f;
    for (int b = 0; b < batch; ++b) s += __bfloat162float(dy[(size_t)b * n + j]);
    db_acc[j] += s;
}

// --- Adafactor, factored (weight matrix [rows, cols] row-major, grad accumulator fp32) ---

// One block per row: r[i] = beta2 r[i] + (1 - beta2) mean_j(g_ij^2 + eps1).
__global__ void adafactor_row_stats(const float *g_acc, float *r, int rows, int cols,
                                    float grad_scale, float beta2, float eps1) {
    int i = blockIdx.x;
    const float *g = g_acc + (size_t)i * cols;
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = g[j] * grad_scale;
        s += v * v + eps1;
    }
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) r[i] = beta2 * r[i] + (1.f - beta2) * (s / cols);
}

// One thread per column: c[j] = beta2 c[j] + (1 - beta2) mean_i(g_ij^2 + eps1).
__global__ void adafactor_col_stats(const float *g_acc, float *c, int rows, int cols,
                                    float grad_scale, float beta2, float eps1) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0.f;
    for (int i = 0; i < rows; ++i) {
        float v = g_acc[(size_t)i * cols + j] * grad_scale;
        s += v * v + eps1;
    }
    c[j] = beta2 * c[j] + (1.f - beta2) * (s / rows);
}

// Single block: stats[0] = mean(r).
__global__ void adafactor_row_mean(const float *r, int rows, float *stats) {
    float s = 0.f;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) s += r[i];
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) stats[0] = s / rows;
}

__device__ __forceinline__ float adafactor_update(float g, float ri, float cj, float r_mean) {
    // update = g / sqrt(v_hat), v_hat_ij = r_i c_j / mean(r)
    return g * rsqrtf(ri / r_mean) * rsqrtf(cj);
}

// stats[1] += sum of update^2 (for the RMS clipping of the update).
__global__ void adafactor_update_sumsq(const float *g_acc, const float *r, const float *c,
                                       int rows, int cols, float grad_scale, float *stats) {
    size_t n = (size_t)rows * cols;
    float r_mean = stats[0];
    float s = 0.f;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(idx / cols), j = (int)(idx % cols);
        float u = adafactor_update(g_acc[idx] * grad_scale, r[i], c[j], r_mean);
        s += u * u;
    }
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) atomicAdd(&stats[1], s);
}

// w -= lr * update / max(1, rms(update) / clip), in bf16 (no master copy).
__global__ void adafactor_apply_matrix(bf16 *w, const float *g_acc, const float *r,
                                       const float *c, int rows, int cols, float grad_scale,
                                       const float *stats, float lr, float clip) {
    size_t n = (size_t)rows * cols;
    float r_mean = stats[0];
    float rms = sqrtf(stats[1] / (float)n);
    float denom = fmaxf(1.f, rms / clip);
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
         idx += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(idx / cols), j = (int)(idx % cols);
        float u = adafactor_update(g_acc[idx] * grad_scale, r[i], c[j], r_mean) / denom;
        w[idx] = __float2bfloat16(__bfloat162float(w[idx]) - lr * u);
    }
}

// --- Adafactor, unfactored (bias vectors, full fp32 second moment) ---

__global__ void adafactor_vec_stats(const float *g_acc, float *v, int n, float grad_scale,
                                    float beta2, float eps1, float *stats) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    if (j < n) {
        float g = g_acc[j] * grad_scale;
        float vj = beta2 * v[j] + (1.f - beta2) * (g * g + eps1);
        v[j] = vj;
        float u = g * rsqrtf(vj);
        s = u * u;
    }
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) atomicAdd(&stats[1], s);
}

__global__ void adafactor_apply_vec(bf16 *w, const float *g_acc, const float *v, int n,
                                    float grad_scale, const float *stats, float lr,
                                    float clip) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float rms = sqrtf(stats[1] / (float)n);
    float denom = fmaxf(1.f, rms / clip);
    float u = g_acc[j] * grad_scale * rsqrtf(v[j]) / denom;
    w[j] = __float2bfloat16(__bfloat162float(w[j]) - lr * u);
}

// ---------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------

struct Layer {
    int in, out;
    bf16 *w;        // [out, in] row-major, bf16 (the only copy of the weights)
    bf16 *b;        // [out]
    float *dw_acc;  // [out, in] fp32 gradient accumulator
    float *db_acc;  // [out]
    float *row_sq;  // [out] factored second moment (rows)
    float *col_sq;  // [in]  factored second moment (columns)
    float *b_sq;    // [out] full second moment of the bias
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t rng_u32() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static inline float rng_uniform() { return (rng_u32() + 0.5f) * (1.0f / 2147483648.0f); }
static inline float rng_normal() {
    float u1 = rng_uniform(), u2 = rng_uniform();
    return sqrtf(-2.f * logf(u1)) * cosf(6.28318530718f * u2);
}

static inline unsigned blocks_for(size_t n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}

// Synthetic data set: each class has a fixed random prototype; a sample is its class's
// prototype plus noise.
struct DataSet {
    int dim, classes;
    std::vector<float> prototypes;
    void init(int d, int c) {
        dim = d;
        classes = c;
        prototypes.resize((size_t)d * c);
        for (auto &v : prototypes) v = rng_normal();
    }
    void batch(int n, std::vector<bf16> &x, std::vector<int> &y) {
        x.resize((size_t)n * dim);
        y.resize(n);
        for (int b = 0; b < n; ++b) {
            int c = (int)(rng_u32() % classes);
            y[b] = c;
            for (int k = 0; k < dim; ++k)
                x[(size_t)b * dim + k] =
                    __float2bfloat16(prototypes[(size_t)c * dim + k] + 0.5f * rng_normal());
        }
    }
};

int main() {
    cublasHandle_t handle;
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));

    // ---- set-up: parameters, gradient accumulators, optimizer state ----
    g_ledger.phase = PH_SETUP;
    Layer layers[kLayers];
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = layers[l];
        L.in = kDims[l];
        L.out = kDims[l + 1];
        size_t wn = (size_t)L.in * L.out;
        L.w = dev_alloc<bf16>(wn, P_WEIGHTS, "weight");
        L.b = dev_alloc<bf16>(L.out, P_WEIGHTS, "bias");
        g_ledger.params += wn + L.out;

        std::vector<bf16> hw(wn), hb(L.out);
        float bound = 1.f / sqrtf((float)L.in);  // PyTorch nn.Linear default init
        for (size_t i = 0; i < wn; ++i)
            hw[i] = __float2bfloat16((2.f * rng_uniform() - 1.f) * bound);
        for (int i = 0; i < L.out; ++i)
            hb[i] = __float2bfloat16((2.f * rng_uniform() - 1.f) * bound);
        CUDA_CHECK(cudaMemcpy(L.w, hw.data(), wn * sizeof(bf16), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(L.b, hb.data(), L.out * sizeof(bf16), cudaMemcpyHostToDevice));
    }
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = layers[l];
        size_t wn = (size_t)L.in * L.out;
        L.dw_acc = dev_alloc<float>(wn, P_GRADIENTS, "weight grad accumulator");
        L.db_acc = dev_alloc<float>(L.out, P_GRADIENTS, "bias grad accumulator");
        CUDA_CHECK(cudaMemset(L.dw_acc, 0, wn * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.db_acc, 0, L.out * sizeof(float)));
    }
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = layers[l];
        L.row_sq = dev_alloc<float>(L.out, P_OPTIMIZER, "adafactor row stats");
        L.col_sq = dev_alloc<float>(L.in, P_OPTIMIZER, "adafactor col stats");
        L.b_sq = dev_alloc<float>(L.out, P_OPTIMIZER, "adafactor bias second moment");
        CUDA_CHECK(cudaMemset(L.row_sq, 0, L.out * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.col_sq, 0, L.in * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.b_sq, 0, L.out * sizeof(float)));
    }

    DataSet data;
    data.init(kDims[0], kDims[kLayers]);
    std::vector<bf16> hx;
    std::vector<int> hy;

    const float one = 1.f, zero = 0.f;
    const int B = kMicroBatch;
    const float grad_scale = 1.f / kAccumSteps;

    for (int t = 1; t <= kUpdates; ++t) {
        g_ledger.step = t;
        g_ledger.phase = PH_STEP_START;
        float *d_loss = dev_alloc<float>(1, P_TEMPORARY, "loss");
        CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));

        for (int mb = 0; mb < kAccumSteps; ++mb) {
            // ---------------- forward ----------------
            g_ledger.phase = PH_FORWARD;
            data.batch(B, hx, hy);
            bf16 *x = dev_alloc<bf16>((size_t)B * kDims[0], P_ACTIVATIONS, "input batch");
            int *labels = dev_alloc<int>(B, P_ACTIVATIONS, "labels");
            CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(bf16),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(labels, hy.data(), B * sizeof(int),
                                  cudaMemcpyHostToDevice));

            bf16 *h[kLayers];  // h[l] = output of hidden layer l (post-ReLU), kept for backward
            float *logits = nullptr;
            const bf16 *in = x;
            for (int l = 0; l < kLayers; ++l) {
                Layer &L = layers[l];
                // Row-major Y[B, out] = X[B, in] W^T  <=>  column-major Y^T = W^T(op T) X^T
                if (l < kLayers - 1) {
                    h[l] = dev_alloc<bf16>((size_t)B * L.out, P_ACTIVATIONS, "hidden");
                    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, L.out, B, L.in,
                                              &one, L.w, CUDA_R_16BF, L.in, in, CUDA_R_16BF,
                                              L.in, &zero, h[l], CUDA_R_16BF, L.out,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                    bias_relu_bf16<<<blocks_for((size_t)B * L.out, 256), 256>>>(h[l], L.b, B,
                                                                                 L.out);
                    KERNEL_CHECK();
                    in = h[l];
                } else {
                    h[l] = nullptr;
                    logits = dev_alloc<float>((size_t)B * L.out, P_ACTIVATIONS, "logits");
                    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, L.out, B, L.in,
                                              &one, L.w, CUDA_R_16BF, L.in, in, CUDA_R_16BF,
                                              L.in, &zero, logits, CUDA_R_32F, L.out,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                    bias_add_f32<<<blocks_for((size_t)B * L.out, 256), 256>>>(logits, L.b, B,
                                                                               L.out);
                    KERNEL_CHECK();
                }
            }
            g_ledger.forward_passes++;

            // ---------------- backward ----------------
            g_ledger.phase = PH_BACKWARD;
            const int n_cls = kDims[kLayers];
            bf16 *dy = dev_alloc<bf16>((size_t)B * n_cls, P_TEMPORARY, "dlogits");
            softmax_xent_fwd_bwd<<<B, 256>>>(logits, labels, dy, d_loss, n_cls, 1.f / B,
                                             grad_scale);
            KERNEL_CHECK();
            dev_free(logits);
            dev_free(labels);

            for (int l = kLayers - 1; l >= 0; --l) {
                Layer &L = layers[l];
                const bf16 *xin = (l == 0) ? x : h[l - 1];
                // dW[out, in] += dY^T X  <=>  column-major dW^T[in, out] += X^T[in,B] dY[B,out]
                CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, B,
                                          &one, xin, CUDA_R_16BF, L.in, dy, CUDA_R_16BF, L.out,
                                          &one, L.dw_acc, CUDA_R_32F, L.in, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
                bias_grad_accum<<<blocks_for(L.out, 256), 256>>>(L.db_acc, dy, B, L.out);
                KERNEL_CHECK();
                if (l > 0) {
                    // dX[B, in] = dY[B, out] W[out, in]  <=>  column-major dX^T = W^T(N) dY^T
                    bf16 *dx = dev_alloc<bf16>((size_t)B * L.in, P_TEMPORARY, "dhidden");
                    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, L.in, B, L.out,
                                              &one, L.w, CUDA_R_16BF, L.in, dy, CUDA_R_16BF,
                                              L.out, &zero, dx, CUDA_R_16BF, L.in,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                    relu_backward_bf16<<<blocks_for((size_t)B * L.in, 256), 256>>>(
                        dx, h[l - 1], B * L.in);
                    KERNEL_CHECK();
                    dev_free(dy);
                    dev_free(h[l - 1]);
                    dy = dx;
                } else {
                    dev_free(dy);
                    dev_free(x);
                }
            }
        }

        // ---------------- optimizer (Adafactor) ----------------
        g_ledger.phase = PH_OPTIMIZER;
        const float beta2 = 1.f - powf((float)t, kDecayRate);
        // Per tensor: [mean of row stats, sum of update^2]
        float *stats = dev_alloc<float>(4 * kLayers, P_TEMPORARY, "adafactor scratch");
        CUDA_CHECK(cudaMemset(stats, 0, 4 * kLayers * sizeof(float)));
        for (int l = 0; l < kLayers; ++l) {
            Layer &L = layers[l];
            float *ws = stats + 4 * l;      // weight matrix
            float *bs = stats + 4 * l + 2;  // bias
            size_t wn = (size_t)L.in * L.out;
            adafactor_row_stats<<<L.out, 256>>>(L.dw_acc, L.row_sq, L.out, L.in, grad_scale,
                                                beta2, kEps1);
            KERNEL_CHECK();
            adafactor_col_stats<<<blocks_for(L.in, 256), 256>>>(L.dw_acc, L.col_sq, L.out,
                                                                 L.in, grad_scale, beta2, kEps1);
            KERNEL_CHECK();
            adafactor_row_mean<<<1, 1024>>>(L.row_sq, L.out, ws);
            KERNEL_CHECK();
            adafactor_update_sumsq<<<256, 256>>>(L.dw_acc, L.row_sq, L.col_sq, L.out, L.in,
                                                 grad_scale, ws);
            KERNEL_CHECK();
            adafactor_apply_matrix<<<blocks_for(wn, 256), 256>>>(L.w, L.dw_acc, L.row_sq,
                                                                 L.col_sq, L.out, L.in,
                                                                 grad_scale, ws, kLr,
                                                                 kClipThreshold);
            KERNEL_CHECK();
            adafactor_vec_stats<<<blocks_for(L.out, 256), 256>>>(L.db_acc, L.b_sq, L.out,
                                                                  grad_scale, beta2, kEps1, bs);
            KERNEL_CHECK();
            adafactor_apply_vec<<<blocks_for(L.out, 256), 256>>>(L.b, L.db_acc, L.b_sq, L.out,
                                                                  grad_scale, bs, kLr,
                                                                  kClipThreshold);
            KERNEL_CHECK();
        }
        // Zero the accumulators for the next update.
        for (int l = 0; l < kLayers; ++l) {
            Layer &L = layers[l];
            CUDA_CHECK(cudaMemset(L.dw_acc, 0, (size_t)L.in * L.out * sizeof(float)));
            CUDA_CHECK(cudaMemset(L.db_acc, 0, L.out * sizeof(float)));
        }
        float loss = 0.f;
        CUDA_CHECK(cudaMemcpy(&loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(stats);
        dev_free(d_loss);
        g_ledger.steps_done = t;
        printf("update %d: loss %.4f (beta2 %.4f)\n", t, loss, beta2);
    }

    CUDA_CHECK(cudaDeviceSynchronize());
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = layers[l];
        dev_free(L.row_sq);
        dev_free(L.col_sq);
        dev_free(L.b_sq);
        dev_free(L.dw_acc);
        dev_free(L.db_acc);
        dev_free(L.w);
        dev_free(L.b);
    }
    CUBLAS_CHECK(cublasDestroy(handle));
    print_ledger();
    return 0;
}

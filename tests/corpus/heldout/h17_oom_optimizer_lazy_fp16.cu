// h17_oom_optimizer_lazy_fp16.cu
//
// Spec: an fp16 mixed-precision trainer with fp32 master weights for a small per-token
// tagging model: a 30000 x 1024 token embedding followed by 4 linear layers
// (1024->2048->2048->1024->512 tags, ReLU between them, bias on every layer), trained
// with softmax cross-entropy, AdamW and dynamic loss scaling (scale 65536, halved on an
// overflow and the step skipped, doubled after 2000 clean steps). The forward pass reads
// fp16 working copies of the weights; every GEMM is a cublasGemmEx on fp16 operands with
// fp32 accumulation, into a workspace the program hands to cuBLAS. Gradients are fp16 in
// one flat arena (so unscaling and the overflow check are one pass); the optimizer
// unscales them, updates the fp32 masters and rewrites the fp16 copies. Like PyTorch's
// Adam, the optimizer creates its state lazily: each tensor's exp_avg and exp_avg_sq are
// cudaMalloc'ed the first time the optimizer reaches that tensor in step 1. The device is
// made small (see corpus-env), so in step 1's optimizer phase, after the embedding's and
// fc1's moments and fc2.weight's exp_avg already exist, the cudaMalloc of fc2.weight's
// exp_avg_sq fails; the program prints its ledger with the OOM (phase optimizer, step 1)
// and exits with status 3.
//
// corpus-env: ANATOMIST_SIM_MEMORY=612MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <map>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                    cublasGetStatusString(st_));                                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Device-memory ledger: every cudaMalloc / cudaFree of the program goes through here.
// ---------------------------------------------------------------------------------------
enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

struct Ledger {
    std::map<void *, std::pair<size_t, int>> live;
    unsigned long long live_by[P_COUNT] = {0};
    unsigned long long live_total = 0;
    unsigned long long peak = 0;
    unsigned long long peak_by[P_COUNT] = {0};
    const char *phase = "setup";
    int step = 0;
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
};
static Ledger g_ledger;

static void print_purpose_obj(const unsigned long long *by) {
    printf("{");
    for (int i = 0; i < P_COUNT; ++i)
        printf("%s\"%s\":%llu", i ? "," : "", kPurposeName[i], by[i]);
    printf("}");
}

static void print_ledger(bool oom, size_t req, int req_purpose) {
    const Ledger &L = g_ledger;
    printf("ledger {\"program\":\"h17_oom_optimizer_lazy_fp16\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp16\",\"master_weights\":true,"
           "\"optimizer\":\"adamw\",\"peak_bytes\":%llu,\"peak_by_purpose\":",
           L.steps_done, L.forward_passes, L.params, L.peak);
    print_purpose_obj(L.peak_by);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (!oom) {
        printf("null}\n");
    } else {
        int dom = 0;
        for (int i = 1; i < P_COUNT; ++i)
            if (L.live_by[i] > L.live_by[dom]) dom = i;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%llu,\"live_by_purpose\":",
               req, kPurposeName[req_purpose], L.phase, L.step, L.live_total);
        print_purpose_obj(L.live_by);
        printf(",\"dominant\":\"%s\"}}\n", kPurposeName[dom]);
    }
    fflush(stdout);
}

template <typename T>
static void dev_alloc(T **ptr, size_t bytes, Purpose purpose, const char *what) {
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        fprintf(stderr, "CUDA out of memory allocating %zu bytes for %s (step %d, %s)\n",
                bytes, what, g_ledger.step, g_ledger.phase);
        print_ledger(true, bytes, purpose);
        exit(3);
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what,
                cudaGetErrorString(e));
        exit(1);
    }
    Ledger &L = g_ledger;
    L.live[p] = std::make_pair(bytes, (int)purpose);
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak) {
        L.peak = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof(L.peak_by));
    }
    *ptr = static_cast<T *>(p);
}

template <typename T>
static void dev_free(T *&ptr) {
    if (!ptr) return;
    void *p = (void *)ptr;
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) {
        fprintf(stderr, "dev_free of an unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live_by[it->second.second] -= it->second.first;
    g_ledger.live_total -= it->second.first;
    g_ledger.live.erase(it);
    ptr = nullptr;
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t hash_u32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__global__ void init_uniform_kernel(float *w, size_t n, uint32_t seed, float bound) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = hash_u32((uint32_t)i * 0x9e3779b9U ^ hash_u32(seed + (uint32_t)(i >> 32)));
        float u = (h >> 8) * (1.0f / 16777216.0f);  // [0,1)
        w[i] = (2.0f * u - 1.0f) * bound;
    }
}

__global__ void cast_f32_f16_kernel(const float *src, __half *dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2half(src[i]);
}

// out[t, :] = E[tok[t], :]
__global__ void embedding_fwd_kernel(const int *tok, const __half *E, __half *out, int d) {
    int t = blockIdx.x;
    const __half *row = E + (size_t)tok[t] * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x) out[(size_t)t * d + j] = row[j];
}

// dE[tok[t], :] += dx[t, :]
__global__ void embedding_bwd_kernel(const int *tok, const __half *dx, __half *dE, int d) {
    int t = blockIdx.x;
    __half *row = dE + (size_t)tok[t] * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x) atomicAdd(row + j, dx[(size_t)t * d + j]);
}

// y[r, c] = act(y[r, c] + b[c]), row-major [rows, cols]
__global__ void bias_act_kernel(__half *y, const __half *b, int rows, int cols, int relu) {
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __half2float(y[i]) + __half2float(b[i % cols]);
        if (relu) v = fmaxf(v, 0.0f);
        y[i] = __float2half(v);
    }
}

// dy *= (y > 0)
__global__ void relu_bwd_kernel(__half *dy, const __half *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!(__half2float(y[i]) > 0.0f)) dy[i] = __float2half(0.0f);
}

// db[c] = sum_r dy[r, c]
__global__ void bias_grad_kernel(const __half *dy, __half *db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += __half2float(dy[(size_t)r * cols + c]);
    db[c] = __float2half(acc);
}

__device__ float block_reduce(float v, bool is_max) {
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < nw) ? sh[threadIdx.x] : (is_max ? -INFINITY : 0.0f);
    if (wid == 0) {
        for (int o = 16; o > 0; o >>= 1) {
            float w = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, w) : v + w;
        }
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

// One block per row: loss_sum += (logsumexp(row) - row[label]) / rows
__global__ void xent_fwd_kernel(const __half *logits, const int *labels, float *loss_sum,
                                int rows, int cols) {
    int r = blockIdx.x;
    const __half *x = logits + (size_t)r * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, __half2float(x[j]));
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(__half2float(x[j]) - m);
    s = block_reduce(s, false);
    if (threadIdx.x == 0)
        atomicAdd(loss_sum, (logf(s) + m - __half2float(x[labels[r]])) / rows);
}

// dlogits = scale * (softmax(row) - onehot(label)) / rows
__global__ void xent_bwd_kernel(const __half *logits, const int *labels, __half *dlogits,
                                int rows, int cols, float loss_scale) {
    int r = blockIdx.x;
    const __half *x = logits + (size_t)r * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, __half2float(x[j]));
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(__half2float(x[j]) - m);
    s = block_reduce(s, false);
    float k = loss_scale / rows;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float p = __expf(__half2float(x[j]) - m) / s;
        dlogits[(size_t)r * cols + j] = __float2half(k * (p - (j == labels[r] ? 1.0f : 0.0f)));
    }
}

__global__ void check_finite_kernel(const __half *g, size_t n, int *found_inf) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(__half2float(g[i]))) *found_inf = 1;
}

__global__ void adamw_kernel(float *master, __half *w16, const __half *g, float *m, float *v,
                             size_t n, float lr, float beta1, float beta2, float eps, float wd,
                             float inv_scale, float bc1, float bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float grad = __half2float(g[i]) * inv_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * grad;
        float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
        m[i] = mi;
        v[i] = vi;
        float p = master[i] * (1.0f - lr * wd);
        p -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
        master[i] = p;
        w16[i] = __float2half(p);
    }
}

static unsigned grid_for(size_t n, unsigned block = 256) {
    size_t g = (n + block - 1) / block;
    return (unsigned)(g > 2048 ? 2048 : (g ? g : 1));
}

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------
static const int kVocab = 30000;
static const int kDModel = 1024;
static const int kTags = 512;
static const int kBatch = 8;
static const int kSeq = 64;
static const int kTokens = kBatch * kSeq;
static const int kLayers = 4;
static const int kDims[kLayers + 1] = {kDModel, 2048, 2048, 1024, kTags};
static const int kTrainSteps = 20;

struct Param {
    char name[32];
    size_t numel;
    float *master = nullptr;   // fp32 master copy
    __half *w16 = nullptr;     // fp16 working copy read by forward
    __half *grad = nullptr;    // view into the gradient arena
    float *exp_avg = nullptr;  // Adam state, created lazily at the first step
    float *exp_avg_sq = nullptr;
    bool decay = true;
};

struct LossScaler {
    float scale = 65536.0f;
    int good_steps = 0;
    int growth_interval = 2000;
    void update(bool overflow) {
        if (overflow) {
            scale *= 0.5f;
            good_steps = 0;
        } else if (++good_steps == growth_interval) {
            scale *= 2.0f;
            good_steps = 0;
        }
    }
};

// Row-major Y[rows, out] = X[rows, in] * W[out, in]^T (beta = 0)
static void linear_fwd(cublasHandle_t h, const __half *X, const __half *W, __half *Y, int rows,
                       int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, W, CUDA_R_16F,
                              in, X, CUDA_R_16F, in, &zero, Y, CUDA_R_16F, out,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// dX[rows, in] = dY[rows, out] * W[out, in]
static void linear_bwd_data(cublasHandle_t h, const __half *dY, const __half *W, __half *dX,
                            int rows, int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &one, W, CUDA_R_16F,
                              in, dY, CUDA_R_16F, out, &zero, dX, CUDA_R_16F, in,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// dW[out, in] = dY[rows, out]^T * X[rows, in]
static void linear_bwd_weight(cublasHandle_t h, const __half *dY, const __half *X, __half *dW,
                              int rows, int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &one, X, CUDA_R_16F,
                              in, dY, CUDA_R_16F, out, &zero, dW, CUDA_R_16F, in,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

int main() {
    Ledger &L = g_ledger;
    L.phase = "setup";
    L.step = 0;

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));
    const size_t kWorkspaceBytes = 4u << 20;
    void *workspace = nullptr;
    dev_alloc(&workspace, kWorkspaceBytes, P_FUNCTIONALITY, "cublas workspace");
    CUBLAS_CHECK(cublasSetWorkspace(blas, workspace, kWorkspaceBytes));

    // Parameters: embedding, then (weight, bias) per linear layer.
    std::vector<Param> params;
    {
        Param e;
        snprintf(e.name, sizeof e.name, "embedding.weight");
        e.numel = (size_t)kVocab * kDModel;
        e.decay = false;
        params.push_back(e);
        for (int l = 0; l < kLayers; ++l) {
            Param w, b;
            snprintf(w.name, sizeof w.name, "fc%d.weight", l + 1);
            w.numel = (size_t)kDims[l + 1] * kDims[l];
            snprintf(b.name, sizeof b.name, "fc%d.bias", l + 1);
            b.numel = (size_t)kDims[l + 1];
            b.decay = false;
            params.push_back(w);
            params.push_back(b);
        }
    }
    size_t grad_numel = 0;
    for (size_t i = 0; i < params.size(); ++i) {
        Param &p = params[i];
        dev_alloc(&p.master, p.numel * sizeof(float), P_WEIGHTS, p.name);
        dev_alloc(&p.w16, p.numel * sizeof(__half), P_WEIGHTS, p.name);
        bool is_bias = strstr(p.name, ".bias") != nullptr;
        if (is_bias) {
            CUDA_CHECK(cudaMemset(p.master, 0, p.numel * sizeof(float)));
        } else {
            size_t fan_in = (i == 0) ? kDModel : (size_t)kDims[(i - 1) / 2];
            float bound = (i == 0) ? 0.02f : 1.0f / sqrtf((float)fan_in);
            init_uniform_kernel<<<grid_for(p.numel), 256>>>(p.master, p.numel, 1234u + i, bound);
            LAUNCH_CHECK();
        }
        cast_f32_f16_kernel<<<grid_for(p.numel), 256>>>(p.master, p.w16, p.numel);
        LAUNCH_CHECK();
        grad_numel += p.numel;
        L.params += (long long)p.numel;
    }
    // One flat fp16 gradient buffer; each parameter's grad is a slice of it.
    __half *grad_arena = nullptr;
    dev_alloc(&grad_arena, grad_numel * sizeof(__half), P_GRADIENTS, "gradient arena");
    {
        size_t off = 0;
        for (Param &p : params) {
            p.grad = grad_arena + off;
            off += p.numel;
        }
    }
    int *found_inf = nullptr;
    dev_alloc(&found_inf, sizeof(int), P_FUNCTIONALITY, "found_inf flag");
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("model: %lld parameters (%zu tensors), fp16 weights with fp32 masters\n", L.params,
           params.size());

    LossScaler scaler;
    const float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    int adam_t = 0;
    std::vector<int> h_tokens(kTokens), h_labels(kTokens);
    uint64_t rng = 0x243F6A8885A308D3ULL;

    for (int step = 1; step <= kTrainSteps; ++step) {
        L.step = step;

        // ---- step start: batch to device, zero grads
        L.phase = "step_start";
        for (int t = 0; t < kTokens; ++t) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            h_tokens[t] = (int)((rng >> 33) % kVocab);
            h_labels[t] = h_tokens[t] % kTags;
        }
        int *d_tokens = nullptr, *d_labels = nullptr;
        dev_alloc(&d_tokens, kTokens * sizeof(int), P_ACTIVATIONS, "tokens");
        dev_alloc(&d_labels, kTokens * sizeof(int), P_ACTIVATIONS, "labels");
        CUDA_CHECK(cudaMemcpy(d_tokens, h_tokens.data(), kTokens * sizeof(int),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_labels, h_labels.data(), kTokens * sizeof(int),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemsetAsync(grad_arena, 0, grad_numel * sizeof(__half)));

        // ---- forward
        L.phase = "forward";
        __half *acts[kLayers + 1] = {nullptr};  // acts[0] = embedding out, acts[4] = logits
        dev_alloc(&acts[0], (size_t)kTokens * kDModel * sizeof(__half), P_ACTIVATIONS, "x0");
        embedding_fwd_kernel<<<kTokens, 256>>>(d_tokens, params[0].w16, acts[0], kDModel);
        LAUNCH_CHECK();
        for (int l = 0; l < kLayers; ++l) {
            const Param &W = params[1 + 2 * l], &B = params[2 + 2 * l];
            dev_alloc(&acts[l + 1], (size_t)kTokens * kDims[l + 1] * sizeof(__half),
                      P_ACTIVATIONS, l + 1 < kLayers ? "hidden" : "logits");
            linear_fwd(blas, acts[l], W.w16, acts[l + 1], kTokens, kDims[l], kDims[l + 1]);
            size_t n = (size_t)kTokens * kDims[l + 1];
            bias_act_kernel<<<grid_for(n), 256>>>(acts[l + 1], B.w16, kTokens, kDims[l + 1],
                                                  l + 1 < kLayers ? 1 : 0);
            LAUNCH_CHECK();
        }
        float *d_loss = nullptr;
        dev_alloc(&d_loss, sizeof(float), P_TEMPORARY, "loss");
        CUDA_CHECK(cudaMemsetAsync(d_loss, 0, sizeof(float)));
        xent_fwd_kernel<<<kTokens, 256>>>(acts[kLayers], d_labels, d_loss, kTokens, kTags);
        LAUNCH_CHECK();
        float h_loss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(d_loss);
        L.forward_passes++;

        // ---- backward (of loss * scale)
        L.phase = "backward";
        __half *dout = nullptr;
        dev_alloc(&dout, (size_t)kTokens * kTags * sizeof(__half), P_TEMPORARY, "dlogits");
        xent_bwd_kernel<<<kTokens, 256>>>(acts[kLayers], d_labels, dout, kTokens, kTags,
                                          scaler.scale);
        LAUNCH_CHECK();
        for (int l = kLayers - 1; l >= 0; --l) {
            Param &W = params[1 + 2 * l], &B = params[2 + 2 * l];
            int in = kDims[l], out = kDims[l + 1];
            linear_bwd_weight(blas, dout, acts[l], W.grad, kTokens, in, out);
            bias_grad_kernel<<<(out + 255) / 256, 256>>>(dout, B.grad, kTokens, out);
            LAUNCH_CHECK();
            __half *din = nullptr;
            dev_alloc(&din, (size_t)kTokens * in * sizeof(__half), P_TEMPORARY,
                      l > 0 ? "dhidden" : "dx0");
            linear_bwd_data(blas, dout, W.w16, din, kTokens, in, out);
            dev_free(dout);
            if (l > 0) {
                size_t n = (size_t)kTokens * in;
                relu_bwd_kernel<<<grid_for(n), 256>>>(din, acts[l], n);
                LAUNCH_CHECK();
            }
            dout = din;
        }
        embedding_bwd_kernel<<<kTokens, 256>>>(d_tokens, dout, params[0].grad, kDModel);
        LAUNCH_CHECK();
        dev_free(dout);
        for (int l = kLayers; l >= 0; --l) dev_free(acts[l]);

        // ---- optimizer: unscale + overflow check, then AdamW with lazily created state
        L.phase = "optimizer";
        CUDA_CHECK(cudaMemsetAsync(found_inf, 0, sizeof(int)));
        check_finite_kernel<<<grid_for(grad_numel), 256>>>(grad_arena, grad_numel, found_inf);
        LAUNCH_CHECK();
        int h_inf = 0;
        CUDA_CHECK(cudaMemcpy(&h_inf, found_inf, sizeof(int), cudaMemcpyDeviceToHost));
        bool overflow = h_inf != 0;
        if (!overflow) {
            ++adam_t;
            float bc1 = 1.0f - powf(beta1, (float)adam_t);
            float bc2 = 1.0f - powf(beta2, (float)adam_t);
            float inv_scale = 1.0f / scaler.scale;
            char what[64];
            for (Param &p : params) {
                if (!p.exp_avg) {
                    snprintf(what, sizeof what, "%s exp_avg", p.name);
                    dev_alloc(&p.exp_avg, p.numel * sizeof(float), P_OPTIMIZER, what);
                    CUDA_CHECK(cudaMemsetAsync(p.exp_avg, 0, p.numel * sizeof(float)));
                }
                if (!p.exp_avg_sq) {
                    snprintf(what, sizeof what, "%s exp_avg_sq", p.name);
                    dev_alloc(&p.exp_avg_sq, p.numel * sizeof(float), P_OPTIMIZER, what);
                    CUDA_CHECK(cudaMemsetAsync(p.exp_avg_sq, 0, p.numel * sizeof(float)));
                }
                adamw_kernel<<<grid_for(p.numel), 256>>>(p.master, p.w16, p.grad, p.exp_avg,
                                                         p.exp_avg_sq, p.numel, lr, beta1,
                                                         beta2, eps, p.decay ? wd : 0.0f,
                                                         inv_scale, bc1, bc2);
                LAUNCH_CHECK();
            }
            L.steps_done++;
        }
        scaler.update(overflow);
        dev_free(d_tokens);
        dev_free(d_labels);
        CUDA_CHECK(cudaDeviceSynchronize());
        printf("step %d loss %.4f loss_scale %.0f%s\n", step, h_loss, scaler.scale,
               overflow ? " (overflow, skipped)" : "");
    }

    for (Param &p : params) {
        dev_free(p.exp_avg);
        dev_free(p.exp_avg_sq);
        dev_free(p.w16);
        dev_free(p.master);
    }
    dev_free(grad_arena);
    dev_free(found_inf);
    dev_free(workspace);
    CUBLAS_CHECK(cublasDestroy(blas));
    print_ledger(false, 0, 0);
    return 0;
}

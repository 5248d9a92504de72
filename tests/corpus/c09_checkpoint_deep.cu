// c09_checkpoint_deep: a deep fp32 MLP trained with activation checkpointing and AdamW.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// A 16-layer multilayer perceptron (512 inputs, fifteen 512-wide hidden layers with ReLU,
// a 100-class output layer, softmax cross-entropy) is trained in fp32 for 3 optimizer
// steps at batch 128 with activation checkpointing in 4 segments of 4 layers. Forward
// keeps only each segment's input (the checkpoints: the input batch, and the outputs of
// layers 4, 8 and 12); every other layer output is allocated, consumed by the next layer
// and freed at once. Backward walks the segments from the last: it recomputes the
// segment's layer outputs from its checkpoint into freshly allocated buffers, runs the
// segment's backward (gradients with respect to activations allocated and freed as they
// are consumed), then frees the recomputed buffers and the checkpoint that is no longer
// needed. Every weight and bias is its own cudaMalloc, with a persistent gradient buffer
// zeroed by cudaMemset each step; both AdamW moments are allocated before the first step;
// the update is one kernel launch per parameter tensor. Matmuls use cublasSgemm with the
// handle's default workspace. The input batch and labels sit in persistent buffers
// refilled from the host every step. Kernels have opaque names (k1..k6).
// The last stdout line is the corpus ledger (tests/corpus/LEDGER.md).

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ----------------------------------------------------------------------------------------
// Ledger: every device allocation goes through dev_alloc / dev_free.

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};
enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char* kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
    std::map<void*, std::pair<size_t, Purpose>> live;
    unsigned long long live_by[P_COUNT] = {0};
    unsigned long long live_total = 0;
    unsigned long long peak = 0;
    unsigned long long peak_by[P_COUNT] = {0};
    Phase phase = PH_SETUP;
    int step = 0;
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
};
static Ledger g_ledger;

static void print_ledger(const char* oom_json) {
    const Ledger& L = g_ledger;
    std::string s = "{\"program\":\"c09_checkpoint_deep\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld"
             ",\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\""
             ",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
             L.steps_done, L.forward_passes, L.params, L.peak);
    s += buf;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
        s += buf;
    }
    s += "},\"pools_at_peak\":[],\"oom\":";
    s += oom_json ? oom_json : "null";
    s += "}";
    printf("ledger %s\n", s.c_str());
    fflush(stdout);
}

static void* dev_alloc(size_t bytes, Purpose purpose) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        Ledger& L = g_ledger;
        int dom = 0;
        for (int q = 1; q < P_COUNT; ++q)
            if (L.live_by[q] > L.live_by[dom]) dom = q;
        std::string o;
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d"
                 ",\"live_bytes\":%llu,\"live_by_purpose\":{",
                 bytes, kPurposeName[purpose], kPhaseName[L.phase], L.step, L.live_total);
        o += buf;
        for (int q = 0; q < P_COUNT; ++q) {
            snprintf(buf, sizeof buf, "%s\"%s\":%llu", q ? "," : "", kPurposeName[q], L.live_by[q]);
            o += buf;
        }
        snprintf(buf, sizeof buf, "},\"dominant\":\"%s\"}", kPurposeName[dom]);
        o += buf;
        fprintf(stderr, "out of device memory allocating %zu bytes\n", bytes);
        print_ledger(o.c_str());
        exit(3);
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed: %s\n", bytes, cudaGetErrorString(e));
        exit(1);
    }
    Ledger& L = g_ledger;
    L.live[p] = {bytes, purpose};
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak) {
        L.peak = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof L.peak_by);
    }
    return p;
}

static void dev_free(void* p) {
    if (!p) return;
    Ledger& L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "dev_free of unknown pointer %p\n", p);
        exit(1);
    }
    cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaFree failed: %s\n", cudaGetErrorString(e));
        exit(1);
    }
    L.live_by[it->second.second] -= it->second.first;
    L.live_total -= it->second.first;
    L.live.erase(it);
}

#define CUDA_CHECK(x)                                                                   \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                  \
                    cudaGetErrorString(e_));                                            \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define CUBLAS_CHECK(x)                                                                 \
    do {                                                                                \
        cublasStatus_t s_ = (x);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                  \
                    cublasGetStatusString(s_));                                         \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// Kernels (row-major: activations [batch, features], weights [out, in]).

// bias add, optionally followed by ReLU
__global__ void k1(float* __restrict__ y, const float* __restrict__ b, int rows, int cols,
                   int relu) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * cols) return;
    float v = y[i] + b[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
}

// ReLU backward in place: zero the gradient where the layer's output was clamped
__global__ void k2(float* __restrict__ dy, const float* __restrict__ y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.0f) dy[i] = 0.0f;
}

// softmax cross-entropy loss (mean over the batch), one block per row
__global__ void k3(const float* __restrict__ z, const int* __restrict__ t,
                   float* __restrict__ out, int n, float scale) {
    extern __shared__ float sh[];
    const float* row = z + (size_t)blockIdx.x * n;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < n; c += blockDim.x) m = fmaxf(m, row[c]);
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    float acc = 0.0f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) acc += expf(row[c] - m);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, (m + logf(sh[0]) - row[t[blockIdx.x]]) * scale);
}

// gradient of the mean softmax cross-entropy w.r.t. the logits, one block per row
__global__ void k4(const float* __restrict__ z, const int* __restrict__ t,
                   float* __restrict__ dz, int n, float scale) {
    extern __shared__ float sh[];
    const float* row = z + (size_t)blockIdx.x * n;
    float* drow = dz + (size_t)blockIdx.x * n;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < n; c += blockDim.x) m = fmaxf(m, row[c]);
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    float acc = 0.0f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) acc += expf(row[c] - m);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.0f / sh[0];
    int label = t[blockIdx.x];
    for (int c = threadIdx.x; c < n; c += blockDim.x)
        drow[c] = (expf(row[c] - m) * inv - (c == label ? 1.0f : 0.0f)) * scale;
}

// column sums accumulated into the bias gradient
__global__ void k5(const float* __restrict__ dy, float* __restrict__ db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += dy[(size_t)r * cols + c];
    db[c] += s;
}

// AdamW update of one parameter tensor
__global__ void k6(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                   float* __restrict__ v, size_t n, float lr, float b1, float b2, float eps,
                   float wd, float bc1, float bc2) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * (1.0f - lr * wd) - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

// ----------------------------------------------------------------------------------------

static const int kBatch = 128;
static const int kLayers = 16;
static const int kWidth = 512;
static const int kClasses = 100;
static const int kSegLen = 4;
static const int kSegments = kLayers / kSegLen;
static const int kSteps = 3;

static inline unsigned blocks_for(size_t n, int t) { return (unsigned)((n + t - 1) / t); }

struct Linear {
    int in, out;
    bool relu;
    float *W, *b, *dW, *db, *mW, *vW, *mb, *vb;
};

static void layer_forward(cublasHandle_t h, const Linear& L, const float* x, float* y) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, L.out, kBatch, L.in, &one, L.W, L.in,
                             x, L.in, &zero, y, L.out));
    size_t n = (size_t)kBatch * L.out;
    k1<<<blocks_for(n, 256), 256>>>(y, L.b, kBatch, L.out, L.relu ? 1 : 0);
    KERNEL_CHECK();
}

// Backward of one layer. dy: gradient w.r.t. the layer's output (consumed and freed here),
// y: the layer's output (for the ReLU), x: its input. Returns the gradient w.r.t. x
// (nullptr for the first layer).
static float* layer_backward(cublasHandle_t h, const Linear& L, float* dy, const float* y,
                             const float* x, bool need_dx) {
    const float one = 1.0f, zero = 0.0f;
    if (L.relu) {
        size_t n = (size_t)kBatch * L.out;
        k2<<<blocks_for(n, 256), 256>>>(dy, y, n);
        KERNEL_CHECK();
    }
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, kBatch, &one, x, L.in,
                             dy, L.out, &one, L.dW, L.in));
    k5<<<blocks_for(L.out, 128), 128>>>(dy, L.db, kBatch, L.out);
    KERNEL_CHECK();
    float* dx = nullptr;
    if (need_dx) {
        dx = (float*)dev_alloc((size_t)kBatch * L.in * sizeof(float), P_TEMPORARY);
        CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, L.in, kBatch, L.out, &one, L.W,
                                 L.in, dy, L.out, &zero, dx, L.in));
    }
    dev_free(dy);
    return dx;
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static float frand() {  // uniform in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

int main() {
    Ledger& LG = g_ledger;
    LG.phase = PH_SETUP;

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    std::vector<Linear> net(kLayers);
    for (int l = 0; l < kLayers; ++l) {
        Linear& L = net[l];
        L.in = kWidth;
        L.out = (l == kLayers - 1) ? kClasses : kWidth;
        L.relu = (l != kLayers - 1);
        size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
        L.W = (float*)dev_alloc(nw * sizeof(float), P_WEIGHTS);
        L.b = (float*)dev_alloc(nb * sizeof(float), P_WEIGHTS);
        std::vector<float> hw(nw), hb(nb);
        float bound = 1.0f / sqrtf((float)L.in);
        for (auto& v : hw) v = frand() * bound;
        for (auto& v : hb) v = frand() * bound;
        CUDA_CHECK(cudaMemcpy(L.W, hw.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(L.b, hb.data(), nb * sizeof(float), cudaMemcpyHostToDevice));
        LG.params += (long long)(nw + nb);
        L.dW = (float*)dev_alloc(nw * sizeof(float), P_GRADIENTS);
        L.db = (float*)dev_alloc(nb * sizeof(float), P_GRADIENTS);
    }
    for (auto& L : net) {
        size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
        L.mW = (float*)dev_alloc(nw * sizeof(float), P_OPTIMIZER);
        L.vW = (float*)dev_alloc(nw * sizeof(float), P_OPTIMIZER);
        L.mb = (float*)dev_alloc(nb * sizeof(float), P_OPTIMIZER);
        L.vb = (float*)dev_alloc(nb * sizeof(float), P_OPTIMIZER);
        CUDA_CHECK(cudaMemset(L.mW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.mb, 0, nb * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vb, 0, nb * sizeof(float)));
    }

    float* d_x = (float*)dev_alloc((size_t)kBatch * kWidth * sizeof(float), P_ACTIVATIONS);
    int* d_t = (int*)dev_alloc((size_t)kBatch * sizeof(int), P_ACTIVATIONS);
    std::vector<float> hx((size_t)kBatch * kWidth);
    std::vector<int> ht(kBatch);

    const float lr = 3e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const size_t act_bytes = (size_t)kBatch * kWidth * sizeof(float);
    const size_t logit_bytes = (size_t)kBatch * kClasses * sizeof(float);

    for (int step = 1; step <= kSteps; ++step) {
        LG.step = step;
        LG.phase = PH_STEP_START;
        for (auto& v : hx) v = frand();
        for (auto& v : ht) v = (int)((frand() * 0.5f + 0.5f) * kClasses) % kClasses;
        CUDA_CHECK(cudaMemcpy(d_x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_t, ht.data(), ht.size() * sizeof(int), cudaMemcpyHostToDevice));
        for (auto& L : net) {
            CUDA_CHECK(cudaMemset(L.dW, 0, (size_t)L.in * L.out * sizeof(float)));
            CUDA_CHECK(cudaMemset(L.db, 0, (size_t)L.out * sizeof(float)));
        }

        // ---- forward: keep only segment inputs
        LG.phase = PH_FORWARD;
        std::vector<float*> ckpt(kSegments);
        ckpt[0] = d_x;
        float* cur = d_x;
        for (int l = 0; l < kLayers; ++l) {
            bool is_ckpt = ((l + 1) % kSegLen == 0) && (l + 1 < kLayers);
            size_t bytes = (l == kLayers - 1) ? logit_bytes : act_bytes;
            float* y = (float*)dev_alloc(bytes, is_ckpt ? P_ACTIVATIONS : P_TEMPORARY);
            layer_forward(blas, net[l], cur, y);
            if (l % kSegLen != 0) dev_free(cur);  // not a checkpoint: consumed, drop it
            if (is_ckpt) ckpt[(l + 1) / kSegLen] = y;
            cur = y;
        }
        float* d_loss = (float*)dev_alloc(sizeof(float), P_TEMPORARY);
        CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));
        k3<<<kBatch, 128, 128 * sizeof(float)>>>(cur, d_t, d_loss, kClasses, 1.0f / kBatch);
        KERNEL_CHECK();
        dev_free(cur);  // logits consumed by the loss
        LG.forward_passes++;

        // ---- backward, segment by segment, recomputing from the checkpoints
        LG.phase = PH_BACKWARD;
        float* dout = nullptr;  // gradient w.r.t. the current segment's output
        for (int s = kSegments - 1; s >= 0; --s) {
            const int first = s * kSegLen;
            const bool last_seg = (s == kSegments - 1);
            // outs[i] is the output of layer first+i. Recompute all but the segment's
            // output, which is the next checkpoint (still held) unless this is the last
            // segment, whose output (the logits) is recomputed for the loss gradient.
            float* outs[kSegLen];
            const float* in = ckpt[s];
            int n_recompute = last_seg ? kSegLen : kSegLen - 1;
            for (int i = 0; i < n_recompute; ++i) {
                const Linear& L = net[first + i];
                outs[i] = (float*)dev_alloc((size_t)kBatch * L.out * sizeof(float), P_TEMPORARY);
                layer_forward(blas, L, in, outs[i]);
                in = outs[i];
            }
            if (!last_seg) outs[kSegLen - 1] = ckpt[s + 1];
            if (last_seg) {
                dout = (float*)dev_alloc(logit_bytes, P_TEMPORARY);
                k4<<<kBatch, 128, 128 * sizeof(float)>>>(outs[kSegLen - 1], d_t, dout, kClasses,
                                                         1.0f / kBatch);
                KERNEL_CHECK();
            }
            for (int i = kSegLen - 1; i >= 0; --i) {
                const int l = first + i;
                const float* x = (i == 0) ? ckpt[s] : outs[i - 1];
                dout = layer_backward(blas, net[l], dout, outs[i], x, l > 0);
            }
            for (int i = 0; i < n_recompute; ++i) dev_free(outs[i]);
            if (!last_seg) dev_free(ckpt[s + 1]);  // its last use was this segment's ReLU
        }

        // ---- optimizer
        LG.phase = PH_OPTIMIZER;
        float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
        for (auto& L : net) {
            size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
            k6<<<blocks_for(nw, 256), 256>>>(L.W, L.dW, L.mW, L.vW, nw, lr, b1, b2, eps, wd, bc1,
                                             bc2);
            KERNEL_CHECK();
            k6<<<blocks_for(nb, 256), 256>>>(L.b, L.db, L.mb, L.vb, nb, lr, b1, b2, eps, wd, bc1,
                                             bc2);
            KERNEL_CHECK();
        }
        float hloss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&hloss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(d_loss);
        LG.steps_done = step;
        fprintf(stderr, "step %d loss %.4f\n", step, hloss);
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    dev_free(d_x);
    dev_free(d_t);
    for (auto& L : net) {
        dev_free(L.W); dev_free(L.b); dev_free(L.dW); dev_free(L.db);
        dev_free(L.mW); dev_free(L.vW); dev_free(L.mb); dev_free(L.vb);
    }
    CUBLAS_CHECK(cublasDestroy(blas));
    if (!g_ledger.live.empty()) {
        fprintf(stderr, "leaked %zu device allocations\n", g_ledger.live.size());
        return 1;
    }
    print_ledger(nullptr);
    return 0;
}

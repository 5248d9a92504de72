// c11_graph_replay: fp32 MLP training step captured once into a CUDA graph and replayed.
//
// A 3-layer fp32 MLP classifier for flattened 32x32x3 images (3072 -> 512 -> 512 -> 10,
// ReLU between layers, softmax cross-entropy) trained with SGD with momentum (lr 0.01,
// momentum 0.9, weight decay 5e-4) on batches of 128 synthetic samples, for 8 steps. Every
// device buffer (weights, momentum, gradients, the fixed input/label buffers, the kept
// activations, the activation-gradient buffers of the backward pass and the loss scalar)
// is allocated once in set-up. All math is hand-written kernels (a tiled shared-memory
// matmul with a fused bias/ReLU epilogue, softmax cross-entropy, bias-gradient reduction,
// ReLU backward, the SGD update); no cuBLAS. Step 1 runs eagerly on a non-blocking stream;
// then one whole step (loss reset, forward, backward, update) is captured into a CUDA graph
// with cudaStreamBeginCapture/cudaStreamEndCapture on that stream (capturing runs nothing),
// instantiated, and launched once for each of steps 2..8. Before every step the host copies
// the next batch from pinned staging memory into the fixed device input buffers
// (cudaMemcpyAsync, outside the graph) and after it reads the loss back.

#include <cuda_runtime.h>

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
    int step = 0;
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
    std::string s = "{\"program\":\"c11_graph_replay\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d"
             ",\"params\":%llu,\"param_dtype\":\"fp32\",\"master_weights\":false"
             ",\"optimizer\":\"sgd_momentum\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
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
// Configuration
// ---------------------------------------------------------------------------------------

static const int kLayers = 3;
static const int kDims[kLayers + 1] = {3072, 512, 512, 10};
static const int kBatch = 128;
static const int kSteps = 8;
static const float kLr = 0.01f;
static const float kMomentum = 0.9f;
static const float kWeightDecay = 5e-4f;

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

enum Epilogue { EPI_NONE = 0, EPI_BIAS = 1, EPI_BIAS_RELU = 2 };

#define TILE 16

// Row-major C[M, N] = op(A)[M, K] op(B)[K, N] (+ bias[n], ReLU), where
// op(A)(m, k) = TA ? A[k * lda + m] : A[m * lda + k], and likewise for B.
template <bool TA, bool TB>
__global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                              float *__restrict__ C, const float *__restrict__ bias, int M,
                              int N, int K, int lda, int ldb, int ldc, int epilogue) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + threadIdx.x;  // A tile: rows row, cols ka
        int kb = k0 + threadIdx.y;  // B tile: rows kb, cols col
        float a = 0.f, b = 0.f;
        if (row < M && ka < K) a = TA ? A[(size_t)ka * lda + row] : A[(size_t)row * lda + ka];
        if (kb < K && col < N) b = TB ? B[(size_t)col * ldb + kb] : B[(size_t)kb * ldb + col];
        As[threadIdx.y][threadIdx.x] = a;
        Bs[threadIdx.y][threadIdx.x] = b;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        if (epilogue != EPI_NONE) acc += bias[col];
        if (epilogue == EPI_BIAS_RELU) acc = fmaxf(acc, 0.f);
        C[(size_t)row * ldc + col] = acc;
    }
}

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
    return v;
}

// One warp per sample (few classes): dlogits = (softmax - onehot) / batch, loss += mean CE.
__global__ void softmax_xent(const float *logits, const int *labels, float *dlogits,
                             float *loss, int batch, int n) {
    int b = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (b >= batch) return;
    const float *row = logits + (size_t)b * n;
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) m = fmaxf(m, row[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
    for (int j = lane; j < n; j += 32) s += __expf(row[j] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    int label = labels[b];
    float inv_batch = 1.f / batch;
    for (int j = lane; j < n; j += 32) {
        float p = __expf(row[j] - m) / s;
        dlogits[(size_t)b * n + j] = (p - (j == label ? 1.f : 0.f)) * inv_batch;
    }
    if (lane == 0) atomicAdd(loss, (logf(s) + m - row[label]) * inv_batch);
}

// db[j] = sum_b dy[b, j]: one block per column strip, threads over the batch.
__global__ void bias_grad(float *db, const float *dy, int batch, int n) {
    int j = blockIdx.x;
    float s = 0.f;
    for (int b = threadIdx.x; b < batch; b += blockDim.x) s += dy[(size_t)b * n + j];
    s = block_reduce_sum(s);
    if (threadIdx.x == 0) db[j] = s;
}

// dx *= (h > 0): ReLU backward with the kept post-ReLU activation.
__global__ void relu_backward(float *dx, const float *h, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count && !(h[i] > 0.f)) dx[i] = 0.f;
}

// PyTorch-style SGD with momentum: g += wd * w; v = mu * v + g; w -= lr * v.
__global__ void sgd_momentum(float *w, const float *g, float *v, int n, float lr, float mu,
                             float wd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i] + wd * w[i];
    float vi = mu * v[i] + gi;
    v[i] = vi;
    w[i] -= lr * vi;
}

// ---------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------

struct Layer {
    int in, out;
    float *w, *b;    // [out, in], [out]
    float *dw, *db;  // gradients
    float *vw, *vb;  // momentum buffers
};

struct Model {
    Layer layers[kLayers];
    float *x;                // [B, 3072] fixed input buffer
    int *labels;             // [B]
    float *h[kLayers - 1];   // post-ReLU hidden activations, kept for backward
    float *logits;           // [B, 10]
    float *dlogits;          // [B, 10]
    float *dh[kLayers - 1];  // gradients w.r.t. the hidden activations
    float *loss;             // scalar
};

static inline unsigned blocks_for(size_t n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}

template <bool TA, bool TB>
static void matmul(cudaStream_t s, const float *A, const float *B, float *C, const float *bias,
                   int M, int N, int K, int lda, int ldb, int ldc, int epi) {
    dim3 block(TILE, TILE);
    dim3 grid(blocks_for(N, TILE), blocks_for(M, TILE));
    matmul_kernel<TA, TB><<<grid, block, 0, s>>>(A, B, C, bias, M, N, K, lda, ldb, ldc, epi);
    KERNEL_CHECK();
}

// One training step on stream s (reads the fixed input buffers). Run eagerly for step 1 and
// captured into the graph for the rest.
static void enqueue_step(Model &m, cudaStream_t s) {
    const int B = kBatch;
    CUDA_CHECK(cudaMemsetAsync(m.loss, 0, sizeof(float), s));

    // forward: Y[B, out] = X[B, in] W^T + b
    const float *in = m.x;
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = m.layers[l];
        bool last = (l == kLayers - 1);
        float *out = last ? m.logits : m.h[l];
        matmul<false, true>(s, in, L.w, out, L.b, B, L.out, L.in, L.in, L.in, L.out,
                            last ? EPI_BIAS : EPI_BIAS_RELU);
        in = out;
    }
    const int n_cls = kDims[kLayers];
    softmax_xent<<<blocks_for(B, 8), 256, 0, s>>>(m.logits, m.labels, m.dlogits, m.loss, B,
                                                  n_cls);
    KERNEL_CHECK();

    // backward
    const float *dy = m.dlogits;
    for (int l = kLayers - 1; l >= 0; --l) {
        Layer &L = m.layers[l];
        const float *xin = (l == 0) ? m.x : m.h[l - 1];
        // dW[out, in] = dY^T[out, B] X[B, in]
        matmul<true, false>(s, dy, xin, L.dw, nullptr, L.out, L.in, B, L.out, L.in, L.in,
                            EPI_NONE);
        bias_grad<<<L.out, 128, 0, s>>>(L.db, dy, B, L.out);
        KERNEL_CHECK();
        if (l > 0) {
            // dX[B, in] = dY[B, out] W[out, in]
            float *dx = m.dh[l - 1];
            matmul<false, false>(s, dy, L.w, dx, nullptr, B, L.in, L.out, L.out, L.in, L.in,
                                 EPI_NONE);
            relu_backward<<<blocks_for((size_t)B * L.in, 256), 256, 0, s>>>(dx, m.h[l - 1],
                                                                            B * L.in);
            KERNEL_CHECK();
            dy = dx;
        }
    }

    // optimizer
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = m.layers[l];
        int wn = L.in * L.out;
        sgd_momentum<<<blocks_for(wn, 256), 256, 0, s>>>(L.w, L.dw, L.vw, wn, kLr, kMomentum,
                                                        kWeightDecay);
        KERNEL_CHECK();
        sgd_momentum<<<blocks_for(L.out, 256), 256, 0, s>>>(L.b, L.db, L.vb, L.out, kLr,
                                                           kMomentum, kWeightDecay);
        KERNEL_CHECK();
    }
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static inline uint32_t rng_u32() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static inline float rng_uniform() { return (rng_u32() + 0.5f) * (1.0f / 2147483648.0f); }

// Synthetic "images": class-dependent mean pattern plus uniform noise, in [0, 1].
static void make_batch(float *x, int *y, const std::vector<float> &patterns) {
    const int D = kDims[0], C = kDims[kLayers];
    for (int b = 0; b < kBatch; ++b) {
        int c = (int)(rng_u32() % C);
        y[b] = c;
        for (int k = 0; k < D; ++k) {
            float v = 0.7f * patterns[(size_t)c * D + k] + 0.3f * rng_uniform();
            x[(size_t)b * D + k] = v;
        }
    }
}

int main() {
    const int B = kBatch;
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    // ---- set-up: every device buffer is allocated here, before the capture ----
    g_ledger.phase = PH_SETUP;
    Model m;
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = m.layers[l];
        L.in = kDims[l];
        L.out = kDims[l + 1];
        size_t wn = (size_t)L.in * L.out;
        L.w = dev_alloc<float>(wn, P_WEIGHTS, "weight");
        L.b = dev_alloc<float>(L.out, P_WEIGHTS, "bias");
        g_ledger.params += wn + L.out;
        std::vector<float> hw(wn), hb(L.out);
        float bound = 1.f / sqrtf((float)L.in);  // nn.Linear's default init
        for (auto &v : hw) v = (2.f * rng_uniform() - 1.f) * bound;
        for (auto &v : hb) v = (2.f * rng_uniform() - 1.f) * bound;
        CUDA_CHECK(cudaMemcpy(L.w, hw.data(), wn * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(L.b, hb.data(), L.out * sizeof(float), cudaMemcpyHostToDevice));
    }
    for (int l = 0; l < kLayers; ++l) {
        Layer &L = m.layers[l];
        size_t wn = (size_t)L.in * L.out;
        L.dw = dev_alloc<float>(wn, P_GRADIENTS, "weight grad");
        L.db = dev_alloc<float>(L.out, P_GRADIENTS, "bias grad");
        L.vw = dev_alloc<float>(wn, P_OPTIMIZER, "weight momentum");
        L.vb = dev_alloc<float>(L.out, P_OPTIMIZER, "bias momentum");
        CUDA_CHECK(cudaMemset(L.dw, 0, wn * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.db, 0, L.out * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vw, 0, wn * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vb, 0, L.out * sizeof(float)));
    }
    m.x = dev_alloc<float>((size_t)B * kDims[0], P_ACTIVATIONS, "input batch");
    m.labels = dev_alloc<int>(B, P_ACTIVATIONS, "labels");
    for (int l = 0; l < kLayers - 1; ++l)
        m.h[l] = dev_alloc<float>((size_t)B * kDims[l + 1], P_ACTIVATIONS, "hidden");
    m.logits = dev_alloc<float>((size_t)B * kDims[kLayers], P_ACTIVATIONS, "logits");
    m.dlogits = dev_alloc<float>((size_t)B * kDims[kLayers], P_TEMPORARY, "dlogits");
    for (int l = 0; l < kLayers - 1; ++l)
        m.dh[l] = dev_alloc<float>((size_t)B * kDims[l + 1], P_TEMPORARY, "dhidden");
    m.loss = dev_alloc<float>(1, P_TEMPORARY, "loss");

    // Pinned host staging for the batches and the loss (host memory: not in the ledger).
    float *h_x = nullptr, *h_loss = nullptr;
    int *h_y = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_x, (size_t)B * kDims[0] * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&h_y, B * sizeof(int)));
    CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
    std::vector<float> patterns((size_t)kDims[kLayers] * kDims[0]);
    for (auto &v : patterns) v = rng_uniform();

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;

    for (int step = 1; step <= kSteps; ++step) {
        g_ledger.step = step;
        g_ledger.phase = PH_STEP_START;
        make_batch(h_x, h_y, patterns);
        CUDA_CHECK(cudaMemcpyAsync(m.x, h_x, (size_t)B * kDims[0] * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(m.labels, h_y, B * sizeof(int), cudaMemcpyHostToDevice,
                                   stream));
        g_ledger.phase = PH_FORWARD;
        if (step == 1) {
            // Warm-up step, eager.
            enqueue_step(m, stream);
        } else {
            if (!graph_exec) {
                // Capture one step; capturing records the work without running it.
                CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
                enqueue_step(m, stream);
                CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
                size_t num_nodes = 0;
                CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &num_nodes));
                CUDA_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
                printf("captured training step: %zu graph nodes\n", num_nodes);
            }
            CUDA_CHECK(cudaGraphLaunch(graph_exec, stream));
        }
        g_ledger.forward_passes++;
        CUDA_CHECK(cudaMemcpyAsync(h_loss, m.loss, sizeof(float), cudaMemcpyDeviceToHost,
                                   stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        g_ledger.steps_done = step;
        printf("step %d (%s): loss %.4f\n", step, step == 1 ? "eager" : "graph", *h_loss);
    }

    CUDA_CHECK(cudaGraphExecDestroy(graph_exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFreeHost(h_x));
    CUDA_CHECK(cudaFreeHost(h_y));
    CUDA_CHECK(cudaFreeHost(h_loss));

    dev_free(m.loss);
    for (int l = kLayers - 2; l >= 0; --l) dev_free(m.dh[l]);
    dev_free(m.dlogits);
    dev_free(m.logits);
    for (int l = kLayers - 2; l >= 0; --l) dev_free(m.h[l]);
    dev_free(m.labels);
    dev_free(m.x);
    for (int l = kLayers - 1; l >= 0; --l) {
        Layer &L = m.layers[l];
        dev_free(L.vb);
        dev_free(L.vw);
        dev_free(L.db);
        dev_free(L.dw);
        dev_free(L.b);
        dev_free(L.w);
    }
    print_ledger();
    return 0;
}

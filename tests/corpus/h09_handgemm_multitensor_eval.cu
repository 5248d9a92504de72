// h09_handgemm_multitensor_eval.cu
//
// An fp32 trainer for a small next-token MLP language model: a token embedding, three
// residual feed-forward blocks (x + W2·relu(W1·x + b1) + b2) and a linear head with a
// softmax cross-entropy loss. Every matrix product is done by the program's own tiled
// shared-memory GEMM kernel (no cuBLAS or cuBLASLt calls at all). Each parameter tensor, its
// gradient and its two AdamW moments is a cudaMalloc of its own (15 parameter tensors, so at
// most 16 per multi-tensor launch); the moments are allocated and zeroed eagerly at set-up.
// One optimizer step accumulates gradients over 2 micro-batches into the persistent gradient
// buffers, then applies AdamW with ONE kernel launch whose by-value struct parameter holds
// the addresses of every parameter, gradient, m and v tensor, and then zeroes all gradients
// with one multi-tensor kernel. After every 2nd step an evaluation forward pass (no backward)
// runs on a held-out batch with its own short-lived buffers. The host code is wrapped in NVTX
// push/pop ranges named after its functions: train_step, model_forward, model_backward,
// adamw_update, evaluate. 6 steps. The program keeps a ledger of its device allocations by
// purpose and prints it as the last line of stdout.

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

// ----------------------------------------------------------------------------------------
// error checking

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// device-memory ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeNames[P_COUNT] = {"weights", "optimizer", "gradients",
                                             "activations", "temporary", "functionality",
                                             "mixed"};

struct Ledger {
    std::map<void *, std::pair<size_t, Purpose>> live;
    size_t live_bytes = 0;
    size_t live_by[P_COUNT] = {0};
    size_t peak_bytes = 0;
    size_t peak_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void *dev_alloc(size_t bytes, Purpose purpose, const char *what) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what,
                cudaGetErrorString(err));
        exit(1);
    }
    g_ledger.live[p] = std::make_pair(bytes, purpose);
    g_ledger.live_bytes += bytes;
    g_ledger.live_by[purpose] += bytes;
    if (g_ledger.live_bytes > g_ledger.peak_bytes) {
        g_ledger.peak_bytes = g_ledger.live_bytes;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return p;
}

static void dev_free(void *p) {
    if (!p) return;
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) {
        fprintf(stderr, "dev_free of unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live_bytes -= it->second.first;
    g_ledger.live_by[it->second.second] -= it->second.first;
    g_ledger.live.erase(it);
}

// ----------------------------------------------------------------------------------------
// model configuration

static const int kVocab = 4096;      // V
static const int kDim = 256;         // D
static const int kHidden = 1024;     // H
static const int kLayers = 3;
static const int kBatch = 8;         // sequences per micro-batch
static const int kSeqLen = 128;      // tokens per sequence
static const int kTokens = kBatch * kSeqLen;
static const int kGradAccum = 2;
static const int kSteps = 6;
static const int kEvalEvery = 2;
static const int kMaxTensors = 16;

static const float kLR = 3e-4f;
static const float kBeta1 = 0.9f;
static const float kBeta2 = 0.999f;
static const float kEps = 1e-8f;
static const float kWeightDecay = 0.1f;

// ----------------------------------------------------------------------------------------
// kernels

// Tiled GEMM, row-major: C[M,N] = alpha * op(A)[M,K] · op(B)[K,N] + beta * C
//                                  (+ bias[N]) (+ R[M,N]), optionally followed by relu.
// op(A)(i,k) = TA ? A[k*lda + i] : A[i*lda + k];  op(B)(k,j) = TB ? B[j*ldb + k] : B[k*ldb + j].
// 64x64 output tile per block, 16x16 threads, each thread a 4x4 micro-tile, K in steps of 16.
#define GEMM_BM 64
#define GEMM_BN 64
#define GEMM_BK 16
#define GEMM_THREADS 256

template <bool TA, bool TB>
__global__ void __launch_bounds__(GEMM_THREADS)
gemm_tiled_kernel(int M, int N, int K, float alpha, const float *__restrict__ A, int lda,
                  const float *__restrict__ B, int ldb, float beta, float *C, int ldc,
                  const float *__restrict__ bias, const float *R, int ldr, int relu) {
    __shared__ float As[GEMM_BK][GEMM_BM + 4];
    __shared__ float Bs[GEMM_BK][GEMM_BN + 4];

    const int tx = threadIdx.x;  // 0..15, column group
    const int ty = threadIdx.y;  // 0..15, row group
    const int tid = ty * 16 + tx;
    const int row0 = blockIdx.y * GEMM_BM;
    const int col0 = blockIdx.x * GEMM_BN;

    float acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += GEMM_BK) {
        for (int e = tid; e < GEMM_BK * GEMM_BM; e += GEMM_THREADS) {
            int kk, ii;
            if (TA) { ii = e % GEMM_BM; kk = e / GEMM_BM; }   // contiguous along M
            else    { kk = e % GEMM_BK; ii = e / GEMM_BK; }   // contiguous along K
            int gi = row0 + ii, gk = k0 + kk;
            float v = 0.0f;
            if (gi < M && gk < K) v = TA ? A[(size_t)gk * lda + gi] : A[(size_t)gi * lda + gk];
            As[kk][ii] = v;
        }
        for (int e = tid; e < GEMM_BK * GEMM_BN; e += GEMM_THREADS) {
            int kk, jj;
            if (TB) { kk = e % GEMM_BK; jj = e / GEMM_BK; }   // contiguous along K
            else    { jj = e % GEMM_BN; kk = e / GEMM_BN; }   // contiguous along N
            int gj = col0 + jj, gk = k0 + kk;
            float v = 0.0f;
            if (gj < N && gk < K) v = TB ? B[(size_t)gj * ldb + gk] : B[(size_t)gk * ldb + gj];
            Bs[kk][jj] = v;
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < GEMM_BK; ++kk) {
            float a[4], b[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) a[r] = As[kk][ty + 16 * r];
#pragma unroll
            for (int c = 0; c < 4; ++c) b[c] = Bs[kk][tx + 16 * c];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int r = 0; r < 4; ++r) {
        int i = row0 + ty + 16 * r;
        if (i >= M) continue;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            int j = col0 + tx + 16 * c;
            if (j >= N) continue;
            float v = alpha * acc[r][c];
            if (beta != 0.0f) v += beta * C[(size_t)i * ldc + j];
            if (bias) v += bias[j];
            if (R) v += R[(size_t)i * ldr + j];
            if (relu) v = fmaxf(v, 0.0f);
            C[(size_t)i * ldc + j] = v;
        }
    }
}

// x[n, :] = E[tok[n], :]
__global__ void embedding_forward_kernel(float *x, const float *E, const int *tok, int D) {
    int n = blockIdx.x;
    int t = tok[n];
    for (int d = threadIdx.x; d < D; d += blockDim.x) x[(size_t)n * D + d] = E[(size_t)t * D + d];
}

// dE[tok[n], :] += dx[n, :]
__global__ void embedding_backward_kernel(float *dE, const float *dx, const int *tok, int D) {
    int n = blockIdx.x;
    int t = tok[n];
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        atomicAdd(&dE[(size_t)t * D + d], dx[(size_t)n * D + d]);
}

// Row-wise softmax in place (logits -> probs) and loss += scale * -log p[target].
__global__ void cross_entropy_forward_kernel(float *logits, const int *targets, float *loss,
                                             int V, float scale) {
    __shared__ float red[256];
    int n = blockIdx.x;
    float *row = logits + (size_t)n * V;

    float m = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, row[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) sum += expf(row[j] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int j = threadIdx.x; j < V; j += blockDim.x) row[j] = expf(row[j] - m) * inv;
    __syncthreads();
    if (threadIdx.x == 0) {
        float p = fmaxf(row[targets[n]], 1e-30f);
        atomicAdd(loss, -logf(p) * scale);
    }
}

// probs -> dlogits in place: (p - onehot(target)) * scale
__global__ void cross_entropy_backward_kernel(float *probs, const int *targets, int V,
                                              float scale) {
    int n = blockIdx.x;
    float *row = probs + (size_t)n * V;
    int t = targets[n];
    for (int j = threadIdx.x; j < V; j += blockDim.x)
        row[j] = (row[j] - (j == t ? 1.0f : 0.0f)) * scale;
}

// da *= (a > 0), a being the relu output kept from forward
__global__ void relu_backward_kernel(float *da, const float *a, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) if (a[i] <= 0.0f) da[i] = 0.0f;
}

// db[j] += sum_i dy[i, j]
__global__ void bias_grad_kernel(float *db, const float *dy, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0.0f;
    for (int i = 0; i < rows; ++i) s += dy[(size_t)i * cols + j];
    db[j] += s;
}

// All parameters of the model, passed by value to one launch.
struct AdamWArgs {
    float *params[kMaxTensors];
    float *grads[kMaxTensors];
    float *exp_avg[kMaxTensors];
    float *exp_avg_sq[kMaxTensors];
    long long numel[kMaxTensors];
    float weight_decay[kMaxTensors];
    int num_tensors;
    float lr, beta1, beta2, eps;
    float bias_corr1, bias_corr2;  // 1 - beta^t
};

__global__ void adamw_multi_tensor_kernel(AdamWArgs args) {
    int t = blockIdx.y;
    if (t >= args.num_tensors) return;
    float *p = args.params[t];
    const float *g = args.grads[t];
    float *m = args.exp_avg[t];
    float *v = args.exp_avg_sq[t];
    long long n = args.numel[t];
    float wd = args.weight_decay[t];
    float step_size = args.lr / args.bias_corr1;
    float denom_corr = rsqrtf(args.bias_corr2);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = args.beta1 * m[i] + (1.0f - args.beta1) * gi;
        float vi = args.beta2 * v[i] + (1.0f - args.beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float pi = p[i] * (1.0f - args.lr * wd);
        pi -= step_size * mi / (sqrtf(vi) * denom_corr + args.eps);
        p[i] = pi;
    }
}

struct ZeroArgs {
    float *ptrs[kMaxTensors];
    long long numel[kMaxTensors];
    int num_tensors;
};

__global__ void zero_multi_tensor_kernel(ZeroArgs args) {
    int t = blockIdx.y;
    if (t >= args.num_tensors) return;
    float *p = args.ptrs[t];
    long long n = args.numel[t];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = 0.0f;
}

// ----------------------------------------------------------------------------------------
// host-side model

struct Tensor {
    float *data = nullptr;
    size_t numel = 0;
    bool decay = false;
    const char *name = "";
};

struct Block {
    Tensor w1, b1, w2, b2;  // w1: D x H, w2: H x D
};

struct Model {
    Tensor emb;             // V x D
    Block blocks[kLayers];
    Tensor head_w, head_b;  // D x V, V
    Tensor *all[kMaxTensors];
    int n_tensors = 0;
};

// Gradients, Adam moments: same shapes, one allocation each.
struct Shadow {
    float *t[kMaxTensors];
};

// Pointers the forward pass writes into. Training gives each layer its own buffers (kept
// for backward); evaluation aliases them onto a small ping-pong workspace.
struct ForwardBuffers {
    float *x[kLayers + 1];  // residual stream entering each block, and the head's input
    float *a[kLayers];      // relu(x W1 + b1) of each block
    float *logits;          // N x V, softmax probabilities after the loss kernel
};

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t rng_next(uint64_t &s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(s >> 33);
}
static float rng_uniform(uint64_t &s) { return (rng_next(s) >> 8) * (1.0f / 16777216.0f); }

static void register_tensor(Model &m, Tensor &t, size_t numel, bool decay, const char *name) {
    t.numel = numel;
    t.decay = decay;
    t.name = name;
    t.data = (float *)dev_alloc(numel * sizeof(float), P_WEIGHTS, name);
    m.all[m.n_tensors++] = &t;
}

static void init_tensor(Tensor &t, float scale) {
    if (scale == 0.0f) {
        CUDA_CHECK(cudaMemset(t.data, 0, t.numel * sizeof(float)));
        return;
    }
    std::vector<float> h(t.numel);
    for (size_t i = 0; i < t.numel; ++i) h[i] = (2.0f * rng_uniform(g_rng) - 1.0f) * scale;
    CUDA_CHECK(cudaMemcpy(t.data, h.data(), t.numel * sizeof(float), cudaMemcpyHostToDevice));
}

static void build_model(Model &m) {
    register_tensor(m, m.emb, (size_t)kVocab * kDim, true, "embedding");
    for (int l = 0; l < kLayers; ++l) {
        Block &b = m.blocks[l];
        register_tensor(m, b.w1, (size_t)kDim * kHidden, true, "block.w1");
        register_tensor(m, b.b1, kHidden, false, "block.b1");
        register_tensor(m, b.w2, (size_t)kHidden * kDim, true, "block.w2");
        register_tensor(m, b.b2, kDim, false, "block.b2");
    }
    register_tensor(m, m.head_w, (size_t)kDim * kVocab, true, "head.w");
    register_tensor(m, m.head_b, kVocab, false, "head.b");

    init_tensor(m.emb, 0.02f);
    for (int l = 0; l < kLayers; ++l) {
        Block &b = m.blocks[l];
        init_tensor(b.w1, 1.0f / sqrtf((float)kDim));
        init_tensor(b.b1, 0.0f);
        init_tensor(b.w2, 1.0f / sqrtf((float)kHidden) / sqrtf((float)kLayers));
        init_tensor(b.b2, 0.0f);
    }
    init_tensor(m.head_w, 1.0f / sqrtf((float)kDim));
    init_tensor(m.head_b, 0.0f);
}

static size_t model_params(const Model &m) {
    size_t n = 0;
    for (int i = 0; i < m.n_tensors; ++i) n += m.all[i]->numel;
    return n;
}

static void alloc_shadow(const Model &m, Shadow &s, Purpose purpose, const char *what) {
    for (int i = 0; i < m.n_tensors; ++i) {
        s.t[i] = (float *)dev_alloc(m.all[i]->numel * sizeof(float), purpose, what);
        CUDA_CHECK(cudaMemset(s.t[i], 0, m.all[i]->numel * sizeof(float)));
    }
}

static int index_of(const Model &m, const Tensor &t) {
    for (int i = 0; i < m.n_tensors; ++i)
        if (m.all[i] == &t) return i;
    fprintf(stderr, "tensor %s not registered\n", t.name);
    exit(1);
}

// ----------------------------------------------------------------------------------------
// launch helpers

static void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc, const float *bias,
                 const float *R, int ldr, bool relu, cudaStream_t s) {
    dim3 block(16, 16);
    dim3 grid((N + GEMM_BN - 1) / GEMM_BN, (M + GEMM_BM - 1) / GEMM_BM);
    int r = relu ? 1 : 0;
    if (!ta && !tb)
        gemm_tiled_kernel<false, false><<<grid, block, 0, s>>>(M, N, K, alpha, A, lda, B, ldb,
                                                               beta, C, ldc, bias, R, ldr, r);
    else if (ta && !tb)
        gemm_tiled_kernel<true, false><<<grid, block, 0, s>>>(M, N, K, alpha, A, lda, B, ldb,
                                                              beta, C, ldc, bias, R, ldr, r);
    else if (!ta && tb)
        gemm_tiled_kernel<false, true><<<grid, block, 0, s>>>(M, N, K, alpha, A, lda, B, ldb,
                                                              beta, C, ldc, bias, R, ldr, r);
    else
        gemm_tiled_kernel<true, true><<<grid, block, 0, s>>>(M, N, K, alpha, A, lda, B, ldb,
                                                             beta, C, ldc, bias, R, ldr, r);
    KERNEL_CHECK();
}

static void bias_grad(float *db, const float *dy, int rows, int cols, cudaStream_t s) {
    bias_grad_kernel<<<(cols + 255) / 256, 256, 0, s>>>(db, dy, rows, cols);
    KERNEL_CHECK();
}

// ----------------------------------------------------------------------------------------
// forward / backward / optimizer

static void model_forward(const Model &m, const ForwardBuffers &fb, const int *d_tokens,
                          const int *d_targets, float *d_loss, int ntok, float loss_scale,
                          cudaStream_t s) {
    nvtxRangePushA("model_forward");
    embedding_forward_kernel<<<ntok, 256, 0, s>>>(fb.x[0], m.emb.data, d_tokens, kDim);
    KERNEL_CHECK();
    for (int l = 0; l < kLayers; ++l) {
        const Block &b = m.blocks[l];
        // a = relu(x W1 + b1)
        gemm(false, false, ntok, kHidden, kDim, 1.0f, fb.x[l], kDim, b.w1.data, kHidden, 0.0f,
             fb.a[l], kHidden, b.b1.data, nullptr, 0, true, s);
        // x' = x + a W2 + b2
        gemm(false, false, ntok, kDim, kHidden, 1.0f, fb.a[l], kHidden, b.w2.data, kDim, 0.0f,
             fb.x[l + 1], kDim, b.b2.data, fb.x[l], kDim, false, s);
    }
    gemm(false, false, ntok, kVocab, kDim, 1.0f, fb.x[kLayers], kDim, m.head_w.data, kVocab,
         0.0f, fb.logits, kVocab, m.head_b.data, nullptr, 0, false, s);
    cross_entropy_forward_kernel<<<ntok, 256, 0, s>>>(fb.logits, d_targets, d_loss, kVocab,
                                                      loss_scale);
    KERNEL_CHECK();
    nvtxRangePop();
}

// Accumulates into the persistent gradients; dlogits are formed in place in the probs.
static void model_backward(const Model &m, const Shadow &grads, const ForwardBuffers &acts,
                           const int *d_tokens, const int *d_targets, int ntok,
                           float grad_scale, cudaStream_t s) {
    nvtxRangePushA("model_backward");
    float *dx = (float *)dev_alloc((size_t)ntok * kDim * sizeof(float), P_TEMPORARY, "dx");
    float *da = (float *)dev_alloc((size_t)ntok * kHidden * sizeof(float), P_TEMPORARY, "da");

    cross_entropy_backward_kernel<<<ntok, 256, 0, s>>>(acts.logits, d_targets, kVocab,
                                                       grad_scale);
    KERNEL_CHECK();
    const float *dlogits = acts.logits;

    // head
    float *g_hw = grads.t[index_of(m, m.head_w)];
    float *g_hb = grads.t[index_of(m, m.head_b)];
    gemm(true, false, kDim, kVocab, ntok, 1.0f, acts.x[kLayers], kDim, dlogits, kVocab, 1.0f,
         g_hw, kVocab, nullptr, nullptr, 0, false, s);
    bias_grad(g_hb, dlogits, ntok, kVocab, s);
    gemm(false, true, ntok, kDim, kVocab, 1.0f, dlogits, kVocab, m.head_w.data, kVocab, 0.0f,
         dx, kDim, nullptr, nullptr, 0, false, s);

    for (int l = kLayers - 1; l >= 0; --l) {
        const Block &b = m.blocks[l];
        float *g_w1 = grads.t[index_of(m, b.w1)];
        float *g_b1 = grads.t[index_of(m, b.b1)];
        float *g_w2 = grads.t[index_of(m, b.w2)];
        float *g_b2 = grads.t[index_of(m, b.b2)];
        // dW2 += a^T dx, db2 += sum dx
        gemm(true, false, kHidden, kDim, ntok, 1.0f, acts.a[l], kHidden, dx, kDim, 1.0f, g_w2,
             kDim, nullptr, nullptr, 0, false, s);
        bias_grad(g_b2, dx, ntok, kDim, s);
        // da = dx W2^T, through the relu
        gemm(false, true, ntok, kHidden, kDim, 1.0f, dx, kDim, b.w2.data, kDim, 0.0f, da,
             kHidden, nullptr, nullptr, 0, false, s);
        size_t n = (size_t)ntok * kHidden;
        relu_backward_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(da, acts.a[l], n);
        KERNEL_CHECK();
        // dW1 += x^T da, db1 += sum da
        gemm(true, false, kDim, kHidden, ntok, 1.0f, acts.x[l], kDim, da, kHidden, 1.0f, g_w1,
             kHidden, nullptr, nullptr, 0, false, s);
        bias_grad(g_b1, da, ntok, kHidden, s);
        // dx += da W1^T (the residual path carries dx through unchanged)
        gemm(false, true, ntok, kDim, kHidden, 1.0f, da, kHidden, b.w1.data, kHidden, 1.0f, dx,
             kDim, nullptr, nullptr, 0, false, s);
    }

    float *g_emb = grads.t[index_of(m, m.emb)];
    embedding_backward_kernel<<<ntok, 256, 0, s>>>(g_emb, dx, d_tokens, kDim);
    KERNEL_CHECK();

    dev_free(da);
    dev_free(dx);
    nvtxRangePop();
}

static void adamw_update(const Model &m, const Shadow &grads, const Shadow &exp_avg,
                         const Shadow &exp_avg_sq, int step, cudaStream_t s) {
    nvtxRangePushA("adamw_update");
    AdamWArgs args;
    memset(&args, 0, sizeof(args));
    long long max_numel = 0;
    for (int i = 0; i < m.n_tensors; ++i) {
        args.params[i] = m.all[i]->data;
        args.grads[i] = grads.t[i];
        args.exp_avg[i] = exp_avg.t[i];
        args.exp_avg_sq[i] = exp_avg_sq.t[i];
        args.numel[i] = (long long)m.all[i]->numel;
        args.weight_decay[i] = m.all[i]->decay ? kWeightDecay : 0.0f;
        if (args.numel[i] > max_numel) max_numel = args.numel[i];
    }
    args.num_tensors = m.n_tensors;
    args.lr = kLR;
    args.beta1 = kBeta1;
    args.beta2 = kBeta2;
    args.eps = kEps;
    args.bias_corr1 = 1.0f - powf(kBeta1, (float)step);
    args.bias_corr2 = 1.0f - powf(kBeta2, (float)step);
    long long blocks = (max_numel + 256 * 8 - 1) / (256 * 8);
    dim3 grid((unsigned)blocks, (unsigned)m.n_tensors);
    adamw_multi_tensor_kernel<<<grid, 256, 0, s>>>(args);
    KERNEL_CHECK();
    nvtxRangePop();
}

static void zero_grads(const Model &m, const Shadow &grads, cudaStream_t s) {
    ZeroArgs args;
    memset(&args, 0, sizeof(args));
    long long max_numel = 0;
    for (int i = 0; i < m.n_tensors; ++i) {
        args.ptrs[i] = grads.t[i];
        args.numel[i] = (long long)m.all[i]->numel;
        if (args.numel[i] > max_numel) max_numel = args.numel[i];
    }
    args.num_tensors = m.n_tensors;
    long long blocks = (max_numel + 256 * 8 - 1) / (256 * 8);
    dim3 grid((unsigned)blocks, (unsigned)m.n_tensors);
    zero_multi_tensor_kernel<<<grid, 256, 0, s>>>(args);
    KERNEL_CHECK();
}

// ----------------------------------------------------------------------------------------
// data: a synthetic token stream; targets are the next token

struct Batch {
    std::vector<int> tokens, targets;
};

static void make_batch(Batch &b, uint64_t &state) {
    b.tokens.resize(kTokens);
    b.targets.resize(kTokens);
    for (int s = 0; s < kBatch; ++s) {
        int prev = (int)(rng_next(state) % kVocab);
        for (int t = 0; t < kSeqLen; ++t) {
            // a weakly structured stream: the next token mostly follows from the previous one
            int next = (rng_next(state) % 4 == 0) ? (int)(rng_next(state) % kVocab)
                                                  : (prev * 31 + 7) % kVocab;
            b.tokens[s * kSeqLen + t] = prev;
            b.targets[s * kSeqLen + t] = next;
            prev = next;
        }
    }
}

static int g_forward_passes = 0;

struct Trainer {
    Model model;
    Shadow grads, exp_avg, exp_avg_sq;
    ForwardBuffers acts;
    int *d_tokens = nullptr, *d_targets = nullptr;
    float *d_loss = nullptr;
    cudaStream_t stream = nullptr;
    uint64_t data_state = 0x9E3779B97F4A7C15ull;
    Batch heldout;
};

static void upload_batch(Trainer &tr, const Batch &b) {
    CUDA_CHECK(cudaMemcpyAsync(tr.d_tokens, b.tokens.data(), kTokens * sizeof(int),
                               cudaMemcpyHostToDevice, tr.stream));
    CUDA_CHECK(cudaMemcpyAsync(tr.d_targets, b.targets.data(), kTokens * sizeof(int),
                               cudaMemcpyHostToDevice, tr.stream));
}

static float train_step(Trainer &tr, int step) {
    nvtxRangePushA("train_step");
    CUDA_CHECK(cudaMemsetAsync(tr.d_loss, 0, sizeof(float), tr.stream));
    const float scale = 1.0f / (float)(kTokens * kGradAccum);
    for (int micro = 0; micro < kGradAccum; ++micro) {
        Batch b;
        make_batch(b, tr.data_state);
        upload_batch(tr, b);
        model_forward(tr.model, tr.acts, tr.d_tokens, tr.d_targets, tr.d_loss, kTokens, scale,
                      tr.stream);
        ++g_forward_passes;
        model_backward(tr.model, tr.grads, tr.acts, tr.d_tokens, tr.d_targets, kTokens, scale,
                       tr.stream);
    }
    adamw_update(tr.model, tr.grads, tr.exp_avg, tr.exp_avg_sq, step, tr.stream);
    zero_grads(tr.model, tr.grads, tr.stream);
    float loss = 0.0f;
    CUDA_CHECK(cudaMemcpyAsync(&loss, tr.d_loss, sizeof(float), cudaMemcpyDeviceToHost,
                               tr.stream));
    CUDA_CHECK(cudaStreamSynchronize(tr.stream));
    nvtxRangePop();
    return loss;
}

// Forward only: no activations are kept, so a ping-pong workspace is enough.
static float evaluate(Trainer &tr) {
    nvtxRangePushA("evaluate");
    float *x_ping = (float *)dev_alloc((size_t)kTokens * kDim * sizeof(float), P_TEMPORARY,
                                       "eval.x_ping");
    float *x_pong = (float *)dev_alloc((size_t)kTokens * kDim * sizeof(float), P_TEMPORARY,
                                       "eval.x_pong");
    float *hidden = (float *)dev_alloc((size_t)kTokens * kHidden * sizeof(float), P_TEMPORARY,
                                       "eval.hidden");
    float *logits = (float *)dev_alloc((size_t)kTokens * kVocab * sizeof(float), P_TEMPORARY,
                                       "eval.logits");
    float *d_eval_loss = (float *)dev_alloc(sizeof(float), P_TEMPORARY, "eval.loss");

    ForwardBuffers fb;
    for (int l = 0; l <= kLayers; ++l) fb.x[l] = (l % 2 == 0) ? x_ping : x_pong;
    for (int l = 0; l < kLayers; ++l) fb.a[l] = hidden;
    fb.logits = logits;

    upload_batch(tr, tr.heldout);
    CUDA_CHECK(cudaMemsetAsync(d_eval_loss, 0, sizeof(float), tr.stream));
    model_forward(tr.model, fb, tr.d_tokens, tr.d_targets, d_eval_loss, kTokens,
                  1.0f / (float)kTokens, tr.stream);
    ++g_forward_passes;
    float loss = 0.0f;
    CUDA_CHECK(cudaMemcpyAsync(&loss, d_eval_loss, sizeof(float), cudaMemcpyDeviceToHost,
                               tr.stream));
    CUDA_CHECK(cudaStreamSynchronize(tr.stream));

    dev_free(d_eval_loss);
    dev_free(logits);
    dev_free(hidden);
    dev_free(x_pong);
    dev_free(x_ping);
    nvtxRangePop();
    return loss;
}

// ----------------------------------------------------------------------------------------

int main() {
    Trainer tr;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&tr.stream, cudaStreamNonBlocking));

    build_model(tr.model);
    if (tr.model.n_tensors > kMaxTensors) {
        fprintf(stderr, "too many parameter tensors\n");
        return 1;
    }
    alloc_shadow(tr.model, tr.grads, P_GRADIENTS, "grad");
    alloc_shadow(tr.model, tr.exp_avg, P_OPTIMIZER, "adam.m");
    alloc_shadow(tr.model, tr.exp_avg_sq, P_OPTIMIZER, "adam.v");

    tr.d_tokens = (int *)dev_alloc(kTokens * sizeof(int), P_ACTIVATIONS, "tokens");
    tr.d_targets = (int *)dev_alloc(kTokens * sizeof(int), P_ACTIVATIONS, "targets");
    for (int l = 0; l <= kLayers; ++l)
        tr.acts.x[l] = (float *)dev_alloc((size_t)kTokens * kDim * sizeof(float), P_ACTIVATIONS,
                                          "x");
    for (int l = 0; l < kLayers; ++l)
        tr.acts.a[l] = (float *)dev_alloc((size_t)kTokens * kHidden * sizeof(float),
                                          P_ACTIVATIONS, "a");
    tr.acts.logits = (float *)dev_alloc((size_t)kTokens * kVocab * sizeof(float),
                                        P_ACTIVATIONS, "logits");
    tr.d_loss = (float *)dev_alloc(sizeof(float), P_TEMPORARY, "loss");

    uint64_t heldout_state = 0xB7E151628AED2A6Bull;
    make_batch(tr.heldout, heldout_state);

    const size_t n_params = model_params(tr.model);
    printf("model: %zu parameters in %d tensors, %d tokens per micro-batch, %d micro-batches\n",
           n_params, tr.model.n_tensors, kTokens, kGradAccum);

    int steps_done = 0;
    for (int step = 1; step <= kSteps; ++step) {
        float loss = train_step(tr, step);
        steps_done = step;
        printf("step %d train loss %.4f\n", step, loss);
        if (step % kEvalEvery == 0) {
            float eval_loss = evaluate(tr);
            printf("step %d eval loss %.4f\n", step, eval_loss);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    // tear down
    dev_free(tr.d_loss);
    dev_free(tr.acts.logits);
    for (int l = 0; l < kLayers; ++l) dev_free(tr.acts.a[l]);
    for (int l = 0; l <= kLayers; ++l) dev_free(tr.acts.x[l]);
    dev_free(tr.d_targets);
    dev_free(tr.d_tokens);
    for (int i = 0; i < tr.model.n_tensors; ++i) {
        dev_free(tr.exp_avg_sq.t[i]);
        dev_free(tr.exp_avg.t[i]);
        dev_free(tr.grads.t[i]);
        dev_free(tr.model.all[i]->data);
    }
    CUDA_CHECK(cudaStreamDestroy(tr.stream));

    size_t sum = 0;
    for (int p = 0; p < P_COUNT; ++p) sum += g_ledger.peak_by[p];
    if (sum != g_ledger.peak_bytes) {
        fprintf(stderr, "ledger inconsistent\n");
        return 1;
    }

    printf("ledger {\"program\":\"h09_handgemm_multitensor_eval\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":%d,\"forward_passes\":%d,\"params\":%zu,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           steps_done, kGradAccum, g_forward_passes, n_params, g_ledger.peak_bytes);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeNames[p], g_ledger.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

// h19_bert_infer_fp32_batches: fp32 BERT-style encoder inference server loop.
//
// Spec: fp32 encoder inference (6 layers, hidden 768, 12 heads, FFN 3072, cuBLAS
// SGEMMs for the projections and strided-batched SGEMMs for the attention score and
// context products). The weights are loaded from host once at start-up, one cudaMalloc
// per tensor (embeddings, per-layer fused QKV / output / FFN matrices, biases, LayerNorm
// parameters, pooler). The server then handles 12 requests of varying batch size (1 to 32
// sequences of 128 tokens each): for every request it allocates the input ids, the
// per-layer activation buffers of all 6 layers and the attention scratch (per-head Q/K/V,
// scores, per-head context) when the request starts, runs the forward pass, and frees them
// all when the request ends. The output buffer for the pooled [CLS] embeddings is
// allocated once for the largest batch (32) and reused by every request. Ledger: kind
// inference, 12 forward passes; inputs are `activations`, per-layer activations of the
// inference pass and attention scratch are `temporary`, the persistent pooled-output
// buffer is counted as `activations` (model I/O).
//
// GEMMs are only timed by the simulated device, not computed on the CPU:
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// ---------------------------------------------------------------- error checks

#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,   \
                    cudaGetErrorString(e_));                                       \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

#define CB(call)                                                                   \
    do {                                                                           \
        cublasStatus_t s_ = (call);                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,   \
                    cublasGetStatusString(s_));                                    \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

#define CKLAUNCH() CK(cudaGetLastError())

// ---------------------------------------------------------------- model config

static const int kLayers = 6;
static const int kHidden = 768;
static const int kHeads = 12;
static const int kHeadDim = kHidden / kHeads;  // 64
static const int kFFN = 3072;
static const int kVocab = 30522;
static const int kMaxPos = 512;
static const int kTypes = 2;
static const int kSeq = 128;
static const int kMaxBatch = 32;
static const float kEps = 1e-12f;

// ---------------------------------------------------------------- ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeNames[P_COUNT] = {"weights", "optimizer", "gradients",
                                             "activations", "temporary",
                                             "functionality", "mixed"};

struct Tracked {
    void *ptr;
    size_t bytes;
    Purpose purpose;
};

struct Ledger {
    std::vector<Tracked> live;
    unsigned long long live_by[P_COUNT] = {0};
    unsigned long long live_total = 0;
    unsigned long long peak = 0;
    unsigned long long peak_by[P_COUNT] = {0};
} g_ledger;

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    CK(cudaMalloc(&p, bytes));
    g_ledger.live.push_back({p, bytes, purpose});
    g_ledger.live_by[purpose] += bytes;
    g_ledger.live_total += bytes;
    if (g_ledger.live_total > g_ledger.peak) {
        g_ledger.peak = g_ledger.live_total;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    for (size_t i = 0; i < g_ledger.live.size(); ++i) {
        if (g_ledger.live[i].ptr == p) {
            CK(cudaFree(p));
            g_ledger.live_by[g_ledger.live[i].purpose] -= g_ledger.live[i].bytes;
            g_ledger.live_total -= g_ledger.live[i].bytes;
            g_ledger.live.erase(g_ledger.live.begin() + i);
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------- kernels

// Block-wide sum of one float (blockDim.x a multiple of 32, at most 1024).
__device__ float block_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = (threadIdx.x < nwarps) ? shared[threadIdx.x] : 0.f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}

__device__ float block_max(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = (threadIdx.x < nwarps) ? shared[threadIdx.x] : -INFINITY;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    return shared[0];
}

// One block per token: word + position + token-type embedding, then LayerNorm.
__global__ void embed_layernorm_kernel(const int *ids, const float *word, const float *pos,
                                       const float *type, const float *gamma,
                                       const float *beta, float *out, int seq, int hidden,
                                       float eps) {
    __shared__ float red[32];
    int t = blockIdx.x;
    int s = t % seq;
    int id = ids[t];
    float local[4];
    int n = 0;
    float sum = 0.f;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x, ++n) {
        float v = word[(size_t)id * hidden + c] + pos[(size_t)s * hidden + c] + type[c];
        local[n] = v;
        sum += v;
    }
    float mean = block_sum(sum, red) / hidden;
    float sq = 0.f;
    for (int i = 0; i < n; ++i) {
        float d = local[i] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, red) / hidden + eps);
    n = 0;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x, ++n)
        out[(size_t)t * hidden + c] = (local[n] - mean) * rstd * gamma[c] + beta[c];
}

// qkv [T, 3*H] (+bias) -> q, k, v each [B, heads, seq, head_dim].
__global__ void add_bias_split_heads_kernel(const float *qkv, const float *bias, float *q,
                                            float *k, float *v, int tokens, int seq,
                                            int heads, int head_dim) {
    int hidden = heads * head_dim;
    size_t total = (size_t)tokens * 3 * hidden;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(i / (3 * hidden));
        int c = (int)(i % (3 * hidden));
        int which = c / hidden;
        int h = (c % hidden) / head_dim;
        int d = c % head_dim;
        int b = t / seq, s = t % seq;
        float val = qkv[i] + bias[c];
        size_t dst = (((size_t)b * heads + h) * seq + s) * head_dim + d;
        float *out = which == 0 ? q : (which == 1 ? k : v);
        out[dst] = val;
    }
}

// One block per score row [b, h, i, :]; keys whose id is padding (0) are masked.
__global__ void masked_softmax_kernel(float *scores, const int *ids, int seq, int heads) {
    __shared__ float red[32];
    size_t row = blockIdx.x;
    int b = (int)(row / ((size_t)heads * seq));
    float *p = scores + row * seq;
    int j = threadIdx.x;
    float x = -INFINITY;
    if (j < seq) x = ids[b * seq + j] == 0 ? -10000.f + p[j] : p[j];
    float m = block_max(x, red);
    float e = (j < seq) ? __expf(x - m) : 0.f;
    float s = block_sum(e, red);
    if (j < seq) p[j] = e / s;
}

// ctx_heads [B, heads, seq, head_dim] -> ctx [T, H].
__global__ void merge_heads_kernel(const float *ctx_heads, float *ctx, int tokens, int seq,
                                   int heads, int head_dim) {
    int hidden = heads * head_dim;
    size_t total = (size_t)tokens * hidden;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(i / hidden);
        int c = (int)(i % hidden);
        int h = c / head_dim, d = c % head_dim;
        int b = t / seq, s = t % seq;
        ctx[i] = ctx_heads[(((size_t)b * heads + h) * seq + s) * head_dim + d];
    }
}

// One block per token: out = LayerNorm(x + bias + residual).
__global__ void bias_residual_layernorm_kernel(const float *x, const float *bias,
                                               const float *residual, const float *gamma,
                                               const float *beta, float *out, int hidden,
                                               float eps) {
    __shared__ float red[32];
    size_t base = (size_t)blockIdx.x * hidden;
    float local[4];
    int n = 0;
    float sum = 0.f;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x, ++n) {
        float v = x[base + c] + bias[c] + residual[base + c];
        local[n] = v;
        sum += v;
    }
    float mean = block_sum(sum, red) / hidden;
    float sq = 0.f;
    for (int i = 0; i < n; ++i) {
        float d = local[i] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, red) / hidden + eps);
    n = 0;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x, ++n)
        out[base + c] = (local[n] - mean) * rstd * gamma[c] + beta[c];
}

// In place: x = gelu(x + bias) (erf form, as BERT).
__global__ void bias_gelu_kernel(float *x, const float *bias, size_t n, int cols) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = x[i] + bias[i % cols];
        x[i] = 0.5f * v * (1.f + erff(v * 0.70710678f));
    }
}

// In place: x = tanh(x + bias).
__global__ void bias_tanh_kernel(float *x, const float *bias, size_t n, int cols) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = tanhf(x[i] + bias[i % cols]);
}

static int grid_for(size_t n, int block) {
    size_t g = (n + block - 1) / block;
    if (g > 4096) g = 4096;
    return (int)g;
}

// ---------------------------------------------------------------- weights

struct LayerWeights {
    float *w_qkv, *b_qkv;   // [3H, H], [3H]  (q, k, v fused at load time)
    float *w_o, *b_o;       // [H, H], [H]
    float *ln1_g, *ln1_b;   // [H]
    float *w_1, *b_1;       // [FFN, H], [FFN]
    float *w_2, *b_2;       // [H, FFN], [H]
    float *ln2_g, *ln2_b;   // [H]
};

struct Model {
    float *word_emb, *pos_emb, *type_emb, *emb_ln_g, *emb_ln_b;
    LayerWeights layer[kLayers];
    float *pool_w, *pool_b;
    long long params = 0;
};

// Stand-in for reading a checkpoint: deterministic host values for one tensor.
struct HostLoader {
    std::vector<float> staging;
    uint64_t state = 0x9E3779B97F4A7C15ull;

    float next() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return ((int32_t)(state >> 33) / 2147483648.0f) * 0.04f;  // ~U(-0.02, 0.02)
    }

    // One cudaMalloc per tensor, then a host-to-device copy.
    float *load(Model &m, size_t count, float fill, bool random) {
        staging.resize(count);
        for (size_t i = 0; i < count; ++i) staging[i] = random ? next() : fill;
        float *d = dev_alloc<float>(count, P_WEIGHTS);
        CK(cudaMemcpy(d, staging.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        m.params += (long long)count;
        return d;
    }
};

static void load_model(Model &m) {
    HostLoader ld;
    m.word_emb = ld.load(m, (size_t)kVocab * kHidden, 0.f, true);
    m.pos_emb = ld.load(m, (size_t)kMaxPos * kHidden, 0.f, true);
    m.type_emb = ld.load(m, (size_t)kTypes * kHidden, 0.f, true);
    m.emb_ln_g = ld.load(m, kHidden, 1.f, false);
    m.emb_ln_b = ld.load(m, kHidden, 0.f, false);
    for (int l = 0; l < kLayers; ++l) {
        LayerWeights &w = m.layer[l];
        w.w_qkv = ld.load(m, (size_t)3 * kHidden * kHidden, 0.f, true);
        w.b_qkv = ld.load(m, 3 * kHidden, 0.f, true);
        w.w_o = ld.load(m, (size_t)kHidden * kHidden, 0.f, true);
        w.b_o = ld.load(m, kHidden, 0.f, true);
        w.ln1_g = ld.load(m, kHidden, 1.f, false);
        w.ln1_b = ld.load(m, kHidden, 0.f, false);
        w.w_1 = ld.load(m, (size_t)kFFN * kHidden, 0.f, true);
        w.b_1 = ld.load(m, kFFN, 0.f, true);
        w.w_2 = ld.load(m, (size_t)kHidden * kFFN, 0.f, true);
        w.b_2 = ld.load(m, kHidden, 0.f, true);
        w.ln2_g = ld.load(m, kHidden, 1.f, false);
        w.ln2_b = ld.load(m, kHidden, 0.f, false);
    }
    m.pool_w = ld.load(m, (size_t)kHidden * kHidden, 0.f, true);
    m.pool_b = ld.load(m, kHidden, 0.f, true);
}

// ---------------------------------------------------------------- request buffers

struct LayerActs {
    float *qkv;        // [T, 3H]
    float *ctx;        // [T, H]
    float *attn_out;   // [T, H]  output projection, before bias/residual
    float *attn_norm;  // [T, H]  LayerNorm 1 output
    float *ffn_inter;  // [T, FFN]
    float *ffn_out;    // [T, H]
    float *out;        // [T, H]  LayerNorm 2 output = layer output
};

struct Request {
    int batch = 0;
    int tokens = 0;
    int *ids = nullptr;          // [B, S]
    float *emb = nullptr;        // [T, H]
    LayerActs act[kLayers];
    // attention scratch, reused by every layer of the request
    float *q_heads = nullptr, *k_heads = nullptr, *v_heads = nullptr;  // [B, NH, S, D]
    float *scores = nullptr;     // [B, NH, S, S]
    float *ctx_heads = nullptr;  // [B, NH, S, D]
};

static void request_begin(Request &r, int batch) {
    r.batch = batch;
    r.tokens = batch * kSeq;
    size_t T = (size_t)r.tokens;
    r.ids = dev_alloc<int>(T, P_ACTIVATIONS);
    r.emb = dev_alloc<float>(T * kHidden, P_TEMPORARY);
    for (int l = 0; l < kLayers; ++l) {
        LayerActs &a = r.act[l];
        a.qkv = dev_alloc<float>(T * 3 * kHidden, P_TEMPORARY);
        a.ctx = dev_alloc<float>(T * kHidden, P_TEMPORARY);
        a.attn_out = dev_alloc<float>(T * kHidden, P_TEMPORARY);
        a.attn_norm = dev_alloc<float>(T * kHidden, P_TEMPORARY);
        a.ffn_inter = dev_alloc<float>(T * kFFN, P_TEMPORARY);
        a.ffn_out = dev_alloc<float>(T * kHidden, P_TEMPORARY);
        a.out = dev_alloc<float>(T * kHidden, P_TEMPORARY);
    }
    r.q_heads = dev_alloc<float>(T * kHidden, P_TEMPORARY);
    r.k_heads = dev_alloc<float>(T * kHidden, P_TEMPORARY);
    r.v_heads = dev_alloc<float>(T * kHidden, P_TEMPORARY);
    r.scores = dev_alloc<float>((size_t)batch * kHeads * kSeq * kSeq, P_TEMPORARY);
    r.ctx_heads = dev_alloc<float>(T * kHidden, P_TEMPORARY);
}

static void request_end(Request &r) {
    dev_free(r.ctx_heads);
    dev_free(r.scores);
    dev_free(r.v_heads);
    dev_free(r.k_heads);
    dev_free(r.q_heads);
    for (int l = kLayers - 1; l >= 0; --l) {
        LayerActs &a = r.act[l];
        dev_free(a.out);
        dev_free(a.ffn_out);
        dev_free(a.ffn_inter);
        dev_free(a.attn_norm);
        dev_free(a.attn_out);
        dev_free(a.ctx);
        dev_free(a.qkv);
    }
    dev_free(r.emb);
    dev_free(r.ids);
    r = Request();
}

// ---------------------------------------------------------------- forward

// Row-major Y[T, out] = X[T, in] * W[out, in]^T  (column-major: Y^T = W * X^T).
static void linear(cublasHandle_t h, const float *W, const float *X, float *Y, int out,
                   int in, int tokens) {
    const float one = 1.f, zero = 0.f;
    CB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, &one, W, in, X, in, &zero,
                   Y, out));
}

static void encoder_forward(cublasHandle_t h, cudaStream_t st, const Model &m, Request &r,
                            float *pooled) {
    const int T = r.tokens, B = r.batch;
    const int BH = B * kHeads;
    const float one = 1.f, zero = 0.f;
    const float scale = 1.f / sqrtf((float)kHeadDim);

    embed_layernorm_kernel<<<T, 256, 0, st>>>(r.ids, m.word_emb, m.pos_emb, m.type_emb,
                                              m.emb_ln_g, m.emb_ln_b, r.emb, kSeq, kHidden,
                                              kEps);
    CKLAUNCH();

    const float *x = r.emb;
    for (int l = 0; l < kLayers; ++l) {
        const LayerWeights &w = m.layer[l];
        LayerActs &a = r.act[l];

        linear(h, w.w_qkv, x, a.qkv, 3 * kHidden, kHidden, T);
        add_bias_split_heads_kernel<<<grid_for((size_t)T * 3 * kHidden, 256), 256, 0, st>>>(
            a.qkv, w.b_qkv, r.q_heads, r.k_heads, r.v_heads, T, kSeq, kHeads, kHeadDim);
        CKLAUNCH();

        // scores[bh] (row-major S x S) = scale * Q[bh] K[bh]^T
        CB(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, kSeq, kSeq, kHeadDim,
                                     &scale, r.k_heads, kHeadDim, (long long)kSeq * kHeadDim,
                                     r.q_heads, kHeadDim, (long long)kSeq * kHeadDim, &zero,
                                     r.scores, kSeq, (long long)kSeq * kSeq, BH));
        masked_softmax_kernel<<<BH * kSeq, kSeq, 0, st>>>(r.scores, r.ids, kSeq, kHeads);
        CKLAUNCH();
        // ctx[bh] (row-major S x D) = P[bh] V[bh]
        CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, kHeadDim, kSeq, kSeq, &one,
                                     r.v_heads, kHeadDim, (long long)kSeq * kHeadDim,
                                     r.scores, kSeq, (long long)kSeq * kSeq, &zero,
                                     r.ctx_heads, kHeadDim, (long long)kSeq * kHeadDim, BH));
        merge_heads_kernel<<<grid_for((size_t)T * kHidden, 256), 256, 0, st>>>(
            r.ctx_heads, a.ctx, T, kSeq, kHeads, kHeadDim);
        CKLAUNCH();

        linear(h, w.w_o, a.ctx, a.attn_out, kHidden, kHidden, T);
        bias_residual_layernorm_kernel<<<T, 256, 0, st>>>(a.attn_out, w.b_o, x, w.ln1_g,
                                                          w.ln1_b, a.attn_norm, kHidden, kEps);
        CKLAUNCH();

        linear(h, w.w_1, a.attn_norm, a.ffn_inter, kFFN, kHidden, T);
        bias_gelu_kernel<<<grid_for((size_t)T * kFFN, 256), 256, 0, st>>>(
            a.ffn_inter, w.b_1, (size_t)T * kFFN, kFFN);
        CKLAUNCH();
        linear(h, w.w_2, a.ffn_inter, a.ffn_out, kHidden, kFFN, T);
        bias_residual_layernorm_kernel<<<T, 256, 0, st>>>(a.ffn_out, w.b_2, a.attn_norm,
                                                          w.ln2_g, w.ln2_b, a.out, kHidden,
                                                          kEps);
        CKLAUNCH();
        x = a.out;
    }

    // Pooler: tanh(W_p * h_[CLS] + b_p); the [CLS] rows are every kSeq-th row of x.
    CB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, B, kHidden, &one, m.pool_w, kHidden,
                   x, kSeq * kHidden, &zero, pooled, kHidden));
    bias_tanh_kernel<<<grid_for((size_t)B * kHidden, 256), 256, 0, st>>>(
        pooled, m.pool_b, (size_t)B * kHidden, kHidden);
    CKLAUNCH();
}

// ---------------------------------------------------------------- main

static void make_ids(int *ids, int batch, int request) {
    for (int b = 0; b < batch; ++b) {
        int len = 16 + ((request * 37 + b * 53) % (kSeq - 16 + 1));  // 16..128 real tokens
        int *row = ids + (size_t)b * kSeq;
        for (int s = 0; s < kSeq; ++s) {
            if (s == 0) row[s] = 101;                     // [CLS]
            else if (s == len - 1) row[s] = 102;          // [SEP]
            else if (s < len) row[s] = 1000 + (request * 7919 + b * 131 + s * 17) % 29000;
            else row[s] = 0;                              // [PAD]
        }
    }
}

int main() {
    static const int kRequests = 12;
    static const int kBatches[kRequests] = {4, 1, 16, 8, 32, 2, 12, 24, 7, 32, 3, 20};

    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));
    cublasHandle_t blas;
    CB(cublasCreate(&blas));
    CB(cublasSetStream(blas, stream));
    CB(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));

    Model model;
    load_model(model);
    printf("loaded encoder: %d layers, hidden %d, %lld parameters (%.1f MiB fp32)\n", kLayers,
           kHidden, model.params, model.params * 4.0 / (1024.0 * 1024.0));

    // Pooled-embedding output, sized once for the largest batch the server accepts.
    float *pooled = dev_alloc<float>((size_t)kMaxBatch * kHidden, P_ACTIVATIONS);

    int *h_ids = nullptr;
    float *h_pooled = nullptr;
    CK(cudaMallocHost(&h_ids, (size_t)kMaxBatch * kSeq * sizeof(int)));
    CK(cudaMallocHost(&h_pooled, (size_t)kMaxBatch * kHidden * sizeof(float)));

    int forward_passes = 0;
    for (int i = 0; i < kRequests; ++i) {
        int batch = kBatches[i];
        Request req;
        request_begin(req, batch);
        make_ids(h_ids, batch, i);
        CK(cudaMemcpyAsync(req.ids, h_ids, (size_t)batch * kSeq * sizeof(int),
                           cudaMemcpyHostToDevice, stream));
        encoder_forward(blas, stream, model, req, pooled);
        CK(cudaMemcpyAsync(h_pooled, pooled, (size_t)batch * kHidden * sizeof(float),
                           cudaMemcpyDeviceToHost, stream));
        CK(cudaStreamSynchronize(stream));
        ++forward_passes;
        printf("request %2d: batch %2d, %4d tokens, %d pooled embeddings returned\n", i + 1,
               batch, req.tokens, batch);
        request_end(req);
    }

    dev_free(pooled);
    CK(cudaFreeHost(h_pooled));
    CK(cudaFreeHost(h_ids));

    // Weights are freed at shutdown.
    std::vector<void *> weights;
    for (const Tracked &t : g_ledger.live) weights.push_back(t.ptr);
    for (void *p : weights) dev_free(p);

    CB(cublasDestroy(blas));
    CK(cudaStreamDestroy(stream));

    printf("ledger {\"program\":\"h19_bert_infer_fp32_batches\",\"kind\":\"inference\","
           "\"steps\":0,\"micro_batches_per_step\":0,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"none\","
           "\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           forward_passes, model.params, g_ledger.peak);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%llu", p ? "," : "", kPurposeNames[p], g_ledger.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

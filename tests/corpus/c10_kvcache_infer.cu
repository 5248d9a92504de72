// c10_kvcache_infer: greedy generation with a small decoder-only transformer and a KV
// cache that grows by reallocation.
//
// A GPT-style model (6 pre-LayerNorm layers, width 512, 8 heads, MLP 4x, vocabulary 16384,
// learned positions, LM head tied to the token embedding) whose bf16 weights are built on
// the host (standing in for a checkpoint) and loaded tensor by tensor with cudaMalloc +
// cudaMemcpy before generation. A batch of 8 prompts of 16 tokens is first run through a
// prefill pass, which fills the KV cache and yields the first generated token; decode
// passes then produce one token per pass until 64 tokens are generated (1 prefill + 63
// decode forward passes). The KV cache (keys and values of all layers, one allocation,
// layout [layer][k|v][batch][head][capacity][head_dim]) starts with room for 16 positions
// and, when full, is reallocated at double capacity (new cudaMalloc, a strided
// device-to-device copy, free of the old one). The per-pass buffers (hidden state,
// LayerNorm output, QKV, attention scores and output, MLP intermediate, logits) are
// allocated at the start of every pass and freed at its end. Matmuls are cublasGemmEx with
// bf16 inputs and fp32 compute; attention, LayerNorm, GELU and argmax are custom kernels.
// GEMM results are not needed on the simulated device (kernel bodies do not run there),
// so the harness turns the CPU evaluation of GEMMs off to keep the run short.
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
// Device-memory ledger
// ---------------------------------------------------------------------------------------

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

struct LiveAlloc { void *ptr; size_t bytes; int purpose; };

struct Ledger {
    std::vector<LiveAlloc> live;
    size_t live_bytes = 0;
    size_t live_by[P_COUNT] = {0};
    size_t peak_bytes = 0;
    size_t peak_by[P_COUNT] = {0};
    const char *phase = "setup";
};
static Ledger g_ledger;

struct RunInfo {
    int forward_passes = 0;
    long long params = 0;
};
static RunInfo g_run;

static void print_ledger(const char *oom_json) {
    const Ledger &L = g_ledger;
    printf("ledger {\"program\":\"c10_kvcache_infer\",\"kind\":\"inference\","
           "\"steps\":0,\"micro_batches_per_step\":0,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"bf16\",\"master_weights\":false,"
           "\"optimizer\":\"none\",\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           g_run.forward_passes, g_run.params, L.peak_bytes);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":%s}\n", oom_json ? oom_json : "null");
    fflush(stdout);
}

static void *dev_alloc(size_t bytes, Purpose purpose) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        Ledger &L = g_ledger;
        char buf[1024];
        int n = snprintf(buf, sizeof buf,
                         "{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\","
                         "\"step\":0,\"live_bytes\":%zu,\"live_by_purpose\":{",
                         bytes, kPurposeName[purpose], L.phase, L.live_bytes);
        int dom = 0;
        for (int q = 0; q < P_COUNT; ++q) {
            n += snprintf(buf + n, sizeof buf - n, "%s\"%s\":%zu", q ? "," : "",
                          kPurposeName[q], L.live_by[q]);
            if (L.live_by[q] > L.live_by[dom]) dom = q;
        }
        snprintf(buf + n, sizeof buf - n, "},\"dominant\":\"%s\"}", kPurposeName[dom]);
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        print_ledger(buf);
        exit(3);
    }
    CUDA_CHECK(err);
    Ledger &L = g_ledger;
    L.live.push_back({p, bytes, purpose});
    L.live_bytes += bytes;
    L.live_by[purpose] += bytes;
    if (L.live_bytes > L.peak_bytes) {
        L.peak_bytes = L.live_bytes;
        memcpy(L.peak_by, L.live_by, sizeof L.peak_by);
    }
    return p;
}

static void dev_free(void *p) {
    if (!p) return;
    Ledger &L = g_ledger;
    for (size_t i = 0; i < L.live.size(); ++i) {
        if (L.live[i].ptr == p) {
            L.live_bytes -= L.live[i].bytes;
            L.live_by[L.live[i].purpose] -= L.live[i].bytes;
            L.live.erase(L.live.begin() + i);
            CUDA_CHECK(cudaFree(p));
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------------------------------
// Model configuration
// ---------------------------------------------------------------------------------------

static const int kLayers = 6;
static const int kDim = 512;
static const int kHeads = 8;
static const int kHeadDim = kDim / kHeads;   // 64
static const int kFF = 4 * kDim;             // 2048
static const int kVocab = 16384;
static const int kMaxPos = 128;
static const int kBatch = 8;
static const int kPrompt = 16;
static const int kNewTokens = 64;
static const int kTotalLen = kPrompt + kNewTokens;   // token buffer row length
static const int kInitialCacheCap = 16;

typedef __nv_bfloat16 bf16;

struct LayerWeights {
    bf16 *ln1_g, *ln1_b;
    bf16 *w_qkv, *b_qkv;   // [3*dim, dim], [3*dim]
    bf16 *w_o, *b_o;       // [dim, dim], [dim]
    bf16 *ln2_g, *ln2_b;
    bf16 *w_fc, *b_fc;     // [ff, dim], [ff]
    bf16 *w_proj, *b_proj; // [dim, ff], [dim]
};

struct Model {
    bf16 *tok_emb;   // [vocab, dim], also the LM head
    bf16 *pos_emb;   // [max_pos, dim]
    LayerWeights layer[kLayers];
    bf16 *lnf_g, *lnf_b;
    std::vector<bf16 *> tensors;
};

struct KVCache {
    bf16 *data = nullptr;   // [layer][2][batch][head][cap][head_dim]
    int cap = 0;
    int len = 0;            // filled positions
};

static size_t kv_bytes(int cap) {
    return (size_t)kLayers * 2 * kBatch * kHeads * cap * kHeadDim * sizeof(bf16);
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

__device__ float block_reduce_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = (threadIdx.x < nwarps) ? shared[threadIdx.x] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    float r = shared[0];
    __syncthreads();
    return r;
}

__device__ float block_reduce_max(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = (threadIdx.x < nwarps) ? shared[threadIdx.x] : -INFINITY;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    float r = shared[0];
    __syncthreads();
    return r;
}

// hidden[b*T + t] = tok_emb[tokens[b][start + t]] + pos_emb[start + t]
__global__ void embed_tokens(const int *__restrict__ tokens, int tokens_ld,
                             const bf16 *__restrict__ tok_emb, const bf16 *__restrict__ pos_emb,
                             bf16 *__restrict__ hidden, int T, int start, int dim) {
    int row = blockIdx.x;
    int b = row / T, t = row % T;
    int tok = tokens[b * tokens_ld + start + t];
    const bf16 *te = tok_emb + (size_t)tok * dim;
    const bf16 *pe = pos_emb + (size_t)(start + t) * dim;
    bf16 *h = hidden + (size_t)row * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x)
        h[c] = __float2bfloat16(__bfloat162float(te[c]) + __bfloat162float(pe[c]));
}

// One block per output row; input row = blockIdx.x * in_step + in_offset.
__global__ void layernorm(const bf16 *__restrict__ in, bf16 *__restrict__ out,
                          const bf16 *__restrict__ gamma, const bf16 *__restrict__ beta,
                          int dim, int in_step, int in_offset) {
    __shared__ float shared[32];
    const bf16 *x = in + (size_t)(blockIdx.x * in_step + in_offset) * dim;
    bf16 *y = out + (size_t)blockIdx.x * dim;
    float s = 0.0f;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) s += __bfloat162float(x[c]);
    float mean = block_reduce_sum(s, shared) / dim;
    float v = 0.0f;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float d = __bfloat162float(x[c]) - mean;
        v += d * d;
    }
    float rstd = rsqrtf(block_reduce_sum(v, shared) / dim + 1e-5f);
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float d = (__bfloat162float(x[c]) - mean) * rstd;
        y[c] = __float2bfloat16(d * __bfloat162float(gamma[c]) + __bfloat162float(beta[c]));
    }
}

__global__ void bias_add(bf16 *__restrict__ x, const bf16 *__restrict__ bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(bias[i % cols]));
}

__global__ void bias_gelu(bf16 *__restrict__ x, const bf16 *__restrict__ bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __bfloat162float(x[i]) + __bfloat162float(bias[i % cols]);
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        x[i] = __float2bfloat16(0.5f * v * (1.0f + tanhf(u)));
    }
}

// Append the K and V of T new positions (from the fused qkv projection) to the cache.
__global__ void kv_append(const bf16 *__restrict__ qkv, bf16 *__restrict__ cache, int layer,
                          int T, int start, int cap) {
    int row = blockIdx.x;          // b*T + t
    int b = row / T, t = row % T;
    const bf16 *src = qkv + (size_t)row * 3 * kDim;
    for (int c = threadIdx.x; c < kDim; c += blockDim.x) {
        int h = c / kHeadDim, d = c % kHeadDim;
        size_t kidx = ((((size_t)layer * 2 + 0) * kBatch + b) * kHeads + h) * cap + (start + t);
        size_t vidx = ((((size_t)layer * 2 + 1) * kBatch + b) * kHeads + h) * cap + (start + t);
        cache[kidx * kHeadDim + d] = src[kDim + c];
        cache[vidx * kHeadDim + d] = src[2 * kDim + c];
    }
}

// scores[b][h][t][j] = q(b,t,h) . k(b,h,j) / sqrt(hd) for j <= start + t (causal)
__global__ void attn_scores(const bf16 *__restrict__ qkv, const bf16 *__restrict__ cache,
                            float *__restrict__ scores, int layer, int T, int start, int cap) {
    int bh = blockIdx.x;           // b*heads + h
    int t = blockIdx.y;
    int b = bh / kHeads, h = bh % kHeads;
    __shared__ float q[kHeadDim];
    const bf16 *qsrc = qkv + (size_t)(b * T + t) * 3 * kDim + h * kHeadDim;
    for (int d = threadIdx.x; d < kHeadDim; d += blockDim.x) q[d] = __bfloat162float(qsrc[d]);
    __syncthreads();
    const bf16 *K = cache + ((((size_t)layer * 2 + 0) * kBatch + b) * kHeads + h) * cap * kHeadDim;
    float *srow = scores + ((size_t)bh * T + t) * cap;
    const float scale = rsqrtf((float)kHeadDim);
    int n = start + t + 1;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const bf16 *k = K + (size_t)j * kHeadDim;
        float s = 0.0f;
        for (int d = 0; d < kHeadDim; ++d) s += q[d] * __bfloat162float(k[d]);
        srow[j] = s * scale;
    }
}

// out(b,t,h,:) = softmax(scores[b][h][t][0..start+t]) . V(b,h)   (blockDim = head_dim)
__global__ void attn_softmax_av(float *__restrict__ scores, const bf16 *__restrict__ cache,
                                bf16 *__restrict__ out, int layer, int T, int start, int cap) {
    __shared__ float shared[32];
    int bh = blockIdx.x, t = blockIdx.y;
    int b = bh / kHeads, h = bh % kHeads;
    float *srow = scores + ((size_t)bh * T + t) * cap;
    int n = start + t + 1;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, srow[j]);
    m = block_reduce_max(m, shared);
    float s = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float e = __expf(srow[j] - m);
        srow[j] = e;
        s += e;
    }
    s = block_reduce_sum(s, shared);   // also orders the writes above before the reads below
    float inv = 1.0f / s;
    const bf16 *V = cache + ((((size_t)layer * 2 + 1) * kBatch + b) * kHeads + h) * cap * kHeadDim;
    for (int d = threadIdx.x; d < kHeadDim; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < n; ++j) acc += srow[j] * __bfloat162float(V[(size_t)j * kHeadDim + d]);
        out[(size_t)(b * T + t) * kDim + h * kHeadDim + d] = __float2bfloat16(acc * inv);
    }
}

// Greedy sampling: tokens[b][pos] = argmax(logits[b])
__global__ void argmax_sample(const float *__restrict__ logits, int vocab, int *__restrict__ tokens,
                              int tokens_ld, int pos) {
    __shared__ float best_v[256];
    __shared__ int best_i[256];
    const float *z = logits + (size_t)blockIdx.x * vocab;
    float bv = -INFINITY;
    int bi = 0;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x)
        if (z[i] > bv) { bv = z[i]; bi = i; }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float ov = best_v[threadIdx.x + s];
            int oi = best_i[threadIdx.x + s];
            if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])) {
                best_v[threadIdx.x] = ov;
                best_i[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) tokens[blockIdx.x * tokens_ld + pos] = best_i[0];
}

// ---------------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------------

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint32_t next() {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        return (uint32_t)(s >> 32);
    }
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }
};

static uint16_t f32_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static int grid_for(size_t n, int threads) {
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16;
    return (int)blocks;
}

// Row-major Y[rows, out] = X[rows, in] * W[out, in]^T + beta * Y
static void linear(cublasHandle_t h, const bf16 *W, const bf16 *X, void *Y, cudaDataType_t ytype,
                   int rows, int in, int out, float beta) {
    const float alpha = 1.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &alpha,
                              W, CUDA_R_16BF, in, X, CUDA_R_16BF, in, &beta,
                              Y, ytype, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// "Checkpoint loader": one device tensor per weight, filled from a host buffer.
static bf16 *load_tensor(Model &M, std::vector<uint16_t> &host, size_t n, float scale,
                         float offset, Rng &rng) {
    host.resize(n);
    for (size_t i = 0; i < n; ++i)
        host[i] = f32_to_bf16_bits(offset + (2.0f * rng.uniform() - 1.0f) * scale);
    bf16 *d = (bf16 *)dev_alloc(n * sizeof(bf16), P_WEIGHTS);
    CUDA_CHECK(cudaMemcpy(d, host.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
    g_run.params += (long long)n;
    M.tensors.push_back(d);
    return d;
}

static void load_model(Model &M) {
    std::vector<uint16_t> host;
    Rng rng(20240611);
    const float ws = 0.02f;
    M.tok_emb = load_tensor(M, host, (size_t)kVocab * kDim, ws, 0.0f, rng);
    M.pos_emb = load_tensor(M, host, (size_t)kMaxPos * kDim, 0.01f, 0.0f, rng);
    for (int l = 0; l < kLayers; ++l) {
        LayerWeights &L = M.layer[l];
        L.ln1_g = load_tensor(M, host, kDim, 0.05f, 1.0f, rng);
        L.ln1_b = load_tensor(M, host, kDim, 0.01f, 0.0f, rng);
        L.w_qkv = load_tensor(M, host, (size_t)3 * kDim * kDim, ws, 0.0f, rng);
        L.b_qkv = load_tensor(M, host, (size_t)3 * kDim, 0.01f, 0.0f, rng);
        L.w_o = load_tensor(M, host, (size_t)kDim * kDim, ws, 0.0f, rng);
        L.b_o = load_tensor(M, host, kDim, 0.01f, 0.0f, rng);
        L.ln2_g = load_tensor(M, host, kDim, 0.05f, 1.0f, rng);
        L.ln2_b = load_tensor(M, host, kDim, 0.01f, 0.0f, rng);
        L.w_fc = load_tensor(M, host, (size_t)kFF * kDim, ws, 0.0f, rng);
        L.b_fc = load_tensor(M, host, kFF, 0.01f, 0.0f, rng);
        L.w_proj = load_tensor(M, host, (size_t)kDim * kFF, ws, 0.0f, rng);
        L.b_proj = load_tensor(M, host, kDim, 0.01f, 0.0f, rng);
    }
    M.lnf_g = load_tensor(M, host, kDim, 0.05f, 1.0f, rng);
    M.lnf_b = load_tensor(M, host, kDim, 0.01f, 0.0f, rng);
}

// Make room for `needed` positions: double the capacity until it fits.
static void kv_reserve(KVCache &kv, int needed) {
    if (kv.data == nullptr) {
        kv.cap = kInitialCacheCap;
        while (kv.cap < needed) kv.cap *= 2;
        kv.data = (bf16 *)dev_alloc(kv_bytes(kv.cap), P_ACTIVATIONS);
        kv.len = 0;
        return;
    }
    if (needed <= kv.cap) return;
    int new_cap = kv.cap;
    while (new_cap < needed) new_cap *= 2;
    bf16 *grown = (bf16 *)dev_alloc(kv_bytes(new_cap), P_ACTIVATIONS);
    // Every (layer, k|v, batch, head) row keeps its kv.len filled positions.
    const size_t row_old = (size_t)kv.cap * kHeadDim * sizeof(bf16);
    const size_t row_new = (size_t)new_cap * kHeadDim * sizeof(bf16);
    const size_t nrows = (size_t)kLayers * 2 * kBatch * kHeads;
    CUDA_CHECK(cudaMemcpy2D(grown, row_new, kv.data, row_old,
                            (size_t)kv.len * kHeadDim * sizeof(bf16), nrows,
                            cudaMemcpyDeviceToDevice));
    dev_free(kv.data);
    printf("kv cache grown: %d -> %d positions (%zu bytes)\n", kv.cap, new_cap, kv_bytes(new_cap));
    kv.data = grown;
    kv.cap = new_cap;
}

// One forward pass over T new positions per sequence starting at `start`; writes the next
// token of every sequence at tokens[b][start + T].
static void forward_pass(cublasHandle_t blas, const Model &M, KVCache &kv, int *d_tokens,
                         int T, int start) {
    const int rows = kBatch * T;
    kv_reserve(kv, start + T);

    bf16 *hidden = (bf16 *)dev_alloc((size_t)rows * kDim * sizeof(bf16), P_TEMPORARY);
    bf16 *normed = (bf16 *)dev_alloc((size_t)rows * kDim * sizeof(bf16), P_TEMPORARY);
    bf16 *qkv = (bf16 *)dev_alloc((size_t)rows * 3 * kDim * sizeof(bf16), P_TEMPORARY);
    float *scores = (float *)dev_alloc((size_t)kBatch * kHeads * T * kv.cap * sizeof(float),
                                       P_TEMPORARY);
    bf16 *attn = (bf16 *)dev_alloc((size_t)rows * kDim * sizeof(bf16), P_TEMPORARY);
    bf16 *mlp = (bf16 *)dev_alloc((size_t)rows * kFF * sizeof(bf16), P_TEMPORARY);
    float *logits = (float *)dev_alloc((size_t)kBatch * kVocab * sizeof(float), P_TEMPORARY);

    embed_tokens<<<rows, 256>>>(d_tokens, kTotalLen, M.tok_emb, M.pos_emb, hidden, T, start, kDim);
    KERNEL_CHECK();
    for (int l = 0; l < kLayers; ++l) {
        const LayerWeights &L = M.layer[l];
        // attention
        layernorm<<<rows, 128>>>(hidden, normed, L.ln1_g, L.ln1_b, kDim, 1, 0);
        KERNEL_CHECK();
        linear(blas, L.w_qkv, normed, qkv, CUDA_R_16BF, rows, kDim, 3 * kDim, 0.0f);
        bias_add<<<grid_for((size_t)rows * 3 * kDim, 256), 256>>>(qkv, L.b_qkv, rows, 3 * kDim);
        KERNEL_CHECK();
        kv_append<<<rows, 256>>>(qkv, kv.data, l, T, start, kv.cap);
        KERNEL_CHECK();
        dim3 agrid(kBatch * kHeads, T);
        attn_scores<<<agrid, 128>>>(qkv, kv.data, scores, l, T, start, kv.cap);
        KERNEL_CHECK();
        attn_softmax_av<<<agrid, kHeadDim>>>(scores, kv.data, attn, l, T, start, kv.cap);
        KERNEL_CHECK();
        linear(blas, L.w_o, attn, hidden, CUDA_R_16BF, rows, kDim, kDim, 1.0f);   // residual
        bias_add<<<grid_for((size_t)rows * kDim, 256), 256>>>(hidden, L.b_o, rows, kDim);
        KERNEL_CHECK();
        // MLP
        layernorm<<<rows, 128>>>(hidden, normed, L.ln2_g, L.ln2_b, kDim, 1, 0);
        KERNEL_CHECK();
        linear(blas, L.w_fc, normed, mlp, CUDA_R_16BF, rows, kDim, kFF, 0.0f);
        bias_gelu<<<grid_for((size_t)rows * kFF, 256), 256>>>(mlp, L.b_fc, rows, kFF);
        KERNEL_CHECK();
        linear(blas, L.w_proj, mlp, hidden, CUDA_R_16BF, rows, kFF, kDim, 1.0f);   // residual
        bias_add<<<grid_for((size_t)rows * kDim, 256), 256>>>(hidden, L.b_proj, rows, kDim);
        KERNEL_CHECK();
    }
    kv.len = start + T;

    // Final LayerNorm and LM head on the last position of every sequence only.
    layernorm<<<kBatch, 128>>>(hidden, normed, M.lnf_g, M.lnf_b, kDim, T, T - 1);
    KERNEL_CHECK();
    linear(blas, M.tok_emb, normed, logits, CUDA_R_32F, kBatch, kDim, kVocab, 0.0f);
    argmax_sample<<<kBatch, 256>>>(logits, kVocab, d_tokens, kTotalLen, start + T);
    KERNEL_CHECK();

    dev_free(logits);
    dev_free(mlp);
    dev_free(attn);
    dev_free(scores);
    dev_free(qkv);
    dev_free(normed);
    dev_free(hidden);
    g_run.forward_passes++;
}

int main() {
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    g_ledger.phase = "setup";
    Model M;
    load_model(M);
    printf("loaded %lld parameters (%zu tensors)\n", g_run.params, M.tensors.size());

    // Prompts (token ids), kept on the device together with the generated tokens.
    std::vector<int> h_tokens((size_t)kBatch * kTotalLen, 0);
    {
        Rng rng(7);
        for (int b = 0; b < kBatch; ++b)
            for (int t = 0; t < kPrompt; ++t)
                h_tokens[(size_t)b * kTotalLen + t] = (int)(rng.next() % kVocab);
    }
    int *d_tokens = (int *)dev_alloc(h_tokens.size() * sizeof(int), P_ACTIVATIONS);
    CUDA_CHECK(cudaMemcpy(d_tokens, h_tokens.data(), h_tokens.size() * sizeof(int),
                          cudaMemcpyHostToDevice));

    g_ledger.phase = "inference";
    KVCache kv;
    // Prefill: the whole prompt in one pass; yields generated token 1.
    forward_pass(blas, M, kv, d_tokens, kPrompt, 0);
    // Decode: one position per pass, feeding back the token just generated.
    for (int i = 1; i < kNewTokens; ++i) forward_pass(blas, M, kv, d_tokens, 1, kPrompt + i - 1);

    CUDA_CHECK(cudaMemcpy(h_tokens.data(), d_tokens, h_tokens.size() * sizeof(int),
                          cudaMemcpyDeviceToHost));
    printf("sequence 0 generated:");
    for (int t = kPrompt; t < kTotalLen; ++t) printf(" %d", h_tokens[t]);
    printf("\n");

    g_ledger.phase = "setup";
    dev_free(kv.data);
    dev_free(d_tokens);
    for (size_t i = M.tensors.size(); i-- > 0;) dev_free(M.tensors[i]);
    CUBLAS_CHECK(cublasDestroy(blas));

    print_ledger(nullptr);
    return 0;
}

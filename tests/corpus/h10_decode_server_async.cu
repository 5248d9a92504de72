// h10_decode_server_async — a small LLM inference server with stream-ordered allocations.
//
// Spec: inference server. The bf16 weights of a 6-layer decoder (hidden 1024, 16 heads,
// GELU MLP of width 4096, RMSNorm, tied 32000-token embedding / LM head) are loaded from
// host at start-up, one cudaMalloc per tensor. Matmuls go through cuBLASLt with a 32 MiB
// workspace the program cudaMallocs and passes in. Three requests are served one after
// another: a prefill of the prompt, then 24 decode tokens each. Each request's KV cache
// (all layers' K and V in one buffer) is allocated with cudaMallocAsync at its prefill on a
// second stream, and the compute stream waits on an event recorded after the allocation;
// the cache grows by reallocation (allocate twice the capacity, copy the filled rows,
// cudaFreeAsync the old one) when it fills during decode. The request's token ids (prompt
// plus generated tokens) live in a cudaMallocAsync buffer for the request's lifetime.
// Per-forward scratch (hidden states, qkv, MLP, attention scores) and per-token logits are
// cudaMallocAsync'd on the compute stream and cudaFreeAsync'd when the forward pass ends;
// the cache and the token ids are released when the request ends. Ledger: kind inference,
// steps 0; forward passes = 3 x (1 prefill + 24 decode) = 75.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <map>
#include <string>
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

#define LT_CHECK(call)                                                                     \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__, #call,    \
                    (int)st_);                                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// ----------------------------------------------------------------------------------------
// model configuration

static const int kLayers = 6;
static const int kHidden = 1024;
static const int kHeads = 16;
static const int kHeadDim = kHidden / kHeads;
static const int kFfn = 4096;
static const int kVocab = 32000;
static const int kDecodeTokens = 24;
static const int kCacheBlock = 64;                  // initial cache capacity granularity
static const size_t kWorkspaceBytes = 32ull << 20;  // cuBLASLt workspace

typedef __nv_bfloat16 bf16;

// ----------------------------------------------------------------------------------------
// allocation ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeNames[P_COUNT] = {"weights", "optimizer", "gradients",
                                             "activations", "temporary", "functionality",
                                             "mixed"};

struct Ledger {
    struct Entry { size_t bytes; Purpose purpose; };
    std::map<void *, Entry> live;
    size_t live_by[P_COUNT] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[P_COUNT] = {0};

    void on_alloc(void *p, size_t bytes, Purpose purpose) {
        if (!p || bytes == 0) return;
        live[p] = Entry{bytes, purpose};
        live_by[purpose] += bytes;
        live_total += bytes;
        if (live_total > peak_total) {
            peak_total = live_total;
            memcpy(peak_by, live_by, sizeof(peak_by));
        }
    }
    void on_free(void *p) {
        if (!p) return;
        auto it = live.find(p);
        if (it == live.end()) {
            fprintf(stderr, "ledger: free of unknown pointer %p\n", p);
            exit(1);
        }
        live_by[it->second.purpose] -= it->second.bytes;
        live_total -= it->second.bytes;
        live.erase(it);
    }
};
static Ledger g_ledger;

template <typename T>
static void dev_malloc(T **p, size_t bytes, Purpose purpose) {
    void *raw = nullptr;
    CUDA_CHECK(cudaMalloc(&raw, bytes));
    g_ledger.on_alloc(raw, bytes, purpose);
    *p = (T *)raw;
}
template <typename T>
static void dev_malloc_async(T **p, size_t bytes, Purpose purpose, cudaStream_t s) {
    void *raw = nullptr;
    CUDA_CHECK(cudaMallocAsync(&raw, bytes, s));
    g_ledger.on_alloc(raw, bytes, purpose);
    *p = (T *)raw;
}
static void dev_free(void *p) {
    CUDA_CHECK(cudaFree(p));
    g_ledger.on_free(p);
}
static void dev_free_async(void *p, cudaStream_t s) {
    CUDA_CHECK(cudaFreeAsync(p, s));
    g_ledger.on_free(p);
}

// ----------------------------------------------------------------------------------------
// kernels

__global__ void embed_kernel(const int *ids, const bf16 *emb, bf16 *x, int hidden) {
    int t = blockIdx.x;
    int tok = ids[t];
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        x[(size_t)t * hidden + i] = emb[(size_t)tok * hidden + i];
}

__global__ void rmsnorm_kernel(const bf16 *x, const bf16 *gamma, bf16 *y, int hidden) {
    __shared__ float partial[256];
    int t = blockIdx.x;
    const bf16 *row = x + (size_t)t * hidden;
    float acc = 0.f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        float v = __bfloat162float(row[i]);
        acc += v * v;
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float inv = rsqrtf(partial[0] / hidden + 1e-5f);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        y[(size_t)t * hidden + i] =
            __float2bfloat16(__bfloat162float(row[i]) * inv * __bfloat162float(gamma[i]));
}

// Applies rotary embeddings to q and k of T tokens starting at position pos0 (in place in
// the qkv buffer) and appends k and v to the layer's cache rows pos0 .. pos0+T-1.
__global__ void rope_append_kernel(bf16 *qkv, bf16 *kcache, bf16 *vcache, int pos0,
                                   int hidden, int head_dim) {
    int t = blockIdx.x;
    int pos = pos0 + t;
    bf16 *q = qkv + (size_t)t * 3 * hidden;
    bf16 *k = q + hidden;
    bf16 *v = k + hidden;
    int half = head_dim / 2;
    for (int i = threadIdx.x; i < hidden / 2; i += blockDim.x) {
        int head = i / half, j = i % half;
        int a = head * head_dim + j, b = a + half;
        float freq = powf(10000.f, -2.f * j / head_dim);
        float s, c;
        sincosf(pos * freq, &s, &c);
        float qa = __bfloat162float(q[a]), qb = __bfloat162float(q[b]);
        float ka = __bfloat162float(k[a]), kb = __bfloat162float(k[b]);
        q[a] = __float2bfloat16(qa * c - qb * s);
        q[b] = __float2bfloat16(qa * s + qb * c);
        k[a] = __float2bfloat16(ka * c - kb * s);
        k[b] = __float2bfloat16(ka * s + kb * c);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        kcache[(size_t)pos * hidden + i] = k[i];
        vcache[(size_t)pos * hidden + i] = v[i];
    }
}

// Causal attention of T query tokens (positions pos0 .. pos0+T-1) against the cache.
// One block per (head, query); scores holds heads x T x (pos0+T) floats.
__global__ void attention_kernel(const bf16 *qkv, const bf16 *kcache, const bf16 *vcache,
                                 float *scores, bf16 *out, int T, int pos0, int hidden,
                                 int head_dim, float scale) {
    __shared__ float red[128];
    int head = blockIdx.x, t = blockIdx.y;
    int ctx = pos0 + t + 1;
    int ctx_max = pos0 + T;
    const bf16 *q = qkv + (size_t)t * 3 * hidden + head * head_dim;
    float *sc = scores + ((size_t)head * T + t) * ctx_max;

    float local_max = -INFINITY;
    for (int j = threadIdx.x; j < ctx; j += blockDim.x) {
        const bf16 *kr = kcache + (size_t)j * hidden + head * head_dim;
        float dot = 0.f;
        for (int d = 0; d < head_dim; ++d)
            dot += __bfloat162float(q[d]) * __bfloat162float(kr[d]);
        sc[j] = dot * scale;
        local_max = fmaxf(local_max, sc[j]);
    }
    red[threadIdx.x] = local_max;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    float m = red[0];
    __syncthreads();
    float local_sum = 0.f;
    for (int j = threadIdx.x; j < ctx; j += blockDim.x) {
        sc[j] = __expf(sc[j] - m);
        local_sum += sc[j];
    }
    red[threadIdx.x] = local_sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.f / red[0];
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float acc = 0.f;
        for (int j = 0; j < ctx; ++j)
            acc += sc[j] * __bfloat162float(vcache[(size_t)j * hidden + head * head_dim + d]);
        out[(size_t)t * hidden + head * head_dim + d] = __float2bfloat16(acc * inv);
    }
}

__global__ void residual_add_kernel(bf16 *x, const bf16 *y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(y[i]));
}

__global__ void gelu_kernel(bf16 *x, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        float g = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
        x[i] = __float2bfloat16(g);
    }
}

// Greedy sampling: writes argmax(logits) to *out.
__global__ void argmax_kernel(const float *logits, int vocab, int *out) {
    __shared__ float best_v[256];
    __shared__ int best_i[256];
    float bv = -INFINITY;
    int bi = 0;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x)
        if (logits[i] > bv) { bv = logits[i]; bi = i; }
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
    if (threadIdx.x == 0) *out = best_i[0];
}

static unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// ----------------------------------------------------------------------------------------
// weights

struct LayerWeights {
    bf16 *attn_norm, *wqkv, *wo, *mlp_norm, *w_up, *w_down;
};
struct Model {
    bf16 *embedding;  // [vocab][hidden], tied with the LM head
    LayerWeights layers[kLayers];
    bf16 *final_norm;
    long long params = 0;
};

static uint16_t float_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
    return (uint16_t)(u >> 16);
}

// Stands in for reading a checkpoint shard: fills the host staging buffer with the
// tensor's values, then allocates the device tensor and copies it up.
static bf16 *load_tensor(Model &m, std::vector<uint16_t> &staging, size_t rows, size_t cols,
                         uint32_t seed, bool is_norm) {
    size_t n = rows * cols;
    if (staging.size() < n) staging.resize(n);
    uint32_t state = seed * 2654435761u + 12345u;
    float scale = 1.f / sqrtf((float)cols);
    for (size_t i = 0; i < n; ++i) {
        if (is_norm) {
            staging[i] = float_to_bf16_bits(1.0f);
        } else {
            state = state * 1664525u + 1013904223u;
            float r = ((state >> 8) * (1.0f / 16777216.0f)) * 2.f - 1.f;
            staging[i] = float_to_bf16_bits(r * scale);
        }
    }
    bf16 *d = nullptr;
    dev_malloc(&d, n * sizeof(bf16), P_WEIGHTS);
    CUDA_CHECK(cudaMemcpy(d, staging.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
    m.params += (long long)n;
    return d;
}

static void load_model(Model &m) {
    std::vector<uint16_t> staging;
    uint32_t seed = 1;
    m.embedding = load_tensor(m, staging, kVocab, kHidden, seed++, false);
    for (int l = 0; l < kLayers; ++l) {
        LayerWeights &w = m.layers[l];
        w.attn_norm = load_tensor(m, staging, 1, kHidden, seed++, true);
        w.wqkv = load_tensor(m, staging, 3 * kHidden, kHidden, seed++, false);
        w.wo = load_tensor(m, staging, kHidden, kHidden, seed++, false);
        w.mlp_norm = load_tensor(m, staging, 1, kHidden, seed++, true);
        w.w_up = load_tensor(m, staging, kFfn, kHidden, seed++, false);
        w.w_down = load_tensor(m, staging, kHidden, kFfn, seed++, false);
    }
    m.final_norm = load_tensor(m, staging, 1, kHidden, seed++, true);
}

static void free_model(Model &m) {
    dev_free(m.embedding);
    for (int l = 0; l < kLayers; ++l) {
        LayerWeights &w = m.layers[l];
        dev_free(w.attn_norm);
        dev_free(w.wqkv);
        dev_free(w.wo);
        dev_free(w.mlp_norm);
        dev_free(w.w_up);
        dev_free(w.w_down);
    }
    dev_free(m.final_norm);
}

// ----------------------------------------------------------------------------------------
// cuBLASLt

struct Blas {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;       // D = W^T x, fp32 compute, A transposed
    cublasLtMatmulPreference_t pref;
    void *workspace;
    size_t workspace_bytes;
};

static void blas_init(Blas &b) {
    LT_CHECK(cublasLtCreate(&b.lt));
    LT_CHECK(cublasLtMatmulDescCreate(&b.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_CHECK(cublasLtMatmulDescSetAttribute(b.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(b.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    b.workspace_bytes = kWorkspaceBytes;
    dev_malloc(&b.workspace, b.workspace_bytes, P_FUNCTIONALITY);
    LT_CHECK(cublasLtMatmulPreferenceCreate(&b.pref));
    uint64_t ws = b.workspace_bytes;
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        b.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
}

static void blas_destroy(Blas &b) {
    LT_CHECK(cublasLtMatmulPreferenceDestroy(b.pref));
    LT_CHECK(cublasLtMatmulDescDestroy(b.desc));
    LT_CHECK(cublasLtDestroy(b.lt));
    dev_free(b.workspace);
}

// y[T][out] = x[T][in] * W^T, with W stored [out][in] (column-major: in x out, ld in).
static void linear(Blas &b, const bf16 *W, int in, int out, const bf16 *x, void *y,
                   cudaDataType_t ytype, int T, cudaStream_t s) {
    cublasLtMatrixLayout_t la, lb, lc;
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, in, out, in));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, in, T, in));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, ytype, out, T, out));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(b.lt, b.desc, la, lb, lc, lc, b.pref, 1, &heur, &found));
    if (found < 1) {
        fprintf(stderr, "cublasLt: no algorithm for %dx%dx%d\n", out, T, in);
        exit(1);
    }
    float alpha = 1.f, beta = 0.f;
    LT_CHECK(cublasLtMatmul(b.lt, b.desc, &alpha, W, la, x, lb, &beta, y, lc, y, lc,
                            &heur.algo, b.workspace, b.workspace_bytes, s));
    LT_CHECK(cublasLtMatrixLayoutDestroy(la));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lb));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lc));
}

// ----------------------------------------------------------------------------------------
// requests and their KV caches

struct KvCache {
    bf16 *base = nullptr;  // [layer][k|v][capacity][hidden]
    int capacity = 0;      // tokens
    int length = 0;        // tokens filled
    bf16 *k(int layer) const { return base + ((size_t)layer * 2 + 0) * capacity * kHidden; }
    bf16 *v(int layer) const { return base + ((size_t)layer * 2 + 1) * capacity * kHidden; }
    static size_t bytes_for(int cap) { return (size_t)kLayers * 2 * cap * kHidden * sizeof(bf16); }
};

struct Server {
    Model model;
    Blas blas;
    cudaStream_t compute;
    cudaStream_t alloc_stream;  // where request-lifetime buffers are carved out
    cudaEvent_t alloc_ready;
    int forward_passes = 0;
    int cache_growths = 0;
};

// New cache memory comes from the allocation stream; the compute stream waits for it.
static bf16 *cache_alloc(Server &sv, int capacity) {
    bf16 *p = nullptr;
    dev_malloc_async(&p, KvCache::bytes_for(capacity), P_ACTIVATIONS, sv.alloc_stream);
    CUDA_CHECK(cudaEventRecord(sv.alloc_ready, sv.alloc_stream));
    CUDA_CHECK(cudaStreamWaitEvent(sv.compute, sv.alloc_ready, 0));
    return p;
}

static void cache_reserve(Server &sv, KvCache &kv, int needed) {
    if (needed <= kv.capacity) return;
    int new_cap = kv.capacity;
    while (new_cap < needed) new_cap *= 2;
    bf16 *fresh = cache_alloc(sv, new_cap);
    // 2 * layers rows of filled tokens, each at a different pitch in the old and new cache.
    size_t src_pitch = (size_t)kv.capacity * kHidden * sizeof(bf16);
    size_t dst_pitch = (size_t)new_cap * kHidden * sizeof(bf16);
    size_t width = (size_t)kv.length * kHidden * sizeof(bf16);
    CUDA_CHECK(cudaMemcpy2DAsync(fresh, dst_pitch, kv.base, src_pitch, width, kLayers * 2,
                                 cudaMemcpyDeviceToDevice, sv.compute));
    dev_free_async(kv.base, sv.compute);
    kv.base = fresh;
    kv.capacity = new_cap;
    sv.cache_growths++;
}

// One forward pass over T tokens whose ids sit at ids[pos0 .. pos0+T-1]; the cache already
// holds pos0 tokens and has room for T more. Writes the greedy next token to ids[pos0+T].
static void forward(Server &sv, KvCache &kv, int *ids, int pos0, int T) {
    cudaStream_t s = sv.compute;
    Model &m = sv.model;
    const int ctx_max = pos0 + T;

    bf16 *x, *h, *qkv, *attn, *proj, *mlp;
    float *scores, *logits;
    dev_malloc_async(&x, (size_t)T * kHidden * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&h, (size_t)T * kHidden * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&qkv, (size_t)T * 3 * kHidden * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&attn, (size_t)T * kHidden * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&proj, (size_t)T * kHidden * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&mlp, (size_t)T * kFfn * sizeof(bf16), P_TEMPORARY, s);
    dev_malloc_async(&scores, (size_t)kHeads * T * ctx_max * sizeof(float), P_TEMPORARY, s);

    embed_kernel<<<T, 256, 0, s>>>(ids + pos0, m.embedding, x, kHidden);
    CUDA_CHECK(cudaGetLastError());
    const float scale = 1.f / sqrtf((float)kHeadDim);
    const size_t nh = (size_t)T * kHidden, nf = (size_t)T * kFfn;
    for (int l = 0; l < kLayers; ++l) {
        LayerWeights &w = m.layers[l];
        rmsnorm_kernel<<<T, 256, 0, s>>>(x, w.attn_norm, h, kHidden);
        CUDA_CHECK(cudaGetLastError());
        linear(sv.blas, w.wqkv, kHidden, 3 * kHidden, h, qkv, CUDA_R_16BF, T, s);
        rope_append_kernel<<<T, 256, 0, s>>>(qkv, kv.k(l), kv.v(l), pos0, kHidden, kHeadDim);
        CUDA_CHECK(cudaGetLastError());
        attention_kernel<<<dim3(kHeads, T), 128, 0, s>>>(qkv, kv.k(l), kv.v(l), scores, attn,
                                                         T, pos0, kHidden, kHeadDim, scale);
        CUDA_CHECK(cudaGetLastError());
        linear(sv.blas, w.wo, kHidden, kHidden, attn, proj, CUDA_R_16BF, T, s);
        residual_add_kernel<<<blocks_for(nh, 256), 256, 0, s>>>(x, proj, nh);
        CUDA_CHECK(cudaGetLastError());
        rmsnorm_kernel<<<T, 256, 0, s>>>(x, w.mlp_norm, h, kHidden);
        CUDA_CHECK(cudaGetLastError());
        linear(sv.blas, w.w_up, kHidden, kFfn, h, mlp, CUDA_R_16BF, T, s);
        gelu_kernel<<<blocks_for(nf, 256), 256, 0, s>>>(mlp, nf);
        CUDA_CHECK(cudaGetLastError());
        linear(sv.blas, w.w_down, kFfn, kHidden, mlp, proj, CUDA_R_16BF, T, s);
        residual_add_kernel<<<blocks_for(nh, 256), 256, 0, s>>>(x, proj, nh);
        CUDA_CHECK(cudaGetLastError());
    }
    kv.length = pos0 + T;

    // Only the last position's logits are needed to pick the next token.
    dev_malloc_async(&logits, (size_t)kVocab * sizeof(float), P_TEMPORARY, s);
    bf16 *last = h + (size_t)(T - 1) * kHidden;
    rmsnorm_kernel<<<1, 256, 0, s>>>(x + (size_t)(T - 1) * kHidden, m.final_norm, last, kHidden);
    CUDA_CHECK(cudaGetLastError());
    linear(sv.blas, m.embedding, kHidden, kVocab, last, logits, CUDA_R_32F, 1, s);
    argmax_kernel<<<1, 256, 0, s>>>(logits, kVocab, ids + pos0 + T);
    CUDA_CHECK(cudaGetLastError());

    dev_free_async(logits, s);
    dev_free_async(scores, s);
    dev_free_async(mlp, s);
    dev_free_async(proj, s);
    dev_free_async(attn, s);
    dev_free_async(qkv, s);
    dev_free_async(h, s);
    dev_free_async(x, s);
    sv.forward_passes++;
}

static void serve_request(Server &sv, int request, int prompt_len) {
    cudaStream_t s = sv.compute;
    const int total = prompt_len + kDecodeTokens + 1;  // prompt, prefill's token, decodes

    // Tokenised prompt (stand-in for the tokenizer's output).
    std::vector<int> host_ids(total, 0);
    for (int i = 0; i < prompt_len; ++i)
        host_ids[i] = (int)((request * 7919u + i * 104729u + 17u) % kVocab);

    int *ids = nullptr;
    dev_malloc_async(&ids, (size_t)total * sizeof(int), P_ACTIVATIONS, s);
    CUDA_CHECK(cudaMemcpyAsync(ids, host_ids.data(), (size_t)prompt_len * sizeof(int),
                               cudaMemcpyHostToDevice, s));

    KvCache kv;
    kv.capacity = ((prompt_len + kCacheBlock - 1) / kCacheBlock) * kCacheBlock;
    kv.base = cache_alloc(sv, kv.capacity);
    const int initial_capacity = kv.capacity;

    forward(sv, kv, ids, 0, prompt_len);  // prefill
    for (int step = 0; step < kDecodeTokens; ++step) {
        int pos = kv.length;
        cache_reserve(sv, kv, pos + 1);
        forward(sv, kv, ids, pos, 1);
    }

    CUDA_CHECK(cudaMemcpyAsync(host_ids.data(), ids, (size_t)total * sizeof(int),
                               cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    dev_free_async(kv.base, s);
    dev_free_async(ids, s);

    unsigned checksum = 0;
    for (int i = prompt_len; i < total; ++i) checksum = checksum * 31u + (unsigned)host_ids[i];
    printf("request %d: prompt %d tokens, generated %d, kv cache %d -> %d tokens, checksum %u\n",
           request, prompt_len, kDecodeTokens + 1, initial_capacity, kv.capacity, checksum);
}

// ----------------------------------------------------------------------------------------

static void print_ledger(const Server &sv) {
    std::string j = "{\"program\":\"h10_decode_server_async\",\"kind\":\"inference\",\"steps\":0,"
                    "\"micro_batches_per_step\":0";
    char buf[256];
    snprintf(buf, sizeof buf, ",\"forward_passes\":%d,\"params\":%lld", sv.forward_passes,
             sv.model.params);
    j += buf;
    j += ",\"param_dtype\":\"bf16\",\"master_weights\":false,\"optimizer\":\"none\"";
    snprintf(buf, sizeof buf, ",\"peak_bytes\":%zu,\"peak_by_purpose\":{", g_ledger.peak_total);
    j += buf;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%zu", p ? "," : "", kPurposeNames[p],
                 g_ledger.peak_by[p]);
        j += buf;
    }
    j += "},\"pools_at_peak\":[],\"oom\":null}";
    printf("ledger %s\n", j.c_str());
}

int main() {
    Server sv;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&sv.compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&sv.alloc_stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&sv.alloc_ready, cudaEventDisableTiming));

    load_model(sv.model);
    blas_init(sv.blas);
    printf("model: %d layers, hidden %d, %lld bf16 parameters\n", kLayers, kHidden,
           sv.model.params);

    const int prompts[3] = {120, 50, 180};
    for (int r = 0; r < 3; ++r) serve_request(sv, r, prompts[r]);
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("served 3 requests, %d forward passes, %d kv cache reallocations\n",
           sv.forward_passes, sv.cache_growths);

    blas_destroy(sv.blas);
    free_model(sv.model);
    CUDA_CHECK(cudaEventDestroy(sv.alloc_ready));
    CUDA_CHECK(cudaStreamDestroy(sv.alloc_stream));
    CUDA_CHECK(cudaStreamDestroy(sv.compute));
    print_ledger(sv);
    return 0;
}

// h20_adafactor_clip_transformer.cu
//
// A small fp32 transformer-ish language-model trainer trained with Adafactor. The model is
// a token embedding (tied with the output projection) plus a learned position embedding,
// 4 pre-LayerNorm blocks of causal multi-head attention (fused QKV projection, attention
// scores and attention-weighted values as cuBLAS strided-batched GEMMs over batch*heads,
// output projection) and a GELU MLP, then a final LayerNorm and a softmax cross-entropy
// loss. Every matrix product goes through cuBLAS (cublasSgemm / cublasSgemmStridedBatched,
// with a workspace the program allocates and hands to cuBLAS). Parameters are one device
// buffer per tensor; their gradients are persistent buffers allocated once and zeroed at
// the start of every step. The optimizer is Adafactor without a first moment: every 2-D
// weight keeps factored second-moment row and column statistics, every 1-D tensor (biases,
// LayerNorm gains and shifts) a full second moment; relative step size, update clipping
// and parameter-scale learning rate as in Shazeer & Stern. Before the update the gradients
// are clipped by their global norm: one multi-tensor kernel, driven by a device table of
// gradient pointers, reduces the squared norm of all gradients into a small device buffer,
// and a one-thread kernel turns it into the clip coefficient that the update kernels read.
// The activations that backward needs are saved in forward into per-layer buffers that are
// allocated once before training and reused every step; forward scratch (the unpermuted
// QKV and the per-head attention output) and backward scratch (gradients with respect to
// activations and the logits) are allocated for their phase and freed at its end, and the
// optimizer's per-tensor reduction scalars live only during the update. It trains 4 steps
// of one micro-batch each on a synthetic token stream and prints the ledger of its device
// memory by purpose.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

// ----------------------------------------------------------------------------------------
// error checking

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__, __LINE__,              \
                    cudaGetErrorName(err_), cudaGetErrorString(err_));                     \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "%s:%d: cuBLAS error %s\n", __FILE__, __LINE__,                \
                    cublasGetStatusString(st_));                                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// device-memory ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

static const char* g_phase = "setup";
static int g_step = 0;            // 1-based step in progress, 0 in set-up
static int g_steps_done = 0;
static int g_forward_passes = 0;
static long long g_params = 0;

struct Ledger {
    long long live[P_COUNT] = {0};
    long long live_total = 0;
    long long peak = 0;
    long long peak_split[P_COUNT] = {0};
    std::unordered_map<void*, std::pair<size_t, int>> blocks;
};
static Ledger g_ledger;

static void print_split(const long long* split) {
    printf("{");
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%lld", p ? "," : "", kPurposeName[p], split[p]);
    printf("}");
}

static void print_ledger(bool oom, size_t req = 0, int req_purpose = 0) {
    printf("ledger {\"program\":\"h20_adafactor_clip_transformer\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"adafactor\",\"peak_bytes\":%lld,\"peak_by_purpose\":",
           g_steps_done, g_forward_passes, g_params, g_ledger.peak);
    print_split(g_ledger.peak_split);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (!oom) {
        printf("null");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (g_ledger.live[p] > g_ledger.live[dom]) dom = p;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%lld,\"live_by_purpose\":",
               req, kPurposeName[req_purpose], g_phase, g_step, g_ledger.live_total);
        print_split(g_ledger.live);
        printf(",\"dominant\":\"%s\"}", kPurposeName[dom]);
    }
    printf("}\n");
    fflush(stdout);
}

template <typename T>
static T* dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        fprintf(stderr, "out of memory allocating %zu bytes (%s) in %s\n", bytes,
                kPurposeName[purpose], g_phase);
        print_ledger(true, bytes, purpose);
        exit(3);
    }
    CUDA_CHECK(err);
    if (p) {
        g_ledger.blocks[p] = {bytes, (int)purpose};
        g_ledger.live[purpose] += (long long)bytes;
        g_ledger.live_total += (long long)bytes;
        if (g_ledger.live_total > g_ledger.peak) {
            g_ledger.peak = g_ledger.live_total;
            memcpy(g_ledger.peak_split, g_ledger.live, sizeof(g_ledger.live));
        }
    }
    return (T*)p;
}

static void dev_free(void* p) {
    if (!p) return;
    auto it = g_ledger.blocks.find(p);
    if (it == g_ledger.blocks.end()) {
        fprintf(stderr, "dev_free of unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live[it->second.second] -= (long long)it->second.first;
    g_ledger.live_total -= (long long)it->second.first;
    g_ledger.blocks.erase(it);
}

// ----------------------------------------------------------------------------------------
// model configuration

static const int kVocab = 2048;
static const int kSeq = 128;      // T
static const int kBatch = 4;      // B
static const int kDim = 256;      // C
static const int kHeads = 4;      // H
static const int kHeadDim = kDim / kHeads;
static const int kLayers = 4;
static const int kTokens = kBatch * kSeq;   // N
static const int kSteps = 4;
static const float kMaxGradNorm = 1.0f;

// ----------------------------------------------------------------------------------------
// kernels

// Sum over the block; blockDim.x must be a multiple of 32 (at most 1024).
__device__ float block_sum(float v) {
    __shared__ float shared[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    if (warp == 0) {
        v = (lane < nwarps) ? shared[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    float r = shared[0];
    __syncthreads();
    return r;
}

__device__ float block_max(float v) {
    __shared__ float shared[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    if (warp == 0) {
        v = (lane < nwarps) ? shared[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    float r = shared[0];
    __syncthreads();
    return r;
}

__global__ void encoder_forward(float* out, const int* tokens, const float* wte,
                                const float* wpe, int N, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * C) return;
    int n = idx / C, c = idx % C, t = n % T;
    out[idx] = wte[(size_t)tokens[n] * C + c] + wpe[(size_t)t * C + c];
}

__global__ void encoder_backward(float* dwte, float* dwpe, const float* dout,
                                 const int* tokens, int N, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * C) return;
    int n = idx / C, c = idx % C, t = n % T;
    float d = dout[idx];
    atomicAdd(&dwte[(size_t)tokens[n] * C + c], d);
    atomicAdd(&dwpe[(size_t)t * C + c], d);
}

// one block per row
__global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                  const float* g, const float* b, int C) {
    const float* x = inp + (size_t)blockIdx.x * C;
    float* y = out + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[i];
    float m = block_sum(s) / C;
    float v = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) { float d = x[i] - m; v += d * d; }
    float r = rsqrtf(block_sum(v) / C + 1e-5f);
    for (int i = threadIdx.x; i < C; i += blockDim.x) y[i] = (x[i] - m) * r * g[i] + b[i];
    if (threadIdx.x == 0) { mean[blockIdx.x] = m; rstd[blockIdx.x] = r; }
}

// one block per row; dinp is accumulated into (residual stream)
__global__ void layernorm_backward(float* dinp, float* dg, float* db, const float* dout,
                                   const float* inp, const float* g, const float* mean,
                                   const float* rstd, int C) {
    size_t off = (size_t)blockIdx.x * C;
    float m = mean[blockIdx.x], r = rstd[blockIdx.x];
    float s1 = 0.0f, s2 = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (inp[off + i] - m) * r;
        float dn = g[i] * dout[off + i];
        s1 += dn;
        s2 += dn * xhat;
    }
    float mean_dn = block_sum(s1) / C;
    float mean_dnx = block_sum(s2) / C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xhat = (inp[off + i] - m) * r;
        float d = dout[off + i];
        float dn = g[i] * d;
        atomicAdd(&dg[i], d * xhat);
        atomicAdd(&db[i], d);
        dinp[off + i] += r * (dn - mean_dn - xhat * mean_dnx);
    }
}

__global__ void add_bias(float* out, const float* bias, int N, int OC) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N * OC) out[idx] += bias[idx % OC];
}

__global__ void bias_backward(float* db, const float* dout, int N, int OC) {
    int oc = blockIdx.x * blockDim.x + threadIdx.x;
    if (oc >= OC) return;
    float s = 0.0f;
    for (int n = 0; n < N; ++n) s += dout[(size_t)n * OC + oc];
    db[oc] += s;
}

// qkv [B, T, 3, H, hd] -> q, k, v [B, H, T, hd]
__global__ void permute_qkv(float* q, float* k, float* v, const float* qkv, int B, int T,
                            int H, int hd) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * H * T * hd) return;
    int e = idx % hd, t = (idx / hd) % T, h = (idx / (hd * T)) % H, b = idx / (hd * T * H);
    int C = H * hd;
    size_t src = ((size_t)(b * T + t)) * 3 * C + h * hd + e;
    q[idx] = qkv[src];
    k[idx] = qkv[src + C];
    v[idx] = qkv[src + 2 * C];
}

__global__ void permute_qkv_backward(float* dqkv, const float* dq, const float* dk,
                                     const float* dv, int B, int T, int H, int hd) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * H * T * hd) return;
    int e = idx % hd, t = (idx / hd) % T, h = (idx / (hd * T)) % H, b = idx / (hd * T * H);
    int C = H * hd;
    size_t dst = ((size_t)(b * T + t)) * 3 * C + h * hd + e;
    dqkv[dst] = dq[idx];
    dqkv[dst + C] = dk[idx];
    dqkv[dst + 2 * C] = dv[idx];
}

// y [B, H, T, hd] -> out [B, T, H*hd]
__global__ void unpermute(float* out, const float* y, int B, int T, int H, int hd) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * H * T * hd) return;
    int e = idx % hd, t = (idx / hd) % T, h = (idx / (hd * T)) % H, b = idx / (hd * T * H);
    out[((size_t)(b * T + t)) * H * hd + h * hd + e] = y[idx];
}

__global__ void unpermute_backward(float* dy, const float* dout, int B, int T, int H,
                                   int hd) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * H * T * hd) return;
    int e = idx % hd, t = (idx / hd) % T, h = (idx / (hd * T)) % H, b = idx / (hd * T * H);
    dy[idx] = dout[((size_t)(b * T + t)) * H * hd + h * hd + e];
}

// in place, one block per (b, h, t) row of T scores; causal
__global__ void softmax_causal_forward(float* att, int T) {
    int t = blockIdx.x % T;
    float* row = att + (size_t)blockIdx.x * T;
    float m = -INFINITY;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m);
    float s = 0.0f;
    for (int j = threadIdx.x; j <= t; j += blockDim.x) s += expf(row[j] - m);
    s = block_sum(s);
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < T; j += blockDim.x)
        row[j] = (j <= t) ? expf(row[j] - m) * inv : 0.0f;
}

// in place: datt becomes the gradient of the (scaled) scores
__global__ void softmax_backward(float* datt, const float* att, int T) {
    float* drow = datt + (size_t)blockIdx.x * T;
    const float* arow = att + (size_t)blockIdx.x * T;
    float s = 0.0f;
    for (int j = threadIdx.x; j < T; j += blockDim.x) s += arow[j] * drow[j];
    s = block_sum(s);
    for (int j = threadIdx.x; j < T; j += blockDim.x) drow[j] = arow[j] * (drow[j] - s);
}

__global__ void residual_forward(float* out, const float* a, const float* b, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

#define GELU_SCALE 0.7978845608028654f
__global__ void gelu_forward(float* out, const float* inp, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float x = inp[idx];
    out[idx] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
}

// in place: d holds dL/d(gelu out) and becomes dL/d(gelu in)
__global__ void gelu_backward(float* d, const float* inp, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float x = inp[idx];
    float u = GELU_SCALE * (x + 0.044715f * x * x * x);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    float grad = 0.5f * (1.0f + th) +
                 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    d[idx] *= grad;
}

// one block per token; logits become probabilities in place
__global__ void crossentropy_forward(float* losses, float* logits, const int* targets,
                                     int V) {
    float* row = logits + (size_t)blockIdx.x * V;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m);
    float s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) s += expf(row[j] - m);
    s = block_sum(s);
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < V; j += blockDim.x) row[j] = expf(row[j] - m) * inv;
    __syncthreads();
    if (threadIdx.x == 0) losses[blockIdx.x] = -logf(fmaxf(row[targets[blockIdx.x]], 1e-30f));
}

__global__ void crossentropy_backward(float* dlogits, const float* probs, const int* targets,
                                      int N, int V) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)N * V) return;
    int n = (int)(idx / V), j = (int)(idx % V);
    float p = probs[idx];
    dlogits[idx] = (p - (j == targets[n] ? 1.0f : 0.0f)) / (float)N;
}

// ---- gradient clipping by global norm -------------------------------------------------

struct GradEntry {
    float* ptr;
    long long n;
};

// grid (blocks per tensor, number of tensors); accumulates sum of squares into norm[0]
__global__ void grad_sumsq_multi(const GradEntry* table, float* norm) {
    GradEntry e = table[blockIdx.y];
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < e.n;
         i += (long long)gridDim.x * blockDim.x) {
        float g = e.ptr[i];
        s += g * g;
    }
    s = block_sum(s);
    if (threadIdx.x == 0) atomicAdd(&norm[0], s);
}

// norm[1] = global norm, norm[2] = clip coefficient
__global__ void clip_finalize(float* norm, float max_norm) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    float n = sqrtf(norm[0]);
    norm[1] = n;
    norm[2] = fminf(1.0f, max_norm / (n + 1e-6f));
}

// ---- Adafactor ----------------------------------------------------------------------------
// slot[0] = sum of the new row statistics, slot[1] = sum of squared updates,
// slot[2] = sum of squared weights

__global__ void adafactor_row_stats(const float* g, const float* w, float* R, float* slot,
                                    const float* norm, int cols, float beta2, float eps1) {
    int row = blockIdx.x;
    float c = norm[2];
    const float* gr = g + (size_t)row * cols;
    const float* wr = w + (size_t)row * cols;
    float s = 0.0f, ws = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float gc = gr[j] * c;
        s += gc * gc + eps1;
        ws += wr[j] * wr[j];
    }
    s = block_sum(s);
    ws = block_sum(ws);
    if (threadIdx.x == 0) {
        float r = beta2 * R[row] + (1.0f - beta2) * (s / cols);
        R[row] = r;
        atomicAdd(&slot[0], r);
        atomicAdd(&slot[2], ws);
    }
}

__global__ void adafactor_col_stats(const float* g, float* Ccol, const float* norm, int rows,
                                    int cols, float beta2, float eps1) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float c = norm[2];
    float s = 0.0f;
    for (int i = 0; i < rows; ++i) {
        float gc = g[(size_t)i * cols + j] * c;
        s += gc * gc + eps1;
    }
    Ccol[j] = beta2 * Ccol[j] + (1.0f - beta2) * (s / rows);
}

__global__ void adafactor_update_rms(const float* g, const float* R, const float* Ccol,
                                     float* slot, const float* norm, int rows, int cols) {
    float c = norm[2];
    float rmean = slot[0] / rows;
    long long n = (long long)rows * cols;
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int r = (int)(i / cols), k = (int)(i % cols);
        float vhat = R[r] * Ccol[k] / rmean;
        float u = g[i] * c * rsqrtf(vhat);
        s += u * u;
    }
    s = block_sum(s);
    if (threadIdx.x == 0) atomicAdd(&slot[1], s);
}

__global__ void adafactor_apply(float* w, const float* g, const float* R, const float* Ccol,
                                const float* slot, const float* norm, int rows, int cols,
                                float rho, float clip_threshold, float eps2) {
    float c = norm[2];
    long long n = (long long)rows * cols;
    float rmean = slot[0] / rows;
    float rms_u = sqrtf(slot[1] / n);
    float rms_w = sqrtf(slot[2] / n);
    float denom = fmaxf(1.0f, rms_u / clip_threshold);
    float lr = fmaxf(eps2, rms_w) * rho;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int r = (int)(i / cols), k = (int)(i % cols);
        float vhat = R[r] * Ccol[k] / rmean;
        float u = g[i] * c * rsqrtf(vhat);
        w[i] -= lr * u / denom;
    }
}

// 1-D tensors: full second moment, one block does the whole tensor
__global__ void adafactor_vector(float* w, const float* g, float* v, const float* norm, int n,
                                 float beta2, float eps1, float rho, float clip_threshold,
                                 float eps2) {
    float c = norm[2];
    float us = 0.0f, ws = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gc = g[i] * c;
        float vn = beta2 * v[i] + (1.0f - beta2) * (gc * gc + eps1);
        v[i] = vn;
        float u = gc * rsqrtf(vn);
        us += u * u;
        ws += w[i] * w[i];
    }
    us = block_sum(us);
    ws = block_sum(ws);
    float denom = fmaxf(1.0f, sqrtf(us / n) / clip_threshold);
    float lr = fmaxf(eps2, sqrtf(ws / n)) * rho;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float u = g[i] * c * rsqrtf(v[i]);
        w[i] -= lr * u / denom;
    }
}

// ----------------------------------------------------------------------------------------
// host side: parameters

struct Param {
    std::string name;
    int rows, cols;       // cols == 0 for 1-D tensors
    float* w = nullptr;
    float* g = nullptr;
    float* vr = nullptr;  // row statistics (2-D) or full second moment (1-D)
    float* vc = nullptr;  // column statistics (2-D only)
    long long numel() const { return cols ? (long long)rows * cols : rows; }
};

struct Block {
    Param *ln1g, *ln1b, *wqkv, *bqkv, *wo, *bo, *ln2g, *ln2b, *w1, *b1, *w2, *b2;
};

struct LayerActs {
    float *ln1, *ln1_mean, *ln1_rstd;
    float *qkvp;      // q, k, v permuted to [B, H, T, hd], 3 * N * C
    float *att;       // [B, H, T, T]
    float *atty;      // [N, C]
    float *res1;      // [N, C]
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;   // [N, 4C]
    float *res2;      // [N, C]
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float rng_uniform() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) & 0xFFFFFF) / 16777216.0f;
}

static int grid_for(long long n, int block) { return (int)((n + block - 1) / block); }

static cublasHandle_t g_blas;

// row-major out[M, OC] = inp[M, K] @ W[K, OC]
static void matmul_forward(float* out, const float* inp, const float* W, int M, int K,
                           int OC) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, OC, M, K, &one, W, OC, inp, K,
                             &zero, out, OC));
}

// dinp[M, K] = dout @ W^T ; dW[K, OC] += inp^T @ dout
static void matmul_backward(float* dinp, float* dW, const float* dout, const float* inp,
                            const float* W, int M, int K, int OC) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, K, M, OC, &one, W, OC, dout, OC,
                             &zero, dinp, K));
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, OC, K, M, &one, dout, OC, inp, K,
                             &one, dW, OC));
}

int main() {
    const int B = kBatch, T = kSeq, C = kDim, H = kHeads, hd = kHeadDim, V = kVocab;
    const int N = kTokens, L = kLayers;
    const float attn_scale = 1.0f / sqrtf((float)hd);

    CUDA_CHECK(cudaSetDevice(0));
    CUBLAS_CHECK(cublasCreate(&g_blas));
    const size_t workspace_bytes = 4u << 20;
    void* blas_workspace = dev_alloc<char>(workspace_bytes, P_FUNCTIONALITY);
    CUBLAS_CHECK(cublasSetWorkspace(g_blas, blas_workspace, workspace_bytes));

    // ---- parameters, gradients, Adafactor state ----------------------------------------
    std::vector<Param*> params;
    auto add_param = [&](const std::string& name, int rows, int cols) {
        Param* p = new Param();
        p->name = name;
        p->rows = rows;
        p->cols = cols;
        params.push_back(p);
        return p;
    };
    Param* wte = add_param("wte", V, C);
    Param* wpe = add_param("wpe", T, C);
    std::vector<Block> blocks(L);
    for (int l = 0; l < L; ++l) {
        std::string pre = "h" + std::to_string(l) + ".";
        Block& b = blocks[l];
        b.ln1g = add_param(pre + "ln1.g", C, 0);
        b.ln1b = add_param(pre + "ln1.b", C, 0);
        b.wqkv = add_param(pre + "attn.wqkv", C, 3 * C);
        b.bqkv = add_param(pre + "attn.bqkv", 3 * C, 0);
        b.wo = add_param(pre + "attn.wo", C, C);
        b.bo = add_param(pre + "attn.bo", C, 0);
        b.ln2g = add_param(pre + "ln2.g", C, 0);
        b.ln2b = add_param(pre + "ln2.b", C, 0);
        b.w1 = add_param(pre + "mlp.w1", C, 4 * C);
        b.b1 = add_param(pre + "mlp.b1", 4 * C, 0);
        b.w2 = add_param(pre + "mlp.w2", 4 * C, C);
        b.b2 = add_param(pre + "mlp.b2", C, 0);
    }
    Param* lnfg = add_param("lnf.g", C, 0);
    Param* lnfb = add_param("lnf.b", C, 0);

    std::vector<float> host;
    for (Param* p : params) {
        long long n = p->numel();
        g_params += n;
        p->w = dev_alloc<float>(n, P_WEIGHTS);
        host.assign(n, 0.0f);
        bool is_gain = p->name.size() >= 2 && p->name.compare(p->name.size() - 2, 2, ".g") == 0;
        if (p->cols) {
            float init_std = 0.02f;
            if (p->name.find("attn.wo") != std::string::npos ||
                p->name.find("mlp.w2") != std::string::npos)
                init_std = 0.02f / sqrtf(2.0f * L);
            for (long long i = 0; i < n; ++i) host[i] = (rng_uniform() * 2.0f - 1.0f) * init_std * 1.7320508f;
        } else if (is_gain) {
            for (long long i = 0; i < n; ++i) host[i] = 1.0f;
        }
        CUDA_CHECK(cudaMemcpy(p->w, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
    for (Param* p : params) p->g = dev_alloc<float>(p->numel(), P_GRADIENTS);
    for (Param* p : params) {
        if (p->cols) {
            p->vr = dev_alloc<float>(p->rows, P_OPTIMIZER);
            p->vc = dev_alloc<float>(p->cols, P_OPTIMIZER);
            CUDA_CHECK(cudaMemset(p->vr, 0, p->rows * sizeof(float)));
            CUDA_CHECK(cudaMemset(p->vc, 0, p->cols * sizeof(float)));
        } else {
            p->vr = dev_alloc<float>(p->rows, P_OPTIMIZER);
            CUDA_CHECK(cudaMemset(p->vr, 0, p->rows * sizeof(float)));
        }
    }

    // device table of gradient pointers for the global-norm kernel, and its result buffer
    const int nparams = (int)params.size();
    std::vector<GradEntry> table_host(nparams);
    for (int i = 0; i < nparams; ++i) table_host[i] = {params[i]->g, params[i]->numel()};
    GradEntry* grad_table = dev_alloc<GradEntry>(nparams, P_FUNCTIONALITY);
    CUDA_CHECK(cudaMemcpy(grad_table, table_host.data(), nparams * sizeof(GradEntry),
                          cudaMemcpyHostToDevice));
    float* grad_norm = dev_alloc<float>(4, P_TEMPORARY);

    // ---- input batch and saved activations (allocated once, reused every step) ----------
    int* tokens = dev_alloc<int>(N, P_ACTIVATIONS);
    int* targets = dev_alloc<int>(N, P_ACTIVATIONS);
    float* encoded = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
    std::vector<LayerActs> acts(L);
    for (int l = 0; l < L; ++l) {
        LayerActs& a = acts[l];
        a.ln1 = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
        a.ln1_mean = dev_alloc<float>(N, P_ACTIVATIONS);
        a.ln1_rstd = dev_alloc<float>(N, P_ACTIVATIONS);
        a.qkvp = dev_alloc<float>((size_t)3 * N * C, P_ACTIVATIONS);
        a.att = dev_alloc<float>((size_t)B * H * T * T, P_ACTIVATIONS);
        a.atty = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
        a.res1 = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
        a.ln2 = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
        a.ln2_mean = dev_alloc<float>(N, P_ACTIVATIONS);
        a.ln2_rstd = dev_alloc<float>(N, P_ACTIVATIONS);
        a.fch = dev_alloc<float>((size_t)N * 4 * C, P_ACTIVATIONS);
        a.fch_gelu = dev_alloc<float>((size_t)N * 4 * C, P_ACTIVATIONS);
        a.res2 = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
    }
    float* lnf = dev_alloc<float>((size_t)N * C, P_ACTIVATIONS);
    float* lnf_mean = dev_alloc<float>(N, P_ACTIVATIONS);
    float* lnf_rstd = dev_alloc<float>(N, P_ACTIVATIONS);
    float* probs = dev_alloc<float>((size_t)N * V, P_ACTIVATIONS);   // logits, then softmax
    float* losses = dev_alloc<float>(N, P_TEMPORARY);

    // synthetic token stream
    std::vector<int> stream((size_t)kSteps * N + 1);
    for (size_t i = 0; i < stream.size(); ++i)
        stream[i] = (int)(rng_uniform() * V) % V;

    const int TB = 256;
    const size_t NC = (size_t)N * C;
    const float one = 1.0f, zero = 0.0f;
    std::vector<float> host_losses(N);

    for (int step = 1; step <= kSteps; ++step) {
        g_step = step;

        // ---- step start: new batch, zero gradients -------------------------------------
        g_phase = "step_start";
        const int* batch = stream.data() + (size_t)(step - 1) * N;
        CUDA_CHECK(cudaMemcpy(tokens, batch, N * sizeof(int), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(targets, batch + 1, N * sizeof(int), cudaMemcpyHostToDevice));
        for (Param* p : params)
            CUDA_CHECK(cudaMemset(p->g, 0, p->numel() * sizeof(float)));

        // ---- forward ---------------------------------------------------------------------
        g_phase = "forward";
        float* qkv_tmp = dev_alloc<float>(3 * NC, P_TEMPORARY);
        float* y_tmp = dev_alloc<float>(NC, P_TEMPORARY);
        encoder_forward<<<grid_for(NC, TB), TB>>>(encoded, tokens, wte->w, wpe->w, N, T, C);
        KERNEL_CHECK();
        for (int l = 0; l < L; ++l) {
            Block& bw = blocks[l];
            LayerActs& a = acts[l];
            const float* x = l == 0 ? encoded : acts[l - 1].res2;
            float* q = a.qkvp;
            float* k = a.qkvp + NC;
            float* v = a.qkvp + 2 * NC;

            layernorm_forward<<<N, TB>>>(a.ln1, a.ln1_mean, a.ln1_rstd, x, bw.ln1g->w,
                                         bw.ln1b->w, C);
            KERNEL_CHECK();
            matmul_forward(qkv_tmp, a.ln1, bw.wqkv->w, N, C, 3 * C);
            add_bias<<<grid_for(3 * NC, TB), TB>>>(qkv_tmp, bw.bqkv->w, N, 3 * C);
            KERNEL_CHECK();
            permute_qkv<<<grid_for(NC, TB), TB>>>(q, k, v, qkv_tmp, B, T, H, hd);
            KERNEL_CHECK();
            // scores = scale * Q K^T, per (b, h)
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hd, &attn_scale, k, hd,
                (long long)T * hd, q, hd, (long long)T * hd, &zero, a.att, T, (long long)T * T,
                B * H));
            softmax_causal_forward<<<B * H * T, 128>>>(a.att, T);
            KERNEL_CHECK();
            // y = att V
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_N, CUBLAS_OP_N, hd, T, T, &one, v, hd, (long long)T * hd,
                a.att, T, (long long)T * T, &zero, y_tmp, hd, (long long)T * hd, B * H));
            unpermute<<<grid_for(NC, TB), TB>>>(a.atty, y_tmp, B, T, H, hd);
            KERNEL_CHECK();
            matmul_forward(a.res1, a.atty, bw.wo->w, N, C, C);
            add_bias<<<grid_for(NC, TB), TB>>>(a.res1, bw.bo->w, N, C);
            KERNEL_CHECK();
            residual_forward<<<grid_for(NC, TB), TB>>>(a.res1, a.res1, x, (int)NC);
            KERNEL_CHECK();

            layernorm_forward<<<N, TB>>>(a.ln2, a.ln2_mean, a.ln2_rstd, a.res1, bw.ln2g->w,
                                         bw.ln2b->w, C);
            KERNEL_CHECK();
            matmul_forward(a.fch, a.ln2, bw.w1->w, N, C, 4 * C);
            add_bias<<<grid_for(4 * NC, TB), TB>>>(a.fch, bw.b1->w, N, 4 * C);
            KERNEL_CHECK();
            gelu_forward<<<grid_for(4 * NC, TB), TB>>>(a.fch_gelu, a.fch, (int)(4 * NC));
            KERNEL_CHECK();
            matmul_forward(a.res2, a.fch_gelu, bw.w2->w, N, 4 * C, C);
            add_bias<<<grid_for(NC, TB), TB>>>(a.res2, bw.b2->w, N, C);
            KERNEL_CHECK();
            residual_forward<<<grid_for(NC, TB), TB>>>(a.res2, a.res2, a.res1, (int)NC);
            KERNEL_CHECK();
        }
        float* last = acts[L - 1].res2;
        layernorm_forward<<<N, TB>>>(lnf, lnf_mean, lnf_rstd, last, lnfg->w, lnfb->w, C);
        KERNEL_CHECK();
        // logits[N, V] = lnf @ wte^T (tied embedding)
        CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, V, N, C, &one, wte->w, C,
                                 lnf, C, &zero, probs, V));
        crossentropy_forward<<<N, TB>>>(losses, probs, targets, V);
        KERNEL_CHECK();
        dev_free(y_tmp);
        dev_free(qkv_tmp);
        ++g_forward_passes;

        CUDA_CHECK(cudaMemcpy(host_losses.data(), losses, N * sizeof(float),
                              cudaMemcpyDeviceToHost));
        double loss = 0.0;
        for (int i = 0; i < N; ++i) loss += host_losses[i];
        loss /= N;

        // ---- backward --------------------------------------------------------------------
        g_phase = "backward";
        float* dlogits = dev_alloc<float>((size_t)N * V, P_TEMPORARY);
        float* dres = dev_alloc<float>(NC, P_TEMPORARY);
        float* dln = dev_alloc<float>(NC, P_TEMPORARY);
        crossentropy_backward<<<grid_for((long long)N * V, TB), TB>>>(dlogits, probs, targets,
                                                                       N, V);
        KERNEL_CHECK();
        // dlnf = dlogits @ wte ; dwte += dlogits^T @ lnf
        CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, V, &one, wte->w, C,
                                 dlogits, V, &zero, dln, C));
        CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, C, V, N, &one, lnf, C,
                                 dlogits, V, &one, wte->g, C));
        dev_free(dlogits);
        CUDA_CHECK(cudaMemset(dres, 0, NC * sizeof(float)));
        layernorm_backward<<<N, TB>>>(dres, lnfg->g, lnfb->g, dln, last, lnfg->w, lnf_mean,
                                      lnf_rstd, C);
        KERNEL_CHECK();

        float* dfch = dev_alloc<float>(4 * NC, P_TEMPORARY);
        float* datty = dev_alloc<float>(NC, P_TEMPORARY);
        float* dy = dev_alloc<float>(NC, P_TEMPORARY);
        float* dqkvp = dev_alloc<float>(3 * NC, P_TEMPORARY);
        float* dqkv = dev_alloc<float>(3 * NC, P_TEMPORARY);
        float* datt = dev_alloc<float>((size_t)B * H * T * T, P_TEMPORARY);
        for (int l = L - 1; l >= 0; --l) {
            Block& bw = blocks[l];
            LayerActs& a = acts[l];
            const float* x = l == 0 ? encoded : acts[l - 1].res2;
            const float* q = a.qkvp;
            const float* k = a.qkvp + NC;
            const float* v = a.qkvp + 2 * NC;
            float* dq = dqkvp;
            float* dk = dqkvp + NC;
            float* dv = dqkvp + 2 * NC;

            // MLP
            bias_backward<<<grid_for(C, TB), TB>>>(bw.b2->g, dres, N, C);
            KERNEL_CHECK();
            matmul_backward(dfch, bw.w2->g, dres, a.fch_gelu, bw.w2->w, N, 4 * C, C);
            gelu_backward<<<grid_for(4 * NC, TB), TB>>>(dfch, a.fch, (int)(4 * NC));
            KERNEL_CHECK();
            bias_backward<<<grid_for(4 * C, TB), TB>>>(bw.b1->g, dfch, N, 4 * C);
            KERNEL_CHECK();
            matmul_backward(dln, bw.w1->g, dfch, a.ln2, bw.w1->w, N, C, 4 * C);
            layernorm_backward<<<N, TB>>>(dres, bw.ln2g->g, bw.ln2b->g, dln, a.res1,
                                          bw.ln2g->w, a.ln2_mean, a.ln2_rstd, C);
            KERNEL_CHECK();

            // attention
            bias_backward<<<grid_for(C, TB), TB>>>(bw.bo->g, dres, N, C);
            KERNEL_CHECK();
            matmul_backward(datty, bw.wo->g, dres, a.atty, bw.wo->w, N, C, C);
            unpermute_backward<<<grid_for(NC, TB), TB>>>(dy, datty, B, T, H, hd);
            KERNEL_CHECK();
            // datt = dy V^T ; dv = att^T dy
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hd, &one, v, hd, (long long)T * hd, dy,
                hd, (long long)T * hd, &zero, datt, T, (long long)T * T, B * H));
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_N, CUBLAS_OP_T, hd, T, T, &one, dy, hd, (long long)T * hd,
                a.att, T, (long long)T * T, &zero, dv, hd, (long long)T * hd, B * H));
            softmax_backward<<<B * H * T, 128>>>(datt, a.att, T);
            KERNEL_CHECK();
            // dq = scale * dscores K ; dk = scale * dscores^T Q
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_N, CUBLAS_OP_N, hd, T, T, &attn_scale, k, hd,
                (long long)T * hd, datt, T, (long long)T * T, &zero, dq, hd, (long long)T * hd,
                B * H));
            CUBLAS_CHECK(cublasSgemmStridedBatched(
                g_blas, CUBLAS_OP_N, CUBLAS_OP_T, hd, T, T, &attn_scale, q, hd,
                (long long)T * hd, datt, T, (long long)T * T, &zero, dk, hd, (long long)T * hd,
                B * H));
            permute_qkv_backward<<<grid_for(NC, TB), TB>>>(dqkv, dq, dk, dv, B, T, H, hd);
            KERNEL_CHECK();
            bias_backward<<<grid_for(3 * C, TB), TB>>>(bw.bqkv->g, dqkv, N, 3 * C);
            KERNEL_CHECK();
            matmul_backward(dln, bw.wqkv->g, dqkv, a.ln1, bw.wqkv->w, N, C, 3 * C);
            layernorm_backward<<<N, TB>>>(dres, bw.ln1g->g, bw.ln1b->g, dln, x, bw.ln1g->w,
                                          a.ln1_mean, a.ln1_rstd, C);
            KERNEL_CHECK();
        }
        encoder_backward<<<grid_for(NC, TB), TB>>>(wte->g, wpe->g, dres, tokens, N, T, C);
        KERNEL_CHECK();
        dev_free(datt);
        dev_free(dqkv);
        dev_free(dqkvp);
        dev_free(dy);
        dev_free(datty);
        dev_free(dfch);
        dev_free(dln);
        dev_free(dres);

        // ---- optimizer: clip by global norm, then Adafactor --------------------------------
        g_phase = "optimizer";
        CUDA_CHECK(cudaMemset(grad_norm, 0, 4 * sizeof(float)));
        grad_sumsq_multi<<<dim3(32, nparams), TB>>>(grad_table, grad_norm);
        KERNEL_CHECK();
        clip_finalize<<<1, 32>>>(grad_norm, kMaxGradNorm);
        KERNEL_CHECK();

        float* slots = dev_alloc<float>((size_t)nparams * 4, P_TEMPORARY);
        CUDA_CHECK(cudaMemset(slots, 0, (size_t)nparams * 4 * sizeof(float)));
        const float beta2 = 1.0f - powf((float)step, -0.8f);
        const float rho = fminf(1e-2f, 1.0f / sqrtf((float)step));
        const float eps1 = 1e-30f, eps2 = 1e-3f, clip_threshold = 1.0f;
        for (int i = 0; i < nparams; ++i) {
            Param* p = params[i];
            float* slot = slots + 4 * i;
            if (p->cols) {
                long long n = p->numel();
                int grid = grid_for(n, TB);
                if (grid > 512) grid = 512;
                adafactor_row_stats<<<p->rows, TB>>>(p->g, p->w, p->vr, slot, grad_norm,
                                                     p->cols, beta2, eps1);
                KERNEL_CHECK();
                adafactor_col_stats<<<grid_for(p->cols, TB), TB>>>(p->g, p->vc, grad_norm,
                                                                   p->rows, p->cols, beta2,
                                                                   eps1);
                KERNEL_CHECK();
                adafactor_update_rms<<<grid, TB>>>(p->g, p->vr, p->vc, slot, grad_norm,
                                                   p->rows, p->cols);
                KERNEL_CHECK();
                adafactor_apply<<<grid, TB>>>(p->w, p->g, p->vr, p->vc, slot, grad_norm,
                                              p->rows, p->cols, rho, clip_threshold, eps2);
                KERNEL_CHECK();
            } else {
                adafactor_vector<<<1, TB>>>(p->w, p->g, p->vr, grad_norm, p->rows, beta2, eps1,
                                            rho, clip_threshold, eps2);
                KERNEL_CHECK();
            }
        }
        float norm_host[4];
        CUDA_CHECK(cudaMemcpy(norm_host, grad_norm, sizeof(norm_host), cudaMemcpyDeviceToHost));
        dev_free(slots);
        CUDA_CHECK(cudaDeviceSynchronize());
        ++g_steps_done;
        printf("step %d loss %.4f grad_norm %.4f\n", step, loss, norm_host[1]);
    }

    // ---- teardown ---------------------------------------------------------------------------
    g_phase = "setup";
    g_step = 0;
    dev_free(losses);
    dev_free(probs);
    dev_free(lnf_rstd);
    dev_free(lnf_mean);
    dev_free(lnf);
    for (int l = L - 1; l >= 0; --l) {
        LayerActs& a = acts[l];
        float* bufs[] = {a.res2, a.fch_gelu, a.fch, a.ln2_rstd, a.ln2_mean, a.ln2, a.res1,
                         a.atty, a.att, a.qkvp, a.ln1_rstd, a.ln1_mean, a.ln1};
        for (float* b : bufs) dev_free(b);
    }
    dev_free(encoded);
    dev_free(targets);
    dev_free(tokens);
    dev_free(grad_norm);
    dev_free(grad_table);
    for (Param* p : params) {
        dev_free(p->vc);
        dev_free(p->vr);
        dev_free(p->g);
        dev_free(p->w);
        delete p;
    }
    CUBLAS_CHECK(cublasDestroy(g_blas));
    dev_free(blas_workspace);

    print_ledger(false);
    return 0;
}

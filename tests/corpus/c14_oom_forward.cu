// c14_oom_forward: a small GPT-style fp32 trainer (token + position embedding, 6 pre-LN
// transformer blocks of width 512 with 8 heads -- QKV projection, causal attention, output
// projection, GELU MLP 512->2048->512 -- final LayerNorm and an LM head tied to the token
// embedding, vocabulary 8192) trained with AdamW. Every parameter tensor, its gradient and
// its two AdamW moments are separate cudaMallocs made before the first step. Forward
// allocates each block's saved activations as it goes (LayerNorm outputs and statistics,
// qkv, attention output and log-sum-exp, residuals, MLP pre- and post-GELU), backward
// frees them block by block and uses a few per-backward scratch buffers for gradients with
// respect to activations. Matmuls are cublasSgemm. Steps 1 and 2 train on batch 4 x
// sequence 256; step 3 is handed sequences 4x longer (1024 tokens) and, on the 864 MiB
// device this program expects, forward runs out of memory partway through the 4th block
// (at its MLP activation): the program catches the cudaErrorMemoryAllocation, prints its
// ledger with `oom` filled in, and exits with status 3.
//
// corpus-env: ANATOMIST_SIM_MEMORY=864MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------
// error checking
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

// ---------------------------------------------------------------------------------------
// device memory ledger: every cudaMalloc/cudaFree goes through dev_alloc/dev_free
// ---------------------------------------------------------------------------------------
enum Purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, MIXED, NPURPOSE };
static const char *kPurposeName[NPURPOSE] = {"weights",   "optimizer",     "gradients", "activations",
                                             "temporary", "functionality", "mixed"};

static const char *g_phase = "setup";  // what the program is doing now
static int g_step = 0;                  // 1-based step in progress, 0 in set-up

struct OomRecord {
    bool happened = false;
    size_t requested = 0;
    Purpose purpose = WEIGHTS;
    const char *phase = "";
    int step = 0;
    size_t live_total = 0;
    size_t live_by[NPURPOSE] = {0};
};

struct Ledger {
    std::map<void *, std::pair<size_t, Purpose>> live;
    size_t live_by[NPURPOSE] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[NPURPOSE] = {0};
    OomRecord oom;
};
static Ledger g_ledger;

struct DeviceOutOfMemory {
    size_t bytes;
};

template <typename T>
static T *dev_alloc(size_t bytes, Purpose purpose) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();  // cudaMalloc failures are not sticky: clear the last error
        OomRecord &o = g_ledger.oom;
        o.happened = true;
        o.requested = bytes;
        o.purpose = purpose;
        o.phase = g_phase;
        o.step = g_step;
        o.live_total = g_ledger.live_total;
        memcpy(o.live_by, g_ledger.live_by, sizeof(o.live_by));
        throw DeviceOutOfMemory{bytes};
    }
    CUDA_CHECK(err);
    g_ledger.live[p] = std::make_pair(bytes, purpose);
    g_ledger.live_by[purpose] += bytes;
    g_ledger.live_total += bytes;
    if (g_ledger.live_total > g_ledger.peak_total) {  // strictly greater: the first moment
        g_ledger.peak_total = g_ledger.live_total;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) {
        fprintf(stderr, "dev_free: unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live_by[it->second.second] -= it->second.first;
    g_ledger.live_total -= it->second.first;
    g_ledger.live.erase(it);
}

// ---------------------------------------------------------------------------------------
// kernels
// ---------------------------------------------------------------------------------------
static unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// out[b,s,:] = wte[tok[b,s],:] + wpe[s,:]
__global__ void encoder_forward(float *out, const int *tok, const float *wte, const float *wpe, int B, int S, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)B * S * C) return;
    int c = i % C;
    size_t bs = i / C;
    int s = bs % S;
    out[i] = wte[(size_t)tok[bs] * C + c] + wpe[(size_t)s * C + c];
}

__global__ void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tok, int B, int S, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)B * S * C) return;
    int c = i % C;
    size_t bs = i / C;
    int s = bs % S;
    atomicAdd(&dwte[(size_t)tok[bs] * C + c], dout[i]);
    atomicAdd(&dwpe[(size_t)s * C + c], dout[i]);
}

// one warp per row
__global__ void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                  const float *b, int N, int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const float *x = inp + (size_t)row * C;
    float s = 0.f;
    for (int i = lane; i < C; i += 32) s += x[i];
    float m = warp_sum(s) / C;
    float v = 0.f;
    for (int i = lane; i < C; i += 32) v += (x[i] - m) * (x[i] - m);
    float r = rsqrtf(warp_sum(v) / C + 1e-5f);
    for (int i = lane; i < C; i += 32) out[(size_t)row * C + i] = (x[i] - m) * r * w[i] + b[i];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

// dinp += LN'(dout); dw, db accumulated with atomics. One warp per row.
__global__ void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                   const float *w, const float *mean, const float *rstd, int N, int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const float *g = dout + (size_t)row * C, *x = inp + (size_t)row * C;
    float m = mean[row], r = rstd[row];
    float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
    for (int i = lane; i < C; i += 32) {
        float n = (x[i] - m) * r, dn = w[i] * g[i];
        dnorm_mean += dn;
        dnorm_norm_mean += dn * n;
    }
    dnorm_mean = warp_sum(dnorm_mean) / C;
    dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
    for (int i = lane; i < C; i += 32) {
        float n = (x[i] - m) * r, dn = w[i] * g[i];
        atomicAdd(&db[i], g[i]);
        atomicAdd(&dw[i], n * g[i]);
        dinp[(size_t)row * C + i] += (dn - dnorm_mean - n * dnorm_norm_mean) * r;
    }
}

__global__ void add_bias(float *out, const float *bias, int N, int OC) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * OC) out[i] += bias[i % OC];
}

// dbias[j] += sum_n dout[n, j]
__global__ void bias_backward(float *dbias, const float *dout, int N, int OC) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= OC) return;
    float s = 0.f;
    for (int n = 0; n < N; ++n) s += dout[(size_t)n * OC + j];
    dbias[j] += s;
}

__global__ void residual_add_inplace(float *out, const float *inp, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] += inp[i];
}

#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)
__global__ void gelu_forward(float *out, const float *inp, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    out[i] = 0.5f * x * (1.f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
}

// d = d * gelu'(inp), in place
__global__ void gelu_backward_inplace(float *d, const float *inp, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = inp[i];
    float u = GELU_SCALE * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = GELU_SCALE * (1.f + 3.f * 0.044715f * x * x);
    d[i] *= 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * du;
}

// Causal self-attention, one thread per (b, h, query i), online softmax. qkv is (B, S, 3C)
// with q, k, v side by side; out is (B, S, C); lse (B, NH, S) is kept for backward.
__global__ void attention_forward(float *out, float *lse, const float *qkv, int B, int S, int C, int NH) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * S) return;
    int i = idx % S, h = (idx / S) % NH, b = idx / (S * NH);
    int hs = C / NH;
    float scale = rsqrtf((float)hs);
    const float *q = qkv + ((size_t)b * S + i) * 3 * C + h * hs;
    float *o = out + ((size_t)b * S + i) * C + h * hs;
    for (int d = 0; d < hs; ++d) o[d] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (int j = 0; j <= i; ++j) {
        const float *k = qkv + ((size_t)b * S + j) * 3 * C + C + h * hs;
        const float *v = k + C;
        float s = 0.f;
        for (int d = 0; d < hs; ++d) s += q[d] * k[d];
        s *= scale;
        float m_new = fmaxf(m, s);
        float corr = __expf(m - m_new), p = __expf(s - m_new);
        l = l * corr + p;
        for (int d = 0; d < hs; ++d) o[d] = o[d] * corr + p * v[d];
        m = m_new;
    }
    for (int d = 0; d < hs; ++d) o[d] /= l;
    lse[((size_t)b * NH + h) * S + i] = m + logf(l);
}

// dqkv must be zeroed; k and v gradients are accumulated with atomics
__global__ void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out,
                                   const float *lse, int B, int S, int C, int NH) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * S) return;
    int i = idx % S, h = (idx / S) % NH, b = idx / (S * NH);
    int hs = C / NH;
    float scale = rsqrtf((float)hs);
    size_t qrow = ((size_t)b * S + i) * 3 * C + h * hs;
    const float *q = qkv + qrow;
    const float *dO = dout + ((size_t)b * S + i) * C + h * hs;
    const float *O = out + ((size_t)b * S + i) * C + h * hs;
    float *dq = dqkv + qrow;
    float Di = 0.f;
    for (int d = 0; d < hs; ++d) Di += dO[d] * O[d];
    float L = lse[((size_t)b * NH + h) * S + i];
    for (int j = 0; j <= i; ++j) {
        size_t krow = ((size_t)b * S + j) * 3 * C + C + h * hs;
        const float *k = qkv + krow, *v = k + C;
        float *dk = dqkv + krow, *dv = dk + C;
        float s = 0.f, dp = 0.f;
        for (int d = 0; d < hs; ++d) {
            s += q[d] * k[d];
            dp += dO[d] * v[d];
        }
        float p = __expf(s * scale - L);
        float ds = p * (dp - Di) * scale;
        for (int d = 0; d < hs; ++d) {
            atomicAdd(&dv[d], p * dO[d]);
            atomicAdd(&dk[d], ds * q[d]);
            dq[d] += ds * k[d];
        }
    }
}

// Fused softmax cross-entropy: losses[n] = -log softmax(logits[n])[target[n]], and the
// logits row is overwritten in place by d(mean loss)/d(logits). One block per row.
__global__ void crossentropy_forward_backward(float *logits, float *losses, const int *targets, int N, int V) {
    int row = blockIdx.x;
    if (row >= N) return;
    float *x = logits + (size_t)row * V;
    __shared__ float red[32];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    float m = -INFINITY;
    for (int j = tid; j < V; j += blockDim.x) m = fmaxf(m, x[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < nwarps ? red[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) red[0] = m;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();
    float s = 0.f;
    for (int j = tid; j < V; j += blockDim.x) s += __expf(x[j] - m);
    s = warp_sum(s);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < nwarps ? red[lane] : 0.f);
        if (lane == 0) red[0] = s;
    }
    __syncthreads();
    float lse = m + logf(red[0]);
    int y = targets[row];
    if (tid == 0) losses[row] = lse - x[y];
    __syncthreads();  // x[y] is read above before being overwritten
    for (int j = tid; j < V; j += blockDim.x) x[j] = (__expf(x[j] - lse) - (j == y ? 1.f : 0.f)) / N;
}

__global__ void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                             float beta2, float eps, float wd, float bc1, float bc2) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float mi = beta1 * m[i] + (1.f - beta1) * g[i];
    float vi = beta2 * v[i] + (1.f - beta2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p[i]);
}

// ---------------------------------------------------------------------------------------
// matmuls (row-major tensors through column-major cuBLAS)
// ---------------------------------------------------------------------------------------
static cublasHandle_t g_cublas;
static cudaStream_t g_stream;

// out (N, OC) = inp (N, C) @ W^T (W is OC x C) [+ bias]
static void matmul_forward(float *out, const float *inp, const float *W, const float *bias, int N, int C, int OC) {
    const float one = 1.f, zero = 0.f;
    CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &one, W, C, inp, C, &zero, out, OC));
    if (bias) {
        add_bias<<<blocks_for((size_t)N * OC, 256), 256, 0, g_stream>>>(out, bias, N, OC);
        CUDA_CHECK(cudaGetLastError());
    }
}

// dinp (N, C) = dout @ W ; dW += dout^T inp ; dbias += colsum(dout)
static void matmul_backward(float *dinp, float *dW, float *dbias, const float *dout, const float *inp, const float *W,
                            int N, int C, int OC) {
    const float one = 1.f, zero = 0.f;
    CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, W, C, dout, OC, &zero, dinp, C));
    CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C, dout, OC, &one, dW, C));
    if (dbias) {
        bias_backward<<<blocks_for(OC, 256), 256, 0, g_stream>>>(dbias, dout, N, OC);
        CUDA_CHECK(cudaGetLastError());
    }
}

// ---------------------------------------------------------------------------------------
// model
// ---------------------------------------------------------------------------------------
static const int kVocab = 8192, kMaxSeq = 1024, kC = 512, kHeads = 8, kLayers = 6;

struct Tensor {
    std::string name;
    size_t n;
    int fan_in;  // 0: LayerNorm weight (ones), -1: bias / LayerNorm bias (zeros), -2: embedding
    float *p = nullptr, *g = nullptr, *m = nullptr, *v = nullptr;
};

struct BlockParams {
    Tensor *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};

struct BlockActs {  // saved by forward for backward
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *lse, *res2, *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *res3;
};

struct Model {
    std::vector<Tensor> tensors;  // reserved up front: pointers into it stay valid
    Tensor *wte, *wpe, *lnfw, *lnfb;
    BlockParams blocks[kLayers];
};

static Tensor *add_tensor(Model &m, const std::string &name, size_t n, int fan_in) {
    m.tensors.push_back(Tensor{name, n, fan_in});
    return &m.tensors.back();
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint32_t rng_u32() {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (uint32_t)((g_rng * 2685821657736338717ull) >> 32);
}
static float rng_normal() {  // Box-Muller
    float u1 = (rng_u32() + 1.f) / 4294967296.f, u2 = rng_u32() / 4294967296.f;
    return sqrtf(-2.f * logf(u1)) * cosf(6.2831853f * u2);
}

static void build_model(Model &m) {
    m.tensors.reserve(4 + 12 * kLayers);
    const int C = kC;
    m.wte = add_tensor(m, "wte", (size_t)kVocab * C, -2);
    m.wpe = add_tensor(m, "wpe", (size_t)kMaxSeq * C, -2);
    for (int l = 0; l < kLayers; ++l) {
        std::string p = "h." + std::to_string(l) + ".";
        BlockParams &b = m.blocks[l];
        b.ln1w = add_tensor(m, p + "ln_1.weight", C, 0);
        b.ln1b = add_tensor(m, p + "ln_1.bias", C, -1);
        b.qkvw = add_tensor(m, p + "attn.c_attn.weight", (size_t)3 * C * C, C);
        b.qkvb = add_tensor(m, p + "attn.c_attn.bias", 3 * C, -1);
        b.projw = add_tensor(m, p + "attn.c_proj.weight", (size_t)C * C, C);
        b.projb = add_tensor(m, p + "attn.c_proj.bias", C, -1);
        b.ln2w = add_tensor(m, p + "ln_2.weight", C, 0);
        b.ln2b = add_tensor(m, p + "ln_2.bias", C, -1);
        b.fcw = add_tensor(m, p + "mlp.c_fc.weight", (size_t)4 * C * C, C);
        b.fcb = add_tensor(m, p + "mlp.c_fc.bias", 4 * C, -1);
        b.fcprojw = add_tensor(m, p + "mlp.c_proj.weight", (size_t)C * 4 * C, 4 * C);
        b.fcprojb = add_tensor(m, p + "mlp.c_proj.bias", C, -1);
    }
    m.lnfw = add_tensor(m, "ln_f.weight", C, 0);
    m.lnfb = add_tensor(m, "ln_f.bias", C, -1);

    // parameters, then gradients, then AdamW moments: one allocation per tensor
    std::vector<float> host;
    for (Tensor &t : m.tensors) {
        t.p = dev_alloc<float>(t.n * sizeof(float), WEIGHTS);
        host.resize(t.n);
        float stdv = t.fan_in > 0 ? 0.02f : (t.fan_in == -2 ? 0.02f : 0.f);
        for (size_t i = 0; i < t.n; ++i) host[i] = t.fan_in == 0 ? 1.f : stdv * rng_normal();
        CUDA_CHECK(cudaMemcpy(t.p, host.data(), t.n * sizeof(float), cudaMemcpyHostToDevice));
    }
    for (Tensor &t : m.tensors) t.g = dev_alloc<float>(t.n * sizeof(float), GRADIENTS);
    for (Tensor &t : m.tensors) {
        t.m = dev_alloc<float>(t.n * sizeof(float), OPTIMIZER);
        t.v = dev_alloc<float>(t.n * sizeof(float), OPTIMIZER);
        CUDA_CHECK(cudaMemsetAsync(t.m, 0, t.n * sizeof(float), g_stream));
        CUDA_CHECK(cudaMemsetAsync(t.v, 0, t.n * sizeof(float), g_stream));
    }
}

static void launch_check() { CUDA_CHECK(cudaGetLastError()); }

struct StepState {
    int B, S, T;
    int *tokens = nullptr, *targets = nullptr;
    float *encoded = nullptr;
    BlockActs acts[kLayers];
    int blocks_done = 0;
    float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr, *logits = nullptr;
};

static void free_block_acts(BlockActs &a) {
    float *all[] = {a.ln1, a.ln1_mean, a.ln1_rstd, a.qkv, a.atty, a.lse, a.res2,
                    a.ln2, a.ln2_mean, a.ln2_rstd, a.fch, a.fch_gelu, a.res3};
    for (float *p : all) dev_free(p);
    memset(&a, 0, sizeof(a));
}

// forward; returns the mean loss
static float forward(Model &m, StepState &st, const std::vector<int> &h_tokens, const std::vector<int> &h_targets) {
    const int B = st.B, S = st.S, T = st.T, C = kC, NH = kHeads, V = kVocab;
    st.tokens = dev_alloc<int>((size_t)T * sizeof(int), ACTIVATIONS);
    st.targets = dev_alloc<int>((size_t)T * sizeof(int), ACTIVATIONS);
    CUDA_CHECK(cudaMemcpyAsync(st.tokens, h_tokens.data(), T * sizeof(int), cudaMemcpyHostToDevice, g_stream));
    CUDA_CHECK(cudaMemcpyAsync(st.targets, h_targets.data(), T * sizeof(int), cudaMemcpyHostToDevice, g_stream));

    st.encoded = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
    encoder_forward<<<blocks_for((size_t)T * C, 256), 256, 0, g_stream>>>(st.encoded, st.tokens, m.wte->p, m.wpe->p,
                                                                          B, S, C);
    launch_check();

    const float *x = st.encoded;
    const unsigned ln_blocks = blocks_for(T, 8);  // 8 warps (rows) per block
    for (int l = 0; l < kLayers; ++l) {
        BlockParams &p = m.blocks[l];
        BlockActs &a = st.acts[l];
        a.ln1 = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
        a.ln1_mean = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
        a.ln1_rstd = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
        layernorm_forward<<<ln_blocks, 256, 0, g_stream>>>(a.ln1, a.ln1_mean, a.ln1_rstd, x, p.ln1w->p, p.ln1b->p, T, C);
        launch_check();
        a.qkv = dev_alloc<float>((size_t)T * 3 * C * sizeof(float), ACTIVATIONS);
        matmul_forward(a.qkv, a.ln1, p.qkvw->p, p.qkvb->p, T, C, 3 * C);
        a.atty = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
        a.lse = dev_alloc<float>((size_t)B * NH * S * sizeof(float), ACTIVATIONS);
        attention_forward<<<blocks_for((size_t)B * NH * S, 128), 128, 0, g_stream>>>(a.atty, a.lse, a.qkv, B, S, C, NH);
        launch_check();
        a.res2 = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
        matmul_forward(a.res2, a.atty, p.projw->p, p.projb->p, T, C, C);
        residual_add_inplace<<<blocks_for((size_t)T * C, 256), 256, 0, g_stream>>>(a.res2, x, (size_t)T * C);
        launch_check();
        a.ln2 = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
        a.ln2_mean = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
        a.ln2_rstd = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
        layernorm_forward<<<ln_blocks, 256, 0, g_stream>>>(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2w->p,
                                                           p.ln2b->p, T, C);
        launch_check();
        a.fch = dev_alloc<float>((size_t)T * 4 * C * sizeof(float), ACTIVATIONS);
        matmul_forward(a.fch, a.ln2, p.fcw->p, p.fcb->p, T, C, 4 * C);
        a.fch_gelu = dev_alloc<float>((size_t)T * 4 * C * sizeof(float), ACTIVATIONS);
        gelu_forward<<<blocks_for((size_t)T * 4 * C, 256), 256, 0, g_stream>>>(a.fch_gelu, a.fch, (size_t)T * 4 * C);
        launch_check();
        a.res3 = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
        matmul_forward(a.res3, a.fch_gelu, p.fcprojw->p, p.fcprojb->p, T, 4 * C, C);
        residual_add_inplace<<<blocks_for((size_t)T * C, 256), 256, 0, g_stream>>>(a.res3, a.res2, (size_t)T * C);
        launch_check();
        x = a.res3;
        st.blocks_done = l + 1;
    }

    st.lnf = dev_alloc<float>((size_t)T * C * sizeof(float), ACTIVATIONS);
    st.lnf_mean = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
    st.lnf_rstd = dev_alloc<float>((size_t)T * sizeof(float), ACTIVATIONS);
    layernorm_forward<<<ln_blocks, 256, 0, g_stream>>>(st.lnf, st.lnf_mean, st.lnf_rstd, x, m.lnfw->p, m.lnfb->p, T, C);
    launch_check();
    st.logits = dev_alloc<float>((size_t)T * V * sizeof(float), ACTIVATIONS);
    matmul_forward(st.logits, st.lnf, m.wte->p, nullptr, T, C, V);  // LM head tied to wte

    // loss; the logits are replaced by their gradient for backward
    float *losses = dev_alloc<float>((size_t)T * sizeof(float), TEMPORARY);
    crossentropy_forward_backward<<<T, 256, 0, g_stream>>>(st.logits, losses, st.targets, T, V);
    launch_check();
    std::vector<float> h_losses(T);
    CUDA_CHECK(cudaMemcpyAsync(h_losses.data(), losses, T * sizeof(float), cudaMemcpyDeviceToHost, g_stream));
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
    dev_free(losses);
    double sum = 0.0;
    for (float v : h_losses) sum += v;
    return (float)(sum / T);
}

static void backward(Model &m, StepState &st) {
    const int B = st.B, S = st.S, T = st.T, C = kC, NH = kHeads, V = kVocab;
    const unsigned ln_blocks = blocks_for(T, 8);
    // scratch for gradients with respect to activations, for this backward only
    float *dresidual = dev_alloc<float>((size_t)T * C * sizeof(float), TEMPORARY);
    float *dbuf = dev_alloc<float>((size_t)T * C * sizeof(float), TEMPORARY);
    float *dbuf4 = dev_alloc<float>((size_t)T * 4 * C * sizeof(float), TEMPORARY);
    float *dqkv = dev_alloc<float>((size_t)T * 3 * C * sizeof(float), TEMPORARY);
    CUDA_CHECK(cudaMemsetAsync(dresidual, 0, (size_t)T * C * sizeof(float), g_stream));

    // LM head and final LayerNorm
    matmul_backward(dbuf, m.wte->g, nullptr, st.logits, st.lnf, m.wte->p, T, C, V);
    const float *x_last = st.acts[kLayers - 1].res3;
    layernorm_backward<<<ln_blocks, 256, 0, g_stream>>>(dresidual, m.lnfw->g, m.lnfb->g, dbuf, x_last, m.lnfw->p,
                                                        st.lnf_mean, st.lnf_rstd, T, C);
    launch_check();
    dev_free(st.logits);
    dev_free(st.lnf);
    dev_free(st.lnf_mean);
    dev_free(st.lnf_rstd);
    st.logits = st.lnf = st.lnf_mean = st.lnf_rstd = nullptr;

    for (int l = kLayers - 1; l >= 0; --l) {
        BlockParams &p = m.blocks[l];
        BlockActs &a = st.acts[l];
        const float *x = l > 0 ? st.acts[l - 1].res3 : st.encoded;
        // MLP
        matmul_backward(dbuf4, p.fcprojw->g, p.fcprojb->g, dresidual, a.fch_gelu, p.fcprojw->p, T, 4 * C, C);
        gelu_backward_inplace<<<blocks_for((size_t)T * 4 * C, 256), 256, 0, g_stream>>>(dbuf4, a.fch,
                                                                                        (size_t)T * 4 * C);
        launch_check();
        matmul_backward(dbuf, p.fcw->g, p.fcb->g, dbuf4, a.ln2, p.fcw->p, T, C, 4 * C);
        layernorm_backward<<<ln_blocks, 256, 0, g_stream>>>(dresidual, p.ln2w->g, p.ln2b->g, dbuf, a.res2, p.ln2w->p,
                                                            a.ln2_mean, a.ln2_rstd, T, C);
        launch_check();
        // attention
        matmul_backward(dbuf, p.projw->g, p.projb->g, dresidual, a.atty, p.projw->p, T, C, C);
        CUDA_CHECK(cudaMemsetAsync(dqkv, 0, (size_t)T * 3 * C * sizeof(float), g_stream));
        attention_backward<<<blocks_for((size_t)B * NH * S, 128), 128, 0, g_stream>>>(dqkv, dbuf, a.qkv, a.atty,
                                                                                      a.lse, B, S, C, NH);
        launch_check();
        matmul_backward(dbuf, p.qkvw->g, p.qkvb->g, dqkv, a.ln1, p.qkvw->p, T, C, 3 * C);
        layernorm_backward<<<ln_blocks, 256, 0, g_stream>>>(dresidual, p.ln1w->g, p.ln1b->g, dbuf, x, p.ln1w->p,
                                                            a.ln1_mean, a.ln1_rstd, T, C);
        launch_check();
        free_block_acts(a);
    }

    encoder_backward<<<blocks_for((size_t)T * C, 256), 256, 0, g_stream>>>(m.wte->g, m.wpe->g, dresidual, st.tokens,
                                                                           B, S, C);
    launch_check();
    dev_free(st.encoded);
    st.encoded = nullptr;
    dev_free(dqkv);
    dev_free(dbuf4);
    dev_free(dbuf);
    dev_free(dresidual);
}

static void print_purposes(std::string &s, const size_t *by) {
    s += "{";
    for (int i = 0; i < NPURPOSE; ++i)
        s += (i ? ",\"" : "\"") + std::string(kPurposeName[i]) + "\":" + std::to_string(by[i]);
    s += "}";
}

static void print_ledger(int steps, int forward_passes, size_t params) {
    std::string peak;
    print_purposes(peak, g_ledger.peak_by);
    std::string oom = "null";
    const OomRecord &o = g_ledger.oom;
    if (o.happened) {
        int dom = 0;
        for (int i = 1; i < NPURPOSE; ++i)
            if (o.live_by[i] > o.live_by[dom]) dom = i;
        std::string live;
        print_purposes(live, o.live_by);
        oom = "{\"requested_bytes\":" + std::to_string(o.requested) + ",\"purpose\":\"" + kPurposeName[o.purpose] +
              "\",\"phase\":\"" + o.phase + "\",\"step\":" + std::to_string(o.step) +
              ",\"live_bytes\":" + std::to_string(o.live_total) + ",\"live_by_purpose\":" + live +
              ",\"dominant\":\"" + kPurposeName[dom] + "\"}";
    }
    fflush(stderr);
    printf("ledger {\"program\":\"c14_oom_forward\",\"kind\":\"training\",\"steps\":%d,\"micro_batches_per_step\":1,"
           "\"forward_passes\":%d,\"params\":%zu,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"adamw\",\"peak_bytes\":%zu,\"peak_by_purpose\":%s,\"pools_at_peak\":[],\"oom\":%s}\n",
           steps, forward_passes, params, g_ledger.peak_total, peak.c_str(), oom.c_str());
    fflush(stdout);
}

int main() {
    CUDA_CHECK(cudaStreamCreate(&g_stream));
    CUBLAS_CHECK(cublasCreate(&g_cublas));
    CUBLAS_CHECK(cublasSetStream(g_cublas, g_stream));

    Model model;
    build_model(model);
    size_t n_params = 0;
    for (const Tensor &t : model.tensors) n_params += t.n;
    printf("model: %d layers, width %d, %d heads, vocab %d, %zu parameters\n", kLayers, kC, kHeads, kVocab, n_params);

    // synthetic corpus: a fixed token stream
    std::vector<int> corpus(1 << 20);
    for (size_t i = 0; i < corpus.size(); ++i) corpus[i] = (int)(rng_u32() % kVocab);

    const int kBatch = 4;
    const int seq_for_step[3] = {256, 256, 1024};  // step 3 is handed 4x longer sequences
    const float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    int steps_done = 0, forward_passes = 0;
    size_t cursor = 0;

    try {
        for (int step = 1; step <= 3; ++step) {
            g_step = step;
            StepState st;
            st.B = kBatch;
            st.S = seq_for_step[step - 1];
            st.T = st.B * st.S;
            std::vector<int> tok(st.T), tgt(st.T);
            for (int i = 0; i < st.T; ++i) {
                if (cursor + st.T + 1 > corpus.size()) cursor = 0;
                tok[i] = corpus[cursor + i];
                tgt[i] = corpus[cursor + i + 1];
            }
            cursor += st.T;

            g_phase = "step_start";
            for (Tensor &t : model.tensors) CUDA_CHECK(cudaMemsetAsync(t.g, 0, t.n * sizeof(float), g_stream));

            g_phase = "forward";
            ++forward_passes;
            float loss = forward(model, st, tok, tgt);

            g_phase = "backward";
            backward(model, st);
            dev_free(st.tokens);
            dev_free(st.targets);

            g_phase = "optimizer";
            float bc1 = 1.f - powf(beta1, (float)step), bc2 = 1.f - powf(beta2, (float)step);
            for (Tensor &t : model.tensors) {
                bool decay = t.fan_in > 0 || t.fan_in == -2;  // matrices and embeddings
                adamw_update<<<blocks_for(t.n, 256), 256, 0, g_stream>>>(t.p, t.g, t.m, t.v, t.n, lr, beta1, beta2,
                                                                         eps, decay ? wd : 0.f, bc1, bc2);
                launch_check();
            }
            CUDA_CHECK(cudaStreamSynchronize(g_stream));
            steps_done = step;
            printf("step %d: B=%d S=%d loss %.4f\n", step, st.B, st.S, loss);
        }
    } catch (const DeviceOutOfMemory &e) {
        const OomRecord &o = g_ledger.oom;
        fprintf(stderr, "CUDA out of memory: tried to allocate %zu bytes in %s of step %d (%zu bytes in use)\n",
                e.bytes, o.phase, o.step, o.live_total);
        print_ledger(steps_done, forward_passes, n_params);
        return 3;
    }

    for (Tensor &t : model.tensors) {
        dev_free(t.p);
        dev_free(t.g);
        dev_free(t.m);
        dev_free(t.v);
    }
    CUBLAS_CHECK(cublasDestroy(g_cublas));
    CUDA_CHECK(cudaStreamDestroy(g_stream));
    print_ledger(steps_done, forward_passes, n_params);
    return 0;
}

// h18_oom_step_start_seqlen: a small GPT-style fp32 trainer with a sequence-length
// curriculum. The model is a decoder-only transformer (tied token embedding / LM head,
// 4 pre-LayerNorm blocks of causal multi-head attention and a GELU MLP, final LayerNorm),
// all parameters, gradients and SGD-with-momentum buffers kept as persistent flat fp32
// buffers for the whole run, plus a cuBLAS workspace handed to cublasSetWorkspace. The
// sequence length doubles every optimizer step (64, 128, 256, ...). At the start of each
// step the trainer re-sizes its length-dependent buffers one after the other, each time
// freeing the previous step's buffer and allocating one for the new length: the step's
// input tokens (inputs and targets), the attention-score buffer (softmax probabilities of
// every layer, kept for backward) and the per-layer activation buffers (embedding output,
// then one buffer per block). The forward pass allocates the head's activations (final
// LayerNorm output and logits) and a per-token loss buffer; the backward pass allocates
// its activation-gradient scratch and frees it at its end; the optimizer applies SGD with
// momentum. Because attention memory grows with the square of
// the length, on a 384 MiB device (cuBLAS's own default workspace takes 32 MiB of it) the
// allocation of the attention-score buffer at the start of step 5 (sequence length 1024)
// fails: the program prints its ledger with the out-of-memory record (phase step_start)
// and exits with status 3.
//
// corpus-env: ANATOMIST_SIM_MEMORY=384MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// ----------------------------------------------------------------------------------------
// error checking

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
            fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__, #call,   \
                    (int)st_);                                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// memory ledger: a thin wrapper around cudaMalloc / cudaFree

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char *kPhaseName[] = {"setup", "step_start", "forward", "backward",
                                   "optimizer"};

struct Ledger {
    long long live = 0;
    long long live_by[P_COUNT] = {0};
    long long peak = 0;
    long long peak_by[P_COUNT] = {0};
    struct Rec { void *p; size_t bytes; int purpose; };
    std::vector<Rec> recs;
};
static Ledger g_ledger;
static Phase g_phase = PH_SETUP;
static int g_step = 0;  // 1-based step in progress, 0 during set-up

// the run's description, printed in the ledger
static int g_steps_done = 0;
static int g_forward_passes = 0;
static long long g_params = 0;

static void print_by(const long long *by) {
    printf("{");
    for (int i = 0; i < P_COUNT; ++i)
        printf("%s\"%s\":%lld", i ? "," : "", kPurposeName[i], by[i]);
    printf("}");
}

static void print_ledger(bool oom, size_t req, int purpose, long long oom_live,
                         const long long *oom_by) {
    printf("ledger {\"program\":\"h18_oom_step_start_seqlen\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"sgd_momentum\",\"peak_bytes\":%lld,\"peak_by_purpose\":",
           g_steps_done, g_forward_passes, g_params, g_ledger.peak);
    print_by(g_ledger.peak_by);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (!oom) {
        printf("null}\n");
    } else {
        int dom = 0;
        for (int i = 1; i < P_COUNT; ++i)
            if (oom_by[i] > oom_by[dom]) dom = i;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%lld,\"live_by_purpose\":",
               req, kPurposeName[purpose], kPhaseName[g_phase], g_step, oom_live);
        print_by(oom_by);
        printf(",\"dominant\":\"%s\"}}\n", kPurposeName[dom]);
    }
    fflush(stdout);
}

template <typename T>
static void dev_alloc(T **ptr, size_t bytes, int purpose) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        fprintf(stderr, "out of memory: step %d (%s) could not allocate %zu bytes for %s\n",
                g_step, kPhaseName[g_phase], bytes, kPurposeName[purpose]);
        print_ledger(true, bytes, purpose, g_ledger.live, g_ledger.live_by);
        exit(3);
    }
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed: %s\n", bytes, cudaGetErrorString(err));
        exit(1);
    }
    g_ledger.recs.push_back({p, bytes, purpose});
    g_ledger.live += (long long)bytes;
    g_ledger.live_by[purpose] += (long long)bytes;
    if (g_ledger.live > g_ledger.peak) {
        g_ledger.peak = g_ledger.live;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof g_ledger.peak_by);
    }
    *ptr = (T *)p;
}

template <typename T>
static void dev_free(T *&ptr) {
    if (!ptr) return;
    for (size_t i = 0; i < g_ledger.recs.size(); ++i) {
        if (g_ledger.recs[i].p == (void *)ptr) {
            g_ledger.live -= (long long)g_ledger.recs[i].bytes;
            g_ledger.live_by[g_ledger.recs[i].purpose] -= (long long)g_ledger.recs[i].bytes;
            g_ledger.recs.erase(g_ledger.recs.begin() + i);
            CUDA_CHECK(cudaFree(ptr));
            ptr = nullptr;
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", (void *)ptr);
    exit(1);
}

// replace a length-dependent buffer by one of the new size (the old contents are dropped)
template <typename T>
static void resize(T **ptr, size_t bytes, int purpose) {
    dev_free(*ptr);
    dev_alloc(ptr, bytes, purpose);
}

// ----------------------------------------------------------------------------------------
// model configuration

static const int kVocab = 2048;
static const int kDim = 256;
static const int kLayers = 4;
static const int kHeads = 4;
static const int kHeadDim = kDim / kHeads;
static const int kBatch = 4;
static const int kSeqStart = 64;
static const int kMaxSteps = 6;  // 64 .. 2048
static const size_t kWorkspaceBytes = 4u << 20;
static const float kLR = 0.01f;
static const float kMomentum = 0.9f;

// per-block parameter layout (offsets in floats)
struct BlockParams {
    size_t ln1_g, ln1_b, wqkv, bqkv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2;
};
static size_t block_param_count() {
    const size_t D = kDim;
    return 2 * D + D * 3 * D + 3 * D + D * D + D + 2 * D + D * 4 * D + 4 * D + 4 * D * D + D;
}
static BlockParams block_params(size_t base) {
    const size_t D = kDim;
    BlockParams b;
    size_t o = base;
    b.ln1_g = o; o += D;
    b.ln1_b = o; o += D;
    b.wqkv = o;  o += D * 3 * D;
    b.bqkv = o;  o += 3 * D;
    b.wo = o;    o += D * D;
    b.bo = o;    o += D;
    b.ln2_g = o; o += D;
    b.ln2_b = o; o += D;
    b.w1 = o;    o += D * 4 * D;
    b.b1 = o;    o += 4 * D;
    b.w2 = o;    o += 4 * D * D;
    b.b2 = o;    o += D;
    return b;
}
// whole model: wte [V, D], blocks, lnf_g, lnf_b
static size_t off_wte() { return 0; }
static size_t off_block(int l) { return (size_t)kVocab * kDim + (size_t)l * block_param_count(); }
static size_t off_lnf() { return off_block(kLayers); }
static size_t total_params() { return off_lnf() + 2 * kDim; }

// per-block saved activations (offsets in floats), N = B*S tokens
struct BlockActs {
    size_t ln1, ln1_mean, ln1_rstd, qkv, ctx, res_mid, ln2, ln2_mean, ln2_rstd, fc_pre,
        fc_act, res_out, total;
};
static BlockActs block_acts(size_t N) {
    const size_t D = kDim;
    BlockActs a;
    size_t o = 0;
    a.ln1 = o;      o += N * D;
    a.ln1_mean = o; o += N;
    a.ln1_rstd = o; o += N;
    a.qkv = o;      o += N * 3 * D;
    a.ctx = o;      o += N * D;
    a.res_mid = o;  o += N * D;
    a.ln2 = o;      o += N * D;
    a.ln2_mean = o; o += N;
    a.ln2_rstd = o; o += N;
    a.fc_pre = o;   o += N * 4 * D;
    a.fc_act = o;   o += N * 4 * D;
    a.res_out = o;  o += N * D;
    a.total = o;
    return a;
}

// ----------------------------------------------------------------------------------------
// kernels

__global__ void embedding_forward(float *out, const int *tokens, const float *wte, int N,
                                  int D) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * D) return;
    int n = idx / D, d = idx % D;
    out[idx] = wte[(size_t)tokens[n] * D + d];
}

__global__ void embedding_backward(float *dwte, const int *tokens, const float *dout, int N,
                                   int D) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * D) return;
    int n = idx / D, d = idx % D;
    atomicAdd(&dwte[(size_t)tokens[n] * D + d], dout[idx]);
}

__global__ void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                  const float *g, const float *b, int N, int D) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    const float *x = inp + (size_t)n * D;
    float m = 0.f;
    for (int i = 0; i < D; ++i) m += x[i];
    m /= D;
    float v = 0.f;
    for (int i = 0; i < D; ++i) v += (x[i] - m) * (x[i] - m);
    v /= D;
    float s = rsqrtf(v + 1e-5f);
    float *o = out + (size_t)n * D;
    for (int i = 0; i < D; ++i) o[i] = (x[i] - m) * s * g[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
}

__global__ void layernorm_backward(float *dinp, float *dg, float *db, const float *dout,
                                   const float *inp, const float *g, const float *mean,
                                   const float *rstd, int N, int D) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    const float *x = inp + (size_t)n * D;
    const float *dy = dout + (size_t)n * D;
    float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
    for (int i = 0; i < D; ++i) {
        float xhat = (x[i] - m) * s;
        float dnorm = g[i] * dy[i];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * xhat;
    }
    dnorm_mean /= D;
    dnorm_norm_mean /= D;
    float *dx = dinp + (size_t)n * D;
    for (int i = 0; i < D; ++i) {
        float xhat = (x[i] - m) * s;
        atomicAdd(&dg[i], xhat * dy[i]);
        atomicAdd(&db[i], dy[i]);
        float dnorm = g[i] * dy[i];
        dx[i] += (dnorm - dnorm_mean - xhat * dnorm_norm_mean) * s;  // residual accumulate
    }
}

__global__ void add_bias(float *out, const float *bias, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * C) return;
    out[idx] += bias[idx % C];
}

__global__ void bias_backward(float *dbias, const float *dout, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.f;
    for (int n = 0; n < N; ++n) s += dout[(size_t)n * C + c];
    dbias[c] += s;
}

__global__ void residual_forward(float *out, const float *a, const float *b, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

__device__ __forceinline__ float gelu_f(float x) {
    const float c = 0.7978845608f;
    return 0.5f * x * (1.f + tanhf(c * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_forward(float *out, const float *inp, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = gelu_f(inp[idx]);
}

__global__ void gelu_backward(float *dinp, const float *inp, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    const float c = 0.7978845608f;
    float x = inp[idx];
    float u = c * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = c * (1.f + 3.f * 0.044715f * x * x);
    float grad = 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * du;
    dinp[idx] *= grad;
}

// causal softmax over rows of [rows, S] score matrices (row i of each S x S block)
__global__ void causal_softmax_forward(float *att, int rows, int S) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int i = r % S;
    float *row = att + (size_t)r * S;
    float mx = -INFINITY;
    for (int j = 0; j <= i; ++j) mx = fmaxf(mx, row[j]);
    float sum = 0.f;
    for (int j = 0; j <= i; ++j) { row[j] = expf(row[j] - mx); sum += row[j]; }
    for (int j = 0; j < S; ++j) row[j] = (j <= i) ? row[j] / sum : 0.f;
}

// dscores = P * (dP - sum_j dP*P) * scale, in place in datt
__global__ void causal_softmax_backward(float *datt, const float *att, int rows, int S,
                                        float scale) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int i = r % S;
    float *dp = datt + (size_t)r * S;
    const float *p = att + (size_t)r * S;
    float dot = 0.f;
    for (int j = 0; j <= i; ++j) dot += dp[j] * p[j];
    for (int j = 0; j < S; ++j) dp[j] = (j <= i) ? p[j] * (dp[j] - dot) * scale : 0.f;
}

// per-token cross-entropy from logits [N, V]
__global__ void crossentropy_forward(float *losses, const float *logits, const int *targets,
                                     int N, int V) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    const float *l = logits + (size_t)n * V;
    float mx = -INFINITY;
    for (int v = 0; v < V; ++v) mx = fmaxf(mx, l[v]);
    float sum = 0.f;
    for (int v = 0; v < V; ++v) sum += expf(l[v] - mx);
    losses[n] = logf(sum) + mx - l[targets[n]];
}

// dlogits = (softmax - onehot) / N, written in place over the logits
__global__ void crossentropy_backward(float *logits, const int *targets, int N, int V) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float *l = logits + (size_t)n * V;
    float mx = -INFINITY;
    for (int v = 0; v < V; ++v) mx = fmaxf(mx, l[v]);
    float sum = 0.f;
    for (int v = 0; v < V; ++v) sum += expf(l[v] - mx);
    for (int v = 0; v < V; ++v) {
        float p = expf(l[v] - mx) / sum;
        l[v] = (p - (v == targets[n] ? 1.f : 0.f)) / N;
    }
}

__global__ void sgd_momentum_update(float *w, float *mom, const float *g, size_t n, float lr,
                                    float mu) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float m = mu * mom[i] + g[i];
    mom[i] = m;
    w[i] -= lr * m;
}

static inline unsigned blocks_for(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }

// ----------------------------------------------------------------------------------------
// GEMM helpers (row-major tensors viewed as column-major by cuBLAS)

static cublasHandle_t g_blas;

// Y[N, Dout] = X[N, Din] W[Din, Dout]
static void linear_forward(float *Y, const float *X, const float *W, int N, int Din,
                           int Dout) {
    const float one = 1.f, zero = 0.f;
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, Dout, N, Din, &one, W, Dout,
                             X, Din, &zero, Y, Dout));
}

// dX[N, Din] (+)= dY W^T ; dW[Din, Dout] += X^T dY
static void linear_backward(float *dX, float *dW, const float *dY, const float *X,
                            const float *W, int N, int Din, int Dout, bool accumulate_dx) {
    const float one = 1.f, zero = 0.f;
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, Din, N, Dout, &one, W, Dout,
                             dY, Dout, accumulate_dx ? &one : &zero, dX, Din));
    CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, Dout, Din, N, &one, dY, Dout,
                             X, Din, &one, dW, Dout));
}

// ----------------------------------------------------------------------------------------

struct StepBuffers {
    int S = 0;
    int *tokens = nullptr;    // inputs [B, S] then targets [B, S]
    float *att = nullptr;     // softmax probabilities [L, B, H, S, S]
    float *encoded = nullptr; // embedding output [B, S, D]
    float *layer[kLayers] = {nullptr};
};

int main() {
    const int D = kDim, V = kVocab, L = kLayers, H = kHeads, HD = kHeadDim, B = kBatch;
    const size_t P = total_params();
    g_params = (long long)P;

    // ---------------- set-up
    g_phase = PH_SETUP;
    CUDA_CHECK(cudaSetDevice(0));
    CUBLAS_CHECK(cublasCreate(&g_blas));
    void *workspace = nullptr;
    dev_alloc(&workspace, kWorkspaceBytes, P_FUNCTIONALITY);
    CUBLAS_CHECK(cublasSetWorkspace(g_blas, workspace, kWorkspaceBytes));

    float *params = nullptr, *grads = nullptr, *momentum = nullptr;
    dev_alloc(&params, P * sizeof(float), P_WEIGHTS);
    dev_alloc(&grads, P * sizeof(float), P_GRADIENTS);
    dev_alloc(&momentum, P * sizeof(float), P_OPTIMIZER);

    {   // deterministic initialisation on the host
        std::vector<float> h(P);
        uint64_t s = 0x9E3779B97F4A7C15ull;
        auto rnd = [&]() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            return (float)((s >> 40) & 0xFFFFFF) / 16777216.f - 0.5f;
        };
        for (size_t i = 0; i < P; ++i) h[i] = 0.04f * rnd();
        for (int l = 0; l < L; ++l) {
            BlockParams bp = block_params(off_block(l));
            for (int i = 0; i < D; ++i) {
                h[bp.ln1_g + i] = 1.f; h[bp.ln1_b + i] = 0.f;
                h[bp.ln2_g + i] = 1.f; h[bp.ln2_b + i] = 0.f;
            }
        }
        for (int i = 0; i < D; ++i) { h[off_lnf() + i] = 1.f; h[off_lnf() + D + i] = 0.f; }
        CUDA_CHECK(cudaMemcpy(params, h.data(), P * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(momentum, 0, P * sizeof(float)));
    }

    const int max_S = kSeqStart << (kMaxSteps - 1);
    std::vector<int> h_tokens(2 * (size_t)B * max_S);
    uint32_t data_state = 12345u;

    StepBuffers sb;
    const float *wte = params + off_wte();
    float *dwte = grads + off_wte();
    const float att_scale = 1.f / sqrtf((float)HD);

    for (int step = 1; step <= kMaxSteps; ++step) {
        const int S = kSeqStart << (step - 1);
        const int N = B * S;
        g_step = step;

        // ---------------- step start: re-size the length-dependent buffers
        g_phase = PH_STEP_START;
        sb.S = S;
        const BlockActs ba = block_acts(N);
        const size_t att_per_layer = (size_t)B * H * S * S;
        resize(&sb.tokens, 2 * (size_t)N * sizeof(int), P_ACTIVATIONS);
        resize(&sb.att, (size_t)L * att_per_layer * sizeof(float), P_ACTIVATIONS);
        resize(&sb.encoded, (size_t)N * D * sizeof(float), P_ACTIVATIONS);
        for (int l = 0; l < L; ++l)
            resize(&sb.layer[l], ba.total * sizeof(float), P_ACTIVATIONS);

        // next batch of the synthetic corpus: targets are inputs shifted by one
        for (int b = 0; b < B; ++b) {
            std::vector<int> seq(S + 1);
            for (int t = 0; t <= S; ++t) {
                data_state = data_state * 1664525u + 1013904223u;
                seq[t] = (int)((data_state >> 8) % V);
            }
            for (int t = 0; t < S; ++t) {
                h_tokens[(size_t)b * S + t] = seq[t];
                h_tokens[(size_t)N + (size_t)b * S + t] = seq[t + 1];
            }
        }
        CUDA_CHECK(cudaMemcpy(sb.tokens, h_tokens.data(), 2 * (size_t)N * sizeof(int),
                              cudaMemcpyHostToDevice));
        const int *inputs = sb.tokens;
        const int *targets = sb.tokens + N;

        // ---------------- forward
        g_phase = PH_FORWARD;
        embedding_forward<<<blocks_for((size_t)N * D, 256), 256>>>(sb.encoded, inputs, wte, N,
                                                                   D);
        KERNEL_CHECK();
        const float *x = sb.encoded;
        for (int l = 0; l < L; ++l) {
            float *a = sb.layer[l];
            const BlockParams bp = block_params(off_block(l));
            float *att = sb.att + (size_t)l * att_per_layer;
            layernorm_forward<<<blocks_for(N, 128), 128>>>(a + ba.ln1, a + ba.ln1_mean,
                                                           a + ba.ln1_rstd, x,
                                                           params + bp.ln1_g,
                                                           params + bp.ln1_b, N, D);
            KERNEL_CHECK();
            linear_forward(a + ba.qkv, a + ba.ln1, params + bp.wqkv, N, D, 3 * D);
            add_bias<<<blocks_for((size_t)N * 3 * D, 256), 256>>>(a + ba.qkv,
                                                                  params + bp.bqkv, N, 3 * D);
            KERNEL_CHECK();
            for (int b = 0; b < B; ++b) {
                const float *qkv = a + ba.qkv + (size_t)b * S * 3 * D;
                float *sc = att + (size_t)b * H * S * S;
                const float zero = 0.f, one = 1.f;
                // scores = Q K^T * scale, one S x S matrix per head
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_T, CUBLAS_OP_N, S, S, HD, &att_scale, qkv + D, 3 * D,
                    HD, qkv, 3 * D, HD, &zero, sc, S, (long long)S * S, H));
                causal_softmax_forward<<<blocks_for((size_t)H * S, 128), 128>>>(sc, H * S, S);
                KERNEL_CHECK();
                // ctx = P V
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_N, CUBLAS_OP_N, HD, S, S, &one, qkv + 2 * D, 3 * D, HD,
                    sc, S, (long long)S * S, &zero, a + ba.ctx + (size_t)b * S * D, D, HD,
                    H));
            }
            linear_forward(a + ba.res_mid, a + ba.ctx, params + bp.wo, N, D, D);
            add_bias<<<blocks_for((size_t)N * D, 256), 256>>>(a + ba.res_mid, params + bp.bo,
                                                              N, D);
            KERNEL_CHECK();
            residual_forward<<<blocks_for((size_t)N * D, 256), 256>>>(a + ba.res_mid,
                                                                      a + ba.res_mid, x,
                                                                      N * D);
            KERNEL_CHECK();
            layernorm_forward<<<blocks_for(N, 128), 128>>>(a + ba.ln2, a + ba.ln2_mean,
                                                           a + ba.ln2_rstd, a + ba.res_mid,
                                                           params + bp.ln2_g,
                                                           params + bp.ln2_b, N, D);
            KERNEL_CHECK();
            linear_forward(a + ba.fc_pre, a + ba.ln2, params + bp.w1, N, D, 4 * D);
            add_bias<<<blocks_for((size_t)N * 4 * D, 256), 256>>>(a + ba.fc_pre,
                                                                   params + bp.b1, N, 4 * D);
            KERNEL_CHECK();
            gelu_forward<<<blocks_for((size_t)N * 4 * D, 256), 256>>>(a + ba.fc_act,
                                                                      a + ba.fc_pre,
                                                                      N * 4 * D);
            KERNEL_CHECK();
            linear_forward(a + ba.res_out, a + ba.fc_act, params + bp.w2, N, 4 * D, D);
            add_bias<<<blocks_for((size_t)N * D, 256), 256>>>(a + ba.res_out, params + bp.b2,
                                                              N, D);
            KERNEL_CHECK();
            residual_forward<<<blocks_for((size_t)N * D, 256), 256>>>(a + ba.res_out,
                                                                      a + ba.res_out,
                                                                      a + ba.res_mid, N * D);
            KERNEL_CHECK();
            x = a + ba.res_out;
        }
        // head: final LayerNorm and tied LM head; kept for backward
        float *head = nullptr;
        const size_t head_lnf = 0, head_mean = (size_t)N * D, head_rstd = head_mean + N,
                     head_logits = head_rstd + N;
        dev_alloc(&head, (head_logits + (size_t)N * V) * sizeof(float), P_ACTIVATIONS);
        layernorm_forward<<<blocks_for(N, 128), 128>>>(head + head_lnf, head + head_mean,
                                                       head + head_rstd, x, params + off_lnf(),
                                                       params + off_lnf() + D, N, D);
        KERNEL_CHECK();
        {
            const float one = 1.f, zero = 0.f;
            CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, V, N, D, &one, wte, D,
                                     head + head_lnf, D, &zero, head + head_logits, V));
        }
        float *losses = nullptr;
        dev_alloc(&losses, (size_t)N * sizeof(float), P_TEMPORARY);
        crossentropy_forward<<<blocks_for(N, 128), 128>>>(losses, head + head_logits, targets,
                                                          N, V);
        KERNEL_CHECK();
        ++g_forward_passes;

        // ---------------- backward
        g_phase = PH_BACKWARD;
        CUDA_CHECK(cudaMemsetAsync(grads, 0, P * sizeof(float)));
        float *dres = nullptr, *dln = nullptr, *dqkv = nullptr, *dfc = nullptr,
              *datt = nullptr;
        dev_alloc(&dres, (size_t)N * D * sizeof(float), P_TEMPORARY);
        dev_alloc(&dln, (size_t)N * D * sizeof(float), P_TEMPORARY);
        dev_alloc(&dqkv, (size_t)N * 3 * D * sizeof(float), P_TEMPORARY);
        dev_alloc(&dfc, (size_t)N * 4 * D * sizeof(float), P_TEMPORARY);
        dev_alloc(&datt, att_per_layer * sizeof(float), P_TEMPORARY);

        crossentropy_backward<<<blocks_for(N, 128), 128>>>(head + head_logits, targets, N, V);
        KERNEL_CHECK();
        {
            const float one = 1.f, zero = 0.f;
            // dlnf = dlogits E ; dE += dlogits^T lnf
            CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, D, N, V, &one, wte, D,
                                     head + head_logits, V, &zero, dln, D));
            CUBLAS_CHECK(cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_T, D, V, N, &one,
                                     head + head_lnf, D, head + head_logits, V, &one, dwte,
                                     D));
        }
        CUDA_CHECK(cudaMemsetAsync(dres, 0, (size_t)N * D * sizeof(float)));
        layernorm_backward<<<blocks_for(N, 128), 128>>>(dres, grads + off_lnf(),
                                                        grads + off_lnf() + D, dln, x,
                                                        params + off_lnf(), head + head_mean,
                                                        head + head_rstd, N, D);
        KERNEL_CHECK();
        dev_free(head);

        for (int l = L - 1; l >= 0; --l) {
            float *a = sb.layer[l];
            const float *xin = (l == 0) ? sb.encoded : sb.layer[l - 1] + ba.res_out;
            const BlockParams bp = block_params(off_block(l));
            const float *att = sb.att + (size_t)l * att_per_layer;
            // MLP
            bias_backward<<<blocks_for(D, 128), 128>>>(grads + bp.b2, dres, N, D);
            KERNEL_CHECK();
            linear_backward(dfc, grads + bp.w2, dres, a + ba.fc_act, params + bp.w2, N, 4 * D,
                            D, false);
            gelu_backward<<<blocks_for((size_t)N * 4 * D, 256), 256>>>(dfc, a + ba.fc_pre,
                                                                       N * 4 * D);
            KERNEL_CHECK();
            bias_backward<<<blocks_for(4 * D, 128), 128>>>(grads + bp.b1, dfc, N, 4 * D);
            KERNEL_CHECK();
            linear_backward(dln, grads + bp.w1, dfc, a + ba.ln2, params + bp.w1, N, D, 4 * D,
                            false);
            layernorm_backward<<<blocks_for(N, 128), 128>>>(dres, grads + bp.ln2_g,
                                                            grads + bp.ln2_b, dln,
                                                            a + ba.res_mid, params + bp.ln2_g,
                                                            a + ba.ln2_mean, a + ba.ln2_rstd,
                                                            N, D);
            KERNEL_CHECK();
            // attention output projection: dctx -> dln
            bias_backward<<<blocks_for(D, 128), 128>>>(grads + bp.bo, dres, N, D);
            KERNEL_CHECK();
            linear_backward(dln, grads + bp.wo, dres, a + ba.ctx, params + bp.wo, N, D, D,
                            false);
            // attention core
            for (int b = 0; b < B; ++b) {
                const float *qkv = a + ba.qkv + (size_t)b * S * 3 * D;
                float *dq = dqkv + (size_t)b * S * 3 * D;
                const float *dctx = dln + (size_t)b * S * D;
                const float *p = att + (size_t)b * H * S * S;
                float *dp = datt + (size_t)b * H * S * S;
                const float one = 1.f, zero = 0.f;
                // dP = dctx V^T
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_T, CUBLAS_OP_N, S, S, HD, &one, qkv + 2 * D, 3 * D, HD,
                    dctx, D, HD, &zero, dp, S, (long long)S * S, H));
                // dV = P^T dctx
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_N, CUBLAS_OP_T, HD, S, S, &one, dctx, D, HD, p, S,
                    (long long)S * S, &zero, dq + 2 * D, 3 * D, HD, H));
                causal_softmax_backward<<<blocks_for((size_t)H * S, 128), 128>>>(
                    dp, p, H * S, S, att_scale);
                KERNEL_CHECK();
                // dQ = dS K
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_N, CUBLAS_OP_N, HD, S, S, &one, qkv + D, 3 * D, HD, dp,
                    S, (long long)S * S, &zero, dq, 3 * D, HD, H));
                // dK = dS^T Q
                CUBLAS_CHECK(cublasSgemmStridedBatched(
                    g_blas, CUBLAS_OP_N, CUBLAS_OP_T, HD, S, S, &one, qkv, 3 * D, HD, dp, S,
                    (long long)S * S, &zero, dq + D, 3 * D, HD, H));
            }
            bias_backward<<<blocks_for(3 * D, 128), 128>>>(grads + bp.bqkv, dqkv, N, 3 * D);
            KERNEL_CHECK();
            linear_backward(dln, grads + bp.wqkv, dqkv, a + ba.ln1, params + bp.wqkv, N, D,
                            3 * D, false);
            layernorm_backward<<<blocks_for(N, 128), 128>>>(dres, grads + bp.ln1_g,
                                                            grads + bp.ln1_b, dln, xin,
                                                            params + bp.ln1_g,
                                                            a + ba.ln1_mean, a + ba.ln1_rstd,
                                                            N, D);
            KERNEL_CHECK();
        }
        embedding_backward<<<blocks_for((size_t)N * D, 256), 256>>>(dwte, inputs, dres, N, D);
        KERNEL_CHECK();
        dev_free(datt);
        dev_free(dfc);
        dev_free(dqkv);
        dev_free(dln);
        dev_free(dres);

        // ---------------- optimizer
        g_phase = PH_OPTIMIZER;
        sgd_momentum_update<<<blocks_for(P, 256), 256>>>(params, momentum, grads, P, kLR,
                                                         kMomentum);
        KERNEL_CHECK();
        std::vector<float> h_losses(N);
        CUDA_CHECK(cudaMemcpy(h_losses.data(), losses, (size_t)N * sizeof(float),
                              cudaMemcpyDeviceToHost));
        double loss = 0.0;
        for (int i = 0; i < N; ++i) loss += h_losses[i];
        loss /= N;
        dev_free(losses);
        ++g_steps_done;
        size_t free_b = 0, total_b = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        printf("step %d seq_len %d loss %.4f device_free %.1f MiB\n", step, S, loss,
               free_b / 1048576.0);
    }

    // curriculum finished (not reached on the intended device)
    g_phase = PH_SETUP;
    g_step = 0;
    dev_free(sb.tokens);
    dev_free(sb.att);
    dev_free(sb.encoded);
    for (int l = 0; l < L; ++l) dev_free(sb.layer[l]);
    dev_free(momentum);
    dev_free(grads);
    dev_free(params);
    CUBLAS_CHECK(cublasDestroy(g_blas));
    dev_free(workspace);
    print_ledger(false, 0, 0, 0, nullptr);
    return 0;
}

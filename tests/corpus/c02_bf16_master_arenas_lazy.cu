// c02_bf16_master_arenas_lazy: bf16 mixed-precision training of a residual MLP with
// arena-allocated state and lazily created AdamW moments.
//
// The model is 4 residual blocks (h <- h + W2 gelu(W1 h + b1) + b2, width 768) followed by
// a 512-way linear classifier, trained with softmax cross-entropy on batches of
// 128 sequences x 64 positions flattened to 8192 rows. All fp32 master parameters live in
// ONE cudaMalloc (the master arena); a bf16 working copy of every parameter lives in a
// second arena and is refreshed from the master by a cast kernel once before the first
// step and after every optimizer update. bf16 parameter gradients live in one arena that
// is cleared with cudaMemset at the start of each step (weight gradients accumulate into
// it with beta = 1). The AdamW first and second moments (fp32, one arena each) are
// allocated lazily, inside step 1's optimizer phase just before the first update. The
// forward activations (input batch, labels, every block's pre-activation, GELU output and
// output, the logits) live in one arena allocated once before the first step; gradients
// with respect to activations and the loss live in a backward scratch arena, also
// allocated once. Matmuls are cublasGemmEx with bf16 inputs/outputs and fp32 compute. The
// AdamW update reads the bf16 gradients and writes the fp32 master. 4 steps, each wrapped
// in an NVTX range "step N" with nested "forward", "backward" and "optimizer" ranges.
// GEMM results are not needed on the simulated device (kernel bodies do not run there),
// so the harness turns the CPU evaluation of GEMMs off to keep the run short.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>

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
    int step = 0;
};
static Ledger g_ledger;

struct RunInfo {
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
};
static RunInfo g_run;

static void print_ledger(const char *oom_json) {
    const Ledger &L = g_ledger;
    printf("ledger {\"program\":\"c02_bf16_master_arenas_lazy\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"bf16\",\"master_weights\":true,"
           "\"optimizer\":\"adamw\",\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           g_run.steps_done, g_run.forward_passes, g_run.params, L.peak_bytes);
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
                         "\"step\":%d,\"live_bytes\":%zu,\"live_by_purpose\":{",
                         bytes, kPurposeName[purpose], L.phase, L.step, L.live_bytes);
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

static const int kBatch = 128;
static const int kSeq = 64;
static const int kRows = kBatch * kSeq;   // 8192 rows per step
static const int kWidth = 768;            // model width (both linears of a block)
static const int kBlocks = 4;
static const int kClasses = 512;
static const int kSteps = 4;

static const float kLR = 3e-4f;
static const float kBeta1 = 0.9f;
static const float kBeta2 = 0.95f;
static const float kEps = 1e-8f;
static const float kWeightDecay = 0.1f;

// Offsets (in elements) of every parameter tensor inside the arenas. The same offsets
// are used for the fp32 master, the bf16 working copy, the bf16 gradients and the moments.
struct ParamLayout {
    size_t w1[kBlocks], b1[kBlocks], w2[kBlocks], b2[kBlocks];
    size_t wh, bh;
    size_t total;        // padded element count of an arena
    long long count;     // real parameter count
};

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static ParamLayout make_layout() {
    ParamLayout P;
    size_t off = 0;
    long long count = 0;
    auto take = [&](size_t n) {
        size_t o = off;
        off = align_up(off + n, 64);   // 128-byte alignment in bf16, 256 in fp32
        count += (long long)n;
        return o;
    };
    for (int l = 0; l < kBlocks; ++l) {
        P.w1[l] = take((size_t)kWidth * kWidth);
        P.b1[l] = take(kWidth);
        P.w2[l] = take((size_t)kWidth * kWidth);
        P.b2[l] = take(kWidth);
    }
    P.wh = take((size_t)kClasses * kWidth);
    P.bh = take(kClasses);
    P.total = off;
    P.count = count;
    return P;
}

// Activation arena layout (bytes).
struct ActLayout {
    size_t x;                 // bf16 [rows, width] = block 0 input
    size_t labels;            // int32 [rows]
    size_t a1[kBlocks];       // bf16 [rows, width] pre-GELU
    size_t g[kBlocks];        // bf16 [rows, width] post-GELU
    size_t h[kBlocks];        // bf16 [rows, width] block output
    size_t logits;            // bf16 [rows, classes]
    size_t total;
};

static ActLayout make_act_layout() {
    ActLayout A;
    size_t off = 0;
    auto take = [&](size_t bytes) { size_t o = off; off = align_up(off + bytes, 256); return o; };
    const size_t act = (size_t)kRows * kWidth * sizeof(__nv_bfloat16);
    A.x = take(act);
    A.labels = take((size_t)kRows * sizeof(int));
    for (int l = 0; l < kBlocks; ++l) {
        A.a1[l] = take(act);
        A.g[l] = take(act);
        A.h[l] = take(act);
    }
    A.logits = take((size_t)kRows * kClasses * sizeof(__nv_bfloat16));
    A.total = off;
    return A;
}

// Backward scratch arena layout (bytes).
struct ScratchLayout {
    size_t dh;        // bf16 [rows, width] gradient w.r.t. a block output
    size_t dg;        // bf16 [rows, width] gradient w.r.t. the hidden pre-activation
    size_t dlogits;   // bf16 [rows, classes]
    size_t row_loss;  // fp32 [rows]
    size_t loss;      // fp32 [1]
    size_t total;
};

static ScratchLayout make_scratch_layout() {
    ScratchLayout S;
    size_t off = 0;
    auto take = [&](size_t bytes) { size_t o = off; off = align_up(off + bytes, 256); return o; };
    S.dh = take((size_t)kRows * kWidth * sizeof(__nv_bfloat16));
    S.dg = take((size_t)kRows * kWidth * sizeof(__nv_bfloat16));
    S.dlogits = take((size_t)kRows * kClasses * sizeof(__nv_bfloat16));
    S.row_loss = take((size_t)kRows * sizeof(float));
    S.loss = take(sizeof(float));
    S.total = off;
    return S;
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f;   // sqrt(2/pi)
    float u = k0 * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float k0 = 0.7978845608028654f;
    float x2 = x * x;
    float u = k0 * (x + 0.044715f * x2 * x);
    float t = tanhf(u);
    float du = k0 * (1.0f + 3.0f * 0.044715f * x2);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// master fp32 -> bf16 working copy
__global__ void cast_f32_to_bf16(const float *__restrict__ src, __nv_bfloat16 *__restrict__ dst,
                                 size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) dst[i] = __float2bfloat16(src[i]);
}

// a1 += b1 (in place, kept for backward); g = gelu(a1)
__global__ void bias_gelu_forward(__nv_bfloat16 *__restrict__ a1, __nv_bfloat16 *__restrict__ g,
                                  const __nv_bfloat16 *__restrict__ bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = __bfloat162float(a1[i]) + __bfloat162float(bias[i % cols]);
        a1[i] = __float2bfloat16(v);
        g[i] = __float2bfloat16(gelu_tanh(v));
    }
}

// out += bias + residual
__global__ void bias_residual_forward(__nv_bfloat16 *__restrict__ out,
                                      const __nv_bfloat16 *__restrict__ residual,
                                      const __nv_bfloat16 *__restrict__ bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = __bfloat162float(out[i]) + __bfloat162float(bias[i % cols]) +
                  __bfloat162float(residual[i]);
        out[i] = __float2bfloat16(v);
    }
}

// x += bias (broadcast over rows)
__global__ void bias_add(__nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ bias,
                         int rows, int cols) {
    size_t n = (size_t)rows * cols;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride)
        x[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(bias[i % cols]));
}

// Block-wide reductions (blockDim.x a multiple of 32, at most 1024).
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

// One block per row: row_loss[r] = logsumexp(logits[r]) - logits[r][label]
__global__ void softmax_xent_forward(const __nv_bfloat16 *__restrict__ logits,
                                     const int *__restrict__ labels, float *__restrict__ row_loss,
                                     int cols) {
    __shared__ float shared[32];
    int r = blockIdx.x;
    const __nv_bfloat16 *z = logits + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, __bfloat162float(z[c]));
    m = block_reduce_max(m, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(__bfloat162float(z[c]) - m);
    s = block_reduce_sum(s, shared);
    if (threadIdx.x == 0) row_loss[r] = m + logf(s) - __bfloat162float(z[labels[r]]);
}

// loss = mean(row_loss), a single block
__global__ void mean_reduce(const float *__restrict__ x, float *__restrict__ out, int n) {
    __shared__ float shared[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    s = block_reduce_sum(s, shared);
    if (threadIdx.x == 0) *out = s / (float)n;
}

// One block per row: dlogits = (softmax(logits) - onehot(label)) / rows
__global__ void softmax_xent_backward(const __nv_bfloat16 *__restrict__ logits,
                                      const int *__restrict__ labels,
                                      __nv_bfloat16 *__restrict__ dlogits, int rows, int cols) {
    __shared__ float shared[32];
    int r = blockIdx.x;
    const __nv_bfloat16 *z = logits + (size_t)r * cols;
    __nv_bfloat16 *dz = dlogits + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, __bfloat162float(z[c]));
    m = block_reduce_max(m, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(__bfloat162float(z[c]) - m);
    s = block_reduce_sum(s, shared);
    float inv = 1.0f / s, scale = 1.0f / (float)rows;
    int y = labels[r];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float p = __expf(__bfloat162float(z[c]) - m) * inv;
        dz[c] = __float2bfloat16((p - (c == y ? 1.0f : 0.0f)) * scale);
    }
}

// dbias[c] += sum_r dy[r][c]   (one thread per column; coalesced across columns)
__global__ void bias_grad_accumulate(const __nv_bfloat16 *__restrict__ dy,
                                     __nv_bfloat16 *__restrict__ dbias, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += __bfloat162float(dy[(size_t)r * cols + c]);
    dbias[c] = __float2bfloat16(__bfloat162float(dbias[c]) + s);
}

// dg *= gelu'(a1)
__global__ void gelu_backward_inplace(__nv_bfloat16 *__restrict__ dg,
                                      const __nv_bfloat16 *__restrict__ a1, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride)
        dg[i] = __float2bfloat16(__bfloat162float(dg[i]) * gelu_tanh_grad(__bfloat162float(a1[i])));
}

// AdamW over the whole arena: reads bf16 gradients, updates fp32 moments and fp32 master.
__global__ void adamw_update(float *__restrict__ master, const __nv_bfloat16 *__restrict__ grad,
                             float *__restrict__ m, float *__restrict__ v, size_t n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float g = __bfloat162float(grad[i]);
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        float w = master[i];
        w -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w);
        master[i] = w;
    }
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
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }   // [0, 1)
};

static uint16_t f32_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);   // round to nearest even
    return (uint16_t)(u >> 16);
}

static int grid_for(size_t n, int threads) {
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16;   // grid-stride loops cover the rest
    return (int)blocks;
}

// Row-major Y[rows, out] = X[rows, in] * W[out, in]^T  (+ beta * Y)
static void linear_forward(cublasHandle_t h, const __nv_bfloat16 *W, const __nv_bfloat16 *X,
                           __nv_bfloat16 *Y, int rows, int in, int out) {
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &alpha,
                              W, CUDA_R_16BF, in, X, CUDA_R_16BF, in, &beta,
                              Y, CUDA_R_16BF, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Row-major dX[rows, in] = dY[rows, out] * W[out, in]  (+ beta * dX)
static void linear_backward_input(cublasHandle_t h, const __nv_bfloat16 *W,
                                  const __nv_bfloat16 *dY, __nv_bfloat16 *dX, int rows, int in,
                                  int out, float beta) {
    const float alpha = 1.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &alpha,
                              W, CUDA_R_16BF, in, dY, CUDA_R_16BF, out, &beta,
                              dX, CUDA_R_16BF, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Row-major dW[out, in] += dY[rows, out]^T * X[rows, in]
static void linear_backward_weight(cublasHandle_t h, const __nv_bfloat16 *X,
                                   const __nv_bfloat16 *dY, __nv_bfloat16 *dW, int rows, int in,
                                   int out) {
    const float alpha = 1.0f, beta = 1.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &alpha,
                              X, CUDA_R_16BF, in, dY, CUDA_R_16BF, out, &beta,
                              dW, CUDA_R_16BF, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ---------------------------------------------------------------------------------------
// Training
// ---------------------------------------------------------------------------------------

int main() {
    const ParamLayout P = make_layout();
    const ActLayout A = make_act_layout();
    const ScratchLayout S = make_scratch_layout();
    g_run.params = P.count;

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    g_ledger.phase = "setup";
    g_ledger.step = 0;

    // fp32 master arena, initialised on the host.
    float *master = (float *)dev_alloc(P.total * sizeof(float), P_WEIGHTS);
    {
        std::vector<float> h(P.total, 0.0f);
        Rng rng(1234);
        const float bw = 1.0f / sqrtf((float)kWidth);
        auto fill = [&](size_t off, size_t n, float bound) {
            for (size_t i = 0; i < n; ++i) h[off + i] = (2.0f * rng.uniform() - 1.0f) * bound;
        };
        for (int l = 0; l < kBlocks; ++l) {
            fill(P.w1[l], (size_t)kWidth * kWidth, bw);
            fill(P.w2[l], (size_t)kWidth * kWidth, bw);   // biases stay zero
        }
        fill(P.wh, (size_t)kClasses * kWidth, bw);
        CUDA_CHECK(cudaMemcpy(master, h.data(), P.total * sizeof(float), cudaMemcpyHostToDevice));
    }

    // bf16 working copy arena and bf16 gradient arena.
    __nv_bfloat16 *work = (__nv_bfloat16 *)dev_alloc(P.total * sizeof(__nv_bfloat16), P_WEIGHTS);
    __nv_bfloat16 *grad = (__nv_bfloat16 *)dev_alloc(P.total * sizeof(__nv_bfloat16), P_GRADIENTS);

    // Activation arena (kept for backward) and backward scratch arena, reused every step.
    char *acts = (char *)dev_alloc(A.total, P_ACTIVATIONS);
    char *scratch = (char *)dev_alloc(S.total, P_TEMPORARY);

    __nv_bfloat16 *x = (__nv_bfloat16 *)(acts + A.x);
    int *labels = (int *)(acts + A.labels);
    __nv_bfloat16 *a1[kBlocks], *g[kBlocks], *hout[kBlocks];
    for (int l = 0; l < kBlocks; ++l) {
        a1[l] = (__nv_bfloat16 *)(acts + A.a1[l]);
        g[l] = (__nv_bfloat16 *)(acts + A.g[l]);
        hout[l] = (__nv_bfloat16 *)(acts + A.h[l]);
    }
    __nv_bfloat16 *logits = (__nv_bfloat16 *)(acts + A.logits);
    __nv_bfloat16 *dh = (__nv_bfloat16 *)(scratch + S.dh);
    __nv_bfloat16 *dg = (__nv_bfloat16 *)(scratch + S.dg);
    __nv_bfloat16 *dlogits = (__nv_bfloat16 *)(scratch + S.dlogits);
    float *row_loss = (float *)(scratch + S.row_loss);
    float *loss = (float *)(scratch + S.loss);

    // AdamW moments: created on the first update.
    float *adam_m = nullptr, *adam_v = nullptr;

    // Working copy from the master before the first step.
    cast_f32_to_bf16<<<grid_for(P.total, 256), 256>>>(master, work, P.total);
    KERNEL_CHECK();

    std::vector<uint16_t> h_x((size_t)kRows * kWidth);
    std::vector<int> h_labels(kRows);
    const size_t act_elems = (size_t)kRows * kWidth;

    for (int step = 1; step <= kSteps; ++step) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        nvtxRangePushA(name);
        g_ledger.step = step;
        g_ledger.phase = "step_start";

        CUDA_CHECK(cudaMemset(grad, 0, P.total * sizeof(__nv_bfloat16)));

        // Next batch: features and class labels.
        {
            Rng rng(1000 + step);
            for (size_t i = 0; i < h_x.size(); ++i)
                h_x[i] = f32_to_bf16_bits(2.0f * rng.uniform() - 1.0f);
            for (int r = 0; r < kRows; ++r) h_labels[r] = (int)(rng.next() % kClasses);
            CUDA_CHECK(cudaMemcpy(x, h_x.data(), h_x.size() * sizeof(uint16_t),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(labels, h_labels.data(), kRows * sizeof(int),
                                  cudaMemcpyHostToDevice));
        }

        // ---------------- forward ----------------
        nvtxRangePushA("forward");
        g_ledger.phase = "forward";
        const __nv_bfloat16 *hin = x;
        for (int l = 0; l < kBlocks; ++l) {
            linear_forward(blas, work + P.w1[l], hin, a1[l], kRows, kWidth, kWidth);
            bias_gelu_forward<<<grid_for(act_elems, 256), 256>>>(a1[l], g[l], work + P.b1[l],
                                                                  kRows, kWidth);
            KERNEL_CHECK();
            linear_forward(blas, work + P.w2[l], g[l], hout[l], kRows, kWidth, kWidth);
            bias_residual_forward<<<grid_for(act_elems, 256), 256>>>(hout[l], hin, work + P.b2[l],
                                                                      kRows, kWidth);
            KERNEL_CHECK();
            hin = hout[l];
        }
        linear_forward(blas, work + P.wh, hin, logits, kRows, kWidth, kClasses);
        bias_add<<<grid_for((size_t)kRows * kClasses, 256), 256>>>(logits, work + P.bh, kRows,
                                                                    kClasses);
        KERNEL_CHECK();
        softmax_xent_forward<<<kRows, 256>>>(logits, labels, row_loss, kClasses);
        KERNEL_CHECK();
        mean_reduce<<<1, 1024>>>(row_loss, loss, kRows);
        KERNEL_CHECK();
        g_run.forward_passes++;
        nvtxRangePop();

        // ---------------- backward ----------------
        nvtxRangePushA("backward");
        g_ledger.phase = "backward";
        softmax_xent_backward<<<kRows, 256>>>(logits, labels, dlogits, kRows, kClasses);
        KERNEL_CHECK();
        linear_backward_weight(blas, hout[kBlocks - 1], dlogits, grad + P.wh, kRows, kWidth,
                               kClasses);
        bias_grad_accumulate<<<(kClasses + 255) / 256, 256>>>(dlogits, grad + P.bh, kRows,
                                                               kClasses);
        KERNEL_CHECK();
        linear_backward_input(blas, work + P.wh, dlogits, dh, kRows, kWidth, kClasses, 0.0f);
        for (int l = kBlocks - 1; l >= 0; --l) {
            const __nv_bfloat16 *blk_in = (l == 0) ? x : hout[l - 1];
            // second linear: out = W2 g + b2 (+ residual)
            linear_backward_weight(blas, g[l], dh, grad + P.w2[l], kRows, kWidth, kWidth);
            bias_grad_accumulate<<<(kWidth + 255) / 256, 256>>>(dh, grad + P.b2[l], kRows, kWidth);
            KERNEL_CHECK();
            linear_backward_input(blas, work + P.w2[l], dh, dg, kRows, kWidth, kWidth, 0.0f);
            gelu_backward_inplace<<<grid_for(act_elems, 256), 256>>>(dg, a1[l], act_elems);
            KERNEL_CHECK();
            // first linear: a1 = W1 h_in + b1
            linear_backward_weight(blas, blk_in, dg, grad + P.w1[l], kRows, kWidth, kWidth);
            bias_grad_accumulate<<<(kWidth + 255) / 256, 256>>>(dg, grad + P.b1[l], kRows, kWidth);
            KERNEL_CHECK();
            if (l > 0)   // dh_in = W1^T dg + dh (residual path), in place
                linear_backward_input(blas, work + P.w1[l], dg, dh, kRows, kWidth, kWidth, 1.0f);
        }
        nvtxRangePop();

        // ---------------- optimizer ----------------
        nvtxRangePushA("optimizer");
        g_ledger.phase = "optimizer";
        if (!adam_m) {
            adam_m = (float *)dev_alloc(P.total * sizeof(float), P_OPTIMIZER);
            adam_v = (float *)dev_alloc(P.total * sizeof(float), P_OPTIMIZER);
            CUDA_CHECK(cudaMemset(adam_m, 0, P.total * sizeof(float)));
            CUDA_CHECK(cudaMemset(adam_v, 0, P.total * sizeof(float)));
        }
        const float bc1 = 1.0f - powf(kBeta1, (float)step);
        const float bc2 = 1.0f - powf(kBeta2, (float)step);
        adamw_update<<<grid_for(P.total, 256), 256>>>(master, grad, adam_m, adam_v, P.total, kLR,
                                                      kBeta1, kBeta2, kEps, kWeightDecay, bc1, bc2);
        KERNEL_CHECK();
        cast_f32_to_bf16<<<grid_for(P.total, 256), 256>>>(master, work, P.total);
        KERNEL_CHECK();
        nvtxRangePop();

        float h_loss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&h_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
        g_run.steps_done = step;
        printf("step %d loss %.6f\n", step, h_loss);
        nvtxRangePop();   // step N
    }

    CUDA_CHECK(cudaDeviceSynchronize());
    g_ledger.phase = "setup";
    dev_free(adam_v);
    dev_free(adam_m);
    dev_free(scratch);
    dev_free(acts);
    dev_free(grad);
    dev_free(work);
    dev_free(master);
    CUBLAS_CHECK(cublasDestroy(blas));

    print_ledger(nullptr);
    return 0;
}

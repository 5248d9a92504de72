// h15_adamw8bit_bf16_lt: pure-bf16 residual-MLP classifier trained with blockwise 8-bit AdamW.
//
// The model is a stack of 4 pre-norm residual MLP blocks (RMSNorm -> Linear(1024,4096)+bias ->
// GELU -> Linear(4096,1024)+bias, added to the residual stream), a final RMSNorm and a linear
// classifier head over 1024 classes, trained with softmax cross-entropy on 1024-row batches.
// Training is bf16 WITHOUT an fp32 master copy: every parameter tensor lives only in bf16, one
// cudaMalloc per tensor, and the optimizer writes the update straight into it. The optimizer is
// an 8-bit AdamW: for each parameter tensor, the first moment m and the second moment v are
// stored as uint8 codes (m signed, v in sqrt-domain unsigned) with one fp32 absmax scale per
// block of 256 elements; the two state buffers and the two scale buffers are allocated eagerly
// at set-up, one cudaMalloc each per tensor, and zero-initialised. All matmuls go through
// cuBLASLt (bf16 in/out, fp32 compute, BIAS epilogue in forward) with a 32 MiB workspace the
// program allocates itself and passes to every cublasLtMatmul. Each step uploads its batch and
// labels, allocates activations in forward and frees each one in backward once it is no longer
// needed; gradients with respect to activations are short-lived temporaries. bf16 parameter
// gradients are cudaMalloc'ed in backward as they are produced and are all freed after the
// optimizer update (set-to-None). Kernel names are descriptive. 4 optimizer steps, one
// micro-batch each. The program keeps a ledger of its own allocations and prints it last.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

// ---------------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------------

#define CUDA_CHECK(expr)                                                                        \
    do {                                                                                        \
        cudaError_t err_ = (expr);                                                              \
        if (err_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                \
                    cudaGetErrorString(err_));                                                  \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

#define LT_CHECK(expr)                                                                          \
    do {                                                                                        \
        cublasStatus_t st_ = (expr);                                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                \
                    cublasLtGetStatusString(st_));                                              \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------------
// Allocation ledger
// ---------------------------------------------------------------------------------------------

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY, P_FUNCTIONALITY,
               P_MIXED, P_COUNT };
static const char* kPurposeNames[P_COUNT] = {"weights", "optimizer", "gradients", "activations",
                                             "temporary", "functionality", "mixed"};

struct Ledger {
    struct Entry { size_t bytes; Purpose purpose; };
    std::unordered_map<void*, Entry> live;
    unsigned long long live_by[P_COUNT] = {};
    unsigned long long live_total = 0;
    unsigned long long peak = 0;
    unsigned long long peak_by[P_COUNT] = {};

    void on_alloc(void* p, size_t bytes, Purpose purpose) {
        live[p] = Entry{bytes, purpose};
        live_by[purpose] += bytes;
        live_total += bytes;
        if (live_total > peak) {
            peak = live_total;
            memcpy(peak_by, live_by, sizeof(peak_by));
        }
    }
    void on_free(void* p) {
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
static T* dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    g_ledger.on_alloc(p, bytes, purpose);
    return static_cast<T*>(p);
}

template <typename T>
static void dev_free(T*& p) {
    if (!p) return;
    g_ledger.on_free((void*)p);
    CUDA_CHECK(cudaFree((void*)p));
    p = nullptr;
}

// ---------------------------------------------------------------------------------------------
// Model configuration
// ---------------------------------------------------------------------------------------------

static const int kBatchRows = 1024;   // rows (samples) per batch
static const int kModel     = 1024;   // residual width
static const int kHidden    = 4096;   // MLP hidden width
static const int kClasses   = 1024;   // classifier outputs
static const int kBlocks    = 4;      // residual MLP blocks
static const int kSteps     = 4;
static const int kQuantBlock = 256;   // elements per 8-bit optimizer scale
static const size_t kLtWorkspaceBytes = 32ull << 20;

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_reduce_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide reductions for blockDim.x == 256; `scratch` holds 8 floats.
__device__ float block_reduce_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = (threadIdx.x < (blockDim.x >> 5)) ? scratch[threadIdx.x] : 0.f;
    if (warp == 0) r = warp_reduce_sum(r);
    if (threadIdx.x == 0) scratch[0] = r;
    __syncthreads();
    r = scratch[0];
    __syncthreads();
    return r;
}
__device__ float block_reduce_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = (threadIdx.x < (blockDim.x >> 5)) ? scratch[threadIdx.x] : -INFINITY;
    if (warp == 0) r = warp_reduce_max(r);
    if (threadIdx.x == 0) scratch[0] = r;
    __syncthreads();
    r = scratch[0];
    __syncthreads();
    return r;
}

__device__ __forceinline__ uint32_t hash_u32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}

// Gaussian init (Box-Muller over a counter hash), written straight as bf16.
__global__ void init_normal_bf16_kernel(bf16* w, size_t n, uint32_t seed, float stddev) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t a = hash_u32((uint32_t)i * 2u + seed * 0x9e3779b9u);
        uint32_t b = hash_u32((uint32_t)i * 2u + 1u + seed * 0x9e3779b9u);
        float u1 = ((a >> 8) + 1) * (1.0f / 16777217.0f);
        float u2 = (b >> 8) * (1.0f / 16777216.0f);
        float z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
        w[i] = __float2bfloat16(z * stddev);
    }
}

__global__ void fill_bf16_kernel(bf16* p, size_t n, float value) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(value);
}

// One block per row: out = x * rsqrt(mean(x^2) + eps) * gamma; keeps rstd for backward.
__global__ void rmsnorm_forward_bf16_kernel(const bf16* x, const bf16* gamma, bf16* out,
                                            float* rstd, int cols, float eps) {
    __shared__ float scratch[8];
    const bf16* xr = x + (size_t)blockIdx.x * cols;
    bf16* yr = out + (size_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = __bfloat162float(xr[c]);
        ss += v * v;
    }
    ss = block_reduce_sum(ss, scratch);
    float r = rsqrtf(ss / cols + eps);
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = __float2bfloat16(__bfloat162float(xr[c]) * r * __bfloat162float(gamma[c]));
}

// dx = dres + rstd*g*dn - x * rstd^3 * mean(g*dn*x)   (dres may be null)
__global__ void rmsnorm_backward_input_bf16_kernel(const bf16* dn, const bf16* x,
                                                   const bf16* gamma, const float* rstd,
                                                   const bf16* dres, bf16* dx, int cols) {
    __shared__ float scratch[8];
    size_t off = (size_t)blockIdx.x * cols;
    float r = rstd[blockIdx.x];
    float dot = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        dot += __bfloat162float(gamma[c]) * __bfloat162float(dn[off + c]) *
               __bfloat162float(x[off + c]);
    dot = block_reduce_sum(dot, scratch) / cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float g = __bfloat162float(gamma[c]) * __bfloat162float(dn[off + c]);
        float v = r * g - __bfloat162float(x[off + c]) * r * r * r * dot;
        if (dres) v += __bfloat162float(dres[off + c]);
        dx[off + c] = __float2bfloat16(v);
    }
}

// One thread per column: dgamma[c] = sum_r dn[r,c] * x[r,c] * rstd[r]
__global__ void rmsnorm_gamma_grad_bf16_kernel(const bf16* dn, const bf16* x, const float* rstd,
                                               bf16* dgamma, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.f;
    for (int r = 0; r < rows; ++r) {
        size_t i = (size_t)r * cols + c;
        acc += __bfloat162float(dn[i]) * __bfloat162float(x[i]) * rstd[r];
    }
    dgamma[c] = __float2bfloat16(acc);
}

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * k * (1.f + 3.f * 0.044715f * x * x);
}

__global__ void gelu_forward_bf16_kernel(const bf16* pre, bf16* out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2bfloat16(gelu_tanh(__bfloat162float(pre[i])));
}

__global__ void gelu_backward_bf16_kernel(const bf16* dout, const bf16* pre, bf16* dpre,
                                          size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dpre[i] = __float2bfloat16(__bfloat162float(dout[i]) *
                                   gelu_tanh_grad(__bfloat162float(pre[i])));
}

// One thread per column: db[c] = sum_r dy[r,c]
__global__ void bias_grad_column_sum_bf16_kernel(const bf16* dy, bf16* db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.f;
    for (int r = 0; r < rows; ++r) acc += __bfloat162float(dy[(size_t)r * cols + c]);
    db[c] = __float2bfloat16(acc);
}

// One block per row; accumulates the mean loss into *loss.
__global__ void softmax_cross_entropy_forward_bf16_kernel(const bf16* logits, const int* labels,
                                                          float* loss, int rows, int classes) {
    __shared__ float scratch[8];
    const bf16* lr = logits + (size_t)blockIdx.x * classes;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x)
        mx = fmaxf(mx, __bfloat162float(lr[c]));
    mx = block_reduce_max(mx, scratch);
    float s = 0.f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) s += expf(__bfloat162float(lr[c]) - mx);
    s = block_reduce_sum(s, scratch);
    if (threadIdx.x == 0) {
        float l = logf(s) + mx - __bfloat162float(lr[labels[blockIdx.x]]);
        atomicAdd(loss, l / rows);
    }
}

// dlogits = (softmax(logits) - onehot(label)) / rows
__global__ void softmax_cross_entropy_backward_bf16_kernel(const bf16* logits, const int* labels,
                                                           bf16* dlogits, int rows, int classes) {
    __shared__ float scratch[8];
    size_t off = (size_t)blockIdx.x * classes;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x)
        mx = fmaxf(mx, __bfloat162float(logits[off + c]));
    mx = block_reduce_max(mx, scratch);
    float s = 0.f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x)
        s += expf(__bfloat162float(logits[off + c]) - mx);
    s = block_reduce_sum(s, scratch);
    int label = labels[blockIdx.x];
    for (int c = threadIdx.x; c < classes; c += blockDim.x) {
        float p = expf(__bfloat162float(logits[off + c]) - mx) / s;
        dlogits[off + c] = __float2bfloat16((p - (c == label ? 1.f : 0.f)) / rows);
    }
}

// Blockwise 8-bit AdamW on bf16 weights, no master copy. One CUDA block per quantisation block
// of 256 elements. m is stored as signed int8 codes scaled by the block's absmax; v is stored
// as unsigned codes of sqrt(v) scaled by the block's max sqrt(v).
__global__ void adamw8bit_blockwise_update_bf16_kernel(bf16* w, const bf16* g, uint8_t* m_q,
                                                       uint8_t* v_q, float* m_absmax,
                                                       float* v_absmax, size_t n, float lr,
                                                       float beta1, float beta2, float eps,
                                                       float weight_decay, float bias_corr1,
                                                       float bias_corr2) {
    __shared__ float scratch[8];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    bool in_range = i < n;
    float m = 0.f, v = 0.f;
    if (in_range) {
        float gi = __bfloat162float(g[i]);
        float m_old = (float)(int8_t)m_q[i] * (1.f / 127.f) * m_absmax[blockIdx.x];
        float sv_old = (float)v_q[i] * (1.f / 255.f) * v_absmax[blockIdx.x];
        m = beta1 * m_old + (1.f - beta1) * gi;
        v = beta2 * sv_old * sv_old + (1.f - beta2) * gi * gi;
        float wi = __bfloat162float(w[i]);
        float mhat = m / bias_corr1;
        float vhat = v / bias_corr2;
        wi -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * wi);
        w[i] = __float2bfloat16(wi);
    }
    float m_max = block_reduce_max(fabsf(m), scratch);
    float sv_max = block_reduce_max(sqrtf(v), scratch);
    if (in_range) {
        float mq = m_max > 0.f ? rintf(m / m_max * 127.f) : 0.f;
        float vq = sv_max > 0.f ? rintf(sqrtf(v) / sv_max * 255.f) : 0.f;
        m_q[i] = (uint8_t)(int8_t)fmaxf(-127.f, fminf(127.f, mq));
        v_q[i] = (uint8_t)fminf(255.f, vq);
    }
    if (threadIdx.x == 0) {
        m_absmax[blockIdx.x] = m_max;
        v_absmax[blockIdx.x] = sv_max;
    }
}

static unsigned grid_for(size_t n, unsigned threads = 256, unsigned cap = 4096) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > cap ? cap : (b == 0 ? 1 : b));
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt wrapper (column-major view of row-major tensors)
// ---------------------------------------------------------------------------------------------

static cublasLtHandle_t g_lt = nullptr;
static void* g_lt_workspace = nullptr;

// D[m x n] = op(A) op(B) + beta * C (+ bias[m] per row), all bf16, fp32 accumulate.
static void lt_matmul(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                      const bf16* A, int lda, const bf16* B, int ldb, float beta, const bf16* C,
                      bf16* D, int ldd, const bf16* bias) {
    cublasLtMatmulDesc_t desc;
    LT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                sizeof(epi)));
        LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof(bias)));
    }
    cublasLtMatrixLayout_t la, lb, lc, ld;
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, ta == CUBLAS_OP_N ? m : k,
                                        ta == CUBLAS_OP_N ? k : m, lda));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, tb == CUBLAS_OP_N ? k : n,
                                        tb == CUBLAS_OP_N ? n : k, ldb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, ldd));
    LT_CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, ldd));

    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kLtWorkspaceBytes;
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, desc, la, lb, lc, ld, pref, 1, &heur, &found));
    if (found < 1) {
        fprintf(stderr, "cublasLt: no algorithm for %dx%dx%d\n", m, n, k);
        exit(1);
    }
    float alpha = 1.f;
    LT_CHECK(cublasLtMatmul(g_lt, desc, &alpha, A, la, B, lb, &beta, C ? C : D, lc, D, ld,
                            &heur.algo, g_lt_workspace, kLtWorkspaceBytes, 0));
    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    LT_CHECK(cublasLtMatrixLayoutDestroy(ld));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lc));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lb));
    LT_CHECK(cublasLtMatrixLayoutDestroy(la));
    LT_CHECK(cublasLtMatmulDescDestroy(desc));
}

// Row-major linear layer helpers. W is [out, in], X is [rows, in], Y is [rows, out].
// Y = X W^T + b (+ residual)
static void linear_forward(const bf16* X, const bf16* W, const bf16* b, const bf16* residual,
                           bf16* Y, int rows, int in, int out) {
    lt_matmul(CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, W, in, X, in, residual ? 1.f : 0.f,
              residual, Y, out, b);
}
// dX = dY W
static void linear_backward_input(const bf16* dY, const bf16* W, bf16* dX, int rows, int in,
                                  int out) {
    lt_matmul(CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, W, in, dY, out, 0.f, nullptr, dX, in,
              nullptr);
}
// dW = dY^T X
static void linear_backward_weight(const bf16* dY, const bf16* X, bf16* dW, int rows, int in,
                                   int out) {
    lt_matmul(CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, X, in, dY, out, 0.f, nullptr, dW, in,
              nullptr);
}

// ---------------------------------------------------------------------------------------------
// Parameters and 8-bit optimizer state
// ---------------------------------------------------------------------------------------------

struct Param {
    std::string name;
    size_t numel = 0;
    bool decay = false;
    bf16* w = nullptr;         // bf16 weights (the only copy)
    bf16* grad = nullptr;      // bf16 gradient, exists from backward until after the update
    uint8_t* m_q = nullptr;    // 8-bit first moment
    uint8_t* v_q = nullptr;    // 8-bit second moment
    float* m_absmax = nullptr; // per-256-block scale of m
    float* v_absmax = nullptr; // per-256-block scale of v
    size_t nblocks() const { return (numel + kQuantBlock - 1) / kQuantBlock; }
};

struct Block {
    Param* gamma; Param* w1; Param* b1; Param* w2; Param* b2;
};

struct BlockActs {
    bf16* x = nullptr;     // block input (residual stream)
    bf16* n = nullptr;     // normalised input
    float* rstd = nullptr;
    bf16* pre = nullptr;   // fc1 output before GELU
    bf16* act = nullptr;   // GELU output
};

static std::vector<Param*> g_params;

static Param* make_param(const std::string& name, size_t numel, bool decay, int init,
                         uint32_t seed, float stddev) {
    Param* p = new Param();
    p->name = name;
    p->numel = numel;
    p->decay = decay;
    p->w = dev_alloc<bf16>(numel, P_WEIGHTS);
    if (init == 0) {
        init_normal_bf16_kernel<<<grid_for(numel), 256>>>(p->w, numel, seed, stddev);
    } else {
        fill_bf16_kernel<<<grid_for(numel), 256>>>(p->w, numel, init == 1 ? 1.f : 0.f);
    }
    KERNEL_CHECK();
    g_params.push_back(p);
    return p;
}

static void create_optimizer_state(Param* p) {
    size_t nb = p->nblocks();
    p->m_q = dev_alloc<uint8_t>(p->numel, P_OPTIMIZER);
    p->v_q = dev_alloc<uint8_t>(p->numel, P_OPTIMIZER);
    p->m_absmax = dev_alloc<float>(nb, P_OPTIMIZER);
    p->v_absmax = dev_alloc<float>(nb, P_OPTIMIZER);
    CUDA_CHECK(cudaMemset(p->m_q, 0, p->numel));
    CUDA_CHECK(cudaMemset(p->v_q, 0, p->numel));
    CUDA_CHECK(cudaMemset(p->m_absmax, 0, nb * sizeof(float)));
    CUDA_CHECK(cudaMemset(p->v_absmax, 0, nb * sizeof(float)));
}

static void ensure_grad(Param* p) {
    if (!p->grad) p->grad = dev_alloc<bf16>(p->numel, P_GRADIENTS);
}

// ---------------------------------------------------------------------------------------------
// Host-side data
// ---------------------------------------------------------------------------------------------

static uint16_t float_to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)((u + rounding) >> 16);
}

struct Lcg {
    uint64_t s;
    uint32_t next() { s = s * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(s >> 33); }
    float uniform() { return (next() & 0xffffff) / 16777216.0f; }
};

static void make_batch(int step, std::vector<uint16_t>& x, std::vector<int>& labels) {
    Lcg rng{0x1234567ull + 977ull * (uint64_t)step};
    for (size_t i = 0; i < x.size(); ++i) x[i] = float_to_bf16_bits(rng.uniform() * 2.f - 1.f);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = (int)(rng.next() % kClasses);
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    LT_CHECK(cublasLtCreate(&g_lt));

    // ---- set-up: parameters (bf16 only), eager 8-bit optimizer state, Lt workspace ----
    std::vector<Block> blocks(kBlocks);
    uint32_t seed = 1;
    for (int l = 0; l < kBlocks; ++l) {
        std::string pre = "blocks." + std::to_string(l) + ".";
        blocks[l].gamma = make_param(pre + "norm.weight", kModel, false, 1, 0, 0.f);
        blocks[l].w1 = make_param(pre + "fc1.weight", (size_t)kHidden * kModel, true, 0, seed++,
                                  0.02f);
        blocks[l].b1 = make_param(pre + "fc1.bias", kHidden, false, 2, 0, 0.f);
        blocks[l].w2 = make_param(pre + "fc2.weight", (size_t)kModel * kHidden, true, 0, seed++,
                                  0.02f / 2.8284271f);
        blocks[l].b2 = make_param(pre + "fc2.bias", kModel, false, 2, 0, 0.f);
    }
    Param* final_gamma = make_param("final_norm.weight", kModel, false, 1, 0, 0.f);
    Param* head_w = make_param("head.weight", (size_t)kClasses * kModel, true, 0, seed++, 0.02f);
    Param* head_b = make_param("head.bias", kClasses, false, 2, 0, 0.f);

    unsigned long long total_params = 0;
    for (Param* p : g_params) total_params += p->numel;

    for (Param* p : g_params) create_optimizer_state(p);

    g_lt_workspace = dev_alloc<uint8_t>(kLtWorkspaceBytes, P_FUNCTIONALITY);
    CUDA_CHECK(cudaDeviceSynchronize());

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float norm_eps = 1e-6f;

    std::vector<uint16_t> h_x((size_t)kBatchRows * kModel);
    std::vector<int> h_labels(kBatchRows);

    int steps_done = 0, forward_passes = 0;
    for (int step = 1; step <= kSteps; ++step) {
        // ---- batch ----
        make_batch(step, h_x, h_labels);
        std::vector<BlockActs> acts(kBlocks);
        bf16* x0 = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_ACTIVATIONS);
        int* labels = dev_alloc<int>(kBatchRows, P_ACTIVATIONS);
        CUDA_CHECK(cudaMemcpy(x0, h_x.data(), h_x.size() * sizeof(uint16_t),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(labels, h_labels.data(), h_labels.size() * sizeof(int),
                              cudaMemcpyHostToDevice));

        // ---- forward ----
        bf16* x = x0;
        for (int l = 0; l < kBlocks; ++l) {
            BlockActs& a = acts[l];
            Block& B = blocks[l];
            a.x = x;
            a.n = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_ACTIVATIONS);
            a.rstd = dev_alloc<float>(kBatchRows, P_ACTIVATIONS);
            rmsnorm_forward_bf16_kernel<<<kBatchRows, 256>>>(a.x, B.gamma->w, a.n, a.rstd,
                                                             kModel, norm_eps);
            KERNEL_CHECK();
            a.pre = dev_alloc<bf16>((size_t)kBatchRows * kHidden, P_ACTIVATIONS);
            linear_forward(a.n, B.w1->w, B.b1->w, nullptr, a.pre, kBatchRows, kModel, kHidden);
            a.act = dev_alloc<bf16>((size_t)kBatchRows * kHidden, P_ACTIVATIONS);
            gelu_forward_bf16_kernel<<<grid_for((size_t)kBatchRows * kHidden), 256>>>(
                a.pre, a.act, (size_t)kBatchRows * kHidden);
            KERNEL_CHECK();
            bf16* x_next = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_ACTIVATIONS);
            linear_forward(a.act, B.w2->w, B.b2->w, a.x, x_next, kBatchRows, kHidden, kModel);
            x = x_next;
        }
        bf16* x_final = x;
        bf16* n_final = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_ACTIVATIONS);
        float* rstd_final = dev_alloc<float>(kBatchRows, P_ACTIVATIONS);
        rmsnorm_forward_bf16_kernel<<<kBatchRows, 256>>>(x_final, final_gamma->w, n_final,
                                                         rstd_final, kModel, norm_eps);
        KERNEL_CHECK();
        bf16* logits = dev_alloc<bf16>((size_t)kBatchRows * kClasses, P_ACTIVATIONS);
        linear_forward(n_final, head_w->w, head_b->w, nullptr, logits, kBatchRows, kModel,
                       kClasses);
        float* loss = dev_alloc<float>(1, P_TEMPORARY);
        CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), 0));
        softmax_cross_entropy_forward_bf16_kernel<<<kBatchRows, 256>>>(logits, labels, loss,
                                                                       kBatchRows, kClasses);
        KERNEL_CHECK();
        ++forward_passes;

        // ---- backward ----
        bf16* dlogits = dev_alloc<bf16>((size_t)kBatchRows * kClasses, P_TEMPORARY);
        softmax_cross_entropy_backward_bf16_kernel<<<kBatchRows, 256>>>(logits, labels, dlogits,
                                                                        kBatchRows, kClasses);
        KERNEL_CHECK();
        dev_free(logits);
        ensure_grad(head_w);
        linear_backward_weight(dlogits, n_final, head_w->grad, kBatchRows, kModel, kClasses);
        ensure_grad(head_b);
        bias_grad_column_sum_bf16_kernel<<<grid_for(kClasses), 256>>>(dlogits, head_b->grad,
                                                                      kBatchRows, kClasses);
        KERNEL_CHECK();
        bf16* dn = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_TEMPORARY);
        linear_backward_input(dlogits, head_w->w, dn, kBatchRows, kModel, kClasses);
        dev_free(dlogits);
        dev_free(n_final);
        ensure_grad(final_gamma);
        rmsnorm_gamma_grad_bf16_kernel<<<grid_for(kModel), 256>>>(dn, x_final, rstd_final,
                                                                  final_gamma->grad, kBatchRows,
                                                                  kModel);
        KERNEL_CHECK();
        bf16* dx = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_TEMPORARY);
        rmsnorm_backward_input_bf16_kernel<<<kBatchRows, 256>>>(dn, x_final, final_gamma->w,
                                                                rstd_final, nullptr, dx, kModel);
        KERNEL_CHECK();
        dev_free(dn);
        dev_free(rstd_final);
        dev_free(x_final);

        for (int l = kBlocks - 1; l >= 0; --l) {
            BlockActs& a = acts[l];
            Block& B = blocks[l];
            // fc2
            ensure_grad(B.w2);
            linear_backward_weight(dx, a.act, B.w2->grad, kBatchRows, kHidden, kModel);
            ensure_grad(B.b2);
            bias_grad_column_sum_bf16_kernel<<<grid_for(kModel), 256>>>(dx, B.b2->grad,
                                                                        kBatchRows, kModel);
            KERNEL_CHECK();
            bf16* dact = dev_alloc<bf16>((size_t)kBatchRows * kHidden, P_TEMPORARY);
            linear_backward_input(dx, B.w2->w, dact, kBatchRows, kHidden, kModel);
            dev_free(a.act);
            // GELU
            bf16* dpre = dev_alloc<bf16>((size_t)kBatchRows * kHidden, P_TEMPORARY);
            gelu_backward_bf16_kernel<<<grid_for((size_t)kBatchRows * kHidden), 256>>>(
                dact, a.pre, dpre, (size_t)kBatchRows * kHidden);
            KERNEL_CHECK();
            dev_free(dact);
            dev_free(a.pre);
            // fc1
            ensure_grad(B.w1);
            linear_backward_weight(dpre, a.n, B.w1->grad, kBatchRows, kModel, kHidden);
            ensure_grad(B.b1);
            bias_grad_column_sum_bf16_kernel<<<grid_for(kHidden), 256>>>(dpre, B.b1->grad,
                                                                         kBatchRows, kHidden);
            KERNEL_CHECK();
            bf16* dnb = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_TEMPORARY);
            linear_backward_input(dpre, B.w1->w, dnb, kBatchRows, kModel, kHidden);
            dev_free(dpre);
            dev_free(a.n);
            // RMSNorm (+ residual)
            ensure_grad(B.gamma);
            rmsnorm_gamma_grad_bf16_kernel<<<grid_for(kModel), 256>>>(dnb, a.x, a.rstd,
                                                                      B.gamma->grad, kBatchRows,
                                                                      kModel);
            KERNEL_CHECK();
            if (l > 0) {
                bf16* dx_prev = dev_alloc<bf16>((size_t)kBatchRows * kModel, P_TEMPORARY);
                rmsnorm_backward_input_bf16_kernel<<<kBatchRows, 256>>>(
                    dnb, a.x, B.gamma->w, a.rstd, dx, dx_prev, kModel);
                KERNEL_CHECK();
                dev_free(dnb);
                dev_free(dx);
                dx = dx_prev;
            } else {
                // The input batch needs no gradient.
                dev_free(dnb);
                dev_free(dx);
            }
            dev_free(a.rstd);
            dev_free(a.x);  // for l == 0 this is the input batch
        }
        dev_free(labels);

        // ---- optimizer: 8-bit AdamW straight into the bf16 weights ----
        float bc1 = 1.f - powf(beta1, (float)step);
        float bc2 = 1.f - powf(beta2, (float)step);
        for (Param* p : g_params) {
            adamw8bit_blockwise_update_bf16_kernel<<<(unsigned)p->nblocks(), kQuantBlock>>>(
                p->w, p->grad, p->m_q, p->v_q, p->m_absmax, p->v_absmax, p->numel, lr, beta1,
                beta2, eps, p->decay ? wd : 0.f, bc1, bc2);
            KERNEL_CHECK();
        }
        // zero_grad(set_to_none=True)
        for (Param* p : g_params) dev_free(p->grad);

        float h_loss = 0.f;
        CUDA_CHECK(cudaMemcpy(&h_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(loss);
        ++steps_done;
        printf("step %d loss %.4f\n", step, h_loss);
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    // ---- tear-down ----
    dev_free(g_lt_workspace);
    for (Param* p : g_params) {
        dev_free(p->m_q); dev_free(p->v_q); dev_free(p->m_absmax); dev_free(p->v_absmax);
        dev_free(p->w);
        delete p;
    }
    g_params.clear();
    LT_CHECK(cublasLtDestroy(g_lt));

    // ---- ledger ----
    unsigned long long sum = 0;
    for (int i = 0; i < P_COUNT; ++i) sum += g_ledger.peak_by[i];
    if (sum != g_ledger.peak) {
        fprintf(stderr, "ledger: peak split does not add up\n");
        return 1;
    }
    printf("ledger {\"program\":\"h15_adamw8bit_bf16_lt\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%llu,"
           "\"param_dtype\":\"bf16\",\"master_weights\":false,\"optimizer\":\"adamw8bit\","
           "\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           steps_done, forward_passes, total_params, g_ledger.peak);
    for (int i = 0; i < P_COUNT; ++i)
        printf("%s\"%s\":%llu", i ? "," : "", kPurposeNames[i], g_ledger.peak_by[i]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

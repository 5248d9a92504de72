// c03_caching_pool_sgdm — fp32 MLP trained with SGD + momentum on top of a
// program-level caching allocator.
//
// Spec: like PyTorch's caching allocator, the program makes ONE cudaMalloc of 256 MiB
// at start and turns it into a pool; every tensor (weights, momentum buffers,
// gradients, activations, temporaries) is sub-allocated from it by a first-fit
// free-list allocator with 512-byte alignment and freed back into the pool (never to
// CUDA). The only other cudaMalloc is a 32 MiB cuBLAS workspace handed to
// cublasSetWorkspace by the optimizer, which owns a cuBLAS handle (the GEMMs are
// hand-written tiled kernels; weight decay is meant to be a cublasSaxpy, but the
// device this corpus runs on has no BLAS-1 routines, so it is done by a small axpy
// kernel and the handle is kept). Model: 3 linear layers 1024 -> 1024 -> 1024 -> 1000
// with ReLU, softmax cross-entropy, batch 256, 6 SGD-momentum steps (lr 0.05,
// momentum 0.9, weight decay 5e-4 on the weight matrices). Gradients are allocated
// in backward and released by zero_grad (set_to_none). Kernels are named k0, k1, ...
// The pool is purpose `mixed`; the peak of CUDA allocations is reached when the
// workspace is allocated (pool + workspace), and the ledger gives the pool's
// internal split at that moment.

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>
#include <map>

// ---------------------------------------------------------------- error checks

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                    cudaGetErrorString(e_));                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CB(call)                                                                     \
    do {                                                                             \
        cublasStatus_t s_ = (call);                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                           \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                    cublasGetStatusString(s_));                                      \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CK_LAUNCH() CK(cudaGetLastError())

// ---------------------------------------------------------------- purposes / ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary",
                                            "functionality", "mixed"};

class CachingPool;

struct PoolSnapshot {
    size_t bytes = 0;
    size_t by[P_COUNT] = {0};  // P_MIXED slot unused
    size_t free_bytes = 0;
};

// Ledger of CUDA-level allocations (what cudaMalloc handed out).
struct Ledger {
    struct Alloc { size_t bytes; Purpose purpose; };
    std::map<void*, Alloc> live;
    std::map<void*, CachingPool*> pools;  // mixed allocations that are pools
    size_t by[P_COUNT] = {0};
    size_t total = 0;
    size_t peak = 0;
    size_t peak_by[P_COUNT] = {0};
    std::vector<PoolSnapshot> pools_at_peak;

    void snapshot_peak();
    void on_alloc(void* p, size_t bytes, Purpose pu) {
        live[p] = {bytes, pu};
        by[pu] += bytes;
        total += bytes;
        if (total > peak) snapshot_peak();
    }
    void on_free(void* p) {
        auto it = live.find(p);
        if (it == live.end()) { fprintf(stderr, "ledger: unknown free %p\n", p); exit(1); }
        by[it->second.purpose] -= it->second.bytes;
        total -= it->second.bytes;
        live.erase(it);
        pools.erase(p);
    }
};
static Ledger g_ledger;

static void* dev_malloc(size_t bytes, Purpose pu, const char* what) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what,
                cudaGetErrorString(e));
        exit(1);
    }
    g_ledger.on_alloc(p, bytes, pu);
    return p;
}

static void dev_free(void* p) {
    g_ledger.on_free(p);
    CK(cudaFree(p));
}

// ---------------------------------------------------------------- caching pool

// One big device allocation, carved by a first-fit free list (blocks kept sorted
// by offset, neighbours coalesced on free), 512-byte granularity.
class CachingPool {
public:
    static constexpr size_t kAlign = 512;

    explicit CachingPool(size_t bytes) : bytes_(bytes) {
        base_ = static_cast<char*>(dev_malloc(bytes, P_MIXED, "caching pool"));
        blocks_.push_back({0, bytes, P_MIXED, true});
        g_ledger.pools[base_] = this;
    }
    ~CachingPool() {
        if (base_) dev_free(base_);
    }

    void* alloc(size_t nbytes, Purpose pu) {
        size_t need = (nbytes + kAlign - 1) / kAlign * kAlign;
        if (need == 0) need = kAlign;
        for (size_t i = 0; i < blocks_.size(); ++i) {
            Block& b = blocks_[i];
            if (!b.free || b.size < need) continue;
            size_t off = b.off;
            if (b.size > need) {
                Block rest{b.off + need, b.size - need, P_MIXED, true};
                b.size = need;
                blocks_.insert(blocks_.begin() + i + 1, rest);
            }
            blocks_[i].free = false;
            blocks_[i].purpose = pu;
            in_use_ += need;
            if (in_use_ > high_water_) high_water_ = in_use_;
            return base_ + off;
        }
        fprintf(stderr, "caching pool: out of memory (%zu bytes requested, %zu in use of %zu)\n",
                nbytes, in_use_, bytes_);
        exit(1);
    }

    void release(void* p) {
        size_t off = static_cast<char*>(p) - base_;
        for (size_t i = 0; i < blocks_.size(); ++i) {
            if (blocks_[i].off != off || blocks_[i].free) continue;
            blocks_[i].free = true;
            blocks_[i].purpose = P_MIXED;
            in_use_ -= blocks_[i].size;
            if (i + 1 < blocks_.size() && blocks_[i + 1].free) {
                blocks_[i].size += blocks_[i + 1].size;
                blocks_.erase(blocks_.begin() + i + 1);
            }
            if (i > 0 && blocks_[i - 1].free) {
                blocks_[i - 1].size += blocks_[i].size;
                blocks_.erase(blocks_.begin() + i);
            }
            return;
        }
        fprintf(stderr, "caching pool: bad free %p\n", p);
        exit(1);
    }

    PoolSnapshot snapshot() const {
        PoolSnapshot s;
        s.bytes = bytes_;
        for (const Block& b : blocks_) {
            if (b.free) s.free_bytes += b.size;
            else s.by[b.purpose] += b.size;
        }
        return s;
    }

    size_t in_use() const { return in_use_; }
    size_t high_water() const { return high_water_; }
    size_t num_blocks() const { return blocks_.size(); }

private:
    struct Block { size_t off, size; Purpose purpose; bool free; };
    char* base_ = nullptr;
    size_t bytes_;
    size_t in_use_ = 0, high_water_ = 0;
    std::vector<Block> blocks_;
};

void Ledger::snapshot_peak() {
    peak = total;
    memcpy(peak_by, by, sizeof by);
    pools_at_peak.clear();
    for (auto& kv : live) {
        if (kv.second.purpose != P_MIXED) continue;
        auto it = pools.find(kv.first);
        PoolSnapshot s;
        if (it != pools.end()) {
            s = it->second->snapshot();
        } else {  // just created, nothing carved yet
            s.bytes = kv.second.bytes;
            s.free_bytes = kv.second.bytes;
        }
        pools_at_peak.push_back(s);
    }
}

// ---------------------------------------------------------------- tensors

struct Tensor {
    float* data = nullptr;
    int rows = 0, cols = 0;
    size_t numel() const { return (size_t)rows * cols; }
    size_t nbytes() const { return numel() * sizeof(float); }
};

static CachingPool* g_pool = nullptr;

static Tensor new_tensor(int rows, int cols, Purpose pu) {
    Tensor t;
    t.rows = rows;
    t.cols = cols;
    t.data = static_cast<float*>(g_pool->alloc(t.nbytes(), pu));
    return t;
}
static void drop(Tensor& t) {
    if (t.data) g_pool->release(t.data);
    t.data = nullptr;
}

// ---------------------------------------------------------------- kernels

#define TILE 32
#define TROWS 8

// C[MxN] = alpha * op(A) * op(B) + beta * C, row-major.
// TA: A is stored K x M (use A^T); TB: B is stored N x K (use B^T).
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_tile(int M, int N, int K, const float* __restrict__ A,
                                          const float* __restrict__ B, float* __restrict__ C,
                                          float alpha, float beta) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[TILE / TROWS];
#pragma unroll
    for (int i = 0; i < TILE / TROWS; ++i) acc[i] = 0.f;

    for (int kt = 0; kt < K; kt += TILE) {
#pragma unroll
        for (int i = 0; i < TILE / TROWS; ++i) {
            int r = ty + i * TROWS;
            int m = row0 + r, k = kt + tx;
            As[r][tx] = (m < M && k < K) ? (TA ? A[(size_t)k * M + m] : A[(size_t)m * K + k]) : 0.f;
            int kk = kt + r, n = col0 + tx;
            Bs[r][tx] = (kk < K && n < N) ? (TB ? B[(size_t)n * K + kk] : B[(size_t)kk * N + n]) : 0.f;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < TILE; ++kk) {
            float b = Bs[kk][tx];
#pragma unroll
            for (int i = 0; i < TILE / TROWS; ++i) acc[i] += As[ty + i * TROWS][kk] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TILE / TROWS; ++i) {
        int m = row0 + ty + i * TROWS, n = col0 + tx;
        if (m < M && n < N) {
            size_t idx = (size_t)m * N + n;
            C[idx] = alpha * acc[i] + (beta == 0.f ? 0.f : beta * C[idx]);
        }
    }
}

// A * B^T   (forward: X[B x in] * W[out x in]^T)
__global__ void k0(int M, int N, int K, const float* A, const float* B, float* C, float alpha, float beta) {
    gemm_tile<false, true>(M, N, K, A, B, C, alpha, beta);
}
// A * B     (input grad: dY[B x out] * W[out x in])
__global__ void k1(int M, int N, int K, const float* A, const float* B, float* C, float alpha, float beta) {
    gemm_tile<false, false>(M, N, K, A, B, C, alpha, beta);
}
// A^T * B   (weight grad: dY[B x out]^T * X[B x in])
__global__ void k2(int M, int N, int K, const float* A, const float* B, float* C, float alpha, float beta) {
    gemm_tile<true, false>(M, N, K, A, B, C, alpha, beta);
}

// Y[r, c] = act(Y[r, c] + b[c])
__global__ void k3(float* Y, const float* b, int rows, int cols, int relu) {
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = Y[i] + b[i % cols];
        Y[i] = relu ? fmaxf(v, 0.f) : v;
    }
}

// softmax cross-entropy, one block per row: dlogits = (softmax - onehot) / B, rowloss
__global__ void k4(const float* logits, const int* labels, float* dlogits, float* rowloss,
                   int B, int C) {
    __shared__ float red[256];
    int r = blockIdx.x;
    const float* x = logits + (size_t)r * C;
    float* dx = dlogits + (size_t)r * C;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) sum += __expf(x[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float lse = m + __logf(red[0]);
    int y = labels[r];
    float invB = 1.f / B;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dx[c] = (__expf(x[c] - lse) - (c == y ? 1.f : 0.f)) * invB;
    if (threadIdx.x == 0) rowloss[r] = lse - x[y];
}

// mean of n values into out[0] (single block)
__global__ void k5(const float* v, int n, float* out) {
    __shared__ float red[256];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = red[0] / n;
}

// db[c] = sum_r dY[r, c]
__global__ void k6(const float* dY, float* db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; ++r) s += dY[(size_t)r * cols + c];
    db[c] = s;
}

// ReLU backward in place: dH *= (H > 0)
__global__ void k7(float* dH, const float* H, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (H[i] <= 0.f) dH[i] = 0.f;
}

// y += a * x   (weight decay folded into the gradient)
__global__ void k8(size_t n, float a, const float* x, float* y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

// SGD with momentum: v = mu * v + g; w -= lr * v
__global__ void k9(size_t n, float* w, float* v, const float* g, float lr, float mu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float vi = mu * v[i] + g[i];
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

// ---------------------------------------------------------------- launch helpers

static int grid_for(size_t n, int block) {
    size_t g = (n + block - 1) / block;
    return (int)(g > 4096 ? 4096 : g);
}

enum GemmOp { NT, NN, TN };
static void gemm(GemmOp op, int M, int N, int K, const float* A, const float* B, float* C,
                 float beta = 0.f) {
    dim3 block(TILE, TROWS);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    switch (op) {
        case NT: k0<<<grid, block>>>(M, N, K, A, B, C, 1.f, beta); break;
        case NN: k1<<<grid, block>>>(M, N, K, A, B, C, 1.f, beta); break;
        case TN: k2<<<grid, block>>>(M, N, K, A, B, C, 1.f, beta); break;
    }
    CK_LAUNCH();
}

// ---------------------------------------------------------------- model

struct Linear {
    int in, out;
    Tensor W, b;    // weights
    Tensor gW, gb;  // gradients (allocated in backward, dropped by zero_grad)
};

struct Param {
    Tensor* w;
    Tensor* g;
    Tensor v;        // momentum buffer
    bool decay;
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t lcg() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static inline float urand() { return (lcg() & 0xFFFFFF) / 16777216.0f; }

static void init_linear(Linear& L, int in, int out) {
    L.in = in;
    L.out = out;
    L.W = new_tensor(out, in, P_WEIGHTS);
    L.b = new_tensor(1, out, P_WEIGHTS);
    std::vector<float> h(L.W.numel());
    float bound = 1.0f / sqrtf((float)in);
    for (auto& x : h) x = (2.f * urand() - 1.f) * bound;
    CK(cudaMemcpy(L.W.data, h.data(), L.W.nbytes(), cudaMemcpyHostToDevice));
    std::vector<float> hb(out);
    for (auto& x : hb) x = (2.f * urand() - 1.f) * bound;
    CK(cudaMemcpy(L.b.data, hb.data(), L.b.nbytes(), cudaMemcpyHostToDevice));
}

struct SGD {
    std::vector<Param> params;
    float lr, mu, wd;
    cublasHandle_t blas = nullptr;
    void* workspace = nullptr;
    size_t workspace_bytes = 0;

    void init(std::vector<Linear>& layers, float lr_, float mu_, float wd_) {
        lr = lr_;
        mu = mu_;
        wd = wd_;
        for (auto& L : layers) {
            params.push_back({&L.W, &L.gW, new_tensor(L.W.rows, L.W.cols, P_OPTIMIZER), true});
            params.push_back({&L.b, &L.gb, new_tensor(L.b.rows, L.b.cols, P_OPTIMIZER), false});
        }
        for (auto& p : params) CK(cudaMemset(p.v.data, 0, p.v.nbytes()));
        // cuBLAS handle for the BLAS-1 part of the update, with its own workspace
        CB(cublasCreate(&blas));
        CB(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
        workspace_bytes = 32u << 20;
        workspace = dev_malloc(workspace_bytes, P_FUNCTIONALITY, "cublas workspace");
        CB(cublasSetWorkspace(blas, workspace, workspace_bytes));
    }

    void step() {
        for (auto& p : params) {
            size_t n = p.w->numel();
            if (p.decay && wd != 0.f) {  // g += wd * w  (axpy)
                k8<<<grid_for(n, 256), 256>>>(n, wd, p.w->data, p.g->data);
                CK_LAUNCH();
            }
            k9<<<grid_for(n, 256), 256>>>(n, p.w->data, p.v.data, p.g->data, lr, mu);
            CK_LAUNCH();
        }
    }

    void zero_grad() {  // set_to_none: hand gradient memory back to the pool
        for (auto& p : params) drop(*p.g);
    }

    void destroy() {
        for (auto& p : params) drop(p.v);
        CB(cublasDestroy(blas));
        dev_free(workspace);
    }
};

// ---------------------------------------------------------------- main

int main() {
    const int B = 256, D_IN = 1024, H = 1024, C = 1000, STEPS = 6;
    const size_t POOL_BYTES = 256ull << 20;

    CK(cudaSetDevice(0));
    CachingPool* pool = new CachingPool(POOL_BYTES);
    g_pool = pool;

    std::vector<Linear> layers(3);
    init_linear(layers[0], D_IN, H);
    init_linear(layers[1], H, H);
    init_linear(layers[2], H, C);
    long long n_params = 0;
    for (auto& L : layers) n_params += (long long)L.W.numel() + L.b.numel();

    SGD opt;
    opt.init(layers, 0.05f, 0.9f, 5e-4f);

    // synthetic data set: class prototypes plus noise
    std::vector<float> hx((size_t)B * D_IN);
    std::vector<int> hy(B);
    int forward_passes = 0, steps_done = 0;

    for (int step = 1; step <= STEPS; ++step) {
        for (int r = 0; r < B; ++r) {
            int y = (int)(lcg() % C);
            hy[r] = y;
            for (int c = 0; c < D_IN; ++c)
                hx[(size_t)r * D_IN + c] = ((c * 31 + y * 17) % 97) / 97.f - 0.5f + 0.1f * (urand() - 0.5f);
        }
        Tensor x = new_tensor(B, D_IN, P_ACTIVATIONS);
        int* labels = static_cast<int*>(pool->alloc(B * sizeof(int), P_ACTIVATIONS));
        CK(cudaMemcpy(x.data, hx.data(), x.nbytes(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(labels, hy.data(), B * sizeof(int), cudaMemcpyHostToDevice));

        // ---- forward
        Linear &L1 = layers[0], &L2 = layers[1], &L3 = layers[2];
        Tensor h1 = new_tensor(B, H, P_ACTIVATIONS);
        gemm(NT, B, H, D_IN, x.data, L1.W.data, h1.data);
        k3<<<grid_for(h1.numel(), 256), 256>>>(h1.data, L1.b.data, B, H, 1);
        CK_LAUNCH();
        Tensor h2 = new_tensor(B, H, P_ACTIVATIONS);
        gemm(NT, B, H, H, h1.data, L2.W.data, h2.data);
        k3<<<grid_for(h2.numel(), 256), 256>>>(h2.data, L2.b.data, B, H, 1);
        CK_LAUNCH();
        Tensor logits = new_tensor(B, C, P_ACTIVATIONS);
        gemm(NT, B, C, H, h2.data, L3.W.data, logits.data);
        k3<<<grid_for(logits.numel(), 256), 256>>>(logits.data, L3.b.data, B, C, 0);
        CK_LAUNCH();
        ++forward_passes;

        // ---- loss
        Tensor dlogits = new_tensor(B, C, P_TEMPORARY);
        Tensor rowloss = new_tensor(1, B, P_TEMPORARY);
        Tensor loss = new_tensor(1, 1, P_TEMPORARY);
        k4<<<B, 256>>>(logits.data, labels, dlogits.data, rowloss.data, B, C);
        CK_LAUNCH();
        k5<<<1, 256>>>(rowloss.data, B, loss.data);
        CK_LAUNCH();
        float hloss = 0.f;
        CK(cudaMemcpy(&hloss, loss.data, sizeof(float), cudaMemcpyDeviceToHost));
        drop(loss);
        drop(rowloss);
        drop(logits);

        // ---- backward
        L3.gW = new_tensor(C, H, P_GRADIENTS);
        L3.gb = new_tensor(1, C, P_GRADIENTS);
        gemm(TN, C, H, B, dlogits.data, h2.data, L3.gW.data);
        k6<<<(C + 255) / 256, 256>>>(dlogits.data, L3.gb.data, B, C);
        CK_LAUNCH();
        Tensor dh2 = new_tensor(B, H, P_TEMPORARY);
        gemm(NN, B, H, C, dlogits.data, L3.W.data, dh2.data);
        drop(dlogits);
        k7<<<grid_for(dh2.numel(), 256), 256>>>(dh2.data, h2.data, dh2.numel());
        CK_LAUNCH();
        drop(h2);

        L2.gW = new_tensor(H, H, P_GRADIENTS);
        L2.gb = new_tensor(1, H, P_GRADIENTS);
        gemm(TN, H, H, B, dh2.data, h1.data, L2.gW.data);
        k6<<<(H + 255) / 256, 256>>>(dh2.data, L2.gb.data, B, H);
        CK_LAUNCH();
        Tensor dh1 = new_tensor(B, H, P_TEMPORARY);
        gemm(NN, B, H, H, dh2.data, L2.W.data, dh1.data);
        drop(dh2);
        k7<<<grid_for(dh1.numel(), 256), 256>>>(dh1.data, h1.data, dh1.numel());
        CK_LAUNCH();
        drop(h1);

        L1.gW = new_tensor(H, D_IN, P_GRADIENTS);
        L1.gb = new_tensor(1, H, P_GRADIENTS);
        gemm(TN, H, D_IN, B, dh1.data, x.data, L1.gW.data);
        k6<<<(H + 255) / 256, 256>>>(dh1.data, L1.gb.data, B, H);
        CK_LAUNCH();
        drop(dh1);
        drop(x);
        pool->release(labels);

        // ---- optimizer
        opt.step();
        opt.zero_grad();
        CK(cudaDeviceSynchronize());
        ++steps_done;
        printf("step %d  loss %.4f  pool in use %zu B (high water %zu B, %zu blocks)\n", step,
               hloss, pool->in_use(), pool->high_water(), pool->num_blocks());
    }

    // ---- tear down
    opt.destroy();
    for (auto& L : layers) {
        drop(L.W);
        drop(L.b);
    }
    g_pool = nullptr;
    delete pool;  // hands the pool back to CUDA

    // ---- ledger
    std::string s = "{\"program\":\"c03_caching_pool_sgdm\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
             "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"sgd_momentum\","
             "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
             steps_done, forward_passes, n_params, g_ledger.peak);
    s += buf;
    size_t sum = 0;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%zu", p ? "," : "", kPurposeName[p], g_ledger.peak_by[p]);
        s += buf;
        sum += g_ledger.peak_by[p];
    }
    s += "},\"pools_at_peak\":[";
    for (size_t i = 0; i < g_ledger.pools_at_peak.size(); ++i) {
        const PoolSnapshot& ps = g_ledger.pools_at_peak[i];
        snprintf(buf, sizeof buf, "%s{\"bytes\":%zu,\"by_purpose\":{", i ? "," : "", ps.bytes);
        s += buf;
        size_t psum = ps.free_bytes;
        for (int p = 0; p < P_MIXED; ++p) {
            snprintf(buf, sizeof buf, "\"%s\":%zu,", kPurposeName[p], ps.by[p]);
            s += buf;
            psum += ps.by[p];
        }
        snprintf(buf, sizeof buf, "\"free\":%zu}}", ps.free_bytes);
        s += buf;
        if (psum != ps.bytes) { fprintf(stderr, "ledger: pool split does not add up\n"); return 1; }
    }
    s += "],\"oom\":null}";
    if (sum != g_ledger.peak) { fprintf(stderr, "ledger: peak split does not add up\n"); return 1; }
    if (g_ledger.total != 0) { fprintf(stderr, "ledger: %zu bytes leaked\n", g_ledger.total); return 1; }
    printf("ledger %s\n", s.c_str());
    return 0;
}

// h07_torch_pool_adamw: a PyTorch-like fp32 trainer with a program-level caching allocator.
//
// At start-up the program reserves ONE large device buffer with cudaMalloc (about twice
// what the run needs) and sub-allocates every tensor from it: block sizes are rounded up to
// 256 bytes, released blocks go back on a free list (best fit, split, coalesced with their
// neighbours) and are reused by later requests. The model is a 4-layer MLP, 1024 wide
// (Linear+ReLU x3, Linear, log-softmax + NLL loss), trained in fp32 with cuBLAS SGEMM on a
// handle that keeps its default workspace. The weights are initialised on the host and
// uploaded into pool blocks before the first step. Each of the 5 steps copies the input
// batch and labels from host into pool blocks, runs forward (activations from the pool),
// backward (gradients created from the pool; activations and activation-gradients returned
// to the pool as soon as backward is done with them), then AdamW with one kernel launch per
// parameter tensor; AdamW's m and v are created lazily from the pool at the first update.
// After each update the gradients are set to None (returned to the pool). The pool is the
// only device allocation, so it is reported as purpose `mixed` with its split at the peak in
// pools_at_peak.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

// ----------------------------------------------------------------------------------------
// error checking

#define CUDA_CHECK(expr)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (expr);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,         \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CUBLAS_CHECK(expr)                                                                \
    do {                                                                                  \
        cublasStatus_t st_ = (expr);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,         \
                    cublasGetStatusString(st_));                                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// purposes and the ledger of device allocations

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char* kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

class CachingPool;

struct PoolSplit {
    uint64_t bytes = 0;
    uint64_t used[P_COUNT] = {0};  // P_MIXED unused
    uint64_t free_bytes = 0;
};

struct Ledger {
    struct Alloc { uint64_t bytes; Purpose purpose; const CachingPool* pool; };
    std::map<void*, Alloc> live;
    uint64_t live_bytes = 0;
    uint64_t live_by[P_COUNT] = {0};
    uint64_t peak_bytes = 0;
    uint64_t peak_by[P_COUNT] = {0};
    std::vector<PoolSplit> peak_pools;

    Phase phase = PH_SETUP;
    int step = 0;

    bool oom = false;
    uint64_t oom_req = 0;
    Purpose oom_purpose = P_MIXED;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    uint64_t oom_live = 0;
    uint64_t oom_live_by[P_COUNT] = {0};

    void snapshot_peak();
} g_ledger;

// Device allocation with bookkeeping. Returns false on out-of-memory (recorded in the ledger).
static bool dev_malloc(void** p, uint64_t bytes, Purpose purpose, const CachingPool* pool) {
    cudaError_t err = cudaMalloc(p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        g_ledger.oom = true;
        g_ledger.oom_req = bytes;
        g_ledger.oom_purpose = purpose;
        g_ledger.oom_phase = g_ledger.phase;
        g_ledger.oom_step = g_ledger.step;
        g_ledger.oom_live = g_ledger.live_bytes;
        memcpy(g_ledger.oom_live_by, g_ledger.live_by, sizeof(g_ledger.live_by));
        return false;
    }
    CUDA_CHECK(err);
    g_ledger.live[*p] = Ledger::Alloc{bytes, purpose, pool};
    g_ledger.live_bytes += bytes;
    g_ledger.live_by[purpose] += bytes;
    if (g_ledger.live_bytes > g_ledger.peak_bytes) g_ledger.snapshot_peak();
    return true;
}

static void dev_free(void* p) {
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) {
        fprintf(stderr, "dev_free: unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live_bytes -= it->second.bytes;
    g_ledger.live_by[it->second.purpose] -= it->second.bytes;
    g_ledger.live.erase(it);
}

// ----------------------------------------------------------------------------------------
// the caching allocator: one cudaMalloc, sub-allocated with a best-fit free list

class CachingPool {
public:
    static constexpr uint64_t kAlign = 256;

    bool init(uint64_t bytes) {
        void* p = nullptr;
        size_ = bytes;
        if (!dev_malloc(&p, bytes, P_MIXED, this)) {
            size_ = 0;
            return false;
        }
        base_ = static_cast<char*>(p);
        blocks_[0] = Block{bytes, true, P_TEMPORARY};
        free_.insert({bytes, 0});
        return true;
    }

    void release() {
        if (base_) dev_free(base_);
        base_ = nullptr;
        blocks_.clear();
        free_.clear();
    }

    void* allocate(uint64_t nbytes, Purpose purpose) {
        uint64_t size = (nbytes + kAlign - 1) / kAlign * kAlign;
        if (size == 0) size = kAlign;
        auto it = free_.lower_bound({size, 0});
        if (it == free_.end()) {
            fprintf(stderr, "caching pool exhausted: %llu bytes requested (%s), %llu of %llu "
                    "in use\n", (unsigned long long)nbytes, kPurposeName[purpose],
                    (unsigned long long)in_use_, (unsigned long long)size_);
            exit(1);
        }
        uint64_t off = it->second;
        uint64_t bsize = it->first;
        free_.erase(it);
        Block& b = blocks_[off];
        if (bsize > size) {  // split, the remainder stays free
            blocks_[off + size] = Block{bsize - size, true, P_TEMPORARY};
            free_.insert({bsize - size, off + size});
            b.size = size;
        }
        b.free = false;
        b.purpose = purpose;
        in_use_ += size;
        used_by_[purpose] += size;
        if (in_use_ > high_water_) high_water_ = in_use_;
        return base_ + off;
    }

    void deallocate(void* p) {
        uint64_t off = static_cast<uint64_t>(static_cast<char*>(p) - base_);
        auto it = blocks_.find(off);
        if (it == blocks_.end() || it->second.free) {
            fprintf(stderr, "caching pool: bad free of %p\n", p);
            exit(1);
        }
        in_use_ -= it->second.size;
        used_by_[it->second.purpose] -= it->second.size;
        it->second.free = true;
        // coalesce with the next block
        auto next = std::next(it);
        if (next != blocks_.end() && next->second.free) {
            free_.erase({next->second.size, next->first});
            it->second.size += next->second.size;
            blocks_.erase(next);
        }
        // coalesce with the previous block
        if (it != blocks_.begin()) {
            auto prev = std::prev(it);
            if (prev->second.free) {
                free_.erase({prev->second.size, prev->first});
                prev->second.size += it->second.size;
                blocks_.erase(it);
                it = prev;
            }
        }
        free_.insert({it->second.size, it->first});
    }

    PoolSplit split() const {
        PoolSplit s;
        s.bytes = size_;
        for (int i = 0; i < P_COUNT; ++i) s.used[i] = used_by_[i];
        s.free_bytes = size_ - in_use_;
        return s;
    }

    uint64_t high_water() const { return high_water_; }
    uint64_t size() const { return size_; }

private:
    struct Block { uint64_t size; bool free; Purpose purpose; };
    char* base_ = nullptr;
    uint64_t size_ = 0;
    uint64_t in_use_ = 0;
    uint64_t high_water_ = 0;
    uint64_t used_by_[P_COUNT] = {0};
    std::map<uint64_t, Block> blocks_;                 // offset -> block
    std::set<std::pair<uint64_t, uint64_t>> free_;      // (size, offset) of free blocks
};

void Ledger::snapshot_peak() {
    peak_bytes = live_bytes;
    memcpy(peak_by, live_by, sizeof(peak_by));
    peak_pools.clear();
    for (auto& kv : live)
        if (kv.second.purpose == P_MIXED && kv.second.pool)
            peak_pools.push_back(kv.second.pool->split());
}

static CachingPool g_pool;

// A tensor: a pool block with a shape (fp32 or int32 elements).
struct Tensor {
    void* ptr = nullptr;
    size_t numel = 0;
    float* f() const { return static_cast<float*>(ptr); }
    int* i() const { return static_cast<int*>(ptr); }
};

static Tensor empty(size_t numel, Purpose purpose, size_t elem = 4) {
    Tensor t;
    t.numel = numel;
    t.ptr = g_pool.allocate(numel * elem, purpose);
    return t;
}

static void release(Tensor& t) {
    if (t.ptr) g_pool.deallocate(t.ptr);
    t.ptr = nullptr;
    t.numel = 0;
}

// ----------------------------------------------------------------------------------------
// kernels

__global__ void bias_act_kernel(float* y, const float* b, int rows, int cols, int relu) {
    size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t n = (size_t)rows * cols;
    if (idx >= n) return;
    float v = y[idx] + b[idx % cols];
    y[idx] = relu ? fmaxf(v, 0.0f) : v;
}

// one block per row, blockDim.x == 256
__global__ void log_softmax_kernel(const float* logits, float* logp, int cols) {
    __shared__ float red[256];
    const float* x = logits + (size_t)blockIdx.x * cols;
    float* y = logp + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(x[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float lse = m + logf(red[0]);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = x[c] - lse;
}

// single block, blockDim.x == 256
__global__ void nll_loss_kernel(const float* logp, const int* labels, float* loss, int rows,
                                int cols) {
    __shared__ float red[256];
    float s = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) s -= logp[(size_t)r * cols + labels[r]];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = red[0] / rows;
}

__global__ void log_softmax_nll_backward_kernel(const float* logp, const int* labels,
                                                float* dlogits, int rows, int cols) {
    size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (idx >= (size_t)rows * cols) return;
    int r = (int)(idx / cols), c = (int)(idx % cols);
    float g = expf(logp[idx]) - (labels[r] == c ? 1.0f : 0.0f);
    dlogits[idx] = g / rows;
}

__global__ void relu_backward_kernel(float* dy, const float* y, size_t n) {
    size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (idx < n && y[idx] <= 0.0f) dy[idx] = 0.0f;
}

__global__ void bias_grad_kernel(const float* dy, float* db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += dy[(size_t)r * cols + c];
    db[c] = s;
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, size_t n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1,
                             float bc2) {
    size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float gi = g[idx];
    float mi = beta1 * m[idx] + (1.0f - beta1) * gi;
    float vi = beta2 * v[idx] + (1.0f - beta2) * gi * gi;
    m[idx] = mi;
    v[idx] = vi;
    float pi = p[idx] * (1.0f - lr * wd);
    p[idx] = pi - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

static unsigned blocks_for(size_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}

// ----------------------------------------------------------------------------------------
// model

static const int kLayers = 4;
static const int kWidth = 1024;
static const int kInFeatures = 1024;
static const int kClasses = 1024;
static const int kBatch = 256;
static const int kSteps = 5;
// The run needs ~70 MiB of tensors at once (weights, grads, m, v, activations); reserve
// about twice that up front, as a caching allocator would after warm-up.
static const uint64_t kPoolBytes = 144ull << 20;

struct Param {
    const char* name;
    Tensor data, grad, exp_avg, exp_avg_sq;
    bool has_state = false;
};

struct Linear {
    int in, out;
    Param* weight;  // [out, in] row-major
    Param* bias;    // [out]
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float rand_uniform() {  // [0, 1)
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) & 0xFFFFFF) / 16777216.0f;
}

static void emit_ledger(int steps_done, int forwards, uint64_t params);

int main() {
    CUDA_CHECK(cudaSetDevice(0));

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));  // keeps its default workspace

    uint64_t n_params = 0;
    for (int l = 0; l < kLayers; ++l) {
        uint64_t in = (l == 0) ? kInFeatures : kWidth, out = (l == kLayers - 1) ? kClasses : kWidth;
        n_params += in * out + out;
    }

    if (!g_pool.init(kPoolBytes)) {
        fprintf(stderr, "out of memory reserving the %llu-byte caching pool\n",
                (unsigned long long)kPoolBytes);
        emit_ledger(0, 0, n_params);
        return 3;
    }

    // ---- parameters: initialised on the host, uploaded into pool blocks
    static const char* kNames[2 * kLayers] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                              "fc3.weight", "fc3.bias", "fc4.weight", "fc4.bias"};
    std::vector<Param> params(2 * kLayers);
    std::vector<Linear> layers(kLayers);
    for (int l = 0; l < kLayers; ++l) {
        Linear& L = layers[l];
        L.in = (l == 0) ? kInFeatures : kWidth;
        L.out = (l == kLayers - 1) ? kClasses : kWidth;
        L.weight = &params[2 * l];
        L.bias = &params[2 * l + 1];
        L.weight->name = kNames[2 * l];
        L.bias->name = kNames[2 * l + 1];

        float bound = 1.0f / sqrtf((float)L.in);
        std::vector<float> hw((size_t)L.out * L.in), hb(L.out);
        for (auto& x : hw) x = (2.0f * rand_uniform() - 1.0f) * bound;
        for (auto& x : hb) x = (2.0f * rand_uniform() - 1.0f) * bound;

        L.weight->data = empty(hw.size(), P_WEIGHTS);
        L.bias->data = empty(hb.size(), P_WEIGHTS);
        CUDA_CHECK(cudaMemcpy(L.weight->data.ptr, hw.data(), hw.size() * 4,
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(L.bias->data.ptr, hb.data(), hb.size() * 4,
                              cudaMemcpyHostToDevice));
    }
    printf("model: %d-layer MLP, width %d, %llu parameters; pool %llu MiB\n", kLayers, kWidth,
           (unsigned long long)n_params, (unsigned long long)(kPoolBytes >> 20));

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 1e-2f;
    const float one = 1.0f, zero = 0.0f;
    std::vector<float> h_x((size_t)kBatch * kInFeatures);
    std::vector<int> h_y(kBatch);

    int steps_done = 0, forwards = 0;
    for (int step = 1; step <= kSteps; ++step) {
        g_ledger.step = step;

        // ---- batch from host
        g_ledger.phase = PH_STEP_START;
        for (auto& v : h_x) v = 2.0f * rand_uniform() - 1.0f;
        for (auto& v : h_y) v = (int)(rand_uniform() * kClasses) % kClasses;
        Tensor x = empty(h_x.size(), P_ACTIVATIONS);
        Tensor y = empty(h_y.size(), P_ACTIVATIONS);
        CUDA_CHECK(cudaMemcpyAsync(x.ptr, h_x.data(), h_x.size() * 4, cudaMemcpyHostToDevice, 0));
        CUDA_CHECK(cudaMemcpyAsync(y.ptr, h_y.data(), h_y.size() * 4, cudaMemcpyHostToDevice, 0));

        // ---- forward
        g_ledger.phase = PH_FORWARD;
        std::vector<Tensor> acts(kLayers + 1);  // acts[0] = x, acts[l+1] = output of layer l
        acts[0] = x;
        Tensor logits;
        for (int l = 0; l < kLayers; ++l) {
            Linear& L = layers[l];
            bool last = (l == kLayers - 1);
            Tensor out = empty((size_t)kBatch * L.out, last ? P_TEMPORARY : P_ACTIVATIONS);
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, L.out, kBatch, L.in, &one,
                                     L.weight->data.f(), L.in, acts[l].f(), L.in, &zero,
                                     out.f(), L.out));
            bias_act_kernel<<<blocks_for(out.numel, 256), 256>>>(out.f(), L.bias->data.f(),
                                                                 kBatch, L.out, last ? 0 : 1);
            KERNEL_CHECK();
            if (last) logits = out; else acts[l + 1] = out;
        }
        Tensor logp = empty((size_t)kBatch * kClasses, P_ACTIVATIONS);
        log_softmax_kernel<<<kBatch, 256>>>(logits.f(), logp.f(), kClasses);
        KERNEL_CHECK();
        release(logits);  // not needed by backward
        Tensor loss = empty(1, P_TEMPORARY);
        nll_loss_kernel<<<1, 256>>>(logp.f(), y.i(), loss.f(), kBatch, kClasses);
        KERNEL_CHECK();
        ++forwards;

        // ---- backward
        g_ledger.phase = PH_BACKWARD;
        Tensor dout = empty((size_t)kBatch * kClasses, P_TEMPORARY);
        log_softmax_nll_backward_kernel<<<blocks_for(dout.numel, 256), 256>>>(
            logp.f(), y.i(), dout.f(), kBatch, kClasses);
        KERNEL_CHECK();
        release(logp);
        release(y);
        for (int l = kLayers - 1; l >= 0; --l) {
            Linear& L = layers[l];
            Tensor& in = acts[l];
            // dW = dout^T . in    (row-major [out, in])
            L.weight->grad = empty((size_t)L.out * L.in, P_GRADIENTS);
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, kBatch, &one,
                                     in.f(), L.in, dout.f(), L.out, &zero,
                                     L.weight->grad.f(), L.in));
            L.bias->grad = empty(L.out, P_GRADIENTS);
            bias_grad_kernel<<<blocks_for(L.out, 256), 256>>>(dout.f(), L.bias->grad.f(),
                                                             kBatch, L.out);
            KERNEL_CHECK();
            if (l > 0) {
                // d(in) = dout . W, then through the ReLU that produced `in`
                Tensor din = empty((size_t)kBatch * L.in, P_TEMPORARY);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, L.in, kBatch, L.out,
                                         &one, L.weight->data.f(), L.in, dout.f(), L.out,
                                         &zero, din.f(), L.in));
                release(dout);
                relu_backward_kernel<<<blocks_for(din.numel, 256), 256>>>(din.f(), in.f(),
                                                                         din.numel);
                KERNEL_CHECK();
                release(in);
                dout = din;
            } else {
                release(dout);
                release(in);  // the input batch
            }
        }

        // ---- optimizer: AdamW, one launch per parameter tensor
        g_ledger.phase = PH_OPTIMIZER;
        float bc1 = 1.0f - powf(beta1, (float)step);
        float bc2 = 1.0f - powf(beta2, (float)step);
        for (auto& p : params) {
            if (!p.has_state) {  // lazily created state, zero-initialised
                p.exp_avg = empty(p.data.numel, P_OPTIMIZER);
                p.exp_avg_sq = empty(p.data.numel, P_OPTIMIZER);
                CUDA_CHECK(cudaMemsetAsync(p.exp_avg.ptr, 0, p.data.numel * 4, 0));
                CUDA_CHECK(cudaMemsetAsync(p.exp_avg_sq.ptr, 0, p.data.numel * 4, 0));
                p.has_state = true;
            }
            adamw_kernel<<<blocks_for(p.data.numel, 256), 256>>>(
                p.data.f(), p.grad.f(), p.exp_avg.f(), p.exp_avg_sq.f(), p.data.numel, lr,
                beta1, beta2, eps, wd, bc1, bc2);
            KERNEL_CHECK();
        }
        // zero_grad(set_to_none=True)
        for (auto& p : params) release(p.grad);
        ++steps_done;

        // loss.item()
        float h_loss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&h_loss, loss.ptr, sizeof(float), cudaMemcpyDeviceToHost));
        release(loss);
        printf("step %d: loss %.4f, pool in use high-water %llu bytes\n", step, h_loss,
               (unsigned long long)g_pool.high_water());
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    for (auto& p : params) {
        release(p.data);
        release(p.exp_avg);
        release(p.exp_avg_sq);
    }
    g_pool.release();
    CUBLAS_CHECK(cublasDestroy(blas));

    emit_ledger(steps_done, forwards, n_params);
    return 0;
}

// ----------------------------------------------------------------------------------------
// ledger output

static std::string purpose_obj(const uint64_t* by) {
    std::string s = "{";
    for (int i = 0; i < P_COUNT; ++i) {
        char buf[96];
        snprintf(buf, sizeof buf, "%s\"%s\":%llu", i ? "," : "", kPurposeName[i],
                 (unsigned long long)by[i]);
        s += buf;
    }
    return s + "}";
}

static void emit_ledger(int steps_done, int forwards, uint64_t params) {
    const Ledger& L = g_ledger;
    std::string pools = "[";
    for (size_t k = 0; k < L.peak_pools.size(); ++k) {
        const PoolSplit& ps = L.peak_pools[k];
        std::string by = "{";
        for (int i = 0; i < P_MIXED; ++i) {
            char buf[96];
            snprintf(buf, sizeof buf, "\"%s\":%llu,", kPurposeName[i],
                     (unsigned long long)ps.used[i]);
            by += buf;
        }
        char buf[160];
        snprintf(buf, sizeof buf, "\"free\":%llu}", (unsigned long long)ps.free_bytes);
        by += buf;
        snprintf(buf, sizeof buf, "%s{\"bytes\":%llu,\"by_purpose\":", k ? "," : "",
                 (unsigned long long)ps.bytes);
        pools += buf + by + "}";
    }
    pools += "]";

    std::string oom = "null";
    if (L.oom) {
        int dom = 0;
        for (int i = 1; i < P_COUNT; ++i)
            if (L.oom_live_by[i] > L.oom_live_by[dom]) dom = i;
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"requested_bytes\":%llu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
                 "\"live_bytes\":%llu,\"live_by_purpose\":",
                 (unsigned long long)L.oom_req, kPurposeName[L.oom_purpose],
                 kPhaseName[L.oom_phase], L.oom_step, (unsigned long long)L.oom_live);
        oom = std::string(buf) + purpose_obj(L.oom_live_by) + ",\"dominant\":\"" +
              kPurposeName[dom] + "\"}";
    }

    printf("ledger {\"program\":\"h07_torch_pool_adamw\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%llu,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
           "\"peak_bytes\":%llu,\"peak_by_purpose\":%s,\"pools_at_peak\":%s,\"oom\":%s}\n",
           steps_done, forwards, (unsigned long long)params,
           (unsigned long long)L.peak_bytes, purpose_obj(L.peak_by).c_str(), pools.c_str(),
           oom.c_str());
    fflush(stdout);
}

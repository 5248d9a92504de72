// c12_two_streams_async — 3-layer fp32 MLP trained with AdamW, input prefetch on a copy stream.
//
// Spec: a 3-layer MLP (1024 -> 1024 -> 1024 -> 1000 classes, ReLU between layers, fp32
// weights and biases, one cudaMalloc per tensor) is trained for 6 steps with softmax
// cross-entropy on batches of 256 samples. The training set (one batch per step plus its
// labels) sits in pinned host memory (cudaMallocHost). Two streams are used: a copy stream
// prefetches the next batch into one of two persistent device input/label buffers (double
// buffering) while the compute stream trains on the other; a "copy done" event per buffer
// orders the compute stream after the copy and a "buffer free" event per buffer, recorded
// once backward has last read the input, orders the next copy into that buffer. The compute
// stream runs forward, backward and AdamW: the parameters, their persistent gradients and
// the per-tensor AdamW moments m and v are cudaMalloc'ed before training. Each step's
// activations (every layer's output, logits included) are allocated with cudaMallocAsync on
// the compute stream during forward and released with cudaFreeAsync at the end of backward;
// the loss scalar, the loss gradient and the gradients with respect to activations are
// stream-ordered scratch buffers (cudaMallocAsync / cudaFreeAsync as soon as consumed). The
// GEMMs are cublasSgemm on a handle bound to the compute stream with cublasSetStream (the
// handle's own default workspace belongs to cuBLAS). The simulated device is told not to
// compute GEMM results (they are still checked, launched and timed) so the run stays short.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        cudaError_t err_ = (call);                                                          \
        if (err_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__, __LINE__,               \
                    cudaGetErrorName(err_), cudaGetErrorString(err_));                      \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CUBLAS_CHECK(call)                                                                  \
    do {                                                                                    \
        cublasStatus_t st_ = (call);                                                        \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: cuBLAS error %s (%d)\n", __FILE__, __LINE__,            \
                    cublasGetStatusName(st_), (int)st_);                                    \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Device-memory ledger: every allocation and free of the program goes through here.
// ---------------------------------------------------------------------------------------
enum Purpose {
    P_WEIGHTS = 0,
    P_OPTIMIZER,
    P_GRADIENTS,
    P_ACTIVATIONS,
    P_TEMPORARY,
    P_FUNCTIONALITY,
    P_MIXED,
    P_COUNT
};
static const char* kPurposeNames[P_COUNT] = {"weights",   "optimizer",     "gradients", "activations",
                                             "temporary", "functionality", "mixed"};

enum Phase { PH_SETUP = 0, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char* kPhaseNames[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
    std::map<void*, std::pair<size_t, Purpose>> live;
    size_t live_by[P_COUNT] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[P_COUNT] = {0};
    Phase phase = PH_SETUP;
    int step = 0;  // 1-based step in progress, 0 in set-up
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
    bool oom = false;
    size_t oom_requested = 0;
    Purpose oom_purpose = P_TEMPORARY;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    size_t oom_live_total = 0;
    size_t oom_live_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void print_purpose_object(const size_t* by) {
    printf("{");
    for (int i = 0; i < P_COUNT; ++i) printf("%s\"%s\":%zu", i ? "," : "", kPurposeNames[i], by[i]);
    printf("}");
}

static void print_ledger() {
    const Ledger& L = g_ledger;
    printf("ledger {\"program\":\"c12_two_streams_async\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":",
           L.steps_done, L.forward_passes, L.params, L.peak_total);
    print_purpose_object(L.peak_by);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null");
    } else {
        int dom = 0;
        for (int i = 1; i < P_COUNT; ++i)
            if (L.oom_live_by[i] > L.oom_live_by[dom]) dom = i;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%zu,\"live_by_purpose\":",
               L.oom_requested, kPurposeNames[L.oom_purpose], kPhaseNames[L.oom_phase], L.oom_step,
               L.oom_live_total);
        print_purpose_object(L.oom_live_by);
        printf(",\"dominant\":\"%s\"}", kPurposeNames[dom]);
    }
    printf("}\n");
    fflush(stdout);
}

static void ledger_record_alloc(void* p, size_t bytes, Purpose purpose) {
    Ledger& L = g_ledger;
    L.live[p] = std::make_pair(bytes, purpose);
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak_total) {
        L.peak_total = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof(L.live_by));
    }
}

static void ledger_out_of_memory(size_t bytes, Purpose purpose, const char* what) {
    Ledger& L = g_ledger;
    L.oom = true;
    L.oom_requested = bytes;
    L.oom_purpose = purpose;
    L.oom_phase = L.phase;
    L.oom_step = L.step;
    L.oom_live_total = L.live_total;
    memcpy(L.oom_live_by, L.live_by, sizeof(L.live_by));
    fprintf(stderr, "out of device memory allocating %zu bytes for %s\n", bytes, what);
    print_ledger();
    exit(3);
}

static size_t ledger_record_free(void* p) {
    Ledger& L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "free of unknown device pointer %p\n", p);
        exit(1);
    }
    size_t bytes = it->second.first;
    L.live_by[it->second.second] -= bytes;
    L.live_total -= bytes;
    L.live.erase(it);
    return bytes;
}

template <typename T>
static T* device_alloc(size_t count, Purpose purpose, const char* what) {
    void* p = nullptr;
    size_t bytes = count * sizeof(T);
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        ledger_out_of_memory(bytes, purpose, what);
    }
    CUDA_CHECK(err);
    ledger_record_alloc(p, bytes, purpose);
    return static_cast<T*>(p);
}

template <typename T>
static T* device_alloc_async(size_t count, Purpose purpose, const char* what, cudaStream_t stream) {
    void* p = nullptr;
    size_t bytes = count * sizeof(T);
    cudaError_t err = cudaMallocAsync(&p, bytes, stream);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        ledger_out_of_memory(bytes, purpose, what);
    }
    CUDA_CHECK(err);
    ledger_record_alloc(p, bytes, purpose);
    return static_cast<T*>(p);
}

static void device_free(void* p) {
    if (!p) return;
    ledger_record_free(p);
    CUDA_CHECK(cudaFree(p));
}

static void device_free_async(void* p, cudaStream_t stream) {
    if (!p) return;
    ledger_record_free(p);
    CUDA_CHECK(cudaFreeAsync(p, stream));
}

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------
static const int kBatch = 256;
static const int kNumLayers = 3;
static const int kDims[kNumLayers + 1] = {1024, 1024, 1024, 1000};  // in, hidden x2, classes
static const int kSteps = 6;
static const int kNumBatches = kSteps;  // the pinned training set: one batch per step

struct AdamWConfig {
    float lr = 3e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.01f;
};

struct Tensor {
    float* data = nullptr;
    float* grad = nullptr;
    float* exp_avg = nullptr;     // AdamW m
    float* exp_avg_sq = nullptr;  // AdamW v
    size_t numel = 0;
};

struct Linear {
    int in = 0, out = 0;
    Tensor weight;  // [out x in], column-major (ld = out)
    Tensor bias;    // [out]
};

// Per-step activations (stream-ordered allocations on the compute stream).
struct StepActivations {
    const float* input = nullptr;        // [in x B], one of the two prefetch buffers
    const int* labels = nullptr;
    float* out[kNumLayers] = {nullptr};  // ReLU outputs, last = logits
};

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

// y[i, b] = act(y[i, b] + bias[i]) on a column-major [rows x cols] matrix.
__global__ void bias_act_kernel(float* __restrict__ y, const float* __restrict__ bias, int rows, int cols,
                                bool relu) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n = (size_t)rows * cols;
    if (idx >= n) return;
    float v = y[idx] + bias[idx % rows];
    y[idx] = relu ? fmaxf(v, 0.f) : v;
}

// db[j] = sum_b dy[j + b * rows]
__global__ void bias_grad_kernel(const float* __restrict__ dy, float* __restrict__ db, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= rows) return;
    float acc = 0.f;
    for (int b = 0; b < cols; ++b) acc += dy[(size_t)b * rows + j];
    db[j] = acc;
}

// dx[i] *= (y[i] > 0), y being the ReLU output.
__global__ void relu_backward_kernel(float* __restrict__ dx, const float* __restrict__ y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.f) dx[i] = 0.f;
}

template <int BLOCK>
__device__ float block_reduce(float v, float* smem, bool is_max) {
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = (threadIdx.x < BLOCK / 32) ? smem[threadIdx.x] : (is_max ? -INFINITY : 0.f);
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_xor_sync(0xffffffffu, v, off);
            v = is_max ? fmaxf(v, o) : v + o;
        }
    if (threadIdx.x == 0) smem[0] = v;
    __syncthreads();
    float r = smem[0];
    __syncthreads();
    return r;
}

// Softmax cross-entropy per column of logits [classes x batch]:
// dlogits = (softmax - onehot) / batch, *loss += -log p[label] / batch.
template <int BLOCK>
__global__ void softmax_xent_kernel(const float* __restrict__ logits, const int* __restrict__ labels,
                                    float* __restrict__ dlogits, float* __restrict__ loss, int classes,
                                    int batch) {
    __shared__ float smem[BLOCK / 32];
    int b = blockIdx.x;
    const float* col = logits + (size_t)b * classes;
    float* dcol = dlogits + (size_t)b * classes;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += BLOCK) mx = fmaxf(mx, col[c]);
    mx = block_reduce<BLOCK>(mx, smem, true);
    float s = 0.f;
    for (int c = threadIdx.x; c < classes; c += BLOCK) s += __expf(col[c] - mx);
    s = block_reduce<BLOCK>(s, smem, false);
    int label = labels[b];
    float inv_batch = 1.f / batch;
    for (int c = threadIdx.x; c < classes; c += BLOCK) {
        float p = __expf(col[c] - mx) / s;
        dcol[c] = (p - (c == label ? 1.f : 0.f)) * inv_batch;
    }
    if (threadIdx.x == 0) atomicAdd(loss, -(col[label] - mx - logf(s)) * inv_batch);
}

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, size_t n, float lr, float beta1, float beta2, float eps,
                             float weight_decay, float bias_corr1, float bias_corr2_sqrt) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    float mi = beta1 * m[i] + (1.f - beta1) * gi;
    float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float w = p[i] * (1.f - lr * weight_decay);
    p[i] = w - lr * (mi / bias_corr1) / (sqrtf(vi) / bias_corr2_sqrt + eps);
}

// ---------------------------------------------------------------------------------------
// Host helpers
// ---------------------------------------------------------------------------------------
struct Lcg {
    uint64_t state;
    explicit Lcg(uint64_t seed) : state(seed) {}
    uint32_t next_u32() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (uint32_t)(state >> 33);
    }
    float uniform() { return (next_u32() & 0xffffff) / 16777216.f; }
    float symmetric(float bound) { return (2.f * uniform() - 1.f) * bound; }
};

static unsigned blocks_for(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

static void init_tensor(Tensor& t, size_t numel) {
    t.numel = numel;
    t.data = device_alloc<float>(numel, P_WEIGHTS, "parameter");
    g_ledger.params += (long long)numel;
}

static void init_training_state(Tensor& t, cudaStream_t stream) {
    t.grad = device_alloc<float>(t.numel, P_GRADIENTS, "gradient");
    t.exp_avg = device_alloc<float>(t.numel, P_OPTIMIZER, "adamw exp_avg");
    t.exp_avg_sq = device_alloc<float>(t.numel, P_OPTIMIZER, "adamw exp_avg_sq");
    CUDA_CHECK(cudaMemsetAsync(t.exp_avg, 0, t.numel * sizeof(float), stream));
    CUDA_CHECK(cudaMemsetAsync(t.exp_avg_sq, 0, t.numel * sizeof(float), stream));
}

static void free_tensor(Tensor& t) {
    device_free(t.exp_avg_sq);
    device_free(t.exp_avg);
    device_free(t.grad);
    device_free(t.data);
}

static void sgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                  const float* A, int lda, const float* B, int ldb, float* C, int ldc, float beta = 0.f) {
    const float alpha = 1.f;
    CUBLAS_CHECK(cublasSgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc));
}

// ---------------------------------------------------------------------------------------
// Training
// ---------------------------------------------------------------------------------------
struct Trainer {
    Linear layers[kNumLayers];
    AdamWConfig cfg;
    cublasHandle_t blas = nullptr;
    cudaStream_t compute = nullptr;
    cudaStream_t copy = nullptr;

    // Pinned training set and the double-buffered device copies.
    float* h_inputs = nullptr;  // [kNumBatches][in x B]
    int* h_labels = nullptr;    // [kNumBatches][B]
    float* h_loss = nullptr;    // pinned loss readback
    float* d_input[2] = {nullptr, nullptr};
    int* d_labels[2] = {nullptr, nullptr};
    cudaEvent_t copy_done[2];
    cudaEvent_t buffer_free[2];
    bool buffer_used[2] = {false, false};

    void setup() {
        CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
        CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
        CUBLAS_CHECK(cublasCreate(&blas));
        CUBLAS_CHECK(cublasSetStream(blas, compute));
        for (int i = 0; i < 2; ++i) {
            CUDA_CHECK(cudaEventCreateWithFlags(&copy_done[i], cudaEventDisableTiming));
            CUDA_CHECK(cudaEventCreateWithFlags(&buffer_free[i], cudaEventDisableTiming));
        }

        // Model parameters.
        Lcg rng(42);
        for (int l = 0; l < kNumLayers; ++l) {
            Linear& lin = layers[l];
            lin.in = kDims[l];
            lin.out = kDims[l + 1];
            init_tensor(lin.weight, (size_t)lin.out * lin.in);
            init_tensor(lin.bias, (size_t)lin.out);
            float* h_w = nullptr;
            CUDA_CHECK(cudaMallocHost(&h_w, lin.weight.numel * sizeof(float)));
            float bound = 1.f / sqrtf((float)lin.in);
            for (size_t i = 0; i < lin.weight.numel; ++i) h_w[i] = rng.symmetric(bound);
            CUDA_CHECK(cudaMemcpyAsync(lin.weight.data, h_w, lin.weight.numel * sizeof(float),
                                       cudaMemcpyHostToDevice, compute));
            CUDA_CHECK(cudaMemsetAsync(lin.bias.data, 0, lin.bias.numel * sizeof(float), compute));
            CUDA_CHECK(cudaStreamSynchronize(compute));
            CUDA_CHECK(cudaFreeHost(h_w));
        }
        // Gradients and AdamW state, allocated once before training.
        for (int l = 0; l < kNumLayers; ++l) {
            init_training_state(layers[l].weight, compute);
            init_training_state(layers[l].bias, compute);
        }

        // Double-buffered device input batches and labels.
        for (int i = 0; i < 2; ++i) {
            d_input[i] = device_alloc<float>((size_t)kDims[0] * kBatch, P_ACTIVATIONS, "input buffer");
            d_labels[i] = device_alloc<int>(kBatch, P_ACTIVATIONS, "label buffer");
        }

        // Synthetic training set in pinned host memory.
        CUDA_CHECK(cudaMallocHost(&h_inputs, (size_t)kNumBatches * kDims[0] * kBatch * sizeof(float)));
        CUDA_CHECK(cudaMallocHost(&h_labels, (size_t)kNumBatches * kBatch * sizeof(int)));
        CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
        const int in = kDims[0], classes = kDims[kNumLayers];
        for (int bt = 0; bt < kNumBatches; ++bt) {
            for (int b = 0; b < kBatch; ++b) {
                int label = (int)(rng.next_u32() % classes);
                h_labels[(size_t)bt * kBatch + b] = label;
                float* x = h_inputs + ((size_t)bt * kBatch + b) * in;
                for (int i = 0; i < in; ++i) x[i] = rng.symmetric(1.f) + (i % classes == label ? 1.5f : 0.f);
            }
        }
        CUDA_CHECK(cudaStreamSynchronize(compute));
    }

    // Copy stream: bring batch `batch` into device buffer `buf` once the compute stream is
    // done reading that buffer.
    void prefetch(int batch, int buf) {
        if (buffer_used[buf]) CUDA_CHECK(cudaStreamWaitEvent(copy, buffer_free[buf], 0));
        CUDA_CHECK(cudaMemcpyAsync(d_input[buf], h_inputs + (size_t)batch * kDims[0] * kBatch,
                                   (size_t)kDims[0] * kBatch * sizeof(float), cudaMemcpyHostToDevice, copy));
        CUDA_CHECK(cudaMemcpyAsync(d_labels[buf], h_labels + (size_t)batch * kBatch, kBatch * sizeof(int),
                                   cudaMemcpyHostToDevice, copy));
        CUDA_CHECK(cudaEventRecord(copy_done[buf], copy));
    }

    void forward(StepActivations& acts) {
        g_ledger.phase = PH_FORWARD;
        const float* x = acts.input;
        for (int l = 0; l < kNumLayers; ++l) {
            Linear& lin = layers[l];
            float* y = device_alloc_async<float>((size_t)lin.out * kBatch, P_ACTIVATIONS, "activation", compute);
            sgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, lin.out, kBatch, lin.in, lin.weight.data, lin.out, x, lin.in, y,
                  lin.out);
            size_t n = (size_t)lin.out * kBatch;
            bias_act_kernel<<<blocks_for(n, 256), 256, 0, compute>>>(y, lin.bias.data, lin.out, kBatch,
                                                                      l + 1 < kNumLayers);
            KERNEL_CHECK();
            acts.out[l] = y;
            x = y;
        }
        g_ledger.forward_passes++;
    }

    // Loss and its gradient wrt the logits; the loss goes to pinned host memory.
    float* loss_and_grad(const StepActivations& acts) {
        g_ledger.phase = PH_BACKWARD;
        const int classes = kDims[kNumLayers];
        float* d_loss = device_alloc_async<float>(1, P_TEMPORARY, "loss", compute);
        float* dlogits = device_alloc_async<float>((size_t)classes * kBatch, P_TEMPORARY, "dlogits", compute);
        CUDA_CHECK(cudaMemsetAsync(d_loss, 0, sizeof(float), compute));
        softmax_xent_kernel<256><<<kBatch, 256, 0, compute>>>(acts.out[kNumLayers - 1], acts.labels, dlogits,
                                                              d_loss, classes, kBatch);
        KERNEL_CHECK();
        CUDA_CHECK(cudaMemcpyAsync(h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost, compute));
        device_free_async(d_loss, compute);
        return dlogits;
    }

    void backward(StepActivations& acts, float* dlogits, int buf) {
        g_ledger.phase = PH_BACKWARD;
        float* dy = dlogits;
        for (int l = kNumLayers - 1; l >= 0; --l) {
            Linear& lin = layers[l];
            const float* x = l > 0 ? acts.out[l - 1] : acts.input;
            // dW = dy * x^T, db = rowsum(dy)
            sgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, lin.out, lin.in, kBatch, dy, lin.out, x, lin.in,
                  lin.weight.grad, lin.out);
            bias_grad_kernel<<<blocks_for(lin.out, 256), 256, 0, compute>>>(dy, lin.bias.grad, lin.out, kBatch);
            KERNEL_CHECK();
            float* dx = nullptr;
            if (l > 0) {
                // dx = W^T * dy, masked by the ReLU that produced x
                dx = device_alloc_async<float>((size_t)lin.in * kBatch, P_TEMPORARY, "dx", compute);
                sgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, lin.in, kBatch, lin.out, lin.weight.data, lin.out, dy,
                      lin.out, dx, lin.in);
                size_t n = (size_t)lin.in * kBatch;
                relu_backward_kernel<<<blocks_for(n, 256), 256, 0, compute>>>(dx, x, n);
                KERNEL_CHECK();
            }
            device_free_async(dy, compute);
            dy = dx;
        }
        // The input buffer has been read for the last time: the copy stream may refill it.
        CUDA_CHECK(cudaEventRecord(buffer_free[buf], compute));
        buffer_used[buf] = true;
        // End of backward: release this step's activations.
        for (int l = kNumLayers - 1; l >= 0; --l) {
            device_free_async(acts.out[l], compute);
            acts.out[l] = nullptr;
        }
    }

    void adamw_step(int step) {
        g_ledger.phase = PH_OPTIMIZER;
        float bc1 = 1.f - powf(cfg.beta1, (float)step);
        float bc2_sqrt = sqrtf(1.f - powf(cfg.beta2, (float)step));
        for (int l = 0; l < kNumLayers; ++l) {
            Tensor* ts[2] = {&layers[l].weight, &layers[l].bias};
            for (Tensor* t : ts) {
                adamw_kernel<<<blocks_for(t->numel, 256), 256, 0, compute>>>(
                    t->data, t->grad, t->exp_avg, t->exp_avg_sq, t->numel, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps,
                    cfg.weight_decay, bc1, bc2_sqrt);
                KERNEL_CHECK();
            }
        }
    }

    void train() {
        prefetch(0, 0);
        for (int s = 0; s < kSteps; ++s) {
            g_ledger.step = s + 1;
            g_ledger.phase = PH_STEP_START;
            int buf = s % 2;
            // Compute waits for this step's batch; meanwhile the next one is copied.
            CUDA_CHECK(cudaStreamWaitEvent(compute, copy_done[buf], 0));
            if (s + 1 < kSteps) prefetch((s + 1) % kNumBatches, (s + 1) % 2);

            StepActivations acts;
            acts.input = d_input[buf];
            acts.labels = d_labels[buf];
            forward(acts);
            float* dlogits = loss_and_grad(acts);
            backward(acts, dlogits, buf);
            adamw_step(s + 1);
            CUDA_CHECK(cudaStreamSynchronize(compute));
            g_ledger.steps_done++;
            printf("step %d loss %.6f\n", s + 1, *h_loss);
        }
        CUDA_CHECK(cudaStreamSynchronize(copy));
        CUDA_CHECK(cudaStreamSynchronize(compute));
    }

    void teardown() {
        for (int i = 1; i >= 0; --i) {
            device_free(d_labels[i]);
            device_free(d_input[i]);
        }
        for (int l = kNumLayers - 1; l >= 0; --l) {
            free_tensor(layers[l].bias);
            free_tensor(layers[l].weight);
        }
        CUDA_CHECK(cudaFreeHost(h_loss));
        CUDA_CHECK(cudaFreeHost(h_labels));
        CUDA_CHECK(cudaFreeHost(h_inputs));
        for (int i = 0; i < 2; ++i) {
            CUDA_CHECK(cudaEventDestroy(copy_done[i]));
            CUDA_CHECK(cudaEventDestroy(buffer_free[i]));
        }
        CUBLAS_CHECK(cublasDestroy(blas));
        CUDA_CHECK(cudaStreamDestroy(copy));
        CUDA_CHECK(cudaStreamDestroy(compute));
    }
};

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    static Trainer trainer;
    trainer.setup();
    printf("two-stream MLP: %lld parameters, batch %d, %d steps\n", g_ledger.params, kBatch, kSteps);
    trainer.train();
    trainer.teardown();
    if (g_ledger.live_total != 0) {
        fprintf(stderr, "leak: %zu bytes still live\n", g_ledger.live_total);
        return 1;
    }
    print_ledger();
    return 0;
}

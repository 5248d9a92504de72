// h14_sgd_plain_nvtx_checkpoint: fp32 trainer of an 8-layer MLP (1024 wide, GELU between
// layers, linear output layer, MSE loss) using cuBLAS SGEMM, trained with plain SGD: no
// momentum, no weight decay, so there is no optimizer state at all. Every training step is
// wrapped in an NVTX "train_step" range, with nested "forward", "backward" and
// "optimizer.step" ranges. Activation checkpointing over segments of two layers: forward
// runs without keeping intermediates and only every other layer's input is kept (the
// input batch for layer 0, and checkpoints for layers 2, 4 and 6, allocated in forward
// and freed in backward once their segment is done); backward recomputes the other
// layers' activations (pre-activations and GELU outputs) from the checkpoint into buffers
// it allocates and frees itself. Parameter gradients are persistent, one cudaMalloc per
// parameter tensor, zeroed with cudaMemset at the start of each step and accumulated by
// the backward GEMMs. Runs 5 steps and prints a ledger of its device allocations.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------
// error checks

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                    cublasGetStatusString(st_));                                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// allocation ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

struct Ledger {
    std::map<void*, std::pair<size_t, Purpose>> live;
    size_t live_by[P_COUNT] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[P_COUNT] = {0};
    const char* phase = "setup";
    int step = 0;  // 1-based step in progress, 0 in set-up
};
static Ledger g_ledger;

static const int kSteps = 5;
static long long g_params = 0;
static int g_steps_done = 0;
static int g_forward_passes = 0;

static void print_split(const size_t* by) {
    printf("{");
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], by[p]);
    printf("}");
}

static void print_ledger(size_t oom_bytes, Purpose oom_purpose) {
    printf("ledger {\"program\":\"h14_sgd_plain_nvtx_checkpoint\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"sgd\",\"peak_bytes\":%zu,\"peak_by_purpose\":",
           g_steps_done, g_forward_passes, g_params, g_ledger.peak_total);
    print_split(g_ledger.peak_by);
    printf(",\"pools_at_peak\":[],\"oom\":");
    if (oom_bytes == 0) {
        printf("null");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (g_ledger.live_by[p] > g_ledger.live_by[dom]) dom = p;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%zu,\"live_by_purpose\":",
               oom_bytes, kPurposeName[oom_purpose], g_ledger.phase, g_ledger.step,
               g_ledger.live_total);
        print_split(g_ledger.live_by);
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
        fprintf(stderr, "out of memory allocating %zu bytes (%s) in %s, step %d\n", bytes,
                kPurposeName[purpose], g_ledger.phase, g_ledger.step);
        print_ledger(bytes, purpose);
        exit(3);
    }
    CUDA_CHECK(err);
    g_ledger.live[p] = {bytes, purpose};
    g_ledger.live_by[purpose] += bytes;
    g_ledger.live_total += bytes;
    if (g_ledger.live_total > g_ledger.peak_total) {
        g_ledger.peak_total = g_ledger.live_total;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return static_cast<T*>(p);
}

static void dev_free(void* p) {
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
// kernels (column-major activations: [features x batch], leading dimension = features)

__device__ __forceinline__ float gelu_f(float z) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    float t = tanhf(k * (z + 0.044715f * z * z * z));
    return 0.5f * z * (1.0f + t);
}

__device__ __forceinline__ float gelu_grad_f(float z) {
    const float k = 0.7978845608028654f;
    float t = tanhf(k * (z + 0.044715f * z * z * z));
    return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * z * z);
}

// z[:, j] += bias; out = gelu(z)   (z keeps the pre-activation)
__global__ void bias_gelu_kernel(float* z, const float* bias, float* out, int rows, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols) return;
    float v = z[idx] + bias[idx % rows];
    z[idx] = v;
    out[idx] = gelu_f(v);
}

__global__ void bias_add_kernel(float* z, const float* bias, int rows, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols) return;
    z[idx] += bias[idx % rows];
}

// dz = dout * gelu'(z)
__global__ void gelu_backward_kernel(const float* dout, const float* z, float* dz, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    dz[idx] = dout[idx] * gelu_grad_f(z[idx]);
}

// loss += sum((y - t)^2) / n
__global__ void mse_loss_kernel(const float* y, const float* t, float* loss, int n) {
    __shared__ float partial[256];
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float d = 0.0f;
    if (idx < n) {
        d = y[idx] - t[idx];
        d = d * d / (float)n;
    }
    partial[threadIdx.x] = d;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, partial[0]);
}

__global__ void mse_grad_kernel(const float* y, const float* t, float* dy, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    dy[idx] = 2.0f * (y[idx] - t[idx]) / (float)n;
}

// db[r] += sum_j dz[r, j]
__global__ void bias_grad_kernel(const float* dz, float* db, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int j = 0; j < cols; ++j) acc += dz[(size_t)j * rows + r];
    db[r] += acc;
}

__global__ void sgd_kernel(float* w, const float* g, float lr, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    w[idx] -= lr * g[idx];
}

static inline unsigned blocks_for(size_t n, unsigned threads = 256) {
    return (unsigned)((n + threads - 1) / threads);
}

// ---------------------------------------------------------------------------------------
// model

static const int kLayers = 8;
static const int kWidth = 1024;
static const int kBatch = 256;
static const int kSegments = kLayers / 2;  // checkpoint every other layer's input
static const float kLr = 1e-3f;

struct Linear {
    float* w;   // [out x in], column-major, ld = out
    float* b;   // [out]
    float* dw;
    float* db;
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float rand_uniform() {  // deterministic LCG in [-1, 1)
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) & 0xFFFFFF) / (float)0x800000 - 1.0f;
}

// Z[out x batch] = W[out x in] * X[in x batch]
static void gemm_forward(cublasHandle_t h, const Linear& L, const float* x, float* z) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one, L.w,
                             kWidth, x, kWidth, &zero, z, kWidth));
}

// dW += dZ * X^T ; db += rowsum(dZ)
static void gemm_weight_grad(cublasHandle_t h, const Linear& L, const float* dz,
                             const float* x) {
    const float one = 1.0f;
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, kWidth, kWidth, kBatch, &one, dz,
                             kWidth, x, kWidth, &one, L.dw, kWidth));
    bias_grad_kernel<<<blocks_for(kWidth), 256>>>(dz, L.db, kWidth, kBatch);
    KERNEL_CHECK();
}

// dX = W^T * dZ
static void gemm_input_grad(cublasHandle_t h, const Linear& L, const float* dz, float* dx) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one, L.w,
                             kWidth, dz, kWidth, &zero, dx, kWidth));
}

int main() {
    const size_t act_elems = (size_t)kWidth * kBatch;
    const size_t w_elems = (size_t)kWidth * kWidth;
    const int act_n = (int)act_elems;

    CUDA_CHECK(cudaSetDevice(0));
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    // ---- set-up: parameters and their persistent gradients
    g_ledger.phase = "setup";
    std::vector<Linear> layers(kLayers);
    {
        std::vector<float> host_w(w_elems), host_b(kWidth);
        const float scale = 1.0f / sqrtf((float)kWidth);
        for (int l = 0; l < kLayers; ++l) {
            Linear& L = layers[l];
            L.w = dev_alloc<float>(w_elems, P_WEIGHTS);
            L.b = dev_alloc<float>(kWidth, P_WEIGHTS);
            for (auto& v : host_w) v = rand_uniform() * scale;
            for (auto& v : host_b) v = rand_uniform() * scale;
            CUDA_CHECK(cudaMemcpy(L.w, host_w.data(), w_elems * sizeof(float),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(L.b, host_b.data(), kWidth * sizeof(float),
                                  cudaMemcpyHostToDevice));
            g_params += (long long)w_elems + kWidth;
        }
        for (int l = 0; l < kLayers; ++l) {
            layers[l].dw = dev_alloc<float>(w_elems, P_GRADIENTS);
            layers[l].db = dev_alloc<float>(kWidth, P_GRADIENTS);
        }
    }

    std::vector<float> host_x(act_elems), host_t(act_elems);

    for (int step = 1; step <= kSteps; ++step) {
        g_ledger.step = step;
        nvtxRangePushA("train_step");

        // ---- step start: zero gradients, upload the batch
        g_ledger.phase = "step_start";
        for (int l = 0; l < kLayers; ++l) {
            CUDA_CHECK(cudaMemset(layers[l].dw, 0, w_elems * sizeof(float)));
            CUDA_CHECK(cudaMemset(layers[l].db, 0, kWidth * sizeof(float)));
        }
        for (size_t i = 0; i < act_elems; ++i) {
            host_x[i] = rand_uniform();
            host_t[i] = 0.5f * rand_uniform();
        }
        float* input = dev_alloc<float>(act_elems, P_ACTIVATIONS);
        float* labels = dev_alloc<float>(act_elems, P_ACTIVATIONS);
        CUDA_CHECK(cudaMemcpy(input, host_x.data(), act_elems * sizeof(float),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(labels, host_t.data(), act_elems * sizeof(float),
                              cudaMemcpyHostToDevice));

        // ckpt[s] is the input of layer 2*s; ckpt[0] is the batch itself
        float* ckpt[kSegments] = {input, nullptr, nullptr, nullptr};

        // ---- forward: no intermediates kept except the segment checkpoints
        g_ledger.phase = "forward";
        nvtxRangePushA("forward");
        float host_loss = 0.0f;
        for (int s = 0; s < kSegments; ++s) {
            const Linear& La = layers[2 * s];
            const Linear& Lb = layers[2 * s + 1];
            float* za = dev_alloc<float>(act_elems, P_TEMPORARY);
            gemm_forward(blas, La, ckpt[s], za);
            float* h = dev_alloc<float>(act_elems, P_TEMPORARY);
            bias_gelu_kernel<<<blocks_for(act_elems), 256>>>(za, La.b, h, kWidth, kBatch);
            KERNEL_CHECK();
            dev_free(za);
            float* zb = dev_alloc<float>(act_elems, P_TEMPORARY);
            gemm_forward(blas, Lb, h, zb);
            dev_free(h);
            if (s + 1 < kSegments) {
                ckpt[s + 1] = dev_alloc<float>(act_elems, P_ACTIVATIONS);
                bias_gelu_kernel<<<blocks_for(act_elems), 256>>>(zb, Lb.b, ckpt[s + 1], kWidth,
                                                                 kBatch);
                KERNEL_CHECK();
                dev_free(zb);
            } else {
                // output layer: linear, then the loss
                bias_add_kernel<<<blocks_for(act_elems), 256>>>(zb, Lb.b, kWidth, kBatch);
                KERNEL_CHECK();
                float* loss = dev_alloc<float>(1, P_TEMPORARY);
                CUDA_CHECK(cudaMemset(loss, 0, sizeof(float)));
                mse_loss_kernel<<<blocks_for(act_elems), 256>>>(zb, labels, loss, act_n);
                KERNEL_CHECK();
                CUDA_CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
                dev_free(loss);
                dev_free(zb);
            }
        }
        nvtxRangePop();
        ++g_forward_passes;

        // ---- backward: recompute each segment from its checkpoint, then backprop it
        g_ledger.phase = "backward";
        nvtxRangePushA("backward");
        float* dout = nullptr;  // gradient w.r.t. the current segment's output
        for (int s = kSegments - 1; s >= 0; --s) {
            const Linear& La = layers[2 * s];
            const Linear& Lb = layers[2 * s + 1];
            const bool last = (s == kSegments - 1);

            // recompute the segment's activations
            float* za = dev_alloc<float>(act_elems, P_TEMPORARY);
            gemm_forward(blas, La, ckpt[s], za);
            float* h = dev_alloc<float>(act_elems, P_TEMPORARY);
            bias_gelu_kernel<<<blocks_for(act_elems), 256>>>(za, La.b, h, kWidth, kBatch);
            KERNEL_CHECK();
            float* zb = dev_alloc<float>(act_elems, P_TEMPORARY);
            gemm_forward(blas, Lb, h, zb);
            bias_add_kernel<<<blocks_for(act_elems), 256>>>(zb, Lb.b, kWidth, kBatch);
            KERNEL_CHECK();

            // layer 2s+1
            float* dzb = dev_alloc<float>(act_elems, P_TEMPORARY);
            if (last) {
                mse_grad_kernel<<<blocks_for(act_elems), 256>>>(zb, labels, dzb, act_n);
            } else {
                gelu_backward_kernel<<<blocks_for(act_elems), 256>>>(dout, zb, dzb, act_n);
            }
            KERNEL_CHECK();
            dev_free(zb);
            dev_free(dout);
            dout = nullptr;
            gemm_weight_grad(blas, Lb, dzb, h);
            float* dh = dev_alloc<float>(act_elems, P_TEMPORARY);
            gemm_input_grad(blas, Lb, dzb, dh);
            dev_free(dzb);
            dev_free(h);

            // layer 2s
            float* dza = dev_alloc<float>(act_elems, P_TEMPORARY);
            gelu_backward_kernel<<<blocks_for(act_elems), 256>>>(dh, za, dza, act_n);
            KERNEL_CHECK();
            dev_free(dh);
            dev_free(za);
            gemm_weight_grad(blas, La, dza, ckpt[s]);
            if (s > 0) {
                dout = dev_alloc<float>(act_elems, P_TEMPORARY);
                gemm_input_grad(blas, La, dza, dout);
                dev_free(ckpt[s]);  // checkpoint no longer needed
                ckpt[s] = nullptr;
            }
            dev_free(dza);
        }
        dev_free(input);
        dev_free(labels);
        nvtxRangePop();

        // ---- optimizer: plain SGD, no state
        g_ledger.phase = "optimizer";
        nvtxRangePushA("optimizer.step");
        for (int l = 0; l < kLayers; ++l) {
            sgd_kernel<<<blocks_for(w_elems), 256>>>(layers[l].w, layers[l].dw, kLr,
                                                     (int)w_elems);
            KERNEL_CHECK();
            sgd_kernel<<<blocks_for(kWidth), 256>>>(layers[l].b, layers[l].db, kLr, kWidth);
            KERNEL_CHECK();
        }
        nvtxRangePop();
        CUDA_CHECK(cudaDeviceSynchronize());
        nvtxRangePop();  // train_step

        ++g_steps_done;
        printf("step %d loss %.6f\n", step, host_loss);
    }

    // ---- tear-down
    g_ledger.phase = "setup";
    for (int l = 0; l < kLayers; ++l) {
        dev_free(layers[l].w);
        dev_free(layers[l].b);
        dev_free(layers[l].dw);
        dev_free(layers[l].db);
    }
    CUBLAS_CHECK(cublasDestroy(blas));

    print_ledger(0, P_WEIGHTS);
    return 0;
}

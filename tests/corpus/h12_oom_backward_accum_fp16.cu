// h12_oom_backward_accum_fp16
//
// Mixed-precision (fp16) training of a 4-layer MLP (512 -> 1024 -> 1024 -> 1024 -> 512,
// ReLU between layers, no bias, MSE loss) with fp32 master weights. The fp32 master
// weights live in one cudaMalloc and the fp16 working weights in another; at the start of
// every step a cast kernel refreshes the fp16 copy from the master. Dynamic loss scaling
// keeps a device scale scalar and a device overflow flag: the loss gradient is multiplied
// by the scale, the accumulated gradients are unscaled and checked for inf/NaN before the
// update, an overflow skips the update and halves the scale, and the scale doubles after a
// run of clean steps. Gradients are accumulated over 4 micro-batches into persistent fp32
// gradient buffers (one per layer) that are zeroed at the start of each step; the optimizer
// is SGD with momentum (one fp32 momentum buffer per layer). In each micro-batch the input
// batch and its targets are uploaded, every layer's output activation is cudaMalloc'd in
// forward and freed in backward once it is no longer needed, and backward cudaMallocs and
// frees the gradients with respect to the activations; all GEMMs are cublasGemmEx with fp16
// inputs (weight gradients accumulate straight into the fp32 buffers). The micro-batch size
// starts at 64 and doubles at every step, until a cudaMalloc in backward fails on a 112 MiB
// device (step 7, micro-batch size 4096, at the first activation-gradient buffer); the
// program then prints its ledger and exits with status 3.
//
// corpus-env: ANATOMIST_SIM_MEMORY=112MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------

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
// Memory ledger
// ---------------------------------------------------------------------------------------

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY, P_FUNCTIONALITY,
               P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights",   "optimizer",     "gradients", "activations",
                                            "temporary", "functionality", "mixed"};

enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char *kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Block {
    void *ptr;
    size_t bytes;
    Purpose purpose;
};

struct Ledger {
    std::vector<Block> blocks;
    size_t live[P_COUNT] = {};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_split[P_COUNT] = {};

    Phase phase = PH_SETUP;
    int step = 0;  // 1-based step in progress, 0 in set-up

    bool oom = false;
    size_t oom_requested = 0;
    Purpose oom_purpose = P_TEMPORARY;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    size_t oom_live_total = 0;
    size_t oom_live[P_COUNT] = {};
};
static Ledger g_ledger;

struct RunInfo {
    int steps = 0;
    int forward_passes = 0;
    long long params = 0;
};
static RunInfo g_run;

static const int kMicroBatchesPerStep = 4;

static void print_ledger() {
    Ledger &L = g_ledger;
    printf("ledger {\"program\":\"h12_oom_backward_accum_fp16\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":%d,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"fp16\",\"master_weights\":true,\"optimizer\":\"sgd_momentum\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           g_run.steps, kMicroBatchesPerStep, g_run.forward_passes, g_run.params, L.peak_total);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], L.peak_split[p]);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null}\n");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (L.oom_live[p] > L.oom_live[dom]) dom = p;
        printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%zu,\"live_by_purpose\":{",
               L.oom_requested, kPurposeName[L.oom_purpose], kPhaseName[L.oom_phase], L.oom_step,
               L.oom_live_total);
        for (int p = 0; p < P_COUNT; ++p)
            printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], L.oom_live[p]);
        printf("},\"dominant\":\"%s\"}}\n", kPurposeName[dom]);
    }
    fflush(stdout);
}

// Allocate device memory and book it. An out-of-memory failure prints the ledger and ends
// the program with status 3; any other failure is fatal (status 1).
template <typename T>
static T *dev_alloc(size_t bytes, Purpose purpose, const char *what) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        Ledger &L = g_ledger;
        L.oom = true;
        L.oom_requested = bytes;
        L.oom_purpose = purpose;
        L.oom_phase = L.phase;
        L.oom_step = L.step;
        L.oom_live_total = L.live_total;
        memcpy(L.oom_live, L.live, sizeof(L.live));
        fprintf(stderr, "out of memory: cudaMalloc(%zu) for %s (step %d, %s)\n", bytes, what,
                L.step, kPhaseName[L.phase]);
        print_ledger();
        exit(3);
    }
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what, cudaGetErrorString(err));
        exit(1);
    }
    Ledger &L = g_ledger;
    L.blocks.push_back({p, bytes, purpose});
    L.live[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak_total) {
        L.peak_total = L.live_total;
        memcpy(L.peak_split, L.live, sizeof(L.live));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    Ledger &L = g_ledger;
    for (size_t i = 0; i < L.blocks.size(); ++i) {
        if (L.blocks[i].ptr == p) {
            CUDA_CHECK(cudaFree(p));
            L.live[L.blocks[i].purpose] -= L.blocks[i].bytes;
            L.live_total -= L.blocks[i].bytes;
            L.blocks.erase(L.blocks.begin() + (long)i);
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

__global__ void cast_master_to_half(const float *__restrict__ master, __half *__restrict__ working,
                                    size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        working[i] = __float2half(master[i]);
}

__global__ void relu_forward(__half *__restrict__ x, size_t n) {
    const __half zero = __float2half(0.0f);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (__hlt(x[i], zero)) x[i] = zero;
}

// dY = loss_scale * d(mean squared error)/dY
__global__ void mse_loss_grad_scaled(const __half *__restrict__ y, const __half *__restrict__ target,
                                     const float *__restrict__ loss_scale, __half *__restrict__ dy,
                                     size_t n, float inv_count) {
    const float s = *loss_scale;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float diff = __half2float(y[i]) - __half2float(target[i]);
        dy[i] = __float2half(2.0f * diff * inv_count * s);
    }
}

// dY *= (Y > 0), Y being the ReLU output kept from forward.
__global__ void relu_backward(__half *__restrict__ dy, const __half *__restrict__ y, size_t n) {
    const __half zero = __float2half(0.0f);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!__hgt(y[i], zero)) dy[i] = zero;
}

// g = g / (loss_scale * accum); flag any inf/NaN.
__global__ void unscale_and_check(float *__restrict__ grad, size_t n, const float *__restrict__ loss_scale,
                                  float inv_accum, int *__restrict__ found_inf) {
    const float inv = inv_accum / *loss_scale;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grad[i] * inv;
        if (!isfinite(g)) *found_inf = 1;
        grad[i] = g;
    }
}

__global__ void sgd_momentum_update(float *__restrict__ w, float *__restrict__ mom,
                                    const float *__restrict__ grad, size_t n, float lr, float momentum,
                                    float weight_decay) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = grad[i] + weight_decay * w[i];
        float m = momentum * mom[i] + g;
        mom[i] = m;
        w[i] -= lr * m;
    }
}

__global__ void update_loss_scale(float *loss_scale, float factor, float min_scale) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *loss_scale = fmaxf(*loss_scale * factor, min_scale);
}

static unsigned grid_for(size_t n, unsigned block) {
    size_t g = (n + block - 1) / block;
    if (g > 2048) g = 2048;
    if (g == 0) g = 1;
    return (unsigned)g;
}

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------

static const int kLayers = 4;
static const int kDims[kLayers + 1] = {512, 1024, 1024, 1024, 512};

struct Layer {
    int in, out;
    size_t offset;    // element offset in the parameter arenas
    float *master;    // fp32 master weights (out x in, column-major)
    __half *working;  // fp16 working copy
    float *grad;      // fp32 gradient accumulator
    float *momentum;  // fp32 momentum
};

struct Model {
    Layer layers[kLayers];
    size_t n_params = 0;
    float *master_all = nullptr;
    __half *working_all = nullptr;
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float rng_uniform() {  // deterministic xorshift, in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) & 0xffffff) / (float)0x800000 - 1.0f;
}

static void gemm_f16(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                     const __half *A, int lda, const __half *B, int ldb, float beta, void *C,
                     cudaDataType_t ctype, int ldc) {
    const float alpha = 1.0f;
    CUBLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &alpha, A, CUDA_R_16F, lda, B, CUDA_R_16F, ldb, &beta,
                              C, ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

int main() {
    const int initial_micro_batch = 64;
    const float lr = 0.01f, momentum = 0.9f, weight_decay = 1e-4f;
    const float initial_loss_scale = 65536.0f;
    const int scale_growth_interval = 2000;
    const int max_steps = 12;

    // ---------------- set-up ----------------
    g_ledger.phase = PH_SETUP;
    CUDA_CHECK(cudaSetDevice(0));
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    Model model;
    for (int l = 0; l < kLayers; ++l) {
        model.layers[l].in = kDims[l];
        model.layers[l].out = kDims[l + 1];
        model.layers[l].offset = model.n_params;
        model.n_params += (size_t)kDims[l] * kDims[l + 1];
    }
    g_run.params = (long long)model.n_params;

    model.master_all = dev_alloc<float>(model.n_params * sizeof(float), P_WEIGHTS, "fp32 master weights");
    model.working_all = dev_alloc<__half>(model.n_params * sizeof(__half), P_WEIGHTS, "fp16 working weights");
    for (int l = 0; l < kLayers; ++l) {
        Layer &ly = model.layers[l];
        ly.master = model.master_all + ly.offset;
        ly.working = model.working_all + ly.offset;
    }
    for (int l = 0; l < kLayers; ++l) {
        Layer &ly = model.layers[l];
        size_t n = (size_t)ly.in * ly.out;
        ly.grad = dev_alloc<float>(n * sizeof(float), P_GRADIENTS, "fp32 gradient accumulator");
    }
    for (int l = 0; l < kLayers; ++l) {
        Layer &ly = model.layers[l];
        size_t n = (size_t)ly.in * ly.out;
        ly.momentum = dev_alloc<float>(n * sizeof(float), P_OPTIMIZER, "momentum");
        CUDA_CHECK(cudaMemset(ly.momentum, 0, n * sizeof(float)));
    }
    float *d_loss_scale = dev_alloc<float>(sizeof(float), P_FUNCTIONALITY, "loss scale");
    int *d_found_inf = dev_alloc<int>(sizeof(int), P_FUNCTIONALITY, "overflow flag");
    CUDA_CHECK(cudaMemcpy(d_loss_scale, &initial_loss_scale, sizeof(float), cudaMemcpyHostToDevice));

    // Kaiming-uniform-ish initialisation on the host, one upload of the master weights.
    {
        std::vector<float> host_w(model.n_params);
        for (int l = 0; l < kLayers; ++l) {
            const Layer &ly = model.layers[l];
            float bound = sqrtf(6.0f / (float)ly.in);
            for (size_t i = 0; i < (size_t)ly.in * ly.out; ++i) host_w[ly.offset + i] = bound * rng_uniform();
        }
        CUDA_CHECK(cudaMemcpy(model.master_all, host_w.data(), model.n_params * sizeof(float),
                              cudaMemcpyHostToDevice));
    }

    std::vector<__half> host_x, host_t;
    int good_steps_since_growth = 0;
    int micro_batch = initial_micro_batch;

    for (int step = 1; step <= max_steps; ++step, micro_batch *= 2) {
        g_ledger.step = step;

        // ---------------- step start ----------------
        g_ledger.phase = PH_STEP_START;
        for (int l = 0; l < kLayers; ++l) {
            const Layer &ly = model.layers[l];
            CUDA_CHECK(cudaMemsetAsync(ly.grad, 0, (size_t)ly.in * ly.out * sizeof(float), 0));
        }
        CUDA_CHECK(cudaMemsetAsync(d_found_inf, 0, sizeof(int), 0));
        cast_master_to_half<<<grid_for(model.n_params, 256), 256>>>(model.master_all, model.working_all,
                                                                     model.n_params);
        KERNEL_CHECK();

        const int B = micro_batch;
        const size_t in_elems = (size_t)kDims[0] * B;
        const size_t out_elems = (size_t)kDims[kLayers] * B;
        host_x.resize(in_elems);
        host_t.resize(out_elems);

        for (int mb = 0; mb < kMicroBatchesPerStep; ++mb) {
            // ---------------- forward ----------------
            g_ledger.phase = PH_FORWARD;
            for (size_t i = 0; i < in_elems; ++i) host_x[i] = __float2half(rng_uniform());
            for (size_t i = 0; i < out_elems; ++i) host_t[i] = __float2half(0.5f * rng_uniform());

            __half *acts[kLayers + 1];  // acts[0] = input batch, acts[l+1] = output of layer l
            acts[0] = dev_alloc<__half>(in_elems * sizeof(__half), P_ACTIVATIONS, "input batch");
            __half *target = dev_alloc<__half>(out_elems * sizeof(__half), P_ACTIVATIONS, "targets");
            CUDA_CHECK(cudaMemcpy(acts[0], host_x.data(), in_elems * sizeof(__half), cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(target, host_t.data(), out_elems * sizeof(__half), cudaMemcpyHostToDevice));

            for (int l = 0; l < kLayers; ++l) {
                const Layer &ly = model.layers[l];
                size_t n = (size_t)ly.out * B;
                acts[l + 1] = dev_alloc<__half>(n * sizeof(__half), P_ACTIVATIONS, "layer activation");
                // Y (out x B) = W (out x in) * X (in x B)
                gemm_f16(blas, CUBLAS_OP_N, CUBLAS_OP_N, ly.out, B, ly.in, ly.working, ly.out, acts[l], ly.in,
                         0.0f, acts[l + 1], CUDA_R_16F, ly.out);
                if (l + 1 < kLayers) {
                    relu_forward<<<grid_for(n, 256), 256>>>(acts[l + 1], n);
                    KERNEL_CHECK();
                }
            }
            g_run.forward_passes++;

            // ---------------- backward ----------------
            g_ledger.phase = PH_BACKWARD;
            __half *dy = dev_alloc<__half>(out_elems * sizeof(__half), P_TEMPORARY, "dL/dY (output)");
            mse_loss_grad_scaled<<<grid_for(out_elems, 256), 256>>>(acts[kLayers], target, d_loss_scale, dy,
                                                                     out_elems, 1.0f / (float)out_elems);
            KERNEL_CHECK();
            dev_free(target);
            dev_free(acts[kLayers]);
            acts[kLayers] = nullptr;

            for (int l = kLayers - 1; l >= 0; --l) {
                const Layer &ly = model.layers[l];
                // dW (out x in, fp32) += dY (out x B) * X^T (B x in)
                gemm_f16(blas, CUBLAS_OP_N, CUBLAS_OP_T, ly.out, ly.in, B, dy, ly.out, acts[l], ly.in, 1.0f,
                         ly.grad, CUDA_R_32F, ly.out);
                if (l == 0) break;
                size_t nx = (size_t)ly.in * B;
                __half *dx = dev_alloc<__half>(nx * sizeof(__half), P_TEMPORARY, "dL/dX");
                // dX (in x B) = W^T (in x out) * dY (out x B)
                gemm_f16(blas, CUBLAS_OP_T, CUBLAS_OP_N, ly.in, B, ly.out, ly.working, ly.out, dy, ly.out, 0.0f,
                         dx, CUDA_R_16F, ly.in);
                dev_free(dy);
                // X of this layer is the ReLU output of the previous one.
                relu_backward<<<grid_for(nx, 256), 256>>>(dx, acts[l], nx);
                KERNEL_CHECK();
                dev_free(acts[l]);
                acts[l] = nullptr;
                dy = dx;
            }
            dev_free(dy);
            dev_free(acts[0]);
            acts[0] = nullptr;
        }

        // ---------------- optimizer ----------------
        g_ledger.phase = PH_OPTIMIZER;
        for (int l = 0; l < kLayers; ++l) {
            const Layer &ly = model.layers[l];
            size_t n = (size_t)ly.in * ly.out;
            unscale_and_check<<<grid_for(n, 256), 256>>>(ly.grad, n, d_loss_scale,
                                                        1.0f / (float)kMicroBatchesPerStep, d_found_inf);
            KERNEL_CHECK();
        }
        int found_inf = 0;
        CUDA_CHECK(cudaMemcpy(&found_inf, d_found_inf, sizeof(int), cudaMemcpyDeviceToHost));
        if (found_inf) {
            update_loss_scale<<<1, 1>>>(d_loss_scale, 0.5f, 1.0f);
            KERNEL_CHECK();
            good_steps_since_growth = 0;
            fprintf(stderr, "step %d: gradient overflow, update skipped\n", step);
            continue;
        }
        for (int l = 0; l < kLayers; ++l) {
            const Layer &ly = model.layers[l];
            size_t n = (size_t)ly.in * ly.out;
            sgd_momentum_update<<<grid_for(n, 256), 256>>>(ly.master, ly.momentum, ly.grad, n, lr, momentum,
                                                          weight_decay);
            KERNEL_CHECK();
        }
        if (++good_steps_since_growth == scale_growth_interval) {
            update_loss_scale<<<1, 1>>>(d_loss_scale, 2.0f, 1.0f);
            KERNEL_CHECK();
            good_steps_since_growth = 0;
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        g_run.steps++;
        fprintf(stderr, "step %d done (micro-batch %d x %d)\n", step, B, kMicroBatchesPerStep);
    }

    // Not reached on the intended device: the run ends in an out-of-memory error.
    for (int l = 0; l < kLayers; ++l) {
        dev_free(model.layers[l].momentum);
        dev_free(model.layers[l].grad);
    }
    dev_free(d_found_inf);
    dev_free(d_loss_scale);
    dev_free(model.working_all);
    dev_free(model.master_all);
    CUBLAS_CHECK(cublasDestroy(blas));
    print_ledger();
    return 0;
}

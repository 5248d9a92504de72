// h11_oom_setup_load: out-of-memory during set-up.
//
// A trainer for an fp32 MLP regressor of 8 linear layers (1024 -> 1024 each, ReLU between
// them, MSE loss, AdamW). It creates its cuBLAS handle first, then builds the model with
// one cudaMalloc per weight and per bias, each initialised on the host and uploaded; then
// allocates one gradient buffer per parameter tensor; then AdamW's first and second
// moments (m and v) for every parameter tensor, eagerly and zeroed; then one activation
// arena sized for its micro-batch of 4096 samples (input batch, targets, and every layer's
// pre-activation and post-ReLU output, kept for backward). On a simulated device of
// 384 MiB (minus the 32 MiB cuBLAS reserves for its default workspace), the ~128 MiB of
// weights, gradients and optimizer state fit, but the 272 MiB activation arena's
// cudaMalloc fails (about 48 MiB short). The program then prints the ledger (oom phase
// "setup", step 0, purpose "activations") and exits with status 3. Had the arena fit, it
// would train for a few steps (cuBLAS SGEMMs for the linear layers, small kernels for
// bias/ReLU, loss, bias gradients and the AdamW update).
//
// corpus-env: ANATOMIST_SIM_MEMORY=384MiB

#include <cuda_runtime.h>
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

// ---------------------------------------------------------------------------------------
// Memory ledger: every device allocation goes through dev_alloc / dev_free.
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

static const char *kPurposeNames[P_COUNT] = {"weights",     "optimizer",     "gradients",
                                             "activations", "temporary",     "functionality",
                                             "mixed"};

struct Allocation {
    void *ptr;
    size_t bytes;
    Purpose purpose;
};

struct Ledger {
    std::vector<Allocation> live;
    uint64_t live_by[P_COUNT] = {0};
    uint64_t live_total = 0;
    uint64_t peak_total = 0;
    uint64_t peak_by[P_COUNT] = {0};

    // training progress
    const char *phase = "setup";
    int step = 0;            // 1-based step in progress (0 in set-up)
    int steps_done = 0;
    int forward_passes = 0;

    // OOM record
    bool oom = false;
    uint64_t oom_requested = 0;
    Purpose oom_purpose = P_TEMPORARY;
    const char *oom_phase = "";
    int oom_step = 0;
    uint64_t oom_live_total = 0;
    uint64_t oom_live_by[P_COUNT] = {0};
};

static Ledger g_ledger;

static const char *kProgram = "h11_oom_setup_load";

static uint64_t g_params = 0;  // trainable parameter elements

static void print_ledger() {
    const Ledger &L = g_ledger;
    printf("ledger {\"program\":\"%s\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%llu,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
           "\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           kProgram, L.steps_done, L.forward_passes, (unsigned long long)g_params,
           (unsigned long long)L.peak_total);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%llu", p ? "," : "", kPurposeNames[p], (unsigned long long)L.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null}\n");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (L.oom_live_by[p] > L.oom_live_by[dom]) dom = p;
        printf("{\"requested_bytes\":%llu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%llu,\"live_by_purpose\":{",
               (unsigned long long)L.oom_requested, kPurposeNames[L.oom_purpose], L.oom_phase,
               L.oom_step, (unsigned long long)L.oom_live_total);
        for (int p = 0; p < P_COUNT; ++p)
            printf("%s\"%s\":%llu", p ? "," : "", kPurposeNames[p],
                   (unsigned long long)L.oom_live_by[p]);
        printf("},\"dominant\":\"%s\"}}\n", kPurposeNames[dom]);
    }
    fflush(stdout);
}

// Allocates device memory for a purpose. On out-of-memory: records it, prints the ledger
// and exits with status 3. Any other failure exits with status 1.
template <typename T>
static T *dev_alloc(size_t bytes, Purpose purpose, const char *what) {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        Ledger &L = g_ledger;
        L.oom = true;
        L.oom_requested = bytes;
        L.oom_purpose = purpose;
        L.oom_phase = L.phase;
        L.oom_step = L.step;
        L.oom_live_total = L.live_total;
        memcpy(L.oom_live_by, L.live_by, sizeof(L.live_by));
        size_t free_b = 0, total_b = 0;
        cudaGetLastError();
        if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
            fprintf(stderr, "out of memory allocating %s (%zu bytes): %zu of %zu bytes free\n",
                    what, bytes, free_b, total_b);
        else
            fprintf(stderr, "out of memory allocating %s (%zu bytes)\n", what, bytes);
        print_ledger();
        exit(3);
    }
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%s, %zu) failed: %s\n", what, bytes, cudaGetErrorString(err));
        exit(1);
    }
    Ledger &L = g_ledger;
    L.live.push_back({p, bytes, purpose});
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak_total) {
        L.peak_total = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof(L.live_by));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    Ledger &L = g_ledger;
    for (size_t i = 0; i < L.live.size(); ++i) {
        if (L.live[i].ptr == p) {
            CUDA_CHECK(cudaFree(p));
            L.live_by[L.live[i].purpose] -= L.live[i].bytes;
            L.live_total -= L.live[i].bytes;
            L.live.erase(L.live.begin() + i);
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

// z[o, b] += bias[o]; a[o, b] = relu(z[o, b]) (a may be null for the output layer).
// Column-major (out x batch), ld = out.
__global__ void bias_relu_fwd(float *z, float *a, const float *bias, int out, int batch) {
    size_t n = (size_t)out * batch;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = z[i] + bias[i % out];
        z[i] = v;
        if (a) a[i] = v > 0.f ? v : 0.f;
    }
}

// MSE loss: loss += sum((y - t)^2) / n;  dy = 2 (y - t) / n.
__global__ void mse_loss_grad(const float *y, const float *t, float *dy, float *loss, size_t n) {
    __shared__ float partial[256];
    float acc = 0.f;
    float inv_n = 1.0f / (float)n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float d = y[i] - t[i];
        dy[i] = 2.f * d * inv_n;
        acc += d * d;
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, partial[0] * inv_n);
}

// db[o] = sum_b dz[o, b]; one block per output row, 256 threads.
__global__ void bias_grad(const float *dz, float *db, int out, int batch) {
    __shared__ float partial[256];
    int o = blockIdx.x;
    float acc = 0.f;
    for (int b = threadIdx.x; b < batch; b += blockDim.x) acc += dz[(size_t)b * out + o];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) db[o] = partial[0];
}

// dz = dx * (z > 0), in place on dx.
__global__ void relu_bwd(float *dx, const float *z, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (z[i] <= 0.f) dx[i] = 0.f;
}

// AdamW with decoupled weight decay.
__global__ void adamw_update(float *w, const float *g, float *m, float *v, size_t n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1,
                             float bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.f - beta1) * gi;
        float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1;
        float vhat = vi / bc2;
        w[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w[i]);
    }
}

static unsigned grid_for(size_t n) {
    size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks > 1024 ? 1024 : blocks);
}

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------

static const int kLayers = 8;
static const int kWidth = 1024;      // every layer is 1024 -> 1024
static const int kMicroBatch = 4096; // samples per micro-batch
static const int kSteps = 4;

struct Linear {
    int in, out;
    float *w, *b;      // weights (out x in, column-major) and bias
    float *gw, *gb;    // gradients
    float *mw, *mb;    // AdamW first moments
    float *vw, *vb;    // AdamW second moments
    size_t w_elems() const { return (size_t)in * out; }
    size_t b_elems() const { return (size_t)out; }
};

// Deterministic host RNG (xorshift64*).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 2685821657736338717ULL;
    }
    float uniform(float lo, float hi) {
        return lo + (hi - lo) * (float)((next() >> 40) * (1.0 / 16777216.0));
    }
};

int main() {
    // cuBLAS first: the handle (and its default workspace) exists before the model.
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    Rng rng(0x5eed1234ULL);

    // ---- model: one allocation per weight and per bias, initialised on the host --------
    std::vector<Linear> layers(kLayers);
    {
        std::vector<float> host_w((size_t)kWidth * kWidth);
        std::vector<float> host_b(kWidth);
        for (int l = 0; l < kLayers; ++l) {
            Linear &L = layers[l];
            L.in = kWidth;
            L.out = kWidth;
            char name[64];
            snprintf(name, sizeof name, "layer%d.weight", l);
            L.w = dev_alloc<float>(L.w_elems() * sizeof(float), P_WEIGHTS, name);
            snprintf(name, sizeof name, "layer%d.bias", l);
            L.b = dev_alloc<float>(L.b_elems() * sizeof(float), P_WEIGHTS, name);
            float bound = 1.0f / sqrtf((float)L.in);  // PyTorch nn.Linear default init
            for (size_t i = 0; i < L.w_elems(); ++i) host_w[i] = rng.uniform(-bound, bound);
            for (size_t i = 0; i < L.b_elems(); ++i) host_b[i] = rng.uniform(-bound, bound);
            CUDA_CHECK(cudaMemcpy(L.w, host_w.data(), L.w_elems() * sizeof(float),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(L.b, host_b.data(), L.b_elems() * sizeof(float),
                                  cudaMemcpyHostToDevice));
            g_params += L.w_elems() + L.b_elems();
        }
    }
    printf("model: %d linear layers, %llu parameters (%.1f MiB fp32)\n", kLayers,
           (unsigned long long)g_params, g_params * 4.0 / (1 << 20));

    // ---- gradients: one per parameter tensor ----------------------------------------
    for (int l = 0; l < kLayers; ++l) {
        Linear &L = layers[l];
        char name[64];
        snprintf(name, sizeof name, "layer%d.weight.grad", l);
        L.gw = dev_alloc<float>(L.w_elems() * sizeof(float), P_GRADIENTS, name);
        snprintf(name, sizeof name, "layer%d.bias.grad", l);
        L.gb = dev_alloc<float>(L.b_elems() * sizeof(float), P_GRADIENTS, name);
        CUDA_CHECK(cudaMemset(L.gw, 0, L.w_elems() * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.gb, 0, L.b_elems() * sizeof(float)));
    }

    // ---- AdamW state, allocated eagerly --------------------------------------------
    for (int l = 0; l < kLayers; ++l) {
        Linear &L = layers[l];
        char name[64];
        snprintf(name, sizeof name, "layer%d.weight.exp_avg", l);
        L.mw = dev_alloc<float>(L.w_elems() * sizeof(float), P_OPTIMIZER, name);
        snprintf(name, sizeof name, "layer%d.weight.exp_avg_sq", l);
        L.vw = dev_alloc<float>(L.w_elems() * sizeof(float), P_OPTIMIZER, name);
        snprintf(name, sizeof name, "layer%d.bias.exp_avg", l);
        L.mb = dev_alloc<float>(L.b_elems() * sizeof(float), P_OPTIMIZER, name);
        snprintf(name, sizeof name, "layer%d.bias.exp_avg_sq", l);
        L.vb = dev_alloc<float>(L.b_elems() * sizeof(float), P_OPTIMIZER, name);
        CUDA_CHECK(cudaMemset(L.mw, 0, L.w_elems() * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vw, 0, L.w_elems() * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.mb, 0, L.b_elems() * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vb, 0, L.b_elems() * sizeof(float)));
    }

    // ---- activation arena for one micro-batch ----------------------------------------
    // Layout: input x0 [in0 x B], targets [outN x B], then per layer the pre-activation
    // z_l [out x B] and, for all but the last layer, the post-ReLU output a_l [out x B].
    const int B = kMicroBatch;
    size_t arena_elems = (size_t)layers[0].in * B + (size_t)layers[kLayers - 1].out * B;
    for (int l = 0; l < kLayers; ++l) {
        arena_elems += (size_t)layers[l].out * B;                       // z_l
        if (l + 1 < kLayers) arena_elems += (size_t)layers[l].out * B;  // a_l
    }
    size_t arena_bytes = arena_elems * sizeof(float);
    printf("activation arena: %.1f MiB for a micro-batch of %d\n",
           arena_bytes / (double)(1 << 20), B);
    fflush(stdout);
    float *arena = dev_alloc<float>(arena_bytes, P_ACTIVATIONS, "activation arena");

    float *x0 = arena;
    float *targets = x0 + (size_t)layers[0].in * B;
    std::vector<float *> z(kLayers), a(kLayers, nullptr);
    {
        float *cur = targets + (size_t)layers[kLayers - 1].out * B;
        for (int l = 0; l < kLayers; ++l) {
            z[l] = cur;
            cur += (size_t)layers[l].out * B;
            if (l + 1 < kLayers) {
                a[l] = cur;
                cur += (size_t)layers[l].out * B;
            }
        }
    }

    // Backward scratch: two ping-pong buffers for gradients w.r.t. activations, and the
    // loss scalar.
    size_t dact_elems = (size_t)kWidth * B;
    float *dact0 = dev_alloc<float>(dact_elems * sizeof(float), P_TEMPORARY, "dact ping");
    float *dact1 = dev_alloc<float>(dact_elems * sizeof(float), P_TEMPORARY, "dact pong");
    float *d_loss = dev_alloc<float>(sizeof(float), P_TEMPORARY, "loss");

    // ---- training --------------------------------------------------------------------
    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float one = 1.f, zero = 0.f;
    std::vector<float> host_x((size_t)layers[0].in * B), host_t((size_t)layers[kLayers - 1].out * B);

    for (int step = 1; step <= kSteps; ++step) {
        g_ledger.step = step;
        g_ledger.phase = "step_start";
        for (size_t i = 0; i < host_x.size(); ++i) host_x[i] = rng.uniform(-1.f, 1.f);
        for (size_t i = 0; i < host_t.size(); ++i) host_t[i] = 0.5f * host_x[i];
        CUDA_CHECK(cudaMemcpy(x0, host_x.data(), host_x.size() * sizeof(float),
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(targets, host_t.data(), host_t.size() * sizeof(float),
                              cudaMemcpyHostToDevice));

        // forward
        g_ledger.phase = "forward";
        const float *in = x0;
        for (int l = 0; l < kLayers; ++l) {
            Linear &L = layers[l];
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, L.out, B, L.in, &one, L.w,
                                     L.out, in, L.in, &zero, z[l], L.out));
            size_t n = (size_t)L.out * B;
            bias_relu_fwd<<<grid_for(n), 256>>>(z[l], a[l], L.b, L.out, B);
            CUDA_CHECK(cudaGetLastError());
            in = a[l];
        }
        g_ledger.forward_passes++;

        // loss
        size_t n_out = (size_t)layers[kLayers - 1].out * B;
        CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));
        mse_loss_grad<<<grid_for(n_out), 256>>>(z[kLayers - 1], targets, dact0, d_loss, n_out);
        CUDA_CHECK(cudaGetLastError());

        // backward: dact0 holds dL/dz of the current layer
        g_ledger.phase = "backward";
        float *dz = dact0, *dx = dact1;
        for (int l = kLayers - 1; l >= 0; --l) {
            Linear &L = layers[l];
            const float *x_in = l ? a[l - 1] : x0;
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, L.out, L.in, B, &one, dz,
                                     L.out, x_in, L.in, &zero, L.gw, L.out));
            bias_grad<<<L.out, 256>>>(dz, L.gb, L.out, B);
            CUDA_CHECK(cudaGetLastError());
            if (l == 0) break;
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, L.in, B, L.out, &one, L.w,
                                     L.out, dz, L.out, &zero, dx, L.in));
            size_t n = (size_t)L.in * B;
            relu_bwd<<<grid_for(n), 256>>>(dx, z[l - 1], n);
            CUDA_CHECK(cudaGetLastError());
            float *t = dz;
            dz = dx;
            dx = t;
        }

        // optimizer
        g_ledger.phase = "optimizer";
        float bc1 = 1.f - powf(beta1, (float)step);
        float bc2 = 1.f - powf(beta2, (float)step);
        for (int l = 0; l < kLayers; ++l) {
            Linear &L = layers[l];
            adamw_update<<<grid_for(L.w_elems()), 256>>>(L.w, L.gw, L.mw, L.vw, L.w_elems(), lr,
                                                         beta1, beta2, eps, wd, bc1, bc2);
            CUDA_CHECK(cudaGetLastError());
            adamw_update<<<grid_for(L.b_elems()), 256>>>(L.b, L.gb, L.mb, L.vb, L.b_elems(), lr,
                                                         beta1, beta2, eps, 0.f, bc1, bc2);
            CUDA_CHECK(cudaGetLastError());
        }
        float loss = 0.f;
        CUDA_CHECK(cudaMemcpy(&loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        g_ledger.steps_done = step;
        printf("step %d loss %.6f\n", step, loss);
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    // ---- clean-up ------------------------------------------------------------------
    dev_free(d_loss);
    dev_free(dact1);
    dev_free(dact0);
    dev_free(arena);
    for (int l = kLayers - 1; l >= 0; --l) {
        Linear &L = layers[l];
        dev_free(L.vb);
        dev_free(L.mb);
        dev_free(L.vw);
        dev_free(L.mw);
        dev_free(L.gb);
        dev_free(L.gw);
        dev_free(L.b);
        dev_free(L.w);
    }
    CUBLAS_CHECK(cublasDestroy(blas));

    print_ledger();
    return 0;
}

// h06_oom_grad_accum.cu
// corpus-env: ANATOMIST_SIM_MEMORY=70MiB
//
// fp32 MLP classifier (512 -> 1024 -> 1024 -> 64, GELU, softmax cross-entropy) trained
// with SGD + momentum and gradient accumulation over 2 micro-batches per step. Weights,
// persistent fp32 gradient accumulators (zeroed at every step start, accumulated into by
// the backward GEMMs with beta = 1) and momentum buffers are allocated before training.
// Each micro-batch uploads its inputs and labels at the start of its forward pass; they
// stay on the device until the step is over (the step's batch is released as a whole
// after the update). The tensors saved for backward (pre-activations and GELU outputs,
// logits) are allocated in forward and freed in backward as soon as they are consumed;
// gradients with respect to activations are scratch. A batch-size schedule runs steps 1
// and 2 with micro-batches of 128 rows and step 3 with micro-batches of 1024 rows: on
// this 70 MiB device (cuBLAS's default 32 MiB workspace included) the first micro-batch of
// step 3 completes, and the second one's forward runs out of memory. The program catches
// cudaErrorMemoryAllocation, prints its ledger with the failure and exits with status 3.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <unordered_map>

#include <cuda_runtime.h>
#include <cublas_v2.h>

// ---------------------------------------------------------------------------------------
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
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cublasGetStatusString(st_));                                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// allocation ledger

enum Purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, MIXED,
               NUM_PURPOSES };
static const char *kPurposeName[NUM_PURPOSES] = {"weights", "optimizer", "gradients",
                                                 "activations", "temporary",
                                                 "functionality", "mixed"};

enum Phase { SETUP, STEP_START, FORWARD, BACKWARD, OPTIMIZER_PHASE };
static const char *kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
    std::unordered_map<void *, std::pair<size_t, int>> live;
    size_t live_total = 0;
    size_t live_by[NUM_PURPOSES] = {};
    size_t peak = 0;
    size_t peak_by[NUM_PURPOSES] = {};
    // where we are, for the out-of-memory report
    Phase phase = SETUP;
    int step = 0;
};
static Ledger g_ledger;

struct OutOfMemory {
    size_t requested;
    Purpose purpose;
    Phase phase;
    int step;
    size_t live_total;
    size_t live_by[NUM_PURPOSES];
};

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); // reset the last error: the failure is handled here
        OutOfMemory oom;
        oom.requested = bytes;
        oom.purpose = purpose;
        oom.phase = g_ledger.phase;
        oom.step = g_ledger.step;
        oom.live_total = g_ledger.live_total;
        memcpy(oom.live_by, g_ledger.live_by, sizeof(oom.live_by));
        throw oom;
    }
    CUDA_CHECK(err);
    g_ledger.live[p] = {bytes, (int)purpose};
    g_ledger.live_total += bytes;
    g_ledger.live_by[purpose] += bytes;
    if (g_ledger.live_total > g_ledger.peak) {
        g_ledger.peak = g_ledger.live_total;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return (T *)p;
}

static void dev_free(void *p) {
    if (!p) return;
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) {
        fprintf(stderr, "dev_free: unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    g_ledger.live_total -= it->second.first;
    g_ledger.live_by[it->second.second] -= it->second.first;
    g_ledger.live.erase(it);
}

// ---------------------------------------------------------------------------------------
// kernels (activations are row-major [rows x features])

__device__ __forceinline__ float gelu_f(float x) {
    const float k = 0.7978845608028654f; // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float gelu_grad_f(float x) {
    const float k = 0.7978845608028654f;
    float x3 = x * x * x;
    float t = tanhf(k * (x + 0.044715f * x3));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}

// z += b (broadcast over rows); h = gelu(z). z is kept as the pre-activation.
__global__ void bias_gelu_fwd(float *__restrict__ z, const float *__restrict__ b,
                              float *__restrict__ h, int features, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = z[i] + b[i % features];
        z[i] = v;
        h[i] = gelu_f(v);
    }
}

__global__ void add_bias(float *__restrict__ z, const float *__restrict__ b, int features,
                         int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        z[i] += b[i % features];
}

// In place: g *= gelu'(z)
__global__ void gelu_bwd(float *__restrict__ g, const float *__restrict__ z, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        g[i] *= gelu_grad_f(z[i]);
}

// One block per row: dlogits = scale * (softmax(logits) - onehot(label)),
// loss += scale * -log softmax(logits)[label]
__global__ void softmax_xent(const float *__restrict__ logits, const int *__restrict__ labels,
                             float *__restrict__ dlogits, float *__restrict__ loss,
                             int classes, float scale) {
    __shared__ float red[128];
    const int row = blockIdx.x;
    const float *x = logits + (size_t)row * classes;
    float *g = dlogits + (size_t)row * classes;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, x[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) sum += expf(x[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    sum = red[0];

    const int label = labels[row];
    for (int c = threadIdx.x; c < classes; c += blockDim.x) {
        float p = expf(x[c] - m) / sum;
        g[c] = scale * (p - (c == label ? 1.0f : 0.0f));
    }
    if (threadIdx.x == 0) atomicAdd(loss, scale * (logf(sum) + m - x[label]));
}

// One block per feature: db[f] += sum over rows of g[row, f]
__global__ void bias_grad(const float *__restrict__ g, float *__restrict__ db, int rows,
                          int features) {
    __shared__ float red[256];
    const int f = blockIdx.x;
    float acc = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) acc += g[(size_t)r * features + f];
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) db[f] += red[0];
}

// SGD with momentum and (coupled) weight decay
__global__ void sgd_momentum(float *__restrict__ w, const float *__restrict__ g,
                             float *__restrict__ v, int n, float lr, float mu, float wd) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float vi = mu * v[i] + g[i] + wd * w[i];
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

static int grid_for(size_t n, int block) {
    size_t g = (n + block - 1) / block;
    return g > 2048 ? 2048 : (int)g;
}

// ---------------------------------------------------------------------------------------
// model

static const int kIn = 512;
static const int kHidden = 1024;
static const int kClasses = 64;
static const int kMicroBatches = 2;
static const int kBaseRows = 128;
static const int kSteps = 3;

struct Linear {
    int in, out;
    float *W, *b;       // W row-major out x in
    float *dW, *db;     // gradient accumulators
    float *vW, *vb;     // momentum
    size_t numel() const { return (size_t)in * out + out; }
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 32);
}
static float frand() { return (float)(next_u32() >> 8) / 8388608.0f - 1.0f; }

static void init_linear(Linear &L, int in, int out) {
    L.in = in;
    L.out = out;
    size_t wn = (size_t)in * out;
    std::vector<float> hw(wn), hb(out, 0.0f);
    float a = sqrtf(6.0f / (float)(in + out));
    for (size_t i = 0; i < wn; ++i) hw[i] = a * frand();
    L.W = dev_alloc<float>(wn, WEIGHTS);
    L.b = dev_alloc<float>(out, WEIGHTS);
    CUDA_CHECK(cudaMemcpy(L.W, hw.data(), wn * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(L.b, hb.data(), out * sizeof(float), cudaMemcpyHostToDevice));
}

static void alloc_grads(Linear &L) {
    L.dW = dev_alloc<float>((size_t)L.in * L.out, GRADIENTS);
    L.db = dev_alloc<float>(L.out, GRADIENTS);
}

static void alloc_momentum(Linear &L) {
    L.vW = dev_alloc<float>((size_t)L.in * L.out, OPTIMIZER);
    L.vb = dev_alloc<float>(L.out, OPTIMIZER);
    CUDA_CHECK(cudaMemset(L.vW, 0, (size_t)L.in * L.out * sizeof(float)));
    CUDA_CHECK(cudaMemset(L.vb, 0, L.out * sizeof(float)));
}

static void print_purposes(const size_t *by) {
    for (int p = 0; p < NUM_PURPOSES; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], by[p]);
}

static void print_ledger(int steps_done, int forward_passes, long long params,
                         const OutOfMemory *oom) {
    printf("ledger {\"program\":\"h06_oom_grad_accum\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":%d,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"sgd_momentum\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           steps_done, kMicroBatches, forward_passes, params, g_ledger.peak);
    print_purposes(g_ledger.peak_by);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!oom) {
        printf("null}\n");
        return;
    }
    int dom = 0;
    for (int p = 1; p < NUM_PURPOSES; ++p)
        if (oom->live_by[p] > oom->live_by[dom]) dom = p;
    printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
           "\"live_bytes\":%zu,\"live_by_purpose\":{",
           oom->requested, kPurposeName[oom->purpose], kPhaseName[oom->phase], oom->step,
           oom->live_total);
    print_purposes(oom->live_by);
    printf("},\"dominant\":\"%s\"}}\n", kPurposeName[dom]);
}

int main() {
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    Linear fc1, fc2, fc3;
    int steps_done = 0, forward_passes = 0;
    long long params = 0;
    const float one = 1.0f, zero = 0.0f;
    const float lr = 0.05f, mu = 0.9f, wd = 1e-4f;
    const int TB = 256;

    try {
        // ---- set-up: parameters, gradient accumulators, momentum
        g_ledger.phase = SETUP;
        g_ledger.step = 0;
        init_linear(fc1, kIn, kHidden);
        init_linear(fc2, kHidden, kHidden);
        init_linear(fc3, kHidden, kClasses);
        Linear *layers[3] = {&fc1, &fc2, &fc3};
        for (Linear *L : layers) {
            alloc_grads(*L);
            alloc_momentum(*L);
            params += (long long)L->numel();
        }

        for (int step = 1; step <= kSteps; ++step) {
            // batch-size schedule: small micro-batches first, 8x from step 3 on
            const int rows = step <= 2 ? kBaseRows : 8 * kBaseRows;

            // ---- step start: zero the accumulators, loss accumulator
            g_ledger.phase = STEP_START;
            g_ledger.step = step;
            for (Linear *L : layers) {
                CUDA_CHECK(cudaMemset(L->dW, 0, (size_t)L->in * L->out * sizeof(float)));
                CUDA_CHECK(cudaMemset(L->db, 0, L->out * sizeof(float)));
            }
            float *loss = dev_alloc<float>(1, TEMPORARY);
            CUDA_CHECK(cudaMemset(loss, 0, sizeof(float)));
            std::vector<void *> step_batch; // the step's device inputs, released after the update

            for (int mb = 0; mb < kMicroBatches; ++mb) {
                // ---- forward
                g_ledger.phase = FORWARD;
                const size_t xN = (size_t)rows * kIn;
                const size_t hN = (size_t)rows * kHidden;
                const size_t lN = (size_t)rows * kClasses;
                std::vector<float> hx(xN);
                std::vector<int> hy(rows);
                for (size_t i = 0; i < xN; ++i) hx[i] = frand();
                for (int r = 0; r < rows; ++r) hy[r] = (int)(next_u32() % kClasses);
                float *x = dev_alloc<float>(xN, ACTIVATIONS);
                step_batch.push_back(x);
                int *y = dev_alloc<int>(rows, ACTIVATIONS);
                step_batch.push_back(y);
                CUDA_CHECK(cudaMemcpy(x, hx.data(), xN * sizeof(float), cudaMemcpyHostToDevice));
                CUDA_CHECK(cudaMemcpy(y, hy.data(), rows * sizeof(int), cudaMemcpyHostToDevice));

                // column-major view: a row-major [rows x f] tensor is f x rows, ld f
                float *z1 = dev_alloc<float>(hN, ACTIVATIONS);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, rows, kIn, &one,
                                         fc1.W, kIn, x, kIn, &zero, z1, kHidden));
                float *h1 = dev_alloc<float>(hN, ACTIVATIONS);
                bias_gelu_fwd<<<grid_for(hN, TB), TB>>>(z1, fc1.b, h1, kHidden, (int)hN);
                LAUNCH_CHECK();

                float *z2 = dev_alloc<float>(hN, ACTIVATIONS);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, rows, kHidden,
                                         &one, fc2.W, kHidden, h1, kHidden, &zero, z2, kHidden));
                float *h2 = dev_alloc<float>(hN, ACTIVATIONS);
                bias_gelu_fwd<<<grid_for(hN, TB), TB>>>(z2, fc2.b, h2, kHidden, (int)hN);
                LAUNCH_CHECK();

                float *logits = dev_alloc<float>(lN, ACTIVATIONS);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kClasses, rows, kHidden,
                                         &one, fc3.W, kHidden, h2, kHidden, &zero, logits,
                                         kClasses));
                add_bias<<<grid_for(lN, TB), TB>>>(logits, fc3.b, kClasses, (int)lN);
                LAUNCH_CHECK();
                ++forward_passes;

                // ---- backward (the loss is averaged over rows and micro-batches)
                g_ledger.phase = BACKWARD;
                float *dl = dev_alloc<float>(lN, TEMPORARY);
                softmax_xent<<<rows, 128>>>(logits, y, dl, loss, kClasses,
                                            1.0f / (float)(rows * kMicroBatches));
                LAUNCH_CHECK();
                dev_free(logits);

                // fc3: dW3 += dl^T h2, db3 += sum dl, dh2 = dl W3
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kHidden, kClasses, rows,
                                         &one, h2, kHidden, dl, kClasses, &one, fc3.dW, kHidden));
                bias_grad<<<kClasses, TB>>>(dl, fc3.db, rows, kClasses);
                LAUNCH_CHECK();
                dev_free(h2);
                float *dh2 = dev_alloc<float>(hN, TEMPORARY);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, rows, kClasses,
                                         &one, fc3.W, kHidden, dl, kClasses, &zero, dh2, kHidden));
                dev_free(dl);
                gelu_bwd<<<grid_for(hN, TB), TB>>>(dh2, z2, (int)hN);
                LAUNCH_CHECK();
                dev_free(z2);

                // fc2
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kHidden, kHidden, rows,
                                         &one, h1, kHidden, dh2, kHidden, &one, fc2.dW, kHidden));
                bias_grad<<<kHidden, TB>>>(dh2, fc2.db, rows, kHidden);
                LAUNCH_CHECK();
                dev_free(h1);
                float *dh1 = dev_alloc<float>(hN, TEMPORARY);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, rows, kHidden,
                                         &one, fc2.W, kHidden, dh2, kHidden, &zero, dh1, kHidden));
                dev_free(dh2);
                gelu_bwd<<<grid_for(hN, TB), TB>>>(dh1, z1, (int)hN);
                LAUNCH_CHECK();
                dev_free(z1);

                // fc1 (no gradient w.r.t. the input)
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kIn, kHidden, rows, &one,
                                         x, kIn, dh1, kHidden, &one, fc1.dW, kIn));
                bias_grad<<<kHidden, TB>>>(dh1, fc1.db, rows, kHidden);
                LAUNCH_CHECK();
                dev_free(dh1);
            }

            // ---- optimizer
            g_ledger.phase = OPTIMIZER_PHASE;
            for (Linear *L : layers) {
                size_t wn = (size_t)L->in * L->out;
                sgd_momentum<<<grid_for(wn, TB), TB>>>(L->W, L->dW, L->vW, (int)wn, lr, mu, wd);
                LAUNCH_CHECK();
                sgd_momentum<<<grid_for(L->out, TB), TB>>>(L->b, L->db, L->vb, L->out, lr, mu,
                                                           0.0f);
                LAUNCH_CHECK();
            }
            ++steps_done;

            float hloss = 0.0f;
            CUDA_CHECK(cudaMemcpy(&hloss, loss, sizeof(float), cudaMemcpyDeviceToHost));
            printf("step %d rows/micro-batch %d loss %.6f\n", step, rows, hloss);
            dev_free(loss);
            for (void *p : step_batch) dev_free(p);
        }
    } catch (const OutOfMemory &oom) {
        fprintf(stderr, "out of memory: %zu bytes for %s in %s of step %d (%zu bytes live)\n",
                oom.requested, kPurposeName[oom.purpose], kPhaseName[oom.phase], oom.step,
                oom.live_total);
        fflush(stdout);
        print_ledger(steps_done, forward_passes, params, &oom);
        return 3;
    }

    CUDA_CHECK(cudaDeviceSynchronize());
    Linear *layers[3] = {&fc1, &fc2, &fc3};
    for (Linear *L : layers) {
        dev_free(L->W); dev_free(L->b);
        dev_free(L->dW); dev_free(L->db);
        dev_free(L->vW); dev_free(L->vb);
    }
    CUBLAS_CHECK(cublasDestroy(blas));
    print_ledger(steps_done, forward_passes, params, nullptr);
    return 0;
}

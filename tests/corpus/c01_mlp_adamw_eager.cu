// c01_mlp_adamw_eager: a small fp32 MLP classifier trained with AdamW.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// A 4-layer multilayer perceptron (1024 -> 1024 -> 1024 -> 1024 -> 100 classes, ReLU
// between layers, softmax cross-entropy loss) is trained in fp32 for 5 optimizer steps at
// batch 256. Every parameter tensor (each layer's weight and each bias) is its own
// cudaMalloc; each has a persistent gradient buffer, zeroed with cudaMemset at the start of
// every step; both AdamW moments are allocated and zeroed before the first step (eager),
// and the update is one adamw_step launch per parameter tensor. Matrix multiplies use
// cublasSgemm with a 32 MiB workspace the program allocates itself and hands to cuBLAS
// (cublasSetWorkspace). The input batch and labels live in persistent device buffers that
// are refilled from the host at the start of every step. During forward each layer's
// output (kept for backward) is allocated, and all of them are freed at the end of
// backward; gradients with respect to activations are allocated in backward and freed as
// soon as they have been consumed; the loss is a one-float scalar that lives for the
// step. After steps 2 and 4 an evaluation forward pass (no backward) runs on a held-out
// batch copied from the host, with its own temporaries freed as soon as they are used.
// The last stdout line is the corpus ledger (tests/corpus/LEDGER.md).

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ----------------------------------------------------------------------------------------
// Ledger: every device allocation goes through dev_alloc / dev_free.

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};
enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_EVALUATION };
static const char* kPhaseName[] = {"setup", "step_start", "forward", "backward",
                                   "optimizer", "evaluation"};

struct Ledger {
    std::map<void*, std::pair<size_t, Purpose>> live;
    unsigned long long live_by[P_COUNT] = {0};
    unsigned long long live_total = 0;
    unsigned long long peak = 0;
    unsigned long long peak_by[P_COUNT] = {0};
    Phase phase = PH_SETUP;
    int step = 0;  // 1-based step in progress, 0 in set-up
    int steps_done = 0;
    int forward_passes = 0;
    long long params = 0;
};
static Ledger g_ledger;

static void print_ledger(const char* oom_json) {
    const Ledger& L = g_ledger;
    std::string s = "{\"program\":\"c01_mlp_adamw_eager\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld"
             ",\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\""
             ",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
             L.steps_done, L.forward_passes, L.params, L.peak);
    s += buf;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
        s += buf;
    }
    s += "},\"pools_at_peak\":[],\"oom\":";
    s += oom_json ? oom_json : "null";
    s += "}";
    printf("ledger %s\n", s.c_str());
    fflush(stdout);
}

static void* dev_alloc(size_t bytes, Purpose purpose) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        Ledger& L = g_ledger;
        int dom = 0;
        for (int q = 1; q < P_COUNT; ++q)
            if (L.live_by[q] > L.live_by[dom]) dom = q;
        std::string o;
        char buf[256];
        snprintf(buf, sizeof buf,
                 "{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d"
                 ",\"live_bytes\":%llu,\"live_by_purpose\":{",
                 bytes, kPurposeName[purpose], kPhaseName[L.phase], L.step, L.live_total);
        o += buf;
        for (int q = 0; q < P_COUNT; ++q) {
            snprintf(buf, sizeof buf, "%s\"%s\":%llu", q ? "," : "", kPurposeName[q], L.live_by[q]);
            o += buf;
        }
        snprintf(buf, sizeof buf, "},\"dominant\":\"%s\"}", kPurposeName[dom]);
        o += buf;
        fprintf(stderr, "out of device memory allocating %zu bytes\n", bytes);
        print_ledger(o.c_str());
        exit(3);
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed: %s\n", bytes, cudaGetErrorString(e));
        exit(1);
    }
    Ledger& L = g_ledger;
    L.live[p] = {bytes, purpose};
    L.live_by[purpose] += bytes;
    L.live_total += bytes;
    if (L.live_total > L.peak) {
        L.peak = L.live_total;
        memcpy(L.peak_by, L.live_by, sizeof L.peak_by);
    }
    return p;
}

static void dev_free(void* p) {
    if (!p) return;
    Ledger& L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "dev_free of unknown pointer %p\n", p);
        exit(1);
    }
    cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaFree failed: %s\n", cudaGetErrorString(e));
        exit(1);
    }
    L.live_by[it->second.second] -= it->second.first;
    L.live_total -= it->second.first;
    L.live.erase(it);
}

#define CUDA_CHECK(x)                                                                   \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                  \
                    cudaGetErrorString(e_));                                            \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define CUBLAS_CHECK(x)                                                                 \
    do {                                                                                \
        cublasStatus_t s_ = (x);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                  \
                    cublasGetStatusString(s_));                                         \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// Kernels. Matrices are row-major: activations [batch, features], weights [out, in].

__global__ void add_bias(float* __restrict__ y, const float* __restrict__ b, int rows, int cols) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n = (size_t)rows * cols;
    if (i < n) y[i] += b[i % cols];
}

__global__ void relu_forward(float* __restrict__ y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(y[i], 0.0f);
}

// dy is turned in place into the gradient w.r.t. the pre-activation; y is the ReLU output.
__global__ void relu_backward(float* __restrict__ dy, const float* __restrict__ y, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.0f) dy[i] = 0.0f;
}

// One block per row: log-softmax cross-entropy, summed (divided by batch) into *loss.
__global__ void softmax_xent(const float* __restrict__ logits, const int* __restrict__ labels,
                             float* __restrict__ loss, int classes, float inv_batch) {
    extern __shared__ float red[];
    const float* row = logits + (size_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) sum += expf(row[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float lse = m + logf(red[0]);
        atomicAdd(loss, (lse - row[labels[blockIdx.x]]) * inv_batch);
    }
}

// One block per row: dlogits = (softmax(logits) - onehot(label)) / batch.
__global__ void softmax_xent_backward(const float* __restrict__ logits,
                                      const int* __restrict__ labels,
                                      float* __restrict__ dlogits, int classes, float inv_batch) {
    extern __shared__ float red[];
    const float* row = logits + (size_t)blockIdx.x * classes;
    float* drow = dlogits + (size_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) sum += expf(row[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv_sum = 1.0f / red[0];
    int label = labels[blockIdx.x];
    for (int c = threadIdx.x; c < classes; c += blockDim.x) {
        float p = expf(row[c] - m) * inv_sum;
        drow[c] = (p - (c == label ? 1.0f : 0.0f)) * inv_batch;
    }
}

// db[c] += sum over rows of dy[r, c]
__global__ void bias_grad(const float* __restrict__ dy, float* __restrict__ db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += dy[(size_t)r * cols + c];
    db[c] += s;
}

__global__ void adamw_step(float* __restrict__ p, const float* __restrict__ g,
                           float* __restrict__ m, float* __restrict__ v, size_t n, float lr,
                           float beta1, float beta2, float eps, float weight_decay,
                           float bc1, float bc2) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / bc1;
    float vhat = vi / bc2;
    p[i] = p[i] * (1.0f - lr * weight_decay) - lr * mhat / (sqrtf(vhat) + eps);
}

// One block per row: counts rows whose argmax equals the label.
__global__ void argmax_correct(const float* __restrict__ logits, const int* __restrict__ labels,
                               int* __restrict__ correct, int classes) {
    if (threadIdx.x != 0) return;
    const float* row = logits + (size_t)blockIdx.x * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c)
        if (row[c] > row[best]) best = c;
    if (best == labels[blockIdx.x]) atomicAdd(correct, 1);
}

// ----------------------------------------------------------------------------------------

static const int kBatch = 256;
static const int kLayers = 4;
static const int kDims[kLayers + 1] = {1024, 1024, 1024, 1024, 100};
static const int kSteps = 5;
static const size_t kWorkspaceBytes = 32u << 20;

static inline unsigned blocks_for(size_t n, int t) { return (unsigned)((n + t - 1) / t); }

struct Linear {
    int in, out;
    float *W, *b;    // parameters
    float *dW, *db;  // persistent gradients
    float *mW, *vW, *mb, *vb;  // AdamW moments
};

// y[batch, out] = x[batch, in] * W^T (+ b added by a kernel)
static void linear_forward(cublasHandle_t h, const Linear& L, const float* x, float* y, int batch) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, L.out, batch, L.in, &one, L.W, L.in,
                             x, L.in, &zero, y, L.out));
    size_t n = (size_t)batch * L.out;
    add_bias<<<blocks_for(n, 256), 256>>>(y, L.b, batch, L.out);
    KERNEL_CHECK();
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand() {  // uniform in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void fill_batch(std::vector<float>& x, std::vector<int>& y, int classes) {
    for (auto& v : x) v = frand();
    for (auto& v : y) v = (int)((frand() * 0.5f + 0.5f) * classes) % classes;
}

// Evaluation: forward only, its own temporaries; returns accuracy.
static float evaluate(cublasHandle_t h, std::vector<Linear>& net, const std::vector<float>& hx,
                      const std::vector<int>& hy) {
    g_ledger.phase = PH_EVALUATION;
    float* x = (float*)dev_alloc(hx.size() * sizeof(float), P_ACTIVATIONS);
    int* labels = (int*)dev_alloc(hy.size() * sizeof(int), P_ACTIVATIONS);
    CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(labels, hy.data(), hy.size() * sizeof(int), cudaMemcpyHostToDevice));
    const float* cur = x;
    float* prev_owned = nullptr;
    for (int l = 0; l < kLayers; ++l) {
        float* y = (float*)dev_alloc((size_t)kBatch * net[l].out * sizeof(float), P_TEMPORARY);
        linear_forward(h, net[l], cur, y, kBatch);
        if (l + 1 < kLayers) {
            size_t n = (size_t)kBatch * net[l].out;
            relu_forward<<<blocks_for(n, 256), 256>>>(y, n);
            KERNEL_CHECK();
        }
        dev_free(prev_owned);
        prev_owned = y;
        cur = y;
    }
    int* correct = (int*)dev_alloc(sizeof(int), P_TEMPORARY);
    CUDA_CHECK(cudaMemset(correct, 0, sizeof(int)));
    argmax_correct<<<kBatch, 32>>>(cur, labels, correct, kDims[kLayers]);
    KERNEL_CHECK();
    int hc = 0;
    CUDA_CHECK(cudaMemcpy(&hc, correct, sizeof(int), cudaMemcpyDeviceToHost));
    dev_free(correct);
    dev_free(prev_owned);
    dev_free(labels);
    dev_free(x);
    g_ledger.forward_passes++;
    return (float)hc / kBatch;
}

int main() {
    Ledger& LG = g_ledger;
    LG.phase = PH_SETUP;

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));
    void* workspace = dev_alloc(kWorkspaceBytes, P_FUNCTIONALITY);
    CUBLAS_CHECK(cublasSetWorkspace(blas, workspace, kWorkspaceBytes));

    // Parameters, gradients and AdamW state, one allocation per tensor.
    std::vector<Linear> net(kLayers);
    for (int l = 0; l < kLayers; ++l) {
        Linear& L = net[l];
        L.in = kDims[l];
        L.out = kDims[l + 1];
        size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
        L.W = (float*)dev_alloc(nw * sizeof(float), P_WEIGHTS);
        L.b = (float*)dev_alloc(nb * sizeof(float), P_WEIGHTS);
        std::vector<float> hw(nw), hb(nb);
        float bound = 1.0f / sqrtf((float)L.in);  // nn.Linear default init
        for (auto& v : hw) v = frand() * bound;
        for (auto& v : hb) v = frand() * bound;
        CUDA_CHECK(cudaMemcpy(L.W, hw.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(L.b, hb.data(), nb * sizeof(float), cudaMemcpyHostToDevice));
        LG.params += (long long)(nw + nb);
    }
    for (int l = 0; l < kLayers; ++l) {
        Linear& L = net[l];
        size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
        L.dW = (float*)dev_alloc(nw * sizeof(float), P_GRADIENTS);
        L.db = (float*)dev_alloc(nb * sizeof(float), P_GRADIENTS);
    }
    for (int l = 0; l < kLayers; ++l) {
        Linear& L = net[l];
        size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
        L.mW = (float*)dev_alloc(nw * sizeof(float), P_OPTIMIZER);
        L.vW = (float*)dev_alloc(nw * sizeof(float), P_OPTIMIZER);
        L.mb = (float*)dev_alloc(nb * sizeof(float), P_OPTIMIZER);
        L.vb = (float*)dev_alloc(nb * sizeof(float), P_OPTIMIZER);
        CUDA_CHECK(cudaMemset(L.mW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.mb, 0, nb * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vb, 0, nb * sizeof(float)));
    }

    // Persistent input batch buffers, refilled every step.
    const int classes = kDims[kLayers];
    float* d_x = (float*)dev_alloc((size_t)kBatch * kDims[0] * sizeof(float), P_ACTIVATIONS);
    int* d_y = (int*)dev_alloc((size_t)kBatch * sizeof(int), P_ACTIVATIONS);
    std::vector<float> hx((size_t)kBatch * kDims[0]);
    std::vector<int> hy(kBatch);
    std::vector<float> eval_x((size_t)kBatch * kDims[0]);
    std::vector<int> eval_y(kBatch);
    fill_batch(eval_x, eval_y, classes);

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float one = 1.0f;

    for (int step = 1; step <= kSteps; ++step) {
        LG.step = step;
        LG.phase = PH_STEP_START;
        fill_batch(hx, hy, classes);
        CUDA_CHECK(cudaMemcpy(d_x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_y, hy.data(), hy.size() * sizeof(int), cudaMemcpyHostToDevice));
        for (auto& L : net) {
            CUDA_CHECK(cudaMemset(L.dW, 0, (size_t)L.in * L.out * sizeof(float)));
            CUDA_CHECK(cudaMemset(L.db, 0, (size_t)L.out * sizeof(float)));
        }

        // ---- forward: keep every layer's output for backward
        LG.phase = PH_FORWARD;
        std::vector<float*> acts(kLayers + 1);
        acts[0] = d_x;
        for (int l = 0; l < kLayers; ++l) {
            size_t n = (size_t)kBatch * net[l].out;
            acts[l + 1] = (float*)dev_alloc(n * sizeof(float), P_ACTIVATIONS);
            linear_forward(blas, net[l], acts[l], acts[l + 1], kBatch);
            if (l + 1 < kLayers) {
                relu_forward<<<blocks_for(n, 256), 256>>>(acts[l + 1], n);
                KERNEL_CHECK();
            }
        }
        float* d_loss = (float*)dev_alloc(sizeof(float), P_TEMPORARY);
        CUDA_CHECK(cudaMemset(d_loss, 0, sizeof(float)));
        softmax_xent<<<kBatch, 128, 128 * sizeof(float)>>>(acts[kLayers], d_y, d_loss, classes,
                                                           1.0f / kBatch);
        KERNEL_CHECK();
        LG.forward_passes++;

        // ---- backward
        LG.phase = PH_BACKWARD;
        float* dout = (float*)dev_alloc((size_t)kBatch * classes * sizeof(float), P_TEMPORARY);
        softmax_xent_backward<<<kBatch, 128, 128 * sizeof(float)>>>(acts[kLayers], d_y, dout,
                                                                    classes, 1.0f / kBatch);
        KERNEL_CHECK();
        for (int l = kLayers - 1; l >= 0; --l) {
            Linear& L = net[l];
            if (l + 1 < kLayers) {  // through the ReLU that followed this layer
                size_t n = (size_t)kBatch * L.out;
                relu_backward<<<blocks_for(n, 256), 256>>>(dout, acts[l + 1], n);
                KERNEL_CHECK();
            }
            // dW += dY^T X ; db += colsum(dY)
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, kBatch, &one,
                                     acts[l], L.in, dout, L.out, &one, L.dW, L.in));
            bias_grad<<<blocks_for(L.out, 256), 256>>>(dout, L.db, kBatch, L.out);
            KERNEL_CHECK();
            float* din = nullptr;
            if (l > 0) {  // dX = dY W
                const float zero = 0.0f;
                din = (float*)dev_alloc((size_t)kBatch * L.in * sizeof(float), P_TEMPORARY);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, L.in, kBatch, L.out,
                                         &one, L.W, L.in, dout, L.out, &zero, din, L.in));
            }
            dev_free(dout);
            dout = din;
        }
        for (int l = 1; l <= kLayers; ++l) dev_free(acts[l]);

        // ---- optimizer
        LG.phase = PH_OPTIMIZER;
        float bc1 = 1.0f - powf(beta1, (float)step), bc2 = 1.0f - powf(beta2, (float)step);
        for (auto& L : net) {
            size_t nw = (size_t)L.in * L.out, nb = (size_t)L.out;
            adamw_step<<<blocks_for(nw, 256), 256>>>(L.W, L.dW, L.mW, L.vW, nw, lr, beta1,
                                                     beta2, eps, wd, bc1, bc2);
            KERNEL_CHECK();
            adamw_step<<<blocks_for(nb, 256), 256>>>(L.b, L.db, L.mb, L.vb, nb, lr, beta1,
                                                     beta2, eps, wd, bc1, bc2);
            KERNEL_CHECK();
        }
        float hloss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&hloss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(d_loss);
        LG.steps_done = step;
        fprintf(stderr, "step %d loss %.4f\n", step, hloss);

        if (step == 2 || step == 4) {
            float acc = evaluate(blas, net, eval_x, eval_y);
            fprintf(stderr, "eval after step %d: accuracy %.3f\n", step, acc);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    // Tear down.
    dev_free(d_x);
    dev_free(d_y);
    for (auto& L : net) {
        dev_free(L.W); dev_free(L.b); dev_free(L.dW); dev_free(L.db);
        dev_free(L.mW); dev_free(L.vW); dev_free(L.mb); dev_free(L.vb);
    }
    CUBLAS_CHECK(cublasDestroy(blas));
    dev_free(workspace);
    if (!g_ledger.live.empty()) {
        fprintf(stderr, "leaked %zu device allocations\n", g_ledger.live.size());
        return 1;
    }
    print_ledger(nullptr);
    return 0;
}

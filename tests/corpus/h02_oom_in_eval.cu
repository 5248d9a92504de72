// h02_oom_in_eval.cu
//
// An fp32 MLP classifier trainer (4 linear layers 1024 -> 1024 -> 1024 -> 1024 -> 1000,
// ReLU between them) written directly against the CUDA runtime and cublasSgemm. Each
// weight and bias is its own cudaMalloc, and so are its persistent gradient and its AdamW
// first and second moments, all allocated eagerly before training. The training batch (256
// rows), its labels and the per-layer outputs kept for backward are allocated once; so are
// the softmax/cross-entropy gradient, two ping-pong buffers for the gradients with respect
// to the hidden activations, and the per-row losses. After every 2 training steps it
// evaluates on a held-out set of 8192 rows, forward only: each evaluation batch's input and
// per-layer outputs are allocated and freed right after the next layer has consumed them,
// while the logits and labels of every evaluation batch are kept until the accuracy is
// computed at the end. The periodic evaluation (after step 2) uses batches of 1024 rows;
// the final one (after step 4, the last step) pushes the whole held-out set through as one
// 8192-row batch, and on the small device below its first hidden layer's allocation fails.
// The program catches cudaErrorMemoryAllocation, prints the ledger with `oom` filled (phase
// "evaluation", step 4) and exits 3. forward_passes counts each completed forward pass
// over one batch: 4 training passes and 8 evaluation batches. cuBLAS's own 32 MiB default
// workspace (allocated inside cublasCreate) also occupies the device but is not in the
// ledger. Kernel bodies do not run on the simulated device, so the sim's CPU GEMM
// arithmetic is switched off to keep the run short.
//
// corpus-env: ANATOMIST_SIM_MEMORY=152MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// ----------------------------------------------------------------------------
// error checking

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, \
                    __LINE__, cudaGetErrorString(err_));                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "cuBLAS error %s at %s:%d\n", cublasGetStatusName(st_), __FILE__, \
                    __LINE__);                                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// ----------------------------------------------------------------------------
// device memory tracker: the ledger of every allocation the program makes

enum Purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, MIXED, NUM_PURPOSES };
static const char* kPurposeNames[NUM_PURPOSES] = {"weights",   "optimizer",     "gradients", "activations",
                                                  "temporary", "functionality", "mixed"};
enum Phase { SETUP, STEP_START, FORWARD, BACKWARD, OPTIMIZER_PHASE, EVALUATION };
static const char* kPhaseNames[] = {"setup", "step_start", "forward", "backward", "optimizer", "evaluation"};

struct OutOfMemory {
    size_t requested;
};

struct Tracker {
    struct Block { void* ptr; size_t bytes; Purpose purpose; };
    std::vector<Block> blocks;
    size_t live = 0, peak = 0;
    size_t live_by[NUM_PURPOSES] = {0};
    size_t peak_by[NUM_PURPOSES] = {0};
    Phase phase = SETUP;
    int step = 0;  // the step in progress, or the last completed one outside a step
    // filled when an allocation fails
    bool oom = false;
    size_t oom_requested = 0;
    Purpose oom_purpose = TEMPORARY;
    Phase oom_phase = SETUP;
    int oom_step = 0;
    size_t oom_live = 0;
    size_t oom_live_by[NUM_PURPOSES] = {0};
} g_mem;

static float* dalloc(size_t count, Purpose purpose, size_t elem = sizeof(float)) {
    size_t bytes = count * elem;
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // out of memory is not sticky: reset the last error and report it
        g_mem.oom = true;
        g_mem.oom_requested = bytes;
        g_mem.oom_purpose = purpose;
        g_mem.oom_phase = g_mem.phase;
        g_mem.oom_step = g_mem.step;
        g_mem.oom_live = g_mem.live;
        memcpy(g_mem.oom_live_by, g_mem.live_by, sizeof(g_mem.live_by));
        throw OutOfMemory{bytes};
    }
    CUDA_CHECK(err);
    g_mem.blocks.push_back({ptr, bytes, purpose});
    g_mem.live += bytes;
    g_mem.live_by[purpose] += bytes;
    if (g_mem.live > g_mem.peak) {
        g_mem.peak = g_mem.live;
        memcpy(g_mem.peak_by, g_mem.live_by, sizeof(g_mem.live_by));
    }
    return static_cast<float*>(ptr);
}

static void dfree(void* ptr) {
    if (!ptr) return;
    for (size_t i = 0; i < g_mem.blocks.size(); i++) {
        if (g_mem.blocks[i].ptr == ptr) {
            CUDA_CHECK(cudaFree(ptr));
            g_mem.live -= g_mem.blocks[i].bytes;
            g_mem.live_by[g_mem.blocks[i].purpose] -= g_mem.blocks[i].bytes;
            g_mem.blocks.erase(g_mem.blocks.begin() + i);
            return;
        }
    }
    fprintf(stderr, "dfree: unknown pointer %p\n", ptr);
    exit(1);
}

// ----------------------------------------------------------------------------
// kernels (row-major activations: row = sample)

// y[r, o] = act(y[r, o] + b[o])
__global__ void bias_activation_kernel(float* y, const float* b, int rows, int cols, bool relu) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * cols) return;
    float v = y[i] + b[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
}

// one block per row: softmax cross-entropy, loss[r] and dlogits[r, :] = (p - onehot) / rows
__global__ void softmax_xent_kernel(const float* logits, const int* labels, float* losses, float* dlogits,
                                    int rows, int cols) {
    __shared__ float red[256];
    int r = blockIdx.x;
    const float* x = logits + (size_t)r * cols;
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
    sum = red[0];
    int label = labels[r];
    if (threadIdx.x == 0) losses[r] = logf(sum) + m - x[label];
    float inv_rows = 1.0f / rows;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float p = expf(x[c] - m) / sum;
        dlogits[(size_t)r * cols + c] = (p - (c == label ? 1.0f : 0.0f)) * inv_rows;
    }
}

// dh *= (h > 0), h being the ReLU output of the layer
__global__ void relu_backward_kernel(float* dh, const float* h, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && h[i] <= 0.0f) dh[i] = 0.0f;
}

// db[o] += sum_r dy[r, o]
__global__ void bias_grad_kernel(float* db, const float* dy, int rows, int cols) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += dy[(size_t)r * cols + o];
    db[o] += s;
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, size_t n, float lr, float beta1,
                             float beta2, float bc1, float bc2, float eps, float wd) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p[i]);
}

// one warp per row: correct += (argmax(logits[r]) == labels[r])
__global__ void accuracy_kernel(const float* logits, const int* labels, int rows, int cols, int* correct) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float* x = logits + (size_t)r * cols;
    float best = -INFINITY;
    int best_idx = 0;
    for (int c = lane; c < cols; c += 32) {
        if (x[c] > best) { best = x[c]; best_idx = c; }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float ob = __shfl_down_sync(0xffffffff, best, off);
        int oi = __shfl_down_sync(0xffffffff, best_idx, off);
        if (ob > best || (ob == best && oi < best_idx)) { best = ob; best_idx = oi; }
    }
    if (lane == 0 && best_idx == labels[r]) atomicAdd(correct, 1);
}

static inline unsigned blocks_for(size_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// ----------------------------------------------------------------------------
// model

constexpr int kNumLayers = 4;
constexpr int kDims[kNumLayers + 1] = {1024, 1024, 1024, 1024, 1000};
constexpr int kTrainBatch = 256;
constexpr int kEvalRows = 8192;
constexpr int kPeriodicEvalBatch = 1024;
constexpr int kTrainSteps = 4;
constexpr int kEvalEvery = 2;

struct Linear {
    int in, out;
    float *W, *b;    // W: (out, in) row-major
    float *dW, *db;  // persistent gradients
    float *mW, *vW, *mb, *vb;  // AdamW moments
};

struct MLP {
    Linear layers[kNumLayers];
    size_t num_params = 0;
};

struct TrainBuffers {
    float* x;             // (B, 1024) input batch
    int* y;               // (B) labels
    float* h[kNumLayers]; // layer outputs kept for backward: h[0..2] ReLU outputs, h[3] logits
    float* dlogits;       // (B, 1000)
    float* dh[2];         // (B, 1024) ping-pong gradients w.r.t. hidden activations
    float* losses;        // (B)
};

static cublasHandle_t g_cublas;

// Y (rows, out) = X (rows, in) @ W^T, all row-major
static void linear_forward(const Linear& L, const float* X, float* Y, int rows) {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, L.out, rows, L.in, &one, L.W, L.in, X, L.in, &zero,
                             Y, L.out));
}

static uint64_t g_rng = 0x2545F4914F6CDD1DULL;
static uint32_t next_u32() {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_rng >> 33);
}
static float next_uniform() { return (next_u32() >> 8) * (1.0f / 16777216.0f); }

static void init_model(MLP& net) {
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        L.in = kDims[l];
        L.out = kDims[l + 1];
        size_t nw = (size_t)L.in * L.out;
        L.W = dalloc(nw, WEIGHTS);
        L.b = dalloc(L.out, WEIGHTS);
        net.num_params += nw + L.out;
        // Kaiming-uniform init on the host
        std::vector<float> host(nw);
        float bound = sqrtf(6.0f / L.in);
        for (size_t i = 0; i < nw; i++) host[i] = (2.0f * next_uniform() - 1.0f) * bound;
        CUDA_CHECK(cudaMemcpy(L.W, host.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(L.b, 0, L.out * sizeof(float)));
    }
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        size_t nw = (size_t)L.in * L.out;
        L.dW = dalloc(nw, GRADIENTS);
        L.db = dalloc(L.out, GRADIENTS);
    }
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        size_t nw = (size_t)L.in * L.out;
        L.mW = dalloc(nw, OPTIMIZER);
        L.vW = dalloc(nw, OPTIMIZER);
        L.mb = dalloc(L.out, OPTIMIZER);
        L.vb = dalloc(L.out, OPTIMIZER);
        CUDA_CHECK(cudaMemset(L.mW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.mb, 0, L.out * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.vb, 0, L.out * sizeof(float)));
    }
}

static void init_train_buffers(TrainBuffers& tb) {
    tb.x = dalloc((size_t)kTrainBatch * kDims[0], ACTIVATIONS);
    tb.y = reinterpret_cast<int*>(dalloc(kTrainBatch, ACTIVATIONS, sizeof(int)));
    for (int l = 0; l < kNumLayers; l++) tb.h[l] = dalloc((size_t)kTrainBatch * kDims[l + 1], ACTIVATIONS);
    tb.dlogits = dalloc((size_t)kTrainBatch * kDims[kNumLayers], TEMPORARY);
    tb.dh[0] = dalloc((size_t)kTrainBatch * 1024, TEMPORARY);
    tb.dh[1] = dalloc((size_t)kTrainBatch * 1024, TEMPORARY);
    tb.losses = dalloc(kTrainBatch, TEMPORARY);
}

// ----------------------------------------------------------------------------
// synthetic data: class c's inputs cluster around a fixed pattern

static void make_batch(std::vector<float>& x, std::vector<int>& y, int rows) {
    x.resize((size_t)rows * kDims[0]);
    y.resize(rows);
    for (int r = 0; r < rows; r++) {
        int c = (int)(next_u32() % kDims[kNumLayers]);
        y[r] = c;
        for (int i = 0; i < kDims[0]; i++) {
            float center = ((i * 7 + c * 13) % 29 == 0) ? 1.0f : 0.0f;
            x[(size_t)r * kDims[0] + i] = center + 0.1f * (next_uniform() - 0.5f);
        }
    }
}

// ----------------------------------------------------------------------------
// training

static float train_step(MLP& net, TrainBuffers& tb, const std::vector<float>& hx, const std::vector<int>& hy,
                        int step) {
    const int B = kTrainBatch;
    g_mem.phase = STEP_START;
    CUDA_CHECK(cudaMemcpy(tb.x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(tb.y, hy.data(), hy.size() * sizeof(int), cudaMemcpyHostToDevice));
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        CUDA_CHECK(cudaMemset(L.dW, 0, (size_t)L.in * L.out * sizeof(float)));
        CUDA_CHECK(cudaMemset(L.db, 0, L.out * sizeof(float)));
    }

    g_mem.phase = FORWARD;
    const float* in = tb.x;
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        linear_forward(L, in, tb.h[l], B);
        bias_activation_kernel<<<blocks_for((size_t)B * L.out, 256), 256>>>(tb.h[l], L.b, B, L.out,
                                                                             l < kNumLayers - 1);
        CUDA_CHECK(cudaGetLastError());
        in = tb.h[l];
    }
    softmax_xent_kernel<<<B, 256>>>(tb.h[kNumLayers - 1], tb.y, tb.losses, tb.dlogits, B, kDims[kNumLayers]);
    CUDA_CHECK(cudaGetLastError());

    g_mem.phase = BACKWARD;
    const float one = 1.0f, zero = 0.0f;
    const float* dy = tb.dlogits;
    for (int l = kNumLayers - 1; l >= 0; l--) {
        Linear& L = net.layers[l];
        const float* x = (l == 0) ? tb.x : tb.h[l - 1];
        // dW (out, in) += dy^T @ x
        CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, B, &one, x, L.in, dy, L.out, &one,
                                 L.dW, L.in));
        bias_grad_kernel<<<blocks_for(L.out, 256), 256>>>(L.db, dy, B, L.out);
        CUDA_CHECK(cudaGetLastError());
        if (l > 0) {
            float* dx = tb.dh[l % 2];
            // dx (B, in) = dy @ W
            CUBLAS_CHECK(cublasSgemm(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, L.in, B, L.out, &one, L.W, L.in, dy, L.out,
                                     &zero, dx, L.in));
            relu_backward_kernel<<<blocks_for((size_t)B * L.in, 256), 256>>>(dx, tb.h[l - 1], (size_t)B * L.in);
            CUDA_CHECK(cudaGetLastError());
            dy = dx;
        }
    }

    g_mem.phase = OPTIMIZER_PHASE;
    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float bc1 = 1.0f - powf(beta1, (float)step), bc2 = 1.0f - powf(beta2, (float)step);
    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        size_t nw = (size_t)L.in * L.out;
        adamw_kernel<<<blocks_for(nw, 256), 256>>>(L.W, L.dW, L.mW, L.vW, nw, lr, beta1, beta2, bc1, bc2, eps, wd);
        CUDA_CHECK(cudaGetLastError());
        adamw_kernel<<<blocks_for(L.out, 256), 256>>>(L.b, L.db, L.mb, L.vb, L.out, lr, beta1, beta2, bc1, bc2, eps,
                                                      0.0f);
        CUDA_CHECK(cudaGetLastError());
    }

    std::vector<float> losses(B);
    CUDA_CHECK(cudaMemcpy(losses.data(), tb.losses, B * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (float v : losses) sum += v;
    return (float)(sum / B);
}

// forward-only evaluation over the whole held-out set in batches of eval_batch rows;
// returns the accuracy and counts the completed batch forward passes
static float evaluate(MLP& net, const std::vector<float>& ex, const std::vector<int>& ey, int eval_batch,
                      int* forward_passes) {
    g_mem.phase = EVALUATION;
    const int num_batches = kEvalRows / eval_batch;
    std::vector<float*> all_logits;
    std::vector<int*> all_labels;
    for (int bi = 0; bi < num_batches; bi++) {
        size_t row0 = (size_t)bi * eval_batch;
        float* x = dalloc((size_t)eval_batch * kDims[0], TEMPORARY);
        CUDA_CHECK(cudaMemcpy(x, ex.data() + row0 * kDims[0], (size_t)eval_batch * kDims[0] * sizeof(float),
                              cudaMemcpyHostToDevice));
        int* labels = reinterpret_cast<int*>(dalloc(eval_batch, TEMPORARY, sizeof(int)));
        CUDA_CHECK(cudaMemcpy(labels, ey.data() + row0, eval_batch * sizeof(int), cudaMemcpyHostToDevice));
        all_labels.push_back(labels);

        float* in = x;
        for (int l = 0; l < kNumLayers; l++) {
            Linear& L = net.layers[l];
            float* out = dalloc((size_t)eval_batch * L.out, TEMPORARY);
            linear_forward(L, in, out, eval_batch);
            bias_activation_kernel<<<blocks_for((size_t)eval_batch * L.out, 256), 256>>>(out, L.b, eval_batch, L.out,
                                                                                         l < kNumLayers - 1);
            CUDA_CHECK(cudaGetLastError());
            dfree(in);  // the layer's input is no longer needed
            in = out;
        }
        all_logits.push_back(in);
        (*forward_passes)++;
    }

    int* correct = reinterpret_cast<int*>(dalloc(1, TEMPORARY, sizeof(int)));
    CUDA_CHECK(cudaMemset(correct, 0, sizeof(int)));
    for (int bi = 0; bi < num_batches; bi++) {
        accuracy_kernel<<<blocks_for((size_t)eval_batch * 32, 256), 256>>>(all_logits[bi], all_labels[bi], eval_batch,
                                                                           kDims[kNumLayers], correct);
        CUDA_CHECK(cudaGetLastError());
    }
    int host_correct = 0;
    CUDA_CHECK(cudaMemcpy(&host_correct, correct, sizeof(int), cudaMemcpyDeviceToHost));
    dfree(correct);
    for (float* p : all_logits) dfree(p);
    for (int* p : all_labels) dfree(p);
    return (float)host_correct / kEvalRows;
}

static void print_ledger(int steps, int forward_passes, size_t params) {
    printf("ledger {\"program\":\"h02_oom_in_eval\",\"kind\":\"training\",\"steps\":%d,\"micro_batches_per_step\":1,"
           "\"forward_passes\":%d,\"params\":%zu,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"adamw\",\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           steps, forward_passes, params, g_mem.peak);
    for (int p = 0; p < NUM_PURPOSES; p++) printf("%s\"%s\":%zu", p ? "," : "", kPurposeNames[p], g_mem.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!g_mem.oom) {
        printf("null}\n");
        return;
    }
    int dominant = 0;
    for (int p = 1; p < NUM_PURPOSES; p++)
        if (g_mem.oom_live_by[p] > g_mem.oom_live_by[dominant]) dominant = p;
    printf("{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,\"live_bytes\":%zu,"
           "\"live_by_purpose\":{",
           g_mem.oom_requested, kPurposeNames[g_mem.oom_purpose], kPhaseNames[g_mem.oom_phase], g_mem.oom_step,
           g_mem.oom_live);
    for (int p = 0; p < NUM_PURPOSES; p++)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeNames[p], g_mem.oom_live_by[p]);
    printf("},\"dominant\":\"%s\"}}\n", kPurposeNames[dominant]);
}

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    CUBLAS_CHECK(cublasCreate(&g_cublas));

    MLP net;
    TrainBuffers tb;
    int steps_done = 0, forward_passes = 0;
    try {
        g_mem.phase = SETUP;
        g_mem.step = 0;
        init_model(net);
        init_train_buffers(tb);
        printf("MLP %d-%d-%d-%d-%d: %zu parameters\n", kDims[0], kDims[1], kDims[2], kDims[3], kDims[4],
               net.num_params);

        std::vector<float> ex;
        std::vector<int> ey;
        make_batch(ex, ey, kEvalRows);  // held-out set, kept on the host

        std::vector<float> hx;
        std::vector<int> hy;
        for (int step = 1; step <= kTrainSteps; step++) {
            g_mem.step = step;
            make_batch(hx, hy, kTrainBatch);
            float loss = train_step(net, tb, hx, hy, step);
            forward_passes++;
            steps_done = step;
            printf("step %d: loss %.4f\n", step, loss);
            if (step % kEvalEvery == 0) {
                // final evaluation: the whole held-out set as one batch
                int eval_batch = (step == kTrainSteps) ? kEvalRows : kPeriodicEvalBatch;
                float acc = evaluate(net, ex, ey, eval_batch, &forward_passes);
                printf("eval after step %d (batch %d): accuracy %.4f\n", step, eval_batch, acc);
            }
        }
    } catch (const OutOfMemory& e) {
        fflush(stdout);
        fprintf(stderr, "out of memory: cudaMalloc of %zu bytes failed during %s (step %d)\n", e.requested,
                kPhaseNames[g_mem.oom_phase], g_mem.oom_step);
        print_ledger(steps_done, forward_passes, net.num_params);
        fflush(stdout);
        exit(3);
    }

    for (int l = 0; l < kNumLayers; l++) {
        Linear& L = net.layers[l];
        float* ptrs[] = {L.W, L.b, L.dW, L.db, L.mW, L.vW, L.mb, L.vb};
        for (float* p : ptrs) dfree(p);
    }
    dfree(tb.x);
    dfree(tb.y);
    for (int l = 0; l < kNumLayers; l++) dfree(tb.h[l]);
    dfree(tb.dlogits);
    dfree(tb.dh[0]);
    dfree(tb.dh[1]);
    dfree(tb.losses);
    CUBLAS_CHECK(cublasDestroy(g_cublas));
    print_ledger(steps_done, forward_passes, net.num_params);
    return 0;
}

// corpus-env: ANATOMIST_SIM_MEMORY=54MiB
//
// c13_oom_step_start — fine-tuning an fp32 MLP head with a batch-size ramp until the
// device runs out of memory at the start of a step.
//
// Spec: a 3-layer fp32 MLP on flattened 32x32x3 images (3072 -> 512 -> 512 -> 100,
// ReLU, softmax cross-entropy, GEMMs through cublasSgemm). The first layer is a
// pretrained feature layer kept frozen; the two layers above it are trained with
// SGD + momentum (lr 0.02, momentum 0.9). All weights, the gradients of the trainable
// layers (persistent, cudaMemset to zero at the start of every step) and the momentum
// buffers are per-tensor cudaMallocs made before the first step. Each step begins by
// allocating ONE arena (one cudaMalloc sized by the batch) that holds the step's
// input batch, its labels and every activation kept for backward; backward takes a
// scratch buffer (gradients w.r.t. activations, per-row losses, the loss scalar) for
// its duration; the arena is freed at the end of the step. The batch starts at 64
// and doubles after every step; on a 54 MiB device (cuBLAS's own 32 MiB default
// workspace included) 4 steps complete and the arena of step 5 (batch 1024) fails
// before any forward kernel. The program catches cudaErrorMemoryAllocation, prints
// the ledger with `oom` filled (phase step_start) and exits with status 3.

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

// ---------------------------------------------------------------- ledger

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char* kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary",
                                            "functionality", "mixed"};
enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char* kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
    struct Alloc { size_t bytes; Purpose purpose; };
    std::map<void*, Alloc> live;
    size_t by[P_COUNT] = {0};
    size_t total = 0, peak = 0;
    size_t peak_by[P_COUNT] = {0};

    bool oom = false;
    size_t oom_requested = 0;
    Purpose oom_purpose = P_WEIGHTS;
    Phase oom_phase = PH_SETUP;
    int oom_step = 0;
    size_t oom_live = 0;
    size_t oom_by[P_COUNT] = {0};
};
static Ledger g_ledger;
static Phase g_phase = PH_SETUP;
static int g_step = 0;

// Returns nullptr on cudaErrorMemoryAllocation (recorded in the ledger); any other
// failure is fatal.
static void* dev_malloc(size_t bytes, Purpose pu, const char* what) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        Ledger& L = g_ledger;
        L.oom = true;
        L.oom_requested = bytes;
        L.oom_purpose = pu;
        L.oom_phase = g_phase;
        L.oom_step = g_step;
        L.oom_live = L.total;
        memcpy(L.oom_by, L.by, sizeof L.by);
        fprintf(stderr, "CUDA out of memory: tried to allocate %zu bytes for %s (step %d)\n",
                bytes, what, g_step);
        return nullptr;
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) for %s failed: %s\n", bytes, what, cudaGetErrorString(e));
        exit(1);
    }
    Ledger& L = g_ledger;
    L.live[p] = {bytes, pu};
    L.by[pu] += bytes;
    L.total += bytes;
    if (L.total > L.peak) {
        L.peak = L.total;
        memcpy(L.peak_by, L.by, sizeof L.by);
    }
    return p;
}

static void* dev_malloc_or_die(size_t bytes, Purpose pu, const char* what) {
    void* p = dev_malloc(bytes, pu, what);
    if (!p) exit(1);
    return p;
}

static void dev_free(void* p) {
    auto it = g_ledger.live.find(p);
    if (it == g_ledger.live.end()) { fprintf(stderr, "ledger: unknown free %p\n", p); exit(1); }
    g_ledger.by[it->second.purpose] -= it->second.bytes;
    g_ledger.total -= it->second.bytes;
    g_ledger.live.erase(it);
    CK(cudaFree(p));
}

// ---------------------------------------------------------------- kernels

// Y[r, c] = act(Y[r, c] + b[c])   (row-major B x cols)
__global__ void bias_act_kernel(float* Y, const float* b, int rows, int cols, int relu) {
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = Y[i] + b[i % cols];
        Y[i] = relu ? fmaxf(v, 0.f) : v;
    }
}

// one block per row: dlogits = (softmax - onehot) / B, rowloss = -log p[label]
__global__ void softmax_xent_kernel(const float* logits, const int* labels, float* dlogits,
                                    float* rowloss, int B, int C) {
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

__global__ void mean_kernel(const float* v, int n, float* out) {
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

// db[c] += sum_r dY[r, c]
__global__ void bias_grad_kernel(const float* dY, float* db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; ++r) s += dY[(size_t)r * cols + c];
    db[c] += s;
}

__global__ void relu_backward_kernel(float* dH, const float* H, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (H[i] <= 0.f) dH[i] = 0.f;
}

__global__ void sgd_momentum_kernel(size_t n, float* w, float* v, const float* g, float lr,
                                    float mu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float vi = mu * v[i] + g[i];
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

static int grid_for(size_t n, int block) {
    size_t g = (n + block - 1) / block;
    return (int)(g > 4096 ? 4096 : g);
}

// ---------------------------------------------------------------- model

struct Linear {
    int in, out;
    bool trainable;
    float *W = nullptr, *b = nullptr;    // W row-major [out x in]
    float *gW = nullptr, *gb = nullptr;  // gradients (trainable only)
    float *vW = nullptr, *vb = nullptr;  // momentum (trainable only)
    size_t nW() const { return (size_t)in * out; }
};

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static inline uint32_t lcg() {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}
static inline float urand() { return (lcg() & 0xFFFFFF) / 16777216.0f; }

static void make_linear(Linear& L, int in, int out, bool trainable) {
    L.in = in;
    L.out = out;
    L.trainable = trainable;
    L.W = (float*)dev_malloc_or_die(L.nW() * 4, P_WEIGHTS, "weight");
    L.b = (float*)dev_malloc_or_die((size_t)out * 4, P_WEIGHTS, "bias");
    std::vector<float> h(L.nW());
    float bound = 1.0f / sqrtf((float)in);
    for (auto& x : h) x = (2.f * urand() - 1.f) * bound;
    CK(cudaMemcpy(L.W, h.data(), L.nW() * 4, cudaMemcpyHostToDevice));
    for (int i = 0; i < out; ++i) h[i] = (2.f * urand() - 1.f) * bound;
    CK(cudaMemcpy(L.b, h.data(), (size_t)out * 4, cudaMemcpyHostToDevice));
}

static void make_grads(Linear& L) {
    L.gW = (float*)dev_malloc_or_die(L.nW() * 4, P_GRADIENTS, "weight grad");
    L.gb = (float*)dev_malloc_or_die((size_t)L.out * 4, P_GRADIENTS, "bias grad");
}

static void make_momentum(Linear& L) {
    L.vW = (float*)dev_malloc_or_die(L.nW() * 4, P_OPTIMIZER, "weight momentum");
    L.vb = (float*)dev_malloc_or_die((size_t)L.out * 4, P_OPTIMIZER, "bias momentum");
    CK(cudaMemset(L.vW, 0, L.nW() * 4));
    CK(cudaMemset(L.vb, 0, (size_t)L.out * 4));
}

// Row-major Y[B x out] = X[B x in] * W^T  (column-major: Y^T = W_cm^T * X^T)
static void linear_forward(cublasHandle_t h, const Linear& L, const float* X, float* Y, int B,
                           bool relu) {
    const float one = 1.f, zero = 0.f;
    CB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, L.out, B, L.in, &one, L.W, L.in, X, L.in, &zero,
                   Y, L.out));
    bias_act_kernel<<<grid_for((size_t)B * L.out, 256), 256>>>(Y, L.b, B, L.out, relu ? 1 : 0);
    CK_LAUNCH();
}

// gW[out x in] += dY^T X ; gb += colsum(dY) ; dX = dY W (if dX)
static void linear_backward(cublasHandle_t h, const Linear& L, const float* X, const float* dY,
                            float* dX, int B) {
    const float one = 1.f, zero = 0.f;
    CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, L.in, L.out, B, &one, X, L.in, dY, L.out, &one,
                   L.gW, L.in));
    bias_grad_kernel<<<(L.out + 255) / 256, 256>>>(dY, L.gb, B, L.out);
    CK_LAUNCH();
    if (dX)
        CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, L.in, B, L.out, &one, L.W, L.in, dY, L.out,
                       &zero, dX, L.in));
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// ---------------------------------------------------------------- ledger output

static void print_ledger(int steps, int forward_passes, long long params) {
    const Ledger& L = g_ledger;
    std::string s = "{\"program\":\"c13_oom_step_start\",\"kind\":\"training\"";
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
             "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"sgd_momentum\","
             "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
             steps, forward_passes, params, L.peak);
    s += buf;
    size_t sum = 0;
    for (int p = 0; p < P_COUNT; ++p) {
        snprintf(buf, sizeof buf, "%s\"%s\":%zu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
        s += buf;
        sum += L.peak_by[p];
    }
    if (sum != L.peak) { fprintf(stderr, "ledger: peak split does not add up\n"); exit(1); }
    s += "},\"pools_at_peak\":[],\"oom\":";
    if (!L.oom) {
        s += "null";
    } else {
        int dom = 0;
        size_t lsum = 0;
        for (int p = 0; p < P_COUNT; ++p) {
            if (L.oom_by[p] > L.oom_by[dom]) dom = p;
            lsum += L.oom_by[p];
        }
        if (lsum != L.oom_live) { fprintf(stderr, "ledger: oom split does not add up\n"); exit(1); }
        snprintf(buf, sizeof buf,
                 "{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
                 "\"live_bytes\":%zu,\"live_by_purpose\":{",
                 L.oom_requested, kPurposeName[L.oom_purpose], kPhaseName[L.oom_phase],
                 L.oom_step, L.oom_live);
        s += buf;
        for (int p = 0; p < P_COUNT; ++p) {
            snprintf(buf, sizeof buf, "%s\"%s\":%zu", p ? "," : "", kPurposeName[p], L.oom_by[p]);
            s += buf;
        }
        snprintf(buf, sizeof buf, "},\"dominant\":\"%s\"}", kPurposeName[dom]);
        s += buf;
    }
    s += "}";
    printf("ledger %s\n", s.c_str());
    fflush(stdout);
}

// ---------------------------------------------------------------- main

int main() {
    const int D_IN = 3072, H = 512, C = 100;
    const int MAX_STEPS = 8;
    const float LR = 0.02f, MU = 0.9f;

    CK(cudaSetDevice(0));
    cublasHandle_t blas;
    CB(cublasCreate(&blas));

    // ---- set-up: frozen feature layer + trainable head
    Linear L0, L1, L2;
    make_linear(L0, D_IN, H, false);  // pretrained, frozen
    make_linear(L1, H, H, true);
    make_linear(L2, H, C, true);
    Linear* trainable[2] = {&L1, &L2};
    long long n_params = 0;
    for (Linear* L : trainable) {
        make_grads(*L);
        n_params += (long long)L->nW() + L->out;
    }
    for (Linear* L : trainable) make_momentum(*L);

    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    printf("model ready: %lld trainable params, device free %zu of %zu bytes\n", n_params, free_b,
           total_b);

    int steps_done = 0, forward_passes = 0;
    int batch = 64;
    std::vector<float> hx;
    std::vector<int> hy;

    for (int step = 1; step <= MAX_STEPS; ++step, batch *= 2) {
        g_step = step;
        const int B = batch;

        // ---- step start: one arena for the batch and every activation kept for backward
        g_phase = PH_STEP_START;
        const size_t A = 256;
        size_t off_x = 0;
        size_t off_y = align_up(off_x + (size_t)B * D_IN * 4, A);
        size_t off_h1 = align_up(off_y + (size_t)B * 4, A);
        size_t off_h2 = align_up(off_h1 + (size_t)B * H * 4, A);
        size_t off_lg = align_up(off_h2 + (size_t)B * H * 4, A);
        size_t arena_bytes = align_up(off_lg + (size_t)B * C * 4, A);
        char* arena = (char*)dev_malloc(arena_bytes, P_ACTIVATIONS, "step arena");
        if (!arena) {
            // release everything, then report
            for (Linear* L : trainable) {
                dev_free(L->vW); dev_free(L->vb); dev_free(L->gW); dev_free(L->gb);
            }
            for (Linear* L : {&L0, &L1, &L2}) { dev_free(L->W); dev_free(L->b); }
            CB(cublasDestroy(blas));
            printf("out of memory at the start of step %d (batch %d): stopping\n", step, B);
            print_ledger(steps_done, forward_passes, n_params);
            return 3;
        }
        float* x = (float*)(arena + off_x);
        int* y = (int*)(arena + off_y);
        float* h1 = (float*)(arena + off_h1);
        float* h2 = (float*)(arena + off_h2);
        float* logits = (float*)(arena + off_lg);

        hx.resize((size_t)B * D_IN);
        hy.resize(B);
        for (int r = 0; r < B; ++r) {
            int cls = (int)(lcg() % C);
            hy[r] = cls;
            for (int c = 0; c < D_IN; ++c)
                hx[(size_t)r * D_IN + c] =
                    ((c * 13 + cls * 7) % 101) / 101.f - 0.5f + 0.2f * (urand() - 0.5f);
        }
        CK(cudaMemcpy(x, hx.data(), (size_t)B * D_IN * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(y, hy.data(), (size_t)B * 4, cudaMemcpyHostToDevice));
        for (Linear* L : trainable) {
            CK(cudaMemset(L->gW, 0, L->nW() * 4));
            CK(cudaMemset(L->gb, 0, (size_t)L->out * 4));
        }

        // ---- forward
        g_phase = PH_FORWARD;
        linear_forward(blas, L0, x, h1, B, true);
        linear_forward(blas, L1, h1, h2, B, true);
        linear_forward(blas, L2, h2, logits, B, false);
        ++forward_passes;

        // ---- backward (scratch for activation gradients and the loss)
        g_phase = PH_BACKWARD;
        size_t s_dl = 0;
        size_t s_dh2 = align_up(s_dl + (size_t)B * C * 4, A);
        size_t s_row = align_up(s_dh2 + (size_t)B * H * 4, A);
        size_t s_loss = align_up(s_row + (size_t)B * 4, A);
        size_t scratch_bytes = align_up(s_loss + 4, A);
        char* scratch = (char*)dev_malloc_or_die(scratch_bytes, P_TEMPORARY, "backward scratch");
        float* dlogits = (float*)(scratch + s_dl);
        float* dh2 = (float*)(scratch + s_dh2);
        float* rowloss = (float*)(scratch + s_row);
        float* loss = (float*)(scratch + s_loss);

        softmax_xent_kernel<<<B, 256>>>(logits, y, dlogits, rowloss, B, C);
        CK_LAUNCH();
        mean_kernel<<<1, 256>>>(rowloss, B, loss);
        CK_LAUNCH();
        float hloss = 0.f;
        CK(cudaMemcpy(&hloss, loss, 4, cudaMemcpyDeviceToHost));

        linear_backward(blas, L2, h2, dlogits, dh2, B);
        relu_backward_kernel<<<grid_for((size_t)B * H, 256), 256>>>(dh2, h2, (size_t)B * H);
        CK_LAUNCH();
        linear_backward(blas, L1, h1, dh2, nullptr, B);  // L0 is frozen: no dX needed
        dev_free(scratch);

        // ---- optimizer
        g_phase = PH_OPTIMIZER;
        for (Linear* L : trainable) {
            sgd_momentum_kernel<<<grid_for(L->nW(), 256), 256>>>(L->nW(), L->W, L->vW, L->gW, LR, MU);
            CK_LAUNCH();
            sgd_momentum_kernel<<<grid_for(L->out, 256), 256>>>(L->out, L->b, L->vb, L->gb, LR, MU);
            CK_LAUNCH();
        }
        CK(cudaDeviceSynchronize());
        dev_free(arena);
        ++steps_done;
        printf("step %d  batch %d  loss %.4f  arena %zu B  scratch %zu B\n", step, B, hloss,
               arena_bytes, scratch_bytes);
    }

    for (Linear* L : trainable) {
        dev_free(L->vW); dev_free(L->vb); dev_free(L->gW); dev_free(L->gb);
    }
    for (Linear* L : {&L0, &L1, &L2}) { dev_free(L->W); dev_free(L->b); }
    CB(cublasDestroy(blas));
    print_ledger(steps_done, forward_passes, n_params);
    return 0;
}

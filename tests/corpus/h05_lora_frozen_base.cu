// h05_lora_frozen_base.cu
//
// LoRA fine-tuning of a small frozen bf16 model. The base model is a stack of 4 linear
// layers of width 1024 (ReLU between them) whose bf16 weights are loaded from the host
// once and never updated. Each layer carries a trainable fp32 low-rank adapter of rank 16
// (A: r x in, B: out x r, B starts at zero, scale alpha/r = 2), so a layer computes
// y = W x + s * B (A x). The base GEMMs run in bf16 with cublasGemmEx (fp32 output), the
// adapter GEMMs with cublasSgemm. The task is feature regression (MSE against a target).
// Only the adapters have gradients: persistent fp32 buffers, zeroed with cudaMemset at the
// start of every step and accumulated into by the backward GEMMs. AdamW moments are
// allocated lazily at the first optimizer update. The activations saved for backward
// (each layer's input and the adapter's rank-r projection) are allocated layer by layer
// in forward and freed layer by layer in backward; conversions to bf16 and
// gradients with respect to activations are scratch. 5 optimizer steps of 4 x 32 tokens.
// Kernels carry terse names (kA...kE). The ledger counts only the adapters as params.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <unordered_map>

#include <cuda_runtime.h>
#include <cuda_bf16.h>
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

struct Ledger {
    std::unordered_map<void *, std::pair<size_t, int>> live;
    size_t live_total = 0;
    size_t live_by[NUM_PURPOSES] = {};
    size_t peak = 0;
    size_t peak_by[NUM_PURPOSES] = {};
};
static Ledger g_ledger;

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
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
// kernels

// fp32 -> bf16
__global__ void kA(const float *__restrict__ x, __nv_bfloat16 *__restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(x[i]);
}

// in-place ReLU
__global__ void kB(float *__restrict__ x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = fmaxf(x[i], 0.0f);
}

// MSE loss and its gradient: g = 2 (y - t) / n, loss += sum (y - t)^2 / n
__global__ void kC(const float *__restrict__ y, const float *__restrict__ t,
                   float *__restrict__ g, float *__restrict__ loss, int n) {
    __shared__ float part[256];
    float inv_n = 1.0f / (float)n;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float d = y[i] - t[i];
        g[i] = 2.0f * d * inv_n;
        acc += d * d;
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, part[0] * inv_n);
}

// ReLU backward, in place: g = h > 0 ? g : 0 (h is the ReLU's output)
__global__ void kD(float *__restrict__ g, const float *__restrict__ h, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (h[i] <= 0.0f) g[i] = 0.0f;
}

// AdamW
__global__ void kE(float *__restrict__ w, const float *__restrict__ g, float *__restrict__ m,
                   float *__restrict__ v, int n, float lr, float b1, float b2, float eps,
                   float wd, float bc1, float bc2) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mh = mi / bc1, vh = vi / bc2;
        w[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * w[i]);
    }
}

static int grid_for(int n, int block) {
    int g = (n + block - 1) / block;
    return g > 1024 ? 1024 : g;
}

// ---------------------------------------------------------------------------------------
// model

static const int kLayers = 4;
static const int kDim = 1024;      // width of every layer
static const int kRank = 16;       // LoRA rank
static const float kAlpha = 32.0f; // LoRA alpha
static const int kBatch = 4;
static const int kSeq = 32;
static const int kTokens = kBatch * kSeq;
static const int kSteps = 5;

struct Layer {
    __nv_bfloat16 *W = nullptr; // frozen base weight, row-major out x in
    float *A = nullptr;         // adapter down-projection, row-major r x in
    float *B = nullptr;         // adapter up-projection, row-major out x r
    float *dA = nullptr, *dB = nullptr;
    float *mA = nullptr, *vA = nullptr, *mB = nullptr, *vB = nullptr; // lazily
    // saved for backward
    float *h_in = nullptr;      // layer input (fp32), the batch for layer 0
    float *u = nullptr;         // A x, r x tokens
};

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static float frand() { // uniform in [-1, 1)
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

int main() {
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    const float s = kAlpha / kRank;
    const size_t wN = (size_t)kDim * kDim;
    const size_t aN = (size_t)kRank * kDim;
    const size_t bN = (size_t)kDim * kRank;
    const size_t actN = (size_t)kTokens * kDim;

    // ---- load the frozen base model (host checkpoint -> bf16 on device) and the adapters
    Layer L[kLayers];
    {
        std::vector<__nv_bfloat16> hW(wN);
        std::vector<float> hA(aN), hB(bN, 0.0f);
        const float wscale = 1.0f / sqrtf((float)kDim);
        for (int l = 0; l < kLayers; ++l) {
            for (size_t i = 0; i < wN; ++i) hW[i] = __float2bfloat16(frand() * wscale);
            L[l].W = dev_alloc<__nv_bfloat16>(wN, WEIGHTS);
            CUDA_CHECK(cudaMemcpy(L[l].W, hW.data(), wN * sizeof(__nv_bfloat16),
                                  cudaMemcpyHostToDevice));
        }
        for (int l = 0; l < kLayers; ++l) {
            for (size_t i = 0; i < aN; ++i) hA[i] = frand() * wscale; // kaiming-ish A
            L[l].A = dev_alloc<float>(aN, WEIGHTS);
            L[l].B = dev_alloc<float>(bN, WEIGHTS);                    // B = 0
            CUDA_CHECK(cudaMemcpy(L[l].A, hA.data(), aN * sizeof(float), cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(L[l].B, hB.data(), bN * sizeof(float), cudaMemcpyHostToDevice));
            L[l].dA = dev_alloc<float>(aN, GRADIENTS);
            L[l].dB = dev_alloc<float>(bN, GRADIENTS);
        }
    }
    const long long trainable = (long long)kLayers * (long long)(aN + bN);

    // ---- input batch and regression targets (refilled every step)
    float *d_x = dev_alloc<float>(actN, ACTIVATIONS);
    float *d_t = dev_alloc<float>(actN, ACTIVATIONS);
    std::vector<float> hx(actN), ht(actN);

    const float lr = 2e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float one = 1.0f, zero = 0.0f;
    const int TB = 256;
    int forward_passes = 0, steps_done = 0;

    for (int step = 1; step <= kSteps; ++step) {
        // ---- step start: data and zero_grad
        for (size_t i = 0; i < actN; ++i) hx[i] = frand();
        for (size_t i = 0; i < actN; ++i) ht[i] = 0.5f * frand();
        CUDA_CHECK(cudaMemcpy(d_x, hx.data(), actN * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_t, ht.data(), actN * sizeof(float), cudaMemcpyHostToDevice));
        for (int l = 0; l < kLayers; ++l) {
            CUDA_CHECK(cudaMemset(L[l].dA, 0, aN * sizeof(float)));
            CUDA_CHECK(cudaMemset(L[l].dB, 0, bN * sizeof(float)));
        }

        // ---- forward
        // Column-major view: a row-major [tokens x dim] activation is a dim x tokens matrix.
        float *h = d_x;
        float *out = nullptr;
        for (int l = 0; l < kLayers; ++l) {
            __nv_bfloat16 *xb = dev_alloc<__nv_bfloat16>(actN, TEMPORARY);
            kA<<<grid_for((int)actN, TB), TB>>>(h, xb, (int)actN);
            LAUNCH_CHECK();
            float *z = dev_alloc<float>(actN, ACTIVATIONS);
            // z = W x   (bf16 x bf16 -> fp32)
            CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, kDim, kTokens, kDim, &one,
                                      L[l].W, CUDA_R_16BF, kDim, xb, CUDA_R_16BF, kDim, &zero,
                                      z, CUDA_R_32F, kDim, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
            dev_free(xb);
            // u = A x ; z += s * B u
            float *u = dev_alloc<float>((size_t)kRank * kTokens, ACTIVATIONS);
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kRank, kTokens, kDim, &one,
                                     L[l].A, kDim, h, kDim, &zero, u, kRank));
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kDim, kTokens, kRank, &s,
                                     L[l].B, kRank, u, kRank, &one, z, kDim));
            L[l].h_in = h;
            L[l].u = u;
            if (l + 1 < kLayers) {
                kB<<<grid_for((int)actN, TB), TB>>>(z, (int)actN);
                LAUNCH_CHECK();
                h = z;
            } else {
                out = z;
            }
        }
        ++forward_passes;

        // ---- backward
        float *loss = dev_alloc<float>(1, TEMPORARY);
        CUDA_CHECK(cudaMemset(loss, 0, sizeof(float)));
        float *dy = dev_alloc<float>(actN, TEMPORARY);
        kC<<<grid_for((int)actN, TB), TB>>>(out, d_t, dy, loss, (int)actN);
        LAUNCH_CHECK();
        dev_free(out);
        for (int l = kLayers - 1; l >= 0; --l) {
            float *hin = L[l].h_in;
            float *u = L[l].u;
            // dB += s * dy u^T
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kRank, kDim, kTokens, &s,
                                     u, kRank, dy, kDim, &one, L[l].dB, kRank));
            // du = s * B^T dy
            float *du = dev_alloc<float>((size_t)kRank * kTokens, TEMPORARY);
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kRank, kTokens, kDim, &s,
                                     L[l].B, kRank, dy, kDim, &zero, du, kRank));
            // dA += du x^T
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kDim, kRank, kTokens, &one,
                                     hin, kDim, du, kRank, &one, L[l].dA, kDim));
            dev_free(u);
            L[l].u = nullptr;
            float *dx = nullptr;
            if (l > 0) {
                // dx = W^T dy (frozen, bf16) + A^T du, then through the previous ReLU
                __nv_bfloat16 *dyb = dev_alloc<__nv_bfloat16>(actN, TEMPORARY);
                kA<<<grid_for((int)actN, TB), TB>>>(dy, dyb, (int)actN);
                LAUNCH_CHECK();
                dx = dev_alloc<float>(actN, TEMPORARY);
                CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kTokens, kDim,
                                          &one, L[l].W, CUDA_R_16BF, kDim, dyb, CUDA_R_16BF,
                                          kDim, &zero, dx, CUDA_R_32F, kDim, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
                dev_free(dyb);
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kTokens, kRank,
                                         &one, L[l].A, kDim, du, kRank, &one, dx, kDim));
                kD<<<grid_for((int)actN, TB), TB>>>(dx, hin, (int)actN);
                LAUNCH_CHECK();
                dev_free(hin); // the previous layer's ReLU output, saved for this layer
            }
            L[l].h_in = nullptr;
            dev_free(du);
            dev_free(dy);
            dy = dx;
        }

        // ---- optimizer: AdamW on the adapters only; states created on first use
        const float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
        for (int l = 0; l < kLayers; ++l) {
            if (!L[l].mA) {
                L[l].mA = dev_alloc<float>(aN, OPTIMIZER);
                L[l].vA = dev_alloc<float>(aN, OPTIMIZER);
                L[l].mB = dev_alloc<float>(bN, OPTIMIZER);
                L[l].vB = dev_alloc<float>(bN, OPTIMIZER);
                CUDA_CHECK(cudaMemset(L[l].mA, 0, aN * sizeof(float)));
                CUDA_CHECK(cudaMemset(L[l].vA, 0, aN * sizeof(float)));
                CUDA_CHECK(cudaMemset(L[l].mB, 0, bN * sizeof(float)));
                CUDA_CHECK(cudaMemset(L[l].vB, 0, bN * sizeof(float)));
            }
            kE<<<grid_for((int)aN, TB), TB>>>(L[l].A, L[l].dA, L[l].mA, L[l].vA, (int)aN, lr, b1,
                                              b2, eps, wd, bc1, bc2);
            LAUNCH_CHECK();
            kE<<<grid_for((int)bN, TB), TB>>>(L[l].B, L[l].dB, L[l].mB, L[l].vB, (int)bN, lr, b1,
                                              b2, eps, wd, bc1, bc2);
            LAUNCH_CHECK();
        }
        ++steps_done;

        float hloss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&hloss, loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(loss);
        printf("step %d loss %.6f\n", step, hloss);
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    // ---- tear down
    for (int l = 0; l < kLayers; ++l) {
        dev_free(L[l].W); dev_free(L[l].A); dev_free(L[l].B);
        dev_free(L[l].dA); dev_free(L[l].dB);
        dev_free(L[l].mA); dev_free(L[l].vA); dev_free(L[l].mB); dev_free(L[l].vB);
    }
    dev_free(d_x);
    dev_free(d_t);
    CUBLAS_CHECK(cublasDestroy(blas));

    printf("ledger {\"program\":\"h05_lora_frozen_base\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
           "\"param_dtype\":\"bf16\",\"master_weights\":false,\"optimizer\":\"adamw\","
           "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           steps_done, forward_passes, trainable, g_ledger.peak);
    for (int p = 0; p < NUM_PURPOSES; ++p)
        printf("%s\"%s\":%zu", p ? "," : "", kPurposeName[p], g_ledger.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

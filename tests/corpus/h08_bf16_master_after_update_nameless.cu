// h08_bf16_master_after_update_nameless
//
// bf16 mixed-precision training of a 5-layer MLP (768 wide, Linear+bias, ReLU between
// layers, softmax cross-entropy over 768 classes on the last layer's output) for 4 steps.
// The fp32 master weights are kept one cudaMalloc per tensor (W and b of every layer), and
// the forward/backward passes read a bf16 working copy that lives in one flat cudaMalloc.
// That working copy is refreshed by a cast kernel right AFTER each optimizer update (and
// once before the first step), not before the forward pass. The optimizer is SGD with
// momentum on the fp32 master (one fp32 momentum buffer per tensor). The bf16 parameter
// gradients live in one persistent flat buffer that is zeroed with cudaMemsetAsync at the
// start of every step (weight-gradient GEMMs accumulate into it with beta = 1). GEMMs are
// cublasGemmEx with bf16 A/B/C and CUBLAS_COMPUTE_32F. The input batch, the labels and all
// activations kept for backward live in one arena cudaMalloc'd once before the first step.
// Gradients w.r.t. activations use two ping-pong scratch buffers and per-row losses one
// small buffer, all allocated once at set-up. All kernels carry short meaningless names
// (k0, k1, ..., fused_5). The last stdout line is the ledger of LEDGER.md.

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

// ---------------------------------------------------------------- error checks
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
    exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, (int)s_); \
    exit(1); } } while (0)
#define CL() CK(cudaGetLastError())

// ---------------------------------------------------------------- ledger bookkeeping
enum Purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, MIXED, NPURP };
static const char *kPurposeName[NPURP] = {"weights", "optimizer", "gradients", "activations",
                                          "temporary", "functionality", "mixed"};

struct Book {
    long long live[NPURP] = {0};
    long long live_total = 0;
    long long peak = 0;
    long long peak_split[NPURP] = {0};
    struct Rec { void *p; size_t bytes; Purpose purpose; };
    std::vector<Rec> recs;
};
static Book g_book;

static void *dev_alloc(size_t bytes, Purpose purpose) {
    void *p = nullptr;
    CK(cudaMalloc(&p, bytes));
    g_book.recs.push_back({p, bytes, purpose});
    g_book.live[purpose] += (long long)bytes;
    g_book.live_total += (long long)bytes;
    if (g_book.live_total > g_book.peak) {
        g_book.peak = g_book.live_total;
        memcpy(g_book.peak_split, g_book.live, sizeof(g_book.live));
    }
    return p;
}

static void dev_free(void *p) {
    if (!p) return;
    for (size_t i = 0; i < g_book.recs.size(); ++i) {
        if (g_book.recs[i].p == p) {
            CK(cudaFree(p));
            g_book.live[g_book.recs[i].purpose] -= (long long)g_book.recs[i].bytes;
            g_book.live_total -= (long long)g_book.recs[i].bytes;
            g_book.recs.erase(g_book.recs.begin() + i);
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------- model shape
static const int kLayers = 5;
static const int kWidth = 768;
static const int kBatch = 256;
static const int kSteps = 4;
static const float kLr = 0.01f;
static const float kMomentum = 0.9f;
static const float kWeightDecay = 1e-4f;

// ---------------------------------------------------------------- kernels
// fp32 -> bf16
__global__ void k0(const float *__restrict__ src, __nv_bfloat16 *__restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __float2bfloat16(src[i]);
}

// bias add in place on h [rows, cols]; optional relu copy into a
__global__ void k1(__nv_bfloat16 *__restrict__ h, const __nv_bfloat16 *__restrict__ b,
                   __nv_bfloat16 *__restrict__ a, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float v = __bfloat162float(h[i]) + __bfloat162float(b[i % cols]);
    h[i] = __float2bfloat16(v);
    if (a) a[i] = __float2bfloat16(v > 0.f ? v : 0.f);
}

// softmax + cross-entropy per row; writes per-row loss and dlogits (mean over rows)
__global__ void k2(const __nv_bfloat16 *__restrict__ logits, const int *__restrict__ labels,
                   float *__restrict__ loss, __nv_bfloat16 *__restrict__ dlogits,
                   int rows, int cols) {
    __shared__ float red[256];
    int r = blockIdx.x;
    if (r >= rows) return;
    const __nv_bfloat16 *x = logits + (size_t)r * cols;
    __nv_bfloat16 *dx = dlogits + (size_t)r * cols;
    float m = -1e30f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, __bfloat162float(x[j]));
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += __expf(__bfloat162float(x[j]) - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    sum = red[0];
    int y = labels[r];
    float inv = 1.f / (float)rows;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float p = __expf(__bfloat162float(x[j]) - m) / sum;
        dx[j] = __float2bfloat16((p - (j == y ? 1.f : 0.f)) * inv);
    }
    if (threadIdx.x == 0) loss[r] = -(__bfloat162float(x[y]) - m - logf(sum));
}

// relu backward in place: d *= (h > 0)
__global__ void k3(__nv_bfloat16 *__restrict__ d, const __nv_bfloat16 *__restrict__ h, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && __bfloat162float(h[i]) <= 0.f) d[i] = __float2bfloat16(0.f);
}

// column sums of d [rows, cols] accumulated into db [cols]
__global__ void k4(const __nv_bfloat16 *__restrict__ d, __nv_bfloat16 *__restrict__ db,
                   int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0.f;
    for (int r = 0; r < rows; ++r) s += __bfloat162float(d[(size_t)r * cols + j]);
    db[j] = __float2bfloat16(__bfloat162float(db[j]) + s);
}

// SGD with momentum (coupled weight decay) on the fp32 master
__global__ void fused_5(float *__restrict__ w, float *__restrict__ v,
                        const __nv_bfloat16 *__restrict__ g, int n,
                        float lr, float mu, float wd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = __bfloat162float(g[i]) + wd * w[i];
    float vi = mu * v[i] + gi;
    v[i] = vi;
    w[i] -= lr * vi;
}

static inline unsigned blocks_for(size_t n, unsigned t) { return (unsigned)((n + t - 1) / t); }

// ---------------------------------------------------------------- host helpers
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t rnd() {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
static inline float urand() { return (rnd() & 0xFFFFFF) / 16777216.0f; }

struct Tensor {
    int numel;
    size_t off;         // element offset inside the flat bf16 buffers
    float *master;      // fp32 master (own cudaMalloc)
    float *mom;         // fp32 momentum (own cudaMalloc)
};

int main() {
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas;
    CB(cublasCreate(&blas));
    CB(cublasSetStream(blas, stream));

    // ---- parameters: fp32 master per tensor, momentum per tensor
    Tensor tens[2 * kLayers];
    size_t nparams = 0;
    for (int l = 0; l < kLayers; ++l) {
        tens[2 * l].numel = kWidth * kWidth;
        tens[2 * l + 1].numel = kWidth;
    }
    for (int t = 0; t < 2 * kLayers; ++t) {
        tens[t].off = nparams;
        nparams += (size_t)tens[t].numel;
    }

    std::vector<float> host;
    for (int t = 0; t < 2 * kLayers; ++t) {
        size_t bytes = (size_t)tens[t].numel * sizeof(float);
        tens[t].master = (float *)dev_alloc(bytes, WEIGHTS);
        host.resize(tens[t].numel);
        bool is_bias = (t % 2) == 1;
        float scale = is_bias ? 0.f : 1.7320508f / sqrtf((float)kWidth);  // U(-sqrt(3/fan_in), +)
        for (int i = 0; i < tens[t].numel; ++i) host[i] = (2.f * urand() - 1.f) * scale;
        CK(cudaMemcpy(tens[t].master, host.data(), bytes, cudaMemcpyHostToDevice));
    }
    for (int t = 0; t < 2 * kLayers; ++t) {
        size_t bytes = (size_t)tens[t].numel * sizeof(float);
        tens[t].mom = (float *)dev_alloc(bytes, OPTIMIZER);
        CK(cudaMemsetAsync(tens[t].mom, 0, bytes, stream));
    }

    // ---- bf16 working copy (flat) and bf16 gradients (flat)
    __nv_bfloat16 *wbf = (__nv_bfloat16 *)dev_alloc(nparams * sizeof(__nv_bfloat16), WEIGHTS);
    __nv_bfloat16 *gbf = (__nv_bfloat16 *)dev_alloc(nparams * sizeof(__nv_bfloat16), GRADIENTS);

    // ---- activation arena: input, labels, pre/post activations, logits
    const size_t act_elems = (size_t)kBatch * kWidth;
    const size_t act_bytes = act_elems * sizeof(__nv_bfloat16);
    auto align256 = [](size_t x) { return (x + 255) & ~(size_t)255; };
    size_t arena_bytes = 0;
    size_t off_x = arena_bytes;      arena_bytes = align256(arena_bytes + act_bytes);
    size_t off_y = arena_bytes;      arena_bytes = align256(arena_bytes + kBatch * sizeof(int));
    size_t off_h[kLayers], off_a[kLayers - 1];
    for (int l = 0; l < kLayers; ++l) {
        off_h[l] = arena_bytes; arena_bytes = align256(arena_bytes + act_bytes);
        if (l < kLayers - 1) { off_a[l] = arena_bytes; arena_bytes = align256(arena_bytes + act_bytes); }
    }
    char *arena = (char *)dev_alloc(arena_bytes, ACTIVATIONS);
    __nv_bfloat16 *x_in = (__nv_bfloat16 *)(arena + off_x);
    int *labels = (int *)(arena + off_y);
    __nv_bfloat16 *h[kLayers], *a[kLayers - 1];
    for (int l = 0; l < kLayers; ++l) h[l] = (__nv_bfloat16 *)(arena + off_h[l]);
    for (int l = 0; l < kLayers - 1; ++l) a[l] = (__nv_bfloat16 *)(arena + off_a[l]);

    // ---- scratch: activation-gradient ping-pong and per-row loss
    __nv_bfloat16 *dact[2];
    dact[0] = (__nv_bfloat16 *)dev_alloc(act_bytes, TEMPORARY);
    dact[1] = (__nv_bfloat16 *)dev_alloc(act_bytes, TEMPORARY);
    float *row_loss = (float *)dev_alloc(kBatch * sizeof(float), TEMPORARY);

    auto refresh_working_copy = [&]() {
        for (int t = 0; t < 2 * kLayers; ++t) {
            k0<<<blocks_for(tens[t].numel, 256), 256, 0, stream>>>(tens[t].master, wbf + tens[t].off,
                                                                   tens[t].numel);
            CL();
        }
    };
    refresh_working_copy();   // once before the first step

    const float one = 1.f, zero = 0.f;
    std::vector<__nv_bfloat16> hx(act_elems);
    std::vector<int> hy(kBatch);
    std::vector<float> hloss(kBatch);
    int steps_done = 0, fwd_passes = 0;

    for (int step = 1; step <= kSteps; ++step) {
        // step start: zero the gradient buffer, upload the batch
        CK(cudaMemsetAsync(gbf, 0, nparams * sizeof(__nv_bfloat16), stream));
        for (size_t i = 0; i < act_elems; ++i) hx[i] = __float2bfloat16(2.f * urand() - 1.f);
        for (int i = 0; i < kBatch; ++i) hy[i] = (int)(rnd() % kWidth);
        CK(cudaMemcpyAsync(x_in, hx.data(), act_bytes, cudaMemcpyHostToDevice, stream));
        CK(cudaMemcpyAsync(labels, hy.data(), kBatch * sizeof(int), cudaMemcpyHostToDevice, stream));

        // forward
        const __nv_bfloat16 *in = x_in;
        for (int l = 0; l < kLayers; ++l) {
            const __nv_bfloat16 *W = wbf + tens[2 * l].off;
            const __nv_bfloat16 *b = wbf + tens[2 * l + 1].off;
            CB(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one,
                            W, CUDA_R_16BF, kWidth, in, CUDA_R_16BF, kWidth, &zero,
                            h[l], CUDA_R_16BF, kWidth, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            k1<<<blocks_for(act_elems, 256), 256, 0, stream>>>(h[l], b, l < kLayers - 1 ? a[l] : nullptr,
                                                               kBatch, kWidth);
            CL();
            if (l < kLayers - 1) in = a[l];
        }
        k2<<<kBatch, 256, 0, stream>>>(h[kLayers - 1], labels, row_loss, dact[0], kBatch, kWidth);
        CL();
        ++fwd_passes;
        CK(cudaMemcpyAsync(hloss.data(), row_loss, kBatch * sizeof(float), cudaMemcpyDeviceToHost, stream));

        // backward
        int cur = 0;
        for (int l = kLayers - 1; l >= 0; --l) {
            const __nv_bfloat16 *lin = (l == 0) ? x_in : a[l - 1];
            const __nv_bfloat16 *W = wbf + tens[2 * l].off;
            __nv_bfloat16 *dW = gbf + tens[2 * l].off;
            __nv_bfloat16 *db = gbf + tens[2 * l + 1].off;
            CB(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_T, kWidth, kWidth, kBatch, &one,
                            lin, CUDA_R_16BF, kWidth, dact[cur], CUDA_R_16BF, kWidth, &one,
                            dW, CUDA_R_16BF, kWidth, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            k4<<<blocks_for(kWidth, 256), 256, 0, stream>>>(dact[cur], db, kBatch, kWidth);
            CL();
            if (l > 0) {
                CB(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one,
                                W, CUDA_R_16BF, kWidth, dact[cur], CUDA_R_16BF, kWidth, &zero,
                                dact[cur ^ 1], CUDA_R_16BF, kWidth, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
                k3<<<blocks_for(act_elems, 256), 256, 0, stream>>>(dact[cur ^ 1], h[l - 1], (int)act_elems);
                CL();
                cur ^= 1;
            }
        }

        // optimizer on the fp32 master, then refresh the bf16 working copy
        for (int t = 0; t < 2 * kLayers; ++t) {
            fused_5<<<blocks_for(tens[t].numel, 256), 256, 0, stream>>>(
                tens[t].master, tens[t].mom, gbf + tens[t].off, tens[t].numel,
                kLr, kMomentum, kWeightDecay);
            CL();
        }
        refresh_working_copy();
        CK(cudaStreamSynchronize(stream));
        ++steps_done;

        double mean = 0.0;
        for (int i = 0; i < kBatch; ++i) mean += hloss[i];
        mean /= kBatch;
        printf("step %d loss %.6f\n", step, mean);
    }

    // ---- tear down
    CK(cudaStreamSynchronize(stream));
    dev_free(row_loss);
    dev_free(dact[1]);
    dev_free(dact[0]);
    dev_free(arena);
    dev_free(gbf);
    dev_free(wbf);
    for (int t = 2 * kLayers - 1; t >= 0; --t) { dev_free(tens[t].mom); dev_free(tens[t].master); }
    CB(cublasDestroy(blas));
    CK(cudaStreamDestroy(stream));

    // ---- ledger
    printf("ledger {\"program\":\"h08_bf16_master_after_update_nameless\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%zu,"
           "\"param_dtype\":\"bf16\",\"master_weights\":true,\"optimizer\":\"sgd_momentum\","
           "\"peak_bytes\":%lld,\"peak_by_purpose\":{",
           steps_done, fwd_passes, nparams, g_book.peak);
    for (int p = 0; p < NPURP; ++p)
        printf("%s\"%s\":%lld", p ? "," : "", kPurposeName[p], g_book.peak_split[p]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    return 0;
}

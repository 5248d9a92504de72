// c04_fp16_lossscale_lt: fp16 mixed-precision training of a 3-layer MLP classifier
// (1024 -> 1024 -> 1024 -> 1000, ReLU between layers, softmax cross-entropy) on a batch of
// 256, for 4 optimizer steps, with dynamic loss scaling. The fp32 master weights (one
// cudaMalloc per tensor) are the optimizer's; at the start of every step a cast kernel
// refreshes the fp16 working copies (one per tensor) that forward and backward read. The
// loss gradient is multiplied by a loss scale held in a device scalar; the fp16 parameter
// gradients (persistent, one per tensor, zeroed every step) are unscaled and checked for
// inf/nan by a kernel that sets a device flag, then AdamW (fp32 m and v per tensor,
// allocated before the first step) updates the masters unless the flag is set, and the
// scaler doubles its scale after 2 clean steps (it does so after step 2; no overflow
// happens). All matmuls are cublasLtMatmul (fp16 A/B/C, CUBLAS_COMPUTE_32F) with a 32 MiB
// workspace the program allocates and passes to every call. The activations saved for
// backward are allocated layer by layer in forward and freed in backward; gradients with
// respect to activations are backward temporaries. No NVTX.
//
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------
// error checking
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(err_));                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define LT_CHECK(call)                                                                    \
    do {                                                                                  \
        cublasStatus_t st_ = (call);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cublasLtGetStatusString(st_));                                        \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// ---------------------------------------------------------------------------------------
// device memory ledger: every cudaMalloc/cudaFree goes through these two functions
// ---------------------------------------------------------------------------------------
enum Purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, MIXED, NPURPOSE };
static const char *kPurposeName[NPURPOSE] = {"weights",   "optimizer",     "gradients", "activations",
                                             "temporary", "functionality", "mixed"};

struct Ledger {
    std::map<void *, std::pair<size_t, Purpose>> live;
    size_t live_by[NPURPOSE] = {0};
    size_t live_total = 0;
    size_t peak_total = 0;
    size_t peak_by[NPURPOSE] = {0};
};
static Ledger g_ledger;

template <typename T>
static T *dev_alloc(size_t bytes, Purpose purpose) {
    void *p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    g_ledger.live[p] = std::make_pair(bytes, purpose);
    g_ledger.live_by[purpose] += bytes;
    g_ledger.live_total += bytes;
    if (g_ledger.live_total > g_ledger.peak_total) {  // strictly greater: the first moment
        g_ledger.peak_total = g_ledger.live_total;
        memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
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
// kernels
// ---------------------------------------------------------------------------------------
__global__ void cast_fp32_to_fp16(__half *dst, const float *src, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __float2half_rn(src[i]);
}

// softmax cross-entropy over rows of fp16 logits (B x V, row-major). Writes the per-sample
// loss (fp32) and the gradient of the *scaled* mean loss into dlogits (fp16):
// dlogits = loss_scale * (softmax - onehot) / B. One block per row.
__global__ void softmax_xent_fwd_bwd(const __half *logits, const int *labels, const float *loss_scale,
                                     float *losses, __half *dlogits, int B, int V) {
    int row = blockIdx.x;
    if (row >= B) return;
    const __half *x = logits + (size_t)row * V;
    __shared__ float red[32];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;

    float m = -INFINITY;
    for (int j = tid; j < V; j += blockDim.x) m = fmaxf(m, __half2float(x[j]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < nwarps ? red[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) red[0] = m;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();

    float s = 0.f;
    for (int j = tid; j < V; j += blockDim.x) s += __expf(__half2float(x[j]) - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < nwarps ? red[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) red[0] = s;
    }
    __syncthreads();
    s = red[0];

    int y = labels[row];
    float lse = m + logf(s);
    if (tid == 0) losses[row] = lse - __half2float(x[y]);
    float g = *loss_scale / (float)B;
    for (int j = tid; j < V; j += blockDim.x) {
        float p = __expf(__half2float(x[j]) - lse);
        dlogits[(size_t)row * V + j] = __float2half_rn(g * (p - (j == y ? 1.f : 0.f)));
    }
}

// dh = dh * (h > 0): ReLU backward in place, h is the saved post-ReLU activation
__global__ void relu_backward_inplace(__half *dh, const __half *h, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n && !(__half2float(h[i]) > 0.f)) dh[i] = __float2half_rn(0.f);
}

// db[j] += sum_b dy[b, j]   (dy is B x N row-major), accumulated in fp32
__global__ void bias_grad_accumulate(__half *db, const __half *dy, int B, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N) return;
    float acc = 0.f;
    for (int b = 0; b < B; ++b) acc += __half2float(dy[(size_t)b * N + j]);
    db[j] = __float2half_rn(__half2float(db[j]) + acc);
}

// g *= 1/scale in place, and raise *found_inf if any element is inf or nan
__global__ void unscale_and_check(__half *g, size_t n, const float *loss_scale, int *found_inf) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = __half2float(g[i]);
    if (!isfinite(v)) {
        *found_inf = 1;
        return;
    }
    g[i] = __float2half_rn(v * (1.f / *loss_scale));
}

// AdamW on the fp32 master weights, skipped when the step overflowed
__global__ void adamw_update(float *p, const __half *g, float *m, float *v, size_t n, const int *found_inf,
                             float lr, float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
    if (*found_inf) return;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = __half2float(g[i]);
    float mi = beta1 * m[i] + (1.f - beta1) * gi;
    float vi = beta2 * v[i] + (1.f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / bc1, vhat = vi / bc2;
    p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
}

// dynamic loss scaler: halve on overflow, double after `growth_interval` clean steps;
// clears the overflow flag for the next step
__global__ void update_loss_scale(float *scale, int *growth_tracker, int *found_inf, float growth,
                                  float backoff, int growth_interval) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    if (*found_inf) {
        *scale *= backoff;
        *growth_tracker = 0;
    } else if (++*growth_tracker == growth_interval) {
        *scale *= growth;
        *growth_tracker = 0;
    }
    *found_inf = 0;
}

static unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// ---------------------------------------------------------------------------------------
// cublasLt matmul on row-major tensors: D[M x N] = op(X) * op(Y) (+ bias, ReLU), fp16 in
// and out, fp32 accumulation. Column-major view: a row-major R x C tensor is C x R.
// ---------------------------------------------------------------------------------------
struct LtContext {
    cublasLtHandle_t handle;
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t stream;
};

// col-major: D (m x n, ldd) = alpha * opA(A) * opB(B) + beta * D
static void lt_matmul(const LtContext &ctx, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                      const __half *A, int lda, const __half *B, int ldb, __half *D, int ldd, float beta,
                      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT, const __half *bias = nullptr) {
    cublasLtMatmulDesc_t op;
    LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (bias) LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));

    cublasLtMatrixLayout_t la, lb, ld;
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb));
    LT_CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, m, n, ldd));

    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ctx.workspace_bytes, sizeof(ctx.workspace_bytes)));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.handle, op, la, lb, ld, ld, pref, 1, &heur, &found));
    if (found == 0) {
        fprintf(stderr, "cublasLt: no algorithm for %dx%dx%d\n", m, n, k);
        exit(1);
    }
    const float alpha = 1.f;
    LT_CHECK(cublasLtMatmul(ctx.handle, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &heur.algo, ctx.workspace,
                            ctx.workspace_bytes, ctx.stream));

    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    LT_CHECK(cublasLtMatrixLayoutDestroy(ld));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lb));
    LT_CHECK(cublasLtMatrixLayoutDestroy(la));
    LT_CHECK(cublasLtMatmulDescDestroy(op));
}

// y[B x out] = x[B x in] W^T + b (optionally ReLU); W is out x in row-major
static void linear_forward(const LtContext &ctx, __half *y, const __half *x, const __half *W, const __half *b,
                           int B, int in, int out, bool relu) {
    lt_matmul(ctx, CUBLAS_OP_T, CUBLAS_OP_N, out, B, in, W, in, x, in, y, out, 0.f,
              relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, b);
}

// dW[out x in] += dy^T x ; db += colsum(dy) ; dx[B x in] = dy W (when dx != nullptr)
static void linear_backward(const LtContext &ctx, __half *dx, __half *dW, __half *db, const __half *dy,
                            const __half *x, const __half *W, int B, int in, int out) {
    lt_matmul(ctx, CUBLAS_OP_N, CUBLAS_OP_T, in, out, B, x, in, dy, out, dW, in, 1.f);
    bias_grad_accumulate<<<blocks_for(out, 256), 256, 0, ctx.stream>>>(db, dy, B, out);
    CUDA_CHECK(cudaGetLastError());
    if (dx) lt_matmul(ctx, CUBLAS_OP_N, CUBLAS_OP_N, in, B, out, W, in, dy, out, dx, in, 0.f);
}

// ---------------------------------------------------------------------------------------
// model
// ---------------------------------------------------------------------------------------
static const int kBatch = 256;
static const int kLayers = 3;
static const int kDims[kLayers + 1] = {1024, 1024, 1024, 1000};
static const int kSteps = 4;

struct Param {
    std::string name;
    size_t n;
    int fan_in;
    float *master;  // fp32, optimizer's copy
    __half *half;   // fp16 working copy read by forward/backward
    __half *grad;   // fp16 gradient (scaled during backward, unscaled before the update)
    float *m, *v;   // AdamW moments
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand() {  // xorshift64*, uniform in [-1, 1)
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    uint64_t r = g_rng * 2685821657736338717ull;
    return (float)((r >> 40) / (double)(1ull << 24)) * 2.f - 1.f;
}

int main() {
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    LtContext lt;
    LT_CHECK(cublasLtCreate(&lt.handle));
    lt.stream = stream;
    lt.workspace_bytes = 32ull << 20;  // cuBLAS's recommendation for Hopper
    lt.workspace = dev_alloc<void>(lt.workspace_bytes, FUNCTIONALITY);

    // ---- parameters: fp32 masters, fp16 working copies, fp16 grads, AdamW m and v -------
    std::vector<Param> params;
    for (int l = 0; l < kLayers; ++l) {
        int in = kDims[l], out = kDims[l + 1];
        params.push_back({"fc" + std::to_string(l + 1) + ".weight", (size_t)out * in, in});
        params.push_back({"fc" + std::to_string(l + 1) + ".bias", (size_t)out, in});
    }
    size_t n_params = 0;
    for (Param &p : params) {
        n_params += p.n;
        p.master = dev_alloc<float>(p.n * sizeof(float), WEIGHTS);
        std::vector<float> init(p.n);
        float bound = 1.f / sqrtf((float)p.fan_in);  // PyTorch's nn.Linear default
        for (size_t i = 0; i < p.n; ++i) init[i] = bound * frand();
        CUDA_CHECK(cudaMemcpy(p.master, init.data(), p.n * sizeof(float), cudaMemcpyHostToDevice));
    }
    for (Param &p : params) p.half = dev_alloc<__half>(p.n * sizeof(__half), WEIGHTS);
    for (Param &p : params) p.grad = dev_alloc<__half>(p.n * sizeof(__half), GRADIENTS);
    for (Param &p : params) {
        p.m = dev_alloc<float>(p.n * sizeof(float), OPTIMIZER);
        p.v = dev_alloc<float>(p.n * sizeof(float), OPTIMIZER);
        CUDA_CHECK(cudaMemsetAsync(p.m, 0, p.n * sizeof(float), stream));
        CUDA_CHECK(cudaMemsetAsync(p.v, 0, p.n * sizeof(float), stream));
    }

    // ---- grad scaler state ----------------------------------------------------------------
    float *d_loss_scale = dev_alloc<float>(sizeof(float), FUNCTIONALITY);
    int *d_found_inf = dev_alloc<int>(sizeof(int), FUNCTIONALITY);
    int *d_growth_tracker = dev_alloc<int>(sizeof(int), FUNCTIONALITY);
    const float init_scale = 65536.f, growth = 2.f, backoff = 0.5f;
    const int growth_interval = 2;
    CUDA_CHECK(cudaMemcpy(d_loss_scale, &init_scale, sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_found_inf, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_growth_tracker, 0, sizeof(int)));

    // ---- input batch and labels (one device buffer each, refilled every step) -------------
    const int B = kBatch, D0 = kDims[0], NC = kDims[kLayers];
    __half *d_x = dev_alloc<__half>((size_t)B * D0 * sizeof(__half), ACTIVATIONS);
    int *d_labels = dev_alloc<int>((size_t)B * sizeof(int), ACTIVATIONS);
    std::vector<__half> h_x((size_t)B * D0);
    std::vector<int> h_labels(B);

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;

    for (int step = 1; step <= kSteps; ++step) {
        // synthetic batch: random features, label = index of the largest of the first NC
        for (int b = 0; b < B; ++b) {
            int best = 0;
            float best_v = -2.f;
            for (int j = 0; j < D0; ++j) {
                float v = frand();
                h_x[(size_t)b * D0 + j] = __float2half_rn(v);
                if (j < NC && v > best_v) best_v = v, best = j;
            }
            h_labels[b] = best;
        }
        CUDA_CHECK(cudaMemcpyAsync(d_x, h_x.data(), h_x.size() * sizeof(__half), cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(d_labels, h_labels.data(), B * sizeof(int), cudaMemcpyHostToDevice, stream));

        // refresh fp16 working weights from the fp32 masters, zero the gradients
        for (Param &p : params) {
            cast_fp32_to_fp16<<<blocks_for(p.n, 256), 256, 0, stream>>>(p.half, p.master, p.n);
            CUDA_CHECK(cudaGetLastError());
        }
        for (Param &p : params) CUDA_CHECK(cudaMemsetAsync(p.grad, 0, p.n * sizeof(__half), stream));

        // ---- forward: each layer's output is allocated here and kept for backward ---------
        __half *acts[kLayers + 1];
        acts[0] = d_x;
        for (int l = 0; l < kLayers; ++l) {
            int in = kDims[l], out = kDims[l + 1];
            acts[l + 1] = dev_alloc<__half>((size_t)B * out * sizeof(__half), ACTIVATIONS);
            linear_forward(lt, acts[l + 1], acts[l], params[2 * l].half, params[2 * l + 1].half, B, in, out,
                           l + 1 < kLayers);
        }

        // ---- loss (scaled gradient of the mean cross-entropy) ------------------------------
        float *d_losses = dev_alloc<float>((size_t)B * sizeof(float), TEMPORARY);
        __half *d_grad = dev_alloc<__half>((size_t)B * NC * sizeof(__half), TEMPORARY);
        softmax_xent_fwd_bwd<<<B, 256, 0, stream>>>(acts[kLayers], d_labels, d_loss_scale, d_losses, d_grad, B, NC);
        CUDA_CHECK(cudaGetLastError());
        std::vector<float> h_losses(B);
        CUDA_CHECK(cudaMemcpyAsync(h_losses.data(), d_losses, B * sizeof(float), cudaMemcpyDeviceToHost, stream));
        dev_free(d_losses);
        dev_free(acts[kLayers]);  // logits: consumed by the loss

        // ---- backward: free each saved activation once its layer is done -------------------
        for (int l = kLayers - 1; l >= 0; --l) {
            int in = kDims[l], out = kDims[l + 1];
            __half *d_in = nullptr;
            if (l > 0) d_in = dev_alloc<__half>((size_t)B * in * sizeof(__half), TEMPORARY);
            linear_backward(lt, d_in, params[2 * l].grad, params[2 * l + 1].grad, d_grad, acts[l],
                            params[2 * l].half, B, in, out);
            dev_free(d_grad);
            d_grad = d_in;
            if (l > 0) {
                size_t n = (size_t)B * in;
                relu_backward_inplace<<<blocks_for(n, 256), 256, 0, stream>>>(d_grad, acts[l], n);
                CUDA_CHECK(cudaGetLastError());
                dev_free(acts[l]);
            }
        }

        // ---- unscale + inf/nan check, AdamW on the masters, scaler update ------------------
        for (Param &p : params) {
            unscale_and_check<<<blocks_for(p.n, 256), 256, 0, stream>>>(p.grad, p.n, d_loss_scale, d_found_inf);
            CUDA_CHECK(cudaGetLastError());
        }
        float bc1 = 1.f - powf(beta1, (float)step), bc2 = 1.f - powf(beta2, (float)step);
        for (Param &p : params) {
            adamw_update<<<blocks_for(p.n, 256), 256, 0, stream>>>(p.master, p.grad, p.m, p.v, p.n, d_found_inf, lr,
                                                                   beta1, beta2, eps, wd, bc1, bc2);
            CUDA_CHECK(cudaGetLastError());
        }
        update_loss_scale<<<1, 32, 0, stream>>>(d_loss_scale, d_growth_tracker, d_found_inf, growth, backoff,
                                                growth_interval);
        CUDA_CHECK(cudaGetLastError());
        float scale_now = 0.f;
        CUDA_CHECK(cudaMemcpyAsync(&scale_now, d_loss_scale, sizeof(float), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));

        double loss = 0.0;
        for (int b = 0; b < B; ++b) loss += h_losses[b];
        printf("step %d  loss %.4f  next loss_scale %.0f\n", step, loss / B, scale_now);
    }

    // ---- tear down ----------------------------------------------------------------------------
    dev_free(d_x);
    dev_free(d_labels);
    dev_free(d_loss_scale);
    dev_free(d_found_inf);
    dev_free(d_growth_tracker);
    for (Param &p : params) {
        dev_free(p.master);
        dev_free(p.half);
        dev_free(p.grad);
        dev_free(p.m);
        dev_free(p.v);
    }
    dev_free(lt.workspace);
    LT_CHECK(cublasLtDestroy(lt.handle));
    CUDA_CHECK(cudaStreamDestroy(stream));

    // ---- ledger -------------------------------------------------------------------------------
    std::string by = "{";
    for (int i = 0; i < NPURPOSE; ++i) {
        by += (i ? ",\"" : "\"") + std::string(kPurposeName[i]) + "\":" + std::to_string(g_ledger.peak_by[i]);
    }
    by += "}";
    printf("ledger {\"program\":\"c04_fp16_lossscale_lt\",\"kind\":\"training\",\"steps\":%d,"
           "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%zu,\"param_dtype\":\"fp16\","
           "\"master_weights\":true,\"optimizer\":\"adamw\",\"peak_bytes\":%zu,\"peak_by_purpose\":%s,"
           "\"pools_at_peak\":[],\"oom\":null}\n",
           kSteps, kSteps, n_params, g_ledger.peak_total, by.c_str());
    return 0;
}

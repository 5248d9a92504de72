// h03_bucketed_grads_sgd.cu
//
// fp32 training of a 6-layer MLP classifier (768 -> 768 x5 -> 1000 classes, ReLU between
// layers, softmax cross-entropy loss) on synthetic batches of 128 samples, 5 optimizer
// steps. Parameters are one cudaMalloc per tensor (weight and bias of every layer). The
// parameter gradients do not have tensors of their own: like PyTorch DDP's gradient
// buckets they live in two flat "bucket" buffers, one cudaMalloc each; bucket 0 holds the
// gradients of the last three layers (the first to become ready in backward), bucket 1
// those of the first three. At the start of every step both buckets are zeroed with
// cudaMemset; backward accumulates into them (cublasSgemm with beta = 1, a bias-reduction
// kernel); after backward each bucket is averaged in place by a kernel that stands in for
// the data-parallel all-reduce (division by the world size). Then SGD with Nesterov
// momentum (momentum 0.9, weight decay 1e-4) updates each parameter tensor from its slice of
// the bucket; the momentum buffers (one cudaMalloc per parameter tensor) are allocated and
// zeroed before the first step. Per step the input batch and labels are allocated and
// uploaded, each layer's output activation is allocated in forward and freed in backward
// once that layer's gradients are computed; gradients with respect to activations, the
// loss-gradient buffer and the loss scalar are short-lived scratch. Matrix products use
// cublasSgemm on a handle with its default workspace.

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <map>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------
#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),       \
                    __FILE__, __LINE__, cudaGetErrorString(err_));                         \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CUBLAS_CHECK(call)                                                                \
    do {                                                                                  \
        cublasStatus_t st_ = (call);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "cuBLAS error %s at %s:%d\n", cublasGetStatusName(st_),       \
                    __FILE__, __LINE__);                                                  \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Allocation ledger
// ---------------------------------------------------------------------------------------
enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

struct Ledger {
    std::map<void *, std::pair<size_t, Purpose>> live;
    unsigned long long live_bytes = 0;
    unsigned long long live_by[P_COUNT] = {0};
    unsigned long long peak_bytes = 0;
    unsigned long long peak_by[P_COUNT] = {0};
    const char *phase = "setup";
    int step = 0;  // 1-based step in progress, 0 during set-up
    // results
    int steps_done = 0;
    int forward_passes = 0;
    unsigned long long params = 0;
    // oom
    bool oom = false;
    unsigned long long oom_req = 0;
    Purpose oom_purpose = P_TEMPORARY;
    const char *oom_phase = "setup";
    int oom_step = 0;
    unsigned long long oom_live = 0;
    unsigned long long oom_live_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void print_ledger() {
    Ledger &L = g_ledger;
    printf("ledger {\"program\":\"h03_bucketed_grads_sgd\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%llu,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"sgd_momentum\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           L.steps_done, L.forward_passes, L.params, L.peak_bytes);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (L.oom_live_by[p] > L.oom_live_by[dom]) dom = p;
        printf("{\"requested_bytes\":%llu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
               "\"live_bytes\":%llu,\"live_by_purpose\":{",
               L.oom_req, kPurposeName[L.oom_purpose], L.oom_phase, L.oom_step, L.oom_live);
        for (int p = 0; p < P_COUNT; ++p)
            printf("%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.oom_live_by[p]);
        printf("},\"dominant\":\"%s\"}", kPurposeName[dom]);
    }
    printf("}\n");
    fflush(stdout);
}

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        Ledger &L = g_ledger;
        L.oom = true;
        L.oom_req = bytes;
        L.oom_purpose = purpose;
        L.oom_phase = L.phase;
        L.oom_step = L.step;
        L.oom_live = L.live_bytes;
        memcpy(L.oom_live_by, L.live_by, sizeof(L.live_by));
        fprintf(stderr, "out of memory: %zu bytes for %s in %s (step %d)\n", bytes,
                kPurposeName[purpose], L.phase, L.step);
        print_ledger();
        exit(3);
    }
    CUDA_CHECK(err);
    Ledger &L = g_ledger;
    L.live[p] = std::make_pair(bytes, purpose);
    L.live_bytes += bytes;
    L.live_by[purpose] += bytes;
    if (L.live_bytes > L.peak_bytes) {
        L.peak_bytes = L.live_bytes;
        memcpy(L.peak_by, L.live_by, sizeof(L.live_by));
    }
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    Ledger &L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "dev_free: unknown pointer %p\n", p);
        exit(1);
    }
    CUDA_CHECK(cudaFree(p));
    L.live_bytes -= it->second.first;
    L.live_by[it->second.second] -= it->second.first;
    L.live.erase(it);
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

// y[b, j] = relu?(y[b, j] + bias[j]); y is row-major [batch, n].
__global__ void bias_act_kernel(float *__restrict__ y, const float *__restrict__ bias,
                                int batch, int n, int apply_relu) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)batch * n;
    if (idx >= total) return;
    float v = y[idx] + bias[idx % n];
    if (apply_relu) v = fmaxf(v, 0.0f);
    y[idx] = v;
}

// Softmax cross-entropy, one block per sample. Writes dlogits = (softmax - onehot) / batch
// and adds the mean loss into *loss.
__global__ void softmax_xent_kernel(const float *__restrict__ logits,
                                    const int *__restrict__ labels,
                                    float *__restrict__ dlogits, float *__restrict__ loss,
                                    int batch, int classes) {
    extern __shared__ float red[];
    int b = blockIdx.x;
    const float *row = logits + (size_t)b * classes;
    float *drow = dlogits + (size_t)b * classes;

    float m = -INFINITY;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, row[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(row[j] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    sum = red[0];

    int y = labels[b];
    float inv_batch = 1.0f / (float)batch;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        float p = expf(row[j] - m) / sum;
        drow[j] = (p - (j == y ? 1.0f : 0.0f)) * inv_batch;
    }
    if (threadIdx.x == 0) {
        float lse = m + logf(sum);
        atomicAdd(loss, (lse - row[y]) * inv_batch);
    }
}

// db[j] += sum_b dy[b, j]; dy row-major [batch, n].
__global__ void bias_grad_kernel(const float *__restrict__ dy, float *__restrict__ db,
                                 int batch, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float s = 0.0f;
    for (int b = 0; b < batch; ++b) s += dy[(size_t)b * n + j];
    db[j] += s;
}

// dx *= (y > 0): backward of ReLU through the kept post-activation output y.
__global__ void relu_backward_kernel(float *__restrict__ dx, const float *__restrict__ y,
                                     size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] <= 0.0f) dx[i] = 0.0f;
}

// Stand-in for the data-parallel all-reduce of a gradient bucket: average in place.
__global__ void bucket_allreduce_avg_kernel(float *__restrict__ bucket, size_t n,
                                            float inv_world) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        bucket[i] *= inv_world;
}

// torch.optim.SGD(momentum, nesterov=True, weight_decay):
//   g = grad + wd * p;  buf = mu * buf + g;  g = g + mu * buf;  p -= lr * g
__global__ void sgd_nesterov_kernel(float *__restrict__ p, const float *__restrict__ grad,
                                    float *__restrict__ buf, size_t n, float lr, float mu,
                                    float wd) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = grad[i] + wd * p[i];
        float b = mu * buf[i] + g;
        buf[i] = b;
        p[i] -= lr * (g + mu * b);
    }
}

static unsigned grid_for(size_t n, unsigned block, unsigned cap = 65535u) {
    size_t g = (n + block - 1) / block;
    if (g > cap) g = cap;
    if (g == 0) g = 1;
    return (unsigned)g;
}

// ---------------------------------------------------------------------------------------
// Host-side deterministic data
// ---------------------------------------------------------------------------------------
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t rng_u32() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static inline float rng_uniform() { return (rng_u32() & 0xFFFFFF) / 16777216.0f; }

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------
static const int kLayers = 6;
static const int kDims[kLayers + 1] = {768, 768, 768, 768, 768, 768, 1000};
static const int kBatch = 128;
static const int kSteps = 5;
static const int kWorldSize = 4;  // data-parallel ranks the bucket average stands in for
static const float kLR = 0.05f, kMomentum = 0.9f, kWeightDecay = 1e-4f;

struct Layer {
    int in, out;
    float *W, *b;          // parameters [out, in] row-major, [out]
    float *mW, *mb;        // Nesterov momentum buffers
    float *gW, *gb;        // views into a gradient bucket
};

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));

    // ---- set-up: parameters (one allocation per tensor), initialised on the host ----
    Layer L[kLayers];
    std::vector<float> host;
    for (int l = 0; l < kLayers; ++l) {
        L[l].in = kDims[l];
        L[l].out = kDims[l + 1];
        size_t nw = (size_t)L[l].in * L[l].out;
        L[l].W = dev_alloc<float>(nw, P_WEIGHTS);
        L[l].b = dev_alloc<float>(L[l].out, P_WEIGHTS);
        g_ledger.params += nw + L[l].out;

        float bound = sqrtf(6.0f / (float)L[l].in);  // Kaiming-uniform for ReLU
        host.resize(nw);
        for (size_t i = 0; i < nw; ++i) host[i] = (2.0f * rng_uniform() - 1.0f) * bound;
        CUDA_CHECK(cudaMemcpy(L[l].W, host.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(L[l].b, 0, L[l].out * sizeof(float)));
    }

    // ---- gradient buckets (DDP order: the last layers' gradients are ready first) ----
    // bucket 0: layers 5, 4, 3;  bucket 1: layers 2, 1, 0
    const int kBuckets = 2;
    float *bucket[kBuckets];
    size_t bucket_elems[kBuckets] = {0, 0};
    int bucket_of[kLayers];
    for (int l = kLayers - 1; l >= 0; --l) {
        int bk = (l >= kLayers / 2) ? 0 : 1;
        bucket_of[l] = bk;
        bucket_elems[bk] += (size_t)L[l].in * L[l].out + L[l].out;
    }
    for (int bk = 0; bk < kBuckets; ++bk)
        bucket[bk] = dev_alloc<float>(bucket_elems[bk], P_GRADIENTS);
    {
        size_t off[kBuckets] = {0, 0};
        for (int l = kLayers - 1; l >= 0; --l) {
            int bk = bucket_of[l];
            L[l].gW = bucket[bk] + off[bk];
            off[bk] += (size_t)L[l].in * L[l].out;
            L[l].gb = bucket[bk] + off[bk];
            off[bk] += L[l].out;
        }
    }

    // ---- optimizer state: Nesterov momentum, one buffer per parameter tensor ----
    for (int l = 0; l < kLayers; ++l) {
        size_t nw = (size_t)L[l].in * L[l].out;
        L[l].mW = dev_alloc<float>(nw, P_OPTIMIZER);
        L[l].mb = dev_alloc<float>(L[l].out, P_OPTIMIZER);
        CUDA_CHECK(cudaMemset(L[l].mW, 0, nw * sizeof(float)));
        CUDA_CHECK(cudaMemset(L[l].mb, 0, L[l].out * sizeof(float)));
    }

    printf("h03: %d-layer MLP, %llu params, batch %d, grad buckets %zu + %zu floats\n",
           kLayers, g_ledger.params, kBatch, bucket_elems[0], bucket_elems[1]);

    const int in_dim = kDims[0], classes = kDims[kLayers];
    std::vector<float> hx((size_t)kBatch * in_dim);
    std::vector<int> hy(kBatch);
    const float one = 1.0f, zero = 0.0f;

    for (int step = 1; step <= kSteps; ++step) {
        g_ledger.step = step;

        // ---- step start: zero gradient buckets, load the batch ----
        g_ledger.phase = "step_start";
        for (int bk = 0; bk < kBuckets; ++bk)
            CUDA_CHECK(cudaMemset(bucket[bk], 0, bucket_elems[bk] * sizeof(float)));
        for (int b = 0; b < kBatch; ++b) {
            int y = (int)(rng_u32() % classes);
            hy[b] = y;
            for (int i = 0; i < in_dim; ++i)
                hx[(size_t)b * in_dim + i] =
                    0.5f * (2.0f * rng_uniform() - 1.0f) + ((i % classes) == y ? 1.0f : 0.0f);
        }
        float *x = dev_alloc<float>(hx.size(), P_ACTIVATIONS);
        int *labels = dev_alloc<int>(kBatch, P_ACTIVATIONS);
        CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(labels, hy.data(), kBatch * sizeof(int), cudaMemcpyHostToDevice));

        // ---- forward: act[l+1] = relu(act[l] W_l^T + b_l); the last layer gives logits ----
        g_ledger.phase = "forward";
        float *act[kLayers + 1];
        act[0] = x;
        for (int l = 0; l < kLayers; ++l) {
            act[l + 1] = dev_alloc<float>((size_t)kBatch * L[l].out, P_ACTIVATIONS);
            // column-major view: Y^T (out x B) = W_c^T (W_c = W^T, in x out) * X^T (in x B)
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, L[l].out, kBatch, L[l].in,
                                     &one, L[l].W, L[l].in, act[l], L[l].in, &zero,
                                     act[l + 1], L[l].out));
            size_t n = (size_t)kBatch * L[l].out;
            bias_act_kernel<<<grid_for(n, 256), 256>>>(act[l + 1], L[l].b, kBatch, L[l].out,
                                                       l + 1 < kLayers ? 1 : 0);
            KERNEL_CHECK();
        }
        g_ledger.forward_passes++;

        // loss and its gradient with respect to the logits
        float *loss = dev_alloc<float>(1, P_TEMPORARY);
        float *dy = dev_alloc<float>((size_t)kBatch * classes, P_TEMPORARY);
        CUDA_CHECK(cudaMemset(loss, 0, sizeof(float)));
        softmax_xent_kernel<<<kBatch, 256, 256 * sizeof(float)>>>(act[kLayers], labels, dy,
                                                                  loss, kBatch, classes);
        KERNEL_CHECK();
        float hloss = 0.0f;
        CUDA_CHECK(cudaMemcpy(&hloss, loss, sizeof(float), cudaMemcpyDeviceToHost));
        dev_free(loss);
        dev_free(labels);

        // ---- backward: gradients accumulate into the buckets ----
        g_ledger.phase = "backward";
        for (int l = kLayers - 1; l >= 0; --l) {
            // dW = dY^T X; column-major: dW_c (in x out) += act_c (in x B) * dY_c^T (B x out)
            CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, L[l].in, L[l].out, kBatch,
                                     &one, act[l], L[l].in, dy, L[l].out, &one, L[l].gW,
                                     L[l].in));
            bias_grad_kernel<<<grid_for(L[l].out, 256), 256>>>(dy, L[l].gb, kBatch, L[l].out);
            KERNEL_CHECK();

            float *dx = nullptr;
            if (l > 0) {
                dx = dev_alloc<float>((size_t)kBatch * L[l].in, P_TEMPORARY);
                // dX_c (in x B) = W_c (in x out) * dY_c (out x B)
                CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, L[l].in, kBatch,
                                         L[l].out, &one, L[l].W, L[l].in, dy, L[l].out, &zero,
                                         dx, L[l].in));
                size_t n = (size_t)kBatch * L[l].in;
                relu_backward_kernel<<<grid_for(n, 256), 256>>>(dx, act[l], n);
                KERNEL_CHECK();
            }
            dev_free(dy);
            dev_free(act[l + 1]);  // this layer's output is no longer needed
            dy = dx;
        }
        dev_free(act[0]);  // the input batch

        // ---- gradient synchronisation: average each bucket in place ----
        for (int bk = 0; bk < kBuckets; ++bk) {
            bucket_allreduce_avg_kernel<<<grid_for(bucket_elems[bk], 256, 1024), 256>>>(
                bucket[bk], bucket_elems[bk], 1.0f / (float)kWorldSize);
            KERNEL_CHECK();
        }

        // ---- optimizer: SGD with Nesterov momentum, per tensor ----
        g_ledger.phase = "optimizer";
        for (int l = 0; l < kLayers; ++l) {
            size_t nw = (size_t)L[l].in * L[l].out;
            sgd_nesterov_kernel<<<grid_for(nw, 256, 1024), 256>>>(L[l].W, L[l].gW, L[l].mW, nw,
                                                                   kLR, kMomentum, kWeightDecay);
            KERNEL_CHECK();
            sgd_nesterov_kernel<<<grid_for(L[l].out, 256, 1024), 256>>>(
                L[l].b, L[l].gb, L[l].mb, L[l].out, kLR, kMomentum, 0.0f);
            KERNEL_CHECK();
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        g_ledger.steps_done = step;
        printf("step %d  loss %.4f\n", step, hloss);
    }

    // ---- tear-down ----
    g_ledger.phase = "setup";
    for (int l = 0; l < kLayers; ++l) {
        dev_free(L[l].W);
        dev_free(L[l].b);
        dev_free(L[l].mW);
        dev_free(L[l].mb);
    }
    for (int bk = 0; bk < kBuckets; ++bk) dev_free(bucket[bk]);
    CUBLAS_CHECK(cublasDestroy(blas));
    print_ledger();
    return 0;
}

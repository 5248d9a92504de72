// h04_fp16_server_infer.cu
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// An inference "server" loop for a 4-layer MLP classifier (1024 input features -> 2048 ->
// 2048 -> 2048 -> 1000 classes, ReLU between layers) with fp16 weights. At start-up the
// weights are generated on the host in fp32, converted to fp16 and uploaded once (one
// cudaMalloc per weight and bias tensor), and a persistent device buffer of per-class
// statistics (how many requests' samples were predicted as each class, plus the summed
// confidence) is allocated and zeroed; it lives for the whole run. Then 20 requests of
// varying batch sizes (8 to 256 samples) are served on one non-blocking stream: each
// request allocates its input, its three hidden activations, its logits and its output
// (predicted class and confidence per sample) with cudaMallocAsync, uploads its input from
// a pinned staging buffer, runs the four layers with cublasGemmEx (fp16 inputs, fp32
// compute; hidden layers written as fp16, logits as fp32) followed by bias/ReLU kernels, a
// kernel that takes the softmax argmax of every row and updates the class statistics, copies
// the output back, and releases all of its buffers with cudaFreeAsync once the result is
// on the host. cuBLAS runs on the handle's default workspace. (The corpus-env line only
// tells the simulated device not to compute GEMM results on the CPU, which would take
// seconds per request at this width; it changes no allocation.)

#include <cuda_runtime.h>
#include <cuda_fp16.h>
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
    int forward_passes = 0;
    unsigned long long params = 0;
    bool oom = false;
    unsigned long long oom_req = 0;
    Purpose oom_purpose = P_TEMPORARY;
    const char *oom_phase = "setup";
    unsigned long long oom_live = 0;
    unsigned long long oom_live_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void print_ledger() {
    Ledger &L = g_ledger;
    printf("ledger {\"program\":\"h04_fp16_server_infer\",\"kind\":\"inference\","
           "\"steps\":0,\"micro_batches_per_step\":0,\"forward_passes\":%d,"
           "\"params\":%llu,\"param_dtype\":\"fp16\",\"master_weights\":false,"
           "\"optimizer\":\"none\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           L.forward_passes, L.params, L.peak_bytes);
    for (int p = 0; p < P_COUNT; ++p)
        printf("%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.peak_by[p]);
    printf("},\"pools_at_peak\":[],\"oom\":");
    if (!L.oom) {
        printf("null");
    } else {
        int dom = 0;
        for (int p = 1; p < P_COUNT; ++p)
            if (L.oom_live_by[p] > L.oom_live_by[dom]) dom = p;
        printf("{\"requested_bytes\":%llu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":0,"
               "\"live_bytes\":%llu,\"live_by_purpose\":{",
               L.oom_req, kPurposeName[L.oom_purpose], L.oom_phase, L.oom_live);
        for (int p = 0; p < P_COUNT; ++p)
            printf("%s\"%s\":%llu", p ? "," : "", kPurposeName[p], L.oom_live_by[p]);
        printf("},\"dominant\":\"%s\"}", kPurposeName[dom]);
    }
    printf("}\n");
    fflush(stdout);
}

static void ledger_oom(size_t bytes, Purpose purpose) {
    Ledger &L = g_ledger;
    L.oom = true;
    L.oom_req = bytes;
    L.oom_purpose = purpose;
    L.oom_phase = L.phase;
    L.oom_live = L.live_bytes;
    memcpy(L.oom_live_by, L.live_by, sizeof(L.live_by));
    fprintf(stderr, "out of memory: %zu bytes for %s in %s\n", bytes, kPurposeName[purpose],
            L.phase);
    print_ledger();
    exit(3);
}

static void ledger_add(void *p, size_t bytes, Purpose purpose) {
    Ledger &L = g_ledger;
    L.live[p] = std::make_pair(bytes, purpose);
    L.live_bytes += bytes;
    L.live_by[purpose] += bytes;
    if (L.live_bytes > L.peak_bytes) {
        L.peak_bytes = L.live_bytes;
        memcpy(L.peak_by, L.live_by, sizeof(L.live_by));
    }
}

static void ledger_remove(void *p) {
    Ledger &L = g_ledger;
    auto it = L.live.find(p);
    if (it == L.live.end()) {
        fprintf(stderr, "free of unknown pointer %p\n", p);
        exit(1);
    }
    L.live_bytes -= it->second.first;
    L.live_by[it->second.second] -= it->second.first;
    L.live.erase(it);
}

template <typename T>
static T *dev_alloc(size_t count, Purpose purpose) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        ledger_oom(bytes, purpose);
    }
    CUDA_CHECK(err);
    ledger_add(p, bytes, purpose);
    return static_cast<T *>(p);
}

static void dev_free(void *p) {
    if (!p) return;
    ledger_remove(p);
    CUDA_CHECK(cudaFree(p));
}

template <typename T>
static T *dev_alloc_async(size_t count, Purpose purpose, cudaStream_t s) {
    size_t bytes = count * sizeof(T);
    void *p = nullptr;
    cudaError_t err = cudaMallocAsync(&p, bytes, s);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        ledger_oom(bytes, purpose);
    }
    CUDA_CHECK(err);
    ledger_add(p, bytes, purpose);
    return static_cast<T *>(p);
}

static void dev_free_async(void *p, cudaStream_t s) {
    if (!p) return;
    ledger_remove(p);
    CUDA_CHECK(cudaFreeAsync(p, s));
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

// y[b, j] = relu(y[b, j] + bias[j]) in fp16 storage, fp32 arithmetic; y row-major [B, n].
__global__ void bias_relu_half_kernel(__half *__restrict__ y, const __half *__restrict__ bias,
                                      int batch, int n) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)batch * n;
    if (idx >= total) return;
    float v = __half2float(y[idx]) + __half2float(bias[idx % n]);
    y[idx] = __float2half(fmaxf(v, 0.0f));
}

struct Prediction {
    int cls;
    float confidence;
};

struct ClassStats {
    unsigned long long count;
    float confidence_sum;
    float pad;
};

// One block per sample: logits += bias, argmax, softmax probability of the argmax;
// writes the prediction and updates the persistent per-class statistics.
__global__ void classify_kernel(const float *__restrict__ logits,
                                const __half *__restrict__ bias, int classes,
                                Prediction *__restrict__ out, ClassStats *__restrict__ stats) {
    __shared__ float s_val[256];
    __shared__ int s_idx[256];
    int b = blockIdx.x;
    const float *row = logits + (size_t)b * classes;

    float best = -INFINITY;
    int best_j = 0;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        float v = row[j] + __half2float(bias[j]);
        if (v > best) { best = v; best_j = j; }
    }
    s_val[threadIdx.x] = best;
    s_idx[threadIdx.x] = best_j;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float o = s_val[threadIdx.x + s];
            int oi = s_idx[threadIdx.x + s];
            if (o > s_val[threadIdx.x] || (o == s_val[threadIdx.x] && oi < s_idx[threadIdx.x])) {
                s_val[threadIdx.x] = o;
                s_idx[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    float m = s_val[0];
    int cls = s_idx[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = threadIdx.x; j < classes; j += blockDim.x)
        sum += expf(row[j] + __half2float(bias[j]) - m);
    s_val[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) s_val[threadIdx.x] += s_val[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float conf = 1.0f / s_val[0];  // exp(m - m) / sum
        out[b].cls = cls;
        out[b].confidence = conf;
        atomicAdd(&stats[cls].count, 1ull);
        atomicAdd(&stats[cls].confidence_sum, conf);
    }
}

static unsigned grid_for(size_t n, unsigned block) {
    size_t g = (n + block - 1) / block;
    return (unsigned)(g ? g : 1);
}

// ---------------------------------------------------------------------------------------
// Host-side deterministic data
// ---------------------------------------------------------------------------------------
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static inline uint32_t rng_u32() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static inline float rng_uniform() { return (rng_u32() & 0xFFFFFF) / 16777216.0f; }

// ---------------------------------------------------------------------------------------
// Model and requests
// ---------------------------------------------------------------------------------------
static const int kLayers = 4;
static const int kDims[kLayers + 1] = {1024, 2048, 2048, 2048, 1000};
static const int kRequests = 20;
// mostly small interactive requests, with the occasional large batch
static const int kRequestBatch[kRequests] = {16, 8,  64, 32, 256, 8,  24, 48, 8, 12,
                                             96, 16, 32, 8,  128, 20, 8,  40, 16, 24};
static const int kMaxBatch = 256;

int main() {
    CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));
    CUBLAS_CHECK(cublasSetStream(blas, stream));
    CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_TENSOR_OP_MATH));

    // ---- load the model: fp32 on the host, converted to fp16, uploaded once ----
    __half *W[kLayers], *bias[kLayers];
    {
        std::vector<__half> hbuf;
        for (int l = 0; l < kLayers; ++l) {
            int in = kDims[l], out = kDims[l + 1];
            size_t nw = (size_t)in * out;
            W[l] = dev_alloc<__half>(nw, P_WEIGHTS);
            bias[l] = dev_alloc<__half>(out, P_WEIGHTS);
            g_ledger.params += nw + out;

            float bound = 1.0f / sqrtf((float)in);
            hbuf.resize(nw);
            for (size_t i = 0; i < nw; ++i)
                hbuf[i] = __float2half((2.0f * rng_uniform() - 1.0f) * bound);
            CUDA_CHECK(cudaMemcpy(W[l], hbuf.data(), nw * sizeof(__half),
                                  cudaMemcpyHostToDevice));
            hbuf.resize(out);
            for (int j = 0; j < out; ++j)
                hbuf[j] = __float2half((2.0f * rng_uniform() - 1.0f) * bound);
            CUDA_CHECK(cudaMemcpy(bias[l], hbuf.data(), out * sizeof(__half),
                                  cudaMemcpyHostToDevice));
        }
    }
    const int in_dim = kDims[0], classes = kDims[kLayers];

    // ---- persistent per-class statistics ----
    ClassStats *stats = dev_alloc<ClassStats>(classes, P_FUNCTIONALITY);
    CUDA_CHECK(cudaMemset(stats, 0, classes * sizeof(ClassStats)));

    // ---- pinned host staging for requests and responses (host memory) ----
    __half *h_in = nullptr;
    Prediction *h_out = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_in, (size_t)kMaxBatch * in_dim * sizeof(__half)));
    CUDA_CHECK(cudaMallocHost(&h_out, (size_t)kMaxBatch * sizeof(Prediction)));

    printf("h04: serving %d-layer fp16 MLP (%llu params) for %d requests\n", kLayers,
           g_ledger.params, kRequests);

    const float one = 1.0f, zero = 0.0f;
    unsigned long long served = 0;
    g_ledger.phase = "inference";
    for (int r = 0; r < kRequests; ++r) {
        const int B = kRequestBatch[r];

        // request payload arrives on the host
        for (size_t i = 0; i < (size_t)B * in_dim; ++i)
            h_in[i] = __float2half(2.0f * rng_uniform() - 1.0f);

        __half *x = dev_alloc_async<__half>((size_t)B * in_dim, P_ACTIVATIONS, stream);
        CUDA_CHECK(cudaMemcpyAsync(x, h_in, (size_t)B * in_dim * sizeof(__half),
                                   cudaMemcpyHostToDevice, stream));

        // hidden layers: H_l = relu(H_{l-1} W_l^T + b_l), fp16 storage
        __half *h[kLayers - 1];
        const __half *cur = x;
        for (int l = 0; l < kLayers - 1; ++l) {
            int in = kDims[l], out = kDims[l + 1];
            h[l] = dev_alloc_async<__half>((size_t)B * out, P_TEMPORARY, stream);
            // column-major: H^T (out x B) = W_c^T (W_c = W^T, in x out) * X^T (in x B)
            CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, out, B, in, &one, W[l],
                                      CUDA_R_16F, in, cur, CUDA_R_16F, in, &zero, h[l],
                                      CUDA_R_16F, out, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT_TENSOR_OP));
            size_t n = (size_t)B * out;
            bias_relu_half_kernel<<<grid_for(n, 256), 256, 0, stream>>>(h[l], bias[l], B, out);
            KERNEL_CHECK();
            cur = h[l];
        }

        // classifier head: fp32 logits
        const int l = kLayers - 1;
        float *logits = dev_alloc_async<float>((size_t)B * classes, P_TEMPORARY, stream);
        CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, classes, B, kDims[l], &one,
                                  W[l], CUDA_R_16F, kDims[l], cur, CUDA_R_16F, kDims[l], &zero,
                                  logits, CUDA_R_32F, classes, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT_TENSOR_OP));
        Prediction *out = dev_alloc_async<Prediction>(B, P_TEMPORARY, stream);
        classify_kernel<<<B, 256, 0, stream>>>(logits, bias[l], classes, out, stats);
        KERNEL_CHECK();
        g_ledger.forward_passes++;

        CUDA_CHECK(cudaMemcpyAsync(h_out, out, (size_t)B * sizeof(Prediction),
                                   cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));

        // response is on the host: release the request's device buffers
        dev_free_async(x, stream);
        for (int k = 0; k < kLayers - 1; ++k) dev_free_async(h[k], stream);
        dev_free_async(logits, stream);
        dev_free_async(out, stream);

        served += B;
        printf("request %2d  batch %3d  served\n", r + 1, B);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));

    // ---- report the class statistics ----
    std::vector<ClassStats> hstats(classes);
    CUDA_CHECK(cudaMemcpy(hstats.data(), stats, classes * sizeof(ClassStats),
                          cudaMemcpyDeviceToHost));
    unsigned long long counted = 0;
    for (int c = 0; c < classes; ++c) counted += hstats[c].count;
    printf("served %llu samples, %llu counted in class statistics\n", served, counted);

    // ---- shutdown ----
    g_ledger.phase = "setup";
    dev_free(stats);
    for (int k = 0; k < kLayers; ++k) {
        dev_free(W[k]);
        dev_free(bias[k]);
    }
    CUDA_CHECK(cudaFreeHost(h_in));
    CUDA_CHECK(cudaFreeHost(h_out));
    CUBLAS_CHECK(cublasDestroy(blas));
    CUDA_CHECK(cudaStreamDestroy(stream));
    print_ledger();
    return 0;
}

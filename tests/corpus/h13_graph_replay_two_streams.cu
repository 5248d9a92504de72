// h13_graph_replay_two_streams.cu
//
// An fp32 trainer for a 3-layer MLP (1024 -> 2048 -> 2048 -> 512 classes, ReLU, softmax
// cross-entropy), with every GEMM done by cuBLAS SGEMM. The whole training step (forward,
// loss, backward, SGD-with-momentum update) is captured ONCE into a CUDA graph by stream
// capture, after a warm-up step run eagerly, and the graph is then replayed with
// cudaGraphLaunch for 9 more steps (10 steps in all). Every device buffer (weights,
// gradients, momentum, activations, the graph's static input/label buffers, the
// double-buffered input staging and a cuBLAS workspace) is allocated before capture, and
// nothing is allocated or freed until the end of training. Batches are produced on the
// host into pinned memory and uploaded on a second stream (cudaMemcpyAsync into one of two
// device staging slots); the compute stream waits on the slot's "ready" event, copies the
// slot into the graph's static input buffers, and the upload of the next batch overlaps
// the current step. The program prints the ledger of what it allocated and why.

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>

// ---------------------------------------------------------------------------------------
// error checking

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

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// memory ledger: a thin wrapper around cudaMalloc / cudaFree

enum Purpose { P_WEIGHTS, P_OPTIMIZER, P_GRADIENTS, P_ACTIVATIONS, P_TEMPORARY,
               P_FUNCTIONALITY, P_MIXED, P_COUNT };
static const char *kPurposeName[P_COUNT] = {"weights", "optimizer", "gradients",
                                             "activations", "temporary", "functionality",
                                             "mixed"};

struct Alloc { void *ptr; size_t bytes; Purpose purpose; };

static std::vector<Alloc> g_allocs;
static unsigned long long g_live[P_COUNT];
static unsigned long long g_live_total = 0;
static unsigned long long g_peak_total = 0;
static unsigned long long g_peak[P_COUNT];

static void *dev_alloc(size_t bytes, Purpose purpose) {
    void *p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    g_allocs.push_back({p, bytes, purpose});
    g_live[purpose] += bytes;
    g_live_total += bytes;
    if (g_live_total > g_peak_total) {
        g_peak_total = g_live_total;
        memcpy(g_peak, g_live, sizeof(g_peak));
    }
    return p;
}

static void dev_free(void *p) {
    if (!p) return;
    for (size_t i = 0; i < g_allocs.size(); ++i) {
        if (g_allocs[i].ptr == p) {
            g_live[g_allocs[i].purpose] -= g_allocs[i].bytes;
            g_live_total -= g_allocs[i].bytes;
            g_allocs.erase(g_allocs.begin() + i);
            CUDA_CHECK(cudaFree(p));
            return;
        }
    }
    fprintf(stderr, "dev_free: unknown pointer %p\n", p);
    exit(1);
}

// ---------------------------------------------------------------------------------------
// model sizes

static const int kBatch   = 256;
static const int kIn      = 1024;
static const int kHidden1 = 2048;
static const int kHidden2 = 2048;
static const int kClasses = 512;
static const int kSteps   = 10;      // 1 eager warm-up step + 9 graph replays

static const float kLR       = 0.05f;
static const float kMomentum = 0.9f;
static const float kWeightDecay = 1e-4f;

// ---------------------------------------------------------------------------------------
// kernels (column-major activations: one column per sample)

__global__ void bias_relu_kernel(float *z, const float *bias, int rows, int cols) {
    long long n = (long long)rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = z[i] + bias[i % rows];
        z[i] = v > 0.f ? v : 0.f;
    }
}

__global__ void bias_add_kernel(float *z, const float *bias, int rows, int cols) {
    long long n = (long long)rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        z[i] += bias[i % rows];
    }
}

// One block per sample: softmax over the column, mean cross-entropy into *loss,
// and dlogits = (softmax - onehot) / batch.
__global__ void softmax_xent_kernel(const float *logits, const int *labels, float *dlogits,
                                    float *loss, int classes, int batch) {
    __shared__ float red[256];
    int col = blockIdx.x;
    const float *z = logits + (long long)col * classes;
    float *dz = dlogits + (long long)col * classes;

    float m = -1e30f;
    for (int i = threadIdx.x; i < classes; i += blockDim.x) m = fmaxf(m, z[i]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.f;
    for (int i = threadIdx.x; i < classes; i += blockDim.x) sum += __expf(z[i] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float denom = red[0];
    int y = labels[col];
    float inv_b = 1.f / (float)batch;
    for (int i = threadIdx.x; i < classes; i += blockDim.x) {
        float p = __expf(z[i] - m) / denom;
        dz[i] = (p - (i == y ? 1.f : 0.f)) * inv_b;
    }
    if (threadIdx.x == 0) atomicAdd(loss, (logf(denom) + m - z[y]) * inv_b);
}

// db[r] = sum over columns of dz[r, :]
__global__ void bias_grad_kernel(const float *dz, float *db, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.f;
    for (int c = 0; c < cols; ++c) acc += dz[(long long)c * rows + r];
    db[r] = acc;
}

// dz = da * (a > 0), in place on da
__global__ void relu_backward_kernel(float *da, const float *a, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if (a[i] <= 0.f) da[i] = 0.f;
    }
}

__global__ void sgd_momentum_kernel(float *w, const float *g, float *v, long long n,
                                    float lr, float momentum, float wd) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float grad = g[i] + wd * w[i];
        float vel = momentum * v[i] + grad;
        v[i] = vel;
        w[i] -= lr * vel;
    }
}

static int grid_for(long long n, int block) {
    long long g = (n + block - 1) / block;
    if (g > 4096) g = 4096;
    return (int)g;
}

// ---------------------------------------------------------------------------------------
// the model and the trainer state

struct Layer {
    int in, out;
    float *W, *b;        // weights
    float *dW, *db;      // gradients
    float *vW, *vb;      // momentum
};

struct Trainer {
    Layer L[3];
    // activations (kept for backward) and the graph's static inputs
    float *x;            // [kIn x B]   static input the graph reads
    int   *y;            // [B]         static labels the graph reads
    float *a1, *a2;      // [H x B]     post-ReLU activations
    float *logits;       // [C x B]
    // temporaries of the step
    float *dlogits;      // [C x B]
    float *da2, *da1;    // [H x B]     gradients w.r.t. activations
    float *loss;         // scalar
    // cuBLAS
    cublasHandle_t blas;
    void *blas_ws;
    size_t blas_ws_bytes;
    cudaStream_t compute;
};

static void init_layer(Layer &l, int in, int out, uint32_t seed) {
    l.in = in; l.out = out;
    size_t wn = (size_t)in * out;
    l.W  = (float *)dev_alloc(wn * sizeof(float), P_WEIGHTS);
    l.b  = (float *)dev_alloc((size_t)out * sizeof(float), P_WEIGHTS);
    l.dW = (float *)dev_alloc(wn * sizeof(float), P_GRADIENTS);
    l.db = (float *)dev_alloc((size_t)out * sizeof(float), P_GRADIENTS);
    l.vW = (float *)dev_alloc(wn * sizeof(float), P_OPTIMIZER);
    l.vb = (float *)dev_alloc((size_t)out * sizeof(float), P_OPTIMIZER);

    // He-uniform init on the host with a fixed LCG
    std::vector<float> hw(wn);
    float scale = sqrtf(6.f / (float)in);
    uint32_t s = seed;
    for (size_t i = 0; i < wn; ++i) {
        s = s * 1664525u + 1013904223u;
        hw[i] = ((float)(s >> 8) / 16777216.f * 2.f - 1.f) * scale;
    }
    CUDA_CHECK(cudaMemcpy(l.W, hw.data(), wn * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(l.b, 0, (size_t)out * sizeof(float)));
    CUDA_CHECK(cudaMemset(l.vW, 0, wn * sizeof(float)));
    CUDA_CHECK(cudaMemset(l.vb, 0, (size_t)out * sizeof(float)));
}

static void sgemm(Trainer &t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                  int k, const float *A, int lda, const float *B, int ldb, float *C,
                  int ldc) {
    const float one = 1.f, zero = 0.f;
    CUBLAS_CHECK(cublasSgemm(t.blas, ta, tb, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc));
}

// One full training step on t.compute, reading t.x / t.y. Captured once into a graph.
static void train_step(Trainer &t) {
    cudaStream_t s = t.compute;
    const int B = kBatch;
    Layer &l1 = t.L[0], &l2 = t.L[1], &l3 = t.L[2];

    CUDA_CHECK(cudaMemsetAsync(t.loss, 0, sizeof(float), s));

    // ---- forward
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_N, l1.out, B, l1.in, l1.W, l1.out, t.x, l1.in, t.a1, l1.out);
    bias_relu_kernel<<<grid_for((long long)l1.out * B, 256), 256, 0, s>>>(t.a1, l1.b, l1.out, B);
    KERNEL_CHECK();
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_N, l2.out, B, l2.in, l2.W, l2.out, t.a1, l2.in, t.a2, l2.out);
    bias_relu_kernel<<<grid_for((long long)l2.out * B, 256), 256, 0, s>>>(t.a2, l2.b, l2.out, B);
    KERNEL_CHECK();
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_N, l3.out, B, l3.in, l3.W, l3.out, t.a2, l3.in, t.logits, l3.out);
    bias_add_kernel<<<grid_for((long long)l3.out * B, 256), 256, 0, s>>>(t.logits, l3.b, l3.out, B);
    KERNEL_CHECK();

    // ---- loss
    softmax_xent_kernel<<<B, 256, 0, s>>>(t.logits, t.y, t.dlogits, t.loss, kClasses, B);
    KERNEL_CHECK();

    // ---- backward
    // layer 3
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_T, l3.out, l3.in, B, t.dlogits, l3.out, t.a2, l3.in, l3.dW, l3.out);
    bias_grad_kernel<<<(l3.out + 255) / 256, 256, 0, s>>>(t.dlogits, l3.db, l3.out, B);
    KERNEL_CHECK();
    sgemm(t, CUBLAS_OP_T, CUBLAS_OP_N, l3.in, B, l3.out, l3.W, l3.out, t.dlogits, l3.out, t.da2, l3.in);
    relu_backward_kernel<<<grid_for((long long)l3.in * B, 256), 256, 0, s>>>(t.da2, t.a2, (long long)l3.in * B);
    KERNEL_CHECK();
    // layer 2
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_T, l2.out, l2.in, B, t.da2, l2.out, t.a1, l2.in, l2.dW, l2.out);
    bias_grad_kernel<<<(l2.out + 255) / 256, 256, 0, s>>>(t.da2, l2.db, l2.out, B);
    KERNEL_CHECK();
    sgemm(t, CUBLAS_OP_T, CUBLAS_OP_N, l2.in, B, l2.out, l2.W, l2.out, t.da2, l2.out, t.da1, l2.in);
    relu_backward_kernel<<<grid_for((long long)l2.in * B, 256), 256, 0, s>>>(t.da1, t.a1, (long long)l2.in * B);
    KERNEL_CHECK();
    // layer 1 (no gradient w.r.t. the input)
    sgemm(t, CUBLAS_OP_N, CUBLAS_OP_T, l1.out, l1.in, B, t.da1, l1.out, t.x, l1.in, l1.dW, l1.out);
    bias_grad_kernel<<<(l1.out + 255) / 256, 256, 0, s>>>(t.da1, l1.db, l1.out, B);
    KERNEL_CHECK();

    // ---- SGD with momentum
    for (int i = 0; i < 3; ++i) {
        Layer &l = t.L[i];
        long long wn = (long long)l.in * l.out;
        sgd_momentum_kernel<<<grid_for(wn, 256), 256, 0, s>>>(l.W, l.dW, l.vW, wn, kLR, kMomentum, kWeightDecay);
        KERNEL_CHECK();
        sgd_momentum_kernel<<<grid_for(l.out, 256), 256, 0, s>>>(l.b, l.db, l.vb, l.out, kLR, kMomentum, 0.f);
        KERNEL_CHECK();
    }
}

// ---------------------------------------------------------------------------------------
// input pipeline: pinned host batches -> double-buffered device staging on a copy stream

struct InputPipeline {
    float *h_x[2]; int *h_y[2];      // pinned host
    float *d_x[2]; int *d_y[2];      // device staging slots
    cudaEvent_t ready[2];            // upload of slot finished (copy stream)
    cudaEvent_t consumed[2];         // compute stream finished reading slot
    cudaStream_t copy;
    bool consumed_pending[2];
};

static void make_batch(int step, float *hx, int *hy) {
    uint32_t s = 0x9e3779b9u ^ (uint32_t)(step * 7919);
    for (int c = 0; c < kBatch; ++c) {
        int label = (c * 37 + step * 11) % kClasses;
        hy[c] = label;
        float *col = hx + (size_t)c * kIn;
        for (int i = 0; i < kIn; ++i) {
            s = s * 1664525u + 1013904223u;
            float noise = ((float)(s >> 8) / 16777216.f - 0.5f) * 0.2f;
            col[i] = noise + ((i % kClasses) == label ? 1.f : 0.f);
        }
    }
}

static void upload_batch(InputPipeline &p, int step) {
    int slot = step & 1;
    // the pinned host slot may still be read by an earlier upload
    CUDA_CHECK(cudaEventSynchronize(p.ready[slot]));
    make_batch(step, p.h_x[slot], p.h_y[slot]);
    // the device slot may still be read by the compute stream
    if (p.consumed_pending[slot])
        CUDA_CHECK(cudaStreamWaitEvent(p.copy, p.consumed[slot], 0));
    CUDA_CHECK(cudaMemcpyAsync(p.d_x[slot], p.h_x[slot], (size_t)kIn * kBatch * sizeof(float),
                               cudaMemcpyHostToDevice, p.copy));
    CUDA_CHECK(cudaMemcpyAsync(p.d_y[slot], p.h_y[slot], (size_t)kBatch * sizeof(int),
                               cudaMemcpyHostToDevice, p.copy));
    CUDA_CHECK(cudaEventRecord(p.ready[slot], p.copy));
}

// compute stream: wait for the slot, copy it into the graph's static input buffers
static void consume_batch(InputPipeline &p, Trainer &t, int step) {
    int slot = step & 1;
    CUDA_CHECK(cudaStreamWaitEvent(t.compute, p.ready[slot], 0));
    CUDA_CHECK(cudaMemcpyAsync(t.x, p.d_x[slot], (size_t)kIn * kBatch * sizeof(float),
                               cudaMemcpyDeviceToDevice, t.compute));
    CUDA_CHECK(cudaMemcpyAsync(t.y, p.d_y[slot], (size_t)kBatch * sizeof(int),
                               cudaMemcpyDeviceToDevice, t.compute));
    CUDA_CHECK(cudaEventRecord(p.consumed[slot], t.compute));
    p.consumed_pending[slot] = true;
}

// ---------------------------------------------------------------------------------------

static void print_ledger(long long params) {
    unsigned long long sum = 0;
    for (int i = 0; i < P_COUNT; ++i) sum += g_peak[i];
    if (sum != g_peak_total) {
        fprintf(stderr, "ledger: peak split %llu != peak %llu\n", sum, g_peak_total);
        exit(1);
    }
    printf("ledger {\"program\":\"h13_graph_replay_two_streams\",\"kind\":\"training\","
           "\"steps\":%d,\"micro_batches_per_step\":1,\"forward_passes\":%d,"
           "\"params\":%lld,\"param_dtype\":\"fp32\",\"master_weights\":false,"
           "\"optimizer\":\"sgd_momentum\",\"peak_bytes\":%llu,\"peak_by_purpose\":{",
           kSteps, kSteps, params, g_peak_total);
    for (int i = 0; i < P_COUNT; ++i)
        printf("%s\"%s\":%llu", i ? "," : "", kPurposeName[i], g_peak[i]);
    printf("},\"pools_at_peak\":[],\"oom\":null}\n");
    fflush(stdout);
}

int main() {
    CUDA_CHECK(cudaSetDevice(0));

    Trainer t;
    memset(&t, 0, sizeof(t));
    InputPipeline p;
    memset(&p, 0, sizeof(p));

    CUDA_CHECK(cudaStreamCreateWithFlags(&t.compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&p.copy, cudaStreamNonBlocking));

    CUBLAS_CHECK(cublasCreate(&t.blas));
    CUBLAS_CHECK(cublasSetStream(t.blas, t.compute));
    // A workspace of our own, so nothing is allocated by cuBLAS while the step is captured.
    t.blas_ws_bytes = 4u << 20;
    t.blas_ws = dev_alloc(t.blas_ws_bytes, P_FUNCTIONALITY);
    CUBLAS_CHECK(cublasSetWorkspace(t.blas, t.blas_ws, t.blas_ws_bytes));

    // ---- parameters, gradients, momentum
    init_layer(t.L[0], kIn, kHidden1, 1234u);
    init_layer(t.L[1], kHidden1, kHidden2, 5678u);
    init_layer(t.L[2], kHidden2, kClasses, 91011u);
    long long params = 0;
    for (int i = 0; i < 3; ++i) params += (long long)t.L[i].in * t.L[i].out + t.L[i].out;

    // ---- activations and the graph's static inputs
    t.x      = (float *)dev_alloc((size_t)kIn * kBatch * sizeof(float), P_ACTIVATIONS);
    t.y      = (int *)dev_alloc((size_t)kBatch * sizeof(int), P_ACTIVATIONS);
    t.a1     = (float *)dev_alloc((size_t)kHidden1 * kBatch * sizeof(float), P_ACTIVATIONS);
    t.a2     = (float *)dev_alloc((size_t)kHidden2 * kBatch * sizeof(float), P_ACTIVATIONS);
    t.logits = (float *)dev_alloc((size_t)kClasses * kBatch * sizeof(float), P_ACTIVATIONS);

    // ---- per-step temporaries
    t.dlogits = (float *)dev_alloc((size_t)kClasses * kBatch * sizeof(float), P_TEMPORARY);
    t.da2     = (float *)dev_alloc((size_t)kHidden2 * kBatch * sizeof(float), P_TEMPORARY);
    t.da1     = (float *)dev_alloc((size_t)kHidden1 * kBatch * sizeof(float), P_TEMPORARY);
    t.loss    = (float *)dev_alloc(sizeof(float), P_TEMPORARY);

    // ---- input staging: two pinned host slots, two device slots
    for (int s = 0; s < 2; ++s) {
        CUDA_CHECK(cudaMallocHost((void **)&p.h_x[s], (size_t)kIn * kBatch * sizeof(float)));
        CUDA_CHECK(cudaMallocHost((void **)&p.h_y[s], (size_t)kBatch * sizeof(int)));
        p.d_x[s] = (float *)dev_alloc((size_t)kIn * kBatch * sizeof(float), P_ACTIVATIONS);
        p.d_y[s] = (int *)dev_alloc((size_t)kBatch * sizeof(int), P_ACTIVATIONS);
        CUDA_CHECK(cudaEventCreateWithFlags(&p.ready[s], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&p.consumed[s], cudaEventDisableTiming));
        p.consumed_pending[s] = false;
    }
    float *h_loss = nullptr;
    CUDA_CHECK(cudaMallocHost((void **)&h_loss, sizeof(float)));

    CUDA_CHECK(cudaDeviceSynchronize());   // initial weights are on the device

    printf("mlp %d-%d-%d-%d, batch %d, %lld params, %d steps (1 eager + graph replays)\n",
           kIn, kHidden1, kHidden2, kClasses, kBatch, params, kSteps);

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;

    upload_batch(p, 0);
    for (int step = 0; step < kSteps; ++step) {
        consume_batch(p, t, step);
        if (step + 1 < kSteps) upload_batch(p, step + 1);   // overlaps this step

        if (step == 0) {
            // warm-up step, eager: lets cuBLAS pick its kernels before capture
            train_step(t);
            CUDA_CHECK(cudaStreamSynchronize(t.compute));

            CUDA_CHECK(cudaStreamBeginCapture(t.compute, cudaStreamCaptureModeThreadLocal));
            train_step(t);
            CUDA_CHECK(cudaStreamEndCapture(t.compute, &graph));
            CUDA_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
            size_t nodes = 0;
            CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
            printf("captured training step: %zu graph nodes\n", nodes);
        } else {
            CUDA_CHECK(cudaGraphLaunch(graph_exec, t.compute));
        }

        if (step == 0 || step == kSteps - 1) {
            CUDA_CHECK(cudaMemcpyAsync(h_loss, t.loss, sizeof(float), cudaMemcpyDeviceToHost,
                                       t.compute));
            CUDA_CHECK(cudaStreamSynchronize(t.compute));
            printf("step %d loss %.4f\n", step + 1, *h_loss);
        }
    }
    CUDA_CHECK(cudaStreamSynchronize(t.compute));
    CUDA_CHECK(cudaStreamSynchronize(p.copy));

    // ---- tear down
    CUDA_CHECK(cudaGraphExecDestroy(graph_exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    for (int s = 0; s < 2; ++s) {
        CUDA_CHECK(cudaEventDestroy(p.ready[s]));
        CUDA_CHECK(cudaEventDestroy(p.consumed[s]));
        CUDA_CHECK(cudaFreeHost(p.h_x[s]));
        CUDA_CHECK(cudaFreeHost(p.h_y[s]));
        dev_free(p.d_x[s]);
        dev_free(p.d_y[s]);
    }
    CUDA_CHECK(cudaFreeHost(h_loss));
    dev_free(t.loss); dev_free(t.da1); dev_free(t.da2); dev_free(t.dlogits);
    dev_free(t.logits); dev_free(t.a2); dev_free(t.a1); dev_free(t.y); dev_free(t.x);
    for (int i = 2; i >= 0; --i) {
        Layer &l = t.L[i];
        dev_free(l.vb); dev_free(l.vW); dev_free(l.db); dev_free(l.dW);
        dev_free(l.b); dev_free(l.W);
    }
    CUBLAS_CHECK(cublasDestroy(t.blas));
    dev_free(t.blas_ws);
    CUDA_CHECK(cudaStreamDestroy(p.copy));
    CUDA_CHECK(cudaStreamDestroy(t.compute));

    print_ledger(params);
    return 0;
}

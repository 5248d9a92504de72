// train_mlp — a small but real MLP trainer in CUDA C, used as a profiling target.
//
// Model: L linear layers (D -> H -> ... -> H -> C) with ReLU between them, softmax
// cross-entropy loss, AdamW (or SGD with momentum). Synthetic data: Gaussian-ish blobs
// around C random class centres, from a generator seeded by a constant, so every run is
// identical.
//
// Memory layout mimics a framework on purpose, so the profiler has something to find:
// one cudaMalloc per tensor; activations saved for backward are allocated in forward
// and freed in backward as soon as they are consumed; temporaries live within one
// phase. The program keeps its own ledger of every allocation (dev_alloc/dev_free),
// each with the purpose the program gave it (weights, optimizer, gradients, activations,
// temporary, functionality), and prints it as JSON on the last stdout line, so that a
// test can compare the profiler's memory anatomy against ground truth: peak_by_purpose
// is the split at the FIRST moment the live bytes reached their maximum. One buffer is
// leaked on purpose (evaluate()'s scratch), a realistic bug the profiler should report.
//
// Modes (docs/samples.md): --optimizer sgd (one momentum buffer per tensor);
// --precision bf16 (fp32 master + bf16 working copy of every tensor, bf16 activations
// and gradients, fp32 optimizer states; kernels named *_bf16); --inference (weights
// from the host, STEPS forward passes of temporaries, argmax); --checkpoint (forward
// keeps the input of every CKPT_SEGMENT-th layer, backward recomputes the others as
// temporaries); --grow-batch (the batch doubles after every step until a cudaMalloc
// fails); --kill-on-oom (a failed cudaMalloc ends the process with SIGKILL, after the
// ledger). Without options the program does exactly what it always did.
//
// --check recomputes every fp32 training step on the CPU and compares loss, gradients
// and the optimizer's update against the device (meaningful on a real GPU only: the
// simulated device does not execute kernels).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample_common.h"

#define MAX_LAYERS 64
#define TILE 16
#define THREADS 256
#define CKPT_SEGMENT 2            // --checkpoint keeps the inputs of layers 0, 2, 4, ...
#define MAX_GROW_BATCH (1 << 20)  // --grow-batch gives up (exit 1) past this batch

typedef __nv_bfloat16 bf16;

// ---------------------------------------------------------------- options

enum optimizer { ADAMW, SGD };
static int B = 64, H = 1024, NL = 3, D = 784, C = 10, STEPS = 5, CHECK = 0;
static int BATCH0;  // --batch as given (--grow-batch changes B)
static enum optimizer OPT = ADAMW;
static int BF16 = 0, INFER = 0, CKPT = 0, GROW = 0, KILL_ON_OOM = 0;
static size_t ES = sizeof(float);  // bytes per element of activations, gradients, working weights

// ---------------------------------------------------------------- error handling

static void print_ledger(void);

// ---------------------------------------------------------------- the ledger

enum purpose { WEIGHTS, GRADIENTS, OPTIMIZER, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, NPURPOSES };
static const char *purpose_name[NPURPOSES] = {"weights",   "gradients", "optimizer",
                                              "activations", "temporary", "functionality"};

#define MAX_LIVE 4096
#define MAX_KERNELS 32

static struct {
    long alloc_calls, free_calls, launches;
    size_t alloc_bytes, live_bytes, peak_bytes;
    size_t live_by_purpose[NPURPOSES], peak_by_purpose[NPURPOSES];
    struct { void *ptr; size_t bytes; enum purpose p; } live[MAX_LIVE];
    struct { const char *name; long count; } kernels[MAX_KERNELS];
    int nlive, nkernels;
    long h2d_calls, d2h_calls, memset_calls;
    size_t h2d_bytes, d2h_bytes, memset_bytes;
    // Where the program is: the phase ("init", "forward", "loss", "backward",
    // "optimizer", "evaluate"), the training step (1-based; 0 outside the steps), and
    // the function that calls dev_alloc (each allocating function sets it, SITE()).
    const char *phase, *site;
    int step, steps_done;
    int failed;  // a cudaMalloc failed: what was asked, where, and what was live then
    struct {
        size_t bytes;
        enum purpose p;
        int batch, step;
        const char *phase, *site;
        size_t live_by_purpose[NPURPOSES];
    } fail;
} ledger;

#define SITE() (ledger.site = __func__)

// The functions that call dev_alloc are never inlined, so that a profiler's stack of
// each allocation names the same function as the ledger's site, right below dev_alloc.
#define ALLOCATES __attribute__((noinline))

// Copies and sets go through these so the ledger knows their bytes too.
static cudaError_t copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyHostToDevice)
        ledger.h2d_calls++, ledger.h2d_bytes += bytes;
    else if (kind == cudaMemcpyDeviceToHost)
        ledger.d2h_calls++, ledger.d2h_bytes += bytes;
    return cudaMemcpy(dst, src, bytes, kind);
}

static cudaError_t set(void *dst, int value, size_t bytes)
{
    ledger.memset_calls++, ledger.memset_bytes += bytes;
    return cudaMemset(dst, value, bytes);
}

// A failed allocation is fatal: report it the way a framework's OOM message would, print
// the ledger (what was live, and where the program was), then exit 1 — or, with
// --kill-on-oom, die of SIGKILL at once, as a job its scheduler kills does.
static void out_of_memory(size_t bytes, enum purpose p, cudaError_t err)
    __attribute__((noreturn));
static void out_of_memory(size_t bytes, enum purpose p, cudaError_t err)
{
    fprintf(stderr, "cudaMalloc of %zu bytes for %s failed: %s (in %s, %s phase, step %d, "
            "batch %d)\n", bytes, purpose_name[p], cudaGetErrorString(err), ledger.site,
            ledger.phase, ledger.step, B);
    ledger.failed = 1;
    ledger.fail.bytes = bytes, ledger.fail.p = p;
    ledger.fail.batch = B, ledger.fail.step = ledger.step;
    ledger.fail.phase = ledger.phase, ledger.fail.site = ledger.site;
    memcpy(ledger.fail.live_by_purpose, ledger.live_by_purpose, sizeof ledger.live_by_purpose);
    print_ledger();  // flushes stdout
    if (KILL_ON_OOM)
        kill(getpid(), SIGKILL);
    exit(1);
}

// cudaMalloc + bookkeeping.
static void *dev_alloc(size_t bytes, enum purpose p)
{
    void *ptr = NULL;
    cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess)
        out_of_memory(bytes, p, err);
    if (ledger.nlive == MAX_LIVE)
        fatal("train_mlp: ledger full");
    ledger.live[ledger.nlive].ptr = ptr;
    ledger.live[ledger.nlive].bytes = bytes;
    ledger.live[ledger.nlive].p = p;
    ledger.nlive++;
    ledger.alloc_calls++;
    ledger.alloc_bytes += bytes;
    ledger.live_bytes += bytes;
    ledger.live_by_purpose[p] += bytes;
    if (ledger.live_bytes > ledger.peak_bytes) {  // strictly greater: keep the first time
        ledger.peak_bytes = ledger.live_bytes;
        memcpy(ledger.peak_by_purpose, ledger.live_by_purpose, sizeof ledger.peak_by_purpose);
    }
    return ptr;
}

static void dev_free(void *ptr)
{
    for (int i = 0; i < ledger.nlive; i++) {
        if (ledger.live[i].ptr != ptr)
            continue;
        CUDA_CHECK(cudaFree(ptr));
        ledger.free_calls++;
        ledger.live_bytes -= ledger.live[i].bytes;
        ledger.live_by_purpose[ledger.live[i].p] -= ledger.live[i].bytes;
        ledger.live[i] = ledger.live[--ledger.nlive];
        return;
    }
    fatal("train_mlp: dev_free of unknown pointer %p", ptr);
}

static void count_launch(const char *name)
{
    ledger.launches++;
    for (int i = 0; i < ledger.nkernels; i++)
        if (strcmp(ledger.kernels[i].name, name) == 0) {
            ledger.kernels[i].count++;
            return;
        }
    if (ledger.nkernels == MAX_KERNELS)
        fatal("train_mlp: too many kernels");
    ledger.kernels[ledger.nkernels].name = name;
    ledger.kernels[ledger.nkernels++].count = 1;
}

// Every launch goes through here: the <<<>>> itself, the launch-error check, and the
// ledger's count under the kernel's name as written in the source.
#define LAUNCH(kernel, grid, block, ...)                                             \
    do {                                                                             \
        kernel<<<(grid), (block)>>>(__VA_ARGS__);                                    \
        CUDA_CHECK(cudaGetLastError());                                              \
        count_launch(#kernel);                                                       \
    } while (0)

// In a function templated on the storage type X: the fp32 kernel, or its twin named
// kernel_bf16. The branch not taken is discarded at compile time (if constexpr), so
// each one sees pointers of its own type.
#define LAUNCH_X(kernel, grid, block, ...)                                           \
    do {                                                                             \
        if constexpr (sizeof(X) == sizeof(float))                                    \
            LAUNCH(kernel, grid, block, __VA_ARGS__);                                \
        else                                                                         \
            LAUNCH(kernel##_bf16, grid, block, __VA_ARGS__);                         \
    } while (0)

static size_t param_count(void);

static void print_purposes(const char *key, const size_t *bytes)
{
    printf("\"%s\":{", key);
    for (int p = 0; p < NPURPOSES; p++)
        printf("%s\"%s\":%zu", p ? "," : "", purpose_name[p], bytes[p]);
    printf("}");
}

// What the program stores per parameter, in bytes, as it allocates it (init_model).
static void print_bytes_per_param(void)
{
    int weights = INFER ? (int)ES : BF16 ? 4 + 2 : 4;  // bf16 training: fp32 master + copy
    int optimizer = INFER ? 0 : OPT == ADAMW ? 8 : 4;
    int gradients = INFER ? 0 : (int)ES;
    printf("\"bytes_per_param\":{\"weights\":%d,\"optimizer\":%d,\"gradients\":%d}", weights,
           optimizer, gradients);
}

static void print_config(void)
{
    printf("\"config\":{\"optimizer\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\","
           "\"checkpoint\":%s,\"checkpoint_segment\":%d,\"grow_batch\":%s,\"kill_on_oom\":%s,"
           "\"batch\":%d,\"hidden\":%d,\"layers\":%d,\"in\":%d,\"classes\":%d,\"steps\":%d}",
           INFER ? "none" : OPT == ADAMW ? "adamw" : "sgd", BF16 ? "bf16" : "fp32",
           INFER ? "inference" : "train", CKPT ? "true" : "false", CKPT_SEGMENT,
           GROW ? "true" : "false", KILL_ON_OOM ? "true" : "false", BATCH0, H, NL, D, C, STEPS);
}

static void print_ledger(void)
{
    printf("ledger {\"alloc_calls\":%ld,\"free_calls\":%ld,\"alloc_bytes\":%zu,"
           "\"peak_bytes\":%zu,",
           ledger.alloc_calls, ledger.free_calls, ledger.alloc_bytes, ledger.peak_bytes);
    print_purposes("peak_by_purpose", ledger.peak_by_purpose);
    printf(",\"params\":%zu,", param_count());
    print_bytes_per_param();
    printf(",");
    print_config();
    printf(",\"steps_done\":%d,\"live_at_exit_bytes\":%zu,\"leaked\":[", ledger.steps_done,
           ledger.live_bytes);
    for (int i = 0; i < ledger.nlive; i++)
        printf("%s{\"bytes\":%zu,\"purpose\":\"%s\"}", i ? "," : "", ledger.live[i].bytes,
               purpose_name[ledger.live[i].p]);
    printf("],\"launches\":%ld,\"kernels\":{", ledger.launches);
    for (int i = 0; i < ledger.nkernels; i++)
        printf("%s\"%s\":%ld", i ? "," : "", ledger.kernels[i].name, ledger.kernels[i].count);
    printf("},\"copies\":{\"h2d_calls\":%ld,\"h2d_bytes\":%zu,\"d2h_calls\":%ld,\"d2h_bytes\":%zu,"
           "\"memset_calls\":%ld,\"memset_bytes\":%zu}",
           ledger.h2d_calls, ledger.h2d_bytes, ledger.d2h_calls, ledger.d2h_bytes,
           ledger.memset_calls, ledger.memset_bytes);
    if (ledger.failed) {
        printf(",\"failed_alloc\":{\"bytes\":%zu,\"purpose\":\"%s\",\"batch\":%d,\"step\":%d,"
               "\"phase\":\"%s\",\"site\":\"%s\",",
               ledger.fail.bytes, purpose_name[ledger.fail.p], ledger.fail.batch,
               ledger.fail.step, ledger.fail.phase, ledger.fail.site);
        print_purposes("live_by_purpose", ledger.fail.live_by_purpose);
        printf("}");
    }
    printf("}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------- kernels
//
// extern "C" so that the symbol the profiler sees is the same as the ledger's name.
// Each kernel has an fp32 form and, where it touches 16-bit tensors, a twin named
// *_bf16 (--precision bf16) over one templated body; arithmetic is fp32 in both.
// Matrices are row-major. The three GEMMs share one tiled body: each 16x16 block
// computes a 16x16 tile of C, staging 16x16 tiles of A and B in shared memory;
// out-of-range elements are loaded as 0 so any M, N, K works.
//   matmul_fwd:        C[M,N] = A[M,K]   @ B[K,N]     (Y = X W)
//   matmul_bwd_data:   C[M,N] = A[M,K]   @ B[N,K]^T   (dX = dY W^T)
//   matmul_bwd_weight: C[M,N] = A[K,M]^T @ B[K,N]     (dW = X^T dY)

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
template <typename X> __device__ X from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16(x); }

template <bool TRANS_A, bool TRANS_B, typename X>
__device__ __forceinline__ void gemm_tiled(const X *A, const X *B, X *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int ty = threadIdx.y, tx = threadIdx.x;
    int row = blockIdx.y * TILE + ty;  // index into M
    int col = blockIdx.x * TILE + tx;  // index into N
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + tx, kb = k0 + ty;
        // As[ty][tx] = A(row, ka); Bs[ty][tx] = B(kb, col), in logical (untransposed) terms
        As[ty][tx] = (row < M && ka < K)
                         ? to_f(TRANS_A ? A[(size_t)ka * M + row] : A[(size_t)row * K + ka])
                         : 0.0f;
        Bs[ty][tx] = (kb < K && col < N)
                         ? to_f(TRANS_B ? B[(size_t)col * K + kb] : B[(size_t)kb * N + col])
                         : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // before the next iteration overwrites the tiles
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = from_f<X>(acc);
}

extern "C" __global__ void matmul_fwd(const float *A, const float *B, float *C,
                                      int M, int N, int K)
{
    gemm_tiled<false, false>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_fwd_bf16(const bf16 *A, const bf16 *B, bf16 *C,
                                           int M, int N, int K)
{
    gemm_tiled<false, false>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_data(const float *A, const float *B, float *C,
                                           int M, int N, int K)
{
    gemm_tiled<false, true>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_data_bf16(const bf16 *A, const bf16 *B, bf16 *C,
                                                int M, int N, int K)
{
    gemm_tiled<false, true>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_weight(const float *A, const float *B, float *C,
                                             int M, int N, int K)
{
    gemm_tiled<true, false>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_weight_bf16(const bf16 *A, const bf16 *B, bf16 *C,
                                                  int M, int N, int K)
{
    gemm_tiled<true, false>(A, B, C, M, N, K);
}

// y[r, c] += b[c] for a [rows, cols] matrix
template <typename X> __device__ __forceinline__ void bias_add_body(X *y, const X *b, int rows,
                                                                   int cols)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols)
        y[i] = from_f<X>(to_f(y[i]) + to_f(b[i % cols]));
}
extern "C" __global__ void bias_add(float *y, const float *b, int rows, int cols)
{
    bias_add_body(y, b, rows, cols);
}
extern "C" __global__ void bias_add_bf16(bf16 *y, const bf16 *b, int rows, int cols)
{
    bias_add_body(y, b, rows, cols);
}

template <typename X> __device__ __forceinline__ void relu_fwd_body(X *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = from_f<X>(fmaxf(to_f(x[i]), 0.0f));
}
extern "C" __global__ void relu_fwd(float *x, size_t n) { relu_fwd_body(x, n); }
extern "C" __global__ void relu_fwd_bf16(bf16 *x, size_t n) { relu_fwd_body(x, n); }

// dx = dy * relu'(z); the ReLU output y > 0 exactly where z > 0, so the saved output
// serves as the mask and the pre-activation need not be kept.
template <typename X> __device__ __forceinline__ void relu_bwd_body(X *d, const X *y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !(to_f(y[i]) > 0.0f))
        d[i] = from_f<X>(0.0f);
}
extern "C" __global__ void relu_bwd(float *d, const float *y, size_t n) { relu_bwd_body(d, y, n); }
extern "C" __global__ void relu_bwd_bf16(bf16 *d, const bf16 *y, size_t n)
{
    relu_bwd_body(d, y, n);
}

// One thread per row (C is small): numerically stable softmax, the row's
// cross-entropy, and d(mean loss)/d(logits) = (softmax - onehot) / rows.
template <typename X>
__device__ __forceinline__ void softmax_xent_body(const X *logits, const int *labels,
                                                  float *row_loss, X *dlogits, int rows, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const X *z = logits + (size_t)r * C;
    float mx = to_f(z[0]);
    for (int j = 1; j < C; j++)
        mx = fmaxf(mx, to_f(z[j]));
    float sum = 0.0f;
    for (int j = 0; j < C; j++)
        sum += expf(to_f(z[j]) - mx);
    int y = labels[r];
    row_loss[r] = logf(sum) - (to_f(z[y]) - mx);
    for (int j = 0; j < C; j++)
        dlogits[(size_t)r * C + j] =
            from_f<X>((expf(to_f(z[j]) - mx) / sum - (j == y ? 1.0f : 0.0f)) / rows);
}
extern "C" __global__ void softmax_xent(const float *logits, const int *labels, float *row_loss,
                                        float *dlogits, int rows, int C)
{
    softmax_xent_body(logits, labels, row_loss, dlogits, rows, C);
}
extern "C" __global__ void softmax_xent_bf16(const bf16 *logits, const int *labels,
                                             float *row_loss, bf16 *dlogits, int rows, int C)
{
    softmax_xent_body(logits, labels, row_loss, dlogits, rows, C);
}

// out[0] = mean(x[0..n)); launched as ONE block of THREADS threads (a power of two):
// strided partial sums, then a tree in shared memory. Deterministic, unlike atomics.
extern "C" __global__ void reduce_mean(const float *x, float *out, int n)
{
    __shared__ float s[THREADS];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[0] = s[0] / n;
}

// db[c] = sum over rows of dy[r, c]: one thread per column
template <typename X>
__device__ __forceinline__ void bias_grad_body(const X *dy, X *db, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float acc = 0.0f;
    for (int r = 0; r < rows; r++)
        acc += to_f(dy[(size_t)r * cols + c]);
    db[c] = from_f<X>(acc);
}
extern "C" __global__ void bias_grad(const float *dy, float *db, int rows, int cols)
{
    bias_grad_body(dy, db, rows, cols);
}
extern "C" __global__ void bias_grad_bf16(const bf16 *dy, bf16 *db, int rows, int cols)
{
    bias_grad_body(dy, db, rows, cols);
}

// AdamW (decoupled weight decay, as torch.optim.AdamW); bc1/bc2 = 1 - beta^t. Returns
// the updated parameter.
__device__ __forceinline__ float adamw(float p, float g, float *m, float *v, float lr,
                                       float beta1, float beta2, float eps, float wd, float bc1,
                                       float bc2)
{
    *m = beta1 * *m + (1.0f - beta1) * g;
    *v = beta2 * *v + (1.0f - beta2) * g * g;
    float mhat = *m / bc1, vhat = *v / bc2;
    return p * (1.0f - lr * wd) - lr * mhat / (sqrtf(vhat) + eps);
}

extern "C" __global__ void adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                                        float lr, float beta1, float beta2, float eps,
                                        float wd, float bc1, float bc2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = adamw(p[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, wd, bc1, bc2);
}

// Mixed precision: the fp32 master p from the 16-bit gradient, then the cast of the new
// master into the 16-bit working copy w that forward and backward read.
extern "C" __global__ void adamw_update_bf16(float *p, bf16 *w, const bf16 *g, float *m,
                                             float *v, size_t n, float lr, float beta1,
                                             float beta2, float eps, float wd, float bc1,
                                             float bc2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    p[i] = adamw(p[i], to_f(g[i]), &m[i], &v[i], lr, beta1, beta2, eps, wd, bc1, bc2);
    w[i] = __float2bfloat16(p[i]);
}

// SGD with momentum and L2 weight decay, as torch.optim.SGD (dampening 0, not Nesterov):
// g += wd p; buf = momentum buf + g; p -= lr buf. buf starts at zero, so step 1 gives
// buf = g as in torch.
__device__ __forceinline__ float sgd(float p, float g, float *buf, float lr, float momentum,
                                     float wd)
{
    g += wd * p;
    *buf = momentum * *buf + g;
    return p - lr * *buf;
}

extern "C" __global__ void sgd_momentum_update(float *p, const float *g, float *buf, size_t n,
                                               float lr, float momentum, float wd)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = sgd(p[i], g[i], &buf[i], lr, momentum, wd);
}

extern "C" __global__ void sgd_momentum_update_bf16(float *p, bf16 *w, const bf16 *g,
                                                    float *buf, size_t n, float lr,
                                                    float momentum, float wd)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    p[i] = sgd(p[i], to_f(g[i]), &buf[i], lr, momentum, wd);
    w[i] = __float2bfloat16(p[i]);
}

// The 16-bit working copy of a freshly initialised fp32 master (bf16 training).
extern "C" __global__ void cast_f32_to_bf16(bf16 *dst, const float *src, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = __float2bfloat16(src[i]);
}

// correct[r] = 1 if argmax(logits[r]) == labels[r] else 0
template <typename X>
__device__ __forceinline__ void argmax_correct_body(const X *logits, const int *labels,
                                                    float *correct, int rows, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    int best = 0;
    for (int j = 1; j < C; j++)
        if (to_f(logits[(size_t)r * C + j]) > to_f(logits[(size_t)r * C + best]))
            best = j;
    correct[r] = best == labels[r] ? 1.0f : 0.0f;
}
extern "C" __global__ void argmax_correct(const float *logits, const int *labels, float *correct,
                                          int rows, int C)
{
    argmax_correct_body(logits, labels, correct, rows, C);
}
extern "C" __global__ void argmax_correct_bf16(const bf16 *logits, const int *labels,
                                               float *correct, int rows, int C)
{
    argmax_correct_body(logits, labels, correct, rows, C);
}

// ---------------------------------------------------------------- model and data

static const float LR = 1e-3f, BETA1 = 0.9f, BETA2 = 0.999f, EPS = 1e-8f, WD = 0.01f;
static const float SGD_LR = 1e-2f, MOMENTUM = 0.9f;  // SGD's weight decay is WD too (L2)

// One parameter tensor. p: the fp32 weights (the master copy in bf16 training; NULL in
// bf16 inference); w: what forward and backward read (p itself in fp32, the 16-bit
// copy in bf16); g: the gradient (ES bytes an element); m: AdamW's first moment or
// SGD's momentum; v: AdamW's second moment (NULL with SGD). Inference has no g, m, v.
struct param { float *p; void *w, *g; float *m, *v; size_t n; float wd; };
static struct param params[2 * MAX_LAYERS];  // layer l: [2l] = W [in,out], [2l+1] = b [out]
static void *act[MAX_LAYERS + 1];  // act[0] input, act[l] input of layer l, act[NL] logits
static int dim_in(int l) { return l == 0 ? D : H; }
static int dim_out(int l) { return l == NL - 1 ? C : H; }

static size_t param_count(void)
{
    size_t n = 0;
    for (int i = 0; i < 2 * NL; i++)
        n += params[i].n;
    return n;
}

static unsigned long long rng_state = 0x5eed5eed5eedULL;
static float rng_uniform(void)  // xorshift64*, uniform in [-1, 1)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * 2685821657736338717ULL) >> 40) / (float)(1 << 23) - 1.0f;
}

static float *centres;  // [C, D], the class means of the synthetic data
static float *hx;       // the batch on the host: features [B, D], labels [B]
static int *hy;

static void make_batch(float *x, int *y)
{
    for (int r = 0; r < B; r++) {
        y[r] = (int)((rng_uniform() + 1.0f) * 0.5f * C) % C;
        for (int j = 0; j < D; j++)
            x[(size_t)r * D + j] = centres[(size_t)y[r] * D + j] + 0.5f * rng_uniform();
    }
}

static void alloc_host_batch(void)
{
    hx = (float *)realloc(hx, (size_t)B * D * sizeof(float));
    hy = (int *)realloc(hy, (size_t)B * sizeof(int));
    if (!hx || !hy)
        fatal("train_mlp: no host memory for a batch of %d", B);
}

static unsigned blocks(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }
static dim3 gemm_grid(int M, int N) { return dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE); }

// n floats from the host into a device tensor of the storage type X (converted on the
// host when X is 16-bit, so the copy moves n * sizeof(X) bytes).
template <typename X> static void upload(void *dst, const float *src, size_t n)
{
    if constexpr (sizeof(X) == sizeof(float)) {
        CUDA_CHECK(copy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
    } else {
        X *h = (X *)malloc(n * sizeof(X));
        if (!h)
            fatal("train_mlp: no host memory for %zu elements", n);
        for (size_t i = 0; i < n; i++)
            h[i] = __float2bfloat16(src[i]);
        CUDA_CHECK(copy(dst, h, n * sizeof(X), cudaMemcpyHostToDevice));
        free(h);
    }
}

// Values of parameter tensor (l, k) on the host: Kaiming-uniform for the weight matrix
// (keeps ReLU activations at a sane scale through depth), zeros for the bias.
static float *host_init(int l, int k, size_t n)
{
    float *h = (float *)calloc(n, sizeof(float)), s = sqrtf(6.0f / dim_in(l));
    if (!h)
        fatal("train_mlp: no host memory for %zu parameters", n);
    for (size_t i = 0; k == 0 && i < n; i++)
        h[i] = s * rng_uniform();
    return h;
}

// Training: the weights (fp32; in bf16 also the 16-bit copy, cast from the master), the
// gradients and the optimizer states, zeroed; biases start at zero (a memset).
// Inference: the weights only, in the storage type, copied from the host as a loaded
// checkpoint would be.
template <typename X> ALLOCATES static void init_model(void)
{
    SITE();
    for (int l = 0; l < NL; l++) {
        size_t sizes[2] = {(size_t)dim_in(l) * dim_out(l), (size_t)dim_out(l)};
        for (int k = 0; k < 2; k++) {
            struct param *q = &params[2 * l + k];
            size_t n = sizes[k], bytes = n * sizeof(float);
            q->n = n;
            q->wd = k == 0 ? WD : 0.0f;  // no weight decay on biases
            if (!(INFER && BF16))
                q->p = (float *)dev_alloc(bytes, WEIGHTS);
            q->w = BF16 ? dev_alloc(n * sizeof(bf16), WEIGHTS) : (void *)q->p;
            if (INFER) {
                float *h = host_init(l, k, n);
                upload<X>(q->w, h, n);
                free(h);
                continue;
            }
            q->g = dev_alloc(n * ES, GRADIENTS);
            q->m = (float *)dev_alloc(bytes, OPTIMIZER);
            if (OPT == ADAMW)
                q->v = (float *)dev_alloc(bytes, OPTIMIZER);
            CUDA_CHECK(set(q->g, 0, n * ES));
            CUDA_CHECK(set(q->m, 0, bytes));
            if (q->v)
                CUDA_CHECK(set(q->v, 0, bytes));
            if (k == 1) {
                CUDA_CHECK(set(q->p, 0, bytes));
            } else {
                float *h = host_init(l, k, n);
                CUDA_CHECK(copy(q->p, h, bytes, cudaMemcpyHostToDevice));
                free(h);
            }
            if (BF16)
                LAUNCH(cast_f32_to_bf16, blocks(n), THREADS, (bf16 *)q->w, q->p, n);
        }
    }
}

static void free_model(void)
{
    for (int i = 0; i < 2 * NL; i++) {
        struct param *q = &params[i];
        void *bufs[5] = {q->p, q->w != q->p ? q->w : NULL, q->g, q->m, q->v};
        for (int k = 0; k < 5; k++)
            if (bufs[k])
                dev_free(bufs[k]);
    }
}

// out = layer l of in: X W + b, then ReLU except after the last layer.
template <typename X> static void layer_forward(int l, const void *in, void *out)
{
    int i = dim_in(l), o = dim_out(l);
    size_t n = (size_t)B * o;
    LAUNCH_X(matmul_fwd, gemm_grid(B, o), dim3(TILE, TILE), (const X *)in,
             (const X *)params[2 * l].w, (X *)out, B, o, i);
    LAUNCH_X(bias_add, blocks(n), THREADS, (X *)out, (const X *)params[2 * l + 1].w, B, o);
    if (l < NL - 1)
        LAUNCH_X(relu_fwd, blocks(n), THREADS, (X *)out, n);
}

// Which layer inputs forward keeps for later: all (training, evaluation), the first
// of each checkpoint segment (--checkpoint), or none (--inference: each is freed as
// soon as the next layer's output exists). The logits act[NL] are always kept.
enum keep { KEEP_ALL, KEEP_SEGMENT_INPUTS, KEEP_NONE };

// act[0..NL] as buffers of purpose `p`: activations when training (saved for
// backward), temporaries when evaluating or inferring. A dropped input is NULL. The
// logits act[NL] are temporary in every case: the loss consumes them and releases them
// before backward begins, so nothing saves them for backward.
template <typename X> ALLOCATES static void forward(const float *x_host, enum purpose p, enum keep which)
{
    SITE();
    act[0] = dev_alloc((size_t)B * D * ES, p);
    upload<X>(act[0], x_host, (size_t)B * D);
    for (int l = 0; l < NL; l++) {
        act[l + 1] = dev_alloc((size_t)B * dim_out(l) * ES, l == NL - 1 ? TEMPORARY : p);
        layer_forward<X>(l, act[l], act[l + 1]);
        if (which == KEEP_NONE || (which == KEEP_SEGMENT_INPUTS && l % CKPT_SEGMENT != 0)) {
            dev_free(act[l]);
            act[l] = NULL;
        }
    }
}

// --checkpoint, in backward: the inputs of layers s+1..l, where s is the first layer of
// l's segment (the one whose input forward kept), computed again from act[s] — as
// temporaries, each freed by backward after its last use.
template <typename X> ALLOCATES static void recompute_segment(int l)
{
    SITE();
    for (int k = l - l % CKPT_SEGMENT; k < l; k++) {
        act[k + 1] = dev_alloc((size_t)B * dim_out(k) * ES, TEMPORARY);
        layer_forward<X>(k, act[k], act[k + 1]);
    }
}

// Consumes the logits act[NL]; returns dlogits (a temporary that backward frees).
template <typename X> ALLOCATES static void *loss_phase(const int *y_host, float *loss_out)
{
    SITE();
    int *labels = (int *)dev_alloc(B * sizeof(int), TEMPORARY);
    float *row_loss = (float *)dev_alloc(B * sizeof(float), TEMPORARY);
    float *loss = (float *)dev_alloc(sizeof(float), TEMPORARY);
    void *dlogits = dev_alloc((size_t)B * C * ES, TEMPORARY);
    CUDA_CHECK(copy(labels, y_host, B * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(set(loss, 0, sizeof(float)));  // read back: keep it defined
    LAUNCH_X(softmax_xent, blocks(B), THREADS, (const X *)act[NL], labels, row_loss,
             (X *)dlogits, B, C);
    LAUNCH(reduce_mean, 1, THREADS, row_loss, loss, B);
    CUDA_CHECK(copy(loss_out, loss, sizeof(float), cudaMemcpyDeviceToHost));
    dev_free(labels);
    dev_free(row_loss);
    dev_free(loss);
    dev_free(act[NL]);
    act[NL] = NULL;
    return dlogits;
}

// Walks the layers backwards; each saved activation is freed right after its last
// use (dW of its layer and the ReLU mask), as an autograd engine would.
template <typename X> ALLOCATES static void backward(void *dy)
{
    for (int l = NL - 1; l >= 0; l--) {
        int in = dim_in(l), out = dim_out(l);
        if (!act[l])
            recompute_segment<X>(l);
        SITE();
        LAUNCH_X(matmul_bwd_weight, gemm_grid(in, out), dim3(TILE, TILE), (const X *)act[l],
                 (const X *)dy, (X *)params[2 * l].g, in, out, B);
        LAUNCH_X(bias_grad, blocks(out), THREADS, (const X *)dy, (X *)params[2 * l + 1].g, B,
                 out);
        void *dx = NULL;
        if (l > 0) {
            size_t n = (size_t)B * in;
            dx = dev_alloc(n * ES, TEMPORARY);
            LAUNCH_X(matmul_bwd_data, gemm_grid(B, in), dim3(TILE, TILE), (const X *)dy,
                     (const X *)params[2 * l].w, (X *)dx, B, in, out);
            LAUNCH_X(relu_bwd, blocks(n), THREADS, (X *)dx, (const X *)act[l], n);  // ReLU output
        }
        dev_free(dy);
        dev_free(act[l]);
        act[l] = NULL;
        dy = dx;
    }
}

// One update kernel per parameter tensor; in bf16 the kernel also writes the 16-bit copy.
template <typename X> static void optimizer_step(int t)
{
    float bc1 = 1.0f - powf(BETA1, (float)t), bc2 = 1.0f - powf(BETA2, (float)t);
    for (int i = 0; i < 2 * NL; i++) {
        struct param *q = &params[i];
        if constexpr (sizeof(X) == sizeof(float)) {
            if (OPT == SGD)
                LAUNCH(sgd_momentum_update, blocks(q->n), THREADS, q->p, (const X *)q->g, q->m,
                       q->n, SGD_LR, MOMENTUM, q->wd);
            else
                LAUNCH(adamw_update, blocks(q->n), THREADS, q->p, (const X *)q->g, q->m, q->v,
                       q->n, LR, BETA1, BETA2, EPS, q->wd, bc1, bc2);
        } else {
            if (OPT == SGD)
                LAUNCH(sgd_momentum_update_bf16, blocks(q->n), THREADS, q->p, (X *)q->w,
                       (const X *)q->g, q->m, q->n, SGD_LR, MOMENTUM, q->wd);
            else
                LAUNCH(adamw_update_bf16, blocks(q->n), THREADS, q->p, (X *)q->w,
                       (const X *)q->g, q->m, q->v, q->n, LR, BETA1, BETA2, EPS, q->wd, bc1,
                       bc2);
        }
    }
}

// The fraction of rows whose argmax of the logits act[NL] is the label. The rows'
// 0/1 scores stay on the device in *correct, for the caller to free (or not).
template <typename X> ALLOCATES static float accuracy(const int *y_host, float **correct)
{
    SITE();
    int *labels = (int *)dev_alloc(B * sizeof(int), TEMPORARY);
    *correct = (float *)dev_alloc(B * sizeof(float), TEMPORARY);
    float *acc = (float *)dev_alloc(sizeof(float), TEMPORARY), acc_host;
    CUDA_CHECK(copy(labels, y_host, B * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(set(acc, 0, sizeof(float)));
    LAUNCH_X(argmax_correct, blocks(B), THREADS, (const X *)act[NL], labels, *correct, B, C);
    LAUNCH(reduce_mean, 1, THREADS, *correct, acc, B);
    CUDA_CHECK(copy(&acc_host, acc, sizeof(float), cudaMemcpyDeviceToHost));
    dev_free(labels);
    dev_free(acc);
    return acc_host;
}

// Accuracy on one held-out batch. BUG (deliberate): `correct` ("eval scratch") is
// never freed.
template <typename X> static void evaluate(const float *x_host, const int *y_host)
{
    float *correct;
    forward<X>(x_host, TEMPORARY, KEEP_ALL);
    printf("eval accuracy %.4f\n", accuracy<X>(y_host, &correct));
    for (int l = 0; l <= NL; l++)
        dev_free(act[l]);
}

// --inference: one forward pass over a fresh batch, then the argmax; nothing outlives it.
template <typename X> static void infer_pass(int t)
{
    float *correct;
    make_batch(hx, hy);
    forward<X>(hx, TEMPORARY, KEEP_NONE);
    printf("pass %d accuracy %.4f\n", t, accuracy<X>(hy, &correct));
    dev_free(correct);
    dev_free(act[NL]);
    act[NL] = NULL;
}

// ---------------------------------------------------------------- --check (CPU reference)
//
// Each step starts from the device's own state (parameters and optimizer states copied
// back), so the comparisons test one step's arithmetic and errors cannot compound.

static float *hP[2 * MAX_LAYERS], *hM[2 * MAX_LAYERS], *hV[2 * MAX_LAYERS], *hG[2 * MAX_LAYERS];
static int failures;

static float *to_host(const float *dev, size_t n)
{
    float *h = (float *)malloc(n * sizeof(float));
    CUDA_CHECK(copy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

// max |got - want| must be within 1e-3 of the reference's scale (the summation
// orders of the reductions differ between host and device)
static void compare(const char *what, int i, const float *got, const float *want, size_t n)
{
    double err = 0.0, scale = 0.0;
    for (size_t k = 0; k < n; k++) {
        err = fmax(err, fabs((double)got[k] - want[k]));
        scale = fmax(scale, fabs((double)want[k]));
    }
    if (err > 1e-3 * scale + 1e-7) {
        fprintf(stderr, "check: %s of param %d differs: max error %g, scale %g\n", what, i,
                err, scale);
        failures++;
    }
}

// Loss and gradients for parameters hP, recomputed on the host. The forward GEMM sums
// in the device's order with fmaf, as the tiled kernel does, so that both sides agree
// bit for bit on which pre-activations are > 0 (the ReLU masks the backward uses).
static float cpu_forward_backward(const float *x, const int *y)
{
    float *a[MAX_LAYERS + 1];
    a[0] = (float *)x;
    for (int l = 0; l < NL; l++) {
        int in = dim_in(l), out = dim_out(l);
        a[l + 1] = (float *)malloc((size_t)B * out * sizeof(float));
        for (int r = 0; r < B; r++)
            for (int c = 0; c < out; c++) {
                float s = 0.0f;
                for (int k = 0; k < in; k++)
                    s = fmaf(a[l][(size_t)r * in + k], hP[2 * l][(size_t)k * out + c], s);
                s += hP[2 * l + 1][c];
                a[l + 1][(size_t)r * out + c] = l < NL - 1 ? fmaxf(s, 0.0f) : s;
            }
    }
    double loss = 0.0;
    float *dy = (float *)malloc((size_t)B * C * sizeof(float));
    for (int r = 0; r < B; r++) {
        const float *z = a[NL] + (size_t)r * C;
        double mx = z[0], sum = 0.0;
        for (int j = 1; j < C; j++) mx = fmax(mx, z[j]);
        for (int j = 0; j < C; j++) sum += exp(z[j] - mx);
        loss += log(sum) - (z[y[r]] - mx);
        for (int j = 0; j < C; j++)
            dy[(size_t)r * C + j] = (float)((exp(z[j] - mx) / sum - (j == y[r])) / B);
    }
    for (int l = NL - 1; l >= 0; l--) {
        int in = dim_in(l), out = dim_out(l);
        const float *W = hP[2 * l];
        for (int k = 0; k < in; k++)  // dW = X^T dY
            for (int c = 0; c < out; c++) {
                double s = 0.0;
                for (int r = 0; r < B; r++)
                    s += (double)a[l][(size_t)r * in + k] * dy[(size_t)r * out + c];
                hG[2 * l][(size_t)k * out + c] = (float)s;
            }
        for (int c = 0; c < out; c++) {  // db = column sums of dY
            double s = 0.0;
            for (int r = 0; r < B; r++) s += dy[(size_t)r * out + c];
            hG[2 * l + 1][c] = (float)s;
        }
        float *dx = (float *)malloc((size_t)B * in * sizeof(float));
        for (int r = 0; r < B; r++)  // dX = dY W^T, masked by the ReLU that produced X
            for (int k = 0; k < in; k++) {
                double s = 0.0;
                for (int c = 0; c < out; c++)
                    s += (double)dy[(size_t)r * out + c] * W[(size_t)k * out + c];
                dx[(size_t)r * in + k] = l > 0 && !(a[l][(size_t)r * in + k] > 0) ? 0.0f : (float)s;
            }
        free(dy);
        if (l > 0) free(a[l]);
        dy = dx;
    }
    free(dy);
    free(a[NL]);
    return (float)(loss / B);
}

static void check_begin_step(void)
{
    for (int i = 0; i < 2 * NL; i++) {
        hP[i] = to_host(params[i].p, params[i].n);
        hM[i] = to_host(params[i].m, params[i].n);
        hV[i] = params[i].v ? to_host(params[i].v, params[i].n) : NULL;
        hG[i] = (float *)malloc(params[i].n * sizeof(float));
    }
}

static void check_gradients(const float *x, const int *y, float loss)
{
    float ref = cpu_forward_backward(x, y);
    compare("loss", -1, &loss, &ref, 1);
    for (int i = 0; i < 2 * NL; i++) {
        float *g = to_host((const float *)params[i].g, params[i].n);
        compare("gradient", i, g, hG[i], params[i].n);
        free(hG[i]);
        hG[i] = g;  // the optimizer check starts from the device's gradients
    }
}

// The reference update of element k of tensor i, in hP/hM/hV's terms; returns the
// new parameter.
static float cpu_update(int i, size_t k, int t)
{
    float g = hG[i][k], p = hP[i][k];
    if (OPT == SGD) {
        g += params[i].wd * p;
        hM[i][k] = MOMENTUM * hM[i][k] + g;
        return p - SGD_LR * hM[i][k];
    }
    float bc1 = 1.0f - powf(BETA1, (float)t), bc2 = 1.0f - powf(BETA2, (float)t);
    hM[i][k] = BETA1 * hM[i][k] + (1.0f - BETA1) * g;
    hV[i][k] = BETA2 * hV[i][k] + (1.0f - BETA2) * g * g;
    return p * (1.0f - LR * params[i].wd) - LR * (hM[i][k] / bc1) / (sqrtf(hV[i][k] / bc2) + EPS);
}

// Compares the update p_after - p_before (not p_after itself, whose scale would hide
// a wrong step of size ~lr) and the new optimizer states.
static void check_optimizer(int t)
{
    const char *name = OPT == SGD ? "SGD" : "AdamW";
    char what[32];
    for (int i = 0; i < 2 * NL; i++) {
        size_t n = params[i].n;
        float *p = to_host(params[i].p, n), *m = to_host(params[i].m, n);
        float *v = params[i].v ? to_host(params[i].v, n) : NULL;
        float *ref = (float *)malloc(n * sizeof(float));
        for (size_t k = 0; k < n; k++) {
            ref[k] = cpu_update(i, k, t) - hP[i][k];
            p[k] -= hP[i][k];
        }
        snprintf(what, sizeof what, "%s update", name);
        compare(what, i, p, ref, n);
        snprintf(what, sizeof what, "%s %s", name, OPT == SGD ? "momentum" : "m");
        compare(what, i, m, hM[i], n);
        if (v)
            compare("AdamW v", i, v, hV[i], n);
        free(p); free(m); free(v); free(ref);
        free(hP[i]); free(hM[i]); free(hV[i]); free(hG[i]);
    }
}

// ---------------------------------------------------------------- the run

// One training step on a fresh batch; the ledger knows the phase of every allocation.
template <typename X> static float train_step(int t)
{
    float loss;
    make_batch(hx, hy);
    if (CHECK)
        check_begin_step();
    ledger.phase = "forward";
    forward<X>(hx, ACTIVATIONS, CKPT ? KEEP_SEGMENT_INPUTS : KEEP_ALL);
    ledger.phase = "loss";
    void *dlogits = loss_phase<X>(hy, &loss);
    ledger.phase = "backward";
    backward<X>(dlogits);
    if (CHECK)
        check_gradients(hx, hy, loss);
    ledger.phase = "optimizer";
    optimizer_step<X>(t);
    if (CHECK)
        check_optimizer(t);
    return loss;
}

// --grow-batch: the next step's batch is twice this one's. The device tensors are made
// per step anyway; only the host's batch buffers grow.
static void grow_batch(void)
{
    if (B > MAX_GROW_BATCH / 2)
        fatal("train_mlp: no cudaMalloc failed up to batch %d; --grow-batch needs a capped "
              "device memory (e.g. anatomist run --sim-memory 48MiB)", B);
    B *= 2;
    alloc_host_batch();
}

template <typename X> static void run(void)
{
    init_model<X>();
    if (INFER) {
        for (int t = 1; t <= STEPS; t++) {
            ledger.step = t, ledger.phase = "forward";
            infer_pass<X>(t);
            ledger.steps_done = t;
        }
        return;
    }
    for (int t = 1; GROW || t <= STEPS; t++) {
        if (GROW && t > 1)
            grow_batch();
        ledger.step = t;
        float loss = train_step<X>(t);
        ledger.steps_done = t;
        if (GROW)
            printf("step %d batch %d loss %.4f\n", t, B, loss);
        else
            printf("step %d loss %.4f\n", t, loss);
    }
    ledger.step = 0, ledger.phase = "evaluate";
    make_batch(hx, hy);
    evaluate<X>(hx, hy);
}

// ---------------------------------------------------------------- main

static int parse_int(const char *flag, const char *s)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v <= 0 || v > 1 << 24)
        fatal("train_mlp: %s needs a positive integer", flag);
    return (int)v;
}

#define USAGE                                                                        \
    "usage: train_mlp [--steps N] [--batch B] [--hidden H] [--layers L] [--in D] "   \
    "[--classes C] [--optimizer adamw|sgd] [--precision fp32|bf16] [--inference] "   \
    "[--checkpoint] [--grow-batch] [--kill-on-oom] [--check]"

static void parse_args(int argc, char **argv)
{
    int optimizer_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *flag = !strcmp(a, "--check") ? &CHECK : !strcmp(a, "--inference") ? &INFER
                  : !strcmp(a, "--checkpoint") ? &CKPT : !strcmp(a, "--grow-batch") ? &GROW
                  : !strcmp(a, "--kill-on-oom") ? &KILL_ON_OOM : NULL;
        if (flag) {
            *flag = 1;
            continue;
        }
        if (!strcmp(a, "--optimizer") && v) {
            OPT = !strcmp(v, "adamw") ? ADAMW : !strcmp(v, "sgd") ? SGD
                : (fatal("train_mlp: --optimizer is adamw or sgd"), ADAMW);
            optimizer_given = 1, i++;
            continue;
        }
        if (!strcmp(a, "--precision") && v) {
            BF16 = !strcmp(v, "bf16") ? 1 : !strcmp(v, "fp32") ? 0
                 : (fatal("train_mlp: --precision is fp32 or bf16"), 0);
            i++;
            continue;
        }
        int *dst = !strcmp(a, "--steps") ? &STEPS : !strcmp(a, "--batch") ? &B
                 : !strcmp(a, "--hidden") ? &H : !strcmp(a, "--layers") ? &NL
                 : !strcmp(a, "--in") ? &D : !strcmp(a, "--classes") ? &C : NULL;
        if (!dst)
            fatal(USAGE);
        *dst = parse_int(a, v);
        i++;
    }
    if (NL > MAX_LAYERS)
        fatal("train_mlp: at most %d layers", MAX_LAYERS);
    if (INFER && (optimizer_given || CKPT || GROW))
        fatal("train_mlp: --inference has no optimizer, no backward to checkpoint and no "
              "training step to grow");
    if (CHECK && (BF16 || INFER))
        fatal("train_mlp: --check compares fp32 training steps; leave out --precision bf16 "
              "and --inference");
    BATCH0 = B;
    ES = BF16 ? sizeof(bf16) : sizeof(float);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    ledger.phase = "init", ledger.site = "main";
    centres = (float *)malloc((size_t)C * D * sizeof(float));
    for (size_t i = 0; i < (size_t)C * D; i++)
        centres[i] = rng_uniform();
    alloc_host_batch();

    if (BF16)
        run<bf16>();
    else
        run<float>();

    free_model();
    CUDA_CHECK(cudaDeviceSynchronize());
    free(hx);
    free(hy);
    free(centres);
    if (CHECK)
        printf("check %s\n", failures ? "FAILED" : "passed");
    print_ledger();
    return failures ? 1 : 0;
}

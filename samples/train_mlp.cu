// train_mlp — a small but real MLP trainer in CUDA C, used as a profiling target.
//
// Model: L linear layers (D -> H -> ... -> H -> C) with ReLU between them, softmax
// cross-entropy loss, AdamW. Synthetic data: Gaussian-ish blobs around C random class
// centres, from a generator seeded by a constant, so every run is identical.
//
// Memory layout mimics a framework on purpose, so the profiler has something to find:
// one cudaMalloc per tensor; activations saved for backward are allocated in forward
// and freed in backward as soon as they are consumed; temporaries live within one
// phase. The program keeps its own ledger of every allocation (dev_alloc/dev_free)
// and prints it as JSON on the last stdout line, so that a test can compare the
// profiler's memory anatomy against ground truth. One buffer is leaked on purpose
// (evaluate()'s scratch), a realistic bug the profiler should report.
//
// --check recomputes every step on the CPU and compares loss, gradients and the AdamW
// update against the device (meaningful on a real GPU only: the simulated device does
// not execute kernels).
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_common.h"

#define MAX_LAYERS 64
#define TILE 16
#define THREADS 256

// ---------------------------------------------------------------- error handling

static void print_ledger(void);

// ---------------------------------------------------------------- the ledger

enum purpose { WEIGHTS, GRADIENTS, OPTIMIZER, ACTIVATIONS, TEMPORARY, NPURPOSES };
static const char *purpose_name[NPURPOSES] = {"weights", "gradients", "optimizer",
                                              "activations", "temporary"};

#define MAX_LIVE 4096
#define MAX_KERNELS 32

static struct {
    long alloc_calls, free_calls, launches;
    size_t alloc_bytes, live_bytes, peak_bytes;
    size_t live_by_purpose[NPURPOSES], peak_by_purpose[NPURPOSES];
    struct { void *ptr; size_t bytes; enum purpose p; } live[MAX_LIVE];
    struct { const char *name; long count; } kernels[MAX_KERNELS];
    int nlive, nkernels, failed;  // failed: a cudaMalloc failed, of failed_bytes
    size_t failed_bytes;
    enum purpose failed_purpose;
    long h2d_calls, d2h_calls, memset_calls;
    size_t h2d_bytes, d2h_bytes, memset_bytes;
} ledger;

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

// cudaMalloc + bookkeeping. A failed allocation is fatal: report it the way a
// framework's OOM message would, then print the ledger (what was live) and exit 1.
static void *dev_alloc(size_t bytes, enum purpose p)
{
    void *ptr = NULL;
    cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) {
        fprintf(stderr, "cudaMalloc of %zu bytes for %s failed: %s\n", bytes,
                purpose_name[p], cudaGetErrorString(err));
        ledger.failed = 1, ledger.failed_bytes = bytes, ledger.failed_purpose = p;
        print_ledger();
        exit(1);
    }
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

static void print_ledger(void)
{
    printf("ledger {\"alloc_calls\":%ld,\"free_calls\":%ld,\"alloc_bytes\":%zu,"
           "\"peak_bytes\":%zu,\"peak_by_purpose\":{",
           ledger.alloc_calls, ledger.free_calls, ledger.alloc_bytes, ledger.peak_bytes);
    for (int p = 0; p < NPURPOSES; p++)
        printf("%s\"%s\":%zu", p ? "," : "", purpose_name[p], ledger.peak_by_purpose[p]);
    printf("},\"live_at_exit_bytes\":%zu,\"leaked\":[", ledger.live_bytes);
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
    if (ledger.failed)
        printf(",\"failed_alloc\":{\"bytes\":%zu,\"purpose\":\"%s\"}", ledger.failed_bytes,
               purpose_name[ledger.failed_purpose]);
    printf("}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------- kernels
//
// extern "C" so that the symbol the profiler sees is the same as the ledger's name.
// Matrices are row-major. The three GEMMs share one tiled body: each 16x16 block
// computes a 16x16 tile of C, staging 16x16 tiles of A and B in shared memory;
// out-of-range elements are loaded as 0 so any M, N, K works.
//   matmul_fwd:        C[M,N] = A[M,K]   @ B[K,N]     (Y = X W)
//   matmul_bwd_data:   C[M,N] = A[M,K]   @ B[N,K]^T   (dX = dY W^T)
//   matmul_bwd_weight: C[M,N] = A[K,M]^T @ B[K,N]     (dW = X^T dY)

template <bool TRANS_A, bool TRANS_B>
__device__ __forceinline__ void gemm_tiled(const float *A, const float *B, float *C,
                                           int M, int N, int K)
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
                         ? (TRANS_A ? A[(size_t)ka * M + row] : A[(size_t)row * K + ka])
                         : 0.0f;
        Bs[ty][tx] = (kb < K && col < N)
                         ? (TRANS_B ? B[(size_t)col * K + kb] : B[(size_t)kb * N + col])
                         : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // before the next iteration overwrites the tiles
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

extern "C" __global__ void matmul_fwd(const float *A, const float *B, float *C,
                                      int M, int N, int K)
{
    gemm_tiled<false, false>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_data(const float *A, const float *B, float *C,
                                           int M, int N, int K)
{
    gemm_tiled<false, true>(A, B, C, M, N, K);
}

extern "C" __global__ void matmul_bwd_weight(const float *A, const float *B, float *C,
                                             int M, int N, int K)
{
    gemm_tiled<true, false>(A, B, C, M, N, K);
}

// y[r, c] += b[c] for a [rows, cols] matrix
extern "C" __global__ void bias_add(float *y, const float *b, int rows, int cols)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols)
        y[i] += b[i % cols];
}

extern "C" __global__ void relu_fwd(float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = fmaxf(x[i], 0.0f);
}

// dx = dy * relu'(z); the ReLU output y > 0 exactly where z > 0, so the saved output
// serves as the mask and the pre-activation need not be kept.
extern "C" __global__ void relu_bwd(float *d, const float *y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !(y[i] > 0.0f))
        d[i] = 0.0f;
}

// One thread per row (C is small): numerically stable softmax, the row's
// cross-entropy, and d(mean loss)/d(logits) = (softmax - onehot) / rows.
extern "C" __global__ void softmax_xent(const float *logits, const int *labels, float *row_loss,
                                        float *dlogits, int rows, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const float *z = logits + (size_t)r * C;
    float mx = z[0];
    for (int j = 1; j < C; j++)
        mx = fmaxf(mx, z[j]);
    float sum = 0.0f;
    for (int j = 0; j < C; j++)
        sum += expf(z[j] - mx);
    int y = labels[r];
    row_loss[r] = logf(sum) - (z[y] - mx);
    for (int j = 0; j < C; j++)
        dlogits[(size_t)r * C + j] = (expf(z[j] - mx) / sum - (j == y ? 1.0f : 0.0f)) / rows;
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
extern "C" __global__ void bias_grad(const float *dy, float *db, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float acc = 0.0f;
    for (int r = 0; r < rows; r++)
        acc += dy[(size_t)r * cols + c];
    db[c] = acc;
}

// AdamW (decoupled weight decay, as torch.optim.AdamW); bc1/bc2 = 1 - beta^t
extern "C" __global__ void adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                                        float lr, float beta1, float beta2, float eps,
                                        float wd, float bc1, float bc2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    float mhat = m[i] / bc1, vhat = v[i] / bc2;
    p[i] = p[i] * (1.0f - lr * wd) - lr * mhat / (sqrtf(vhat) + eps);
}

// correct[r] = 1 if argmax(logits[r]) == labels[r] else 0
extern "C" __global__ void argmax_correct(const float *logits, const int *labels, float *correct,
                                          int rows, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    int best = 0;
    for (int j = 1; j < C; j++)
        if (logits[(size_t)r * C + j] > logits[(size_t)r * C + best])
            best = j;
    correct[r] = best == labels[r] ? 1.0f : 0.0f;
}

// ---------------------------------------------------------------- model and data

static const float LR = 1e-3f, BETA1 = 0.9f, BETA2 = 0.999f, EPS = 1e-8f, WD = 0.01f;

static int B = 64, H = 1024, NL = 3, D = 784, C = 10, STEPS = 5, CHECK = 0;

struct param { float *p, *g, *m, *v; size_t n; float wd; };
static struct param params[2 * MAX_LAYERS];  // layer l: [2l] = W [in,out], [2l+1] = b [out]
static float *act[MAX_LAYERS + 1];  // act[0] input, act[l] input of layer l, act[NL] logits
static int dim_in(int l) { return l == 0 ? D : H; }
static int dim_out(int l) { return l == NL - 1 ? C : H; }

static unsigned long long rng_state = 0x5eed5eed5eedULL;
static float rng_uniform(void)  // xorshift64*, uniform in [-1, 1)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * 2685821657736338717ULL) >> 40) / (float)(1 << 23) - 1.0f;
}

static float *centres;  // [C, D], the class means of the synthetic data
static void make_batch(float *x, int *y)
{
    for (int r = 0; r < B; r++) {
        y[r] = (int)((rng_uniform() + 1.0f) * 0.5f * C) % C;
        for (int j = 0; j < D; j++)
            x[(size_t)r * D + j] = centres[(size_t)y[r] * D + j] + 0.5f * rng_uniform();
    }
}

static unsigned blocks(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }
static dim3 gemm_grid(int M, int N) { return dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE); }

static void init_model(void)
{
    for (int l = 0; l < NL; l++) {
        size_t sizes[2] = {(size_t)dim_in(l) * dim_out(l), (size_t)dim_out(l)};
        for (int k = 0; k < 2; k++) {
            struct param *q = &params[2 * l + k];
            size_t bytes = sizes[k] * sizeof(float);
            q->n = sizes[k];
            q->wd = k == 0 ? WD : 0.0f;  // no weight decay on biases
            q->p = (float *)dev_alloc(bytes, WEIGHTS);
            q->g = (float *)dev_alloc(bytes, GRADIENTS);
            q->m = (float *)dev_alloc(bytes, OPTIMIZER);
            q->v = (float *)dev_alloc(bytes, OPTIMIZER);
            CUDA_CHECK(set(q->g, 0, bytes));
            CUDA_CHECK(set(q->m, 0, bytes));
            CUDA_CHECK(set(q->v, 0, bytes));
            if (k == 1) {
                CUDA_CHECK(set(q->p, 0, bytes));
                continue;
            }
            // Kaiming-uniform: keeps ReLU activations at a sane scale through depth
            float *h = (float *)malloc(bytes), s = sqrtf(6.0f / dim_in(l));
            for (size_t i = 0; i < q->n; i++)
                h[i] = s * rng_uniform();
            CUDA_CHECK(copy(q->p, h, bytes, cudaMemcpyHostToDevice));
            free(h);
        }
    }
}

// Saves act[0..NL] (NL+1 buffers of purpose `p`): activations when training (kept
// for backward), temporaries when evaluating.
static void forward(const float *x_host, enum purpose p)
{
    act[0] = (float *)dev_alloc((size_t)B * D * sizeof(float), p);
    CUDA_CHECK(copy(act[0], x_host, (size_t)B * D * sizeof(float), cudaMemcpyHostToDevice));
    for (int l = 0; l < NL; l++) {
        int in = dim_in(l), out = dim_out(l);
        size_t n = (size_t)B * out;
        act[l + 1] = (float *)dev_alloc(n * sizeof(float), p);
        LAUNCH(matmul_fwd, gemm_grid(B, out), dim3(TILE, TILE), act[l], params[2 * l].p,
               act[l + 1], B, out, in);
        LAUNCH(bias_add, blocks(n), THREADS, act[l + 1], params[2 * l + 1].p, B, out);
        if (l < NL - 1)
            LAUNCH(relu_fwd, blocks(n), THREADS, act[l + 1], n);
    }
}

// Consumes the logits act[NL]; returns dlogits (a temporary the caller frees).
static float *loss_phase(const int *y_host, float *loss_out)
{
    int *labels = (int *)dev_alloc(B * sizeof(int), TEMPORARY);
    float *row_loss = (float *)dev_alloc(B * sizeof(float), TEMPORARY);
    float *loss = (float *)dev_alloc(sizeof(float), TEMPORARY);
    float *dlogits = (float *)dev_alloc((size_t)B * C * sizeof(float), TEMPORARY);
    CUDA_CHECK(copy(labels, y_host, B * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(set(loss, 0, sizeof(float)));  // read back: keep it defined
    LAUNCH(softmax_xent, blocks(B), THREADS, act[NL], labels, row_loss, dlogits, B, C);
    LAUNCH(reduce_mean, 1, THREADS, row_loss, loss, B);
    CUDA_CHECK(copy(loss_out, loss, sizeof(float), cudaMemcpyDeviceToHost));
    dev_free(labels);
    dev_free(row_loss);
    dev_free(loss);
    dev_free(act[NL]);
    return dlogits;
}

// Walks the layers backwards; each saved activation is freed right after its last
// use (dW of its layer and the ReLU mask), as an autograd engine would.
static void backward(float *dy)
{
    for (int l = NL - 1; l >= 0; l--) {
        int in = dim_in(l), out = dim_out(l);
        LAUNCH(matmul_bwd_weight, gemm_grid(in, out), dim3(TILE, TILE), act[l], dy,
               params[2 * l].g, in, out, B);
        LAUNCH(bias_grad, blocks(out), THREADS, dy, params[2 * l + 1].g, B, out);
        float *dx = NULL;
        if (l > 0) {
            size_t n = (size_t)B * in;
            dx = (float *)dev_alloc(n * sizeof(float), TEMPORARY);
            LAUNCH(matmul_bwd_data, gemm_grid(B, in), dim3(TILE, TILE), dy, params[2 * l].p,
                   dx, B, in, out);
            LAUNCH(relu_bwd, blocks(n), THREADS, dx, act[l], n);  // act[l] = ReLU output
        }
        dev_free(dy);
        dev_free(act[l]);
        dy = dx;
    }
}

static void optimizer_step(int t)
{
    float bc1 = 1.0f - powf(BETA1, (float)t), bc2 = 1.0f - powf(BETA2, (float)t);
    for (int i = 0; i < 2 * NL; i++) {
        struct param *q = &params[i];
        LAUNCH(adamw_update, blocks(q->n), THREADS, q->p, q->g, q->m, q->v, q->n, LR, BETA1,
               BETA2, EPS, q->wd, bc1, bc2);
    }
}

// Accuracy on one held-out batch. BUG (deliberate): `correct` is never freed.
static void evaluate(const float *x_host, const int *y_host)
{
    forward(x_host, TEMPORARY);
    int *labels = (int *)dev_alloc(B * sizeof(int), TEMPORARY);
    float *correct = (float *)dev_alloc(B * sizeof(float), TEMPORARY);  // "eval scratch"
    float *acc = (float *)dev_alloc(sizeof(float), TEMPORARY), acc_host;
    CUDA_CHECK(copy(labels, y_host, B * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(set(acc, 0, sizeof(float)));
    LAUNCH(argmax_correct, blocks(B), THREADS, act[NL], labels, correct, B, C);
    LAUNCH(reduce_mean, 1, THREADS, correct, acc, B);
    CUDA_CHECK(copy(&acc_host, acc, sizeof(float), cudaMemcpyDeviceToHost));
    printf("eval accuracy %.4f\n", acc_host);
    for (int l = 0; l <= NL; l++)
        dev_free(act[l]);
    dev_free(labels);
    dev_free(acc);
}

// ---------------------------------------------------------------- --check (CPU reference)
//
// Each step starts from the device's own state (parameters and AdamW moments copied
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
        hV[i] = to_host(params[i].v, params[i].n);
        hG[i] = (float *)malloc(params[i].n * sizeof(float));
    }
}

static void check_gradients(const float *x, const int *y, float loss)
{
    float ref = cpu_forward_backward(x, y);
    compare("loss", -1, &loss, &ref, 1);
    for (int i = 0; i < 2 * NL; i++) {
        float *g = to_host(params[i].g, params[i].n);
        compare("gradient", i, g, hG[i], params[i].n);
        free(hG[i]);
        hG[i] = g;  // the optimizer check starts from the device's gradients
    }
}

// Compares the update p_after - p_before (not p_after itself, whose scale would hide
// a wrong step of size ~lr) and the new moments.
static void check_optimizer(int t)
{
    float bc1 = 1.0f - powf(BETA1, (float)t), bc2 = 1.0f - powf(BETA2, (float)t);
    for (int i = 0; i < 2 * NL; i++) {
        size_t n = params[i].n;
        float *p = to_host(params[i].p, n), *m = to_host(params[i].m, n);
        float *v = to_host(params[i].v, n), *ref = (float *)malloc(n * sizeof(float));
        for (size_t k = 0; k < n; k++) {
            float g = hG[i][k];
            hM[i][k] = BETA1 * hM[i][k] + (1.0f - BETA1) * g;
            hV[i][k] = BETA2 * hV[i][k] + (1.0f - BETA2) * g * g;
            float next = hP[i][k] * (1.0f - LR * params[i].wd) -
                         LR * (hM[i][k] / bc1) / (sqrtf(hV[i][k] / bc2) + EPS);
            ref[k] = next - hP[i][k];
            p[k] -= hP[i][k];
        }
        compare("AdamW update", i, p, ref, n);
        compare("AdamW m", i, m, hM[i], n);
        compare("AdamW v", i, v, hV[i], n);
        free(p); free(m); free(v); free(ref);
        free(hP[i]); free(hM[i]); free(hV[i]); free(hG[i]);
    }
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

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) { CHECK = 1; continue; }
        int *dst = !strcmp(a, "--steps") ? &STEPS : !strcmp(a, "--batch") ? &B
                 : !strcmp(a, "--hidden") ? &H : !strcmp(a, "--layers") ? &NL
                 : !strcmp(a, "--in") ? &D : !strcmp(a, "--classes") ? &C : NULL;
        if (!dst)
            fatal("usage: train_mlp [--steps N] [--batch B] [--hidden H] [--layers L] "
                  "[--in D] [--classes C] [--check]");
        *dst = parse_int(a, v);
        i++;
    }
    if (NL > MAX_LAYERS)
        fatal("train_mlp: at most %d layers", MAX_LAYERS);
    centres = (float *)malloc((size_t)C * D * sizeof(float));
    for (size_t i = 0; i < (size_t)C * D; i++)
        centres[i] = rng_uniform();
    float *x = (float *)malloc((size_t)B * D * sizeof(float));
    int *y = (int *)malloc(B * sizeof(int));

    init_model();
    for (int t = 1; t <= STEPS; t++) {
        float loss;
        make_batch(x, y);
        if (CHECK)
            check_begin_step();
        forward(x, ACTIVATIONS);
        backward(loss_phase(y, &loss));
        printf("step %d loss %.4f\n", t, loss);
        if (CHECK)
            check_gradients(x, y, loss);
        optimizer_step(t);
        if (CHECK)
            check_optimizer(t);
    }
    make_batch(x, y);
    evaluate(x, y);

    for (int i = 0; i < 2 * NL; i++) {
        dev_free(params[i].p);
        dev_free(params[i].g);
        dev_free(params[i].m);
        dev_free(params[i].v);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    free(x);
    free(y);
    free(centres);
    if (CHECK)
        printf("check %s\n", failures ? "FAILED" : "passed");
    print_ledger();
    return failures ? 1 : 0;
}

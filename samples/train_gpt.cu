// train_gpt — a small GPT-style transformer trainer in CUDA C whose matrix products go
// through cuBLAS and cuBLASLt, annotated with NVTX; a profiling target for library calls.
//
// Model (GPT-2 shaped, no linear biases): token + position embedding; L blocks of
// pre-layer-norm causal self-attention (QKV projection, scores and weighted sum as
// strided batched GEMMs over batch x heads, causal softmax, output projection, residual)
// and MLP (fc C->4C, tanh GELU, proj 4C->C, residual); final layer norm; LM head tied to
// the token embedding; mean cross-entropy. Full backward, AdamW. Data: a repeating
// token pattern from a seeded LCG, so every run is identical and the loss can fall.
//
// Tensors are row-major; cuBLAS is column-major, and a row-major matrix read column-major
// is its transpose. So row-major out[N,OC] = in[N,IC] W^T (W [OC,IC], as torch.nn.Linear)
// is column-major out^T = op_T(W) in^T: gemm(T, N, m=OC, n=N, k=IC, A=W lda=IC, B=in
// ldb=IC, C=out ldc=OC). Each GEMM below states its row-major meaning.
//
// --precision fp32: cublasSgemm_v2 (linears), cublasSgemmStridedBatched (attention).
// --precision bf16|fp16: activations, working weights and gradients in 16 bits, fp32
// master weights and AdamW moments, a cast kernel writes the working weights after each
// update; cublasGemmEx / cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F. In every
// precision the LM head's forward product goes through cublasLtMatmul (descriptors and
// heuristic set up once). --tf32 sets CUBLAS_TF32_TENSOR_OP_MATH (and the cuBLASLt
// compute type CUBLAS_COMPUTE_32F_FAST_TF32 in fp32).
//
// Memory, framework-like: one cudaMalloc each for the fp32 parameters, the 16-bit
// working parameters (mixed precision only), gradients, AdamW m and v, an activations
// arena (saved activations and forward scratch, carved at 256-byte offsets), an arena
// of activation gradients, the step's integer inputs, and the two GEMM workspaces. Every
// buffer is an NVTX memory heap holding one named region, in the domain "train_gpt".
// Each has the purpose the program gave it (weights, optimizer, gradients, activations,
// temporary, functionality; docs/samples.md says which and why); the ledger's
// peak_by_purpose splits the program's own bytes at the first moment they peaked. The
// handle's default workspace, allocated inside cublasCreate, is cuBLAS's, not counted.
//
// NVTX: push/pop ranges "step" > "forward", "backward", "optimizer"; a mark "checkpoint"
// per step; the main thread named "main", the stream "compute"; one start/end range
// "train" in the domain around the training loop.
//
// The ledger (last stdout line) holds the configuration, every distinct GEMM call shape
// with its count, the GEMM FLOPs, the NVTX ranges and marks, the allocations (with their
// purposes, the peak by purpose, the parameter count and bytes per parameter) and the
// workspace, and the launches per kernel under the kernel's source name (its symbol is
// the template instance, e.g. adamw<float>); all counted by the code that makes the
// calls. --check (fp32, on a GPU) compares step 1's logits and loss with a CPU forward
// pass; the simulated device does not run kernels, so there it fails by design.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sample_common.h"

#define CUBLAS_CHECK(call)                                                           \
    do {                                                                             \
        cublasStatus_t s_ = (call);                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                             \
            fatal("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,                 \
                  cublasGetStatusString(s_));                                        \
    } while (0)

#define LT_CHECK(call)                                                               \
    do {                                                                             \
        cublasStatus_t s_ = (call);                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                             \
            fatal("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,                 \
                  cublasLtGetStatusString(s_));                                      \
    } while (0)

#define THREADS 256
#define MAX_LAYERS 32
#define WORKSPACE_BYTES ((size_t)4 << 20)

enum precision { FP32, BF16, FP16 };
static const char *precision_name[] = {"fp32", "bf16", "fp16"};

static int STEPS = 3, B = 4, T = 64, C = 128, NH = 4, L = 2, V = 512, TF32 = 0, CHECK = 0;
static enum precision PREC = FP32;
static cudaDataType_t DTYPE = CUDA_R_32F;  // activations, working weights, gradients
static const float LR = 1e-3f, BETA1 = 0.9f, BETA2 = 0.95f, EPS = 1e-8f, WD = 0.1f;

static cudaStream_t stream;
static cublasHandle_t blas;
static cublasLtHandle_t lt;
static nvtxDomainHandle_t domain;

// ---------------------------------------------------------------- the ledger

struct counter { const char *name; long count; };
#define MAX_COUNTERS 32
struct counters { struct counter c[MAX_COUNTERS]; int n; };

static void bump(struct counters *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->c[i].name, name) == 0) {
            t->c[i].count++;
            return;
        }
    if (t->n == MAX_COUNTERS)
        fatal("train_gpt: too many counters");
    t->c[t->n].name = name;
    t->c[t->n++].count = 1;
}

static void print_counters(const struct counters *t)
{
    printf("{");
    for (int i = 0; i < t->n; i++)
        printf("%s\"%s\":%ld", i ? "," : "", t->c[i].name, t->c[i].count);
    printf("}");
}

// What each allocation is for, as the program knows it (the memory anatomy's categories).
enum purpose { WEIGHTS, OPTIMIZER, GRADIENTS, ACTIVATIONS, TEMPORARY, FUNCTIONALITY, NPURPOSES };
static const char *purpose_name[NPURPOSES] = {"weights",     "optimizer", "gradients",
                                              "activations", "temporary", "functionality"};

#define MAX_SHAPES 64
#define MAX_ALLOCS 16
static struct {
    struct { char json[320]; long count; } shapes[MAX_SHAPES];  // distinct GEMM shapes
    int nshapes;
    long gemm_calls, launches;
    unsigned long long gemm_flops;
    struct counters kernels, ranges, marks, domain_ranges;
    struct {
        const char *name;
        size_t bytes;
        enum purpose purpose;
        void *ptr;
        nvtxMemHeapHandle_t heap;
    } allocs[MAX_ALLOCS];
    int nallocs;
    // live bytes by purpose, and their split at the first moment the total peaked
    size_t live_bytes, peak_bytes, live_by_purpose[NPURPOSES], peak_by_purpose[NPURPOSES];
} ledger;

// One GEMM call: its shape (everything but the pointers and scalars) keys the table.
static void count_gemm(const char *api, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, int batch, int lda, int ldb, int ldc, long long sa, long long sb,
                       long long sc, cudaDataType_t type, int compute)
{
    char key[320];
    snprintf(key, sizeof key,
             "\"api\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"batch\":%d,\"transa\":\"%c\","
             "\"transb\":\"%c\",\"lda\":%d,\"ldb\":%d,\"ldc\":%d,\"stride_a\":%lld,"
             "\"stride_b\":%lld,\"stride_c\":%lld,\"a_type\":%d,\"b_type\":%d,\"c_type\":%d,"
             "\"compute_type\":%d",
             api, m, n, k, batch, ta == CUBLAS_OP_N ? 'N' : 'T', tb == CUBLAS_OP_N ? 'N' : 'T',
             lda, ldb, ldc, sa, sb, sc, (int)type, (int)type, (int)type, compute);
    ledger.gemm_calls++;
    ledger.gemm_flops += 2ULL * m * n * k * batch;
    for (int i = 0; i < ledger.nshapes; i++)
        if (strcmp(ledger.shapes[i].json, key) == 0) {
            ledger.shapes[i].count++;
            return;
        }
    if (ledger.nshapes == MAX_SHAPES)
        fatal("train_gpt: too many GEMM shapes");
    memcpy(ledger.shapes[ledger.nshapes].json, key, sizeof key);
    ledger.shapes[ledger.nshapes++].count = 1;
}

static void range_push(const char *name)
{
    nvtxRangePushA(name);
    bump(&ledger.ranges, name);
}

static void mark(const char *name)
{
    nvtxMarkA(name);
    bump(&ledger.marks, name);
}

static size_t param_count(void), param_slots(void);
static int bytes_per_weight(void), bytes_per_grad(void);

static void print_purposes(const size_t *bytes)
{
    printf("{");
    for (int p = 0; p < NPURPOSES; p++)
        printf("%s\"%s\":%zu", p ? "," : "", purpose_name[p], bytes[p]);
    printf("}");
}

static void print_ledger(void)
{
    printf("ledger {\"config\":{\"steps\":%d,\"batch\":%d,\"seq\":%d,\"dim\":%d,\"heads\":%d,"
           "\"layers\":%d,\"vocab\":%d,\"precision\":\"%s\",\"tf32\":%s},",
           STEPS, B, T, C, NH, L, V, precision_name[PREC], TF32 ? "true" : "false");
    printf("\"math_mode\":%d,\"math_mode_name\":\"%s\",\"workspace_bytes\":%zu,"
           "\"lt_workspace_bytes\":%zu,\"gemm_calls\":%ld,\"gemm_flops\":%llu,\"gemms\":[",
           TF32 ? (int)CUBLAS_TF32_TENSOR_OP_MATH : (int)CUBLAS_DEFAULT_MATH,
           TF32 ? "CUBLAS_TF32_TENSOR_OP_MATH" : "CUBLAS_DEFAULT_MATH", WORKSPACE_BYTES,
           WORKSPACE_BYTES, ledger.gemm_calls, ledger.gemm_flops);
    for (int i = 0; i < ledger.nshapes; i++)
        printf("%s{%s,\"count\":%ld}", i ? "," : "", ledger.shapes[i].json, ledger.shapes[i].count);
    size_t total = 0;
    printf("],\"allocations\":[");
    for (int i = 0; i < ledger.nallocs; i++) {
        printf("%s{\"name\":\"%s\",\"bytes\":%zu,\"purpose\":\"%s\"}", i ? "," : "",
               ledger.allocs[i].name, ledger.allocs[i].bytes,
               purpose_name[ledger.allocs[i].purpose]);
        total += ledger.allocs[i].bytes;
    }
    printf("],\"alloc_bytes\":%zu,\"peak_bytes\":%zu,\"peak_by_purpose\":", total,
           ledger.peak_bytes);
    print_purposes(ledger.peak_by_purpose);
    printf(",\"params\":%zu,\"param_slots\":%zu,\"bytes_per_param\":{\"weights\":%d,"
           "\"optimizer\":8,\"gradients\":%d},\"nvtx\":{\"domain\":\"train_gpt\",\"ranges\":",
           param_count(), param_slots(), bytes_per_weight(), bytes_per_grad());
    print_counters(&ledger.ranges);
    printf(",\"marks\":");
    print_counters(&ledger.marks);
    printf(",\"domain_ranges\":");
    print_counters(&ledger.domain_ranges);
    printf(",\"thread_name\":\"main\",\"stream_name\":\"compute\",\"mem_regions\":[");
    for (int i = 0; i < ledger.nallocs; i++)  // every allocation is one named region
        printf("%s{\"name\":\"%s\",\"bytes\":%zu}", i ? "," : "", ledger.allocs[i].name,
               ledger.allocs[i].bytes);
    printf("]},\"launches\":%ld,\"kernels\":", ledger.launches);
    print_counters(&ledger.kernels);
    printf("}\n");
    fflush(stdout);
}

// cudaMalloc, recorded with its purpose, and registered with NVTX as a heap with one
// region of the same name.
static void *dev_alloc(const char *name, size_t bytes, enum purpose purpose)
{
    void *ptr = NULL;
    CUDA_CHECK(cudaMalloc(&ptr, bytes));
    if (ledger.nallocs == MAX_ALLOCS)
        fatal("train_gpt: too many allocations");
    nvtxMemVirtualRangeDesc_t range = {bytes, ptr};
    nvtxMemHeapDesc_t heap;
    memset(&heap, 0, sizeof heap);
    heap.extCompatID = NVTX_EXT_COMPATID_MEM;
    heap.structSize = sizeof heap;
    heap.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    heap.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    heap.typeSpecificDescSize = sizeof range;
    heap.typeSpecificDesc = &range;
    heap.messageType = NVTX_MESSAGE_TYPE_ASCII;
    heap.message.ascii = name;
    nvtxMemHeapHandle_t h = nvtxMemHeapRegister(domain, &heap);

    nvtxMemRegionHandle_t region = NULL;
    nvtxMemRegionsRegisterBatch_t reg;
    memset(&reg, 0, sizeof reg);
    reg.extCompatID = NVTX_EXT_COMPATID_MEM;
    reg.structSize = sizeof reg;
    reg.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    reg.heap = h;
    reg.regionCount = 1;
    reg.regionDescElementSize = sizeof range;
    reg.regionDescElements = &range;
    reg.regionHandleElementsOut = &region;
    nvtxMemRegionsRegister(domain, &reg);

    nvtxMemRegionNameDesc_t nd;
    memset(&nd, 0, sizeof nd);
    nd.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    nd.nameType = NVTX_MESSAGE_TYPE_ASCII;
    nd.region.pointer = ptr;
    nd.name.ascii = name;
    nvtxMemRegionsNameBatch_t names;
    memset(&names, 0, sizeof names);
    names.extCompatID = NVTX_EXT_COMPATID_MEM;
    names.structSize = sizeof names;
    names.regionCount = 1;
    names.regionElementSize = sizeof nd;
    names.regionElements = &nd;
    nvtxMemRegionsName(domain, &names);

    ledger.allocs[ledger.nallocs].name = name;
    ledger.allocs[ledger.nallocs].bytes = bytes;
    ledger.allocs[ledger.nallocs].purpose = purpose;
    ledger.allocs[ledger.nallocs].ptr = ptr;
    ledger.allocs[ledger.nallocs++].heap = h;
    ledger.live_bytes += bytes;
    ledger.live_by_purpose[purpose] += bytes;
    if (ledger.live_bytes > ledger.peak_bytes) {  // strictly greater: keep the first time
        ledger.peak_bytes = ledger.live_bytes;
        memcpy(ledger.peak_by_purpose, ledger.live_by_purpose, sizeof ledger.peak_by_purpose);
    }
    return ptr;
}

static void free_all(void)
{
    for (int i = ledger.nallocs - 1; i >= 0; i--) {
        nvtxMemHeapUnregister(domain, ledger.allocs[i].heap);
        CUDA_CHECK(cudaFree(ledger.allocs[i].ptr));
        ledger.live_bytes -= ledger.allocs[i].bytes;
        ledger.live_by_purpose[ledger.allocs[i].purpose] -= ledger.allocs[i].bytes;
    }
}

// ---------------------------------------------------------------- kernels
//
// Templated on the storage type X (float, __nv_bfloat16, __half); arithmetic is fp32.
// "warp per row" kernels run 8 rows per 256-thread block; a warp leaves as a whole.

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
template <typename X> __device__ X from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x)
{
    return __float2bfloat16(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

#define ELEMENT_INDEX size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x
#define WARP_ROW                                                                     \
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32
// i = ((b * NH + h) * T + t) * HS + d: an element of a [B, NH, T, HS] tensor
#define HEAD_INDEX                                                                   \
    int d = (int)(i % HS), t = (int)(i / HS % T), h = (int)(i / HS / T % NH),        \
        b = (int)(i / HS / T / NH)

// out[r, c] = wte[tokens[r], c] + wpe[r % T, c]
template <typename X>
__global__ void encoder_forward(X *out, const int *tokens, const X *wte, const X *wpe, int BT,
                                int T, int C)
{
    ELEMENT_INDEX;
    if (i >= (size_t)BT * C) return;
    int r = (int)(i / C), c = (int)(i % C);
    out[i] = from_f<X>(to_f(wte[(size_t)tokens[r] * C + c]) + to_f(wpe[(size_t)(r % T) * C + c]));
}

// dwte[v, c] += sum of dout[r, c] over the rows r whose token is v (rows listed by token:
// rows[offsets[v] .. offsets[v+1])), so no two threads write one element.
template <typename X>
__global__ void encoder_backward_wte(X *dwte, const X *dout, const int *offsets, const int *rows,
                                     int V, int C)
{
    ELEMENT_INDEX;
    if (i >= (size_t)V * C) return;
    int v = (int)(i / C), c = (int)(i % C);
    if (offsets[v] == offsets[v + 1]) return;
    float acc = 0.0f;
    for (int k = offsets[v]; k < offsets[v + 1]; k++)
        acc += to_f(dout[(size_t)rows[k] * C + c]);
    dwte[i] = from_f<X>(to_f(dwte[i]) + acc);
}

// dwpe[t, c] += sum over b of dout[b, t, c]
template <typename X>
__global__ void encoder_backward_wpe(X *dwpe, const X *dout, int B, int T, int C)
{
    ELEMENT_INDEX;
    if (i >= (size_t)T * C) return;
    float acc = 0.0f;
    for (int b = 0; b < B; b++)
        acc += to_f(dout[(size_t)b * T * C + i]);
    dwpe[i] = from_f<X>(to_f(dwpe[i]) + acc);
}

// warp per row: out = (x - mean) * rstd * w + b; mean and rstd saved for backward
template <typename X>
__global__ void layernorm_forward(X *out, float *mean, float *rstd, const X *inp, const X *w,
                                  const X *b, int N, int C)
{
    WARP_ROW;
    if (row >= N) return;
    const X *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += to_f(x[c]);
    float m = warp_sum(s) / C;
    float var = 0.0f;
    for (int c = lane; c < C; c += 32) { float d = to_f(x[c]) - m; var += d * d; }
    float r = rsqrtf(warp_sum(var) / C + 1e-5f);
    for (int c = lane; c < C; c += 32)
        out[(size_t)row * C + c] = from_f<X>((to_f(x[c]) - m) * r * to_f(w[c]) + to_f(b[c]));
    if (lane == 0) mean[row] = m, rstd[row] = r;
}

// warp per row: dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, dnorm = dout * w
template <typename X>
__global__ void layernorm_backward_data(X *dinp, const X *dout, const X *inp, const X *w,
                                        const float *mean, const float *rstd, int N, int C)
{
    WARP_ROW;
    if (row >= N) return;
    size_t base = (size_t)row * C;
    float m = mean[row], r = rstd[row], a = 0.0f, b = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float dn = to_f(dout[base + c]) * to_f(w[c]);
        a += dn;
        b += dn * (to_f(inp[base + c]) - m) * r;
    }
    a = warp_sum(a) / C;
    b = warp_sum(b) / C;
    for (int c = lane; c < C; c += 32) {
        float norm = (to_f(inp[base + c]) - m) * r, dn = to_f(dout[base + c]) * to_f(w[c]);
        dinp[base + c] = from_f<X>(to_f(dinp[base + c]) + (dn - a - norm * b) * r);
    }
}

// thread per channel, over all rows (deterministic): dw += sum dout * norm, db += sum dout
template <typename X>
__global__ void layernorm_backward_params(X *dw, X *db, const X *dout, const X *inp,
                                          const float *mean, const float *rstd, int N, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = 0.0f, ab = 0.0f;
    for (int r = 0; r < N; r++) {
        float d = to_f(dout[(size_t)r * C + c]);
        aw += d * (to_f(inp[(size_t)r * C + c]) - mean[r]) * rstd[r];
        ab += d;
    }
    dw[c] = from_f<X>(to_f(dw[c]) + aw);
    db[c] = from_f<X>(to_f(db[c]) + ab);
}

// qkv [B, T, 3C] -> q, k, v [B, NH, T, HS]; i indexes the destinations
template <typename X>
__global__ void permute_qkv(X *q, X *k, X *v, const X *qkv, int B, int T, int NH, int HS)
{
    ELEMENT_INDEX;
    if (i >= (size_t)B * NH * T * HS) return;
    HEAD_INDEX;
    size_t C = (size_t)NH * HS, src = ((size_t)b * T + t) * 3 * C + (size_t)h * HS + d;
    q[i] = qkv[src];
    k[i] = qkv[src + C];
    v[i] = qkv[src + 2 * C];
}

template <typename X>
__global__ void permute_qkv_backward(X *dqkv, const X *dq, const X *dk, const X *dv, int B, int T,
                                     int NH, int HS)
{
    ELEMENT_INDEX;
    if (i >= (size_t)B * NH * T * HS) return;
    HEAD_INDEX;
    size_t C = (size_t)NH * HS, dst = ((size_t)b * T + t) * 3 * C + (size_t)h * HS + d;
    dqkv[dst] = dq[i];
    dqkv[dst + C] = dk[i];
    dqkv[dst + 2 * C] = dv[i];
}

// y [B, NH, T, HS] -> out [B, T, C]; backward is the inverse gather
template <typename X>
__global__ void unpermute(X *out, const X *y, int B, int T, int NH, int HS)
{
    ELEMENT_INDEX;
    if (i >= (size_t)B * NH * T * HS) return;
    HEAD_INDEX;
    out[((size_t)b * T + t) * NH * HS + (size_t)h * HS + d] = y[i];
}

template <typename X>
__global__ void unpermute_backward(X *dy, const X *dout, int B, int T, int NH, int HS)
{
    ELEMENT_INDEX;
    if (i >= (size_t)B * NH * T * HS) return;
    HEAD_INDEX;
    dy[i] = dout[((size_t)b * T + t) * NH * HS + (size_t)h * HS + d];
}

// warp per row of scores (rows = B*NH*T, query position row % T): softmax over keys
// j <= query, 0 above the diagonal
template <typename X>
__global__ void softmax_causal(X *att, const X *scores, int rows, int T)
{
    WARP_ROW;
    if (row >= rows) return;
    int q = row % T;
    const X *s = scores + (size_t)row * T;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j <= q; j += 32) mx = fmaxf(mx, to_f(s[j]));
    mx = warp_max(mx);
    for (int j = lane; j <= q; j += 32) sum += expf(to_f(s[j]) - mx);
    sum = warp_sum(sum);
    for (int j = lane; j < T; j += 32)
        att[(size_t)row * T + j] = from_f<X>(j <= q ? expf(to_f(s[j]) - mx) / sum : 0.0f);
}

// dscores[j] = att[j] * (datt[j] - sum_k att[k] datt[k]); att is 0 above the diagonal
template <typename X>
__global__ void softmax_causal_backward(X *dscores, const X *datt, const X *att, int rows, int T)
{
    WARP_ROW;
    if (row >= rows) return;
    size_t base = (size_t)row * T;
    float dot = 0.0f;
    for (int j = lane; j < T; j += 32) dot += to_f(att[base + j]) * to_f(datt[base + j]);
    dot = warp_sum(dot);
    for (int j = lane; j < T; j += 32)
        dscores[base + j] = from_f<X>(to_f(att[base + j]) * (to_f(datt[base + j]) - dot));
}

template <typename X>
__global__ void residual_add(X *out, const X *a, const X *b, size_t n)
{
    ELEMENT_INDEX;
    if (i < n) out[i] = from_f<X>(to_f(a[i]) + to_f(b[i]));
}

#define GELU_K 0.7978845608f  // sqrt(2 / pi)
template <typename X>
__global__ void gelu_forward(X *out, const X *inp, size_t n)
{
    ELEMENT_INDEX;
    if (i >= n) return;
    float x = to_f(inp[i]);
    out[i] = from_f<X>(0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x))));
}

// d = d * gelu'(inp), in place
template <typename X>
__global__ void gelu_backward(X *d, const X *inp, size_t n)
{
    ELEMENT_INDEX;
    if (i >= n) return;
    float x = to_f(inp[i]), t = tanhf(GELU_K * (x + 0.044715f * x * x * x));
    float g = 0.5f * (1.0f + t) +
              0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    d[i] = from_f<X>(to_f(d[i]) * g);
}

// warp per row: losses[row] = -log softmax(logits)[target]; dlogits = (softmax - onehot) / N
template <typename X>
__global__ void crossentropy(float *losses, X *dlogits, const X *logits, const int *targets, int N,
                             int V)
{
    WARP_ROW;
    if (row >= N) return;
    const X *z = logits + (size_t)row * V;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j < V; j += 32) mx = fmaxf(mx, to_f(z[j]));
    mx = warp_max(mx);
    for (int j = lane; j < V; j += 32) sum += expf(to_f(z[j]) - mx);
    sum = warp_sum(sum);
    int y = targets[row];
    if (lane == 0) losses[row] = logf(sum) + mx - to_f(z[y]);
    for (int j = lane; j < V; j += 32) {
        float p = expf(to_f(z[j]) - mx) / sum;
        dlogits[(size_t)row * V + j] = from_f<X>((p - (j == y ? 1.0f : 0.0f)) / N);
    }
}

// AdamW on the fp32 master weights (decoupled weight decay); bc1/bc2 = 1 - beta^t
template <typename X>
__global__ void adamw(float *p, const X *g, float *m, float *v, size_t n, float lr, float beta1,
                      float beta2, float eps, float wd, float bc1, float bc2)
{
    ELEMENT_INDEX;
    if (i >= n) return;
    float gi = to_f(g[i]);
    m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
    v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    p[i] -= lr * ((m[i] / bc1) / (sqrtf(v[i] / bc2) + eps) + wd * p[i]);
}

// the working (16-bit) weights from the fp32 master
template <typename X>
__global__ void cast_params(X *out, const float *in, size_t n)
{
    ELEMENT_INDEX;
    if (i < n) out[i] = from_f<X>(in[i]);
}

static unsigned blocks(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }
static unsigned warp_blocks(int rows) { return (unsigned)((rows + 7) / 8); }  // 8 warps a block

// Inside a function templated on X: launch kernel<X> on the compute stream, check, count.
#define LAUNCH(kernel, grid, ...)                                                    \
    do {                                                                             \
        kernel<X><<<(grid), THREADS, 0, stream>>>(__VA_ARGS__);                      \
        CUDA_CHECK(cudaGetLastError());                                              \
        ledger.launches++;                                                           \
        bump(&ledger.kernels, #kernel);                                              \
    } while (0)

// ---------------------------------------------------------------- GEMM wrappers (call and count)

// column-major C[m,n] = alpha op(A) op(B) + beta C, in the working type
static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                 const void *a, int lda, const void *b, int ldb, float beta, void *c, int ldc)
{
    if (PREC == FP32) {
        CUBLAS_CHECK(cublasSgemm(blas, ta, tb, m, n, k, &alpha, (const float *)a, lda,
                                 (const float *)b, ldb, &beta, (float *)c, ldc));
        count_gemm("cublasSgemm_v2", ta, tb, m, n, k, 1, lda, ldb, ldc, 0, 0, 0, CUDA_R_32F,
                   CUBLAS_COMPUTE_32F);
    } else {
        CUBLAS_CHECK(cublasGemmEx(blas, ta, tb, m, n, k, &alpha, a, DTYPE, lda, b, DTYPE, ldb,
                                  &beta, c, DTYPE, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        count_gemm("cublasGemmEx", ta, tb, m, n, k, 1, lda, ldb, ldc, 0, 0, 0, DTYPE,
                   CUBLAS_COMPUTE_32F);
    }
}

static void gemm_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         float alpha, const void *a, int lda, long long sa, const void *b, int ldb,
                         long long sb, float beta, void *c, int ldc, long long sc, int batch)
{
    if (PREC == FP32) {
        CUBLAS_CHECK(cublasSgemmStridedBatched(blas, ta, tb, m, n, k, &alpha, (const float *)a, lda,
                                               sa, (const float *)b, ldb, sb, &beta, (float *)c,
                                               ldc, sc, batch));
        count_gemm("cublasSgemmStridedBatched", ta, tb, m, n, k, batch, lda, ldb, ldc, sa, sb,
                   sc, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    } else {
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas, ta, tb, m, n, k, &alpha, a, DTYPE, lda, sa,
                                                b, DTYPE, ldb, sb, &beta, c, DTYPE, ldc, sc, batch,
                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        count_gemm("cublasGemmStridedBatchedEx", ta, tb, m, n, k, batch, lda, ldb, ldc, sa, sb,
                   sc, DTYPE, CUBLAS_COMPUTE_32F);
    }
}

// row-major out[N,OC] = in[N,IC] W^T, W [OC,IC]
static void linear_forward(void *out, const void *in, const void *w, int N, int IC, int OC)
{
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, 1.0f, w, IC, in, IC, 0.0f, out, OC);
}

// row-major din[N,IC] = dout[N,OC] W; dW[OC,IC] += dout^T in
static void linear_backward(void *din, void *dw, const void *dout, const void *in, const void *w,
                            int N, int IC, int OC)
{
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, 1.0f, w, IC, dout, OC, 0.0f, din, IC);
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, 1.0f, in, IC, dout, OC, 1.0f, dw, IC);
}

// The LM head's forward through cuBLASLt: row-major logits[BT,V] = lnf[BT,C] wte^T, i.e.
// column-major D[V,BT] = A^T B with A = wte stored [C rows, V cols], B = lnf [C, BT].
static struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    cublasComputeType_t compute;
    void *workspace;
} lm;

static void lt_setup(void)
{
    int BT = B * T, found = 0;
    cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    uint64_t ws = WORKSPACE_BYTES;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t result;
    lm.compute = PREC == FP32 && TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    LT_CHECK(cublasLtMatmulDescCreate(&lm.op, lm.compute, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(lm.op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
    LT_CHECK(cublasLtMatmulDescSetAttribute(lm.op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lm.a, DTYPE, C, V, C));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lm.b, DTYPE, C, BT, C));
    LT_CHECK(cublasLtMatrixLayoutCreate(&lm.d, DTYPE, V, BT, V));
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws));
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, lm.op, lm.a, lm.b, lm.d, lm.d, pref, 1, &result,
                                            &found));
    if (found == 0)
        fatal("train_gpt: cublasLtMatmulAlgoGetHeuristic found no algorithm for the LM head");
    lm.algo = result.algo;
    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
}

static void lt_teardown(void)
{
    LT_CHECK(cublasLtMatrixLayoutDestroy(lm.a));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lm.b));
    LT_CHECK(cublasLtMatrixLayoutDestroy(lm.d));
    LT_CHECK(cublasLtMatmulDescDestroy(lm.op));
}

static void lm_head_forward(void *logits, const void *lnf, const void *wte)
{
    float one = 1.0f, zero = 0.0f;
    LT_CHECK(cublasLtMatmul(lt, lm.op, &one, wte, lm.a, lnf, lm.b, &zero, logits, lm.d, logits,
                            lm.d, &lm.algo, lm.workspace, WORKSPACE_BYTES, stream));
    count_gemm("cublasLtMatmul", CUBLAS_OP_T, CUBLAS_OP_N, V, B * T, C, 1, C, C, V, 0, 0, 0, DTYPE,
               lm.compute);
}

// ---------------------------------------------------------------- parameters and buffers

// parameter tensors: 0 wte [V,C], 1 wpe [T,C], per layer l at 2 + 8l the eight below,
// then the final layer norm's weight and bias
enum { LN1W, LN1B, QKVW, ATTPROJW, LN2W, LN2B, FCW, FCPROJW, PER_LAYER };
#define P_WTE 0
#define P_WPE 1
#define P_LAYER(l, k) (2 + PER_LAYER * (l) + (k))
#define P_LNFW (2 + PER_LAYER * L)
#define P_LNFB (P_LNFW + 1)
#define MAX_PARAMS (4 + PER_LAYER * MAX_LAYERS)

static int nparams;
static size_t poff[MAX_PARAMS], pnum[MAX_PARAMS], NP;  // offsets (elements), sizes, total
static float pwd[MAX_PARAMS];                             // weight decay per tensor
static float *master, *adam_m, *adam_v, *h_master;
static void *work, *grads;  // working weights (== master in fp32) and gradients, in DTYPE
static size_t ES = 4;       // bytes per DTYPE element

static void layout_params(void)
{
    for (int i = 0; i < 4 + PER_LAYER * L; i++) {
        int k = (i - 2) % PER_LAYER;
        int is_ln = i >= P_LNFW || (i >= 2 && (k == LN1W || k == LN1B || k == LN2W || k == LN2B));
        size_t n = i == P_WTE ? (size_t)V * C : i == P_WPE ? (size_t)T * C : is_ln ? (size_t)C
                 : k == QKVW ? 3 * (size_t)C * C : k == ATTPROJW ? (size_t)C * C
                 : 4 * (size_t)C * C;
        poff[i] = NP;
        pnum[i] = n;
        pwd[i] = is_ln ? 0.0f : WD;
        NP += (n + 127) / 128 * 128;  // 512-byte aligned in fp32, 256 in 16 bits
    }
    nparams = 4 + PER_LAYER * L;
}

// Parameters (elements), without the padding of each tensor to 128 elements (NP has it).
static size_t param_count(void)
{
    size_t n = 0;
    for (int i = 0; i < nparams; i++)
        n += pnum[i];
    return n;
}

// Elements each parameter buffer holds: every tensor padded to a multiple of 128.
static size_t param_slots(void) { return NP; }

// fp32 weights (the master in 16 bits, plus the working copy); gradients in DTYPE
static int bytes_per_weight(void) { return PREC == FP32 ? 4 : 4 + (int)ES; }
static int bytes_per_grad(void) { return (int)ES; }

template <typename X> static X *PW(int i) { return (X *)work + poff[i]; }
template <typename X> static X *PG(int i) { return (X *)grads + poff[i]; }

// Activations arena: saved tensors per layer plus forward scratch; the gradient arena.
static struct {
    void *encoded, *ln1[MAX_LAYERS], *qkv[MAX_LAYERS], *q[MAX_LAYERS], *k[MAX_LAYERS],
        *v[MAX_LAYERS], *att[MAX_LAYERS], *atty[MAX_LAYERS], *res2[MAX_LAYERS], *ln2[MAX_LAYERS],
        *fch[MAX_LAYERS], *fchg[MAX_LAYERS], *res3[MAX_LAYERS], *lnf, *logits;
    float *ln1_mean[MAX_LAYERS], *ln1_rstd[MAX_LAYERS], *ln2_mean[MAX_LAYERS],
        *ln2_rstd[MAX_LAYERS], *lnf_mean, *lnf_rstd, *losses;
    void *scores, *y, *proj;  // scratch: attention scores, heads' output, projection output
} act;
static struct {
    void *dres, *dbtc, *d4c, *dqkv, *dq, *dk, *dv, *dy, *datt, *dscores, *dlogits;
} dact;
static int *d_ints;  // tokens [BT], targets [BT], offsets [V+1], rows by token [BT]

// Carving: the first pass (base NULL) only sums the sizes.
static char *arena_base;
static size_t arena_off;
static void *carve(size_t bytes)
{
    void *p = arena_base ? arena_base + arena_off : NULL;
    arena_off += (bytes + 255) / 256 * 256;
    return p;
}

static void layout_activations(void)
{
    size_t BT = (size_t)B * T, btc = BT * C * ES, att = (size_t)B * NH * T * T * ES;
    arena_off = 0;
    act.encoded = carve(btc);
    for (int l = 0; l < L; l++) {
        act.ln1[l] = carve(btc);
        act.ln1_mean[l] = (float *)carve(BT * 4);
        act.ln1_rstd[l] = (float *)carve(BT * 4);
        act.qkv[l] = carve(3 * btc);
        act.q[l] = carve(btc);
        act.k[l] = carve(btc);
        act.v[l] = carve(btc);
        act.att[l] = carve(att);
        act.atty[l] = carve(btc);
        act.res2[l] = carve(btc);
        act.ln2[l] = carve(btc);
        act.ln2_mean[l] = (float *)carve(BT * 4);
        act.ln2_rstd[l] = (float *)carve(BT * 4);
        act.fch[l] = carve(4 * btc);
        act.fchg[l] = carve(4 * btc);
        act.res3[l] = carve(btc);
    }
    act.lnf = carve(btc);
    act.lnf_mean = (float *)carve(BT * 4);
    act.lnf_rstd = (float *)carve(BT * 4);
    act.logits = carve(BT * V * ES);
    act.losses = (float *)carve(BT * 4);
    act.scores = carve(att);
    act.y = carve(btc);
    act.proj = carve(btc);
}

static void layout_activation_grads(void)
{
    size_t BT = (size_t)B * T, btc = BT * C * ES, att = (size_t)B * NH * T * T * ES;
    arena_off = 0;
    dact.dres = carve(btc);
    dact.dbtc = carve(btc);
    dact.d4c = carve(4 * btc);
    dact.dqkv = carve(3 * btc);
    dact.dq = carve(btc);
    dact.dk = carve(btc);
    dact.dv = carve(btc);
    dact.dy = carve(btc);
    dact.datt = carve(att);
    dact.dscores = carve(att);
    dact.dlogits = carve(BT * V * ES);
}

static void *alloc_arena(const char *name, enum purpose purpose, void (*layout)(void))
{
    arena_base = NULL;
    layout();
    size_t bytes = arena_off;
    arena_base = (char *)dev_alloc(name, bytes, purpose);
    layout();
    CUDA_CHECK(cudaMemsetAsync(arena_base, 0, bytes, stream));
    return arena_base;
}

// ---------------------------------------------------------------- forward, backward, update

template <typename X>
static void layernorm(void *out, float *mean, float *rstd, const void *in, int w)
{
    LAUNCH(layernorm_forward, warp_blocks(B * T), (X *)out, mean, rstd, (const X *)in, PW<X>(w),
           PW<X>(w + 1), B * T, C);
}

template <typename X> static void layernorm_back(void *dres, const void *dout, const void *in,
                                                 const float *mean, const float *rstd, int w)
{
    LAUNCH(layernorm_backward_data, warp_blocks(B * T), (X *)dres, (const X *)dout, (const X *)in,
           PW<X>(w), mean, rstd, B * T, C);
    LAUNCH(layernorm_backward_params, blocks(C), PG<X>(w), PG<X>(w + 1), (const X *)dout,
           (const X *)in, mean, rstd, B * T, C);
}

template <typename X> static void forward(void)
{
    int BT = B * T, HS = C / NH, bnh = B * NH;
    long long sq = (long long)T * HS, ss = (long long)T * T;
    size_t btc = (size_t)BT * C;
    LAUNCH(encoder_forward, blocks(btc), (X *)act.encoded, d_ints, PW<X>(P_WTE), PW<X>(P_WPE), BT,
           T, C);
    for (int l = 0; l < L; l++) {
        const void *res = l ? act.res3[l - 1] : act.encoded;
        layernorm<X>(act.ln1[l], act.ln1_mean[l], act.ln1_rstd[l], res, P_LAYER(l, LN1W));
        linear_forward(act.qkv[l], act.ln1[l], PW<X>(P_LAYER(l, QKVW)), BT, C, 3 * C);
        LAUNCH(permute_qkv, blocks(btc), (X *)act.q[l], (X *)act.k[l], (X *)act.v[l],
               (const X *)act.qkv[l], B, T, NH, HS);
        // scores[i,j] = q_i . k_j / sqrt(HS), per (b,h): column-major scores^T = K^T Q
        gemm_batched(CUBLAS_OP_T, CUBLAS_OP_N, T, T, HS, 1.0f / sqrtf((float)HS), act.k[l], HS,
                     sq, act.q[l], HS, sq, 0.0f, act.scores, T, ss, bnh);
        LAUNCH(softmax_causal, warp_blocks(bnh * T), (X *)act.att[l], (const X *)act.scores,
               bnh * T, T);
        // y[i,:] = sum_j att[i,j] v_j: column-major y^T = V^T att^T
        gemm_batched(CUBLAS_OP_N, CUBLAS_OP_N, HS, T, T, 1.0f, act.v[l], HS, sq, act.att[l], T, ss,
                     0.0f, act.y, HS, sq, bnh);
        LAUNCH(unpermute, blocks(btc), (X *)act.atty[l], (const X *)act.y, B, T, NH, HS);
        linear_forward(act.proj, act.atty[l], PW<X>(P_LAYER(l, ATTPROJW)), BT, C, C);
        LAUNCH(residual_add, blocks(btc), (X *)act.res2[l], (const X *)res, (const X *)act.proj,
               btc);
        layernorm<X>(act.ln2[l], act.ln2_mean[l], act.ln2_rstd[l], act.res2[l], P_LAYER(l, LN2W));
        linear_forward(act.fch[l], act.ln2[l], PW<X>(P_LAYER(l, FCW)), BT, C, 4 * C);
        LAUNCH(gelu_forward, blocks(4 * btc), (X *)act.fchg[l], (const X *)act.fch[l], 4 * btc);
        linear_forward(act.proj, act.fchg[l], PW<X>(P_LAYER(l, FCPROJW)), BT, 4 * C, C);
        LAUNCH(residual_add, blocks(btc), (X *)act.res3[l], (const X *)act.res2[l],
               (const X *)act.proj, btc);
    }
    layernorm<X>(act.lnf, act.lnf_mean, act.lnf_rstd, act.res3[L - 1], P_LNFW);
    lm_head_forward(act.logits, act.lnf, PW<X>(P_WTE));
    LAUNCH(crossentropy, warp_blocks(BT), act.losses, (X *)dact.dlogits, (const X *)act.logits,
           d_ints + BT, BT, V);
}

template <typename X> static void backward(void)
{
    int BT = B * T, HS = C / NH, bnh = B * NH;
    long long sq = (long long)T * HS, ss = (long long)T * T;
    size_t btc = (size_t)BT * C;
    float scale = 1.0f / sqrtf((float)HS);
    CUDA_CHECK(cudaMemsetAsync(grads, 0, NP * ES, stream));
    CUDA_CHECK(cudaMemsetAsync(dact.dres, 0, btc * ES, stream));
    // LM head (tied): dlnf = dlogits wte; dwte += dlogits^T lnf
    linear_backward(dact.dbtc, PG<X>(P_WTE), dact.dlogits, act.lnf, PW<X>(P_WTE), BT, C, V);
    layernorm_back<X>(dact.dres, dact.dbtc, act.res3[L - 1], act.lnf_mean, act.lnf_rstd, P_LNFW);
    for (int l = L - 1; l >= 0; l--) {  // dres holds d(res3[l]) on entry, d(res3[l-1]) on exit
        const void *res = l ? act.res3[l - 1] : act.encoded;
        linear_backward(dact.d4c, PG<X>(P_LAYER(l, FCPROJW)), dact.dres, act.fchg[l],
                        PW<X>(P_LAYER(l, FCPROJW)), BT, 4 * C, C);
        LAUNCH(gelu_backward, blocks(4 * btc), (X *)dact.d4c, (const X *)act.fch[l], 4 * btc);
        linear_backward(dact.dbtc, PG<X>(P_LAYER(l, FCW)), dact.d4c, act.ln2[l],
                        PW<X>(P_LAYER(l, FCW)), BT, C, 4 * C);
        layernorm_back<X>(dact.dres, dact.dbtc, act.res2[l], act.ln2_mean[l], act.ln2_rstd[l],
                          P_LAYER(l, LN2W));
        linear_backward(dact.dbtc, PG<X>(P_LAYER(l, ATTPROJW)), dact.dres, act.atty[l],
                        PW<X>(P_LAYER(l, ATTPROJW)), BT, C, C);
        LAUNCH(unpermute_backward, blocks(btc), (X *)dact.dy, (const X *)dact.dbtc, B, T, NH, HS);
        // datt = dy v^T (the scores GEMM's shape)
        gemm_batched(CUBLAS_OP_T, CUBLAS_OP_N, T, T, HS, 1.0f, act.v[l], HS, sq, dact.dy, HS, sq,
                     0.0f, dact.datt, T, ss, bnh);
        // dv = att^T dy
        gemm_batched(CUBLAS_OP_N, CUBLAS_OP_T, HS, T, T, 1.0f, dact.dy, HS, sq, act.att[l], T, ss,
                     0.0f, dact.dv, HS, sq, bnh);
        LAUNCH(softmax_causal_backward, warp_blocks(bnh * T), (X *)dact.dscores,
               (const X *)dact.datt, (const X *)act.att[l], bnh * T, T);
        // dq = dscores k / sqrt(HS); dk = dscores^T q / sqrt(HS)
        gemm_batched(CUBLAS_OP_N, CUBLAS_OP_N, HS, T, T, scale, act.k[l], HS, sq, dact.dscores, T,
                     ss, 0.0f, dact.dq, HS, sq, bnh);
        gemm_batched(CUBLAS_OP_N, CUBLAS_OP_T, HS, T, T, scale, act.q[l], HS, sq, dact.dscores, T,
                     ss, 0.0f, dact.dk, HS, sq, bnh);
        LAUNCH(permute_qkv_backward, blocks(btc), (X *)dact.dqkv, (const X *)dact.dq,
               (const X *)dact.dk, (const X *)dact.dv, B, T, NH, HS);
        linear_backward(dact.dbtc, PG<X>(P_LAYER(l, QKVW)), dact.dqkv, act.ln1[l],
                        PW<X>(P_LAYER(l, QKVW)), BT, C, 3 * C);
        layernorm_back<X>(dact.dres, dact.dbtc, res, act.ln1_mean[l], act.ln1_rstd[l],
                          P_LAYER(l, LN1W));
    }
    LAUNCH(encoder_backward_wte, blocks((size_t)V * C), PG<X>(P_WTE), (const X *)dact.dres,
           d_ints + 2 * BT, d_ints + 2 * BT + V + 1, V, C);
    LAUNCH(encoder_backward_wpe, blocks((size_t)T * C), PG<X>(P_WPE), (const X *)dact.dres, B, T,
           C);
}

template <typename X> static void update(int t)
{
    float bc1 = 1.0f - powf(BETA1, (float)t), bc2 = 1.0f - powf(BETA2, (float)t);
    for (int i = 0; i < nparams; i++)
        LAUNCH(adamw, blocks(pnum[i]), master + poff[i], PG<X>(i), adam_m + poff[i],
               adam_v + poff[i], pnum[i], LR, BETA1, BETA2, EPS, pwd[i], bc1, bc2);
    if (PREC != FP32)
        LAUNCH(cast_params, blocks(NP), (X *)work, master, NP);
}

// ---------------------------------------------------------------- data

static uint32_t lcg_state = 20240601u;
static uint32_t lcg(void) { return lcg_state = lcg_state * 1664525u + 1013904223u; }

#define PATTERN 16
static int pattern[PATTERN];

// Each row reads the pattern from its own start: tokens, next-token targets, and the
// rows grouped by token (counting sort) for the embedding's backward.
static void make_batch(int *h)
{
    int BT = B * T, *tok = h, *tgt = h + BT, *off = h + 2 * BT, *rows = off + V + 1;
    for (int b = 0; b < B; b++) {
        int start = (int)(lcg() >> 8) % PATTERN;
        for (int t = 0; t < T; t++) {
            tok[b * T + t] = pattern[(start + t) % PATTERN];
            tgt[b * T + t] = pattern[(start + t + 1) % PATTERN];
        }
    }
    memset(off, 0, (V + 1) * sizeof(int));
    for (int r = 0; r < BT; r++) off[tok[r] + 1]++;
    for (int v = 0; v < V; v++) off[v + 1] += off[v];
    int *cursor = (int *)malloc(V * sizeof(int));
    memcpy(cursor, off, V * sizeof(int));
    for (int r = 0; r < BT; r++) rows[cursor[tok[r]]++] = r;
    free(cursor);
}

static void init_weights(void)
{
    h_master = (float *)calloc(NP, sizeof(float));
    for (int i = 0; i < nparams; i++) {
        int k = (i - 2) % PER_LAYER;  // layer norm weights start at 1, biases at 0
        int is_w = i >= P_LNFW ? i == P_LNFW : i < 2 ? 0 : k == LN1W || k == LN2W;
        for (size_t j = 0; j < pnum[i]; j++) {
            float u = (float)(lcg() >> 8) / (float)(1 << 24) * 2.0f - 1.0f;  // uniform [-1, 1)
            float *p = h_master + poff[i] + j;
            *p = pwd[i] != 0.0f ? 0.02f * 1.7320508f * u : is_w ? 1.0f : 0.0f;  // std 0.02
        }
    }
}

// ---------------------------------------------------------------- --check: CPU forward (fp32)

static void cpu_layernorm(float *out, const float *in, const float *w, const float *b, int N)
{
    for (int r = 0; r < N; r++) {
        const float *x = in + (size_t)r * C;
        double m = 0, var = 0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        double rs = 1.0 / sqrt(var / C + 1e-5);
        for (int c = 0; c < C; c++) out[(size_t)r * C + c] = (float)((x[c] - m) * rs * w[c] + b[c]);
    }
}

static void cpu_linear(float *out, const float *in, const float *w, int N, int IC, int OC)
{
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int i = 0; i < IC; i++)
                s += (double)in[(size_t)r * IC + i] * w[(size_t)o * IC + i];
            out[(size_t)r * OC + o] = (float)s;
        }
}

// out [BT, C] = causal attention of qkv [BT, 3C]
static void cpu_attention(float *out, const float *qkv)
{
    int HS = C / NH;
    double *p = (double *)malloc(T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double s = 0;
                    for (int d = 0; d < HS; d++) s += (double)q[d] * k[d];
                    p[j] = s / sqrt((double)HS);
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j <= i; j++) sum += p[j] = exp(p[j] - mx);
                for (int d = 0; d < HS; d++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++)
                        s += p[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * HS + d];
                    out[((size_t)b * T + i) * C + h * HS + d] = (float)s;
                }
            }
    free(p);
}

// Mean loss of the parameters h_master on the batch h; the logits are left in logits.
static double cpu_forward(const int *h, float *logits)
{
    int BT = B * T;
    size_t btc = (size_t)BT * C;
    const float *P = h_master;
    float *x = (float *)malloc(btc * 4), *ln = (float *)malloc(btc * 4);
    float *big = (float *)malloc(btc * 16);  // qkv [BT,3C], then fc [BT,4C]
    float *y = (float *)malloc(btc * 4), *proj = (float *)malloc(btc * 4);
    for (size_t i = 0; i < btc; i++)
        x[i] = P[poff[P_WTE] + (size_t)h[i / C] * C + i % C] +
               P[poff[P_WPE] + (i / C % T) * C + i % C];
    for (int l = 0; l < L; l++) {
        const float *W[PER_LAYER];
        for (int k = 0; k < PER_LAYER; k++) W[k] = P + poff[P_LAYER(l, k)];
        cpu_layernorm(ln, x, W[LN1W], W[LN1B], BT);
        cpu_linear(big, ln, W[QKVW], BT, C, 3 * C);
        cpu_attention(y, big);
        cpu_linear(proj, y, W[ATTPROJW], BT, C, C);
        for (size_t i = 0; i < btc; i++) x[i] += proj[i];
        cpu_layernorm(ln, x, W[LN2W], W[LN2B], BT);
        cpu_linear(big, ln, W[FCW], BT, C, 4 * C);
        for (size_t i = 0; i < 4 * btc; i++) {
            float v = big[i];
            big[i] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
        }
        cpu_linear(proj, big, W[FCPROJW], BT, 4 * C, C);
        for (size_t i = 0; i < btc; i++) x[i] += proj[i];
    }
    cpu_layernorm(ln, x, P + poff[P_LNFW], P + poff[P_LNFB], BT);
    cpu_linear(logits, ln, P + poff[P_WTE], BT, C, V);
    double loss = 0;
    for (int r = 0; r < BT; r++) {
        const float *z = logits + (size_t)r * V;
        double mx = z[0], sum = 0;
        for (int j = 1; j < V; j++) mx = fmax(mx, z[j]);
        for (int j = 0; j < V; j++) sum += exp(z[j] - mx);
        loss += log(sum) + mx - z[h[BT + r]];
    }
    free(x); free(ln); free(big); free(y); free(proj);
    return loss / BT;
}

// Step 1's logits (on the device) and loss against the CPU; returns 0 if they agree.
static int check_step1(const int *h, double loss)
{
    size_t n = (size_t)B * T * V;
    float *got = (float *)malloc(n * 4), *want = (float *)malloc(n * 4);
    CUDA_CHECK(cudaMemcpyAsync(got, act.logits, n * 4, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    double ref = cpu_forward(h, want), err = 0, scale = 0, tol = TF32 ? 1e-2 : 1e-3;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)got[i] - want[i]));
        scale = fmax(scale, fabs((double)want[i]));
    }
    int bad = !(err <= tol * scale) || !(fabs(loss - ref) <= tol * fabs(ref));
    printf("check step 1: loss %.6f (cpu %.6f), logits max error %g of scale %g: %s\n", loss, ref,
           err, scale, bad ? "MISMATCH" : "ok");
    free(got);
    free(want);
    return bad;
}

// ---------------------------------------------------------------- main

template <typename X> static int train(void)
{
    int BT = B * T, NI = 3 * BT + V + 1, failed = 0;
    int *h = (int *)malloc(NI * sizeof(int));
    float *losses = (float *)malloc(BT * sizeof(float));
    nvtxEventAttributes_t ev;
    memset(&ev, 0, sizeof ev);
    ev.version = NVTX_VERSION;
    ev.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    ev.messageType = NVTX_MESSAGE_TYPE_ASCII;
    ev.message.ascii = "train";
    nvtxRangeId_t run = nvtxDomainRangeStartEx(domain, &ev);
    bump(&ledger.domain_ranges, "train");
    for (int t = 1; t <= STEPS; t++) {
        range_push("step");
        make_batch(h);
        CUDA_CHECK(cudaMemcpyAsync(d_ints, h, NI * sizeof(int), cudaMemcpyHostToDevice, stream));
        range_push("forward");
        forward<X>();
        nvtxRangePop();
        range_push("backward");
        backward<X>();
        nvtxRangePop();
        range_push("optimizer");
        update<X>(t);
        nvtxRangePop();
        CUDA_CHECK(cudaMemcpyAsync(losses, act.losses, BT * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        double loss = 0;
        for (int r = 0; r < BT; r++) loss += losses[r];
        printf("step %d loss %.6f\n", t, loss / BT);
        if (CHECK && t == 1)
            failed = check_step1(h, loss / BT);  // logits are untouched until step 2's forward
        mark("checkpoint");
        nvtxRangePop();
    }
    nvtxDomainRangeEnd(domain, run);
    free(h);
    free(losses);
    return failed;
}

static int parse_int(const char *flag, const char *s)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v <= 0 || v > 1 << 20)
        fatal("train_gpt: %s needs a positive integer", flag);
    return (int)v;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) { CHECK = 1; continue; }
        if (!strcmp(a, "--tf32")) { TF32 = 1; continue; }
        if (!strcmp(a, "--precision") && v) {
            PREC = !strcmp(v, "fp32") ? FP32 : !strcmp(v, "bf16") ? BF16 : !strcmp(v, "fp16") ? FP16
                 : (fatal("train_gpt: --precision is fp32, bf16 or fp16"), FP32);
            i++;
            continue;
        }
        int *dst = !strcmp(a, "--steps") ? &STEPS : !strcmp(a, "--batch") ? &B
                 : !strcmp(a, "--seq") ? &T : !strcmp(a, "--dim") ? &C : !strcmp(a, "--heads") ? &NH
                 : !strcmp(a, "--layers") ? &L : !strcmp(a, "--vocab") ? &V : NULL;
        if (!dst)
            fatal("usage: train_gpt [--steps N] [--batch B] [--seq T] [--dim C] [--heads H] "
                  "[--layers L] [--vocab V] [--precision fp32|bf16|fp16] [--tf32] [--check]");
        *dst = parse_int(a, v);
        i++;
    }
    if (C % NH)
        fatal("train_gpt: --dim must be a multiple of --heads");
    if (L > MAX_LAYERS)
        fatal("train_gpt: at most %d layers", MAX_LAYERS);
    if (CHECK && PREC != FP32)
        fatal("train_gpt: --check compares against an fp32 CPU forward; use --precision fp32");
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    DTYPE = PREC == FP32 ? CUDA_R_32F : PREC == BF16 ? CUDA_R_16BF : CUDA_R_16F;
    ES = PREC == FP32 ? 4 : 2;
    for (int i = 0; i < PATTERN; i++) pattern[i] = (int)((lcg() >> 8) % (uint32_t)V);

    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main");
    domain = nvtxDomainCreateA("train_gpt");
    CUDA_CHECK(cudaStreamCreate(&stream));
    nvtxNameCudaStreamA(stream, "compute");
    CUBLAS_CHECK(cublasCreate(&blas));
    CUBLAS_CHECK(cublasSetStream(blas, stream));  // before SetWorkspace: SetStream resets it
    void *ws = dev_alloc("cublas_workspace", WORKSPACE_BYTES, FUNCTIONALITY);
    CUBLAS_CHECK(cublasSetWorkspace(blas, ws, WORKSPACE_BYTES));
    CUBLAS_CHECK(cublasSetMathMode(blas, TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    LT_CHECK(cublasLtCreate(&lt));
    lm.workspace = dev_alloc("cublaslt_workspace", WORKSPACE_BYTES, FUNCTIONALITY);
    lt_setup();

    layout_params();
    init_weights();
    master = (float *)dev_alloc("params", NP * sizeof(float), WEIGHTS);
    work = PREC == FP32 ? (void *)master : dev_alloc("params_lowp", NP * ES, WEIGHTS);
    grads = dev_alloc("grads", NP * ES, GRADIENTS);
    adam_m = (float *)dev_alloc("adam_m", NP * sizeof(float), OPTIMIZER);
    adam_v = (float *)dev_alloc("adam_v", NP * sizeof(float), OPTIMIZER);
    // Saved activations and forward scratch share one arena: activations. The gradient
    // arena is backward's scratch: temporary. The step's inputs (tokens, targets and the
    // embedding backward's rows by token, copied from the host every step) are the
    // forward pass's inputs: activations.
    alloc_arena("activations", ACTIVATIONS, layout_activations);
    alloc_arena("activation_grads", TEMPORARY, layout_activation_grads);
    d_ints = (int *)dev_alloc("inputs", (size_t)(3 * B * T + V + 1) * sizeof(int), ACTIVATIONS);
    CUDA_CHECK(cudaMemcpyAsync(master, h_master, NP * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
    CUDA_CHECK(cudaMemsetAsync(adam_m, 0, NP * sizeof(float), stream));
    CUDA_CHECK(cudaMemsetAsync(adam_v, 0, NP * sizeof(float), stream));
    if (PREC == BF16) {
        typedef __nv_bfloat16 X;
        LAUNCH(cast_params, blocks(NP), (X *)work, master, NP);
    } else if (PREC == FP16) {
        typedef __half X;
        LAUNCH(cast_params, blocks(NP), (X *)work, master, NP);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // h_master is read by --check later, not freed here

    int failed = PREC == FP32   ? train<float>()
                 : PREC == BF16 ? train<__nv_bfloat16>()
                                : train<__half>();
    if (CHECK)
        printf("check %s\n", failed ? "FAILED" : "passed");

    lt_teardown();
    LT_CHECK(cublasLtDestroy(lt));
    CUBLAS_CHECK(cublasDestroy(blas));
    free_all();
    CUDA_CHECK(cudaStreamDestroy(stream));
    nvtxDomainDestroy(domain);
    free(h_master);
    print_ledger();
    return failed;
}

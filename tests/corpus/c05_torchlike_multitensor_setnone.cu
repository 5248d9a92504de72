// c05_torchlike_multitensor_setnone — PyTorch-style fp32 MLP training with a fused
// multi-tensor AdamW and set-to-None gradients.
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// Spec: an 8-layer fp32 MLP (Linear 512->512 with ReLU, seven times, then Linear 512->10;
// 16 parameter tensors, one cudaMalloc each) is trained for 5 steps on synthetic
// classification batches of 256 rows, the way a PyTorch eager loop does it.  Each step
// copies the batch and its int64 labels to the device, runs the forward pass (addmm as a
// bias broadcast plus cublasSgemm with beta = 1, in-place ReLU, in-place log-softmax, an
// NLL-loss scalar), then backward.  Parameter gradients do not exist before backward:
// each one is cudaMalloc'ed in backward when it is first produced (written with beta = 0),
// and all of them are cudaFree'd right after the optimizer step, like
// zero_grad(set_to_none=True).  Gradients with respect to activations are temporaries
// freed as soon as the previous layer has consumed them, and each saved activation is
// freed once backward no longer needs it.  AdamW is applied with ONE launch per step of
// multi_tensor_apply_kernel, whose single by-value struct parameter carries the addresses
// of every parameter, gradient, exp_avg and exp_avg_sq, their element counts, the
// block-to-chunk map and the step's hyper-parameters (like PyTorch's fused AdamW over
// multi_tensor_apply).  The exp_avg / exp_avg_sq states are created lazily in step 1, just
// before the first update.  Between every two training steps a no-grad evaluation forward
// pass runs on a held-out batch (4 evaluation passes in all).  The program also gives
// cuBLAS a 4 MiB workspace of its own.  Every device allocation and free goes through a
// small ledger wrapper; the ledger is printed as the last line of stdout.  (On the
// simulated device GEMM results are not needed, since kernels do not run either, so the
// harness turns the sim's CPU GEMMs off to stay fast: ANATOMIST_SIM_BLAS_COMPUTE=0.)

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------
// Error checking
// ---------------------------------------------------------------------------------------

#define CUDA_CHECK(expr)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (expr);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                \
              cudaGetErrorString(err_));                                                  \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                \
  do {                                                                                    \
    cublasStatus_t st_ = (expr);                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                \
              cublasGetStatusString(st_));                                                \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define KERNEL_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------------------
// Device-memory ledger
// ---------------------------------------------------------------------------------------

enum Purpose {
  kWeights = 0,
  kOptimizer,
  kGradients,
  kActivations,
  kTemporary,
  kFunctionality,
  kMixed,
  kNumPurposes
};

static const char* kPurposeNames[kNumPurposes] = {
    "weights", "optimizer", "gradients", "activations", "temporary", "functionality", "mixed"};

struct Ledger {
  struct Entry {
    size_t bytes;
    Purpose purpose;
  };
  std::map<void*, Entry> live;
  long long live_bytes = 0;
  long long live_by[kNumPurposes] = {};
  long long peak_bytes = 0;
  long long peak_by[kNumPurposes] = {};

  // Run state, for the ledger and for an out-of-memory report.
  const char* phase = "setup";
  int step = 0;  // 1-based step in progress; 0 in set-up
  int steps_done = 0;
  int forward_passes = 0;

  bool oom = false;
  long long oom_requested = 0;
  Purpose oom_purpose = kTemporary;
  std::string oom_phase;
  int oom_step = 0;
  long long oom_live = 0;
  long long oom_live_by[kNumPurposes] = {};
};

static Ledger g_ledger;

static void ledger_print(const char* program, long long params);

static void* device_alloc(size_t bytes, Purpose purpose) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    Ledger& L = g_ledger;
    L.oom = true;
    L.oom_requested = (long long)bytes;
    L.oom_purpose = purpose;
    L.oom_phase = L.phase;
    L.oom_step = L.step;
    L.oom_live = L.live_bytes;
    for (int i = 0; i < kNumPurposes; ++i) L.oom_live_by[i] = L.live_by[i];
    fprintf(stderr, "CUDA out of memory: tried to allocate %zu bytes (%s, phase %s, step %d)\n",
            bytes, kPurposeNames[purpose], L.phase, L.step);
    throw std::bad_alloc();
  }
  CUDA_CHECK(err);
  Ledger& L = g_ledger;
  L.live[p] = Ledger::Entry{bytes, purpose};
  L.live_bytes += (long long)bytes;
  L.live_by[purpose] += (long long)bytes;
  if (L.live_bytes > L.peak_bytes) {
    L.peak_bytes = L.live_bytes;
    for (int i = 0; i < kNumPurposes; ++i) L.peak_by[i] = L.live_by[i];
  }
  return p;
}

template <typename T>
static T* dalloc(size_t count, Purpose purpose) {
  return static_cast<T*>(device_alloc(count * sizeof(T), purpose));
}

static void dfree(void* p) {
  if (!p) return;
  Ledger& L = g_ledger;
  auto it = L.live.find(p);
  if (it == L.live.end()) {
    fprintf(stderr, "dfree: unknown pointer %p\n", p);
    exit(1);
  }
  CUDA_CHECK(cudaFree(p));
  L.live_bytes -= (long long)it->second.bytes;
  L.live_by[it->second.purpose] -= (long long)it->second.bytes;
  L.live.erase(it);
}

static void print_by_purpose(const long long* by) {
  printf("{");
  for (int i = 0; i < kNumPurposes; ++i)
    printf("%s\"%s\":%lld", i ? "," : "", kPurposeNames[i], by[i]);
  printf("}");
}

static void ledger_print(const char* program, long long params) {
  const Ledger& L = g_ledger;
  fflush(stdout);
  printf("ledger {\"program\":\"%s\",\"kind\":\"training\",\"steps\":%d,"
         "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
         "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
         "\"peak_bytes\":%lld,\"peak_by_purpose\":",
         program, L.steps_done, L.forward_passes, params, L.peak_bytes);
  print_by_purpose(L.peak_by);
  printf(",\"pools_at_peak\":[],\"oom\":");
  if (!L.oom) {
    printf("null");
  } else {
    int dom = 0;
    for (int i = 1; i < kNumPurposes; ++i)
      if (L.oom_live_by[i] > L.oom_live_by[dom]) dom = i;
    printf("{\"requested_bytes\":%lld,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
           "\"live_bytes\":%lld,\"live_by_purpose\":",
           L.oom_requested, kPurposeNames[L.oom_purpose], L.oom_phase.c_str(), L.oom_step,
           L.oom_live);
    print_by_purpose(L.oom_live_by);
    printf(",\"dominant\":\"%s\"}", kPurposeNames[dom]);
  }
  printf("}\n");
  fflush(stdout);
}

// ---------------------------------------------------------------------------------------
// Kernels (PyTorch-flavoured names; all bodies compute the real thing)
// ---------------------------------------------------------------------------------------

struct ReluFunctor {
  __device__ float operator()(float x, float) const { return x > 0.f ? x : 0.f; }
};

// threshold_backward(grad, output, 0): pass the gradient where the ReLU output was positive.
struct ThresholdBackwardFunctor {
  __device__ float operator()(float grad, float out) const { return out > 0.f ? grad : 0.f; }
};

template <typename Op>
__global__ void vectorized_elementwise_kernel(int64_t n, Op op, float* out, const float* a,
                                              const float* b) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) out[i] = op(a[i], b ? b[i] : 0.f);
}

// out[r, c] = bias[c] for a row-major [rows, cols] tensor (the expand + copy before addmm).
__global__ void elementwise_kernel_bias_broadcast(int64_t rows, int64_t cols, float* out,
                                                  const float* bias) {
  int64_t n = rows * cols;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) out[i] = bias[i % cols];
}

// In-place log-softmax over each row of a row-major [rows, cols] tensor; one block per row.
__global__ void cunn_SoftMaxForward(float* x, int cols) {
  extern __shared__ float smem[];
  float* row = x + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  smem[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] = fmaxf(smem[threadIdx.x], smem[threadIdx.x + s]);
    __syncthreads();
  }
  m = smem[0];
  __syncthreads();
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
  smem[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  float lse = m + logf(smem[0]);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] = row[c] - lse;
}

// loss = -mean_r logp[r, target[r]]; one block.
__global__ void nll_loss_forward_reduce_cuda_kernel_2d(float* loss, const float* logp,
                                                       const int64_t* target, int rows,
                                                       int cols) {
  extern __shared__ float smem[];
  float acc = 0.f;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) acc -= logp[(int64_t)r * cols + target[r]];
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = smem[0] / rows;
}

// d logits = (softmax - onehot(target)) / rows, from the saved log-probabilities.
__global__ void cunn_SoftMaxBackward(float* grad, const float* logp, const int64_t* target,
                                     int rows, int cols) {
  int64_t n = (int64_t)rows * cols;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) {
    int r = (int)(i / cols), c = (int)(i % cols);
    grad[i] = (expf(logp[i]) - (c == (int)target[r] ? 1.f : 0.f)) / rows;
  }
}

// Bias gradient: out[c] = sum_r grad[r, c] (grad row-major [rows, cols]).
__global__ void reduce_kernel_sum_dim0(float* out, const float* grad, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int r = 0; r < rows; ++r) acc += grad[(int64_t)r * cols + c];
  out[c] = acc;
}

// Evaluation: count rows whose arg-max equals the label.
__global__ void argmax_eq_count_kernel(int* correct, const float* logits, const int64_t* target,
                                       int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = logits + (int64_t)r * cols;
  int best = 0;
  for (int c = 1; c < cols; ++c)
    if (row[c] > row[best]) best = c;
  if (best == (int)target[r]) atomicAdd(correct, 1);
}

// ---- multi_tensor_apply: one launch updates every parameter --------------------------------

static constexpr int kChunkSize = 65536;
static constexpr int kMaxTensors = 36;  // PyTorch's depth_to_max_tensors[3]
static constexpr int kMaxBlocks = 320;  // PyTorch's depth_to_max_blocks[3]

template <int depth>
struct TensorListMetadata {
  void* addresses[depth][kMaxTensors];  // [0] param, [1] grad, [2] exp_avg, [3] exp_avg_sq
  int64_t numel_for_tensor[kMaxTensors];
  unsigned char block_to_tensor[kMaxBlocks];
  int block_to_chunk[kMaxBlocks];
  int start_tensor_this_launch;
};

struct FusedAdamWMeta {
  TensorListMetadata<4> tl;
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  float bias_correction1;       // 1 - beta1^step
  float bias_correction2_sqrt;  // sqrt(1 - beta2^step)
};

template <typename Meta>
__global__ void multi_tensor_apply_kernel(Meta meta) {
  const int tensor = meta.tl.block_to_tensor[blockIdx.x];
  const int chunk = meta.tl.block_to_chunk[blockIdx.x];
  const int64_t numel = meta.tl.numel_for_tensor[tensor];
  float* p = static_cast<float*>(meta.tl.addresses[0][tensor]);
  const float* g = static_cast<const float*>(meta.tl.addresses[1][tensor]);
  float* m = static_cast<float*>(meta.tl.addresses[2][tensor]);
  float* v = static_cast<float*>(meta.tl.addresses[3][tensor]);
  const int64_t begin = (int64_t)chunk * kChunkSize;
  int64_t end = begin + kChunkSize;
  if (end > numel) end = numel;
  const float step_size = meta.lr / meta.bias_correction1;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i];
    float gi = g[i];
    pi -= meta.lr * meta.weight_decay * pi;  // decoupled weight decay
    float mi = meta.beta1 * m[i] + (1.f - meta.beta1) * gi;
    float vi = meta.beta2 * v[i] + (1.f - meta.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / meta.bias_correction2_sqrt + meta.eps;
    p[i] = pi - step_size * mi / denom;
  }
}

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------

static constexpr int kLayers = 8;
static constexpr int kHidden = 512;
static constexpr int kInFeatures = 512;
static constexpr int kClasses = 10;
static constexpr int kBatch = 256;
static constexpr int kEvalBatch = 256;
static constexpr int kSteps = 5;
static constexpr size_t kCublasWorkspaceBytes = 4u << 20;

struct Param {
  float* data = nullptr;
  float* grad = nullptr;      // nullptr until backward produces it (set_to_none)
  float* exp_avg = nullptr;   // lazily created at the first optimizer step
  float* exp_avg_sq = nullptr;
  int64_t numel = 0;
};

struct Linear {
  int in = 0, out = 0;
  Param weight;  // row-major [out, in], as torch.nn.Linear
  Param bias;    // [out]
};

static inline unsigned grid_for(int64_t n, int block) {
  int64_t g = (n + block - 1) / block;
  if (g > 4096) g = 4096;
  if (g < 1) g = 1;
  return (unsigned)g;
}

// Deterministic host-side generator (xorshift64*).
struct HostRng {
  uint64_t s;
  explicit HostRng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((next() >> 40) * (1.0 / 16777216.0));
  }
};

static void make_batch(HostRng& rng, int rows, std::vector<float>& x, std::vector<int64_t>& y) {
  x.resize((size_t)rows * kInFeatures);
  y.resize(rows);
  for (int r = 0; r < rows; ++r) {
    int label = (int)(rng.next() % kClasses);
    y[r] = label;
    for (int c = 0; c < kInFeatures; ++c) {
      float v = rng.uniform(-1.f, 1.f);
      if (c % kClasses == label) v += 0.5f;  // a learnable signal
      x[(size_t)r * kInFeatures + c] = v;
    }
  }
}

// y[rows, out] = x[rows, in] @ W^T + b (row-major), written into a fresh buffer.
static void linear_forward(cublasHandle_t h, const Linear& l, const float* x, float* y, int rows) {
  int64_t n = (int64_t)rows * l.out;
  elementwise_kernel_bias_broadcast<<<grid_for(n, 256), 256>>>(rows, l.out, y, l.bias.data);
  KERNEL_CHECK();
  const float one = 1.f;
  CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, l.out, rows, l.in, &one, l.weight.data,
                           l.in, x, l.in, &one, y, l.out));
}

static void relu_inplace(float* y, int64_t n) {
  vectorized_elementwise_kernel<<<grid_for(n, 256), 256>>>(n, ReluFunctor{}, y, y,
                                                           (const float*)nullptr);
  KERNEL_CHECK();
}

int main() {
  const char* kProgram = "c05_torchlike_multitensor_setnone";
  try {
    Ledger& L = g_ledger;
    L.phase = "setup";

    cublasHandle_t handle;
    CUBLAS_CHECK(cublasCreate(&handle));
    void* workspace = device_alloc(kCublasWorkspaceBytes, kFunctionality);
    CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, kCublasWorkspaceBytes));

    // ---- parameters: one cudaMalloc per tensor, initialised like nn.Linear -------------
    std::vector<Linear> layers(kLayers);
    long long params = 0;
    HostRng init_rng(1234);
    for (int i = 0; i < kLayers; ++i) {
      Linear& l = layers[i];
      l.in = (i == 0) ? kInFeatures : kHidden;
      l.out = (i == kLayers - 1) ? kClasses : kHidden;
      l.weight.numel = (int64_t)l.out * l.in;
      l.bias.numel = l.out;
      l.weight.data = dalloc<float>(l.weight.numel, kWeights);
      l.bias.data = dalloc<float>(l.bias.numel, kWeights);
      float bound = 1.f / sqrtf((float)l.in);
      std::vector<float> w(l.weight.numel), b(l.bias.numel);
      for (auto& v : w) v = init_rng.uniform(-bound, bound);
      for (auto& v : b) v = init_rng.uniform(-bound, bound);
      CUDA_CHECK(cudaMemcpy(l.weight.data, w.data(), w.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(l.bias.data, b.data(), b.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
      params += l.weight.numel + l.bias.numel;
    }
    std::vector<Param*> all_params;
    for (auto& l : layers) {
      all_params.push_back(&l.weight);
      all_params.push_back(&l.bias);
    }

    const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
    bool optimizer_state_initialized = false;

    HostRng data_rng(42);
    HostRng eval_rng(7);
    std::vector<float> hx;
    std::vector<int64_t> hy;
    const float one = 1.f, zero = 0.f;

    for (int step = 1; step <= kSteps; ++step) {
      L.step = step;
      L.phase = "step_start";
      make_batch(data_rng, kBatch, hx, hy);
      float* x = dalloc<float>((size_t)kBatch * kInFeatures, kActivations);
      int64_t* y = dalloc<int64_t>(kBatch, kActivations);
      CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(y, hy.data(), hy.size() * sizeof(int64_t), cudaMemcpyHostToDevice));

      // ---- forward: keep every layer's output for backward --------------------------------
      L.phase = "forward";
      std::vector<float*> acts(kLayers, nullptr);  // acts[i] = output of layer i
      const float* in = x;
      for (int i = 0; i < kLayers; ++i) {
        const Linear& l = layers[i];
        acts[i] = dalloc<float>((size_t)kBatch * l.out, kActivations);
        linear_forward(handle, l, in, acts[i], kBatch);
        if (i + 1 < kLayers) relu_inplace(acts[i], (int64_t)kBatch * l.out);
        in = acts[i];
      }
      float* logp = acts[kLayers - 1];  // log_softmax in place: saved for backward
      cunn_SoftMaxForward<<<kBatch, 32, 32 * sizeof(float)>>>(logp, kClasses);
      KERNEL_CHECK();
      float* loss = dalloc<float>(1, kTemporary);
      nll_loss_forward_reduce_cuda_kernel_2d<<<1, 256, 256 * sizeof(float)>>>(loss, logp, y,
                                                                              kBatch, kClasses);
      KERNEL_CHECK();
      L.forward_passes++;

      // ---- backward ---------------------------------------------------------------------
      L.phase = "backward";
      float* grad_out = dalloc<float>((size_t)kBatch * kClasses, kTemporary);
      {
        int64_t n = (int64_t)kBatch * kClasses;
        cunn_SoftMaxBackward<<<grid_for(n, 256), 256>>>(grad_out, logp, y, kBatch, kClasses);
        KERNEL_CHECK();
      }
      dfree(logp);
      acts[kLayers - 1] = nullptr;
      for (int i = kLayers - 1; i >= 0; --i) {
        Linear& l = layers[i];
        const float* layer_in = (i == 0) ? x : acts[i - 1];
        // grad_input first (mm(grad_out, W)), then the parameter gradients.
        float* grad_in = nullptr;
        if (i > 0) {
          grad_in = dalloc<float>((size_t)kBatch * l.in, kTemporary);
          CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, l.in, kBatch, l.out, &one,
                                   l.weight.data, l.in, grad_out, l.out, &zero, grad_in, l.in));
        }
        // First production of the gradient: allocate it and write it (no accumulation).
        l.weight.grad = dalloc<float>(l.weight.numel, kGradients);
        CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, l.in, l.out, kBatch, &one,
                                 layer_in, l.in, grad_out, l.out, &zero, l.weight.grad, l.in));
        l.bias.grad = dalloc<float>(l.bias.numel, kGradients);
        reduce_kernel_sum_dim0<<<(l.out + 255) / 256, 256>>>(l.bias.grad, grad_out, kBatch, l.out);
        KERNEL_CHECK();
        dfree(grad_out);
        grad_out = nullptr;
        if (i > 0) {
          // ReLU backward in place, using the saved ReLU output; then that output is done.
          int64_t n = (int64_t)kBatch * l.in;
          vectorized_elementwise_kernel<<<grid_for(n, 256), 256>>>(
              n, ThresholdBackwardFunctor{}, grad_in, grad_in, acts[i - 1]);
          KERNEL_CHECK();
          dfree(acts[i - 1]);
          acts[i - 1] = nullptr;
          grad_out = grad_in;
        }
      }

      // ---- optimizer: lazy state, then one multi-tensor launch ---------------------------
      L.phase = "optimizer";
      if (!optimizer_state_initialized) {
        for (Param* p : all_params) {
          p->exp_avg = dalloc<float>(p->numel, kOptimizer);
          CUDA_CHECK(cudaMemset(p->exp_avg, 0, p->numel * sizeof(float)));
          p->exp_avg_sq = dalloc<float>(p->numel, kOptimizer);
          CUDA_CHECK(cudaMemset(p->exp_avg_sq, 0, p->numel * sizeof(float)));
        }
        optimizer_state_initialized = true;
      }
      {
        static FusedAdamWMeta meta;  // ~3 KiB, passed by value to the kernel
        memset(&meta, 0, sizeof(meta));
        meta.lr = lr;
        meta.beta1 = beta1;
        meta.beta2 = beta2;
        meta.eps = eps;
        meta.weight_decay = weight_decay;
        meta.bias_correction1 = 1.f - powf(beta1, (float)step);
        meta.bias_correction2_sqrt = sqrtf(1.f - powf(beta2, (float)step));
        int ntensors = 0, nblocks = 0;
        for (Param* p : all_params) {
          if (!p->grad) continue;
          if (ntensors == kMaxTensors) {
            fprintf(stderr, "too many tensors for one launch\n");
            exit(1);
          }
          meta.tl.addresses[0][ntensors] = p->data;
          meta.tl.addresses[1][ntensors] = p->grad;
          meta.tl.addresses[2][ntensors] = p->exp_avg;
          meta.tl.addresses[3][ntensors] = p->exp_avg_sq;
          meta.tl.numel_for_tensor[ntensors] = p->numel;
          int chunks = (int)((p->numel + kChunkSize - 1) / kChunkSize);
          for (int c = 0; c < chunks; ++c) {
            if (nblocks == kMaxBlocks) {
              fprintf(stderr, "too many chunks for one launch\n");
              exit(1);
            }
            meta.tl.block_to_tensor[nblocks] = (unsigned char)ntensors;
            meta.tl.block_to_chunk[nblocks] = c;
            ++nblocks;
          }
          ++ntensors;
        }
        meta.tl.start_tensor_this_launch = 0;
        multi_tensor_apply_kernel<FusedAdamWMeta><<<nblocks, 512>>>(meta);
        KERNEL_CHECK();
      }
      // zero_grad(set_to_none=True)
      for (Param* p : all_params) {
        dfree(p->grad);
        p->grad = nullptr;
      }
      L.steps_done++;

      float hloss = 0.f;
      CUDA_CHECK(cudaMemcpy(&hloss, loss, sizeof(float), cudaMemcpyDeviceToHost));
      printf("step %d loss %.6f\n", step, hloss);
      dfree(loss);
      dfree(x);
      dfree(y);

      // ---- evaluation between two training steps (no grad) ---------------------------
      if (step < kSteps) {
        L.phase = "evaluation";
        make_batch(eval_rng, kEvalBatch, hx, hy);
        float* ex = dalloc<float>((size_t)kEvalBatch * kInFeatures, kActivations);
        int64_t* ey = dalloc<int64_t>(kEvalBatch, kActivations);
        CUDA_CHECK(cudaMemcpy(ex, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(ey, hy.data(), hy.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice));
        float* h = nullptr;
        const float* ein = ex;
        for (int i = 0; i < kLayers; ++i) {
          const Linear& l = layers[i];
          float* out = dalloc<float>((size_t)kEvalBatch * l.out, kTemporary);
          linear_forward(handle, l, ein, out, kEvalBatch);
          if (i + 1 < kLayers) relu_inplace(out, (int64_t)kEvalBatch * l.out);
          if (h) dfree(h);  // no autograd graph: the previous output dies here
          h = out;
          ein = out;
        }
        int* correct = dalloc<int>(1, kTemporary);
        CUDA_CHECK(cudaMemset(correct, 0, sizeof(int)));
        argmax_eq_count_kernel<<<(kEvalBatch + 127) / 128, 128>>>(correct, h, ey, kEvalBatch,
                                                                  kClasses);
        KERNEL_CHECK();
        int hcorrect = 0;
        CUDA_CHECK(cudaMemcpy(&hcorrect, correct, sizeof(int), cudaMemcpyDeviceToHost));
        L.forward_passes++;
        printf("eval after step %d: accuracy %.4f\n", step, (double)hcorrect / kEvalBatch);
        dfree(correct);
        dfree(h);
        dfree(ex);
        dfree(ey);
      }
    }

    // ---- teardown ---------------------------------------------------------------------
    L.phase = "setup";
    CUDA_CHECK(cudaDeviceSynchronize());
    for (Param* p : all_params) {
      dfree(p->exp_avg);
      dfree(p->exp_avg_sq);
      dfree(p->data);
    }
    CUBLAS_CHECK(cublasDestroy(handle));
    dfree(workspace);
    ledger_print(kProgram, params);
    return 0;
  } catch (const std::bad_alloc&) {
    long long params = 0;
    for (int i = 0; i < kLayers; ++i) {
      int in = (i == 0) ? kInFeatures : kHidden;
      int out = (i == kLayers - 1) ? kClasses : kHidden;
      params += (long long)out * in + out;
    }
    ledger_print(kProgram, params);
    return 3;
  }
}

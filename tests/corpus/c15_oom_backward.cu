// c15_oom_backward — fp32 MLP training that runs out of device memory in backward when
// the batch grows.
// corpus-env: ANATOMIST_SIM_MEMORY=114MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0
//
// Spec: a 6-layer fp32 MLP (Linear 1024->1024 with ReLU, five times, then Linear
// 1024->1000) is trained with SGD with momentum (lr 0.01, momentum 0.9, weight decay 5e-4)
// on synthetic classification batches.  Before training it allocates every weight and
// bias (one cudaMalloc each) and every momentum buffer (zero-filled).  Each step copies
// the batch and its int64 labels to the device; forward keeps each layer's output in its
// own allocation (saved for backward), log-softmax runs in place on the logits and the
// NLL loss goes into a scalar.  Backward first makes d(logits), then, per layer from the
// last, allocates the parameter gradients when they are first produced (set-to-None
// style: they do not exist before backward) and a gradient-with-respect-to-activation
// buffer for the layer's input, freeing each saved activation and each consumed
// gradient-of-activation as soon as backward is done with it.  After one SGD launch per
// parameter the gradients are freed (zero_grad(set_to_none=True)).  The batch schedule is
// 256, 256, then 1024 (4x): steps 1 and 2 complete, step 3's forward pass fits, and its
// backward pass fails on the 114 MiB device (of which cuBLAS's own 32 MiB default
// workspace takes a share).  The program catches cudaErrorMemoryAllocation, prints the
// ledger with `oom` filled (phase "backward", step 3) and exits with status 3.  Every
// device allocation and free goes through a small ledger wrapper.  (On the simulated
// device GEMM results are not needed, since kernels do not run either, so the harness
// turns the sim's CPU GEMMs off to stay fast: ANATOMIST_SIM_BLAS_COMPUTE=0.)

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
         "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"sgd_momentum\","
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
// Kernels
// ---------------------------------------------------------------------------------------

static inline unsigned grid_for(int64_t n, int block) {
  int64_t g = (n + block - 1) / block;
  if (g > 4096) g = 4096;
  if (g < 1) g = 1;
  return (unsigned)g;
}

// y[r, c] = bias[c] (row-major [rows, cols]); the GEMM then accumulates x @ W^T into it.
__global__ void bias_broadcast_kernel(int64_t rows, int64_t cols, float* y, const float* bias) {
  int64_t n = rows * cols;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = bias[i % cols];
}

__global__ void relu_kernel(int64_t n, float* y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaxf(y[i], 0.f);
}

// grad *= (relu_out > 0), in place.
__global__ void relu_backward_kernel(int64_t n, float* grad, const float* relu_out) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    if (relu_out[i] <= 0.f) grad[i] = 0.f;
}

// In-place log-softmax of each row; one block (power-of-two size) per row.
__global__ void log_softmax_kernel(float* x, int cols) {
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
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] -= lse;
}

__global__ void nll_loss_kernel(float* loss, const float* logp, const int64_t* target, int rows,
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

// d logits = (exp(logp) - onehot) / rows.
__global__ void cross_entropy_backward_kernel(float* grad, const float* logp,
                                              const int64_t* target, int rows, int cols) {
  int64_t n = (int64_t)rows * cols;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int r = (int)(i / cols), c = (int)(i % cols);
    grad[i] = (expf(logp[i]) - (c == (int)target[r] ? 1.f : 0.f)) / rows;
  }
}

// db[c] = sum_r dy[r, c].
__global__ void bias_grad_kernel(float* db, const float* dy, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int r = 0; r < rows; ++r) acc += dy[(int64_t)r * cols + c];
  db[c] = acc;
}

// buf = momentum * buf + (g + wd * p);  p -= lr * buf
__global__ void sgd_momentum_kernel(int64_t n, float* p, const float* g, float* buf, float lr,
                                    float momentum, float weight_decay) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float d = g[i] + weight_decay * p[i];
    float b = momentum * buf[i] + d;
    buf[i] = b;
    p[i] -= lr * b;
  }
}

// ---------------------------------------------------------------------------------------
// Model and training loop
// ---------------------------------------------------------------------------------------

static constexpr int kLayers = 6;
static constexpr int kWidth = 1024;
static constexpr int kClasses = 1000;
static constexpr int kPlannedSteps = 4;
static constexpr int kBatchSchedule[kPlannedSteps] = {256, 256, 1024, 1024};

struct Param {
  float* data = nullptr;
  float* grad = nullptr;  // set-to-None: nullptr outside backward/optimizer
  float* momentum = nullptr;
  int64_t numel = 0;
};

struct Linear {
  int in = 0, out = 0;
  Param weight;  // row-major [out, in]
  Param bias;
};

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

static long long count_params() {
  long long n = 0;
  for (int i = 0; i < kLayers; ++i) {
    int out = (i == kLayers - 1) ? kClasses : kWidth;
    n += (long long)out * kWidth + out;
  }
  return n;
}

int main() {
  const char* kProgram = "c15_oom_backward";
  const long long params = count_params();
  Ledger& L = g_ledger;
  try {
    L.phase = "setup";
    cublasHandle_t handle;
    CUBLAS_CHECK(cublasCreate(&handle));

    std::vector<Linear> layers(kLayers);
    HostRng init_rng(2024);
    for (int i = 0; i < kLayers; ++i) {
      Linear& l = layers[i];
      l.in = kWidth;
      l.out = (i == kLayers - 1) ? kClasses : kWidth;
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
    }
    std::vector<Param*> all_params;
    for (auto& l : layers) {
      all_params.push_back(&l.weight);
      all_params.push_back(&l.bias);
    }
    for (Param* p : all_params) {
      p->momentum = dalloc<float>(p->numel, kOptimizer);
      CUDA_CHECK(cudaMemset(p->momentum, 0, p->numel * sizeof(float)));
    }

    const float lr = 0.01f, momentum = 0.9f, weight_decay = 5e-4f;
    const float one = 1.f, zero = 0.f;
    HostRng data_rng(99);
    std::vector<float> hx;
    std::vector<int64_t> hy;

    for (int step = 1; step <= kPlannedSteps; ++step) {
      const int B = kBatchSchedule[step - 1];
      L.step = step;
      L.phase = "step_start";
      hx.resize((size_t)B * kWidth);
      hy.resize(B);
      for (int r = 0; r < B; ++r) {
        int label = (int)(data_rng.next() % kClasses);
        hy[r] = label;
        for (int c = 0; c < kWidth; ++c)
          hx[(size_t)r * kWidth + c] = data_rng.uniform(-1.f, 1.f) + (c == label ? 2.f : 0.f);
      }
      float* x = dalloc<float>((size_t)B * kWidth, kActivations);
      int64_t* y = dalloc<int64_t>(B, kActivations);
      CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(y, hy.data(), hy.size() * sizeof(int64_t), cudaMemcpyHostToDevice));

      // ---- forward ------------------------------------------------------------------------
      L.phase = "forward";
      std::vector<float*> acts(kLayers, nullptr);
      const float* in = x;
      for (int i = 0; i < kLayers; ++i) {
        const Linear& l = layers[i];
        int64_t n = (int64_t)B * l.out;
        acts[i] = dalloc<float>(n, kActivations);
        bias_broadcast_kernel<<<grid_for(n, 256), 256>>>(B, l.out, acts[i], l.bias.data);
        KERNEL_CHECK();
        CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, l.out, B, l.in, &one,
                                 l.weight.data, l.in, in, l.in, &one, acts[i], l.out));
        if (i + 1 < kLayers) {
          relu_kernel<<<grid_for(n, 256), 256>>>(n, acts[i]);
          KERNEL_CHECK();
        }
        in = acts[i];
      }
      float* logp = acts[kLayers - 1];
      log_softmax_kernel<<<B, 256, 256 * sizeof(float)>>>(logp, kClasses);
      KERNEL_CHECK();
      float* loss = dalloc<float>(1, kTemporary);
      nll_loss_kernel<<<1, 256, 256 * sizeof(float)>>>(loss, logp, y, B, kClasses);
      KERNEL_CHECK();
      L.forward_passes++;

      // ---- backward -----------------------------------------------------------------------
      L.phase = "backward";
      float* grad_out = dalloc<float>((size_t)B * kClasses, kTemporary);
      {
        int64_t n = (int64_t)B * kClasses;
        cross_entropy_backward_kernel<<<grid_for(n, 256), 256>>>(grad_out, logp, y, B, kClasses);
        KERNEL_CHECK();
      }
      dfree(logp);
      acts[kLayers - 1] = nullptr;
      for (int i = kLayers - 1; i >= 0; --i) {
        Linear& l = layers[i];
        const float* layer_in = (i == 0) ? x : acts[i - 1];
        // Same order as addmm's backward: bias, input, weight.
        l.bias.grad = dalloc<float>(l.bias.numel, kGradients);
        bias_grad_kernel<<<(l.out + 255) / 256, 256>>>(l.bias.grad, grad_out, B, l.out);
        KERNEL_CHECK();
        float* grad_in = nullptr;
        if (i > 0) {
          grad_in = dalloc<float>((size_t)B * l.in, kTemporary);
          CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, l.in, B, l.out, &one,
                                   l.weight.data, l.in, grad_out, l.out, &zero, grad_in, l.in));
        }
        l.weight.grad = dalloc<float>(l.weight.numel, kGradients);
        CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, l.in, l.out, B, &one, layer_in,
                                 l.in, grad_out, l.out, &zero, l.weight.grad, l.in));
        dfree(grad_out);
        grad_out = nullptr;
        if (i > 0) {
          int64_t n = (int64_t)B * l.in;
          relu_backward_kernel<<<grid_for(n, 256), 256>>>(n, grad_in, acts[i - 1]);
          KERNEL_CHECK();
          dfree(acts[i - 1]);
          acts[i - 1] = nullptr;
          grad_out = grad_in;
        }
      }

      // ---- optimizer ----------------------------------------------------------------------
      L.phase = "optimizer";
      for (Param* p : all_params) {
        sgd_momentum_kernel<<<grid_for(p->numel, 256), 256>>>(p->numel, p->data, p->grad,
                                                               p->momentum, lr, momentum,
                                                               weight_decay);
        KERNEL_CHECK();
      }
      for (Param* p : all_params) {  // zero_grad(set_to_none=True)
        dfree(p->grad);
        p->grad = nullptr;
      }
      L.steps_done++;

      float hloss = 0.f;
      CUDA_CHECK(cudaMemcpy(&hloss, loss, sizeof(float), cudaMemcpyDeviceToHost));
      printf("step %d batch %d loss %.6f\n", step, B, hloss);
      dfree(loss);
      dfree(x);
      dfree(y);
    }

    L.phase = "setup";
    CUDA_CHECK(cudaDeviceSynchronize());
    for (Param* p : all_params) {
      dfree(p->momentum);
      dfree(p->data);
    }
    CUBLAS_CHECK(cublasDestroy(handle));
    ledger_print(kProgram, params);
    return 0;
  } catch (const std::bad_alloc&) {
    printf("out of memory in %s of step %d; stopping\n", L.oom_phase.c_str(), L.oom_step);
    ledger_print(kProgram, params);
    return 3;
  }
}

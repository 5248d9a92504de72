// c16_oom_optimizer_lazy: fp32 training of a 4-layer regression MLP (four 2048x2048 linear
// layers with bias, ReLU between them, MSE loss, batch 128) with AdamW whose state is
// created lazily at the first update, as PyTorch's optimizers do. Set-up allocates the
// weights and their persistent gradient buffers (zeroed with cudaMemsetAsync at the start
// of each step); each step allocates its input batch, targets and layer outputs in the
// forward pass (kept until the step ends), runs the matmuls with cublasSgemm, and uses
// short-lived scratch buffers for the activation gradients and the loss. After the
// forward and backward passes of step 1 the optimizer initialises its state parameter by
// parameter (exp_avg then exp_avg_sq for each, zero-filled) before any update; on the
// device of the capacity below the weights, gradients and activations fit but the moments
// do not: one of the state allocations fails with cudaErrorMemoryAllocation. The program
// catches it, prints its ledger with `oom` filled in (phase "optimizer", step 1) and
// exits with status 3. (cuBLAS's own 32 MiB default workspace also occupies the device
// but is not part of the ledger.) The simulated device does not run kernel bodies, so its
// GEMMs are launched and timed without computing (ANATOMIST_SIM_BLAS_COMPUTE=0).
// corpus-env: ANATOMIST_SIM_MEMORY=254MiB
// corpus-env: ANATOMIST_SIM_BLAS_COMPUTE=0

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

// ----------------------------------------------------------------------------------------
// error checking

#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                \
              cudaGetErrorString(err_));                                                  \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CKB(call)                                                                         \
  do {                                                                                    \
    cublasStatus_t st_ = (call);                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                \
              cublasGetStatusString(st_));                                                \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CK_LAUNCH() CK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// allocation ledger

enum Purpose {
  P_WEIGHTS,
  P_OPTIMIZER,
  P_GRADIENTS,
  P_ACTIVATIONS,
  P_TEMPORARY,
  P_FUNCTIONALITY,
  P_MIXED,
  P_COUNT
};
static const char *kPurposeName[P_COUNT] = {"weights",     "optimizer", "gradients",
                                            "activations", "temporary", "functionality",
                                            "mixed"};

enum Phase { PH_SETUP, PH_STEP_START, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER };
static const char *kPhaseName[] = {"setup", "step_start", "forward", "backward", "optimizer"};

struct Ledger {
  std::map<void *, std::pair<size_t, int>> live;
  long long live_by[P_COUNT] = {0};
  long long live_total = 0;
  long long peak = 0;
  long long peak_by[P_COUNT] = {0};
  Phase phase = PH_SETUP;
  int step = 0;
};
static Ledger g_ledger;

static int g_steps_done = 0;
static int g_forward_passes = 0;
static long long g_params = 0;

static void print_ledger(const char *oom_json) {
  long long sum = 0;
  for (int p = 0; p < P_COUNT; ++p) sum += g_ledger.peak_by[p];
  if (sum != g_ledger.peak) {
    fprintf(stderr, "ledger mismatch\n");
    exit(1);
  }
  fflush(stderr);
  printf("ledger {\"program\":\"c16_oom_optimizer_lazy\",\"kind\":\"training\",\"steps\":%d,"
         "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
         "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"adamw\","
         "\"peak_bytes\":%lld,\"peak_by_purpose\":{",
         g_steps_done, g_forward_passes, g_params, g_ledger.peak);
  for (int p = 0; p < P_COUNT; ++p)
    printf("%s\"%s\":%lld", p ? "," : "", kPurposeName[p], g_ledger.peak_by[p]);
  printf("},\"pools_at_peak\":[],\"oom\":%s}\n", oom_json);
  fflush(stdout);
}

// Out of device memory: report what was live and stop with status 3.
[[noreturn]] static void die_oom(size_t requested, Purpose p, const char *what) {
  fprintf(stderr, "out of memory: %zu bytes for %s (%s, step %d)\n", requested, what,
          kPhaseName[g_ledger.phase], g_ledger.step);
  int dominant = 0;
  for (int q = 1; q < P_COUNT; ++q)
    if (g_ledger.live_by[q] > g_ledger.live_by[dominant]) dominant = q;
  char buf[1024];
  int n = snprintf(buf, sizeof buf,
                   "{\"requested_bytes\":%zu,\"purpose\":\"%s\",\"phase\":\"%s\",\"step\":%d,"
                   "\"live_bytes\":%lld,\"live_by_purpose\":{",
                   requested, kPurposeName[p], kPhaseName[g_ledger.phase], g_ledger.step,
                   g_ledger.live_total);
  for (int q = 0; q < P_COUNT; ++q)
    n += snprintf(buf + n, sizeof buf - n, "%s\"%s\":%lld", q ? "," : "", kPurposeName[q],
                  g_ledger.live_by[q]);
  snprintf(buf + n, sizeof buf - n, "},\"dominant\":\"%s\"}", kPurposeName[dominant]);
  print_ledger(buf);
  exit(3);
}

static void *dalloc(size_t bytes, Purpose p, const char *what) {
  void *ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    die_oom(bytes, p, what);
  }
  CK(err);
  g_ledger.live[ptr] = {bytes, (int)p};
  g_ledger.live_by[p] += (long long)bytes;
  g_ledger.live_total += (long long)bytes;
  if (g_ledger.live_total > g_ledger.peak) {
    g_ledger.peak = g_ledger.live_total;
    memcpy(g_ledger.peak_by, g_ledger.live_by, sizeof(g_ledger.peak_by));
  }
  return ptr;
}

static void dfree(void *ptr) {
  auto it = g_ledger.live.find(ptr);
  if (it == g_ledger.live.end()) {
    fprintf(stderr, "dfree: unknown pointer %p\n", ptr);
    exit(1);
  }
  g_ledger.live_by[it->second.second] -= (long long)it->second.first;
  g_ledger.live_total -= (long long)it->second.first;
  g_ledger.live.erase(it);
  CK(cudaFree(ptr));
}

static float *dalloc_f(size_t count, Purpose p, const char *what) {
  return static_cast<float *>(dalloc(count * sizeof(float), p, what));
}

// ----------------------------------------------------------------------------------------
// kernels (row-major [rows, cols] tensors)

// Y[M,N] += b[N], then optional ReLU
__global__ void bias_act_kernel(float *__restrict__ Y, const float *__restrict__ b, int M, int N,
                                int relu) {
  const long long total = (long long)M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    float v = Y[i] + b[i % N];
    Y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

// loss += sum (y - t)^2 / (M*N)
__global__ void mse_loss_kernel(const float *__restrict__ y, const float *__restrict__ t,
                                long long n, float *__restrict__ loss) {
  __shared__ float red[256];
  float s = 0.0f;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float d = y[i] - t[i];
    s += d * d;
  }
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(loss, red[0] / (float)n);
}

// dy = 2 (y - t) / n
__global__ void mse_grad_kernel(const float *__restrict__ y, const float *__restrict__ t,
                                float *__restrict__ dy, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    dy[i] = 2.0f * (y[i] - t[i]) / (float)n;
}

// dx *= (h > 0)
__global__ void relu_backward_kernel(float *__restrict__ dx, const float *__restrict__ h,
                                     long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    if (h[i] <= 0.0f) dx[i] = 0.0f;
}

// db[N] += sum_m dY[M,N]
__global__ void bias_grad_kernel(const float *__restrict__ dY, float *__restrict__ db, int M,
                                 int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float s = 0.0f;
  for (int m = 0; m < M; ++m) s += dY[(size_t)m * N + n];
  db[n] += s;
}

// decoupled-weight-decay Adam
__global__ void adamw_kernel(float *__restrict__ p, const float *__restrict__ g,
                             float *__restrict__ m, float *__restrict__ v, long long n, float lr,
                             float beta1, float beta2, float eps, float wd, float bc1,
                             float bc2) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float pi = p[i] * (1.0f - lr * wd);
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    pi -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    p[i] = pi;
  }
}

static unsigned blocks_for(long long n) {
  const long long b = (n + 255) / 256;
  return (unsigned)(b < 4096 ? b : 4096);
}

// ----------------------------------------------------------------------------------------
// model

static const int kLayers = 4;
static const int kWidth = 2048;
static const int kBatch = 128;
static const int kSteps = 10;

struct Param {
  const char *name;
  float *data;
  float *grad;
  long long n;
};

struct AdamState {
  float *exp_avg = nullptr;
  float *exp_avg_sq = nullptr;
};

struct AdamW {
  float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
  int t = 0;
  std::vector<AdamState> state;
  cudaStream_t stream = 0;

  void step(std::vector<Param> &params) {
    if (state.empty()) state.resize(params.size());
    // lazy state initialisation, one parameter at a time, before any update
    for (size_t i = 0; i < params.size(); ++i) {
      AdamState &s = state[i];
      if (s.exp_avg) continue;
      const size_t bytes = params[i].n * sizeof(float);
      s.exp_avg = static_cast<float *>(dalloc(bytes, P_OPTIMIZER, "exp_avg"));
      CK(cudaMemsetAsync(s.exp_avg, 0, bytes, stream));
      s.exp_avg_sq = static_cast<float *>(dalloc(bytes, P_OPTIMIZER, "exp_avg_sq"));
      CK(cudaMemsetAsync(s.exp_avg_sq, 0, bytes, stream));
    }
    ++t;
    const float bc1 = 1.0f - powf(beta1, (float)t);
    const float bc2 = 1.0f - powf(beta2, (float)t);
    for (size_t i = 0; i < params.size(); ++i) {
      adamw_kernel<<<blocks_for(params[i].n), 256, 0, stream>>>(
          params[i].data, params[i].grad, state[i].exp_avg, state[i].exp_avg_sq, params[i].n,
          lr, beta1, beta2, eps, weight_decay, bc1, bc2);
      CK_LAUNCH();
    }
  }

  void release() {
    for (AdamState &s : state) {
      if (s.exp_avg) dfree(s.exp_avg);
      if (s.exp_avg_sq) dfree(s.exp_avg_sq);
      s = AdamState();
    }
  }
};

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static inline uint32_t rng_u32() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 32);
}
static inline float rng_sym() { return (rng_u32() >> 8) * (2.0f / 16777216.0f) - 1.0f; }

int main() {
  CK(cudaSetDevice(0));
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  CKB(cublasCreate(&blas));
  CKB(cublasSetStream(blas, stream));

  // ---- set-up: weights (PyTorch nn.Linear init) and persistent gradients
  g_ledger.phase = PH_SETUP;
  float *W[kLayers], *b[kLayers], *dW[kLayers], *db[kLayers];
  const size_t nw = (size_t)kWidth * kWidth;
  {
    std::vector<float> hw(nw), hb(kWidth);
    const float bound = 1.0f / sqrtf((float)kWidth);
    for (int l = 0; l < kLayers; ++l) {
      W[l] = dalloc_f(nw, P_WEIGHTS, "weight");
      b[l] = dalloc_f(kWidth, P_WEIGHTS, "bias");
      for (size_t i = 0; i < nw; ++i) hw[i] = bound * rng_sym();
      for (int i = 0; i < kWidth; ++i) hb[i] = bound * rng_sym();
      CK(cudaMemcpy(W[l], hw.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(b[l], hb.data(), kWidth * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    dW[l] = dalloc_f(nw, P_GRADIENTS, "weight grad");
    db[l] = dalloc_f(kWidth, P_GRADIENTS, "bias grad");
  }
  std::vector<Param> params;
  for (int l = 0; l < kLayers; ++l) {
    params.push_back({"weight", W[l], dW[l], (long long)nw});
    params.push_back({"bias", b[l], db[l], (long long)kWidth});
  }
  for (const Param &p : params) g_params += p.n;

  AdamW opt;
  opt.stream = stream;

  // a fixed random "teacher" map gives the regression targets: t = tanh(x A) with A sparse
  std::vector<float> hx((size_t)kBatch * kWidth), ht((size_t)kBatch * kWidth);
  const float one = 1.0f, zero = 0.0f;
  const long long act_n = (long long)kBatch * kWidth;

  for (int step = 1; step <= kSteps; ++step) {
    g_ledger.step = step;
    g_ledger.phase = PH_STEP_START;
    for (int l = 0; l < kLayers; ++l) {  // optimizer.zero_grad()
      CK(cudaMemsetAsync(dW[l], 0, nw * sizeof(float), stream));
      CK(cudaMemsetAsync(db[l], 0, kWidth * sizeof(float), stream));
    }

    // ---- forward
    g_ledger.phase = PH_FORWARD;
    for (int r = 0; r < kBatch; ++r) {
      float *xr = &hx[(size_t)r * kWidth];
      for (int j = 0; j < kWidth; ++j) xr[j] = rng_sym();
      for (int j = 0; j < kWidth; ++j)
        ht[(size_t)r * kWidth + j] =
            tanhf(xr[j] - 0.5f * xr[(j * 7 + 3) % kWidth] + 0.25f * xr[(j * 13 + 5) % kWidth]);
    }
    float *x = dalloc_f(act_n, P_ACTIVATIONS, "input batch");
    float *target = dalloc_f(act_n, P_ACTIVATIONS, "targets");
    CK(cudaMemcpyAsync(x, hx.data(), act_n * sizeof(float), cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(target, ht.data(), act_n * sizeof(float), cudaMemcpyHostToDevice,
                       stream));

    float *h[kLayers + 1];  // h[0] = x, h[l+1] = output of layer l
    h[0] = x;
    for (int l = 0; l < kLayers; ++l) {
      h[l + 1] = dalloc_f(act_n, P_ACTIVATIONS, "layer output");
      // row-major Y[B,out] = X[B,in] W[out,in]^T  <=>  column-major Y^T = W^T' X^T
      CKB(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one, W[l], kWidth,
                      h[l], kWidth, &zero, h[l + 1], kWidth));
      bias_act_kernel<<<blocks_for(act_n), 256, 0, stream>>>(h[l + 1], b[l], kBatch, kWidth,
                                                             l < kLayers - 1);
      CK_LAUNCH();
    }
    float *loss = dalloc_f(1, P_TEMPORARY, "loss");
    CK(cudaMemsetAsync(loss, 0, sizeof(float), stream));
    mse_loss_kernel<<<256, 256, 0, stream>>>(h[kLayers], target, act_n, loss);
    CK_LAUNCH();
    float loss_h = 0.0f;
    CK(cudaMemcpyAsync(&loss_h, loss, sizeof(float), cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    dfree(loss);
    ++g_forward_passes;

    // ---- backward
    g_ledger.phase = PH_BACKWARD;
    float *dy = dalloc_f(act_n, P_TEMPORARY, "grad of output");
    mse_grad_kernel<<<blocks_for(act_n), 256, 0, stream>>>(h[kLayers], target, dy, act_n);
    CK_LAUNCH();
    for (int l = kLayers - 1; l >= 0; --l) {
      // dW[out,in] += dY^T X  <=>  column-major dW^T += X^T' dY
      CKB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, kWidth, kWidth, kBatch, &one, h[l], kWidth,
                      dy, kWidth, &one, dW[l], kWidth));
      bias_grad_kernel<<<(kWidth + 255) / 256, 256, 0, stream>>>(dy, db[l], kBatch, kWidth);
      CK_LAUNCH();
      if (l > 0) {
        float *dx = dalloc_f(act_n, P_TEMPORARY, "grad of hidden");
        // dX[B,in] = dY[B,out] W[out,in]
        CKB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kWidth, kBatch, kWidth, &one, W[l],
                        kWidth, dy, kWidth, &zero, dx, kWidth));
        relu_backward_kernel<<<blocks_for(act_n), 256, 0, stream>>>(dx, h[l], act_n);
        CK_LAUNCH();
        dfree(dy);
        dy = dx;
      }
    }
    dfree(dy);

    // ---- optimizer (state created here on the first step)
    g_ledger.phase = PH_OPTIMIZER;
    opt.step(params);
    CK(cudaStreamSynchronize(stream));
    ++g_steps_done;
    printf("step %d loss %.6f\n", step, loss_h);

    // end of step: release the step's activations
    for (int l = 0; l <= kLayers; ++l) dfree(h[l]);
    dfree(target);
  }

  opt.release();
  for (int l = 0; l < kLayers; ++l) {
    dfree(dW[l]);
    dfree(db[l]);
    dfree(W[l]);
    dfree(b[l]);
  }
  CKB(cublasDestroy(blas));
  CK(cudaStreamDestroy(stream));
  print_ledger("null");
  return 0;
}

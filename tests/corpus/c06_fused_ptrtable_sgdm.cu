// c06_fused_ptrtable_sgdm: fp32 training of a 5-layer MLP classifier (768 input features,
// four hidden layers of width 768 with ReLU, 1000 classes, batch 192) for 6 steps of SGD
// with momentum (lr 0.05, momentum 0.9, weight decay 1e-4). Every kernel is hand-written
// and carries an opaque name (fused_1, fused_2, ...): tiled shared-memory GEMMs for the
// linear layers and their weight/input gradients, a row softmax + cross-entropy, bias
// reductions, a zero-fill. Parameters, their gradients and their momentum buffers are
// separate per-tensor cudaMalloc allocations made at set-up (momentum zeroed before the
// first step). The optimizer is ONE fused kernel per step that walks a table of
// {param, grad, momentum, count} records kept in device memory; the table is built on the
// host and uploaded once with cudaMemcpy before training. Each step zeroes the persistent
// gradients with the zero-fill kernel (no memset), uploads the batch into freshly
// allocated input/label buffers, allocates each layer's output in the forward pass and
// frees it in the backward pass once its gradients have been computed; gradients with
// respect to activations and the loss scalar are short-lived scratch buffers.

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

#define CK_LAUNCH() CK(cudaGetLastError())

// ----------------------------------------------------------------------------------------
// allocation ledger: every device allocation goes through dalloc/dfree

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

struct Ledger {
  std::map<void *, std::pair<size_t, int>> live;
  long long live_by[P_COUNT] = {0};
  long long live_total = 0;
  long long peak = 0;
  long long peak_by[P_COUNT] = {0};
};
static Ledger g_ledger;

static void *dalloc(size_t bytes, Purpose p) {
  void *ptr = nullptr;
  CK(cudaMalloc(&ptr, bytes));
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

template <class T>
static T *dalloc_n(size_t count, Purpose p) {
  return static_cast<T *>(dalloc(count * sizeof(T), p));
}

// ----------------------------------------------------------------------------------------
// kernels

#define TILE 16

// zero-fill
__global__ void fused_1(float *__restrict__ p, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    p[i] = 0.0f;
}

// Y[M,N] = X[M,K] * W[N,K]^T + b[N], optional ReLU
__global__ void fused_2(const float *__restrict__ X, const float *__restrict__ W,
                        const float *__restrict__ b, float *__restrict__ Y, int M, int N, int K,
                        int relu) {
  __shared__ float xs[TILE][TILE + 1];
  __shared__ float ws[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;   // m
  const int col = blockIdx.x * TILE + tx;   // n
  const int wrow = blockIdx.x * TILE + ty;  // n, for loading W
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int k = k0 + tx;
    xs[ty][tx] = (row < M && k < K) ? X[(size_t)row * K + k] : 0.0f;
    ws[ty][tx] = (wrow < N && k < K) ? W[(size_t)wrow * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += xs[ty][kk] * ws[tx][kk];
    __syncthreads();
  }
  if (row < M && col < N) {
    float v = acc + b[col];
    if (relu) v = fmaxf(v, 0.0f);
    Y[(size_t)row * N + col] = v;
  }
}

// in-place row softmax over logits[M,N]; loss += -log p[label] / M
__global__ void fused_3(float *__restrict__ logits, const int *__restrict__ labels, int M, int N,
                        float *__restrict__ loss) {
  __shared__ float red[256];
  const int m = blockIdx.x;
  if (m >= M) return;
  float *row = logits + (size_t)m * N;
  float mx = -INFINITY;
  for (int n = threadIdx.x; n < N; n += blockDim.x) mx = fmaxf(mx, row[n]);
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int n = threadIdx.x; n < N; n += blockDim.x) {
    float e = __expf(row[n] - mx);
    row[n] = e;
    sum += e;
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  for (int n = threadIdx.x; n < N; n += blockDim.x) row[n] *= inv;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(loss, -logf(fmaxf(row[labels[m]], 1e-30f)) / (float)M);
}

// dlogits[M,N] = (probs - onehot(label)) / M
__global__ void fused_4(const float *__restrict__ probs, const int *__restrict__ labels,
                        float *__restrict__ dlogits, int M, int N) {
  const long long total = (long long)M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const int m = (int)(i / N), n = (int)(i % N);
    dlogits[i] = (probs[i] - (n == labels[m] ? 1.0f : 0.0f)) / (float)M;
  }
}

// dW[N,K] += dY[M,N]^T * X[M,K]
__global__ void fused_5(const float *__restrict__ dY, const float *__restrict__ X,
                        float *__restrict__ dW, int M, int N, int K) {
  __shared__ float ds[TILE][TILE + 1];  // [n][m]
  __shared__ float xs[TILE][TILE + 1];  // [m][k]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int n = blockIdx.y * TILE + ty;
  const int k = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int m0 = 0; m0 < M; m0 += TILE) {
    ds[ty][tx] = (n < N && m0 + tx < M) ? dY[(size_t)(m0 + tx) * N + n] : 0.0f;
    xs[ty][tx] = (m0 + ty < M && k < K) ? X[(size_t)(m0 + ty) * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int mm = 0; mm < TILE; ++mm) acc += ds[ty][mm] * xs[mm][tx];
    __syncthreads();
  }
  if (n < N && k < K) dW[(size_t)n * K + k] += acc;
}

// db[N] += sum_m dY[M,N]
__global__ void fused_6(const float *__restrict__ dY, float *__restrict__ db, int M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float s = 0.0f;
  for (int m = 0; m < M; ++m) s += dY[(size_t)m * N + n];
  db[n] += s;
}

// dX[M,K] = (dY[M,N] * W[N,K]) masked by H[M,K] > 0 (ReLU of the layer input)
__global__ void fused_7(const float *__restrict__ dY, const float *__restrict__ W,
                        const float *__restrict__ H, float *__restrict__ dX, int M, int N,
                        int K) {
  __shared__ float ds[TILE][TILE + 1];  // [m][n]
  __shared__ float ws[TILE][TILE + 1];  // [n][k]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m = blockIdx.y * TILE + ty;
  const int k = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int n0 = 0; n0 < N; n0 += TILE) {
    ds[ty][tx] = (m < M && n0 + tx < N) ? dY[(size_t)m * N + n0 + tx] : 0.0f;
    ws[ty][tx] = (n0 + ty < N && k < K) ? W[(size_t)(n0 + ty) * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int nn = 0; nn < TILE; ++nn) acc += ds[ty][nn] * ws[nn][tx];
    __syncthreads();
  }
  if (m < M && k < K) dX[(size_t)m * K + k] = H[(size_t)m * K + k] > 0.0f ? acc : 0.0f;
}

// one record per parameter tensor
struct ParamRec {
  float *param;
  const float *grad;
  float *mom;
  long long n;
};

// SGD with momentum over every tensor of the table (blockIdx.y = tensor)
__global__ void fused_8(const ParamRec *__restrict__ table, int ntensors, float lr,
                        float momentum, float weight_decay) {
  if ((int)blockIdx.y >= ntensors) return;
  const ParamRec r = table[blockIdx.y];
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < r.n;
       i += (long long)gridDim.x * blockDim.x) {
    const float p = r.param[i];
    const float g = r.grad[i] + weight_decay * p;
    const float v = momentum * r.mom[i] + g;
    r.mom[i] = v;
    r.param[i] = p - lr * v;
  }
}

// ----------------------------------------------------------------------------------------
// host side

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t rng_u32() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 32);
}
static inline float rng_uniform() { return (rng_u32() >> 8) * (1.0f / 16777216.0f); }

static const int kLayers = 5;
static const int kDims[kLayers + 1] = {768, 768, 768, 768, 768, 1000};
static const int kBatch = 192;
static const int kSteps = 6;

static dim3 gemm_grid(int rows, int cols) {
  return dim3((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
}

static unsigned zero_blocks(long long n) {
  const long long blocks = (n + 255) / 256;
  return (unsigned)(blocks < 1024 ? blocks : 1024);
}

int main() {
  CK(cudaSetDevice(0));
  const int in_dim = kDims[0], n_classes = kDims[kLayers];

  // ---- set-up: parameters, gradients, momentum
  float *W[kLayers], *b[kLayers], *dW[kLayers], *db[kLayers], *mW[kLayers], *mb[kLayers];
  long long n_params = 0;
  for (int l = 0; l < kLayers; ++l) {
    const int fan_in = kDims[l], fan_out = kDims[l + 1];
    const size_t nw = (size_t)fan_out * fan_in;
    W[l] = dalloc_n<float>(nw, P_WEIGHTS);
    b[l] = dalloc_n<float>(fan_out, P_WEIGHTS);
    n_params += (long long)nw + fan_out;

    std::vector<float> hw(nw), hb(fan_out, 0.0f);
    const float bound = sqrtf(6.0f / fan_in);  // Kaiming-uniform for ReLU
    for (size_t i = 0; i < nw; ++i) hw[i] = (2.0f * rng_uniform() - 1.0f) * bound;
    CK(cudaMemcpy(W[l], hw.data(), nw * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b[l], hb.data(), fan_out * sizeof(float), cudaMemcpyHostToDevice));
  }
  for (int l = 0; l < kLayers; ++l) {
    const size_t nw = (size_t)kDims[l + 1] * kDims[l];
    dW[l] = dalloc_n<float>(nw, P_GRADIENTS);
    db[l] = dalloc_n<float>(kDims[l + 1], P_GRADIENTS);
  }
  for (int l = 0; l < kLayers; ++l) {
    const size_t nw = (size_t)kDims[l + 1] * kDims[l];
    mW[l] = dalloc_n<float>(nw, P_OPTIMIZER);
    mb[l] = dalloc_n<float>(kDims[l + 1], P_OPTIMIZER);
    CK(cudaMemset(mW[l], 0, nw * sizeof(float)));
    CK(cudaMemset(mb[l], 0, kDims[l + 1] * sizeof(float)));
  }

  // ---- the optimizer's pointer table, uploaded once
  const int n_tensors = 2 * kLayers;
  std::vector<ParamRec> htable;
  for (int l = 0; l < kLayers; ++l) {
    htable.push_back({W[l], dW[l], mW[l], (long long)kDims[l + 1] * kDims[l]});
    htable.push_back({b[l], db[l], mb[l], (long long)kDims[l + 1]});
  }
  ParamRec *dtable = dalloc_n<ParamRec>(n_tensors, P_FUNCTIONALITY);
  CK(cudaMemcpy(dtable, htable.data(), n_tensors * sizeof(ParamRec), cudaMemcpyHostToDevice));

  // ---- a fixed synthetic data set: class-dependent means plus noise
  const int n_samples = kBatch * kSteps;
  std::vector<float> data((size_t)n_samples * in_dim);
  std::vector<int> targets(n_samples);
  for (int s = 0; s < n_samples; ++s) {
    const int c = (int)(rng_u32() % n_classes);
    targets[s] = c;
    for (int j = 0; j < in_dim; ++j)
      data[(size_t)s * in_dim + j] =
          ((j * 131 + c * 17) % 97) / 97.0f - 0.5f + 0.25f * (2.0f * rng_uniform() - 1.0f);
  }

  const float lr = 0.05f, momentum = 0.9f, weight_decay = 1e-4f;
  int forward_passes = 0, steps_done = 0;

  for (int step = 1; step <= kSteps; ++step) {
    // zero the persistent gradients
    for (int l = 0; l < kLayers; ++l) {
      const long long nw = (long long)kDims[l + 1] * kDims[l];
      fused_1<<<zero_blocks(nw), 256>>>(dW[l], nw);
      CK_LAUNCH();
      fused_1<<<zero_blocks(kDims[l + 1]), 256>>>(db[l], kDims[l + 1]);
      CK_LAUNCH();
    }

    // ---- forward
    const size_t off = (size_t)(step - 1) * kBatch;
    float *x = dalloc_n<float>((size_t)kBatch * in_dim, P_ACTIVATIONS);
    int *labels = dalloc_n<int>(kBatch, P_ACTIVATIONS);
    CK(cudaMemcpy(x, data.data() + off * in_dim, (size_t)kBatch * in_dim * sizeof(float),
                  cudaMemcpyHostToDevice));
    CK(cudaMemcpy(labels, targets.data() + off, kBatch * sizeof(int), cudaMemcpyHostToDevice));

    float *h[kLayers + 1];  // h[0] = input, h[l+1] = output of layer l
    h[0] = x;
    for (int l = 0; l < kLayers; ++l) {
      const int K = kDims[l], N = kDims[l + 1];
      h[l + 1] = dalloc_n<float>((size_t)kBatch * N, P_ACTIVATIONS);
      fused_2<<<gemm_grid(kBatch, N), dim3(TILE, TILE)>>>(h[l], W[l], b[l], h[l + 1], kBatch, N,
                                                          K, l < kLayers - 1);
      CK_LAUNCH();
    }
    float *loss = dalloc_n<float>(1, P_TEMPORARY);
    CK(cudaMemset(loss, 0, sizeof(float)));
    fused_3<<<kBatch, 256>>>(h[kLayers], labels, kBatch, n_classes, loss);  // h[5] -> probs
    CK_LAUNCH();
    float loss_h = 0.0f;
    CK(cudaMemcpy(&loss_h, loss, sizeof(float), cudaMemcpyDeviceToHost));
    dfree(loss);
    ++forward_passes;

    // ---- backward
    float *dy = dalloc_n<float>((size_t)kBatch * n_classes, P_TEMPORARY);
    fused_4<<<(kBatch * n_classes + 255) / 256, 256>>>(h[kLayers], labels, dy, kBatch, n_classes);
    CK_LAUNCH();
    dfree(h[kLayers]);
    dfree(labels);
    for (int l = kLayers - 1; l >= 0; --l) {
      const int K = kDims[l], N = kDims[l + 1];
      fused_5<<<gemm_grid(N, K), dim3(TILE, TILE)>>>(dy, h[l], dW[l], kBatch, N, K);
      CK_LAUNCH();
      fused_6<<<(N + 255) / 256, 256>>>(dy, db[l], kBatch, N);
      CK_LAUNCH();
      if (l > 0) {
        float *dx = dalloc_n<float>((size_t)kBatch * K, P_TEMPORARY);
        fused_7<<<gemm_grid(kBatch, K), dim3(TILE, TILE)>>>(dy, W[l], h[l], dx, kBatch, N, K);
        CK_LAUNCH();
        dfree(dy);
        dy = dx;
      } else {
        dfree(dy);
        dy = nullptr;
      }
      dfree(h[l]);
    }

    // ---- optimizer: one fused launch over the table
    fused_8<<<dim3(120, n_tensors), 256>>>(dtable, n_tensors, lr, momentum, weight_decay);
    CK_LAUNCH();
    CK(cudaDeviceSynchronize());
    ++steps_done;
    printf("step %d loss %.4f\n", step, loss_h);
  }

  // ---- tear-down
  dfree(dtable);
  for (int l = 0; l < kLayers; ++l) {
    dfree(mW[l]);
    dfree(mb[l]);
    dfree(dW[l]);
    dfree(db[l]);
    dfree(W[l]);
    dfree(b[l]);
  }

  // ---- ledger
  long long sum = 0;
  for (int p = 0; p < P_COUNT; ++p) sum += g_ledger.peak_by[p];
  if (sum != g_ledger.peak) {
    fprintf(stderr, "ledger mismatch\n");
    return 1;
  }
  fflush(stderr);
  printf("ledger {\"program\":\"c06_fused_ptrtable_sgdm\",\"kind\":\"training\",\"steps\":%d,"
         "\"micro_batches_per_step\":1,\"forward_passes\":%d,\"params\":%lld,"
         "\"param_dtype\":\"fp32\",\"master_weights\":false,\"optimizer\":\"sgd_momentum\","
         "\"peak_bytes\":%lld,\"peak_by_purpose\":{",
         steps_done, forward_passes, n_params, g_ledger.peak);
  for (int p = 0; p < P_COUNT; ++p)
    printf("%s\"%s\":%lld", p ? "," : "", kPurposeName[p], g_ledger.peak_by[p]);
  printf("},\"pools_at_peak\":[],\"oom\":null}\n");
  fflush(stdout);
  return 0;
}

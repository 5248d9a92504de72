// driver_launch — kernels launched past the profiler's launch hooks, as Triton and
// libraries with a statically linked CUDA runtime (NCCL) launch them, next to ordinary
// launches for comparison:
//
//   driver   cuLaunchKernel, cuLaunchKernel_ptsz and cuLaunchKernelEx, found with
//            dlopen("libcuda.so.1") + dlsym (libcuda is never linked), on a CUfunction from
//            cudaGetFuncBySymbol or a CUkernel from cudaGetKernel;
//   runtime  the runtime's own cudaLaunchKernel, read from the dynamic symbol table of the
//            already loaded libcudart.so.13 (dlopen RTLD_NOLOAD + dlinfo): the function
//            itself, not one a preloaded library interposes — the same call a statically
//            linked runtime makes. (dlsym on the runtime's handle would not do: a profiler
//            that interposes dlsym may hand out its own cudaLaunchKernel there, as
//            Anatomist does so that ctypes' calls are seen);
//   stub     <<<...>>> (nvcc's stub, __cudaLaunchKernel).
//
// Every launch goes into the ledger (path, entry point, kernel, grid, block, which stream,
// the stream handle, the return code), printed as JSON on the last stdout line; a test
// compares the profiler's records with it. The ledger also says whether the runtime
// lookup bypassed an interposed cudaLaunchKernel (its pointer differs from the one
// dlsym(RTLD_DEFAULT) finds), and whether the driver's failures left the runtime's last
// error alone (they must: the driver has no last error).
//
//   driver_launch [--errors] [--check]
//
// --errors adds launches that must fail: a foreign pointer and a host stub as CUfunction
// (CUDA_ERROR_INVALID_HANDLE), a block of 2048 threads (CUDA_ERROR_INVALID_VALUE from the
// driver, cudaErrorInvalidConfiguration from the runtime), kernelParams and extra together
// (CUDA_ERROR_INVALID_VALUE). NVIDIA's driver does not promise to survive a foreign
// pointer: use it on the simulated device. --check copies the results back and verifies
// them (meaningful on a real GPU only: the simulated device does not execute kernels).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sample_common.h"

static const int N = 1 << 16;             // elements of the vectors
static const int ROWS = 64, COLS = 96;    // the matrix
static const float A = 2.0f, S = 0.5f;    // every launch uses the same constants
#define MAX_LAUNCHES 32

// ---------------------------------------------------------------- kernels
// Each writes a result that depends only on its arguments (grid-stride loops), so any
// grid gives the same memory and --check holds after any number of launches.

extern "C" __global__ void axpy_set(float *y, const float *x, float a, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i];
}

extern "C" __global__ void fill_iota(int *out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = i;
}

extern "C" __global__ void scale_rows(float *m, int rows, int cols, float s)
{
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
            m[r * cols + c] = s * (float)(r + c);
}

// ---------------------------------------------------------------- the ledger
enum stream_kind { DEFAULT_STREAM, CREATED_STREAM, PER_THREAD_STREAM };
static const char *const STREAM_NAMES[] = { "default", "created", "per_thread" };

static struct {
    struct {
        const char *path, *api, *kernel;
        const char *fault;       // what is wrong with a launch that must fail, else ""
        dim3 grid, block;
        enum stream_kind stream;
        uintptr_t handle;
        int ret;
    } launches[MAX_LAUNCHES];
    int n;
    int bypass;                  // the runtime's own cudaLaunchKernel is not the interposed one
    int driver_errors_set_last;  // a failed driver launch changed cudaPeekAtLastError
} ledger;

static void note_fault(const char *path, const char *api, const char *kernel, const char *fault,
                       dim3 g, dim3 b, enum stream_kind sk, cudaStream_t s, int ret)
{
    if (ledger.n == MAX_LAUNCHES)
        fatal("driver_launch: too many launches for the ledger");
    ledger.launches[ledger.n++] = { path, api, kernel, fault, g, b, sk, (uintptr_t)s, ret };
}

static void note(const char *path, const char *api, const char *kernel, dim3 g, dim3 b,
                 enum stream_kind sk, cudaStream_t s, int ret)
{
    note_fault(path, api, kernel, "", g, b, sk, s, ret);
}

static void print_ledger(void)
{
    printf("ledger {\"bypass\":%s,\"driver_errors_set_last_error\":%s,\"launches\":[",
           ledger.bypass ? "true" : "false", ledger.driver_errors_set_last ? "true" : "false");
    for (int i = 0; i < ledger.n; i++) {
        const auto &l = ledger.launches[i];
        printf("%s{\"path\":\"%s\",\"api\":\"%s\",\"kernel\":\"%s\",\"fault\":\"%s\","
               "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"stream\":\"%s\","
               "\"stream_handle\":%llu,\"ret\":%d}",
               i ? "," : "", l.path, l.api, l.kernel, l.fault, l.grid.x, l.grid.y, l.grid.z,
               l.block.x, l.block.y, l.block.z, STREAM_NAMES[l.stream],
               (unsigned long long)l.handle, l.ret);
    }
    printf("]}\n");
}

// ---------------------------------------------------------------- entry points
typedef decltype(&cuLaunchKernel) launch_fn;
typedef decltype(&cuLaunchKernelEx) launch_ex_fn;
static struct {
    decltype(&cuInit) init;
    launch_fn launch, launch_ptsz;
    launch_ex_fn launch_ex;
    decltype(&cuFuncGetName) func_get_name;
} drv;
typedef cudaError_t (*rt_launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
static rt_launch_fn rt_launch;  // the C entry point (cuda_runtime.h adds a template too)

static void *must_dlsym(void *lib, const char *what, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fatal("driver_launch: dlsym(%s, %s): %s", what, name, dlerror());
    return p;
}

// The default-version definition of function `name` in the dynamic symbol table of the
// module `handle` opened, found through its GNU hash table: what the module itself
// defines, whatever dlsym would answer.
static void *own_symbol(void *handle, const char *name)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return NULL;
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const uint32_t *hash = NULL;
    const ElfW(Versym) *ver = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        // The loader relocates these addresses on x86-64 and aarch64.
        if (d->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)d->d_un.d_ptr;
        if (d->d_tag == DT_STRTAB) str = (const char *)d->d_un.d_ptr;
        if (d->d_tag == DT_GNU_HASH) hash = (const uint32_t *)d->d_un.d_ptr;
        if (d->d_tag == DT_VERSYM) ver = (const ElfW(Versym) *)d->d_un.d_ptr;
    }
    if (!sym || !str || !hash || hash[0] == 0)
        return NULL;
    uint32_t h = 5381;
    for (const char *c = name; *c; c++)
        h = h * 33 + (unsigned char)*c;
    const uint32_t nbuckets = hash[0], symoffset = hash[1], bloom_words = hash[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(hash + 4) + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
        uint32_t ch = chain[i - symoffset];
        if ((ch | 1) == (h | 1) && sym[i].st_shndx != SHN_UNDEF && !(ver && (ver[i] & 0x8000)) &&
            strcmp(str + sym[i].st_name, name) == 0)
            return (void *)(lm->l_addr + sym[i].st_value);
        if (ch & 1)
            break;
    }
    return NULL;
}

static void resolve(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
        fatal("driver_launch: dlopen(libcuda.so.1): %s", dlerror());
    drv.init = (decltype(drv.init))must_dlsym(cuda, "libcuda", "cuInit");
    drv.launch = (launch_fn)must_dlsym(cuda, "libcuda", "cuLaunchKernel");
    drv.launch_ptsz = (launch_fn)must_dlsym(cuda, "libcuda", "cuLaunchKernel_ptsz");
    drv.launch_ex = (launch_ex_fn)must_dlsym(cuda, "libcuda", "cuLaunchKernelEx");
    drv.func_get_name = (decltype(drv.func_get_name))must_dlsym(cuda, "libcuda", "cuFuncGetName");
    void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!cudart)
        fatal("driver_launch: libcudart.so.13 is not loaded: %s", dlerror());
    rt_launch = (rt_launch_fn)own_symbol(cudart, "cudaLaunchKernel");
    if (!rt_launch)
        fatal("driver_launch: no cudaLaunchKernel in libcudart.so.13's symbol table");
    ledger.bypass = (void *)rt_launch != dlsym(RTLD_DEFAULT, "cudaLaunchKernel");
}

#define CU_CHECK(call)                                                                   \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS)                                                          \
            fatal("%s:%d: %s failed: CUresult %d", __FILE__, __LINE__, #call, (int)r_); \
    } while (0)

// A CUfunction for a kernel, whose name the driver must know.
static CUfunction function_of(const void *kernel, const char *name)
{
    cudaFunction_t f;
    CUDA_CHECK(cudaGetFuncBySymbol(&f, kernel));
    const char *got = NULL;
    CU_CHECK(drv.func_get_name(&got, (CUfunction)f));
    if (!got || strcmp(got, name) != 0)
        fatal("driver_launch: cuFuncGetName gives \"%s\" for %s", got ? got : "(null)", name);
    return (CUfunction)f;
}

// ---------------------------------------------------------------- the launches
struct buffers {
    float *x, *y, *m;
    int *iota;
    cudaStream_t s;
};

static void stub_launches(const buffers &b)
{
    dim3 g1(64), b1(256), g2(17), b2(96), g3(4, 3), b3(16, 8);
    axpy_set<<<g1, b1>>>(b.y, b.x, A, N);
    CUDA_CHECK(cudaGetLastError());
    note("stub", "<<<>>>", "axpy_set", g1, b1, DEFAULT_STREAM, 0, 0);
    fill_iota<<<g2, b2>>>(b.iota, N);
    CUDA_CHECK(cudaGetLastError());
    note("stub", "<<<>>>", "fill_iota", g2, b2, DEFAULT_STREAM, 0, 0);
    scale_rows<<<g3, b3, 0, b.s>>>(b.m, ROWS, COLS, S);
    CUDA_CHECK(cudaGetLastError());
    note("stub", "<<<>>>", "scale_rows", g3, b3, CREATED_STREAM, b.s, 0);
}

static void runtime_launches(const buffers &b)
{
    float *y = b.y, *m = b.m;
    const float *x = b.x;
    int *iota = b.iota, n = N, rows = ROWS, cols = COLS;
    float a = A, s = S;
    void *axpy_args[] = { &y, &x, &a, &n };
    void *iota_args[] = { &iota, &n };
    void *rows_args[] = { &m, &rows, &cols, &s };
    dim3 g1(128), b1(128), g2(9), b2(512), g3(6, 2, 1), b3(32, 4, 2);
    CUDA_CHECK(rt_launch((const void *)axpy_set, g1, b1, axpy_args, 0, 0));
    note("runtime", "cudaLaunchKernel", "axpy_set", g1, b1, DEFAULT_STREAM, 0, 0);
    CUDA_CHECK(rt_launch((const void *)fill_iota, g2, b2, iota_args, 0, b.s));
    note("runtime", "cudaLaunchKernel", "fill_iota", g2, b2, CREATED_STREAM, b.s, 0);
    CUDA_CHECK(rt_launch((const void *)scale_rows, g3, b3, rows_args, 0, 0));
    note("runtime", "cudaLaunchKernel", "scale_rows", g3, b3, DEFAULT_STREAM, 0, 0);
}

static void driver_launches(const buffers &b)
{
    CU_CHECK(drv.init(0));
    CUfunction axpy = function_of((const void *)axpy_set, "axpy_set");
    CUfunction iota_fn = function_of((const void *)fill_iota, "fill_iota");
    CUfunction rows_fn = function_of((const void *)scale_rows, "scale_rows");
    cudaKernel_t rows_kernel;  // a CUkernel: cuLaunchKernel takes one as well
    CUDA_CHECK(cudaGetKernel(&rows_kernel, (const void *)scale_rows));

    float *y = b.y, *m = b.m;
    const float *x = b.x;
    int *iota = b.iota, n = N, rows = ROWS, cols = COLS;
    float a = A, s = S;
    void *axpy_args[] = { &y, &x, &a, &n };
    void *iota_args[] = { &iota, &n };
    void *rows_args[] = { &m, &rows, &cols, &s };
    CUstream cs = (CUstream)b.s;

    dim3 g1(32), b1(64);
    CU_CHECK(drv.launch(axpy, g1.x, g1.y, g1.z, b1.x, b1.y, b1.z, 0, 0, axpy_args, NULL));
    note("driver", "cuLaunchKernel", "axpy_set", g1, b1, DEFAULT_STREAM, 0, 0);
    dim3 g2(3, 5), b2(32, 8);
    CU_CHECK(drv.launch(rows_fn, g2.x, g2.y, g2.z, b2.x, b2.y, b2.z, 0, cs, rows_args, NULL));
    note("driver", "cuLaunchKernel", "scale_rows", g2, b2, CREATED_STREAM, b.s, 0);
    dim3 g3(2, 2, 2), b3(8, 8, 4);
    CU_CHECK(drv.launch((CUfunction)(void *)rows_kernel, g3.x, g3.y, g3.z, b3.x, b3.y, b3.z, 0, 0,
                        rows_args, NULL));
    note("driver", "cuLaunchKernel", "scale_rows", g3, b3, DEFAULT_STREAM, 0, 0);
    dim3 g4(40), b4(160);
    CU_CHECK(drv.launch_ptsz(iota_fn, g4.x, g4.y, g4.z, b4.x, b4.y, b4.z, 0, 0, iota_args, NULL));
    note("driver", "cuLaunchKernel_ptsz", "fill_iota", g4, b4, PER_THREAD_STREAM, 0, 0);
    dim3 g5(11), b5(352);
    CUlaunchConfig cfg = { g5.x, g5.y, g5.z, b5.x, b5.y, b5.z, 0, 0, NULL, 0 };
    CU_CHECK(drv.launch_ex(&cfg, axpy, axpy_args, NULL));
    note("driver", "cuLaunchKernelEx", "axpy_set", g5, b5, DEFAULT_STREAM, 0, 0);
}

// Launches that must fail; each is in the ledger with the code it got.
static void error_launches(const buffers &b)
{
    CUfunction axpy = function_of((const void *)axpy_set, "axpy_set");
    float *y = b.y;
    const float *x = b.x;
    int n = N;
    float a = A;
    void *axpy_args[] = { &y, &x, &a, &n };
    static int not_a_function;
    dim3 g(8), ok(64), big(2048);
    void *extra[] = { CU_LAUNCH_PARAM_END };
    CUresult r = drv.launch((CUfunction)(void *)&not_a_function, g.x, 1, 1, ok.x, 1, 1, 0, 0,
                            axpy_args, NULL);
    note_fault("driver", "cuLaunchKernel", "", "foreign_handle", g, ok, DEFAULT_STREAM, 0, (int)r);
    r = drv.launch((CUfunction)(void *)axpy_set, g.x, 1, 1, ok.x, 1, 1, 0, 0, axpy_args, NULL);
    note_fault("driver", "cuLaunchKernel", "", "host_stub", g, ok, DEFAULT_STREAM, 0, (int)r);
    r = drv.launch(axpy, g.x, 1, 1, big.x, 1, 1, 0, 0, axpy_args, NULL);
    note_fault("driver", "cuLaunchKernel", "axpy_set", "block_2048", g, big, DEFAULT_STREAM, 0,
               (int)r);
    r = drv.launch(axpy, g.x, 1, 1, ok.x, 1, 1, 0, 0, axpy_args, extra);
    note_fault("driver", "cuLaunchKernel", "axpy_set", "params_and_extra", g, ok, DEFAULT_STREAM,
               0, (int)r);
    ledger.driver_errors_set_last = cudaPeekAtLastError() != cudaSuccess;
    cudaError_t e = rt_launch((const void *)axpy_set, g, big, axpy_args, 0, 0);
    note_fault("runtime", "cudaLaunchKernel", "axpy_set", "block_2048", g, big, DEFAULT_STREAM, 0,
               (int)e);
    (void)cudaGetLastError();  // the expected failure is not the program's error
}

static int check(const buffers &b)
{
    static float hy[1 << 16], hm[64 * 96];
    static int hi[1 << 16];
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(hy, b.y, sizeof(hy), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hi, b.iota, sizeof(hi), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hm, b.m, sizeof(hm), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != A * (float)(i % 7) || hi[i] != i;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            bad += hm[r * COLS + c] != S * (float)(r + c);
    printf("check %s: %d wrong elements\n", bad ? "FAILED" : "passed", bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int errors = 0, want_check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--errors"))
            errors = 1;
        else if (!strcmp(argv[i], "--check"))
            want_check = 1;
        else
            fatal("usage: driver_launch [--errors] [--check]");
    }
    buffers b;
    CUDA_CHECK(cudaMalloc(&b.x, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b.y, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b.iota, N * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&b.m, ROWS * COLS * sizeof(float)));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
    static float hx[1 << 16];
    for (int i = 0; i < N; i++)
        hx[i] = (float)(i % 7);
    CUDA_CHECK(cudaMemcpy(b.x, hx, sizeof(hx), cudaMemcpyHostToDevice));
    resolve();

    stub_launches(b);
    runtime_launches(b);
    driver_launches(b);
    if (errors)
        error_launches(b);
    CUDA_CHECK(cudaDeviceSynchronize());
    int bad = want_check ? check(b) : 0;

    CUDA_CHECK(cudaStreamDestroy(b.s));
    CUDA_CHECK(cudaFree(b.x));
    CUDA_CHECK(cudaFree(b.y));
    CUDA_CHECK(cudaFree(b.iota));
    CUDA_CHECK(cudaFree(b.m));
    print_ledger();
    return bad;
}

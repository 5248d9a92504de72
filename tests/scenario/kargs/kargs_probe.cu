/* kargs_probe — launches kernels whose parameters hold device pointers (whole, interior,
 * inside a struct) and values that are not pointers, in every way the preload sees a
 * parameter array, then a cuBLAS and a cuBLASLt GEMM; prints what each launch's LAUNCH
 * record must carry, for test_kernel_args.py:
 *
 *     layout mixed <i> <offset> <size>    the C ABI layout of `mixed` (host offsetof)
 *     info mixed <i> <err> <offset> <size> cudaFuncGetParamInfo's answer, i = 0..count
 *     drvinfo args <i> <err> <offset> <size> cuFuncGetParamInfo's answer for `args`
 *     launch <how> ptrs=<p,...> at=<o,...> expected words, in offset order
 *     gemm <api> a=.. b=.. c=.. d=.. ws=..  expected GEMM pointers
 *     pending set=<e> got=<e>            an error pending before a first launch survives it
 *     after <e>                          the last error after our layout queries (0)
 *
 * Expected offsets come from a host struct with the kernel's parameters as members (the
 * C ABI puts kernel parameters where a struct puts its members), not from CUDA. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct S24 {
    float *p;
    int a;
    double d;
};
struct Tagged {   /* a pointer inside a struct, after a non-pointer word */
    long long tag;
    float *p;
    int n;
};

__global__ void mixed(float *a, int n, char c, double d, S24 s, const int *b, char c2, S24 s2)
{
    if (n < 0)
        a[0] = (float)(d + c + s.a + b[0] + c2 + s2.d);
}
__global__ void later(float *p)
{
    if (!p)
        p[0] = 0;
}
/* Multi-tensor apply: every tensor's address in one by-value struct (PyTorch passes about
 * 440 in one launch); 520 is more than a LAUNCH records. */
struct Many {
    float *p[100];
};
struct Huge {
    float *p[520];
};
__global__ void many(Many m)
{
    if (!m.p[0])
        m.p[1][0] = 0;
}
__global__ void huge(Huge h)
{
    if (!h.p[0])
        h.p[1][0] = 0;
}
/* A fused update that finds its tensors in a table in device memory. */
struct Entry {
    float *param, *grad;
    long long n;
};
__global__ void from_table(const Entry *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i].n < 0)
            t[i].param[0] = t[i].grad[0];
}
__global__ void args(float *whole, int n, float f, const float *interior, Tagged t, long long big,
                     double d)
{
    if (n < 0)
        whole[0] = f + interior[0] + t.p[0] + (float)(big + d);
}

/* The parameters of `args` as the C ABI lays them out. */
struct ArgsLayout {
    float *whole;
    int n;
    float f;
    const float *interior;
    Tagged t;
    long long big;
    double d;
};
struct MixedLayout {
    float *a;
    int n;
    char c;
    double d;
    S24 s;
    const int *b;
    char c2;
    S24 s2;
};

#define CHECK(what, call)                                                                  \
    do {                                                                                   \
        int rc_ = (int)(call);                                                             \
        if (rc_ != 0) {                                                                    \
            fprintf(stderr, "%s failed: %d\n", what, rc_);                                 \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static unsigned long long u(const void *p) { return (unsigned long long)(uintptr_t)p; }

static void print_mixed_layout(void)
{
    const size_t off[8] = { offsetof(MixedLayout, a), offsetof(MixedLayout, n), offsetof(MixedLayout, c),
                            offsetof(MixedLayout, d), offsetof(MixedLayout, s), offsetof(MixedLayout, b),
                            offsetof(MixedLayout, c2), offsetof(MixedLayout, s2) };
    const size_t size[8] = { sizeof(float *), sizeof(int), sizeof(char), sizeof(double), sizeof(S24),
                             sizeof(int *), sizeof(char), sizeof(S24) };
    for (int i = 0; i < 8; i++)
        printf("layout mixed %d %zu %zu\n", i, off[i], size[i]);
    for (size_t i = 0; i <= 8; i++) {
        size_t o = 0, s = 0;
        cudaError_t e = cudaFuncGetParamInfo((const void *)mixed, i, &o, &s);
        printf("info mixed %zu %d %zu %zu\n", i, (int)e, o, s);
    }
    cudaGetLastError();   /* the out-of-range query's error */
}

int main(void)
{
    print_mixed_layout();
    float *whole, *other, *member;
    CHECK("cudaMalloc", cudaMalloc((void **)&whole, 1 << 20));
    CHECK("cudaMalloc", cudaMalloc((void **)&other, 4096));
    CHECK("cudaMalloc", cudaMalloc((void **)&member, 256));
    const float *interior = other + 100;
    Tagged t = { 7, member + 3, 5 };
    int n = 1000;
    float f = 2.5f;
    long long big = 123456789;
    double d = 3.25;
    const size_t at_whole = offsetof(ArgsLayout, whole), at_interior = offsetof(ArgsLayout, interior);
    const size_t at_member = offsetof(ArgsLayout, t) + offsetof(Tagged, p);
    char expect[256];
    snprintf(expect, sizeof(expect), "ptrs=%llu,%llu,%llu at=%zu,%zu,%zu", u(whole), u(interior), u(t.p),
             at_whole, at_interior, at_member);

    args<<<2, 32>>>(whole, n, f, interior, t, big, d);
    printf("launch stub %s\n", expect);

    void *params[] = { &whole, &n, &f, &interior, &t, &big, &d };
    CHECK("cudaLaunchKernel", cudaLaunchKernel((const void *)args, dim3(2), dim3(32), params, 0, 0));
    printf("launch runtime %s\n", expect);

    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(2);
    cfg.blockDim = dim3(32);
    CHECK("cudaLaunchKernelExC", cudaLaunchKernelExC(&cfg, (const void *)args, params));
    printf("launch exc %s\n", expect);

    /* The driver, reached through the runtime (no -lcuda): recorded through CUPTI. */
    cudaFunction_t fn;
    CHECK("cudaGetFuncBySymbol", cudaGetFuncBySymbol(&fn, (const void *)args));
    void *launch = NULL;
    cudaDriverEntryPointQueryResult q;
    CHECK("cudaGetDriverEntryPointByVersion",
          cudaGetDriverEntryPointByVersion("cuLaunchKernel", &launch, 12000, cudaEnableDefault, &q));
    typedef CUresult (*cu_launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, CUstream, void **, void **);
    cu_launch_t cu_launch = (cu_launch_t)launch;
    void *info = NULL;
    CHECK("cudaGetDriverEntryPointByVersion",
          cudaGetDriverEntryPointByVersion("cuFuncGetParamInfo", &info, 12040, cudaEnableDefault, &q));
    typedef CUresult (*cu_info_t)(CUfunction, size_t, size_t *, size_t *);
    for (size_t i = 0; i <= 7; i++) {
        size_t o = 0, s = 0;
        int e = (int)((cu_info_t)info)((CUfunction)fn, i, &o, &s);
        printf("drvinfo args %zu %d %zu %zu\n", i, e, o, s);
    }
    CHECK("cuLaunchKernel", cu_launch((CUfunction)fn, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    printf("launch driver %s\n", expect);

    /* `extra`: one packed buffer, no parameter array: no words. */
    ArgsLayout packed = { whole, n, f, interior, t, big, d };
    size_t packed_size = sizeof(packed);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                      CU_LAUNCH_PARAM_END };
    CHECK("cuLaunchKernel extra", cu_launch((CUfunction)fn, 2, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
    printf("launch extra ptrs= at=\n");

    /* A first launch while the program has an error pending: the preload must neither read
     * the layout then (its query would replace the error) nor lose the error. */
    int set = (int)cudaSetDevice(9999);
    later<<<1, 1>>>(whole);
    printf("launch pending ptrs= at=\n");
    int got = (int)cudaGetLastError();
    printf("pending set=%d got=%d\n", set, got);
    later<<<1, 1>>>(whole);
    printf("launch later ptrs=%llu at=0\n", u(whole));
    printf("after %d\n", (int)cudaPeekAtLastError());

    /* 100 and 520 addresses in one struct: interior pointers of `whole`, 64 bytes apart */
    static Many m;
    static Huge hg;
    static char line[520 * 48];
    for (int i = 0; i < 100; i++)
        m.p[i] = whole + 16 * i;
    for (int i = 0; i < 520; i++)
        hg.p[i] = whole + 16 * i;
    many<<<1, 1>>>(m);
    int k = snprintf(line, sizeof(line), "launch many ptrs=");
    for (int i = 0; i < 100; i++)
        k += snprintf(line + k, sizeof(line) - k, "%s%llu", i ? "," : "", u(m.p[i]));
    k += snprintf(line + k, sizeof(line) - k, " at=");
    for (int i = 0; i < 100; i++)
        k += snprintf(line + k, sizeof(line) - k, "%s%d", i ? "," : "", 8 * i);
    printf("%s\n", line);
    huge<<<1, 1>>>(hg);   /* the first 512 words recorded, 8 more counted */
    k = snprintf(line, sizeof(line), "launch huge ptrs=");
    for (int i = 0; i < 512; i++)
        k += snprintf(line + k, sizeof(line) - k, "%s%llu", i ? "," : "", u(hg.p[i]));
    k += snprintf(line + k, sizeof(line) - k, " at=");
    for (int i = 0; i < 512; i++)
        k += snprintf(line + k, sizeof(line) - k, "%s%d", i ? "," : "", 8 * i);
    printf("%s\n", line);


    /* A pointer table: built on the host, copied to the device, read by a kernel that is
     * handed only its address. `tabled` is used by nothing else. */
    float *tabled, *dtab_raw;
    CHECK("cudaMalloc", cudaMalloc((void **)&tabled, 12345));
    CHECK("cudaMalloc", cudaMalloc((void **)&dtab_raw, 4096));
    Entry *dtab = (Entry *)dtab_raw;
    Entry htab[3] = { { whole, other, 7 }, { tabled, member + 1, 9 }, { other + 8, tabled + 4, 11 } };
    CHECK("cudaMemcpy", cudaMemcpy(dtab, htab, sizeof(htab), cudaMemcpyHostToDevice));
    printf("table dst=%llu ptrs=%llu,%llu,%llu,%llu,%llu,%llu at=%zu,%zu,%zu,%zu,%zu,%zu\n", u(dtab),
           u(htab[0].param), u(htab[0].grad), u(htab[1].param), u(htab[1].grad), u(htab[2].param),
           u(htab[2].grad), offsetof(Entry, param), offsetof(Entry, grad), sizeof(Entry) + offsetof(Entry, param),
           sizeof(Entry) + offsetof(Entry, grad), 2 * sizeof(Entry) + offsetof(Entry, param),
           2 * sizeof(Entry) + offsetof(Entry, grad));
    from_table<<<1, 1>>>(dtab, 3);
    printf("launch from_table ptrs=%llu at=0\n", u(dtab));
    /* the same bytes device to device: not a host table */
    CHECK("cudaMemcpy", cudaMemcpy(dtab + 3, dtab, sizeof(htab), cudaMemcpyDeviceToDevice));
    printf("nottable dst=%llu\n", u(dtab + 3));

    /* GEMMs: cuBLAS (d = c, ws = the handle's workspace) and cuBLASLt (its own D and
     * workspace). 4x4 matrices inside the buffers above and one more. */
    float *ws;
    CHECK("cudaMalloc", cudaMalloc((void **)&ws, 1 << 16));
    float *A = whole, *B = other + 256, *C = member, *D = whole + 1024;
    cublasHandle_t h;
    CHECK("cublasCreate", cublasCreate(&h));
    CHECK("cublasSetWorkspace", cublasSetWorkspace(h, ws, 1 << 16));
    float alpha = 1.0f, beta = 0.0f;
    CHECK("cublasSgemm", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, A, 4, B, 4, &beta, C, 4));
    printf("gemm cublasSgemm_v2 a=%llu b=%llu c=%llu d=%llu ws=%llu\n", u(A), u(B), u(C), u(C), u(ws));
    CHECK("cublasDestroy", cublasDestroy(h));

    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t l;
    CHECK("cublasLtCreate", cublasLtCreate(&lt));
    CHECK("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4));
    void *lt_ws = ws + 1024;
    CHECK("cublasLtMatmul", cublasLtMatmul(lt, desc, &alpha, A, l, B, l, &beta, C, l, D, l, NULL, lt_ws, 4096, 0));
    printf("gemm cublasLtMatmul a=%llu b=%llu c=%llu d=%llu ws=%llu\n", u(A), u(B), u(C), u(D), u(lt_ws));
    cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(lt);

    CHECK("cudaDeviceSynchronize", cudaDeviceSynchronize());
    cudaFree(ws), cudaFree(whole), cudaFree(other), cudaFree(member), cudaFree(tabled), cudaFree(dtab_raw);
    return 0;
}

/*
 * The sim's libcuda.so.1 and the one memory model (docs/sim.md, "Driver" and "Device
 * memory"). The driver is loaded with dlopen, as a framework loads it; the runtime is
 * linked. Expectations come from the documentation: one capacity shared by cuMemAlloc_v2
 * and cudaMalloc (charged in multiples of 512 bytes), cuGetProcAddress_v2 resolving base
 * names to their newest variant, VMM handles charged from cuMemCreate until released and
 * unmapped, and — through a test observer — each runtime allocation call answered by one
 * nested driver call with the same correlation id, with MEMORY2 records for what was
 * allocated and released.
 */
#include "anasim.h"

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stub_abi.h" /* the nvcc stub ABI */

#define MIB (1ull << 20)

/* The per-thread-default-stream variant, which cuda_runtime_api.h declares only for
 * --default-stream per-thread builds. */
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
        unsigned int cudaVersion, unsigned long long flags,
        enum cudaDriverEntryPointQueryResult *driverStatus);

/* ---- the driver, loaded like a framework loads it ----------------------------------- */
static void *driver;

static void *sym(const char *name)
{
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_NOW);
    cr_assert_not_null(driver, "dlopen libcuda.so.1: %s", dlerror());
    void *f = dlsym(driver, name);
    cr_assert_not_null(f, "libcuda.so.1 exports no %s", name);
    return f;
}

#define DRV(name, ...) ((CUresult(*)(__VA_ARGS__))sym(#name))

static void init_driver(void) { cr_assert_eq(DRV(cuInit, unsigned)(0), CUDA_SUCCESS); }

/* A fresh device of the given capacity (cudaDeviceReset re-reads the setting). */
static void device_of(const char *capacity)
{
    setenv("ANATOMIST_SIM_MEMORY", capacity, 1);
    cr_assert_eq(cudaDeviceReset(), cudaSuccess);
    init_driver();
}

/* free bytes; asserts that the driver and the runtime say the same. */
static size_t free_bytes(void)
{
    size_t f1 = 0, t1 = 0, f2 = 1, t2 = 1;
    cr_assert_eq(DRV(cuMemGetInfo_v2, size_t *, size_t *)(&f1, &t1), CUDA_SUCCESS);
    cr_assert_eq(cudaMemGetInfo(&f2, &t2), cudaSuccess);
    cr_assert_eq(f1, f2, "cuMemGetInfo_v2 free %zu, cudaMemGetInfo free %zu", f1, f2);
    cr_assert_eq(t1, t2);
    return f1;
}

/* ---- initialisation, versions, errors ------------------------------------------------ */

Test(sim_driver, not_initialised_before_cuInit)
{
    size_t f, t;
    int v = 0;
    cr_assert_eq(DRV(cuMemGetInfo_v2, size_t *, size_t *)(&f, &t), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(DRV(cuDriverGetVersion, int *)(&v), CUDA_SUCCESS);
    cr_assert_eq(v, 13000);
    cr_assert_eq(DRV(cuInit, unsigned)(1), CUDA_ERROR_INVALID_VALUE);
    init_driver();
    cr_assert_eq(DRV(cuMemGetInfo_v2, size_t *, size_t *)(&f, &t), CUDA_SUCCESS);
}

Test(sim_driver, device_and_context)
{
    device_of("16GiB");
    CUdevice dev = -1;
    int n = 0, sms = 0;
    char name[64];
    size_t total = 0;
    CUcontext ctx = NULL, cur = (CUcontext)1;
    cr_assert_eq(DRV(cuDeviceGetCount, int *)(&n), CUDA_SUCCESS);
    cr_assert_eq(n, 1);
    cr_assert_eq(DRV(cuDeviceGet, CUdevice *, int)(&dev, 0), CUDA_SUCCESS);
    cr_assert_eq(dev, 0);
    cr_assert_eq(DRV(cuDeviceGet, CUdevice *, int)(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    cr_assert_eq(DRV(cuDeviceGetName, char *, int, CUdevice)(name, sizeof(name), 0),
                 CUDA_SUCCESS);
    cr_assert_str_eq(name, "Anatomist Simulated H100");
    cr_assert_eq(DRV(cuDeviceTotalMem_v2, size_t *, CUdevice)(&total, 0), CUDA_SUCCESS);
    cr_assert_eq(total, 16ull << 30);
    cr_assert_eq(DRV(cuDeviceGetAttribute, int *, CUdevice_attribute, CUdevice)(
                     &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
    cr_assert_eq(sms, 132);
    cr_assert_eq(DRV(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)(&ctx, 0), CUDA_SUCCESS);
    cr_assert_not_null(ctx);
    cr_assert_eq(DRV(cuCtxGetCurrent, CUcontext *)(&cur), CUDA_SUCCESS);
    cr_assert_null(cur, "no context is current on a fresh thread");
    cr_assert_eq(DRV(cuCtxSetCurrent, CUcontext)(ctx), CUDA_SUCCESS);
    cr_assert_eq(DRV(cuCtxGetCurrent, CUcontext *)(&cur), CUDA_SUCCESS);
    cr_assert_eq(cur, ctx);
    cr_assert_eq(DRV(cuCtxSetCurrent, CUcontext)((CUcontext)&n), CUDA_ERROR_INVALID_CONTEXT);
    cr_assert_eq(DRV(cuCtxSynchronize, void)(), CUDA_SUCCESS);
    cr_assert_eq(DRV(cuDevicePrimaryCtxRelease_v2, CUdevice)(0), CUDA_SUCCESS);
    cr_assert_eq(DRV(cuDevicePrimaryCtxRelease_v2, CUdevice)(0), CUDA_ERROR_INVALID_CONTEXT,
                 "released more often than retained");
}

static char fatbin_stand_in[16];
static void long_kernel(void) {}

/* cuCtxSynchronize is cudaDeviceSynchronize (docs/sim.md, "The host floor"): the calling
 * thread's later work, on any stream, starts no earlier than the end of everything
 * submitted before it. A kernel of 2^31-1 blocks of 1024 threads lasts
 * 3000 + (2^31-1) * 1024 * 0.02 ns (docs/sim.md, "Cost model"), about 44 s of device time. */
Test(sim_driver, ctx_synchronize_moves_the_host_floor_like_the_runtime)
{
    device_of("1GiB");
    void **module = __cudaRegisterFatBinary(fatbin_stand_in);
    __cudaRegisterFunction(module, (const char *)long_kernel, "_Z11long_kernelv",
                           "_Z11long_kernelv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    const double kernel_ms = (3000.0 + 2147483647.0 * 1024.0 * 0.02) / 1e6;
    cudaStream_t a, b;
    cudaEvent_t a_done, b_before, b_after;
    cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&a_done), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&b_before), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&b_after), cudaSuccess);
    dim3 grid = { 2147483647u, 1, 1 }, block = { 1024, 1, 1 };
    cr_assert_eq(cudaLaunchKernel((const void *)long_kernel, grid, block, NULL, 0, a),
                 cudaSuccess);
    cr_assert_eq(cudaEventRecord(a_done, a), cudaSuccess);
    cr_assert_eq(cudaEventRecord(b_before, b), cudaSuccess);
    cr_assert_eq(DRV(cuCtxSynchronize, void)(), CUDA_SUCCESS);
    cr_assert_eq(cudaEventRecord(b_after, b), cudaSuccess);

    float ms = 0;
    cr_assert_eq(cudaEventElapsedTime(&ms, b_before, a_done), cudaSuccess);
    cr_assert(ms > kernel_ms - 1000.0 && ms < kernel_ms + 1.0,
              "before the synchronize, b ran %f ms ahead of a's end (kernel %f ms)", ms,
              kernel_ms);
    cr_assert_eq(cudaEventElapsedTime(&ms, a_done, b_after), cudaSuccess);
    cr_assert_eq(ms, 0.0f, "after it, b's next work starts at a's end, not %f ms from it", ms);
}

Test(sim_driver, error_names_and_strings)
{
    const char *s = NULL;
    cr_assert_eq(DRV(cuGetErrorName, CUresult, const char **)(CUDA_ERROR_OUT_OF_MEMORY, &s),
                 CUDA_SUCCESS);
    cr_assert_str_eq(s, "CUDA_ERROR_OUT_OF_MEMORY");
    cr_assert_eq(DRV(cuGetErrorString, CUresult, const char **)(CUDA_ERROR_OUT_OF_MEMORY, &s),
                 CUDA_SUCCESS);
    cr_assert_str_eq(s, "out of memory");
    cr_assert_eq(DRV(cuGetErrorName, CUresult, const char **)(CUDA_ERROR_NOT_FOUND, &s),
                 CUDA_SUCCESS);
    cr_assert_str_eq(s, "CUDA_ERROR_NOT_FOUND");
    cr_assert_eq(DRV(cuGetErrorName, CUresult, const char **)((CUresult)12345, &s),
                 CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(s);
}

/* ---- one capacity ------------------------------------------------------------------- */

Test(sim_driver, capacity_is_shared_with_the_runtime)
{
    device_of("1GiB");
    CUresult (*alloc)(CUdeviceptr *, size_t) = DRV(cuMemAlloc_v2, CUdeviceptr *, size_t);
    CUresult (*release)(CUdeviceptr) = DRV(cuMemFree_v2, CUdeviceptr);
    cr_assert_eq(free_bytes(), 1ull << 30);

    CUdeviceptr big = 0;
    cr_assert_eq(alloc(&big, (1ull << 30) - MIB - 100), CUDA_SUCCESS);
    /* (1 GiB - 1 MiB - 100) rounds up to 1 GiB - 1 MiB: 1 MiB stays free. */
    cr_assert_eq(free_bytes(), MIB);

    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, MIB + 1), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    CUdeviceptr small = 0;
    cr_assert_eq(alloc(&small, MIB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cudaMalloc(&p, MIB - 511), cudaSuccess, "MIB - 511 rounds up to exactly MIB");
    cr_assert_eq(free_bytes(), 0);

    /* Both sides free what the other allocated: there is one allocation table. */
    cr_assert_eq(release((CUdeviceptr)(uintptr_t)p), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), MIB);
    cr_assert_eq(cudaFree((void *)(uintptr_t)big), cudaSuccess);
    cr_assert_eq(free_bytes(), 1ull << 30);

    cr_assert_eq(alloc(&small, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(alloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(release(big), CUDA_ERROR_INVALID_VALUE, "already freed");
    cr_assert_eq(cudaFree(p), cudaErrorInvalidValue, "already freed");
}

Test(sim_driver, other_allocators_and_queries)
{
    device_of("1GiB");
    CUdeviceptr d = 0, base = 0;
    size_t pitch = 0, size = 0;
    cr_assert_eq(DRV(cuMemAllocPitch_v2, CUdeviceptr *, size_t *, size_t, size_t, unsigned)(
                     &d, &pitch, 1000, 3, 4), CUDA_SUCCESS);
    cr_assert_eq(pitch, 1024);
    cr_assert_eq(free_bytes(), (1ull << 30) - 3 * 1024);
    cr_assert_eq(DRV(cuMemGetAddressRange_v2, CUdeviceptr *, size_t *, CUdeviceptr)(
                     &base, &size, d + 2000), CUDA_SUCCESS);
    cr_assert_eq(base, d);
    cr_assert_eq(size, 3 * 1024);
    cr_assert_eq(DRV(cuMemFree_v2, CUdeviceptr)(d), CUDA_SUCCESS);

    CUdeviceptr m = 0;
    cr_assert_eq(DRV(cuMemAllocManaged, CUdeviceptr *, size_t, unsigned)(
                     &m, 5000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), (1ull << 30) - 5120);
    struct cudaPointerAttributes a;
    cr_assert_eq(cudaPointerGetAttributes(&a, (void *)(uintptr_t)m), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeManaged);
    cr_assert_eq(DRV(cuMemFree_v2, CUdeviceptr)(m), CUDA_SUCCESS);

    void *h = NULL;
    unsigned flags = 0;
    cr_assert_eq(DRV(cuMemHostAlloc, void **, size_t, unsigned)(&h, 4096,
                                                                CU_MEMHOSTALLOC_DEVICEMAP),
                 CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), 1ull << 30, "pinned host memory is not charged");
    cr_assert_eq(cudaHostGetFlags(&flags, h), cudaSuccess);
    cr_assert_eq(flags, cudaHostAllocMapped);
    cr_assert_eq(DRV(cuMemFree_v2, CUdeviceptr)((CUdeviceptr)(uintptr_t)h),
                 CUDA_ERROR_INVALID_VALUE, "host memory is freed by cuMemFreeHost");
    cr_assert_eq(DRV(cuMemFreeHost, void *)(h), CUDA_SUCCESS);

    /* Simple copies and sets move real bytes. */
    char in[300], out[300];
    for (int i = 0; i < 300; i++)
        in[i] = (char)(i * 7);
    CUdeviceptr x = 0, y = 0;
    cr_assert_eq(DRV(cuMemAlloc_v2, CUdeviceptr *, size_t)(&x, 300), CUDA_SUCCESS);
    cr_assert_eq(DRV(cuMemAlloc_v2, CUdeviceptr *, size_t)(&y, 300), CUDA_SUCCESS);
    cr_assert_eq(DRV(cuMemcpyHtoD_v2, CUdeviceptr, const void *, size_t)(x, in, 300),
                 CUDA_SUCCESS);
    cr_assert_eq(DRV(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, size_t)(y, x, 300),
                 CUDA_SUCCESS);
    cr_assert_eq(DRV(cuMemsetD8_v2, CUdeviceptr, unsigned char, size_t)(y + 100, 0x5a, 50),
                 CUDA_SUCCESS);
    cr_assert_eq(DRV(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t)(out, y, 300), CUDA_SUCCESS);
    memset(in + 100, 0x5a, 50);
    cr_assert_arr_eq(out, in, 300);
    cr_assert_eq(DRV(cuMemcpyDtoH_v2, void *, CUdeviceptr, size_t)(out, y, 301),
                 CUDA_ERROR_INVALID_VALUE, "one byte past the allocation");
}

/* ---- cuGetProcAddress ----------------------------------------------------------------- */

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t,
                          CUdriverProcAddressQueryResult *);

static void *proc(const char *name, int version, cuuint64_t flags, CUresult want_rc,
                  CUdriverProcAddressQueryResult want_status)
{
    gpa_t gpa = (gpa_t)sym("cuGetProcAddress_v2");
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)99;
    cr_assert_eq(gpa(name, &fn, version, flags, &st), want_rc, "%s for %d", name, version);
    cr_assert_eq(st, want_status, "%s for %d", name, version);
    return fn;
}

Test(sim_driver, get_proc_address_resolves_base_names)
{
    const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const CUdriverProcAddressQueryResult ok = CU_GET_PROC_ADDRESS_SUCCESS;
    cr_assert_eq(proc("cuMemAlloc", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemAlloc_v2"));
    cr_assert_eq(proc("cuMemAlloc", 3020, 0, CUDA_SUCCESS, ok), sym("cuMemAlloc_v2"));
    cr_assert_eq(proc("cuMemFree", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemFree_v2"));
    cr_assert_eq(proc("cuMemGetInfo", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemGetInfo_v2"));
    cr_assert_eq(proc("cuMemAllocHost", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemAllocHost_v2"));
    cr_assert_eq(proc("cuMemCreate", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemCreate"));
    cr_assert_eq(proc("cuMemAllocAsync", 13000, 0, CUDA_SUCCESS, ok), sym("cuMemAllocAsync"));
    cr_assert_eq(proc("cuMemAllocAsync", 13000, ptds, CUDA_SUCCESS, ok),
                 sym("cuMemAllocAsync_ptsz"));
    cr_assert_eq(proc("cuMemAlloc", 13000, ptds, CUDA_SUCCESS, ok), sym("cuMemAlloc_v2"),
                 "no per-thread variant: the legacy one");
    cr_assert_eq(proc("cuDevicePrimaryCtxRelease", 13000, 0, CUDA_SUCCESS, ok),
                 sym("cuDevicePrimaryCtxRelease_v2"));
    cr_assert_eq(proc("cuDevicePrimaryCtxRelease", 10000, 0, CUDA_SUCCESS, ok),
                 sym("cuDevicePrimaryCtxRelease"));
    cr_assert_eq(proc("cuGetProcAddress", 13000, 0, CUDA_SUCCESS, ok),
                 sym("cuGetProcAddress_v2"));
    cr_assert_null(proc("cuMemAlloc", 3000, 0, CUDA_ERROR_NOT_FOUND,
                        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT));
    cr_assert_null(proc("cuNoSuchThing", 13000, 0, CUDA_ERROR_NOT_FOUND,
                        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND));
    cr_assert_null(proc("cuMemAlloc_v2", 13000, 0, CUDA_ERROR_NOT_FOUND,
                        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND), "base names only");

    /* The runtime's entry-point query answers through the driver. */
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemFree", &fn, 13000, cudaEnableDefault, &st),
                 cudaSuccess);
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    cr_assert_eq(fn, sym("cuMemFree_v2"));
    cr_assert_eq(cudaGetDriverEntryPointByVersion_ptsz("cuMemFreeAsync", &fn, 13000,
                                                       cudaEnableDefault, &st), cudaSuccess);
    cr_assert_eq(fn, sym("cuMemFreeAsync_ptsz"));
}

/* ---- virtual memory management ------------------------------------------------------- */

static const CUmemAllocationProp device_prop = {
    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
    .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
};

static CUmemGenericAllocationHandle create(size_t size, CUresult want)
{
    CUmemGenericAllocationHandle h = 0;
    cr_assert_eq(DRV(cuMemCreate, CUmemGenericAllocationHandle *, size_t,
                     const CUmemAllocationProp *, unsigned long long)(&h, size, &device_prop, 0),
                 want, "cuMemCreate(%zu)", size);
    return h;
}

static CUresult map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    return DRV(cuMemMap, CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
               unsigned long long)(va, size, 0, h, 0);
}

static CUresult unmap(CUdeviceptr va, size_t size)
{
    return DRV(cuMemUnmap, CUdeviceptr, size_t)(va, size);
}

static CUresult release(CUmemGenericAllocationHandle h)
{
    return DRV(cuMemRelease, CUmemGenericAllocationHandle)(h);
}

/* What PyTorch's expandable segments do: reserve a large range once, then back it with
 * 2 MiB handles as the segment grows, and give them back as it shrinks. */
Test(sim_driver, vmm_like_expandable_segments)
{
    device_of("256MiB");
    const size_t total = 256 * MIB;
    size_t gran = 0;
    cr_assert_eq(DRV(cuMemGetAllocationGranularity, size_t *, const CUmemAllocationProp *,
                     CUmemAllocationGranularity_flags)(&gran, &device_prop,
                                                       CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                 CUDA_SUCCESS);
    cr_assert_eq(gran, 2 * MIB);

    CUdeviceptr va = 0;
    cr_assert_eq(DRV(cuMemAddressReserve, CUdeviceptr *, size_t, size_t, CUdeviceptr,
                     unsigned long long)(&va, 64 * MIB, 0, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(va % (2 * MIB), 0);
    cr_assert_eq(free_bytes(), total, "address space is not memory");

    create(3 * MIB, CUDA_ERROR_INVALID_VALUE);            /* not a multiple of 2 MiB */
    create(258 * MIB, CUDA_ERROR_OUT_OF_MEMORY);          /* more than the device has */
    CUmemGenericAllocationHandle a = create(2 * MIB, CUDA_SUCCESS);
    CUmemGenericAllocationHandle b = create(2 * MIB, CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), total - 4 * MIB, "handles are charged when created");

    cr_assert_eq(map(va, 2 * MIB, a), CUDA_SUCCESS);
    cr_assert_eq(map(va + 2 * MIB, 2 * MIB, b), CUDA_SUCCESS);
    cr_assert_eq(map(va, 2 * MIB, b), CUDA_ERROR_INVALID_VALUE, "already mapped");
    cr_assert_eq(map(va + 8 * MIB, 2 * MIB, a), CUDA_SUCCESS, "a second view of a");
    CUmemAccessDesc rw = { .location = device_prop.location,
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) =
        DRV(cuMemSetAccess, CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    cr_assert_eq(set_access(va, 4 * MIB, &rw, 1), CUDA_SUCCESS);
    cr_assert_eq(set_access(va, 6 * MIB, &rw, 1), CUDA_ERROR_INVALID_VALUE, "not all mapped");
    cr_assert_eq(free_bytes(), total - 4 * MIB, "mapping charges nothing more");

    /* The runtime treats the mapped range as device memory, across the handle boundary. */
    char *p = (char *)(uintptr_t)va;
    static char in[2 * MIB], out[2 * MIB];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (char)(i % 251);
    cr_assert_eq(cudaMemcpy(p + MIB, in, 2 * MIB, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMemset(p + MIB + 100, 0x7f, 10), cudaSuccess);
    memset(in + 100, 0x7f, 10);
    cr_assert_eq(cudaMemcpy(out, p + MIB, 2 * MIB, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_arr_eq(out, in, sizeof(in));
    struct cudaPointerAttributes attr;
    cr_assert_eq(cudaPointerGetAttributes(&attr, p + 3 * MIB), cudaSuccess);
    cr_assert_eq(attr.type, cudaMemoryTypeDevice);
    /* Both views of handle a are the same memory. */
    cr_assert_eq(cudaMemcpy(out, p + 8 * MIB + MIB, MIB, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_arr_eq(out, in, MIB);

    /* Released while mapped: still charged until its last mapping goes. */
    cr_assert_eq(release(a), CUDA_SUCCESS);
    cr_assert_eq(release(a), CUDA_ERROR_INVALID_VALUE, "released twice");
    cr_assert_eq(free_bytes(), total - 4 * MIB);
    cr_assert_eq(unmap(va, MIB), CUDA_ERROR_INVALID_VALUE, "half a mapping");
    cr_assert_eq(unmap(va, 2 * MIB), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), total - 4 * MIB, "a is still mapped at va + 8 MiB");
    cr_assert_eq(cudaMemset(p, 0, 16), cudaErrorInvalidValue, "no longer device memory");
    cr_assert_eq(cudaMemset(p + 2 * MIB, 0, 16), cudaSuccess, "b stays mapped");
    cr_assert_eq(unmap(va + 8 * MIB, 2 * MIB), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), total - 2 * MIB, "a is given back");

    CUresult (*address_free)(CUdeviceptr, size_t) = DRV(cuMemAddressFree, CUdeviceptr, size_t);
    cr_assert_eq(address_free(va, 64 * MIB), CUDA_ERROR_INVALID_VALUE, "b is still mapped");
    cr_assert_eq(unmap(va + 2 * MIB, 2 * MIB), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), total - 2 * MIB, "b is unmapped but not released");
    cr_assert_eq(release(b), CUDA_SUCCESS);
    cr_assert_eq(free_bytes(), total);
    cr_assert_eq(address_free(va, 32 * MIB), CUDA_ERROR_INVALID_VALUE, "wrong size");
    cr_assert_eq(address_free(va, 64 * MIB), CUDA_SUCCESS);
}

/* ---- correlation and activity records ------------------------------------------------ */

#define MAX_EVENTS 64
static struct event {
    int exit_site;
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    char name[48];
    uint32_t correlation;
    int nested;
    size_t bytes;            /* cuMemAlloc_v2 / cudaMalloc params */
} events[MAX_EVENTS];
static int nevents;
static CUpti_ActivityMemory4 mem[MAX_EVENTS];
static int nmem;
static CUpti_ActivityMemoryPool3 pools[MAX_EVENTS];
static int npools;

static void on_api(int exit_site, anasim_api *call)
{
    cr_assert_lt(nevents, MAX_EVENTS);
    struct event *e = &events[nevents++];
    e->exit_site = exit_site;
    e->domain = call->domain;
    e->cbid = call->cbid;
    snprintf(e->name, sizeof(e->name), "%s", call->name);
    e->correlation = call->correlation;
    e->nested = call->nested;
    if (call->domain == CUPTI_CB_DOMAIN_DRIVER_API &&
        call->cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)
        e->bytes = ((const cuMemAlloc_v2_params *)call->params)->bytesize;
    if (call->domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        call->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)
        e->bytes = ((const cudaMalloc_v3020_params *)call->params)->size;
}

static int wants(CUpti_ActivityKind kind)
{
    return kind == CUPTI_ACTIVITY_KIND_MEMORY2 || kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL;
}

static void on_activity(const CUpti_Activity *rec)
{
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
        cr_assert_lt(nmem, MAX_EVENTS);
        memcpy(&mem[nmem++], rec, sizeof(mem[0]));
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
        cr_assert_lt(npools, MAX_EVENTS);
        memcpy(&pools[npools++], rec, sizeof(pools[0]));
    } else {
        cr_assert_fail("an activity kind nobody asked for: %d", (int)rec->kind);
    }
}

static const anasim_observer observer = { on_api, wants, on_activity };

/* Loads the driver (the runtime's first memory call does) before anything is observed. */
static void observe(void)
{
    device_of("1GiB");
    (void)free_bytes();
    nevents = nmem = npools = 0;
    anasim_set_observer(&observer);
}

static void check_call(const struct event *e, int exit_site, CUpti_CallbackDomain domain,
                       CUpti_CallbackId cbid, const char *name, int nested)
{
    cr_assert_eq(e->exit_site, exit_site, "%s", name);
    cr_assert_eq(e->domain, domain, "%s", name);
    cr_assert_eq(e->cbid, cbid, "%s", name);
    cr_assert_str_eq(e->name, name);
    cr_assert_eq(e->nested, nested, "%s", name);
}

static void check_record(const CUpti_ActivityMemory4 *r, CUpti_ActivityMemoryOperationType op,
                         CUpti_ActivityMemoryKind kind, const void *address, uint64_t bytes,
                         uint32_t correlation)
{
    cr_assert_eq(r->kind, CUPTI_ACTIVITY_KIND_MEMORY2);
    cr_assert_eq(r->memoryOperationType, op);
    cr_assert_eq(r->memoryKind, kind);
    cr_assert_eq(r->address, (uint64_t)(uintptr_t)address);
    cr_assert_eq(r->bytes, bytes);
    cr_assert_eq(r->correlationId, correlation);
    cr_assert_eq(r->processId, (uint32_t)getpid());
    cr_assert_eq(r->deviceId, 0);
    cr_assert_eq(r->contextId, 1);
    cr_assert_gt(r->timestamp, 0);
}

Test(sim_driver, runtime_allocation_nests_one_driver_call)
{
    observe();
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, 1000), cudaSuccess);
    cr_assert_eq(cudaFree(p), cudaSuccess);
    anasim_set_observer(NULL);

    const CUpti_CallbackDomain rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
    cr_assert_eq(nevents, 8, "two runtime calls, each with one driver call: %d", nevents);
    check_call(&events[0], 0, rt, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", 0);
    check_call(&events[1], 0, drv, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", 1);
    check_call(&events[2], 1, drv, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", 1);
    check_call(&events[3], 1, rt, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", 0);
    check_call(&events[4], 0, rt, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", 0);
    check_call(&events[5], 0, drv, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", 1);
    check_call(&events[6], 1, drv, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", 1);
    check_call(&events[7], 1, rt, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", 0);
    cr_assert_eq(events[0].bytes, 1000);
    cr_assert_eq(events[1].bytes, 1000, "the runtime asks the driver for what it was asked");
    uint32_t c1 = events[0].correlation, c2 = events[4].correlation;
    cr_assert_neq(c1, 0);
    cr_assert_neq(c2, c1);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(events[i].correlation, c1);
        cr_assert_eq(events[4 + i].correlation, c2);
    }

    cr_assert_eq(nmem, 2);
    check_record(&mem[0], CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                 CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, p, 1000, c1);
    check_record(&mem[1], CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                 CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, p, 1000, c2);
    cr_assert_eq(mem[0].isAsync, 0);
    cr_assert_eq(mem[0].streamId, 0);
    cr_assert_leq(mem[0].timestamp, mem[1].timestamp);
    cr_assert_eq(npools, 0);
}

Test(sim_driver, failed_and_trivial_calls_make_no_records)
{
    observe();
    void *p = (void *)1;
    cr_assert_eq(cudaMalloc(&p, 2ull << 30), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMalloc(&p, 0), cudaSuccess);
    cr_assert_null(p);
    cr_assert_eq(cudaFree(NULL), cudaSuccess);
    anasim_set_observer(NULL);
    cr_assert_eq(nmem, 0);
    /* cudaMalloc (with its failed driver call), then two calls the runtime answers alone. */
    cr_assert_eq(nevents, 4 + 2 + 2);
    cr_assert_eq(events[1].cbid, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
    cr_assert_eq(events[4].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
    cr_assert_eq(events[6].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020);
}

Test(sim_driver, pool_pinned_managed_and_vmm_records)
{
    observe();
    void *a = NULL, *b = NULL, *h = NULL, *m = NULL;
    cr_assert_eq(cudaMallocAsync(&a, 4000, 0), cudaSuccess);
    cr_assert_eq(cudaMallocAsync(&b, 1000, 0), cudaSuccess);
    cr_assert_eq(cudaFreeAsync(a, 0), cudaSuccess);
    cr_assert_eq(cudaMallocHost(&h, 100), cudaSuccess);
    cr_assert_eq(cudaMallocManaged(&m, 600, cudaMemAttachGlobal), cudaSuccess);
    CUmemGenericAllocationHandle vh = create(2 * MIB, CUDA_SUCCESS);
    cr_assert_eq(release(vh), CUDA_SUCCESS);
    anasim_set_observer(NULL);

    /* The default pool is announced once, at its first use. */
    cr_assert_eq(npools, 1);
    cr_assert_eq(pools[0].memoryPoolOperationType,
                 CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED);
    cr_assert_eq(pools[0].memoryPoolType, CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
    cr_assert_eq(pools[0].correlationId, mem[0].correlationId);

    cr_assert_eq(nmem, 7);
    const CUpti_ActivityMemoryOperationType alloc = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                            rel = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    check_record(&mem[0], alloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, a, 4000, mem[0].correlationId);
    check_record(&mem[1], alloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, b, 1000, mem[1].correlationId);
    check_record(&mem[2], rel, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, a, 4000, mem[2].correlationId);
    /* Stream-ordered, on the legacy default stream (CUPTI stream id 7), from the pool:
     * utilizedSize counts 512-byte-rounded charges: 4096, then +1024, then -4096. */
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(mem[i].isAsync, 1);
        cr_assert_eq(mem[i].streamId, 7);
        cr_assert_eq(mem[i].memoryPoolConfig.memoryPoolType,
                     CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
        cr_assert_eq(mem[i].memoryPoolConfig.address, pools[0].address);
    }
    cr_assert_eq(mem[0].memoryPoolConfig.utilizedSize, 4096);
    cr_assert_eq(mem[1].memoryPoolConfig.utilizedSize, 5120);
    cr_assert_eq(mem[2].memoryPoolConfig.utilizedSize, 1024);
    cr_assert_neq(mem[0].correlationId, mem[1].correlationId);
    check_record(&mem[3], alloc, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, h, 100, mem[3].correlationId);
    check_record(&mem[4], alloc, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, m, 600,
                 mem[4].correlationId);
    cr_assert_eq(mem[3].isAsync, 0);
    /* A physical handle has no address: 0 (docs/sim.md). */
    check_record(&mem[5], alloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, NULL, 2 * MIB,
                 mem[5].correlationId);
    check_record(&mem[6], rel, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, NULL, 2 * MIB,
                 mem[6].correlationId);
    cr_assert_neq(mem[5].correlationId, mem[6].correlationId);
}

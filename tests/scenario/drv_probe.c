/* drv_probe — driver memory calls made the four ways a program can reach the driver, for
 * the driver-hook tests (test_driver_hooks.py). Prints one line per call with what the
 * program itself saw: the pointer or handle, the size, the CUresult, and errno after the
 * call (set to a marker before it). Also where each entry point it was handed lives
 * ("module" lines), so a test can tell a wrapper from the driver's own function.
 *
 *   drv_probe dlsym|getproc|entrypoint|runtime|flavours   (built as drv_probe, libcuda not linked)
 *   drv_probe_linked link                          (built linked against libcuda)
 *
 * dlsym: dlopen("libcuda.so.1", RTLD_LOCAL) + dlsym of the exported names; getproc:
 * cuGetProcAddress_v2 (itself from dlsym) with base names; entrypoint: the runtime's
 * cudaGetDriverEntryPointByVersion; runtime: cudaMalloc/cudaFree only; link: the names
 * bound at link time. Every driver mode: cuMemAlloc_v2 of 1 MiB + cuMemFree_v2, a
 * cuMemAlloc_v2 that must fail (1 PiB), then reserve 64 MiB, create 2 MiB, map, set
 * access, unmap, release, free the range. flavours: what cuGetProcAddress_v2 hands out for
 * one base name at several versions and stream flags ("got" lines: the module and symbol
 * name of the function), then a cuMemAllocAsync/cuMemFreeAsync pair through the
 * per-thread-stream flavour. cooperative: cudaLaunchCooperativeKernel and its _ptsz form
 * with a function the runtime does not know (the launch fails; its record must still hold
 * the call's dimensions and result). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)
#define ERRNO_MARK 4242

enum { INIT, ALLOC, FREE, RESERVE, ADDRESS_FREE, CREATE, RELEASE, MAP, UNMAP, SET_ACCESS, NFN };
static const char *const exported[NFN] = { "cuInit", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate", "cuMemRelease", "cuMemMap",
    "cuMemUnmap", "cuMemSetAccess" };
#ifndef ANA_PROBE_LINKED
static const char *const base[NFN] = { "cuInit", "cuMemAlloc", "cuMemFree", "cuMemAddressReserve",
    "cuMemAddressFree", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess" };
#endif
static void *fn[NFN];

static int resolve(const char *mode)
{
#ifdef ANA_PROBE_LINKED
    if (strcmp(mode, "link") == 0) {
        void *linked[NFN] = { (void *)cuInit, (void *)cuMemAlloc, (void *)cuMemFree,
            (void *)cuMemAddressReserve, (void *)cuMemAddressFree, (void *)cuMemCreate,
            (void *)cuMemRelease, (void *)cuMemMap, (void *)cuMemUnmap, (void *)cuMemSetAccess };
        memcpy(fn, linked, sizeof(fn));
        return 0;
    }
    return -1;
#else
    void *lib = NULL;
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = NULL;
    if (strcmp(mode, "dlsym") == 0 || strcmp(mode, "getproc") == 0) {
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return fprintf(stderr, "drv_probe: %s\n", dlerror()), -1;
    }
    if (strcmp(mode, "getproc") == 0) {
        *(void **)&gpa = dlsym(lib, "cuGetProcAddress_v2");
        if (!gpa)
            return -1;
    } else if (strcmp(mode, "dlsym") != 0 && strcmp(mode, "entrypoint") != 0) {
        return -1;
    }
    for (int i = 0; i < NFN; i++) {
        if (lib && !gpa) {
            fn[i] = dlsym(lib, exported[i]);
        } else if (gpa) {
            CUdriverProcAddressQueryResult q;
            if (gpa(base[i], &fn[i], CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS)
                fn[i] = NULL;
        } else {
            enum cudaDriverEntryPointQueryResult q;
            if (cudaGetDriverEntryPointByVersion(base[i], &fn[i], CUDART_VERSION, cudaEnableDefault, &q) !=
                cudaSuccess)
                fn[i] = NULL;
        }
        if (!fn[i])
            return fprintf(stderr, "drv_probe: %s: no %s\n", mode, exported[i]), -1;
    }
    return 0;
#endif
}

static void print_modules(void)
{
    for (int i = 0; i < NFN; i++) {
        Dl_info info;
        const char *file = dladdr(fn[i], &info) && info.dli_fname ? info.dli_fname : "?";
        const char *slash = strrchr(file, '/');
        printf("module %s %s\n", exported[i], slash ? slash + 1 : file);
    }
}

#define CALL(id, proto, ...) (errno = ERRNO_MARK, ((__typeof__(&proto))fn[id])(__VA_ARGS__))

static int driver_calls(void)
{
    CUresult r = CALL(INIT, cuInit, 0);
    if (r != CUDA_SUCCESS)
        return fprintf(stderr, "drv_probe: cuInit: %d\n", (int)r), 1;
    CUdeviceptr p = 0;
    r = CALL(ALLOC, cuMemAlloc_v2, &p, MIB);
    printf("alloc ptr=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)p, MIB, (int)r, errno);
    r = CALL(FREE, cuMemFree_v2, p);
    printf("free ptr=%llu ret=%d errno=%d\n", (unsigned long long)p, (int)r, errno);
    CUdeviceptr huge = 0;
    r = CALL(ALLOC, cuMemAlloc_v2, &huge, 1ull << 50);
    printf("failed_alloc size=%llu ret=%d errno=%d\n", 1ull << 50, (int)r, errno);

    CUdeviceptr va = 0;
    r = CALL(RESERVE, cuMemAddressReserve, &va, 64 * MIB, 0, 0, 0);
    printf("reserve va=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)va, 64 * MIB, (int)r, errno);
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    r = CALL(CREATE, cuMemCreate, &h, 2 * MIB, &prop, 0);
    printf("create handle=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)h, 2 * MIB, (int)r, errno);
    r = CALL(MAP, cuMemMap, va + 4 * MIB, 2 * MIB, 0, h, 0);
    printf("map va=%llu size=%llu handle=%llu ret=%d errno=%d\n", (unsigned long long)(va + 4 * MIB), 2 * MIB,
           (unsigned long long)h, (int)r, errno);
    CUmemAccessDesc desc = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    r = CALL(SET_ACCESS, cuMemSetAccess, va + 4 * MIB, 2 * MIB, &desc, 1);
    printf("set_access va=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)(va + 4 * MIB), 2 * MIB, (int)r,
           errno);
    r = CALL(UNMAP, cuMemUnmap, va + 4 * MIB, 2 * MIB);
    printf("unmap va=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)(va + 4 * MIB), 2 * MIB, (int)r, errno);
    r = CALL(RELEASE, cuMemRelease, h);
    printf("release handle=%llu ret=%d errno=%d\n", (unsigned long long)h, (int)r, errno);
    r = CALL(ADDRESS_FREE, cuMemAddressFree, va, 64 * MIB);
    printf("address_free va=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)va, 64 * MIB, (int)r, errno);
    return 0;
}

static int runtime_calls(void)
{
    void *p = NULL;
    errno = ERRNO_MARK;
    cudaError_t r = cudaMalloc(&p, 3 * MIB);
    printf("cuda_malloc ptr=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)(uintptr_t)p, 3 * MIB, (int)r,
           errno);
    errno = ERRNO_MARK;
    r = cudaFree(p);
    printf("cuda_free ptr=%llu ret=%d errno=%d\n", (unsigned long long)(uintptr_t)p, (int)r, errno);
    return 0;
}

typedef cudaError_t (*coop_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static int cooperative(void)
{
    static const struct { const char *what; coop_fn fn; } v[] = {
        { "cooperative", cudaLaunchCooperativeKernel },
        { "cooperative_ptsz", cudaLaunchCooperativeKernel_ptsz },
    };
    for (int i = 0; i < 2; i++) {
        dim3 grid = { 2, 3, 1 }, block = { 4 + (unsigned)i, 1, 1 };
        errno = ERRNO_MARK;
        cudaError_t r = v[i].fn((const void *)cooperative, grid, block, NULL, 16, 0);
        printf("%s ret=%d errno=%d\n", v[i].what, (int)r, errno);
        cudaGetLastError();
    }
    return 0;
}

#ifndef ANA_PROBE_LINKED
static void where(const char *what, void *f)
{
    Dl_info info;
    const char *file = f && dladdr(f, &info) && info.dli_fname ? info.dli_fname : "-";
    const char *slash = strrchr(file, '/');
    printf("got %s %s %s\n", what, slash ? slash + 1 : file, f && info.dli_sname ? info.dli_sname : "-");
}

static int flavours(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = NULL;
    *(void **)&gpa = lib ? dlsym(lib, "cuGetProcAddress_v2") : NULL;
    if (!gpa)
        return 1;
    static const struct { const char *what, *base; int version; cuuint64_t flags; } q[] = {
        { "alloc_async", "cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_DEFAULT },
        { "alloc_async_legacy", "cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM },
        { "alloc_async_ptds", "cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
        { "free_async_ptds", "cuMemFreeAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
        { "alloc_ptds", "cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
        { "get_proc_12000", "cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_DEFAULT },
        { "get_proc_11030", "cuGetProcAddress", 11030, CU_GET_PROC_ADDRESS_DEFAULT },
        { "mem_get_info", "cuMemGetInfo", 13000, CU_GET_PROC_ADDRESS_DEFAULT },
        { "init", "cuInit", 13000, CU_GET_PROC_ADDRESS_DEFAULT },
    };
    void *got[sizeof(q) / sizeof(q[0])];
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        CUdriverProcAddressQueryResult st;
        if (gpa(q[i].base, &got[i], q[i].version, q[i].flags, &st) != CUDA_SUCCESS)
            got[i] = NULL;
        where(q[i].what, got[i]);
    }
    CUresult (*init)(unsigned int) = (CUresult (*)(unsigned int))got[8];
    CUresult (*alloc)(CUdeviceptr *, size_t, CUstream) = (CUresult (*)(CUdeviceptr *, size_t, CUstream))got[2];
    CUresult (*release)(CUdeviceptr, CUstream) = (CUresult (*)(CUdeviceptr, CUstream))got[3];
    if (!init || !alloc || !release || init(0) != CUDA_SUCCESS)
        return 1;
    CUdeviceptr p = 0;
    errno = ERRNO_MARK;
    CUresult r = alloc(&p, 5 * MIB, 0);
    printf("alloc_async ptr=%llu size=%llu ret=%d errno=%d\n", (unsigned long long)p, 5 * MIB, (int)r, errno);
    errno = ERRNO_MARK;
    r = release(p, 0);
    printf("free_async ptr=%llu ret=%d errno=%d\n", (unsigned long long)p, (int)r, errno);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: drv_probe link|dlsym|getproc|entrypoint|runtime\n");
        return 2;
    }
    if (strcmp(argv[1], "runtime") == 0)
        return runtime_calls();
    if (strcmp(argv[1], "cooperative") == 0)
        return cooperative();
#ifndef ANA_PROBE_LINKED
    if (strcmp(argv[1], "flavours") == 0)
        return flavours();
#endif
    if (resolve(argv[1]) < 0)
        return 1;
    print_modules();
    return driver_calls();
}

/*
 * drvlink.c — how the runtime finds the driver: on first use it dlopens libcuda.so.1
 * (RTLD_NOW, found like NVIDIA's: LD_LIBRARY_PATH, the program's run path, the loader
 * cache; failing that, the copy next to this library), looks up cuGetProcAddress_v2,
 * resolves the entry points it calls by base name for CUDA 13000 and calls cuInit(0).
 * Also cudaGetDriverEntryPoint(ByVersion)(_ptsz), which answer through cuGetProcAddress_v2,
 * and anasim_driver_load (anasim.h), the same loading for the sim's cuBLAS and NCCL.
 *
 * Loading happens once (pthread_once), outside the device lock: the driver calls back into
 * this library. When libcuda.so.1 cannot be loaded or lacks an entry point, one line goes
 * to stderr and the runtime's memory calls answer cudaErrorInsufficientDriver.
 */
#define _GNU_SOURCE
#include "sim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The codes the driver returns to the runtime share their numbers with the runtime's. */
_Static_assert((int)CUDA_ERROR_INVALID_VALUE == (int)cudaErrorInvalidValue, "code");
_Static_assert((int)CUDA_ERROR_OUT_OF_MEMORY == (int)cudaErrorMemoryAllocation, "code");
_Static_assert((int)CUDA_ERROR_NOT_INITIALIZED == (int)cudaErrorInitializationError, "code");
_Static_assert((int)CUDA_ERROR_INVALID_HANDLE == (int)cudaErrorInvalidResourceHandle, "code");
_Static_assert((int)CUDA_ERROR_NOT_FOUND == (int)cudaErrorSymbolNotFound, "code");
_Static_assert((int)CUDA_ERROR_NOT_SUPPORTED == (int)cudaErrorNotSupported, "code");
_Static_assert((int)CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ==
               (int)cudaDriverEntryPointVersionNotSufficent, "status");
_Static_assert((int)CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ==
               (int)cudaDriverEntryPointSymbolNotFound, "status");

cudaError_t ana_sim_from_cu(CUresult r) { return (cudaError_t)r; }

/* ---- anasim_driver_load: how every sim library reaches the driver --------------------- */

/* libcuda.so.1 from the directory of the object that contains `beside`. */
static void *open_beside(const void *beside)
{
    Dl_info info;
    char path[4096];
    if (!dladdr(beside, &info) || !info.dli_fname)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return NULL;
    int n = snprintf(path, sizeof(path), "%.*s/libcuda.so.1",
                     (int)(slash - info.dli_fname), info.dli_fname);
    return n > 0 && (size_t)n < sizeof(path) ? dlopen(path, RTLD_NOW) : NULL;
}

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

static int resolve(get_proc_address_fn gpa, const char *who, const anasim_driver_entry *e)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(e->name, &fn, ANA_SIM_CUDA_VERSION, e->flags, &status) != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "anatomist-sim: libcuda.so.1 has no %s; %s will fail\n", e->name,
                who);
        return -1;
    }
    memcpy(e->slot, &fn, sizeof(fn));   /* object pointer to function pointer, bit for bit */
    return 0;
}

ANASIM_PRIVATE_API int anasim_driver_load(const char *who, const void *beside,
                                          const anasim_driver_entry *want, size_t n,
                                          void *get_proc_address)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        h = open_beside(beside);
    const char *why = h ? NULL : dlerror();
    void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!sym) {
        fprintf(stderr, "anatomist-sim: cannot load the driver (libcuda.so.1%s%s); %s will "
                        "fail\n", why ? ": " : "", why ? why : "", who);
        return -1;
    }
    get_proc_address_fn gpa;
    memcpy(&gpa, &sym, sizeof(sym));
    CUresult (*init)(unsigned int) = NULL;
    int bad = resolve(gpa, who, &(anasim_driver_entry){ "cuInit", 0, &init });
    for (size_t i = 0; i < n; i++)
        bad |= resolve(gpa, who, &want[i]);
    if (bad)
        return -1;
    if (init(0) != CUDA_SUCCESS) {
        fprintf(stderr, "anatomist-sim: the driver did not initialise; %s will fail\n", who);
        return -1;
    }
    if (get_proc_address)
        memcpy(get_proc_address, &gpa, sizeof(gpa));
    return 0;
}

/* ---- the runtime's driver ------------------------------------------------------------ */

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct ana_sim_driver driver;
static const struct ana_sim_driver *loaded;

static void load(void)
{
    const cuuint64_t ptsz = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const anasim_driver_entry want[] = {
        { "cuMemAlloc", 0, &driver.mem_alloc },
        { "cuMemFree", 0, &driver.mem_free },
        { "cuMemAllocAsync", 0, &driver.mem_alloc_async[0] },
        { "cuMemAllocAsync", ptsz, &driver.mem_alloc_async[1] },
        { "cuMemFreeAsync", 0, &driver.mem_free_async[0] },
        { "cuMemFreeAsync", ptsz, &driver.mem_free_async[1] },
        { "cuMemAllocFromPoolAsync", 0, &driver.mem_alloc_from_pool_async[0] },
        { "cuMemAllocFromPoolAsync", ptsz, &driver.mem_alloc_from_pool_async[1] },
        { "cuMemAllocManaged", 0, &driver.mem_alloc_managed },
        { "cuMemAllocHost", 0, &driver.mem_alloc_host },
        { "cuMemHostAlloc", 0, &driver.mem_host_alloc },
        { "cuMemFreeHost", 0, &driver.mem_free_host },
        { "cuMemAllocPitch", 0, &driver.mem_alloc_pitch },
        { "cuMemGetInfo", 0, &driver.mem_get_info },
    };
    if (anasim_driver_load("device memory calls", (const void *)&ana_sim_driver, want,
                           sizeof(want) / sizeof(want[0]), &driver.get_proc_address) == 0)
        loaded = &driver;
}

const struct ana_sim_driver *ana_sim_driver(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

/* ---- cudaGetDriverEntryPoint & co ---------------------------------------------------- */

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int version, unsigned long long flags, int ptsz, enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (!symbol || !funcPtr)
        return cudaErrorInvalidValue;
    *funcPtr = NULL;
    const struct ana_sim_driver *drv = ana_sim_driver();
    if (!drv)
        return cudaErrorInsufficientDriver;
    if (ptsz && (flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)) == 0)
        flags |= cudaEnablePerThreadDefaultStream;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = drv->get_proc_address(symbol, funcPtr, (int)version, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return ana_sim_from_cu(r);
}

ANA_SIM_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
        unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaGetDriverEntryPoint_v11030_params p = { .symbol = symbol, .funcPtr = funcPtr,
                                                .flags = flags, .driverStatus = driverStatus };
    ANA_SIM_RT_RETURN(cudaGetDriverEntryPoint, v11030, &p,
                      entry_point(symbol, funcPtr, ANA_SIM_CUDA_VERSION, flags, 0,
                                  driverStatus));
}

ANA_SIM_API cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
        unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaGetDriverEntryPoint_ptsz_v11030_params p = { .symbol = symbol, .funcPtr = funcPtr,
                                                     .flags = flags,
                                                     .driverStatus = driverStatus };
    ANA_SIM_RT_RETURN(cudaGetDriverEntryPoint_ptsz, v11030, &p,
                      entry_point(symbol, funcPtr, ANA_SIM_CUDA_VERSION, flags, 1,
                                  driverStatus));
}

ANA_SIM_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol,
        void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
        enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaGetDriverEntryPointByVersion_v12050_params p = {
        .symbol = symbol, .funcPtr = funcPtr, .cudaVersion = cudaVersion, .flags = flags,
        .driverStatus = driverStatus };
    ANA_SIM_RT_RETURN(cudaGetDriverEntryPointByVersion, v12050, &p,
                      entry_point(symbol, funcPtr, cudaVersion, flags, 0, driverStatus));
}

ANA_SIM_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol,
        void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
        enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaGetDriverEntryPointByVersion_ptsz_v12050_params p = {
        .symbol = symbol, .funcPtr = funcPtr, .cudaVersion = cudaVersion, .flags = flags,
        .driverStatus = driverStatus };
    ANA_SIM_RT_RETURN(cudaGetDriverEntryPointByVersion_ptsz, v12050, &p,
                      entry_point(symbol, funcPtr, cudaVersion, flags, 1, driverStatus));
}

/*
 * drv.c — how the simulated cuBLAS libraries reach the driver: as NVIDIA's, which link the
 * CUDA runtime statically, they dlopen libcuda.so.1 (RTLD_NOW, found like NVIDIA's:
 * LD_LIBRARY_PATH, the program's run path, the loader cache; failing that, the copy next
 * to this library), look up cuGetProcAddress_v2, resolve cuInit, cuMemAlloc, cuMemFree
 * and cuLaunchKernel for CUDA 13000 and call cuInit(0). Never the runtime's cudaMalloc or
 * cudaLaunchKernel.
 *
 * Loading happens once (pthread_once). When it fails, one line goes to stderr and
 * blas_driver() answers NULL from then on.
 */
#define _GNU_SOURCE
#include "blas_sim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define BLAS_SIM_CUDA_VERSION 13000

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct blas_driver driver;
static const struct blas_driver *loaded;

/* libcuda.so.1 from the directory this library was loaded from. */
static void *open_beside_us(void)
{
    Dl_info info;
    char path[4096];
    if (!dladdr((void *)&blas_driver, &info) || !info.dli_fname)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return NULL;
    int n = snprintf(path, sizeof(path), "%.*s/libcuda.so.1",
                     (int)(slash - info.dli_fname), info.dli_fname);
    return n > 0 && (size_t)n < sizeof(path) ? dlopen(path, RTLD_NOW) : NULL;
}

static int resolve(get_proc_address_fn gpa, const char *name, void *slot)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(name, &fn, BLAS_SIM_CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
            CUDA_SUCCESS || !fn) {
        fprintf(stderr, "anatomist-sim: libcuda.so.1 has no %s; cuBLAS calls will fail\n",
                name);
        return -1;
    }
    memcpy(slot, &fn, sizeof(fn));   /* object pointer to function pointer, bit for bit */
    return 0;
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        h = open_beside_us();
    void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!sym) {
        fprintf(stderr, "anatomist-sim: cuBLAS cannot load the driver (libcuda.so.1); its "
                        "calls will fail\n");
        return;
    }
    get_proc_address_fn gpa;
    memcpy(&gpa, &sym, sizeof(sym));
    CUresult (*init)(unsigned int) = NULL;
    int bad = resolve(gpa, "cuInit", &init) |
              resolve(gpa, "cuMemAlloc", &driver.mem_alloc) |
              resolve(gpa, "cuMemFree", &driver.mem_free) |
              resolve(gpa, "cuLaunchKernel", &driver.launch);
    if (bad || init(0) != CUDA_SUCCESS)
        return;
    loaded = &driver;
}

const struct blas_driver *blas_driver(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

/*
 * driver.c — how the sim's libnccl.so.2 reaches the driver, as NVIDIA's NCCL does (it
 * links the CUDA runtime statically, which finds libcuda.so.1 at run time): on first use
 * dlopen("libcuda.so.1", RTLD_NOW) (found through LD_LIBRARY_PATH, the program's run path,
 * the loader cache; failing that, the copy next to this library), cuGetProcAddress_v2 for
 * cuInit, cuMemAlloc, cuMemFree and cuLaunchKernel at CUDA 13000, then cuInit(0).
 *
 * Loading happens once (pthread_once). When the driver cannot be loaded one line goes to
 * stderr and ana_nccl_driver_get answers NULL: communicators cannot be created.
 */
#define _GNU_SOURCE
#include "nccl_sim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static ana_nccl_driver driver;
static const ana_nccl_driver *loaded;

/* libcuda.so.1 from the directory this library was loaded from. */
static void *open_beside_us(void)
{
    Dl_info info;
    char path[4096];
    if (!dladdr((void *)&ana_nccl_driver_get, &info) || !info.dli_fname)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return NULL;
    int n = snprintf(path, sizeof(path), "%.*s/libcuda.so.1",
                     (int)(slash - info.dli_fname), info.dli_fname);
    return n > 0 && (size_t)n < sizeof(path) ? dlopen(path, RTLD_NOW) : NULL;
}

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static int resolve(get_proc_fn gpa, const char *name, void *slot)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || !fn) {
        fprintf(stderr, "anatomist-sim: libnccl: libcuda.so.1 has no %s\n", name);
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
        fprintf(stderr, "anatomist-sim: libnccl: cannot load the driver (libcuda.so.1)\n");
        return;
    }
    get_proc_fn gpa;
    memcpy(&gpa, &sym, sizeof(sym));
    CUresult (*init)(unsigned) = NULL;
    int bad = resolve(gpa, "cuInit", &init) |
              resolve(gpa, "cuMemAlloc", &driver.mem_alloc) |
              resolve(gpa, "cuMemFree", &driver.mem_free) |
              resolve(gpa, "cuLaunchKernel", &driver.launch_kernel);
    if (bad || init(0) != CUDA_SUCCESS) {
        fprintf(stderr, "anatomist-sim: libnccl: the driver did not initialise\n");
        return;
    }
    loaded = &driver;
}

const ana_nccl_driver *ana_nccl_driver_get(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

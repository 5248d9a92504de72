/*
 * driver.c — how the sim's libnccl.so.2 reaches the driver, as NVIDIA's NCCL does (it
 * links the CUDA runtime statically, which finds libcuda.so.1 at run time): on first use
 * it dlopens libcuda.so.1 and resolves cuInit, cuMemAlloc, cuMemFree and cuLaunchKernel
 * through its cuGetProcAddress_v2 at CUDA 13000, then calls cuInit(0) — all of it done by
 * the sim's one loader, anasim_driver_load (sim/anasim.h: found through LD_LIBRARY_PATH,
 * the program's run path, the loader cache; failing that, the copy next to this library).
 *
 * Loading happens once (pthread_once). When the driver cannot be loaded one line goes to
 * stderr ("NCCL calls will fail") and ana_nccl_driver_get answers NULL: communicators
 * cannot be created.
 */
#include "nccl_sim.h"

#include <pthread.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static ana_nccl_driver driver;
static const ana_nccl_driver *loaded;

static void load(void)
{
    const anasim_driver_entry want[] = {
        { "cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT, &driver.mem_alloc },
        { "cuMemFree", CU_GET_PROC_ADDRESS_DEFAULT, &driver.mem_free },
        { "cuLaunchKernel", CU_GET_PROC_ADDRESS_DEFAULT, &driver.launch_kernel },
    };
    if (anasim_driver_load("NCCL calls", (const void *)&ana_nccl_driver_get, want,
                           sizeof(want) / sizeof(want[0]), NULL) == 0)
        loaded = &driver;
}

const ana_nccl_driver *ana_nccl_driver_get(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

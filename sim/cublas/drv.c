/*
 * drv.c — how the simulated cuBLAS libraries reach the driver: as NVIDIA's, which link the
 * CUDA runtime statically, they dlopen libcuda.so.1 and resolve cuInit, cuMemAlloc,
 * cuMemFree and cuLaunchKernel through its cuGetProcAddress_v2 for CUDA 13000, then call
 * cuInit(0) — all of it done by the sim's one loader, anasim_driver_load (sim/anasim.h:
 * found like NVIDIA's, failing that the copy next to this library). Never the runtime's
 * cudaMalloc or cudaLaunchKernel.
 *
 * Loading happens once (pthread_once). When it fails, one line goes to stderr ("cuBLAS
 * calls will fail") and blas_driver() answers NULL from then on.
 */
#include "blas_sim.h"

#include "anasim.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct blas_driver driver;
static const struct blas_driver *loaded;

static void load(void)
{
    const anasim_driver_entry want[] = {
        { "cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT, &driver.mem_alloc },
        { "cuMemFree", CU_GET_PROC_ADDRESS_DEFAULT, &driver.mem_free },
        { "cuLaunchKernel", CU_GET_PROC_ADDRESS_DEFAULT, &driver.launch },
    };
    if (anasim_driver_load("cuBLAS calls", (const void *)&blas_driver, want,
                           sizeof(want) / sizeof(want[0]), NULL) == 0)
        loaded = &driver;
}

const struct blas_driver *blas_driver(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

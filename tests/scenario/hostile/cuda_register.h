/* cuda_register.h — what the hostile probes need to register kernels the way nvcc's
 * generated code does, without nvcc (so that kernel names can hold any bytes). */
#ifndef ANA_TEST_CUDA_REGISTER_H
#define ANA_TEST_CUDA_REGISTER_H

#include <cuda_runtime_api.h>

/* nvcc's registration entry points (crt/host_runtime.h declares them for C++ only). */
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
extern void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid,
                                   uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);

/* A fat binary wrapper without nvcc's magic: no device image, so no parameter layouts.
 * Initialise as { 0, 1, NULL, NULL }. */
typedef struct ana_test_fatbin {
    int magic, version;
    const void *data;
    void *filename;
} ana_test_fatbin;

#endif

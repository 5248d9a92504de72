/* cuda_errors.h — the names and messages of CUDA runtime error codes (enum cudaError of
 * CUDA 13.0), as NVIDIA's libcudart.so.13 gives them through cudaGetErrorName and
 * cudaGetErrorString. Shared by the simulated device, which must answer with NVIDIA's
 * text, and the analyzer, which names the codes a trace recorded. No CUDA headers needed;
 * pure and thread-safe. */
#ifndef ANA_CUDA_ERRORS_H
#define ANA_CUDA_ERRORS_H

#include <stddef.h>
#include <stdint.h>

/* "cudaErrorMemoryAllocation" for 2, or NULL when the code is not in the table. */
const char *ana_cuda_error_name(int64_t code);
/* "out of memory" for 2, or NULL when the code is not in the table. */
const char *ana_cuda_error_text(int64_t code);
/* The name, or "error N" formatted into buf for codes not in the table. */
const char *ana_cuda_error_describe(int64_t code, char *buf, size_t cap);

#endif

/* cuda_error.h — names of CUDA runtime error codes, for reports.
 *
 * The analyzer does not include CUDA headers; this table mirrors enum cudaError of
 * CUDA 13.0 (the same names libcudart's cudaGetErrorName returns). Pure, thread-safe. */
#ifndef ANA_CUDA_ERROR_H
#define ANA_CUDA_ERROR_H

#include <stddef.h>
#include <stdint.h>

/* "cudaErrorMemoryAllocation" for 2, or NULL when the code is not in the table. */
const char *ana_cuda_error_name(int64_t code);

/* Like ana_cuda_error_name, but formats unknown codes as "error N" into buf. */
const char *ana_cuda_error_describe(int64_t code, char *buf, size_t cap);

#endif

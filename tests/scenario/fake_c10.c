/* fake_c10.c — a stand-in for PyTorch's CUDA library (built as libc10_cuda.so) whose
 * allocator obtains device memory in segments, for test_memory_anatomy.py: the memory
 * anatomy must recognise an allocation made from this module as a caching-allocator
 * segment (docs/memory-anatomy.md) and leave it unattributed.
 * The calls are not in tail position, so the return address the preload records lies in
 * this module. Returns the pointer, or NULL when cudaMalloc failed. */
#include <cuda_runtime_api.h>
#include <stddef.h>

void *c10_fake_segment_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, bytes);
    return r == cudaSuccess ? p : NULL;
}

int c10_fake_segment_free(void *p)
{
    cudaError_t r = cudaFree(p);
    return r == cudaSuccess ? 0 : 1;
}

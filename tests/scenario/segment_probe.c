/* segment_probe.c — allocates one buffer itself and one segment through the stand-in for
 * PyTorch's allocator (fake_c10.c, libc10_cuda.so), copies into both, and prints
 * `probe own=BYTES segment=BYTES` before freeing them, for test_memory_anatomy.py. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

void *c10_fake_segment_alloc(size_t bytes);
int c10_fake_segment_free(void *p);

int main(void)
{
    const size_t own_bytes = 3u << 20, seg_bytes = 20u << 20;
    void *own = NULL, *seg;
    static char host[4096];
    if (cudaMalloc(&own, own_bytes) != cudaSuccess)
        return 1;
    seg = c10_fake_segment_alloc(seg_bytes);
    if (!seg)
        return 1;
    if (cudaMemcpy(own, host, sizeof(host), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(seg, host, sizeof(host), cudaMemcpyHostToDevice) != cudaSuccess)
        return 1;
    printf("probe own=%zu segment=%zu\n", own_bytes, seg_bytes);
    fflush(stdout);
    if (c10_fake_segment_free(seg) != 0 || cudaFree(own) != cudaSuccess)
        return 1;
    return 0;
}

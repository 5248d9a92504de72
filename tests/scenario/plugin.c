/* plugin — a shared library a program loads with dlopen after it started, allocating
 * device memory from inside: its frames must resolve through the module map. */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"), noinline)) int plugin_alloc(size_t bytes)
{
    void *p = 0;
    int r = (int)cudaMalloc(&p, bytes);
    __asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
    return r; /* never freed: the report lists it as live at exit, with this frame */
}

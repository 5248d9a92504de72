/* dlopen_probe PLUGIN BYTES — loads PLUGIN after start-up and has it allocate BYTES. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    void *warm = 0; /* a CUDA call before the plugin exists: the trace starts without it */
    cudaMalloc(&warm, 64);
    cudaFree(warm);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*fn)(size_t) = (int (*)(size_t))dlsym(h, "plugin_alloc");
    int r = fn ? fn((size_t)atol(argv[2])) : -1;
    printf("plugin_alloc -> %d\n", r);
    return r == 0 ? 0 : 1;
}

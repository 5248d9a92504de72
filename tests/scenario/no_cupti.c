/* no_cupti.c — test fixture, LD_PRELOADed before the profiler: makes every dlopen of a
 * libcupti fail as on a machine without CUPTI (this one has NVIDIA's in the loader's
 * cache, so hiding the simulated one is not enough). Everything else is forwarded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dlopen");
    if (file && strstr(file, "libcupti"))
        return NULL;
    return real(file, mode);
}

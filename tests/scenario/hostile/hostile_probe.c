/* hostile_probe LIBRARY [--extra] [ARGS...] — a traced program whose every string is
 * hostile (hostile.h): it names its thread (the kernel's comm, and NVTX's name of the OS
 * thread), opens NVTX ranges, a mark and a domain with such names, then loads LIBRARY
 * (libana_hostile.so, copied by the test to a path made of hostile directory names) and
 * runs ana_hostile_run, whose functions and kernels carry such names. ARGS are ignored:
 * the test passes hostile strings to land in the trace's argv.
 *
 * Prints `ledger {"kernels":[[name,launches],...],"alloc_bytes":[...]}` and exits 0, or
 * prints what failed and exits 1. */
#define _GNU_SOURCE
#include "hostile.h"

#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* s as a JSON string (the strings of hostile.h hold '"' but no '\\' or control bytes). */
static void ana_hostile_json(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void ana_hostile_ledger(int extra)
{
    const char *names[3] = { ANA_HOSTILE_1, ANA_HOSTILE_2, ANA_HOSTILE_3 };
    int launches[3] = { 2 + extra, 1, extra };
    printf("ledger {\"kernels\":[");
    for (int i = 0; i < 3; i++) {
        printf("%s[", i ? "," : "");
        ana_hostile_json(names[i]);
        printf(",%d]", launches[i]);
    }
    printf("],\"alloc_bytes\":[%d,%d%s]}\n", 1 << 20, 2 << 20, extra ? ",3145728" : "");
}

int main(int argc, char **argv)
{
    int extra = argc > 2 && strcmp(argv[2], "--extra") == 0;
    if (argc < 2)
        return 1;
    pthread_setname_np(pthread_self(), ANA_HOSTILE_THREAD);
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), ANA_HOSTILE_3);
    nvtxDomainHandle_t dom = nvtxDomainCreateA(ANA_HOSTILE_2);
    nvtxRangePushA(ANA_HOSTILE_1);
    nvtxMarkA(ANA_HOSTILE_2);
    nvtxEventAttributes_t a = { 0 };
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = ANA_HOSTILE_3;
    nvtxDomainRangePushEx(dom, &a);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*run)(int) = h ? (int (*)(int))dlsym(h, "ana_hostile_run") : NULL;
    if (!run) {
        printf("hostile_probe: cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    int r = run(extra);
    nvtxDomainRangePop(dom);
    nvtxRangePop();
    nvtxDomainDestroy(dom);
    if (r) {
        printf("hostile_probe: a CUDA call failed (%d)\n", r);
        return 1;
    }
    ana_hostile_ledger(extra);
    return 0;
}

/* hostile_lib.c — libana_hostile.so, the library half of the hostile probe: functions
 * whose symbol names are the strings of hostile.h allocate device memory and launch
 * kernels registered (__cudaRegisterFunction, as nvcc's stubs do) under those strings, so
 * that they reach a trace's KERNEL records and its stacks' symbols. One more function has
 * no symbol at all (the library is stripped of .symtab; only the exported functions keep
 * their names in .dynsym): its frames are named after the library's file, whose path the
 * test makes hostile too.
 *
 * ana_hostile_run(extra): 1 MiB by function 1, which launches kernel 1 (2 + extra times);
 * 2 MiB by function 2, which launches kernel 2 once; with extra, 3 MiB by the unnamed
 * function, which launches kernel 3 once (called from function 3). Everything is freed
 * before it returns. Returns 0, or the first CUDA error. */
#include "hostile.h"

#include "cuda_register.h"
#include <stddef.h>


static const ana_test_fatbin ana_hostile_fatbin = { 0, 1, NULL, NULL };
static const char ana_hostile_stubs[3]; /* three distinct host "stub" addresses */
static char ana_hostile_k1[] = ANA_HOSTILE_1, ana_hostile_k2[] = ANA_HOSTILE_2,
            ana_hostile_k3[] = ANA_HOSTILE_3;

#define EXPORT __attribute__((visibility("default"), noinline))

static void ana_hostile_register(void)
{
    static int done;
    char *names[3] = { ana_hostile_k1, ana_hostile_k2, ana_hostile_k3 };
    if (done++)
        return;
    void **h = __cudaRegisterFatBinary((void *)&ana_hostile_fatbin);
    for (int i = 0; i < 3; i++)
        __cudaRegisterFunction(h, &ana_hostile_stubs[i], names[i], names[i], -1, NULL, NULL,
                               NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
}

static int ana_hostile_launch(int k, int times)
{
    dim3 grid = { 4, 1, 1 }, block = { 128, 1, 1 };
    void *args[1] = { NULL };
    for (int i = 0; i < times; i++) {
        int r = (int)cudaLaunchKernel(&ana_hostile_stubs[k], grid, block, args, 0, 0);
        if (r)
            return r;
    }
    return 0;
}

/* Allocates `bytes` into *p and launches kernel k `times` times. */
static int ana_hostile_work(void **p, size_t bytes, int k, int times)
{
    int r = (int)cudaMalloc(p, bytes);
    return r ? r : ana_hostile_launch(k, times);
}

EXPORT int ana_hostile_fn1(void **p, int times) __asm__("\"" ANA_HOSTILE_1 "\"");
EXPORT int ana_hostile_fn1(void **p, int times)
{
    int r = ana_hostile_work(p, 1 << 20, 0, times);
    __asm__ volatile("" ::: "memory"); /* a call, not a tail jump: this frame stays */
    return r;
}

EXPORT int ana_hostile_fn2(void **p) __asm__("\"" ANA_HOSTILE_2 "\"");
EXPORT int ana_hostile_fn2(void **p)
{
    int r = ana_hostile_work(p, 2 << 20, 1, 1);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* No symbol survives the strip: frames here are named after the library's file. */
static __attribute__((noinline)) int ana_hostile_unnamed(void **p)
{
    int r = ana_hostile_work(p, 3 << 20, 2, 1);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT int ana_hostile_fn3(void **p) __asm__("\"" ANA_HOSTILE_3_SYM "\"");
EXPORT int ana_hostile_fn3(void **p)
{
    int r = ana_hostile_unnamed(p);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT int ana_hostile_run(int extra)
{
    void *p[3] = { NULL, NULL, NULL };
    ana_hostile_register();
    int r = ana_hostile_fn1(&p[0], 2 + extra);
    if (!r)
        r = ana_hostile_fn2(&p[1]);
    if (!r && extra)
        r = ana_hostile_fn3(&p[2]);
    if (!r)
        r = (int)cudaDeviceSynchronize();
    for (int i = 0; i < 3; i++)
        if (p[i])
            cudaFree(p[i]);
    return r;
}

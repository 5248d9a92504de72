/* escape_probe [--extra] [--oom] [ARGS...] — a traced program whose kernel names and NVTX
 * range name hold terminal controls (escape.h): OSC that retitles the terminal, CSI that
 * recolours or clears it, BEL, a C1 CSI (U+009B), and a newline followed by a line that
 * looks like a report's. Kernel 1 is launched 2 (3 with --extra) times, kernel 2 once;
 * with --oom a last cudaMalloc asks for more than any device has. ARGS are ignored: the
 * test passes such strings to land in the trace's argv, and runs a copy of the probe whose
 * path holds them too (module and executable paths). Prints `ledger {...}`, exits 0. */
#include "escape.h"

#include "cuda_register.h"
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <string.h>


static const ana_test_fatbin ana_esc_fatbin = { 0, 1, NULL, NULL };
static const char ana_esc_stubs[2];
static char ana_esc_k1[] = ANA_ESC_KERNEL_1, ana_esc_k2[] = ANA_ESC_KERNEL_2;

static int ana_esc_launch(int k, int times)
{
    dim3 grid = { 2, 1, 1 }, block = { 64, 1, 1 };
    void *args[1] = { NULL };
    for (int i = 0; i < times; i++) {
        int r = (int)cudaLaunchKernel(&ana_esc_stubs[k], grid, block, args, 0, 0);
        if (r)
            return r;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int extra = 0, oom = 0;
    for (int i = 1; i < argc; i++) {
        extra |= strcmp(argv[i], "--extra") == 0;
        oom |= strcmp(argv[i], "--oom") == 0;
    }
    void **h = __cudaRegisterFatBinary((void *)&ana_esc_fatbin);
    __cudaRegisterFunction(h, &ana_esc_stubs[0], ana_esc_k1, ana_esc_k1, -1, NULL, NULL, NULL,
                           NULL, NULL);
    __cudaRegisterFunction(h, &ana_esc_stubs[1], ana_esc_k2, ana_esc_k2, -1, NULL, NULL, NULL,
                           NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
    nvtxRangePushA(ANA_ESC_RANGE);
    void *p = NULL, *q = NULL;
    int r = (int)cudaMalloc(&p, 1 << 20);
    if (!r)
        r = ana_esc_launch(0, 2 + extra);
    if (!r)
        r = ana_esc_launch(1, 1);
    if (!r)
        r = (int)cudaDeviceSynchronize();
    nvtxRangePop();
    if (oom && cudaMalloc(&q, (size_t)1 << 50) == cudaSuccess) {
        printf("escape_probe: 1 PiB was allocated\n");
        return 1;
    }
    cudaFree(p);
    if (r) {
        printf("escape_probe: a CUDA call failed (%d)\n", r);
        return 1;
    }
    printf("ledger {\"launches\":[%d,1]}\n", 2 + extra);
    return 0;
}

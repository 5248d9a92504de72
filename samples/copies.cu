// copies — host<->device copies of every flavour the profiler must tell apart: from and to
// pageable (malloc) and pinned (cudaMallocHost) host memory, synchronous cudaMemcpy and
// stream-ordered cudaMemcpyAsync, plus one device-to-device copy and one cudaMemset.
//
// The copies are a table (`ops` below); every entry has its own byte count, so each one
// can be recognised in a trace by its size alone. The program keeps a host-side model of
// both device buffers, applies every operation to it as well, and verifies every
// device-to-host copy against it: copies really move bytes, on a GPU and on the simulated
// device alike, so the check always runs. The ledger (every operation, totals by
// direction and host kind) is printed as JSON on the last stdout line.
//
//   copies        (no options)
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_common.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
static const size_t BUF_BYTES = 8 * MIB;  // each of the four buffers

// ---------------------------------------------------------------- the operations

enum where { PAGEABLE, PINNED, DEV_A, DEV_B, NWHERE };
static const char *where_name[NWHERE] = {"pageable", "pinned", "dev_a", "dev_b"};
static int is_host(enum where w) { return w == PAGEABLE || w == PINNED; }

// A copy from src+soff to dst+doff, or (memset) `value` written at dst+doff. The
// direction follows from the two places. Device regions read are always ones written
// before, so that the model knows what they hold.
static const struct op {
    int memset, async;
    enum where src; size_t soff;
    enum where dst; size_t doff;
    size_t bytes;
    int value;
} ops[] = {
    {0, 0, PAGEABLE, 0,        DEV_A, 0,        3 * MIB,    0},  // h2d sync pageable
    {0, 0, PINNED,   0,        DEV_B, 0,        5 * MIB,    0},  // h2d sync pinned
    {0, 1, PINNED,   5 * MIB,  DEV_A, 4 * MIB,  1 * MIB,    0},  // h2d async pinned
    {0, 1, PAGEABLE, 3 * MIB,  DEV_A, 6 * MIB,  768 * KIB,  0},  // h2d async pageable
    {0, 0, DEV_A,    0,        DEV_B, 6 * MIB,  2 * MIB,    0},  // d2d sync
    {1, 0, DEV_B,    0,        DEV_B, 5 * MIB,  512 * KIB,  0x5a},  // memset
    {0, 0, DEV_B,    0,        PAGEABLE, 0,     5632 * KIB, 0},  // d2h sync pageable
    {0, 0, DEV_A,    0,        PINNED, 0,       2560 * KIB, 0},  // d2h sync pinned
    {0, 1, DEV_B,    6 * MIB,  PINNED, 3 * MIB, 1792 * KIB, 0},  // d2h async pinned
    {0, 1, DEV_A,    4 * MIB,  PAGEABLE, 6 * MIB, 896 * KIB, 0}, // d2h async pageable
    {0, 0, DEV_A,    6 * MIB,  PAGEABLE, 7 * MIB, 640 * KIB, 0}, // d2h sync pageable
};
#define NOPS (sizeof ops / sizeof ops[0])

static unsigned char *buf[NWHERE];    // the real buffers
static unsigned char *model[NWHERE];  // what DEV_A and DEV_B should hold (host memory)
static cudaStream_t stream;

static const char *direction(const struct op *o)
{
    if (o->memset)
        return "memset";
    if (is_host(o->src))
        return "h2d";
    return is_host(o->dst) ? "d2h" : "d2d";
}

static const char *host_kind(const struct op *o)
{
    enum where h = is_host(o->src) ? o->src : is_host(o->dst) ? o->dst : NWHERE;
    return h == NWHERE ? "none" : where_name[h];
}

static cudaMemcpyKind memcpy_kind(const struct op *o)
{
    const char *d = direction(o);
    return !strcmp(d, "h2d") ? cudaMemcpyHostToDevice
         : !strcmp(d, "d2h") ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
}

// Runs one operation, waits for it, applies it to the model, and for a copy to the
// host compares what arrived with the model.
static void run(int i, const struct op *o)
{
    unsigned char *dst = buf[o->dst] + o->doff, *src = buf[o->src] + o->soff;
    if (o->memset)
        CUDA_CHECK(o->async ? cudaMemsetAsync(dst, o->value, o->bytes, stream)
                            : cudaMemset(dst, o->value, o->bytes));
    else
        CUDA_CHECK(o->async ? cudaMemcpyAsync(dst, src, o->bytes, memcpy_kind(o), stream)
                            : cudaMemcpy(dst, src, o->bytes, memcpy_kind(o)));
    if (o->async)  // the host reads the buffers next, so the copy must be done
        CUDA_CHECK(cudaStreamSynchronize(stream));

    unsigned char *m_src = is_host(o->src) ? src : model[o->src] + o->soff;
    if (is_host(o->dst)) {
        if (memcmp(dst, m_src, o->bytes) != 0)
            fatal("copies: operation %d (%s %s, %zu bytes) delivered wrong bytes", i,
                  direction(o), host_kind(o), o->bytes);
    } else if (o->memset) {
        memset(model[o->dst] + o->doff, o->value, o->bytes);
    } else {
        memmove(model[o->dst] + o->doff, m_src, o->bytes);
    }
}

// ---------------------------------------------------------------- the ledger

static void print_ledger(void)
{
    size_t h2d[NWHERE] = {0}, d2h[NWHERE] = {0}, d2d = 0, set = 0;
    int calls_sync = 0, calls_async = 0;
    printf("ledger {\"pageable_bytes\":%zu,\"pinned_bytes\":%zu,\"device_bytes\":%zu,"
           "\"ops\":[", BUF_BYTES, BUF_BYTES, 2 * BUF_BYTES);
    for (size_t i = 0; i < NOPS; i++) {
        const struct op *o = &ops[i];
        const char *d = direction(o);
        printf("%s{\"dir\":\"%s\",\"host\":\"%s\",\"bytes\":%zu,\"async\":%s}", i ? "," : "",
               d, host_kind(o), o->bytes, o->async ? "true" : "false");
        if (!strcmp(d, "h2d"))
            h2d[o->src] += o->bytes;
        else if (!strcmp(d, "d2h"))
            d2h[o->dst] += o->bytes;
        else if (!strcmp(d, "d2d"))
            d2d += o->bytes;
        else
            set += o->bytes;
        *(o->async ? &calls_async : &calls_sync) += 1;
    }
    printf("],\"totals\":{\"h2d\":{\"pageable\":%zu,\"pinned\":%zu},"
           "\"d2h\":{\"pageable\":%zu,\"pinned\":%zu},\"d2d\":%zu,\"memset\":%zu},"
           "\"sync_calls\":%d,\"async_calls\":%d,\"verified\":true}\n",
           h2d[PAGEABLE], h2d[PINNED], d2h[PAGEABLE], d2h[PINNED], d2d, set, calls_sync,
           calls_async);
    fflush(stdout);
}

// ---------------------------------------------------------------- main

int main(int argc, char **)
{
    if (argc > 1)
        fatal("usage: copies");
    buf[PAGEABLE] = (unsigned char *)malloc(BUF_BYTES);
    CUDA_CHECK(cudaMallocHost((void **)&buf[PINNED], BUF_BYTES));
    CUDA_CHECK(cudaMalloc((void **)&buf[DEV_A], BUF_BYTES));
    CUDA_CHECK(cudaMalloc((void **)&buf[DEV_B], BUF_BYTES));
    model[DEV_A] = (unsigned char *)malloc(BUF_BYTES);
    model[DEV_B] = (unsigned char *)malloc(BUF_BYTES);
    if (!buf[PAGEABLE] || !model[DEV_A] || !model[DEV_B])
        fatal("copies: out of host memory");
    for (size_t i = 0; i < BUF_BYTES; i++) {  // two different patterns, no period of 2^k
        buf[PAGEABLE][i] = (unsigned char)(i * 131 + i / 251);
        buf[PINNED][i] = (unsigned char)(i * 37 + i / 241 + 101);
    }
    CUDA_CHECK(cudaStreamCreate(&stream));

    for (size_t i = 0; i < NOPS; i++)
        run((int)i, &ops[i]);

    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(buf[DEV_A]));
    CUDA_CHECK(cudaFree(buf[DEV_B]));
    CUDA_CHECK(cudaFreeHost(buf[PINNED]));
    free(buf[PAGEABLE]);
    free(model[DEV_A]);
    free(model[DEV_B]);
    print_ledger();
    return 0;
}

/* libpeaks.c — the reference figures of the library analysis (libcalls.h): dense peak
 * TFLOP/s per compute capability and precision, what an NCCL kernel's name says of its
 * algorithm and protocol, and nccl-tests' bandwidths. The peak numbers and their sources
 * are in docs/report-schema.md (`gemms`). Part of analyses/: called by libcalls.c and the
 * views of GEMMs and collectives; calls model/ only. */
#include "analyses/libcalls.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Dense (no sparsity) tensor-core / FMA peaks, TFLOP/s, per compute capability.
 * -1: the device has no such path (A100 has no fp8). */
static const struct ana_peak_row {
    uint8_t major, minor;
    double tflops[ANA_PREC_OTHER]; /* fp64, fp32, tf32, fp16, bf16, fp8 */
} ana_peaks[] = {
    { 8, 0, { 19.5, 19.5, 156.0, 312.0, 312.0, -1.0 } },        /* A100 SXM */
    { 9, 0, { 67.0, 67.0, 494.7, 989.4, 989.4, 1978.9 } },      /* H100 SXM */
    { 10, 0, { 40.0, 80.0, 1100.0, 2250.0, 2250.0, 4500.0 } },  /* B200 */
};

double ana_peak_tflops(uint64_t cc_major, uint64_t cc_minor, int prec)
{
    if (prec < 0 || prec >= ANA_PREC_OTHER)
        return -1.0;
    for (size_t i = 0; i < sizeof(ana_peaks) / sizeof(ana_peaks[0]); i++)
        if (ana_peaks[i].major == cc_major && ana_peaks[i].minor == cc_minor)
            return ana_peaks[i].tflops[prec];
    return -1.0;
}

/* The identifier of a mangled name ("_Z38ncclDevKernel_..._LL24ncclDevKernelArgs4K" ->
 * the 38 bytes after the length); the name itself otherwise. */
static const char *ana_nccl_ident(const char *name, size_t *len)
{
    if (strncmp(name, "_Z", 2) == 0 && isdigit((unsigned char)name[2])) {
        char *end;
        unsigned long n = strtoul(name + 2, &end, 10);
        if (n && strlen(end) >= n) {
            *len = n;
            return end;
        }
    }
    *len = strcspn(name, "(<");
    return name;
}

static void ana_copy_tok(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

int ana_nccl_kernel_algo(const char *name, char *op, size_t op_cap, char *algo,
                         size_t algo_cap, char *proto, size_t proto_cap)
{
    static const char *const algos[] = { "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS",
                                         "RING", "TREE", "PAT" };
    static const char *const protos[] = { "LL128", "LL", "SIMPLE" };
    static const char *const ops[] = { "AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                       "Reduce", "SendRecv" };
    size_t len, i = 0;
    const char *id = ana_nccl_ident(name, &len);
    op[0] = algo[0] = proto[0] = 0;
    if (strncmp(id, "ncclDevKernel_", 14) != 0 && strncmp(id, "ncclKernel_", 11) != 0)
        return 0;
    while (i < len) { /* tokens: runs between '_' */
        size_t rest = len - i, t;
        for (t = 0; t < sizeof(algos) / sizeof(algos[0]) && !algo[0]; t++) {
            size_t n = strlen(algos[t]);
            if (n <= rest && memcmp(id + i, algos[t], n) == 0 && (n == rest || id[i + n] == '_'))
                ana_copy_tok(algo, algo_cap, algos[t], n);
        }
        for (t = 0; t < sizeof(protos) / sizeof(protos[0]) && !proto[0]; t++) {
            size_t n = strlen(protos[t]);
            if (n <= rest && memcmp(id + i, protos[t], n) == 0 && (n == rest || id[i + n] == '_'))
                ana_copy_tok(proto, proto_cap, protos[t], n);
        }
        for (t = 0; t < sizeof(ops) / sizeof(ops[0]) && !op[0]; t++) {
            size_t n = strlen(ops[t]);
            if (n <= rest && memcmp(id + i, ops[t], n) == 0 && (n == rest || id[i + n] == '_'))
                ana_copy_tok(op, op_cap, ops[t], n);
        }
        const char *u = memchr(id + i, '_', rest);
        i = u ? (size_t)(u - id) + 1 : len;
    }
    return algo[0] || proto[0];
}

/* nccl-tests (doc/PERFORMANCE.md): algbw = S / t, with S the bytes of the operation —
 * for AllGather the gathered output (count × ranks), for ReduceScatter the input
 * (count × ranks), otherwise count bytes. The analyzer's t is the mean GPU time per call. */
double ana_nccl_algbw(uint16_t api, uint64_t bytes, int64_t ranks, uint64_t count,
                      uint64_t gpu_ns)
{
    double s = (double)bytes;
    if (!gpu_ns || !count)
        return -1.0;
    if (api == ANA_API_NCCL_ALL_GATHER || api == ANA_API_NCCL_REDUCE_SCATTER) {
        if (ranks <= 0)
            return -1.0;
        s *= (double)ranks;
    }
    return s * (double)count / (double)gpu_ns; /* bytes per ns = GB/s */
}

/* busbw = algbw × factor: AllReduce 2(n−1)/n, AllGather and ReduceScatter (n−1)/n,
 * Broadcast, Reduce, Send and Recv 1. */
double ana_nccl_busbw_factor(uint16_t api, int64_t ranks)
{
    switch (api) {
    case ANA_API_NCCL_ALL_REDUCE:
        return ranks > 0 ? 2.0 * (double)(ranks - 1) / (double)ranks : -1.0;
    case ANA_API_NCCL_ALL_GATHER:
    case ANA_API_NCCL_REDUCE_SCATTER:
        return ranks > 0 ? (double)(ranks - 1) / (double)ranks : -1.0;
    default: return 1.0;
    }
}

/* libtables.c — the reference tables of the library analysis (libcalls.h): dense peak
 * TFLOP/s per compute capability and precision, the effective precision of a GEMM, names
 * of CUDA/cuBLAS/NCCL enumerations, NCCL kernel names, and nccl-tests' bandwidths.
 * The peak numbers and their sources are in docs/report-schema.md (`gemms`). */
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

static const char *const ana_prec_names[ANA_PREC_COUNT] = { "fp64", "fp32", "tf32", "fp16",
                                                            "bf16", "fp8", "other" };

const char *ana_prec_name(int prec)
{
    return prec >= 0 && prec < ANA_PREC_COUNT ? ana_prec_names[prec] : "other";
}

/* cudaDataType_t values (library_types.h) the rules look at. */
enum { T_R32F = 0, T_R64F = 1, T_R16F = 2, T_C32F = 4, T_C64F = 5, T_R16BF = 14,
       T_R8F_E4M3 = 28, T_R8F_E5M2 = 29 };

int ana_gemm_precision(uint64_t a_type, uint64_t compute_type, uint64_t math_mode)
{
    switch (a_type) {
    case T_R16F: return ANA_PREC_FP16;
    case T_R16BF: return ANA_PREC_BF16;
    case T_R8F_E4M3:
    case T_R8F_E5M2: return ANA_PREC_FP8;
    case T_R64F:
    case T_C64F: return ANA_PREC_FP64;
    case T_R32F:
    case T_C32F:
        if (compute_type == 77 || (math_mode & 0xf) == 3) /* 32F_FAST_TF32, TF32_TENSOR_OP */
            return ANA_PREC_TF32;
        if (compute_type == 74) /* 32F_FAST_16F */
            return ANA_PREC_FP16;
        if (compute_type == 75) /* 32F_FAST_16BF */
            return ANA_PREC_BF16;
        return ANA_PREC_FP32;
    default: return ANA_PREC_OTHER;
    }
}

const char *ana_cuda_type_name(uint64_t t)
{
    static const char *const names[] = {
        [0] = "fp32", [1] = "fp64", [2] = "fp16", [3] = "int8", [4] = "c_fp32", [5] = "c_fp64",
        [6] = "c_fp16", [7] = "c_int8", [8] = "uint8", [9] = "c_uint8", [10] = "int32",
        [11] = "c_int32", [12] = "uint32", [13] = "c_uint32", [14] = "bf16", [15] = "c_bf16",
        [16] = "int4", [17] = "c_int4", [18] = "uint4", [19] = "c_uint4", [20] = "int16",
        [21] = "c_int16", [22] = "uint16", [23] = "c_uint16", [24] = "int64", [25] = "c_int64",
        [26] = "uint64", [27] = "c_uint64", [28] = "fp8e4m3", [29] = "fp8e5m2",
        [30] = "fp8ue8m0", [31] = "fp6e2m3", [32] = "fp6e3m2", [33] = "fp4e2m1",
    };
    return t < sizeof(names) / sizeof(names[0]) ? names[t] : NULL;
}

const char *ana_compute_type_name(uint64_t t)
{
    switch (t) {
    case 64: return "16F";
    case 65: return "16F_PEDANTIC";
    case 68: return "32F";
    case 69: return "32F_PEDANTIC";
    case 70: return "64F";
    case 71: return "64F_PEDANTIC";
    case 72: return "32I";
    case 73: return "32I_PEDANTIC";
    case 74: return "32F_FAST_16F";
    case 75: return "32F_FAST_16BF";
    case 77: return "32F_FAST_TF32";
    case 78: return "32F_EMULATED_16BFX9";
    case 79: return "64F_EMULATED_FIXEDPOINT";
    default: return NULL;
    }
}

const char *ana_nccl_type_name(uint64_t t)
{
    static const char *const names[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                                         "fp16", "fp32", "fp64", "bf16", "fp8e4m3", "fp8e5m2" };
    return t < sizeof(names) / sizeof(names[0]) ? names[t] : NULL;
}

const char *ana_nccl_op_name(uint64_t api)
{
    switch (api) {
    case ANA_API_NCCL_ALL_REDUCE: return "AllReduce";
    case ANA_API_NCCL_REDUCE: return "Reduce";
    case ANA_API_NCCL_BROADCAST:
    case ANA_API_NCCL_BCAST: return "Broadcast";
    case ANA_API_NCCL_ALL_GATHER: return "AllGather";
    case ANA_API_NCCL_REDUCE_SCATTER: return "ReduceScatter";
    case ANA_API_NCCL_SEND: return "Send";
    case ANA_API_NCCL_RECV: return "Recv";
    default: return NULL;
    }
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

/* libtables.c — what the library records' numbers mean (libs.h): the effective precision
 * of a GEMM and the names of CUDA, cuBLAS and NCCL enumerations. Part of model/: called
 * while loading (libs_load.c) and by the analyses and views that print these records;
 * calls nothing. */
#include "model/libs.h"

#include <stdlib.h>
#include <string.h>

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

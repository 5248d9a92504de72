/* kineto_names.c — the name tables of the Kineto importer (kineto_int.h): event
 * categories and argument keys as the profiler spells them, the api numbers of runtime and
 * driver calls (format/records.h), copy and memory kinds from a copy's name, the API
 * context of an op, the ops imported as ranges, and the CUDA / NCCL data type of a PyTorch
 * type name (docs/kineto-import.md). Pure functions of their arguments.
 * Part of import/: called by kineto.c and kineto_emit.c; calls nothing. */
#include "import/kineto_int.h"

#include "analyses/classify.h"

#include <ctype.h>
#include <string.h>

/* ---- categories and argument keys -------------------------------------------------- */

int kin_cat_of(const char *c)
{
    static const struct { const char *name; int cat; } cats[] = {
        { "kernel", K_KERNEL }, { "Kernel", K_KERNEL }, { "gpu_memcpy", K_MEMCPY },
        { "Memcpy", K_MEMCPY }, { "gpu_memset", K_MEMSET }, { "Memset", K_MEMSET },
        { "cuda_runtime", K_RUNTIME }, { "Runtime", K_RUNTIME }, { "cuda_driver", K_RUNTIME },
        { "cpu_op", K_OP }, { "Operator", K_OP }, { "user_annotation", K_USER },
        { "gpu_user_annotation", K_GPU_USER }, { "python_function", K_SILENT },
        { "python", K_SILENT }, { "ac2g", K_SILENT }, { "fwdbwd", K_SILENT },
        { "async", K_SILENT }, { "overhead", K_SILENT }, { "Trace", K_SILENT },
        { "cpu_instant_event", K_NONE },
        /* GPU-side copies of the host's launch order, synchronisations, profiler ranges:
         * nothing to import (the copies and kernels themselves carry the time). */
        { "async_cpu_to_gpu", K_SILENT }, { "cuda_sync", K_SILENT },
        { "cuda_profiler_range", K_SILENT },
    };
    for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
        if (strcmp(c, cats[i].name) == 0)
            return cats[i].cat;
    return K_OTHER;
}

int kin_arg_of(const char *key, size_t n)
{
    static const struct { const char *key; int arg; } args[] = {
        { "External id", A_EXT }, { "external id", A_EXT }, { "correlation", A_CORR },
        { "device", A_DEVICE }, { "stream", A_STREAM }, { "bytes", A_BYTES },
        { "registers per thread", A_REGS }, { "shared memory", A_SHMEM },
        { "Device Type", A_DEVTYPE }, { "Device Id", A_DEVID }, { "Bytes", A_MBYTES },
        { "Addr", A_ADDR }, { "Total Allocated", A_TOTAL }, { "In msg nelems", A_IN },
        { "Out msg nelems", A_OUT }, { "Group size", A_GROUP }, { "Collective name", A_COLL },
        { "dtype", A_DTYPE }, { "Process Group Name", A_PG },
        { "Process Group Ranks", A_PGRANKS }, { "name", A_NAME }, { "grid", A_GRID },
        { "block", A_BLOCK }, { "Input Dims", A_DIMS }, { "Input dims", A_DIMS }, { "Input type", A_TYPES },
    };
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        if (strlen(args[i].key) == n && memcmp(args[i].key, key, n) == 0)
            return args[i].arg;
    return -1;
}

/* ---- names ------------------------------------------------------------------------- */

static int kin_word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* "Memcpy HtoD (Pageable -> Device)": the copy kind and the memory kinds of both sides. */
void kin_copy_kinds(const char *name, uint64_t *kind, uint64_t *src, uint64_t *dst)
{
    static const char *const kinds[] = { "", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                         "DtoA", "DtoD", "HtoH", "PtoP" };
    static const char *const mems[] = { "", "Pageable", "Pinned", "Device", "Array", "Managed",
                                        "Device Static", "Managed Static" };
    const char *p = strchr(name, ' '), *o, *a, *c;
    *kind = *src = *dst = 0;
    if (!p)
        return;
    p++;
    size_t n = strcspn(p, " ");
    for (size_t i = 1; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kin_word_is(p, n, kinds[i]))
            *kind = i;
    if (!(o = strchr(p, '(')) || !(c = strchr(o, ')')))
        return;
    o++;
    a = strstr(o, " -> ");
    for (size_t i = 1; i < sizeof(mems) / sizeof(mems[0]); i++) {
        if (a && a < c && kin_word_is(o, (size_t)(a - o), mems[i]))
            *src = i;
        if (kin_word_is(a && a < c ? a + 4 : o, (size_t)(c - (a && a < c ? a + 4 : o)), mems[i]))
            *dst = i;
    }
}

/* LAUNCH/MEMCPY/MEMSET api of a runtime or driver call (docs/kineto-import.md), or 0. */
uint16_t kin_api_of(const char *name, uint8_t *kind)
{
    static const struct { const char *name; uint16_t api; uint8_t kind; } apis[] = {
        { "cudaLaunchKernel", 20, ANA_K_LAUNCH }, { "cudaLaunchKernel_ptsz", 21, ANA_K_LAUNCH },
        { "cudaLaunchKernelExC", 22, ANA_K_LAUNCH }, { "cudaLaunchKernelExC_ptsz", 23, ANA_K_LAUNCH },
        { "cudaLaunchCooperativeKernel", 18, ANA_K_LAUNCH },
        { "cudaLaunchCooperativeKernelMultiDevice", 18, ANA_K_LAUNCH },
        { "cuLaunchCooperativeKernel", 18, ANA_K_LAUNCH }, { "cuGraphLaunch", 19, ANA_K_LAUNCH },
        { "cudaGraphLaunch", 26, ANA_K_LAUNCH }, { "cudaGraphLaunch_ptsz", 27, ANA_K_LAUNCH },
        { "cuLaunchKernel", 28, ANA_K_LAUNCH }, { "cuLaunchKernelEx", 29, ANA_K_LAUNCH },
        { "cudaMemcpy", 30, ANA_K_MEMCPY }, { "cudaMemcpyAsync", 31, ANA_K_MEMCPY },
        { "cudaMemcpy2D", 32, ANA_K_MEMCPY }, { "cudaMemcpy2DAsync", 33, ANA_K_MEMCPY },
        { "cudaMemcpyToSymbol", 34, ANA_K_MEMCPY }, { "cudaMemcpyFromSymbol", 35, ANA_K_MEMCPY },
        { "cudaMemcpyPeer", 36, ANA_K_MEMCPY }, { "cudaMemcpyPeerAsync", 37, ANA_K_MEMCPY },
        { "cudaMemcpy3D", 38, ANA_K_MEMCPY }, { "cudaMemcpy3DAsync", 39, ANA_K_MEMCPY },
        { "cuMemcpy", 80, ANA_K_MEMCPY }, { "cuMemcpyAsync", 81, ANA_K_MEMCPY },
        { "cuMemcpyHtoD", 82, ANA_K_MEMCPY }, { "cuMemcpyHtoDAsync", 83, ANA_K_MEMCPY },
        { "cuMemcpyDtoH", 84, ANA_K_MEMCPY }, { "cuMemcpyDtoHAsync", 85, ANA_K_MEMCPY },
        { "cuMemcpyDtoD", 86, ANA_K_MEMCPY }, { "cuMemcpyDtoDAsync", 87, ANA_K_MEMCPY },
        { "cudaMemset", 40, ANA_K_MEMSET }, { "cudaMemsetAsync", 41, ANA_K_MEMSET },
        { "cudaMemset2D", 42, ANA_K_MEMSET }, { "cudaMemset2DAsync", 43, ANA_K_MEMSET },
        { "cudaMemset3D", 44, ANA_K_MEMSET }, { "cudaMemset3DAsync", 45, ANA_K_MEMSET },
        { "cuMemsetD8", 90, ANA_K_MEMSET }, { "cuMemsetD32", 91, ANA_K_MEMSET },
        { "cuMemsetD8Async", 92, ANA_K_MEMSET }, { "cuMemsetD32Async", 93, ANA_K_MEMSET },
    };
    /* versioned and per-thread-stream entry points: cuMemcpyHtoD_v2, cudaMemcpy_ptds... */
    size_t n = strlen(name);
    const char *v = strstr(name, "_v");
    if (!v)
        v = strstr(name, "_ptds");
    if (v && !(n >= 5 && strcmp(name + n - 5, "_ptsz") == 0))
        n = (size_t)(v - name);
    for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
        if (kin_word_is(name, n, apis[i].name)) {
            *kind = apis[i].kind;
            return apis[i].api;
        }
    return 0;
}

/* The API context an op gives the kernels launched inside it (classify.h). */
int kin_op_ctx(const char *op)
{
    static const char *const gemm[] = { "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                        "aten::matmul", "aten::linear", "aten::_scaled_mm",
                                        "aten::addbmm", "aten::_addmm_activation", "aten::_int_mm" };
    static const char *const conv[] = { "aten::cudnn_convolution", "aten::_convolution",
                                        "aten::convolution", "aten::conv1d", "aten::conv2d",
                                        "aten::conv3d", "aten::conv_transpose",
                                        "aten::miopen_convolution", "aten::mkldnn_convolution",
                                        "aten::_conv_depthwise", "aten::conv_depthwise",
                                        "aten::slow_conv", "aten::_slow_conv" };
    static const char *const attn[] = { "aten::_scaled_dot_product_", "aten::scaled_dot_product_attention",
                                        "aten::_flash_attention", "aten::_efficient_attention",
                                        "aten::_fused_sdp", "aten::_cudnn_attention" };
    static const char *const comm[] = { "nccl:", "c10d::", "record_param_comms",
                                        "c10d_functional::", "_c10d_functional::", "symm_mem::" };
    for (size_t i = 0; i < sizeof(gemm) / sizeof(gemm[0]); i++)
        if (strcmp(op, gemm[i]) == 0)
            return ANA_CTX_GEMM;
    for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++)
        if (kin_prefix(op, conv[i]))
            return ANA_CTX_CONV;
    for (size_t i = 0; i < sizeof(attn) / sizeof(attn[0]); i++)
        if (kin_prefix(op, attn[i]))
            return ANA_CTX_ATTENTION;
    for (size_t i = 0; i < sizeof(comm) / sizeof(comm[0]); i++)
        if (kin_prefix(op, comm[i]))
            return ANA_CTX_COMM;
    return ANA_CTX_NONE;
}

/* The range an op is imported as (enum kin_rkind): the 2021 schema's `ProfilerStep#N`, the
 * autograd engine's `autograd::engine::evaluate_function: X`, an autograd node
 * (`ReluBackward1`, `AddmmBackward`: letters, digits, `_` and `:` ending in `Backward` and
 * optional digits), an optimizer's `Optimizer.step#*` / `Optimizer.zero_grad#*`. */
int kin_op_range(const char *op)
{
    if (kin_prefix(op, "ProfilerStep#"))
        return KIN_R_ANNOT;
    if (kin_prefix(op, "autograd::engine::evaluate_function:"))
        return KIN_R_EVAL;
    if (kin_prefix(op, "Optimizer.step#") || kin_prefix(op, "Optimizer.zero_grad#"))
        return KIN_R_OPTIM;
    size_t n = strlen(op);
    while (n && op[n - 1] >= '0' && op[n - 1] <= '9')
        n--;
    if (n <= 8 || memcmp(op + n - 8, "Backward", 8) != 0)
        return KIN_R_NONE;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)op[i]) && op[i] != '_' && op[i] != ':')
            return KIN_R_NONE;
    return KIN_R_NODE;
}

/* cudaDataType_t of a PyTorch type name, or -1. */
int kin_cuda_type(const char *t)
{
    static const struct { const char *name; int type; } types[] = {
        { "float", 0 }, { "double", 1 }, { "c10::Half", 2 }, { "signed char", 3 },
        { "unsigned char", 8 }, { "int", 10 }, { "c10::BFloat16", 14 },
        { "c10::Float8_e4m3fn", 28 }, { "c10::Float8_e5m2", 29 },
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].type;
    return -1;
}

/* ncclDataType_t and its size from the profiler's dtype ("Float", "BFloat16"), or -1. */
int kin_nccl_type(const char *t, uint64_t *size)
{
    static const struct { const char *name; int type; uint8_t size; } types[] = {
        { "Char", 0, 1 }, { "Byte", 1, 1 }, { "Bool", 1, 1 }, { "Int", 2, 4 }, { "Long", 4, 8 },
        { "Half", 6, 2 }, { "Float", 7, 4 }, { "Double", 8, 8 }, { "BFloat16", 9, 2 },
        { "Float8_e4m3fn", 10, 1 }, { "Float8_e5m2", 11, 1 },
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(t, types[i].name) == 0) {
            *size = types[i].size;
            return types[i].type;
        }
    return -1;
}

/* COLL api of a "Collective name" ("allreduce", "_allgather_base", ...), or 0. */
uint16_t kin_coll_api(const char *c)
{
    while (*c == '_')
        c++;
    if (kin_prefix(c, "allreduce") || kin_prefix(c, "all_reduce"))
        return ANA_API_NCCL_ALL_REDUCE;
    if (kin_prefix(c, "allgather") || kin_prefix(c, "all_gather"))
        return ANA_API_NCCL_ALL_GATHER;
    if (kin_prefix(c, "reduce_scatter") || kin_prefix(c, "reducescatter"))
        return ANA_API_NCCL_REDUCE_SCATTER;
    if (kin_prefix(c, "broadcast"))
        return ANA_API_NCCL_BROADCAST;
    if (kin_prefix(c, "reduce"))
        return ANA_API_NCCL_REDUCE;
    if (kin_prefix(c, "send"))
        return ANA_API_NCCL_SEND;
    if (kin_prefix(c, "recv"))
        return ANA_API_NCCL_RECV;
    return 0;
}

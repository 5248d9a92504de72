/* classify.h — the time anatomy's taxonomy: every kernel the GPU ran gets one class.
 *
 * Classes (docs/classification.md): contraction (GEMM, batched GEMM, attention matmuls,
 * convolutions), normalization (softmax, norms, reductions, losses, pooling), elementwise
 * (activations, bias, dropout, residual adds, casts, copies by kernels, fills, gathers,
 * optimizer updates), communication (NCCL and other collectives), memory (copy-engine
 * memcpy/memset), other (sort, top-k, scan, scatter, embedding backward, RNG, and
 * anything the evidence cannot place).
 *
 * Evidence in order: the API context the kernel was launched in (ana_ctx: a cuBLAS or
 * cuBLASLt GEMM, a convolution, an attention call, an NCCL operation, a memcpy/memset
 * record), then the kernel's name through the one rule table in classify.c. Names may be
 * given mangled (as registered, "_Z...") or demangled (as CUPTI and Kineto print them).
 *
 * Also hints for the phase analysis (steps.h): names that say backward (…_backward…,
 * dgrad, wgrad, …Backward…, flash_bwd…), forward (…_forward…, fwd) or optimizer
 * (adam, sgd, lamb, multi_tensor_apply…).
 *
 * Pure functions of their arguments; thread-safe. */
#ifndef ANA_CLASSIFY_H
#define ANA_CLASSIFY_H

#include <stdint.h>

enum ana_class {
    ANA_CLASS_CONTRACTION = 0,
    ANA_CLASS_NORMALIZATION = 1,
    ANA_CLASS_ELEMENTWISE = 2,
    ANA_CLASS_COMMUNICATION = 3,
    ANA_CLASS_MEMORY = 4,
    ANA_CLASS_OTHER = 5,
    ANA_CLASS_COUNT
};

/* The API context of a kernel: what call it was launched inside. */
enum ana_ctx {
    ANA_CTX_NONE = 0,      /* launched by the program itself, or context unknown */
    ANA_CTX_GEMM = 1,      /* inside a cuBLAS/cuBLASLt GEMM, or a framework matmul op */
    ANA_CTX_CONV = 2,      /* inside a convolution call (cuDNN or a framework conv op) */
    ANA_CTX_ATTENTION = 3, /* inside an attention call (flash/fused SDPA op) */
    ANA_CTX_COMM = 4,      /* inside an NCCL operation or a framework collective */
    ANA_CTX_MEMORY = 5,    /* a memcpy/memset record (not a kernel) */
    ANA_CTX_LIBRARY = 6,   /* inside another library call (e.g. cuDNN, kind unknown): names decide */
    ANA_CTX_COUNT
};

/* Phase hints a name carries (bits). */
enum ana_hint {
    ANA_HINT_FORWARD = 1,
    ANA_HINT_BACKWARD = 2,
    ANA_HINT_OPTIMIZER = 4,
};

typedef struct ana_classification {
    uint8_t cls;   /* enum ana_class */
    uint8_t hints; /* enum ana_hint bits */
    uint16_t rule; /* what decided: ana_classify_rule_name(rule) */
} ana_classification;

/* Classifies one kernel. name: mangled or demangled, NULL or "" when unknown;
 * ctx: enum ana_ctx. */
ana_classification ana_classify(const char *name, int ctx);

/* "contraction", "normalization", ...; NULL for a value out of range. */
const char *ana_class_name(int cls);
/* The class of a name ("contraction" -> ANA_CLASS_CONTRACTION), or -1. */
int ana_class_parse(const char *name);
/* "context: cuBLAS GEMM", "name: cutlass", ... — a short label of the rule (for
 * `anatomist classify --explain` and the docs). */
const char *ana_classify_rule_name(uint16_t rule);
/* "gemm", "conv", ... of an ana_ctx; NULL out of range. */
const char *ana_ctx_name(int ctx);

#endif

/* classify.c — the kernel classifier: API context first, then one ordered rule table over
 * the kernel's name (docs/classification.md explains every family and the ambiguous ones).
 *
 * A name is reduced before matching: a mangled name is demangled; the parameter list (the
 * balanced "(...)" that ends a demangled name) and the return type ("void ", or any text
 * before the last top-level space) are dropped; what remains is split into the function's
 * qualified name with every template argument list removed ("fn", e.g.
 * "at::native::vectorized_elementwise_kernel") and the text of those template arguments
 * ("args": the functor of an ATen template, the config of cutlass::Kernel, ...). Both are
 * lowercased. Parameters never decide a class (a cudnnTensorStruct or a curandState in a
 * parameter list says nothing about what the kernel computes).
 *
 * Tokens: fn in its original case is cut at every character that is not an ASCII letter
 * or digit, between a letter and a digit, between a lowercase and an uppercase letter,
 * and before the last capital of a run of capitals followed by a lowercase letter
 * ("_fp8_paged_mqa_logits", "rmsNormLamport", "KVCache" -> "fp 8 paged mqa logits",
 * "rms norm lamport", "kv cache"); the lowercased tokens are kept as " tok tok ... ".
 * The template arguments get tokens of their own (for the optimizer hint only).
 *
 * The table is searched in order and the first row that matches wins; a row matches when
 * its pattern is a prefix of fn (ANA_PAT_PREFIX), occurs in fn (ANA_PAT_CONTAINS), occurs
 * in fn's own name after its last "::" (ANA_PAT_BASE), or is a sequence of whole tokens of
 * fn (ANA_PAT_TOKEN; a '*' at either end of the pattern lets that token go on: "*gemm"
 * matches "sgemm", not "gemma"; "moe&dispatch" needs both sequences, anywhere in fn),
 * and, when it has one, its `within` pattern occurs in args. The last row matches
 * everything. Hints (forward/backward/optimizer) come from keywords of the whole reduced
 * name, or'ed with the row's own hints; they do not depend on the class.
 *
 * Pure: every call works on its own heap copy of the name; no global mutable state. */
#include "classify.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* How a row's pattern matches the reduced name (see the header comment). */
enum ana_pat_kind {
    ANA_PAT_PREFIX,   /* fn starts with pat */
    ANA_PAT_CONTAINS, /* pat occurs in fn */
    ANA_PAT_BASE,     /* pat occurs in fn's own name (after its last "::") */
    ANA_PAT_TOKEN,    /* pat is a sequence of whole tokens of fn ('*', '&': see above) */
    ANA_PAT_ANY,      /* always */
};

typedef struct ana_rule {
    uint8_t kind;       /* enum ana_pat_kind, on fn */
    const char *pat;    /* lowercase */
    const char *within; /* lowercase text that must occur in args, or NULL */
    uint8_t cls;
    uint8_t hints;
    const char *label;
} ana_rule;

#define P ANA_PAT_PREFIX
#define C ANA_PAT_CONTAINS
#define B ANA_PAT_BASE
#define T ANA_PAT_TOKEN
#define CON ANA_CLASS_CONTRACTION
#define NRM ANA_CLASS_NORMALIZATION
#define ELT ANA_CLASS_ELEMENTWISE
#define COM ANA_CLASS_COMMUNICATION
#define OTH ANA_CLASS_OTHER
#define BWD ANA_HINT_BACKWARD
#define OPT ANA_HINT_OPTIMIZER

/* The rule table. Order matters: Inductor's generated names first (the prefix says what
 * they are), then library families whose names are unambiguous, then the "other"
 * families whose names contain words of other classes (sort, scan, top-k, scatter, RNG,
 * embedding backward), then generic templates decided by their functor, then the generic
 * contraction tokens (mm, linear, einsum, ...), then keyword families, then the naming
 * conventions of Triton attention libraries (_fwd_kernel, chunk_*), then the generic op
 * tokens (sum, mul, where, split, ...), then a collective word in a namespace, then the
 * default. */
static const ana_rule ana_rules[] = {
    /* Triton/Inductor: the prefix says what the generated kernel is. First: an Inductor
     * name lists every op fused into it, a collective or a sort included
     * (triton_poi_fused_add_all_reduce_2 is the pointwise kernel around an all-reduce). */
    { P, "triton_tem_", NULL, CON, 0, "name: Inductor template (GEMM/conv)" },
    { P, "triton_mm", NULL, CON, 0, "name: Triton matmul" },
    { P, "triton_bmm", NULL, CON, 0, "name: Triton matmul" },
    { P, "triton_per_", NULL, NRM, 0, "name: Inductor persistent reduction" },
    { P, "triton_red_", NULL, NRM, 0, "name: Inductor reduction" },
    { P, "triton_poi_", NULL, ELT, 0, "name: Inductor pointwise" },
    { P, "triton_for_", NULL, ELT, 0, "name: Inductor foreach" },
    /* Collectives: the libraries anywhere in the name; the collective words in the
     * function's own name (B) only — a norm in an all-reduce namespace is a norm. The
     * namespace decides late, near the end of the table. */
    { C, "nccl", NULL, COM, 0, "name: NCCL kernel" },
    { C, "msccl", NULL, COM, 0, "name: MSCCL/MSCCL++ kernel" },
    { C, "nvshmem", NULL, COM, 0, "name: NVSHMEM" },
    { B, "cross_device_reduce", NULL, COM, 0, "name: custom all-reduce" },
    { B, "allreduce", NULL, COM, 0, "name: all-reduce kernel" },
    { B, "all_reduce", NULL, COM, 0, "name: all-reduce kernel" },
    { B, "allgather", NULL, COM, 0, "name: all-gather kernel" },
    { B, "all_gather", NULL, COM, 0, "name: all-gather kernel" },
    { B, "reducescatter", NULL, COM, 0, "name: reduce-scatter kernel" },
    { B, "reduce_scatter", NULL, COM, 0, "name: reduce-scatter kernel" },
    { B, "alltoall", NULL, COM, 0, "name: all-to-all kernel" },
    { B, "all_to_all", NULL, COM, 0, "name: all-to-all kernel" },
    /* "A2A" as whole tokens (moeA2ADispatchKernel -> moe a 2 a dispatch kernel), and the
     * dispatch/combine of expert parallelism: a token-exchange between ranks */
    { T, "a 2 a", NULL, COM, 0, "token: all-to-all (A2A)" },
    { T, "moe&dispatch", NULL, COM, 0, "token: MoE dispatch (all-to-all)" },
    { T, "moe&combine", NULL, COM, 0, "token: MoE combine (all-to-all)" },
    { C, "userbuffers", NULL, COM, 0, "name: userbuffers (comm overlap)" },
    { P, "deep_ep::", NULL, COM, 0, "name: DeepEP dispatch/combine" },
    /* KV-cache writes: a scatter into cache slots, before "flash" claims them. */
    { C, "reshape_and_cache", NULL, OTH, 0, "name: KV-cache scatter" },
    { C, "concat_and_cache", NULL, OTH, 0, "name: KV-cache scatter" },
    /* TRT-LLM's applyBiasRopeUpdateKVCache*: the rotary embedding fused into the write */
    { T, "update kv cache", NULL, OTH, 0, "name: KV-cache write" },
    /* Attention (flash/fused/paged), every stage of it. */
    { C, "flash_fwd", NULL, CON, ANA_HINT_FORWARD, "name: flash attention" },
    { C, "flash_bwd", NULL, CON, BWD, "name: flash attention" },
    { P, "flash::", NULL, CON, 0, "name: flash attention" },
    { P, "pytorch_flash::", NULL, CON, 0, "name: flash attention" },
    { C, "flash_attn", NULL, CON, 0, "name: flash attention" },
    { C, "flashattn", NULL, CON, 0, "name: flash attention" },
    { C, "flash_mla", NULL, CON, 0, "name: flash MLA attention" },
    { C, "flashmla", NULL, CON, 0, "name: flash MLA attention" },
    { C, "attn_fwd", NULL, CON, ANA_HINT_FORWARD, "name: attention kernel" },
    { C, "attn_bwd", NULL, CON, BWD, "name: attention kernel" },
    { C, "fmha", NULL, CON, 0, "name: fused multi-head attention" },
    { C, "sdpa", NULL, CON, 0, "name: cuDNN SDPA" },
    { C, "_mha", NULL, CON, 0, "name: multi-head attention kernel" },
    { C, "attention", NULL, CON, 0, "name: attention kernel" },
    { C, "prefillwith", NULL, CON, 0, "name: FlashInfer attention" },
    { C, "decodewith", NULL, CON, 0, "name: FlashInfer attention" },
    { C, "mergestates", NULL, CON, 0, "name: FlashInfer attention" },
    /* the merge of split-KV partial attention outputs by their LSE (vLLM's
     * merge_attn_states_kernel, SGLang's merge_state_kernel, FlashInfer's MergeState) */
    { T, "merge attn", NULL, CON, 0, "token: attention (merge of partial states)" },
    { T, "merge state*", NULL, CON, 0, "token: attention (merge of partial states)" },
    /* FlashMLA's scheduling stage (get_mla_metadata_kernel): launched only by MLA
     * attention, like cuDNN's offset kernels by a convolution */
    { T, "mla metadata", NULL, CON, 0, "token: MLA attention scheduling metadata" },
    /* the split-KV decode attention of Triton libraries (SGLang, vLLM, LightLLM): the
     * partial-attention stage and the combine stage; a fused rope does not change that */
    { P, "_fwd_kernel_stage", NULL, CON, 0, "name: Triton decode attention stage" },
    { P, "_fwd_grouped_kernel_stage", NULL, CON, 0, "name: Triton decode attention stage" },
    { P, "_fwd_kernel_flash_decode", NULL, CON, 0, "name: Triton decode attention stage" },
    /* GEMM libraries: cuBLAS/cuBLASLt, CUTLASS, TRT-LLM, XMMA. CUTLASS's utility norms
     * (cutlass::rmsnorm_*, cutlass::layernorm*) first: they are not GEMMs. */
    { P, "cutlass::rmsnorm", NULL, NRM, 0, "name: CUTLASS RMS norm" },
    { P, "cutlass::layernorm", NULL, NRM, 0, "name: CUTLASS layer norm" },
    /* TensorRT's XMMA pooling kernels (sm50_xmma_pooling_*) are not GEMMs. */
    { T, "pooling", NULL, NRM, 0, "name: pooling" },
    { P, "cutlass", NULL, CON, 0, "name: CUTLASS kernel" },
    { P, "cublaslt::", NULL, CON, 0, "name: cuBLASLt kernel (GEMM stage)" },
    { C, "splitkreduce", NULL, CON, 0, "name: cuBLAS split-K reduction" },
    { C, "reduce_1block_kernel", "cublas", CON, 0, "name: cuBLAS dot/GEMV reduction stage" },
    { P, "nvjet", NULL, CON, 0, "name: cuBLAS nvjet GEMM" },
    { C, "xmma", NULL, CON, 0, "name: XMMA GEMM/conv" },
    /* A token ending in "gemm" (gemm, sgemm, cgemm, h884gemm -> h 884 gemm, GemmUniversal),
     * not "gemm" inside a word ("gemma", the model family); cuBLAS's gemmk1. */
    { T, "*gemm", NULL, CON, 0, "name: GEMM" },
    { T, "gemmk", NULL, CON, 0, "name: GEMM" },
    { C, "gemv", NULL, CON, 0, "name: GEMV" },
    /* sparse matrix products: cuSPARSE csrmm/coomm/bsrmm (and -mv), SpMM/SpMV, SDDMM */
    { C, "csrmm", NULL, CON, 0, "name: sparse GEMM (SpMM)" },
    { C, "coomm", NULL, CON, 0, "name: sparse GEMM (SpMM)" },
    { C, "bsrmm", NULL, CON, 0, "name: sparse GEMM (SpMM)" },
    { C, "spmm", NULL, CON, 0, "name: sparse GEMM (SpMM)" },
    { C, "csrmv", NULL, CON, 0, "name: sparse GEMV (SpMV)" },
    { C, "coomv", NULL, CON, 0, "name: sparse GEMV (SpMV)" },
    { C, "bsrmv", NULL, CON, 0, "name: sparse GEMV (SpMV)" },
    { C, "spmv", NULL, CON, 0, "name: sparse GEMV (SpMV)" },
    { C, "sddmm", NULL, CON, 0, "name: sampled dense-dense matmul (SDDMM)" },
    /* Marlin mixed-precision GEMMs (marlin::Marlin, marlin_moe::Marlin) and MoE expert
     * GEMMs named by their weight/activation precision or "mm" (w4a16_moe_sm90_kernel):
     * before the MoE routing row. Marlin's weight repack is a layout op. */
    { T, "repack", NULL, ELT, 0, "token: weight layout (repack)" },
    { C, "marlin", NULL, CON, 0, "name: Marlin mixed-precision GEMM" },
    { T, "moe&w 4 a 16", NULL, CON, 0, "token: MoE expert GEMM (low-bit)" },
    { T, "moe&w 4 a 8", NULL, CON, 0, "token: MoE expert GEMM (low-bit)" },
    { T, "moe&w 8 a 8", NULL, CON, 0, "token: MoE expert GEMM (low-bit)" },
    { T, "moe&mm", NULL, CON, 0, "token: MoE expert GEMM (mm)" },
    { P, "bmm_", NULL, CON, 0, "name: TRT-LLM batched GEMM" },
    { C, "matmul", NULL, CON, 0, "name: matmul" },
    { C, "fused_moe_kernel", NULL, CON, 0, "name: fused MoE grouped GEMM" },
    { P, "fused_moe::", NULL, CON, 0, "name: fused MoE grouped GEMM" },
    { P, "dot_kernel", NULL, CON, 0, "name: cuBLAS dot" },
    /* Convolutions: cuDNN engines and every helper stage that only a conv launches. */
    { C, "scudnn", NULL, CON, 0, "name: cuDNN convolution" },
    { C, "884cudnn", NULL, CON, 0, "name: cuDNN convolution" },
    { C, "1688cudnn", NULL, CON, 0, "name: cuDNN convolution" },
    { C, "16816cudnn", NULL, CON, 0, "name: cuDNN convolution" },
    { C, "8816cudnn", NULL, CON, 0, "name: cuDNN convolution" },
    { P, "cask_", NULL, CON, 0, "name: cuDNN conv helper (cask)" },
    { P, "cudnn::cnn::", NULL, CON, 0, "name: cuDNN conv stage" },
    { C, "winograd", NULL, CON, 0, "name: winograd convolution" },
    { C, "convolve", NULL, CON, 0, "name: convolution" },
    { C, "convolution", NULL, CON, 0, "name: convolution" },
    { C, "conv1d", NULL, CON, 0, "name: convolution" },
    { C, "conv2d", NULL, CON, 0, "name: convolution" },
    { C, "conv3d", NULL, CON, 0, "name: convolution" },
    { C, "conv_depthwise", NULL, CON, 0, "name: depthwise convolution" },
    { C, "dgrad", NULL, CON, BWD, "name: convolution data gradient" },
    { C, "wgrad", NULL, CON, BWD, "name: convolution weight gradient" },
    { C, "im2col", NULL, CON, 0, "name: conv lowering (im2col)" },
    { C, "col2im", NULL, CON, 0, "name: conv lowering (col2im)" },
    { C, "vol2col", NULL, CON, 0, "name: conv lowering (vol2col)" },
    { C, "computeoffsets", NULL, CON, 0, "name: cuDNN conv helper (offsets)" },
    { C, "fft2d_", NULL, CON, 0, "name: cuDNN FFT convolution" },
    { C, "fft1d_", NULL, CON, 0, "name: cuDNN FFT convolution" },
    { C, "flip_filter", NULL, CON, 0, "name: cuDNN FFT convolution" },
    /* Other: sort, top-k, scan, set ops, scatter, embedding backward, RNG, MoE routing. */
    { C, "topk", NULL, OTH, 0, "name: top-k" },
    { C, "top_k", NULL, OTH, 0, "name: top-k" },
    { C, "radixselect", NULL, OTH, 0, "name: top-k / select" },
    /* k-th value and median (gatherKthValue, gatherMedian): a selection, before "gather" */
    { C, "kthvalue", NULL, OTH, 0, "name: selection (k-th value/median)" },
    { C, "median", NULL, OTH, 0, "name: selection (k-th value/median)" },
    { C, "sort", NULL, OTH, 0, "name: sort" },
    /* Mamba2's SSD chunk scan (_chunk_scan_fwd_kernel, _chunk_scan_bwd_dx_kernel): per-chunk
     * matmuls, not a prefix scan; its cumsum stage (_chunk_cumsum_*) stays a scan */
    { P, "_chunk_scan_", NULL, CON, 0, "name: Mamba2 SSD chunk scan (matmuls)" },
    { C, "scan", NULL, OTH, 0, "name: scan" },
    { T, "prefix sum", NULL, OTH, 0, "token: scan (prefix sum)" },
    { C, "cumsum", NULL, OTH, 0, "name: scan" },
    { C, "cumprod", NULL, OTH, 0, "name: scan" },
    { C, "nonzero", NULL, OTH, 0, "name: nonzero" },
    { C, "unique", NULL, OTH, 0, "name: unique" },
    { C, "histogram", NULL, OTH, 0, "name: histogram" },
    { C, "histc", NULL, OTH, 0, "name: histogram" },
    { C, "bincount", NULL, OTH, 0, "name: histogram" },
    { C, "embedding_backward", NULL, OTH, BWD, "name: embedding backward" },
    { C, "embedding_dense_backward", NULL, OTH, BWD, "name: embedding backward" },
    { C, "encoder_backward", NULL, OTH, BWD, "name: embedding backward" },
    { C, "compute_grad_weight", NULL, OTH, BWD, "name: embedding backward" },
    { C, "partial_segment", NULL, OTH, BWD, "name: embedding backward" },
    { C, "partials_per_segment", NULL, OTH, BWD, "name: embedding backward" },
    /* ATen's scatter/gather template in gather mode (is_scatter_like = false: torch.gather)
     * is a gather; in scatter mode (true), or without its template arguments, a scatter.
     * The flag is the first argument of the nested _cuda_scatter_gather_internal_kernel
     * template; args keep no nested '<' ("..._internal_kernel(bool)0, ..." or
     * "..._internal_kernelfalse, ...", as the demangler spells it). */
    { C, "scatter_gather", "scatter_gather_internal_kernel(bool)0", ELT, 0,
      "functor: gather (scatter_gather, gather mode)" },
    { C, "scatter_gather", "scatter_gather_internal_kernelfalse", ELT, 0,
      "functor: gather (scatter_gather, gather mode)" },
    { C, "scatter", NULL, OTH, 0, "name: scatter" },
    { C, "index_put", NULL, OTH, 0, "name: index_put" },
    { C, "indexput", NULL, OTH, 0, "name: index_put" },
    { C, "index_add", NULL, OTH, 0, "name: index_add" },
    { C, "indexfunc", NULL, OTH, 0, "name: index_add/index_fill" },
    { C, "dropout", NULL, ELT, 0, "name: dropout" },
    { C, "distribution_", NULL, OTH, 0, "name: random numbers" },
    { C, "philox", NULL, OTH, 0, "name: random numbers" },
    { C, "curand", NULL, OTH, 0, "name: random numbers" },
    { C, "bernoulli", NULL, OTH, 0, "name: random numbers" },
    { C, "multinomial", NULL, OTH, 0, "name: random numbers" },
    { C, "randperm", NULL, OTH, 0, "name: random numbers" },
    { C, "normal_kernel", NULL, OTH, 0, "name: random numbers" },
    { C, "uniform_kernel", NULL, OTH, 0, "name: random numbers" },
    { C, "moe", NULL, OTH, 0, "name: MoE routing/permutation" },
    /* TRT-LLM's CUTLASS GEMM namespace, after the sort/MoE rows that claim its routing
     * kernels: what is left are grouped-GEMM kernels and their setup stages. */
    { C, "cutlass_kernels::", NULL, CON, 0, "name: TRT-LLM CUTLASS GEMM stage" },
    /* Generic templates decided by their functor (template arguments). */
    { C, "elementwise_kernel", "softmax", NRM, 0, "functor: softmax" },
    { C, "elementwise_kernel", "nll_loss", NRM, 0, "functor: loss" },
    { C, "elementwise_kernel", "cross_entropy", NRM, 0, "functor: loss" },
    { C, "elementwise_kernel", "bernoulli", OTH, 0, "functor: random numbers" },
    { C, "elementwise_kernel", "uniform", OTH, 0, "functor: random numbers" },
    { C, "elementwise_kernel", "normal_kernel", OTH, 0, "functor: random numbers" },
    { C, "elementwise_kernel", "random_", OTH, 0, "functor: random numbers" },
    { C, "elementwise_kernel", "index_put", OTH, 0, "functor: index_put" },
    { C, "elementwise_kernel", "scatter", OTH, 0, "functor: scatter" },
    { C, "elementwise_kernel", "dropout", ELT, 0, "functor: dropout" },
    { C, "elementwise_kernel", NULL, ELT, 0, "name: ATen elementwise template" },
    { C, "multi_tensor_apply", "l2norm", NRM, OPT, "functor: multi-tensor L2 norm" },
    { C, "multi_tensor_apply", NULL, ELT, OPT, "name: multi-tensor apply (foreach/optimizer)" },
    { C, "eigenmetakernel", "reducer", NRM, 0, "functor: Eigen reduction" },
    { C, "eigenmetakernel", "reduction", NRM, 0, "functor: Eigen reduction" },
    { C, "eigenmetakernel", NULL, ELT, 0, "name: Eigen elementwise" },
    /* Interpolation, before the generic "linear" token (upsample_linear1d). */
    { C, "upsample", NULL, ELT, 0, "name: upsample" },
    { C, "interpolate", NULL, ELT, 0, "name: upsample" },
    { C, "resize", NULL, ELT, 0, "name: resize (upsample)" },
    { C, "grid_sampler", NULL, ELT, 0, "name: grid sampler" },
    /* Generic contraction words, for kernels named after their op (hand-written Triton
     * kernels, Triton op libraries): after every named family, before the norm and
     * elementwise words, since a GEMM with a fused prologue or epilogue is a GEMM
     * (_w8a8_block_scaled_mm, _quantized_linear_fp8_kernel). */
    { T, "mm", NULL, CON, 0, "token: matmul (mm)" },
    { T, "bmm", NULL, CON, 0, "token: matmul (bmm)" },
    { T, "addmm", NULL, CON, 0, "token: matmul (addmm)" },
    { T, "baddbmm", NULL, CON, 0, "token: matmul (baddbmm)" },
    { T, "mv", NULL, CON, 0, "token: matrix-vector (mv)" },
    { T, "addmv", NULL, CON, 0, "token: matrix-vector (addmv)" },
    { T, "einsum", NULL, CON, 0, "token: einsum" },
    { T, "linear", NULL, CON, 0, "token: linear layer (GEMM)" },
    { T, "dot", NULL, CON, 0, "token: dot product" },
    { T, "matrix multiply*", NULL, CON, 0, "token: matmul (matrix multiply)" },
    /* GEMMs named by weight/activation precision (w4a16_sm90_kernel); after "mm", which
     * such names often carry (_w8a8_triton_block_scaled_mm) */
    { T, "w 4 a 16", NULL, CON, 0, "token: low-bit GEMM (w4a16)" },
    { T, "w 4 a 8", NULL, CON, 0, "token: low-bit GEMM (w4a8)" },
    { T, "w 8 a 8", NULL, CON, 0, "token: low-bit GEMM (w8a8)" },
    { T, "delta rule", NULL, CON, 0, "token: linear attention (delta rule)" },
    /* the WY representation of chunked delta-rule attention (recompute_w_u_fwd_kernel,
     * prepare_wy_repr_fwd_kernel): small matmuls per chunk */
    { T, "recompute w u", NULL, CON, 0, "token: linear attention (WY representation)" },
    { T, "wy repr", NULL, CON, 0, "token: linear attention (WY representation)" },
    /* split-K / split-KV stages of a GEMM or attention, before the layout word "split"
     * (_fwd_kernel_splitK, _splitK_reduce) */
    { T, "split k", NULL, CON, 0, "token: split-K stage (GEMM/attention)" },
    { T, "split kv", NULL, CON, 0, "token: split-KV stage (attention)" },
    { T, "mqa", NULL, CON, 0, "token: attention (MQA)" },
    { T, "gqa", NULL, CON, 0, "token: attention (GQA)" },
    /* Normalization: softmax, norms, reductions, losses, pooling. */
    { C, "softmax", NULL, NRM, 0, "name: softmax" },
    { C, "layer_norm", NULL, NRM, 0, "name: layer norm" },
    { C, "layernorm", NULL, NRM, 0, "name: layer norm" },
    { C, "rms_norm", NULL, NRM, 0, "name: RMS norm" },
    { C, "rmsnorm", NULL, NRM, 0, "name: RMS norm" },
    { C, "batch_norm", NULL, NRM, 0, "name: batch norm" },
    { C, "batchnorm", NULL, NRM, 0, "name: batch norm" },
    { C, "group_norm", NULL, NRM, 0, "name: group norm" },
    { C, "groupnorm", NULL, NRM, 0, "name: group norm" },
    { C, "instance_norm", NULL, NRM, 0, "name: instance norm" },
    { C, "bn_fw", NULL, NRM, 0, "name: cuDNN batch norm" },
    { C, "bn_bw", NULL, NRM, BWD, "name: cuDNN batch norm" },
    { P, "ln_", NULL, NRM, 0, "name: layer norm" },
    { C, "::ln_", NULL, NRM, 0, "name: layer norm" },
    { C, "gammabeta", NULL, NRM, BWD, "name: norm parameter gradient" },
    { C, "moments", NULL, NRM, 0, "name: norm statistics" },
    { C, "welford", NULL, NRM, 0, "name: norm statistics" },
    { P, "cucompute", NULL, NRM, 0, "name: apex norm" },
    { C, "computeinternalgradients", NULL, NRM, BWD, "name: group norm" },
    /* ATen's layer/group norm stages: ComputeFusedParamsCUDAKernel,
     * ComputeGradientFusedParamsCUDAKernel, ComputeBackwardFusedParamsCUDAKernel */
    { T, "fused params", NULL, NRM, 0, "name: norm stage (fused params)" },
    { C, "l2norm", NULL, NRM, 0, "name: L2 norm" },
    /* ATen's foreach norm (lpnorm_cleanup) and embedding renorm (renorm_kernel) */
    { C, "lpnorm", NULL, NRM, 0, "name: Lp norm" },
    { T, "renorm", NULL, NRM, 0, "token: renorm" },
    { C, "bias_grad", NULL, NRM, BWD, "name: bias gradient (reduction)" },
    { C, "biasgrad", NULL, NRM, BWD, "name: bias gradient (reduction)" },
    /* own name: "reduce" in a collective namespace (trtllm_allreduce_fusion::) is not it */
    { B, "reduce", NULL, NRM, 0, "name: reduction" },
    { B, "reduction", NULL, NRM, 0, "name: reduction" },
    { C, "argmax", NULL, NRM, 0, "name: reduction (argmax)" },
    { C, "argmin", NULL, NRM, 0, "name: reduction (argmin)" },
    { C, "nll", NULL, NRM, 0, "name: loss" },
    { C, "crossentropy", NULL, NRM, 0, "name: loss" },
    { C, "cross_entropy", NULL, NRM, 0, "name: loss" },
    { C, "xent", NULL, NRM, 0, "name: loss" },
    /* divergence losses (Liger's _kldiv_kernel_forward, _jsd_kernel) */
    { C, "kldiv", NULL, NRM, 0, "name: loss (KL divergence)" },
    { C, "kl_div", NULL, NRM, 0, "name: loss (KL divergence)" },
    { T, "jsd", NULL, NRM, 0, "token: loss (Jensen-Shannon divergence)" },
    { C, "loss", NULL, NRM, 0, "name: loss" },
    { C, "pool", NULL, NRM, 0, "name: pooling" },
    /* ATen's adaptive pooling stages without "pool" (adaptive_average_gradinput,
     * atomic_adaptive_average_gradinput, adaptivemaxgradinput) */
    { C, "adaptive_average", NULL, NRM, 0, "name: pooling (adaptive)" },
    { C, "adaptiveaverage", NULL, NRM, 0, "name: pooling (adaptive)" },
    { C, "adaptive_max", NULL, NRM, 0, "name: pooling (adaptive)" },
    { C, "adaptivemax", NULL, NRM, 0, "name: pooling (adaptive)" },
    { C, "asum_kernel", NULL, NRM, 0, "name: cuBLAS reduction" },
    { C, "nrm2_kernel", NULL, NRM, 0, "name: cuBLAS reduction" },
    { C, "_norm", NULL, NRM, 0, "name: norm" },
    /* Elementwise: optimizers, copies, layout, gathers, activations, arithmetic. */
    { T, "adam*", NULL, ELT, OPT, "name: optimizer update" },
    { T, "*adam", NULL, ELT, OPT, "name: optimizer update" },
    { C, "sgd", NULL, ELT, OPT, "name: optimizer update" },
    { C, "lamb_", NULL, ELT, OPT, "name: optimizer update" },
    { C, "adagrad", NULL, ELT, OPT, "name: optimizer update" },
    { C, "rmsprop", NULL, ELT, OPT, "name: optimizer update" },
    { C, "momentum", NULL, ELT, OPT, "name: optimizer update" },
    { C, "gradientdescent", NULL, ELT, OPT, "name: optimizer update" },
    { C, "copy", NULL, ELT, 0, "name: copy kernel" },
    { C, "memcpy", NULL, ELT, 0, "name: copy kernel" },
    { C, "concat", NULL, ELT, 0, "name: concatenation" },
    { C, "transpose", NULL, ELT, 0, "name: transpose" },
    { C, "permute", NULL, ELT, 0, "name: permute" },
    /* DeepSpeed's transform4d_0213 (a head transpose) and ATen's roll */
    { C, "transform4d", NULL, ELT, 0, "name: transpose (transform4d)" },
    { T, "roll", NULL, ELT, 0, "token: layout (roll)" },
    /* layout ops as words (chunk_cat_cuda_kernel, *_reshape_*, *_contiguous_*); "split"
     * comes with the generic op words, after the Triton attention names */
    { T, "cat", NULL, ELT, 0, "token: layout (cat)" },
    { T, "reshape", NULL, ELT, 0, "token: layout (reshape)" },
    { T, "contiguous", NULL, ELT, 0, "token: layout (contiguous)" },
    { C, "tonhwc", NULL, ELT, 0, "name: layout transform" },
    { C, "swapdimension", NULL, ELT, 0, "name: layout transform" },
    { C, "shuffleintensor", NULL, ELT, 0, "name: layout transform" },
    { C, "tonchw", NULL, ELT, 0, "name: layout transform" },
    { T, "fill", NULL, ELT, 0, "name: fill" },
    { C, "arange", NULL, ELT, 0, "name: fill (arange)" },
    { C, "linspace", NULL, ELT, 0, "name: fill (linspace)" },
    { C, "logspace", NULL, ELT, 0, "name: fill (logspace)" },
    { C, "iota", NULL, ELT, 0, "name: fill (iota)" },
    { C, "gather", NULL, ELT, 0, "name: gather" },
    { C, "index_select", NULL, ELT, 0, "name: gather (index_select)" },
    { C, "indexselect", NULL, ELT, 0, "name: gather (index_select)" },
    /* the paged-KV page list of a batch, read out of the request-to-token table */
    { T, "kv indices", NULL, ELT, 0, "token: gather (KV indices)" },
    { C, "embedding", NULL, ELT, 0, "name: embedding gather" },
    { C, "encoder_forward", NULL, ELT, 0, "name: embedding gather" },
    { C, "rotary", NULL, ELT, 0, "name: rotary embedding" },
    { C, "rope", NULL, ELT, 0, "name: rotary embedding" },
    { C, "bias", NULL, ELT, 0, "name: bias" },
    { C, "relu", NULL, ELT, 0, "name: activation" },
    { C, "gelu", NULL, ELT, 0, "name: activation" },
    { C, "silu", NULL, ELT, 0, "name: activation" },
    { C, "swiglu", NULL, ELT, 0, "name: activation" },
    { C, "sigmoid", NULL, ELT, 0, "name: activation" },
    { C, "tanh", NULL, ELT, 0, "name: activation" },
    { C, "softplus", NULL, ELT, 0, "name: activation" },
    { C, "act_and_mul", NULL, ELT, 0, "name: activation" },
    { C, "activation", NULL, ELT, 0, "name: activation" },
    /* logits processors of samplers: penalties and temperature scale the logits in place
     * (apply_repetition_penalties_kernel, _temperature_kernel); after top-k and sort */
    { T, "penalty", NULL, ELT, 0, "token: logits processor (penalty)" },
    { T, "penalties", NULL, ELT, 0, "token: logits processor (penalty)" },
    { T, "temperature", NULL, ELT, 0, "token: logits processor (temperature)" },
    /* ATen's fused RNN cells: the gate activations after the cuBLAS GEMMs */
    { T, "lstm cell", NULL, ELT, 0, "token: RNN cell (pointwise gates)" },
    { T, "gru cell", NULL, ELT, 0, "token: RNN cell (pointwise gates)" },
    { C, "residual", NULL, ELT, 0, "name: residual add" },
    { C, "cast", NULL, ELT, 0, "name: cast" },
    { C, "convert", NULL, ELT, 0, "name: cast" },
    { T, "cvt", NULL, ELT, 0, "token: cast (cvt)" },
    { C, "quant", NULL, ELT, 0, "name: (de)quantize" },
    { C, "scale", NULL, ELT, 0, "name: scale" },
    { C, "axpy", NULL, ELT, 0, "name: axpy" },
    { C, "op_tensor", NULL, ELT, 0, "name: cuDNN op-tensor" },
    { C, "pointwise", NULL, ELT, 0, "name: pointwise" },
    { C, "_gpu_dt_", NULL, ELT, 0, "name: TensorFlow generated cwise op" },
    { C, "elementwise", NULL, ELT, 0, "name: elementwise" },
    { T, "triu", NULL, ELT, 0, "name: triangular mask" },
    { T, "tril", NULL, ELT, 0, "name: triangular mask" },
    { C, "masked_fill", NULL, ELT, 0, "name: masked fill" },
    { T, "clamp", NULL, ELT, 0, "name: clamp" },
    { P, "add_", NULL, ELT, 0, "name: add" },
    { C, "_add", NULL, ELT, 0, "name: add" },
    { P, "loop_", NULL, ELT, 0, "name: XLA loop fusion" },
    { P, "wrapped_", NULL, ELT, 0, "name: XLA wrapped elementwise op" },
    { P, "fusion", NULL, ELT, 0, "name: XLA fusion" },
    /* Naming conventions of Triton attention libraries, when no family word above
     * decided: _fwd_kernel / _bwd_kernel (the Triton flash-attention tutorial, the
     * prefill, extend and paged attention of LightLLM/SGLang/vLLM/LMDeploy), and
     * flash-linear-attention's chunked and recurrent forms (chunk_fwd_kernel_o,
     * chunk_gla_fwd_kernel_o, fused_chunk_*, fused_recurrent_*). After the keyword
     * families, as their helpers name themselves (_fwd_kernel_destindex_copy_kv: a copy;
     * chunk_local_cumsum: a scan; chunk_cat_cuda_kernel: ATen's layout op); before the
     * generic op words, which such kernels use for their own parts (split-KV). */
    { P, "_fwd_kernel", NULL, CON, 0, "name: Triton attention (_fwd_kernel)" },
    { P, "_fwd_grouped", NULL, CON, 0, "name: Triton attention (_fwd_kernel)" },
    { P, "_bwd_kernel", NULL, CON, 0, "name: Triton attention (_bwd_kernel)" },
    { P, "chunk_", NULL, CON, 0, "name: chunked linear attention" },
    { P, "_chunk_", NULL, CON, 0, "name: chunked linear attention" },
    { P, "fused_chunk_", NULL, CON, 0, "name: chunked linear attention" },
    { T, "fused recurrent", NULL, CON, 0, "token: recurrent linear attention" },
    /* flash-linear-attention's model families in other forms (parallel_simple_gla_fwd_kernel,
     * parallel_retention_fwd_kernel, parallel_based_fwd_kernel) */
    { T, "gla", NULL, CON, 0, "token: linear attention (GLA)" },
    { T, "retention", NULL, CON, 0, "token: linear attention (retention)" },
    { T, "parallel based", NULL, CON, 0, "token: linear attention (based)" },
    /* Generic op words, last: kernels named after an ATen-style op (Triton op libraries,
     * hand-written kernels). Reductions first: a fused mul+sum is a reduction. */
    { T, "sum", NULL, NRM, 0, "token: reduction (sum)" },
    { T, "mean", NULL, NRM, 0, "token: reduction (mean)" },
    { T, "max", NULL, NRM, 0, "token: reduction (max)" },
    { T, "min", NULL, NRM, 0, "token: reduction (min)" },
    { T, "amax", NULL, NRM, 0, "token: reduction (amax)" },
    { T, "amin", NULL, NRM, 0, "token: reduction (amin)" },
    { T, "prod", NULL, NRM, 0, "token: reduction (prod)" },
    { T, "logsumexp", NULL, NRM, 0, "token: reduction (logsumexp)" },
    { T, "norm", NULL, NRM, 0, "token: norm" },
    { T, "stats", NULL, NRM, 0, "token: statistics (reduction)" },
    { T, "statistics", NULL, NRM, 0, "token: statistics (reduction)" },
    { T, "add", NULL, ELT, 0, "token: arithmetic (add)" },
    { T, "sub", NULL, ELT, 0, "token: arithmetic (sub)" },
    { T, "mul", NULL, ELT, 0, "token: arithmetic (mul)" },
    { T, "multiply", NULL, ELT, 0, "token: arithmetic (multiply)" },
    { T, "div", NULL, ELT, 0, "token: arithmetic (div)" },
    { T, "neg", NULL, ELT, 0, "token: arithmetic (neg)" },
    { T, "abs", NULL, ELT, 0, "token: arithmetic (abs)" },
    { T, "pow", NULL, ELT, 0, "token: arithmetic (pow)" },
    { T, "exp", NULL, ELT, 0, "token: arithmetic (exp)" },
    { T, "log", NULL, ELT, 0, "token: arithmetic (log)" },
    { T, "sqrt", NULL, ELT, 0, "token: arithmetic (sqrt)" },
    { T, "rsqrt", NULL, ELT, 0, "token: arithmetic (rsqrt)" },
    { T, "reciprocal", NULL, ELT, 0, "token: arithmetic (reciprocal)" },
    { T, "maximum", NULL, ELT, 0, "token: arithmetic (maximum)" },
    { T, "minimum", NULL, ELT, 0, "token: arithmetic (minimum)" },
    { T, "where", NULL, ELT, 0, "token: select (where)" },
    { T, "zeros", NULL, ELT, 0, "token: fill (zeros)" },
    { T, "ones", NULL, ELT, 0, "token: fill (ones)" },
    { T, "index", NULL, ELT, 0, "token: gather (index)" },
    { T, "pad", NULL, ELT, 0, "token: layout (pad)" },
    { T, "padding", NULL, ELT, 0, "token: layout (pad)" },
    { T, "pack", NULL, ELT, 0, "token: layout (pack)" },
    { T, "unpack", NULL, ELT, 0, "token: layout (unpack)" },
    /* after "split k"/"split kv" (contraction words) and the Triton attention names
     * (_fwd_grouped_split_kernel): fused_qkv_split_gdn_prefill_kernel */
    { T, "split", NULL, ELT, 0, "token: layout (split)" },
    /* A collective word only in the namespace: a helper of a collective library. */
    { C, "allreduce", NULL, COM, 0, "name: collective namespace" },
    { C, "all_reduce", NULL, COM, 0, "name: collective namespace" },
    { C, "allgather", NULL, COM, 0, "name: collective namespace" },
    { C, "all_gather", NULL, COM, 0, "name: collective namespace" },
    { C, "reducescatter", NULL, COM, 0, "name: collective namespace" },
    { C, "reduce_scatter", NULL, COM, 0, "name: collective namespace" },
    { C, "alltoall", NULL, COM, 0, "name: collective namespace" },
    { C, "all_to_all", NULL, COM, 0, "name: collective namespace" },
    { ANA_PAT_ANY, "", NULL, OTH, 0, "default: no rule matched" },
};

#undef P
#undef C
#undef B
#undef T

enum { ANA_N_RULES = sizeof(ana_rules) / sizeof(ana_rules[0]) };

/* Rule numbers: the context rules, "no name", then the table. */
enum {
    ANA_RULE_CTX_GEMM = 0,
    ANA_RULE_CTX_CONV,
    ANA_RULE_CTX_ATTENTION,
    ANA_RULE_CTX_COMM,
    ANA_RULE_CTX_MEMORY,
    ANA_RULE_NO_NAME,
    ANA_RULE_TABLE,
};

static const char *const ana_fixed_rule_names[ANA_RULE_TABLE] = {
    "context: GEMM call", "context: convolution call", "context: attention call",
    "context: collective", "context: memcpy/memset", "name: none given",
};

static const char *const ana_class_names[ANA_CLASS_COUNT] = {
    "contraction", "normalization", "elementwise", "communication", "memory", "other",
};

/* The parts of a reduced name; all point into one allocation. */
typedef struct ana_kname {
    char *head; /* qualified name with template arguments, lowercase */
    char *fn;   /* head without any template argument list */
    char *base; /* the function's own name: fn after its last "::" */
    char *args; /* the template argument text, lists separated by '|' */
    char *ftok; /* the tokens of fn: " tok tok ... " (see ana_split) */
    char *atok; /* the tokens of the template arguments, same form */
    void *mem;
} ana_kname;

/* Start of the parameter list: the '(' matching the ')' that ends s, or len when s does
 * not end with a balanced group (a bare cuBLAS name, a name cut short by a tool). */
static size_t ana_params_start(const char *s, size_t len)
{
    while (len > 0 && s[len - 1] == ' ')
        len--;
    if (len == 0 || s[len - 1] != ')')
        return len;
    int depth = 0;
    for (size_t i = len; i-- > 0;) {
        if (s[i] == ')')
            depth++;
        else if (s[i] == '(' && --depth == 0)
            return i > 0 ? i : len;
    }
    return len;
}

/* Walks s[0..n) keeping a bracket stack: '(' always nests, '<' nests unless inside
 * parentheses (so "(8)>(0)" in a template argument is not a bracket). Returns the index
 * after the last space outside every bracket: where the name starts after a return type. */
static size_t ana_base_start(const char *s, size_t n)
{
    char stack[64];
    int sp = 0, overflow = 0;
    size_t base = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int top = sp > 0 ? stack[sp - 1] : 0;
        if (ch == '(' || (ch == '<' && top != '(')) {
            if (sp < (int)sizeof(stack))
                stack[sp++] = ch;
            else
                overflow++;
        } else if ((ch == ')' && top == '(') || (ch == '>' && top == '<')) {
            if (overflow)
                overflow--;
            else
                sp--;
        } else if (ch == ' ' && sp == 0 && !overflow) {
            base = i + 1;
        }
    }
    return base;
}

/* Token writer: appends the tokens of one text to a buffer that starts with ' ', keeps one
 * ' ' between tokens and (after ana_tok_end) ends with ' ' (see ana_split). */
typedef struct ana_tok {
    char *out;
    char prev; /* the previous character of this text, 0 after a separator */
} ana_tok;

static int ana_is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int ana_is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int ana_is_digit(char c) { return c >= '0' && c <= '9'; }

static void ana_tok_break(ana_tok *t)
{
    if (t->out[-1] != ' ')
        *t->out++ = ' ';
}

/* Feeds ch (original case); next is the character after it in the name (0 at the end). */
static void ana_tok_put(ana_tok *t, char ch, char next)
{
    int up = ana_is_upper(ch), lo = ana_is_lower(ch), dig = ana_is_digit(ch);
    char p = t->prev;
    if (!up && !lo && !dig) {
        ana_tok_break(t);
        t->prev = 0;
        return;
    }
    if (p && ((ana_is_digit(p) != dig)                            /* "fp8" -> fp 8 */
              || (ana_is_lower(p) && up)                          /* "rmsNorm" -> rms norm */
              || (ana_is_upper(p) && up && ana_is_lower(next)))) /* "KVCache" -> kv cache */
        ana_tok_break(t);
    *t->out++ = up ? (char)(ch - 'A' + 'a') : ch;
    t->prev = ch;
}

static void ana_tok_end(ana_tok *t)
{
    ana_tok_break(t);
    *t->out = 0;
}

/* Splits s[0..n) into head (lowercased), fn (angle depth 0) and args (depth > 0), and the
 * tokens of fn and of args (see ana_kname). */
static void ana_split(const char *s, size_t n, ana_kname *k)
{
    char *f = k->fn, *a = k->args;
    ana_tok ft = { k->ftok, 0 }, at = { k->atok, 0 };
    *ft.out++ = ' ';
    *at.out++ = ' ';
    int depth = 0, parens = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
        char next = i + 1 < n ? s[i + 1] : 0;
        k->head[i] = ch;
        if (ch == '(' && depth > 0)
            parens++;
        else if (ch == ')' && depth > 0 && parens > 0)
            parens--;
        if (ch == '<' && parens == 0) {
            if (depth++ == 0 && a != k->args)
                *a++ = '|';
            ana_tok_put(&ft, ' ', 0);
            ana_tok_put(&at, ' ', 0);
            continue;
        }
        if (ch == '>' && parens == 0 && depth > 0) {
            depth--;
            ana_tok_put(&ft, ' ', 0);
            ana_tok_put(&at, ' ', 0);
            continue;
        }
        if (depth == 0) {
            *f++ = ch;
            ana_tok_put(&ft, s[i], next);
        } else {
            *a++ = ch;
            ana_tok_put(&at, s[i], next);
        }
    }
    k->head[n] = *f = *a = 0;
    ana_tok_end(&ft);
    ana_tok_end(&at);
    /* the function's own name: after the last "::" of its qualified name */
    k->base = k->fn;
    for (char *q = strstr(k->fn, "::"); q; q = strstr(q + 2, "::"))
        k->base = q + 2;
}

static void ana_kname_init(ana_kname *k, const char *name)
{
    char *dem = ana_demangle(name);
    const char *s = dem ? dem : name;
    size_t len = strlen(s);
    size_t end = ana_params_start(s, len);
    while (end > 0 && s[end - 1] == ' ')
        end--;
    size_t start = ana_base_start(s, end);
    if (start >= end) /* nothing after the last space: keep it all */
        start = 0;
    size_t n = end - start;
    /* head, fn, args: n + 1 each; each token text: at most one ' ' before every char, a
     * trailing ' ' and the NUL */
    char *mem = ana_xmalloc(3 * (n + 1) + 2 * (2 * n + 2));
    k->mem = mem;
    k->head = mem;
    k->fn = mem + n + 1;
    k->args = mem + 2 * (n + 1);
    k->ftok = mem + 3 * (n + 1);
    k->atok = k->ftok + 2 * n + 2;
    ana_split(s + start, n, k);
    free(dem);
}

/* Whether the token sequence pat ("mm", "delta rule") occurs in toks (" tok tok ... ").
 * A '*' at the start of pat lets its first token have any letters or digits before it
 * ("*gemm": sgemm), one at the end lets its last token go on ("adam*": adamw). */
static int ana_has_tokens(const char *toks, const char *pat)
{
    char buf[32];
    const char *core = pat;
    size_t len = strlen(pat);
    int any_before = len > 0 && pat[0] == '*';
    int any_after = len > 1 && pat[len - 1] == '*';
    if (any_before || any_after) {
        len -= (size_t)(any_before + any_after);
        if (len == 0 || len >= sizeof(buf))
            return 0;
        memcpy(buf, pat + any_before, len);
        buf[len] = 0;
        core = buf;
    }
    /* toks starts with ' ' and core does not: p[-1] is always in toks */
    for (const char *p = strstr(toks, core); p; p = strstr(p + 1, core))
        if ((any_before || p[-1] == ' ') && (any_after || p[len] == ' '))
            return 1;
    return 0;
}

/* Whether every '&'-separated part of pat is a token sequence of toks ("moe&dispatch":
 * both words, anywhere, in either order); a pat without '&' is one part. */
static int ana_has_all_tokens(const char *toks, const char *pat)
{
    const char *amp = strchr(pat, '&');
    if (!amp)
        return ana_has_tokens(toks, pat);
    char part[32];
    size_t len = (size_t)(amp - pat);
    if (len == 0 || len >= sizeof(part))
        return 0;
    memcpy(part, pat, len);
    part[len] = 0;
    return ana_has_tokens(toks, part) && ana_has_all_tokens(toks, amp + 1);
}

static int ana_rule_matches(const ana_rule *r, const ana_kname *k)
{
    int hit;
    switch (r->kind) {
    case ANA_PAT_PREFIX: hit = strncmp(k->fn, r->pat, strlen(r->pat)) == 0; break;
    case ANA_PAT_CONTAINS: hit = strstr(k->fn, r->pat) != NULL; break;
    case ANA_PAT_BASE: hit = strstr(k->base, r->pat) != NULL; break;
    case ANA_PAT_TOKEN: hit = ana_has_all_tokens(k->ftok, r->pat); break;
    default: hit = 1; break;
    }
    return hit && (!r->within || strstr(k->args, r->within));
}

/* "lamb" but not "lambda" (every ATen lambda functor would read as an optimizer). */
static int ana_has_lamb(const char *s)
{
    for (const char *p = strstr(s, "lamb"); p; p = strstr(p + 4, "lamb"))
        if (p[4] != 'd')
            return 1;
    return 0;
}

static int ana_has_any(const char *s, const char *const *subs)
{
    for (; *subs; subs++)
        if (strstr(s, *subs))
            return 1;
    return 0;
}

/* Phase hints from keywords of the reduced name k (lowercase). Backward wins over forward:
 * an Inductor backward kernel often also names the forward op it differentiates. Adam is
 * a token ("adam", "adamw", "FusedAdam"; not "hadamard"). */
static uint8_t ana_keyword_hints(const ana_kname *k)
{
    const char *head = k->head;
    static const char *const bwd[] = { "backward", "bwd", "dgrad", "wgrad", "_bw_", "bn_bw",
                                       "updategradinput", "accgradparameters", "grad_input",
                                       "gradinput", "bprop", NULL };
    static const char *const fwd[] = { "forward", "fwd", "_fw_", "bn_fw", "fprop",
                                       "updateoutput", NULL };
    static const char *const opt[] = { "sgd", "adagrad", "rmsprop", "multi_tensor_apply",
                                       "optimizer", "momentum", "gradientdescent", NULL };
    uint8_t h = 0;
    if (ana_has_any(head, bwd))
        h |= ANA_HINT_BACKWARD;
    else if (ana_has_any(head, fwd))
        h |= ANA_HINT_FORWARD;
    if (ana_has_any(head, opt) || ana_has_lamb(head) || ana_has_tokens(k->ftok, "adam*")
        || ana_has_tokens(k->ftok, "*adam") || ana_has_tokens(k->atok, "adam*")
        || ana_has_tokens(k->atok, "*adam"))
        h |= ANA_HINT_OPTIMIZER;
    return h;
}

static int ana_ctx_rule(int ctx, ana_classification *c)
{
    switch (ctx) {
    case ANA_CTX_GEMM: c->cls = ANA_CLASS_CONTRACTION; c->rule = ANA_RULE_CTX_GEMM; return 1;
    case ANA_CTX_CONV: c->cls = ANA_CLASS_CONTRACTION; c->rule = ANA_RULE_CTX_CONV; return 1;
    case ANA_CTX_ATTENTION:
        c->cls = ANA_CLASS_CONTRACTION;
        c->rule = ANA_RULE_CTX_ATTENTION;
        return 1;
    case ANA_CTX_COMM: c->cls = ANA_CLASS_COMMUNICATION; c->rule = ANA_RULE_CTX_COMM; return 1;
    case ANA_CTX_MEMORY: c->cls = ANA_CLASS_MEMORY; c->rule = ANA_RULE_CTX_MEMORY; return 1;
    default: return 0;
    }
}

ana_classification ana_classify(const char *name, int ctx)
{
    ana_classification c = { ANA_CLASS_OTHER, 0, ANA_RULE_NO_NAME };
    int by_ctx = ana_ctx_rule(ctx, &c);
    if (!name || !*name)
        return c;
    ana_kname k;
    ana_kname_init(&k, name);
    c.hints = ana_keyword_hints(&k);
    if (!by_ctx) {
        for (size_t i = 0; i < ANA_N_RULES; i++)
            if (ana_rule_matches(&ana_rules[i], &k)) {
                c.cls = ana_rules[i].cls;
                c.hints |= ana_rules[i].hints;
                c.rule = (uint16_t)(ANA_RULE_TABLE + i);
                break;
            }
    }
    free(k.mem);
    return c;
}

const char *ana_class_name(int cls)
{
    return cls >= 0 && cls < ANA_CLASS_COUNT ? ana_class_names[cls] : NULL;
}

int ana_class_parse(const char *name)
{
    for (int i = 0; name && i < ANA_CLASS_COUNT; i++)
        if (strcmp(name, ana_class_names[i]) == 0)
            return i;
    return -1;
}

const char *ana_classify_rule_name(uint16_t rule)
{
    if (rule < ANA_RULE_TABLE)
        return ana_fixed_rule_names[rule];
    if (rule - ANA_RULE_TABLE < ANA_N_RULES)
        return ana_rules[rule - ANA_RULE_TABLE].label;
    return "unknown rule";
}

const char *ana_ctx_name(int ctx)
{
    static const char *const n[ANA_CTX_COUNT] = { "none", "gemm", "conv", "attention",
                                                  "comm", "memory", "library" };
    return ctx >= 0 && ctx < ANA_CTX_COUNT ? n[ctx] : NULL;
}

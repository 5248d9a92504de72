/* classify_rules.c — the one rule table of the kernel classifier: each row a pattern on the
 * reduced kernel name (how rows match: classify.c), the class it gives, the phase hints it
 * adds and a label that `anatomist classify --explain` prints. The first matching row wins.
 * docs/classification.md gives the reasoning for every family and the ambiguous ones.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/classify_int.h"

#define P ANA_PAT_PREFIX
#define C ANA_PAT_CONTAINS
#define B ANA_PAT_BASE
#define T ANA_PAT_TOKEN
#define O ANA_PAT_OWN_TOKEN
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
const ana_rule ana_rules[] = {
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
    /* XLA's collective ops by their HLO names (all-reduce-start, reduce-scatter.3) */
    { P, "all-reduce", NULL, COM, 0, "name: XLA collective" },
    { P, "all-gather", NULL, COM, 0, "name: XLA collective" },
    { P, "reduce-scatter", NULL, COM, 0, "name: XLA collective" },
    { P, "all-to-all", NULL, COM, 0, "name: XLA collective" },
    { P, "collective-permute", NULL, COM, 0, "name: XLA collective" },
    { P, "collective-broadcast", NULL, COM, 0, "name: XLA collective" },
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
    /* cuDNN's CUTLASS convolutions as a mangled name a tool cut short (no demangling) */
    { P, "_zn19cutlass_cudnn", NULL, CON, 0, "name: CUTLASS convolution (cuDNN)" },
    /* AMD's Tensile GEMMs: Cijk_Ailk_Bljk_... (their tuning tokens spell NLL, GSU, ...) */
    { P, "cijk_", NULL, CON, 0, "name: Tensile GEMM (AMD)" },
    /* cuBLAS's scal, launched by a GEMM to scale C by beta */
    { B, "scal_kernel", NULL, CON, 0, "name: cuBLAS scal (a GEMM's scaling stage)" },
    { P, "cublaslt::", NULL, CON, 0, "name: cuBLASLt kernel (GEMM stage)" },
    { C, "splitkreduce", NULL, CON, 0, "name: cuBLAS split-K reduction" },
    { C, "reduce_1block_kernel", "cublas", CON, 0, "name: cuBLAS dot/GEMV reduction stage" },
    { P, "nvjet", NULL, CON, 0, "name: cuBLAS nvjet GEMM" },
    { C, "xmma", NULL, CON, 0, "name: XMMA GEMM/conv" },
    /* A token ending in "gemm" (gemm, sgemm, cgemm, h884gemm -> h 884 gemm, GemmUniversal),
     * not "gemm" inside a word ("gemma", the model family); cuBLAS's gemmk1 — in the
     * function's own name: a namespace (fbgemm_gpu::) says nothing of what its kernel
     * does (permute, bucketize, quantize); the namespace decides late, below. */
    { O, "*gemm", NULL, CON, 0, "name: GEMM" },
    { O, "gemmk", NULL, CON, 0, "name: GEMM" },
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
    /* the bias gradient of a linear layer: a reduction over the batch, whatever the
     * matmul in its name (llm.c's matmul_backward_bias_kernel) */
    { T, "backward bias", NULL, NRM, BWD, "token: bias gradient (a reduction)" },
    { T, "bias backward", NULL, NRM, BWD, "token: bias gradient (a reduction)" },
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
    /* cuFFT's stages (regular_fft, vector_fft, composite_2way_fft) and XLA's fft ops */
    { T, "*fft", NULL, CON, 0, "token: FFT stage" },
    /* TVM's dense (a GEMM) and llama.cpp's mul_mat kernels */
    { T, "nn dense", NULL, CON, 0, "token: dense layer (TVM GEMM)" },
    { T, "mul mat", NULL, CON, 0, "token: matrix product (mul_mat)" },
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
    /* the fused softmax + cross-entropy of llm.c-style trainers (fused_classifier) */
    { T, "fused classifier", NULL, NRM, 0, "token: fused softmax + cross-entropy" },
    /* pooling as a whole token (max_pool2d, avgpool, MaxPoolForward); "pooled" is not
     * pooling (FBGEMM's pooled embeddings are gathers) */
    { T, "*pool", NULL, NRM, 0, "name: pooling" },
    { T, "*pooling", NULL, NRM, 0, "name: pooling" },
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
    /* the backward of an embedding (bag) in any spelling: a scatter of gradients */
    { T, "embedding&backward", NULL, OTH, BWD, "token: embedding backward" },
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
    /* non-max suppression selects boxes: a selection, whatever its "max" */
    { T, "suppression", NULL, OTH, 0, "token: non-max suppression (a selection)" },
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
    /* llama.cpp/ggml: row gathers, copies with a cast, unary ops (their op is a template
     * argument: unary_gated_op_kernel<&op_gelu>) */
    { T, "get rows", NULL, ELT, 0, "token: gather (get_rows)" },
    { T, "cpy", NULL, ELT, 0, "token: copy (cpy)" },
    { T, "unary", NULL, ELT, 0, "token: unary op" },
    /* an optimizer's update by its word (bitsandbytes kOptimizer32bit2State) */
    { T, "optimizer", NULL, ELT, OPT, "token: optimizer update" },
    /* nearest-neighbour interpolation (upsampling) */
    { T, "nearest", NULL, ELT, 0, "token: nearest-neighbour interpolation" },
    /* casts named by their target type (FBGEMM's _float_to_FP8rowwise) */
    { T, "to fp 8*", NULL, ELT, 0, "token: cast" },
    { T, "to fp 16", NULL, ELT, 0, "token: cast" },
    { T, "to bf 16", NULL, ELT, 0, "token: cast" },
    { T, "to int 8", NULL, ELT, 0, "token: cast" },
    /* A collective word only in the namespace: a helper of a collective library. */
    { C, "allreduce", NULL, COM, 0, "name: collective namespace" },
    { C, "all_reduce", NULL, COM, 0, "name: collective namespace" },
    { C, "allgather", NULL, COM, 0, "name: collective namespace" },
    { C, "all_gather", NULL, COM, 0, "name: collective namespace" },
    { C, "reducescatter", NULL, COM, 0, "name: collective namespace" },
    { C, "reduce_scatter", NULL, COM, 0, "name: collective namespace" },
    { C, "alltoall", NULL, COM, 0, "name: collective namespace" },
    { C, "all_to_all", NULL, COM, 0, "name: collective namespace" },
    /* FBGEMM's sparse and embedding helpers that no word above placed (bucketize, ...):
     * its namespace holds "gemm", its GEMMs say so in their own name (above) */
    { P, "fbgemm_gpu::", NULL, OTH, 0, "name: FBGEMM sparse/embedding helper" },
    /* A GEMM word only in the namespace: a GEMM library's kernel. */
    { T, "*gemm", NULL, CON, 0, "name: GEMM namespace" },
    { ANA_PAT_ANY, "", NULL, OTH, 0, "default: no rule matched" },
};

#undef P
#undef C
#undef B
#undef T
#undef O

const size_t ana_n_rules = sizeof(ana_rules) / sizeof(ana_rules[0]);

/* test_classify.c — the kernel classifier's contract: contexts win over names, the rule
 * table's families (one real name each), phase hints, rule labels, class names. The
 * labeled corpora (tests/data/kernel-names) are checked through the CLI in
 * tests/cli/test_classify.py. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyses/classify.h"

static const char gemm_name[] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
                                "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
static const char add_name[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)";

Test(classify, contexts_win_over_names)
{
    static const struct { int ctx; int cls; } want[] = {
        { ANA_CTX_GEMM, ANA_CLASS_CONTRACTION },      { ANA_CTX_CONV, ANA_CLASS_CONTRACTION },
        { ANA_CTX_ATTENTION, ANA_CLASS_CONTRACTION }, { ANA_CTX_COMM, ANA_CLASS_COMMUNICATION },
        { ANA_CTX_MEMORY, ANA_CLASS_MEMORY },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        cr_expect_eq(ana_classify(add_name, want[i].ctx).cls, want[i].cls, "ctx %d", want[i].ctx);
        cr_expect_eq(ana_classify(gemm_name, want[i].ctx).cls, want[i].cls, "ctx %d", want[i].ctx);
        cr_expect_eq(ana_classify(NULL, want[i].ctx).cls, want[i].cls, "ctx %d", want[i].ctx);
        cr_expect(strncmp(ana_classify_rule_name(ana_classify(add_name, want[i].ctx).rule),
                          "context: ", 9) == 0);
    }
    /* library and none leave it to the name; an unknown context value too */
    cr_expect_eq(ana_classify(add_name, ANA_CTX_LIBRARY).cls, ANA_CLASS_ELEMENTWISE);
    cr_expect_eq(ana_classify(add_name, ANA_CTX_NONE).cls, ANA_CLASS_ELEMENTWISE);
    cr_expect_eq(ana_classify(add_name, 99).cls, ANA_CLASS_ELEMENTWISE);
    cr_expect_eq(ana_classify(gemm_name, ANA_CTX_LIBRARY).cls, ANA_CLASS_CONTRACTION);
    /* "memory" is never a kernel by name, but a copy-engine row as a profiler prints it is */
    cr_expect_eq(ana_classify("Memcpy DtoD (Device -> Device)", ANA_CTX_NONE).cls, ANA_CLASS_MEMORY);
    cr_expect_eq(ana_classify("[CUDA memcpy HtoD]", ANA_CTX_NONE).cls, ANA_CLASS_MEMORY);
    cr_expect_neq(ana_classify("memcpy_kernel", ANA_CTX_NONE).cls, ANA_CLASS_MEMORY);
    cr_expect_neq(ana_classify("Memcpy_kernel_HtoD", ANA_CTX_NONE).cls, ANA_CLASS_MEMORY);
}

Test(classify, null_and_empty_names_are_other)
{
    cr_expect_eq(ana_classify(NULL, ANA_CTX_NONE).cls, ANA_CLASS_OTHER);
    cr_expect_eq(ana_classify("", ANA_CTX_NONE).cls, ANA_CLASS_OTHER);
    cr_expect_eq(ana_classify("", ANA_CTX_LIBRARY).cls, ANA_CLASS_OTHER);
    cr_expect_eq(ana_classify(NULL, ANA_CTX_NONE).hints, 0);
    cr_expect_str_eq(ana_classify_rule_name(ana_classify(NULL, ANA_CTX_NONE).rule), "name: none given");
}

/* One real name per family of the rule table, with the class it must get. */
static const struct { const char *name; int cls; } families[] = {
    { "ampere_sgemm_128x64_tn", ANA_CLASS_CONTRACTION },
    { "nvjet_tst_192x8_64x8_4x1_v_bz_TNT", ANA_CLASS_CONTRACTION },
    { "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>("
      "cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4::Params)", ANA_CLASS_CONTRACTION },
    { "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, "
      "false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*)",
      ANA_CLASS_CONTRACTION },
    { "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)", ANA_CLASS_CONTRACTION },
    { "volta_scudnn_128x64_relu_interior_nn_v1", ANA_CLASS_CONTRACTION },
    { "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, "
      "4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
      ANA_CLASS_CONTRACTION },
    { "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
      ANA_CLASS_CONTRACTION },
    { "triton_tem_fused_mm_0", ANA_CLASS_CONTRACTION },
    { "triton_red_fused__log_softmax_add_0", ANA_CLASS_NORMALIZATION },
    { "triton_per_fused_add_mean_mul_pow_rsqrt_1", ANA_CLASS_NORMALIZATION },
    { "triton_poi_fused_add_relu_2", ANA_CLASS_ELEMENTWISE },
    { "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true>(float*, "
      "float const*, int, int, int)", ANA_CLASS_NORMALIZATION },
    { "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, "
      "float, cudnnTensorStruct, float const*)", ANA_CLASS_NORMALIZATION },
    { "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
      "float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<"
      "float, float>, unsigned int, float, 4>)", ANA_CLASS_NORMALIZATION },
    { "void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*, float*, float*, long*, "
      "float*, int, int, int, int, long)", ANA_CLASS_NORMALIZATION },
    { "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float "
      "const*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, float*, long*)",
      ANA_CLASS_NORMALIZATION },
    { "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ANA_CLASS_COMMUNICATION },
    { "_Z29ncclKernel_AllReduce_RING_LL_SumfP11ncclDevCommmP8ncclWork", ANA_CLASS_COMMUNICATION },
    { "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, "
      "64>(float*, int)", ANA_CLASS_ELEMENTWISE },
    { "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
      ANA_CLASS_ELEMENTWISE },
    { "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
      "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<"
      "float, 4> >(int)", ANA_CLASS_ELEMENTWISE },
    { "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned "
      "int, 1, 4, bool>(at::cuda::detail::TensorInfo<float, unsigned int>, at::PhiloxCudaState)",
      ANA_CLASS_ELEMENTWISE },
    { "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)",
      ANA_CLASS_ELEMENTWISE },
    { "loop_add_fusion", ANA_CLASS_ELEMENTWISE },
    { "input_reduce_fusion", ANA_CLASS_NORMALIZATION },
    { "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::"
      "DeviceRadixSortPolicy<long, long, unsigned int>::Policy800, false>(int)", ANA_CLASS_OTHER },
    { "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, "
      "4>(long, at::PhiloxCudaState)", ANA_CLASS_OTHER },
    { "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, "
      "long>(long const*, float const*, float*, int, long, int)", ANA_CLASS_OTHER },
    { "void moe::dev::routing::routingIndicesOffsetsKernel<int>(int)", ANA_CLASS_OTHER },
    { "frobnicate_kernel", ANA_CLASS_OTHER },
};

Test(classify, one_name_per_family)
{
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        ana_classification c = ana_classify(families[i].name, ANA_CTX_NONE);
        cr_expect_eq(c.cls, families[i].cls, "%s: got %s by '%s'", families[i].name,
                     ana_class_name(c.cls), ana_classify_rule_name(c.rule));
    }
}

Test(classify, the_functor_decides_generic_templates_not_the_parameters)
{
    /* softmax functor inside an elementwise template: decided by the template argument */
    cr_expect_eq(ana_classify("void at::native::vectorized_elementwise_kernel<4, at::native::"
                              "(anonymous namespace)::softmax_backward_kernel_impl(float)"
                              "::{lambda(float)#1}, std::array<char*, 3ul> >(int)",
                              ANA_CTX_NONE).cls, ANA_CLASS_NORMALIZATION);
    /* the same template with an arithmetic functor is elementwise */
    cr_expect_eq(ana_classify(add_name, ANA_CTX_NONE).cls, ANA_CLASS_ELEMENTWISE);
    /* a cuDNN tensor struct or a curand state in the parameters says nothing */
    cr_expect_eq(ana_classify("void my_kernel<float>(cudnnTensorStruct, curandStatePhilox4_32_10*)",
                              ANA_CTX_NONE).cls, ANA_CLASS_OTHER);
    cr_expect_eq(ana_classify("void relu_fwd<float>(float*, softmax_params)", ANA_CTX_NONE).cls,
                 ANA_CLASS_ELEMENTWISE);
}

Test(classify, mangled_names_classify_like_demangled)
{
    static const char *const pairs[][2] = {
        { "_Z17layernorm_forwardIfEvPT_PfS2_PKS0_S4_S4_ii",
          "void layernorm_forward<float>(float*, float*, float*, float const*, float const*, "
          "float const*, int, int)" },
        { "_Z20encoder_backward_wteIfEvPT_PKS0_PKiS5_ii",
          "void encoder_backward_wte<float>(float*, float const*, int const*, int const*, int, int)" },
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        ana_classification a = ana_classify(pairs[i][0], ANA_CTX_NONE);
        ana_classification b = ana_classify(pairs[i][1], ANA_CTX_NONE);
        cr_expect_eq(a.cls, b.cls, "%s", pairs[i][0]);
        cr_expect_eq(a.rule, b.rule, "%s", pairs[i][0]);
        cr_expect_eq(a.hints, b.hints, "%s", pairs[i][0]);
    }
    cr_expect_eq(ana_classify(pairs[0][0], ANA_CTX_NONE).cls, ANA_CLASS_NORMALIZATION);
    cr_expect_eq(ana_classify(pairs[1][0], ANA_CTX_NONE).cls, ANA_CLASS_OTHER);
    /* a mangled name cut short (not demangleable) still matches on its text */
    cr_expect_eq(ana_classify("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_", ANA_CTX_NONE).cls,
                 ANA_CLASS_ELEMENTWISE);
}

Test(classify, sample_trainer_kernels)
{
    static const struct { const char *name; int cls; uint8_t hints; } want[] = {
        { "layernorm_forward", ANA_CLASS_NORMALIZATION, ANA_HINT_FORWARD },
        { "layernorm_backward_data", ANA_CLASS_NORMALIZATION, ANA_HINT_BACKWARD },
        { "softmax_causal_backward", ANA_CLASS_NORMALIZATION, ANA_HINT_BACKWARD },
        { "crossentropy", ANA_CLASS_NORMALIZATION, 0 },
        { "softmax_xent", ANA_CLASS_NORMALIZATION, 0 },
        { "reduce_mean", ANA_CLASS_NORMALIZATION, 0 },
        { "argmax_correct", ANA_CLASS_NORMALIZATION, 0 },
        { "bias_grad", ANA_CLASS_NORMALIZATION, ANA_HINT_BACKWARD },
        { "adamw", ANA_CLASS_ELEMENTWISE, ANA_HINT_OPTIMIZER },
        { "adamw_update", ANA_CLASS_ELEMENTWISE, ANA_HINT_OPTIMIZER },
        { "gelu_forward", ANA_CLASS_ELEMENTWISE, ANA_HINT_FORWARD },
        { "gelu_backward", ANA_CLASS_ELEMENTWISE, ANA_HINT_BACKWARD },
        { "residual_add", ANA_CLASS_ELEMENTWISE, 0 },
        { "cast_params", ANA_CLASS_ELEMENTWISE, 0 },
        { "permute_qkv", ANA_CLASS_ELEMENTWISE, 0 },
        { "unpermute_backward", ANA_CLASS_ELEMENTWISE, ANA_HINT_BACKWARD },
        { "encoder_forward", ANA_CLASS_ELEMENTWISE, ANA_HINT_FORWARD },
        { "encoder_backward_wte", ANA_CLASS_OTHER, ANA_HINT_BACKWARD },
        { "matmul_fwd", ANA_CLASS_CONTRACTION, ANA_HINT_FORWARD },
        { "matmul_bwd_data", ANA_CLASS_CONTRACTION, ANA_HINT_BACKWARD },
        { "matmul_bwd_weight", ANA_CLASS_CONTRACTION, ANA_HINT_BACKWARD },
        { "relu_bwd", ANA_CLASS_ELEMENTWISE, ANA_HINT_BACKWARD },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ana_classification c = ana_classify(want[i].name, ANA_CTX_NONE);
        cr_expect_eq(c.cls, want[i].cls, "%s: got %s", want[i].name, ana_class_name(c.cls));
        cr_expect_eq(c.hints, want[i].hints, "%s: hints %u", want[i].name, c.hints);
    }
}

Test(classify, hints)
{
    cr_expect_eq(ana_classify("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", ANA_CTX_NONE).hints,
                 ANA_HINT_BACKWARD);
    cr_expect_eq(ana_classify("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>()",
                              ANA_CTX_NONE).hints, ANA_HINT_FORWARD);
    cr_expect_eq(ana_classify("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc",
                              ANA_CTX_NONE).hints, ANA_HINT_BACKWARD);
    cr_expect_eq(ana_classify("ConvolutionBackward0", ANA_CTX_NONE).hints, ANA_HINT_BACKWARD);
    /* backward wins when a backward kernel also names the forward op */
    cr_expect_eq(ana_classify("triton_red_fused__log_softmax_backward_data_nll_loss_backward_"
                              "nll_loss_forward_2", ANA_CTX_NONE).hints, ANA_HINT_BACKWARD);
    cr_expect_eq(ana_classify("multi_tensor_apply_kernel", ANA_CTX_NONE).hints, ANA_HINT_OPTIMIZER);
    cr_expect_eq(ana_classify("void lamb_stage1_kernel<float>(float*)", ANA_CTX_NONE).hints,
                 ANA_HINT_OPTIMIZER);
    /* "lambda" is not LAMB: ATen functors are lambdas */
    cr_expect_eq(ana_classify("void at::native::vectorized_elementwise_kernel<4, at::native::"
                              "neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}, "
                              "std::array<char*, 2ul> >(int)", ANA_CTX_NONE).hints, 0);
    /* hints do not depend on the context */
    cr_expect_eq(ana_classify("flash_bwd_convert_dq_kernel", ANA_CTX_ATTENTION).hints,
                 ANA_HINT_BACKWARD);
    cr_expect_eq(ana_classify(gemm_name, ANA_CTX_NONE).hints, 0);
}

Test(classify, rule_names_for_every_class)
{
    static const char *const one_per_class[ANA_CLASS_COUNT] = {
        "volta_sgemm_64x64_nn", "vectorized_layer_norm_kernel", "relu_fwd",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL", NULL, "frobnicate",
    };
    for (int cls = 0; cls < ANA_CLASS_COUNT; cls++) {
        const char *name = one_per_class[cls];
        ana_classification c = ana_classify(name ? name : "x", name ? ANA_CTX_NONE : ANA_CTX_MEMORY);
        cr_expect_eq(c.cls, cls, "%s", ana_class_name(cls));
        const char *label = ana_classify_rule_name(c.rule);
        cr_assert_not_null(label);
        cr_expect_gt(strlen(label), 5);
    }
    cr_expect_not_null(ana_classify_rule_name(UINT16_MAX));
    /* distinct rules have distinct numbers: a GEMM and a copy are not decided alike */
    cr_expect_neq(ana_classify(gemm_name, ANA_CTX_NONE).rule, ana_classify(add_name, ANA_CTX_NONE).rule);
}

Test(classify, class_and_context_names_round_trip)
{
    static const char *const names[ANA_CLASS_COUNT] = {
        "contraction", "normalization", "elementwise", "communication", "memory", "other",
    };
    for (int i = 0; i < ANA_CLASS_COUNT; i++) {
        cr_expect_str_eq(ana_class_name(i), names[i]);
        cr_expect_eq(ana_class_parse(names[i]), i);
    }
    cr_expect_null(ana_class_name(-1));
    cr_expect_null(ana_class_name(ANA_CLASS_COUNT));
    cr_expect_eq(ana_class_parse("Contraction"), -1);
    cr_expect_eq(ana_class_parse(""), -1);
    cr_expect_str_eq(ana_ctx_name(ANA_CTX_GEMM), "gemm");
    cr_expect_str_eq(ana_ctx_name(ANA_CTX_LIBRARY), "library");
    cr_expect_null(ana_ctx_name(ANA_CTX_COUNT));
}

/* Token rules (docs/classification.md, "Tokens"): a keyword that is a whole token of the
 * function's name, not a substring of a longer word. */
static void expect_class(const char *name, int cls, const char *label)
{
    ana_classification c = ana_classify(name, ANA_CTX_NONE);
    cr_expect_eq(c.cls, cls, "%s: got %s by '%s'", name, ana_class_name(c.cls),
                 ana_classify_rule_name(c.rule));
    if (label)
        cr_expect_str_eq(ana_classify_rule_name(c.rule), label, "%s", name);
}

Test(classify, short_keywords_match_whole_tokens)
{
    /* "gemm" inside "gemma" (the model family) is no GEMM: the RMS norm decides */
    expect_class("_gemma_dual_rmsnorm_residual_kernel", ANA_CLASS_NORMALIZATION, "name: RMS norm");
    /* ... while a token ending in gemm is one: BLAS precision prefixes, digit boundaries,
     * camelCase */
    expect_class("maxwell_sgemm_128x64_nt", ANA_CLASS_CONTRACTION, "name: GEMM");
    expect_class("maxwell_gcgemm_32x32_nt", ANA_CLASS_CONTRACTION, "name: GEMM");
    expect_class("volta_h884gemm_64x64_ldg8_nn", ANA_CLASS_CONTRACTION, "name: GEMM");
    expect_class("void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, false>(int)",
                 ANA_CLASS_CONTRACTION, "name: GEMM");
    expect_class("gemmk1_kernel", ANA_CLASS_CONTRACTION, "name: GEMM");
    /* "adam" inside "hadamard" is no optimizer: neither the class nor the hint */
    ana_classification h = ana_classify(
        "void (anonymous namespace)::fast_hadamard_transform_kernel<(anonymous namespace)::"
        "FastHadamardKernelTraits<16, 7, __nv_bfloat16> >(HadamardParamsBase)", ANA_CTX_NONE);
    cr_expect_eq(h.cls, ANA_CLASS_OTHER);
    cr_expect_eq(h.hints, 0);
    /* ... while FusedAdam (camelCase) and adamw are */
    ana_classification a = ana_classify("void FusedAdamKernel<float>(float*)", ANA_CTX_NONE);
    cr_expect_eq(a.cls, ANA_CLASS_ELEMENTWISE);
    cr_expect_eq(a.hints, ANA_HINT_OPTIMIZER);
    cr_expect_eq(ana_classify("adamw_kernel", ANA_CTX_NONE).hints, ANA_HINT_OPTIMIZER);
    /* "fill" inside "prefill" is no fill; the attention row decides */
    expect_class("flashinfer::BatchPrefillWithRaggedKVCacheKernel", ANA_CLASS_CONTRACTION, NULL);
    cr_expect_neq(ana_classify("chunked_prefill_kernel", ANA_CTX_NONE).cls, ANA_CLASS_ELEMENTWISE);
    expect_class("fill_kernel_cuda", ANA_CLASS_ELEMENTWISE, "name: fill");
    /* an acronym followed by a word splits before the word's capital: MQA + Decode */
    expect_class("BatchMQADecodeKernel", ANA_CLASS_CONTRACTION, "token: attention (MQA)");
    /* a digit boundary splits: f8dot -> f 8 dot */
    expect_class("_fp8_paged_decode_split_f8dot", ANA_CLASS_CONTRACTION, "token: dot product");
    /* template arguments give no tokens to the function's name */
    expect_class("void frobnicate_kernel<mm, 4>(int)", ANA_CLASS_OTHER, NULL);
    expect_class("void mmKernel<float>(int)", ANA_CLASS_CONTRACTION, "token: matmul (mm)");
}

Test(classify, precedence_of_families)
{
    /* Inductor's prefix decides before the collective words it fuses around */
    expect_class("triton_poi_fused_add_all_reduce_2", ANA_CLASS_ELEMENTWISE,
                 "name: Inductor pointwise");
    expect_class("triton_red_fused_all_reduce_sum_3", ANA_CLASS_NORMALIZATION,
                 "name: Inductor reduction");
    /* a norm in an all-reduce namespace is a norm; the collective in its own name is not */
    expect_class("void flashinfer::trtllm_mnnvl_allreduce::rmsNormLamport<__nv_bfloat16, "
                 "(flashinfer::QuantType)0, true, 8>(flashinfer::trtllm_mnnvl_allreduce::"
                 "RMSNormParams)", ANA_CLASS_NORMALIZATION, "name: RMS norm");
    expect_class("void flashinfer::trtllm_mnnvl_allreduce::twoshot_allreduce_kernel<float>(int)",
                 ANA_CLASS_COMMUNICATION, "name: all-reduce kernel");
    /* a helper with no other family word in a collective namespace: the namespace decides */
    expect_class("void vllm::all_reduce_helpers::barrier_kernel<8>(int)",
                 ANA_CLASS_COMMUNICATION, "name: collective namespace");
    expect_class("mscclKernel_Sum_hip_bfloat16_Simple", ANA_CLASS_COMMUNICATION, NULL);
    /* TensorRT's XMMA pooling is pooling, not an XMMA GEMM */
    expect_class("sm50_xmma_pooling_coalescedC_NHWC_kMAX_3_False_execute_kernel_trt",
                 ANA_CLASS_NORMALIZATION, "name: pooling");
    expect_class("sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64",
                 ANA_CLASS_CONTRACTION, NULL);
}

Test(classify, generic_op_tokens)
{
    /* contraction words win over the elementwise words of a fused prologue/epilogue */
    expect_class("_w8a8_triton_block_scaled_mm", ANA_CLASS_CONTRACTION, "token: matmul (mm)");
    expect_class("_quantized_linear_fp8_kernel", ANA_CLASS_CONTRACTION,
                 "token: linear layer (GEMM)");
    expect_class("addmm_kernel", ANA_CLASS_CONTRACTION, "token: matmul (addmm)");
    expect_class("_deepseek_v4_sm12x_fp8_einsum_kernel", ANA_CLASS_CONTRACTION, "token: einsum");
    /* ... but a quantization kernel alone is elementwise, and linear interpolation is no GEMM */
    expect_class("void vllm::scaled_fp8_quant_kernel<c10::BFloat16>(int)", ANA_CLASS_ELEMENTWISE,
                 NULL);
    expect_class("void at::native::upsample_linear1d_out_frame<float, float>(int)",
                 ANA_CLASS_ELEMENTWISE, "name: upsample");
    /* reductions and arithmetic named after the ATen op */
    expect_class("sum_dim_kernel_non_inner", ANA_CLASS_NORMALIZATION, "token: reduction (sum)");
    expect_class("amax_kernel_2", ANA_CLASS_NORMALIZATION, "token: reduction (amax)");
    expect_class("mul_func_kernel_rank_2", ANA_CLASS_ELEMENTWISE, "token: arithmetic (mul)");
    expect_class("true_div_func_kernel_rank_1", ANA_CLASS_ELEMENTWISE, "token: arithmetic (div)");
    expect_class("where_inner_kernel_rank_1", ANA_CLASS_ELEMENTWISE, "token: select (where)");
    expect_class("zeros_kernel", ANA_CLASS_ELEMENTWISE, "token: fill (zeros)");
    /* a reduction word with an elementwise word: the reduction decides */
    expect_class("mul_sum_kernel", ANA_CLASS_NORMALIZATION, "token: reduction (sum)");
    /* clamp_max is elementwise (clamp is claimed before the reduction words) */
    expect_class("clamp_max_kernel", ANA_CLASS_ELEMENTWISE, "name: clamp");
    /* words that are no op: "maximum" is a token of its own, "maxwell" too */
    expect_class("maximum_kernel", ANA_CLASS_ELEMENTWISE, "token: arithmetic (maximum)");
    /* logits alone says too little (a GEMM, a softmax statistic or a logits processor) */
    expect_class("_logits_kernel", ANA_CLASS_OTHER, NULL);
}

Test(classify, triton_attention_naming)
{
    /* the split-KV decode attention stages of Triton libraries, a fused rope included */
    expect_class("_fwd_kernel_stage1", ANA_CLASS_CONTRACTION,
                 "name: Triton decode attention stage");
    expect_class("_fwd_kernel_stage2", ANA_CLASS_CONTRACTION,
                 "name: Triton decode attention stage");
    expect_class("_fwd_grouped_kernel_stage1_rope", ANA_CLASS_CONTRACTION,
                 "name: Triton decode attention stage");
    expect_class("_fwd_kernel_flash_decode_stage2", ANA_CLASS_CONTRACTION,
                 "name: Triton decode attention stage");
    /* the bare _fwd_kernel / _bwd_kernel convention, when no family word decides */
    expect_class("_fwd_kernel", ANA_CLASS_CONTRACTION, "name: Triton attention (_fwd_kernel)");
    expect_class("_fwd_grouped_split_kernel", ANA_CLASS_CONTRACTION,
                 "name: Triton attention (_fwd_kernel)");
    expect_class("_bwd_kernel_one_col_block", ANA_CLASS_CONTRACTION,
                 "name: Triton attention (_bwd_kernel)");
    cr_expect_eq(ana_classify("_bwd_kernel", ANA_CTX_NONE).hints, ANA_HINT_BACKWARD);
    /* ... but a helper that names itself is what it says */
    expect_class("_fwd_kernel_destindex_copy_kv", ANA_CLASS_ELEMENTWISE, "name: copy kernel");
    expect_class("_fwd_kernel_token_softmax", ANA_CLASS_NORMALIZATION, "name: softmax");
    expect_class("_fwd_kernel_ep_gather", ANA_CLASS_ELEMENTWISE, "name: gather");
    /* split-K / split-KV stages are contraction, before the layout word "split" */
    expect_class("_fwd_kernel_splitK", ANA_CLASS_CONTRACTION,
                 "token: split-K stage (GEMM/attention)");
    expect_class("_splitK_reduce", ANA_CLASS_CONTRACTION, "token: split-K stage (GEMM/attention)");
    expect_class("decode_split_kv_kernel", ANA_CLASS_CONTRACTION,
                 "token: split-KV stage (attention)");
    /* "_fwd_kernel" is a prefix rule: another kernel's _fwd_kernel suffix is not it */
    expect_class("frobnicate_fwd_kernel", ANA_CLASS_OTHER, NULL);
}

Test(classify, linear_attention_naming)
{
    expect_class("chunk_fwd_kernel_o", ANA_CLASS_CONTRACTION, "name: chunked linear attention");
    expect_class("chunk_gla_fwd_kernel_o", ANA_CLASS_CONTRACTION, "name: chunked linear attention");
    expect_class("fused_chunk_retention_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "name: chunked linear attention");
    expect_class("_chunk_state_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "name: chunked linear attention");
    expect_class("fused_recurrent_gla_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "token: recurrent linear attention");
    expect_class("recompute_w_u_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "token: linear attention (WY representation)");
    expect_class("prepare_wy_repr_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "token: linear attention (WY representation)");
    /* chunk helpers that name their op, and ATen's chunk_cat */
    expect_class("chunk_local_cumsum_scalar_kernel", ANA_CLASS_OTHER, "name: scan");
    expect_class("chunk_cat_cuda_kernel", ANA_CLASS_ELEMENTWISE, "token: layout (cat)");
    /* "chunk" must start the name: chunked prefill is not linear attention */
    cr_expect_neq(ana_classify("chunked_prefill_kernel", ANA_CTX_NONE).cls, ANA_CLASS_CONTRACTION);
}

Test(classify, round_3_families)
{
    /* layout words */
    expect_class("fused_qkv_split_gdn_prefill_kernel", ANA_CLASS_ELEMENTWISE,
                 "token: layout (split)");
    expect_class("fused_qkvzba_split_reshape_cat_contiguous_kernel", ANA_CLASS_ELEMENTWISE,
                 "token: layout (cat)");
    expect_class("reshape_kernel", ANA_CLASS_ELEMENTWISE, "token: layout (reshape)");
    expect_class("make_contiguous_kernel", ANA_CLASS_ELEMENTWISE, "token: layout (contiguous)");
    /* "cat" is a whole token: categorical is not a concatenation */
    expect_class("categorical_kernel", ANA_CLASS_OTHER, NULL);
    /* reshape_and_cache stays a KV-cache write */
    expect_class("vllm::reshape_and_cache_kernel", ANA_CLASS_OTHER, "name: KV-cache scatter");
    expect_class("applyBiasRopeUpdateKVCacheV2", ANA_CLASS_OTHER, "name: KV-cache write");
    /* a rope kernel that writes no cache stays elementwise */
    expect_class("applyBiasRopeKernel", ANA_CLASS_ELEMENTWISE, "name: rotary embedding");
    /* casts, RNN cells, KV page-index gathers */
    expect_class("cvt_fp16_to_fp4", ANA_CLASS_ELEMENTWISE, "token: cast (cvt)");
    expect_class("lstm_cell_backward", ANA_CLASS_ELEMENTWISE, "token: RNN cell (pointwise gates)");
    expect_class("void at::native::(anonymous namespace)::gru_cell_forward<float, float, int, 1>"
                 "(at::cuda::detail::TensorInfo<float, int>)", ANA_CLASS_ELEMENTWISE,
                 "token: RNN cell (pointwise gates)");
    expect_class("create_flashinfer_kv_indices_triton", ANA_CLASS_ELEMENTWISE,
                 "token: gather (KV indices)");
    /* ATen's adaptive pooling stages and layer/group norm stages */
    expect_class("void at::native::(anonymous namespace)::atomic_adaptive_average_gradinput<float>"
                 "(float*, float*, int, int, int, int)", ANA_CLASS_NORMALIZATION,
                 "name: pooling (adaptive)");
    expect_class("adaptivemaxgradinput", ANA_CLASS_NORMALIZATION, "name: pooling (adaptive)");
    ana_classification g = ana_classify("adaptive_average_gradinput", ANA_CTX_NONE);
    cr_expect_eq(g.hints, ANA_HINT_BACKWARD);
    expect_class("void at::native::(anonymous namespace)::ComputeGradientFusedParamsCUDAKernel"
                 "<float>(long, long, float const*, float const*, float*, float*)",
                 ANA_CLASS_NORMALIZATION, "name: norm stage (fused params)");
    expect_class("ComputeBackwardFusedParamsCUDAKernel", ANA_CLASS_NORMALIZATION,
                 "name: norm stage (fused params)");
}

Test(classify, round_4_families)
{
    /* sparse matrix products (cuSPARSE, torch_sparse), and a scalar multiply that is none */
    expect_class("void cusparse::csrmm_v2_kernel<cusparse::CsrMMPolicy<int, float, float, float>, "
                 "true, false, false, int, int, int, int, float, float, float>(int, int)",
                 ANA_CLASS_CONTRACTION, "name: sparse GEMM (SpMM)");
    expect_class("void spmm_kernel<float, (ReductionType)0, true>(long const*, long const*)",
                 ANA_CLASS_CONTRACTION, "name: sparse GEMM (SpMM)");
    expect_class("cusparse::csrmv_v3_kernel", ANA_CLASS_CONTRACTION, "name: sparse GEMV (SpMV)");
    expect_class("sddmm_kernel", ANA_CLASS_CONTRACTION, "name: sampled dense-dense matmul (SDDMM)");
    expect_class("void cusparse::matrix_scalar_multiply_kernel<cusparse::MatrixWiseMulPolicy, "
                 "true, long, float, float>(long, long, long)", ANA_CLASS_ELEMENTWISE,
                 "token: arithmetic (multiply)");
    /* ... while a matrix multiply is a GEMM, whatever the spelling */
    expect_class("matrixMultiplyKernel", ANA_CLASS_CONTRACTION, "token: matmul (matrix multiply)");
    /* Marlin and low-bit GEMMs; the MoE expert GEMMs before the MoE routing row; the
     * weight repack is a layout op */
    expect_class("void sglang::device::marlin::Marlin<__nv_bfloat16, 1, 256>",
                 ANA_CLASS_CONTRACTION, "name: Marlin mixed-precision GEMM");
    expect_class("void sglang::device::marlin_moe::Marlin<__nv_bfloat16, 1>",
                 ANA_CLASS_CONTRACTION, "name: Marlin mixed-precision GEMM");
    expect_class("void w4a16_sm90_kernel<Trait<2112, 7168>, true>(CUtensorMap, Params)",
                 ANA_CLASS_CONTRACTION, "token: low-bit GEMM (w4a16)");
    expect_class("void w4a16_moe_sm90_kernel<Trait<32>>(Params)", ANA_CLASS_CONTRACTION,
                 "token: MoE expert GEMM (low-bit)");
    expect_class("moe_grouped_mm_kernel", ANA_CLASS_CONTRACTION, "token: MoE expert GEMM (mm)");
    expect_class("gptq_marlin_repack_kernel", ANA_CLASS_ELEMENTWISE,
                 "token: weight layout (repack)");
    /* "mm" still decides a w8a8 GEMM that says it (no change of its row) */
    expect_class("_w8a8_triton_block_scaled_mm", ANA_CLASS_CONTRACTION, "token: matmul (mm)");
    /* "w4a16" is whole tokens: a4w16 or w4a160 are not it */
    expect_class("w4a160_kernel", ANA_CLASS_OTHER, NULL);
    /* MoE routing stays other; the expert-parallel all-to-all is communication */
    expect_class("void vllm::moe::moe_align_block_size_kernel<int>", ANA_CLASS_OTHER,
                 "name: MoE routing/permutation");
    expect_class("moeA2ADispatchKernel", ANA_CLASS_COMMUNICATION, "token: all-to-all (A2A)");
    expect_class("moe_dispatch_kernel", ANA_CLASS_COMMUNICATION,
                 "token: MoE dispatch (all-to-all)");
    expect_class("moe_combine_kernel", ANA_CLASS_COMMUNICATION, "token: MoE combine (all-to-all)");
    /* both words are needed: a dispatch without moe is not a collective */
    expect_class("dispatch_kernel", ANA_CLASS_OTHER, NULL);
    /* a routing prefix sum in TRT-LLM's GEMM namespace is a scan, not a GEMM stage */
    expect_class("void tensorrt_llm::kernels::cutlass_kernels::blockExpertPrefixSumKernel<1024>",
                 ANA_CLASS_OTHER, "token: scan (prefix sum)");
    /* attention: the merge of partial states, MLA scheduling; linear-attention families */
    expect_class("merge_attn_states_kernel", ANA_CLASS_CONTRACTION,
                 "token: attention (merge of partial states)");
    expect_class("merge_state_v2_kernel", ANA_CLASS_CONTRACTION,
                 "token: attention (merge of partial states)");
    expect_class("get_mla_metadata_kernel", ANA_CLASS_CONTRACTION,
                 "token: MLA attention scheduling metadata");
    expect_class("parallel_simple_gla_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "token: linear attention (GLA)");
    expect_class("parallel_retention_bwd_kernel_dq", ANA_CLASS_CONTRACTION,
                 "token: linear attention (retention)");
    expect_class("parallel_based_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "token: linear attention (based)");
    /* the chunked forms keep their earlier row; "gla" inside a word is not the token */
    expect_class("chunk_gla_fwd_kernel_o", ANA_CLASS_CONTRACTION, "name: chunked linear attention");
    expect_class("glass_kernel", ANA_CLASS_OTHER, NULL);
    /* Mamba2's chunk scan is matmuls; its cumsum stage stays a scan */
    expect_class("_chunk_scan_fwd_kernel", ANA_CLASS_CONTRACTION,
                 "name: Mamba2 SSD chunk scan (matmuls)");
    expect_class("_chunk_cumsum_fwd_kernel", ANA_CLASS_OTHER, "name: scan");
    /* selection before gather */
    expect_class("gatherKthValue", ANA_CLASS_OTHER, "name: selection (k-th value/median)");
    expect_class("gatherMedian", ANA_CLASS_OTHER, "name: selection (k-th value/median)");
    expect_class("gatherTopK", ANA_CLASS_OTHER, "name: top-k");
    /* norms and losses */
    expect_class("lpnorm_cleanup", ANA_CLASS_NORMALIZATION, "name: Lp norm");
    expect_class("renorm_kernel", ANA_CLASS_NORMALIZATION, "token: renorm");
    expect_class("_kldiv_kernel_forward", ANA_CLASS_NORMALIZATION, "name: loss (KL divergence)");
    expect_class("_jsd_kernel", ANA_CLASS_NORMALIZATION, "token: loss (Jensen-Shannon divergence)");
    /* logits processors, layout */
    expect_class("apply_repetition_penalties_kernel", ANA_CLASS_ELEMENTWISE,
                 "token: logits processor (penalty)");
    expect_class("_temperature_kernel", ANA_CLASS_ELEMENTWISE,
                 "token: logits processor (temperature)");
    /* top-k sampling with a temperature is still top-k */
    expect_class("top_k_top_p_with_temperature_kernel", ANA_CLASS_OTHER, "name: top-k");
    expect_class("transform4d_0213", ANA_CLASS_ELEMENTWISE, "name: transpose (transform4d)");
    expect_class("void at::native::roll_cuda_kernel<float>(float const*, float*, long)",
                 ANA_CLASS_ELEMENTWISE, "token: layout (roll)");
    /* roll is a whole token: ATen's unrolled template is decided by its functor */
    expect_class("enroll_kernel", ANA_CLASS_OTHER, NULL);
}

Test(classify, scatter_gather_template_flag)
{
    /* ATen's _scatter_gather_elementwise_kernel: is_scatter_like = false (torch.gather) is a
     * gather, true (scatter_add) a scatter; both spellings of the flag; without template
     * arguments the name says scatter */
    static const char gather0[] =
        "void at::native::_scatter_gather_elementwise_kernel<(int)128, (int)4, void at::native::"
        "_cuda_scatter_gather_internal_kernel<(bool)0, at::native::OpaqueType<(int)4>>::operator "
        "()<at::native::TensorAssign>(at::TensorIterator &, long, long, long, const T1 &)::"
        "[lambda(int) (instance 1)]>(int, T3)";
    static const char scatter1[] =
        "void at::native::_scatter_gather_elementwise_kernel<(int)128, (int)4, void at::native::"
        "_cuda_scatter_gather_internal_kernel<(bool)1, float>::operator ()<at::native::ReduceAdd>"
        "(at::TensorIterator &, long, long, long, const T1 &)::[lambda(int) (instance 1)]>"
        "(int, T3)";
    static const char gather_false[] =
        "void at::native::_scatter_gather_elementwise_kernel<128, 4, void at::native::"
        "_cuda_scatter_gather_internal_kernel<false, float>::operator()<at::native::TensorAssign>"
        "(at::TensorIterator&, long, long, long, float const&)::{lambda(int)#1}>(int, int)";
    static const char scatter_true[] =
        "void at::native::_scatter_gather_elementwise_kernel<128, 4, void at::native::"
        "_cuda_scatter_gather_internal_kernel<true, float>::operator()<at::native::ReduceAdd>"
        "(at::TensorIterator&, long, long, long, float const&)::{lambda(int)#1}>(int, int)";
    expect_class(gather0, ANA_CLASS_ELEMENTWISE, "functor: gather (scatter_gather, gather mode)");
    expect_class(gather_false, ANA_CLASS_ELEMENTWISE,
                 "functor: gather (scatter_gather, gather mode)");
    expect_class(scatter1, ANA_CLASS_OTHER, "name: scatter");
    expect_class(scatter_true, ANA_CLASS_OTHER, "name: scatter");
    expect_class("_scatter_gather_elementwise_kernel", ANA_CLASS_OTHER, "name: scatter");
    /* a (bool)0 elsewhere in the arguments does not make a scatter a gather */
    expect_class("void at::native::scatter_kernel<(bool)0>(int)", ANA_CLASS_OTHER, "name: scatter");
}

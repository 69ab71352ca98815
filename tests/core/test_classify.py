"""Kernel name → op class (issue 12 items 4, 8, 9): GEMM tokens beat epilogue words."""

from __future__ import annotations

import pytest

from roofline_tui.core.classify import classify
from roofline_tui.core.dtypes import canonical_dtype, dtype_bytes


@pytest.mark.parametrize(("name", "experts", "op_class", "sub"), [
    # vLLM gpt-oss: a GEMM with a fused swiglu epilogue, not an act_and_mul
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu", False, "gemm", None),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu", True, "moe", None),
    # TensorRT-LLM / flashinfer on B200
    ("bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_TN_swiGlu_sm100a", False,
     "gemm", None),
    ("bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_TN_swiGlu_sm100a", True,
     "moe", None),
    ("bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x256_dynBatch_sm100a", True, "moe", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256", True, "gemm", None),
    ("gemm_bias_gelu_kernel", False, "gemm", None),
    ("ck_tile::MoeFlatmmKernel<ck_tile::MoeFlatmmPipeline>", False, "moe", None),
    # a plain epilogue kernel stays elementwise
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &silu_kernel>", True, "elementwise",
     "act_and_mul"),
    ("swiglu_bf16_kernel", False, "elementwise", "act_and_mul"),
    # host <-> device copies are not HBM traffic
    ("Memcpy HtoD (Pageable -> Device)", False, "elementwise", "host_copy"),
    ("Memcpy DtoH (Device -> Pinned)", False, "elementwise", "host_copy"),
    ("Memcpy DtoD (Device -> Device)", False, "elementwise", "copy"),
    # sparse attention
    ("flash_mla_sparse_fwd_kernel", True, "attn", "sparse"),
    ("_gqa_share_sparse_decode_kernel", True, "attn", "sparse"),
    ("kernel_paged_attention_2d", True, "attn", None),
])
def test_classification(name: str, experts: bool, op_class: str, sub: str | None) -> None:
    c = classify(name, None, None, has_experts=experts)
    assert (c.op_class, c.op_subclass) == (op_class, sub), c.reason


def test_a_3d_weight_makes_a_gemm_the_expert_gemm_of_an_moe_model() -> None:
    shapes = [[[64, 2048], [128, 1536, 2048]]]
    assert classify("nvjet_tst_64x8", None, shapes, has_experts=True).op_class == "moe"
    assert classify("nvjet_tst_64x8", None, [[[64, 2048], [2048, 1536]]],
                    has_experts=True).op_class == "gemm"


@pytest.mark.parametrize(("name", "canon"), [
    ("float64", "fp64"), ("torch.float64", "fp64"), ("double", "fp64"),
    ("float4_e2m1fn_x2", "fp4"), ("float6_e3m2fn", "fp6"), ("mxfp6", "fp6"), ("fp4", "fp4"),
])
def test_float64_is_not_fp6(name: str, canon: str) -> None:
    assert canonical_dtype(name) == canon
    assert dtype_bytes("float64") == (8.0, None)


# --------------------------------------------------------------------- issue 31 item 4, 35 item 3

FLASH_SPLITKV = ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
                 "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, "
                 "cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>"
                 "(flash::Flash_fwd_params)")
FMHA_CUTLASS = ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel"
                "<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>"
                "::Params)")


@pytest.mark.parametrize(("name", "sub", "family"), [
    # Mamba-2 SSD (mamba_ssm / vLLM / SGLang triton), prefill and mixed steps
    ("_chunk_scan_fwd_kernel", "ssm", "Mamba-2 SSD chunk scan"),
    ("_chunk_state_fwd_kernel", "ssm", "Mamba-2 SSD chunk state"),
    ("_chunk_state_varlen_kernel", "ssm", "Mamba-2 SSD chunk state"),
    ("_state_passing_fwd_kernel", "ssm", "Mamba-2 SSD state passing"),
    ("_chunk_cumsum_fwd_kernel", "ssm", "Mamba-2 SSD chunk cumsum"),
    ("_bmm_chunk_fwd_kernel", "ssm", "Mamba-2 SSD chunk C·Bᵀ"),  # its 'bmm_' is not a GEMM's
    # Mamba decode and Mamba-1
    ("_selective_scan_update_kernel", "ssm", "Mamba selective-state update"),
    ("void selective_scan_fwd_kernel<Selective_Scan_fwd_kernel_traits<128, 16, 1, true, false, "
     "false, false, true, c10::BFloat16, float, c10::BFloat16>>(SSMParamsBase)", "ssm",
     "Mamba-1 selective scan"),
    ("_causal_conv1d_update_kernel", "ssm", "causal conv1d"),
    ("void causal_conv1d_fwd_kernel<Causal_conv1d_fwd_kernel_traits<128, 4, true, "
     "c10::BFloat16>>(ConvParamsBase)", "ssm", "causal conv1d"),
    # Gated DeltaNet (Qwen3-Next through vLLM/SGLang's copy of fla)
    ("recompute_w_u_fwd_kernel", "linear_attention", "DeltaNet WY representation"),
    ("chunk_scaled_dot_kkt_fwd_kernel", "linear_attention", "DeltaNet chunk β·K·Kᵀ"),
    ("chunk_gated_delta_rule_fwd_kernel_h_blockdim64", "linear_attention",
     "Gated DeltaNet chunk-state recurrence"),
    ("chunk_gated_delta_rule_fwd_kernel_h", "linear_attention",
     "Gated DeltaNet chunk-state recurrence"),
    ("chunk_fwd_kernel_o", "linear_attention", "chunked linear-attention output"),
    ("fused_recurrent_gated_delta_rule_fwd_kernel", "linear_attention",
     "Gated DeltaNet recurrent (decode) step"),
    ("solve_tril_16x16_kernel", "linear_attention", "DeltaNet chunk triangular solve"),
    ("merge_16x16_to_64x64_inverse_kernel", "linear_attention", "triangular solve"),
    ("chunk_local_cumsum_scalar_kernel", "linear_attention", "chunk-local gate cumsum"),
    # lightning attention (vLLM's MiniMax-Text-01 lightning_attn.py) and fla's other families
    ("_fwd_diag_kernel", "linear_attention", "lightning attention"),
    ("_fwd_kv_reduce", "linear_attention", "lightning attention"),  # not an elementwise reduce
    ("_linear_attn_decode_kernel", "linear_attention", "lightning attention"),
    ("chunk_rwkv6_fwd_A_kernel_intra_sub_inter", "linear_attention", "RWKV"),
    ("fused_recurrent_rwkv7_fwd_kernel", "linear_attention", "RWKV"),
    ("chunk_gla_fwd_kernel_o", "linear_attention", "GLA"),
])
def test_ssm_and_linear_attention_kernels_are_unmodelled_and_say_their_family(
        name: str, sub: str, family: str) -> None:
    """Never causal attention (the old ``_fwd_kernel`` catch-all), never a GEMM: class unknown,
    its family in the reason and in the no-model line, with what would measure it."""
    for experts in (False, True, None):
        c = classify(name, None, None, has_experts=experts)
        assert (c.op_class, c.op_subclass) == ("unknown", sub), c.reason
        assert family in c.reason and c.unmodelled is not None
        kind = "SSM" if sub == "ssm" else "linear-attention"
        assert c.unmodelled.startswith(c.reason.split(": ", 1)[1] + ": ")
        assert family in c.unmodelled
        assert f"no byte/FLOP model for {kind} kernels" in c.unmodelled
        assert "stage C" in c.unmodelled


def test_the_spec_wording_of_the_mamba2_chunk_scan_reason() -> None:
    c = classify("_chunk_scan_fwd_kernel")
    assert c.unmodelled == ("Mamba-2 SSD chunk scan: no byte/FLOP model for SSM kernels; "
                            "ncu/rocprof counters (stage C) would measure it")


QKV_SHAPES = [[[4096, 32, 128], [4096, 8, 128], [4096, 8, 128], [4096, 32, 128]]]


@pytest.mark.parametrize(("ops", "shapes", "classification", "op_class", "sub", "why"), [
    # nothing says attention: no verdict, and the reason says what would settle it
    ((), None, "triton", "unknown", None, "no attention evidence"),
    # vLLM's prefix-prefill attention, launched by the attention op (SGLang: its module)
    (("vllm::unified_attention_with_output",), None, "triton", "attn", None,
     "launched by vllm::unified_attention_with_output"),
    (("LlamaDecoderLayer/LlamaAttention/RadixAttention",), None, None, "attn", None,
     "launched by LlamaDecoderLayer/LlamaAttention/RadixAttention"),
    # q [T, 32, 128], k/v [T, 8, 128]: GQA-shaped operands (an upstream Top-N's shapes); SDPA's
    # [B, H, S, D] with one query token against 1,024 keys
    ((), QKV_SHAPES, None, "attn", None, "q/k/v-shaped"),
    ((), [[[8, 32, 1, 128], [8, 8, 1024, 128], [8, 8, 1024, 128]]], None, "attn", None,
     "q/k/v-shaped"),
    ((), None, "library_attn", "attn", None, "library_attn"),
    # a linear-attention layer's ops name attention too: the linear words are asked first
    (("vllm::linear_attention", "MiniMaxText01DecoderLayer/MiniMaxText01LinearAttention"),
     QKV_SHAPES, None, "unknown", "linear_attention", "linear-attention layer"),
    (("vllm::gdn_attention",), None, None, "unknown", "linear_attention",
     "linear-attention layer"),
    (("vllm::mamba_mixer2",), None, None, "unknown", "ssm", "SSM layer"),
])
def test_a_bare_fwd_kernel_is_attention_only_with_corroboration(
        ops, shapes, classification, op_class, sub, why) -> None:
    c = classify("_fwd_kernel", classification, shapes, has_experts=False, ops=ops)
    assert (c.op_class, c.op_subclass) == (op_class, sub), c.reason
    assert why in c.reason
    if op_class == "unknown":
        assert c.unmodelled is not None and "stage C" in c.unmodelled


def test_mismatched_shapes_do_not_corroborate_attention() -> None:
    """A head dim that differs between q and k, or k and v shaped apart, is not q/k/v."""
    for shapes in ([[[4096, 32, 128], [4096, 8, 64], [4096, 8, 64]]],
                   [[[4096, 32, 128], [4096, 8, 128], [2048, 8, 128]]],
                   [[[4096, 30, 128], [4096, 8, 128], [4096, 8, 128]]],  # 30 % 8 != 0
                   [[[8, 32, 1, 128], [4, 8, 1024, 128], [4, 8, 1024, 128]]],  # two batches
                   [[[4096, 4096], [4096, 1024], [4096, 1024]]]):
        assert classify("_fwd_kernel", None, shapes).op_class == "unknown"


@pytest.mark.parametrize(("name", "op_class", "sub"), [
    # the split-KV decode attention of lightllm / SGLang / vLLM triton_decode_attention keeps
    # its class: these stage names say what the kernel is
    ("_fwd_kernel_stage1", "attn", None),
    ("_fwd_kernel_stage2", "attn", None),
    ("_fwd_grouped_kernel_stage1", "attn", None),
    # SGLang's EP MoE scatter is a scatter, not attention
    ("_fwd_kernel_ep_scatter_1", "elementwise", "elementwise"),
    # fla's l2norm is a norm
    ("l2norm_fwd_kernel", "elementwise", "norm"),
    # xformers / PyTorch mem-efficient attention and FA2 split-KV: their cutlass is not a GEMM
    (FMHA_CUTLASS, "attn", None),
    (FLASH_SPLITKV, "attn", None),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
     "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>>>>>(Params)", "attn", None),
])
def test_specific_fwd_names_and_cutlass_attention(name: str, op_class: str,
                                                  sub: str | None) -> None:
    for experts in (False, True):
        c = classify(name, "library_gemm", [[[64, 2048], [128, 1536, 2048]]],
                     has_experts=experts)
        assert (c.op_class, c.op_subclass) == (op_class, sub), c.reason


LORA_SHRINK_SHAPES = [[[32, 4096], [4, 1, 16, 4096], [3, 32, 16], [32], [32], [5], [6], [5]]]
LORA_A_3D = [[[32, 4096], [4, 16, 4096]]]


@pytest.mark.parametrize(("name", "sub"), [
    ("_lora_shrink_kernel", "shrink"),      # vLLM punica/triton (v1)
    ("_lora_expand_kernel", "expand"),
    ("_v1_shrink_kernel", "shrink"),        # vLLM 0.7's name for it
    ("_sgmv_shrink_kernel", "shrink"),      # vLLM 0.6 / punica
    ("_sgmv_expand_slice_kernel", "expand"),
    ("_bgmv_shrink_kernel", "shrink"),
    ("_bgmv_expand_kernel", "expand"),
    ("void sgmv_shrink<nv_bfloat16, 16>(nv_bfloat16*, nv_bfloat16*)", "shrink"),
    ("_sgemm_lora_a_kernel", "shrink"),     # SGLang triton backend
    ("_sgemm_lora_b_kernel", "expand"),
    ("_qkv_lora_b_kernel", "expand"),
    ("_gate_up_lora_b_kernel", "expand"),
    ("_fused_moe_lora_kernel", "moe"),      # the adapters of a MoE layer: its own no-model
])
def test_lora_is_never_moe(name: str, sub: str) -> None:
    """A stacked adapter operand [slots, rank, hidden] is 3-D like an expert weight, and a
    SGLang name says 'sgemm': neither makes it MoE or a GEMM, in a dense model or one with
    experts, and its reason never asks for MoE fields."""
    for experts in (False, True, None):
        for shapes in (LORA_SHRINK_SHAPES, LORA_A_3D, None):
            c = classify(name, "triton", shapes, has_experts=experts)
            assert (c.op_class, c.op_subclass) == ("lora", sub), c.reason
            assert "expert" not in c.reason or sub == "moe"


def test_a_3d_operand_is_an_expert_weight_only_with_experts_and_no_lora_evidence() -> None:
    """A GEMM with a [4, 16, 4096] operand: MoE in a model with experts, unless the launching
    op is LoRA's; in a dense model a nameless kernel with that operand is not MoE either."""
    gemm = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT"
    assert classify(gemm, None, LORA_A_3D, has_experts=True).op_class == "moe"
    lora = classify(gemm, None, LORA_A_3D, has_experts=True, ops=("vllm::lora_shrink",))
    assert (lora.op_class, lora.op_subclass) == ("lora", "shrink")
    assert "adapters' stacked weights" in lora.reason
    assert classify(gemm, None, LORA_A_3D, has_experts=False).op_class == "gemm"
    dense = classify("mystery_kernel", None, LORA_A_3D, has_experts=False)
    assert dense.op_class == "unknown" and "not an expert weight" in dense.reason
    # no config.json: still a hint, as before
    assert classify("mystery_kernel", None, LORA_A_3D).op_class == "moe"
    by_op = classify("mystery_kernel", None, LORA_A_3D, has_experts=True,
                     ops=("vllm::lora_expand",))
    assert (by_op.op_class, by_op.op_subclass) == ("lora", "expand")


@pytest.mark.parametrize("name", [
    # TensorRT-LLM / trtllm-gen MoE on B200 as nsys and Kineto print them: the routing (top-k,
    # permutation indices) and the finalize (un-permute and weighted sum of the expert outputs)
    "void moe::dev::routing::routingIndicesClusterKernel<moe::dev::routing::routingRenormalize"
    "::KernelParams<float, __nv_bfloat16, 128, 4, true> >(moe::dev::routing::"
    "routingRenormalize::KernelParams<float, __nv_bfloat16, 128, 4, true>)",
    "void moe::dev::routing::routingMainKernel<moe::dev::routing::KernelParams<float, "
    "__nv_bfloat16, 256, 8, true> >(moe::dev::routing::KernelParams<float, __nv_bfloat16, 256,"
    " 8, true>)",
    "void moe::dev::finalize::finalizeKernel<moe::dev::finalize::KernelParams<__nv_bfloat16, "
    "__nv_bfloat16, float, false> >(moe::dev::finalize::KernelParams<__nv_bfloat16, "
    "__nv_bfloat16, float, false>)",
    "_moe_finalize_kernel",
])
def test_moe_routing_and_finalize_kernels_are_not_the_expert_gemm(name: str) -> None:
    """Their names carry "moe", which made them MoE: a head among them was modelled as a whole
    MoE layer (experts_hit · 3·H·I weights) although it streams no expert weight. They are the
    layer's routing helpers, sized by their own operands, in a model with experts or not."""
    for experts in (True, False, None):
        got = classify(name, has_experts=experts)
        assert (got.op_class, got.op_subclass) == ("elementwise", "routing"), (experts, got)


def test_the_trtllm_expert_gemm_is_still_the_expert_gemm() -> None:
    """The same run's ``bmm_*`` stage kernels stay GEMMs, and MoE in a model with experts."""
    name = ("bmm_E2m1_E2m1E2m1_Fp32_t128x8x512_s5_et128x8_m256x8x32_cga1x1x1_16dp256b_TN_"
            "transOut_schedS_sm100f")
    assert classify(name, shapes=[[[888, 2880], [128, 2880, 1440]]],
                    has_experts=True).op_class == "moe"

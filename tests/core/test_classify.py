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

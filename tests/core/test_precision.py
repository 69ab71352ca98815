"""The one compute-precision rule (core.precision) and the quantization record it reads.

Each case is a kernel name as vLLM, triton_kernels, trtllm-gen, CUTLASS or aiter print it, a
recorded dtype set as the upstream Top-N writes it (sorted), a public ``quantization_config``
and a device from the bundled peak table. What a user would notice: the dtype whose roof the
kernel is judged on, and the sentence that says why.
"""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.peaks import load_peak_table, resolve_peaks
from roofline_tui.core.precision import Device, decide, name_statement

_SECTIONS, _ = load_peak_table()


def device(gfx: str) -> Device:
    """The bundled table's default product for ``gfx``, as the analysis hands it to a model."""
    peaks = resolve_peaks(_SECTIONS, gfx=gfx)
    return Device(peaks.product or gfx, frozenset(peaks.flops))


MI300X, MI355X, B200, H100, A100 = (device(g) for g in
                                    ("gfx942", "gfx950", "sm_100", "sm_90", "sm_80"))

_QWEN3 = {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
          "intermediate_size": 12288, "torch_dtype": "bfloat16"}


def quant_of(q: dict[str, Any]) -> Any:
    return normalize_config({**_QWEN3, "quantization_config": q}).quantization


def test_the_devices_have_the_matrix_cores_their_data_sheets_list() -> None:
    """CDNA 3 (MI300X) has fp8 and no fp4/fp6 matrix cores; CDNA 4 (MI355X) and Blackwell
    (B200) have both; Ampere (A100) has no fp8."""
    assert MI300X.runs("fp8") and not MI300X.runs("fp4") and not MI300X.runs("fp6")
    assert MI355X.runs("fp4") and MI355X.runs("fp6") and B200.runs("fp4")
    assert not A100.runs("fp8") and A100.runs("int8") and A100.runs("uint8")


# --------------------------------------------------------------------------- kernel names


@pytest.mark.parametrize(("name", "a", "b", "out"), [
    # triton_kernels matmul_ogs (vLLM gpt-oss): output × activation × weight, u8 printed mxfp4
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1", "bf16", "fp4", "bf16"),
    ("_matmul_ogs_NNT_bf16xfp8e4nvxmxfp4_16x256x128x1_swiglu", "fp8", "fp4", "bf16"),
    # trtllm-gen (FlashInfer, B200): bmm_<out>_<weight><activation>_<accumulator>
    ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x256u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_splitK2"
     "_TN_transOut_schedS_bN_swiGlu_dynBatch_sm100a", "fp8", "fp4", "fp8"),
    ("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x8x256u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN"
     "_transOut_schedS_bN_dynBatch_sm100a", "fp8", "fp4", "bf16"),
    ("bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x512u2_s3_et128x8_m128x8x64_cga1x1x1_16dp256b_TN"
     "_transOut_schedS_sm100a", "fp4", "fp4", "bf16"),
    ("GemmGatedActKernel_Bfloat16_E4m3_Fp32_tile128x8x256_epilogueTile128x8_mma128x8x32"
     "_cluster1x1x1_transposeMmaOutput_sm100a", "fp8", "fp8", "bf16"),
    # width pairs with their element type (vLLM's triton block-fp8 GEMM, aiter's a16wfp4)
    ("_w8a8_block_fp8_matmul", "fp8", "fp8", None),
    ("_gemm_a16wfp4_kernel", "bf16", "fp4", None),
])
def test_names_that_bind_their_operand_types(name: str, a: str, b: str, out: str | None
                                             ) -> None:
    said = name_statement([name], None, "bf16")
    assert said is not None and (said.a, said.b, said.out) == (a, b, out), said


@pytest.mark.parametrize("name", [
    "fused_moe_kernel", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256_MI16x16x1",
    "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT",
    "void cutlass::device_kernel<vllm::cutlass_3x_gemm_fp8<cutlass::float_e4m3_t, "
    "cutlass::bfloat16_t, vllm::c3x::ScaledEpilogue>::GemmKernel>",
])
def test_names_that_bind_no_operand(name: str) -> None:
    """A plain name binds nothing; the CUTLASS fp8 name names an element type without a role
    (read by the element-type rule, see below)."""
    assert name_statement([name], None, "bf16") is None


def test_element_types_without_roles_are_both_operands_and_a_wide_type_the_output() -> None:
    """``cutlass_3x_gemm_fp8<float_e4m3_t, bfloat16_t, …>``: one quantized type (e4m3) and one
    wide type (bfloat16_t): both operands fp8, bf16 the output. An NVFP4 CUTLASS kernel's
    ``float_ue4m3_t`` is its block-scale type, not an operand: fp4 × fp4."""
    fp8 = decide(names=["void cutlass::device_kernel<vllm::cutlass_3x_gemm_fp8<"
                        "cutlass::float_e4m3_t, cutlass::bfloat16_t>::GemmKernel>"],
                 model_a="bf16", model_b="bf16", device=H100)
    assert (fp8.compute, fp8.a, fp8.b, fp8.out) == ("fp8", "fp8", "fp8", "bf16")
    nv = decide(names=["cute::tuple<cutlass::nv_float4_t<cutlass::float_e2m1_t>, "
                       "cutlass::float_ue4m3_t>, cutlass::bfloat16_t"],
                model_a="bf16", model_b="bf16", device=B200)
    assert (nv.compute, nv.a, nv.b, nv.out) == ("fp4", "fp4", "fp4", "bf16")


# --------------------------------------------------------------------------- the mixed pair


def test_a_mixed_pair_runs_at_the_wider_operand() -> None:
    """bf16 × mxfp4 (weight-only): the weight is dequantised, bf16 MMAs; mxfp8 × mxfp4
    (trtllm-gen on B200): fp8 MMAs, never the fp4 roof (9,000 TFLOP/s) the weight alone would
    give."""
    w4a16 = decide(names=["_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1"], device=MI300X,
                   model_a="bf16")
    assert w4a16.compute == "bf16"
    assert "the fp4 weight is dequantised into bf16" in w4a16.evidence
    w4a8 = decide(names=["bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x8x256u2"], device=B200,
                  model_a="bf16")
    assert w4a8.compute == "fp8" and "b200 has fp8 matrix cores" in w4a8.evidence


def test_a_dtype_the_device_cannot_run_is_dequantised_never_a_faster_roof() -> None:
    """fp4 × fp4 on MI300X (no fp4 matrix cores) runs dequantised in the model's bf16, not on
    the fp8 roof (2,614.9 TFLOP/s data sheet, 3.9× the measured bf16 668.4); fp8 × fp4 on
    MI300X is fp8 (it has fp8 cores); fp8 × fp8 on A100 (no fp8) is bf16; with no activation
    dtype to dequantise into, nothing settles it."""
    w4a4 = decide(roles=("fp4", "fp4"), model_a="bf16", device=MI300X)
    assert w4a4.compute == "bf16" and "mi300x has no fp4 matrix cores" in w4a4.evidence
    assert decide(roles=("fp8", "fp4"), model_a="bf16", device=MI300X).compute == "fp8"
    assert decide(roles=("fp4", "fp4"), model_a="bf16", device=MI355X).compute == "fp4"
    assert decide(roles=("fp8", "fp8"), model_a="bf16", device=A100).compute == "bf16"
    unknown = decide(roles=("fp4", "fp4"), device=MI300X)
    assert unknown.compute is None and "nothing says which dtype" in unknown.evidence


# --------------------------------------------------------------------------- the recorded set


def test_a_sorted_dtype_set_is_read_as_a_set_never_by_position() -> None:
    """``{bf16, fp8}`` alone fits fp8 operands with a bf16 output (w8a8) and bf16 activations ×
    fp8 weights (w8a16) alike: not settled (by position it was bf16 × fp8 → bf16). The model's
    fp8 dynamic quantization config settles it (fp8 × fp8, bf16 left over as the output); an
    unquantized bf16 config does not explain the fp8 in the set, so it stays unsettled."""
    alone = decide(names=["nvjet_tst_128x256"], recorded=["bf16", "fp8"], model_a="bf16",
                   model_b="bf16", device=H100)
    assert alone.compute is None
    assert "{bf16, fp8} are a set" in alone.evidence and "quantization_config" in alone.evidence
    fp8_cfg = quant_of({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                        "weight_block_size": [128, 128]})
    w8a8 = decide(names=["nvjet_tst_128x256"], recorded=["bf16", "fp8"], quant=fp8_cfg,
                  model_a="bf16", model_b="fp8", device=H100)
    assert (w8a8.compute, w8a8.a, w8a8.b, w8a8.rest) == ("fp8", "fp8", "fp8", ("bf16",))
    assert "activation_scheme dynamic" in w8a8.evidence


def test_fp32_beside_a_narrower_dtype_is_never_a_matrix_operand() -> None:
    """``{fp32, fp8}`` (a block-fp8 GEMM with fp32 block scales): fp8 × fp8, the fp32 left
    over; ``{bf16}``: bf16 × bf16."""
    block = decide(names=["some_gemm"], recorded=["fp32", "fp8"], model_a="bf16",
                   model_b="bf16")
    assert (block.compute, block.rest) == ("fp8", ("fp32",))
    assert decide(names=["g"], recorded=["bf16"], model_a="bf16", model_b="bf16").compute == "bf16"


# --------------------------------------------------------------------------- the quantization record


def test_the_quantization_record_says_what_the_activations_are() -> None:
    """HF fp8 with ``activation_scheme`` dynamic (Qwen3-FP8): w8a8, fp8 activations, 128×128
    blocks; mxfp4 (gpt-oss), AWQ and a compressed-tensors W4A16 group: weights only, the
    activations stay bf16; compressed-tensors FP8 dynamic: fp8 input activations; SGLang's
    ``w8a8_int8``: int8; fp8 without an activation scheme: not said (None)."""
    fp8 = quant_of({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                    "weight_block_size": [128, 128]})
    assert (fp8.weight_dtype, fp8.activation_dtype, fp8.weight_only, fp8.block) == (
        "fp8", "fp8", False, (128, 128))
    for q in ({"quant_method": "mxfp4"}, {"quant_method": "awq", "bits": 4, "group_size": 128},
              {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
                  "weights": {"num_bits": 4, "type": "int"}, "input_activations": None}}}):
        rec = quant_of(q)
        assert rec.weight_only and rec.activation_dtype == "bf16", q
    ct = quant_of({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float"},
        "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}})
    assert (ct.weight_dtype, ct.activation_dtype) == ("fp8", "fp8")
    assert quant_of({"quant_method": "w8a8_int8"}).activation_dtype == "int8"
    assert quant_of({"quant_method": "fp8"}).activation_dtype is None
    assert normalize_config(_QWEN3).quantization is None


def test_quantized_weights_with_silent_activations_settle_nothing() -> None:
    """fp8 weights and a config that does not say how activations enter the matmul (no
    ``activation_scheme``): no compute dtype, and the reason names what would settle it."""
    silent = decide(names=["fused_moe_kernel"], quant=quant_of({"quant_method": "fp8"}),
                    model_a="bf16", model_b="fp8", weights_recorded=False, device=MI300X)
    assert silent.compute is None
    assert "not what dtype activations enter the matmul in" in silent.evidence

"""The GEMM, MoE and attention models judge a kernel at the precision it computes in (issue 31
item 1): the operand pair from the recorded roles, the kernel name, the recorded dtypes read as
a set, the quantization config and the model's dtypes, at the wider operand of a mixed pair,
and only in a dtype the device has matrix cores for. The arithmetic is in each docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, attn, gemm, moe
from roofline_tui.core.peaks import load_peak_table, peak_flops_for, resolve_peaks
from roofline_tui.core.precision import Device
from tests.core.fidelity_helpers import kernel, make_round
from tests.core.helpers import entry, run

_SECTIONS, _ = load_peak_table()
PEAKS = {g: resolve_peaks(_SECTIONS, gfx=g) for g in ("gfx942", "sm_90", "sm_100")}
MI300X, H100, B200 = (Device(PEAKS[g].product or g, frozenset(PEAKS[g].flops))
                      for g in ("gfx942", "sm_90", "sm_100"))

GPT_OSS_20B: dict[str, Any] = {  # public config.json values of openai/gpt-oss-20b
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32,
    "num_experts_per_tok": 4, "experts_per_token": 4, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
        "lm_head"]},
}
QWEN3_8B: dict[str, Any] = {  # public config.json values of Qwen/Qwen3-8B
    "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096,
    "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 12288, "torch_dtype": "bfloat16",
}
FP8_DYNAMIC = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
               "weight_block_size": [128, 128]}  # Qwen3-8B-FP8 / Qwen3-30B-A3B-FP8
QWEN3_8B_FP8 = {**QWEN3_8B, "quantization_config": FP8_DYNAMIC}
QWEN3_30B_A3B_FP8: dict[str, Any] = {
    "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "torch_dtype": "bfloat16",
    "quantization_config": FP8_DYNAMIC,
}


def ctx(name: str, *, device: Device, config: dict[str, Any] | None = None,
        shapes: Any = None, dtypes: Any = None, tokens: int = 512, regime: str = "prefill",
        kv_dtype: str = "bf16") -> OpContext:
    model = normalize_config(config) if config is not None else None
    return OpContext(
        name=name, op_subclass=None, regime=regime, shapes=shapes or [], dtypes=dtypes or [],
        model=model, workload=Workload(isl=1024, osl=1024, conc=64), tokens=tokens,
        tokens_source="test", weight_dtype=model.weight_dtype if model else "bf16",
        activation_dtype="bf16", kv_dtype=kv_dtype, dtype_bytes=dict(DTYPE_BYTES),
        device=device)


def only(est: Any) -> tuple[float, float]:
    assert len(est.candidates) == 1
    return est.candidates[0].bytes, est.candidates[0].flops


def no_w8a8_claim(assumptions: Sequence[str]) -> bool:
    return not any("w8a8" in a for a in assumptions)


# --------------------------------------------------------------------------- (a) gpt-oss on MI300X

GATE_UP = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu"
DOWN = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1"


def test_gpt_oss_prefill_moe_on_mi300x_is_judged_on_the_bf16_roof(tmp_path: Path) -> None:
    """A vLLM gpt-oss-20b PIECEWISE mixed step on MI300X, prefill-heavy: 8192 prefill tokens
    in the step, both triton_kernels matmul_ogs MoE kernels 24 launches per step (one per MoE
    layer), bf16 activations × mxfp4 expert weights (``bf16xbf16xmxfp4``). MI300X has no fp4
    matrix cores; the weights are dequantised and the MMAs run in bf16.

    Gate/up (stage 1, fused swiglu), per launch: pairs = 8192·4 = 32768, experts_hit =
    32·(1 − (31/32)^32768) = 32.0; FLOPs = 2·32768·2·2880·2880 = 1.0871636e12; bytes = 32 ·
    2·2880·2880 · (0.5 + 1/32) B = 282.01 MB of weights and e8m0 scales + 2 B·(8192·2880 +
    32768·2880) = 235.93 MB of activations = 517.94 MB. AI = 2099 FLOP/B, above the bf16
    ridge (668.4e12 / 5.3e12 = 126): the compute roof. 3.0 ms per launch → 362.39 TFLOP/s =
    0.5422 of the measured 668.4 TFLOP/s bf16 ceiling (on the fp8 data-sheet roof, 2614.9,
    it read 0.1386). Down (stage 2, its sibling): FLOPs = 2·32768·2880·2880 = 5.435818e11 in
    1.6 ms → 339.74 TFLOP/s = 0.5083 (0.1299 on the fp8 roof).
    """
    rd = make_round(tmp_path, [
        kernel(GATE_UP, pct=41.0, t_ms=3.0, regime="prefill", lps=24, m=8192),
        kernel(DOWN, pct=37.0, t_ms=1.6, regime="prefill", lps=24, m=8192)],
        gfx="gfx942", product="mi300x", config=GPT_OSS_20B)
    art = run(rd)
    for short, flops, t_s, pct in ((GATE_UP, 1.0871635968e12, 3.0e-3, 0.5422),
                                   (DOWN, 5.435817984e11, 1.6e-3, 0.5083)):
        e = entry(art, short)
        assert e.op_class == "moe" and e.compute_dtype == "bf16"
        assert e.peak_flops_dtype == "bf16" and e.roof_axis == "compute"
        assert e.flops_est == pytest.approx(flops)
        assert e.roofline_pct == pytest.approx(flops / t_s / 668.4e12, abs=1e-4)
        assert e.roofline_pct == pytest.approx(pct, abs=1e-4)
        assert e.target_eff is not None and e.roofline_pct is not None
        assert e.attainable_speedup == pytest.approx(e.target_eff / e.roofline_pct, rel=1e-3)
        assert no_w8a8_claim(e.assumptions)
        assert any("the fp4 weight is dequantised into bf16" in a and "mi300x" in a
                   for a in e.assumptions)
    assert entry(art, GATE_UP).bytes_est == pytest.approx(517_939_200, rel=1e-9)


# --------------------------------------------------------------------------- (b) sorted dtype sets

CUTLASS_FP8 = ("void cutlass::device_kernel<vllm::cutlass_3x_gemm_fp8<cutlass::float_e4m3_t, "
               "cutlass::bfloat16_t, vllm::c3x::ScaledEpilogue, cute::tuple<cute::C<64>, "
               "cute::C<128>, cute::C<128>>, cutlass::gemm::"
               "KernelTmaWarpSpecializedPingpongFP8FastAccum>::GemmKernel>")
NVFP4 = ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
         "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
         "MainloopSm100TmaUmmaWarpSpecializedBlockScaled<3, 4, 2>, cute::tuple<cutlass::"
         "nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t>>, cutlass::bfloat16_t>>")


def test_fp8_cutlass_gemm_with_a_bf16_in_its_dtype_set_is_an_fp8_gemm() -> None:
    """vLLM's ``cutlass_3x_gemm_fp8<float_e4m3_t, bfloat16_t, …>`` on H100, shapes
    ``[[512, 4096], [4096, 14336]]``, dtypes ``["bf16", "fp8"]`` (a sorted set). The name
    says the operands are e4m3 and bf16 its output: M=512 N=14336 K=4096, A 512·4096·1 =
    2,097,152 + B 4096·14336·1 = 58,720,256 + C 512·14336·2 = 14,680,064 → 75,497,472 B;
    FLOPs 2·512·14336·4096 = 60,129,542,144; fp8 compute. Read by position it was A bf16
    (4,194,304 B), compute bf16."""
    est = gemm.estimate(ctx(CUTLASS_FP8, device=H100, shapes=[[[512, 4096], [4096, 14336]]],
                            dtypes=["bf16", "fp8"]))
    assert only(est) == (2_097_152 + 58_720_256 + 14_680_064, 2 * 512 * 14336 * 4096)
    assert est.compute_dtype == "fp8"
    assert any("C bf16 2 B (the output type the kernel name states)" in a
               for a in est.assumptions)


def test_block_fp8_gemm_counts_fp32_scales_at_their_own_size() -> None:
    """vLLM's triton ``_w8a8_block_fp8_matmul`` on MI300X, shapes ``[[512, 4096], [12288,
    4096], [512, 32], [96, 32]]`` (A, B, As per token and 128-group, Bs per 128×128 block),
    dtypes ``["fp32", "fp8"]``: fp8 × fp8 (w8a8 in the name), the fp32 tensors are the block
    scales. A 512·4096·1 = 2,097,152 + B 12288·4096·1 = 50,331,648 + As 512·32·4 = 65,536 +
    Bs 96·32·4 = 12,288 + C 512·12288 at the model's bf16 = 12,582,912 → 65,089,536 B; FLOPs
    2·512·12288·4096 = 51,539,607,552 on the fp8 roof. By position: A fp32 at 4 B, compute
    fp32 (83,886,080 B on the 163.4 TFLOP/s fp32 roof)."""
    est = gemm.estimate(ctx("_w8a8_block_fp8_matmul", device=MI300X,
                            shapes=[[[512, 4096], [12288, 4096], [512, 32], [96, 32]]],
                            dtypes=["fp32", "fp8"]))
    assert only(est) == (65_089_536, 51_539_607_552)
    assert est.compute_dtype == "fp8"
    assert any("[512, 32] fp32, [96, 32] fp32 = 77824 B" in a for a in est.assumptions)


def test_nvfp4_gemm_counts_the_logical_k_and_its_scales() -> None:
    """An NVFP4 CUTLASS GEMM on B200 (``nv_float4_t<float_e2m1_t>``, block scales
    ``float_ue4m3_t``, bf16 out): shapes ``[[256, 4096], [8192, 4096], [256, 512], [8192, 512],
    []]`` (packed A and B, their fp8 scales, the fp32 alpha), dtypes ``["fp32", "fp8",
    "uint8"]``. Two fp4 values per byte: K = 2·4096 = 8192. A 256·8192·0.5 = 1,048,576 + B
    8192·8192·0.5 = 33,554,432 + scales 256·512·1 + 8192·512·1 + 4 = 4,325,380 + C
    256·8192·2 = 4,194,304 → 43,122,692 B; FLOPs 2·256·8192·8192 = 34,359,738,368 on the
    fp4 roof (9,000 TFLOP/s). Read by position K was 4096 and the FLOPs half."""
    est = gemm.estimate(ctx(NVFP4, device=B200, dtypes=["fp32", "fp8", "uint8"],
                            shapes=[[[256, 4096], [8192, 4096], [256, 512], [8192, 512], []]]))
    assert only(est) == (43_122_692, 34_359_738_368)
    assert est.compute_dtype == "fp4"
    assert any("K = 2 × the recorded 4096" in a for a in est.assumptions)
    assert peak_flops_for(PEAKS["sm_100"], est.compute_dtype)[0] == 9.0e15


# --------------------------------------------------------------------------- (c) trtllm-gen on B200

BMM_GATE_UP = ("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x8x256u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b"
               "_splitK2_TN_transOut_schedS_bN_swiGlu_dynBatch_sm100a")


def test_trtllm_gen_mxfp8_by_mxfp4_runs_on_the_fp8_roof() -> None:
    """FlashInfer's trtllm-gen MoE on B200 for gpt-oss (``bmm_MxE4m3_MxE2m1MxE4m3_Fp32``:
    output mxfp8, mxfp4 weights × mxfp8 activations): a mixed pair runs at the wider fp8, so
    the roof is the measured fp8 ceiling 3,432.5 TFLOP/s, not the fp4 data sheet's 9,000, and
    nothing claims w8a8. The weights still stream at fp4 + one e8m0 per 32 = 0.53125 B."""
    est = moe.estimate(ctx(BMM_GATE_UP, device=B200, config=GPT_OSS_20B, tokens=64,
                           regime="decode"))
    assert est.compute_dtype == "fp8"
    assert peak_flops_for(PEAKS["sm_100"], est.compute_dtype)[0] == 3.4325e15
    assert no_w8a8_claim(est.assumptions)
    assert any("at fp4 0.5 B + block scale 0.03125 B" in a for a in est.assumptions)
    assert any("the fp8 × fp4 MMA runs at the fp8 rate; b200 has fp8 matrix cores" in a
               for a in est.assumptions)


# --------------------------------------------------------------------------- (d) fp8 w8a8 models


def test_an_fp8_w8a8_model_keeps_fp8_compute() -> None:
    """Qwen3-8B-FP8 (``quant_method fp8, activation_scheme dynamic``) on H100: a hipBLASLt-
    style GEMM whose name states nothing, dtypes ``["bf16", "fp8"]``, shapes ``[[256, 4096],
    [12288, 4096]]``: the config settles the set as fp8 × fp8 with the bf16 output. A
    256·4096·1 = 1,048,576 + B 12288·4096·1 = 50,331,648 + C 256·12288·2 = 6,291,456 →
    57,671,680 B, fp8 compute. Qwen3-30B-A3B-FP8's ``fused_moe_kernel`` (no dtypes): fp8 ×
    fp8 from the same config."""
    shapes, dtypes = [[[256, 4096], [12288, 4096]]], ["bf16", "fp8"]
    dense = gemm.estimate(ctx("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", device=H100,
                              config=QWEN3_8B_FP8, shapes=shapes, dtypes=dtypes))
    assert dense.compute_dtype == "fp8" and only(dense)[0] == 57_671_680
    assert any("activation_scheme dynamic" in a for a in dense.assumptions)
    experts = moe.estimate(ctx("fused_moe_kernel", device=H100, config=QWEN3_30B_A3B_FP8,
                               tokens=64, regime="decode"))
    assert experts.compute_dtype == "fp8"
    assert any("compute dtype fp8: A fp8, B fp8 from quantization_config" in a
               for a in experts.assumptions)


def test_the_same_set_without_a_quantization_config_gets_no_verdict() -> None:
    """The same ``{bf16, fp8}`` GEMM with the plain bf16 Qwen3-8B config: fp8 operands with a
    bf16 output and bf16 × fp8 weights both fit, and nothing says which: no estimate, and the
    reason says what would settle it."""
    with pytest.raises(OpModelUnavailable, match=r"\{bf16, fp8\} are a set.*quantization_config"):
        gemm.estimate(ctx("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", device=H100,
                          config=QWEN3_8B, shapes=[[[256, 4096], [12288, 4096]]],
                          dtypes=["bf16", "fp8"]))


def test_a_weight_only_config_computes_in_the_activation_dtype() -> None:
    """gpt-oss's mxfp4 config quantizes weights only: a MoE kernel whose name says nothing runs
    bf16 × fp4 → bf16 on MI300X, with the config named as the evidence."""
    est = moe.estimate(ctx("fused_moe_kernel", device=MI300X, config=GPT_OSS_20B, tokens=64,
                           regime="decode"))
    assert est.compute_dtype == "bf16" and no_w8a8_claim(est.assumptions)
    assert any("mxfp4 quantizes weights only" in a for a in est.assumptions)


# --------------------------------------------------------------------------- attention


def test_attention_with_an_fp8_kv_cache_computes_in_the_query_dtype() -> None:
    """Decode attention from the config (Qwen3-8B, fp8 KV cache, bf16 queries): the KV is
    dequantised into the query's bf16 for QKᵀ and PV, the rule says so in the assumptions."""
    est = attn.estimate(ctx("paged_attention_decode", device=H100, config=QWEN3_8B, tokens=64,
                            regime="decode", kv_dtype="fp8"))
    assert est.compute_dtype == "bf16"
    assert any("A bf16, B fp8 from the query and the K/V" in a
               and "the fp8 K/V is dequantised into bf16" in a for a in est.assumptions)


def test_a_packed_fp4_weight_read_positionally_counts_the_logical_k() -> None:
    """aiter's ``gemm_a16wfp4`` in an upstream Top-N: shapes ``[[64, 4096], [1024, 2048],
    [1024, 128]]``, dtypes ``["bf16", "uint8"]``. The name's ``a16wfp4`` says bf16 activations
    × fp4 weights; B's recorded K (2048) is half of A's (4096): packed, K = 4096, N = 1024.
    A 64·4096·2 = 524,288 + B 4096·1024·0.5 = 2,097,152 + the [1024, 128] e8m0 scales 131,072
    + C 64·1024·2 = 131,072 → 2,883,584 B (the same as the by-role reading); FLOPs
    2·64·1024·4096 = 536,870,912, bf16 compute (the weight is dequantised). Read by position
    no operand pair shared K."""
    est = gemm.estimate(ctx("_gemm_a16wfp4_kernel", device=MI300X,
                            shapes=[[[64, 4096], [1024, 2048], [1024, 128]]],
                            dtypes=["bf16", "uint8"]))
    assert only(est) == (2_883_584, 2 * 64 * 1024 * 4096)
    assert est.compute_dtype == "bf16"
    assert any("B is packed fp4" in a for a in est.assumptions)

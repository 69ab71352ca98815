"""The MoE stage from the Top-N as a whole (spec §3 "per-launch, not aggregate", §4 MoE).

A kernel whose name says nothing about its stage takes it from its siblings: the other MoE
kernel with the same launches per step is the layer's other stage. One name launched twice per
MoE layer is one logical unit of both stages. Sub-byte MX weights carry their block scales.
The arithmetic is in each docstring.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import TopN, Workload, parse_topn
from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.opmodels import OpContext, moe
from roofline_tui.core.opmodels.base import OpEstimate
from roofline_tui.core.opmodels.moe import EXPERTS_HIT, block_scale_bytes, experts_hit
from tests.core.fidelity_helpers import QWEN3_30B_A3B, kernel, make_round
from tests.core.helpers import entry, run
from tests.paths import REAL_FORMATS, need

GPT_OSS_20B: dict[str, Any] = {  # the parts of gpt-oss-20b's config.json the MoE model reads
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32,
    "num_experts_per_tok": 4, "experts_per_token": 4, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4",
                            "modules_to_not_convert": ["model.layers.*.self_attn"]},
}
DOWN = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
GATE_UP = DOWN + "_swiglu"

# gpt-oss-20b, decode M = 32: pairs = 32·4 = 128, experts_hit = 32·(1 − (31/32)^128) = 31.450
HIT = 32 * (1 - (31 / 32) ** 128)
W_MXFP4 = 0.5 + 1 / 32   # 4-bit element + one e8m0 scale byte per 32 elements
STAGE2_BYTES = HIT * 2880 * 2880 * W_MXFP4 + (128 * 2880 + 32 * 2880) * 2    # 139.50 MB
STAGE1_BYTES = HIT * 2 * 2880 * 2880 * W_MXFP4 + (32 * 2880 + 128 * 2880) * 2  # 278.09 MB


def topn(*kernels: dict[str, Any]) -> TopN:
    parsed, problems = parse_topn({"top_kernels": list(kernels)})
    assert not problems, problems
    return parsed


def ctx_for(name: str, doc: TopN | None, *, config: dict[str, Any], tokens: int,
            weight_dtype: str = "bf16", shapes: Any = None) -> OpContext:
    row = next((e for e in doc.entries if e.name == name), None) if doc else None
    return OpContext(
        name=name, op_subclass=None, regime="decode",
        shapes=shapes if shapes is not None else (row.shapes if row else []), dtypes=[],
        model=normalize_config(config), workload=Workload(conc=tokens), tokens=tokens,
        tokens_source="test", weight_dtype=weight_dtype, activation_dtype="bf16",
        kv_dtype="bf16", dtype_bytes=dict(DTYPE_BYTES), topn=doc)


def part(est: OpEstimate) -> str:
    return next(a for a in est.assumptions if a.startswith("MoE part:"))


def op_instance(op: str, calls: int) -> dict[str, Any]:
    return {"x_roofline": {"instances": [{"op": op, "calls": calls, "total_us": 100.0 * calls,
                                          "by_phase": {"decode": {"calls": calls,
                                                                  "total_us": 100.0 * calls}}}]}}


# --------------------------------------------------------------------------- the pair rule


def test_the_unnamed_sibling_of_a_stage_one_kernel_is_stage_two() -> None:
    """gpt-oss-20b (mxfp4 experts) at M = 32, both kernels 24 launches/step over 24 MoE layers.

    Stage 2 alone, per launch: 31.450 · 2880·2880 · (0.5 + 1/32) B = 138.58 MB weights and
    scales, + (128·2880 + 32·2880) · 2 B = 0.92 MB activations → 139.50 MB
    (the whole-layer model it got before: 31.450 · 3·2880·2880 · 0.5 B = 391.29 MB + I/O).
    """
    doc = topn(kernel(DOWN, pct=35.1, t_ms=0.156745, lps=24, m=32, **op_instance(
                   "vllm::moe_forward", 24)),
               kernel(GATE_UP, pct=30.5, t_ms=0.136363, lps=24, m=32, **op_instance(
                   "vllm::moe_forward", 24)))
    down = moe.estimate(ctx_for(DOWN, doc, config=GPT_OSS_20B, tokens=32, weight_dtype="fp4"))
    gate_up = moe.estimate(ctx_for(GATE_UP, doc, config=GPT_OSS_20B, tokens=32,
                                   weight_dtype="fp4"))
    assert down.per == gate_up.per == "launch"
    assert down.candidates[0].label == EXPERTS_HIT
    assert down.candidates[0].bytes == pytest.approx(STAGE2_BYTES, rel=1e-9)
    assert down.candidates[0].bytes == pytest.approx(139.50e6, rel=1e-4)
    assert down.candidates[0].flops == pytest.approx(2 * 128 * 2880 * 2880)
    assert gate_up.candidates[0].bytes == pytest.approx(STAGE1_BYTES, rel=1e-9)
    # the assumptions say which sibling and which evidence decided it
    why = part(down)
    assert why.startswith("MoE part: stage2") and f"`{GATE_UP}`" in why
    assert "same 24 launches/step in decode" in why and "fused activation epilogue" in why
    assert "both launched by `vllm::moe_forward`" in why
    assert any(f"`{DOWN}`" in a and "read as stage 2" in a for a in gate_up.assumptions)


def test_alone_the_unnamed_kernel_is_still_the_whole_layer() -> None:
    """Without the Top-N (or with no same-count sibling) nothing says a stage: the whole layer,
    as before."""
    alone = moe.estimate(ctx_for(DOWN, None, config=GPT_OSS_20B, tokens=32, weight_dtype="fp4"))
    doc = topn(kernel(DOWN, t_ms=0.15, lps=24, m=32), kernel(GATE_UP, t_ms=0.13, lps=23, m=32))
    other_count = moe.estimate(ctx_for(DOWN, doc, config=GPT_OSS_20B, tokens=32,
                                       weight_dtype="fp4"))
    for est in (alone, other_count):
        assert est.per == "logical_op" and part(est).startswith("MoE part: layer")


def test_a_stage_two_sibling_makes_the_unnamed_kernel_stage_one() -> None:
    """Qwen3-30B-A3B (bf16) at M = 64: the unnamed kernel beside ``ck_moe_stage2`` (48 each over
    48 layers) is stage 1: 125.69 · 2·768·2048 · 2 B + (64·2048 + 512·1536) · 2 B = 792.62 MB,
    its output 2I per pair (no activation word in its name)."""
    doc = topn(kernel("moe_gemm_kernel_a", t_ms=0.15, lps=48, m=64),
               kernel("ck_moe_stage2_bf16", t_ms=0.08, lps=48, m=64))
    est = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
    assert est.per == "launch" and part(est).startswith("MoE part: stage1")
    assert "kernel name says stage 2 ('stage2')" in part(est)
    assert est.candidates[0].bytes == pytest.approx(792.62e6, rel=1e-4)


def test_the_launching_op_states_a_stage_and_its_sibling_takes_the_other() -> None:
    """The op ``aiter::ck_moe_stage2`` makes its kernel stage 2 (its own evidence); the sibling
    with the same 48 launches, launched by an op that says nothing, is then stage 1."""
    doc = topn(kernel("moe_gemm_kernel_a", t_ms=0.15, lps=48, m=64,
                      **op_instance("aiter::fused_moe", 48)),
               kernel("moe_gemm_kernel_b", t_ms=0.08, lps=48, m=64,
                      **op_instance("aiter::ck_moe_stage2", 48)))
    b = moe.estimate(ctx_for("moe_gemm_kernel_b", doc, config=QWEN3_30B_A3B, tokens=64))
    assert part(b).startswith("MoE part: stage2") and "`aiter::ck_moe_stage2`" in part(b)
    a = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
    assert part(a).startswith("MoE part: stage1") and "`moe_gemm_kernel_b`" in part(a)
    assert "its launching op `aiter::ck_moe_stage2` says stage 2" in part(a)


def test_an_ambiguous_family_decides_nothing_and_says_so() -> None:
    """Two unnamed MoE kernels beside one stage-1 kernel, all 48/step, no launching ops: which
    of the two is stage 2 is unknown, so each stays the whole layer, with the reason."""
    doc = topn(kernel("ck_moe_stage1_bf16", t_ms=0.15, lps=48, m=64),
               kernel("moe_gemm_kernel_a", t_ms=0.08, lps=48, m=64),
               kernel("moe_gemm_kernel_b", t_ms=0.08, lps=48, m=64))
    est = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
    assert part(est).startswith("MoE part: layer")
    assert any("none pairs with it alone" in a for a in est.assumptions)


def test_an_inductor_pointwise_kernel_is_no_sibling() -> None:
    """``triton_poi_fused_constant_pad_nd_moe_forward_0`` (the vLLM trace pads the MoE input)
    matches '_moe_' but is never an expert GEMM: it does not make the pair ambiguous."""
    doc = topn(kernel(DOWN, t_ms=0.15, lps=24, m=32), kernel(GATE_UP, t_ms=0.13, lps=24, m=32),
               kernel("triton_poi_fused_constant_pad_nd_moe_forward_0", t_ms=0.01, lps=24))
    est = moe.estimate(ctx_for(DOWN, doc, config=GPT_OSS_20B, tokens=32, weight_dtype="fp4"))
    assert part(est).startswith("MoE part: stage2")


def test_a_recorded_weight_that_contradicts_the_sibling_is_kept() -> None:
    """The unnamed kernel records w1 [E, 2I, H] only, and its sibling is stage 1 by name: the
    kernel's own operand wins over the inference, and the conflict is noted."""
    doc = topn(kernel("moe_gemm_kernel_a", t_ms=0.15, lps=48, m=64,
                      shapes=[[[64, 2048], [128, 1536, 2048]]]),
               kernel("ck_moe_stage1_bf16", t_ms=0.15, lps=48, m=64))
    est = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
    assert part(est).startswith("MoE part: stage1")
    assert any("the recorded weight is kept" in a for a in est.assumptions)


# --------------------------------------------------------------------------- one name, 2 per layer


def test_one_name_twice_per_layer_is_both_stages_whatever_weight_was_recorded(
        tmp_path: Path) -> None:
    """Qwen3-30B-A3B (bf16) on MI355X (8 TB/s, 4 MiB L2), decode M = 64: ``fused_moe_kernel``
    96 launches per step over 48 MoE layers = 2 per layer, and only w1 [128, 1536, 2048]
    recorded.

    Before: w1 alone read each launch as stage 1, 792.62 MB per launch against one launch's
    150 µs (0.6605), so a layer's two launches counted 4·H·I weights instead of 3·H·I.
    Now one logical layer over its two launches: 125.69 · 3·2048·768 · 2 B = 1,186.18 MB
    + layer input and output 2·64·2048·2 B = 0.52 MB + intermediates
    512·(2·768 + 768 + 2048)·2 B = 4.46 MB (larger than the 4.19 MB L2, counted)
    = 1,191.16 MB in 2 × 150 µs → 3.97 TB/s = 0.4963 of the roof.
    """
    w1_only = [[[64, 2048], [128, 1536, 2048]]]
    rd = make_round(tmp_path, [kernel("fused_moe_kernel", pct=30.0, t_ms=0.150, lps=96, m=64,
                                      shapes=w1_only)], gfx="gfx950", config=QWEN3_30B_A3B)
    e = entry(run(rd), "fused_moe_kernel")
    assert e.launches_per_unit == 2 and e.t_unit_ms == pytest.approx(0.300)
    hit = experts_hit(128, 512)
    layer = hit * 3 * 2048 * 768 * 2 + 2 * 64 * 2048 * 2 + 512 * (2 * 768 + 768 + 2048) * 2
    assert e.bytes_est == pytest.approx(layer, rel=1e-6)
    assert e.bytes_est == pytest.approx(1191.16e6, rel=1e-5)
    assert e.roofline_pct == pytest.approx(0.4963, abs=1e-4)
    why = next(a for a in e.assumptions if a.startswith("MoE part:"))
    assert why.startswith("MoE part: layer") and "2 per layer" in why
    assert "w1 [E, 2I, H], which describes one of its two launches" in why


def test_a_recorded_weight_pairs_once_per_layer_but_not_twice_per_layer() -> None:
    """A sibling whose only evidence is a recorded w1 pairs at one launch per layer (48/step
    over 48 layers: the unnamed kernel is stage 2), but not at two per layer (96/step): there
    its own analysis reads it as both stages, so the unnamed kernel is both stages too and the
    two never disagree."""
    w1_only = [[[64, 2048], [128, 1536, 2048]]]
    for lps, expect in ((48, "stage2"), (96, "layer")):
        doc = topn(kernel("moe_gemm_kernel_a", t_ms=0.15, lps=lps, m=64, shapes=w1_only),
                   kernel("moe_gemm_kernel_b", t_ms=0.08, lps=lps, m=64))
        a = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
        b = moe.estimate(ctx_for("moe_gemm_kernel_b", doc, config=QWEN3_30B_A3B, tokens=64))
        assert part(b).startswith(f"MoE part: {expect}"), (lps, part(b))
        assert part(a).startswith("MoE part: " + ("stage1" if lps == 48 else "layer"))
        if lps == 48:
            assert "the recorded expert weight is w1" in part(b)


def test_the_worked_example_stays_one_layer_of_two_launches() -> None:
    """Spec §9: ``fused_moe_kernel`` 80 launches/step over 40 layers, no sibling: one logical
    layer (the golden numbers are checked in tests/core/test_golden.py)."""
    cfg = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 40,
           "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
           "moe_intermediate_size": 512, "num_experts": 256, "num_experts_per_tok": 8,
           "torch_dtype": "bfloat16",
           # the fixture's own: fp8 weights need it to say the activations are fp8 too
           "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
    doc = topn(kernel("fused_moe_kernel", t_ms=0.049471, lps=80, m=64))
    est = moe.estimate(ctx_for("fused_moe_kernel", doc, config=cfg, tokens=64,
                               weight_dtype="fp8"))
    assert est.per == "logical_op" and "2 per layer" in part(est)


# --------------------------------------------------------------------------- block scales


def test_block_scales_of_sub_byte_weights() -> None:
    """mxfp4 / mxfp6: one e8m0 byte per 32 elements; nvfp4: one fp8 byte per 16; fp8 and wider
    weights count none (their per-channel / 128-block scales are under 0.1 %)."""
    assert block_scale_bytes("fp4", DOWN)[0] == 1 / 32 and "'mxfp4'" in block_scale_bytes(
        "fp4", DOWN)[1]
    assert block_scale_bytes("fp4", "cutlass_nvfp4_moe_gemm")[0] == 1 / 16
    assert block_scale_bytes("fp6", "moe_gemm")[0] == 1 / 32
    assert block_scale_bytes("fp4", "moe_gemm")[1].startswith(
        "block scales counted: the OCP MX layout assumed")
    assert block_scale_bytes("fp8", "moe_gemm") == (0.0, "")
    est = moe.estimate(ctx_for("ck_moe_stage2_fp8", None, config=QWEN3_30B_A3B, tokens=64,
                               weight_dtype="fp8"))
    assert "shared experts and block-quant scales not counted" in est.assumptions


# --------------------------------------------------------------------------- the real trace


WILD = REAL_FORMATS / "wild"
EXEC = WILD / "tracelens_vllm_decode_full_graph_execution.json.gz"
CAPTURE = WILD / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"
CONFIG = REAL_FORMATS / "configs" / "gpt-oss-20b" / "config.json"


def test_gpt_oss_down_kernel_end_to_end(tmp_path: Path) -> None:
    """gpt-oss-20b on vLLM (ROCm), one decode step at batch 32 (``decode_batch_captured``),
    CUDA-graph replay shaped from its capture. Both expert GEMMs run once per MoE layer,
    24 launches each: ``…_swiglu`` (gate/up, stage 1 by its fused epilogue) and the unnamed
    ``…_16x128x256x1`` (down), which is therefore stage 2.

    From config.json: E = 32, top_k = 4, hidden H = 2880, expert intermediate I = 2880, weights
    mxfp4. pairs = 32·4 = 128; experts_hit = 32·(1 − (31/32)^128) = 32·(1 − 0.01718) = 31.450.
    Stage-2 weight per expert = I·H = 8,294,400 elements at 0.5 B + one e8m0 scale byte per 32
    (259,200 B) = 4,406,400 B; × 31.450 = 138.58 MB. Activations: pairs·I in + M·H out at 2 B
    = 0.74 + 0.18 MB → 139.50 MB per launch (< 170 MB). In 156.745 µs: 0.890 TB/s.
    Before, no stage word fell back to the whole layer: 31.450·3·H·I·0.5 B = 391.29 MB
    (+ I/O) → 2.50 TB/s, above the gate/up kernel's 1.92 TB/s.
    Gate/up, stage 1: 31.450 · 2·I·H · 0.53125 B + (M·H + pairs·I)·2 B = 278.09 MB in
    136.363 µs: 2.04 TB/s, now above the down kernel.
    """
    from roofline_tui.importers.torch import TorchOptions, import_torch

    result = import_torch(need(EXEC), TorchOptions(captures=[need(CAPTURE)]), progress=False)
    rd = tmp_path / "round_0"
    rd.mkdir()
    (rd / "profile_topN.json").write_text(json.dumps(result.doc))
    proc = subprocess.run(
        [sys.executable, "-m", "roofline_tui", "analyze", str(rd), "--model-config",
         str(need(CONFIG))], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    art = json.loads((rd / "profile_roofline.json").read_text())
    by_name = {e["name"]: e for e in art["entries"]}
    down, gate_up = by_name[DOWN], by_name[GATE_UP]
    assert down["op_class"] == gate_up["op_class"] == "moe"
    assert down["bytes_est"] < 170e6
    assert down["bytes_est"] == pytest.approx(139.50e6, rel=1e-3)
    assert gate_up["bytes_est"] == pytest.approx(278.09e6, rel=1e-3)
    assert down["achieved_bw_bytes_s"] < gate_up["achieved_bw_bytes_s"]
    assert down["launches_per_unit"] == gate_up["launches_per_unit"] == 1
    why = next(a for a in down["assumptions"] if a.startswith("MoE part:"))
    assert why.startswith("MoE part: stage2") and GATE_UP in why
    assert any("one e8m0 scale byte per 32" in a for a in down["assumptions"])


# --------------------------------------------------------------------------- trtllm-gen on B200


GPT_OSS_120B: dict[str, Any] = {  # gpt-oss-120b's config.json, the parts the MoE model reads
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128,
    "num_experts_per_tok": 4, "experts_per_token": 4, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4"},
}
# FlashInfer's trtllm-gen MoE on B200 (sm100f): stage 1 carries the swiGlu epilogue, stage 2
# says nothing; routing and finalize run from the same op, once per MoE layer each.
TRT_STAGE2 = ("bmm_E2m1_E2m1E2m1_Fp32_t128x8x512_s5_et128x8_m256x8x32_cga1x1x1_16dp256b_TN_"
              "transOut_schedS_sm100f")
TRT_STAGE1 = ("bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s4_et128x8_m256x8x32_cga1x1x1_16dp256b_TN_"
              "transOut_schedS_swiGlu_sm100f")
TRT_ROUTING = ("void moe::dev::routing::routingRenormalize::routingIndicesClusterKernel<"
               "moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, "
               "__nv_bfloat16, 128, 4, false> >(moe::dev::routing::routingRenormalize::"
               "KernelParams<__nv_bfloat16, __nv_bfloat16, 128, 4, false>)")
TRT_MAIN_ROUTING = ("void moe::dev::routing::routingMainKernel<moe::dev::routing::KernelParams<"
                    "__nv_bfloat16, __nv_bfloat16, 128> >(moe::dev::routing::KernelParams<"
                    "__nv_bfloat16, __nv_bfloat16, 128>)")
TRT_FINALIZE = ("void moe::dev::finalize::finalizeKernel<moe::dev::finalize::KernelParams<"
                "__nv_bfloat16, __nv_bfloat16> >(moe::dev::finalize::KernelParams<"
                "__nv_bfloat16, __nv_bfloat16>)")


TRT_OP = "flashinfer::trtllm_fp4_block_scale_moe"
# what that op records, per rank at TP = 8: fp4 activations [M, H/2] and the packed expert
# weights gemm1 [E, 2I, H/2], gemm2 [E, H, I/2] (uint8, two e2m1 per byte) — the 3-D weight
# makes the stage-2 ``bmm_…`` (no MoE word in its name) an MoE kernel
TRT_SHAPES = [[[888, 1440], [128, 720, 1440], [128, 2880, 180]]]


def _trt_family() -> TopN:
    def k(name: str, pct: float, t_ms: float) -> dict[str, Any]:
        return kernel(name, pct=pct, t_ms=t_ms, lps=36, m=888, shapes=TRT_SHAPES,
                      **op_instance(TRT_OP, 36))
    return topn(k(TRT_STAGE2, 18.0, 0.050), k(TRT_STAGE1, 27.0, 0.090),
                k(TRT_ROUTING, 2.0, 0.008), k(TRT_MAIN_ROUTING, 1.0, 0.004),
                k(TRT_FINALIZE, 3.0, 0.010))


def _trt_ctx(name: str, doc: TopN | None) -> OpContext:
    return ctx_for(name, doc, config=GPT_OSS_120B, tokens=888, weight_dtype="fp4")._replace(
        workload=Workload(conc=888, tp=8))


def test_trtllm_gen_stage_two_pairs_past_its_routing_and_finalize_kernels() -> None:
    """gpt-oss-120b on B200 with TP = 8, M = 888 tokens, the five kernels of one MoE layer all
    36 launches/step (36 MoE layers): stage-1 ``bmm_…_swiGlu``, stage-2 ``bmm_…`` (no stage word),
    and the routing (``routingIndicesClusterKernel``, ``routingMainKernel``) and finalize
    kernels, every one launched by ``flashinfer::trtllm_fp4_block_scale_moe``.

    From config.json: E = 128, top_k = 4, H = 2880, I = 2880/8 = 360 per rank, mxfp4 weights at
    0.5 + 1/32 = 0.53125 B/elem. pairs = 888·4 = 3552; experts_hit = 128·(1 − (127/128)^3552)
    = 128.0 (every expert).
    Before (the routing and finalize kernels sat in the family with no stage, so the pair gave
    up): the whole layer, 128·3·2880·360·0.53125 = 211.51 MB + I/O 2·888·2880·2 = 10.23 MB
    + intermediates 3552·(2·360 + 360 + 2880)·2 = 28.13 MB (no L2 known, counted) = 249.87 MB
    and 2·3552·3·2880·360 = 22.10 GFLOP.
    Now stage 2 alone: 128·2880·360·0.53125 = 70.50 MB + pairs·I·2 = 2.56 MB + M·H·2 = 5.11 MB
    = 78.17 MB and 2·3552·2880·360 = 7.37 GFLOP per launch (a third of the layer's FLOPs).
    """
    whole = moe.estimate(_trt_ctx(TRT_STAGE2, None))
    assert whole.per == "logical_op" and part(whole).startswith("MoE part: layer")
    assert whole.candidates[0].bytes == pytest.approx(249.87e6, rel=1e-4)
    assert whole.candidates[0].flops == pytest.approx(22.10e9, rel=1e-3)

    doc = _trt_family()
    down = moe.estimate(_trt_ctx(TRT_STAGE2, doc))
    stage2 = 128 * 2880 * 360 * 0.53125 + 3552 * 360 * 2 + 888 * 2880 * 2
    assert down.per == "launch" and part(down).startswith("MoE part: stage2")
    assert down.candidates[0].bytes == pytest.approx(stage2, rel=1e-6)
    assert down.candidates[0].bytes == pytest.approx(78.17e6, rel=1e-4)
    assert down.candidates[0].flops == pytest.approx(2 * 3552 * 2880 * 360)
    assert down.candidates[0].flops == pytest.approx(7.37e9, rel=1e-3)
    why = part(down)
    assert f"`{TRT_STAGE1}`" in why and f"both launched by `{TRT_OP}`" in why
    # the routing and finalize kernels are not MoE kernels at all (classify's routing rule:
    # `moe::dev::routing`, `finalizeKernel`), so they never enter the sibling family
    assert not any("routing / finalize" in a or "no stage from its siblings" in a
                   for a in down.assumptions)
    # and stage 1 now names stage 2 as its only sibling
    gate_up = moe.estimate(_trt_ctx(TRT_STAGE1, doc))
    assert part(gate_up).startswith("MoE part: stage1")
    assert any(f"`{TRT_STAGE2}`" in a and "read as stage 2" in a for a in gate_up.assumptions)


def test_the_sibling_sharing_the_capture_op_is_asked_first() -> None:
    """Two stage-1 kernels by name at the kernel's launch count (48/step, Qwen3-30B-A3B): the
    one launched by the kernel's own op — here recorded at graph capture — is its partner and is
    named, not the first one in the Top-N."""
    doc = topn(kernel("moe_gemm_kernel_a", t_ms=0.15, lps=48, m=64,
                      **op_instance("sglang::fused_moe", 48)),
               kernel("ck_moe_stage1_other", t_ms=0.15, lps=48, m=64,
                      **op_instance("other::op", 48)),
               kernel("ck_moe_stage1_bf16", t_ms=0.15, lps=48, m=64,
                      **op_instance("sglang::fused_moe", 48)))
    for x in doc.entries:
        assert x.ext is not None
        x.ext.instances[0].source = "capture"
    est = moe.estimate(ctx_for("moe_gemm_kernel_a", doc, config=QWEN3_30B_A3B, tokens=64))
    why = part(est)
    assert why.startswith("MoE part: stage2") and "`ck_moe_stage1_bf16`" in why
    assert "`ck_moe_stage1_other`" not in why
    assert "both launched by `sglang::fused_moe` (the op recorded at graph capture)" in why


@pytest.mark.parametrize(("name", "word"), [
    (TRT_ROUTING, "routing"), (TRT_MAIN_ROUTING, "routing"), (TRT_FINALIZE, "finalize"),
    ("moe_align_block_size_kernel", "moe_align"), ("topkGatingSoftmax", "topk"),
    ("void vllm::moe::moe_sum_kernel<c10::BFloat16, 4>", "moe_sum"),
    (TRT_STAGE1, None), (TRT_STAGE2, None), ("fused_moe_kernel", None),
    ("ck_moe_stage2_bf16", None), (DOWN, None),
])
def test_routing_and_finalize_kernels_are_no_expert_gemm(name: str, word: str | None) -> None:
    """The MoE layer's helper kernels are named by their word; an expert GEMM never is."""
    assert moe.moe_helper(name) == word

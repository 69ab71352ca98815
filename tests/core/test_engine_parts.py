"""Unit tests of the engine's small parts: dtypes, op classification, routing, levers, peaks use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.classify import classify
from roofline_tui.core.dtypes import dtype_bytes
from roofline_tui.core.opmodels import LeverContext, Neighbour, byte_reduction_levers
from roofline_tui.core.routing import route_entry

from .helpers import edit_topn, entry, kernel, run


@pytest.mark.parametrize(("name", "size", "noted"), [
    ("c10::Float8_e4m3fn", 1.0, False), ("fp8_e4m3", 1.0, False), ("torch.bfloat16", 2.0, False),
    ("c10::Half", 2.0, False), ("float", 4.0, False), ("mxfp4", 0.5, False),
    ("int8", 1.0, False), ("something_new", 2.0, True), (None, 2.0, True), (7, 2.0, True),
])
def test_dtype_bytes(name, size, noted) -> None:
    got, note = dtype_bytes(name)
    assert got == size
    assert (note is not None) == noted


@pytest.mark.parametrize(("name", "classification", "op_class", "sub"), [
    ("fused_moe_kernel", "triton", "moe", None),
    ("ck_moe_stage1_fp8", None, "moe", None),
    ("kernel_paged_attention_2d", "triton", "attn", None),
    ("_fwd_grouped_kernel_stage1", "triton", "attn", None),
    ("flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits>", None, "attn", None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x256", "library_gemm", "gemm", None),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", None, "gemm", None),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNN", None, "gemm", None),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm>", None, "gemm", None),
    ("void vllm::rms_norm_kernel<c10::BFloat16>", None, "elementwise", "norm"),
    ("void vllm::act_and_mul_kernel<c10::BFloat16>", None, "elementwise", "act_and_mul"),
    ("dynamic_per_token_scaled_fp8_quant_kernel", None, "elementwise", "quant"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", None, "comm", None),
    ("cross_device_reduce_1stage", None, "comm", None),
    ("Memcpy DtoD (Device -> Device)", "memory", "elementwise", "copy"),
    ("chunk_gated_delta_rule_fwd_kernel", None, "unknown", "linear_attention"),
    ("opaque_kernel_42", "library_gemm", "gemm", None),
    ("opaque_kernel_42", None, "unknown", None),
])
def test_classification_of_real_kernel_names(name, classification, op_class, sub) -> None:
    c = classify(name, classification)
    assert (c.op_class, c.op_subclass) == (op_class, sub)
    assert c.reason


def test_shapes_hint_a_grouped_gemm() -> None:
    assert classify("mystery", None, [[[64, 2048], [256, 1024, 2048]]]).op_class == "moe"


@pytest.mark.parametrize(("kw", "route"), [
    (dict(editable=False, headroom_class="saturated", bound_type="memory"), "host_side"),
    (dict(headroom_class="unknown", bound_type="unknown"), "pct_order"),
    (dict(headroom_class="saturated", bound_type="memory"), "byte_reduction"),
    (dict(headroom_class="saturated", bound_type="latency"), "byte_reduction_or_fusion"),
    (dict(headroom_class="underperforming", bound_type="latency"), "kernel_occupancy"),
    (dict(headroom_class="underperforming", bound_type="memory"), "kernel_tuning"),
    (dict(headroom_class="moderate", bound_type="compute"), "kernel_tuning"),
    (dict(headroom_class="moderate", bound_type="memory", expected_gain_pct=0.2), "low_priority"),
])
def test_routing_table(kw, route) -> None:
    args: dict[str, Any] = dict(editable=True, confidence="medium", expected_gain_pct=3.0,
                                no_verdict_reason=None)
    args.update(kw)
    decision = route_entry(**args)
    assert decision.route == route and decision.reason


def test_low_confidence_routes_say_advisory() -> None:
    d = route_entry(editable=True, headroom_class="underperforming", bound_type="memory",
                    confidence="low", expected_gain_pct=4.0, no_verdict_reason=None)
    assert d.route == "kernel_tuning" and "advisory" in d.reason


def test_levers_name_the_adjacent_kernel_and_the_lossy_gate() -> None:
    levers = byte_reduction_levers("moe", LeverContext(
        short_name="fused_moe_kernel", bound_type="memory", weight_dtype="fp8",
        kv_dtype="bf16", alternatives=[("experts_hit", 697e6), ("all-experts", 805e6)],
        chosen_label="experts_hit",
        neighbours=[Neighbour("act_and_mul_kernel", "elementwise", "act_and_mul", 3.1),
                    Neighbour("rms_norm_kernel", "elementwise", "norm", 1.2),
                    Neighbour("kernel_paged_attention_2d", "attn", None, 8.9)]))
    text = "\n".join(levers)
    assert "fuse `act_and_mul_kernel` (act_and_mul, 3.10% GPU)" in text
    assert "kernel_paged_attention_2d" not in text  # not a prologue/epilogue op
    assert "805 MB/layer vs 697 MB" in text
    assert "fp8 → fp4" in text and "accuracy gate" in text
    assert "speculative decoding" in levers[-1]


def test_saturated_moe_in_the_demo_names_its_neighbours(demo_profile: Path) -> None:
    moe = entry(run(demo_profile / "round_0"), "fused_moe_kernel")
    assert moe.headroom_class == "saturated"
    assert any("act_and_mul_kernel" in lever for lever in moe.byte_reduction_levers)


def test_serving_weighted_pct_admits_a_decode_head(worked_example: Path) -> None:
    def add(d: dict) -> None:
        d["top_kernels"].append({
            "name": "void vllm::rms_norm_kernel<c10::BFloat16>", "pct_gpu_time": 3.1,
            "serving_weighted_pct": 6.2, "shapes": [[[64, 2048], [2048]]],
            "base_latency_ms": {"decode": 0.012}, "served_regimes": ["decode"]})
        d["top_kernels"].append({"name": "tiny_kernel", "pct_gpu_time": 4.0, "avg_us": 30})

    edit_topn(worked_example, add)
    art = run(worked_example)
    names = [e.short_name for e in art.entries]
    assert "rms_norm_kernel" in names and "tiny_kernel" not in names
    assert "tiny_kernel" not in [d.name for d in art.degraded]  # absent, not degraded


def test_avg_us_fallback_is_noted(worked_example: Path) -> None:
    def strip(d: dict) -> None:
        k = kernel(d, "kernel_paged_attention_2d")
        for key in ("base_latency_ms", "calls_per_step", "phase_calls_measured"):
            k.pop(key)

    edit_topn(worked_example, strip)
    attn = entry(run(worked_example), "kernel_paged_attention_2d")
    assert attn.t_ms == pytest.approx(0.05317)
    assert "avg_us/1000" in attn.notes


def test_unvalidated_compute_peak_gives_no_compute_axis_verdict(tmp_path: Path) -> None:
    peaks = tmp_path / "peaks.md"
    peaks.write_text("# test\n```yaml\ngfx: sm_80\nhbm_bw_bytes_s: 2.0e12\nflops:\n"
                     "  bf16: 1.5e14\n  fp16: 3.1e14\n```\n")
    round_dir = tmp_path / "profile" / "round_0"
    round_dir.mkdir(parents=True)
    (tmp_path / "env_report.json").write_text(json.dumps({"gfx": "sm_80"}))
    (round_dir / "profile_topN.json").write_text(json.dumps({"top_kernels": [{
        "name": "ampere_bf16_s16816gemm_bf16_256x128", "pct_gpu_time": 30.0, "avg_us": 900.0,
        "shapes": [[[4096, 4096], [4096, 4096]]], "dtypes": ["c10::BFloat16"] * 2}]}))
    from roofline_tui.core.rounds.analysis import RoundSources

    art = run(round_dir, RoundSources(peaks=peaks))
    gemm = art.entries[0]
    assert art.peaks.compute_validated is False
    assert gemm.roof_axis == "compute"
    assert gemm.headroom_class == "unknown"
    assert gemm.no_verdict_reason is not None and "unvalidated" in gemm.no_verdict_reason

"""The degradation ladder L0–L5 (spec §6), one test (or more) per level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core import analyze as analyze_mod
from roofline_tui.core.opmodels import MODELS
from roofline_tui.core.rounds.analysis import RoundSources

from .helpers import edit_topn, entry, kernel, run


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roofline_tui", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_l0_analysis_skill_none_emits_nothing(worked_example: Path) -> None:
    env_path = worked_example.parent.parent / "env_report.json"
    data = json.loads(env_path.read_text())
    data["analysis_skill"] = "none"
    env_path.write_text(json.dumps(data))
    proc = _cli("analyze", str(worked_example))
    assert proc.returncode == 0
    assert "nothing written" in proc.stderr
    assert not (worked_example / "profile_roofline.json").exists()
    assert not (worked_example / "profile_roofline.md").exists()


def test_l1_unknown_arch_with_device_props_derives_low_confidence(worked_example: Path) -> None:
    env_path = worked_example.parent.parent / "env_report.json"
    data = json.loads(env_path.read_text())
    data.pop("product")
    data["gfx"] = "gfx9999"
    data["device_props"] = {"gcnArchName": "gfx942", "multi_processor_count": 304,
                            "clock_rate_khz": 2100000, "memory_clock_rate_khz": 1300000,
                            "memory_bus_width": 8192}
    env_path.write_text(json.dumps(data))
    art = run(worked_example)
    assert art.peaks.source == "derived" and art.peaks.confidence == "low"
    assert art.entries and all(e.confidence == "low" for e in art.entries)
    assert all(e.advisory for e in art.entries)


def test_l1_nothing_known_means_no_verdicts(worked_example: Path) -> None:
    env_path = worked_example.parent.parent / "env_report.json"
    data = json.loads(env_path.read_text())
    data.pop("product")
    data["gfx"] = "unknown"
    env_path.write_text(json.dumps(data))
    art = run(worked_example)
    assert art.peaks.source == "none" and art.peaks.confidence == "low"
    assert all(e.headroom_class == "unknown" for e in art.entries)
    assert all(e.route == "pct_order" for e in art.entries)
    # the byte model still ran: the bytes are shown even without a roof to compare against
    moe_bytes = entry(art, "fused_moe_kernel").bytes_est
    assert moe_bytes is not None and moe_bytes > 0
    assert art.ranking_by_expected_gain == art.ranking_by_pct
    assert any("peak" in str(err).lower() for err in art.skill_errors)


def test_l2_unmodellable_entry_degrades_alone(worked_example: Path) -> None:
    def add(data: dict) -> None:
        data["top_kernels"].append({
            "name": "Cijk_Ailk_Bljk_BBS_BH_MT128x128x64", "short_name": "Cijk_Ailk_Bljk_BBS_BH",
            "pct_gpu_time": 7.5, "shapes": [], "classification": "library_gemm",
            "editable": False, "base_latency_ms": {"decode": 0.02},
            "calls_per_step": {"decode": 40}, "served_regimes": ["decode"]})
        data["top_kernels"].append({
            "name": "chunk_gated_delta_rule_fwd_kernel", "pct_gpu_time": 6.0,
            "avg_us": 30.0})

    edit_topn(worked_example, add)
    art = run(worked_example)
    gemm = entry(art, "Cijk_Ailk_Bljk_BBS_BH")
    assert gemm.modeled is False and gemm.headroom_class == "unknown"
    assert gemm.route == "host_side"  # the shippability gate applies first
    delta = entry(art, "chunk_gated_delta_rule_fwd_kernel")
    assert not delta.modeled and delta.route == "pct_order"
    reasons = {d.name: d.reason for d in art.degraded}
    assert set(reasons) == {"Cijk_Ailk_Bljk_BBS_BH", "chunk_gated_delta_rule_fwd_kernel"}
    assert "shapes" in reasons["Cijk_Ailk_Bljk_BBS_BH"]
    # the other heads are untouched
    assert entry(art, "fused_moe_kernel").headroom_class == "saturated"
    assert entry(art, "kernel_paged_attention_2d").headroom_class == "underperforming"


def test_l3_infeasible_ratio_is_suspect_not_saturated(worked_example: Path) -> None:
    # Halve the per-launch time: even the experts_hit model now implies 1.76× peak bandwidth.
    edit_topn(worked_example,
              lambda d: kernel(d, "fused_moe_kernel")["base_latency_ms"].update(decode=0.025))
    moe = entry(run(worked_example), "fused_moe_kernel")
    assert moe.suspect is True
    assert moe.headroom_class == "unknown"  # never a clamped 100% read as saturated
    assert moe.roofline_pct == 1.0
    assert moe.roofline_pct_raw is not None and moe.roofline_pct_raw > 1.0
    assert moe.bytes_upper_bound == pytest.approx(8.0e12 * 2 * 25e-6, rel=1e-3)
    assert moe.stage_c_candidate is True
    assert moe.attainable_speedup is None and moe.expected_e2e_gain_pct is None
    assert moe.byte_reduction_levers == []
    assert "Suspect" in moe.notes


def test_dispatch_bound_gets_no_verdict(worked_example: Path) -> None:
    def add(data: dict) -> None:
        data["top_kernels"].append({
            "name": "triton_poi_fused_add_0", "pct_gpu_time": 5.5,
            "shapes": [[[64, 2048], [64, 2048]]], "dtypes": ["c10::BFloat16"],
            "base_latency_ms": {"decode": 0.0035}, "served_regimes": ["decode"],
            "calls_per_step": {"decode": 200}})

    edit_topn(worked_example, add)
    e = entry(run(worked_example), "triton_poi_fused_add_0")
    assert e.dispatch_bound is True
    assert e.bound_type == "latency" and e.headroom_class == "unknown"
    assert e.no_verdict_reason is not None and "5 µs" in e.no_verdict_reason


def test_l4_no_counters_keeps_the_stage_a_result(worked_example: Path) -> None:
    (worked_example / "counters").mkdir()
    (worked_example / "counters" / "counter_collection.csv").write_text(
        "Dispatch_Id,Kernel_Name,Counter_Name,Counter_Value\n"
        "1,fused_moe_kernel,SQ_WAVES,12\n")
    art = run(worked_example)
    moe = entry(art, "fused_moe_kernel")
    assert moe.stage == "A" and moe.confidence == "low"
    assert moe.measurement_basis == "model"


def test_l5_exception_in_a_model_is_caught(worked_example: Path, monkeypatch) -> None:
    def boom(ctx):
        raise ZeroDivisionError("synthetic failure")

    monkeypatch.setattr(MODELS["attn"], "estimate", boom)
    art = run(worked_example)
    assert any("ZeroDivisionError" in str(e) for e in art.skill_errors)
    attn = entry(art, "kernel_paged_attention_2d")  # never pruned: still listed, no verdict
    assert attn.headroom_class == "unknown" and not attn.modeled
    assert entry(art, "fused_moe_kernel").headroom_class == "saturated"
    assert any(d.name == "kernel_paged_attention_2d" for d in art.degraded)


def test_l5_failure_in_finishing_is_caught(worked_example: Path, monkeypatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("routing exploded")

    monkeypatch.setattr(analyze_mod, "route_entry", boom)
    art = run(worked_example)
    assert len(art.entries) == 2
    assert all("RuntimeError" in e.notes for e in art.entries)


def test_explicit_sources_override_discovery(worked_example: Path, tmp_path: Path) -> None:
    env = tmp_path / "other_env.json"
    env.write_text(json.dumps({"gfx": "sm_90", "product": "H200",
                               "workload": {"isl": 1024, "osl": 1024, "conc": 64}}))
    art = run(worked_example, RoundSources(env=env))
    assert art.gfx == "sm_90" and art.peaks.hbm_bw_bytes_s == 4.8e12
    # config.json is looked for beside the given env_report (and in the round), not beside the
    # round's own parents' env_report: none there, so the MoE/attention heads cannot be modelled
    assert art.inputs.model_config_file is None

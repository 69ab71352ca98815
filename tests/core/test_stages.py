"""Stages B and C (issue 4): captured shapes and measured counters sharpen the estimate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.rounds.analysis import RoundSources
from tests.paths import MEASURED_FIXTURES

from .helpers import entry, run

MEASURED = MEASURED_FIXTURES
MOE_COUNTERS = MEASURED / "counters" / "worked_example_moe" / "counter_collection.csv"


def _counters_into(round_dir: Path, *files: Path) -> None:
    dst = round_dir / "counters"
    dst.mkdir(exist_ok=True)
    for f in files:
        shutil.copy(f, dst / f.name)


def test_stage_c_counters_give_a_high_confidence_verdict(worked_example: Path) -> None:
    before = entry(run(worked_example), "fused_moe_kernel")
    assert before.confidence == "low" and before.stage == "A"
    _counters_into(worked_example, MOE_COUNTERS)
    art = run(worked_example)
    moe = entry(art, "fused_moe_kernel")
    assert art.stage == "C" and moe.stage == "C"
    assert moe.confidence == "high"  # the memory roof's own axis was measured
    assert moe.measurement_basis == "counters"
    assert moe.bytes_est == pytest.approx(697.0e6, rel=0.005)  # 2 dispatches × 348.5 MB
    assert moe.bytes_model == pytest.approx(697.3e6, rel=0.005)
    assert moe.roofline_pct is not None
    assert 0.86 <= moe.roofline_pct <= 0.90 and moe.headroom_class == "saturated"
    assert moe.advisory is False
    assert "below L2" in moe.notes and "per-launch time" in moe.notes
    # the attention kernel has no counters: it stays at stage A
    attn = entry(art, "kernel_paged_attention_2d")
    assert attn.stage == "A" and attn.confidence == "low"


def test_suspect_model_settled_by_counters(worked_example: Path) -> None:
    # An all-expert-only byte model (no experts_hit alternative) is infeasible: suspect.
    cfg = worked_example.parent.parent / "config.json"
    data = json.loads(cfg.read_text())
    data["num_experts_per_tok"] = 64  # pairs=4096 → every expert is hit → 805 MB: 1.02 of roof
    cfg.write_text(json.dumps(data))
    moe = entry(run(worked_example), "fused_moe_kernel")
    assert moe.suspect and moe.headroom_class == "unknown"
    _counters_into(worked_example, MOE_COUNTERS)
    moe = entry(run(worked_example), "fused_moe_kernel")
    assert not moe.suspect and moe.headroom_class == "saturated"
    assert moe.confidence == "high"
    assert moe.model_disagreement is False  # 697 vs 805 MB: within 1.5×


def test_counter_file_missing_a_counter_keeps_stage_a(worked_example: Path, tmp_path: Path) -> None:
    text = MOE_COUNTERS.read_text().splitlines()
    kept = [line for line in text if "WRITE_SIZE" not in line]
    partial = tmp_path / "counter_collection.csv"
    partial.write_text("\n".join(kept) + "\n")
    art = run(worked_example, RoundSources(counters=[partial]))
    moe = entry(art, "fused_moe_kernel")
    # FLOPs were measured but the memory roof's axis (bytes) was not: not high confidence
    assert moe.confidence != "high"
    assert "WRITE_SIZE" in moe.notes


def test_multi_pass_files_join(worked_example: Path) -> None:
    lines = MOE_COUNTERS.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    p1 = worked_example / "counters" / "pass_1"
    p2 = worked_example / "counters" / "pass_2"
    p1.mkdir(parents=True)
    p2.mkdir(parents=True)
    (p1 / "counter_collection.csv").write_text(
        "\n".join([header] + [r for r in rows if "FETCH_SIZE" in r]) + "\n")
    (p2 / "counter_collection.csv").write_text(
        "\n".join([header] + [r for r in rows if "FETCH_SIZE" not in r]) + "\n")
    moe = entry(run(worked_example), "fused_moe_kernel")
    assert moe.stage == "C" and moe.confidence == "high"
    assert moe.bytes_est == pytest.approx(697.0e6, rel=0.005)


def test_nvidia_gemm_from_an_ncu_csv(tmp_path: Path) -> None:
    name = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn"
            "_align8>(T1::Params)")
    round_dir = tmp_path / "profile" / "round_0"
    round_dir.mkdir(parents=True)
    (tmp_path / "env_report.json").write_text(json.dumps(
        {"gfx": "sm_80", "product": "A100", "workload": {"isl": 1024, "osl": 128, "conc": 8}}))
    (round_dir / "profile_topN.json").write_text(json.dumps({"top_kernels": [{
        "name": name, "pct_gpu_time": 40.0, "avg_us": 498.21, "calls": 2,
        "shapes": [[[4096, 4096], [4096, 4096]]], "dtypes": ["c10::BFloat16", "c10::BFloat16"],
        "classification": "library_gemm", "editable": False}]}))
    _counters_into(round_dir, MEASURED / "counters" / "ncu_gemm_details.csv")
    art = run(round_dir)
    gemm = art.entries[0]
    assert gemm.op_class == "gemm" and gemm.stage == "C"
    assert gemm.roof_axis == "compute" and gemm.bound_type == "compute"
    assert gemm.flops_est == pytest.approx(2 * 4096**3, rel=0.01)
    assert gemm.bytes_est == pytest.approx(134.2e6, rel=0.01)  # 100.66 MB read + 33.55 written
    assert gemm.confidence == "high"
    # 2·4096³ FLOP in 498.21 µs = 275.9 TFLOP/s: 1.7 % above A100's measured bf16 matmul
    # ceiling (MAMF 271.2 TFLOP/s), inside the 3.4 % noise band, so the kernel is at that
    # ceiling: roofline 1.0, saturated (against the 312 data sheet it read 0.88)
    assert gemm.roofline_pct == 1.0 and not gemm.suspect
    assert gemm.headroom_class == "saturated"
    assert "noise band" in gemm.notes
    assert gemm.route == "host_side"  # cutlass library GEMM: not editable


def test_stage_b_captured_moe_shapes(worked_example: Path) -> None:
    task = worked_example.parent.parent / "kernels" / "fused_moe_kernel_task"
    task.mkdir(parents=True)
    meta = {
        "op_kind": "moe", "num_experts": 256, "top_k": 8, "hidden_size": 2048,
        "intermediate_size_per_tp": 512, "dtype": "fp8_e4m3", "compute_dtype": "bf16",
        "m_buckets": [64], "decode_m_buckets": [64], "prefill_m_buckets": [8192],
        "cases": [{"m": 64, "regime": "decode", "sig": "m64_decode"},
                  {"m": 8192, "regime": "prefill", "sig": "m8192_prefill"}],
    }
    (task / "meta.json").write_text(json.dumps(meta))
    art = run(worked_example)
    moe = entry(art, "fused_moe_kernel")
    assert moe.stage == "B" and moe.confidence == "medium"
    assert art.stage == "B"
    assert moe.axes[0].roof_axis == "memory"
    assert any("captured case" in a for a in moe.assumptions)
    assert moe.roofline_pct is not None
    assert 0.86 <= moe.roofline_pct <= 0.90


def test_task_dir_without_meta_keeps_stage_a(worked_example: Path) -> None:
    task = worked_example.parent.parent / "kernels" / "fused_moe_kernel_task"
    task.mkdir(parents=True)
    (task / "regime.json").write_text("{}")
    art = run(worked_example)
    assert entry(art, "fused_moe_kernel").stage == "A"
    assert any("meta.json" in str(e) for e in art.skill_errors)


def test_cli_counters_flag(worked_example: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "roofline_tui", "analyze", str(worked_example), "--json",
         "--counters", str(MOE_COUNTERS)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["stage"] == "C"


def test_bad_counter_values_are_reported_not_raised(worked_example: Path, tmp_path: Path) -> None:
    bad = tmp_path / "counter_collection.csv"
    bad.write_text(MOE_COUNTERS.read_text().replace("339000.000000", "lots"))
    art = run(worked_example, RoundSources(counters=[bad]))
    assert any("non-numeric" in str(e) and "FETCH_SIZE" in str(e) for e in art.skill_errors)
    moe = entry(art, "fused_moe_kernel")
    assert moe.stage == "C" and moe.headroom_class == "saturated"
    # every other entry is untouched by the bad file
    assert entry(art, "kernel_paged_attention_2d").stage == "A"

"""The spec §9 worked example as a golden case (issue 2)."""

from __future__ import annotations

import pytest

from roofline_tui.core.opmodels.moe import experts_hit

from .helpers import entry, run

MOE = "fused_moe_kernel"
ATTN = "kernel_paged_attention_2d"


def test_experts_hit_matches_the_spec() -> None:
    # M=64, top_k=8 → 512 pairs over 256 experts ≈ 221 distinct experts
    assert experts_hit(256, 512) == pytest.approx(221.5, abs=0.2)
    assert experts_hit(256, 1) == pytest.approx(1.0)
    assert experts_hit(256, 10**6) == pytest.approx(256.0)


def test_moe_is_memory_bound_and_saturated(worked_example) -> None:
    art = run(worked_example)
    moe = entry(art, MOE)
    assert moe.op_class == "moe" and moe.modeled and moe.regime == "decode"
    assert moe.t_ms == pytest.approx(0.049471)
    assert moe.launches_per_step == 80
    assert moe.launches_per_unit == 2  # 80 launches/step over 40 MoE layers
    assert "2 launches" in moe.unit
    assert moe.bytes_est == pytest.approx(697e6, rel=0.01)
    assert moe.achieved_bw_bytes_s == pytest.approx(7.04e12, rel=0.01)
    assert moe.arithmetic_intensity == pytest.approx(4.6, abs=0.1)
    assert moe.ridge_point == pytest.approx(629, abs=5)  # fp8 peak / HBM
    assert moe.bound_type == "memory"
    assert moe.roofline_pct is not None and 0.86 <= moe.roofline_pct <= 0.90
    assert moe.headroom_class == "saturated"
    assert moe.attainable_speedup == pytest.approx(1.02, abs=0.01)
    assert moe.expected_e2e_gain_pct == pytest.approx(0.6, abs=0.1)
    assert moe.confidence == "low" and moe.stage == "A"
    assert moe.route == "byte_reduction"
    assert moe.byte_reduction_levers, "saturated implies levers"


def test_all_expert_alternative_is_in_notes_and_infeasible(worked_example) -> None:
    moe = entry(run(worked_example), MOE)
    alts = {a.label: a.model_dump() for a in moe.alternatives}
    assert set(alts) == {"experts_hit", "all-experts"}
    assert alts["experts_hit"]["chosen"] and alts["experts_hit"]["feasible"]
    every = alts["all-experts"]
    assert every["bytes_est"] == pytest.approx(805e6, rel=0.01)
    assert every["roofline_pct_raw"] == pytest.approx(1.02, abs=0.01)
    assert not every["feasible"] and not every["chosen"]
    assert "all-experts" in moe.notes and "infeasible" in moe.notes
    assert any("unrouted experts" in lever for lever in moe.byte_reduction_levers)


def test_attention_is_latency_bound_and_underperforming(worked_example) -> None:
    attn = entry(run(worked_example), ATTN)
    assert attn.op_class == "attn" and attn.regime == "decode"
    assert attn.launches_per_unit == 1  # 10 launches over 10 full-attn layers
    assert attn.bound_type == "latency"
    assert attn.roofline_pct == pytest.approx(0.18, abs=0.01)
    assert attn.headroom_class == "underperforming"
    assert attn.attainable_speedup is not None and 1.6 <= attn.attainable_speedup <= 2.9
    assert attn.target_eff == 0.5
    assert attn.route == "kernel_occupancy"
    assert attn.byte_reduction_levers == []  # only saturated entries get levers
    assert any("isl + osl/2" in a for a in attn.assumptions)


def test_the_two_rankings_disagree(worked_example) -> None:
    art = run(worked_example)
    assert art.ranking_by_pct == [MOE, ATTN]
    assert art.ranking_by_expected_gain == [ATTN, MOE]
    assert art.stage == "A" and art.degraded == [] and art.skill_errors == []
    assert art.peaks.source == "table" and art.peaks.confidence == "high"


def test_pct_gpu_time_copied_verbatim(worked_example) -> None:
    art = run(worked_example)
    assert [e.pct_gpu_time for e in art.entries] == [26.45, 8.86]

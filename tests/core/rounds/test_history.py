"""Rounds model, movement, predicted vs actual and contradictions (spec §8.3–§8.4)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.cli import main
from roofline_tui.core.layout import round_dirs
from roofline_tui.core.rounds.analysis import analyze_round
from roofline_tui.core.rounds.annotate import annotate_round
from roofline_tui.core.rounds.compare import load_history, speedup_is_noise
from roofline_tui.core.rounds.series import kernel_keys, kernel_series, round_summary_rows
from roofline_tui.core.rounds.snapshot import load_serving_metrics

from .conftest import ATTN, MOE, read, set_serving, speed_up, touch_later, write


def pair(h, name, before=None):
    found = [p for p in h.pairs() if p.name == name
             and (before is None or p.round_before == before)]
    assert len(found) == 1, [(p.name, p.round_before) for p in h.pairs()]
    return found[0]


# --------------------------------------------------------------------------- discovery


def test_numeric_rounds_in_numeric_order_then_named_by_time(tmp_path: Path) -> None:
    for name in ("round_10", "round_2", "round_0", "round_tuning", "round_abc", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile_topN.json").write_text("{}")
    touch_later(tmp_path / "round_tuning" / "profile_topN.json", 100)
    touch_later(tmp_path / "round_abc" / "profile_topN.json", 50)
    assert [d.name for d in round_dirs(tmp_path)] == [
        "round_0", "round_2", "round_10", "round_abc", "round_tuning"]


# --------------------------------------------------------------------------- spec §9


def test_spec_section9_outcome(profile: Path) -> None:
    h = load_history(profile)
    assert [r.label for r in h.rounds] == [0, 1, 2]
    assert h.baseline == 0 and h.baseline_is_round0
    assert all(s.comparable for s in h.steps)

    moe = pair(h, MOE)
    assert (moe.round_before, moe.round_after) == (0, 1)
    assert moe.measured_speedup == pytest.approx(1.047, abs=1e-3)
    assert moe.predicted_speedup == pytest.approx(1.023, abs=2e-3)
    assert moe.op_class == "moe"
    # 1.047 / 1.022 is 2.5 % above the prediction: inside the 3.4 % isolated band
    assert not moe.isolated_noise and moe.verdict == "at_ceiling" and not moe.contradiction
    assert moe.e2e_delta_pct == pytest.approx(-0.064, abs=1e-3)
    assert moe.e2e_noise and moe.e2e_verdict == "noise"
    assert moe.predicted_e2e_gain_pct == pytest.approx(0.5, abs=0.1)

    attn = pair(h, ATTN)
    assert (attn.round_before, attn.round_after) == (1, 2)
    assert attn.measured_speedup == pytest.approx(1.56, abs=1e-3)
    assert 1.7 <= attn.predicted_speedup <= 2.85
    assert attn.verdict == "under_ceiling" and not attn.contradiction
    assert attn.e2e_verdict == "gain" and attn.e2e_delta_pct == pytest.approx(4.09, abs=0.01)
    # achieved fraction of roof after the rewrite: roofline_pct × measured speedup
    assert attn.roofline_pct_after == pytest.approx(attn.roofline_pct_before * 1.56, rel=1e-3)

    # untouched kernels did not move: no pair for them
    assert {p.name for p in h.pairs()} == {MOE, ATTN}
    # attention dropped below the 5 % bar after its rewrite: it left the head set
    assert h.steps[1].heads_left == [ATTN] and h.steps[1].heads_entered == []


def test_fourth_round_beating_the_prediction_is_a_contradiction(four_rounds: Path) -> None:
    h = load_history(four_rounds)
    p = pair(h, MOE, before=2)
    assert p.measured_speedup == pytest.approx(1.2, abs=1e-4)
    assert p.predicted_speedup == pytest.approx(1.0)  # saturated: nothing left to tune
    assert p.contradiction and p.verdict == "contradiction"
    assert "1.200" in p.contradiction_detail and "1.000" in p.contradiction_detail
    # the earlier pairs are still not contradictions
    assert not pair(h, MOE, before=0).contradiction and not pair(h, ATTN).contradiction
    assert round_summary_rows(h)[3].contradictions == 1


def test_contradiction_lands_on_the_artifact_entry(four_rounds: Path) -> None:
    r3 = four_rounds / "round_3"
    assert main(["analyze", str(r3), "--json"]) == 0
    art = read(r3 / "profile_roofline.json")
    moe = next(e for e in art["entries"] if e["name"] == MOE)
    assert moe["contradiction"] is True
    assert moe["measured_speedup_vs_prev"] == pytest.approx(1.2, abs=1e-3)
    assert moe["predicted_speedup_prev"] == pytest.approx(1.0)
    assert "Contradiction" in moe["notes"]
    assert "contradiction" in moe["contradiction_detail"] or "beats" in moe["contradiction_detail"]
    assert art["round_history"]["contradictions"] == [MOE]
    md = (r3 / "profile_roofline.md").read_text()
    assert "## Round-over-round movement" in md and "**contradiction**" in md
    others = [e for e in art["entries"] if e["name"] != MOE]
    assert all(not e.get("contradiction") for e in others)


def test_a_change_inside_the_isolated_band_is_noise(profile: Path) -> None:
    speed_up(profile / "round_1", "triton_poi_fused_add_mul_sigmoid_silu_0", 1.02)
    speed_up(profile / "round_1", ATTN, 1 / 1.03)  # 3 % slower: also noise
    set_serving(profile / "round_2", output_throughput_tok_s=9993.6 * 1.003)
    h = load_history(profile)
    small = pair(h, "triton_poi_fused_add_mul_sigmoid_silu_0", before=0)
    assert small.isolated_noise and small.verdict == "noise" and not small.contradiction
    slower = pair(h, ATTN, before=0)
    assert slower.isolated_noise and slower.verdict == "noise"
    # the real MoE win is counted alone, noise pairs are not "kernels that moved"
    assert pair(h, MOE).kernels_moved_in_pair == 1
    # a 0.3 % e2e change is under the 0.5 % serving band
    step = h.steps[1]
    assert step.e2e_delta_pct == pytest.approx(0.3, abs=1e-6) and step.e2e_noise
    assert speedup_is_noise(1.0339) and not speedup_is_noise(1.035)
    assert speedup_is_noise(1 / 1.0339) and not speedup_is_noise(1 / 1.035)


def test_a_real_slowdown_is_a_regression(profile: Path) -> None:
    speed_up(profile / "round_1", ATTN, 1 / 1.10)
    p = pair(load_history(profile), ATTN, before=0)
    assert p.verdict == "regression" and p.measured_speedup == pytest.approx(1 / 1.10)


# --------------------------------------------------------------------------- movement


def test_artifact_entries_carry_movement_fields(profile: Path) -> None:
    for r in (0, 1, 2):
        assert main(["analyze", str(profile / f"round_{r}"), "--json"]) == 0
    art = read(profile / "round_2" / "profile_roofline.json")
    moe = next(e for e in art["entries"] if e["name"] == MOE)
    assert moe["t_ms_round0"] == pytest.approx(0.049471)
    assert moe["delta_t_pct_vs_round0"] == pytest.approx(-4.49, abs=0.01)
    assert moe["pct_gpu_time_round0"] == pytest.approx(23.8)
    assert moe["delta_pct_gpu_time_pts_vs_round0"] == pytest.approx(moe["pct_gpu_time"] - 23.8)
    assert moe["delta_pct_gpu_time_pts_vs_prev"] == pytest.approx(24.21 - 23.25)
    assert moe["t_ms_prev"] == pytest.approx(moe["t_ms"])
    assert moe["delta_t_pct_vs_prev"] == 0.0
    assert moe["baseline_round"] == 0 and moe["prev_round"] == 1
    assert "measured_speedup_vs_prev" not in moe  # did not move in round 2
    assert art["round_history"]["heads_left"] == [ATTN]
    pva = art["round_history"]["predicted_vs_actual"]
    assert [p["name"] for p in pva] == [ATTN]
    md = (profile / "round_2" / "profile_roofline.md").read_text()
    section = md.split("## Round-over-round movement", 1)[1].split("## Per-entry notes")[0]
    assert ATTN in section and "under_ceiling" in section and "left the head set" in section
    assert "tok/s" in section
    # round 0 is the baseline and says so
    art0 = read(profile / "round_0" / "profile_roofline.json")
    assert art0["movement"] == {"round": 0, "baseline_round": 0, "baseline_is_round0": True,
                                "later_rounds": [1, 2]}  # data, never pre-rendered markdown
    md0 = (profile / "round_0" / "profile_roofline.md").read_text()
    assert "Round `0` is the baseline (later rounds: `1`, `2`)." in md0
    assert "t_ms_round0" not in art0["entries"][0]


def test_single_round_gets_no_movement(tmp_path: Path, demo: Path) -> None:
    lone = tmp_path / "lone" / "round_0"
    shutil.copytree(demo / "profile" / "round_0", lone)
    result = analyze_round(lone)
    art, h = annotate_round(result.artifact, lone)
    assert h is None and art.movement is None


def test_appeared_and_vanished_kernels(profile: Path) -> None:
    path = profile / "round_1" / "profile_topN.json"
    topn = read(path)
    gone = "moe_align_block_size_kernel"
    new = dict(next(r for r in topn["top_kernels"] if r["name"] == gone))
    topn["top_kernels"] = [r for r in topn["top_kernels"] if r["name"] != gone]
    new.update(name="brand_new_fused_kernel", short_name="brand_new_fused_kernel")
    topn["top_kernels"].append(new)
    write(path, topn)
    step = load_history(profile).steps[0]
    assert step.appeared == ["brand_new_fused_kernel"]
    assert step.vanished == [gone]
    assert step.regime_changed == []


def test_a_kernel_that_changed_regime_is_not_compared(profile: Path) -> None:
    path = profile / "round_1" / "profile_topN.json"
    topn = read(path)
    row = next(r for r in topn["top_kernels"] if r["name"] == ATTN)
    # served in prefill only now, at a very different per-launch time
    row.update(served_regimes=["prefill"], phase="prefill",
               base_latency_ms={"prefill": 0.9}, calls_per_step={"prefill": 10.0},
               phase_calls_measured={"prefill": 240}, est_shape={"prefill": {"M": 8192}})
    write(path, topn)
    h = load_history(profile)
    step = h.steps[0]
    assert step.regime_changed == [f"{ATTN}: decode → prefill"]
    assert ATTN not in step.appeared and ATTN not in step.vanished
    assert all(p.name != ATTN for p in step.pairs)  # no cross-regime speedup
    s = kernel_series(h, ATTN, "decode")
    assert s is not None
    assert [p.present for p in s.points] == [True, False, True]
    assert (ATTN, "prefill") in kernel_keys(h)


def test_rounds_on_different_hardware_are_not_compared(demo: Path, profile: Path) -> None:
    env = read(demo / "env_report.json")
    env.update(gfx="gfx942", product="MI300X")
    write(profile / "round_1" / "env_report.json", env)
    shutil.copy(demo / "config.json", profile / "round_1" / "config.json")
    h = load_history(profile)
    for step in h.steps:  # 0 → 1 and 1 → 2 both cross the hardware change
        assert not step.comparable
        assert "different hardware" in (step.not_compared_reason or "")
        assert step.pairs == [] and step.movements == [] and step.e2e_delta_pct is None
    assert h.baseline_comparable["1"] and h.baseline_comparable["2"] is None
    rows = round_summary_rows(h)
    assert rows[1].comparable_with_prev is False and rows[1].delta_total_pct_vs_prev is None
    assert main(["analyze", str(profile / "round_1"), "--json"]) == 0
    art = read(profile / "round_1" / "profile_roofline.json")
    assert "gfx942" in art["movement"]["not_compared_with_prev"]
    md = (profile / "round_1" / "profile_roofline.md").read_text()
    assert any("not compared" in line and "gfx942" in line for line in md.splitlines())
    assert all("t_ms_round0" not in e and "t_ms_prev" not in e for e in art["entries"])


def test_rounds_with_a_different_workload_are_not_compared(demo: Path, profile: Path) -> None:
    env = read(demo / "env_report.json")
    env["workload"]["conc"] = 128
    write(profile / "round_2" / "env_report.json", env)
    shutil.copy(demo / "config.json", profile / "round_2" / "config.json")
    h = load_history(profile)
    assert h.steps[0].comparable
    assert not h.steps[1].comparable and "conc 64" in (h.steps[1].not_compared_reason or "")
    assert {p.name for p in h.pairs()} == {MOE}


def test_missing_round_0_uses_the_earliest_round(profile: Path) -> None:
    shutil.rmtree(profile / "round_0")
    h = load_history(profile)
    assert h.baseline == 1 and not h.baseline_is_round0
    assert any("round 0 is missing" in p for p in h.problems)
    assert {p.name for p in h.pairs()} == {ATTN}
    assert main(["analyze", str(profile / "round_2"), "--json"]) == 0
    art = read(profile / "round_2" / "profile_roofline.json")
    moe = next(e for e in art["entries"] if e["name"] == MOE)
    assert moe["baseline_round"] == 1 and moe["t_ms_baseline"] == pytest.approx(moe["t_ms"])
    assert "t_ms_round0" not in moe  # never pretend round 1 is round 0
    assert art["movement"]["baseline_is_round0"] is False
    md = (profile / "round_2" / "profile_roofline.md").read_text()
    assert "- round 0 is missing: the baseline is round `1`." in md


def test_round_without_inputs_is_skipped(profile: Path) -> None:
    (profile / "round_5").mkdir()
    h = load_history(profile)
    assert [r.label for r in h.rounds] == [0, 1, 2]
    assert any("round_5" in p and "skipped" in p for p in h.problems)


# --------------------------------------------------------------------------- inputs


def test_stored_artifact_is_the_prediction(profile: Path) -> None:
    r0 = profile / "round_0"
    assert main(["analyze", str(r0), "--json"]) == 0
    art = read(r0 / "profile_roofline.json")
    next(e for e in art["entries"] if e["name"] == MOE)["attainable_speedup"] = 1.5
    write(r0 / "profile_roofline.json", art)
    touch_later(r0 / "profile_roofline.json")
    h = load_history(profile)
    assert h.rounds[0].artifact_source == "file"
    assert pair(h, MOE).predicted_speedup == 1.5 and pair(h, MOE).verdict == "under_ceiling"
    # an artifact older than its Top-N is stale: re-analysed
    later = (r0 / "profile_roofline.json").stat().st_mtime + 100
    os.utime(r0 / "profile_topN.json", (later, later))
    h = load_history(profile)
    assert h.rounds[0].artifact_source == "analyzed"
    assert pair(h, MOE).predicted_speedup == pytest.approx(1.0217, abs=1e-3)


def test_serving_metrics_bases(profile: Path) -> None:
    # TPOT when throughput is missing on one side
    set_serving(profile / "round_0", tpot_ms=10.0)
    set_serving(profile / "round_1", tpot_ms=9.0, output_throughput_tok_s=10000.0)
    step = load_history(profile).steps[0]
    assert (step.e2e_basis or "").startswith("TPOT")
    assert step.e2e_delta_pct == pytest.approx((10.0 / 9.0 - 1) * 100)
    # no serving metrics at all: total GPU time from the Top-N (reduction, positive = faster)
    for r in (0, 1):
        (profile / f"round_{r}" / "serving_metrics.json").unlink()
    step = load_history(profile).steps[0]
    t0, t1 = (read(profile / f"round_{r}" / "profile_topN.json")["total_gpu_time_ms"]
              for r in (0, 1))
    assert (step.e2e_basis or "").startswith("total GPU time")
    assert step.e2e_delta_pct == pytest.approx((1 - t1 / t0) * 100)


def test_bad_serving_metrics_are_reported_not_fatal(profile: Path) -> None:
    (profile / "round_1" / "serving_metrics.json").write_text('{"output_throughput_tok_s": -3}')
    sm, problems = load_serving_metrics(profile / "round_1")
    assert sm is None and any("must be > 0" in p for p in problems)
    (profile / "round_2" / "serving_metrics.json").write_text("{not json")
    h = load_history(profile)
    assert any("round_2" in p and "serving_metrics.json" in p for p in h.problems)
    assert (h.steps[0].e2e_basis or "").startswith("total GPU time")


# --------------------------------------------------------------------------- dashboard API


def test_summary_rows_and_kernel_series(profile: Path) -> None:
    h = load_history(profile)
    rows = round_summary_rows(h)
    assert [r.label for r in rows] == [0, 1, 2]
    assert [r.n_heads for r in rows] == [6, 6, 5]
    assert rows[0].e2e_delta_pct_vs_prev is None
    assert rows[1].e2e_noise is True and rows[2].e2e_noise is False
    assert rows[2].output_throughput_tok_s == 10402.0
    delta = rows[2].delta_total_pct_vs_prev
    assert delta is not None and delta < 0
    s = kernel_series(h, ATTN)
    assert s is not None
    assert s.regime == "decode" and s.op_class == "attn"
    assert [p.is_head for p in s.points] == [True, True, False]
    assert s.points[2].measured_speedup_vs_prev == pytest.approx(1.56, abs=1e-3)
    assert s.points[2].predicted_speedup_prev == pytest.approx(s.points[1].attainable_speedup)
    assert s.points[2].verdict == "under_ceiling"
    assert s.points[2].delta_t_pct_vs_baseline == pytest.approx((1 / 1.56 - 1) * 100, abs=0.01)
    assert s.sparkline_values()[0] == pytest.approx(0.141112)
    assert kernel_keys(h)[0] == (MOE, "decode")
    json.dumps([r.model_dump(mode="json") for r in rows])  # serialisable for the dashboard


# --------------------------------------------------------------------------- bounded history


def _many_rounds(profile: Path, n: int) -> None:
    """Rounds 3 .. n-1: copies of round 2 (same kernels, same times)."""
    for i in range(3, n):
        shutil.copytree(profile / "round_2", profile / f"round_{i}",
                        ignore=shutil.ignore_patterns("profile_roofline.*"))


def test_history_of_one_round_is_bounded(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 14 rounds, analysing round 13 loads the baseline and the 8 rounds 6..13, not all 14:
    1 + HISTORY_LIMIT loads, and the artifact says which rounds were left out."""
    from roofline_tui.core.rounds import snapshot
    from roofline_tui.core.rounds.annotate import HISTORY_LIMIT

    assert HISTORY_LIMIT == 8
    _many_rounds(profile, 14)
    loaded: list[str] = []
    real = snapshot.load_snapshot

    def counting(round_dir: Path, *args: Any, **kwargs: Any) -> Any:
        loaded.append(Path(round_dir).name)
        return real(round_dir, *args, **kwargs)

    monkeypatch.setattr("roofline_tui.core.rounds.compare.load_snapshot", counting)
    assert main(["analyze", str(profile / "round_13")]) == 0
    assert loaded == ["round_0"] + [f"round_{i}" for i in range(6, 14)]
    art = read(profile / "round_13" / "profile_roofline.json")
    ctx = art["round_history"]
    assert ctx["rounds"] == [0, 6, 7, 8, 9, 10, 11, 12, 13]
    assert ctx["prev_round"] == 12 and ctx["comparable_with_prev"] is True
    assert ctx["rounds_considered"].startswith("bounded history: 9 of 14 rounds compared")
    assert "not compared: 1, 2, 3 … 5" in ctx["rounds_considered"]
    moe = next(e for e in art["entries"] if e["name"] == MOE)
    assert moe["baseline_round"] == 0 and moe["prev_round"] == 12  # baseline still compared
    md = (profile / "round_13" / "profile_roofline.md").read_text()
    assert "- bounded history: 9 of 14 rounds compared" in md


def test_a_short_history_is_not_bounded(profile: Path) -> None:
    assert main(["analyze", str(profile / "round_2")]) == 0
    art = read(profile / "round_2" / "profile_roofline.json")
    assert art["round_history"]["rounds"] == [0, 1, 2]
    assert "rounds_considered" not in art["round_history"]


def test_the_gap_of_a_bounded_history_is_not_a_step(profile: Path) -> None:
    _many_rounds(profile, 12)
    h = load_history(profile, focus="round_11", limit=4)
    assert [r.label for r in h.rounds] == [0, 8, 9, 10, 11]
    assert h.left_out == [1, 2, 3, 4, 5, 6, 7]
    gap = h.steps[0]
    assert (gap.before, gap.after) == (0, 8) and not gap.comparable
    assert "not consecutive" in (gap.not_compared_reason or "") and gap.pairs == []
    assert all(s.comparable for s in h.steps[1:])
    # the baseline as focus: the first rounds, and the later ones listed as left out
    h0 = load_history(profile, focus="round_0", limit=4)
    assert [r.label for r in h0.rounds] == [0, 1, 2, 3] and h0.left_out == list(range(4, 12))


def test_a_current_stored_artifact_is_read_not_recomputed(profile: Path) -> None:
    """A sibling's stored artifact is used while no input of that round is newer than it; a
    counter file added later makes it stale (the round is analysed again, in memory)."""
    for r in (0, 1):
        assert main(["analyze", str(profile / f"round_{r}")]) == 0
    h = load_history(profile)
    assert [r.artifact_source for r in h.rounds] == ["file", "file", "analyzed"]
    counters = profile / "round_0" / "counters"
    counters.mkdir()
    (counters / "counter_collection.csv").write_text("Kernel_Name,Counter_Name,Counter_Value\n")
    touch_later(counters / "counter_collection.csv", 20)
    h = load_history(profile)
    assert h.rounds[0].artifact_source == "analyzed"
    assert any("older than counter_collection.csv" in p for p in h.problems)

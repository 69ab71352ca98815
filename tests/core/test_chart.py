"""The chart's geometry, on data: where points, roofs and ridges land, and what stays on screen."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys

import pytest

from roofline_tui.core.artifact import Artifact, Entry, PeaksInfo
from roofline_tui.core.chart import (
    HEADROOM_COLOURS,
    PAD_DECADES,
    ChartModel,
    build_chart,
    decade_label,
)
from roofline_tui.core.rounds.analysis import analyze_round
from tests.paths import DEMO, REPO_ROOT

REL = 1e-9


@pytest.fixture(scope="module")
def demo_artifact(tmp_path_factory: pytest.TempPathFactory) -> Artifact:
    """The bundled demo's round 0, analysed now by the engine (on a copy)."""
    dst = tmp_path_factory.mktemp("demo") / "demo"
    shutil.copytree(DEMO, dst, ignore=shutil.ignore_patterns("profile_roofline.*"))
    return analyze_round(dst / "profile" / "round_0").artifact


@pytest.fixture(scope="module")
def demo_chart(demo_artifact: Artifact) -> ChartModel:
    return build_chart(demo_artifact)


def _lg(v: float) -> float:
    return math.log10(v)


def test_every_modelled_head_is_a_point_at_its_ai_and_achieved_flops(
    demo_artifact: Artifact, demo_chart: ChartModel
) -> None:
    modelled = [e for e in demo_artifact.entries if e.modeled]
    assert len(modelled) >= 4
    assert {p.short_name for p in demo_chart.points} == {e.short_name for e in modelled}
    for e in modelled:
        p = demo_chart.point(e.short_name)
        assert p is not None
        assert e.flops_est is not None and e.bytes_est is not None and e.t_unit_ms is not None
        # the point is the kernel's own numbers: AI = FLOPs / bytes, y = FLOPs / time
        assert p.x == pytest.approx(e.flops_est / e.bytes_est, rel=1e-5)
        t_unit_s = e.t_unit_ms / 1000.0
        assert p.y == pytest.approx(e.flops_est / t_unit_s, rel=1e-5)
        assert p.x == pytest.approx(e.arithmetic_intensity, rel=REL)
        assert p.y == pytest.approx(e.achieved_flops, rel=REL)
        # and y / roof at x is the kernel's raw roofline fraction
        assert p.roof_y is not None
        assert p.y / p.roof_y == pytest.approx(e.roofline_pct_raw, rel=1e-5)


def test_points_are_labelled_by_their_gpu_time_rank(
    demo_artifact: Artifact, demo_chart: ChartModel
) -> None:
    for p in demo_chart.points:
        assert p.rank == demo_artifact.ranking_by_pct.index(p.short_name) + 1
        assert p.label == str(p.rank)
    ranks = [p.rank for p in demo_chart.points] + [n.rank for n in demo_chart.not_plotted]
    assert sorted(ranks) == list(range(1, len(demo_artifact.entries) + 1))


def test_memory_and_compute_roofs_meet_at_each_ridge(
    demo_artifact: Artifact, demo_chart: ChartModel
) -> None:
    bw = demo_artifact.peaks.hbm_bw_bytes_s
    mem = demo_chart.roof("memory")
    assert mem is not None and bw is not None
    # the memory roof is peak_bw × AI at every vertex (slope 1 in log-log)
    for x, y in zip(mem.xs, mem.ys, strict=True):
        assert y == pytest.approx(bw * x, rel=REL)
    assert {r.dtype for r in demo_chart.ridges} == {"bf16", "fp8"}
    for ridge in demo_chart.ridges:
        peak = demo_artifact.peaks.flops[ridge.dtype]
        assert ridge.x == pytest.approx(peak / bw, rel=REL)
        assert ridge.y == pytest.approx(peak, rel=REL)
        assert bw * ridge.x == pytest.approx(ridge.y, rel=REL)  # memory roof reaches the peak
        compute = demo_chart.roof("compute", ridge.dtype)
        assert compute is not None
        assert (compute.xs[0], compute.ys[0]) == pytest.approx((ridge.x, ridge.y), rel=REL)
        assert all(y == pytest.approx(peak, rel=REL) for y in compute.ys)  # flat
        assert compute.xs[-1] == pytest.approx(demo_chart.x_axis.max, rel=REL)
        # the engine's own ridge_point for heads measured against this dtype agrees
        for e in demo_artifact.entries:
            if e.peak_flops_dtype == ridge.dtype:
                assert e.ridge_point == pytest.approx(ridge.x, rel=1e-5)
    # the memory roof ends on the highest ridge
    top = max(demo_chart.ridges, key=lambda r: r.y)
    assert (mem.xs[-1], mem.ys[-1]) == pytest.approx((top.x, top.y), rel=REL)


def test_ranges_hold_every_point_ridge_and_roof_with_margin(demo_chart: ChartModel) -> None:
    xa, ya = demo_chart.x_axis, demo_chart.y_axis
    for p in demo_chart.points:
        assert xa.lo + PAD_DECADES <= _lg(p.x) + 1e-9 <= xa.hi - PAD_DECADES + 2e-9
        assert ya.lo + PAD_DECADES <= _lg(p.y) + 1e-9 <= ya.hi - PAD_DECADES + 2e-9
    for r in demo_chart.ridges:
        assert xa.contains(r.x) and ya.contains(r.y)
        assert _lg(r.y) <= ya.hi - PAD_DECADES + 1e-9
    assert demo_chart.roofs
    for roof in demo_chart.roofs:
        assert len(roof.xs) >= 2, roof.label
        assert all(xa.contains(x) for x in roof.xs), roof.label
        assert all(ya.contains(y) for y in roof.ys), roof.label
    # decades, snapped to half decades
    for v in (xa.lo, xa.hi, ya.lo, ya.hi):
        assert (v * 2) == pytest.approx(round(v * 2))


def test_suspect_is_drawn_at_its_raw_infeasible_position(
    demo_artifact: Artifact, demo_chart: ChartModel
) -> None:
    suspects = [e for e in demo_artifact.entries if e.suspect]
    assert suspects, "the demo keeps a suspect copy kernel among the heads"
    for e in suspects:
        p = demo_chart.point(e.short_name)
        assert p is not None and p.marker == "suspect" and p.suspect
        raw = e.roofline_pct_raw
        assert raw is not None and raw > 1.0
        assert p.roof_y is not None and p.y > p.roof_y  # above the roof, not clamped onto it
        assert p.y == pytest.approx(raw * p.roof_y, rel=1e-5)
        assert e.roofline_pct == 1.0  # the artifact clamps; the chart does not
    assert all(p.marker == "point" for p in demo_chart.points if not p.suspect)


def test_unmodelled_heads_are_listed_with_their_reason(
    demo_artifact: Artifact, demo_chart: ChartModel
) -> None:
    unmodelled = [e for e in demo_artifact.entries if not e.modeled]
    assert unmodelled
    listed = {n.short_name: n.reason for n in demo_chart.not_plotted}
    for e in unmodelled:
        assert listed[e.short_name].startswith("not modelled")
        degraded = next(d.reason for d in demo_artifact.degraded if d.name == e.name)
        assert degraded in listed[e.short_name]


def test_colour_follows_headroom_class_and_size_follows_gpu_time(
    demo_chart: ChartModel,
) -> None:
    for p in demo_chart.points:
        assert p.colour == HEADROOM_COLOURS[p.headroom_class]
    by_pct = sorted(demo_chart.points, key=lambda p: p.pct_gpu_time or 0)
    assert [p.size for p in by_pct] == sorted(p.size for p in by_pct)
    assert by_pct[-1].size_band == 3 and by_pct[0].size_band == 1  # 23.8 % vs 5.5 %


def test_target_roofs_are_dashed_scaled_copies_for_their_heads(
    demo_chart: ChartModel,
) -> None:
    targets = [r for r in demo_chart.roofs if r.kind == "target"]
    assert targets and all(r.dashed for r in targets)
    covered = {n for r in targets for n in r.applies_to}
    assert covered == {p.short_name for p in demo_chart.points if p.target_eff}
    for r in targets:
        for name in r.applies_to:
            p = demo_chart.point(name)
            assert p is not None and p.target_eff == r.scale
        for x, y in zip(r.xs, r.ys, strict=True):
            roof = demo_chart.attainable(x, r.dtype)
            assert roof is not None
            assert y == pytest.approx(r.scale * roof, rel=REL)


# ---- synthetic artifacts ----------------------------------------------------------------------

def _entry(short: str, ai: float | None, flops_s: float | None, dtype: str | None = "bf16",
           **kw: object) -> Entry:
    data: dict[str, object] = dict(
        name=short, short_name=short, modeled=True, pct_gpu_time=10.0,
        arithmetic_intensity=ai, achieved_flops=flops_s, headroom_class="moderate",
        target_eff=0.8, peak_flops_dtype=dtype, compute_dtype=dtype,
    )
    data.update(kw)
    return Entry(**data)


PEAKS = PeaksInfo(hbm_bw_bytes_s=4.0e12,
                  flops={"fp32": 1e14, "bf16": 1e15, "fp8": 2e15, "fp4": 4e15})


def test_only_the_dtypes_in_play_get_a_compute_roof() -> None:
    a = Artifact(peaks=PEAKS, entries=[_entry("a", 2.0, 4e12, "fp4"), _entry("b", 50.0, 1e14)],
                 ranking_by_pct=["a", "b"])
    m = build_chart(a)
    assert {r.dtype for r in m.roofs if r.kind == "compute"} == {"fp4", "bf16"}
    assert {r.dtype for r in m.ridges} == {"fp4", "bf16"}
    fp4 = next(r for r in m.ridges if r.dtype == "fp4")
    assert fp4.x == pytest.approx(1000.0)  # 4e15 / 4e12
    mem = m.roof("memory")
    assert mem is not None and mem.xs[-1] == pytest.approx(1000.0)


def test_far_flung_points_widen_the_axes() -> None:
    a = Artifact(peaks=PEAKS, entries=[_entry("tiny", 1e-3, 2e6), _entry("huge", 1e5, 9e14)],
                 ranking_by_pct=["tiny", "huge"])
    m = build_chart(a)
    assert m.x_axis.lo <= -3 - PAD_DECADES and m.x_axis.hi >= 5 + PAD_DECADES
    assert m.y_axis.lo <= _lg(2e6) - PAD_DECADES
    for roof in m.roofs:
        assert all(m.x_axis.contains(x) for x in roof.xs)
        assert all(m.y_axis.contains(y) for y in roof.ys)


def test_entries_that_cannot_sit_on_log_axes_are_not_plotted() -> None:
    a = Artifact(
        peaks=PEAKS,
        entries=[
            _entry("ok", 4.0, 1e13),
            _entry("zero_flops", None, None),
            _entry("no_time", 3.0, None, achieved_bw_bytes_s=None),
            _entry("bad", 3.0, float("nan")),
            Entry(name="um", short_name="um", modeled=False),
        ],
        ranking_by_pct=["ok", "zero_flops", "no_time", "bad", "um"],
    )
    m = build_chart(a)
    assert [p.short_name for p in m.points] == ["ok"]
    reasons = {n.short_name: n.reason for n in m.not_plotted}
    assert "arithmetic intensity" in reasons["zero_flops"]
    assert "achieved FLOP/s" in reasons["no_time"]
    assert "achieved FLOP/s" in reasons["bad"]
    assert reasons["um"] == "not modelled"


def test_without_peak_bandwidth_points_still_land_and_no_memory_roof_is_drawn() -> None:
    a = Artifact(peaks=PeaksInfo(hbm_bw_bytes_s=None, flops={}),
                 entries=[_entry("k", 8.0, 5e12, None, target_eff=None)], ranking_by_pct=["k"])
    m = build_chart(a)
    assert m.roofs == () and m.ridges == ()
    assert m.point("k") is not None and m.point("k").x == 8.0  # type: ignore[union-attr]
    assert any("bandwidth" in n for n in m.notes)
    assert m.x_axis.contains(8.0) and m.y_axis.contains(5e12)


def test_empty_artifact_gives_default_axes() -> None:
    m = build_chart(Artifact())
    assert m.points == () and m.x_axis.hi > m.x_axis.lo and m.y_axis.hi > m.y_axis.lo


def test_decade_labels_are_human() -> None:
    assert [decade_label(d) for d in (-2, -1, 0, 1, 2, 3, 4)] == [
        "0.01", "0.1", "1", "10", "100", "1k", "10k"]
    assert [decade_label(d) for d in (12, 13, 15, 16)] == ["1T", "10T", "1P", "10P"]


def test_geometry_module_imports_no_drawing_library() -> None:
    code = ("import sys, roofline_tui.core.chart; "
            "bad = [m for m in ('textual', 'matplotlib', 'plotext') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT)
    assert res.returncode == 0, res.stdout + res.stderr

"""The run's own evidence (core.evidence): the best trustworthy rate per axis, and best / this.

Entries are built by hand; every figure below is arithmetic on the numbers written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.artifact import Entry, InstanceRow
from roofline_tui.core.evidence import annotate, raised_roofs
from tests.core.helpers import entry, run
from tests.paths import MEASURED_FIXTURES


def _gemm(name: str, flops_s: float, **kw: Any) -> Entry:
    base: dict[str, Any] = dict(name=name, short_name=name, op_class="gemm", modeled=True,
                                compute_dtype="bf16", roof_axis="compute", t_unit_ms=1.0,
                                achieved_flops=flops_s, achieved_bw_bytes_s=1e12,
                                confidence="medium", attainable_speedup=2.0)
    base.update(kw)
    return Entry(**base)


def test_the_best_gemm_is_every_gemms_evidence() -> None:
    """Three bf16 GEMMs at 629, 457 and 300 TFLOP/s: the best is 629, so the second shows
    629/457 = 1.376× demonstrated and the third 629/300 = 2.097×; the best itself 1×."""
    a, b, c = _gemm("a", 629e12), _gemm("b", 457e12), _gemm("c", 300e12)
    annotate([a, b, c])
    assert a.demonstrated is not None and a.demonstrated.demonstrated_speedup == 1.0
    assert b.demonstrated is not None
    assert b.demonstrated.demonstrated_speedup == pytest.approx(629 / 457)
    assert c.demonstrated is not None
    assert c.demonstrated.demonstrated_speedup == pytest.approx(629 / 300)
    assert c.demonstrated.by == "a" and "629" in c.demonstrated.note


def test_suspect_and_dispatch_bound_entries_are_no_evidence() -> None:
    """A suspect 2,000 TFLOP/s (its model over-counts) and a dispatch-bound one prove nothing:
    the best usable rate is 400."""
    good = _gemm("good", 400e12)
    annotate([good, _gemm("sus", 2000e12, suspect=True),
              _gemm("tiny", 900e12, dispatch_bound=True)])
    assert good.demonstrated is not None and good.demonstrated.demonstrated_speedup == 1.0


def test_an_instance_can_be_the_best() -> None:
    """The entry's folded rate is 300 TFLOP/s, but one of its instances did 3.2e9 FLOPs in
    5 µs = 640 TFLOP/s: that instance is the evidence for its own entry (640/300 = 2.13×)."""
    e = _gemm("multi", 300e12, instances=[InstanceRow(op="aten::mm", shapes="[32,4096]",
                                                        calls=10, t_ms=0.005,
                                                        flops_est=3.2e9, bytes_est=1e6)])
    annotate([e])
    assert e.demonstrated is not None
    assert e.demonstrated.demonstrated_speedup == pytest.approx(640 / 300)
    assert "aten::mm" in e.demonstrated.by


def test_other_classes_and_dtypes_are_not_compared_on_the_compute_axis() -> None:
    """An fp8 GEMM's rate says nothing about a bf16 GEMM's ceiling, nor a GEMM's about an
    attention kernel's."""
    bf16 = _gemm("bf16", 300e12)
    annotate([bf16, _gemm("fp8", 900e12, compute_dtype="fp8"),
              _gemm("attn", 800e12, op_class="attn")])
    assert bf16.demonstrated is not None and bf16.demonstrated.demonstrated_speedup == 1.0


def test_the_memory_axis_is_one_across_classes() -> None:
    """Bandwidth is one roof: a 4 TB/s copy is evidence for a 2 TB/s MoE (2.0×)."""
    moe = Entry(name="moe", short_name="moe", op_class="moe", modeled=True, roof_axis="memory",
                t_unit_ms=0.1, achieved_bw_bytes_s=2e12, attainable_speedup=1.1)
    copy = Entry(name="copy", short_name="copy", op_class="elementwise", modeled=True,
                 roof_axis="memory", t_unit_ms=0.1, achieved_bw_bytes_s=4e12)
    annotate([moe, copy])
    assert moe.demonstrated is not None and moe.demonstrated.demonstrated_speedup == 2.0


def test_a_data_sheet_promise_far_beyond_the_demonstration_lowers_confidence() -> None:
    """Roof promise 2.6× on a data-sheet roof, the run demonstrates 629/600 = 1.05×: 2.6 >
    1.5 × 1.05, so the confidence drops one step (medium → low) and the note says why. The same
    promise on a measured roof keeps its confidence."""
    best, e = _gemm("best", 629e12), _gemm("far", 600e12, attainable_speedup=2.6)
    annotate([best, e], datasheet_roof=lambda entry: True)
    assert e.demonstrated is not None and e.demonstrated.roof_doubted
    assert e.confidence == "low" and "data-sheet" in e.demonstrated.note
    best2, e2 = _gemm("best", 629e12), _gemm("far", 600e12, attainable_speedup=2.6)
    annotate([best2, e2], datasheet_roof=lambda entry: False)
    assert e2.confidence == "medium" and e2.demonstrated is not None
    assert not e2.demonstrated.roof_doubted


# --------------------------------------------------------------------------- a ceiling beaten

H100_BF16 = {"bf16": (794.5e12, 989.4e12)}  # H100 SXM5: MAMF measured ceiling, data sheet


def test_a_rate_above_the_measured_ceiling_raises_it() -> None:
    """H100 bf16: ceiling 794.5, data sheet 989.4 TFLOP/s, noise band 3.4 % (821.5 TFLOP/s).

    826.28 TFLOP/s (1.04 × 794.5) is beyond the band and below the data sheet: raised to it.
    A 2,000 TFLOP/s entry (above the data sheet: its model over-counts), a 810 one (1.9 % above:
    noise, the roof already takes that rate as the ceiling), a memory-axis entry and an fp8 one
    raise nothing."""
    big = _gemm("big", 1.04 * 794.5e12, suspect=True)
    raised = raised_roofs([big, _gemm("over", 2000e12, suspect=True), _gemm("noise", 810e12),
                           _gemm("mem", 900e12, roof_axis="memory"),
                           _gemm("fp8", 900e12, compute_dtype="fp8")], H100_BF16, 0.034)
    assert set(raised) == {"bf16"}
    r = raised["bf16"]
    assert r.rate == pytest.approx(826.28e12) and r.by == "big"
    note = r.note()
    assert "794.5 TFLOP/s" in note and "826.3 TFLOP/s" in note and "1.04×" in note
    assert "989.4 TFLOP/s data sheet" in note and "confidence lowered one step" in note
    assert raised_roofs([_gemm("dispatch", 826e12, dispatch_bound=True)], H100_BF16, 0.034) == {}


_CUTLASS = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_"
            "tn_align8>(T1::Params)")
_NVJET = "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT"


def _h100_round(tmp_path: Path, cutlass_us: float, nvjet_us: float) -> Path:
    """An H100 SXM round: the cutlass GEMM counted by ncu (stage C: 2·4096³ FLOP, ~134 MB per
    launch) and an nvjet GEMM 4096×14336 @ 14336×4096 bf16 modelled from its shapes."""
    rd = tmp_path / "eval" / "profile" / "round_0"
    (rd / "counters").mkdir(parents=True)
    (tmp_path / "eval" / "env_report.json").write_text(
        json.dumps({"gfx": "sm_90", "product": "H100"}))
    (rd / "profile_topN.json").write_text(json.dumps({"top_kernels": [
        {"name": _CUTLASS, "pct_gpu_time": 40.0, "avg_us": cutlass_us, "calls": 2,
         "shapes": [[[4096, 4096], [4096, 4096]]], "dtypes": ["c10::BFloat16"] * 2,
         "classification": "library_gemm", "editable": False},
        {"name": _NVJET, "pct_gpu_time": 30.0, "avg_us": nvjet_us, "calls": 2,
         "shapes": [[[4096, 14336], [14336, 4096]]], "dtypes": ["c10::BFloat16"] * 2,
         "classification": "library_gemm", "editable": True}]}))
    # the fixture was collected on an A100 (CC 8.0): as counters of this H100 round they
    # must say so, or the join withholds them (another arch's counters are never applied)
    csv = (MEASURED_FIXTURES / "counters" / "ncu_gemm_details.csv").read_text()
    (rd / "counters" / "ncu_gemm_details.csv").write_text(csv.replace('"8.0"', '"9.0"'))
    return rd


def test_a_gemm_that_beats_the_h100_ceiling_raises_the_run_roof(tmp_path: Path) -> None:
    """H100 SXM bf16 (measured ceiling 794.5 TFLOP/s, data sheet 989.4).

    The counted cutlass GEMM does 2·4096³ = 137.44 GFLOP in 166.34 µs = 826.28 TFLOP/s, 1.04×
    the ceiling. Before: 1.04 > 1 + 3.4 % noise, so "suspect" and no verdict. Now the run's
    compute roof is 826.28 TFLOP/s: the GEMM is at 1.0 of it, saturated, and its stage-C
    confidence drops one step (high → medium), saying why.
    The nvjet GEMM, 2·4096·14336·4096 = 481.04 GFLOP in 740.06 µs = 650.0 TFLOP/s, was
    650/794.5 = 0.818 of the ceiling (saturated: ≥ 0.9·0.90 = 0.81); on the raised roof it is
    650/826.28 = 0.7867, moderate, attainable 0.90/0.7867 = 1.144×, gain 30·(1 − 1/1.144)
    = 3.78 %."""
    cutlass_us = 2 * 4096**3 / (1.04 * 794.5e12) * 1e6
    nvjet_us = 2 * 4096 * 14336 * 4096 / 650e12 * 1e6
    art = run(_h100_round(tmp_path, cutlass_us, nvjet_us))
    big, other = entry(art, "Kernel2"), entry(art, _NVJET)
    assert big.stage == "C" and big.roof_axis == "compute"
    assert not big.suspect and big.has_verdict
    assert big.roofline_pct == pytest.approx(1.0, abs=1e-3)
    assert big.headroom_class == "saturated" and big.confidence == "medium"
    assert ("raised from the measured bf16 ceiling (794.5 TFLOP/s) to 826.3 TFLOP/s, the rate "
            "this run demonstrated (Kernel2, 1.04× the ceiling" in (big.notes or ""))
    assert other.roofline_pct == pytest.approx(650 / 826.28, abs=2e-4)
    assert other.headroom_class == "moderate"
    assert other.attainable_speedup == pytest.approx(0.90 / (650 / 826.28), rel=1e-3)
    assert other.expected_e2e_gain_pct == pytest.approx(3.78, abs=0.01)
    assert "raised from the measured bf16 ceiling" in (other.notes or "")

"""The run's own evidence (core.evidence): the best trustworthy rate per axis, and best / this.

Entries are built by hand; every figure below is arithmetic on the numbers written here."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.artifact import Entry, InstanceRow
from roofline_tui.core.evidence import annotate


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

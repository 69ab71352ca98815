"""Stage-C refinement details (issue 12 item 10): reads-only counters, corroborating counters."""

from __future__ import annotations

import pytest

from roofline_tui.core.measured import KernelMeasurement
from roofline_tui.core.refine import KernelRefinement, corroborate


def _m(**kw) -> KernelMeasurement:
    base = dict(kernel="k", dispatches=4, bytes_per_dispatch=None, flops_per_dispatch=None,
                flops_dtype=None, duration_s=None, source="rocprofv3-csv", path="/x/c.csv")
    base.update(kw)
    return KernelMeasurement(**base)


def test_fetch_size_without_write_size_gives_reads_only_bytes() -> None:
    """FETCH_SIZE 81,920 KiB per dispatch → 83,886,080 B read; a logical unit of 2 launches
    reads 167,772,160 B. Basis "reads only", confidence medium (not high): the writes are
    missing, so the bytes are a lower bound."""
    m = _m(read_bytes_per_dispatch=81920 * 1024.0, missing=["WRITE_SIZE"])
    r = KernelRefinement(measurement=m)
    assert r.stage == "C"
    axes = r.measured(2, model_bytes=170e6)
    assert axes.bytes_unit == 2 * 81920 * 1024
    assert axes.bytes_basis == "reads only"
    assert axes.basis == "mixed"
    assert any("reads only" in n and "lower bound" in n for n in axes.notes)
    assert r.confidence("memory") == "medium"


def test_both_counters_keep_high_confidence() -> None:
    m = _m(bytes_per_dispatch=100e6, read_bytes_per_dispatch=80e6, write_bytes_per_dispatch=20e6)
    r = KernelRefinement(measurement=m)
    assert r.measured(1, 100e6).bytes_basis == "reads+writes"
    assert r.confidence("memory") == "high"


@pytest.mark.parametrize(("bound", "counters", "verdicts"), [
    ("memory", {"DramThroughputPct": 85.0}, {"DramThroughputPct": "supports"}),
    ("memory", {"DramThroughputPct": 12.0, "SmThroughputPct": 75.0},
     {"DramThroughputPct": "contradicts", "SmThroughputPct": "contradicts"}),
    ("compute", {"MfmaUtil": 72.0}, {"MfmaUtil": "supports"}),
    ("compute", {"MfmaUtil": 9.0}, {"MfmaUtil": "contradicts"}),
    ("latency", {"MemUnitStalled": 20.0, "MfmaUtil": 5.0, "OccupancyPercent": 18.0},
     {"MemUnitStalled": "supports", "MfmaUtil": "supports", "OccupancyPercent": "neutral"}),
    ("latency", {"DramThroughputPct": 90.0}, {"DramThroughputPct": "contradicts"}),
])
def test_corroborating_counters(bound, counters, verdicts) -> None:
    """Thresholds: a unit at ≥ 60 % (the spec's util threshold) can bind; < 30 % cannot."""
    got = {c.counter: c.verdict for c in corroborate(bound, counters)}
    assert got == verdicts
    for c in corroborate(bound, counters):
        assert c.counter in c.explanation and f"{c.value:.0f}%" in c.explanation

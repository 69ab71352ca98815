"""Launch floor, model caution and raw-ratio bands (issue 12 items 5 and 10)."""

from __future__ import annotations

import pytest

from roofline_tui.core import metrics as M


def test_launch_floor_caps_a_small_gemm() -> None:
    """GEMM [64,1024]×[1024,1024] bf16 on MI300X in 17.6 µs:
    bytes = 64·1024·2 + 1024·1024·2 + 64·1024·2 = 2,359,296 B → 134.05 GB/s = 0.02529 of
    5.3 TB/s; AI = 2·64·1024·1024 / 2,359,296 = 56.9 < ridge 247 → memory roof.
    target/roofline = 0.90 / 0.02529 = 35.58×, but one launch cannot beat the 5 µs launch
    overhead: 17.6 / 5 = 3.52×. The smaller bound applies."""
    pct = 2_359_296 / 17.6e-6 / 5.3e12
    assert pct == pytest.approx(0.02529, abs=1e-5)
    s = M.bounded_speedup(0.90, pct, 17.6e-6)
    assert s.roofline_formula == pytest.approx(35.58, abs=0.01)
    assert s.value == pytest.approx(3.52)
    assert s.basis.startswith("launch floor")
    assert "3.52×" in s.note and "35.58×" in s.note
    assert not s.model_caution


def test_roofline_bound_applies_when_it_is_the_smaller() -> None:
    """0.90 / 0.30 = 3.0× against a 200 µs launch's floor of 40×: the roofline bound."""
    s = M.bounded_speedup(0.90, 0.30, 200e-6)
    assert (s.value, s.basis) == (pytest.approx(3.0), "target_eff/roofline_pct")
    assert s.launch_floor == pytest.approx(40.0)


def test_model_caution_above_ten() -> None:
    """0.90 / 0.05 = 18× with a 500 µs launch (floor 100×): still 18× → model_caution."""
    s = M.bounded_speedup(0.90, 0.05, 500e-6)
    assert s.value == pytest.approx(18.0) and s.model_caution
    assert "18.0× is above 10×" in s.model_caution and "Model caution" in s.note
    assert not M.bounded_speedup(0.90, 0.09, 500e-6).model_caution  # exactly 10× is not above


def test_bands_use_the_raw_ratio() -> None:
    """Saturated needs pct ≥ 0.9 × 0.90 = 0.81. 0.809962 is moderate although it rounds to
    0.81 (which would read saturated)."""
    assert M.headroom_band(0.809962, 0.90) == "moderate"
    assert M.headroom_band(round(0.809962, 4), 0.90) == "saturated"
    assert M.headroom_band(0.81, 0.90) == "saturated"

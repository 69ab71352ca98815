"""The steady-state step window (importers.step_window): the automatic rule on hand-built step
GPU times, and --steps / --skip-warmup."""

from __future__ import annotations

import pytest

from roofline_tui.importers.step_window import (
    BAND,
    StepRequest,
    StepWindowError,
    kept_steps,
    parse_steps,
)


def test_band_is_a_quarter() -> None:
    assert BAND == 0.25


def test_warmup_slow_steps_dropped() -> None:
    """Times 300, 300, 100, 102, 98, 101, 100, 99 µs: median of the 8 = (100+101)/2 = 100.5;
    band 75.375..125.625: steps 0 and 1 (300) are out, 2..7 are in -> keep [2, 8)."""
    w = kept_steps([300, 300, 100, 102, 98, 101, 100, 99])
    assert (w.start, w.stop, w.how, w.dropped) == (2, 8, "auto", 2)


def test_trailing_partial_step_dropped() -> None:
    """Times 100 x5 then 30 (the profile stopped mid-step): median 100, 30 < 75 -> [0, 5)."""
    w = kept_steps([100, 100, 100, 100, 100, 30])
    assert (w.start, w.stop, w.kept) == (0, 5, 5)


def test_all_within_band_kept() -> None:
    """Times 90, 110, 100, 124, 80: median 100, band 75..125: every step in -> [0, 5)."""
    w = kept_steps([90, 110, 100, 124, 80])
    assert (w.start, w.stop, w.dropped) == (0, 5, 0)


def test_tie_keeps_all() -> None:
    """Times 100, 100, 100, 500, 100, 100, 100: median 100; runs [0,3) and [4,7) tie at 3.
    Two equal runs split by a step hold at most (n-1)/2 each, under half of n: no steady
    window, all 7 kept and said so. One more steady step (100 x3, 500, 100 x4): the later run
    [4,8) is the longest, 4 of 8 = half -> kept."""
    w = kept_steps([100, 100, 100, 500, 100, 100, 100])
    assert (w.start, w.stop) == (0, 7) and "no steady window" in w.reason
    w = kept_steps([100, 100, 100, 500, 100, 100, 100, 100])
    assert (w.start, w.stop) == (4, 8)


def test_regimes_compared_to_their_own_median() -> None:
    """Prefill 1000 and decode 100 alternate: each within its regime's median -> all kept;
    with one regime for all, median (100+1000)/2 = 550 would put every step out."""
    times = [1000, 100, 1000, 100, 1000, 100]
    w = kept_steps(times, regimes=[0, 1, 0, 1, 0, 1])
    assert (w.start, w.stop) == (0, 6)
    assert kept_steps(times).kept == 6 and "no steady window" in kept_steps(times).reason


def test_too_few_steps_all_kept() -> None:
    """Two steps, 300 and 100: under 3, nothing to compare with: both kept."""
    w = kept_steps([300, 100])
    assert (w.start, w.stop) == (0, 2)


@pytest.mark.parametrize(("text", "start", "stop"), [("2:5", 2, 5), ("2:", 2, None),
                                                     (":3", None, 3), (":", None, None)])
def test_parse_steps(text: str, start: int | None, stop: int | None) -> None:
    r = parse_steps(text)
    assert (r.start, r.stop, r.sliced) == (start, stop, True)


@pytest.mark.parametrize("text", ["2", "a:3", "-1:3", "5:5", "5:2", "1:2:3", "٣:5"])
def test_parse_steps_errors(text: str) -> None:
    with pytest.raises(StepWindowError) as exc:
        parse_steps(text)
    assert "\n" not in str(exc.value)


def test_steps_slice_like_python() -> None:
    """8 steps; --steps 2:5 keeps 2, 3, 4 (= list(range(8))[2:5]); 3: keeps 3..7."""
    times = [100.0] * 8
    w = kept_steps(times, parse_steps("2:5"))
    assert list(range(8))[2:5] == [k for k in range(8) if w.keeps(k)]
    assert (w.how, w.dropped) == ("--steps", 5)
    assert kept_steps(times, parse_steps("3:")).kept == 5


def test_steps_out_of_range() -> None:
    with pytest.raises(StepWindowError, match="records 8 step"):
        kept_steps([100.0] * 8, parse_steps("2:9"))
    with pytest.raises(StepWindowError, match="records 8 step"):
        kept_steps([100.0] * 8, parse_steps("8:"))


def test_skip_warmup_replaces_auto() -> None:
    """--skip-warmup 1 on 300, 300, 100 x4: drops only step 0 (the auto rule would drop 2)."""
    times = [300, 300, 100, 100, 100, 100]
    w = kept_steps(times, StepRequest(skip_warmup=1))
    assert (w.start, w.stop, w.how) == (1, 6, "--skip-warmup")
    with pytest.raises(StepWindowError, match="keep none"):
        kept_steps(times, StepRequest(skip_warmup=6))

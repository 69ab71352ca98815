"""The one coercer and the one formatter: what a user sees for each kind of value."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from roofline_tui.core import units
from roofline_tui.core.coerce import coerce_number, integer, number


def test_si_three_significant_digits_with_prefixes() -> None:
    assert units.si(2.62e5, "FLOP") == "262 kFLOP"
    assert units.si(119.301, "FLOP/B") == "119 FLOP/B"
    assert units.nbytes(791_000_000) == "791 MB"
    assert units.nbytes(1_191_300_000) == "1.19 GB"
    assert units.rate(8e12, "B/s") == "8 TB/s"
    assert units.si(999.7, "B") == "1 kB"  # rounding carries into the next prefix
    assert units.si(0.25, "FLOP/B") == "0.25 FLOP/B"  # no milli-FLOP/B
    assert units.si(None, "B") == units.DASH


def test_times_read_the_same_everywhere() -> None:
    assert units.millis(41140.0) == "41.1 s"
    assert units.millis(0.0176) == "17.6 µs"
    assert units.seconds(0.0411) == "41.1 ms"
    assert units.millis(float("nan")) == units.DASH


def test_ratios_and_percentages() -> None:
    assert units.pct(0.881) == "88%"
    assert units.pct(0.881, 1) == "88.1%"
    assert units.pct_points(23.8) == "23.80%"
    assert units.ratio(2.8) == "2.80×"


def test_coercer_accepts_profiler_spellings() -> None:
    assert number("1,234") == 1234.0
    assert number("27.595.520") == 27_595_520.0
    assert number("1.234,5") == 1234.5
    assert number("8.0e12") == 8e12
    assert number("1_000") == 1000.0
    assert number(7) == 7.0
    assert integer("12.6") == 13


def test_coercer_refuses_with_a_reason() -> None:
    huge = int("9" * 400)
    c = coerce_number(huge)
    assert c.value is None and "400-digit integer is too large" in (c.problem or "")
    assert coerce_number(True).problem == "True is a boolean, not a number"
    assert "not finite" in (coerce_number(float("inf")).problem or "")
    assert "not a number" in (coerce_number("n/a").problem or "")
    assert coerce_number(-1, nonneg=True).problem == "-1 is negative"
    assert coerce_number(0, positive=True).problem == "0 is not positive"
    assert number("5", text=False) is None
    assert number("1" * 500) is None  # long digit strings refused before int() parsing


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=80),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(), st.integers())))
def test_coercer_never_raises_and_returns_finite(value: object) -> None:
    c = coerce_number(value)
    assert (c.value is None) != (c.problem is None)
    if c.value is not None:
        assert math.isfinite(c.value)


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e25, max_value=1e25))
def test_si_never_shows_an_exponent(value: float) -> None:
    out = units.si(value, "B")
    assert "e+" not in out and "e-" not in out


@given(st.one_of(st.integers(min_value=-(10**40), max_value=10**40), st.floats(), st.booleans()),
       st.booleans(), st.booleans())
def test_number_fast_path_agrees_with_the_coercer(value: object, positive: bool,
                                                  nonneg: bool) -> None:
    # number() decides plain ints and floats without building a reason: same answer either way
    assert number(value, positive=positive, nonneg=nonneg) == \
        coerce_number(value, positive=positive, nonneg=nonneg).value

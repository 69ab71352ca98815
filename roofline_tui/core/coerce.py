"""The one number coercer: every number that comes from a file passes through here once.

A value from a file is hostile until it has been through :func:`coerce_number`. Nothing here
raises: a value that is not a usable number comes back as ``None`` together with a one-line
reason the caller can record as a problem (degradation ladder, spec §6).

Accepted: ints (of any size that fits in a float below :data:`MAX_ABS`), finite floats, and
numeric text in the spellings profilers print (``"1,234"``, ``"1 234"``, ``"27.595.520"``,
``"1.234,5"``, ``"8.0e12"``, ``"1_000"``). Refused: bools, NaN/Inf, huge integers, text that is
not a number, and (on request) zero or negative values.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from roofline_tui.core.lazy_re import lazy_compile

# Anything larger in magnitude is nonsense for a time, a byte count or a FLOP count (a whole
# serving run moves < 1e24 bytes) and would overflow ratios; it is refused, not clamped.
MAX_ABS = 1e30
# Numeric text longer than this is refused before parsing (Python's int() is quadratic).
MAX_TEXT = 64

_THOUSANDS_COMMA = lazy_compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


class Coerced(NamedTuple):
    value: float | None
    problem: str | None  # None when value is usable; else a one-line reason


def _text_to_float(text: str) -> float | None:
    s = text.strip().strip('"').replace(" ", "").replace("\u00a0", "").replace("_", "")
    if not s or len(s) > MAX_TEXT:
        return None
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):  # 1.234,5 (European)
            s = s.replace(".", "").replace(",", ".")
        else:  # 1,234.5
            s = s.replace(",", "")
    elif "," in s:
        s = s.replace(",", "") if _THOUSANDS_COMMA.match(s) else s.replace(",", ".")
    elif s.count(".") > 1:  # 27.595.520: a locale that groups with dots
        s = s.replace(".", "")
    try:
        return float(s)
    except ValueError:
        return None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 24 else value[:23] + "…"
        return repr(shown.encode("ascii", "backslashreplace").decode("ascii"))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**24:
        return f"a {len(str(abs(value)))}-digit integer" if abs(value) < 10**4000 else "a huge integer"
    return type(value).__name__ if not isinstance(value, (int, float)) else repr(value)


def coerce_number(
    value: Any, *, positive: bool = False, nonneg: bool = False, text: bool = True,
    max_abs: float = MAX_ABS,
) -> Coerced:
    """``value`` as a finite float, or ``None`` with the reason it was refused.

    ``positive`` refuses ``<= 0``; ``nonneg`` refuses ``< 0``; ``text=False`` refuses strings
    (for JSON fields whose schema says number).
    """
    if value is None:
        return Coerced(None, "missing")
    if isinstance(value, bool):
        return Coerced(None, f"{value} is a boolean, not a number")
    f: float | None
    if isinstance(value, int):
        if abs(value) > max_abs:  # int compare never overflows
            return Coerced(None, f"{_describe(value)} is too large")
        f = float(value)
    elif isinstance(value, float):
        f = value
    elif isinstance(value, str) and text:
        f = _text_to_float(value)
        if f is None:
            return Coerced(None, f"{_describe(value)} is not a number")
    else:
        return Coerced(None, f"{_describe(value)} is not a number")
    if not math.isfinite(f):
        return Coerced(None, f"{_describe(value)} is not finite")
    if abs(f) > max_abs:
        return Coerced(None, f"{_describe(value)} is too large")
    if positive and f <= 0:
        return Coerced(None, f"{f:g} is not positive")
    if nonneg and f < 0:
        return Coerced(None, f"{f:g} is negative")
    return Coerced(f, None)


def number(
    value: Any, *, positive: bool = False, nonneg: bool = False, text: bool = True,
    max_abs: float = MAX_ABS,
) -> float | None:
    """:func:`coerce_number` without the reason: a finite float or ``None``."""
    kind = type(value)
    if kind is float or kind is int:
        # the common case, decided without building a reason (a 10,000-row Top-N has ~60,000)
        if abs(value) <= max_abs:  # False for NaN and ±inf; an int compare never overflows
            f = float(value)
            if not ((positive and f <= 0) or (nonneg and f < 0)):
                return f
        return None
    return coerce_number(value, positive=positive, nonneg=nonneg, text=text, max_abs=max_abs).value


def integer(value: Any, *, positive: bool = False, nonneg: bool = True) -> int | None:
    """A count: a finite number rounded to an int (negative refused unless ``nonneg=False``)."""
    f = number(value, positive=positive, nonneg=nonneg)
    return None if f is None else int(round(f))

"""The one units formatter: SI inside, human units only at the edges (terminal, md, svg).

Every number shown to a person goes through here, so the same quantity reads the same on the
dashboard, in ``profile_roofline.md`` and on the command line: SI prefixes, three significant
digits by default (``262 kFLOP``, ``119 FLOP/B``, ``41.1 s``, ``17.6 µs``, ``8 TB/s``).
"""

from __future__ import annotations

import math
from typing import TypeGuard

DASH = "–"  # shown for a missing value

_PREFIXES = {-12: "p", -9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T",
             15: "P", 18: "E"}


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and not isinstance(value, bool) and math.isfinite(value)


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, never in exponent notation below 1e21."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        exp = math.floor(math.log10(abs(value)))
        decimals = max(digits - 1 - exp, 0)
        text = f"{round(value, decimals - 0):.{decimals}f}"
    return text


def si(value: float | None, unit: str = "", *, digits: int = 3, min_exp: int = 0) -> str:
    """``value`` with an SI prefix: ``si(2.62e5, "FLOP") == "262 kFLOP"``.

    ``min_exp`` is the smallest prefix used (0: none below the unit; -9 for times).
    """
    if not _finite(value):
        return DASH
    if value == 0:
        return f"0 {unit}".strip()
    exp = 3 * math.floor(math.log10(abs(value)) / 3)
    exp = max(min(exp, 18), min_exp)
    mant = float(f"{value / 10 ** exp:.{digits}g}")
    if abs(mant) >= 1000 and exp < 18:  # 999.7 rounds up into the next prefix
        exp += 3
        mant = float(f"{value / 10 ** exp:.{digits}g}")
    return f"{sig(mant, digits)} {_PREFIXES[exp]}{unit}".strip()


def seconds(t_s: float | None, *, digits: int = 3) -> str:
    """A duration in seconds: ``17.6 µs``, ``41.1 ms``, ``2.5 s``."""
    return si(t_s, "s", digits=digits, min_exp=-9)


def millis(t_ms: float | None, *, digits: int = 3) -> str:
    """A duration given in milliseconds (the spec's ``t_ms``), shown like :func:`seconds`."""
    return DASH if not _finite(t_ms) else seconds(t_ms / 1000.0, digits=digits)


def millis_fixed(t_ms: float | None, digits: int = 1) -> str:
    """A per-launch time given in ms, with fixed decimals so table columns line up: µs below
    1 ms (``millis_fixed(0.04725, 2) == "47.25 µs"``), ms with three decimals above."""
    if not _finite(t_ms):
        return DASH
    return f"{t_ms * 1000:.{digits}f} µs" if t_ms < 1 else f"{t_ms:.3f} ms"


def nbytes(b: float | None, *, digits: int = 3) -> str:
    """Decimal bytes: ``791 MB``, ``1.19 GB``."""
    return si(b, "B", digits=digits)


def rate(x: float | None, unit: str, *, digits: int = 3) -> str:
    """A rate such as ``B/s`` or ``FLOP/s``: ``8 TB/s``, ``2.3 PFLOP/s``."""
    return si(x, unit, digits=digits)


def pct(fraction: float | None, digits: int = 0) -> str:
    """A fraction shown as a percentage: ``pct(0.881) == "88%"``."""
    return DASH if not _finite(fraction) else f"{fraction * 100:.{digits}f}%"


def pct_points(x: float | None, digits: int = 2) -> str:
    """A value that already is a percentage (``pct_gpu_time``): ``23.80%``."""
    return DASH if not _finite(x) else f"{x:.{digits}f}%"


def ratio(x: float | None, digits: int = 2) -> str:
    """A speedup or any other ratio: ``2.80×``."""
    return DASH if not _finite(x) else f"{x:.{digits}f}×"


def fixed(x: float | None, digits: int = 2, suffix: str = "") -> str:
    """A plain number with fixed decimals (kept for tables whose columns must line up)."""
    return DASH if not _finite(x) else f"{x:.{digits}f}{suffix}"

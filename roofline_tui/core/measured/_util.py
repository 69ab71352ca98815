"""Small tolerant helpers shared by the counter and shape loaders."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

from roofline_tui.core import store

MAX_TEXT_BYTES = 256 * 1024 * 1024

_THOUSANDS_COMMA = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def to_float(value: object) -> float | None:
    """Parse a counter value: plain numbers, ``"1,234"``, ``"27.595.520"``, ``1.0e+03``.

    Returns ``None`` for anything that is not a finite number (``n/a``, text, empty).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if not isinstance(value, str):
        return None
    s = value.strip().strip('"').replace(" ", "").replace("\u00a0", "")
    if not s:
        return None
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):  # 1.234,5 (European)
            s = s.replace(".", "").replace(",", ".")
        else:  # 1,234.5
            s = s.replace(",", "")
    elif "," in s:
        s = s.replace(",", "") if _THOUSANDS_COMMA.match(s) else s.replace(",", ".")
    elif s.count(".") > 1:  # 27.595.520: swapped separators
        s = s.replace(".", "")
    try:
        f = float(s)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def read_text(path: Path) -> str:
    """Read a regular file of at most ``MAX_TEXT_BYTES`` as text whatever its encoding
    (undecodable bytes are replaced) through the engine's bounded reader; raises
    :class:`~roofline_tui.core.store.ReadProblem` (an ``OSError``)."""
    return store.read_text(path, max_bytes=MAX_TEXT_BYTES, errors="replace").replace("\x00", "")


def read_json(path: Path) -> object:
    """A JSON document read by :func:`read_text`, nested at most ``store.MAX_DEPTH`` deep.
    ``NaN`` literals are accepted here (the fields go through the coercer, which refuses them);
    raises ``OSError`` or ``ValueError`` with a one-line reason."""
    return store.parse_json_text(read_text(path), path, allow_nan=True)


def csv_rows(text: str) -> list[list[str]]:
    csv.field_size_limit(1 << 30)
    return list(csv.reader(io.StringIO(text, newline="")))


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    f = (
        to_float(value)
        if isinstance(value, str)
        else (float(value) if isinstance(value, float) and math.isfinite(value) else None)
    )
    if f is None or f != int(f):
        return None
    return int(f)


def int_list(value: object) -> list[int] | None:
    """``[1, 64]`` -> ``[1, 64]``; anything not a list of integers -> None."""
    if not isinstance(value, (list, tuple)):
        return None
    out = []
    for v in value:
        i = as_int(v)
        if i is None:
            return None
        out.append(i)
    return out


def shape_list(value: object) -> list[list[int]]:
    """A list of shapes: ``[[64, 4096], [512, 4096], [8]]``; non-integer dims make it skip."""
    if not isinstance(value, (list, tuple)):
        return []
    shapes: list[list[int]] = []
    for item in value:
        if isinstance(item, (list, tuple)):
            dims = int_list(item)
            if dims is not None:
                shapes.append(dims)
        elif (i := as_int(item)) is not None:
            shapes.append([i])
    return shapes

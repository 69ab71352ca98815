"""Small tolerant helpers shared by the counter and shape loaders (private to this package; the
read-only SQLite opener the importers share is public: :mod:`.sqlite_ro`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from roofline_tui.core import store

from ..coerce import number

MAX_TEXT_BYTES = 256 * 1024 * 1024
# FLOPs per SQ_INSTS_VALU_MFMA_MOPS unit when a loader is not told another (the AMD readers)
DEFAULT_FLOPS_PER_MOP = 512.0

def to_float(value: object) -> float | None:
    """A counter value as a finite float, or ``None`` (``n/a``, text, empty, NaN, huge).

    Delegates to the one coercer, :func:`roofline_tui.core.coerce.number`, which reads the
    spellings profilers print (``"1,234"``, ``"27.595.520"``, ``1.0e+03``)."""
    return number(value)


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
    """An integral value (shape dims, counts) through the one coercer; ``None`` otherwise
    (fractions, huge integers, text that is not a number)."""
    f = number(value)
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

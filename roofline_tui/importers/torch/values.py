"""Reading one value of a trace event: a number through the one coercer, an integral id that
fits the collector's typed arrays, an ``args`` key under its old spelling too, and the
sentinels the readers share (``MISS`` for a cache miss, msgspec's ``UNSET`` for an absent key)."""

from __future__ import annotations

from typing import Any

import msgspec

from roofline_tui.core.coerce import number
from roofline_tui.importers.kineto_events import ID_LIMIT


def num(v: Any) -> float | None:
    """A JSON number (never text) through the one coercer: huge integers become ``None``."""
    return number(v, text=False)


def as_int(v: Any) -> int | None:
    """An integral id (device, correlation, External id): ``None`` when not one."""
    if type(v) is int:  # noqa: E721 - bool (an int subclass) must not pass
        return v if -ID_LIMIT < v < ID_LIMIT else None
    if isinstance(v, int) and not isinstance(v, bool):
        return v if -ID_LIMIT < v < ID_LIMIT else None
    f = number(v)
    if f is None or not f.is_integer() or abs(f) >= ID_LIMIT:
        return None
    return int(f)


def arg_value(args: dict[str, Any], key: str) -> Any:
    """``args[key]`` under its current or its 1.8-era spelling (``external id``)."""
    v = args.get(key)
    return args.get(key.lower()) if v is None else v


MISS = object()
UNSET: Any = msgspec.UNSET

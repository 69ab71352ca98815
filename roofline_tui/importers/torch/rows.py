"""Rows of the collector's typed arrays: the typecode an index array needs, whether a row list is
every row (a ``range``: loops then walk the arrays themselves), and the rows holding one value."""

from __future__ import annotations

from array import array
from collections.abc import Sequence


# Arrays of positions and interned ids (below a count of events, or -1) take 4 bytes an item
# when the count leaves room (half the range: a graph-capture join adds ids later), else 8.
_SMALL_INDEX = "i" if array("i").itemsize >= 4 else "l"
_SMALL_LIMIT = 1 << 30


def index_code(count: int) -> str:
    """The typecode of an array holding -1 or indexes below about ``count``."""
    return _SMALL_INDEX if count < _SMALL_LIMIT else "q"


def is_every_row(positions: Sequence[int], n: int) -> bool:
    """Whether ``positions`` is every position below ``n``, in order (``range(n)``): loops
    then walk the arrays themselves instead of indexing them."""
    return isinstance(positions, range) and positions == range(n)


def positions_of(values: array[int], wanted: int) -> list[int] | None:
    """The positions in ``values`` holding ``wanted``, in order, when they are few (at most
    one in 16: found by searching), else None."""
    n = values.count(wanted)
    if n > len(values) >> 4:
        return None
    out: list[int] = []
    at = 0
    for _ in range(n):
        at = values.index(wanted, at)
        out.append(at)
        at += 1
    return out


def rows_of(values: array[int], wanted: int) -> Sequence[int]:
    """The positions in ``values`` holding ``wanted``: a ``range`` when every one does (a trace
    of one device: no array at all), else a typed array."""
    if values.count(wanted) == len(values):
        return range(len(values))
    return array("q", (i for i, v in enumerate(values) if v == wanted))

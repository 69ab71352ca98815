"""Regular expressions compiled when first used, not when their module is imported.

The engine has some 90 module-level patterns; a run uses about half of them (which half depends
on the input: a trace with launching ops, a peak table keyed by product name, rocprof counters).
Compiling one costs 20-400 µs, so compiling them all at import was a few ms of every start.

:func:`lazy_compile` returns a stand-in typed as :class:`re.Pattern`. On first use it compiles
the pattern and keeps the compiled pattern's methods as its own attributes, so that later calls
go straight to them, as fast as calls on the compiled pattern itself. It is not a
:class:`re.Pattern` instance: pass ``.pattern`` or call its methods, never hand it to ``re.sub``.
"""

import re
from typing import Any, cast

_KEPT = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer",
         "pattern", "flags", "groups", "groupindex", "scanner")


class _LazyPattern:
    __slots__ = ("__dict__", "_source")

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # only while nothing is compiled yet
        compiled = re.compile(*self._source)
        for attr in _KEPT:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]!r})"


def lazy_compile(pattern: str, flags: int | re.RegexFlag = 0) -> "re.Pattern[str]":
    """``re.compile(pattern, flags)``, done on first use."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, int(flags)))

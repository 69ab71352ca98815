"""Building large acyclic structures without the cyclic garbage collector's passes.

A 10,000-row Top-N parses into some 200,000 dicts, lists and models. Each allocation counts
toward CPython's generational collector, which then walks every tracked object again and again
while the structure grows: about a third of the parse time, measured. The structures built here
(JSON documents, parsed rows, per-kernel observations) hold no reference cycles, so pausing the
collector while they are built frees nothing late; it is switched back on (if it was on) as soon
as the block ends, even on an exception.

A document too big to hold as objects (a Top-N of a million rows) is read with
:func:`stream_object`: its big arrays are handed over item by item and never built, and
:class:`Biggest` keeps the few items worth keeping.
"""

from __future__ import annotations

import gc
import heapq
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from roofline_tui.core.lazy_re import lazy_compile


class CollectorPause:
    """The one way the program pauses the cyclic collector (reference counting still frees
    everything): :meth:`pause` once, :meth:`resume` once, both idempotent, so a pause may span
    callbacks (the CLI's start-up, the dashboard's first frame) as well as a block
    (:func:`collector_paused`). The collector is switched back on only if it was on when
    paused: an in-process caller's own setting is left as it was."""

    __slots__ = ("_was_enabled",)

    def __init__(self) -> None:
        self._was_enabled: bool | None = None  # None: not paused

    @property
    def active(self) -> bool:
        return self._was_enabled is not None

    def pause(self) -> None:
        if self._was_enabled is None:
            self._was_enabled = gc.isenabled()
            gc.disable()

    def resume(self, *, freeze: bool = False) -> None:
        """End the pause. ``freeze``: what exists now lives as long as the program (modules,
        classes, tables built by imports) and is moved out of every later pass
        (``gc.freeze``)."""
        if self._was_enabled is None:
            return
        was, self._was_enabled = self._was_enabled, None
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """A :class:`CollectorPause` for the block (``freeze``: see :meth:`CollectorPause.resume`)."""
    pause = CollectorPause()
    pause.pause()
    try:
        yield
    finally:
        pause.resume(freeze=freeze)


# --------------------------------------------------------------------------- streamed arrays

_WS = lazy_compile(r"[ \t\n\r]*")  # JSON's whitespace
# what follows an array's item: whitespace, the separator, whitespace (one match per item)
_AFTER_ITEM = lazy_compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The index of the first non-whitespace character at or after ``i``."""
    m = _WS.match(text, i)
    return m.end() if m else i


class NotStreamable(ValueError):
    """The document is not a plain JSON object the streamed reader handles; the caller parses
    it whole instead (which also gives the exact error for a broken document)."""


def stream_object(text: str, array_keys: tuple[str, ...],
                  on_item: Callable[[str, int, Any], None],
                  decoder: json.JSONDecoder) -> dict[str, Any]:
    """Parse the JSON object ``text`` with the arrays under ``array_keys`` streamed: each of
    their items is handed to ``on_item(key, index, item)`` as it is decoded and is not kept
    here; the returned dict holds every other member (an array streamed is stored as ``[]``).

    Every value is decoded by ``decoder``'s own scanner (the stdlib's C one), so numbers,
    strings and constants read exactly as ``json.loads`` reads them; only the object's and the
    arrays' punctuation is walked here. A document this reader does not take as it is (not an
    object, a streamed key given twice, trailing text, a decoding error) raises
    :class:`NotStreamable`."""
    scan = decoder.raw_decode
    doc: dict[str, Any] = {}
    streamed: set[str] = set()
    try:
        i = _skip(text, 0)
        if text[i:i + 1] != "{":
            raise NotStreamable("not an object")
        i = _skip(text, i + 1)
        if text[i:i + 1] == "}":
            i += 1
        else:
            while True:
                if text[i:i + 1] != '"':
                    raise NotStreamable("a member without a key")
                key, i = scan(text, i)
                i = _skip(text, i)
                if text[i:i + 1] != ":":
                    raise NotStreamable("a key without a value")
                i = _skip(text, i + 1)
                if key in array_keys and text[i:i + 1] == "[":
                    if key in streamed or key in doc:
                        raise NotStreamable(f"{key} given twice")
                    streamed.add(key)
                    i = _stream_array(text, i, key, on_item, scan)
                    doc[key] = []
                else:
                    if key in streamed:
                        raise NotStreamable(f"{key} given twice")
                    doc[key], i = scan(text, i)
                i = _skip(text, i)
                sep = text[i:i + 1]
                i = _skip(text, i + 1)
                if sep == "}":
                    break
                if sep != ",":
                    raise NotStreamable("a member not followed by ',' or '}'")
        if _skip(text, i) != len(text):
            raise NotStreamable("text after the object")
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a NaN literal, int digits
        if isinstance(exc, NotStreamable):
            raise
        raise NotStreamable(str(exc)) from None
    return doc


def _stream_array(text: str, i: int, key: str, on_item: Callable[[str, int, Any], None],
                  scan: Callable[[str, int], tuple[Any, int]]) -> int:
    """Decode the array at ``text[i] == '['`` item by item; returns the index after ``]``."""
    i = _skip(text, i + 1)
    if text[i:i + 1] == "]":
        return i + 1
    n = 0
    after = _AFTER_ITEM.match
    while True:
        item, i = scan(text, i)
        on_item(key, n, item)
        del item
        n += 1
        m = after(text, i)
        if m is None:
            raise NotStreamable("an item not followed by ',' or ']'")
        i = m.end()
        if m.group(1) == "]":
            return i


@dataclass(eq=False)
class Biggest:
    """The ``keep`` items with the largest keys seen so far (a bounded min-heap); ties keep the
    earlier item. Items pushed with a key of None are never kept."""

    keep: int
    _heap: list[tuple[float, int, Any]] = field(default_factory=list)

    def push(self, key: float | None, index: int, item: Any) -> None:
        if key is None or self.keep <= 0:
            return
        entry = (key, -index, item)
        if len(self._heap) < self.keep:
            heapq.heappush(self._heap, entry)
        elif (key, -index) > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)

    def items(self) -> list[tuple[int, Any]]:
        """``(index, item)`` of the kept items."""
        return [(-neg, item) for _key, neg, item in self._heap]

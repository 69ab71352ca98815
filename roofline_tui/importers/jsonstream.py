"""A bounded-memory reader for chrome-trace JSON: yields the items of ``traceEvents`` one at a
time without materialising the whole document.

The top-level object is walked key by key with :meth:`json.JSONDecoder.raw_decode` over a
sliding text buffer; small top-level values (``deviceProperties``, ``schemaVersion`` ...) are
decoded whole and collected in :attr:`TraceEventStream.header`, the ``traceEvents`` array is
streamed element by element. A bare top-level array of events is accepted too.

Arrays are read in batches: the buffered text up to the last ``}`` that is followed by a ``,``
is wrapped in ``[`` ``]`` and decoded by one call of ``orjson`` (a batch holding a run of 19 or
more digits goes to the standard library's C scanner instead: orjson turns an integer outside
64 bits into a float, where the careful path keeps it exact), which is several times faster
than one call per item. That cut is only a guess (a ``},`` may sit inside a string), so
the batch is kept only when the wrapped text decodes whole; a ``}`` that ends an item can't
end a number or a literal, and a cut inside a string or a nested value leaves a string or a
bracket open, so such a batch never decodes. Otherwise (and for invalid JSON, which then gets
its precise message) the items up to that cut are read one by one, as before, and no batch is
tried again before it, so no text is scanned more than twice. A batch holds at most
``batch`` characters of text (32 KiB), so memory stays bounded by that and the read buffer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import orjson

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.importers.common import ImportProblem

_WS = lazy_compile(r"[ \t\n\r]*")
# Text read per fill. Small enough that the read buffer (a chunk of bytes, its text, the
# buffer it is appended to) stays a few hundred KiB: with 1 MiB chunks those copies were
# some 6 MiB of a 120k-kernel import's peak memory, and no faster.
READ_CHUNK = 1 << 17
_NEAR_END = 16  # a decode error this close to the buffer end may just need more text
# A run of this many digits may be an integer token too long for the fast decoder (see
# _parse_int); a batch holding one goes through the careful decoder instead. Found by mapping
# every digit to "0" in the batch's UTF-8 bytes (bytes.translate is about ten times faster
# here than a regex, and faster than str.translate; no byte of a multi-byte character is an
# ASCII digit, so the runs are those of the text).
_LONG_DIGITS = b"0" * 64
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")
# orjson decodes integers within 64 bits exactly and turns larger ones into floats; the json
# module keeps them exact. A batch with a run this long (an integer that may fall outside
# [-2**63, 2**64), or a long fraction) is left to the json module, so both paths give the same
# values.
_ORJSON_MAX_DIGITS = b"0" * 19
# Text decoded per batch. Small batches stay in the CPU caches and their events die young (the
# cyclic GC then barely sees them): 32 KiB measured faster than 64 KiB and much faster than a
# whole 1 MiB chunk at once.
_BATCH_CHARS = 1 << 15
_CUT_TRIES = 64  # '}' tried from the end of the buffer when looking for an item boundary


def _parse_int(token: str) -> int | float:
    """An integer token; one too long to be a real value (Python refuses > 4300 digits, and
    converting them is quadratic) becomes an infinity, which the coercer then refuses."""
    if len(token) <= 64:
        return int(token)
    return float("-inf") if token.startswith("-") else float("inf")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token}")


class TraceEventStream:
    def __init__(self, fh: TextIO, *, chunk: int = READ_CHUNK,
                 on_read: Callable[[], None] | None = None, batch: int = _BATCH_CHARS) -> None:
        self._fh = fh
        self._chunk = chunk
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._on_read = on_read
        self._decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)
        # the same, with Python's own (C) integer parsing: for batches without long digit runs
        self._fast = json.JSONDecoder(parse_constant=_reject_constant)
        self._base = 0  # offset in the document of self._buf[0]
        self._no_batch_before = 0  # document offset: read one item at a time up to here
        self._batch_chars = max(1, batch)  # at most this much text decoded per batch
        self.header: dict[str, Any] = {}
        self.saw_trace_events = False

    # -- buffer management --------------------------------------------------------------
    def _fill(self, want: int | None = None) -> bool:
        """Append at least one chunk; False at end of file."""
        if self._eof:
            return False
        if self._pos > (1 << 16) and self._pos > len(self._buf) // 2:
            self._buf = self._buf[self._pos:]
            self._base += self._pos
            self._pos = 0
        try:
            data = self._fh.read(max(self._chunk, want or 0))
        except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
            raise ImportProblem(f"cannot read trace: {_reason(exc)}") from None
        if self._on_read is not None:
            self._on_read()
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def _skip_ws(self) -> None:
        while True:
            m = _WS.match(self._buf, self._pos)  # always matches (maybe the empty string)
            self._pos = m.end() if m else self._pos
            if self._pos < len(self._buf) or not self._fill():
                return

    def _peek(self) -> str:
        self._skip_ws()
        return self._buf[self._pos] if self._pos < len(self._buf) else ""

    def _expect(self, char: str, where: str) -> None:
        got = self._peek()
        if got != char:
            raise self._problem(f"expected '{char}' {where}, found {got!r}" if got
                                else f"ended {where} (truncated?)")
        self._pos += 1

    def _value(self) -> Any:
        self._skip_ws()
        grow = self._chunk
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                maybe_short = exc.msg.startswith("Unterminated string") or (
                    exc.pos >= len(self._buf) - _NEAR_END)
                if maybe_short and self._fill(grow):
                    grow *= 2
                    continue
                if maybe_short:
                    raise self._problem(
                        "trace ends in the middle of an event (truncated?)"
                    ) from None
                raise self._problem(f"invalid JSON: {exc.msg}", exc.pos) from None
            except (ValueError, RecursionError) as exc:
                raise self._problem(f"invalid JSON: {_reason(exc)}") from None
            # a value at the very end of the buffer, or a number just before it, may continue
            # in the next chunk: "1" + ".5", "2" + "e3", "2e" + "-3" (the scanner stops at
            # the "." / "e" it cannot use yet and returns the number so far)
            rest = len(self._buf) - end
            if (not self._eof and (rest <= 0 or (rest < 3 and isinstance(value, (int, float))))
                    and self._fill()):
                continue
            self._pos = end
            return value

    def _batch(self) -> list[Any] | None:
        """Whole items of the array at the cursor (at the start of an item), decoded in one call,
        with the cursor left after the last one; ``None`` when that can't be done here."""
        if self._base + self._pos < self._no_batch_before:
            return None
        if len(self._buf) - self._pos < self._batch_chars and not self._eof:
            self._fill()
        buf, start = self._buf, self._pos
        cut = buf.rfind("}", start, start + self._batch_chars)
        tries = _CUT_TRIES
        while cut > start and tries:
            m = _WS.match(buf, cut + 1)
            after = m.end() if m else cut + 1
            if after < len(buf) and buf[after] == "," and _object_next(buf, after + 1):
                break
            cut = buf.rfind("}", start, cut)
            tries -= 1
        else:
            self._no_batch_before = self._base + min(len(buf), start + self._batch_chars)
            return None
        text = f"[{buf[start:cut + 1]}]"
        items = self._decode_batch(text)
        if items is None:
            self._no_batch_before = self._base + cut + 1
            return None
        self._pos = cut + 1
        return items

    def _decode_batch(self, text: str) -> list[Any] | None:
        """The items of a batch (``text``: a JSON array), or None when it is not read whole
        here. Without a run of 19 digits, by orjson: it refuses whatever the json module would
        refuse here (NaN, control characters, a cut inside a value) and also a few things it
        accepts (an infinite number, a lone surrogate): each then goes to the item-by-item
        path. With one, by the json module (exact integers)."""
        zeroed = text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_0)
        items: Any
        if _ORJSON_MAX_DIGITS not in zeroed:
            try:
                items, end = orjson.loads(text), len(text)
            except (orjson.JSONDecodeError, RecursionError):
                return None
        else:
            decoder = self._decoder if _LONG_DIGITS in zeroed else self._fast
            try:
                items, end = decoder.raw_decode(text)
            except (ValueError, RecursionError):
                return None
        return items if end == len(text) and isinstance(items, list) else None

    what = "chrome trace"

    def _problem(self, reason: str, pos: int | None = None) -> ImportProblem:
        return ImportProblem(f"not a readable {self.what}: {reason}")

    # -- public -------------------------------------------------------------------------
    def events(self) -> Iterator[Any]:
        """Each item of ``traceEvents`` (or of a bare top-level array), in order."""
        for batch in self.event_batches():
            yield from batch

    def event_batches(self) -> Iterator[list[Any]]:
        """The items of :meth:`events` as consecutive lists (a batch decoded in one call, or a
        single item read alone): a caller's loop over each list runs without a generator step
        per item."""
        first = self._peek()
        if not first:
            raise ImportProblem("trace file is empty")
        if first == "[":
            self.saw_trace_events = True
            yield from self._array()
            self._trailing()
            return
        if first != "{":
            raise self._problem("expected a JSON object or array at the start")
        self._pos += 1
        if self._peek() == "}":
            self._pos += 1
            self._trailing()
            return
        while True:
            key = self._value()
            if not isinstance(key, str):
                raise self._problem("object key is not a string")
            self._expect(":", "after a key")
            if key == "traceEvents" and self._peek() == "[":
                self.saw_trace_events = True
                yield from self._array()
            else:
                self.header[key] = self._value()
            nxt = self._peek()
            if nxt == ",":
                self._pos += 1
                continue
            if nxt == "}":
                self._pos += 1
                break
            raise self._problem(f"expected ',' or '}}' in the top-level object, found {nxt!r}"
                                if nxt else "the trace ends before its closing '}' (truncated?)")
        self._trailing()

    def _array(self) -> Iterator[list[Any]]:
        """The traceEvents array, in batches (a trailing comma before ']' is tolerated)."""
        return self._array_batches("traceEvents", trailing_comma=True)

    def _array_items(self, what: str | None = None, *,
                     trailing_comma: bool = False) -> Iterator[Any]:
        """Each value of the JSON array at the cursor, in order. ``what`` names the array in
        the error messages (``None``: any array)."""
        for batch in self._array_batches(what, trailing_comma=trailing_comma):
            yield from batch

    def _array_batches(self, what: str | None = None, *,
                       trailing_comma: bool = False) -> Iterator[list[Any]]:
        """The values of the JSON array at the cursor as consecutive lists: a batch decoded in
        one call, or one value read alone."""
        self._expect("[", f"at the start of {what or 'an array'}")
        if self._peek() == "]":
            self._pos += 1
            return
        while True:
            batch = self._batch()
            yield [self._value()] if batch is None else batch
            nxt = self._peek()
            if nxt == ",":
                self._pos += 1
                # Kineto sometimes writes a trailing comma before ']' - tolerate it
                if trailing_comma and self._peek() == "]":
                    self._pos += 1
                    return
                continue
            if nxt == "]":
                self._pos += 1
                return
            if what is None:
                raise self._problem(f"expected ',' or ']' in an array, found {nxt!r}" if nxt
                                    else "the document ends inside an array (truncated?)")
            raise self._problem(f"expected ',' or ']' between events, found {nxt!r}" if nxt
                                else f"{what} is cut off before its closing ']' (truncated?)")

    def _trailing(self) -> None:
        if self._peek():
            raise self._problem("unexpected text after the end of the JSON document")


def _object_next(buf: str, at: int) -> bool:
    """Whether the text at ``at`` starts an object's first key (or the object is empty), as an
    event does, or the buffer ends first. A ``},`` inside a string (C++ names write lambdas:
    ``<{lambda(int)#1}, {lambda()#2}>``) is seldom followed by one, and a cut there, which never
    decodes, would have its items read one by one."""
    m = _WS.match(buf, at)
    at = m.end() if m else at
    if at >= len(buf):
        return True
    if buf[at] != "{":
        return False
    m = _WS.match(buf, at + 1)
    at = m.end() if m else at + 1
    return at >= len(buf) or buf[at] in '"}'


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


Handler = Callable[[Any], None]


class JsonWalker(TraceEventStream):
    """Stream a JSON document and hand the items of selected arrays to callbacks.

    ``handlers`` maps a path to a callback; a path is a tuple of object keys, with ``"*"`` for
    "any item of an array" (``("rocprofiler-sdk-tool", "*", "buffer_records",
    "kernel_dispatch")``). Values on no wanted path are skipped item by item, so memory stays
    bounded by the largest single item. Integers of any size are decoded exactly (the callers
    pass them through the coercer)."""

    MAX_DEPTH = 64
    what = "JSON document"

    def walk(self, handlers: dict[tuple[str, ...], Handler]) -> None:
        self._handlers = handlers
        self._prefixes = {p[:i] for p in handlers for i in range(len(p))}
        if not self._peek():
            raise ImportProblem("file is empty")
        self._walk(())
        self._trailing()

    def _walk(self, path: tuple[str, ...]) -> None:
        c = self._peek()
        handler = self._handlers.get(path)
        if handler is not None and c == "[":
            for item in self._array_items():
                handler(item)
            return
        wanted = path in self._prefixes
        if c == "{" and (wanted or len(path) < self.MAX_DEPTH):
            self._pos += 1
            if self._peek() == "}":
                self._pos += 1
                return
            while True:
                key = self._value()
                if not isinstance(key, str):
                    raise self._problem("object key is not a string")
                self._expect(":", "after a key")
                sub = (*path, key)
                if sub in self._prefixes or sub in self._handlers:
                    self._walk(sub)
                else:
                    self._skip(sub)
                if not self._after_item("}", "an object"):
                    return
        if c == "[" and wanted:
            sub = (*path, "*")
            self._pos += 1
            if self._peek() == "]":
                self._pos += 1
                return
            while True:
                self._walk(sub)
                if not self._after_item("]", "an array"):
                    return
        self._skip(path)

    def _after_item(self, close: str, what: str) -> bool:
        """After an item of ``what``: consume ``,`` (True: another item follows) or the closing
        bracket (False); anything else is a one-line problem."""
        nxt = self._peek()
        if nxt == ",":
            self._pos += 1
            return True
        if nxt == close:
            self._pos += 1
            return False
        raise self._problem(f"expected ',' or '{close}' in {what}, found {nxt!r}" if nxt
                            else f"the document ends inside {what} (truncated?)")

    def _skip(self, path: tuple[str, ...]) -> None:
        """Consume one value; a big array is consumed item by item."""
        if self._peek() == "[" and len(path) < self.MAX_DEPTH:
            for _item in self._array_items():
                pass
        else:
            self._value()

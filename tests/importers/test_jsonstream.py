"""The streamed JSON reader yields exactly the items a whole-document decode gives.

The reader decodes runs of array items in one call when it can (see jsonstream's docstring) and
falls back to one item at a time; whichever path it takes, the items must be the ones of
``json.loads`` of the whole text with the reader's number rules (integer tokens longer than 64
characters become infinities, NaN/Infinity are refused). Items are compared through ``repr`` so
``1`` and ``1.0`` and ``True`` stay apart.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_tui.importers import jsonstream
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.jsonstream import TraceEventStream


def _reference(text: str) -> Any:
    """The whole document, decoded at once with the reader's number rules."""
    return json.JSONDecoder(parse_int=jsonstream._parse_int,
                            parse_constant=jsonstream._reject_constant).decode(text)


def _read(text: str, *, chunk: int = jsonstream.READ_CHUNK, batch: int = jsonstream._BATCH_CHARS
          ) -> tuple[list[Any], dict[str, Any]]:
    stream = TraceEventStream(io.StringIO(text), chunk=chunk, batch=batch)
    return list(stream.events()), stream.header


def _same(got: Any, want: Any) -> bool:
    return repr(got) == repr(want)


# strings that look like item boundaries, brackets and numbers
tricky_text = st.sampled_from(['}, {"a": 1}', "},", "}", "]", "[", "{", ",", '"', "\\",
                               "0" * 70, "}\n,\n{", "\u00e9\u4e2d", "\ud800", ""]) | st.text(
    max_size=6)
leaf = (st.none() | st.booleans() | st.integers(-10**70, 10**70)
        | st.floats(allow_nan=False, allow_infinity=False) | tricky_text)
value = st.recursive(leaf, lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(tricky_text, kids, max_size=3), max_leaves=12)
event = st.dictionaries(st.sampled_from(["ph", "cat", "name", "ts", "dur", "args", "x"]), value,
                        max_size=6)
item = event | value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(item, max_size=30), st.sampled_from([None, 1, 2]),
       st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
       st.integers(1, 300), st.integers(1, 400), st.booleans())
def test_items_are_those_of_a_whole_document_decode(events: list[Any], indent: int | None,
                                                    seps: tuple[str, str], chunk: int,
                                                    batch: int, bare: bool) -> None:
    # the objects after the array put a "}," past its end, where a batch must not reach
    tail = [{"a": 1}, {"b": [2]}]
    doc: Any = events if bare else {"schemaVersion": 1, "traceEvents": events, "tail": tail}
    text = json.dumps(doc, indent=indent, separators=seps, ensure_ascii=False)
    want = _reference(text)
    got, header = _read(text, chunk=chunk, batch=batch)
    if bare:
        assert _same(got, want)
    else:
        assert _same(got, want["traceEvents"])
        assert _same(header, {"schemaVersion": 1, "tail": tail})


def _doc(events: list[str], tail: str = "") -> str:
    return '{"traceEvents": [\n' + ",\n".join(events) + tail + '\n], "x": 1}'


def test_boundary_lookalikes_inside_strings() -> None:
    """A name holding ``}, {`` (a false cut for the batch) still reads as one string."""
    filler = [json.dumps({"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1.5})
              for i in range(300)]
    decoy = json.dumps({"name": 'a"}, {"name": "b' + "}," * 500, "args": {"s": "],["}})
    events = filler[:150] + [decoy] + filler[150:] + ["[1, 2]", "3", "null", '"}"']
    text = _doc(events)
    for batch in (64, 4096, 1 << 15):
        got, _ = _read(text, batch=batch)
        assert _same(got, _reference(text)["traceEvents"])
        assert got[150]["name"].startswith('a"}, {"name": "b},},')


@pytest.mark.parametrize(("token", "kept"), [
    ("9" * 64, True),          # 64 characters: an exact integer
    ("9" * 65, False),         # 65: an infinity, which the coercer refuses
    ("-" + "9" * 63, True),
    ("-" + "9" * 64, False),
])
def test_long_integers_follow_one_rule_in_every_batch(token: str, kept: bool) -> None:
    events = [f'{{"cat": "kernel", "i": {i}, "v": {token if i == 77 else i}}}'
              for i in range(200)]
    got, _ = _read(_doc(events))
    v = got[77]["v"]
    if kept:
        assert v == int(token) and isinstance(v, int)
    else:
        assert v == (float("-inf") if token.startswith("-") else float("inf"))
    assert [e["i"] for e in got] == list(range(200))


def test_nan_in_the_middle_of_a_batch_is_one_line_problem() -> None:
    events = [f'{{"i": {i}, "ts": {"NaN" if i == 120 else i}}}' for i in range(300)]
    with pytest.raises(ImportProblem, match="non-finite number NaN"):
        _read(_doc(events))


def test_cut_off_array_and_trailing_comma() -> None:
    events = [f'{{"i": {i}}}' for i in range(400)]
    text = _doc(events)
    cut = text[: text.index('{"i": 333}') + 5]
    with pytest.raises(ImportProblem, match="truncated"):
        _read(cut)
    got, header = _read(_doc(events, tail=","))
    assert [e["i"] for e in got] == list(range(400)) and header == {"x": 1}


def test_most_items_of_a_plain_trace_come_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken: a trace of ordinary events is decoded almost all in batches
    (a reader that always fell back to one item at a time would still pass the tests above)."""
    batched = []
    real = TraceEventStream._batch

    def counting(self: TraceEventStream) -> list[Any] | None:
        items = real(self)
        if items is not None:
            batched.append(len(items))
        return items

    monkeypatch.setattr(TraceEventStream, "_batch", counting)
    events = [json.dumps({"ph": "X", "cat": "kernel", "name": "gemm", "ts": i * 1.5, "dur": 2,
                          "args": {"correlation": i, "device": 0}}) for i in range(5000)]
    got, _ = _read(_doc(events), chunk=1 << 16)
    assert len(got) == 5000
    assert sum(batched) >= 4900 and len(batched) > 10

"""The trace reader decodes its batches with orjson (issue 26 item 5) and reads exactly what the
standard library reads: where the two disagree (an integer outside 64 bits, which orjson turns
into a float; an infinite number or a lone surrogate escape, which orjson refuses) the items are
those of a whole-document ``json`` decode, and broken input still gets the careful path's own
one-line reason."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.jsonstream import TraceEventStream


def _event(i: int) -> str:
    return json.dumps({"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i * 1.25, "dur": 2,
                       "args": {"correlation": i}})


def _doc(odd: str, at: int = 150, n: int = 300) -> str:
    items = [_event(i) for i in range(n)]
    items[at] = odd
    return '{"traceEvents": [\n' + ",\n".join(items) + '\n], "x": 1}'


def _read(text: str, batch: int = 4096) -> list[Any]:
    return list(TraceEventStream(io.StringIO(text), batch=batch).events())


@pytest.mark.parametrize("value", [
    2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 1, -(2**63), -(2**63) - 1, 10**19, -(10**19),
    10**30, 12345678901234567890123,
])
def test_integers_at_the_edge_of_64_bits_stay_exact(value: int) -> None:
    got = _read(_doc(json.dumps({"cat": "kernel", "v": value})))
    assert type(got[150]["v"]) is int and got[150]["v"] == value
    assert [e["args"]["correlation"] for e in got if "args" in e] == [
        i for i in range(300) if i != 150]


@pytest.mark.parametrize("odd", ['{"a": 1e400}', '{"a": -2e308}', '{"a": "\\ud800x"}',
                                 '{"a": 0.000123456789012345678901}', '{"a": 1, "a": 2}'])
def test_what_orjson_reads_differently_reads_as_the_json_module_does(odd: str) -> None:
    text = _doc(odd)
    got = _read(text)
    assert repr(got) == repr(json.loads(text)["traceEvents"])


@pytest.mark.parametrize(("odd", "reason"), [
    ('{"ts": NaN}', "invalid JSON: non-finite number NaN"),
    ('{"name": "a\x01b"}', "invalid JSON: Invalid control character at"),
    ('{"a": 1} {"b": 2}', "expected ',' or ']' between events, found '{'"),
    ('{"a": 1,}', "invalid JSON: Expecting property name enclosed in double quotes"),
    ('{"a": "\\q"}', "invalid JSON: Invalid \\escape"),
])
def test_broken_items_keep_their_precise_reason(odd: str, reason: str) -> None:
    with pytest.raises(ImportProblem) as info:
        _read(_doc(odd))
    assert info.value.message.startswith(f"not a readable chrome trace: {reason}")


def test_plain_batches_are_decoded_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is orjson's: a plain trace is read almost all through it."""
    items_decoded = []
    real = orjson.loads

    def counting(text: str | bytes) -> Any:
        out = real(text)
        items_decoded.append(len(out))
        return out

    monkeypatch.setattr(orjson, "loads", counting)
    text = '{"traceEvents": [\n' + ",\n".join(_event(i) for i in range(5000)) + "\n]}"
    got = _read(text, batch=1 << 15)
    assert len(got) == 5000 and sum(items_decoded) >= 4900

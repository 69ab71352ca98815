"""The streamed reader of big documents (``core.bulk.stream_object``) reads what ``json.loads``
reads, item by item, or says it cannot (then the whole document is parsed instead)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.core.bulk import Biggest, NotStreamable, stream_object

KEY = "top_kernels"

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                  allow_infinity=False) | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


def _read(text: str) -> tuple[dict[str, Any], list[Any]]:
    items: list[Any] = []
    doc = stream_object(text, (KEY,), lambda key, i, item: items.append((i, item)),
                        json.JSONDecoder())
    assert [i for i, _ in items] == list(range(len(items)))
    return doc, [item for _, item in items]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=6).filter(lambda k: k != KEY), values, max_size=5),
       st.lists(values, max_size=8), st.sampled_from([None, 0, 2]), st.integers(0, 5))
def test_reads_what_json_loads_reads(others: dict[str, Any], rows: list[Any],
                                     indent: int | None, where: int) -> None:
    members = list(others.items())
    members.insert(min(where, len(members)), (KEY, rows))
    text = json.dumps(dict(members), indent=indent)
    doc, items = _read(text)
    expected = json.loads(text)
    assert items == expected.pop(KEY)
    assert doc.pop(KEY) == []
    assert doc == expected


@pytest.mark.parametrize("text", [
    "[1, 2]",  # not an object
    '{"top_kernels": [1, 2,]}',  # a trailing comma
    '{"top_kernels": [1, 2]',  # truncated
    '{"top_kernels": [1], "top_kernels": [2]}',  # given twice
    '{"top_kernels": [1]} trailing',
    '{"top_kernels": [NaN]}',  # a constant the decoder refuses
])
def test_what_it_does_not_take_it_says(text: str) -> None:
    def refuse(token: str) -> Any:
        raise ValueError(token)

    with pytest.raises(NotStreamable):
        stream_object(text, (KEY,), lambda *a: None, json.JSONDecoder(parse_constant=refuse))


def test_biggest_keeps_the_largest_and_the_earlier_of_equals() -> None:
    b = Biggest(3)
    for i, key in enumerate([5.0, 1.0, 5.0, 9.0, None, 5.0, 0.5]):
        b.push(key, i, f"row{i}")
    assert sorted(b.items()) == [(0, "row0"), (2, "row2"), (3, "row3")]

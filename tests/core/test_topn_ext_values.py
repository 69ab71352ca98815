"""The Top-N extension's recorded argument values, ``distributed`` block and null regime, as
``core.topn_ext`` reads them back (issue 31 items 2, 3 and 5): every value passes a bound, a
bad part is dropped with a one-line reason, never guessed."""

from __future__ import annotations

from roofline_tui.core.topn_ext import (
    MAX_VALUE_CHARS,
    DocExtension,
    Operand,
    parse_doc_extension,
    parse_instance,
    parse_value,
    schema,
)


def test_values_are_bounded_and_sanitised() -> None:
    """Kept: False, 4096, 0.0884, ``[-1, -1]``, a printable string cut to 64 characters.
    Dropped (None): NaN, 2**70 (beyond ±2**62), a 17-number list, a mixed list, a dict."""
    assert parse_value(False) is False and parse_value(4096) == 4096
    assert parse_value(0.0884) == 0.0884 and parse_value([-1, -1]) == [-1, -1]
    cut = parse_value("\x1b[31m" + "a" * 100)
    assert isinstance(cut, str) and len(cut) <= MAX_VALUE_CHARS and "\x1b" not in cut
    for bad in (float("nan"), 2**70, list(range(17)), [1, 2.0], {"a": 1}, ""):
        assert parse_value(bad) is None, bad


def test_an_instance_reads_each_argument_value_back() -> None:
    """``args[4].value`` False and ``args[6].value`` 0.0884 (is_causal and scale of
    ``aten::_scaled_dot_product_flash_attention``) come back on those operands; an argument
    without one has None; a value that is not one (a dict) is dropped, the operand kept."""
    raw = {"op": "aten::_scaled_dot_product_flash_attention", "calls": 1, "total_us": 3683.5,
           "args": [{"dims": [8, 16, 4096, 128], "type": "c10::BFloat16", "role": "input"}] * 3
           + [{"dims": [], "type": "Scalar", "role": "scalar", "value": 0.0},
              {"dims": [], "type": "Scalar", "role": "scalar", "value": False},
              {"dims": [], "type": "Scalar", "role": "scalar", "value": {"x": 1}},
              {"dims": [], "type": "Scalar", "role": "scalar", "value": 0.0884}]}
    inst = parse_instance(raw)
    assert inst is not None
    assert [a.value for a in inst.args] == [None, None, None, 0.0, False, None, 0.0884]
    assert isinstance(inst.args[5], Operand) and inst.args[5].dims == []


def test_distributed_is_read_only_with_a_usable_world_size() -> None:
    """{world_size 8, rank 3, nccl} is kept; a rank past the world (9 of 8) is dropped; a
    world size of 0, ``"eight"`` or none drops the block with a one-line reason (the text
    ``"8"`` reads as 8, as every count of the Top-N does through ``core.coerce``)."""
    ext, problems = parse_doc_extension({"distributed": {
        "world_size": 8, "rank": 3, "backend": "nccl", "source": "rank3.json distributedInfo"}})
    assert ext is not None and not problems and ext.distributed is not None
    d = ext.distributed
    assert (d.world_size, d.rank, d.backend, d.source) == (8, 3, "nccl",
                                                           "rank3.json distributedInfo")
    ext, _ = parse_doc_extension({"distributed": {"world_size": 8, "rank": 9, "source": "x"}})
    assert ext is not None and ext.distributed is not None and ext.distributed.rank is None
    ext, _ = parse_doc_extension({"distributed": {"world_size": "8", "source": "x"}})
    assert ext is not None and ext.distributed is not None and ext.distributed.world_size == 8
    for bad in ({"world_size": 0}, {"world_size": "eight"}, {"world_size": 2.5}, {"rank": 1},
                "8"):
        ext, problems = parse_doc_extension({"distributed": bad})
        assert ext is not None and ext.distributed is None, bad
        assert problems and "distributed" in problems[0]


def test_a_null_regime_needs_its_evidence() -> None:
    """``regime: null`` with the evidence (a training trace) is read as no regime; a null
    without any evidence says nothing and is not read at all; a missing key neither."""
    why = "no regime: not a serving run (it trains: Optimizer.step#AdamW.step recorded)"
    ext, _ = parse_doc_extension({"regime": {"regime": None, "assumed": False,
                                             "evidence": why}})
    assert ext is not None and ext.regime is not None
    assert ext.regime.regime is None and ext.regime.assumed is False
    assert ext.regime.evidence == why
    for raw in ({"regime": None, "assumed": False}, {"evidence": why}):
        ext, _ = parse_doc_extension({"regime": raw})
        assert ext is not None and ext.regime is None, raw


def test_the_schema_documents_both_new_fields() -> None:
    """``roofline schema --topn`` names ``args[].value`` and ``distributed``."""
    doc = schema()
    defs = doc["entry"]["$defs"]
    assert "value" in defs["Operand"]["properties"]
    assert "distributed" in DocExtension.model_json_schema()["properties"]
    assert "distributedInfo" in doc["description"]

"""Serving step labels (roofline_tui.importers.steps) on the strings quoted in
shared/docs/serving-annotations.md, the back-fills of doc 9.2, hostile input and the per-phase sums.

Expected numbers are written out here, or computed here from the label's own digits, never taken
from the parser."""

from __future__ import annotations

import gzip
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.importers.steps import (
    RAW_CHARS,
    Group,
    StepRecord,
    capture_label,
    parse_step_label,
    phase_aggregates,
    step_to_dict,
)
from tests.paths import REAL_FORMATS, need

VLLM_DECODE = ("execute_32_context_0(sq0sk0sqsq0sqsk0)"
               "_generation_32(sq32sk55086sqsq32sqsk55086)")
VLLM_MIXED = ("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)"
              "_generation_37(sq37sk34489sqsq37sqsk34489)")
VLLM_IDLE = "execute_0_context_0(sq0sk0sqsq0sqsk0)_generation_0(sq0sk0sqsq0sqsk0)"


def parsed(label: str) -> StepRecord:
    rec = parse_step_label(label)
    assert rec is not None, label
    return rec


# ------------------------------------------------------------------------------- vLLM


def test_vllm_detailed_decode() -> None:
    rec = parsed(VLLM_DECODE)
    assert (rec.framework, rec.family, rec.phase) == ("vllm", "vllm-detailed", "decode_only")
    assert rec.generation == Group(requests=32, sq=32, sk=55086, sqsq=32, sqsk=55086)
    assert rec.context == Group(0, 0, 0, 0, 0)
    assert rec.tokens == 32 and rec.capture_size == 32
    assert rec.has_aggregates and rec.spec_width is None
    assert rec.problems == () and rec.backfilled == ()
    assert rec.raw == VLLM_DECODE


def test_vllm_detailed_piecewise_mixed_step() -> None:
    rec = parsed(VLLM_MIXED)
    assert rec.phase == "mixed"
    assert rec.context == Group(9, 8155, 8430, 7475785, 7671310)
    assert rec.generation == Group(37, 37, 34489, 37, 34489)
    assert rec.tokens == 8192 == 8155 + 37
    assert rec.problems == ()


def test_vllm_detailed_fresh_and_chunked_examples() -> None:
    fresh = parsed("execute_14721_context_2(sq14721sk14721sqsq108745533sqsk108745533)"
                   "_generation_0(sq0sk0sqsq0sqsk0)")
    assert fresh.phase == "prefill_only" and fresh.context is not None
    assert fresh.context.sk == fresh.context.sq == 14721
    chunked = parsed("execute_14721_context_2(sq14721sk16221sqsq108745533sqsk120007533)"
                     "_generation_0(sq0sk0sqsq0sqsk0)")
    assert chunked.context is not None and chunked.context.sk == 16221
    assert chunked.context.sqsk == 120007533


def test_vllm_failed_self_check_is_kept_with_a_problem() -> None:
    rec = parsed("execute_40_context_1(sq5sk5sqsq25sqsk25)"
                 "_generation_36(sq36sk100sqsq36sqsk100)")
    assert "T=40 != c_sq + g_sq = 41" in rec.problems
    assert rec.tokens == 40  # the label's T is reported, the mismatch is flagged


def test_vllm_group_invariant_failure() -> None:
    rec = parsed("execute_4_context_0(sq0sk0sqsq0sqsk0)_generation_4(sq4sk2sqsq4sqsk2)")
    assert any("sk=2 < sq=4" in p for p in rec.problems)


def test_vllm_idle_step() -> None:
    rec = parsed(VLLM_IDLE)
    assert rec.phase == "idle" and rec.tokens == 0


def test_vllm_native_counts_only() -> None:
    rec = parsed("execute_context_2(14721)_generation_0(0)")
    assert rec.family == "vllm-native" and not rec.has_aggregates
    assert rec.context == Group(2, 14721, None, None, None)
    assert rec.phase == "prefill_only" and rec.tokens == 14721
    spec = parsed("execute_context_0(0)_generation_32(128)")  # TraceLens's speculative example
    assert spec.phase == "decode_only" and spec.spec_width == 4 == 128 // 32
    mixed = parsed("execute_context_2(6144)_generation_3(3)")
    assert mixed.phase == "mixed" and mixed.tokens == 6147


def test_vllm_legacy_new_cached() -> None:
    rec = parsed("execute_new_2_cached_30")
    assert rec.family == "vllm-legacy" and rec.tokens is None and rec.capture_size is None
    assert rec.context == Group(2, None, None, None, None)
    assert rec.generation == Group(30, None, None, None, None)
    assert rec.phase == "mixed" and not rec.has_aggregates
    assert rec.backfilled  # the new/cached reading is an assumption and says so
    assert parsed("execute_new_0_cached_64").phase == "decode_only"


def test_vllm_pair_form_tokens_and_squared_tokens() -> None:
    """The (a_b) form: Σq and Σq² of the context group (TraceLens d4e2f815 / 54c5a0a6);
    888² = 788544 is one fresh 888-token request."""
    assert 888 ** 2 == 788544
    rec = parsed("execute_context_1(888_788544)_generation_0(0)")
    assert rec.family == "vllm-pair" and rec.phase == "prefill_only"
    assert rec.context == Group(1, 888, None, 788544, None)
    assert rec.tokens == 888 and not rec.has_aggregates
    assert any("888_788544" in b and "unknown" in b for b in rec.backfilled)
    assert rec.problems == ()
    with_t = parsed("execute_900_context_1(888_788544)_generation_12(12)")
    assert with_t.tokens == 900 and with_t.phase == "mixed" and with_t.problems == ()
    assert with_t.generation == Group(12, 12, None, None, None)


def test_vllm_pair_form_inconsistent_square_is_dropped() -> None:
    rec = parsed("execute_context_2(10_5)_generation_0(0)")  # Σq² < Σq is impossible
    assert rec.context is not None and rec.context.sq == 10 and rec.context.sqsq is None
    assert any("not kept" in p for p in rec.problems)


def test_huge_integers_are_exact() -> None:
    big = 10 ** 39 + 7  # 40 digits
    assert len(str(big)) == 40
    rec = parsed(f"execute_32_context_0(sq0sk0sqsq0sqsk0)"
                 f"_generation_32(sq32sk{big}sqsq32sqsk{big})")
    assert rec.generation is not None and rec.generation.sk == big
    assert rec.generation.sqsk == big
    d = step_to_dict(rec)
    assert json.loads(json.dumps(d))["generation"]["sk"] == big
    agg = phase_aggregates([rec, rec])
    assert agg["decode"]["sk"] == 2 * big


def test_digits_beyond_the_conversion_limit_do_not_raise() -> None:
    rec = parsed("execute_context_0(0)_generation_1(" + "9" * 6000 + ")")
    assert rec.generation is not None and rec.generation.sq is None
    assert any("digits" in p for p in rec.problems)
    json.dumps(step_to_dict(rec))


# ------------------------------------------------------------------------------- SGLang


def test_sglang_variant_1_backfills() -> None:
    """#818: no c_sq / g_sq in pure-phase labels."""
    ext = parsed("step[EXTEND bs=1 toks=1025 c_sqsq=1050625 c_sqsk=1050625 c_sk=1025]")
    assert ext.context == Group(1, 1025, 1025, 1050625, 1050625)
    assert ext.generation is None and ext.phase == "prefill_only" and ext.has_aggregates
    assert any(b.startswith("c_sq = toks = 1025") for b in ext.backfilled)
    dec = parsed("step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032]")
    assert dec.generation == Group(64, 64, 100032, 64, 100032)
    assert dec.phase == "decode_only" and dec.capture_size == 64
    assert any(b.startswith("g_sq = bs = 64") for b in dec.backfilled)
    mixed = parsed("step[MIXED bs=66 c=2 g=64 c_sq=2048 c_sk=2048 c_sqsq=2097152 "
                   "c_sqsk=2097152 g_sq=64 g_sk=65600 g_sqsq=64 g_sqsk=65600]")
    assert mixed.context == Group(2, 2048, 2048, 2097152, 2097152)
    assert mixed.generation == Group(64, 64, 65600, 64, 65600)
    assert mixed.phase == "mixed" and mixed.tokens == 2048 + 64 and mixed.backfilled == ()


def test_sglang_variant_2_and_key_order() -> None:
    rec = parsed("step[DECODE bs=32 g_sq=32 g_sqsq=32 g_sqsk=50923 g_sk=50923]")
    assert rec.generation == Group(32, 32, 50923, 32, 50923) and rec.backfilled == ()
    shuffled = parsed("step[DECODE g_sk=50923 g_sqsk=50923 bs=32 g_sqsq=32 g_sq=32]")
    assert shuffled.generation == rec.generation


def test_sglang_mtp_width() -> None:
    rec = parsed("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]")
    assert rec.generation is not None and rec.generation.sq == 128
    assert rec.spec_width == 2 and rec.capture_size == 64 and rec.backfilled == ()
    # without g_sq, the uniform width is recovered from g_sqsq: sqrt(256·64) = 128
    assert math.isqrt(256 * 64) == 128
    filled = parsed("step[DECODE bs=64 g_sqsq=256 g_sqsk=262144 g_sk=131072]")
    assert filled.generation is not None and filled.generation.sq == 128
    assert filled.spec_width == 2
    assert any("round(sqrt(g_sqsq·bs)) = 128" in b for b in filled.backfilled)
    # not a square: rounded, and said
    odd = parsed("step[DECODE bs=3 g_sqsq=10 g_sqsk=30 g_sk=30]")
    assert odd.generation is not None and odd.generation.sq == round(math.sqrt(30))
    assert any("widths differ" in b for b in odd.backfilled)


def test_sglang_base_labels() -> None:
    dec = parsed("step[DECODE bs=32]")
    assert dec.generation == Group(32, 32, None, None, None) and not dec.has_aggregates
    assert any("g_sq = bs = 32" in b for b in dec.backfilled)
    ext = parsed("step[EXTEND bs=15 toks=15360]")
    assert ext.context == Group(15, 15360, None, None, None) and ext.tokens == 15360
    assert parsed("step[idle]").phase == "idle"
    assert parsed("step[IDLE bs=0]").phase == "idle"


def test_sglang_lower_case_pr_text_forms() -> None:
    assert parsed("step[decode bs=8]").generation == Group(8, 8, None, None, None)
    pre = parsed("step[prefill bs=2 toks=300]")
    assert pre.context == Group(2, 300, None, None, None) and pre.phase == "prefill_only"
    mixed = parsed("step[mixed bs=10 ext=500 dec=8]")
    assert mixed.phase == "mixed" and mixed.mode == "MIXED"
    assert mixed.generation is not None and mixed.generation.requests == 8
    assert mixed.context is not None and mixed.context.requests == 2


def test_sglang_target_verify() -> None:
    base = parsed("step[TARGET_VERIFY bs=8]")
    assert base.generation == Group(8, None, None, None, None) and base.context is None
    assert any("upstream" in b for b in base.backfilled)
    # TraceLens's own patch writes it under c_: the keys decide
    patched = parsed("step[TARGET_VERIFY bs=8 c_sq=32 c_sqsq=128 c_sqsk=4128 c_sk=1032]")
    assert patched.context == Group(8, 32, 1032, 128, 4128) and patched.generation is None
    upstream = parsed("step[TARGET_VERIFY bs=8 g_sq=32 g_sqsq=128 g_sqsk=4128 g_sk=1032]")
    assert upstream.generation == Group(8, 32, 1032, 128, 4128) and upstream.spec_width == 4


# ------------------------------------------------------------------------------- ATOM


def test_atom_padded_graph_decode() -> None:
    rec = parsed("decode[bs=117/128 tok=117 d=117]")
    assert (rec.framework, rec.mode, rec.phase) == ("atom", "decode", "decode_only")
    assert rec.capture_size == 128 and rec.generation == Group(117, 117, None, None, None)
    assert rec.problems == ()


def test_atom_prefill_with_context_list() -> None:
    rec = parsed("prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 "
                 "sqsk=108745533 sk=14721]")
    assert 7803 ** 2 + 6918 ** 2 == 108745533  # from the numbers themselves
    assert 7803 + 6918 == 14721
    assert rec.context == Group(2, 14721, 14721, 108745533, 108745533)
    assert rec.kv_lengths == (7803, 6918) and rec.has_aggregates
    assert rec.phase == "prefill_only" and rec.problems == ()
    one = parsed("prefill[bs=1 tok=1024 ctx=1024 sqsq=1048576 sqsk=1048576 sk=1024]")
    assert one.kv_lengths == (1024,) and 1024 ** 2 == 1048576


def test_atom_spec_decode() -> None:
    rec = parsed("decode[bs=32 tok=128 d=32 spec=3 sqsq=512 sqsk=262144 sk=65536]")
    assert 32 * 4 ** 2 == 512
    assert rec.spec_width == 4 and rec.generation == Group(32, 128, 65536, 512, 262144)
    assert rec.problems == () and rec.tokens == 128
    plain = parsed("decode[bs=64 tok=64 d=64 sqsq=64 sqsk=65600 sk=65600]")
    assert plain.has_aggregates and plain.spec_width is None


def test_atom_decode_holding_prefill_sequences_and_tbo() -> None:
    rec = parsed("decode[bs=8 tok=300 p=2 d=6 tbo=1]")
    assert rec.generation is not None and rec.generation.requests == 8
    assert rec.context is None and rec.tbo and rec.phase == "decode_only"
    assert any("p=2 prefill sequences" in b for b in rec.backfilled)


def test_atom_truncated_context_and_dummies() -> None:
    rec = parsed("eager_decode[bs=7 tok=7 ctx=[1, 2, 3]...+4]")
    assert rec.kv_lengths is None and rec.problems == ()
    bad = parsed("eager_decode[bs=9 tok=9 ctx=[1, 2, 3]...+4]")
    assert any("ctx lists 7" in p for p in bad.problems)
    for label in ("dummy_decode[bs=1 tok=1 d=1]", "dummy_eager_decode[bs=1 tok=1 ctx=5]",
                  "dummy_prefill[bs=1 tok=16 ctx=16]"):
        assert parsed(label).dummy


# ------------------------------------------------------------------------------- not steps


@pytest.mark.parametrize("name", [
    "ProfilerStep#6", "## Call CompiledFxGraph fxabc ##", "capture_32_FULL",
    "capture_32_DECODE", "execute_model", "execute_", "step", "step[", "dummy_run",
    "decode", "prefill_chunk", "", "aten::mm", "vllm::unified_attention_with_output",
])
def test_non_step_labels(name: str) -> None:
    assert parse_step_label(name) is None


def test_non_string_is_none() -> None:
    assert parse_step_label(None) is None  # type: ignore[arg-type]
    assert capture_label(42) is None  # type: ignore[arg-type]


def test_raw_is_capped() -> None:
    rec = parsed(VLLM_DECODE + "x" * 5000)
    assert len(rec.raw) == RAW_CHARS


# ------------------------------------------------------------------------------- capture labels


def test_capture_labels() -> None:
    assert capture_label("capture_32_FULL") == (32, "FULL")
    assert capture_label("capture_8192_PIECEWISE") == (8192, "PIECEWISE")
    assert capture_label("capture_32_draft_FULL") == (32, "draft_FULL")
    assert capture_label("capture_32_DECODE") == (32, "DECODE")
    assert capture_label("capture_graph_bs_16") == (16, "GRAPH")
    for name in ("capture_32_NONE", "capture_x_FULL", "capture_32_FULLX", VLLM_DECODE,
                 "capture_graph_bs_", "ProfilerStep#1"):
        assert capture_label(name) is None


# ------------------------------------------------------------------------------- aggregation


def test_phase_aggregates_by_hand() -> None:
    """Steps: the vLLM decode step (A), the vLLM mixed step (B), ``step[DECODE bs=32]`` (C),
    an ATOM dummy (skipped) and a vLLM idle step (skipped).

    decode = A + B + C: steps 3; requests 32 + 37 + 32 = 101; sq 32 + 37 + 32 = 101;
    sk/sqsq/sqsk None because C lacks them; 2 steps with aggregates. Per-step mean KV per
    request: A 55086/32 = 1721.4375, B 34489/37 = 932.1351…, C none; median of the two
    = (1721.4375 + 932.1351…)/2 = 1326.786…. mean_query_per_request = 101/101 = 1.

    prefill = B only: 9 requests, sq 8155, sk 8430, sqsq 7475785, sqsk 7671310;
    mean KV per request 8430/9 = 936.667; mean query per request 8155/9 = 906.111."""
    steps = [parsed(VLLM_DECODE), parsed(VLLM_MIXED), parsed("step[DECODE bs=32]"),
             parsed("dummy_decode[bs=1 tok=1 d=1]"), parsed(VLLM_IDLE)]
    agg = phase_aggregates(steps)
    assert set(agg) == {"prefill", "decode"}
    dec = agg["decode"]
    assert dec["steps"] == 3 and dec["requests"] == 101 and dec["sq"] == 101
    assert dec["sk"] is None and dec["sqsq"] is None and dec["sqsk"] is None
    assert dec["missing"] == ["sk", "sqsq", "sqsk"]
    assert dec["steps_with_aggregates"] == 2 and dec["steps_with_backfills"] == 1
    assert dec["mean_kv_per_request"] is None and dec["mean_query_per_request"] == 1
    ctx = dec["context"]
    assert ctx["values"] == 2 and "mean KV length per request" in ctx["of"]
    assert ctx["min"] == pytest.approx(932.135, abs=1e-3)
    assert ctx["max"] == pytest.approx(1721.4375, abs=1e-3)
    assert ctx["median"] == pytest.approx((1721.4375 + 34489 / 37) / 2, abs=1e-3)
    pre = agg["prefill"]
    assert (pre["steps"], pre["requests"], pre["sq"], pre["sk"], pre["sqsq"], pre["sqsk"]) == \
        (1, 9, 8155, 8430, 7475785, 7671310)
    assert pre["missing"] == [] and pre["steps_with_aggregates"] == 1
    assert pre["mean_kv_per_request"] == pytest.approx(936.667, abs=1e-3)
    assert pre["mean_query_per_request"] == pytest.approx(906.111, abs=1e-3)
    assert pre["frameworks"] == ["vllm"]
    json.dumps(agg)


def test_phase_aggregates_per_request_contexts() -> None:
    """Two ATOM prefills listing their contexts: values 7803, 6918, 1024, so min 1024,
    median 6918 and max 7803. Sums: requests 2 + 1 = 3; sq = sk = 14721 + 1024 = 15745;
    sqsq = sqsk = 108745533 + 1048576 = 109794109."""
    steps = [parsed("prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 "
                    "sqsk=108745533 sk=14721]"),
             parsed("prefill[bs=1 tok=1024 ctx=1024 sqsq=1048576 sqsk=1048576 sk=1024]")]
    agg = phase_aggregates(steps)
    assert set(agg) == {"prefill"}
    pre = agg["prefill"]
    assert (pre["requests"], pre["sq"], pre["sk"], pre["sqsq"], pre["sqsk"]) == \
        (3, 15745, 15745, 109794109, 109794109)
    assert pre["context"] == {"min": 1024, "median": 6918, "max": 7803, "values": 3,
                              "of": pre["context"]["of"]}
    assert "per request" in pre["context"]["of"] and "mean" not in pre["context"]["of"]
    assert isinstance(pre["sk"], int)


def test_phase_aggregates_empty() -> None:
    assert phase_aggregates([]) == {}
    assert phase_aggregates([parsed(VLLM_IDLE), parsed("dummy_prefill[bs=1 tok=4]")]) == {}


def test_step_to_dict_is_json_ready() -> None:
    rec = parsed("prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 "
                 "sk=14721]")
    d = json.loads(json.dumps(step_to_dict(rec)))
    assert d["context"]["sqsq"] == 108745533 and d["kv_lengths"] == [7803, 6918]
    assert d["phase"] == "prefill_only" and d["family"] == "atom"


# ------------------------------------------------------------------------------- properties

_LABELISH = st.text(alphabet="executontgraikpfldbsqmxy_()[]=/.+, 0123456789EXTNDCOMIV#",
                    max_size=120)
_PREFIXES = st.sampled_from(["", "execute_", "execute_3_context_", "execute_context_1(",
                             "execute_new_", "step[", "step[DECODE ", "step[MIXED bs=",
                             "prefill[", "decode[bs=", "eager_decode[", "dummy_decode[",
                             "capture_", "capture_32_", "capture_graph_bs_"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.builds(lambda p, s: p + s, _PREFIXES, _LABELISH)))
def test_any_string_never_raises(name: str) -> None:
    rec = parse_step_label(name)
    capture_label(name)
    if rec is not None:
        json.dumps(step_to_dict(rec))
        json.dumps(phase_aggregates([rec]))
        assert rec.phase in ("decode_only", "prefill_only", "mixed", "idle")


_N = st.integers(min_value=0, max_value=10 ** 40)


@settings(max_examples=200, deadline=None)
@given(rc=_N, rg=_N, c=st.tuples(_N, _N, _N, _N), g=st.tuples(_N, _N, _N, _N))
def test_vllm_detailed_round_trip(rc: int, rg: int, c: tuple[int, int, int, int],
                                  g: tuple[int, int, int, int]) -> None:
    t = c[0] + g[0]
    label = (f"execute_{t}_context_{rc}(sq{c[0]}sk{c[1]}sqsq{c[2]}sqsk{c[3]})"
             f"_generation_{rg}(sq{g[0]}sk{g[1]}sqsq{g[2]}sqsk{g[3]})")
    rec = parsed(label)
    assert rec.family == "vllm-detailed" and rec.tokens == t and rec.capture_size == t
    assert rec.context == Group(rc, *c) and rec.generation == Group(rg, *g)
    assert not any(p.startswith("T=") for p in rec.problems)


# ------------------------------------------------------------------------------- real traces


def _user_annotations(path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e["name"] for e in events
            if isinstance(e, dict) and e.get("cat") == "user_annotation" and "name" in e]


def test_real_vllm_decode_trace() -> None:
    path = need(REAL_FORMATS / "wild" / "tracelens_vllm_decode_full_graph_execution.json.gz")
    names = [n for n in _user_annotations(path) if n.startswith("execute_")]
    assert names
    recs = [parse_step_label(n) for n in names]
    assert all(r is not None for r in recs)
    decode = [r for r in recs if r is not None and r.phase == "decode_only"]
    assert decode and decode[0].generation is not None
    assert decode[0].generation.sk == 55086 and decode[0].problems == ()


def test_real_sglang_decode_trace() -> None:
    path = need(REAL_FORMATS / "wild" / "tracelens_sglang_qwen3-8b_decode.json.gz")
    names = _user_annotations(path)
    steps = [parse_step_label(n) for n in names if n.startswith(("execute_", "step["))]
    assert steps and all(r is not None for r in steps)
    by_family = {r.family: r for r in steps if r is not None}
    assert by_family["sglang"].generation == Group(32, 32, None, None, None)
    vllm_style = by_family["vllm-detailed"]
    assert vllm_style.generation is not None and vllm_style.generation.sk == 32785

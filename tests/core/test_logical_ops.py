"""Which kernels join an entry's logical op (core.logical_ops), on Top-N documents built here.

The link is the importer's: an instance's ``with`` lists the kernels its launching-op calls also
launched. A partner joins when (nearly) every launch of the entry in the regime had it, and it is
a companion of the same class (an attention reduce), never a memset of a GEMM's workspace."""

from __future__ import annotations

from typing import Any

from roofline_tui.core.inputs import TopNEntry, parse_topn
from roofline_tui.core.logical_ops import carrier, partners

QKV = "void paged_attention_ll4mi_QKV_mfma16_kernel<0>"
RED = "void paged_attention_ll4mi_reduce_kernel<1>"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
MEMSET = "Memset (Device)"
OP = "sglang_profiler::attention_paged_attention_ragged_100"


def _entry(name: str, pct: float, total_ms: float, calls: int, op: str,
           with_: list[tuple[str, int]]) -> dict[str, Any]:
    return {"name": name, "pct_gpu_time": pct, "total_ms": total_ms, "calls": calls,
            "x_roofline": {"instances": [{
                "op": op, "calls": calls, "total_us": total_ms * 1000,
                "by_phase": {"decode": {"calls": calls, "total_us": total_ms * 1000}},
                "with": [{"kernel": k, "calls": n} for k, n in with_]}]}}


def _class(e: TopNEntry) -> str:
    return "attn" if "attention" in e.name else "gemm" if "gemm" in e.name else "unknown"


def _topn(*entries: dict[str, Any]) -> Any:
    topn, problems = parse_topn({"top_kernels": list(entries)})
    assert not problems
    return topn


def test_a_reduce_launched_by_every_call_joins_and_points_back() -> None:
    """36 of 36 QKV launches came with a reduce from the same op call: the reduce joins the
    QKV's logical op; seen from the reduce (the smaller kernel), the QKV carries it."""
    topn = _topn(_entry(QKV, 19.9, 1.95, 36, OP, [(RED, 36)]),
                 _entry(RED, 1.8, 0.178, 36, OP, [(QKV, 36)]))
    qkv, red = topn.entries
    got = partners(qkv, topn, "decode", "attn", _class)
    assert [(p.entry.name, p.linked_calls, p.calls, p.op) for p in got] == [(RED, 36, 36, OP)]
    assert partners(red, topn, "decode", "attn", _class)[0].entry.name == QKV
    assert carrier(red, topn, "decode", "attn", _class) is not None
    assert carrier(red, topn, "decode", "attn", _class).entry.name == QKV  # type: ignore[union-attr]
    assert carrier(qkv, topn, "decode", "attn", _class) is None


def test_a_partner_on_too_few_launches_does_not_join() -> None:
    """30 of 36 (83 %) is below the 90 % the link must cover: not one logical op."""
    topn = _topn(_entry(QKV, 19.9, 1.95, 36, OP, [(RED, 30)]),
                 _entry(RED, 1.8, 0.178, 30, OP, [(QKV, 30)]))
    assert partners(topn.entries[0], topn, "decode", "attn", _class) == []


def test_a_gemm_and_its_workspace_memset_stay_apart() -> None:
    """cuBLAS zeroes a workspace before a split-K GEMM inside the same aten::mm call: the link is
    there, but only attention joins companions today, so the GEMM keeps its own model."""
    topn = _topn(_entry(GEMM, 28.0, 12.8, 241, "aten::mm", [(MEMSET, 241)]),
                 _entry(MEMSET, 1.0, 0.5, 241, "aten::mm", [(GEMM, 241)]))
    assert partners(topn.entries[0], topn, "decode", "gemm", _class) == []
    assert carrier(topn.entries[1], topn, "decode", "unknown", _class) is None


def test_a_partner_outside_the_top_n_is_not_invented() -> None:
    topn = _topn(_entry(QKV, 19.9, 1.95, 36, OP, [(RED, 36)]))
    assert partners(topn.entries[0], topn, "decode", "attn", _class) == []


def test_an_upstream_entry_without_instances_has_no_partners() -> None:
    topn = _topn({"name": QKV, "pct_gpu_time": 19.9})
    assert partners(topn.entries[0], topn, "decode", "attn", _class) == []
    assert carrier(topn.entries[0], topn, "decode", "attn", _class) is None

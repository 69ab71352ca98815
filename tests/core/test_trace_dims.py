"""Tests for roofline_tui.core.trace_dims: model dimensions from the trace's own op shapes.

The instances are built from the real cpu_op events of two graph-capture traces (TraceLens test
data) and the answers checked against the configs of the models those runs served.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.model_config import ModelShape, load_model_config
from roofline_tui.core.trace_dims import FIELDS, TraceDims, describe, dims_from_instances
from tests.paths import REAL_FORMATS, need

WILD = REAL_FORMATS / "wild"
CONFIGS = REAL_FORMATS / "configs"
VLLM_CAPTURE = WILD / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"  # gpt-oss-20b
SGLANG_CAPTURE = WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
H100_QWEN15 = WILD / "tracelens_h100_qwen1.5-0.5b.json.gz"

Entry = dict[str, Any]


def instances_from_trace(path: Path) -> list[Entry]:
    """Top-N-like entries from a chrome trace: one entry per op name, holding one instance per
    distinct (dims, types) of that op, as the importer will write them (without roles)."""
    with gzip.open(need(path), "rt", encoding="utf-8") as fh:
        raw = json.load(fh)
    events = raw["traceEvents"] if isinstance(raw, dict) else raw
    by_op: dict[str, dict[str, dict[str, Any]]] = {}
    for ev in events:
        if ev.get("cat") != "cpu_op":
            continue
        args = ev.get("args") or {}
        dims, types = args.get("Input Dims"), args.get("Input type") or []
        if not isinstance(dims, list):
            continue
        key = json.dumps([dims, types])
        inst = by_op.setdefault(ev["name"], {}).setdefault(key, {
            "op": ev["name"],
            "args": [{"dims": d, "type": types[i] if i < len(types) else ""}
                     for i, d in enumerate(dims)],
            "calls": 0,
            "total_us": 0.0,
        })
        inst["calls"] += 1
        inst["total_us"] += float(ev.get("dur") or 0.0)
    return [{"name": op, "x_roofline": {"instances": list(insts.values())}}
            for op, insts in by_op.items()]


def config_shape(name: str) -> tuple[dict[str, Any], ModelShape]:
    path = need(CONFIGS / name / "config.json")
    shape, problems = load_model_config(path)
    assert shape is not None, problems
    return json.loads(path.read_text()), shape


@pytest.fixture(scope="module")
def vllm_entries() -> list[Entry]:
    return instances_from_trace(VLLM_CAPTURE)


@pytest.fixture(scope="module")
def sglang_entries() -> list[Entry]:
    return instances_from_trace(SGLANG_CAPTURE)


def entries_copy(entries: list[Entry]) -> list[Entry]:
    return copy.deepcopy(entries)


def without(entries: list[Entry], *fragments: str) -> list[Entry]:
    return [e for e in entries_copy(entries) if not any(f in e["name"] for f in fragments)]


def instance(op: str, *args: tuple[list[Any], str] | tuple[list[Any], str, str]) -> Entry:
    built = [{"dims": a[0], "type": a[1], **({"role": a[2]} if len(a) > 2 else {})}
             for a in args]
    return {"x_roofline": {"instances": [{"op": op, "args": built, "calls": 1, "total_us": 1.0}]}}


def op_instances(entries: list[Entry], fragment: str) -> list[dict[str, Any]]:
    return [inst for e in entries if fragment in e["name"] for inst in e["x_roofline"]["instances"]]


# --------------------------------------------------------------------------- real traces


def test_vllm_capture_matches_the_gpt_oss_config(vllm_entries: list[Entry]) -> None:
    cfg, shape = config_shape("gpt-oss-20b")
    dims = dims_from_instances(vllm_entries)

    assert dims.hidden_size == cfg["hidden_size"] == shape.hidden_size
    assert dims.num_attention_heads == cfg["num_attention_heads"]
    assert dims.num_kv_heads == cfg["num_key_value_heads"]
    assert dims.head_dim == cfg["head_dim"] == shape.head_dim
    # the cache tensor's raw type is the model's activation dtype (no fp8 cache in this run)
    assert dims.kv_cache_dtype is not None
    assert canonical_dtype(dims.kv_cache_dtype) == shape.kv_dtype
    # an MoE model: its MLP runs inside vllm::moe_forward, no dense act-and-mul to read
    assert dims.intermediate_size is None

    hidden = dims.evidence_for("hidden_size") or ""
    assert "norm" in hidden and f"[{cfg['hidden_size']}]" in hidden
    assert "confirmed by aten::" in hidden
    assert "unified_attention" in (dims.evidence_for("num_attention_heads") or "")
    assert dims.unresolved == ()


def test_sglang_capture_matches_the_qwen3_config(sglang_entries: list[Entry]) -> None:
    cfg, shape = config_shape("Qwen3-8B")
    dims = dims_from_instances(sglang_entries)

    assert dims.hidden_size == cfg["hidden_size"]
    assert dims.num_attention_heads == cfg["num_attention_heads"]
    assert dims.num_kv_heads == cfg["num_key_value_heads"]
    assert dims.head_dim == cfg["head_dim"]
    assert dims.intermediate_size == cfg["intermediate_size"] == shape.intermediate_size
    assert dims.kv_cache_dtype is not None
    assert canonical_dtype(dims.kv_cache_dtype) == shape.kv_dtype
    assert "paged_attention_ragged" in (dims.evidence_for("num_kv_heads") or "")
    assert "silu_and_mul" in (dims.evidence_for("intermediate_size") or "")
    # Qwen3's per-head q/k norms (weight [head_dim]) are seen and not taken for the hidden size
    assert any(str(cfg["head_dim"]) in n and "not read as the hidden size" in n
               for n in dims.notes)


def test_sdpa_and_flash_layouts_agree_on_the_h100_trace() -> None:
    # aten::scaled_dot_product_attention is [B, H, S, d], aten::_flash_attention_forward
    # [B, S, H, d]; reading either the other way would make 559 (the sequence) a head count
    # and the two would conflict.
    cfg, shape = config_shape("Qwen1.5-0.5B-Chat")
    dims = dims_from_instances(instances_from_trace(H100_QWEN15))
    assert dims.num_attention_heads == cfg["num_attention_heads"]
    assert dims.num_kv_heads == cfg["num_key_value_heads"]
    assert dims.head_dim == shape.head_dim == cfg["hidden_size"] // cfg["num_attention_heads"]
    assert dims.unresolved == ()
    # HF transformers computes its RMSNorm from elementwise ops: no norm op, no hidden size,
    # and its MLP has a bare aten::silu, no act-and-mul
    assert dims.hidden_size is None and dims.intermediate_size is None


# --------------------------------------------------------------------------- the rules


def test_roles_are_used_when_present(sglang_entries: list[Entry]) -> None:
    cfg, _ = config_shape("Qwen3-8B")
    (attn,) = op_instances(sglang_entries, "paged_attention_ragged")
    roles = ["output", "workspace", "input", "cache", "cache", "index", "index", "index",
             "scalar", "scale", "scale", "other"]
    # move the query to the end: only the roles can still find it
    args = [dict(a, role=r) for a, r in zip(attn["args"], roles)]
    args.append(args.pop(2))
    renamed = {"x_roofline": {"instances": [dict(attn, op="engine::paged_attention_ragged_x",
                                                 args=args)]}}
    dims = dims_from_instances([renamed])
    assert dims.num_attention_heads == cfg["num_attention_heads"]
    assert dims.num_kv_heads == cfg["num_key_value_heads"]
    assert dims.head_dim == cfg["head_dim"]

    (act,) = op_instances(sglang_entries, "silu_and_mul")
    with_roles = dict(act, args=[dict(act["args"][0], role="output"),
                                 dict(act["args"][1], role="input")])
    got = dims_from_instances([{"x_roofline": {"instances": [with_roles]}}])
    assert got.intermediate_size == cfg["intermediate_size"]


def test_guessed_or_empty_roles_fall_back_to_the_known_order(sglang_entries: list[Entry]) -> None:
    cfg, _ = config_shape("Qwen3-8B")
    (attn,) = op_instances(sglang_entries, "paged_attention_ragged")
    # roles the importer only guessed (not from its op table) are not trusted ...
    guessed = dict(attn, roles_from="positional: no table entry",
                   args=[dict(a, role="input") for a in attn["args"]])
    # ... and roles that say nothing ("other", null) leave the positional reading
    vague = dict(attn, args=[dict(a, role=("other" if i % 2 else None))
                             for i, a in enumerate(attn["args"])])
    for inst in (guessed, vague):
        dims = dims_from_instances([{"x_roofline": {"instances": [inst]}}])
        assert (dims.num_attention_heads, dims.num_kv_heads, dims.head_dim) == (
            cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"])


def test_importer_shapes_null_op_null_dims_and_tensor_lists() -> None:
    dims = dims_from_instances([{"x_roofline": {"instances": [
        {"op": None, "calls": 3, "total_us": 1.0},
        {"op": "vllm::unified_attention", "roles_from": "table:vllm::unified_attention",
         "args": [{"dims": [32, 32, 128], "type": "c10::BFloat16", "role": "input"},
                  {"dims": None, "type": None, "role": "input"},
                  {"dims": [[32, 8, 128], [32, 8, 128]], "type": "TensorList", "role": "input"},
                  {"dims": [32, 8, 128], "type": "c10::BFloat16", "role": "input"}]},
    ]}}])
    # the TensorList and the null position are not tensors; the last input is the key
    assert (dims.num_attention_heads, dims.num_kv_heads, dims.head_dim) == (32, 8, 128)


def test_conflicting_heads_are_left_unset(vllm_entries: list[Entry]) -> None:
    entries = entries_copy(vllm_entries)
    entries.append(instance("vllm::unified_attention_with_output",
                            ([32, 32, 64], "c10::BFloat16"), ([32, 8, 64], "c10::BFloat16"),
                            ([32, 8, 64], "c10::BFloat16"), ([32, 32, 64], "c10::BFloat16")))
    dims = dims_from_instances(entries)
    assert dims.num_attention_heads is None
    why = dims.unresolved_for("num_attention_heads") or ""
    assert "disagrees" in why and "64" in why and "32" in why
    assert any(line.startswith("num_attention_heads not taken") for line in describe(dims))
    # the fields the new op agrees on stay set
    assert (dims.num_kv_heads, dims.head_dim, dims.hidden_size) == (8, 64, 2880)


def test_conflicting_hidden_sizes_are_left_unset(vllm_entries: list[Entry]) -> None:
    # a second residual norm of 4096: both 2880 and 4096 are some GEMM's K, so nothing settles it
    entries = entries_copy(vllm_entries)
    entries.append(instance("vllm::fused_add_rms_norm", ([32, 4096], "c10::BFloat16"),
                            ([32, 4096], "c10::BFloat16"), ([4096], "c10::BFloat16")))
    dims = dims_from_instances(entries)
    assert dims.hidden_size is None
    why = dims.unresolved_for("hidden_size") or ""
    assert "2880" in why and "4096" in why


def test_conflicting_cache_dtypes_are_left_unset(sglang_entries: list[Entry]) -> None:
    entries = entries_copy(sglang_entries)
    entries.append(instance("_C_cache_ops::reshape_and_cache_flash",
                            ([32, 8, 128], "c10::BFloat16"), ([32, 8, 128], "c10::BFloat16"),
                            ([4096, 16, 8, 128], "unsigned char"),
                            ([4096, 16, 8, 128], "unsigned char"), ([32], "long int")))
    dims = dims_from_instances(entries)
    assert dims.kv_cache_dtype is None
    assert "unsigned char" in (dims.unresolved_for("kv_cache_dtype") or "")


def test_per_head_norms_without_residual_norms(sglang_entries: list[Entry]) -> None:
    cfg, _ = config_shape("Qwen3-8B")
    plain = without(sglang_entries, "add")
    assert op_instances(plain, "rmsnorm")  # the plain norms (hidden and q/k) are left
    # the attention head size rules out the [head_dim] q/k norm weights
    assert dims_from_instances(plain).hidden_size == cfg["hidden_size"]
    # with no attention op either, the GEMMs pick the width that is some GEMM's K or N
    no_attn = without(plain, "attention", "kv_buffer", "store_cache")
    dims = dims_from_instances(no_attn)
    assert dims.head_dim is None
    assert dims.hidden_size == cfg["hidden_size"]
    # and with no GEMM to tell them apart, the norms conflict
    bare = without(no_attn, "aten::mm", "aten::linear", "aten::matmul", "aten::addmm")
    dims = dims_from_instances(bare)
    assert dims.hidden_size is None
    why = dims.unresolved_for("hidden_size") or ""
    assert str(cfg["hidden_size"]) in why and str(cfg["head_dim"]) in why


def test_a_cache_writer_catches_a_misread_paged_cache(sglang_entries: list[Entry]) -> None:
    # the same run with the cache laid out [pages, H_KV, page, d] (page 16): read as
    # [pages, page, H_KV, d] it says 16 KV heads, which still divides 32; the key the cache
    # writer stores, [T, H_KV, d], says 8, so the field is left unset
    entries = entries_copy(sglang_entries)
    for inst in op_instances(entries, "paged_attention_ragged"):
        for i in (3, 4):
            inst["args"][i]["dims"] = [52242, 8, 16, 128]
    dims = dims_from_instances(entries)
    assert dims.num_kv_heads is None
    why = dims.unresolved_for("num_kv_heads") or ""
    assert "16 from" in why and "8 from" in why and "set_kv_buffer" in why
    assert dims.num_attention_heads == 32 and dims.head_dim == 128


def test_moe_ops_keep_the_act_and_mul_width_out(sglang_entries: list[Entry]) -> None:
    entries = entries_copy(sglang_entries)
    entries.append(instance("vllm::moe_forward", ([32, 4096], "c10::BFloat16"),
                            ([32, 128], "c10::BFloat16")))
    dims = dims_from_instances(entries)
    assert dims.intermediate_size is None
    assert "MoE" in (dims.unresolved_for("intermediate_size") or "")


def test_unknown_four_d_attention_is_not_guessed() -> None:
    dims = dims_from_instances([instance("myengine::attention_fwd",
                                         ([16, 16, 559, 64], "c10::BFloat16"),
                                         ([16, 16, 559, 64], "c10::BFloat16"))])
    assert dims.is_empty()
    assert any("myengine::attention_fwd" in n for n in dims.notes)


def test_generic_token_major_attention_needs_a_key() -> None:
    q_only = dims_from_instances([instance("myengine::attention_decode",
                                           ([32, 32, 128], "c10::BFloat16"))])
    assert q_only.num_attention_heads is None
    both = dims_from_instances([instance("myengine::attention_decode",
                                         ([32, 32, 128], "c10::BFloat16"),
                                         ([32, 8, 128], "c10::BFloat16"))])
    assert (both.num_attention_heads, both.num_kv_heads, both.head_dim) == (32, 8, 128)


def test_heads_that_are_not_grouped_query_are_not_read() -> None:
    # 48 query heads over 32 key heads: a misread layout, not GQA
    dims = dims_from_instances([instance("vllm::unified_attention",
                                         ([32, 48, 64], "c10::BFloat16"),
                                         ([32, 32, 64], "c10::BFloat16"))])
    assert dims.num_attention_heads is None and dims.num_kv_heads is None
    assert dims.notes


def test_latent_attention_is_not_read() -> None:
    dims = dims_from_instances([instance("vllm::mla_decode_attention",
                                         ([32, 16, 576], "c10::BFloat16"),
                                         ([32, 1, 576], "c10::BFloat16"))])
    assert dims.head_dim is None and any("latent" in n for n in dims.notes)


# --------------------------------------------------------------------------- empty / hostile


@pytest.mark.parametrize("entries", [[], [{}], [{"x_roofline": {}}],
                                     [{"x_roofline": {"instances": []}}]])
def test_empty_input_gives_nothing(entries: list[Entry]) -> None:
    dims = dims_from_instances(entries)
    assert dims == TraceDims()
    assert dims.is_empty() and all(getattr(dims, f) is None for f in FIELDS)
    assert describe(dims) == [] and dims.unresolved == () and dims.notes == ()


@pytest.mark.parametrize("junk", [
    "not a list",
    [None, 3, "x", [], {"x_roofline": "no"}, {"x_roofline": {"instances": "no"}}],
    [{"x_roofline": {"instances": [None, {"op": 5}, {"op": "aten::mm", "args": "x"}]}}],
    [instance("vllm::unified_attention", ([True, 8, 64], "x"), ([-1, 8, 64], "x"))],
    [instance("vllm::unified_attention", ([10**30, 8, 64], "x"), ([1.5, 8, 64], "x"))],
    [instance("aiter::rms_norm", ([32, 0], "x"), ([0], "x"))],
    [instance("vllm::unified_attention", ([32, 0, 64], "x"), ([32, 0, 64], "x"))],
    [instance("_C::silu_and_mul", ([32, 7], "x"))],
])
def test_malformed_input_never_raises(junk: Any) -> None:
    dims = dims_from_instances(junk)
    assert dims.is_empty()
    for line in describe(dims):
        assert "\n" not in line


def test_a_role_that_is_not_text_is_ignored() -> None:
    # vLLM's query alone is trusted; a junk role leaves the positional reading
    dims = dims_from_instances([{"x_roofline": {"instances": [
        {"op": "vllm::unified_attention", "args": [{"dims": [32, 8, 64], "role": 7}]}]}}])
    assert (dims.num_attention_heads, dims.head_dim, dims.num_kv_heads) == (8, 64, None)


def test_names_and_types_are_made_printable() -> None:
    dims = dims_from_instances([
        instance("vllm::unified_attention\x1b[2J", ([32, 32, 128], "c10::BFloat16\x1b]52"),
                 ([32, 8, 128], "c10::BFloat16")),
        instance("_C_cache_ops::reshape_and_cache_flash", ([32, 8, 128], "b"),
                 ([32, 8, 128], "b"), ([64, 16, 8, 128], "c10::Float8\u202e"),
                 ([64, 16, 8, 128], "c10::Float8\u202e")),
    ])
    assert dims.num_attention_heads == 32
    assert dims.kv_cache_dtype is not None and "\u202e" not in dims.kv_cache_dtype
    for line in describe(dims) + list(dims.notes):
        assert "\x1b" not in line and "\u202e" not in line and "\n" not in line


def test_describe_gives_one_line_per_field(sglang_entries: list[Entry]) -> None:
    dims = dims_from_instances(sglang_entries)
    lines = describe(dims)
    assert len(lines) == len(FIELDS)
    for field, line in zip(FIELDS, lines):
        assert line.startswith(f"{field} {getattr(dims, field)} from the trace: ")
        assert "arg " in line and "[" in line  # which argument, its dims


def test_trace_dims_is_frozen() -> None:
    dims = TraceDims(hidden_size=8)
    with pytest.raises(ValidationError):
        dims.hidden_size = 9  # type: ignore[misc]
    hash(dims)

"""Stage B: the three real meta.json layouts, regime.json and workload.json."""

from __future__ import annotations

import json

import pytest

from roofline_tui.core.measured import (
    CapturedShapes,
    discover_task_dirs,
    load_task_dir,
    match_task,
)
from tests.paths import needs_shared

from .helpers import FIXTURES, UPSTREAM

EVAL = FIXTURES / "eval"
KERNELS = EVAL / "kernels"


def _load(name):
    dirs = {d.parent.name if d.name == "ut" else d.name: d for d in discover_task_dirs(EVAL)}
    shapes, problems = load_task_dir(dirs[name])
    return shapes, problems


def test_discover_task_dirs_including_ut_layout():
    dirs = discover_task_dirs(EVAL)
    rel = [d.relative_to(KERNELS).as_posix() for d in dirs]
    assert rel == [
        "_fwd_grouped_kernel_stage1_task",
        "fused_moe_kernel_task",
        "gqa_share_sparse_decode_kernel_task/ut",
        "no_meta_task",
    ]
    assert discover_task_dirs(FIXTURES / "nowhere") == []


@needs_shared
def test_moe_meta_layout():
    meta = json.loads((UPSTREAM / "meta.glm-5.3-flash__fused_moe_kernel.json").read_text())
    shapes, problems = _load("fused_moe_kernel_task")
    assert problems == []
    assert shapes.layout == "moe-op-meta"
    assert shapes.kernel == "fused_moe_kernel" and shapes.op_kind == "moe"
    moe = shapes.moe
    assert (moe.num_experts, moe.top_k, moe.hidden_size, moe.intermediate_size_per_tp) == (
        meta["num_experts"],
        meta["top_k"],
        meta["hidden_size"],
        meta["intermediate_size_per_tp"],
    )
    assert moe.weight_dtype == "fp8" and moe.compute_dtype == "bf16"
    assert moe.block_quant_shape == [128, 128]
    assert moe.m_buckets == meta["m_buckets"] and moe.decode_m_buckets == [1, 64]
    assert shapes.weight_dtype == "fp8" and shapes.activation_dtype == "fp8"
    assert shapes.kv_dtype == "bf16"
    wl = meta["workload"]["cases"]
    assert [c.name for c in shapes.cases] == [c["name"] for c in wl]
    assert [c.m for c in shapes.cases] == [c["m"] for c in wl]
    assert [c.input_shapes for c in shapes.cases] == [c["dims"] for c in wl]
    assert [c.count for c in shapes.cases] == [c["weight_norm"] for c in wl]
    assert all(c.params["count_basis"] == "weight_norm" for c in shapes.cases)
    smoke = {c["sig"]: c["baseline_ms"] for c in meta["smoke_detail"]["per_case"]}
    by_name = {c.name: c for c in shapes.cases}
    assert by_name["decode_M64"].latency_ms == smoke["moe_m64_decode"]
    assert by_name["prefill_M8192"].latency_ms == smoke["moe_m8192_prefill"]
    assert by_name["decode_M64"].regime == "decode"
    assert by_name["decode_M64"].dtypes == ["fp8", "fp8"]


@needs_shared
def test_geak_op_task_layout_with_regime_and_workload():
    meta = json.loads(
        (UPSTREAM / "meta.kimi-k3__fwd_grouped_kernel_stage1.TRIMMED.json").read_text()
    )
    wl = json.loads((UPSTREAM / "workload.kimi-k3__fwd_grouped_kernel_stage1.json").read_text())
    shapes, problems = _load("_fwd_grouped_kernel_stage1_task")
    assert problems == []
    assert shapes.layout == "geak-op-task-v1" and shapes.op_kind == "attn"
    assert shapes.kernel == "_fwd_grouped_kernel_stage1"
    assert [c.name for c in shapes.cases] == [c["name"] for c in wl["cases"]]
    assert [c.input_shapes for c in shapes.cases] == [c["input_shapes"] for c in meta["cases"]]
    assert all(c.dtypes == ["bf16"] for c in shapes.cases)
    first = shapes.cases[0]
    assert first.params["num_q_heads"] == meta["geometry"]["num_q_heads"] == 12
    assert first.params["ctx_per_seq"] == meta["cases"][0]["ctx_per_seq"]
    assert first.m == meta["cases"][0]["bs"]
    # regime.json: no quant -> weights fall back to the workload quant (bf16); kv 'auto'
    assert shapes.weight_dtype == "bf16" and shapes.activation_dtype == "bf16"
    assert shapes.kv_dtype == "bf16"
    assert any("auto" in n for n in shapes.notes)
    # every weight in this real workload is 0 ("prior"): say the cases are unweighted
    assert all(c.count == 0 for c in shapes.cases)
    assert any("unweighted" in n for n in shapes.notes)
    assert shapes.served_regimes == ["decode"]


@needs_shared
def test_raw_capture_layout_in_ut_dir():
    meta = json.loads(
        (UPSTREAM / "meta.minimax-m3__gqa_share_sparse_decode_kernel.TRIMMED.json").read_text()
    )
    shapes, problems = _load("gqa_share_sparse_decode_kernel_task")
    assert shapes.layout == "raw-capture"
    assert shapes.kernel == "gqa_share_sparse_decode_kernel"
    assert "flash_decode_with_gqa_share_sparse" in shapes.aliases
    sc = meta["shape_counts"]
    assert len(shapes.cases) == len(sc)
    assert [c.count for c in shapes.cases] == [s["count"] for s in sc]
    assert [c.input_shapes for c in shapes.cases] == [s["input_shapes"] for s in sc]
    assert all(c.regime == "decode" for c in shapes.cases)
    assert all(c.params["count_basis"] == "calls" for c in shapes.cases)
    sigs = {c["sig"]: c for c in meta["cases"]}
    joined = [c for c in shapes.cases if c.name in sigs]
    assert joined and all(c.m == sigs[c.name]["batch_size"] for c in joined)
    assert all(c.params["num_q_heads"] == 8 for c in joined)
    assert shapes.kv_dtype is None  # no regime.json, no quant fields
    # the trimmed histogram covers fewer calls than total_calls_observed: reported
    assert any("shape_counts cover" in p for p in problems)


def test_task_without_meta_json():
    shapes, problems = load_task_dir(KERNELS / "no_meta_task")
    assert shapes is None
    assert problems == ["no_meta_task: no meta.json; captured shapes unavailable"]


def test_unknown_layout_without_workload(tmp_path):
    (tmp_path / "meta.json").write_text('{"hello": 1}')
    shapes, problems = load_task_dir(tmp_path)
    assert shapes is None and "no known layout" in problems[0]


def test_workload_only_layout_with_counts_and_latency(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"kernel_hint": "rms"}))
    (tmp_path / "workload.json").write_text(
        json.dumps(
            {
                "schema": "workload-v1",
                "kernel": "rms_norm_kernel",
                "op_kind": "elementwise",
                "cases": [
                    {
                        "dims": [[64, 4096]],
                        "dtypes": ["c10::BFloat16"],
                        "count": 100,
                        "baseline_latency_ms": 0.004,
                        "regime": "decode",
                    },
                    {
                        "dims": [[8192, 4096]],
                        "dtypes": ["c10::BFloat16"],
                        "count": 10,
                        "weight": 900.0,
                        "regime": "prefill",
                    },
                ],
            }
        )
    )
    shapes, problems = load_task_dir(tmp_path)
    assert problems == []
    assert shapes is not None
    assert shapes.layout == "workload-only" and shapes.kernel == "rms_norm_kernel"
    a, b = shapes.cases
    assert (a.count, a.latency_ms, a.dtypes) == (100, 0.004, ["bf16"])
    assert b.latency_ms == pytest.approx(0.09)  # weight (us) / count / 1000


def _matched(tasks: list[CapturedShapes], name: str) -> CapturedShapes:
    found = match_task(tasks, name)
    assert found is not None, name
    return found


def test_match_task():
    tasks = [s for d in discover_task_dirs(EVAL) if (s := load_task_dir(d)[0]) is not None]
    assert len(tasks) == 3
    assert _matched(tasks, "fused_moe_kernel").layout == "moe-op-meta"
    assert _matched(tasks, "_fwd_grouped_kernel_stage1").layout == "geak-op-task-v1"
    assert _matched(tasks, "gqa_share_sparse_decode_kernel").layout == "raw-capture"
    assert _matched(tasks, "fused_moe_kernel_0d1d2d3d").kernel == "fused_moe_kernel"
    assert match_task(tasks, "ncclDevKernel_AllReduce") is None
    assert match_task([], "fused_moe_kernel") is None

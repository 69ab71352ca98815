"""Split-stage MoE in a trace (issue 12, item 1): one GPU kernel that runs both GEMMs of the MoE
layer, launched once inside ``aiter::ck_moe_stage1`` and once inside ``aiter::ck_moe_stage2``
per layer, becomes one Top-N entry per stage, each with its own launches, time and weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.torch import import_torch

KERNEL = "ck_moe_gemm_kernel_bf16"  # says neither stage
HID, INTER, E = 2048, 768, 128      # Qwen3-30B-A3B: hidden, moe_intermediate, experts
W1 = [E, 2 * INTER, HID]            # stage 1 (gate/up) expert weight
W2 = [E, HID, INTER]                # stage 2 (down)


def _layer(t0: float, corr: int, layers: int) -> list[dict[str, Any]]:
    """One decode step: ``layers`` MoE layers, each a stage-1 and a stage-2 launch of KERNEL
    (150 µs and 100 µs), plus one launch outside any stage op (10 µs)."""
    ev: list[dict[str, Any]] = []
    t = t0
    for _ in range(layers):
        for op, w, dur in (("aiter::ck_moe_stage1", W1, 150.0),
                             ("aiter::ck_moe_stage2", W2, 100.0)):
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 7, "ts": t,
                       "dur": 200.0, "args": {"Input Dims": [[64, HID], w], "Input type":
                                             ["c10::BFloat16", "c10::BFloat16"]}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1,
                       "tid": 7, "ts": t + 5, "dur": 3.0, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": KERNEL, "pid": 0, "tid": 0,
                       "ts": t + 100, "dur": dur, "args": {"correlation": corr, "device": 0}})
            corr += 1
            t += 250
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 7,
               "ts": t + 5, "dur": 3.0, "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "kernel", "name": KERNEL, "pid": 0, "tid": 0, "ts": t + 100,
               "dur": 10.0, "args": {"correlation": corr, "device": 0}})
    # the decode step on the GPU timeline: 64 sequences in generation
    ev.append({"ph": "X", "cat": "gpu_user_annotation", "pid": 0, "tid": 0, "ts": t0 + 90,
               "dur": t - t0 + 100, "name": "execute_context_0(0)_generation_64(64)",
               "args": {"device": 0}})
    return ev


def _trace(tmp_path: Path, steps: int = 3, layers: int = 4) -> Path:
    events: list[dict[str, Any]] = []
    for s in range(steps):
        events += _layer(10_000.0 * s, 1000 * s + 1, layers)
    path = tmp_path / "moe.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_one_kernel_for_both_stages_is_split_by_its_launching_op(tmp_path: Path) -> None:
    """3 steps × 4 layers: 12 stage-1 launches of 150 µs (1,800 µs), 12 stage-2 launches of
    100 µs (1,200 µs), and 3 launches outside a stage op (30 µs), of a total of 3,030 µs."""
    doc = import_torch(_trace(tmp_path), progress=False).doc
    by_name = {k["name"]: k for k in doc["top_kernels"]}
    s1, s2, rest = by_name[f"{KERNEL} [stage1]"], by_name[f"{KERNEL} [stage2]"], by_name[KERNEL]
    assert (s1["calls"], s1["total_ms"], s1["avg_us"]) == (12, 1.8, 150.0)
    assert (s2["calls"], s2["total_ms"], s2["avg_us"]) == (12, 1.2, 100.0)
    assert (rest["calls"], rest["total_ms"]) == (3, 0.03)
    assert s1["pct_gpu_time"] == round(100 * 1800 / 3030, 2)
    # each stage carries the weights its own op recorded
    assert s1["shapes"] == [[[64, HID], W1]] and s2["shapes"] == [[[64, HID], W2]]
    assert rest["shapes"] == []
    # short names stay apart, and the note says where the split came from
    assert (s1["short_name"], s2["short_name"]) == (f"{KERNEL}.stage1", f"{KERNEL}.stage2")
    assert "aiter::ck_moe_stage1 (12)" in s1["notes"][0]
    assert doc["num_kernel_launches"] == 27 and doc["total_gpu_time_ms"] == 3.03


def test_a_kernel_that_names_its_stage_is_not_relabelled(tmp_path: Path) -> None:
    path = _trace(tmp_path, steps=1, layers=2)
    text = path.read_text().replace(KERNEL, "ck_moe_stage1_kernel_bf16")
    path.write_text(text)
    doc = import_torch(path, progress=False).doc
    assert [k["name"] for k in doc["top_kernels"]] == ["ck_moe_stage1_kernel_bf16"]


def test_a_non_moe_kernel_inside_a_stage_op_keeps_its_name(tmp_path: Path) -> None:
    path = _trace(tmp_path, steps=1, layers=2)
    path.write_text(path.read_text().replace(KERNEL, "dynamic_per_token_scaled_quant_kernel"))
    doc = import_torch(path, progress=False).doc
    assert [k["name"] for k in doc["top_kernels"]] == ["dynamic_per_token_scaled_quant_kernel"]


CONFIG = {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": HID,
          "moe_intermediate_size": INTER, "num_experts": E, "num_experts_per_tok": 8,
          "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
          "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936,
          "torch_dtype": "bfloat16"}


def test_each_stage_is_modelled_alone(tmp_path: Path) -> None:
    """Qwen3-30B-A3B at M = 64 on MI355X (8 TB/s), bf16, top-8 of 128 experts:
    pairs = 64·8 = 512; experts_hit = 128·(1 − (127/128)^512) = 125.69.

    * stage 1 streams hit·2·I·H·2 B = 125.69 · 6,291,456 = 790.8 MB of w1, plus M·H·2 = 0.26 MB
      in and pairs·2I·2 = 1.57 MB out: 792.6 MB per 150 µs launch = 5.28 TB/s, 0.66 of the roof;
    * stage 2 streams hit·H·I·2 B = 395.4 MB of w2, plus pairs·I·2 = 0.79 MB in and
      M·H·2 = 0.26 MB out: 396.4 MB per 100 µs launch = 3.96 TB/s, 0.50 of the roof.

    Modelled as a whole layer against one stage's time (before the split) the stage-1 entry
    would carry both weights, 1,188 MB, and read 0.99: saturated."""
    from roofline_tui.core.rounds.analysis import analyze_round
    from roofline_tui.importers.common import write_round

    res = import_torch(_trace(tmp_path), progress=False)
    round_dir = tmp_path / "round"
    write_round(res.doc, round_dir)
    (round_dir / "config.json").write_text(json.dumps(CONFIG))
    (round_dir / "env_report.json").write_text(json.dumps({"gfx": "gfx950", "product": "MI355X"}))
    art = analyze_round(round_dir).artifact
    s1 = art.entry(f"{KERNEL}.stage1")
    s2 = art.entry(f"{KERNEL}.stage2")
    assert s1 is not None and s2 is not None
    assert s1.bytes_est == pytest.approx(792.6e6, rel=1e-3)
    assert s2.bytes_est == pytest.approx(396.4e6, rel=1e-3)
    assert s1.roofline_pct == pytest.approx(0.66, abs=0.005)
    assert s2.roofline_pct == pytest.approx(0.50, abs=0.005)
    # "why this number?": the entry says which part of the layer it modelled, and why
    assert "kernel name says stage 1 ('stage1')" in s1.model_dump_json()
    assert "kernel name says stage 2 ('stage2')" in s2.model_dump_json()

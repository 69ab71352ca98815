"""A trace that is not a serving run (training, a CNN) gets no regime, said once, and its
kernels without shapes are told why in the trace's own terms (issue 31 item 5): no
graph-replay claim where no graph ran, no reason blaming a missing config.json that no CNN
has. The traces are built here (kernel names as MIOpen, rocBLAS/Tensile and PyTorch print
them on MI210), or read from the shared folder when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.analyze import AnalyzeOptions, pick_regime
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.inputs import load_topn
from roofline_tui.core.rounds.analysis import RoundSources, analyze_round
from roofline_tui.importers.torch import import_torch
from tests.paths import REAL_FORMATS, need

MI210_TRACE = REAL_FORMATS / "wild" / "tracelens_mi210_gpu_only_trace.json.gz"
BN_BWD = ("void at::native::batch_norm_backward_kernel<c10::BFloat16, c10::BFloat16, float, "
          "int>(at::GenericPackedTensorAccessor<c10::BFloat16 const, 1ul>)")
CONV_WRW = "igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_ws2x1_wr2x2_ta1x4x1x4"
GEMM = "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT32x32x64_MI16x16x1_SN_LDSB0"


def gpu_only_training(tmp_path: Path) -> Path:
    """A GPU-only trace (kernels and their launch calls, no cpu_op): a batch-norm backward
    (3 × 400 µs), an MIOpen weight-gradient convolution (2 × 300 µs) and a Tensile GEMM
    (1 × 200 µs): a CNN's training step."""
    ev: list[dict[str, Any]] = []
    i = 0
    for name, n, dur in ((BN_BWD, 3, 400.0), (CONV_WRW, 2, 300.0), (GEMM, 1, 200.0)):
        for _ in range(n):
            t = 1000.0 + 1000.0 * i
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t, "dur": 5, "args": {"correlation": 100 + i}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 2, "tid": 7,
                       "ts": t + 20, "dur": dur, "args": {"device": 0, "correlation": 100 + i}})
            i += 1
    path = tmp_path / "gpu_only.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def analysed(tmp_path: Path, trace: Path) -> Artifact:
    round_dir = tmp_path / "round_0"
    round_dir.mkdir()
    (round_dir / "profile_topN.json").write_text(json.dumps(
        import_torch(trace, progress=False).doc))
    return analyze_round(round_dir, RoundSources(device="MI210"),
                         AnalyzeOptions(head_threshold_pct=1.0, max_heads=20)).artifact


def reasons(art: Artifact) -> list[str]:
    return [d.reason for d in art.degraded] + [e.notes for e in art.entries]


def test_a_training_trace_has_no_regime_said_once(tmp_path: Path) -> None:
    """Every entry's regime is null, none is flagged regime-assumed, no entry's notes open with
    a "Regime:" sentence; the reason (the 1,200 µs batch-norm backward says it trains) is one
    line of the artifact's profile notes."""
    art = analysed(tmp_path, gpu_only_training(tmp_path))
    assert [e.regime for e in art.entries] == [None, None, None]
    assert not any(e.regime_assumed for e in art.entries)
    assert not any("Regime:" in e.notes for e in art.entries)
    said = [n for n in art.profile_notes if n.startswith("no regime")]
    assert len(said) == 1 and "batch_norm_backward_kernel" in said[0]
    assert all("decode" not in e.notes for e in art.entries)


def test_no_graph_replay_claim_and_no_config_blame_without_shapes(tmp_path: Path) -> None:
    """The GEMM has no shapes because the trace has no cpu_op at all, not because a graph was
    replayed (there is no graph launch); the batch-norm backward has none for the same reason,
    and no config.json would size a CNN's tensors: neither reason says "graph-replayed" or
    "no model config.json found"."""
    art = analysed(tmp_path, gpu_only_training(tmp_path))
    gemm = next(e for e in art.entries if e.name == GEMM)
    assert not gemm.modeled
    assert "GPU-only trace" in gemm.notes and "graph" not in gemm.notes.lower()
    for why in reasons(art):
        assert "graph-replayed" not in why and "no model config.json found" not in why
    assert art.graph_replay is None
    assert not any("MoE/attention heads" in str(p) for p in art.skill_errors)


def test_pick_regime_is_none_only_for_a_trace_that_says_so(tmp_path: Path) -> None:
    """The Top-N's null regime is read as no regime (None, not assumed); a Top-N without the
    extension still falls back to decode, assumed, as the spec's upstream format does."""
    trace = gpu_only_training(tmp_path)
    (tmp_path / "profile_topN.json").write_text(json.dumps(
        import_torch(trace, progress=False).doc))
    topn, _problems, _ = load_topn(tmp_path / "profile_topN.json")
    assert topn is not None
    regime, why, assumed = pick_regime(topn.entries[0], topn)
    assert regime is None and assumed is False and why.startswith("no regime")
    topn.ext = None
    assert pick_regime(topn.entries[0], topn)[0::2] == ("decode", True)


def test_shared_mi210_cnn_trace(tmp_path: Path) -> None:
    """TraceLens's MI210 GPU-only trace (a CNN training step: MIOpen igemm_fwd/bwd/wrw,
    batch_norm_backward_kernel, max_pool_backward_nchw; no cpu_op, no graph launch): no
    regime, no graph-replay claim, no reason blaming a missing config.json."""
    art = analysed(tmp_path, need(MI210_TRACE))
    assert art.entries and all(e.regime is None for e in art.entries)
    assert sum(n.startswith("no regime") for n in art.profile_notes) == 1
    for why in reasons(art):
        assert "graph-replayed" not in why and "no model config.json found" not in why
    assert art.graph_replay is None


@pytest.mark.parametrize("replayed", [True, False])
def test_a_replayed_kernel_is_still_told_it_was_replayed(tmp_path: Path, replayed: bool
                                                         ) -> None:
    """Where a graph did run — the entry's note says its launches were replayed from a
    CUDA/HIP graph — the GEMM's reason says so and names --capture; the same row without the
    note in a trace whose other kernels have launching ops says it ran outside any op that
    records shapes."""
    from roofline_tui.core.opmodels import OpModelUnavailable, gemm
    from roofline_tui.core.opmodels.base import OpContext
    from roofline_tui.core.inputs import Workload

    note = ("no shapes for 4 of 4 launches: replayed from a CUDA/HIP graph (no launching op in "
            "this trace; a graph-capture trace gives them: --capture)")
    shaped = {"op": "aten::mm", "calls": 1, "total_us": 10.0,
              "args": [{"dims": [32, 64], "type": "c10::BFloat16", "role": "input"},
                       {"dims": [64, 64], "type": "c10::BFloat16", "role": "weight"}]}
    doc = {"source": "torch-trace", "total_gpu_time_ms": 1.0, "x_roofline": {
        "version": 1, "regime": {"regime": "decode", "assumed": False, "evidence": "steps"}},
        "top_kernels": [
            {"name": GEMM, "calls": 4, "total_ms": 0.5, "pct_gpu_time": 50.0,
             "notes": [note] if replayed else [],
             "x_roofline": {"instances": [{"op": None, "calls": 4, "total_us": 500.0}]}},
            {"name": "other_gemm", "calls": 1, "total_ms": 0.5, "pct_gpu_time": 50.0,
             "x_roofline": {"instances": [shaped]}}]}
    (tmp_path / "profile_topN.json").write_text(json.dumps(doc))
    topn, _p, _ = load_topn(tmp_path / "profile_topN.json")
    assert topn is not None
    ctx = OpContext(name=GEMM, op_subclass=None, regime="decode", shapes=[], dtypes=[],
                    model=None, workload=Workload(), tokens=32, tokens_source="test",
                    weight_dtype="bf16", activation_dtype="bf16", kv_dtype="bf16", topn=topn)
    with pytest.raises(OpModelUnavailable) as exc:
        gemm.estimate(ctx)
    why = str(exc.value)
    if replayed:
        assert "replayed from a CUDA/HIP graph" in why and "--capture" in why
    else:
        assert "outside any cpu_op" in why and "graph" not in why

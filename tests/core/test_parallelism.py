"""Tensor parallelism when env_report.json is silent (roofline_tui/core/parallelism.py): the
recorded shard shapes against the config, the trace's own distributedInfo, the collective
kernels of the Top-N, in that order, each stated as evidence; and what the MoE and attention
models do with it. Configs are the public gpt-oss-120b values; the arithmetic is in each
docstring."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.analyze import AnalyzeOptions, RoundInputs, analyze
from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import TopN, Workload, parse_topn
from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, attn
from roofline_tui.core.parallelism import TensorParallel, resolve_tensor_parallel
from roofline_tui.core.peaks import load_peak_table, resolve_peaks
from tests.core.test_layer_kinds import gpt_oss

GPT_OSS_120B = gpt_oss(36) | {"quantization_config": {
    "quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}}
MODEL = normalize_config(GPT_OSS_120B)
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
DOWN = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
GATE_UP = DOWN + "_swiglu"
ATTN = "kernel_unified_attention_3d"


def k(name: str, pct: float, t_ms: float, lps: float = 36, m: int = 64,
      **extra: Any) -> dict[str, Any]:
    return {"name": name, "short_name": name, "pct_gpu_time": pct, "served_regimes": ["decode"],
            "base_latency_ms": {"decode": t_ms}, "calls_per_step": {"decode": lps},
            "est_shape": {"decode": {"M": m}}, **extra}


def attention_row(q_heads: int) -> dict[str, Any]:
    """vLLM's attention op on one rank: q [64, H, 64], k/v [64, H/8, 64]."""
    kv = max(1, q_heads // 8)
    args = [{"dims": [64, q_heads, 64], "type": "c10::BFloat16", "role": "input"},
            {"dims": [64, kv, 64], "type": "c10::BFloat16", "role": "input"},
            {"dims": [64, kv, 64], "type": "c10::BFloat16", "role": "input"}]
    return k(ATTN, 5.0, 0.02, x_roofline={"instances": [{
        "op": "vllm::unified_attention_with_output", "args": args, "calls": 36,
        "total_us": 720.0}]})


def topn(*rows: dict[str, Any], world: int | None = None, regime: Any = "decode") -> TopN:
    doc: dict[str, Any] = {"top_kernels": list(rows),
                           "serving": {"n_decode_steps": 10, "n_prefill_steps": 0}}
    ext: dict[str, Any] = {"version": 1}
    if world is not None:
        ext["distributed"] = {"world_size": world, "rank": 0, "backend": "nccl",
                              "source": "distributedInfo of rank0.json"}
    if regime != "decode":
        ext["regime"] = {"regime": regime, "assumed": False, "evidence": "a training loop"}
    doc["x_roofline"] = ext
    parsed, problems = parse_topn(doc)
    assert not problems, problems
    return parsed


# --------------------------------------------------------------------------- the ladder


def test_env_report_says_it_first() -> None:
    tp = resolve_tensor_parallel(Workload(tp=4), topn(attention_row(8), world=8), MODEL)
    assert tp == TensorParallel(4, "env_report workload.tp 4")


def test_shard_shapes_against_the_config() -> None:
    """A query of 8 heads where gpt-oss-120b has 64: TP = 64 / 8 = 8, whatever the world size
    (16 here: two data-parallel replicas of TP 8). 64 of 64 heads: TP 1, even with 8 ranks."""
    tp = resolve_tensor_parallel(Workload(), topn(attention_row(8), world=16), MODEL)
    assert tp is not None and tp.size == 8
    assert "8 of the config's 64 attention heads" in tp.evidence
    assert "world_size 16" in tp.evidence
    one = resolve_tensor_parallel(Workload(), topn(attention_row(64), world=8), MODEL)
    assert one is not None and one.size == 1


def test_world_size_of_a_serving_trace() -> None:
    """distributedInfo world_size 8 and an NCCL all-reduce: TP 8, both stated."""
    tp = resolve_tensor_parallel(Workload(), topn(k(NCCL, 10.0, 0.01), world=8), MODEL)
    assert tp is not None and tp.size == 8
    assert "world_size 8 (nccl)" in tp.evidence and NCCL in tp.evidence


def test_world_size_of_a_training_trace_is_not_a_tp() -> None:
    """A trace the importer found not to be serving (regime null): its 8 ranks may as well be
    data parallel, so sharded by an unknown factor."""
    tp = resolve_tensor_parallel(Workload(), topn(k(NCCL, 10.0, 0.01), world=8, regime=None),
                                 MODEL)
    assert tp is not None and tp.size is None and "not serving" in tp.evidence


def test_collectives_alone_say_sharded_size_unknown() -> None:
    tp = resolve_tensor_parallel(Workload(), topn(k(NCCL, 10.0, 0.01)), MODEL)
    assert tp is not None and tp.size is None
    assert NCCL in tp.evidence
    assert resolve_tensor_parallel(Workload(), topn(k(DOWN, 10.0, 0.01)), MODEL) is None


def test_config_heads_without_a_size_get_no_verdict() -> None:
    """Sharded by an unknown factor: the attention model's config heads per rank are unknown
    (no verdict, the reason says what settles it); recorded heads do not need TP."""
    par = TensorParallel(None, f"collective kernels in the Top-N ({NCCL})")
    ctx = OpContext(name="kernel_paged_attention_2d", op_subclass=None, regime="decode",
                    shapes=[], dtypes=[], model=MODEL, workload=Workload(isl=1024, osl=1024),
                    tokens=64, tokens_source="test", weight_dtype="fp4",
                    activation_dtype="bf16", kv_dtype="bf16", dtype_bytes=dict(DTYPE_BYTES),
                    parallel=par)
    with pytest.raises(OpModelUnavailable, match="per-rank heads.*workload.tp"):
        attn.estimate(ctx)
    eight = attn.estimate(ctx._replace(workload=Workload(isl=1024, osl=1024, tp=8),
                                       parallel=TensorParallel(8, "TP 8 from the trace")))
    assert any("TP=8: 8 q heads and 1 kv heads per rank (TP 8 from the trace)" in a
               for a in eight.assumptions)


# --------------------------------------------------------------------------- end to end

B200 = resolve_peaks(load_peak_table()[0], gfx=None, product="B200")
W = 0.5 + 1 / 32                          # mxfp4 element + its e8m0 scale, bytes
PAIRS = 64 * 4                            # decode M 64, top-4
HIT = 128 * (1 - (127 / 128) ** PAIRS)    # 110.81 of 128 experts touched
I8 = 2880 // 8                            # the expert width per rank at TP 8: 360
GATE_UP_BYTES = HIT * 2 * I8 * 2880 * W + 64 * 2880 * 2 + PAIRS * I8 * 2   # 122.62 MB
DOWN_BYTES = HIT * 2880 * I8 * W + PAIRS * I8 * 2 + 64 * 2880 * 2           # 61.59 MB


def _b200(world: int | None, collective: bool = True) -> dict[str, Any]:
    rows = [k(GATE_UP, 25.0, 0.020), k(DOWN, 20.0, 0.012)]
    if collective:
        rows.append(k(NCCL, 10.0, 0.010, lps=72))
    art = analyze(RoundInputs(topn=topn(*rows, world=world), peaks=B200, model=MODEL),
                  AnalyzeOptions(head_threshold_pct=1.0))
    return {e.short_name: e for e in art.entries}


def test_b200_gpt_oss_120b_world_size_8_shards_both_moe_heads() -> None:
    """gpt-oss-120b on eight B200 (8.0 TB/s), only the config, decode M = 64: pairs 256,
    experts hit 128·(1 − (127/128)^256) = 110.81. At TP 8 each expert is 2880/8 = 360 wide:
    gate/up 110.81·2·360·2880·0.53125 + 64·2880·2 + 256·360·2 = 122.62 MB in 20 µs (6.13 TB/s),
    down 110.81·2880·360·0.53125 + 256·360·2 + 64·2880·2 = 61.59 MB in 12 µs (5.13 TB/s):
    both get a verdict. Read at TP 1 they stream 8× the expert weights: 976.6 MB in 20 µs
    is 48.8 TB/s, six times the B200's HBM."""
    assert GATE_UP_BYTES == pytest.approx(122.62e6, rel=1e-4)
    assert DOWN_BYTES == pytest.approx(61.59e6, rel=1e-4)
    by = _b200(world=8)
    gate_up, down = by[GATE_UP], by[DOWN]
    assert gate_up.bytes_est == pytest.approx(GATE_UP_BYTES, rel=1e-9)
    assert down.bytes_est == pytest.approx(DOWN_BYTES, rel=1e-9)
    for e in (gate_up, down):
        assert e.has_verdict and not e.suspect
        assert any("TP=8: expert intermediate sharded to 360 per rank" in a
                   and "distributedInfo world_size 8" in a for a in e.assumptions)
    tp1 = HIT * 2 * 2880 * 2880 * W + 64 * 2880 * 2 + PAIRS * 2880 * 2
    assert tp1 / 20e-6 / 8e12 > 6


def test_b200_collectives_without_a_world_size_give_no_verdict() -> None:
    """The same Top-N with its all-reduce but no distributedInfo: sharded, by how much unknown:
    no verdict on either MoE head, and the reason names what would settle it. With neither
    (a single-GPU trace), TP 1 as before."""
    by = _b200(world=None)
    for name in (GATE_UP, DOWN):
        assert not by[name].has_verdict and not by[name].modeled
        assert "workload.tp" in (by[name].notes or "")
    alone = _b200(world=None, collective=False)
    assert alone[GATE_UP].bytes_est == pytest.approx(
        HIT * 2 * 2880 * 2880 * W + 64 * 2880 * 2 + PAIRS * 2880 * 2, rel=1e-9)

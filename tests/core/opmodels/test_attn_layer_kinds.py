"""Attention against the layers the model really has (roofline_tui/core/opmodels/attn.py).

A kernel launched once per attention layer of every kind is the mix of its layers; a launch
count equal to one kind's layers is that kind; a count that fits several kinds (or none, or no
count) leaves each kind a candidate for the feasibility rule. Every attention kernel form
(dense SDPA/flash from its recorded shapes, paged / varlen / unified 2-D / 3-D from the step
aggregates, the config heuristic) reads the same plan. The configs are the public config.json
values (tests/core/test_layer_kinds.py); every figure is worked by hand in the docstring.
"""

from __future__ import annotations

from typing import Any

import pytest

from roofline_tui.core.analyze import AnalyzeOptions, RoundInputs, analyze
from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import StepAggregates, TopN, Workload, parse_topn
from roofline_tui.core.model_config import normalize_config
from roofline_tui.core.opmodels import OpContext, OpEstimate, attn
from roofline_tui.core.peaks import load_peak_table, resolve_peaks
from roofline_tui.core.topn_ext import Instance, Operand
from tests.core.test_layer_kinds import gemma3_27b, gpt_oss, llama4_scout

BF16 = "c10::BFloat16"
SECTIONS, _ = load_peak_table()


def row(name: str, lps: float | None, regime: str = "decode") -> dict[str, Any]:
    k: dict[str, Any] = {"name": name, "short_name": name, "pct_gpu_time": 30.0,
                         "served_regimes": [regime], "base_latency_ms": {regime: 0.1}}
    if lps is not None:
        k["calls_per_step"] = {regime: lps}
    return k


def topn_of(name: str, lps: float | None, regime: str = "decode") -> TopN:
    doc, problems = parse_topn({"top_kernels": [row(name, lps, regime)]})
    assert not problems
    return doc


def ctx(name: str, config: dict[str, Any], lps: float | None, *, regime: str = "decode",
        steps: StepAggregates | None = None, inst: Instance | None = None,
        workload: Workload | None = None, tokens: int | None = None) -> OpContext:
    return OpContext(
        name=name, op_subclass=None, regime=regime, shapes=[], dtypes=[],
        model=normalize_config(config), workload=workload or Workload(), tokens=tokens,
        tokens_source="test", weight_dtype="bf16", activation_dtype="bf16", kv_dtype="bf16",
        dtype_bytes=dict(DTYPE_BYTES), instance=inst, steps=steps,
        topn=topn_of(name, lps, regime))


def figures(est: OpEstimate) -> list[tuple[str, float, float]]:
    return [(c.label, c.bytes, c.flops) for c in est.candidates]


def said(est: OpEstimate, *words: str) -> bool:
    return any(all(w in a for w in words) for a in est.assumptions)


def arg(dims: Any, role: str, type_: str = BF16) -> Operand:
    return Operand(dims=dims, type=type_, role=role)


# --------------------------------------------------------------------------- Gemma-3 decode

# Gemma-3-27B decode, 16 requests at 8,704 tokens of context each, one step (no instance:
# graph-replayed; heads from the config: 32 q, 16 kv, d 128, bf16).
GEMMA_DECODE = StepAggregates(steps=1, requests=16, sq=16, sk=16 * 8704, sqsq=16,
                              sqsk=16 * 8704)
GEMMA_FULL = 16 * 32 * 512 + 139_264 * 16 * 256 * 2                 # 1,141,112,832
GEMMA_WINDOW = 16 * 32 * 512 + (16 + 16 * 1023) * 16 * 256 * 2       # 134,479,872
GEMMA_MIX = (10 * GEMMA_FULL + 52 * GEMMA_WINDOW) / 62               # 296,840,026.8
FA = "flash_fwd_splitkv_kernel"


def test_gemma3_decode_one_launch_per_layer_is_the_mix() -> None:
    """Q + O = 16·32·(128·2 + 128·2) = 262,144 B. Full layer: K/V of Σsk = 139,264 tokens ×
    16·256·2 B = 1,140,850,688 → 1,141,112,832 B (1.14 GB). Sliding layer (W 1024): sk ≤
    16 + 16·1023 = 16,384 → 134,217,728 + 262,144 = 134,479,872 B. The kernel runs 62 launches
    per step, one per layer, so a launch is (10·1,141,112,832 + 52·134,479,872)/62 =
    18,404,081,664/62 = 296,840,026.8 B (0.30 GB), not the 1.14 GB of 62 full layers.
    FLOPs: 2·32·256·139,264 = 2,281,701,376 full, 2·32·256·16,384 = 268,435,456 sliding,
    mean (10·2,281,701,376 + 52·268,435,456)/62 = 593,155,765.7."""
    assert (GEMMA_FULL, GEMMA_WINDOW) == (1_141_112_832, 134_479_872)
    est = attn.estimate(ctx(FA, gemma3_27b(), 62, steps=GEMMA_DECODE))
    ((label, b, f),) = figures(est)
    assert label == "kv-stream (layer mix)"
    assert b == pytest.approx(296_840_026.8, abs=0.1) and b == pytest.approx(GEMMA_MIX)
    assert f == pytest.approx(593_155_765.7, abs=0.1)
    assert said(est, "10 full + 52 sliding (W=1024)", "62 launches per step")


def test_a_launch_count_of_one_kind_is_that_kind() -> None:
    """10 launches per step are Gemma-3's 10 global layers: the full 1,141,112,832 B only; 52
    are its sliding layers: 134,479,872 B only."""
    glob = attn.estimate(ctx(FA, gemma3_27b(), 10, steps=GEMMA_DECODE))
    local = attn.estimate(ctx(FA, gemma3_27b(), 52, steps=GEMMA_DECODE))
    assert figures(glob) == [("kv-stream", GEMMA_FULL, 2_281_701_376)]
    assert figures(local) == [("kv-stream (window 1024)", GEMMA_WINDOW, 268_435_456)]
    assert said(glob, "are the 10 full layers")


def test_a_count_of_no_kind_leaves_both_candidates() -> None:
    """30 launches per step fit neither 10, 52 nor 62 (and no launch count at all says
    nothing): each kind stays a candidate, full first."""
    for lps in (30, None):
        est = attn.estimate(ctx(FA, gemma3_27b(), lps, steps=GEMMA_DECODE))
        assert [c.bytes for c in est.candidates] == [GEMMA_FULL, GEMMA_WINDOW]
        assert said(est, "cannot be tied to a layer kind")


def _gemma_h100(lps: float) -> Any:
    """One attention kernel at 0.9 ms per launch on H100, Gemma-3-27B's decode step."""
    kernel = row(FA, lps) | {"base_latency_ms": {"decode": 0.9}}
    doc, _ = parse_topn({"top_kernels": [kernel], "serving": {
        "n_decode_steps": 1, "n_prefill_steps": 0,
        "phases": {"decode": GEMMA_DECODE.model_dump(exclude_none=True)}}})
    peaks = resolve_peaks(SECTIONS, gfx=None, product="H100")
    assert peaks.hbm_bw_bytes_s == 3.35e12
    art = analyze(RoundInputs(topn=doc, peaks=peaks, model=normalize_config(gemma3_27b())),
                  AnalyzeOptions(head_threshold_pct=1.0))
    return art.entries[0]


def test_gemma3_decode_verdict_is_underperforming_not_moderate() -> None:
    """H100 (3.35 TB/s), 0.9 ms per launch, decode prior 0.50 (bands: moderate from 0.30 of
    peak, saturated from 0.45). 62 full layers read 1,141,112,832 B / 0.9 ms = 1.268 TB/s =
    0.378 of peak: 'moderate'. The mix, 296,840,026.8 B / 0.9 ms = 0.330 TB/s = 0.0985 of peak:
    underperforming."""
    e = _gemma_h100(62)
    assert e.bytes_est == pytest.approx(GEMMA_MIX)
    assert e.roofline_pct == pytest.approx(GEMMA_MIX / 0.9e-3 / 3.35e12, abs=1e-4)
    assert e.headroom_class == "underperforming"
    assert GEMMA_FULL / 0.9e-3 / 3.35e12 == pytest.approx(0.378, abs=1e-3)  # was 'moderate'


def test_the_unit_of_a_kind_tied_kernel_names_its_layers() -> None:
    """10 launches per step (Gemma-3's global layers): one launch is one of those layers'
    1,141,112,832 B, and the unit says so instead of '10 over 62 is not a whole multiple'."""
    e = _gemma_h100(10)
    assert e.bytes_est == GEMMA_FULL
    assert "10 launches/step are the 10 full layers" in (e.notes or "")


# --------------------------------------------------------------------------- Llama-4 chunks

# Llama-4-Scout on two MI300X (TP 2: 20 q heads, 4 kv heads per rank, d 128, bf16), two
# requests at 270,336 tokens of context, one decode step.
SCOUT_DECODE = StepAggregates(steps=1, requests=2, sq=2, sk=2 * 270_336, sqsq=2,
                              sqsk=2 * 270_336)
SCOUT_FULL = 2 * 20 * 512 + 540_672 * 4 * 256 * 2                   # 1,107,316,736
SCOUT_CHUNK = 2 * 20 * 512 + (2 + 2 * 8191) * 4 * 256 * 2            # 33,574,912
SCOUT_MIX = (12 * SCOUT_FULL + 36 * SCOUT_CHUNK) / 48                # 302,010,368


def test_llama4_chunked_decode_mix() -> None:
    """Q + O = 2·20·512 = 20,480 B. Global (NoPE) layer: 540,672 tokens × 4·256·2 B =
    1,107,296,256 → 1,107,316,736 B (1.11 GB). Chunked layer (C 8192): a request sees at most
    its chunk, sk ≤ 2 + 2·8191 = 16,384 → 33,554,432 + 20,480 = 33,574,912 B (an upper bound).
    48 launches, one per layer: (12·1,107,316,736 + 36·33,574,912)/48 = 14,496,497,664/48 =
    302,010,368 B (0.30 GB)."""
    assert (SCOUT_FULL, SCOUT_CHUNK, SCOUT_MIX) == (1_107_316_736, 33_574_912, 302_010_368)
    est = attn.estimate(ctx("kernel_unified_attention_3d", llama4_scout(), 48,
                            steps=SCOUT_DECODE, workload=Workload(tp=2)))
    ((label, b, _),) = figures(est)
    assert label == "kv-stream (layer mix)" and b == SCOUT_MIX
    assert said(est, "chunked C=8192", "upper bounds")
    chunk_only = attn.estimate(ctx("kernel_unified_attention_3d", llama4_scout(), 36,
                                   steps=SCOUT_DECODE, workload=Workload(tp=2)))
    assert figures(chunk_only)[0][:2] == ("kv-stream (chunk 8192)", SCOUT_CHUNK)


def test_llama4_verdict_is_underperforming_not_saturated() -> None:
    """MI300X (5.3 TB/s), 0.45 ms per launch, prior 0.50 (saturated from 0.45 of peak). Read
    as 48 full layers: 1,107,316,736 B / 0.45 ms = 2.461 TB/s = 0.464 of peak, 'saturated'.
    With the chunks: 302,010,368 B / 0.45 ms = 0.671 TB/s = 0.127 of peak, underperforming."""
    name = "kernel_unified_attention_3d"
    doc, _ = parse_topn({"top_kernels": [row(name, 48) | {"base_latency_ms": {"decode": 0.45}}],
                         "serving": {"n_decode_steps": 1, "n_prefill_steps": 0, "phases": {
                             "decode": SCOUT_DECODE.model_dump(exclude_none=True)}}})
    peaks = resolve_peaks(SECTIONS, gfx=None, product="MI300X")
    art = analyze(RoundInputs(topn=doc, peaks=peaks, model=normalize_config(llama4_scout()),
                              workload=Workload(tp=2)), AnalyzeOptions(head_threshold_pct=1.0))
    e = art.entries[0]
    assert e.bytes_est == SCOUT_MIX
    assert e.roofline_pct == pytest.approx(0.1266, abs=1e-4)
    assert e.headroom_class == "underperforming"
    assert SCOUT_FULL / 0.45e-3 / 5.3e12 == pytest.approx(0.464, abs=1e-3)  # was 'saturated'


def test_chunked_prefill_is_exact_per_query() -> None:
    """Llama-4 SDPA prefill of one 12,288-token prompt: q [1, 40, 12288, 128], k/v
    [1, 8, 12288, 128]. Causal full: 12,288·12,289/2 = 75,503,616 pairs. Chunked (C 8192): the
    query at p sees p mod 8192 + 1 keys: Σ = 8192·8193/2 + 4096·4097/2 = 33,558,528 +
    8,390,656 = 41,949,184 pairs. FLOPs = 2·40·256·pairs: 1,546,314,055,680 full,
    859,119,288,320 chunked; all 12,288 K/V rows are read in both. Over the 48 layers:
    (12·1,546,314,055,680 + 36·859,119,288,320)/48 = 1,030,917,980,160."""
    inst = Instance(op="aten::scaled_dot_product_attention", calls=48, total_us=1000.0, args=[
        arg([1, 40, 12288, 128], "input"), arg([1, 8, 12288, 128], "input"),
        arg([1, 8, 12288, 128], "input")])
    name = "fmha_cutlassF_bf16_aligned_64x128_rf_sm80"
    mix = attn.estimate(ctx(name, llama4_scout(), 48, regime="prefill", inst=inst))
    chunk = attn.estimate(ctx(name, llama4_scout(), 36, regime="prefill", inst=inst))
    full = attn.estimate(ctx(name, llama4_scout(), 12, regime="prefill", inst=inst))
    assert full.candidates[0].flops == 2 * 40 * 256 * 75_503_616 == 1_546_314_055_680
    assert chunk.candidates[0].flops == 2 * 40 * 256 * 41_949_184 == 859_119_288_320
    assert chunk.candidates[0].bytes == full.candidates[0].bytes
    assert mix.candidates[0].flops == 1_030_917_980_160
    assert said(chunk, "p mod C + 1")


def test_chunked_decode_reads_only_its_chunk() -> None:
    """SDPA decode of one token at position 9,999 (q [1, 40, 1, 128], k/v [1, 8, 10000, 128]):
    it sees 9,999 mod 8192 + 1 = 1,808 keys, and only those 10,000 − 8192 = 1,808 K/V rows are
    read: 1·40·(128·2 + 128·2) + 1,808·8·256·2 = 20,480 + 7,405,568 = 7,426,048 B; FLOPs
    2·40·256·1,808 = 37,027,840."""
    inst = Instance(op="aten::scaled_dot_product_attention", calls=36, total_us=100.0, args=[
        arg([1, 40, 1, 128], "input"), arg([1, 8, 10000, 128], "input"),
        arg([1, 8, 10000, 128], "input")])
    est = attn.estimate(ctx("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", llama4_scout(), 36,
                            inst=inst))
    assert figures(est) == [("kv-stream (chunk 8192)", 7_426_048, 37_027_840)]


# --------------------------------------------------------------------------- gpt-oss, every form

GPT_OSS_DECODE = StepAggregates(steps=1, requests=32, sq=32, sk=55086, sqsq=32, sqsk=55086)
# gpt-oss-20b (H_Q 64, H_KV 8, d 64, bf16) on that step (test_attn_per_call): full 113,340,416,
# window 128: 8,912,896; one launch per each of the 24 layers: (12·both)/24 = 61,126,656.
OSS_FULL, OSS_WINDOW = 113_340_416, 8_912_896
OSS_MIX = (12 * OSS_FULL + 12 * OSS_WINDOW) / 24


def _q() -> Operand:
    return arg([32, 64, 64], "input")


FORMS = {
    # vLLM's unified triton attention, 2-D and 3-D (split-KV), launched by the layer's op
    "kernel_unified_attention_2d": Instance(
        op="vllm::unified_attention_with_output", calls=24, total_us=100.0,
        args=[_q(), arg([32, 8, 64], "input"), arg([32, 8, 64], "input"),
              arg([32, 64, 64], "output")]),
    "kernel_unified_attention_3d": Instance(
        op="vllm::unified_attention_with_output", calls=24, total_us=100.0,
        args=[_q(), arg([32, 8, 64], "input"), arg([32, 8, 64], "input"),
              arg([32, 64, 64], "output")]),
    # paged decode over a [pages, page, H_KV, d] cache (SGLang / aiter)
    "paged_attention_ll4mi_QKV_mfma16_kernel": Instance(
        op="sglang_profiler::attention_paged_attention_ragged_100", calls=24, total_us=100.0,
        args=[arg([32, 64, 64], "output"), _q(), arg([52000, 16, 8, 64], "cache"),
              arg([52000, 16, 8, 64], "cache")]),
    # FlashAttention varlen with the paged KV cache (vLLM's FA backend)
    "flash_fwd_splitkv_kernel": Instance(
        op="_vllm_fa2_C::varlen_fwd", calls=24, total_us=100.0,
        args=[_q(), arg([52000, 16, 8, 64], "cache"), arg([52000, 16, 8, 64], "cache"),
              arg([32, 64, 64], "output")]),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_decode_kernel_form_is_the_mix(name: str) -> None:
    """gpt-oss-20b decode, each form launched 24 times per step (once per layer): the same
    61,126,656 B per launch = (12·113,340,416 + 12·8,912,896)/24; at 12 launches (12 full and
    12 sliding layers: both kinds) each kind stays a candidate."""
    est = attn.estimate(ctx(name, gpt_oss(24), 24, steps=GPT_OSS_DECODE, inst=FORMS[name]))
    ((label, b, _),) = figures(est)
    assert (label, b) == ("kv-stream (layer mix)", OSS_MIX) and OSS_MIX == 61_126_656
    either = attn.estimate(ctx(name, gpt_oss(24), 12, steps=GPT_OSS_DECODE, inst=FORMS[name]))
    assert [c.bytes for c in either.candidates] == [OSS_FULL, OSS_WINDOW]
    assert said(either, "match 2 layer kinds")


def test_sdpa_prefill_form_is_the_mix() -> None:
    """gpt-oss SDPA q [1, 64, 512, 64], k/v [1, 8, 512, 64] (test_attn_per_call: full
    2,151,677,952 FLOPs, window 940,572,672, the same bytes): at 24 launches,
    (12·2,151,677,952 + 12·940,572,672)/24 = 1,546,125,312 FLOPs."""
    inst = Instance(op="aten::scaled_dot_product_attention", calls=24, total_us=100.0, args=[
        arg([1, 64, 512, 64], "input"), arg([1, 8, 512, 64], "input"),
        arg([1, 8, 512, 64], "input")])
    est = attn.estimate(ctx("fmha_fwd", gpt_oss(24), 24, regime="prefill", inst=inst))
    assert [c.flops for c in est.candidates] == [1_546_125_312]


def test_b200_config_decode_reads_half_the_layers_windowed() -> None:
    """gpt-oss-120b on B200, trtllm-gen FMHA launched 36 times per step, no instance and no
    step sums: batch 256, isl = osl = 1024 → seq 1536. Full layer: 256·1536·8·64·2·2 B =
    805,306,368; sliding layer: 256·min(1536, 128)·8·64·2·2 = 67,108,864. Every layer read
    full gave 805 MB; the 18 + 18 mix is (805,306,368 + 67,108,864)/2 = 436,207,616 B."""
    name = "fmhaSm100fKernel_QkvBfloat16OBfloat16H64PagedKvCausalP32VarSeqQ8Kv128StaticForGen"
    est = attn.estimate(ctx(name, gpt_oss(36), 36, tokens=256,
                            workload=Workload(isl=1024, osl=1024, conc=256)))
    assert figures(est) == [("kv-stream (layer mix)", 436_207_616, pytest.approx(
        (2 * 256 * 64 * 1536 * 64 * 2 + 2 * 256 * 64 * 128 * 64 * 2) / 2))]
    assert said(est, "sliding layers: seq_len capped at min(seq_len, 128)")


def test_no_config_is_still_full_attention() -> None:
    """Without a config nothing says a window: the one full figure, and that is said."""
    est = attn.estimate(OpContext(
        name=FA, op_subclass=None, regime="decode", shapes=[], dtypes=[], model=None,
        workload=Workload(), tokens=32, tokens_source="test", weight_dtype="bf16",
        activation_dtype="bf16", kv_dtype="bf16", dtype_bytes=dict(DTYPE_BYTES),
        instance=FORMS["kernel_unified_attention_3d"], steps=GPT_OSS_DECODE,
        topn=topn_of(FA, 24)))
    assert [c.bytes for c in est.candidates] == [OSS_FULL]
    assert said(est, "no config.json", "full attention")

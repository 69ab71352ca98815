"""The attention model per op call (roofline_tui/core/opmodels/attn.py): recorded shapes first,
then the step aggregates, then the config heuristic, each figure worked by hand in the docstring.

The instances are built from the dims the real traces record (quoted in each test), the
aggregates from the step labels of the same traces (serving-annotations §6.5 lists them), and
the expected numbers are computed here, never read from the module under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import StepAggregates, Workload
from roofline_tui.core.model_config import ModelShape, normalize_config
from roofline_tui.core.opmodels import OpContext, OpModelUnavailable, attn, choose_candidate
from roofline_tui.core.topn_ext import Instance, Operand
from tests.paths import REAL_FORMATS, need

QWEN15_05B = {  # Qwen/Qwen1.5-0.5B-Chat config.json, the fields the model reads
    "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 1024,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 2816, "sliding_window": 32768, "use_sliding_window": False,
    "max_window_layers": 21, "torch_dtype": "bfloat16",
}
GPT_OSS_20B = {  # openai/gpt-oss-20b config.json: 128-token sliding layers alternate with full
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "hidden_size": 2880,
    "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 32,
    "num_experts_per_tok": 4, "sliding_window": 128, "torch_dtype": "bfloat16",
    "layer_types": ["sliding_attention", "full_attention"] * 12,
}
QWEN3_8B = {
    "model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 12288, "torch_dtype": "bfloat16",
}
LLAMA_8B = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "torch_dtype": "bfloat16",
}
BF16 = "c10::BFloat16"
MI300X_BW = 5.3e12  # B/s, the MI300X HBM peak the §6.5 check is against


def arg(dims: Any, type_: str, role: str) -> Operand:
    return Operand(dims=dims, type=type_, role=role)


def instance(op: str, args: list[Operand], calls: int = 12, total_us: float = 100.0) -> Instance:
    return Instance(op=op, args=args, calls=calls, total_us=total_us)


def flash_h100(recorded: bool = False) -> Instance:
    """The H100 Qwen1.5-0.5B trace's ``aten::_flash_attention_forward`` (24 calls, 2722.705 µs):
    q, k, v ``[16, 559, 16, 64]`` c10::BFloat16, then the optional tensors (absent) and scalars.
    ``recorded``: with the values its Concrete Inputs hold (``"559", "559", "0.", "True",
    "False", "0.125"`` at positions 5-10: max_q, max_k, dropout_p, is_causal,
    return_debug_mask, scale); without, as a trace that records no Concrete Inputs."""
    qkv = [arg([16, 559, 16, 64], BF16, "input") for _ in range(3)]
    rest = [arg([], "", "other"), arg([], "", "other")] + [arg([], "Scalar", "scalar")] * 6 \
        + [arg([], "", "scalar")] * 2 + [arg([], "", "other")] * 2
    if recorded:
        for k, v in zip(range(5, 11), (559, 559, 0.0, True, False, 0.125), strict=True):
            rest[k - 3] = Operand(dims=[], type="Scalar", role="scalar", value=v)
    return instance("aten::_flash_attention_forward", qkv + rest, calls=24, total_us=2722.705)


def vllm_unified(t: int = 32, h_q: int = 64, h_kv: int = 8, d: int = 64) -> Instance:
    """vLLM's ``vllm::unified_attention_with_output`` as the FULL-graph capture records it for
    gpt-oss-20b: q ``[32, 64, 64]``, k/v ``[32, 8, 64]``, output ``[32, 64, 64]`` (bf16), the
    layer name, two absent scales and a ``[0]`` dependency token."""
    return instance("vllm::unified_attention_with_output", [
        arg([t, h_q, d], BF16, "input"), arg([t, h_kv, d], BF16, "input"),
        arg([t, h_kv, d], BF16, "input"), arg([t, h_q, d], BF16, "output"),
        arg([], "", "scalar"), arg([], "", "other"), arg([], "", "other"),
        arg([0], BF16, "other")])


def sglang_paged(cache_type: str = BF16) -> Instance:
    """SGLang's ``sglang_profiler::attention_paged_attention_ragged_100`` on Qwen3-8B (36 calls,
    1949.556 µs): out and q ``[32, 32, 128]``, workspace ``[10905190400]`` bytes, k/v caches
    ``[835874, 1, 8, 128]`` (page size 1), kv_indptr ``[33]``, page indices, last-page lens,
    an absent alibi, k/v scales ``[1]``."""
    return instance("sglang_profiler::attention_paged_attention_ragged_100", [
        arg([32, 32, 128], BF16, "output"), arg([10905190400], "unsigned char", "workspace"),
        arg([32, 32, 128], BF16, "input"), arg([835874, 1, 8, 128], cache_type, "cache"),
        arg([835874, 1, 8, 128], cache_type, "cache"), arg([33], "int", "index"),
        arg([20971520], "int", "index"), arg([4096], "int", "index"), arg([], "", "other"),
        arg([1], "float", "scale"), arg([1], "float", "scale"), arg([], "", "other")],
        calls=36, total_us=1949.556)


VLLM_DECODE = StepAggregates(steps=1, requests=32, sq=32, sk=55086, sqsq=32, sqsk=55086)
SGLANG_DECODE = StepAggregates(steps=1, requests=32, sq=32, sk=32785, sqsq=32, sqsk=32785)


def ctx(name: str, *, model: dict | None = None, regime: str = "decode",
        inst: Instance | None = None, steps: StepAggregates | None = None,
        workload: Workload | None = None, tokens: int | None = 32, sub: str | None = None,
        kv_dtype: str = "bf16") -> OpContext:
    shape: ModelShape | None = normalize_config(model) if model else None
    return OpContext(
        name=name, op_subclass=sub, regime=regime, shapes=[], dtypes=[], model=shape,
        workload=workload or Workload(), tokens=tokens, tokens_source="test",
        weight_dtype="bf16", activation_dtype="bf16", kv_dtype=kv_dtype,
        dtype_bytes=dict(DTYPE_BYTES), instance=inst, steps=steps)


def said(est: Any, *words: str) -> bool:
    return any(all(w in a for w in words) for a in est.assumptions)


# --------------------------------------------------------------------------- 1. recorded shapes


def test_h100_flash_call_from_its_recorded_shapes() -> None:
    """``[16, 559, 16, 64]`` ×3 as flash's [B, S, H, d]: B 16, S 559, H_Q = H_KV = 16, d 64.

    Causal (assumed: S_q = S_kv), diagonal included: pairs per (b, h) = 559·560/2 = 156,520.
    FLOPs = 2·B·H·(d_qk + d_v)·pairs = 2·16·16·128·156,520 = 65,536·156,520 = 10,257,694,720
    = 10.26 GF. (Without the diagonal, TraceLens's form: 65,536·559²/2 = 10,239,377,408.)
    Bytes = Q + K + V + O = 4·16·559·16·64·2 B = 4·18,317,312 = 73,269,248."""
    est = attn.estimate(ctx("flash_fwd_kernel", model=QWEN15_05B, regime="prefill",
                            inst=flash_h100()))
    (c,) = est.candidates
    assert c.flops == 10_257_694_720
    assert c.flops == pytest.approx(10.26e9, rel=0.03)
    assert c.bytes == 73_269_248
    assert est.prior == "attn_prefill" and est.compute_dtype == "bf16"
    assert said(est, "causal assumed", "is_causal is not recorded")
    assert said(est, "[16, 559, 16, 64]", "recorded instance")
    assert said(est, "1.02394e+10")  # the compat figure, quoted beside


def test_dense_call_needs_no_config_and_says_so() -> None:
    """The recorded shapes settle heads and lengths, the recorded ``is_causal=True`` the
    triangle: same 10,257,694,720 FLOPs with no config; only the window is unknown, and that is
    stated. The recorded scale 0.125 = 1/√64 agrees with the head dim."""
    est = attn.estimate(ctx("flash_fwd_kernel", regime="prefill", inst=flash_h100(True)))
    assert est.candidates[0].flops == 10_257_694_720
    assert said(est, "no config.json", "full attention")
    assert said(est, "is_causal=True recorded")
    assert said(est, "softmax scale 0.125 recorded = 1/√d_qk")


def test_dense_call_without_is_causal_or_config_gets_no_verdict() -> None:
    """Neither ``is_causal`` (no Concrete Inputs) nor a config.json: causal would be
    2·16·16·128·156,520 = 10,257,694,720 FLOPs, full 2·16·16·128·559² = 20,478,689,280 — twice
    as many on a compute-heavy call (S 559), so no verdict, and the reason names both figures
    and what would settle it."""
    with pytest.raises(OpModelUnavailable) as exc:
        attn.estimate(ctx("flash_fwd_kernel", regime="prefill", inst=flash_h100()))
    why = str(exc.value)
    assert "is_causal is not recorded" in why and "Concrete Inputs" in why
    assert "1.026e+10" in why and "2.048e+10" in why


def test_sdpa_decode_step_against_a_cached_prefix() -> None:
    """SDPA [B, H, S, d]: q ``[4, 16, 1, 64]``, k/v ``[4, 16, 600, 64]`` (one new token against
    600 keys). One query sees all 600 keys: pairs = 1·600 − 0 = 600 per (b, h).
    FLOPs = 2·4·16·128·600 = 9,830,400. Bytes = Q 4·1·16·64·2 + O the same + K,V
    4·600·16·128·2 = 8,192 + 8,192 + 9,830,400 = 9,846,784. One query: the decode prior."""
    inst = instance("aten::scaled_dot_product_attention", [
        arg([4, 16, 1, 64], BF16, "input"), arg([4, 16, 600, 64], BF16, "input"),
        arg([4, 16, 600, 64], BF16, "input"), arg([], "", "other"),
        arg([], "Scalar", "scalar"), arg([], "Scalar", "scalar")])
    est = attn.estimate(ctx("fmha_cutlassF_bf16_aligned_64x64", model=QWEN15_05B, inst=inst))
    (c,) = est.candidates
    assert c.flops == 9_830_400 and c.bytes == 9_846_784
    assert c.label == "kv-stream" and est.prior is None


def test_dense_sliding_window_is_exact_per_query() -> None:
    """gpt-oss SDPA q ``[1, 64, 512, 64]``, k/v ``[1, 8, 512, 64]``, window 128.

    Full causal: 512·513/2 = 131,328 pairs; FLOPs 2·64·128·131,328 = 2,151,677,952.
    Windowed: Σ_{i<512} min(i+1, 128) = (1+…+128) + 384·128 = 8,256 + 49,152 = 57,408 pairs;
    FLOPs 2·64·128·57,408 = 940,572,672. K/V rows read min(512, 512 + 127) = 512 (the window
    slides over all of them). Both are candidates: the config has both layer kinds."""
    inst = instance("aten::scaled_dot_product_attention", [
        arg([1, 64, 512, 64], BF16, "input"), arg([1, 8, 512, 64], BF16, "input"),
        arg([1, 8, 512, 64], BF16, "input")])
    est = attn.estimate(ctx("fmha_fwd", model=GPT_OSS_20B, regime="prefill", inst=inst))
    full, win = est.candidates
    assert full.flops == 2 * 64 * 128 * 131_328 == 2_151_677_952
    assert (win.label, win.flops) == ("qkvo (window 128)", 940_572_672)
    assert win.bytes == full.bytes


# --------------------------------------------------------------------------- 2. step aggregates


def test_vllm_decode_kv_bytes_from_the_aggregates() -> None:
    """vLLM FULL decode step: sq 32, Σsk 55,086, Σsq·sk 55,086 over 1 step (requests 32).
    H_Q 64, H_KV 8, d 64 from the instance (q [32,64,64], k [32,8,64]); bf16.

    KV per call = 55,086·8·64·2 (K,V)·2 B = 112,816,128 B (112.8 MB); Q + O = 32·64·(64·2 +
    64·2) = 524,288; bytes = 113,340,416 (TraceLens: 108.08984375 MiB). FLOPs = 4·64·64·55,086
    = 902,529,024. With no config there is no window: one candidate.

    Not isl + osl/2: with isl = osl = 1024 that heuristic gives seq 1536, KV
    32·1536·8·64·2·2 = 100,663,296 B; the aggregates' mean context is 55,086/32 = 1721.44."""
    est = attn.estimate(ctx("kernel_unified_attention_3d", inst=vllm_unified(),
                            steps=VLLM_DECODE, workload=Workload(isl=1024, osl=1024, conc=32)))
    (c,) = est.candidates
    kv = 55086 * 8 * 64 * 2 * 2
    assert kv == 112_816_128
    assert c.bytes == kv + 524_288 == 113_340_416
    assert c.bytes / 2**20 == pytest.approx(108.08984375)
    assert c.flops == 4 * 64 * 64 * 55086 == 902_529_024
    assert c.bytes != 32 * 1536 * 8 * 64 * 2 * 2
    assert said(est, "1721.44", "not isl + osl/2")
    assert not said(est, "seq_len = isl + osl/2")
    assert est.prior is None and c.label == "kv-stream"


def test_vllm_decode_window_candidate_picks_the_feasible_layer_kind() -> None:
    """gpt-oss: 12 sliding (W 128) + 12 full layers; the kernel names no layer, so both.

    Window cap: sk ≤ sq + requests·(W−1) = 32 + 32·127 = 4,096 (= requests·W at decode);
    bytes = 4,096·1,024·2 + 524,288 = 8,912,896; FLOPs 4·64·64·4,096 = 67,108,864.
    Feasibility on MI300X (5.3 TB/s): the 2-D kernel's 13.482 µs allows 71.45 MB, so the
    113.3 MB full figure (8.41 TB/s) is refuted and the window is kept (0.66 TB/s); the 3-D
    kernel's 41.159 µs allows 218.1 MB, so the larger, full figure is kept."""
    est = attn.estimate(ctx("kernel_unified_attention_2d", model=GPT_OSS_20B,
                            inst=vllm_unified(), steps=VLLM_DECODE))
    full, win = est.candidates
    assert full.bytes == 113_340_416
    assert (win.label, win.bytes, win.flops) == ("kv-stream (window 128)", 8_912_896, 67_108_864)
    assert said(est, "upper bounds")
    assert said(est, "cannot be tied to a layer kind")
    two_d = choose_candidate(est, MI300X_BW, 13.482e-6).chosen
    three_d = choose_candidate(est, MI300X_BW, 41.159e-6).chosen
    assert two_d.label == "kv-stream (window 128)"
    assert two_d.bytes_est / 13.482e-6 == pytest.approx(0.661e12, rel=1e-3)
    assert three_d.label == "kv-stream"


def test_sglang_paged_decode_reads_kv_heads_and_dtype_from_the_cache() -> None:
    """SGLang Qwen3-8B decode: sq 32, Σsk 32,785. q [32, 32, 128] → H_Q 32, d 128; the cache
    [835874, 1, 8, 128] (page size 1) → H_KV 8, bf16 from the cache's recorded type.

    Bytes = 32·32·(128·2 + 128·2) + 32,785·8·256·2 = 524,288 + 134,287,360 = 134,811,648
    (TraceLens 128.566 MiB); FLOPs = 4·32·128·32,785 = 537,149,440.

    An fp8 cache (recorded c10::Float8_e4m3fn) with bf16 Q: the KV term halves,
    524,288 + 67,143,680 = 67,667,968: the KV dtype is the cache's, not Q's."""
    est = attn.estimate(ctx("paged_attention_ll4mi_QKV_mfma16_kernel", model=QWEN3_8B,
                            inst=sglang_paged(), steps=SGLANG_DECODE))
    (c,) = est.candidates
    assert (c.bytes, c.flops) == (134_811_648, 537_149_440)
    fp8 = attn.estimate(ctx("paged_attention_ll4mi_QKV_mfma16_kernel", model=QWEN3_8B,
                            inst=sglang_paged("c10::Float8_e4m3fn"), steps=SGLANG_DECODE))
    assert fp8.candidates[0].bytes == 67_667_968
    assert said(fp8, "K/V dtype from the cache tensor")


def test_ragged_prefill_causal_flops_from_the_sum_of_squares() -> None:
    """SGLang prefill of 15 fresh 1024-token prompts (Qwen3-8B: H_Q 32, H_KV 8, d 128):
    Σsq = Σsk = 15,360, Σsq² = Σsq·sk = 15·1024² = 15,728,640, one step.

    Causal pairs = Σsq·sk − (Σsq² − Σsq)/2 = 15,728,640 − 7,856,640 = 7,872,000;
    FLOPs = 2·32·256·7,872,000 = 128,974,848,000 (TraceLens, without the diagonal:
    32·256·15,728,640 = 128,849,018,880, 0.1 % less).
    Bytes = 15,360·32·512 + 15,360·8·256·2 = 251,658,240 + 62,914,560 = 314,572,800 (300 MiB).

    The same 15,360 tokens as ONE sequence: Σsq² = Σsq·sk = 15,360² = 235,929,600, pairs
    15,360·15,361/2 = 117,972,480; the ratio 7,872,000/117,972,480 = 1025/15361 = 0.06673,
    within 0.1 % of 1/15 (each prompt only sees its own triangle)."""
    inst = vllm_unified(t=15360, h_q=32, h_kv=8, d=128)
    agg = StepAggregates(steps=1, requests=15, sq=15360, sk=15360, sqsq=15_728_640,
                         sqsk=15_728_640)
    est = attn.estimate(ctx("kernel_unified_attention_2d", model=QWEN3_8B, regime="prefill",
                            inst=inst, steps=agg))
    (c,) = est.candidates
    assert c.flops == 128_974_848_000
    assert c.bytes == 314_572_800 == 300 * 2**20
    assert est.prior == "attn_prefill" and c.label == "qkvo"
    assert said(est, "128849018880") or said(est, "1.28849e+11")
    one = StepAggregates(steps=1, requests=1, sq=15360, sk=15360, sqsq=15360**2,
                         sqsk=15360**2)
    whole = attn.estimate(ctx("kernel_unified_attention_2d", model=QWEN3_8B, regime="prefill",
                              inst=inst, steps=one)).candidates[0]
    assert whole.flops == 2 * 32 * 256 * 117_972_480
    assert c.flops / whole.flops == pytest.approx(1 / 15, rel=1e-3)


def test_per_call_divides_the_sums_by_the_steps() -> None:
    """Three decode steps summing Σsq 96, Σsk 165,258 (3 × 55,086): per call (one layer's
    launch per step) the same 113,340,416 B as one step, not three times it."""
    agg = StepAggregates(steps=3, requests=96, sq=96, sk=3 * 55086, sqsq=96, sqsk=3 * 55086)
    est = attn.estimate(ctx("kernel_unified_attention_3d", inst=vllm_unified(), steps=agg))
    assert est.candidates[0].bytes == 113_340_416


def test_heads_from_config_when_the_aggregates_have_no_instance() -> None:
    """A graph-replayed kernel without an instance but with aggregates: Llama-8B config heads
    (32 q, 8 kv, d 128), vLLM's sums. Bytes = 32·32·512 + 55,086·8·256·2 = 524,288 +
    225,632,256 = 226,156,544."""
    est = attn.estimate(ctx("kernel_paged_attention_2d", model=LLAMA_8B, steps=VLLM_DECODE))
    assert est.candidates[0].bytes == 226_156_544
    assert said(est, "heads from config.json")


def test_sparse_decode_caps_keys_at_the_selected_count() -> None:
    """index_topk 1024 on the vLLM decode step: sk ≤ sq·1024 = 32,768 (< 55,086);
    bytes = 524,288 + 32,768·1,024·2 = 67,633,152."""
    cfg = dict(GPT_OSS_20B, index_topk=1024)
    est = attn.estimate(ctx("flash_mla_sparse_fwd", model=cfg, sub="sparse",
                            inst=vllm_unified(), steps=VLLM_DECODE))
    (c,) = est.candidates
    assert c.bytes == 67_633_152


# --------------------------------------------------------------------------- groups


def test_decode_only_kernel_in_prefill_steps_gets_no_context_group() -> None:
    prefill = StepAggregates(steps=2, requests=4, sq=8000, sk=9000, sqsq=16_000_000,
                             sqsk=18_000_000)
    with pytest.raises(OpModelUnavailable, match="decode-only"):
        attn.estimate(ctx("paged_attention_ll4mi_QKV_mfma16_kernel", model=QWEN3_8B,
                          regime="prefill", inst=sglang_paged(), steps=prefill))
    with pytest.raises(OpModelUnavailable, match="prefill/extend"):
        attn.estimate(ctx("BatchPrefillWithPagedKVCacheKernel<128>", model=QWEN3_8B,
                          inst=sglang_paged(), steps=SGLANG_DECODE))


def test_split_kv_reduce_kernel_is_not_given_the_kv_bytes() -> None:
    """``paged_attention_ll4mi_reduce_kernel`` (4.95 µs a launch) would read 134.8 MB at
    27 TB/s: its traffic is the partial outputs, not the KV."""
    with pytest.raises(OpModelUnavailable, match="reduce/combine"):
        attn.estimate(ctx("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, 128>(float*)",
                          model=QWEN3_8B, inst=sglang_paged(), steps=SGLANG_DECODE))


# --------------------------------------------------------------------------- 3. fallbacks


def test_no_instance_no_steps_keeps_the_config_heuristic() -> None:
    """Llama-8B decode, batch 64, isl/osl 1024: seq = 1024 + 512 = 1536;
    bytes = 64·1536·8·128·2·2 = 402,653,184; FLOPs = 2·64·32·1536·128·2 = 1,610,612,736."""
    est = attn.estimate(ctx("kernel_paged_attention_2d", model=LLAMA_8B, tokens=64,
                            workload=Workload(isl=1024, osl=1024, conc=64)))
    (c,) = est.candidates
    assert (c.bytes, c.flops) == (402_653_184, 1_610_612_736)
    assert said(est, "isl + osl/2")


def test_instance_without_steps_takes_its_heads_and_the_heuristic_context() -> None:
    """vLLM instance (H_Q 64, H_KV 8, d 64), no aggregates, batch 32, isl/osl 1024:
    bytes = 32·1536·8·64·2·2 = 100,663,296 (config heads would be the same here; with no
    config at all the instance's heads still serve)."""
    for model in (GPT_OSS_20B, None):
        est = attn.estimate(ctx("kernel_unified_attention_3d", model=model,
                                inst=vllm_unified(), workload=Workload(isl=1024, osl=1024)))
        assert est.candidates[0].bytes == 100_663_296
        assert said(est, "isl + osl/2") and said(est, "heads from the recorded instance")


def test_aggregates_with_token_counts_only_fall_back_and_say_so() -> None:
    """Native annotations give Σsq only (no sk): the heuristic, with the reason stated."""
    agg = StepAggregates(steps=1, requests=32, sq=32)
    est = attn.estimate(ctx("kernel_unified_attention_3d", model=GPT_OSS_20B,
                            inst=vllm_unified(), steps=agg,
                            workload=Workload(isl=1024, osl=1024)))
    assert said(est, "lack sk, sqsk") and said(est, "isl + osl/2")


def test_nothing_to_settle_it_raises_with_what_would() -> None:
    with pytest.raises(OpModelUnavailable, match="step aggregates"):
        attn.estimate(ctx("kernel_paged_attention_2d"))
    with pytest.raises(OpModelUnavailable, match="isl"):
        attn.estimate(ctx("kernel_unified_attention_3d", inst=vllm_unified()))


def test_the_model_opts_into_instances() -> None:
    assert attn.MODEL.instance_tensors == 1


# --------------------------------------------------------------------------- end to end


def _analyse(tmp_path: Path, doc: dict, config: Path, device: str) -> Any:
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.rounds.analysis import RoundSources, analyze_round

    (tmp_path / "profile_topN.json").write_text(json.dumps(doc))
    return analyze_round(tmp_path, RoundSources(model_config=config, device=device),
                         AnalyzeOptions(head_threshold_pct=1.0, max_heads=20)).artifact


def test_h100_qwen_trace_flash_flops_per_launch(tmp_path: Path) -> None:
    """TraceLens's H100 Qwen1.5-0.5B trace, imported and analysed: the flash_fwd_kernel entry's
    24 shaped launches are one [16, 559, 16, 64] call each, 10,257,694,720 FLOPs per launch
    (10.26 GF, worked in test_h100_flash_call_from_its_recorded_shapes)."""
    from roofline_tui.importers.torch import import_torch

    trace = need(REAL_FORMATS / "wild" / "tracelens_h100_qwen1.5-0.5b.json.gz")
    cfg = need(REAL_FORMATS / "configs" / "Qwen1.5-0.5B-Chat" / "config.json")
    art = _analyse(tmp_path, import_torch(trace, progress=False).doc, cfg, "H100")
    e = next(x for x in art.entries if x.short_name == "flash_fwd_kernel")
    assert e.modeled and e.flops_est == pytest.approx(10.26e9, rel=0.03)
    assert e.flops_est == pytest.approx(10_257_694_720)
    assert e.bytes_est == pytest.approx(73_269_248)


def test_vllm_full_decode_trace_both_attention_kernels(tmp_path: Path) -> None:
    """TraceLens's vLLM FULL decode (gpt-oss-20b, MI300X) with its capture: the 3-D kernel keeps
    the full 113,340,416 B, the 2-D one (over peak with it) the 128-token window's 8,912,896 B
    (worked in test_vllm_decode_window_candidate_picks_the_feasible_layer_kind)."""
    from roofline_tui.importers.torch import TorchOptions, import_torch

    wild = REAL_FORMATS / "wild"
    trace = need(wild / "tracelens_vllm_decode_full_graph_execution.json.gz")
    capture = need(wild / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz")
    cfg = need(REAL_FORMATS / "configs" / "gpt-oss-20b" / "config.json")
    doc = import_torch(trace, TorchOptions(captures=[capture]), progress=False).doc
    art = _analyse(tmp_path, doc, cfg, "MI300X")
    by = {x.short_name: x for x in art.entries}
    assert by["kernel_unified_attention_3d"].bytes_est == pytest.approx(113_340_416)
    assert by["kernel_unified_attention_3d"].flops_est == pytest.approx(902_529_024)
    assert by["kernel_unified_attention_2d"].bytes_est == pytest.approx(8_912_896)
    assert not by["kernel_unified_attention_2d"].suspect

"""Op-class models (spec §4) on hand-computed cases: the arithmetic is in each docstring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline_tui.core import metrics as M
from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.inputs import Workload
from roofline_tui.core.model_config import ModelShape, normalize_config
from roofline_tui.core.opmodels import (
    MODELS,
    PRIOR_KEYS,
    LeverContext,
    Neighbour,
    OpContext,
    OpModel,
    OpModelUnavailable,
    attn,
    byte_reduction_levers,
    choose_candidate,
    elementwise,
    gemm,
    moe,
    prior_for,
)
from roofline_tui.core.opmodels.moe import ALL_EXPERTS, EXPERTS_HIT, experts_hit
from roofline_tui.core.rounds.playbook import PriorsError, load_priors

QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
    "torch_dtype": "bfloat16",
}
LLAMA_8B = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "torch_dtype": "bfloat16",
}


def ctx(name: str, *, model: dict | None = None, shapes=None, dtypes=None, tokens=64,
        regime="decode", sub=None, workload=None, l2=None) -> OpContext:
    shape: ModelShape | None = normalize_config(model) if model else None
    return OpContext(
        name=name, op_subclass=sub, regime=regime, shapes=shapes or [], dtypes=dtypes or [],
        model=shape, workload=workload or Workload(isl=1024, osl=1024, conc=64),
        tokens=tokens, tokens_source="test", weight_dtype="bf16", activation_dtype="bf16",
        kv_dtype="bf16", dtype_bytes=dict(DTYPE_BYTES), l2_bytes=l2)


# --------------------------------------------------------------------------- registry


def test_registry_is_explicit_and_every_model_implements_the_protocol() -> None:
    assert set(MODELS) == {"gemm", "moe", "attn", "elementwise", "lora"}
    for op_class, m in MODELS.items():
        typed: OpModel = m
        assert typed.op_class == op_class
        assert op_class in typed.priors  # the class default prior
        assert callable(typed.estimate) and callable(typed.levers)
    assert {"gemm", "moe", "attn", "attn_prefill", "elementwise", "lora"} == set(PRIOR_KEYS)


def test_levers_live_with_their_op_class() -> None:
    """The MoE waste lever is keyed on moe.py's own labels; the attention fp8-KV lever on the
    kv dtype; an elementwise kernel's lever names the biggest GEMM/MoE/attention host."""
    neighbours = [Neighbour("act_and_mul_kernel", "elementwise", "act_and_mul", 3.1),
                  Neighbour("rotary_kernel", "elementwise", "rope", 1.0),
                  Neighbour("fused_moe_kernel", "moe", None, 26.0)]
    lc = LeverContext(short_name="x", bound_type="memory", weight_dtype="bf16", kv_dtype="bf16",
                      alternatives=[(EXPERTS_HIT, 268e6), (ALL_EXPERTS, 1208e6)],
                      chosen_label=EXPERTS_HIT, neighbours=neighbours)
    moe_levers = "\n".join(moe.MODEL.levers(lc))
    assert "1208 MB/layer vs 268 MB routed (78% more)" in moe_levers  # (1208-268)/1208 = 78 %
    assert "act_and_mul_kernel" in moe_levers and "bf16 → fp8" in moe_levers
    attn_levers = "\n".join(attn.MODEL.levers(lc))
    assert "rotary_kernel" in attn_levers and "fp8 KV cache" in attn_levers
    assert "unrouted" not in attn_levers
    assert "fused_moe_kernel" in elementwise.MODEL.levers(lc)[0]
    full = byte_reduction_levers("gemm", lc._replace(bound_type="compute"))
    assert full[0].startswith("compute-bound") and "speculative decoding" in full[-1]


# --------------------------------------------------------------------------- MoE


@pytest.mark.parametrize("name", [
    "ck_moe_stage1_bf16", "moe_cktile2stages_gemm1_256x32", "fused_moe_gate_up_kernel",
    "mfma_moe1_bf16_g1u1",
])
def test_split_stage_one_by_name(name: str) -> None:
    """Qwen3-30B-A3B on MI355X at M=64, stage 1 alone (one launch):

    pairs = 64·8 = 512; experts_hit = 128·(1 − (127/128)^512) = 125.69;
    weights = 125.69 · 2·768·2048 · 2 B = 790.79 MB;
    activations = (64·2048 + 512·2·768) · 2 B = 0.262 + 1.573 = 1.835 MB → 792.62 MB
    (g1u1 with no activation word: the output is the gate·up pair, 2I per pair);
    flops = 2 · 512 · 2·768·2048 = 3.22 GFLOP.
    At t = 150 µs: 792.62e6 / 150e-6 / 8e12 = 0.6605 of the roof → moderate
    (0.6·0.90 = 0.54 ≤ 0.66 < 0.81). The whole-layer model gave 1,191 MB → 0.99, saturated.
    """
    est = moe.estimate(ctx(name, model=QWEN3_30B_A3B))
    assert est.per == "launch"
    hit = next(c for c in est.candidates if c.label == EXPERTS_HIT)
    assert hit.bytes == pytest.approx(792.62e6, rel=1e-4)
    assert hit.flops == pytest.approx(2 * 512 * 2 * 768 * 2048)
    choice = choose_candidate(est, 8.0e12, 150e-6)
    assert choice.chosen.label == EXPERTS_HIT
    assert choice.chosen.roofline_pct_raw == pytest.approx(0.6605, abs=1e-4)
    assert choice.chosen.roofline_pct_raw is not None
    assert M.headroom_band(choice.chosen.roofline_pct_raw, 0.90) == "moderate"
    assert any("stage1" in a for a in est.assumptions)


def test_split_stage_two_by_name_and_by_weight_shape() -> None:
    """Stage 2 (down) at M=64: weights 125.69 · 2048·768 · 2 B = 395.39 MB; activations
    (512·768 + 64·2048) · 2 B = 0.786 + 0.262 MB → 396.44 MB; flops = 2·512·2048·768."""
    by_name = moe.estimate(ctx("ck_moe_stage2_bf16", model=QWEN3_30B_A3B))
    by_shape = moe.estimate(ctx("MoeFlatmmKernel", model=QWEN3_30B_A3B,
                                shapes=[[[512, 768], [128, 2048, 768]]]))
    for est in (by_name, by_shape):
        assert est.per == "launch"
        assert est.candidates[0].bytes == pytest.approx(396.44e6, rel=1e-4)
        assert est.candidates[0].flops == pytest.approx(2 * 512 * 2048 * 768)
    # the w1 weight [E, 2I, H] alone says stage 1
    w1 = moe.estimate(ctx("MoeFlatmmKernel", model=QWEN3_30B_A3B,
                          shapes=[[[64, 2048], [128, 1536, 2048]]]))
    assert w1.candidates[0].bytes == pytest.approx(792.62e6, rel=1e-4)


def test_fused_activation_epilogue_is_stage_one_writing_I() -> None:
    """gpt-oss style ``_matmul_ogs_*_swiglu`` in an MoE model: stage 1 with the activation fused,
    so the output is pairs·I: (64·2048 + 512·768) · 2 B = 1.049 MB on top of 790.79 MB."""
    est = moe.estimate(ctx("_matmul_ogs_NNT_bf16xbf16_swiglu", model=QWEN3_30B_A3B))
    assert est.candidates[0].bytes == pytest.approx(790.79e6 + 1.049e6, rel=1e-4)


def test_one_stage_fmoe_with_g1u1_layout_is_the_whole_layer() -> None:
    """aiter's one-stage ``fmoe_*_g1u1*`` runs both GEMMs: g1u1 names the weight layout there."""
    est = moe.estimate(ctx("aiter::fmoe_bf16_g1u1_vs_silu_1tg_32x256", model=QWEN3_30B_A3B))
    assert est.per == "logical_op"


def test_experts_hit_is_reported_when_all_experts_is_also_feasible() -> None:
    """Qwen3-30B-A3B whole layer, M=4 on MI300X (5.3 TB/s), one logical layer in t = 300 µs:

    pairs = 32; experts_hit = 128·(1 − (127/128)^32) = 28.41;
    hit weights = 28.41 · 3·2048·768 · 2 B = 268.12 MB, all experts = 1,207.96 MB;
    activations: io 2·4·2048·2 B = 32.8 kB, intermediates 32·(2·768+768+2048)·2 B = 278.5 kB
    → 268.43 MB (0.169 of 5.3e12·300e-6 = 1.59 GB) vs 1,208.27 MB (0.760, also feasible).
    Spec §4: report experts_hit; the all-expert figure stays in alternatives and notes.
    """
    est = moe.estimate(ctx("fused_moe_kernel", model=QWEN3_30B_A3B, tokens=4))
    choice = choose_candidate(est, 5.3e12, 300e-6)
    assert choice.chosen.label == EXPERTS_HIT
    assert choice.chosen.bytes_est == pytest.approx(268.43e6, rel=1e-3)
    assert choice.chosen.roofline_pct_raw == pytest.approx(0.169, abs=1e-3)
    every = next(a for a in choice.alternatives if a.label == ALL_EXPERTS)
    assert every.feasible and every.bytes_est == pytest.approx(1208.27e6, rel=1e-3)
    assert "all-experts kept as an alternative only" in choice.why
    assert any("1208.3 MB" in a and "alternative" in a for a in est.assumptions)


def test_a_kernel_known_to_stream_every_expert_reports_all_experts() -> None:
    est = moe.estimate(ctx("dense_moe_all_experts_kernel", model=QWEN3_30B_A3B, tokens=4))
    assert choose_candidate(est, 5.3e12, 300e-6).chosen.label == ALL_EXPERTS


def test_feasibility_still_refutes_an_infeasible_experts_hit() -> None:
    """Same M=4 layer timed at 40 µs: the roof allows 5.3e12·40e-6 = 212 MB < 268.4 MB, so
    experts_hit is infeasible (1.27) and so is every larger candidate: the smallest is shown and
    L3 will flag the entry suspect; nothing is clamped to 100 %."""
    est = moe.estimate(ctx("fused_moe_kernel", model=QWEN3_30B_A3B, tokens=4))
    choice = choose_candidate(est, 5.3e12, 40e-6)
    assert not any(a.feasible for a in choice.alternatives)
    assert choice.chosen.label == EXPERTS_HIT
    assert choice.chosen.roofline_pct_raw == pytest.approx(268.43e6 / 212e6, rel=1e-3)
    assert "infeasible" in choice.why


def test_experts_hit_formula() -> None:
    """E=256, pairs=512 (spec §9): 256·(1 − (255/256)^512) = 256·(1 − 0.13480) = 221.49."""
    assert experts_hit(256, 512) == pytest.approx(221.49, abs=0.005)


# --------------------------------------------------------------------------- attention


def test_prefill_attention_gets_its_own_prior_and_decode_keeps_half() -> None:
    """Prefill (compute-bound flash attention): 0.75, from FlashAttention-3's ~740 of 989
    TFLOP/s bf16 on H100 SXM (740/989 = 0.748); paged decode keeps the spec's 0.50."""
    pre = attn.estimate(ctx("flash_fwd_kernel", model=LLAMA_8B, regime="prefill", tokens=4096))
    dec = attn.estimate(ctx("kernel_paged_attention_2d", model=LLAMA_8B))
    p_pre, p_dec = prior_for("attn", pre), prior_for("attn", dec)
    assert (p_pre.key, p_pre.value) == ("attn_prefill", 0.75)
    assert "740" in p_pre.why and "H100 SXM" in p_pre.why
    assert (p_dec.key, p_dec.value) == ("attn", 0.50)


def test_both_attention_priors_are_calibratable(tmp_path: Path) -> None:
    f = tmp_path / "priors.json"
    f.write_text(json.dumps({"attn": 0.45, "attn_prefill": 0.7}))
    values, where = load_priors(f)
    assert values == {"attn": 0.45, "attn_prefill": 0.7} and "attn_prefill" in where
    f.write_text(json.dumps({"attn_decode_typo": 0.5}))
    with pytest.raises(PriorsError, match="attn_prefill"):
        load_priors(f)


def test_sparse_decode_reads_only_the_selected_tokens() -> None:
    """DeepSeek-V3.2-style index_topk = 2048 on a GQA model (Llama-8B shape, TP1), batch 64,
    isl/osl 8192/1024 → seq = 8192 + 512 = 8704 > 2048, so each query reads 2048 tokens:
    bytes = 64 · 2048 · 8 kv heads · 128 · 2 (K,V) · 2 B = 536.9 MB (dense: 2,281.7 MB)."""
    cfg = dict(LLAMA_8B, index_topk=2048)
    wl = Workload(isl=8192, osl=1024, conc=64)
    est = attn.estimate(ctx("flash_mla_sparse_fwd", model=cfg, sub="sparse", workload=wl))
    assert est.candidates[0].bytes == pytest.approx(64 * 2048 * 8 * 128 * 2 * 2)
    assert est.candidates[0].bytes == pytest.approx(536.9e6, rel=1e-4)
    assert any("2048 selected" in a for a in est.assumptions)


def test_sparse_attention_without_a_selected_count_has_no_model() -> None:
    with pytest.raises(OpModelUnavailable, match="does not say how many KV tokens"):
        attn.estimate(ctx("_gqa_share_sparse_decode_kernel", model=LLAMA_8B, sub="sparse"))


def test_block_sparse_count_from_config() -> None:
    """MiniMax-style block-sparse: 16 selected blocks × 128 tokens = 2048 tokens per query."""
    shape = normalize_config(dict(LLAMA_8B, sparse_topk_blocks=16, sparse_block_size=128))
    assert shape.sparse_attention_tokens == 2048


# --------------------------------------------------------------------------- elementwise


def test_binary_add_reads_both_inputs_and_writes_the_output() -> None:
    """add of two [4096, 4096] bf16 tensors: 3 tensors × 4096² × 2 B = 100.66 MB; an inductor
    ``fused_add`` name does not double it when the shapes are known."""
    for name in ("vectorized_elementwise_kernel<add>", "triton_poi_fused_add_0"):
        est = elementwise.estimate(ctx(name, shapes=[[[4096, 4096], [4096, 4096]]],
                                       sub="elementwise"))
        assert est.candidates[0].bytes == pytest.approx(3 * 4096 * 4096 * 2)
        assert est.candidates[0].bytes == pytest.approx(100.66e6, rel=1e-4)


def test_broadcast_input_is_read_at_its_own_size() -> None:
    """bias add [4096, 4096] + [4096]: 33,554,432 + 8,192 read, 33,554,432 written
    = 67,117,056 B (not 3 × 33.55 MB)."""
    est = elementwise.estimate(ctx("add_bias", shapes=[[[4096, 4096], [4096]]], sub="elementwise"))
    assert est.candidates[0].bytes == 4096 * 4096 * 2 * 2 + 4096 * 2


def test_name_rule_applies_only_without_shapes() -> None:
    """No shapes: fused_add_rms_norm at 64 tokens × hidden 4096 bf16: the name rule doubles the
    streams: 2 · (64·4096·2 + 64·4096·2) B = 2,097,152 B."""
    est = elementwise.estimate(ctx("fused_add_rms_norm_kernel", model=LLAMA_8B, sub="norm"))
    assert est.candidates[0].bytes == 2 * (64 * 4096 * 2 * 2)
    assert any("name rule" in a for a in est.assumptions)


def test_act_and_mul_and_quant_outputs() -> None:
    """act_and_mul [64, 2·14336] bf16 → [64, 14336]: 3,670,016 + 1,835,008 = 5,505,024 B.
    quant [64, 4096] bf16 → fp8: 524,288 + 262,144 = 786,432 B."""
    act = elementwise.estimate(ctx("act_and_mul_kernel", shapes=[[[64, 28672]]],
                                   sub="act_and_mul"))
    assert act.candidates[0].bytes == 64 * 28672 * 2 + 64 * 14336 * 2
    q = elementwise.estimate(ctx("scaled_fp8_quant", shapes=[[[64, 4096]]], sub="quant"))
    assert q.candidates[0].bytes == 64 * 4096 * 2 + 64 * 4096 * 1


def test_host_copy_is_judged_on_the_host_link() -> None:
    """A 64 MiB HtoD copy crosses the link once: 67,108,864 B on the host_link roof."""
    est = elementwise.estimate(ctx("Memcpy HtoD (Pageable -> Device)", sub="host_copy",
                                   shapes=[[[32 * 1024 * 1024]]], dtypes=["bf16"]))
    assert est.roof == "host_link" and est.candidates[0].bytes == 64 * 1024 * 1024
    with pytest.raises(OpModelUnavailable, match="host↔device copy"):
        elementwise.estimate(ctx("Memcpy HtoD", sub="host_copy"))


def test_broadcast_shape() -> None:
    assert elementwise.broadcast_shape([[8, 1, 4], [3, 1]]) == [8, 3, 4]
    assert elementwise.broadcast_shape([[4, 3], [4]]) is None


# --------------------------------------------------------------------------- GEMM


def test_gemm_closest_shape_to_the_regime_tokens() -> None:
    est = gemm.estimate(ctx("nvjet_tst", shapes=[[[4096, 1024], [1024, 1024]],
                                                 [[64, 1024], [1024, 1024]]]))
    assert est.candidates[0].flops == 2 * 64 * 1024 * 1024

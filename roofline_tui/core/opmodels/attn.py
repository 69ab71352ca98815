"""Attention (spec §4). Paged decode: KV traffic dominates; prefill: causal flash attention.

Decode: ``bytes = batch·seq·n_kv·hd·2·kv`` (MLA: the latent ``kv_lora + rope`` per token),
``flops = 2·batch·n_q·seq·hd·2``. Prefill over a chunk of ``T`` tokens: ``flops =
4·n_q·hd·T·T/2`` (causal), ``bytes = Q + O + K + V`` once each.

Sparse attention (DeepSeek-V3.2 ``index_topk``, MiniMax block-sparse decode) reads only the
selected tokens' KV: ``seq`` becomes ``min(seq, selected)`` with the selected count taken from the
config; without it there is no model (a dense one would over-count and read as suspect).

Priors (spec §7): paged decode 0.50 (irregular paged KV access); a compute-bound prefill or flash
attention 0.75 (FlashAttention-3 reaches about 740 TFLOP/s bf16 on H100 SXM, 75 % of its
989 TFLOP/s dense peak). Both are calibrated by ``--priors`` (keys ``attn`` and
``attn_prefill``).
"""

from __future__ import annotations

from collections.abc import Mapping

from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    fuse_adjacent,
)

PRIORS: Mapping[str, Prior] = {
    "attn": Prior("attn", 0.50, "attention decode (paged): irregular paged KV access, "
                                "occupancy-sensitive (spec §7)"),
    "attn_prefill": Prior(
        "attn_prefill", 0.75,
        "compute-bound prefill / flash attention: FlashAttention-3 reaches about 740 TFLOP/s "
        "bf16 on H100 SXM, 75% of the 989 TFLOP/s dense peak (prior 'attn_prefill')"),
}
# Attention takes rotary and the KV-cache write before it, a quant of its output after it.
ADJACENT_OPS = ("rope", "copy", "quant")


def _heads(ctx: OpContext) -> tuple[int, int, int, list[str]]:
    model = ctx.require_model("the attention model")
    notes: list[str] = []
    tp = ctx.workload.tp or 1
    n_q, n_kv = model.num_attention_heads, model.num_kv_heads
    if tp > 1:
        n_q = max(1, n_q // tp)
        n_kv = max(1, n_kv // tp)
        notes.append(f"TP={tp}: {n_q} q heads and {n_kv} kv heads per rank")
    return n_q, n_kv, model.head_dim, notes


def _selected_tokens(ctx: OpContext) -> int | None:
    """Selected KV tokens per query for a sparse kernel; raises when the config does not say."""
    if ctx.op_subclass != "sparse":
        return None
    model = ctx.require_model("sparse attention")
    if not model.sparse_attention_tokens:
        raise OpModelUnavailable(
            "sparse attention: the config does not say how many KV tokens each query selects "
            "(index_topk, or selected blocks × block size), and a dense model would over-count "
            "its bytes; no verdict"
        )
    return model.sparse_attention_tokens


def estimate(ctx: OpContext) -> OpEstimate:
    model = ctx.require_model("the attention model")
    n_q, n_kv, hd, assumptions = _heads(ctx)
    selected = _selected_tokens(ctx)
    kv = ctx.nbytes(ctx.kv_dtype)
    a = ctx.nbytes(ctx.activation_dtype)
    wl = ctx.workload
    prior: str | None = None
    if ctx.regime == "decode":
        batch = ctx.require_tokens("paged decode attention")
        if wl.isl is None or wl.osl is None:
            raise OpModelUnavailable("paged decode attention needs workload isl and osl for seq_len")
        seq = wl.isl + wl.osl / 2.0
        assumptions.append(
            f"seq_len = isl + osl/2 = {seq:g} (average context mid-run; a real source of error)"
        )
        if selected is not None:
            assumptions.append(
                f"sparse attention: each query reads the KV of min(seq_len, {selected} selected "
                f"tokens) = {min(seq, selected):g} tokens (config)"
            )
            seq = min(seq, float(selected))
        assumptions.append(f"batch = {batch} ({ctx.tokens_source})")
        if model.attention_kind == "mla" and model.mla is not None:
            latent = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
            bytes_ = batch * seq * latent * kv
            flops = 2.0 * batch * n_q * seq * (latent + model.mla.kv_lora_rank)
            assumptions.append(
                f"MLA: latent cache of {latent} elems/token at kv {ctx.kv_dtype} {kv:g} B, "
                "weights absorbed (QK over latent+rope, PV over latent)"
            )
            name = "MLA decode: batch·seq·(kv_lora+rope)·kv_bytes"
        else:
            bytes_ = batch * seq * n_kv * hd * 2 * kv
            flops = 2.0 * batch * n_q * seq * hd * 2
            assumptions.append(
                f"{n_kv} kv heads × head_dim {hd} × 2 (K,V) at kv {ctx.kv_dtype} {kv:g} B; "
                f"{n_q} q heads; Q and output negligible"
            )
            name = "paged decode: batch·seq·n_kv·hd·2·kv_bytes"
        if selected is not None:
            name = "sparse " + name.replace("seq", "selected")
        compute_dt = ctx.kv_dtype if kv >= 2 else ctx.activation_dtype
    else:
        tokens = ctx.require_tokens("prefill attention")
        ctx_avg = tokens / 2.0
        keys = ctx_avg if selected is None else min(ctx_avg, float(selected))
        flops = 2.0 * 2.0 * n_q * hd * tokens * keys
        bytes_ = tokens * hd * (2 * n_q * a + 2 * n_kv * kv)
        assumptions += [
            f"prefill chunk of {tokens} tokens ({ctx.tokens_source}); causal: average context "
            f"{ctx_avg:g} keys per query"
            + (f", sparse: {keys:g} selected keys per query (config)" if selected else ""),
            "bytes: Q and output once, K and V once (tiles re-read from L2, not HBM)",
        ]
        name = ("causal prefill: flops=4·n_q·hd·T·T/2, bytes=Q+O+K+V" if selected is None
                else "sparse causal prefill: flops=4·n_q·hd·T·selected, bytes=Q+O+K+V")
        compute_dt = ctx.activation_dtype
        prior = "attn_prefill"
    return OpEstimate(
        model=name,
        candidates=(Candidate("kv-stream" if ctx.regime == "decode" else "qkvo", bytes_, flops),),
        compute_dtype=compute_dt,
        per="logical_op",
        assumptions=tuple(assumptions),
        prior=prior,
    )


def _fp8_kv(lc: LeverContext) -> list[str]:
    if lc.kv_dtype not in ("bf16", "fp16"):
        return []
    return ["fp8 KV cache (kv-cache-dtype fp8): halves the KV bytes read per step "
            "(lossy — must pass the accuracy gate)"]


def levers(lc: LeverContext) -> list[str]:
    return fuse_adjacent(lc, ADJACENT_OPS) + _fp8_kv(lc)


MODEL = FunctionModel("attn", PRIORS, estimate, levers)

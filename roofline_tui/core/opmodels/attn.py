"""Attention (spec §4). Paged decode: KV traffic dominates; prefill: causal flash attention."""

from __future__ import annotations

from roofline_tui.core.opmodels.base import Candidate, OpContext, OpEstimate, OpModelUnavailable

OP_CLASS = "attn"
TARGET_EFF = 0.50
TARGET_EFF_WHY = "attention decode (paged): irregular paged KV access, occupancy-sensitive (spec §7)"


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


def estimate(ctx: OpContext) -> OpEstimate:
    model = ctx.require_model("the attention model")
    n_q, n_kv, hd, assumptions = _heads(ctx)
    kv = ctx.nbytes(ctx.kv_dtype)
    a = ctx.nbytes(ctx.activation_dtype)
    wl = ctx.workload
    if ctx.regime == "decode":
        batch = ctx.require_tokens("paged decode attention")
        if wl.isl is None or wl.osl is None:
            raise OpModelUnavailable("paged decode attention needs workload isl and osl for seq_len")
        seq = wl.isl + wl.osl / 2.0
        assumptions.append(
            f"seq_len = isl + osl/2 = {seq:g} (average context mid-run; a real source of error)"
        )
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
        compute_dt = ctx.kv_dtype if kv >= 2 else ctx.activation_dtype
    else:
        tokens = ctx.require_tokens("prefill attention")
        ctx_avg = tokens / 2.0
        flops = 2.0 * 2.0 * n_q * hd * tokens * ctx_avg
        bytes_ = tokens * hd * (2 * n_q * a + 2 * n_kv * kv)
        assumptions += [
            f"prefill chunk of {tokens} tokens ({ctx.tokens_source}); causal: average context "
            f"{ctx_avg:g} keys per query",
            "bytes: Q and output once, K and V once (tiles re-read from L2, not HBM)",
        ]
        name = "causal prefill: flops=4·n_q·hd·T·T/2, bytes=Q+O+K+V"
        compute_dt = ctx.activation_dtype
    return OpEstimate(
        model=name,
        candidates=(Candidate("kv-stream" if ctx.regime == "decode" else "qkvo", bytes_, flops),),
        compute_dtype=compute_dt,
        per="logical_op",
        assumptions=tuple(assumptions),
    )

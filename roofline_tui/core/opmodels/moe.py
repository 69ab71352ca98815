"""MoE / grouped expert GEMM (spec §4): at decode, the streamed expert weights dominate.

``pairs = M·top_k``; ``experts_hit = E·(1 − (1 − 1/E)^pairs)``. The logical op is one MoE layer
(gate/up + down projections), which backends often split into two launches.
"""

from __future__ import annotations

from roofline_tui.core.opmodels.base import Candidate, OpContext, OpEstimate, OpModelUnavailable

OP_CLASS = "moe"
TARGET_EFF = 0.90
TARGET_EFF_WHY = "MoE / grouped GEMM: decode weight streaming is essentially a memcpy (spec §7)"


def experts_hit(num_experts: int, pairs: float) -> float:
    """Expected number of distinct experts touched by ``pairs`` uniform (token, expert) picks."""
    e = float(num_experts)
    return e * (1.0 - (1.0 - 1.0 / e) ** pairs)


def _geometry_from_shapes(ctx: OpContext) -> tuple[int, int, int] | None:
    """``(E, hidden, intermediate)`` from a recorded 3-D weight ``[E, 2·I, H]``."""
    for shape_set in ctx.shapes:
        for dims in shape_set:
            if len(dims) == 3 and all(dims):
                e, n, k = dims
                return e, k, n // 2 if n % 2 == 0 else n
    return None


def estimate(ctx: OpContext) -> OpEstimate:
    assumptions: list[str] = []
    model = ctx.model
    tp = ctx.workload.tp or 1
    if model is not None and model.num_experts and model.top_k and model.moe_intermediate_size:
        e, top_k = model.num_experts, model.top_k
        hidden, inter = model.hidden_size, model.moe_intermediate_size
        if tp > 1:
            inter = max(1, inter // tp)
            assumptions.append(f"TP={tp}: expert intermediate sharded to {inter} per rank")
        assumptions.append(
            f"E={e}, top_k={top_k}, hidden={hidden}, moe_intermediate={inter} from config.json"
        )
    else:
        geo = _geometry_from_shapes(ctx)
        if geo is None or model is None or not model.top_k:
            raise OpModelUnavailable(
                "MoE model needs num_experts, top_k and moe_intermediate_size (config.json) or a "
                "recorded [E, 2I, H] weight plus top_k; neither was available"
            )
        e, hidden, inter = geo
        top_k = model.top_k
        assumptions.append(f"E={e}, hidden={hidden}, intermediate={inter} from the recorded weight")
    m = ctx.require_tokens("the MoE model")
    pairs = m * top_k
    hit = experts_hit(e, pairs)
    w = ctx.nbytes(ctx.weight_dtype)
    a = ctx.nbytes(ctx.activation_dtype)
    per_expert = 3.0 * hidden * inter  # gate + up (w1, 2I×H) and down (w2, H×I)
    # The layer's input and output always cross HBM. The intermediates between the two
    # launches (w1 out 2I, w2 in I, per-pair outputs H) stay in L2 when they fit.
    io_bytes = a * 2.0 * m * hidden
    inter_bytes = a * pairs * (2.0 * inter + inter + hidden)
    l2 = ctx.l2_bytes
    inter_in_l2 = l2 is not None and inter_bytes <= l2
    activations = io_bytes + (0.0 if inter_in_l2 else inter_bytes)
    flops = 2.0 * pairs * per_expert
    hit_bytes = hit * per_expert * w + activations
    all_bytes = e * per_expert * w + activations
    assumptions += [
        f"M={m} tokens ({ctx.tokens_source}); pairs = M·top_k = {pairs}",
        f"experts_hit = E·(1−(1−1/E)^pairs) = {hit:.1f}/{e} (uniform routing)",
        f"per-expert weights 3·H·I = {per_expert:.0f} elems at {ctx.weight_dtype} {w:g} B",
        f"activations at {ctx.activation_dtype} {a:g} B: layer input and output "
        f"{io_bytes / 1e6:.2f} MB; intermediates {inter_bytes / 1e6:.2f} MB "
        + (f"fit in L2 ({(l2 or 0) / 1e6:.1f} MB) and are not counted" if inter_in_l2
           else "counted (larger than L2)"),
        f"all-expert alternative streams all {e} experts: {all_bytes / 1e6:.1f} MB per layer",
        "shared experts and block-quant scales not counted",
    ]
    compute_dt = ctx.weight_dtype if w < 2 else ctx.activation_dtype
    if w < 2:
        assumptions.append(f"compute at {compute_dt} (weights and activations quantized, w8a8)")
    return OpEstimate(
        model="MoE layer: experts_hit · per-expert weights + activations",
        candidates=(
            Candidate("experts_hit", hit_bytes, flops, f"{hit:.1f}/{e} experts streamed"),
            Candidate("all-experts", all_bytes, flops, f"all {e} experts streamed"),
        ),
        compute_dtype=compute_dt,
        per="logical_op",
        assumptions=tuple(assumptions),
    )

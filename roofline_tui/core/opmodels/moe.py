"""MoE / grouped expert GEMM (spec §4): at decode, the streamed expert weights dominate.

``pairs = M·top_k``; ``experts_hit = E·(1 − (1 − 1/E)^pairs)``. The logical op is one MoE layer
(gate/up + down projections). Backends either run it as one fused kernel, or split it into a
stage-1 kernel (gate/up, ``w1 [E, 2I, H]``) and a stage-2 kernel (down, ``w2 [E, H, I]``) that
appear as separate Top-N entries. A split stage is modelled alone, per launch, with its own
weights and activations:

* whole layer: ``bytes = hit·3·H·I·w + activations``, ``flops = 2·pairs·3·H·I``
* stage 1:     ``bytes = hit·2·I·H·w + M·H·a + pairs·(2I, or I with a fused activation)·a``,
  ``flops = 2·pairs·2I·H``
* stage 2:     ``bytes = hit·H·I·w + pairs·I·a + M·H·a``, ``flops = 2·pairs·H·I``

When it is unknown whether the kernel skips unrouted experts, the ``experts_hit`` figure is
reported and the all-expert figure is kept as an alternative (spec §4); only a kernel known to
stream every expert reports the all-expert figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from roofline_tui.core.classify import MOE_STAGE1_RE as _STAGE1_RE
from roofline_tui.core.classify import MOE_STAGE2_RE as _STAGE2_RE
from roofline_tui.core.classify import stage_in_name
from roofline_tui.core.model_config import ModelShape
from roofline_tui.core.opmodels.base import (
    Candidate,
    FunctionModel,
    LeverContext,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    Prior,
    fuse_adjacent,
    lower_precision_weights,
)

PRIORS: Mapping[str, Prior] = {
    "moe": Prior("moe", 0.90,
                 "MoE / grouped GEMM: decode weight streaming is essentially a memcpy (spec §7)"),
}
# An MoE layer's act-and-mul sits between its two GEMMs, its activation quant before them.
ADJACENT_OPS = ("act_and_mul", "quant", "routing")

EXPERTS_HIT = "experts_hit"
ALL_EXPERTS = "all-experts"

Stage = Literal["layer", "stage1", "stage2"]

# A fused activation epilogue (gpt-oss ``_matmul_ogs_*_swiglu``, trtllm ``bmm_*_swiGlu``) can only
# sit on the gate/up GEMM: the kernel is stage 1 and writes I, not 2I, per pair.
_FUSED_ACT_RE = re.compile(r"swi_?glu|silu|gelu|geglu|act_?and_?mul", re.IGNORECASE)
# Implementations known to stream every expert regardless of routing.
_STREAMS_ALL_RE = re.compile(r"dense_?moe|moe_?dense|all_?experts", re.IGNORECASE)


def experts_hit(num_experts: int, pairs: float) -> float:
    """Expected number of distinct experts touched by ``pairs`` uniform (token, expert) picks."""
    e = float(num_experts)
    return e * (1.0 - (1.0 - 1.0 / e) ** pairs)


@dataclass(frozen=True)
class Geometry:
    experts: int
    hidden: int
    inter: int          # expert intermediate size per rank
    top_k: int
    source: str


@dataclass(frozen=True)
class StageInfo:
    stage: Stage
    fused_act: bool
    why: str


def _weights(ctx: OpContext) -> list[list[int]]:
    return [d for shape_set in ctx.shapes for d in shape_set if len(d) == 3 and all(d)]


def _geometry(ctx: OpContext) -> tuple[Geometry, list[str]]:
    notes: list[str] = []
    model: ModelShape | None = ctx.model
    tp = ctx.workload.tp or 1
    if model is not None and model.num_experts and model.top_k and model.moe_intermediate_size:
        inter = model.moe_intermediate_size
        if tp > 1:
            inter = max(1, inter // tp)
            notes.append(f"TP={tp}: expert intermediate sharded to {inter} per rank")
        return Geometry(model.num_experts, model.hidden_size, inter, model.top_k,
                        "config.json"), notes
    weights = _weights(ctx)
    if not weights or model is None or not model.top_k:
        raise OpModelUnavailable(
            "MoE model needs num_experts, top_k and moe_intermediate_size (config.json) or a "
            "recorded [E, 2I, H] weight plus top_k; neither was available"
        )
    e, n, k = weights[0]
    stage2 = _STAGE2_RE.search(ctx.name) is not None and _STAGE1_RE.search(ctx.name) is None
    if stage2:  # w2 [E, H, I]
        return Geometry(e, n, k, model.top_k, "the recorded w2 weight [E, H, I]"), notes
    return Geometry(e, k, n // 2 if n % 2 == 0 else n, model.top_k,
                    "the recorded w1 weight [E, 2I, H]"), notes


def moe_stage(name: str, weights: list[list[int]], geo: Geometry | None) -> StageInfo:
    """Which part of the MoE layer one launch of this kernel runs.

    The kernel name decides first (stage1/gemm1/gate_up/g1u1/moe1 vs stage2/gemm2/moe2/down);
    then the recorded expert weights when the geometry is known: ``w1 [E, 2I, H]`` (or its
    transpose) alone is stage 1, ``w2 [E, H, I]`` alone is stage 2, both together a whole layer.
    """
    fused_act = _FUSED_ACT_RE.search(name) is not None
    named = stage_in_name(name)
    if named is not None:
        stage, words = named
        if stage == "stage1":
            return StageInfo("stage1", fused_act, f"kernel name says stage 1 ('{words}')")
        return StageInfo("stage2", False, f"kernel name says stage 2 ('{words}')")
    if fused_act and not _STAGE1_RE.search(name) and not _STAGE2_RE.search(name):
        return StageInfo("stage1", True, "a fused activation epilogue in the name: only the "
                                         "gate/up GEMM carries one")
    if geo is not None and weights:
        h, i = geo.hidden, geo.inter
        kinds = set()
        for _, n, k in weights:
            if {n, k} == {2 * i, h}:
                kinds.add("w1")
            elif {n, k} == {h, i}:
                kinds.add("w2")
        if kinds == {"w1"}:
            return StageInfo("stage1", fused_act, "the recorded expert weight is w1 [E, 2I, H]")
        if kinds == {"w2"}:
            return StageInfo("stage2", False, "the recorded expert weight is w2 [E, H, I]")
    return StageInfo("layer", False, "one fused kernel for the whole MoE layer")


def estimate(ctx: OpContext) -> OpEstimate:
    geo, assumptions = _geometry(ctx)
    e, top_k, hidden, inter = geo.experts, geo.top_k, geo.hidden, geo.inter
    assumptions.append(
        f"E={e}, top_k={top_k}, hidden={hidden}, moe_intermediate={inter} from {geo.source}"
    )
    st = moe_stage(ctx.name, _weights(ctx), geo)
    m = ctx.require_tokens("the MoE model")
    pairs = m * top_k
    hit = experts_hit(e, pairs)
    w = ctx.nbytes(ctx.weight_dtype)
    a = ctx.nbytes(ctx.activation_dtype)
    if st.stage == "layer":
        per_expert = 3.0 * hidden * inter  # gate + up (w1, 2I×H) and down (w2, H×I)
        # The layer's input and output always cross HBM. The intermediates between the two
        # launches (w1 out 2I, w2 in I, per-pair outputs H) stay in L2 when they fit.
        io_bytes = a * 2.0 * m * hidden
        inter_bytes = a * pairs * (2.0 * inter + inter + hidden)
        l2 = ctx.l2_bytes
        inter_in_l2 = l2 is not None and inter_bytes <= l2
        activations = io_bytes + (0.0 if inter_in_l2 else inter_bytes)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: layer input and output "
            f"{io_bytes / 1e6:.2f} MB; intermediates {inter_bytes / 1e6:.2f} MB "
            + (f"fit in L2 ({l2 / 1e6:.1f} MB) and are not counted"
               if inter_in_l2 and l2 is not None else "counted (larger than L2)")
        )
        weights_note = f"per-expert weights 3·H·I = {per_expert:.0f} elems"
        name = "MoE layer: experts_hit · per-expert weights + activations"
        unit = "layer"
    elif st.stage == "stage1":
        per_expert = 2.0 * inter * hidden
        out_width = inter if st.fused_act else 2 * inter
        activations = a * (m * hidden + pairs * out_width)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: input M·H = {m * hidden}, output "
            f"pairs·{'I (fused activation)' if st.fused_act else '2I'} = {pairs * out_width} "
            f"elems ({activations / 1e6:.2f} MB)"
        )
        weights_note = f"stage-1 (gate/up) weights per expert 2·I·H = {per_expert:.0f} elems"
        name = "MoE stage 1 (gate/up): experts_hit · 2·I·H weights + its activations"
        unit = "stage-1 launch"
    else:
        per_expert = float(hidden * inter)
        activations = a * (pairs * inter + m * hidden)
        act_note = (
            f"activations at {ctx.activation_dtype} {a:g} B: input pairs·I = {pairs * inter}, "
            f"output M·H = {m * hidden} elems, per-pair partial sums kept in L2 "
            f"({activations / 1e6:.2f} MB)"
        )
        weights_note = f"stage-2 (down) weights per expert H·I = {per_expert:.0f} elems"
        name = "MoE stage 2 (down): experts_hit · H·I weights + its activations"
        unit = "stage-2 launch"
    flops = 2.0 * pairs * per_expert
    hit_bytes = hit * per_expert * w + activations
    all_bytes = e * per_expert * w + activations
    streams_all = _STREAMS_ALL_RE.search(ctx.name) is not None
    assumptions += [
        f"MoE part: {st.stage} ({st.why}); bytes and FLOPs are per {unit}",
        f"M={m} tokens ({ctx.tokens_source}); pairs = M·top_k = {pairs}",
        f"experts_hit = E·(1−(1−1/E)^pairs) = {hit:.1f}/{e} (uniform routing)",
        f"{weights_note} at {ctx.weight_dtype} {w:g} B",
        act_note,
        (f"the kernel is known to stream every expert: reported figure = all {e} experts "
         f"({all_bytes / 1e6:.1f} MB)") if streams_all else
        (f"reported figure = experts_hit ({hit_bytes / 1e6:.1f} MB); whether the kernel skips "
         f"unrouted experts is unknown, so the all-expert figure ({all_bytes / 1e6:.1f} MB, "
         "all experts streamed) is an alternative only (spec §4)"),
        "shared experts and block-quant scales not counted",
    ]
    compute_dt = ctx.weight_dtype if w < 2 else ctx.activation_dtype
    if w < 2:
        assumptions.append(f"compute at {compute_dt} (weights and activations quantized, w8a8)")
    return OpEstimate(
        model=name,
        candidates=(
            Candidate(EXPERTS_HIT, hit_bytes, flops, f"{hit:.1f}/{e} experts streamed",
                      reportable=not streams_all),
            Candidate(ALL_EXPERTS, all_bytes, flops, f"all {e} experts streamed",
                      reportable=streams_all),
        ),
        compute_dtype=compute_dt,
        per="logical_op" if st.stage == "layer" else "launch",
        assumptions=tuple(assumptions),
    )


def _expert_waste(lc: LeverContext) -> list[str]:
    """The all-experts vs experts_hit difference is a byte-reduction lever (spec §7.1)."""
    sizes = dict(lc.alternatives)
    hit, every = sizes.get(EXPERTS_HIT), sizes.get(ALL_EXPERTS)
    if not hit or not every or every <= hit:
        return []
    waste = 100.0 * (every - hit) / every
    if lc.chosen_label == ALL_EXPERTS:
        return [f"stop reading unrouted experts: the kernel streams all experts "
                f"({every / 1e6:.0f} MB/layer) while routing only touches {hit / 1e6:.0f} MB "
                f"— {waste:.0f}% of the bytes are waste"]
    return [f"make sure unrouted experts are never read: streaming all experts would cost "
            f"{every / 1e6:.0f} MB/layer vs {hit / 1e6:.0f} MB routed ({waste:.0f}% more)"]


def levers(lc: LeverContext) -> list[str]:
    return (fuse_adjacent(lc, ADJACENT_OPS) + _expert_waste(lc)
            + lower_precision_weights(lc.weight_dtype))


MODEL = FunctionModel("moe", PRIORS, estimate, levers)

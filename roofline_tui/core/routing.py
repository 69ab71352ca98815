"""Spec §7: where each head's next unit of budget should go, and the byte-reduction levers.

The shippability gate applies first; then the routing table keyed by headroom class and bound
type. Levers are produced only for saturated heads and are specific to the entry: they name the
adjacent Top-N kernel to fuse, the measured all-expert vs experts_hit waste, the dtype step.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_tui.core.artifact import Route
from roofline_tui.core.metrics import E2E_NOISE_PCT

LEVER_CONSTRAINT = (
    "constraint: isl/osl/conc stay as supplied, no speculative decoding, lossy levers must pass "
    "the accuracy gate"
)

_LOWER_PRECISION = {"bf16": "fp8", "fp16": "fp8", "fp8": "fp4", "fp32": "bf16"}


@dataclass(frozen=True)
class Neighbour:
    """Another Top-N kernel (head or not) that a fusion lever may name."""

    short_name: str
    op_class: str
    op_subclass: str | None
    pct_gpu_time: float


@dataclass(frozen=True)
class RouteDecision:
    route: Route
    reason: str


def route_entry(
    *,
    editable: bool | None,
    headroom_class: str,
    bound_type: str,
    confidence: str,
    expected_gain_pct: float | None,
    no_verdict_reason: str | None,
) -> RouteDecision:
    if editable is False:
        return RouteDecision(
            "host_side",
            "not editable (precompiled library / assembly): only host-side levers apply — "
            "dispatch or path selection, the tuning DB, or a backend swap",
        )
    if headroom_class == "unknown":
        why = no_verdict_reason or "no headroom verdict"
        return RouteDecision("pct_order", f"{why}; fall back to pct_gpu_time ordering")
    advisory = " (stage A, low confidence: advisory, rank by pct_gpu_time)" if confidence == "low" else ""
    if headroom_class == "saturated":
        if bound_type == "latency":
            return RouteDecision(
                "byte_reduction_or_fusion",
                "saturated against its target while latency-bound: the access pattern is the "
                "ceiling — fewer bytes (e.g. fp8 KV) or fusion, not more tuning" + advisory,
            )
        return RouteDecision(
            "byte_reduction",
            f"saturated and {bound_type}-bound: kernel tuning has nothing left; move fewer "
            "bytes for the same work (not dropped)" + advisory,
        )
    if expected_gain_pct is not None and expected_gain_pct < E2E_NOISE_PCT:
        return RouteDecision(
            "low_priority",
            f"expected e2e gain {expected_gain_pct:.2f}% is under the {E2E_NOISE_PCT}% "
            "serving noise band (ordinary Amdahl)" + advisory,
        )
    if bound_type == "latency":
        return RouteDecision(
            "kernel_occupancy",
            f"{headroom_class} and latency-bound: lever is occupancy, shorter dependency "
            "chains, fusion or split-K — not byte reduction" + advisory,
        )
    return RouteDecision(
        "kernel_tuning",
        f"{headroom_class} and {bound_type}-bound: real micro-optimization headroom" + advisory,
    )


# The prologue/epilogue ops that sit next to each class in an LLM layer, most natural first: an
# MoE layer's act-and-mul sits between its two GEMMs, its activation quant before them; a GEMM
# takes a norm or quant prologue; attention takes rotary and the KV-cache write.
ADJACENT_OPS: dict[str, tuple[str, ...]] = {
    "moe": ("act_and_mul", "quant", "routing"),
    "gemm": ("quant", "norm", "act_and_mul"),
    "attn": ("rope", "copy", "quant"),
}


def byte_reduction_levers(
    *,
    short_name: str,
    op_class: str,
    bound_type: str,
    weight_dtype: str | None,
    kv_dtype: str | None,
    alternatives: list[tuple[str, float]],
    chosen_label: str | None,
    neighbours: list[Neighbour],
) -> list[str]:
    """Levers that make this saturated kernel move fewer bytes for the same work (spec §7.1)."""
    levers: list[str] = []
    adjacent = ADJACENT_OPS.get(op_class, ())
    prologue_epilogue = [
        n for n in neighbours
        if n.short_name != short_name and n.op_class == "elementwise" and n.op_subclass in adjacent
    ]
    prologue_epilogue.sort(key=lambda n: (-n.pct_gpu_time, n.short_name))
    if op_class in ADJACENT_OPS:
        for n in prologue_epilogue[:2]:
            levers.append(
                f"fuse `{n.short_name}` ({n.op_subclass}, {n.pct_gpu_time:.2f}% GPU) into this "
                "kernel's prologue/epilogue: removes an activation round-trip and that kernel's "
                "own launches"
            )
    elif op_class == "elementwise":
        hosts = [n for n in neighbours if n.op_class in ("gemm", "moe", "attn")]
        hosts.sort(key=lambda n: (-n.pct_gpu_time, n.short_name))
        if hosts:
            levers.append(
                f"fuse this kernel into `{hosts[0].short_name}` ({hosts[0].pct_gpu_time:.2f}% "
                "GPU): its bytes disappear with its launches"
            )
        else:
            levers.append("fuse this kernel into its producer or consumer: its bytes disappear")
    if op_class == "moe":
        sizes = dict(alternatives)
        hit, every = sizes.get("experts_hit"), sizes.get("all-experts")
        if hit and every and every > hit:
            waste = 100.0 * (every - hit) / every
            if chosen_label == "all-experts":
                levers.append(
                    f"stop reading unrouted experts: the timing fits streaming all experts "
                    f"({every / 1e6:.0f} MB/layer) while routing only touches {hit / 1e6:.0f} MB "
                    f"— {waste:.0f}% of the bytes are waste"
                )
            else:
                levers.append(
                    f"make sure unrouted experts are never read: streaming all experts would cost "
                    f"{every / 1e6:.0f} MB/layer vs {hit / 1e6:.0f} MB routed ({waste:.0f}% more)"
                )
    if op_class == "attn" and kv_dtype in ("bf16", "fp16"):
        levers.append(
            "fp8 KV cache (kv-cache-dtype fp8): halves the KV bytes read per step "
            "(lossy — must pass the accuracy gate)"
        )
    elif weight_dtype in _LOWER_PRECISION and op_class in ("gemm", "moe"):
        lower = _LOWER_PRECISION[weight_dtype]
        levers.append(
            f"lower-precision weights {weight_dtype} → {lower}: cuts the streamed weight bytes "
            "(lossy — must pass the accuracy gate)"
        )
    levers.append(
        "layout / packing: remove padding waste, improve coalescing and L2 reuse between the "
        "stages of the same logical op"
    )
    if bound_type == "compute":
        levers.insert(0, "compute-bound and saturated: only fewer FLOPs help (lower precision, "
                         "skipping padded tiles)")
    levers.append(LEVER_CONSTRAINT)
    return levers

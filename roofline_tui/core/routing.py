"""Spec §7: where each head's next unit of budget should go.

The shippability gate applies first; then the routing table keyed by headroom class and bound
type. The byte-reduction levers of a saturated head belong to its op class
(``roofline_tui.core.opmodels``), not here.
"""

from __future__ import annotations

from typing import NamedTuple

from roofline_tui.core.artifact import Route
from roofline_tui.core.metrics import E2E_NOISE_PCT


class RouteDecision(NamedTuple):
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

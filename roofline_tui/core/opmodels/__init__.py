"""The op-class models (spec §4), one module per class, and their explicit registry.

Each module defines one object implementing :class:`OpModel`: its byte/FLOP ``estimate``, its
``target_eff`` priors (spec §7) and its byte-reduction ``levers`` (spec §7.1). Adding a class
means writing its module and adding it to :data:`MODELS` below.
"""

from __future__ import annotations

from roofline_tui.core.opmodels import attn, elementwise, gemm, lora, moe
from roofline_tui.core.opmodels.base import (
    Candidate,
    Choice,
    LeverContext,
    Neighbour,
    Neighbours,
    OpContext,
    OpEstimate,
    OpModel,
    OpModelUnavailable,
    Prior,
    choose_candidate,
)

MODELS: dict[str, OpModel] = {
    m.op_class: m for m in (gemm.MODEL, moe.MODEL, attn.MODEL, elementwise.MODEL, lora.MODEL)
}

# Every calibration key a priors file may set (``roofline analyze --priors``).
PRIOR_KEYS: dict[str, Prior] = {
    key: prior for m in MODELS.values() for key, prior in m.priors.items()
}

LEVER_CONSTRAINT = (
    "constraint: isl/osl/conc stay as supplied, no speculative decoding, lossy levers must pass "
    "the accuracy gate"
)


def prior_for(op_class: str, est: OpEstimate | None = None) -> Prior:
    """The spec §7 prior for an estimate of ``op_class`` (its own key, else the class default)."""
    model = MODELS[op_class]
    key = est.prior if est is not None and est.prior else op_class
    return model.priors.get(key) or model.priors[op_class]


def byte_reduction_levers(op_class: str, lc: LeverContext) -> list[str]:
    """Levers that make a saturated kernel move fewer bytes for the same work (spec §7.1): the
    class's own levers, then the ones that apply to every class."""
    model = MODELS.get(op_class)
    levers = model.levers(lc) if model is not None else []
    levers.append(
        "layout / packing: remove padding waste, improve coalescing and L2 reuse between the "
        "stages of the same logical op"
    )
    if lc.bound_type == "compute":
        levers.insert(0, "compute-bound and saturated: only fewer FLOPs help (lower precision, "
                         "skipping padded tiles)")
    levers.append(LEVER_CONSTRAINT)
    return levers


__all__ = [
    "LEVER_CONSTRAINT",
    "MODELS",
    "PRIOR_KEYS",
    "Candidate",
    "Choice",
    "LeverContext",
    "Neighbour",
    "Neighbours",
    "OpContext",
    "OpEstimate",
    "OpModel",
    "OpModelUnavailable",
    "Prior",
    "byte_reduction_levers",
    "choose_candidate",
    "prior_for",
]

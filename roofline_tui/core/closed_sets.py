"""The spec's closed sets (bound types, headroom classes, routes, stages...) as ``Literal`` types.

They live apart from the artifact's models so that a module that only names them (the roofline
formulas, the peak table) does not build the models to do so; :mod:`roofline_tui.core.artifact`
re-exports every one.
"""

from typing import Literal, TypeGuard, get_args

BoundType = Literal["memory", "compute", "latency", "unknown"]
# The op classes the engine writes: the spec's five, ``comm`` (collectives, as real upstream
# artifacts carry) and ``lora`` (LoRA shrink/expand, core.opmodels.lora). SSM and
# linear-attention kernels are ``unknown`` with their family as ``op_subclass``. Not enforced on
# read: an upstream artifact may carry a class of its own.
OpClass = Literal["gemm", "moe", "attn", "elementwise", "unknown", "comm", "lora"]
HeadroomClass = Literal["underperforming", "moderate", "saturated", "unknown"]
Stage = Literal["A", "B", "C"]
Confidence = Literal["low", "medium", "high"]
Regime = Literal["decode", "prefill"]
RoofAxis = Literal["memory", "compute"]
Route = Literal[
    "kernel_tuning",
    "kernel_occupancy",
    "byte_reduction",
    "byte_reduction_or_fusion",
    "host_side",
    "low_priority",
    "pct_order",
]
# counters: both axes measured (or the roofline itself); mixed: one axis measured; model: none
MeasurementBasis = Literal["model", "mixed", "counters"]
# which measured bytes: both directions, or FETCH_SIZE without WRITE_SIZE (a lower bound)
BytesBasis = Literal["reads+writes", "reads only"]
# the memory roof a kernel's bytes are judged against: HBM, or the host link (PCIe / C2C) for a
# host<->device copy
MemoryRoof = Literal["hbm", "host_link"]
CorroborationVerdict = Literal["supports", "contradicts", "neutral"]
PeaksSource = Literal["table", "derived", "none"]
# One predicted-vs-actual pair (spec §8.3-§8.4)
IsolatedVerdict = Literal[
    "noise", "regression", "contradiction", "at_ceiling", "under_ceiling", "unpredicted"
]
E2EVerdict = Literal["noise", "gain", "loss", "unknown"]

# A number kept as the file wrote it (an upstream ``4194304`` stays an int on round-trip).
Number = int | float

BOUND_TYPES: tuple[str, ...] = get_args(BoundType)
HEADROOM_CLASSES: tuple[str, ...] = get_args(HeadroomClass)
OP_CLASSES: tuple[str, ...] = get_args(OpClass)



def is_bound_type(value: object) -> TypeGuard[BoundType]:
    """A value read from a file that is one of the spec's bound types."""
    return isinstance(value, str) and value in BOUND_TYPES

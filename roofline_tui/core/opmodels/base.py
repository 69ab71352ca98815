"""What every op-class model receives and returns (spec §4).

A model turns one head entry plus the model shape and workload into byte/FLOP estimates. It says
what unit it modelled (one launch, or one logical op such as a whole MoE layer that the backend
splits into several launches) and lists every assumption it made, so a user can always ask
"why this number?".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Literal

from roofline_tui.core.inputs import Workload
from roofline_tui.core.model_config import ModelShape


class OpModelUnavailable(Exception):
    """This entry cannot be modelled (spec §6 L2); ``str(exc)`` is the one-line reason."""


@dataclass(frozen=True)
class Candidate:
    """One plausible byte/FLOP model of the same work (spec §4 feasibility rule)."""

    label: str
    bytes: float
    flops: float
    note: str = ""


@dataclass(frozen=True)
class OpEstimate:
    model: str                                  # human name of the byte/FLOP model used
    candidates: tuple[Candidate, ...]           # first is the preferred one when all are feasible
    compute_dtype: str                          # which flops peak applies
    per: Literal["launch", "logical_op"]        # what the bytes/FLOPs cover
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpContext:
    """Everything a model may use; dtypes are canonical names (``bf16``, ``fp8``...)."""

    name: str
    op_subclass: str | None
    regime: str
    shapes: list[list[list[int]]]
    dtypes: list[str]                 # canonical dtypes from the profile entry (may be empty)
    model: ModelShape | None
    workload: Workload
    tokens: int | None                # M: decode batch or prefill tokens for this regime
    tokens_source: str                # how ``tokens`` was obtained
    weight_dtype: str
    activation_dtype: str
    kv_dtype: str
    dtype_bytes: dict[str, float] = field(default_factory=dict)  # canonical name -> bytes
    l2_bytes: int | None = None

    def nbytes(self, dtype: str) -> float:
        return self.dtype_bytes.get(dtype, 2.0)

    def require_model(self, what: str) -> ModelShape:
        if self.model is None:
            raise OpModelUnavailable(f"no model config.json found; {what} needs it")
        return self.model

    def require_tokens(self, what: str) -> int:
        if not self.tokens:
            raise OpModelUnavailable(
                f"{what} needs the token count M for the {self.regime} regime (est_shape, the "
                "serving block or workload.conc/isl), and none was available"
            )
        return self.tokens


def numel(dims: list[int]) -> int:
    return prod(dims) if dims else 0

"""A Top-N entry's recorded instances (``core.topn_ext``) as cases for the per-shape fold.

One kernel name often serves several shapes (a hipBLASLt GEMM for the QKV, O and MLP
projections). Each instance carries its own launches and time, so each shape's FLOPs and bytes
are set against that shape's own time, and the fold weights them by calls × latency, as the
stage-B fold does for captured cases. Operands are taken by role (``core.operands``): the op's
inputs and weights in argument order, never an output, bias or scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.topn_ext import Instance

# the roles whose tensors a case lists as its shapes (outputs, biases and scales are in the
# instance, for the models that read it)
OPERAND_ROLES = ("input", "weight")


@dataclass(eq=False)
class InstanceCase:
    """One recorded instance as a case of the per-shape fold (the attributes the stage-B fold
    reads from a captured case, plus the instance itself for role-aware models)."""

    instance: Instance
    regime: str
    input_shapes: list[list[int]]
    dtypes: list[str]
    count: float
    latency_ms: float
    name: str | None = None
    m: int | None = None
    params: dict[str, Any] = field(default_factory=lambda: {"count_basis": "calls"})


def instance_cases(entry: TopNEntry, regime: str, min_tensors: int = 2
                   ) -> tuple[list[InstanceCase], list[str]]:
    """The entry's instances in ``regime`` as cases (one per instance with a launching op and at
    least ``min_tensors`` input/weight tensors), and one line on what they cover of the
    regime's time."""
    ext = entry.ext
    if ext is None or not ext.instances:
        return [], []
    cases: list[InstanceCase] = []
    used_us = other_us = 0.0
    for inst in ext.instances:
        calls, us = inst.phase(regime)
        if not calls:
            continue
        tensors = inst.tensors(*OPERAND_ROLES)
        # what the model can read: the operand tensors for a GEMM's two; for one tensor, any
        # argument with dims and a tensor role (a TensorList input, an in-place or output
        # argument: the instance itself carries them)
        readable = len(tensors) if min_tensors > 1 else sum(
            1 for a in inst.args if a.dims and a.role not in (None, "scalar", "other"))
        if inst.op is None or readable < min_tensors:
            other_us += us
            continue
        used_us += us
        cases.append(InstanceCase(
            instance=inst,
            regime=regime,
            input_shapes=[d for d, _ in tensors],
            dtypes=[canonical_dtype(t) or (t or "") for _, t in tensors],
            count=float(calls),
            latency_ms=us / calls / 1000.0,
            name=inst.op,
        ))
    if not cases:
        return [], []
    folded = ext.folded.total_us if ext.folded is not None else 0.0
    total = used_us + other_us
    line = (f"{len(cases)} recorded instance(s) of this kernel, each shape against its own "
            f"{regime} time ({used_us / 1000:.4g} ms")
    if total > used_us:
        line += f", {100 * used_us / total:.1f} % of the instances' time; the rest has no "
        line += "launching op with two operand tensors"
    line += ")"
    if folded:
        line += f"; {ext.folded.instances if ext.folded else 0} smaller instance(s) folded "
        line += f"by the importer ({folded / 1000:.4g} ms) are not in it"
    return cases, [line]

"""A Top-N entry's recorded instances (``core.topn_ext``) as cases for the per-shape fold.

One kernel name often serves several shapes (a hipBLASLt GEMM for the QKV, O and MLP
projections). Each instance carries its own launches and time, so each shape's FLOPs and bytes
are set against that shape's own time, and the fold weights them by calls × latency, as the
stage-B fold does for captured cases. Operands are taken by role (``core.operands``): the op's
inputs and weights in argument order, never an output, bias or scale.
"""

from __future__ import annotations

from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.measured.models import ShapeCase

# op classes whose model reads its operands' shapes (the others take theirs from config.json)
INSTANCE_CLASSES = frozenset({"gemm"})
OPERAND_ROLES = ("input", "weight")


def instance_cases(entry: TopNEntry, regime: str) -> tuple[list[ShapeCase], list[str]]:
    """The entry's instances in ``regime`` as cases (one per instance with at least two
    operand tensors), and one line on what they cover of the regime's time."""
    ext = entry.ext
    if ext is None or not ext.instances:
        return [], []
    cases: list[ShapeCase] = []
    used_us = other_us = 0.0
    for inst in ext.instances:
        calls, us = inst.phase(regime)
        if not calls:
            continue
        tensors = inst.tensors(*OPERAND_ROLES)
        if inst.op is None or len(tensors) < 2:
            other_us += us
            continue
        used_us += us
        cases.append(ShapeCase(
            regime=regime,
            input_shapes=[d for d, _ in tensors],
            dtypes=[canonical_dtype(t) or (t or "") for _, t in tensors],
            count=float(calls),
            latency_ms=us / calls / 1000.0,
            name=inst.op,
            params={"count_basis": "calls"},
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

"""A Top-N entry's instances, as the importers write them under the extension key.

An *instance* is what one kernel name did for one launching op with one signature: the op's
name, every argument position's dims, recorded type and role (``core.operands``), the launch
geometry when recorded, and the instance's own calls and time, per phase too. One hipBLASLt
kernel that serves four projections is four instances with four times, so a model pairs each
shape's FLOPs with that shape's time instead of one shape with the mean of all launches.

The list is bounded: the instances that cover :data:`COVER` of the entry's time, at most
:data:`MAX_INSTANCES`; the rest is folded into one ``folded`` record that says how many
instances, calls and microseconds it holds. Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roofline_tui.core.operands import roles_of

MAX_INSTANCES = 32
COVER = 0.99  # share of an entry's time the kept instances cover (at least)


@dataclass
class InstanceAgg:
    """One instance of a kernel: the launches made by one launching op with one signature
    (per-position dims and types) and one launch geometry, found one way (``source``)."""

    op: str | None
    dims: tuple[Any, ...]
    types: tuple[str, ...]
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    source: str | None  # "launch" | "external_id" | "capture" | None (no launching op)
    module: str | None  # the nn.Module path around the launch, when recorded
    calls: int
    total_us: float
    by_phase: dict[str, tuple[int, float]] = field(default_factory=dict)
    # other kernels the same launching-op calls launched: name -> launches of this instance
    # whose op call also launched it (a split-K main kernel and its reduce: one logical op)
    with_kernels: dict[str, int] = field(default_factory=dict)
    # per position, the value the op's Concrete Inputs record there (attention ops only: see
    # importers.torch.signatures.VALUE_OPS), None where none is; () for every other op
    values: tuple[Any, ...] = ()


def _r(value: float, nd: int = 3) -> float:
    out = round(float(value), nd)
    return 0.0 if out == 0 else out


def _dims_json(dims: Any) -> Any:
    """A position's dims as JSON: a list of ints, a list of such lists (TensorList), or None."""
    if dims is None:
        return None
    if dims and isinstance(dims[0], tuple):
        return [list(d) for d in dims]
    return list(dims)


def instance_json(inst: InstanceAgg) -> dict[str, Any]:
    """One instance as written into the Top-N (see ``core.topn_ext.Instance``)."""
    out: dict[str, Any] = {"op": inst.op}
    if inst.op is not None:
        n = max(len(inst.dims), len(inst.types))
        found = roles_of(inst.op, n, list(inst.types), dims=list(inst.dims))
        args = []
        values = inst.values
        for k in range(n):
            arg = {
                "dims": _dims_json(inst.dims[k]) if k < len(inst.dims) else None,
                "type": inst.types[k] if k < len(inst.types) else None,
                "role": found.roles[k],
            }
            if k < len(values) and values[k] is not None:
                arg["value"] = values[k]  # recorded for attention ops only
            args.append(arg)
        out["args"] = args
        out["roles_from"] = found.source
        if found.writes_output:
            out["output"] = found.writes_output
    if inst.grid is not None:
        out["grid"] = list(inst.grid)
    if inst.block is not None:
        out["block"] = list(inst.block)
    out["source"] = inst.source
    if inst.module:
        out["module"] = inst.module
    out["calls"] = inst.calls
    out["total_us"] = _r(inst.total_us)
    if inst.by_phase:
        out["by_phase"] = {ph: {"calls": c, "total_us": _r(t)}
                           for ph, (c, t) in sorted(inst.by_phase.items())}
    if inst.with_kernels:
        out["with"] = [{"kernel": k, "calls": n} for k, n in inst.with_kernels.items()]
    return out


def bound(instances: Iterable[InstanceAgg], total_us: float
          ) -> tuple[list[InstanceAgg], list[InstanceAgg]]:
    """(kept, folded): most time first; kept until :data:`COVER` of ``total_us`` is covered,
    at most :data:`MAX_INSTANCES`. Ties are broken by calls, then op name, so equal inputs give
    equal documents."""
    ordered = sorted(instances, key=lambda i: (-i.total_us, -i.calls, i.op or "", i.dims.__repr__()))
    kept: list[InstanceAgg] = []
    covered = 0.0
    for inst in ordered:
        if len(kept) >= MAX_INSTANCES or (kept and covered >= COVER * total_us):
            break
        kept.append(inst)
        covered += inst.total_us
    return kept, ordered[len(kept):]


def entry_extension(instances: list[InstanceAgg], total_us: float) -> dict[str, Any]:
    """The entry's extension object: its instances, what was folded, and how many launches got
    their launching op from a graph-capture trace or have none."""
    kept, folded = bound(instances, total_us)
    out: dict[str, Any] = {"instances": [instance_json(i) for i in kept]}
    if folded:
        out["folded"] = {"instances": len(folded), "calls": sum(i.calls for i in folded),
                         "total_us": _r(sum(i.total_us for i in folded))}
    out["capture_shaped_calls"] = sum(i.calls for i in instances if i.source == "capture")
    out["unshaped_calls"] = sum(i.calls for i in instances if i.op is None)
    return out

"""Split-stage MoE: a MoE kernel whose name does not say its stage, launched inside a ``cpu_op``
whose name does (``aiter::ck_moe_stage1`` / ``aiter::ck_moe_stage2``), becomes one Top-N entry
per stage, each with the launches, time and shapes of its own stage."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from roofline_tui.core.classify import classify as classify_op, stage_in_name
from roofline_tui.core.names import SHORT_NAME_MAX, short_name_of
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.launches import find_launches
from roofline_tui.importers.torch.spans import innermost_by_thread


@dataclass
class StageLabel:
    """A split-stage MoE entry: its short name, and the launching op(s) with how many of the
    kernel's launches each made."""

    short_name: str
    ops: dict[str, int] = field(default_factory=dict)


def split_moe_stages(col: Collector, device: int) -> dict[int, StageLabel]:
    """Give each launch of a MoE kernel whose name hides its stage the stage of the ``cpu_op``
    that launched it (module docstring): its row is re-pointed to the name id of
    ``<name> [stage<n>]``. Returns the new name ids with their labels."""
    if not col.s_stage:
        return {}
    candidates: dict[int, bool] = {}
    rows = array("q")
    for i, (d, nid) in enumerate(zip(col.g_dev, col.g_name, strict=True)):
        if d != device:
            continue
        ok = candidates.get(nid)
        if ok is None:
            name = col.names[nid]
            ok = candidates[nid] = (stage_in_name(name) is None
                                    and classify_op(name, has_experts=True).op_class == "moe")
        if ok:
            rows.append(i)
    if not rows:
        return {}
    launches = find_launches(col, rows)
    span_of = innermost_by_thread(launches.tid, launches.ts, col.s_tid, col.s_ts, col.s_end)
    labels: dict[int, StageLabel] = {}
    for p, j in enumerate(span_of):
        if j < 0:
            continue
        i = rows[p]
        base = col.names[col.g_name[i]]
        stage = col.s_stage[j]
        nid = col._name_id(f"{base} [stage{stage}]")
        col.g_name[i] = nid
        label = labels.get(nid)
        if label is None:
            suffix = f".stage{stage}"
            short = short_name_of(base)[: SHORT_NAME_MAX - len(suffix)]
            label = labels[nid] = StageLabel(short + suffix)
        op = col.names[col.s_op[j]]
        label.ops[op] = label.ops.get(op, 0) + 1
    return labels


def stage_note(label: StageLabel, calls: int) -> str:
    ops = ", ".join(f"{printable(op, limit=80)} ({n:,})" for op, n in
                    sorted(label.ops.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    return (f"split-stage MoE: the {calls:,} launches of this kernel made inside {ops}; "
            "its launches anywhere else are separate entries")

"""Two runs compared op by op (issue 33): which logical ops got slower, and is it the kernel, the
hardware or the work?

Kernel names differ across vendors and builds (``Cijk_Alik_Bljk…`` against ``sm90_xmma_gemm…``),
so ops are matched by what the trace recorded of the call that launched them: the **op key** of
:mod:`roofline_tui.core.op_keys` (op family, module, the dims that do not change with the
batch, the weight dtype). A split-K GEMM's reduce kernel carries its op call's key, so the op's
time is both kernels' and the verdict is its main kernel's.

Each side's time for a key is the sum, over its kernels' recorded instances with that key, of
their GPU time, per step when the side records serving steps (else per trace). Launches with no
op key are matched by their kernel's full name within one vendor only, else counted as
unmatched; the share of each side's GPU time the matched keys cover is stated, and the largest
unmatched ops listed.

The **cause** of a matched op's difference:

* ``unchanged``: the same work in times within :data:`SAME_TIME` of each other: nothing moved;
* ``work``: the bytes or FLOPs per launch differ by more than :data:`WORK_BAND` (different token
  counts, precision or fusion): the times are not comparable as they stand;
* ``hardware``: both sides run at about the same fraction of their own roofs (within
  :data:`SAME_FRACTION`) and the roofs differ (by more than :data:`SAME_ROOF`): the gap is
  the roofs' ratio;
* ``kernel``: one side is further from its roof (or both share one roof, so the whole gap is
  the kernels'): the lever is that side's kernel;
* ``unknown``: a side has no verdict (no roofline %), so the cause cannot be told;
* ``only in A`` / ``only in B``.
"""

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.empty import empty_list
from roofline_tui.core.inputs import TopN
from roofline_tui.core.op_keys import op_family, op_key, vendor_of

WORK_BAND = 0.25  # bytes or FLOPs per launch further apart than this: different work
SAME_FRACTION = 0.25  # roofline % within this (relative) on both sides: the hardware's gap
SAME_TIME = 0.02  # times within this (relative) of each other, the same work: unchanged
SAME_ROOF = 0.05  # roofs closer than this are one roof: a gap on it is the kernel's
FEW_MATCHED = 0.5  # matched ops covering less than this of a side: said as a warning
MAX_UNMATCHED = 10

__all__ = ["Diff", "DiffRow", "DiffSide", "DiffTotals", "diff", "entry_row", "op_family",
           "op_key", "rows_by_key", "vendor_of"]

Cause = Literal["unchanged", "work", "hardware", "kernel", "unknown", "only in A", "only in B"]

class DiffSide(BaseModel):
    """One side's view of a matched op."""

    time_us: float = Field(description="GPU time of the op, per step (per trace without steps)")
    kernels: list[str] = Field(default_factory=empty_list, description="entries' short names")
    roofline_pct: float | None = None
    roof: float | None = Field(default=None, description="the rate of the roof roofline_pct is "
                               "against (bytes/s for the memory axis, FLOP/s for compute)")
    bound_type: str | None = None
    attainable_speedup: float | None = None
    bytes_per_launch: float | None = None
    flops_per_launch: float | None = None


class DiffRow(BaseModel):
    key: str = Field(description="the op key (or 'kernel:<name>' matched by name)")
    a: DiffSide | None = None
    b: DiffSide | None = None
    ratio: float | None = Field(default=None, description="B's time over A's")
    delta_us: float = Field(description="B's time minus A's (what this op explains)")
    cause: Cause
    why: str = ""


class DiffTotals(BaseModel):
    a_time_us: float
    b_time_us: float
    a_matched_share: float
    b_matched_share: float
    basis: str = Field(description="per step | per trace")


class Diff(BaseModel):
    """``roofline diff A B``: logical ops matched by key, with each side's time and verdict."""

    a: str
    b: str
    rows: list[DiffRow] = Field(default_factory=empty_list)
    totals: DiffTotals
    unmatched_a: list[DiffRow] = Field(default_factory=empty_list)
    unmatched_b: list[DiffRow] = Field(default_factory=empty_list)
    notes: list[str] = Field(default_factory=empty_list)


@dataclass
class _Op:
    time_us: float = 0.0
    entries: dict[str, float] = field(default_factory=dict)  # short name -> time


def _steps(topn: TopN) -> int:
    s = topn.serving
    n = (s.n_decode_steps or 0) + (s.n_prefill_steps or 0) if s is not None else 0
    return n if n > 0 else 1


def _ops(topn: TopN, vendor: str | None) -> tuple[dict[str, _Op], float]:
    """Per op key the GPU time (per step) and the entries behind it; the side's GPU time."""
    per = float(_steps(topn))
    ops: dict[str, _Op] = {}
    total = 0.0
    for e in topn.entries:
        e_us = (e.total_ms or 0.0) * 1000.0
        total += e_us
        keyed = 0.0
        for inst in (e.ext.instances if e.ext is not None else []):
            key = op_key(inst)
            if key is None:
                continue
            op = ops.setdefault(key, _Op())
            op.time_us += inst.total_us / per
            op.entries[e.short_name] = op.entries.get(e.short_name, 0.0) + inst.total_us / per
            keyed += inst.total_us
        rest = e_us - keyed
        if rest > 0.01 * max(e_us, 1e-9):  # launches with no op key: by name, one vendor
            key = f"kernel:{vendor or '?'}:{e.name}"
            op = ops.setdefault(key, _Op())
            op.time_us += rest / per
            op.entries[e.short_name] = op.entries.get(e.short_name, 0.0) + rest / per
    return ops, total / per


def _roof(e: Entry, art: Artifact) -> float | None:
    """The rate of the roof the entry's roofline % is taken against: its memory peak when the
    memory axis is the higher utilisation, else its compute dtype's peak."""
    if e.roofline_pct is None:
        return None
    if (e.hbm_util or 0.0) >= (e.compute_util or 0.0):
        return e.memory_peak_bytes_s or art.peaks.hbm_bw_bytes_s
    return art.peaks.flops.get(e.peak_flops_dtype or "")


def _side(op: _Op, by_short: dict[str, Entry], art: Artifact) -> DiffSide:
    """The side's time and the verdict of its biggest entry (its time weights nothing else)."""
    names = sorted(op.entries, key=lambda n: -op.entries[n])
    main = by_short.get(names[0]) if names else None
    launches = main.t_ms if main is not None else None
    return DiffSide(
        time_us=round(op.time_us, 3), kernels=names,
        roofline_pct=main.roofline_pct if main is not None and main.has_verdict else None,
        roof=_roof(main, art) if main is not None and main.has_verdict else None,
        bound_type=main.bound_type if main is not None else None,
        attainable_speedup=main.attainable_speedup if main is not None else None,
        bytes_per_launch=main.bytes_est if main is not None and launches else None,
        flops_per_launch=main.flops_est if main is not None and launches else None)


def _apart(x: float | None, y: float | None, band: float) -> bool:
    if not x or not y:
        return False
    return abs(x - y) / max(abs(x), abs(y)) > band


def _cause(a: DiffSide, b: DiffSide) -> tuple[Cause, str]:
    if _apart(a.bytes_per_launch, b.bytes_per_launch, WORK_BAND) or _apart(
            a.flops_per_launch, b.flops_per_launch, WORK_BAND):
        return "work", "the bytes or FLOPs per launch differ: different tokens, precision or fusion"
    if a.time_us > 0 and not _apart(a.time_us, b.time_us, SAME_TIME):
        return "unchanged", f"the same work in the same time (within {SAME_TIME:.0%})"
    if a.roofline_pct is None or b.roofline_pct is None:
        return "unknown", "a side has no verdict (no roofline %)"
    roofs = (b.roof / a.roof) if a.roof and b.roof else None
    if not _apart(a.roofline_pct, b.roofline_pct, SAME_FRACTION) and _apart(
            a.roof, b.roof, SAME_ROOF):
        return "hardware", (f"both at about the same fraction of their roofs ({a.roofline_pct:.0%} "
                            f"vs {b.roofline_pct:.0%}): the gap is the roofs' (B's is "
                            f"{roofs:.2f}× A's)")
    (lower, side), higher = (((a, "A"), b) if a.roofline_pct < b.roofline_pct else ((b, "B"), a))
    one = " of one roof" if roofs is not None and not _apart(a.roof, b.roof, SAME_ROOF) else ""
    return "kernel", (f"{side}'s kernel {lower.kernels[0] if lower.kernels else '?'} is further "
                      f"from its roof ({lower.roofline_pct:.0%} vs {higher.roofline_pct:.0%}"
                      f"{one}): the lever is there")


def diff(a_name: str, a_topn: TopN, a_art: Artifact, b_name: str, b_topn: TopN,
         b_art: Artifact) -> Diff:
    """The op-by-op comparison of two analysed rounds (module docstring)."""
    va, vb = _vendor(a_topn), _vendor(b_topn)
    a_ops, a_total = _ops(a_topn, va)
    b_ops, b_total = _ops(b_topn, vb)
    a_by, b_by = a_art.entries_by_short_name(), b_art.entries_by_short_name()
    notes: list[str] = []
    if va and vb and va != vb:
        notes.append(f"A is {va}, B is {vb}: launches without an op key are not matched across "
                     "vendors (kernel names differ)")
    rows: list[DiffRow] = []
    only_a: list[DiffRow] = []
    only_b: list[DiffRow] = []
    for key in sorted(set(a_ops) | set(b_ops)):
        oa, ob = a_ops.get(key), b_ops.get(key)
        if oa is not None and ob is not None:
            sa, sb = _side(oa, a_by, a_art), _side(ob, b_by, b_art)
            cause, why = _cause(sa, sb)
            rows.append(DiffRow(key=key, a=sa, b=sb, ratio=round(sb.time_us / sa.time_us, 4)
                                if sa.time_us else None,
                                delta_us=round(sb.time_us - sa.time_us, 3), cause=cause, why=why))
        elif oa is not None:
            sa = _side(oa, a_by, a_art)
            only_a.append(DiffRow(key=key, a=sa, delta_us=-sa.time_us, cause="only in A",
                                  why="fused away, or not run, in B"))
        elif ob is not None:
            sb = _side(ob, b_by, b_art)
            only_b.append(DiffRow(key=key, b=sb, delta_us=sb.time_us, cause="only in B",
                                  why="new in B"))
    rows.sort(key=lambda r: -abs(r.delta_us))
    only_a.sort(key=lambda r: r.delta_us)
    only_b.sort(key=lambda r: -r.delta_us)
    matched_a = sum(r.a.time_us for r in rows if r.a is not None)
    matched_b = sum(r.b.time_us for r in rows if r.b is not None)
    basis = "per step" if _steps(a_topn) > 1 or _steps(b_topn) > 1 or (
        a_topn.serving is not None and b_topn.serving is not None) else "per trace"
    totals = DiffTotals(a_time_us=round(a_total, 3), b_time_us=round(b_total, 3),
                        a_matched_share=matched_a / a_total if a_total else 0.0,
                        b_matched_share=matched_b / b_total if b_total else 0.0, basis=basis)
    for side, topn in (("A", a_topn), ("B", b_topn)):
        listed = sum(e.pct_gpu_time for e in topn.entries)
        if listed < 99.0:
            notes.append(f"{side}'s Top-N lists {listed:.1f}% of its GPU time: the rest is "
                         "compared by neither side")
    few = min(totals.a_matched_share, totals.b_matched_share)
    if (a_total or b_total) and few < FEW_MATCHED:
        notes.insert(0, f"few ops match: they cover {totals.a_matched_share:.1%} of A's GPU time "
                        f"and {totals.b_matched_share:.1%} of B's: different models, builds or "
                        "parallelism, or launches with no recorded op (a graph replayed without "
                        "its capture trace)")
    if basis == "per trace":
        notes.append("neither side records serving steps: times are per trace, so two traces "
                     "of different lengths differ by that too")
    return Diff(a=a_name, b=b_name, rows=rows, totals=totals,
                unmatched_a=only_a[:MAX_UNMATCHED], unmatched_b=only_b[:MAX_UNMATCHED],
                notes=notes)


def _vendor(topn: TopN) -> str | None:
    votes = [v for v in (vendor_of(e.name) for e in topn.entries) if v]
    return max(set(votes), key=votes.count) if votes else None


def rows_by_key(d: Diff) -> dict[str, DiffRow]:
    """Every row of ``d`` (matched, and the unmatched ones listed) by its op key."""
    return {r.key: r for r in (*d.rows, *d.unmatched_a, *d.unmatched_b)}


def entry_row(e: Entry, index: dict[str, DiffRow]) -> DiffRow | None:
    """The row that answers for A's entry ``e``: the row of its largest op key (its time share
    in ``Entry.op_keys``), or, with no op key recorded, the by-name row of its kernel; None
    when ``d`` has no row for it (an unmatched op past the ones listed)."""
    for share in e.op_keys:
        if share.key in index:
            return index[share.key]
    if e.op_keys:
        return None
    suffix = f":{e.name}"
    return next((r for k, r in index.items() if k.startswith("kernel:") and k.endswith(suffix)),
                None)

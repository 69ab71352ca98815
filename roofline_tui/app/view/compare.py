"""The compare view (``roofline dash PROFILE --against OTHER``): the rankings' columns for the
other side, and the Compare pane of the drill-down.

A is the round on screen, B the one it is compared with. Which op of B answers for a row of A,
and why the two differ, is the engine's (:mod:`roofline_tui.core.diff`): an entry's largest
logical op (``Entry.op_keys``) found among the diff's rows. Rich only, no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline_tui.app.view.styles import DIM, LABEL_STYLE, safe
from roofline_tui.core import units
from roofline_tui.core.api import RoundResult
from roofline_tui.core.artifact import Entry
from roofline_tui.core.diff import Diff, DiffRow, DiffSide, entry_row, op_key, rows_by_key
from roofline_tui.core.textsafe import printable

CAUSE_STYLE = {"kernel": "bold yellow", "hardware": "cyan", "work": "magenta",
               "unchanged": DIM, "unknown": DIM, "only in A": "green", "only in B": "red"}
SLOWER = 1.05  # B/A past this (or under its inverse) is coloured: the op moved
MAX_OPS = 3  # op keys of one kernel shown in the Compare pane
MAX_INSTANCES = 4  # instances of one op per side
MAX_LEVERS = 2  # of the side the cause names


@dataclass(frozen=True)
class Comparison:
    """The shown round (A) compared with ``against`` (B): the engine's diff, B's analysed
    round, and the diff's rows by op key."""

    against: Path
    diff: Diff
    other: RoundResult
    index: dict[str, DiffRow] = field(default_factory=dict)

    @classmethod
    def of(cls, against: Path, diff: Diff, other: RoundResult) -> Comparison:
        return cls(against, diff, other, rows_by_key(diff))

    def row_for(self, e: Entry) -> DiffRow | None:
        return entry_row(e, self.index)


def ratio_text(row: DiffRow | None) -> Text:
    """B's time over A's for the row's op: ``1.50×``, ``A only``, or a dash."""
    if row is None:
        return Text(units.DASH, style=DIM, justify="right")
    if row.cause == "only in A":
        return Text("A only", style=CAUSE_STYLE["only in A"], justify="right")
    if row.ratio is None:
        return Text(units.DASH, style=DIM, justify="right")
    style = ("red" if row.ratio > SLOWER else "green" if row.ratio < 1 / SLOWER else DIM)
    return Text(f"{row.ratio:.2f}×", style=style, justify="right")


def other_roof_text(row: DiffRow | None) -> Text:
    """B's roofline % for the row's op (a dash without a verdict there)."""
    b = row.b if row is not None else None
    return Text(units.pct(b.roofline_pct) if b is not None else units.DASH,
                style="" if b is not None and b.roofline_pct is not None else DIM,
                justify="right")


def _grid() -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style=LABEL_STYLE, no_wrap=True)
    t.add_column(overflow="fold")
    return t


def _side_line(side: DiffSide | None, unit: str) -> Text:
    if side is None:
        return Text("not run", style=DIM)
    out = Text(f"{side.time_us:,.1f} µs {unit}")
    out.append(f"   roofline {units.pct(side.roofline_pct)}", style="")
    if side.bound_type:
        out.append(f" ({printable(side.bound_type)})", style=DIM)
    if side.attainable_speedup:
        out.append(f"   speedup {units.ratio(side.attainable_speedup)}", style=DIM)
    return out


def _kernels(side: DiffSide | None) -> Text:
    if side is None or not side.kernels:
        return Text(units.DASH, style=DIM)
    return Text("\n".join(printable(k, limit=90) for k in side.kernels[:4])
                + (f"\n+{len(side.kernels) - 4} more" if len(side.kernels) > 4 else ""))


def _instances(result: RoundResult, side: DiffSide | None, key: str) -> Text:
    """The recorded launches (op, dims, calls, time) of ``key`` among the side's kernels."""
    if side is None or result.topn is None:
        return Text(units.DASH, style=DIM)
    names = set(side.kernels)
    lines: list[str] = []
    for e in result.topn.entries:
        if e.short_name not in names or e.ext is None:
            continue
        for inst in e.ext.instances:
            if op_key(inst) != key:
                continue
            dims = " ".join("x".join(str(d) for d in dims) for dims, _ in
                            inst.tensors("input", "weight")[:3])
            lines.append(f"{printable(inst.op or '?', limit=40)} [{printable(dims, limit=40)}]"
                         f" × {inst.calls}  {inst.total_us:,.1f} µs  "
                         f"({printable(e.short_name, limit=40)})")
    if not lines:
        return Text("no launch with this op recorded (matched by kernel name)", style=DIM)
    more = len(lines) - MAX_INSTANCES
    return Text("\n".join(lines[:MAX_INSTANCES]) + (f"\n+{more} more" if more > 0 else ""))


def _levers(result: RoundResult, side: DiffSide | None) -> Text | None:
    if side is None or not side.kernels:
        return None
    entry = result.artifact.entries_by_short_name().get(side.kernels[0])
    if entry is None or not entry.levers:
        return None
    out = Text()
    for i, lv in enumerate(entry.levers[:MAX_LEVERS], 1):
        out.append(("\n" if i > 1 else "") + f"{i}. {printable(lv.name)}", style="bold")
        out.append(f" — {printable(lv.action)}")
        out.append(f"\n   expected: {printable(lv.expected_effect)}", style=DIM)
    return out


def _op_block(key: str, share: float | None, row: DiffRow, a: RoundResult,
              c: Comparison) -> Table:
    unit = c.diff.totals.basis
    t = _grid()
    title = Text(printable(key, limit=120), style="bold")
    if share is not None:
        title.append(f"  ({units.pct(share)} of this kernel's recorded time)", style=DIM)
    t.add_row("op", title)
    t.add_row("A (this)", _side_line(row.a, unit))
    t.add_row("B (against)", _side_line(row.b, unit))
    cause = Text(row.cause, style=CAUSE_STYLE.get(row.cause, ""))
    if row.ratio is not None:
        cause.append(f"   B/A {row.ratio:.2f}×   Δ {row.delta_us:+,.1f} µs", style="")
    if row.why:
        cause.append("\n" + printable(row.why), style=DIM)
    t.add_row("cause", cause)
    t.add_row("A kernels", _kernels(row.a))
    t.add_row("B kernels", _kernels(row.b))
    t.add_row("A launches", _instances(a, row.a, key))
    t.add_row("B launches", _instances(c.other, row.b, key))
    # the levers of the side the cause points at (kernel: the one further from its roof)
    lever_side = row.b if row.cause in ("only in B",) else row.a
    if row.cause == "kernel" and row.a is not None and row.b is not None:
        ra, rb = row.a.roofline_pct or 0.0, row.b.roofline_pct or 0.0
        lever_side = row.b if rb < ra else row.a
    levers = _levers(c.other if lever_side is row.b else a, lever_side)
    if levers is not None:
        t.add_row("B levers" if lever_side is row.b else "A levers", levers)
    return t


def compare_view(e: Entry, a: RoundResult, c: Comparison | None, *, against: Path | None,
                 error: str | None = None, waiting: bool = False) -> RenderableType:
    """The Compare pane for A's entry ``e``."""
    if against is None:
        return Text("no comparison: start the dashboard with --against OTHER (a profile, a "
                    "round or an artifact) to compare each op with another run", style=DIM)
    if error:
        return Text(f"cannot compare with {printable(str(against))}: {printable(error)}",
                    style="yellow")
    if c is None:
        return Text(f"comparing with {printable(str(against))}…" if waiting else
                    "no comparison yet", style=DIM)
    t = c.diff.totals
    head = Text(f"A: this round   B: {printable(str(c.against))}   ({t.basis})\n", style=DIM)
    head.append(f"matched ops cover {units.pct(t.a_matched_share)} of A's GPU time and "
                f"{units.pct(t.b_matched_share)} of B's", style=DIM)
    parts: list[RenderableType] = [head]
    shares: list[tuple[str, float | None]] = [(s.key, float(s.share)) for s in e.op_keys]
    if not shares:
        row = c.row_for(e)
        shares = [(row.key, None)] if row is not None else []
    shown = 0
    for key, share in shares:
        row = c.index.get(key)
        if row is None:
            continue
        parts += [Text(""), _op_block(key, share, row, a, c)]
        shown += 1
        if shown >= MAX_OPS:
            break
    if not shown:
        parts.append(Text("\nB runs none of this kernel's ops (only in A), or they are past "
                          "the unmatched ops the diff lists", style=DIM))
    for note in c.diff.notes[:3]:
        parts.append(safe("note: " + note, limit=300))
    return Group(*parts)

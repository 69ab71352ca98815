"""The two rankings as rows and cells: which rows, in which order, which columns fit, what each
cell reads.

A column is one :class:`Column` object (label, width, priority, ``cell(row)``, ``sort_key(row)``),
in the way Rich's progress columns each render one task: the table asks every column for its cell
of a row and, to sort, for its key of the row. Rich only, no Textual.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.text import Text

from roofline_tui.app.view.step_rows import step_entry, step_key
from roofline_tui.app.view.styles import (
    DIM,
    HEADROOM_STYLE,
    HEADROOM_WIDTH,
    caution,
    entry_flags,
    flags_text,
    full_name,
    headroom_text,
    safe,
    signed_pct,
)
from roofline_tui.core import demangle, labels, reading, units
from roofline_tui.core.artifact import Artifact, Entry, StepTarget
from roofline_tui.core.metrics import ISOLATED_NOISE
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.core.diff import DiffRow


@dataclass(frozen=True)
class Row:
    key: str        # unique row key (short_name, ``#n`` appended for a repeated short name)
    rank: int       # 1-based rank in its own ranking
    entry: Entry
    move: int | None = None  # places moved up in the gain ranking vs the GPU-time one
    label: str = ""          # what the kernel cell reads (its row label, cut to fit)
    other: DiffRow | None = None  # dash --against: the compared run's row for its op
    step: StepTarget | None = None  # a part of the step (idle gaps…) ranked among the kernels


def _keyed_entries(artifact: Artifact) -> dict[str, list[tuple[str, Entry]]]:
    by_short: dict[str, list[tuple[str, Entry]]] = defaultdict(list)
    for e in artifact.entries:
        n = len(by_short[e.short_name])
        key = e.short_name if n == 0 else f"{e.short_name}#{n + 1}"
        by_short[e.short_name].append((key, e))
    return by_short


def _rank(order: list[str], by_short: dict[str, list[tuple[str, Entry]]]) -> list[Row]:
    used: dict[str, int] = defaultdict(int)
    rows: list[Row] = []
    seen: set[str] = set()
    for name in order:
        candidates = by_short.get(name, [])
        i = used[name]
        if i >= len(candidates):
            continue  # a ranking name with no entry: nothing to show for it
        used[name] += 1
        key, entry = candidates[i]
        rows.append(Row(key, len(rows) + 1, entry))
        seen.add(key)
    for pairs in by_short.values():  # entries missing from the ranking still get a row, last
        for key, entry in pairs:
            if key not in seen:
                rows.append(Row(key, len(rows) + 1, entry))
    return rows


def rank_moves(pct_rows: list[Row], gain_rows: list[Row]) -> dict[str, int]:
    """Places each kernel moved up (positive) or down in the gain ranking vs the pct ranking."""
    pct_rank = {r.key: r.rank for r in pct_rows}
    return {r.key: pct_rank[r.key] - r.rank for r in gain_rows if r.key in pct_rank}


def rank_rows(artifact: Artifact) -> tuple[list[Row], list[Row]]:
    """Rows of the "By GPU time" and "By expected gain" tables, in the engine's orders, each
    with its move between the two."""
    by_short = _keyed_entries(artifact)
    pct = _rank(artifact.ranking_by_pct, by_short)
    gain = _rank(artifact.ranking_by_expected_gain, by_short)
    moves = rank_moves(pct, gain)
    return ([dataclasses.replace(r, move=moves.get(r.key)) for r in pct],
            with_steps(artifact, [dataclasses.replace(r, move=moves.get(r.key)) for r in gain]))


def with_steps(artifact: Artifact, gain: list[Row]) -> list[Row]:
    """The gain rows with the step's own targets (idle gaps, exposed communication, copies)
    where the engine weighs them (``core.reading.gain_with_steps``); a step row takes the rank
    of the kernel after it (the kernels keep theirs, so their moves still compare kernels)."""
    if not artifact.step_targets:
        return gain
    row_of = {id(r.entry): r for r in gain}
    order = reading.gain_with_steps(artifact)
    out: list[Row] = []
    for i, x in enumerate(order):
        if isinstance(x, StepTarget):
            after = next((row_of[id(y)].rank for y in order[i + 1:] if id(y) in row_of),
                         len(gain) + 1)
            out.append(Row(step_key(x), after, step_entry(x), step=x))
        elif id(x) in row_of:
            out.append(row_of[id(x)])
    return out


def matches_name(name: str, short_name: str, needle: str, label: str = "") -> bool:
    """The filter: a case-insensitive substring of the name, short name, demangled name or the
    recorded label (what the row reads)."""
    if not needle:
        return True
    n = needle.casefold()
    return any(n in t.casefold() for t in (short_name, name, demangle.full_name(name), label))


def matches(row: Row, needle: str) -> bool:
    label = getattr(row.entry, "label", "")
    return matches_name(row.entry.name, row.entry.short_name, needle,
                        label if isinstance(label, str) else "")


def display_names(rows: list[Row]) -> dict[str, str]:
    """What each row's kernel column reads before cutting: the one row-label rule
    (``core.labels.row_labels``: the recorded op and shape, else the demangled function name,
    and what tells look-alike rows apart; ``#n`` only when nothing recorded differs)."""
    return dict(zip((r.key for r in rows), labels.row_labels([r.entry for r in rows]),
                    strict=True))


# -- cells --------------------------------------------------------------------------------------

def move_text(delta: int | None) -> Text:
    if delta is None:
        return Text("")
    if delta > 0:
        return Text(f"↑{delta}", style="green")
    if delta < 0:
        return Text(f"↓{-delta}", style="red")
    return Text("=", style=DIM)


def kernel_text(e: Entry, text: str) -> Text:
    style = HEADROOM_STYLE.get(e.headroom_class, "")
    return Text(text, style="" if style == DIM else style, no_wrap=True)


def roofline_text(e: Entry) -> Text:
    text = units.pct(e.roofline_pct)
    if e.suspect:
        text += "!"
    return Text(text, style=HEADROOM_STYLE.get(e.headroom_class, ""), justify="right")


def change_text(e: Entry) -> Text:
    """Movement of the per-launch time since the previous round (negative: faster)."""
    if getattr(e, "prev_round", None) is None:
        return Text(units.DASH, style=DIM, justify="right")
    d = getattr(e, "delta_t_pct_vs_prev", None)
    if not isinstance(d, (int, float)):
        return Text("new", style="cyan", justify="right")
    if abs(d) <= ISOLATED_NOISE * 100:
        return Text(signed_pct(d), style=DIM, justify="right")
    return Text(signed_pct(d), style="green" if d < 0 else "red", justify="right")


def speedup_text(e: Entry) -> Text:
    out = Text(units.ratio(e.attainable_speedup), justify="right")
    if caution(e):
        out.stylize("bold yellow")
        out.append("!", style="bold yellow")
    return out


def cut(cell: Text, width: int) -> Text:
    """``cell`` in at most ``width`` cells: a longer one ends in ``…`` (DataTable would just cut)."""
    if width <= 0 or cell.cell_len <= width:
        return cell
    out = cell.copy()
    out.truncate(width, overflow="ellipsis")
    return out


# -- columns ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One ranking column. ``priority`` 0 is never dropped; higher numbers go first when the
    table is narrow. The kernel column (``width`` 0) takes what the others leave. ``numeric``
    columns sort largest first on their first click."""

    key: str
    label: str
    width: int
    priority: int
    render: Callable[[Row], Text]
    value: Callable[[Row], Any]
    numeric: bool = False

    def cell(self, row: Row) -> Text:
        """What this column shows for ``row``."""
        return self.render(row)

    def sort_key(self, row: Row) -> Any:
        """What ``row`` sorts by in this column (None: unknown, sorted last)."""
        return self.value(row)


def _right(text: str) -> Text:
    return Text(text, justify="right")


RANK = Column("rank", "#", 2, 0, lambda r: _right("·" if r.step else str(r.rank)),
              lambda r: r.rank)
KERNEL = Column("kernel", "kernel", 0, 0,
                lambda r: Text(r.label, style="bold cyan", no_wrap=True) if r.step
                else kernel_text(r.entry, r.label),
                lambda r: demangle.display_name(r.entry.name).casefold())

def _vs_ratio(r: Row) -> Text:
    from roofline_tui.app.view.compare import ratio_text

    return ratio_text(r.other)


def _vs_roof(r: Row) -> Text:
    from roofline_tui.app.view.compare import other_roof_text

    return other_roof_text(r.other)


# dash --against: B's time over A's for the row's op, and B's roofline % (hidden otherwise)
VS = Column("vs", "B/A", 6, 2, _vs_ratio, lambda r: r.other.ratio if r.other else None, True)
VS_ROOF = Column("vs_roof", "B roof", 6, 2, _vs_roof,
                 lambda r: r.other.b.roofline_pct if r.other and r.other.b else None, True)
COMPARE_COLUMNS = frozenset({"vs", "vs_roof"})

PCT_COLUMNS_ALL = (
    RANK,
    KERNEL,
    Column("pct", "%gpu", 6, 0, lambda r: _right(units.fixed(r.entry.pct_gpu_time, 2)),
           lambda r: r.entry.pct_gpu_time, True),
    Column("serving", "serv%", 6, 1,
           lambda r: _right(units.fixed(r.entry.serving_weighted_pct, 2)),
           lambda r: r.entry.serving_weighted_pct, True),
    Column("change", "Δt prev", 7, 3, lambda r: change_text(r.entry),
           lambda r: r.entry.delta_t_pct_vs_prev, True),
    Column("roofline", "roofline", 8, 1, lambda r: roofline_text(r.entry),
           lambda r: r.entry.roofline_pct, True),
    VS,
    VS_ROOF,
    Column("flags", "flags", 5, 1, lambda r: flags_text(r.entry),
           lambda r: len(entry_flags(r.entry))),
    Column("bound", "bound", 7, 4, lambda r: safe(r.entry.bound_type, limit=8),
           lambda r: r.entry.bound_type),
    Column("regime", "regime", 7, 5, lambda r: safe(r.entry.regime, limit=8),
           lambda r: r.entry.regime),
)
GAIN_COLUMNS_ALL = (
    RANK,
    Column("move", "move", 4, 4, lambda r: move_text(r.move), lambda r: r.move),
    KERNEL,
    Column("gain", "gain", 6, 0, lambda r: _right(units.pct_points(r.entry.expected_e2e_gain_pct,
                                                                   2)),
           lambda r: r.entry.expected_e2e_gain_pct, True),
    Column("speedup", "speedup", 7, 0, lambda r: speedup_text(r.entry),
           lambda r: r.entry.attainable_speedup, True),
    VS,
    Column("route", "route", 14, 1, lambda r: safe(r.entry.route, limit=24),
           lambda r: r.entry.route),
    Column("headroom", "headroom", HEADROOM_WIDTH, 3, lambda r: headroom_text(r.entry),
           lambda r: r.entry.headroom_class),
    Column("confidence", "conf", 6, 5, lambda r: safe(r.entry.confidence, limit=8),
           lambda r: r.entry.confidence),
)
COLUMNS_BY_KEY: dict[str, Column] = {c.key: c for c in (*PCT_COLUMNS_ALL, *GAIN_COLUMNS_ALL)}
MIN_KERNEL = 18
MAX_KERNEL = 72
CELL_PAD = 2  # DataTable's cell padding, both sides


class Fitted(NamedTuple):
    """A column placed in a table of a given width: the column and the cells it gets."""

    column: Column
    width: int

    @property
    def key(self) -> str:
        return self.column.key

    @property
    def label(self) -> str:
        return self.column.label


def fit_columns(columns: Sequence[Column], width: int, *, longest: int = MAX_KERNEL,
                hide: frozenset[str] = frozenset()) -> list[Fitted]:
    """Columns that fit ``width`` cells: the lowest-value columns are dropped until the kernel
    column gets at least :data:`MIN_KERNEL`; it then takes the rest (up to the longest name
    shown)."""
    cols = [c for c in columns if c.key not in hide]
    budget = width - 3  # the vertical scrollbar and the table's own edge

    def kernel_room(cs: list[Column]) -> int:
        return budget - sum(c.width + CELL_PAD for c in cs if c.key != "kernel") - CELL_PAD

    while kernel_room(cols) < MIN_KERNEL:
        droppable = [c for c in cols if c.priority > 0]
        if not droppable:
            break
        cols.remove(max(droppable, key=lambda c: (c.priority, cols.index(c))))
    kernel = max(min(kernel_room(cols), max(longest, MIN_KERNEL), MAX_KERNEL), 8)
    return [Fitted(c, kernel if c.key == "kernel" else c.width) for c in cols]


TableRow = tuple[str, list[Text], str | None]  # (row key, cells, tooltip)


def kernel_width(cols: Sequence[Fitted], default: int = 30) -> int:
    return next((f.width for f in cols if f.key == "kernel"), default)


def table_rows(rows: Sequence[Row], display: dict[str, str], cols: Sequence[Fitted], *,
               room: int | None = None) -> list[TableRow]:
    """The cells of one ranking for the columns ``cols``: kernel names cut to ``room`` cells (the
    kernel column's width by default) so that rows that differ still read differently."""
    width = kernel_width(cols) if room is None else room
    # cut together, so the cut keeps every row distinct (core.labels.fit_labels)
    fitted = dict(zip(display, labels.fit_labels(list(display.values()), width), strict=True))
    out: list[TableRow] = []
    for r in rows:
        text = fitted.get(r.key)
        if text is None:  # a row the names were not built for: its own name, cut
            text = demangle.fit(printable(demangle.display_name(r.entry.name)), width)
        shown = dataclasses.replace(r, label=text)
        out.append((r.key, [cut(f.column.cell(shown), f.width) for f in cols],
                    full_name(r.entry)))
    return out


def sort_rows(rows: Iterable[Row], column: Column | None, descending: bool) -> list[Row]:
    """Rows ordered by ``column`` (stable; unknown values last whichever the direction); no
    column, or the rank: the engine's order."""
    rows = list(rows)
    if column is None or column.key == "rank":
        return sorted(rows, key=lambda r: r.rank, reverse=descending)
    known = [r for r in rows if column.sort_key(r) is not None]
    unknown = [r for r in rows if column.sort_key(r) is None]
    known.sort(key=lambda r: (column.sort_key(r), r.rank), reverse=descending)
    return known + unknown


# -- below the head threshold -------------------------------------------------------------------

def below_threshold(artifact: Artifact, topn: Any) -> list[Any]:
    """Top-N kernels that are not heads (below the head threshold), biggest first."""
    heads = {e.name for e in artifact.entries}
    rest = [k for k in (getattr(topn, "entries", None) or []) if k.name not in heads]
    return sorted(rest, key=lambda k: -k.pct_gpu_time)


def below_rows(kernels: Sequence[Any], first_rank: int, cols: Sequence[Fitted], needle: str,
               prefix: str) -> list[TableRow]:
    """Top-N kernels below the head threshold as greyed rows (not analysed): rank, name, %gpu
    and serv%; row keys ``prefix`` + rank."""
    width = kernel_width(cols)
    rows: list[TableRow] = []
    for i, k in enumerate(kernels, first_rank):
        if not matches_name(k.name, k.short_name, needle):
            continue
        cells = {
            "rank": Text(str(i), justify="right", style=DIM),
            "kernel": Text(demangle.fit(printable(demangle.display_name(k.name)), width),
                           style=DIM),
            "pct": Text(units.fixed(k.pct_gpu_time, 2), justify="right", style=DIM),
            "serving": Text(units.fixed(k.serving_weighted_pct, 2), justify="right", style=DIM),
        }
        rows.append((f"{prefix}{i}", [cells.get(f.key, Text("")) for f in cols],
                     printable(demangle.full_name(k.name))))
    return rows

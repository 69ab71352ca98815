"""How an artifact looks on screen: table cells, header lines and drill-down panels.

Presentation only. Every number comes from the engine's :class:`Artifact`; nothing here decides a
verdict, a rank or a route. Everything untrusted (kernel names, reasons, notes, paths) goes through
``printable`` into a :class:`rich.text.Text`, never into markup, so ``[bold]`` or an ESC sequence in
a kernel name is shown literally. Rich only, no Textual: testable on its own.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline_tui.core import demangle as names
from roofline_tui.core import reading, units
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.metrics import ISOLATED_NOISE
from roofline_tui.core.textsafe import printable

HEADROOM_STYLE = {
    "underperforming": "bold red",
    "moderate": "yellow",
    "saturated": "green",
    "unknown": "dim",
}
# Symbols and styles of the flags; which flags an entry has, and their order, is
# ``core.reading`` (one rule for the screen, the CLI, the Markdown and the CSV).
FLAG_STYLE = {
    "suspect": "bold magenta",
    "dispatch-bound": "cyan",
    "unmodelled": "bright_black",
    "contradiction": "bold magenta",
    "caution": "bold yellow",
    "counters-contradict": "bold magenta",
    "regime-assumed": "yellow",
}
# One character per flag in the tables (the legend is in the help screen and the Flags tab).
FLAG_SYMBOL = {
    "suspect": "✕",
    "dispatch-bound": "D",
    "unmodelled": "U",
    "contradiction": "C",
    "caution": "!",
    "counters-contradict": "≠",
    "regime-assumed": "~",
}
# the flags a row shows (advisory is shown once per round: the ADVISORY banner)
FLAG_ORDER = tuple(f for f in reading.FLAGS if f not in reading.ROUND_FLAGS)
FLAG_MEANING = {
    "caution": "the speedup is implausible (model caution): measure before sizing the prize; "
               "never the next target",
    "suspect": "the model implies a rate above peak (roofline clamped, shown with !)",
    "contradiction": "a measured speedup beat the prediction: the model is wrong for this kernel",
    "counters-contradict": "hardware counters contradict the byte/FLOP model",
    "dispatch-bound": "per-launch time within launch-overhead scale: fuse or capture a graph",
    "unmodelled": "no byte/FLOP model for this kernel: see Degraded",
    "regime-assumed": "no step annotation or recorded shape says the regime: it is assumed",
}
HEADROOM_MEANING = (
    ("underperforming", "far below what a good kernel of this class reaches: tuning headroom"),
    ("moderate", "some headroom left"),
    ("saturated", "done with tuning, not with optimization: move fewer bytes"),
    ("unknown", "no verdict (suspect, dispatch-bound, unmodelled, low confidence)"),
)
# Markers that carry the headroom class without colour (NO_COLOR): they lead the kernel cells
# of both rankings, so the targets stand out in monochrome too.
HEADROOM_MARKER = {
    "underperforming": "▲",
    "moderate": "△",
    "saturated": "·",
    "unknown": " ",
}
MARKER_GAP = " "  # between the marker and the kernel name


def headroom_marker(e: Entry) -> Text:
    """The headroom class of ``e`` as one glyph, in its colour (blank without a verdict)."""
    cls = e.headroom_class
    return Text(HEADROOM_MARKER.get(cls, " "), style=HEADROOM_STYLE.get(cls, ""))


OTHER_LEGEND = (
    ("↑3 / ↓2", "green", "places a kernel moved in the gain ranking vs the GPU-time ranking"),
    ("ADVISORY", "bold black on yellow",
     "stage A / low confidence: pct_gpu_time order rules, the measurement decides"),
)
LABEL_STYLE = "bold"
DIM = "dim"


def safe(text: object, limit: int | None = None, style: str = "") -> Text:
    """Untrusted text as a literal :class:`Text` (control characters made visible)."""
    return Text(printable("–" if text is None else text, limit=limit), style=style)


# ---------------------------------------------------------------------------------------------
# Rankings


@dataclass(frozen=True)
class Row:
    key: str        # unique row key (short_name, ``#n`` appended for a repeated short name)
    rank: int       # 1-based rank in its own ranking
    entry: Entry


def _keyed_entries(artifact: Artifact) -> dict[str, list[tuple[str, Entry]]]:
    by_short: dict[str, list[tuple[str, Entry]]] = defaultdict(list)
    for e in artifact.entries:
        n = len(by_short[e.short_name])
        key = e.short_name if n == 0 else f"{e.short_name}#{n + 1}"
        by_short[e.short_name].append((key, e))
    return by_short


def _rank(names: list[str], by_short: dict[str, list[tuple[str, Entry]]]) -> list[Row]:
    used: dict[str, int] = defaultdict(int)
    rows: list[Row] = []
    seen: set[str] = set()
    for name in names:
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


def rankings(artifact: Artifact) -> tuple[list[Row], list[Row]]:
    """Rows of the "By GPU time" and "By expected gain" tables, in the engine's orders."""
    by_short = _keyed_entries(artifact)
    return _rank(artifact.ranking_by_pct, by_short), _rank(artifact.ranking_by_expected_gain, by_short)


def rank_moves(pct_rows: list[Row], gain_rows: list[Row]) -> dict[str, int]:
    """Places each kernel moved up (positive) or down in the gain ranking vs the pct ranking."""
    pct_rank = {r.key: r.rank for r in pct_rows}
    return {r.key: pct_rank[r.key] - r.rank for r in gain_rows if r.key in pct_rank}


def move_text(delta: int | None) -> Text:
    if delta is None:
        return Text("")
    if delta > 0:
        return Text(f"↑{delta}", style="green")
    if delta < 0:
        return Text(f"↓{-delta}", style="red")
    return Text("=", style=DIM)


def matches(row: Row, needle: str) -> bool:
    return matches_name(row.entry.name, row.entry.short_name, needle)


def matches_name(name: str, short_name: str, needle: str) -> bool:
    """The filter: a case-insensitive substring of the name, short name or demangled name."""
    if not needle:
        return True
    n = needle.casefold()
    return any(n in t.casefold() for t in (short_name, name, names.full_name(name)))


caution = reading.caution  # why an entry's speedup must not be taken at face value, or None


def entry_flags(e: Entry) -> list[str]:
    """The flags a row shows, most important first (``core.reading.row_flags``: advisory is
    shown once per round)."""
    return list(reading.row_flags(e))


def flags_text(e: Entry) -> Text:
    out = Text()
    for f in entry_flags(e):
        out.append(FLAG_SYMBOL[f], style=FLAG_STYLE[f])
    return out


def full_name(e: Entry) -> str:
    """The kernel's full name as shown in the drill-down and the row tooltip (demangled)."""
    return printable(names.full_name(e.name))


def display_names(rows: list[Row]) -> dict[str, str]:
    """What each row's kernel column reads before cutting: the demangled function name (or the
    name itself), with ``#n`` when two rows would otherwise read the same."""
    base = {r.key: printable(names.display_name(r.entry.name)) for r in rows}
    seen: dict[str, int] = defaultdict(int)
    out: dict[str, str] = {}
    for r in rows:
        text = base[r.key]
        seen[text] += 1
        out[r.key] = text if seen[text] == 1 else f"{text}#{seen[text]}"
    return out


def kernel_text(e: Entry, text: str) -> Text:
    style = HEADROOM_STYLE.get(e.headroom_class, "")
    return Text(text, style="" if style == DIM else style, no_wrap=True)


def roofline_text(e: Entry) -> Text:
    text = units.pct(e.roofline_pct)
    if e.suspect:
        text += "!"
    return Text(text, style=HEADROOM_STYLE.get(e.headroom_class, ""), justify="right")


# What the headroom cell of an entry without a verdict reads: why there is none, in at most
# HEADROOM_WIDTH cells ("unknown (dispatch-bound)" did not fit and was cut).
NO_VERDICT = reading.NO_VERDICT_LABEL
HEADROOM_WIDTH = max(16, *(len(v) for v in NO_VERDICT.values()))


def headroom_text(e: Entry, *, compact: bool = True) -> Text:
    """The headroom class; without a verdict, why there is none (the table's compact form, or
    ``unknown (dispatch-bound)`` in the drill-down)."""
    flag = reading.no_verdict_flag(e)
    if flag is not None and compact:
        return Text(NO_VERDICT[flag], style=FLAG_STYLE.get(flag, DIM))
    out = Text(printable(e.headroom_class, limit=20), style=HEADROOM_STYLE.get(e.headroom_class, ""))
    if flag is not None:
        out.append(" (" + flag + ")", style=FLAG_STYLE.get(flag, DIM))
    return out


def signed_pct(d: float | None, digits: int = 1) -> str:
    """A signed change in percent through the one formatter: ``-4.5%``, ``+0.8%``."""
    if d is None:
        return units.DASH
    return ("+" if d > 0 else "-" if d < 0 else "±") + units.pct_points(abs(d), digits)


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


# -- columns ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One table column: ``priority`` 0 is never dropped; higher numbers go first when the
    table is narrow. The kernel column (``width`` 0) takes what the others leave."""

    key: str
    label: str
    width: int
    priority: int
    numeric: bool = False


PCT_COLUMNS_ALL = (
    Column("rank", "#", 2, 0),
    Column("kernel", "kernel", 0, 0),
    Column("pct", "%gpu", 6, 0, True),
    Column("serving", "serv%", 6, 1, True),
    Column("change", "Δt prev", 7, 3, True),
    Column("roofline", "roofline", 8, 1, True),
    Column("flags", "flags", 5, 1),
    Column("bound", "bound", 7, 4),
    Column("regime", "regime", 7, 5),
)
GAIN_COLUMNS_ALL = (
    Column("rank", "#", 2, 0),
    Column("move", "move", 4, 4),
    Column("kernel", "kernel", 0, 0),
    Column("gain", "gain", 6, 0, True),
    Column("speedup", "speedup", 7, 0, True),
    Column("route", "route", 14, 1),
    Column("headroom", "headroom", HEADROOM_WIDTH, 3),
    Column("confidence", "conf", 6, 5),
)
MIN_KERNEL = 18
MAX_KERNEL = 72
CELL_PAD = 2  # DataTable's cell padding, both sides


def fit_columns(columns: tuple[Column, ...], width: int, *, longest: int = MAX_KERNEL,
                hide: frozenset[str] = frozenset()) -> list[tuple[str, str, int]]:
    """Columns that fit ``width`` cells, as (label, key, width): the lowest-value columns are
    dropped until the kernel column gets at least :data:`MIN_KERNEL`; it then takes the rest
    (up to the longest name shown)."""
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
    return [(c.label, c.key, kernel if c.key == "kernel" else c.width) for c in cols]


def pct_cells(row: Row, keys: list[str], name: str) -> list[Text]:
    e = row.entry
    cells = {
        "rank": lambda: Text(str(row.rank), justify="right"),
        "kernel": lambda: kernel_text(e, name),
        "pct": lambda: Text(units.fixed(e.pct_gpu_time, 2), justify="right"),
        "serving": lambda: Text(units.fixed(getattr(e, "serving_weighted_pct", None), 2),
                                justify="right"),
        "change": lambda: change_text(e),
        "roofline": lambda: roofline_text(e),
        "flags": lambda: flags_text(e),
        "bound": lambda: safe(e.bound_type, limit=8),
        "regime": lambda: safe(e.regime, limit=8),
    }
    return [cells[k]() for k in keys]


def gain_cells(row: Row, move: int | None, keys: list[str], name: str) -> list[Text]:
    e = row.entry
    cells = {
        "rank": lambda: Text(str(row.rank), justify="right"),
        "move": lambda: move_text(move),
        "kernel": lambda: kernel_text(e, name),
        "gain": lambda: Text(units.pct_points(e.expected_e2e_gain_pct, 2), justify="right"),
        "speedup": lambda: speedup_text(e),
        "route": lambda: safe(getattr(e, "route", None), limit=24),
        "headroom": lambda: headroom_text(e),
        "confidence": lambda: safe(e.confidence, limit=8),
    }
    return [cells[k]() for k in keys]


def speedup_text(e: Entry) -> Text:
    out = Text(units.ratio(e.attainable_speedup), justify="right")
    if caution(e):
        out.stylize("bold yellow")
        out.append("!", style="bold yellow")
    return out


TableRow = tuple[str, list[Text], str | None]  # (row key, cells, tooltip)


def cut(cell: Text, width: int) -> Text:
    """``cell`` in at most ``width`` cells: a longer one ends in ``…`` (DataTable would just cut)."""
    if width <= 0 or cell.cell_len <= width:
        return cell
    out = cell.copy()
    out.truncate(width, overflow="ellipsis")
    return out


def table_rows(pct_rows: list[Row], gain_rows: list[Row], display: dict[str, str],
               pct_cols: list[tuple[str, str, int]], gain_cols: list[tuple[str, str, int]],
               ) -> tuple[list[TableRow], list[TableRow]]:
    """The cells of both rankings for the given columns (label, key, width): kernel names cut
    to the kernel column's width so that rows that differ still read differently."""
    moves = rank_moves(pct_rows, gain_rows)
    everyone = list(display.values())
    pct_keys = [k for _, k, _ in pct_cols]
    gain_keys = [k for _, k, _ in gain_cols]
    pw = dict((k, w) for _, k, w in pct_cols).get("kernel", 30)
    gw = dict((k, w) for _, k, w in gain_cols).get("kernel", 30)
    pct: list[TableRow] = [
        (r.key, pct_cells(r, pct_keys, names.fit(display[r.key], pw, everyone)),
         full_name(r.entry)) for r in pct_rows]
    gain: list[TableRow] = [(r.key, gain_cells(r, moves.get(r.key), gain_keys,
                               names.fit(display[r.key], gw, everyone)), full_name(r.entry))
            for r in gain_rows]
    pct_w = [w for _, _, w in pct_cols]
    gain_w = [w for _, _, w in gain_cols]
    return ([(k, [cut(c, w) for c, w in zip(cs, pct_w, strict=False)], t) for k, cs, t in pct],
            [(k, [cut(c, w) for c, w in zip(cs, gain_w, strict=False)], t) for k, cs, t in gain])


# Sorting: a column key -> the value a row sorts by (None last). Ranks restore the engine order.
def sort_value(row: Row, key: str, move: int | None = None) -> Any:
    e = row.entry
    values: dict[str, Any] = {
        "rank": row.rank,
        "kernel": names.display_name(e.name).casefold(),
        "pct": e.pct_gpu_time,
        "serving": getattr(e, "serving_weighted_pct", None),
        "change": getattr(e, "delta_t_pct_vs_prev", None),
        "roofline": e.roofline_pct,
        "flags": len(entry_flags(e)),
        "bound": e.bound_type,
        "regime": e.regime,
        "move": move,
        "gain": e.expected_e2e_gain_pct,
        "speedup": e.attainable_speedup,
        "route": getattr(e, "route", None),
        "headroom": e.headroom_class,
        "confidence": e.confidence,
    }
    return values.get(key)


def sort_rows(rows: list[Row], key: str | None, descending: bool,
              moves: dict[str, int] | None = None) -> list[Row]:
    """Rows ordered by column ``key`` (stable; unknown values last whichever the direction)."""
    if not key or key == "rank":
        return sorted(rows, key=lambda r: r.rank, reverse=descending)
    moves = moves or {}
    known = [r for r in rows if sort_value(r, key, moves.get(r.key)) is not None]
    unknown = [r for r in rows if sort_value(r, key, moves.get(r.key)) is None]
    known.sort(key=lambda r: (sort_value(r, key, moves.get(r.key)), r.rank), reverse=descending)
    return known + unknown


# ---------------------------------------------------------------------------------------------
# Header


# how each piece of the next-target line looks (core.reading.next_parts says what each is)
NEXT_STYLE: dict[str, str] = {
    "lead": "bold",
    "advisory": "bold yellow",
    "saturated": HEADROOM_STYLE["saturated"],
    "plain": "",
    "numbers": DIM,
    "host": DIM,
    "skipped": "yellow",
    "dim": DIM,
}


def next_target(artifact: Artifact) -> Text:
    """The Next line (``core.reading.next_target``, the same line the CLI, the Markdown and the
    JSON carry), styled: the pick in its headroom colour, what was skipped in yellow."""
    nt = reading.next_target_of(artifact)
    out = Text()
    for text, part in reading.next_parts(nt):
        style = (HEADROOM_STYLE.get(nt.headroom_class, "") or "bold") if part == "name" \
            else NEXT_STYLE.get(part, "")
        out.append(text, style=style)
    return out


def below_threshold(artifact: Artifact, topn: Any) -> list[Any]:
    """Top-N kernels that are not heads (below the head threshold), biggest first."""
    heads = {e.name for e in artifact.entries}
    rest = [k for k in (getattr(topn, "entries", None) or []) if k.name not in heads]
    return sorted(rest, key=lambda k: -k.pct_gpu_time)


def coverage_line(artifact: Artifact, topn: Any = None, serving: bool = False) -> Text:
    """What the heads cover: ``5 heads = 49.4 % of GPU time`` and the Top-N around them."""
    heads = [e for e in artifact.entries]
    total = sum(e.pct_gpu_time or 0.0 for e in heads)
    out = Text()
    out.append(f"{len(heads)} head{'s' if len(heads) != 1 else ''} = "
               f"{units.pct_points(total, 1)} of GPU time", style="bold")
    kernels = getattr(topn, "entries", None)
    if kernels:
        all_pct = sum(k.pct_gpu_time for k in kernels)
        below = len(kernels) - len(heads)
        out.append(f" · Top-N: {len(kernels)} kernels = {units.pct_points(all_pct, 1)}")
        if below > 0:
            out.append(f" · {below} below the head threshold (a: list them)", style=DIM)
    if serving:
        out.append(" · serv% = the share once the profile window is re-weighted to the "
                   "deployed prefill/decode mix", style=DIM)
    return out


is_advisory = reading.round_is_advisory  # the round is advisory

def _peak_dtypes(artifact: Artifact) -> list[str]:
    used = [e.peak_flops_dtype for e in artifact.entries]
    wanted = sorted({d for d in used if isinstance(d, str) and d in artifact.peaks.flops})
    if not wanted:
        wanted = [d for d in ("fp8", "bf16") if d in artifact.peaks.flops]
    return wanted


def device_line(artifact: Artifact) -> Text:
    p = artifact.peaks
    product = p.product
    out = Text()
    out.append(printable(artifact.gfx or "unknown arch"), style=LABEL_STYLE)
    if product:
        out.append(" " + printable(product, limit=24))
    out.append(f" · HBM {units.rate(p.hbm_bw_bytes_s, 'B/s')}")
    for d in _peak_dtypes(artifact):
        out.append(f" · {printable(d)} {units.rate(p.flops.get(d), 'FLOP/s')}")
    out.append(" · peaks ")
    conf_style = "green" if p.confidence == "high" else "bold yellow"
    out.append(f"{printable(p.source)}/{printable(p.confidence)}", style=conf_style)
    if p.compute_validated is False and p.flops:
        out.append(" compute peaks unvalidated", style="bold yellow")
    return out


def workload_line(artifact: Artifact) -> Text:
    out = Text()
    if is_advisory(artifact):
        out.append(f"ADVISORY stage {printable(artifact.stage)}, low confidence",
                   style="bold black on yellow")
        out.append(" · ")
    heads = len(artifact.entries)
    out.append(f"{heads} head{'s' if heads != 1 else ''}")
    if artifact.degraded:
        out.append(f" · {len(artifact.degraded)} degraded", style="yellow")
    if artifact.skill_errors:
        out.append(f" · {len(artifact.skill_errors)} input problem(s)", style="yellow")
    wl = artifact.workload.model_dump()
    if wl:
        parts = [f"{k} {printable(wl[k])}" for k in ("isl", "osl", "conc", "tp") if wl.get(k) is not None]
        if parts:
            out.append(" · workload " + " ".join(parts))
    return out


# ---------------------------------------------------------------------------------------------
# Drill-down


def _grid() -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style=LABEL_STYLE, no_wrap=True)
    t.add_column(overflow="fold")
    return t


def _num_line(value: str, note: str = "") -> Text:
    out = Text(value)
    if note:
        out.append("  " + printable(note), style=DIM)
    return out


def summary(e: Entry, artifact: Artifact) -> RenderableType:
    unit = e.unit
    lpu = e.launches_per_unit
    per_unit = f"per unit ({lpu} launch{'es' if lpu != 1 else ''})" if lpu else "per unit"
    peak_dtype = e.peak_flops_dtype
    t = _grid()
    t.add_row("kernel", Text(full_name(e)))
    if names.demangle(e.name):
        t.add_row("mangled", safe(e.name))
    t.add_row("short name", safe(e.short_name))
    t.add_row("class", safe(" / ".join(str(v) for v in (e.op_class, e.op_subclass,
                                                          e.classification) if v)))
    t.add_row("% GPU time", Text(units.pct_points(e.pct_gpu_time, 2) + "  (copied from the Top-N)"))
    t.add_row("regime", safe(e.regime))
    t.add_row("unit", safe(unit if unit else "not stated"))
    t.add_row("launches", _num_line(f"{units.si(e.launches_per_step)} per step",
                                    f"{lpu} per unit" if lpu else ""))
    t.add_row("time per launch", Text(units.millis(e.t_ms)))
    t.add_row("time per unit", Text(units.millis(e.t_unit_ms)))
    t.add_row("bytes", Text(f"{units.nbytes(e.bytes_est)} {per_unit}"))
    t.add_row("FLOPs", Text(f"{units.rate(e.flops_est, 'FLOP')} {per_unit}"))
    t.add_row("achieved bandwidth", _num_line(units.rate(e.achieved_bw_bytes_s, "B/s"),
                                              f"HBM util {units.pct(e.hbm_util, 1)}"))
    t.add_row("achieved compute", _num_line(units.rate(e.achieved_flops, "FLOP/s"),
                                            f"compute util {units.pct(e.compute_util, 1)}"
                                            + (f" of the {printable(peak_dtype)} peak" if peak_dtype else "")))
    t.add_row("arithmetic intensity", Text(units.si(e.arithmetic_intensity, "FLOP/B")))
    t.add_row("ridge point", Text(units.si(e.ridge_point, "FLOP/B")))
    t.add_row("roof · bound", safe(f"{e.roof_axis or '–'} roof · {e.bound_type}-bound"))
    raw = e.roofline_pct_raw
    roof = Text(units.pct(e.roofline_pct, 1), style=HEADROOM_STYLE.get(e.headroom_class, ""))
    if e.suspect and raw is not None:
        roof.append(f"  (raw {units.pct(raw, 1)}, clamped for display)", style="magenta")
    t.add_row("roofline", roof)
    t.add_row("target efficiency", _num_line(units.pct(e.target_eff, 0), e.target_eff_source or ""))
    t.add_row("attainable speedup", Text(units.ratio(e.attainable_speedup)) + (
        Text("  " + (caution(e) or ""), style="bold yellow") if caution(e) else Text("")))
    if e.demonstrated is not None:
        d = e.demonstrated
        t.add_row("demonstrated", _num_line(
            f"{units.ratio(d.demonstrated_speedup)} to this run's best",
            printable(d.note)))
    t.add_row("expected e2e gain", Text(units.pct_points(e.expected_e2e_gain_pct, 2) + " of GPU time"))
    t.add_row("headroom", headroom_text(e, compact=False))
    t.add_row("confidence", safe(f"{e.confidence} (stage {e.stage or artifact.stage}, "
                                 f"{e.measurement_basis or 'model'})"))
    t.add_row("route", safe(e.route))
    return t


def _bullets(items: list[Any], empty: str) -> Text:
    if not items:
        return Text(empty, style=DIM)
    out = Text()
    for i, item in enumerate(items):
        if i:
            out.append("\n")
        out.append("• ")
        out.append(printable(item))
    return out


def assumptions(e: Entry) -> RenderableType:
    t = _grid()
    t.add_row("model", safe(e.model or ("not modelled" if not e.modeled else "–")))
    t.add_row("unit", safe(e.unit or "not stated"))
    t.add_row("assumptions", _bullets(list(e.assumptions or []), "none recorded"))
    parts: list[RenderableType] = [t]
    alts = e.alternatives
    if alts:
        at = Table(title=Text("byte/FLOP candidates (shapes tried)", style=LABEL_STYLE),
                   title_justify="left", box=None, padding=(0, 1))
        for col in ("candidate", "bytes", "FLOPs", "raw roofline", "feasible", "used", "note"):
            at.add_column(col, overflow="fold")
        for a in alts:
            at.add_row(safe(a.label), Text(units.nbytes(a.bytes_est)),
                       Text(units.rate(a.flops_est, "FLOP")),
                       Text(units.pct(a.roofline_pct_raw, 1)),
                       Text("yes" if a.feasible else "no",
                            style="" if a.feasible else "magenta"),
                       Text("✓" if a.chosen else ""), safe(a.note))
        parts += [Text(""), at]
    if e.logical_op is not None:
        lt = Table(title=Text(f"one logical op: {printable(e.logical_op.linked_by)}",
                              style=LABEL_STYLE), title_justify="left", box=None, padding=(0, 1))
        for col in ("kernel", "t/launch", "share"):
            lt.add_column(col, overflow="fold")
        for k in e.logical_op.kernels:
            lt.add_row(safe(k.short_name), Text(units.millis(k.t_ms)),
                       Text(units.pct(k.share, 0)))
        parts += [Text(""), lt]
    if e.instances:
        it = Table(title=Text("recorded instances (each against its own time)",
                              style=LABEL_STYLE), title_justify="left", box=None, padding=(0, 1))
        for col in ("op", "shapes", "calls", "t/launch", "bytes", "FLOPs", "roofline"):
            it.add_column(col, overflow="fold")
        for r in e.instances:
            it.add_row(safe(r.op or "–", limit=40), safe(r.shapes, limit=60),
                       Text(f"{r.calls:g}" if r.calls is not None else "–"),
                       Text(units.millis(r.t_ms)), Text(units.nbytes(r.bytes_est)),
                       Text(units.rate(r.flops_est, "FLOP")),
                       Text(f"{units.pct(r.roofline_pct, 0)} {r.roof_axis or ''}".strip()))
        parts += [Text(""), it]
    if e.notes:
        parts += [Text(""), Text("notes", style=LABEL_STYLE), safe(e.notes)]
    return Group(*parts)


def flags(e: Entry, artifact: Artifact) -> RenderableType:
    lines: list[tuple[str, Text]] = []
    if e.suspect:
        msg = Text(f"raw roofline {units.pct(e.roofline_pct_raw, 1)} (shown clamped); "
                   f"bytes upper bound at peak {units.nbytes(e.bytes_upper_bound)} per unit")
        reason = e.no_verdict_reason
        if reason:
            msg.append("\n" + printable(reason))
        lines.append(("suspect", msg))
    if e.dispatch_bound:
        lines.append(("dispatch-bound", safe(e.no_verdict_reason
                                             or "per-launch time within launch-overhead scale")))
    if not e.modeled:
        reasons = [d.reason for d in artifact.degraded if d.name in (e.name, e.short_name)]
        lines.append(("unmodelled", safe("; ".join(reasons) or e.no_verdict_reason
                                         or "no byte/FLOP model")))
    if e.stage_c_candidate:
        lines.append(("stage-C candidate", Text("a counter measurement would settle this entry")))
    if artifact.peaks.confidence == "low":
        lines.append(("low-confidence peaks", safe(
            f"peaks from {artifact.peaks.source}: every verdict is display-only")))
    if artifact.peaks.compute_validated is False:
        lines.append(("unvalidated compute peak", Text("compute-axis numbers are not usable")))
    if reading.is_advisory(e):
        lines.append(("advisory", safe(f"stage {e.stage or artifact.stage}, confidence "
                                       f"{e.confidence}: rank by pct_gpu_time; the measurement decides")))
    if e.contradiction:
        lines.append(("contradiction", safe(e.contradiction_detail
                                            or "a measured speedup beat the prediction")))
    why = caution(e)
    if why:
        lines.append(("caution", safe(why)))
    if e.editable is False:
        lines.append(("not editable", Text("no editable call site: host-side levers only")))
    for c in e.corroboration:
        label = {"supports": "counters support", "contradicts": "counters-contradict"}.get(
            c.verdict, "counters")
        lines.append((label, safe(c.explanation)))
    if not e.has_verdict and not any(k in ("suspect", "dispatch-bound", "unmodelled") for k, _ in lines):
        reason = e.no_verdict_reason
        if reason:
            lines.append(("no verdict", safe(reason)))
    if not lines:
        return Text("no flags: the model's result is feasible and the entry has a verdict", style=DIM)
    t = _grid()
    for label, value in lines:
        t.add_row(Text(FLAG_SYMBOL.get(label, "⚑") + " " + label,
                       style=FLAG_STYLE.get(label, "bold yellow")), value)
    return t


def levers(e: Entry) -> RenderableType:
    t = _grid()
    t.add_row("route", safe(e.route))
    t.add_row("why", safe(e.route_reason or "–"))
    if e.editable is not None:
        t.add_row("editable", Text("yes" if e.editable else "no (host-side levers only)"))
    if e.dispatch_bound:
        t.add_row("launch-overhead levers", _bullets(list(DISPATCH_LEVERS), ""))
    if e.editable is False:
        t.add_row("host-side levers", _bullets(list(HOST_SIDE_LEVERS), ""))
    if e.byte_reduction_levers or not e.dispatch_bound:
        t.add_row("byte-reduction levers", _bullets(
            list(e.byte_reduction_levers),
            "none listed: byte-reduction levers are listed for saturated heads"))
    return t


# Spec §5 (dispatch-bound: the launch, not the kernel body, is the cost) and the host-side route.
DISPATCH_LEVERS = (
    "fuse it with its neighbours (one launch instead of several)",
    "capture the decode step in a CUDA/HIP graph (launch overhead paid once per graph)",
    "batch more work per launch (larger M per call)",
)
HOST_SIDE_LEVERS = (
    "dispatch or path selection (another kernel for this shape)",
    "the library's tuning database (a better solution index)",
    "a backend swap",
)


def raw_json(e: Entry) -> Text:
    # json.dumps escapes every control character, so the text is terminal-safe as it is.
    data = e.model_dump(mode="json")
    return Text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


def degraded_view(artifact: Artifact) -> RenderableType:
    parts: list[RenderableType] = []
    title = Text(f"degraded ({len(artifact.degraded)}): not modelled, no verdict", style=LABEL_STYLE)
    parts.append(title)
    if artifact.degraded:
        t = _grid()
        for d in artifact.degraded:
            t.add_row(safe(d.name, limit=60, style="bold"), safe(d.reason))
        parts.append(t)
    else:
        parts.append(Text("none", style=DIM))
    parts += [Text(""), Text(f"skill_errors ({len(artifact.skill_errors)})", style=LABEL_STYLE),
              _bullets(list(artifact.skill_errors), "none")]
    profile = [artifact.graph_replay.warning] if (
        artifact.graph_replay is not None and artifact.graph_replay.warning) else []
    profile += [n for n in artifact.profile_notes if n not in profile]
    if profile:  # what the importer noticed: graph replay, bad rows skipped, names cut
        parts += [Text(""), Text(f"profile ({len(profile)})", style=LABEL_STYLE),
                  _bullets(profile, "none")]
    sel = artifact.head_selection
    inputs = artifact.inputs.model_dump(by_alias=True, exclude_none=True)
    if sel or inputs:
        parts += [Text(""), Text("inputs", style=LABEL_STYLE)]
        t = _grid()
        if sel:
            t.add_row("head selection", safe(sel))
        for k, v in sorted(inputs.items()):
            t.add_row(safe(k), safe(v))
        parts.append(t)
    return Group(*parts)


# ---------------------------------------------------------------------------------------------
# Round-over-round: the History tab (one kernel) and the Rounds view (one row per round)

_SPARK = "▁▂▃▄▅▆▇█"
VERDICT_STYLE = {
    "contradiction": "bold magenta",
    "regression": "bold red",
    "at_ceiling": "green",
    "under_ceiling": "yellow",
    "noise": DIM,
    "unpredicted": DIM,
}


def sparkline(values: list[float | None]) -> Text:
    """Per-round values as block characters (a gap where the kernel was absent)."""
    known = [v for v in values if v is not None]
    if not known:
        return Text("no data", style=DIM)
    lo, hi = min(known), max(known)
    out = Text()
    for v in values:
        if v is None:
            out.append("·", style=DIM)
        else:
            level = 0 if hi == lo else round((v - lo) / (hi - lo) * (len(_SPARK) - 1))
            out.append(_SPARK[level], style="cyan")
    return out


def _delta(d: float | None, *, good_when_negative: bool = True) -> Text:
    if d is None:
        return Text("–", style=DIM)
    style = "green" if (d < 0) == good_when_negative and d != 0 else ("red" if d else "")
    return Text(signed_pct(d), style=style)


def history_view(e: Entry, history: Any) -> RenderableType:
    """One kernel across rounds: per-launch time and %gpu, the predictions beside the outcomes,
    contradiction flags (spec §8.3–§8.4). ``history`` is the engine's RoundHistory."""
    if history is None:
        return Text("single round: nothing to compare (round_* siblings appear here)", style=DIM)
    from roofline_tui.core.rounds.series import kernel_series

    series = kernel_series(history, e.name, e.regime)
    if series is None or not series.points:
        return Text("this kernel was not matched in other rounds", style=DIM)
    head = Text()
    head.append("per-launch time across rounds  ", style=LABEL_STYLE)
    head.append_text(sparkline(series.sparkline_values()))
    head.append(f"   ({printable(series.regime)}, lower is faster)", style=DIM)
    t = Table(box=None, pad_edge=False, header_style=LABEL_STYLE)
    for col, justify in (("round", "left"), ("t/launch", "right"), ("Δ prev", "right"),
                         ("Δ base", "right"), ("%gpu", "right"), ("predicted", "right"),
                         ("measured", "right"), ("verdict", "left")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    for p in series.points:
        if not p.present:
            t.add_row(safe(p.label), Text("absent", style=DIM), *[Text("")] * 6)
            continue
        verdict = Text(printable(p.verdict or ""), style=VERDICT_STYLE.get(p.verdict or "", ""))
        if p.contradiction:
            verdict.append(" ⚑ contradiction", style="bold magenta")
        if p.comparable_with_prev is False:
            verdict.append(" (not comparable)", style=DIM)
        t.add_row(
            safe(p.label) + (Text(" head", style=DIM) if p.is_head else Text("")),
            Text(units.millis(p.t_ms)),
            _delta(p.delta_t_pct_vs_prev),
            _delta(p.delta_t_pct_vs_baseline),
            Text(units.fixed(p.pct_gpu_time, 2)),
            Text(units.ratio(p.predicted_speedup_prev, 3)),
            Text(units.ratio(p.measured_speedup_vs_prev, 3)),
            verdict,
        )
    legend = Text(
        "predicted = the earlier round's attainable speedup; measured = t_before / t_after "
        "(same regime). Isolated changes under 3.4% are noise; beating the prediction by more "
        "flags the model (contradiction).", style=DIM)
    return Group(head, Text(""), t, Text(""), legend)


def rounds_view(history: Any, shown_label: str | int | None) -> RenderableType:
    """One row per round: heads, total GPU time, throughput, e2e change, contradictions."""
    if history is None:
        return Text("single round: the Rounds view compares round_* siblings", style=DIM)
    from roofline_tui.core.rounds.series import round_summary_rows

    t = Table(box=None, pad_edge=False, header_style=LABEL_STYLE)
    for col, justify in (("round", "left"), ("stage", "left"), ("heads", "right"),
                         ("GPU time", "right"), ("Δ GPU", "right"), ("tok/s", "right"),
                         ("e2e", "right"), ("contradictions", "right"), ("note", "left")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in round_summary_rows(history):
        label = safe(row.label, style="bold reverse" if row.label == shown_label else "bold")
        e2e = Text("–", style=DIM)
        if row.e2e_delta_pct_vs_prev is not None:
            e2e = _delta(row.e2e_delta_pct_vs_prev, good_when_negative=False)
            if row.e2e_noise:
                e2e.append(" noise", style=DIM)
        note = row.not_compared_reason or ""
        t.add_row(
            label, safe(row.stage), Text(str(row.n_heads)),
            Text(units.millis(row.total_gpu_time_ms)),
            _delta(row.delta_total_pct_vs_prev),
            Text(units.si(row.output_throughput_tok_s, "tok/s")),
            e2e,
            Text(str(row.contradictions), style="bold magenta" if row.contradictions else DIM),
            safe(note, limit=60, style=DIM),
        )
    parts: list[RenderableType] = [t]
    pairs = history.pairs() if hasattr(history, "pairs") else []
    if pairs:
        pt = Table(box=None, pad_edge=False, header_style=LABEL_STYLE,
                   title=Text("predicted vs actual", style=LABEL_STYLE), title_justify="left")
        for col, justify in (("kernel", "left"), ("regime", "left"), ("rounds", "left"),
                             ("predicted", "right"), ("measured", "right"), ("e2e", "right"),
                             ("verdict", "left")):
            pt.add_column(col, justify=justify)  # type: ignore[arg-type]
        for p in pairs:
            e2e = Text(signed_pct(p.e2e_delta_pct, 3))
            if p.e2e_noise:
                e2e.append(" noise", style=DIM)
            verdict = Text(printable(p.verdict), style=VERDICT_STYLE.get(p.verdict, ""))
            if p.contradiction:
                verdict = Text(printable(p.verdict).upper(), style="bold magenta")
            pt.add_row(safe(names.display_name(p.short_name), limit=48), safe(p.regime),
                       safe(f"{p.round_before} → {p.round_after}"),
                       Text(units.ratio(p.predicted_speedup, 3)),
                       Text(units.ratio(p.measured_speedup, 3)), e2e, verdict)
        parts += [Text(""), pt]
    return Group(*parts)

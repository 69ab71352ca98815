"""How an artifact looks on screen: table cells, header lines and drill-down panels.

Presentation only. Every number comes from the engine's :class:`Artifact`; nothing here decides a
verdict, a rank or a route. Everything untrusted (kernel names, reasons, notes, paths) goes through
``printable`` into a :class:`rich.text.Text`, never into markup, so ``[bold]`` or an ESC sequence in
a kernel name is shown literally. Rich only, no Textual: testable on its own.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.markdown import fmt_bytes, fmt_num, fmt_pct, fmt_rate, fmt_time_ms
from roofline_tui.core.textsafe import printable

KERNEL_WIDTH = 30

HEADROOM_STYLE = {
    "underperforming": "bold red",
    "moderate": "yellow",
    "saturated": "green",
    "unknown": "dim",
}
FLAG_STYLE = {
    "suspect": "bold magenta",
    "dispatch-bound": "cyan",
    "unmodelled": "bright_black",
    "contradiction": "bold magenta",
    "caution": "bold yellow",
}
# One character per flag in the tables (the legend is in the help screen and the Flags tab).
FLAG_SYMBOL = {
    "suspect": "✕",
    "dispatch-bound": "D",
    "unmodelled": "U",
    "contradiction": "C",
    "caution": "!",
}
FLAG_ORDER = ("caution", "suspect", "contradiction", "dispatch-bound", "unmodelled")
FLAG_MEANING = {
    "caution": "the speedup is implausible (model caution): measure before sizing the prize; "
               "never the next target",
    "suspect": "the model implies a rate above peak (roofline clamped, shown with !)",
    "contradiction": "a measured speedup beat the prediction: the model is wrong for this kernel",
    "dispatch-bound": "per-launch time within launch-overhead scale: fuse or capture a graph",
    "unmodelled": "no byte/FLOP model for this kernel: see Degraded",
}
HEADROOM_MEANING = (
    ("underperforming", "far below what a good kernel of this class reaches: tuning headroom"),
    ("moderate", "some headroom left"),
    ("saturated", "done with tuning, not with optimization: move fewer bytes"),
    ("unknown", "no verdict (suspect, dispatch-bound, unmodelled, low confidence)"),
)
OTHER_LEGEND = (
    ("↑3 / ↓2", "green", "places a kernel moved in the gain ranking vs the GPU-time ranking"),
    ("ADVISORY", "bold black on yellow",
     "stage A / low confidence: pct_gpu_time order rules, the measurement decides"),
)
LABEL_STYLE = "bold"
DIM = "dim"


def x(entry: Entry | Any, key: str, default: Any = None) -> Any:
    """An extra field of an engine model (``model_extra``), or ``default``."""
    extra = getattr(entry, "model_extra", None) or {}
    return extra.get(key, default)


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
    if not needle:
        return True
    n = needle.casefold()
    return n in row.entry.short_name.casefold() or n in row.entry.name.casefold()


_CAUTION_WORDS = re.compile(r"not credible|implausible|do not quote", re.IGNORECASE)


def caution(e: Entry) -> str | None:
    """Why this entry's speedup must not be taken at face value, or None.

    The engine's (or an upstream file's) ``model_caution``: a sentence, or ``True`` for a
    speedup above the plausibility limit; failing that, a ``notes`` sentence that says the
    number is not credible.
    """
    value = getattr(e, "model_caution", None)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if value is True:
        return (f"attainable speedup {fmt_num(e.attainable_speedup, 1, '×')} is implausible: "
                "the byte/FLOP model probably under-counts the work")
    notes = e.notes or ""
    m = _CAUTION_WORDS.search(notes)
    if m:
        start = max(notes.rfind(". ", 0, m.start()) + 2, 0) if ". " in notes[:m.start()] else 0
        end = notes.find(". ", m.end())
        return notes[start:end + 1 if end >= 0 else len(notes)].strip()
    return None


def entry_flags(e: Entry) -> list[str]:
    """The flags a row shows, most important first (advisory is shown once per round)."""
    from roofline_tui.core.markdown import flags_of

    found = set(flags_of(e))
    if caution(e):
        found.add("caution")
    return [f for f in FLAG_ORDER if f in found]


def flags_text(e: Entry) -> Text:
    out = Text()
    for f in entry_flags(e):
        out.append(FLAG_SYMBOL[f], style=FLAG_STYLE[f])
    return out


def full_name(e: Entry) -> str:
    """The kernel's full name as shown in the drill-down and the row tooltip."""
    return printable(e.name)


def kernel_text(e: Entry, limit: int = KERNEL_WIDTH) -> Text:
    style = HEADROOM_STYLE.get(e.headroom_class, "")
    return safe(e.short_name, limit=limit, style="" if style == DIM else style)


def roofline_text(e: Entry) -> Text:
    text = fmt_pct(e.roofline_pct)
    if e.suspect:
        text += "!"
    return Text(text, style=HEADROOM_STYLE.get(e.headroom_class, ""), justify="right")


def headroom_text(e: Entry) -> Text:
    out = Text(e.headroom_class, style=HEADROOM_STYLE.get(e.headroom_class, ""))
    if not e.has_verdict:
        flags = [f for f in entry_flags(e) if f != "caution"]
        if flags:
            out.append(" (" + flags[0] + ")", style=FLAG_STYLE.get(flags[0], DIM))
    return out


# (label, key, width): fixed widths keep both tables steady while rows are replaced, and make
# the layout independent of when the table gets round to measuring its content.
PCT_COLUMNS = (("#", "rank", 2), ("kernel", "kernel", KERNEL_WIDTH), ("%gpu", "pct", 6),
               ("regime", "regime", 7), ("bound", "bound", 7), ("roofline", "roofline", 8),
               ("flags", "flags", 12))
GAIN_COLUMNS = (("#", "rank", 2), ("move", "move", 4), ("kernel", "kernel", KERNEL_WIDTH),
                ("gain", "gain", 6), ("speedup", "speedup", 7), ("headroom", "headroom", 20),
                ("route", "route", 16))


def pct_cells(row: Row) -> list[Text]:
    e = row.entry
    return [
        Text(str(row.rank), justify="right"),
        kernel_text(e),
        Text(fmt_num(e.pct_gpu_time, 2), justify="right"),
        safe(e.regime),
        safe(e.bound_type),
        roofline_text(e),
        flags_text(e),
    ]


def gain_cells(row: Row, move: int | None) -> list[Text]:
    e = row.entry
    return [
        Text(str(row.rank), justify="right"),
        move_text(move),
        kernel_text(e),
        Text(fmt_num(e.expected_e2e_gain_pct, 2, "%"), justify="right"),
        Text(fmt_num(e.attainable_speedup, 2, "×"), justify="right"),
        headroom_text(e),
        safe(x(e, "route")),
    ]


# ---------------------------------------------------------------------------------------------
# Header


def is_advisory(artifact: Artifact) -> bool:
    return any(x(e, "advisory") for e in artifact.entries) or (
        bool(artifact.entries) and all(e.confidence == "low" for e in artifact.entries)
    )


def _peak_dtypes(artifact: Artifact) -> list[str]:
    used = [x(e, "peak_flops_dtype") for e in artifact.entries]
    wanted = sorted({d for d in used if isinstance(d, str) and d in artifact.peaks.flops})
    if not wanted:
        wanted = [d for d in ("fp8", "bf16") if d in artifact.peaks.flops]
    return wanted


def device_line(artifact: Artifact) -> Text:
    p = artifact.peaks
    product = x(p, "product")
    out = Text()
    out.append(printable(artifact.gfx or "unknown arch"), style=LABEL_STYLE)
    if product:
        out.append(" " + printable(product, limit=24))
    out.append(f" · HBM {fmt_rate(p.hbm_bw_bytes_s, 'B/s')}")
    for d in _peak_dtypes(artifact):
        out.append(f" · {printable(d)} {fmt_rate(p.flops.get(d), 'FLOP/s')}")
    out.append(" · peaks ")
    conf_style = "green" if p.confidence == "high" else "bold yellow"
    out.append(f"{printable(p.source)}/{printable(p.confidence)}", style=conf_style)
    if x(p, "compute_validated") is False and p.flops:
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
    wl = x(artifact, "workload") or {}
    if isinstance(wl, dict):
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
    unit = x(e, "unit")
    lpu = x(e, "launches_per_unit")
    per_unit = f"per unit ({lpu} launch{'es' if lpu != 1 else ''})" if lpu else "per unit"
    peak_dtype = x(e, "peak_flops_dtype")
    t = _grid()
    t.add_row("kernel", safe(e.name))
    t.add_row("short name", safe(e.short_name))
    t.add_row("class", safe(" / ".join(str(v) for v in (e.op_class, x(e, "op_subclass"),
                                                          x(e, "classification")) if v)))
    t.add_row("% GPU time", Text(fmt_num(e.pct_gpu_time, 2, " %") + "  (copied from the Top-N)"))
    t.add_row("regime", safe(e.regime))
    t.add_row("unit", safe(unit if unit else "not stated"))
    t.add_row("launches", _num_line(f"{fmt_num(e.launches_per_step, 0)} per step",
                                    f"{lpu} per unit" if lpu else ""))
    t.add_row("time per launch", Text(fmt_time_ms(e.t_ms)))
    t.add_row("time per unit", Text(fmt_time_ms(x(e, "t_unit_ms"))))
    t.add_row("bytes", Text(f"{fmt_bytes(e.bytes_est)} {per_unit}"))
    t.add_row("FLOPs", Text(f"{fmt_rate(e.flops_est, 'FLOP')} {per_unit}"))
    t.add_row("achieved bandwidth", _num_line(fmt_rate(e.achieved_bw_bytes_s, "B/s"),
                                              f"HBM util {fmt_pct(e.hbm_util, 1)}"))
    t.add_row("achieved compute", _num_line(fmt_rate(e.achieved_flops, "FLOP/s"),
                                            f"compute util {fmt_pct(e.compute_util, 1)}"
                                            + (f" of the {printable(peak_dtype)} peak" if peak_dtype else "")))
    t.add_row("arithmetic intensity", Text(fmt_num(e.arithmetic_intensity, 3, " FLOP/B")))
    t.add_row("ridge point", Text(fmt_num(e.ridge_point, 1, " FLOP/B")))
    t.add_row("roof · bound", safe(f"{x(e, 'roof_axis') or '–'} roof · {e.bound_type}-bound"))
    raw = x(e, "roofline_pct_raw")
    roof = Text(fmt_pct(e.roofline_pct, 1), style=HEADROOM_STYLE.get(e.headroom_class, ""))
    if e.suspect and raw is not None:
        roof.append(f"  (raw {fmt_pct(raw, 1)}, clamped for display)", style="magenta")
    t.add_row("roofline", roof)
    t.add_row("target efficiency", _num_line(fmt_pct(e.target_eff, 0), x(e, "target_eff_source") or ""))
    t.add_row("attainable speedup", Text(fmt_num(e.attainable_speedup, 2, "×")))
    t.add_row("expected e2e gain", Text(fmt_num(e.expected_e2e_gain_pct, 2, " % of GPU time")))
    t.add_row("headroom", headroom_text(e))
    t.add_row("confidence", safe(f"{e.confidence} (stage {x(e, 'stage') or artifact.stage}, "
                                 f"{x(e, 'measurement_basis') or 'model'})"))
    t.add_row("route", safe(x(e, "route")))
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
    t.add_row("model", safe(x(e, "model") or ("not modelled" if not e.modeled else "–")))
    t.add_row("unit", safe(x(e, "unit") or "not stated"))
    t.add_row("assumptions", _bullets(list(x(e, "assumptions") or []), "none recorded"))
    parts: list[RenderableType] = [t]
    alts = x(e, "alternatives") or []
    if alts:
        at = Table(title=Text("byte/FLOP candidates (shapes tried)", style=LABEL_STYLE),
                   title_justify="left", box=None, padding=(0, 1))
        for col in ("candidate", "bytes", "FLOPs", "raw roofline", "feasible", "used", "note"):
            at.add_column(col, overflow="fold")
        for a in alts:
            if not isinstance(a, dict):
                continue
            at.add_row(safe(a.get("label")), Text(fmt_bytes(a.get("bytes_est"))),
                       Text(fmt_rate(a.get("flops_est"), "FLOP")),
                       Text(fmt_pct(a.get("roofline_pct_raw"), 1)),
                       Text("yes" if a.get("feasible") else "no",
                            style="" if a.get("feasible") else "magenta"),
                       Text("✓" if a.get("chosen") else ""), safe(a.get("note", "")))
        parts += [Text(""), at]
    if e.notes:
        parts += [Text(""), Text("notes", style=LABEL_STYLE), safe(e.notes)]
    return Group(*parts)


def flags(e: Entry, artifact: Artifact) -> RenderableType:
    lines: list[tuple[str, Text]] = []
    if e.suspect:
        msg = Text(f"raw roofline {fmt_pct(x(e, 'roofline_pct_raw'), 1)} (shown clamped); "
                   f"bytes upper bound at peak {fmt_bytes(x(e, 'bytes_upper_bound'))} per unit")
        reason = x(e, "no_verdict_reason")
        if reason:
            msg.append("\n" + printable(reason))
        lines.append(("suspect", msg))
    if x(e, "dispatch_bound"):
        lines.append(("dispatch-bound", safe(x(e, "no_verdict_reason")
                                             or "per-launch time within launch-overhead scale")))
    if not e.modeled:
        reasons = [d.reason for d in artifact.degraded if d.name in (e.name, e.short_name)]
        lines.append(("unmodelled", safe("; ".join(reasons) or x(e, "no_verdict_reason")
                                         or "no byte/FLOP model")))
    if x(e, "stage_c_candidate"):
        lines.append(("stage-C candidate", Text("a counter measurement would settle this entry")))
    if artifact.peaks.confidence == "low":
        lines.append(("low-confidence peaks", safe(
            f"peaks from {artifact.peaks.source}: every verdict is display-only")))
    if x(artifact.peaks, "compute_validated") is False:
        lines.append(("unvalidated compute peak", Text("compute-axis numbers are not usable")))
    if x(e, "advisory") or e.confidence == "low":
        lines.append(("advisory", safe(f"stage {x(e, 'stage') or artifact.stage}, confidence "
                                       f"{e.confidence}: rank by pct_gpu_time; the measurement decides")))
    if x(e, "contradiction"):
        lines.append(("contradiction", safe(x(e, "contradiction_detail")
                                            or "a measured speedup beat the prediction")))
    why = caution(e)
    if why:
        lines.append(("caution", safe(why)))
    if x(e, "editable") is False:
        lines.append(("not editable", Text("no editable call site: host-side levers only")))
    if not e.has_verdict and not any(k in ("suspect", "dispatch-bound", "unmodelled") for k, _ in lines):
        reason = x(e, "no_verdict_reason")
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
    t.add_row("route", safe(x(e, "route")))
    t.add_row("why", safe(x(e, "route_reason") or "–"))
    if x(e, "editable") is not None:
        t.add_row("editable", Text("yes" if x(e, "editable") else "no (host-side levers only)"))
    t.add_row("byte-reduction levers", _bullets(
        list(e.byte_reduction_levers),
        "none: byte-reduction levers are listed only for saturated heads"))
    return t


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
    sel = x(artifact, "head_selection")
    inputs = x(artifact, "inputs")
    if sel or inputs:
        parts += [Text(""), Text("inputs", style=LABEL_STYLE)]
        t = _grid()
        if sel:
            t.add_row("head selection", safe(sel))
        if isinstance(inputs, dict):
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
    return Text(f"{d:+.1f}%", style=style)


def history_view(e: Entry, history: Any) -> RenderableType:
    """One kernel across rounds: per-launch time and %gpu, the predictions beside the outcomes,
    contradiction flags (spec §8.3–§8.4). ``history`` is the engine's RoundHistory."""
    if history is None:
        return Text("single round: nothing to compare (round_* siblings appear here)", style=DIM)
    from roofline_tui.core.history import kernel_series

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
            Text(fmt_time_ms(p.t_ms)),
            _delta(p.delta_t_pct_vs_prev),
            _delta(p.delta_t_pct_vs_baseline),
            Text(fmt_num(p.pct_gpu_time, 2)),
            Text(fmt_num(p.predicted_speedup_prev, 3, "×")),
            Text(fmt_num(p.measured_speedup_vs_prev, 3, "×")),
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
    from roofline_tui.core.history import round_summary_rows

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
            Text(fmt_num(row.total_gpu_time_ms, 1, " ms")),
            _delta(row.delta_total_pct_vs_prev),
            Text(fmt_num(row.output_throughput_tok_s, 1)),
            e2e,
            Text(str(row.contradictions), style="bold magenta" if row.contradictions else DIM),
            safe(note, limit=60, style=DIM),
        )
    return t

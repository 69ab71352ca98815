"""Round over round: the History tab (one kernel across rounds) and the Rounds view (one row per
round, then predicted vs actual)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline_tui.app.view.styles import DIM, LABEL_STYLE, safe, signed_pct
from roofline_tui.core import demangle, units
from roofline_tui.core.artifact import Entry
from roofline_tui.core.textsafe import printable

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
    from roofline_tui.core.api import kernel_series

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
    from roofline_tui.core.api import round_summary_rows

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
            pt.add_row(safe(demangle.display_name(p.short_name), limit=48), safe(p.regime),
                       safe(f"{p.round_before} → {p.round_after}"),
                       Text(units.ratio(p.predicted_speedup, 3)),
                       Text(units.ratio(p.measured_speedup, 3)), e2e, verdict)
        parts += [Text(""), pt]
    return Group(*parts)

"""The drill-down's panes: Summary, Assumptions, Flags, Levers, Raw, Ranks and the round's Degraded
view.

Everything untrusted goes through ``printable`` into a :class:`rich.text.Text`, never into markup.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline_tui.app.view.styles import (
    DIM,
    FLAG_STYLE,
    FLAG_SYMBOL,
    HEADROOM_STYLE,
    LABEL_STYLE,
    caution,
    full_name,
    headroom_text,
    safe,
)
from roofline_tui.core import demangle, reading, units
from roofline_tui.core.artifact import Artifact, Entry, StepTarget
from roofline_tui.core.textsafe import printable


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
    if demangle.demangle(e.name):
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


def step_view(t: StepTarget) -> RenderableType:
    """A part of the step ranked among the kernels (idle gaps, exposed communication, copies):
    what it is, its bound and its levers (the same on every kernel tab)."""
    g = _grid()
    g.add_row("part of the step", safe(t.kind))
    g.add_row("regime", safe(t.regime or "–"))
    g.add_row("share", Text(f"{units.pct(t.share_of_span)} of the step's GPU span"))
    g.add_row("gain bound", Text(f"{units.pct_points(t.expected_e2e_gain_pct, 2)} end to end if "
                                 "all of it goes (the span shrinks by its share; Amdahl)"))
    g.add_row("reading", safe(t.line, limit=300))
    g.add_row("levers", _bullets(list(t.levers), "none listed"))
    g.add_row("why here", Text("the step's GPU span split into busy and idle time, "
                               "communication and copies (x_roofline.step_time of the "
                               "Top-N): no kernel's roofline covers it", style=DIM))
    return g


def levers(e: Entry) -> RenderableType:
    t = _grid()
    t.add_row("route", safe(e.route))
    t.add_row("why", safe(e.route_reason or "–"))
    if e.editable is not None:
        t.add_row("editable", Text("yes" if e.editable else "no (host-side levers only)"))
    if e.levers:  # ranked, each with its evidence, expected effect and source
        t.add_row("levers", _ranked_levers(e))
        said = [lv for lv in e.byte_reduction_levers if lv.startswith("constraint:")]
        if said:
            t.add_row("constraint", _bullets(said, ""))
        return t
    if e.dispatch_bound:
        t.add_row("launch-overhead levers", _bullets(list(DISPATCH_LEVERS), ""))
    if e.editable is False:
        t.add_row("host-side levers", _bullets(list(HOST_SIDE_LEVERS), ""))
    if e.byte_reduction_levers or not e.dispatch_bound:
        t.add_row("byte-reduction levers", _bullets(
            list(e.byte_reduction_levers),
            "none listed: byte-reduction levers are listed for saturated heads"))
    return t


def _ranked_levers(e: Entry) -> Text:
    out = Text()
    for i, lv in enumerate(e.levers, 1):
        if i > 1:
            out.append("\n")
        out.append(f"{i}. {printable(lv.name)}", style="bold")
        out.append(f" — {printable(lv.action)}")
        out.append("\n   evidence: ", style=DIM)
        out.append(printable(lv.evidence))
        out.append("\n   expected: ", style=DIM)
        out.append(printable(lv.expected_effect))
        out.append("\n   source: ", style=DIM)
        out.append(printable(lv.source), style=DIM)
    return out


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


def ranks_view(e: Entry, ranks: reading.RankView | None) -> RenderableType:
    """The round's ranks (or GPUs), one row each with its GPU time, and this kernel's time per
    launch across them: min, median, max and the slowest (``core.reading``'s RankView)."""
    if ranks is None or not ranks.several:
        return Text("one trace: no rank spread (import the traces of several ranks of one run "
                    "together to see each kernel's spread across them)", style=DIM)
    unit = ranks.unit
    spread = ranks.spread_of(e)
    parts: list[RenderableType] = []
    head = Text(f"this Top-N is {unit} {ranks.rank} ", style=LABEL_STYLE)
    head.append("(the slowest: most GPU time)" if ranks.chosen_by == "slowest"
                else f"(named with {printable(ranks.chosen_by)})", style=DIM)
    head.append(f" · {len(ranks.traces)} {unit}s read", style=DIM)
    parts.append(head)
    if spread is None:
        parts.append(Text("this kernel has no recorded spread across them", style=DIM))
    else:
        t = _grid()
        t.add_row("kernel", safe(e.short_name, limit=80))
        t.add_row("per launch", Text(f"min {units.fixed(spread.min_us, 1)} µs · median "
                                     f"{units.fixed(spread.median_us, 1)} µs · max "
                                     f"{units.fixed(spread.max_us, 1)} µs"))
        ratio = reading.spread_ratio(spread)
        slow = Text(f"{unit} {spread.slowest_rank}", style="bold")
        if ratio is not None:  # a straggler (10 % over the median or more) in yellow
            slow.append(f"  {ratio:.2f}× the median", style="yellow" if ratio >= 1.1 else "")
        t.add_row(f"slowest {unit}", slow)
        t.add_row(f"{unit}s with it", Text(f"{spread.ranks} of {len(ranks.traces)}"))
        parts.append(t)
    table = Table(box=None, padding=(0, 1), header_style=LABEL_STYLE)
    for col, justify in ((unit, "right"), ("GPU time", "right"), ("launches", "right"),
                         ("kernels", "right"), ("file", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    slowest = spread.slowest_rank if spread is not None else None
    for tr in ranks.traces:
        mark = " ◂ this Top-N" if tr.rank == ranks.rank else ""
        mark += " ◂ slowest for this kernel" if tr.rank == slowest else ""
        table.add_row(Text(str(tr.rank), style="bold" if tr.rank == ranks.rank else ""),
                      Text(units.millis(tr.gpu_time_ms)), Text(units.si(tr.launches)),
                      Text(str(tr.kernels)),
                      Text.assemble(safe(tr.file, limit=60), (mark, "yellow")))
    parts += [Text(""), table]
    return Group(*parts)


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

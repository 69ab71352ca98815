"""``profile_roofline.md``: the artifact for humans. Human units live here, SI stays inside."""

from __future__ import annotations

from typing import Any

from roofline_tui.core.artifact import DOCTRINE, Artifact, Entry
from roofline_tui.core.textsafe import md_cell, printable


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "–"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_rate(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def fmt_time_ms(t: float | None, digits: int = 1) -> str:
    """A time given in ms, shown in µs below 1 ms."""
    if t is None:
        return "–"
    return f"{t * 1000:.{digits}f} µs" if t < 1 else f"{t:.3f} ms"


def fmt_pct(x: float | None, digits: int = 0) -> str:
    return "–" if x is None else f"{x * 100:.{digits}f}%"


def fmt_num(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if x is None else f"{x:.{digits}f}{suffix}"


def flags_of(e: Entry) -> list[str]:
    extra: dict[str, Any] = e.model_extra or {}
    flags = []
    if e.suspect:
        flags.append("suspect")
    if extra.get("dispatch_bound"):
        flags.append("dispatch-bound")
    if not e.modeled:
        flags.append("unmodelled")
    if extra.get("advisory"):
        flags.append("advisory")
    if extra.get("contradiction"):
        flags.append("contradiction")
    return flags


def _peaks_line(a: Artifact) -> str:
    p = a.peaks
    extra = p.model_extra or {}
    flops = ", ".join(f"{k} {fmt_rate(v, 'FLOP/s')}" for k, v in sorted(p.flops.items()))
    product = extra.get("product")
    where = f"{a.gfx or 'unknown arch'}" + (f" ({product})" if product else "")
    line = (
        f"- **Peaks** {md_cell(where)}: HBM {fmt_rate(p.hbm_bw_bytes_s, 'B/s')}; "
        f"{flops or 'no compute peaks'} — source `{md_cell(p.source)}`, confidence "
        f"**{md_cell(p.confidence)}**"
    )
    if extra.get("citation"):
        line += f" ({md_cell(extra['citation'], limit=140)})"
    if extra.get("compute_validated") is False and p.flops:
        line += " — compute peaks **unvalidated** (bf16 ≠ fp16): compute-axis numbers not usable"
    return line


def artifact_to_markdown(a: Artifact) -> str:
    extra: dict[str, Any] = a.model_extra or {}
    rnd = extra.get("round")
    title = f"# Roofline headroom — round `{md_cell(rnd)}`" if rnd is not None else "# Roofline headroom"
    out: list[str] = [f"{title} ({md_cell(a.gfx or 'unknown arch')}, stage {md_cell(a.stage)})",
                      ""]
    out.append(_peaks_line(a))
    confidences = sorted({md_cell(e.confidence) for e in a.entries}) or ["–"]
    out.append(
        f"- **Stage** {md_cell(a.stage)}; entry confidence: {', '.join(confidences)}"
        + (" — stage A is display-only: rank on pct_gpu_time" if a.stage == "A" else "")
    )
    wl = extra.get("workload") or {}
    if isinstance(wl, dict) and wl:
        out.append("- **Workload** " + ", ".join(md_cell(f"{k}={v}", limit=60)
                                                  for k, v in sorted(wl.items(), key=lambda kv: str(kv[0]))))
    if extra.get("head_selection"):
        out.append(f"- **Scope** {md_cell(extra['head_selection'])}")
    if extra.get("target_eff_source"):
        out.append(f"- **target_eff** from {md_cell(extra['target_eff_source'])}")
    out.append("")
    plot_file = extra.get("plot_file")
    if isinstance(plot_file, str) and plot_file:  # written beside the artifact by --plot
        out += [f"![roofline]({md_cell(plot_file)})", ""]
    out.append(
        "| # | kernel | regime | class | %gpu | t/launch | unit | bytes | AI | hbm_util | "
        "compute_util | bound | roofline | target | speedup | e2e gain | headroom | route | flags |"
    )
    out.append("|" + "---|" * 19)
    by_short = a.entries_by_short_name()
    for i, short in enumerate(a.ranking_by_pct, 1):
        e = by_short.get(short)
        if e is None:
            continue
        ex = e.model_extra or {}
        n_launch = ex.get("launches_per_unit") or 1
        out.append(
            "| " + " | ".join([
                str(i),
                f"`{md_cell(e.short_name, limit=48)}`",
                md_cell(e.regime or "–"),
                md_cell(e.op_class),
                fmt_num(e.pct_gpu_time, 2),
                fmt_time_ms(e.t_ms),
                md_cell(f"{n_launch} launch{'es' if n_launch != 1 else ''}", limit=40),
                fmt_bytes(e.bytes_est),
                fmt_num(e.arithmetic_intensity, 1),
                fmt_pct(e.hbm_util),
                fmt_pct(e.compute_util, 1),
                md_cell(e.bound_type),
                fmt_pct(e.roofline_pct) + (" (raw " + fmt_pct(ex.get("roofline_pct_raw")) + ")"
                                           if e.suspect else ""),
                fmt_num(e.target_eff, 2),
                fmt_num(e.attainable_speedup, 2, "×"),
                fmt_num(e.expected_e2e_gain_pct, 2, "%"),
                md_cell(e.headroom_class),
                md_cell(ex.get("route", "–")),
                ", ".join(flags_of(e)) or "–",
            ]) + " |"
        )
    out += ["", "## Two rankings, side by side", ""]
    if a.ranking_by_pct != a.ranking_by_expected_gain:
        out.append("The rankings **disagree**: GPU time and expected gain point at different kernels.")
    else:
        out.append("The rankings agree.")
    out += ["", "| # | by GPU time | by expected gain |", "|---|---|---|"]
    for i, (p, g) in enumerate(zip(a.ranking_by_pct, a.ranking_by_expected_gain, strict=False), 1):
        ge = by_short.get(g)
        gain = f" (+{ge.expected_e2e_gain_pct:.2f}%)" if ge and ge.expected_e2e_gain_pct is not None else " (no verdict)"
        pe = by_short.get(p)
        pct = f" ({pe.pct_gpu_time:.2f}%)" if pe and pe.pct_gpu_time is not None else ""
        out.append(f"| {i} | `{md_cell(p, limit=48)}`{pct} | `{md_cell(g, limit=48)}`{gain} |")
    movement = extra.get("movement")
    if movement:
        out += ["", "## Round-over-round movement", ""]
        # markdown lines built by the history (names already escaped): controls made visible
        out += [printable(line) for line in movement] if isinstance(movement, list) else []
    out += ["", "## Per-entry notes", ""]
    for short in a.ranking_by_pct:
        e = by_short.get(short)
        if e is None:
            continue
        ex = e.model_extra or {}
        out.append(f"### `{md_cell(e.short_name, limit=80)}`")
        out.append("")
        if e.name != e.short_name:
            out.append(f"- full name: `{md_cell(e.name, limit=200)}`")
        if ex.get("unit"):
            out.append(f"- unit: {md_cell(ex['unit'])}")
        if ex.get("route"):
            out.append(f"- route: **{md_cell(ex['route'])}** — "
                       f"{md_cell(ex.get('route_reason', ''))}")
        assumptions = ex.get("assumptions")
        for assumption in assumptions if isinstance(assumptions, list) else []:
            out.append(f"- assumption: {md_cell(assumption)}")
        if e.notes:
            out.append(f"- notes: {md_cell(e.notes)}")
        for lever in e.byte_reduction_levers:
            out.append(f"- lever: {md_cell(lever)}")
        out.append("")
    out += ["## Degraded / not modelled", ""]
    if a.degraded:
        out += [f"- `{md_cell(d.name, limit=80)}`: {md_cell(d.reason)}" for d in a.degraded]
    else:
        out.append("- none")
    if a.skill_errors:
        out += ["", "## Problems reading the inputs", ""]
        out += [f"- {md_cell(err)}" for err in a.skill_errors]
    out += ["", "## Doctrine", "", DOCTRINE, ""]
    return "\n".join(out)

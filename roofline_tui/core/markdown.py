"""``profile_roofline.md``: the artifact for humans. Human units live here, SI stays inside."""

from __future__ import annotations

from roofline_tui.core import reading, units
from roofline_tui.core.artifact import DOCTRINE, Artifact, Entry, RoundContext, RoundMovement
from roofline_tui.core.labels import row_labels
from roofline_tui.core.textsafe import md_cell

TABLE_NAME_WIDTH = 64  # a kernel cell of the .md's tables


def flags_of(e: Entry) -> list[str]:
    """The entry's flags as the files write them (``core.reading.flags``: every flag, advisory
    included, on each row)."""
    return list(reading.flags(e))


def _peaks_line(a: Artifact) -> str:
    p = a.peaks
    flops = ", ".join(f"{k} {units.rate(v, 'FLOP/s')}" for k, v in sorted(p.flops.items()))
    product = p.product
    where = f"{a.gfx or 'unknown arch'}" + (f" ({product})" if product else "")
    line = (
        f"- **Peaks** {md_cell(where)}: HBM {units.rate(p.hbm_bw_bytes_s, 'B/s')}; "
        f"{flops or 'no compute peaks'} — source `{md_cell(p.source)}`, "
        f"confidence **{md_cell(p.confidence)}**"
    )
    if p.citation:
        line += f" ({md_cell(p.citation, limit=140)})"
    if p.compute_validated is False and p.flops:
        line += " — compute peaks **unvalidated** (bf16 ≠ fp16): compute-axis numbers not usable"
    return line


def _fmt_d(d: float | None, digits: int = 1) -> str:
    return "–" if d is None else f"{d:+.{digits}f}%"


def movement_lines(mv: RoundMovement, ctx: RoundContext | None,
                   names: dict[str, str] | None = None) -> list[str]:
    """The round-over-round movement section: ``mv`` holds the table, ``ctx`` (the artifact's
    ``round_history``) the kernels that appeared, vanished or changed and the contradictions.
    ``names``: short name → the row label of this round's entries (core.labels); a kernel this
    round no longer has reads its short name."""
    names = names if names is not None else {}
    lines: list[str] = []
    bounded = [f"- {md_cell(ctx.rounds_considered)}."] if ctx and ctx.rounds_considered else []
    if mv.prev_round is None:
        later = ", ".join(f"`{r}`" for r in mv.later_rounds) or "none yet"
        lines.append(f"Round `{md_cell(mv.round)}` is the baseline (later rounds: {later}).")
        lines += bounded
        if not mv.baseline_is_round0:
            lines.append("- round 0 is missing: this, the earliest round found, is the baseline.")
        return lines
    lines.append(f"Against the previous round `{md_cell(mv.prev_round)}` and the baseline "
                 f"`{md_cell(mv.baseline_round)}`. Isolated noise band "
                 f"±{(mv.isolated_noise_band or 0.0) * 100:.1f}%, "
                 f"e2e noise band ±{mv.e2e_noise_band_pct or 0.0:g}% (spec §8.3).")
    lines += bounded
    if not mv.baseline_is_round0:
        lines.append(f"- round 0 is missing: the baseline is round `{md_cell(mv.baseline_round)}`.")
    if mv.not_compared_with_baseline is not None:
        lines.append(f"- **not compared with the baseline**: {md_cell(mv.not_compared_with_baseline)}.")
    if mv.not_compared_with_prev is not None:
        lines.append(f"- **not compared with round `{md_cell(mv.prev_round)}`**: "
                     f"{md_cell(mv.not_compared_with_prev)}.")
        return lines
    if mv.e2e is not None:
        e2e = mv.e2e
        noise = " — noise (under the serving band)" if e2e.noise else ""
        expect = ""
        if e2e.expected_e2e_gain_pct_sum is not None:
            expect = (f"; expected +{e2e.expected_e2e_gain_pct_sum:.2f}% from the kernels that "
                      "moved beyond the isolated band")
        unit = " tok/s" if "throughput" in e2e.basis else " ms"
        lines.append(f"- e2e: {md_cell(e2e.basis)} {e2e.before:.6g} → "
                     f"{e2e.after:.6g}{unit}: {_fmt_d(e2e.delta_pct, 3)} "
                     f"(positive = faster){noise}{expect}.")
    else:
        lines.append("- e2e: no measurement (no serving metrics or total GPU time in both rounds).")
    lines += ["", "| kernel | regime | t/launch | vs prev | vs baseline | %gpu prev → now | "
              "measured | predicted (prev) | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for k in mv.kernels:
        pct = (f"{k.pct_gpu_time_prev:.2f} → {k.pct_gpu_time:.2f}"
               if k.pct_gpu_time_prev is not None and k.pct_gpu_time is not None else "–")
        verdict = f"**{k.verdict}**" if k.verdict == "contradiction" else md_cell(k.verdict)
        lines.append("| " + " | ".join([
            f"`{md_cell(names.get(k.short_name, k.short_name), limit=TABLE_NAME_WIDTH)}`",
            md_cell(k.regime),
            units.millis_fixed(k.t_ms, 2),
            _fmt_d(k.delta_t_pct_vs_prev), _fmt_d(k.delta_t_pct_vs_baseline), pct,
            units.fixed(k.measured_speedup, 3, "×"), units.fixed(k.predicted_speedup, 3, "×"),
            verdict]) + " |")
    lines.append("")
    if ctx is None:
        return lines
    for what, items in (("appeared", ctx.appeared), ("vanished", ctx.vanished),
                        ("changed regime (not compared)", ctx.regime_changed),
                        ("entered the head set", ctx.heads_entered),
                        ("left the head set", ctx.heads_left)):
        if items:
            shown = ", ".join(f"`{md_cell(n, limit=60)}`" for n in items[:12])
            more = f" and {len(items) - 12} more" if len(items) > 12 else ""
            lines.append(f"- {what}: {shown}{more}")
    for p in ctx.predicted_vs_actual:
        if p.contradiction:
            lines.append(f"- **contradiction** `{md_cell(p.short_name, limit=60)}`: "
                         f"{md_cell(p.verdict_text)}.")
    return lines


def artifact_to_markdown(a: Artifact, ranks: reading.RankView | None = None) -> str:
    """The artifact as Markdown. ``ranks``: the round's ranks (``core.reading.rank_view`` of its
    Top-N); with two or more, the main table gets a spread column (max/median per launch and
    the slowest rank)."""
    by_short = a.entries_by_short_name()
    listed = [(short, by_short[short]) for short in a.ranking_by_pct if short in by_short]
    # every row named by the one row-label rule (core.labels): no two the same
    cut = dict(zip((s for s, _ in listed),
                   row_labels([e for _, e in listed], TABLE_NAME_WIDTH, md_cell), strict=True))
    full = row_labels([e for _, e in listed], None, md_cell)
    out: list[str] = _header_lines(a)
    out += _ranking_table(a, by_short, reading.several_ranks(ranks), cut)
    out += _two_rankings(a, by_short, cut)
    if a.movement is not None:
        out += ["", "## Round-over-round movement", ""]
        out += movement_lines(a.movement, a.round_history, cut)
    out += ["", "## Per-entry notes", ""]
    for (_, e), label in zip(listed, full, strict=True):
        out += _entry_notes(e, label)
        out.append("")
    out += _closing_lines(a)
    return "\n".join(out)


def _header_lines(a: Artifact) -> list[str]:
    """Title, next target, peaks, stage, workload, scope and profile notes (and the plot)."""
    rnd = a.round
    title = f"# Roofline headroom — round `{md_cell(rnd)}`" if rnd is not None else "# Roofline headroom"
    out: list[str] = [f"{title} ({md_cell(a.gfx or 'unknown arch')}, stage {md_cell(a.stage)})",
                      "", f"**{md_cell(reading.next_target_of(a).line)}**", ""]
    out.append(_peaks_line(a))
    confidences: list[str] = sorted({md_cell(e.confidence) for e in a.entries}) or ["–"]
    out.append(
        f"- **Stage** {md_cell(a.stage)}; entry confidence: {', '.join(confidences)}"
        + (" — stage A is display-only: rank on pct_gpu_time" if a.stage == "A" else "")
    )
    wl = a.workload.model_dump(exclude_unset=True)
    if wl:
        out.append("- **Workload** " + ", ".join(md_cell(f"{k}={v}", limit=60)
                                                  for k, v in sorted(wl.items())))
    if a.head_selection:
        out.append(f"- **Scope** {md_cell(a.head_selection)}")
    if a.target_eff_source:
        out.append(f"- **target_eff** from {md_cell(a.target_eff_source)}")
    if a.graph_replay is not None and a.graph_replay.warning:
        out.append(f"- **Graph replay** {md_cell(a.graph_replay.warning)}")
    for note in a.profile_notes:
        if a.graph_replay is None or note != a.graph_replay.warning:
            out.append(f"- **Profile** {md_cell(note)}")
    for line in reading.step_split_lines(a):
        out.append(f"- **Step** {md_cell(line)}")
    out.append("")
    plot_file = a.plot_file
    if plot_file:  # written beside the artifact by --plot
        out += [f"![roofline]({md_cell(plot_file)})", ""]
    return out


def _ranking_table(a: Artifact, by_short: dict[str, Entry],
                   ranks: reading.RankView | None = None,
                   names: dict[str, str] | None = None) -> list[str]:
    """The main table: one row per entry in GPU-time order (with several ranks, a column of
    each entry's spread across them); ``names``: each row's label by short name."""
    names = names if names is not None else {}
    out: list[str] = []
    spread_head = f"{ranks.unit} spread | " if ranks is not None else ""
    out.append(
        "| # | kernel | regime | class | %gpu | t/launch | unit | bytes | AI | hbm_util | "
        "compute_util | bound | roofline | target | speedup | e2e gain | headroom | route | "
        f"{spread_head}flags |"
    )
    out.append("|" + "---|" * (19 + (ranks is not None)))
    for i, short in enumerate(a.ranking_by_pct, 1):
        e = by_short.get(short)
        if e is None:
            continue
        n_launch = e.launches_per_unit or 1
        spread = ([reading.spread_text(ranks.spread_of(e), ranks.unit)]
                  if ranks is not None else [])
        out.append(
            "| " + " | ".join([
                str(i),
                f"`{md_cell(names.get(short, e.short_name), limit=TABLE_NAME_WIDTH)}`",
                md_cell(e.regime or "–"),
                md_cell(e.op_class),
                units.fixed(e.pct_gpu_time, 2),
                units.millis_fixed(e.t_ms),
                md_cell(f"{n_launch} launch{'es' if n_launch != 1 else ''}", limit=40),
                units.nbytes(e.bytes_est),
                units.fixed(e.arithmetic_intensity, 1),
                units.pct(e.hbm_util),
                units.pct(e.compute_util, 1),
                md_cell(e.bound_type),
                units.pct(e.roofline_pct) + (" (raw " + units.pct(e.roofline_pct_raw) + ")"
                                           if e.suspect else ""),
                units.fixed(e.target_eff, 2),
                units.fixed(e.attainable_speedup, 2, "×"),
                units.fixed(e.expected_e2e_gain_pct, 2, "%"),
                md_cell(e.headroom_class),
                md_cell(e.route or "–"),
                *spread,
                ", ".join(flags_of(e)) or "–",
            ]) + " |"
        )
    if ranks is not None:
        out += ["", f"{ranks.unit} spread: the slowest {ranks.unit}'s mean time per launch over "
                    f"the median {ranks.unit}'s, and which {ranks.unit} that is "
                    f"({len(ranks.traces)} {ranks.unit}s read; this Top-N is "
                    f"{reading.rank_tag(ranks.rank, ranks.unit)})."]
    return out


def _two_rankings(a: Artifact, by_short: dict[str, Entry],
                  names: dict[str, str] | None = None) -> list[str]:
    """GPU-time ranking beside the expected-gain ranking, and whether they agree; ``names``:
    each row's label by short name."""
    names = names if names is not None else {}
    out: list[str] = ["", "## Two rankings, side by side", ""]
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
        pn = md_cell(names.get(p, p), limit=TABLE_NAME_WIDTH)
        gn = md_cell(names.get(g, g), limit=TABLE_NAME_WIDTH)
        out.append(f"| {i} | `{pn}`{pct} | `{gn}`{gain} |")
    return out


def _entry_notes(e: Entry, label: str | None = None) -> list[str]:
    """One entry's notes section (without its closing blank line), headed by its row label
    (the short name below it when that reads otherwise)."""
    title = label if label is not None else e.short_name
    out: list[str] = [f"### `{md_cell(title, limit=200)}`", ""]
    if title != e.short_name:
        out.append(f"- short name: `{md_cell(e.short_name, limit=200)}`")
    if e.name != e.short_name:
        out.append(f"- full name: `{md_cell(e.name, limit=200)}`")
    if e.unit:
        out.append(f"- unit: {md_cell(e.unit)}")
    if e.route:
        out.append(f"- route: **{md_cell(e.route)}** — {md_cell(e.route_reason or '')}")
    for assumption in e.assumptions:
        out.append(f"- assumption: {md_cell(assumption)}")
    if e.logical_op is not None:
        split = ", ".join(f"`{md_cell(k.short_name, limit=60)}` {units.millis(k.t_ms)} "
                          f"({units.pct(k.share, 0)})" for k in e.logical_op.kernels)
        out.append(f"- logical op ({md_cell(e.logical_op.linked_by)}): {split}")
    if e.demonstrated is not None:
        out.append(f"- demonstrated: {units.ratio(e.demonstrated.demonstrated_speedup)} "
                   f"to this run's best — {md_cell(e.demonstrated.note)}")
    if e.part_of:
        out.append(f"- part of the logical op of `{md_cell(e.part_of, limit=80)}`: judged "
                   "there")
    if e.instances:
        out += ["", "| instance op | shapes | calls | t/launch | bytes | FLOPs | roofline |",
                "|--|--|--|--|--|--|--|"]
        out += [f"| `{md_cell(r.op or '–', limit=60)}` | `{md_cell(r.shapes, limit=80)}` | "
                f"{'–' if r.calls is None else f'{r.calls:g}'} | {units.millis(r.t_ms)} | {units.nbytes(r.bytes_est)} | "
                f"{units.rate(r.flops_est, 'FLOP')} | {units.pct(r.roofline_pct, 0)} "
                f"{r.roof_axis or ''} |" for r in e.instances]
        out.append("")
    if e.notes:
        out.append(f"- notes: {md_cell(e.notes)}")
    if e.levers:  # ranked, with evidence and expected effect (the §7.1 levers among them)
        out.append("- levers (ranked):")
        out += [f"  {i}. **{md_cell(lv.name)}**: {md_cell(lv.action)} — evidence: "
                f"{md_cell(lv.evidence)}; expected: {md_cell(lv.expected_effect)} "
                f"(source: {md_cell(lv.source)})" for i, lv in enumerate(e.levers, 1)]
    for lever in e.byte_reduction_levers:
        if not e.levers or lever.startswith("constraint:"):
            out.append(f"- lever: {md_cell(lever)}")
    return out


def _closing_lines(a: Artifact) -> list[str]:
    """Degraded entries, input problems and the doctrine."""
    out: list[str] = ["## Degraded / not modelled", ""]
    if a.degraded:
        out += [f"- `{md_cell(d.name, limit=80)}`: {md_cell(d.reason)}" for d in a.degraded]
    else:
        out.append("- none")
    if a.skill_errors:
        out += ["", "## Problems reading the inputs", ""]
        out += [f"- {md_cell(err)}" for err in a.skill_errors]
    out += ["", "## Doctrine", "", DOCTRINE, ""]
    return out

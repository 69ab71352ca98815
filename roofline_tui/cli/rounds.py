"""``roofline rounds`` and ``roofline playbook``: the rounds of one profile, headless.

``roofline rounds PROFILE_DIR`` prints one row per round and the predicted-vs-actual pairs.
``roofline playbook PROFILE_DIR [--out knowledge/backend_playbook.md] [--priors-out FILE]``
appends the pairs to the playbook (idempotently, never rewriting what is there) and prints the
per-op-class calibration; ``--priors-out`` writes calibrated ``target_eff`` values for
``roofline analyze --priors FILE``.

Every string that came from a file (round labels, stages, kernel names, reasons) is printed
through the sanitiser and as plain text: Rich markup in a directory name is shown, never
interpreted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.cli.args import (
    add_analysis_arguments,
    add_path,
    add_source_arguments,
    failure,
    options_from_args,
    shown,
    sources_from_args,
    usage_error,
)

if TYPE_CHECKING:
    from roofline_tui.core.api import RoundHistory, RoundSummaryRow

# core.rounds.playbook.DEFAULT_PLAYBOOK; building the parser does not import the playbook (the tests
# check that the two agree)
DEFAULT_PLAYBOOK = Path("knowledge") / "backend_playbook.md"


def register_rounds(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "rounds",
        help="compare the round_* directories of a profile: movement, predicted vs actual",
        description=(
            "Load every round_* directory of PROFILE_DIR (numeric rounds in order, named rounds "
            "after them by time), compare each round with the one before and with round 0, and "
            "print the per-round summary and the predicted-vs-actual pairs."
        ),
    )
    _add_common(r)
    r.add_argument("--json", action="store_true",
                   help="print rounds, steps and kernel series as JSON")
    r.add_argument("--kernel", metavar="NAME",
                   help="print the history of one kernel (full or short name)")
    r.set_defaults(func=run_rounds)


def register_playbook(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "playbook",
        help="append predicted-vs-actual rows to the backend playbook; calibrate target_eff",
        description=(
            "Append one markdown row per predicted-vs-actual pair of PROFILE_DIR to the playbook "
            "(spec §8.5). Re-running adds nothing new; an existing or hand-edited file is "
            "appended to, never rewritten. Prints the per-op-class calibration."
        ),
    )
    _add_common(p)
    add_path(p, "--out", need="new-file", default=DEFAULT_PLAYBOOK, metavar="FILE",
             help=f"playbook file (default: {DEFAULT_PLAYBOOK})")
    add_path(p, "--priors-out", need="new-file", metavar="FILE",
             help="write calibrated target_eff priors (roofline-priors-v1 JSON) for "
                  "'roofline analyze --priors FILE'")
    p.add_argument("--skip-noise", action="store_true",
                   help="do not record pairs whose isolated change is inside the noise band")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be appended; write nothing")
    p.set_defaults(func=run_playbook)


def _add_common(p: argparse.ArgumentParser) -> None:
    add_path(p, "profile_dir", need="dir", metavar="PROFILE_DIR",
             help="directory holding round_0, round_1, ... (each with profile_topN.json)")
    add_source_arguments(p)
    add_analysis_arguments(p)


def _load(cmd: str, args: argparse.Namespace) -> tuple[RoundHistory | None, int]:
    # the engine: imported once the arguments are known to be sound
    from roofline_tui.core import api
    from roofline_tui.core.layout import round_dirs

    d: Path = args.profile_dir
    if not round_dirs(d):
        hint = " (it looks like a round directory; pass its parent)" if (
            d / "profile_topN.json").exists() else ""
        return None, usage_error(cmd, f"no round_* directories in {shown(d)}{hint}")
    options, code = options_from_args(cmd, args)
    if options is None:
        return None, code
    return api.history(d, sources_from_args(args), options), 0


def cell(value: object, limit: int | None = None) -> str:
    """A table cell from data: sanitised plain text (``[bold]`` is shown, not applied)."""
    return shown(value, limit=limit)


def _say(line: str) -> None:
    print(line, flush=True)


def _f(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def print_rounds(h: RoundHistory) -> None:
    # the table printer and the engine: only once a table is printed (the parser is built
    # without them)
    from roofline_tui.cli.table import Column, print_table
    from roofline_tui.core.api import round_summary_rows

    rows: list[list[str]] = []
    summary = round_summary_rows(h)
    for row in summary:
        e2e = _f(row.e2e_delta_pct_vs_prev, "+.3f")
        if row.e2e_delta_pct_vs_prev is not None:
            e2e += "% (noise)" if row.e2e_noise else "%"
        rows.append([cell(row.label, 40), cell(row.time_iso or "–"), cell(row.stage or "–", 20),
                     str(row.n_heads), _f(row.total_gpu_time_ms, ".1f"),
                     _f(row.delta_total_pct_vs_prev, "+.2f") + ("%" if row.delta_total_pct_vs_prev
                                                               is not None else ""),
                     _f(row.output_throughput_tok_s, ".1f"), e2e, str(row.contradictions),
                     cell(row.not_compared_reason or "", 80)])
    print_table([Column("round"), Column("time"), Column("stage"), Column("heads", "right"),
                 Column("GPU time ms", "right"), Column("Δ GPU", "right"),
                 Column("tok/s", "right"), Column("e2e vs prev", "right"),
                 Column("contradictions", "right"), Column("note")], rows,
                cell(f"rounds of {shown(h.profile_dir)} (baseline {shown(h.baseline)})"))
    _print_sources(summary)
    pairs = h.pairs()
    if pairs:
        print()
        print_table(
            [Column("kernel"), Column("regime"), Column("rounds"), Column("predicted", "right"),
             Column("measured", "right"), Column("e2e", "right"), Column("verdict")],
            [[cell(p.short_name, 40), cell(p.regime), cell(f"{p.round_before} → {p.round_after}", 60),
              _f(p.predicted_speedup, ".3f"), _f(p.measured_speedup, ".3f"),
              _f(p.e2e_delta_pct, "+.3f") + (" (noise)" if p.e2e_noise else ""),
              cell(p.verdict.upper() if p.contradiction else p.verdict)] for p in pairs],
            "predicted vs actual")
    _print_not_compared(h)
    for prob in h.problems:
        _say(cell(f"note: {shown(prob, limit=200)}"))


def _print_sources(rows: list[RoundSummaryRow]) -> None:
    """One line per round that records where it came from (``roofline ingest``'s
    source.json): its trace files."""
    for row in rows:
        if row.source is not None and row.source.files:
            names = ", ".join(row.source.files[:8])
            more = f" (+{len(row.source.files) - 8} more)" if len(row.source.files) > 8 else ""
            via = f" [{row.source.importer}]" if row.source.importer else ""
            _say(cell(f"round {shown(row.label)} source: {names}{more}{via}", 300))


def _print_not_compared(h: RoundHistory) -> None:
    for s in h.steps:
        if not s.comparable:
            _say(cell(f"round {shown(s.before)} → {shown(s.after)} not compared: "
                      f"{shown(s.not_compared_reason or '')}"))


def _json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def run_rounds(args: argparse.Namespace) -> int:
    from roofline_tui.core.api import all_kernel_series, kernel_series, round_summary_rows

    h, code = _load("rounds", args)
    if h is None:
        return code
    if args.kernel:
        name = args.kernel
        for r in h.rounds:
            for k in r.kernels:
                if k.short_name == args.kernel:
                    name = k.name
        s = kernel_series(h, name)
        if s is None:
            return failure("rounds", f"kernel {shown(args.kernel, limit=80)} not found")
        if args.json:
            _json(s.model_dump(mode="json"))
            return 0
        from roofline_tui.cli.table import Column, print_table

        print_table(
            [Column("round"), Column("head"), Column("t/launch ms", "right"),
             Column("%gpu", "right"), Column("vs prev", "right"), Column("vs baseline", "right"),
             Column("predicted (this round)", "right"), Column("measured vs prev", "right"),
             Column("verdict")],
            [[cell(p.label, 40), "yes" if p.is_head else ("–" if not p.present else "no"),
              _f(p.t_ms, ".6f"), _f(p.pct_gpu_time, ".2f"), _f(p.delta_t_pct_vs_prev, "+.1f"),
              _f(p.delta_t_pct_vs_baseline, "+.1f"), _f(p.attainable_speedup, ".3f"),
              _f(p.measured_speedup_vs_prev, ".3f"), cell(p.verdict or "–")] for p in s.points],
            cell(f"{shown(s.short_name)} ({s.regime}, {s.op_class or '?'})"))
        return 0
    if args.json:
        _json({
            "profile_dir": h.profile_dir,
            "baseline": h.baseline,
            "baseline_is_round0": h.baseline_is_round0,
            "rounds": [r.model_dump(mode="json") for r in round_summary_rows(h)],
            "steps": [s.model_dump(mode="json") for s in h.steps],
            "kernels": [s.model_dump(mode="json") for s in all_kernel_series(h)],
            "problems": h.problems,
        })
        return 0
    print_rounds(h)
    return 0


def run_playbook(args: argparse.Namespace) -> int:
    from roofline_tui.core.api import append_playbook, calibrate, write_priors

    h, code = _load("playbook", args)
    if h is None:
        return code
    try:
        res = append_playbook(args.out, h, skip_noise=args.skip_noise, dry_run=args.dry_run)
    except (OSError, UnicodeDecodeError) as exc:
        return failure("playbook", f"cannot update {shown(args.out)}: "
                       f"{shown(getattr(exc, 'strerror', None) or exc)}")
    cal = calibrate(h.pairs())
    if args.dry_run:
        sys.stdout.write(res.text_added or "nothing new to append\n")
    else:
        print(f"{shown(args.out)}: {len(res.added)} row(s) appended, "
              f"{len(res.already)} already present"
              + (f", {res.skipped_noise} noise pair(s) skipped" if res.skipped_noise else ""),
              flush=True)
    if cal:
        from roofline_tui.cli.table import Column, print_table

        print_table(
            [Column("op class"), Column("prior", "right"), Column("achieved max", "right"),
             Column("achieved mean", "right"), Column("observations", "right"),
             Column("suggested", "right")],
            [[cell(c.op_class), f"{c.prior_target_eff:.3f}", f"{c.max_achieved:.3f}",
              f"{c.mean_achieved:.3f}", str(c.observations), f"{c.suggested_target_eff:.3f}"]
             for c in cal],
            "calibration (achieved fraction of roof after optimisation vs prior)")
    else:
        _say("no calibration observations yet")
    for p in h.pairs():
        if p.contradiction:
            _say(cell(f"CONTRADICTION {shown(p.short_name, limit=60)} "
                      f"({shown(p.round_before)} → {shown(p.round_after)}): "
                      f"{shown(p.verdict_text)}"))
    _print_not_compared(h)
    if args.priors_out is not None and not args.dry_run and not cal:
        _say("no calibration observations: priors file not written")
    elif args.priors_out is not None and not args.dry_run:
        try:
            path = write_priors(args.priors_out, cal, source=str(h.profile_dir))
        except OSError as exc:
            return failure("playbook", f"cannot write {shown(args.priors_out)}: "
                           f"{shown(exc.strerror or exc)}")
        print(f"wrote calibrated priors to {shown(path)}", flush=True)  # unwrapped
    return 0

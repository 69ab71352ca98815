"""``roofline rounds`` and ``roofline playbook``: the rounds of one run, headless.

``roofline rounds PROFILE_DIR`` prints one row per round and the predicted-vs-actual pairs.
``roofline playbook PROFILE_DIR [--out knowledge/backend_playbook.md] [--priors-out FILE]``
appends the pairs to the playbook (idempotently, never rewriting what is there) and prints the
per-op-class calibration; ``--priors-out`` writes calibrated ``target_eff`` values for
``roofline analyze --priors FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from roofline_tui.core.textsafe import printable


def register(sub: argparse._SubParsersAction) -> None:
    from roofline_tui.core.rounds.playbook import DEFAULT_PLAYBOOK

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
    p.add_argument("--out", type=Path, default=DEFAULT_PLAYBOOK, metavar="FILE",
                   help=f"playbook file (default: {DEFAULT_PLAYBOOK})")
    p.add_argument("--priors-out", type=Path, metavar="FILE",
                   help="write calibrated target_eff priors (roofline-priors-v1 JSON) for "
                        "'roofline analyze --priors FILE'")
    p.add_argument("--skip-noise", action="store_true",
                   help="do not record pairs whose isolated change is inside the noise band")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be appended; write nothing")
    p.set_defaults(func=run_playbook)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("profile_dir", type=Path, metavar="PROFILE_DIR",
                   help="directory holding round_0, round_1, ... (each with profile_topN.json)")
    p.add_argument("--env", type=Path, metavar="FILE", help="env_report.json (default: discover)")
    p.add_argument("--model-config", type=Path, metavar="FILE",
                   help="the model's config.json (default: discover)")
    p.add_argument("--peaks", type=Path, metavar="FILE",
                   help="peak table in peaks.md format (default: the bundled one)")
    p.add_argument("--device", metavar="NAME", help="device product or arch (overrides env_report)")


def _error(cmd: str, msg: str, code: int = 2) -> int:
    print(f"roofline {cmd}: error: {msg}", file=sys.stderr)
    return code


def _load(cmd: str, args: argparse.Namespace):
    from roofline_tui.core.rounds.analysis import RoundSources
    from roofline_tui.core.rounds.compare import load_history
    from roofline_tui.core.rounds.layout import round_dirs

    d: Path = args.profile_dir
    if not d.is_dir():
        return None, _error(cmd, f"{printable(str(d))} is not a directory")
    for flag, path in (("--env", args.env), ("--model-config", args.model_config),
                       ("--peaks", args.peaks)):
        if path is not None and not path.is_file():
            return None, _error(cmd, f"{flag} {printable(str(path))}: no such file")
    if not round_dirs(d):
        hint = " (it looks like a round directory; pass its parent)" if (
            d / "profile_topN.json").exists() else ""
        return None, _error(cmd, f"no round_* directories in {printable(str(d))}{hint}")
    sources = RoundSources(env=args.env, model_config=args.model_config, peaks=args.peaks,
                           device=args.device)
    return load_history(d, sources), 0


def _console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def _f(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def print_rounds(h) -> None:
    from rich.table import Table
    from rich.text import Text

    from roofline_tui.core.rounds.series import round_summary_rows

    console = _console()
    t = Table(title=Text(f"rounds of {printable(h.profile_dir)} (baseline {h.baseline})"),
              title_justify="left")
    for col in ("round", "time", "stage", "heads", "GPU time ms", "Δ GPU", "tok/s", "e2e vs prev",
                "contradictions", "note"):
        t.add_column(col)
    for row in round_summary_rows(h):
        e2e = _f(row.e2e_delta_pct_vs_prev, "+.3f")
        if row.e2e_delta_pct_vs_prev is not None:
            e2e += "% (noise)" if row.e2e_noise else "%"
        note = row.not_compared_reason or ""
        t.add_row(str(row.label), row.time_iso or "–", row.stage or "–", str(row.n_heads),
                  _f(row.total_gpu_time_ms, ".1f"),
                  _f(row.delta_total_pct_vs_prev, "+.2f") + ("%" if row.delta_total_pct_vs_prev
                                                            is not None else ""),
                  _f(row.output_throughput_tok_s, ".1f"), e2e, str(row.contradictions),
                  Text(printable(note, limit=80)))
    console.print(t)
    pairs = h.pairs()
    if pairs:
        pt = Table(title="predicted vs actual", title_justify="left")
        for col in ("kernel", "regime", "rounds", "predicted", "measured", "e2e", "verdict"):
            pt.add_column(col)
        for p in pairs:
            pt.add_row(Text(printable(p.short_name, limit=40)), p.regime,
                       f"{p.round_before} → {p.round_after}", _f(p.predicted_speedup, ".3f"),
                       _f(p.measured_speedup, ".3f"),
                       _f(p.e2e_delta_pct, "+.3f") + (" (noise)" if p.e2e_noise else ""),
                       p.verdict.upper() if p.contradiction else p.verdict)
        console.print(pt)
    for s in h.steps:
        if not s.comparable:
            console.print(Text(f"round {s.before} → {s.after} not compared: "
                               f"{printable(s.not_compared_reason or '')}"))
    for prob in h.problems:
        console.print(Text(f"note: {printable(prob, limit=200)}"))


def run_rounds(args: argparse.Namespace) -> int:
    from roofline_tui.core.rounds.series import all_kernel_series, kernel_series, round_summary_rows

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
            return _error("rounds", f"kernel {printable(args.kernel, limit=80)} not found", 1)
        if args.json:
            sys.stdout.write(json.dumps(s.model_dump(mode="json"), indent=2) + "\n")
            return 0
        from rich.table import Table
        from rich.text import Text

        t = Table(title=Text(f"{printable(s.short_name)} ({s.regime}, {s.op_class or '?'})"),
                  title_justify="left")
        for col in ("round", "head", "t/launch ms", "%gpu", "vs prev", "vs baseline",
                    "predicted (this round)", "measured vs prev", "verdict"):
            t.add_column(col)
        for p in s.points:
            t.add_row(str(p.label), "yes" if p.is_head else ("–" if not p.present else "no"),
                      _f(p.t_ms, ".6f"), _f(p.pct_gpu_time, ".2f"),
                      _f(p.delta_t_pct_vs_prev, "+.1f"), _f(p.delta_t_pct_vs_baseline, "+.1f"),
                      _f(p.attainable_speedup, ".3f"), _f(p.measured_speedup_vs_prev, ".3f"),
                      p.verdict or "–")
        _console().print(t)
        return 0
    if args.json:
        doc = {
            "profile_dir": h.profile_dir,
            "baseline": h.baseline,
            "baseline_is_round0": h.baseline_is_round0,
            "rounds": [r.model_dump(mode="json") for r in round_summary_rows(h)],
            "steps": [s.model_dump(mode="json") for s in h.steps],
            "kernels": [s.model_dump(mode="json") for s in all_kernel_series(h)],
            "problems": h.problems,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 0
    print_rounds(h)
    return 0


def run_playbook(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from roofline_tui.core.rounds.playbook import append_playbook, calibrate, write_priors

    h, code = _load("playbook", args)
    if h is None:
        return code
    try:
        res = append_playbook(args.out, h, skip_noise=args.skip_noise, dry_run=args.dry_run)
    except (OSError, UnicodeDecodeError) as exc:
        return _error("playbook", f"cannot update {printable(str(args.out))}: "
                      f"{getattr(exc, 'strerror', None) or exc}", 1)
    cal = calibrate(h.pairs())
    console = _console()
    if args.dry_run:
        sys.stdout.write(res.text_added or "nothing new to append\n")
    else:
        console.print(Text(f"{printable(str(args.out))}: {len(res.added)} row(s) appended, "
                           f"{len(res.already)} already present"
                           + (f", {res.skipped_noise} noise pair(s) skipped"
                              if res.skipped_noise else "")))
    t = Table(title="calibration (achieved fraction of roof after optimisation vs prior)",
              title_justify="left")
    for col in ("op class", "prior", "achieved max", "achieved mean", "observations", "suggested"):
        t.add_column(col)
    for c in cal:
        t.add_row(c.op_class, f"{c.prior_target_eff:.3f}", f"{c.max_achieved:.3f}",
                  f"{c.mean_achieved:.3f}", str(c.observations), f"{c.suggested_target_eff:.3f}")
    if cal:
        console.print(t)
    else:
        console.print("no calibration observations yet")
    contradictions = [p for p in h.pairs() if p.contradiction]
    for p in contradictions:
        console.print(Text(f"CONTRADICTION {printable(p.short_name, limit=60)} "
                           f"({p.round_before} → {p.round_after}): {printable(p.verdict_text)}"))
    for s in h.steps:
        if not s.comparable:
            console.print(Text(f"round {s.before} → {s.after} not compared: "
                               f"{printable(s.not_compared_reason or '')}"))
    if args.priors_out is not None and not args.dry_run and not cal:
        console.print(Text("no calibration observations: priors file not written"))
    elif args.priors_out is not None and not args.dry_run:
        try:
            write_priors(args.priors_out, cal, source=str(h.profile_dir))
        except OSError as exc:
            return _error("playbook", f"cannot write {printable(str(args.priors_out))}: "
                          f"{exc.strerror or exc}", 1)
        console.print(Text(f"wrote calibrated priors to {printable(str(args.priors_out))}"))
    return 0

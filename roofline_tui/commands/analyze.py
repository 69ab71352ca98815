"""``roofline analyze ROUND_DIR``: headless analysis, artifact written beside the Top-N."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roofline_tui.core.analyze import DEFAULT_HEAD_THRESHOLD_PCT, DEFAULT_MAX_HEADS, AnalyzeOptions
from roofline_tui.core.artifact import Artifact, artifact_to_json
from roofline_tui.core.rounds.analysis import (
    RoundSources,
    skill_disabled,
    write_artifact,
    write_csv,
)
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.layout import TOPN_NAME
from roofline_tui.core.textsafe import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="analyse one round directory and write profile_roofline.json + .md",
        description=(
            "Analyse the head kernels of ROUND_DIR/profile_topN.json against the device's "
            "roofline and write profile_roofline.json and profile_roofline.md beside it. "
            "Bad input never fails the run: problems are recorded in the artifact."
        ),
    )
    add_round_arguments(p)
    p.add_argument("--head-threshold", type=float, default=DEFAULT_HEAD_THRESHOLD_PCT,
                   metavar="PCT", help="analyse entries with pct_gpu_time >= PCT (default 5)")
    p.add_argument("--max-heads", type=int, default=DEFAULT_MAX_HEADS, metavar="N",
                   help="analyse at most N heads (default 8)")
    p.add_argument("--json", action="store_true", help="also print the artifact JSON to stdout")
    p.add_argument("--csv", action="store_true",
                   help="also write profile_roofline.csv (one row per entry, the dashboard "
                        "tables' columns) beside the artifact, atomically")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any input problem, degraded entry or error was recorded")
    p.add_argument("--priors", type=Path, metavar="FILE",
                   help="calibrated target_eff priors (roofline-priors-v1, from 'roofline playbook "
                        "--priors-out'); stated in the artifact's target_eff_source")
    p.add_argument("--plot", action="store_true",
                   help="also write the roofline chart profile_roofline.svg beside the artifact "
                        "(needs the plot extra: pip install 'roofline_tui[plot]')")
    p.add_argument("--png", action="store_true",
                   help="also write profile_roofline.png (implies --plot)")
    p.set_defaults(func=run)


def add_round_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared by analyze and dash: where the inputs come from."""
    p.add_argument("round_dir", type=Path, metavar="ROUND_DIR" if p.prog.endswith("analyze")
                   else "PROFILE_DIR")
    p.add_argument("--env", type=Path, metavar="FILE", help="env_report.json (default: discover)")
    p.add_argument("--model-config", type=Path, metavar="FILE",
                   help="the model's config.json (default: discover)")
    p.add_argument("--peaks", type=Path, metavar="FILE",
                   help="peak table in peaks.md format (default: the bundled one)")
    p.add_argument("--device", metavar="NAME",
                   help="device product or arch, e.g. H200, MI325X, gfx950 (overrides env_report)")
    p.add_argument("--shapes", type=Path, metavar="DIR",
                   help="stage B: Kernel Extractor task dirs (default: EVAL_DIR/kernels/*_task/)")
    p.add_argument("--counters", type=Path, nargs="+", metavar="FILE", default=[],
                   help="stage C: counter files (rocprofv3 CSV or rocpd .db, rocprof-compute "
                        "pmc_perf.csv or roofline-v1 JSON, ncu CSV/.ncu-rep; default: "
                        "ROUND_DIR/counters/)")


def sources_from_args(args: argparse.Namespace) -> RoundSources:
    return RoundSources(env=args.env, model_config=args.model_config, peaks=args.peaks,
                        device=args.device, shapes=getattr(args, "shapes", None),
                        counters=list(getattr(args, "counters", None) or []))


def _usage_error(msg: str) -> int:
    print(f"roofline analyze: error: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    round_dir: Path = args.round_dir
    if not round_dir.is_dir():
        return _usage_error(f"{printable(str(round_dir))} is not a directory")
    if args.max_heads < 0 or args.head_threshold < 0:
        return _usage_error("--max-heads and --head-threshold must be >= 0")
    for flag, path in (("--env", args.env), ("--model-config", args.model_config),
                       ("--peaks", args.peaks)):
        if path is not None and not path.is_file():
            return _usage_error(f"{flag} {printable(str(path))}: no such file")
    sources = sources_from_args(args)
    disabled = skill_disabled(round_dir, sources)
    if disabled:  # spec §6 L0: emit nothing, behave as if this tool did not exist
        print(f"roofline analyze: {disabled}: analysis skipped, nothing written", file=sys.stderr)
        return 0
    options = AnalyzeOptions(head_threshold_pct=args.head_threshold, max_heads=args.max_heads)
    if getattr(args, "priors", None) is not None:
        from roofline_tui.core.rounds.playbook import PriorsError, load_priors

        try:
            options.target_eff_overrides, options.target_eff_source = load_priors(args.priors)
            options.priors_path = args.priors
        except PriorsError as exc:
            return _usage_error(f"--priors {exc}")
    result = analyze_round_with_history(round_dir, sources, options)
    artifact = result.artifact
    if result.display_only:  # never replace a stored artifact with an empty one
        print(f"roofline analyze: no {TOPN_NAME} in {printable(str(round_dir))}; kept the "
              "existing profile_roofline.json as it is", file=sys.stderr)
        if args.json:
            sys.stdout.write(artifact_to_json(artifact))
        return 1 if args.strict else 0
    write_plot_for(args, artifact, round_dir)
    try:
        json_path, md_path = write_artifact(artifact, round_dir)
        if getattr(args, "csv", False):
            write_csv(artifact, round_dir)
    except OSError as exc:
        print(f"roofline analyze: cannot write the artifact into {printable(str(round_dir))}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(artifact_to_json(artifact))
    else:
        print_summary(artifact, json_path)
    problems = len(artifact.skill_errors) + len(artifact.degraded)
    if not result.topn_found:
        print(f"roofline analyze: no {TOPN_NAME} in {printable(str(round_dir))}; wrote an empty "
              "artifact", file=sys.stderr)
    elif problems:
        first = artifact.skill_errors[0] if artifact.skill_errors else (
            f"{artifact.degraded[0].name}: {artifact.degraded[0].reason}")
        print(f"roofline analyze: {problems} problem(s) recorded in the artifact; first: "
              f"{printable(first, limit=200)}", file=sys.stderr)
    if args.strict and (problems or not result.topn_found):
        return 1
    return 0


def print_summary(artifact: Artifact, json_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from roofline_tui.core.markdown import flags_of
    from roofline_tui.core.units import fixed as fmt_num
    from roofline_tui.core.units import pct as fmt_pct
    from roofline_tui.core.units import rate as fmt_rate

    console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)
    p = artifact.peaks
    title = Text(
        f"{artifact.gfx or 'unknown arch'} · stage {artifact.stage} · HBM "
        f"{fmt_rate(p.hbm_bw_bytes_s, 'B/s')} · peaks {p.source}/{p.confidence}"
    )
    table = Table(title=title, title_justify="left")
    for col, justify in (("#", "right"), ("kernel", "left"), ("%gpu", "right"),
                         ("bound", "left"), ("roofline", "right"), ("speedup", "right"),
                         ("gain", "right"), ("headroom", "left"), ("route", "left"),
                         ("gain rank", "right"), ("flags", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    gain_rank = {s: i for i, s in enumerate(artifact.ranking_by_expected_gain, 1)}
    for i, short in enumerate(artifact.ranking_by_pct, 1):
        e = artifact.entry(short)
        if e is None:
            continue
        roof = fmt_pct(e.roofline_pct) + ("!" if e.suspect else "")
        table.add_row(
            str(i), Text(printable(e.short_name, limit=40)), fmt_num(e.pct_gpu_time, 2),
            e.bound_type, roof, fmt_num(e.attainable_speedup, 2, "×"),
            fmt_num(e.expected_e2e_gain_pct, 2, "%"), e.headroom_class,
            Text(str(e.route or "–")), str(gain_rank.get(short, "–")),
            Text(", ".join(f for f in flags_of(e) if f != "advisory") or "–"),
        )
    console.print(table)
    console.print(Text(f"wrote {json_path} and {json_path.with_suffix('.md').name}"))


def write_plot_for(args: argparse.Namespace, artifact: Artifact, round_dir: Path) -> None:
    """``--plot``/``--png``: the roofline image beside the artifact, recorded in it as
    ``plot_file`` (so the markdown embeds it). A missing matplotlib or an unwritable directory
    costs one line on stderr; the artifact is still written and the exit code is unchanged."""
    if not (getattr(args, "plot", False) or getattr(args, "png", False)):
        return
    from roofline_tui.plot import PlotUnavailable, write_plot

    try:
        paths = write_plot(artifact, round_dir, png=bool(getattr(args, "png", False)))
    except PlotUnavailable as exc:
        print(f"roofline analyze: no roofline image: {exc}", file=sys.stderr)
        return
    except OSError as exc:
        print(f"roofline analyze: no roofline image: cannot write into "
              f"{printable(str(round_dir))}: {exc.strerror or exc}", file=sys.stderr)
        return
    artifact.plot_file = paths[0].name
    if len(paths) > 1:
        artifact.plot_png = paths[1].name

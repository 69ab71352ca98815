"""``roofline analyze ROUND_DIR``: headless analysis, artifact written beside the Top-N."""

from __future__ import annotations

import argparse
import difflib
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.cli.args import (
    add_analysis_arguments,
    add_path,
    add_source_arguments,
    options_from_args,
    shown,
    sources_from_args,
    usage_error,
)

if TYPE_CHECKING:
    from roofline_tui.core.artifact import Artifact
    from roofline_tui.core.reading import RankView


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "analyze",
        help="analyse one round directory and write profile_roofline.json + .md",
        description=(
            "Analyse the head kernels of ROUND_DIR/profile_topN.json against the device's "
            "roofline and write profile_roofline.json and profile_roofline.md beside it. "
            "Bad input never fails the run: problems are recorded in the artifact. A stored "
            "profile_roofline.json is never replaced when the round has no profile_topN.json."
        ),
    )
    add_path(p, "round_dir", need="dir", metavar="ROUND_DIR")
    add_source_arguments(p)
    add_analysis_arguments(p)
    p.add_argument("--json", action="store_true", help="also print the artifact JSON to stdout")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any input problem, degraded entry or error was recorded, "
                        "or when nothing was analysed")
    p.add_argument("--plot", action="store_true",
                   help="also write the roofline chart profile_roofline.svg beside the artifact "
                        "(needs the plot extra: pip install 'roofline_tui[plot]')")
    p.add_argument("--png", action="store_true",
                   help="also write profile_roofline.png (implies --plot)")
    p.add_argument("--csv", action="store_true",
                   help="also write profile_roofline.csv (one row per entry, the dashboard "
                        "tables' columns) beside the artifact, atomically")
    p.set_defaults(func=run)


def _say(msg: str) -> None:
    print(f"roofline analyze: {msg}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    # the engine: imported here, once the arguments are known to be sound
    from roofline_tui.core import api
    from roofline_tui.core.artifact import artifact_to_json
    from roofline_tui.core.layout import ARTIFACT_JSON, TOPN_NAME

    round_dir: Path = args.round_dir
    refused = profile_dir_problem(round_dir)
    if refused:  # a profile directory, not a round: write nothing
        return usage_error("analyze", refused)
    device_refused = device_problem(args)
    if device_refused:
        return usage_error("analyze", device_refused)
    sources = sources_from_args(args)
    reads = api.Reads()  # env_report parsed once, for the L0 check and the analysis
    disabled = api.disabled(round_dir, sources, reads=reads)
    if disabled:  # spec §6 L0: emit nothing, behave as if this tool did not exist
        _say(f"{disabled}: analysis skipped, nothing written")
        return 0
    options, code = options_from_args("analyze", args)
    if options is None:
        return code
    result = api.analyze(round_dir, sources, options, reads=reads)
    artifact = result.artifact
    refusal = api.write_refusal(result)  # never replace a stored artifact with an empty one
    if refusal is not None and refusal.kind == "display_only":
        _say(f"no {TOPN_NAME} in {shown(round_dir)}; kept the existing {ARTIFACT_JSON} as it is")
        if args.json:
            sys.stdout.write(json_for_stdout(artifact_to_json(artifact)))
        return 1 if args.strict else 0
    if refusal is not None:
        # a stored artifact the reader refuses (NaN, an entry without a name, not a file...):
        # still never replaced by an empty one
        _say(f"no {TOPN_NAME} in {shown(round_dir)} and the stored {ARTIFACT_JSON} cannot be "
             f"shown ({shown(refusal.detail, limit=160)}); left it as it is, "
             "nothing written")
        return 1 if args.strict else 0
    write_plot_for(args, artifact, round_dir)
    ranks = api.ranks_of(result)  # several ranks: each entry's spread across them
    try:
        json_path, _md_path = api.write(artifact, round_dir, ranks)
        if args.csv:
            api.write_table(artifact, round_dir, ranks)
    except OSError as exc:
        _say(f"cannot write the artifact into {shown(round_dir)}: {shown(exc.strerror or exc)}")
        return 1
    if args.json:
        sys.stdout.write(json_for_stdout(artifact_to_json(artifact)))
    else:
        print_summary(artifact, json_path, ranks)
    problems = len(artifact.skill_errors) + len(artifact.degraded)
    if not result.topn_found:
        _say(f"no {TOPN_NAME} in {shown(round_dir)}; wrote an empty artifact")
    elif problems:
        first = actionable_first([str(e) for e in artifact.skill_errors] + [
            f"{d.name}: {d.reason}" for d in artifact.degraded])
        _say(f"{problems} problem(s) recorded in the artifact; first: {shown(first, limit=200)}")
    if args.strict and (problems or not result.topn_found):
        return 1
    return 0


KERNEL_WIDTH = 48  # the kernel column of the table analyze prints


def print_summary(artifact: Artifact, json_path: Path, ranks: RankView | None = None) -> None:
    """The rankings as a plain-text table, every string from a file shown through the
    sanitiser; a round of several ranks (``ranks``) gets a spread column: the slowest rank's
    time per launch over the median rank's, and which rank it is."""
    from roofline_tui.cli.table import Column, print_table
    from roofline_tui.core import reading
    from roofline_tui.core.labels import row_labels
    from roofline_tui.core.units import fixed as fmt_num
    from roofline_tui.core.units import pct as fmt_pct
    from roofline_tui.core.units import rate as fmt_rate

    p = artifact.peaks
    title = shown(
        f"{artifact.gfx or 'unknown arch'} · stage {artifact.stage} · HBM "
        f"{fmt_rate(p.hbm_bw_bytes_s, 'B/s')} · peaks {p.source}/{p.confidence}"
    )
    columns = [Column("#", "right"), Column("kernel"), Column("%gpu", "right"), Column("bound"),
               Column("roofline", "right"), Column("speedup", "right"), Column("gain", "right"),
               Column("headroom"), Column("route"), Column("gain rank", "right"),
               Column("flags")]
    several = reading.several_ranks(ranks)
    if several is not None:
        columns.insert(-1, Column(f"{several.unit} spread", "right"))
    gain_rank = {s: i for i, s in enumerate(artifact.ranking_by_expected_gain, 1)}
    ranked = [(i, short, artifact.entry(short))
              for i, short in enumerate(artifact.ranking_by_pct, 1)]
    shown_rows = [(i, short, e) for i, short, e in ranked if e is not None]
    # the one row-label rule (core.labels): the recorded op and shape, cut in the middle, no
    # two rows the same
    names = row_labels([e for _, _, e in shown_rows], KERNEL_WIDTH)
    rows: list[list[str]] = []
    for (i, short, e), name in zip(shown_rows, names, strict=True):
        row = [
            str(i), name, fmt_num(e.pct_gpu_time, 2),
            shown(e.bound_type), fmt_pct(e.roofline_pct) + ("!" if e.suspect else ""),
            fmt_num(e.attainable_speedup, 2, "×"), fmt_num(e.expected_e2e_gain_pct, 2, "%"),
            shown(e.headroom_class), shown(e.route or "–"), str(gain_rank.get(short, "–")),
            shown(", ".join(reading.row_flags(e)) or "–"),
        ]
        if several is not None:
            row.insert(-1, reading.spread_text(several.spread_of(e), several.unit))
        rows.append(row)
    print_table(columns, rows, title)
    print_levers(artifact)
    for line in reading.step_split_lines(artifact):  # the step as a whole
        print(shown(f"step: {line}", limit=600))
    for join in artifact.counter_joins:  # stage C: what each counter file was applied to
        print(shown(reading.counter_join_line(join), limit=600))
    print(f"wrote {shown(json_path)} and {shown(json_path.with_suffix('.md').name)}")
    # the headline answer, last: what a pipeline's `tail -1` reads
    print(shown(reading.next_target_of(artifact).line), flush=True)


def print_levers(artifact: Artifact, per_head: int = 2) -> None:
    """Each head's first levers (by pct_gpu_time order), with what they are expected to gain;
    every lever, its evidence and source are in the .md and the artifact."""
    lines: list[str] = []
    for i, short in enumerate(artifact.ranking_by_pct, 1):
        e = artifact.entry(short)
        if e is None or not e.levers:
            continue
        for lv in e.levers[:per_head]:
            lines.append(shown(f"{i}  {lv.name}: {lv.action} → {lv.expected_effect}", limit=400))
    if lines:
        print("levers (first per head; all with evidence and source in the .md):")
        for line in lines:
            print(f"  {line}")


def json_for_stdout(text: str) -> str:
    """JSON text as stdout can hold it: unchanged when its encoding can, else every non-ASCII
    character as a JSON ``\\uXXXX`` escape (still the same JSON value; the stream's own
    fallback, ``\\xNN``, is not JSON)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass

    def escape(ch: str) -> str:
        code = ord(ch)
        if code < 0x10000:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return "".join(ch if ord(ch) < 128 else escape(ch) for ch in text)


def profile_dir_problem(path: Path) -> str | None:
    """Why ``path`` is a profile directory (``round_*`` inside, what ``dash`` takes) rather than
    one round, with the commands that take it; None when it is not one."""
    from roofline_tui.core.layout import TOPN_NAME, round_dirs

    if (path / TOPN_NAME).exists():
        return None
    found = round_dirs(path)
    if not found:
        return None
    names = ", ".join(shown(r.name) for r in found[:6])
    more = f" and {len(found) - 6} more" if len(found) > 6 else ""
    example = shlex.quote(shown(found[-1]))
    return (f"{shown(path)} is a profile directory ({len(found)} round"
            f"{'s' if len(found) != 1 else ''}: {names}{more}), not a round; analyse one with "
            f"`roofline analyze {example}` or watch them all with "
            f"`roofline dash {shlex.quote(shown(path))}`")


# What a user can fix, most useful first: a missing device, a missing model config, a missing
# workload; then everything else in the order recorded.
_ACTIONABLE = (
    ("device", ("--device", "gfx", "peak", "device")),
    ("config", ("config.json",)),
    ("workload", ("isl", "osl", "workload", "env_report")),
)


def actionable_first(problems: list[str]) -> str:
    """The problem the one-line summary names: the first that a flag or a file fixes (device,
    then model config, then workload), else the first recorded."""
    for _kind, words in _ACTIONABLE:
        for p in problems:
            low = p.lower()
            if any(w in low for w in words):
                return p
    return problems[0] if problems else ""


def device_problem(args: argparse.Namespace) -> str | None:
    """``--device`` that names nothing in the peak table (neither a product nor an arch with a
    default section): the reason, with the nearest names; None when it matches or is not
    given. A peak table that cannot be read is the analysis's problem (recorded), not this."""
    device = (args.device or "").strip()
    if not device:
        return None
    from roofline_tui.core.peaks import (
        load_peak_table,
        match_product,
        normalize_arch,
        normalize_product,
    )

    sections, _ = load_peak_table(args.peaks)
    if not sections or match_product(device, sections) is not None:
        return None
    arch = normalize_arch(device)
    if any(s.gfx == arch and (s.default or not s.product) for s in sections):
        return None
    known: dict[str, str] = {}  # normalised -> as the table spells it
    for sec in sections:
        for name in (sec.product, sec.gfx):
            key = normalize_product(name) if name else None
            if key and name:
                known.setdefault(key, name)
    wanted = normalize_product(device) or device.lower()
    near = [known[k] for k in difflib.get_close_matches(wanted, list(known), n=5, cutoff=0.6)]
    archs = sorted({s.gfx for s in sections if s.gfx})
    hint = (f"; did you mean {', '.join(shown(n) for n in near)}?" if near
            else f"; the table knows the archs {', '.join(shown(a) for a in archs)} "
                 f"(`roofline devices` lists its {len(sections)} products)")
    table = shown(args.peaks) if args.peaks else "the bundled peaks.md"
    return f"--device '{shown(device)}' matches no product or arch in {table}{hint}"


def write_plot_for(args: argparse.Namespace, artifact: Artifact, round_dir: Path) -> None:
    """``--plot``/``--png``: the roofline image beside the artifact, recorded in it as
    ``plot_file`` (so the markdown embeds it). Whatever goes wrong with the image (no
    matplotlib, an unwritable directory, a drawing error) costs one line on stderr; the
    artifact is still written and the exit status is unchanged."""
    if not (args.plot or args.png):
        return
    # the image writer (matplotlib is imported inside it): only with --plot/--png
    from roofline_tui.core.plot import PlotUnavailable, write_plot

    try:
        paths = write_plot(artifact, round_dir, png=args.png)
    except PlotUnavailable as exc:
        _say(f"no roofline image: {shown(exc)}")
        return
    except OSError as exc:
        _say(f"no roofline image: cannot write into {shown(round_dir)}: "
             f"{shown(exc.strerror or exc)}")
        return
    except Exception as exc:  # noqa: BLE001 - L5: the image never costs the artifact
        _say(f"no roofline image: {type(exc).__name__}: {shown(exc, limit=200)}")
        return
    artifact.plot_file = paths[0].name
    if len(paths) > 1:
        artifact.plot_png = paths[1].name

"""``roofline calibrate``: measure this GPU's ceilings and write them as a ``peaks.md`` section.

Building the parser imports nothing but the shared argument helpers: the measurement package,
PyTorch and rich are imported by :func:`run`, and PyTorch only once the output path is known to
be writable. The measurement runs watched (:func:`~roofline_tui.calibrate.sweep.run_watched`):
a device call that does not return by the budget plus a margin ends the run, and what was
measured before it is written, with a warning line saying so. Exit status: 0 written; 1 no
PyTorch, no GPU, a backend that cannot describe the device, an output that may not be
written, or nothing measured (one line on stderr each, nothing written); 2 a usage error; 130
Ctrl-C (nothing written).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import TYPE_CHECKING

from roofline_tui.cli.args import add_path, failure, non_negative_int, shown

if TYPE_CHECKING:
    from pathlib import Path

    from roofline_tui.calibrate.sweep import Backend, Calibration, Clock, SweepSettings
    from roofline_tui.core.peaks import PeakSection

DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp8": "fp8", "float8": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
}
DEFAULT_DTYPES = ("bf16", "fp16", "fp8")
MAX_SECONDS = 3600.0
# the sweep's defaults (roofline_tui.calibrate.sweep DEFAULT / QUICK), stated without importing
# it; tests/cli/test_calibrate.py checks that they agree
DEFAULT_SECONDS_HELP = "60"
QUICK_SECONDS_HELP = "10"


def dtype_list(text: str) -> tuple[str, ...]:
    """``--dtypes``: a comma-separated subset of bf16, fp16, fp8 (torch spellings accepted)."""
    out: list[str] = []
    for part in text.split(","):
        word = part.strip().lower()
        if not word:
            continue
        canon = DTYPE_ALIASES.get(word)
        if canon is None:
            raise argparse.ArgumentTypeError(
                f"unknown dtype {part.strip()!r}; choose from bf16, fp16, fp8")
        if canon not in out:
            out.append(canon)
    if not out:
        raise argparse.ArgumentTypeError("expected at least one of bf16, fp16, fp8")
    return tuple(out)


def seconds_arg(text: str) -> float:
    """``--seconds``: a finite number of seconds, above 0 and at most an hour."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected seconds above 0 and at most {MAX_SECONDS:.0f}, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure this GPU's matmul and HBM ceilings into a peaks.md section",
        description=(
            "Measure the roofline ceilings of this GPU and write them as a peaks.md section "
            "(source: measured) for 'roofline analyze --peaks FILE': per dtype the best rate "
            "of a bounded MAMF-style sweep of matmul shapes (multiples of 256; it stops when "
            "the best has held for a number of shapes in a row, or when the time is up), and "
            "the stream bandwidth of a large device-to-device copy (2 x size bytes moved). "
            "Needs PyTorch with CUDA or ROCm: pip install 'roofline_tui[calibrate]'. "
            "Output rule: without --out the section goes to ./peaks.measured.md, and an "
            "existing file there is never replaced (the run stops before measuring); a file "
            "named with --out is created, or replaced if it exists. The file is written "
            "atomically, and nothing is written when the run is interrupted."
        ),
    )
    add_path(p, "--out", need="new-file", default=None, metavar="FILE",
             help="where to write the section (default ./peaks.measured.md, never replaced; "
                  "a file named here is replaced)")
    p.add_argument("--quick", action="store_true",
                   help=f"a short run, about {QUICK_SECONDS_HELP} s, fewer repeats per shape")
    p.add_argument("--seconds", type=seconds_arg, default=None, metavar="N",
                   help=f"time budget of the whole measurement (default {DEFAULT_SECONDS_HELP}, "
                        f"{QUICK_SECONDS_HELP} with --quick; PyTorch's start-up not counted)")
    p.add_argument("--device-index", type=non_negative_int, default=0, metavar="I",
                   help="GPU to measure, as PyTorch numbers them (default 0)")
    p.add_argument("--dtypes", type=dtype_list, default=DEFAULT_DTYPES, metavar="LIST",
                   help="comma-separated dtypes to sweep (default bf16,fp16,fp8; a dtype the "
                        "GPU lacks is skipped with the reason)")
    p.set_defaults(func=run)


def open_backend(args: argparse.Namespace, settings: SweepSettings) -> tuple[Backend, Clock]:
    """The device to measure and the clock the budget runs on (tests replace this)."""
    from roofline_tui.calibrate.torch_backend import open_torch_backend

    return open_torch_backend(args.device_index, settings.timing), time.monotonic


def _command_line(args: argparse.Namespace) -> str:
    words = ["roofline", "calibrate"]
    if args.quick:
        words.append("--quick")
    if args.seconds is not None:
        words += ["--seconds", f"{args.seconds:g}"]
    if args.device_index:
        words += ["--device-index", str(args.device_index)]
    if tuple(args.dtypes) != DEFAULT_DTYPES:
        words += ["--dtypes", ",".join(args.dtypes)]
    return " ".join(words)


def run(args: argparse.Namespace) -> int:
    # the measurement package (and through it the engine's peak helpers): only to run
    from roofline_tui.calibrate.section import (
        choose_output,
        data_sheet_for,
        render_section,
        write_section,
    )
    from roofline_tui.calibrate.sweep import RunStalled, run_watched, settings_for
    from roofline_tui.calibrate.torch_backend import CalibrateUnavailable
    from roofline_tui.core.peaks import load_peak_table, parse_peaks_md

    choice = choose_output(args.out)
    if choice.problem:  # before PyTorch starts and before a minute is spent measuring
        return failure("calibrate", choice.problem)
    settings = settings_for(quick=args.quick, seconds=args.seconds)
    try:
        backend, clock = open_backend(args, settings)
    except CalibrateUnavailable as exc:
        return failure("calibrate", shown(exc, limit=400))

    try:
        if sys.stderr.isatty():
            cal, stalled = _run_with_bar(backend, settings, args, clock)
        else:
            cal, stalled = run_watched(backend, settings, dtypes=args.dtypes, clock=clock)
    except RunStalled as exc:
        return failure("calibrate", f"{shown(exc, limit=300)}; nothing written")
    except Exception as exc:  # noqa: BLE001 - a backend that cannot describe its device
        text = " ".join(str(exc).split()) or type(exc).__name__
        return failure("calibrate", f"the device could not be measured "
                       f"({type(exc).__name__}: {shown(text, limit=200)}); nothing written")

    if cal.copy is None:
        return failure("calibrate", "the device-to-device copy could not be timed "
                       f"({shown(cal.copy_error or 'no result', limit=200)}); nothing written")
    if not cal.measured:
        why = "; ".join(f"{r.dtype}: {r.skipped or (r.errors[0] if r.errors else 'no shape')}"
                        for r in cal.dtypes) or "no dtype requested"
        return failure("calibrate", f"no matmul rate was measured ({shown(why, limit=300)}); "
                       "nothing written")
    sheet, sheet_note = data_sheet_for(cal.device, load_peak_table(None)[0])
    text = render_section(cal, sheet=sheet, sheet_note=sheet_note,
                          command=_command_line(args))
    sections, _problems = parse_peaks_md(text)
    if len(sections) != 1:  # never write a section the loader would not read
        return failure("calibrate", "internal error: the section does not parse "
                       f"({shown('; '.join(_problems) or 'no section', limit=200)}); "
                       "nothing written")
    try:
        path = write_section(choice.path, text, replace=choice.replace)
    except FileExistsError:
        return failure("calibrate", f"{shown(choice.path)} appeared while measuring and is not "
                       "replaced unless named with --out; nothing written")
    except OSError as exc:
        return failure("calibrate", f"cannot write {shown(choice.path)}: "
                       f"{shown(exc.strerror or exc)}")
    print_summary(cal, path, sheet)
    if stalled:
        print(f"roofline calibrate: warning: {stalled}; {shown(path)} holds what was measured "
              "before it", file=sys.stderr)
    return 0


def _run_with_bar(backend: Backend, settings: SweepSettings, args: argparse.Namespace,
                  clock: Clock) -> tuple[Calibration, str | None]:
    """The run (watched) with a rich progress bar on stderr (a terminal only): the bar is the
    time budget; its text the phase and the best rate so far."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline_tui.calibrate.sweep import ProgressEvent, run_watched

    columns = (TextColumn("{task.description:>8}", markup=False), BarColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[note]}", markup=False))
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("calibrate", total=settings.seconds, note="starting")

        def on(ev: ProgressEvent) -> None:
            bar.update(task, completed=min(ev.elapsed_s, ev.budget_s), description=ev.phase,
                       note=shown(ev.message, limit=100))

        cal, stalled = run_watched(backend, settings, dtypes=args.dtypes, clock=clock,
                                   progress=on)
        bar.update(task, completed=settings.seconds)
    return cal, stalled


def print_summary(cal: Calibration, path: Path, sheet: PeakSection | None) -> None:
    """What was measured, beside the bundled table's figures for the same part when it has
    them (the data sheet and the published MAMF measurement: ratios, not verdicts), then what
    the loader makes of the written file (the §8.2 check and any entry it dropped)."""
    from roofline_tui.cli.table import Column, print_table
    from roofline_tui.core.peaks import load_peak_table, resolve_peaks

    def versus(value: float, ref: float | None) -> str:
        return f"{value / ref:.0%}" if ref else "–"

    rows: list[list[str]] = []
    for r in cal.dtypes:
        if r.best is None:
            why = r.skipped or (r.errors[0] if r.errors else "no shape was timed")
            rows.append([r.dtype, "–", "–", f"skipped: {shown(why, limit=120)}", "–", "–"])
            continue
        published = sheet.measured_flops.get(r.dtype) if sheet is not None else None
        rows.append([r.dtype, f"{r.best.flops_s / 1e12:.1f} TFLOP/s", str(r.best.shape),
                     f"{r.tried} shapes, {shown(r.stopped)}",
                     versus(r.best.flops_s, sheet.flops.get(r.dtype) if sheet else None),
                     versus(r.best.flops_s, published.flops if published else None)])
    if cal.copy is not None:
        rows.append(["HBM", f"{cal.copy.bytes_s / 1e12:.3g} TB/s stream",
                     f"{cal.copy.nbytes / (1 << 30):.2f} GiB copy", "read + write",
                     versus(cal.copy.bytes_s, sheet.hbm_bw_bytes_s if sheet else None), "–"])
    dev = cal.device
    stack = f"HIP {dev.hip}" if dev.hip else f"CUDA {dev.cuda}"
    title = shown(f"{dev.name} ({dev.arch}, device {dev.index}; torch {dev.torch}, {stack}) "
                  f"measured in {cal.elapsed_s:.0f} s", limit=300)
    print_table([Column("what"), Column("ceiling", "right"), Column("at"), Column("search"),
                 Column("of data sheet", "right"), Column("of published", "right")], rows, title)
    if sheet is None:
        print("the bundled table has no data sheet for this part: the memory roof written is "
              "the measured stream rate")
    sections, problems = load_peak_table(path)
    if sections:
        peaks = resolve_peaks(sections, gfx=sections[0].gfx)
        if peaks.compute_check:
            print(f"compute check: {shown(peaks.compute_check, limit=300)}")
    for problem in problems:
        print(f"note: {shown(problem, limit=300)}")
    print(f"wrote {shown(path)}; use it with: roofline analyze ROUND_DIR --peaks {shown(path)}",
          flush=True)

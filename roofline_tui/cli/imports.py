"""``roofline import {torch,rocprofv3,nsys}``: raw profiler output -> ``profile_topN.json``.

The importers themselves live in ``roofline_tui.importers``; this is only their command line.
Each command imports its importer when it runs. Bad input exits 1 with one line; a missing
input file too (the importers' contract); anything that is not a regular file, or an ``--out``
that is not a directory, is a usage error (exit 2) and is never opened.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.cli.args import (
    add_path,
    failure,
    non_negative_int,
    positive_int,
    shown,
    usage_error,
)

if TYPE_CHECKING:
    from roofline_tui.importers.finish import ConfigChoice

# importers.common.DEFAULT_TOP; building the parser does not import the importers (the tests
# check that the two agree)
DEFAULT_TOP_HELP = "25"


def _add_common(p: argparse.ArgumentParser) -> None:
    """The options every import kind takes: where to write, the model, how many, replace."""
    add_path(p, "--out", need="new-dir", required=True, metavar="ROUND_DIR",
             help="round directory to write profile_topN.json (+ .md) into")
    model = p.add_mutually_exclusive_group()
    add_path(model, "--model-config", need="file", metavar="FILE",
             help="the served model's config.json: copied into ROUND_DIR (with "
                  "config.source.json saying where from), so analyze and the dashboard "
                  "never need it again")
    model.add_argument("--model", metavar="ORG/NAME", default=None,
                       help="the served model's Hugging Face repo id: its config.json is "
                            "taken from the local Hugging Face cache (offline) and copied "
                            "into ROUND_DIR. Without this and --model-config the model is "
                            "looked up in that cache from what the trace records (a field "
                            "naming it; its nn.Module classes narrowed by the GEMM weight "
                            "dims): copied only when exactly one cached config agrees")
    p.add_argument("--top", type=positive_int, default=None,
                   help=f"number of kernels to keep (default {DEFAULT_TOP_HELP})")
    p.add_argument("--force", action="store_true",
                   help="replace an existing ROUND_DIR/profile_topN.json (a copy of the "
                        "old one is saved first, as profile_topN.json.prev, then .prev.1, "
                        ".prev.2, ...: no earlier copy is replaced; if it cannot be saved "
                        "nothing is written, exit 1); without it an existing Top-N is "
                        "never replaced: one line, exit 1, nothing written")


def _add_torch(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``roofline import torch``: one trace or several ranks, workers, steps, captures."""
    t = kinds.add_parser("torch", help="PyTorch profiler (Kineto) chrome trace, .json or .gz")
    add_path(t, "trace", need="file-or-dir", nargs="+", metavar="TRACE.json[.gz]",
             help="a trace; or several ranks of one run: their traces, or a directory of them "
                  "(…rank<r>…, rank-<r>, -TP-<r> names, or rank_<r>/ sub-directories)")
    _add_common(t)
    t.add_argument("--rank", type=non_negative_int, default=None, metavar="R",
                   help="with several ranks: the rank whose Top-N is written (default: the "
                        "slowest, most GPU time); every entry records its spread across ranks")
    workers = t.add_mutually_exclusive_group()
    workers.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                         help="with several ranks: read N of them at once in worker processes "
                              "(default: the CPUs this process may use, no more than the ranks "
                              "and than the available memory holds); the Top-N is the same "
                              "whatever N")
    workers.add_argument("--dask", default=None, metavar="ADDRESS",
                         help="with several ranks: send each rank's import to the workers of "
                              "the Dask cluster whose scheduler is at ADDRESS "
                              "(tcp://HOST:8786), which read the traces at the paths given "
                              "(shared storage) and send back each rank's summary; merged "
                              "here, the Top-N is the same as with --jobs 1. Needs the dask "
                              "extra, and this roofline_tui on every worker")
    t.add_argument("--skip-bad-ranks", action="store_true",
                   help="with a directory of ranks: leave out a rank whose trace cannot be read "
                        "(a dangling symlink, a FIFO, a directory, unreadable, damaged) and say "
                        "so in the summary and the Top-N's notes; without it such a rank is an "
                        "error naming it, exit 1, nothing written")
    t.add_argument("--isl", type=non_negative_int, default=None, help="input sequence length")
    t.add_argument("--osl", type=non_negative_int, default=None, help="output sequence length")
    t.add_argument("--conc", type=non_negative_int, default=None, help="benchmark concurrency")
    t.add_argument("--capture-sizes", default="", metavar="N,N,...",
                   help="cudagraph capture sizes (decode M is snapped up to one)")
    t.add_argument("--device-index", type=int, default=None, metavar="I",
                   help="device to keep when the trace holds several")
    add_path(t, "--capture", need="file-or-dir", action="append", default=None,
             metavar="FILE_OR_DIR",
             help="graph-capture trace(s) of the same run (a file, or a directory of them; "
                  "repeatable): replayed kernels take the shapes of their captured launches. "
                  "Default: the capture_traces/ or graph_capture_profile/ layouts beside TRACE")
    t.add_argument("--no-capture-discovery", action="store_true",
                   help="do not look for graph-capture traces beside TRACE")
    steps = t.add_mutually_exclusive_group()
    steps.add_argument("--steps", default=None, metavar="A:B",
                       help="the serving steps to sum: 0-based, half-open, as a Python slice "
                            "(2:10, 3:); default: the automatic steady-state window (the "
                            "longest run of steps whose GPU time stays within ±25%% of their "
                            "regime's median), stated in the Top-N")
    steps.add_argument("--skip-warmup", type=non_negative_int, default=None, metavar="N",
                       help="drop the first N serving steps and sum the rest (replaces the "
                            "automatic window)")
    t.set_defaults(func=run_torch)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser(
        "import", help="build profile_topN.json from raw profiler output",
        description="Build a round's profile_topN.json from a PyTorch trace, a rocprofv3 "
                    "kernel trace / rocpd database, or an nsys cuda_gpu_kern_sum report.")
    kinds = imp.add_subparsers(dest="import_kind", metavar="KIND")

    _add_torch(kinds)

    r = kinds.add_parser("rocprofv3", help="rocprofv3 kernel_trace.csv or rocpd .db")
    add_path(r, "files", need="input", nargs="+", metavar="FILE",
             help="kernel_trace.csv (any version), memory_copy_trace.csv, kernel_stats.csv, "
                  "--summary text, rocpd .db or --output-format json")
    _add_common(r)
    r.add_argument("--device-index", type=int, default=None, metavar="I",
                   help="agent to keep when the profile holds several (the N of 'Agent N')")
    r.set_defaults(func=run_rocprof)

    n = kinds.add_parser("nsys", help="nsys stats output (cuda_gpu_kern_sum, cuda_gpu_trace, "
                                      "console) or an nsys export --type sqlite database")
    add_path(n, "csv", need="input", metavar="FILE",
             help="cuda_gpu_kern_sum / cuda_gpu_trace CSV, nsys stats or nsys profile "
                  "--stats=true console text, or run.sqlite from nsys export --type sqlite")
    _add_common(n)
    n.add_argument("--device-index", type=int, default=None, metavar="I",
                   help="GPU to keep when the profile holds several (the deviceId)")
    n.set_defaults(func=run_nsys)

    rp = kinds.add_parser("rpd", help="rocmProfileData trace (.rpd, also gzipped) or its "
                                      "rpd2tracing JSON export")
    add_path(rp, "rpd", need="input", metavar="FILE",
             help="trace.rpd[.gz] (SQLite) or the JSON array rpd2tracing.py writes")
    _add_common(rp)
    rp.add_argument("--device-index", type=int, default=None, metavar="I",
                    help="GPU to keep when the trace holds several (rpd's gpuId)")
    rp.set_defaults(func=run_rpd)

    pr = kinds.add_parser("proton", help="Triton Proton profile (hatchet JSON)")
    add_path(pr, "hatchet", need="input", metavar="FILE",
             help="the .hatchet (JSON) file proton.finalize() writes")
    _add_common(pr)
    pr.add_argument("--device-index", type=int, default=None, metavar="I",
                    help="device to keep when the profile holds several (Proton's device_id)")
    pr.set_defaults(func=run_proton)

    imp.set_defaults(func=lambda _args: _usage(imp))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _top(args: argparse.Namespace) -> int:
    from roofline_tui.importers.common import DEFAULT_TOP

    return DEFAULT_TOP if args.top is None else int(args.top)


def _finish(doc: dict[str, Any], out: Path, tool: str, device: Any,
            notes: list[str] | None = None, workload: dict[str, int] | None = None,
            *, force: bool = False, args: argparse.Namespace | None = None,
            traces: list[Path] | None = None, captures: list[Path] | None = None) -> int:
    """Write the round (and its env_report.json) and print what the importer says about it
    (its lines are already sanitised).

    Writes come last: an existing ``profile_topN.json`` (the baseline of the round's history)
    is refused without ``force`` before anything is written (exit 1); the summary is built
    before the Top-N is written, so nothing that could fail stands between the write and the
    lines printed after it (which the output layer never lets fail). With ``force`` the
    replaced Top-N is saved *before* the new one is written, under a name no earlier save has
    (``profile_topN.json.prev``, then ``.prev.1``, ``.prev.2``, …: every baseline is kept), in
    full and fsynced; a save that fails ends the import (exit 1) with nothing written, so a
    full disk or a kill at any moment leaves the old Top-N in place or in its copy.

    Without ``--model``/``--model-config`` (and no config in the round yet) the model is
    looked up from what the trace records (``importers.model_search``: the Top-N, the headers
    of ``traces``, the module names of ``captures``; the local Hugging Face cache, offline)."""
    from roofline_tui.core.store import (
        MAX_READ_BYTES,
        ReadProblem,
        check_regular,
        read_bytes,
        write_new_numbered,
    )
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.finish import choose_model_config, finish_import, summary

    try:  # the named model config is checked before anything is written
        config = (choose_model_config(getattr(args, "model_config", None),
                                      getattr(args, "model", None)) if args is not None
                  else None)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))
    topn = Path(out) / "profile_topN.json"
    previous: bytes | None = None
    if topn.exists() or topn.is_symlink():
        if not force:
            return failure("import", f"{shown(topn)} exists (the baseline of this round's "
                           "history): nothing written; pass --force to replace it (a copy of "
                           "the old one is kept as profile_topN.json.prev[.N])")
        why = check_regular(topn)
        if why is None:
            try:
                previous = read_bytes(topn, max_bytes=MAX_READ_BYTES)
            except ReadProblem as exc:
                why = exc.reason
        if why is not None:
            return failure("import", f"{shown(topn)}: {shown(why)}: cannot keep a copy "
                           "of it; nothing written")
    summary(doc, topn)  # what is printed after the write is known to be printable first
    missing: str | None = None
    if config is None and args is not None:
        config, missing = looked_up(doc, Path(out), traces or [], captures or [])
    kept: Path | None = None
    if previous is not None:  # saved first: nothing is replaced before its copy is safe
        try:
            kept = write_new_numbered(topn.with_name(topn.name + ".prev"), previous)
        except OSError as exc:
            return failure("import", f"cannot keep a copy of {shown(topn)} before replacing "
                           f"it ({shown(exc.strerror or exc)}): nothing written, the old "
                           "Top-N is unchanged")
    try:
        done = finish_import(doc, out, tool=tool, device=device, notes=notes,
                             workload=workload, config=config, config_missing=missing)
    except ImportProblem as exc:
        if kept is not None:  # the old Top-N is still in place: its copy is not needed
            with contextlib.suppress(OSError):
                kept.unlink()
        return failure("import", shown(exc, limit=500))
    for line in done.stderr:
        print(line, file=sys.stderr)
    for line in done.stdout:
        print(line)
    if kept is not None:
        print(f"kept the replaced Top-N as {shown(kept)}")
    return 0


def looked_up(doc: dict[str, Any], out: Path, traces: list[Path], captures: list[Path]
              ) -> tuple[ConfigChoice | None, str | None]:
    """``(ConfigChoice, None)`` when the model is found from what the trace records,
    ``(None, why not)`` when it is not, ``(None, None)`` when a config is already where
    ``analyze`` finds it (in the round, or beside an env_report.json above it): nothing is
    looked up then."""
    from roofline_tui.core.layout import CONFIG_NAME
    from roofline_tui.importers.device import find_existing_env
    from roofline_tui.importers.model_search import look_up

    env = find_existing_env(out)
    for target in (out / CONFIG_NAME, *((env.parent / CONFIG_NAME,) if env else ())):
        if target.exists() or target.is_symlink():
            return None, None
    try:
        found = look_up(doc, traces=traces, captures=captures)
    except Exception as exc:  # noqa: BLE001 - the look-up never costs the import
        return None, f"the look-up failed ({type(exc).__name__})"
    return found.choice, (None if found.choice is not None else found.reason)


def evidence_files(args: argparse.Namespace, captures: list[Path] | None
                   ) -> tuple[list[Path], list[Path]]:
    """The trace files of ``import torch`` and the graph-capture traces of the same run (those
    given, else those found beside the traces), for the model look-up."""
    from roofline_tui.importers.capture import discover_captures
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.ranks import rank_traces

    try:
        traces = rank_traces(args.trace, [])
    except (ImportProblem, OSError):
        traces = [p for p in args.trace if p.is_file()]
    if captures:
        return traces, list(captures)
    found: list[Path] = []
    if not args.no_capture_discovery:
        for trace in traces[:4]:
            found.extend(p for p in discover_captures(trace) if p not in found)
    return traces, found


def _capture_sizes(text: str) -> list[int]:
    from roofline_tui.importers.common import ImportProblem

    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            if not part.isdigit():
                raise ImportProblem(f"--capture-sizes: {part!r} is not a positive integer")
            out.append(int(part))
    return out


# a directory given to --capture: its trace files (the frameworks' index file is not one)
_CAPTURE_SUFFIXES = (".json", ".json.gz")
_NOT_CAPTURES = ("execution_details.json",)
MAX_CAPTURE_FILES = 256


def _capture_files(given: list[Path]) -> list[Path]:
    """``--capture`` values as files: a file as it is; a directory's ``*.json[.gz]`` files
    (sorted, at most :data:`MAX_CAPTURE_FILES`, regular files only)."""
    out: list[Path] = []
    for path in given:
        if not path.is_dir():
            out.append(path)
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        for name in names:
            child = path / name
            if (name.endswith(_CAPTURE_SUFFIXES) and name not in _NOT_CAPTURES
                    and child.is_file()):
                out.append(child)  # the reader refuses anything not a regular file
    return out[:MAX_CAPTURE_FILES]


def run_torch(args: argparse.Namespace) -> int:
    # the torch importer: only for this command
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.ranks import import_ranks
    from roofline_tui.importers.step_window import StepRequest, StepWindowError, parse_steps
    from roofline_tui.importers.torch import TorchOptions

    reader = None
    if args.dask is not None:
        from roofline_tui.importers.dask_ranks import DaskWorkers, bad_address, missing

        why = missing() or bad_address(args.dask)
        if why is not None:
            return usage_error("import torch", why)
        reader = DaskWorkers(args.dask)
    try:
        request = (parse_steps(args.steps) if args.steps is not None
                   else StepRequest(skip_warmup=args.skip_warmup)
                   if args.skip_warmup is not None else None)
    except StepWindowError as exc:
        return usage_error("import torch", shown(exc, limit=300))
    try:
        captures = _capture_files(args.capture) if args.capture else None
        options = TorchOptions(top=_top(args), isl=args.isl, osl=args.osl, conc=args.conc,
                               capture_sizes=_capture_sizes(args.capture_sizes),
                               captures=captures, discover=not args.no_capture_discovery,
                               steps=request)
        ranked = import_ranks(args.trace, options, rank=args.rank,
                              device_index=args.device_index, skip_bad=args.skip_bad_ranks,
                              jobs=args.jobs, reader=reader)
        result = ranked.result
        if ranked.message:
            print(shown(ranked.message))
        if len(result.device.devices) > 1:
            print(shown(result.device.message))
        workload = {k: v for k in ("isl", "osl", "conc") if (v := getattr(args, k)) is not None}
        traces, found = evidence_files(args, captures)
        return _finish(result.doc, args.out, "torch", result.device_info, result.notes,
                       workload=workload, force=args.force, args=args, traces=traces,
                       captures=found)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))
    except MemoryError:
        return failure("import", "out of memory while reading the trace")


def run_rocprof(args: argparse.Namespace) -> int:
    # the table importers: only for this command
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.rocprof import import_rocprofv3

    try:
        result = import_rocprofv3(args.files, top=_top(args), device_index=args.device_index)
        if result.device_message.startswith("profile has"):
            print(shown(result.device_message))
        return _finish(result.doc, args.out, "rocprofv3", result.device_info, force=args.force,
                       args=args)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))


def run_nsys(args: argparse.Namespace) -> int:
    # the table importers: only for this command
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.nsys import import_nsys

    try:
        result = import_nsys(args.csv, top=_top(args), device_index=args.device_index)
        if result.device_message.startswith("profile has"):
            print(shown(result.device_message))
        return _finish(result.doc, args.out, "nsys", result.device_info, force=args.force,
                       args=args)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))


def run_rpd(args: argparse.Namespace) -> int:
    # the rpd importer: only for this command
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.rpd import import_rpd

    try:
        result = import_rpd(args.rpd, top=_top(args), device_index=args.device_index)
        if result.device_message.startswith("profile has"):
            print(shown(result.device_message))
        return _finish(result.doc, args.out, "rpd", result.device_info, force=args.force,
                       args=args)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))


def run_proton(args: argparse.Namespace) -> int:
    """A Proton profile's Top-N; its flops/bytes metrics travel with the round: the profile is
    copied into ``ROUND_DIR/counters/`` (never over a file already there), where ``analyze``
    reads them as measured values."""
    from roofline_tui.core.store import read_bytes, write_new_file
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.proton import has_metrics, import_proton

    try:
        result = import_proton(args.hatchet, top=_top(args), device_index=args.device_index)
        if result.device_message.startswith("profile has"):
            print(shown(result.device_message))
        code = _finish(result.doc, args.out, "proton", result.device_info, force=args.force,
                       args=args)
    except ImportProblem as exc:
        return failure("import", shown(exc, limit=500))
    if code == 0 and has_metrics(args.hatchet):
        target = Path(args.out) / "counters" / (Path(args.hatchet).stem + ".hatchet")
        try:
            target.parent.mkdir(exist_ok=True)
            if write_new_file(target, read_bytes(args.hatchet)):
                print(f"copied its flops/bytes metrics to {shown(target)} (measured values "
                      "for `roofline analyze`)")
            else:
                print(f"{shown(target)} exists: left as it is")
        except OSError as exc:
            print(f"warning: could not copy the metrics into {shown(target.parent)} "
                  f"({shown(exc.strerror or exc)}); give the file to `roofline analyze "
                  "--counters`", file=sys.stderr)
    return code

"""``roofline ingest DIR --out PROFILE``: each new, complete trace a profiler writes into DIR
becomes the next ``round_N`` of PROFILE, imported and analysed.

What is complete, how files group into sessions (the ranks of one run: one round) and the
state across runs (``PROFILE/.ingest.json``) are :mod:`roofline_tui.ingest`'s; this module
imports (the torch importer, or nsys for an ``.sqlite`` export), writes the round the way
``roofline import`` does, analyses it the way ``roofline analyze`` does and prints one line per
event. A round is built in a hidden ``.round_N.partial-XXXX`` directory inside PROFILE and
renamed into place only once its import and analysis succeeded; DIR is never written to.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.cli.args import (
    add_analysis_arguments,
    add_path,
    add_source_arguments,
    failure,
    non_negative_int,
    positive_int,
    shown,
    usage_error,
)

if TYPE_CHECKING:
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.api import RoundSources
    from roofline_tui.ingest import Check, Session, State, Tracker

# roofline_tui.ingest's defaults; building the parser does not import it (the tests check
# that the two agree)
DEFAULT_SETTLE = 2.0
DEFAULT_TIMEOUT = 60.0
POLL = 0.5


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds >= 0")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ingest",
        help="watch a profiler's trace directory: each new complete trace -> the next round",
        description=(
            "Turn each new, complete trace a profiler writes into DIR (vLLM "
            "VLLM_TORCH_PROFILER_DIR, SGLang SGLANG_TORCH_PROFILER_DIR, "
            "torch.profiler.tensorboard_trace_handler; nsys .sqlite exports) into the next "
            "round_N of PROFILE, imported and analysed. The ranks of one profiling session "
            "become one round. A file is taken once it is whole (a gzip stream to its end, a "
            "JSON document closed) and its size and mtime held still for --settle seconds. "
            "DIR is never written to; PROFILE/.ingest.json records what was ingested, so a "
            "restart imports nothing twice. Keeps watching until Ctrl-C, or with --once "
            "processes what is there and exits (1 when a trace failed)."),
    )
    add_path(p, "trace_dir", need="new-dir", metavar="DIR",
             help="the directory the profiler writes its traces into (watched; never written)")
    add_path(p, "--out", need="new-dir", required=True, metavar="PROFILE",
             help="profile directory to add round_N directories to (created when missing)")
    p.add_argument("--once", action="store_true",
                   help="process the traces there now (waiting for those still being written, "
                        "up to --timeout) and exit; exit 1 when any failed")
    p.add_argument("--settle", type=_seconds, default=DEFAULT_SETTLE, metavar="S",
                   help=f"seconds a file's size and mtime must hold still (default "
                        f"{DEFAULT_SETTLE:g})")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help="seconds after its last change a file still incomplete is given up "
                        f"on: a failure record (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--poll", type=_seconds, default=POLL, metavar="S", help=argparse.SUPPRESS)
    p.add_argument("--top", type=positive_int, default=None,
                   help="number of kernels to keep (default 25)")
    p.add_argument("--isl", type=non_negative_int, default=None, help="input sequence length")
    p.add_argument("--osl", type=non_negative_int, default=None, help="output sequence length")
    p.add_argument("--conc", type=non_negative_int, default=None, help="benchmark concurrency")
    p.add_argument("--verbose", action="store_true",
                   help="also print what the importer and the analysis say about each round")
    add_source_arguments(p)
    add_analysis_arguments(p)
    p.set_defaults(func=run)


def _say(line: str) -> None:
    print(line, flush=True)


def _note(line: str) -> None:
    print(f"roofline ingest: {line}", file=sys.stderr, flush=True)


class _Stop(Exception):
    """SIGTERM/SIGHUP while ingesting: end after removing the round being built."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except (ValueError, OSError):
        return False


def run(args: argparse.Namespace) -> int:
    trace_dir: Path = args.trace_dir
    profile: Path = args.out
    if _inside(profile, trace_dir):
        return usage_error("ingest", f"--out {shown(profile)} is inside {shown(trace_dir)}: "
                           "the trace directory is never written to; put PROFILE elsewhere")
    if args.once and not trace_dir.is_dir():
        return failure("ingest", f"{shown(trace_dir)}: no such directory")
    from roofline_tui.cli.analyze import device_problem
    from roofline_tui.cli.args import options_from_args, sources_from_args

    refused = device_problem(args)
    if refused:
        return usage_error("ingest", refused)
    options, code = options_from_args("ingest", args)
    if options is None:
        return code
    from roofline_tui.importers.common import ImportProblem
    from roofline_tui.importers.finish import choose_model_config

    try:  # the model config named once is copied into every round (with its provenance)
        args.config_choice = choose_model_config(args.model_config, args.model)
    except ImportProblem as exc:
        return failure("ingest", shown(exc, limit=500))
    from roofline_tui import ingest

    try:
        profile.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return failure("ingest", f"cannot create {shown(profile)}: {shown(exc.strerror or exc)}")
    for name in ingest.remove_partials(profile):
        _note(f"removed {shown(name)}, the partial round an interrupted ingest left")
    try:
        state = ingest.State.load(profile)
    except ingest.StateProblem as exc:
        return failure("ingest", f"{shown(exc, limit=300)}; move it away to start over "
                       "(the rounds' source.json still keep their traces from being "
                       "imported twice)")
    state.trace_dir = str(trace_dir.absolute())
    job = _Job(args, profile, trace_dir, state, sources_from_args(args), options)
    saved = _catch_terminate()
    try:
        return job.loop()
    except KeyboardInterrupt:  # Ctrl-C: how a watch ends
        _note("stopped")
        return 130 if args.once else 0
    except _Stop as stop:
        _note("stopped")
        return 128 + stop.signum
    finally:
        for signum, previous in saved:
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(signum, previous)


def _catch_terminate() -> list[tuple[int, Any]]:
    """SIGTERM/SIGHUP raise :class:`_Stop`, so the round being built is removed."""
    saved: list[tuple[int, Any]] = []
    if threading.current_thread() is not threading.main_thread():
        return saved

    def stop(signum: int, _frame: object) -> None:
        raise _Stop(signum)

    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        with contextlib.suppress(OSError, ValueError):
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue
            signal.signal(signum, stop)
            saved.append((signum, previous))
    return saved


def _captures_beside(traces: list[Path]) -> list[Path]:
    """The graph-capture traces the frameworks write beside ``traces`` (what the torch import
    joined), for the model look-up."""
    from roofline_tui.importers.capture import discover_captures

    found: list[Path] = []
    for trace in traces[:4]:
        found.extend(p for p in discover_captures(trace) if p not in found)
    return found


class _Job:
    def __init__(self, args: argparse.Namespace, profile: Path, trace_dir: Path, state: State,
                 sources: RoundSources, options: AnalyzeOptions) -> None:
        from roofline_tui.ingest import Tracker

        self.args = args
        self.profile = profile
        self.trace_dir = trace_dir
        self.state = state
        self.sources = sources
        self.options = options
        self.tracker: Tracker = Tracker(trace_dir, state, settle=args.settle,
                                        timeout=args.timeout)
        self.failed = 0
        self.said_no_model = False
        self._changes: Iterator[object] | None = None

    def loop(self) -> int:
        waiting_said = False
        if not self.args.once:
            _note(f"watching {shown(self.trace_dir)} for traces (Ctrl-C to stop)")
        while True:
            if not self.trace_dir.is_dir():
                if self.args.once:
                    return failure("ingest", f"{shown(self.trace_dir)}: no such directory")
                if not waiting_said:
                    _note(f"waiting for {shown(self.trace_dir)} to appear")
                    waiting_said = True
                time.sleep(self.args.poll)
                continue
            found = self.tracker.poll()
            for path, where in found.duplicates:
                _say(f"skipped {shown(path.name)}: already ingested as {shown(where)}")
            for path, size, reason in found.failed:
                self._fail(path, size, reason)
            for session, checks in found.ready:
                self._ingest(session, checks)
            if self.args.once and not found.ready and not found.pending:
                return 1 if self.failed else 0
            if not found.ready:
                self._pause()

    def _pause(self) -> None:
        """Until something changes in DIR (watchfiles: a trace renamed in is looked at at once,
        not at the next poll) or ``--poll`` seconds pass (the settle and timeout clocks)."""
        if self._changes is None:
            from watchfiles import watch

            self._changes = watch(self.trace_dir, debounce=20, step=10,
                                  rust_timeout=max(1, int(self.args.poll * 1000)),
                                  yield_on_timeout=True, recursive=True)
        try:
            next(self._changes)
        except (OSError, RuntimeError, StopIteration):  # DIR went away, or no watch allowed
            self._changes = None
            time.sleep(self.args.poll)

    def _fail(self, path: Path, size: int, reason: str, sha256: str = "") -> None:
        self.failed += 1
        _say(f"failed: {shown(path.name)}: {shown(reason, limit=300)}")
        self.state.add_failure(path, size, reason, sha256=sha256)

    def _ingest(self, session: Session, checks: list[Check]) -> None:
        from roofline_tui import ingest
        from roofline_tui.core import units

        for p in session.files:
            self.tracker.mark_done(p)
        n = ingest.next_round(self.profile)
        partial = ingest.partial_dir(self.profile, n)
        self.state.begin([p.name for p in session.files])
        try:
            summary = self._build(session, checks, partial)
            if summary is None:
                return
            records = [ingest.source_record(p, c) for p, c in zip(session.files, checks,
                                                                   strict=True)]
            ingest.write_source(partial, importer=session.kind, session=session.key,
                                trace_dir=self.trace_dir, sources=records)
            target = ingest.place_round(partial, self.profile, n)
        finally:
            if partial.exists():
                shutil.rmtree(partial, ignore_errors=True)
            self.state.end()
        # (a stop from here on leaves a whole round: its source.json keeps a restart from
        # importing its traces again even before the state records it)
        line = f"{summary}, next target {self._analyze(target)}"
        names = ", ".join(shown(p.name) for p in session.files)
        ranks = f"{len(session.files)} ranks, " if len(session.files) > 1 else ""
        size = units.nbytes(ingest.total_size(checks))
        _say(f"{target.name} ← {names} ({ranks}{size}): {line}")
        self.state.add_round(target.name, session.kind, session.key, records)

    def _build(self, session: Session, checks: list[Check], partial: Path) -> str | None:
        """Import the session into ``partial`` and analyse it there; None (a failure said and
        recorded) when either cannot be done."""
        from roofline_tui.importers.common import ImportProblem

        try:
            doc = self._import(session, partial)
        except Exception as exc:  # a watch outlives one trace the importer cannot take
            reason = ("out of memory while reading the trace" if isinstance(exc, MemoryError)
                      else str(exc) if isinstance(exc, ImportProblem)
                      else f"the import failed ({type(exc).__name__}: {exc})")
            for p, c in zip(session.files, checks, strict=True):
                self._fail(p, c.size, reason, c.sha256)
            return None
        problem = self._write_analysis(partial)
        if problem is not None:
            for p, c in zip(session.files, checks, strict=True):
                self._fail(p, c.size, f"analysis: {problem}", c.sha256)
            return None
        return f"{len(doc.get('top_kernels') or [])} kernels"

    def _import(self, session: Session, out: Path) -> dict[str, Any]:
        from roofline_tui import ingest
        from roofline_tui.importers.finish import finish_import

        args = self.args
        workload = {k: v for k in ("isl", "osl", "conc") if (v := getattr(args, k)) is not None}
        if session.kind == "rocprofv3":
            from roofline_tui.importers.rocprof import import_rocprofv3

            main_file = session.files[0]
            rocprof = import_rocprofv3([main_file, *ingest.rocprof_companions(main_file)],
                                       **({"top": args.top} if args.top else {}))
            doc, device, notes = rocprof.doc, rocprof.device_info, None
            tool = "rocprofv3"
        elif session.kind == "nsys":
            from roofline_tui.importers.nsys import import_nsys

            nsys = import_nsys(session.files[0], **({"top": args.top} if args.top else {}))
            doc, device, notes = nsys.doc, nsys.device_info, None
            tool = "nsys"
        else:
            from roofline_tui.importers.ranks import import_ranks
            from roofline_tui.importers.torch import TorchOptions

            kw: dict[str, Any] = {"top": args.top} if args.top else {}
            options = TorchOptions(isl=args.isl, osl=args.osl, conc=args.conc, **kw)
            ranked = import_ranks(session.files, options, progress=False)
            doc, device, notes = ranked.result.doc, ranked.result.device_info, ranked.result.notes
            tool = "torch"
            if args.verbose and ranked.message:
                _note(shown(ranked.message))
        config = getattr(args, "config_choice", None)
        missing: str | None = None
        if config is None:  # nothing named: the model is looked up from what the trace records
            from roofline_tui.cli.imports import looked_up

            traces = list(session.files) if tool == "torch" else []
            config, missing = looked_up(doc, out, traces, _captures_beside(traces))
        done = finish_import(doc, out, tool=tool, device=device, notes=notes, workload=workload,
                             config=config, config_missing=missing)
        if missing and not args.verbose and not self.said_no_model:
            self.said_no_model = True  # (once: every round of a run has the same model)
            _note(f"no model config.json for the rounds: looked up from the trace: "
                  f"{shown(missing, limit=600)}; give --model ORG/NAME (from the local Hugging "
                  "Face cache) or --model-config FILE")
        if args.verbose:
            for line in [*done.stdout, *done.stderr]:
                _note(line)
        return doc

    def _write_analysis(self, round_dir: Path) -> str | None:
        """Analyse ``round_dir`` and write its artifact pair; the reason when it cannot."""
        from roofline_tui.core import api

        try:
            result = api.analyze(round_dir, self.sources, self.options)
            if api.write_refusal(result) is not None:
                return "nothing to analyse"
            api.write(result.artifact, round_dir, api.ranks_of(result))
        except OSError as exc:
            return f"cannot write the artifact ({exc.strerror or exc})"
        except Exception as exc:  # a watch outlives one round the engine cannot analyse
            return f"{type(exc).__name__}: {exc}"
        return None

    def _analyze(self, round_dir: Path) -> str:
        """Analyse the placed round again, now with its history (movement against the rounds
        before it), and say its next target. Should that fail, the artifact written in the
        partial directory stays (said in one line)."""
        from roofline_tui.core import api, reading

        try:
            result = api.analyze(round_dir, self.sources, self.options)
            if api.write_refusal(result) is None:
                api.write(result.artifact, round_dir)
        except Exception as exc:
            why = exc.strerror if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            _note(f"{round_dir.name}: the analysis with history was not written "
                  f"({shown(why or exc, limit=200)}); its artifact has no movement")
            return "unknown"
        nt = reading.next_target_of(result.artifact)
        target = shown(nt.label or nt.short_name or "none", limit=80)
        gain = (f" (+{nt.expected_e2e_gain_pct:.2f} % e2e)"
                if nt.expected_e2e_gain_pct is not None else "")
        return f"{target}{gain}"

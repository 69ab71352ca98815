"""``roofline dash PROFILE_DIR`` and ``roofline demo``: the Textual dashboard.

Textual is imported inside the two command functions only: no other command pays for it.

The dashboard needs a terminal on both ends: with a stdin that is not one (``</dev/null`` under
cron, CI or nohup) or a stdout that is not one (``| less``, ``> file``) it says so in one line and
exits 2 before anything starts. Textual draws on stderr's descriptor; when stderr is not the
terminal (``2>/dev/full``, ``2>log``, closed) the screen is drawn on stdout's terminal instead,
for the length of the run, so nothing it writes can fail and block the quit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.cli.args import (
    add_analysis_arguments,
    add_path,
    add_source_arguments,
    options_from_args,
    shown,
    sources_from_args,
)

if TYPE_CHECKING:
    from roofline_tui.app.app import RooflineApp

DEMO_PROFILE = "profile"


def register_dash(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dash",
        help="live dashboard over a profile directory (rounds recomputed as files change)",
        description=(
            "Watch PROFILE_DIR (a directory of round_* directories, or a single round directory) "
            "and show, for the shown round, both rankings (by GPU time and by expected gain) "
            "with a drill-down per kernel. Changed inputs are recomputed live. Keys: e export, "
            "r recompute, / filter, [ ] rounds, ? help, q quit. A PROFILE_DIR that does not "
            "exist yet is waited for."
        ),
    )
    add_path(p, "round_dir", need="new-dir", metavar="PROFILE_DIR")
    add_path(p, "--traces", need="new-dir", metavar="DIR", default=None,
             help="a profiler's output directory (VLLM_TORCH_PROFILER_DIR, "
                  "SGLANG_TORCH_PROFILER_DIR, a tensorboard_trace_handler folder, nsys "
                  "exports): `roofline ingest DIR --out PROFILE_DIR` runs beside the "
                  "dashboard, so each complete trace becomes the next round on screen "
                  "(its output goes to PROFILE_DIR/.ingest.log)")
    p.add_argument("--settle", type=float, default=None, metavar="S",
                   help="with --traces: seconds a trace's size and mtime must hold still "
                        "before it is taken (roofline ingest's --settle)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="with --traces: seconds after its last change an incomplete trace "
                        "becomes a failure (roofline ingest's --timeout)")
    add_path(p, "--against", need="file-or-dir", metavar="OTHER", default=None,
             help="compare the shown round op by op with another run (a profile directory: "
                  "its last round; a round; or a profile_roofline.json): both rankings gain "
                  "B's time over this round's (B/A) and B's roofline %% per op, the Compare "
                  "tab shows both sides and the cause (roofline diff's); live when either "
                  "side changes")
    add_source_arguments(p)
    add_analysis_arguments(p)  # the same settings as analyze: `e` writes what they compute
    p.set_defaults(func=run_dash)


def register_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "demo",
        help="the dashboard on a bundled demo profile, copied into a temporary directory",
        description=(
            "Copy the bundled demo (three rounds modelled on the spec's §9 example; the %GPU "
            "shares differ from §9's) into a temporary "
            "directory and open the dashboard on it. Edit the files there to see live "
            "recompute; the directory is kept and its path printed on exit."
        ),
    )
    add_analysis_arguments(d)
    d.set_defaults(func=run_demo)


def terminal_problem() -> str | None:
    """Why the dashboard cannot run on these streams (None: it can)."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)):
        try:
            ok = stream is not None and os.isatty(stream.fileno())
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            return (f"{name} is not a terminal: the dashboard needs one (in scripts, pipelines "
                    "and cron use `roofline analyze`)")
    return None


def refuse_without_terminal(command: str) -> int:
    """Exit status 2 with a one-line reason when there is no terminal to draw on, else 0."""
    problem = terminal_problem()
    if problem is None:
        return 0
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"roofline {command}: {problem}", file=sys.stderr)
    return 2


@contextlib.contextmanager
def drawable_stderr() -> Iterator[None]:
    """For the run: stderr's descriptor on the terminal (Textual draws there). A stderr that is
    not the terminal is pointed at stdout's terminal and given back afterwards."""
    try:
        fine = sys.__stderr__ is not None and os.isatty(2)
        out = sys.stdout.fileno() if os.isatty(sys.stdout.fileno()) else None
    except (OSError, ValueError, AttributeError):
        fine, out = False, None
    if fine or out is None:  # (no terminal on stdout either: nothing better to draw on)
        yield
        return
    saved: int | None = None
    with contextlib.suppress(OSError):
        saved = os.dup(2)
    old_stderr, old_dunder = sys.stderr, sys.__stderr__
    os.dup2(out, 2)
    term = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = term
    setattr(sys, "__stderr__", term)  # noqa: B010  (Textual draws on sys.__stderr__)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            term.flush()
        sys.stderr = old_stderr
        setattr(sys, "__stderr__", old_dunder)  # noqa: B010
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
        else:
            os.close(2)


def launch(app: RooflineApp) -> None:
    """Run the dashboard on the terminal (SIGTERM and SIGHUP end it like ``q``: the App's).

    A terminal that goes away while Textual starts or stops application mode can make its
    driver's tty calls fail (EIO) out of ``app.run``; with the terminal gone there is nothing
    left to draw a traceback on, and the dashboard ends as ``q`` would (issue 36 item 11). An
    error while the terminal is still there is raised as before."""
    import termios  # (POSIX only, as is the dashboard's driver)

    with drawable_stderr():
        try:
            app.run()
        except (OSError, termios.error):
            if _terminal_present():
                raise


def _terminal_present() -> bool:
    """Whether the dashboard's terminal is still there (a hung-up tty is no tty: EIO)."""
    for fd in (0, 1):
        try:
            if os.isatty(fd):
                return True
        except OSError:
            continue
    return False


def run_dash(args: argparse.Namespace) -> int:
    options, code = options_from_args("dash", args)
    if options is None:
        return code
    if refuse_without_terminal("dash"):
        return 2
    ingest = None
    if args.traces is not None:
        ingest, problem = start_ingest(args)
        if ingest is None:
            print(f"roofline dash: error: {problem}", file=sys.stderr)
            return 1
    # Textual: only for the dashboard
    from roofline_tui.app.app import RooflineApp

    try:
        launch(RooflineApp(args.round_dir, sources_from_args(args), options=options,
                           ingest=ingest is not None, against=args.against))
    finally:
        if ingest is not None:
            stop_ingest(ingest)
    return 0


# the settings a dashboard passes on to the ingest it runs: (option, Namespace attribute)
_PASSED_ON = (("--settle", "settle"), ("--timeout", "timeout"), ("--env", "env"), ("--model-config", "model_config"), ("--model", "model"),
              ("--peaks", "peaks"), ("--device", "device"), ("--shapes", "shapes"),
              ("--head-threshold", "head_threshold"), ("--max-heads", "max_heads"),
              ("--priors", "priors"))
INGEST_LOG = ".ingest.log"


def ingest_argv(args: argparse.Namespace) -> list[str]:
    """``roofline ingest TRACES --out PROFILE`` with the dashboard's own sources and analysis
    settings, so the rounds it writes are analysed as the dashboard analyses them."""
    argv = [sys.executable, "-m", "roofline_tui", "ingest", str(args.traces), "--out",
            str(args.round_dir)]
    for flag, dest in _PASSED_ON:
        value = getattr(args, dest, None)
        if value is not None:
            argv += [flag, str(value)]
    if getattr(args, "counters", None):
        argv += ["--counters", *map(str, args.counters)]
    return argv


def start_ingest(args: argparse.Namespace) -> tuple[subprocess.Popen[bytes] | None, str]:
    """The ingest process beside the dashboard (its output appended to
    ``PROFILE/.ingest.log``), or None and why it could not start."""
    profile = Path(args.round_dir)
    try:
        profile.mkdir(parents=True, exist_ok=True)
        log = open(profile / INGEST_LOG, "ab")  # noqa: SIM115 - handed to the child
    except OSError as exc:
        return None, f"cannot write {shown(profile / INGEST_LOG)}: {shown(exc.strerror or exc)}"
    try:
        proc = subprocess.Popen(ingest_argv(args), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return None, f"cannot start roofline ingest: {shown(exc.strerror or exc)}"
    finally:
        log.close()
    return proc, ""


def stop_ingest(proc: subprocess.Popen[bytes], wait_s: float = 10.0) -> None:
    """Ctrl-C to the ingest (it removes a round it was building), then kill if it hangs."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(OSError):
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)


def copy_demo(dest_root: Path) -> Path:
    """Copy the bundled demo into ``dest_root``; returns its profile directory. Artifacts a
    previous run wrote into the bundled tree, hidden files and caches are left out."""
    from roofline_tui.core.layout import ARTIFACT_JSON, ARTIFACT_MD  # the demo only

    src = resources.files("roofline_tui") / "demo"
    with resources.as_file(src) as src_path:
        shutil.copytree(src_path, dest_root, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(ARTIFACT_JSON, ARTIFACT_MD, ".*",
                                                      "__pycache__"))
    return dest_root / DEMO_PROFILE


def run_demo(args: argparse.Namespace) -> int:
    options, code = options_from_args("demo", args)
    if options is None:  # refused before the temporary copy is made
        return code
    if refuse_without_terminal("demo"):
        return 2
    root = Path(tempfile.mkdtemp(prefix="roofline-demo-"))
    profile = copy_demo(root)
    # Textual: only for the dashboard
    from roofline_tui.app.app import RooflineApp

    app = RooflineApp(profile, watch_root=root, display_name=str(profile), demo=True,
                      options=options)
    try:
        launch(app)
    finally:
        print(f"roofline demo: the demo profile is in {shown(profile)}", file=sys.stdout)
    return 0

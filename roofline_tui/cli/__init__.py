"""The ``roofline`` command line: the one front door.

:data:`COMMANDS` is the table of commands, in the order ``roofline --help`` lists them. Each
command module adds its parser(s) and sets ``func`` (args -> exit status); building the parser
imports nothing heavy (no engine, no rich, no importers, no Textual): each command imports what
it needs when it runs. Exit status: 0 done, 1 the command could not do its job (or ``--strict``
found problems), 2 a usage error, 130 interrupted; SIGTERM/SIGHUP remove the temp file of a write
in progress and end the command with that signal.

Every command prints through :mod:`roofline_tui.cli.output`: a reader of stdout that goes away
(``| head -1``), a closed stdout (``>&-``) or a full device (``>/dev/full``, ``2>/dev/full``)
ends that stream quietly and never changes the exit status the command's work earned; glyphs the
output's encoding cannot hold are written as ASCII look-alikes. Run as the ``roofline`` program
(not by an in-process caller, and not for the dashboard), the start-up objects are frozen out of
the collector and the program ends with ``os._exit`` after the atexit handlers and a flush.

Every path argument is declared with :func:`roofline_tui.cli.args.add_path` and checked by
:func:`roofline_tui.cli.args.check_paths` before the command runs: a FIFO, a device or a symlink
loop is refused in one line and never opened.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import NoReturn

from roofline_tui.cli import output
from roofline_tui.cli.args import check_paths, shown, usage_error
from roofline_tui.core.bulk import CollectorPause

# (a string: argparse's class is generic only to the type checker)
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# (command, "module:function" in roofline_tui.cli that registers it): a command's module is
# imported only when its parser is built, so one command does not import the others
COMMANDS: tuple[tuple[str, str], ...] = (
    ("analyze", "analyze:register"),
    ("schema", "schema:register"),
    ("dash", "dash:register_dash"),
    ("demo", "dash:register_demo"),
    ("import", "imports:register"),
    ("ingest", "ingest:register"),
    ("rounds", "rounds:register_rounds"),
    ("diff", "diff:register"),
    ("playbook", "rounds:register_playbook"),
    ("calibrate", "calibrate:register"),
    ("devices", "devices:register"),
)


def _registrar(where: str) -> Register:
    module, function = where.split(":")
    register: Register = getattr(importlib.import_module(f"roofline_tui.cli.{module}"), function)
    return register


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``roofline`` parser. ``only`` (a command's name) registers that command alone: what
    parsing that command's arguments needs, and all it reports (its usage and errors name
    ``roofline NAME``); without it, or for a name not in :data:`COMMANDS`, every command."""
    from roofline_tui import __version__

    parser = argparse.ArgumentParser(
        prog="roofline",
        description="Roofline headroom for the head kernels of an LLM serving profile.",
    )
    parser.add_argument("--version", action="version", version=f"roofline_tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    known = only is not None and any(name == only for name, _ in COMMANDS)
    for name, where in COMMANDS:
        if known and name != only:
            continue
        _registrar(where)(sub)
        if name not in sub.choices:  # the table and the module disagree: a programming error
            raise RuntimeError(f"command {name!r} was not registered by its module")
    return parser


# the dashboard owns the terminal: its streams, its signals and its exit are Textual's
_TERMINAL_COMMANDS = ("dash", "demo")
# a program running these keeps the cyclic collector off to its exit: `diff` holds two analysed
# rounds at once (about 190,000 tracked objects for two 100,000-row Top-Ns, nearly none in a
# cycle), and each full pass over them costs about half of the op matching; a run leaves
# about 0.4 MiB in cycles, freed at exit
_COLLECTOR_OFF_COMMANDS = ("diff",)


def _invoked_as_program(argv: Sequence[str] | None) -> bool:
    """True when ``main`` runs as the ``roofline`` console script or ``python -m roofline_tui``
    (not for an in-process caller, which passes ``argv`` or is some other program)."""
    if argv is not None:
        return False
    top = sys.modules.get("__main__")
    spec = getattr(top, "__spec__", None)
    if spec is not None and spec.name in ("roofline_tui.__main__", "roofline_tui"):
        return True
    return spec is None and os.path.basename(sys.argv[0] if sys.argv else "") == "roofline"


def _on_terminate(signum: int, _frame: object) -> None:
    """SIGTERM/SIGHUP during a command: remove the temp files of a write in progress, then die
    of the same signal (the parent sees the status it expects)."""
    from roofline_tui.core.store import remove_live_temps

    remove_live_temps()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_signal_handlers() -> list[tuple[int, object]]:
    saved: list[tuple[int, object]] = []
    if threading.current_thread() is not threading.main_thread():
        return saved
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:  # nohup: leave an ignored hang-up ignored
                continue
            signal.signal(signum, _on_terminate)
            saved.append((signum, previous))
        except (OSError, ValueError):
            pass
    return saved


def _fast_exit(code: int) -> NoReturn:
    """End the program now: run the atexit handlers, flush and close stdout/stderr, then
    ``os._exit`` (skipping the interpreter's final cyclic collection of every object the
    command made)."""
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    output.close_all()
    os._exit(code)


# the engine a command imports before it reads a file (its models built): run as the program,
# it is imported before the collector is frozen, so that what it builds (modules, classes,
# models: alive until the end) is frozen with the rest and no later pass walks it. The import
# runs with the collector off (``main``): some 60 passes over a growing heap cost ~8 ms of a
# 200 ms start; the cyclic garbage they would have freed is ~0.2 MiB, frozen too. The front
# desk, core.api, as the commands import it (never core.rounds: an import-linter contract).
_ENGINE: dict[str, tuple[str, ...]] = {
    "analyze": ("roofline_tui.core.api",),
    "rounds": ("roofline_tui.core.api",),
    "playbook": ("roofline_tui.core.api",),
}


def _preload_engine(command: str) -> None:
    import importlib

    for name in _ENGINE.get(command, ()):
        importlib.import_module(name)


def _can_exit_fast() -> bool:
    """No thread still working (a non-daemon thread is joined by a normal exit)."""
    return not any(t.is_alive() and not t.daemon and t is not threading.main_thread()
                   for t in threading.enumerate())


def main(argv: Sequence[str] | None = None) -> int:
    program = _invoked_as_program(argv)
    pause = CollectorPause()
    if program:  # start-up (parser, engine import) runs without collector passes: see _main
        pause.pause()
    output.install()
    terminal = False
    try:
        try:
            code, terminal = _main(argv, pause)
        except BrokenPipeError:  # a stream the output layer does not wrap
            code = 0
    finally:
        output.restore()
        pause.resume(freeze=True)  # still paused: a program at its end (no pass before exit)
    if program and not terminal and _can_exit_fast():
        _fast_exit(code)
    return code


def _main(argv: Sequence[str] | None, pause: CollectorPause | None = None) -> tuple[int, bool]:
    """``(exit status, whether the command owned the terminal)``. ``pause``: the collector
    pause of a program's start-up (ended before the command runs)."""
    pause = pause if pause is not None else CollectorPause()
    words = list(sys.argv[1:] if argv is None else argv)
    # a command named first needs only its own parser (``roofline --help``, a misspelt
    # command or no command at all still get the whole table)
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2, False
    terminal = args.command in _TERMINAL_COMMANDS
    try:
        code = check_paths(args.command, args)
        if code:
            return code, terminal
        if getattr(args, "device", None) and args.command in ("rounds", "playbook", "dash"):
            # every command that takes SOURCES refuses a --device the peak table does not know
            # (analyze checks it itself, after its own directory check)
            from roofline_tui.cli.analyze import device_problem

            refused = device_problem(args)
            if refused:
                return usage_error(args.command, refused), terminal
        if terminal:  # Textual draws on the real streams and handles its own signals
            output.restore()
            pause.resume()
            return int(func(args) or 0), terminal
        saved = _install_signal_handlers()
        if pause.active:  # a program: what start-up made lives until the end, frozen
            _preload_engine(args.command)
        if args.command not in _COLLECTOR_OFF_COMMANDS:
            pause.resume(freeze=True)  # (an in-process caller's garbage is never frozen)
        try:
            return int(func(args) or 0), terminal
        finally:
            for signum, previous in saved:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    signal.signal(signum, previous)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return 130, terminal
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        # a path that passed its check but whose derived paths (a parent, a file inside) pass
        # PATH_MAX or NAME_MAX: the same one-line refusal as any other unusable path
        name = exc.filename if isinstance(exc.filename, str) else ""
        where = f" ({shown(name[:60])}…{shown(name[-40:])})" if name else ""
        return usage_error(args.command, f"a path is too long for this system{where}"), terminal


__all__ = ["COMMANDS", "build_parser", "main"]

"""The ``roofline`` command line: the one front door.

:data:`COMMANDS` is the table of commands, in the order ``roofline --help`` lists them. Each
command module adds its parser(s) and sets ``func`` (args -> exit status); building the parser
imports nothing heavy (no engine, no rich, no importers, no Textual): each command imports what
it needs when it runs. Exit status: 0 done, 1 the command could not do its job (or ``--strict``
found problems), 2 a usage error, 130 interrupted. A reader of stdout that goes away
(``| head -1``) ends the command normally (0, no traceback), and text the output's encoding
cannot hold is written as escapes.

Every path argument is declared with :func:`roofline_tui.cli.args.add_path` and checked by
:func:`roofline_tui.cli.args.check_paths` before the command runs: a FIFO, a device or a symlink
loop is refused in one line and never opened.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from roofline_tui.cli import analyze, calibrate, dash, devices, imports, rounds, schema
from roofline_tui.cli.args import check_paths, usage_error

Register = Callable[[argparse._SubParsersAction], None]

COMMANDS: tuple[tuple[str, Register], ...] = (
    ("analyze", analyze.register),
    ("schema", schema.register),
    ("dash", dash.register_dash),
    ("demo", dash.register_demo),
    ("import", imports.register),
    ("rounds", rounds.register_rounds),
    ("playbook", rounds.register_playbook),
    ("calibrate", calibrate.register),
    ("devices", devices.register),
)


def build_parser() -> argparse.ArgumentParser:
    from roofline_tui import __version__

    parser = argparse.ArgumentParser(
        prog="roofline",
        description="Roofline headroom for the head kernels of an LLM serving profile.",
    )
    parser.add_argument("--version", action="version", version=f"roofline_tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, register in COMMANDS:
        register(sub)
        if name not in sub.choices:  # the table and the module disagree: a programming error
            raise RuntimeError(f"command {name!r} was not registered by its module")
    return parser


def _tolerant_streams() -> None:
    """stdout/stderr write what their encoding cannot hold as escapes (``LC_ALL=C``,
    ``PYTHONIOENCODING=ascii``): a kernel name never costs a traceback after the files are
    written."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: leave it
                pass


def _stdout_gone() -> int:
    """The reader of stdout went away (``| head -1``): a normal end. Later writes, and the
    interpreter's final flush, go to /dev/null instead of raising again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (an in-process caller)
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    try:
        return _main(argv)
    except BrokenPipeError:
        return _stdout_gone()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code = check_paths(args.command, args)
        if code:
            return code
        if getattr(args, "device", None) and args.command in ("rounds", "playbook", "dash"):
            # every command that takes SOURCES refuses a --device the peak table does not know
            # (analyze checks it itself, after its own directory check)
            from roofline_tui.cli.analyze import device_problem

            refused = device_problem(args)
            if refused:
                return usage_error(args.command, refused)
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130


__all__ = ["COMMANDS", "build_parser", "main"]

"""The ``roofline`` command line: subcommands are registered by feature modules."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module exposes ``register(subparsers)``; the parser it adds sets ``func`` (args -> int).
_COMMAND_MODULES: tuple[str, ...] = (
    "roofline_tui.commands.analyze",
    "roofline_tui.commands.schema",
    "roofline_tui.app.commands",
    "roofline_tui.importers.cli",
    "roofline_tui.rounds_cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roofline",
        description="Roofline headroom for the head kernels of an LLM serving profile.",
    )
    from roofline_tui import __version__

    parser.add_argument("--version", action="version", version=f"roofline_tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name or (exc.name and name.startswith(exc.name + ".")):
                continue  # feature not built into this tree
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

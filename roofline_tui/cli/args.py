"""What the commands share: the source and analysis arguments (declared once), the path check
every path argument goes through before anything opens it, and the one-line error printers.

This module is imported to build the parser, so it imports nothing heavy: the engine (through
its front desk, ``core.api``), rich and the importers are imported by the commands that need
them, at the call site. The analysis defaults it states are the engine's own, from the leaf
``core.defaults``.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from roofline_tui.core.defaults import DEFAULT_HEAD_THRESHOLD_PCT, DEFAULT_MAX_HEADS
from roofline_tui.core.store import file_kind
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.api import RoundSources

# What a path argument must be.
#   file       an existing regular file (read)
#   dir        an existing directory (read)
#   new-file   a regular file if it exists (written; created otherwise)
#   new-dir    a directory if it exists (written into; created otherwise)
#   input      an existing regular file, for the importers, whose contract is exit 1 when the
#              input is missing ("bad input"); any other kind of file is still a usage error
Need = Literal["file", "dir", "new-file", "new-dir", "input", "file-or-dir"]


def shown(path: object, limit: int | None = None) -> str:
    """A path (or any string from the user or a file) as it may be printed: control, C1 and
    bidi characters escaped; an undecodable file-name byte shown as ``\\xNN``."""
    if isinstance(path, (bytes, os.PathLike)):
        # a file name's undecodable bytes as \xNN (not as the surrogates Python holds them as)
        text = os.fsencode(path).decode("utf-8", "backslashreplace")
    else:
        text = str(path)
    return printable(text, limit=limit)


def usage_error(cmd: str, msg: str) -> int:
    """One line on stderr; exit status 2 (a usage error)."""
    print(f"roofline {cmd}: error: {msg}", file=sys.stderr)
    return 2


def failure(cmd: str, msg: str) -> int:
    """One line on stderr; exit status 1 (the command could not do its job)."""
    print(f"roofline {cmd}: error: {msg}", file=sys.stderr)
    return 1


# --------------------------------------------------------------------------- path arguments


def add_path(p: argparse._ActionsContainer, *names: str, need: Need, **kw: object) -> None:
    """``add_argument`` for a path: the argument is recorded with what it must be, and
    :func:`check_paths` checks it before the command runs (nothing opens it before)."""
    action = p.add_argument(*names, type=Path, **kw)  # type: ignore[arg-type]
    label = action.option_strings[0] if action.option_strings else str(action.metavar)
    checks = tuple(p.get_default("path_checks") or ())
    p.set_defaults(path_checks=(*checks, (action.dest, label, need)))


# bytes a directory argument must leave below PATH_MAX for a file name inside it (NAME_MAX + '/')
DIR_NAME_ROOM = 256


def _path_max() -> int:
    try:
        return int(os.pathconf("/", "PC_PATH_MAX"))
    except (OSError, ValueError, AttributeError):
        return 4096


def path_problem(path: Path, need: Need) -> tuple[int, str] | None:
    """``(exit status, one-line reason)`` when ``path`` is not what ``need`` asks for; None
    when it is. Only ``stat`` is used: a FIFO or a device is never opened. A path whose
    absolute form is longer than PATH_MAX (a relative one below a deep directory) is refused
    here: every later step that names it absolutely would fail."""
    try:
        absolute = len(os.fsencode(os.path.abspath(path)))
    except (OSError, ValueError):
        absolute = 0
    # a directory must leave room for the names written and read inside it
    room = DIR_NAME_ROOM if need in ("dir", "new-dir", "file-or-dir") else 0
    if absolute + room >= _path_max():
        inside = f" plus {room} for a name inside it" if room else ""
        return 2, (f"path too long (its absolute form is {absolute} bytes{inside}; "
                   f"PATH_MAX is {_path_max()})")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if need in ("new-file", "new-dir"):
            return None
        if need in ("input", "file-or-dir"):
            return 1, "file not found"
        return 2, "no such file or directory"
    except NotADirectoryError:
        if need in ("new-file", "new-dir"):
            return None  # the write will say why it cannot create it
        return 2, "no such file or directory (a parent is not a directory)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return 2, "a symlink loop"
        return 2, f"cannot stat ({exc.strerror or exc})"
    except ValueError:  # an embedded NUL byte
        return 2, "not a valid path"
    if need in ("dir", "new-dir"):
        return None if stat.S_ISDIR(mode) else (2, f"is {file_kind(mode)}, expected a directory")
    if need == "file-or-dir" and stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        return None
    kind = file_kind(mode)
    return 2, ("is not a regular file" if kind == "not a regular file"
               else f"is {kind}, expected a regular file")


def check_paths(cmd: str, args: argparse.Namespace) -> int:
    """Check every path argument the command declared with :func:`add_path`; print the first
    problem in one line and return its exit status (0 when all are fine)."""
    for dest, label, need in getattr(args, "path_checks", ()):
        value = getattr(args, dest, None)
        values: Iterable[Path] = value if isinstance(value, list) else (
            [] if value is None else [value])
        for path in values:
            problem = path_problem(path, need)
            if problem is not None:
                code, reason = problem
                prefix = f"{label} " if label.startswith("-") else ""
                print(f"roofline {cmd}: error: {prefix}{shown(path)}: {reason}", file=sys.stderr)
                return code
    return 0


# --------------------------------------------------------------------------- number arguments


def head_threshold(text: str) -> float:
    """``--head-threshold``: a finite percentage in [0, 100]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


# --------------------------------------------------------------------------- shared arguments


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    """Where a round's inputs come from (each defaults to discovery): every command that reads
    a round takes these."""
    add_path(p, "--env", need="file", metavar="FILE",
             help="env_report.json (default: discover)")
    add_path(p, "--model-config", need="file", metavar="FILE",
             help="the model's config.json (default: discover)")
    p.add_argument("--model", metavar="ORG/NAME",
                   help="the model's Hugging Face repo id: its config.json is taken from the "
                        "local Hugging Face cache (offline; HF_HOME / HF_HUB_CACHE) when no "
                        "config.json is found beside the round (default: env_report's model)")
    add_path(p, "--peaks", need="file", metavar="FILE",
             help="peak table in peaks.md format (default: the bundled one)")
    p.add_argument("--device", metavar="NAME",
                   help="device product or arch, e.g. H200, MI325X, gfx950 (overrides env_report)")
    add_path(p, "--shapes", need="dir", metavar="DIR",
             help="stage B: Kernel Extractor task dirs (default: EVAL_DIR/kernels/*_task/)")
    add_path(p, "--counters", need="file", nargs="+", metavar="FILE", default=[],
             help="stage C: counter files (rocprofv3 CSV or rocpd .db, rocprof-compute "
                  "pmc_perf.csv or roofline-v1 JSON, ncu CSV/.ncu-rep; default: "
                  "ROUND_DIR/counters/)")


def add_analysis_arguments(p: argparse.ArgumentParser) -> None:
    """Which entries are analysed, and with which target_eff: the same for one round and for
    the rounds of a profile."""
    p.add_argument("--head-threshold", type=head_threshold, default=None, metavar="PCT",
                   help="analyse entries with pct_gpu_time >= PCT "
                        f"(default {DEFAULT_HEAD_THRESHOLD_PCT:g})")
    p.add_argument("--max-heads", type=positive_int, default=None, metavar="N",
                   help=f"analyse at most N heads (default {DEFAULT_MAX_HEADS})")
    add_path(p, "--priors", need="file", metavar="FILE",
             help="calibrated target_eff priors (roofline-priors-v1, from 'roofline playbook "
                  "--priors-out'); stated in the artifact's target_eff_source")


def sources_from_args(args: argparse.Namespace) -> RoundSources:
    from roofline_tui.core.api import RoundSources  # the engine: once a command runs

    return RoundSources(env=args.env, model_config=args.model_config, peaks=args.peaks,
                        device=args.device, shapes=args.shapes, counters=list(args.counters),
                        model=args.model)


# the dashboard is started by hand: a --priors file it cannot use is said before it starts
REFUSE_BAD_PRIORS = ("dash", "demo")


def options_from_args(cmd: str, args: argparse.Namespace) -> tuple[AnalyzeOptions | None, int]:
    """The analysis options. A ``--priors`` file that cannot be used (unreadable, an out-of-range
    or non-numeric value, two YAML documents, an integer past the digit limit) degrades to the
    built-in priors with one warning line and the reason recorded in ``options.problems`` (so
    in the artifact's ``skill_errors``); ``dash``/``demo`` refuse it instead: ``(None, 2)``."""
    from roofline_tui.core.analyze import AnalyzeOptions  # the engine: only once a command runs

    options = AnalyzeOptions()
    if args.head_threshold is not None:
        options.head_threshold_pct = args.head_threshold
    if args.max_heads is not None:
        options.max_heads = args.max_heads
    if args.priors is not None:
        # the priors reader (and YAML): only when --priors is given
        from roofline_tui.core.api import PriorsError, load_priors

        options.priors_path = args.priors
        try:
            options.target_eff_overrides, options.target_eff_source = load_priors(args.priors)
        except PriorsError as exc:
            if cmd in REFUSE_BAD_PRIORS:
                return None, usage_error(cmd, f"--priors {shown(exc)}")
            # like a bad --peaks: the built-in priors, with the reason in the artifact's
            # skill_errors (--strict makes it exit 1)
            reason = (f"--priors {shown(exc, limit=240)}: not used; the spec §7 priors apply "
                      "instead")
            options.problems.append(reason)
            options.target_eff_source = f"spec §7 priors ({reason})"
            print(f"roofline {cmd}: warning: {reason}", file=sys.stderr)
    return options, 0

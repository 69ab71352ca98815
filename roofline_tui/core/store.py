"""Atomic writes and careful reads: readers never see a half-written file we produced."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


class ReadProblem(Exception):
    """A file could not be read or parsed; ``str(exc)`` is one line fit for a user."""

    def __init__(self, path: Path, reason: str, *, incomplete: bool = False) -> None:
        super().__init__(f"{path.name}: {reason}")
        self.path = path
        self.reason = reason
        # True when the file looks like it is still being written (empty or truncated JSON).
        self.incomplete = incomplete


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same directory + fsync +
    rename: a reader sees the old file or the new one, never a partial one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} is not valid JSON")


def read_json(path: Path) -> Any:
    """Parse a JSON file; raise :class:`ReadProblem` with a one-line reason on any failure.

    ``NaN``/``Infinity`` literals are rejected (they are not JSON and poison every ratio).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReadProblem(path, "file not found") from None
    except IsADirectoryError:
        raise ReadProblem(path, "is a directory, expected a file") from None
    except PermissionError:
        raise ReadProblem(path, "permission denied") from None
    except OSError as exc:
        raise ReadProblem(path, f"cannot read ({exc.strerror or exc})") from None
    if not raw.strip():
        raise ReadProblem(path, "file is empty (still being written?)", incomplete=True)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReadProblem(path, "not UTF-8 text") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        hint = " (truncated: still being written?)" if truncated else ""
        raise ReadProblem(
            path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{hint}",
            incomplete=truncated,
        ) from None
    except ValueError as exc:
        raise ReadProblem(path, str(exc)) from None
    except RecursionError:
        raise ReadProblem(path, "JSON nested too deeply") from None


def finite_or_none(value: Any) -> float | None:
    """A finite float from ``value`` or ``None`` (bools, strings, NaN and Inf are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None

"""Bounded reads and atomic writes: the one place the engine touches files.

Reads: every file the engine reads goes through :func:`read_bytes` (or :func:`read_text`,
:func:`read_json` built on it). It opens without blocking, refuses anything
that is not a regular file (a FIFO named ``profile_topN.json`` must not hang a run, ``/dev/zero``
must not fill memory), checks the size *before* reading, and reports every failure as a
:class:`ReadProblem` whose text is one line fit for a user. Parsed documents are bounded in
nesting depth, and YAML is loaded without anchors or aliases (an alias bomb expands a few
hundred bytes into gigabytes).

Writes: :func:`atomic_write_bytes` (temp file in the same directory + fsync + rename) so a
reader sees the old file or the new one, never a partial one; :func:`atomic_write_pair` renames
a json + md pair only when both were written; :func:`strict_json_dumps` refuses NaN/Infinity
and writes valid UTF-8 whatever strings it is given.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.textsafe import json_safe, printable, valid_unicode

MiB = 1024 * 1024
# Default ceiling for one input file; the importers' raw traces may pass a larger one.
MAX_READ_BYTES = 256 * MiB
# Small structured inputs (peaks.md, priors, meta.json, serving metrics, env_report): far below
# any real file, far above what a hostile one needs to hurt.
MAX_SMALL_BYTES = 16 * MiB
# Deepest nesting accepted in a JSON or YAML document (real inputs nest < 10 deep).
MAX_DEPTH = 64
# Documents up to this size get the exact depth check before parsing (it costs about as much
# as the parse); larger ones (a 10k-entry Top-N, a trace) rely on the C decoder's recursion
# guard, which stops at Python's recursion limit and is reported the same way.
DEPTH_CHECK_CHARS = 1 << 20
# Most YAML events (scalars, mappings, sequences) accepted in one document.
MAX_YAML_EVENTS = 200_000


class ReadProblem(OSError):
    """A file could not be read or parsed; ``str(exc)`` is one line fit for a user.

    A subclass of :class:`OSError` so callers that already catch read errors keep working.
    """

    def __init__(self, path: Path | str, reason: str, *, incomplete: bool = False) -> None:
        self.path = Path(path)
        self.reason = reason
        self.message = f"{_name(self.path)}: {reason}"
        super().__init__(self.message)
        # True when the file looks like it is still being written (empty or truncated JSON).
        self.incomplete = incomplete

    def __str__(self) -> str:
        return self.message


def _name(path: Path) -> str:
    """The file name for a message, with undecodable bytes and controls made visible."""
    return printable(os.fsdecode(path.name) or str(path), limit=120)


# --------------------------------------------------------------------------- reads


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, for a message: ``a directory``, ``a FIFO
    (named pipe)``, ``a device``, ``a socket``, or ``not a regular file``."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _kind(mode: int) -> str:
    kind = file_kind(mode)
    if kind == "not a regular file":
        return "is not a regular file"
    return f"is {kind}, expected {'a file' if stat.S_ISDIR(mode) else 'a regular file'}"


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, expected a file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"cannot read ({exc.strerror or type(exc).__name__})"


def check_regular(path: Path | str) -> str | None:
    """``None`` when ``path`` is a readable regular file (following symlinks), else the reason.

    Never blocks and never raises: a stat, not an open.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return _os_reason(exc)
    except ValueError:  # embedded NUL in the path
        return "invalid path"
    return None if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)


def read_bytes(path: Path | str, *, max_bytes: int = MAX_READ_BYTES, head: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Opens with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer) and
    checks with ``fstat`` on the open descriptor that it is a regular file and no larger than
    ``max_bytes`` before reading a byte. With ``head=True`` a larger file is not an error: its
    first ``max_bytes`` are returned (for sniffing a format). Raises :class:`ReadProblem`.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReadProblem(path, _os_reason(exc)) from None
    except ValueError:
        raise ReadProblem(path, "invalid path") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadProblem(path, _kind(st.st_mode))
        if st.st_size > max_bytes and not head:
            raise ReadProblem(
                path, f"too large ({_size(st.st_size)}; the limit is {_size(max_bytes)})"
            )
        chunks: list[bytes] = []
        left = max_bytes + 1  # one byte more tells a file that grew past the limit
        while left > 0:
            chunk = os.read(fd, min(left, 4 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except ReadProblem:
        raise
    except OSError as exc:
        raise ReadProblem(path, _os_reason(exc)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        if head:
            return data[:max_bytes]
        raise ReadProblem(path, f"grew past the size limit of {_size(max_bytes)} while read")
    return data


def read_text(
    path: Path | str, *, max_bytes: int = MAX_READ_BYTES, errors: str = "strict"
) -> str:
    """UTF-8 text (a BOM is dropped) of a bounded regular file. ``errors="replace"`` reads any
    encoding; with ``"strict"`` undecodable bytes are a :class:`ReadProblem`."""
    raw = read_bytes(path, max_bytes=max_bytes)
    try:
        return raw.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError:
        raise ReadProblem(path, "not UTF-8 text") from None


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} is not valid JSON")


# what a JSON integer beyond the int() digit limit reads as: larger than any number the
# coercer accepts, so the field it sits in is refused with "a huge integer is too large"
_HUGE_INT = 10**4000


def _parse_int(token: str) -> int:
    if len(token) <= 4000:
        return int(token)
    return -_HUGE_INT if token.startswith("-") else _HUGE_INT


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON ``text`` nests arrays/objects deeper than ``limit``.

    Linear in C: strings are blanked, everything but brackets dropped, then innermost pairs
    are removed one level per pass; a document still holding brackets after ``limit`` passes
    is deeper than ``limit``. Documents with fewer brackets than ``limit`` skip all of it.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    for _ in range(limit):
        if not brackets:
            return False
        shorter = brackets.replace("[]", "").replace("{}", "")
        if len(shorter) == len(brackets):  # unbalanced text: let the parser report it
            return False
        brackets = shorter
    return bool(brackets)


def parse_json_text(
    text: str, path: Path | str, *, max_depth: int = MAX_DEPTH, allow_nan: bool = False
) -> Any:
    """Strict JSON (no NaN/Infinity literals unless ``allow_nan``) nested at most
    ``max_depth`` deep; raises :class:`ReadProblem`."""
    constant: Any = float if allow_nan else _reject_constant
    if not text.strip():
        raise ReadProblem(path, "file is empty (still being written?)", incomplete=True)
    if len(text) <= DEPTH_CHECK_CHARS and depth_exceeds(text, max_depth):
        raise ReadProblem(path, f"JSON nested deeper than {max_depth} levels")
    try:
        try:
            with collector_paused():  # a large document is acyclic: no collector passes
                data = json.loads(text, parse_constant=constant)
        except ValueError as exc:
            if "digits" not in str(exc) or isinstance(exc, json.JSONDecodeError):
                raise
            # an integer longer than Python's int() digit limit: read it as "too large" and
            # let the field's coercion record the problem, instead of refusing the whole file
            data = json.loads(text, parse_constant=constant, parse_int=_parse_int)
        # "\ud800" is a valid JSON escape but not a character: written back as visible text
        # here, once, so no later step meets a string it cannot encode
        return _valid_strings(data) if _SURROGATE_ESCAPE.search(text) else data
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        hint = " (truncated: still being written?)" if truncated else ""
        raise ReadProblem(
            path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}{hint}",
            incomplete=truncated,
        ) from None
    except ValueError as exc:  # NaN/Infinity literal; int() digit limit
        raise ReadProblem(path, printable(exc, limit=160)) from None
    except RecursionError:
        raise ReadProblem(path, "JSON nested too deeply") from None


# a \uD800-\uDFFF escape in JSON text: the document may hold a lone surrogate
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _valid_strings(value: Any) -> Any:
    """``value`` with every string (keys too) made encodable by :func:`valid_unicode`; in
    place and without recursion (the document may nest as deep as the decoder allowed)."""
    if isinstance(value, str):
        return valid_unicode(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = valid_unicode(v)
                elif isinstance(v, (list, dict)):
                    stack.append(v)
        elif isinstance(node, dict):
            for k in list(node):
                v = node[k]
                if isinstance(v, str):
                    v = valid_unicode(v)
                elif isinstance(v, (list, dict)):
                    stack.append(v)
                if isinstance(k, str) and valid_unicode(k) != k:
                    del node[k]
                    node[valid_unicode(k)] = v
                else:
                    node[k] = v
    return value


def read_json(
    path: Path | str, *, max_bytes: int = MAX_READ_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """Parse a JSON file; raise :class:`ReadProblem` with a one-line reason on any failure.

    ``NaN``/``Infinity`` literals are rejected (they are not JSON and poison every ratio). The
    file must be a regular file of at most ``max_bytes``, nested at most ``max_depth`` deep.
    """
    raw = read_bytes(path, max_bytes=max_bytes)
    if not raw.strip():
        raise ReadProblem(path, "file is empty (still being written?)", incomplete=True)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReadProblem(path, "not UTF-8 text") from None
    return parse_json_text(text, path, max_depth=max_depth)


def _yaml_loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml_text(
    text: str, where: str, *, max_depth: int = MAX_DEPTH, max_events: int = MAX_YAML_EVENTS
) -> Any:
    """One YAML document, safe tags only (libyaml's ``CSafeLoader`` when installed), without
    anchors or aliases, nested at most ``max_depth`` deep and at most ``max_events`` nodes.

    The events are checked first (the C parser streams them without recursion), so neither an
    alias bomb nor a deep nesting ever reaches the constructor. Raises ``ValueError`` with a
    one-line reason prefixed by ``where``.
    """
    import yaml

    loader = _yaml_loader()
    depth = events = 0
    try:
        for ev in yaml.parse(text, Loader=loader):
            events += 1
            if events > max_events:
                raise ValueError(f"{where}: more than {max_events} YAML nodes")
            if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None) is not None:
                raise ValueError(f"{where}: YAML anchors and aliases (&a, *a) are not accepted")
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > max_depth:
                    raise ValueError(f"{where}: YAML nested deeper than {max_depth} levels")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except ValueError:
        raise
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())
        raise ValueError(f"{where}: YAML error: {printable(first, limit=120)}") from None
    except (RecursionError, MemoryError, OverflowError) as exc:
        raise ValueError(f"{where}: YAML not loadable ({type(exc).__name__})") from None


# --------------------------------------------------------------------------- writes


def strict_json_dumps(data: Any, **kw: Any) -> str:
    """JSON text that any strict parser accepts: ``allow_nan=False`` (a NaN or infinity left in
    ``data`` is a programming error and raises ``ValueError``), and strings made valid Unicode
    with the characters a terminal would act on written as ``\\uXXXX`` escapes."""
    kw.setdefault("ensure_ascii", False)
    return json_safe(json.dumps(data, allow_nan=False, **kw))


def without_non_finite(value: Any, bad: list[str] | None = None, where: str = "") -> Any:
    """A copy of a JSON-like ``value`` with every NaN/infinity replaced by ``None`` (each place
    appended to ``bad``): what may go through :func:`strict_json_dumps` when the caller would
    rather write ``null`` than fail. Recursive: meant for the shallow documents we build."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            if bad is not None:
                bad.append(where or "value")
            return None
        return value
    if isinstance(value, dict):
        return {k: without_non_finite(v, bad, f"{where}.{k}" if where else str(k))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(v, bad, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically. Lone surrogates are
    written as U+FFFD: the file is always valid UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8", errors="replace"))


def _write_temp(path: Path, data: bytes) -> str:
    """``data`` in a fsynced temp file beside ``path``; returns the temp path."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same directory + fsync +
    rename: a reader sees the old file or the new one, never a partial one."""
    path = Path(path)
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


class WriteProblem(OSError):
    """One file of a pair could not be written; ``path`` names it, ``str(exc)`` is one line."""

    def __init__(self, path: Path, exc: OSError | str) -> None:
        self.path = Path(path)
        why = exc if isinstance(exc, str) else (exc.strerror or type(exc).__name__)
        self.message = f"cannot write {_name(self.path)}: {why}"
        super().__init__(getattr(exc, "errno", None) or 0, self.message)

    def __str__(self) -> str:
        return self.message


def atomic_write_pair(files: Sequence[tuple[Path, str]]) -> list[Path]:
    """Write several files so that either all are replaced or none is.

    Every file is first written in full to a temp file beside its target (a full disk or a
    directory where a file should be fails here, with the old files untouched); only then are
    the temps renamed, in order. A rename failing after the first (rare: the directory changed
    under us) is reported for the file it concerns. Raises :class:`WriteProblem` naming the file
    that failed.
    """
    temps: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            path = Path(path)
            if path.is_dir():
                raise WriteProblem(path, "is a directory")
            try:
                temps.append((_write_temp(path, text.encode("utf-8", errors="replace")), path))
            except OSError as exc:
                raise WriteProblem(path, exc) from None
        done: list[Path] = []
        for tmp, path in temps:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise WriteProblem(path, exc) from None
            done.append(path)
        temps.clear()
        return done
    finally:
        for tmp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

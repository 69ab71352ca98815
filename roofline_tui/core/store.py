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
a json + md pair only when both were written, under a lock; :func:`strict_json_dumps` refuses
NaN/Infinity and writes valid UTF-8 whatever strings it is given. The writers cooperate:

* :func:`write_lock` is an advisory ``fcntl.flock`` on ``.{name}.lock`` beside the target,
  held around every read-modify-write (the playbook append, the artifact pair, priors out);
  the lock file exists only while a writer holds it; a lock path taken by something that
  cannot be locked (a directory, a symlink, a device) refuses the write instead of letting it
  run unlocked;
* a replaced file keeps its mode; a new file gets 0666 less the umask (no fixed chmod);
* temp names are ``.{name}.rl-XXXXXXXX.tmp`` (a hash for a name too long for NAME_MAX, so a
  255-byte target is writable); temps of ours older than an hour (a killed writer's) are
  removed by the next write in that directory, and :func:`remove_live_temps` (the CLI's
  SIGTERM handler) removes those of writes in progress.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.lazy_re import lazy_compile
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


NO_MEMORY = "not enough memory to read it"


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
        # the first read asks for the whole file (and the byte that tells it grew): one buffer,
        # returned as it is, instead of chunks joined into a second copy
        want = st.st_size + 1 if st.st_size else 4 * MiB
        while left > 0:
            chunk = os.read(fd, min(left, want))
            want = 4 * MiB
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except ReadProblem:
        raise
    except OSError as exc:
        raise ReadProblem(path, _os_reason(exc)) from None
    except MemoryError:  # under a memory limit: the file is bad input like any other
        chunks = []
        raise ReadProblem(path, NO_MEMORY) from None
    finally:
        os.close(fd)
    try:
        data = b"".join(chunks)
    except MemoryError:
        chunks = []
        raise ReadProblem(path, NO_MEMORY) from None
    if len(data) > max_bytes:
        if head:
            return data[:max_bytes]
        raise ReadProblem(path, f"grew past the size limit of {_size(max_bytes)} while read")
    return data


def read_text(
    path: Path | str, *, max_bytes: int = MAX_READ_BYTES, errors: str = "strict",
    utf8_only: bool = False,
) -> str:
    """The text of a bounded regular file: UTF-8 (a BOM is dropped), or UTF-16/UTF-32 when the
    file starts with that encoding's byte-order mark (what PowerShell's ``>`` writes).
    ``errors="replace"`` reads any bytes; with ``"strict"`` undecodable bytes are a
    :class:`ReadProblem`. ``utf8_only`` (a file that will be written back as UTF-8, such as the
    playbook) reads UTF-8 alone."""
    raw = read_bytes(path, max_bytes=max_bytes)
    encoding, label = ("utf-8-sig", "UTF-8") if utf8_only else bom_encoding(raw)
    try:
        return raw.decode(encoding, errors=errors).lstrip("\ufeff")
    except UnicodeDecodeError:
        raise ReadProblem(path, f"not {label} text") from None


# byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)


def bom_encoding(raw: bytes) -> tuple[str, str]:
    """``(codec, name for a message)`` of text bytes by their byte-order mark; UTF-8 without
    one. A UTF-32 LE mark followed by text is told from UTF-16 LE by the text's NULs."""
    for bom, codec, label in _BOMS:
        if raw.startswith(bom):
            if codec == "utf-32" and bom == codecs.BOM_UTF32_LE and len(raw) % 4:
                return "utf-16", "UTF-16"  # FF FE 00 00 is also UTF-16 LE text starting U+0000
            return codec, label
    return "utf-8-sig", "UTF-8"


def utf8_of(raw: bytes, *, errors: str = "replace") -> bytes:
    """``raw`` as UTF-8 bytes: text with a UTF-16/UTF-32 byte-order mark re-encoded (for
    readers that look at bytes first, such as a format sniffer); anything else unchanged. A
    character cut at the end of a head sample is dropped with ``errors="replace"``."""
    codec, _ = bom_encoding(raw)
    if codec not in ("utf-16", "utf-32"):
        return raw
    text = raw.decode(codec, errors=errors).lstrip("\ufeff")
    if errors == "replace":
        text = text.rstrip("\ufffd")
    return text.encode("utf-8", errors="replace")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} is not valid JSON")


# what a JSON integer beyond the int() digit limit reads as: larger than any number the
# coercer accepts, so the field it sits in is refused with "a huge integer is too large"
_HUGE_INT = 10**4000


def _parse_int(token: str) -> int:
    if len(token) <= 4000:
        return int(token)
    return -_HUGE_INT if token.startswith("-") else _HUGE_INT


_STRINGS = lazy_compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = lazy_compile(r"[^\[\]{}]+")


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
_SURROGATE_ESCAPE = lazy_compile(r"\\u[dD][89a-fA-F]")


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
    """Parse a JSON file (UTF-8, or UTF-16/UTF-32 with a byte-order mark: PowerShell's
    ``ConvertTo-Json > f.json``); raise :class:`ReadProblem` with a one-line reason on any
    failure.

    ``NaN``/``Infinity`` literals are rejected (they are not JSON and poison every ratio). The
    file must be a regular file of at most ``max_bytes``, nested at most ``max_depth`` deep.
    """
    raw = read_bytes(path, max_bytes=max_bytes)
    if not raw.strip():
        raise ReadProblem(path, "file is empty (still being written?)", incomplete=True)
    codec, label = bom_encoding(raw)  # UTF-8, or UTF-16/32 by its byte-order mark
    try:
        text = raw.decode(codec).lstrip("\ufeff")
    except UnicodeDecodeError:
        raise ReadProblem(path, f"not {label} text") from None
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
    except ValueError as exc:
        if str(exc).startswith(f"{where}: "):  # one of the refusals above
            raise
        # the constructor's own: an integer past Python's int() digit limit, a bad date...
        why = ("an integer longer than Python's digit limit" if "digits" in str(exc)
               else printable(exc, limit=120))
        raise ValueError(f"{where}: YAML value not loadable ({why})") from None
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


# Our temp files: ``.{target name}.rl-{8 hex}.tmp`` beside the target (hidden, so the
# dashboard's watcher ignores them); a target name too long for that is replaced by a hash.
TEMP_TAG = ".rl-"
TEMP_SUFFIX = ".tmp"
_TEMP_EXTRA = 1 + len(TEMP_TAG) + 8 + len(TEMP_SUFFIX)
_OUR_TEMP = lazy_compile(r"^\..+\.rl-[0-9a-f]{8}\.tmp$", re.DOTALL)
# what tempfile.mkstemp made for earlier versions: ``.{target}.{8 of [a-z0-9_]}.tmp``
_LEGACY_TEMP = lazy_compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$", re.DOTALL)
# A temp of ours older than this is what a killed writer left: removed on the next write.
STALE_TEMP_SECONDS = 3600.0
# Entries of one directory looked at for stale temps on a write (a huge directory costs no more).
STALE_SCAN_LIMIT = 10_000
# How long a writer waits for another's lock before it gives up.
LOCK_TIMEOUT_SECONDS = 60.0

# temp files being written right now: removed by remove_live_temps() (a SIGTERM handler)
_live_temps: set[str] = set()
# (lock path, thread) -> (fd, depth): re-entrant in one thread; another thread waits its turn
_held_locks: dict[tuple[str, int], tuple[int, int]] = {}
_locks_guard = threading.Lock()


def _name_max(directory: Path) -> int:
    try:
        return int(os.pathconf(directory if str(directory) else ".", "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _fitting(name: str, extra: int, directory: Path) -> str:
    """``name``, or a hash of it when ``name`` plus ``extra`` bytes would pass NAME_MAX."""
    raw = os.fsencode(name)
    if len(raw) + extra <= _name_max(directory):
        return name
    import hashlib  # (OpenSSL: loaded only for a name this long)

    return "h" + hashlib.sha256(raw).hexdigest()[:20]


def lock_path(path: Path) -> Path:
    """The lock file of ``path``: ``.{name}.lock`` beside it (a hash for a long name)."""
    path = Path(path)
    return path.parent / f".{_fitting(path.name, len('..lock'), path.parent)}.lock"


@contextlib.contextmanager
def write_lock(path: Path, *, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """An advisory exclusive lock (``fcntl.flock``) on the lock file beside ``path``
    (:func:`lock_path`), held for a read-modify-write of ``path``. Writers that take it never
    interleave; a reader needs none (every replace is atomic). Re-entrant within a thread.

    The lock file lives only while a writer holds it: the holder removes it before letting go,
    and a writer that wins a lock checks that the file it locked is still the one at the lock
    path (else it locks the new one), so two writers never hold different files. Where a lock
    cannot be had at all (no ``fcntl``, a read-only directory: the write itself will say why)
    the block runs unlocked; a lock another writer holds past ``timeout`` seconds is a
    :class:`WriteProblem`, and a lock path taken by something that cannot be locked (a
    directory, a symlink, a device: :func:`_not_a_lock`; a FIFO locks like a file) is a
    :class:`LockRefused`; both are raised before the block runs."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    lock = lock_path(path)
    key = (os.path.abspath(lock), threading.get_ident())
    with _locks_guard:
        held = _held_locks.get(key)
        if held is not None:
            _held_locks[key] = (held[0], held[1] + 1)
    if held is not None:  # this process holds it already
        try:
            yield
        finally:
            with _locks_guard:
                fd, depth = _held_locks[key]
                _held_locks[key] = (fd, depth - 1)
        return
    taken = _take_lock(fcntl, lock, Path(path), timeout)
    if taken is None:
        yield  # no lock to be had here; the write reports the directory's problem
        return
    with _locks_guard:
        _held_locks[key] = (taken, 1)
    try:
        yield
    finally:
        with _locks_guard:
            _held_locks.pop(key, None)
        with contextlib.suppress(OSError):
            os.unlink(lock)  # while still held: a waiter finds its file gone and retries
        os.close(taken)  # releases the flock


def _not_a_lock(lock: Path, mode: int | None = None) -> str | None:
    """Why the entry at the lock path ``lock`` cannot serve as a lock: a directory, a symlink
    (dangling or not: the lock is never taken through one), a device, a socket. ``None`` when
    there is none, or it is a regular file or a FIFO (both lock like a file). ``mode``: the
    entry's, when the caller has it already (an ``fstat`` of the open lock)."""
    if mode is None:
        try:
            mode = os.lstat(lock).st_mode
        except (OSError, ValueError):
            return None
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISLNK(mode):
        kind = "is a symlink" if os.path.exists(lock) else "is a dangling symlink"
    else:
        kind = _kind(mode).split(",")[0]
    return (f"its lock file {_name(lock)} {kind}, not a file that can be locked "
            "(nothing written; remove it)")


def _take_lock(fcntl: Any, lock: Path, path: Path, timeout: float) -> int | None:
    """The descriptor of the lock file, flocked; None when no lock can be had here (the
    write will say why). Something at the lock path that is not a lock file (:func:`_not_a_lock`)
    is a :class:`LockRefused`: the write never runs unlocked because of it."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    deadline = time.monotonic() + timeout
    while True:
        why = _not_a_lock(lock)  # looked at before it is opened: a device is never opened
        if why is not None:
            raise LockRefused(path, why)
        try:
            fd = os.open(lock, flags, 0o666)
        except OSError:
            why = _not_a_lock(lock)  # put there between the look and the open
            if why is not None:
                raise LockRefused(path, why) from None
            return None
        try:
            why = _not_a_lock(lock, os.fstat(fd).st_mode)
            if why is not None:
                raise LockRefused(path, why)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise WriteProblem(path, f"another writer has held {_name(lock)} "
                                           f"for {timeout:g} s") from None
                    time.sleep(0.01)
                except OSError:  # a file system without flock: unlocked
                    os.close(fd)
                    return None
            try:
                same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except OSError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)  # the holder before us removed that file: lock the current one


def remove_live_temps() -> None:
    """Remove the temp files of writes in progress and the lock files this process holds
    (for a SIGTERM handler: a killed write leaves nothing behind; the locks die with the
    process)."""
    for tmp in list(_live_temps):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _live_temps.discard(tmp)
    for lock, _thread in list(_held_locks):
        with contextlib.suppress(OSError):
            os.unlink(lock)


def remove_stale_temps(directory: Path, *, older_than: float = STALE_TEMP_SECONDS) -> list[str]:
    """Remove our temp files in ``directory`` last modified more than ``older_than`` seconds
    ago (what a killed writer left): regular files we own, named like ours (or like the
    temps of earlier versions, ``.{name}.XXXXXXXX.tmp`` beside an existing ``name``). Returns
    the names removed; never raises."""
    removed: list[str] = []
    now = time.time()
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        with os.scandir(directory) as it:
            for n, entry in enumerate(it):
                if n >= STALE_SCAN_LIMIT:
                    break
                name = entry.name
                if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
                    continue
                if not _OUR_TEMP.match(name):
                    legacy = _LEGACY_TEMP.match(name)
                    if legacy is None or not os.path.isfile(os.path.join(directory,
                                                                          legacy.group(1))):
                        continue
                if os.path.join(directory, name) in _live_temps:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                    if (not stat.S_ISREG(st.st_mode) or now - st.st_mtime <= older_than
                            or (uid is not None and st.st_uid != uid)):
                        continue
                    os.unlink(entry.path)
                    removed.append(name)
                except OSError:
                    continue
    except OSError:
        pass
    return removed


def _new_temp(path: Path) -> tuple[int, str]:
    """Create (exclusively) an empty temp file beside ``path``: ``(fd, temp path)``. Created
    with mode 0666 less the umask; the caller gives it the target's mode when one exists."""
    directory = path.parent
    base = _fitting(path.name, _TEMP_EXTRA, directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}{TEMP_TAG}{os.urandom(4).hex()}{TEMP_SUFFIX}")
        _live_temps.add(tmp)  # before it exists: a signal between create and record leaks none
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            _live_temps.discard(tmp)
            continue
        except BaseException:
            _live_temps.discard(tmp)
            raise
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(directory))


def _existing_mode(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _write_temp(path: Path, data: bytes) -> str:
    """``data`` in a fsynced temp file beside ``path``; returns the temp path. The temp has the
    mode of the file it will replace, or (a new file) 0666 less the umask."""
    remove_stale_temps(path.parent)
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            mode = _existing_mode(path)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _live_temps.discard(tmp)
        raise
    return tmp


def _replace(tmp: str, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _live_temps.discard(tmp)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same directory + fsync +
    rename: a reader sees the old file or the new one, never a partial one. The mode of a file
    replaced is kept; a new file gets 0666 less the umask."""
    path = Path(path)
    _replace(_write_temp(path, data), path)
    return path


def write_new_file(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only if it does not exist: written in full to a temp
    file beside it (mode 0666 less the umask), then hard-linked into place, so a reader never
    sees a partial file and a file created meanwhile by someone else is never replaced.
    Returns False (nothing written) when ``path`` already existed."""
    path = Path(path)
    tmp = _write_temp(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _live_temps.discard(tmp)
    return True


# How many numbered names past the highest one found are tried before a save gives up.
NUMBERED_TRIES = 1000


def _numbered(path: Path) -> Iterator[Path]:
    """``path``, then ``path.N`` above the highest ``N`` already beside it: the names of
    saved copies in the order they were made (the bare name only while no numbered one
    exists, so the first copy kept is always the oldest)."""
    prefix = path.name + "."
    top = 0
    try:
        with os.scandir(path.parent) as it:
            for n, entry in enumerate(it):
                if n >= STALE_SCAN_LIMIT:
                    break
                tail = entry.name[len(prefix):] if entry.name.startswith(prefix) else ""
                if tail.isascii() and tail.isdigit() and len(tail) < 10:
                    top = max(top, int(tail))
    except OSError:
        pass
    if top == 0:
        yield path
    for k in range(top + 1, top + 1 + NUMBERED_TRIES):
        yield path.with_name(f"{path.name}.{k}")


def _fsync_dir(directory: Path) -> None:
    """Make a new name in ``directory`` durable (best effort: not every system can)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_new_numbered(path: Path, data: bytes) -> Path:
    """Keep ``data`` under the first free name of ``path``, ``path.1``, ``path.2``, … (see
    :func:`_numbered`) and return it; an existing file is never replaced. The bytes are
    written in full and fsynced to one temp file first, then hard-linked into place (a file
    system without hard links gets an exclusive create written and fsynced in place), and the
    directory is fsynced: when this returns the copy survives a crash. Raises ``OSError``
    (nothing left behind) when the copy cannot be made."""
    path = Path(path)
    tmp = _write_temp(path, data)
    try:
        for candidate in _numbered(path):
            try:
                os.link(tmp, candidate)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                if not _create_in_place(candidate, data):
                    continue
            _fsync_dir(path.parent)
            return candidate
        raise FileExistsError(errno.EEXIST, "no free numbered name", str(path))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _live_temps.discard(tmp)


def _create_in_place(path: Path, data: bytes) -> bool:
    """``data`` in a new file ``path`` (exclusive create, fsync); False when ``path`` exists.
    A failed write removes the partial file and raises."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return True


class WriteProblem(OSError):
    """One file of a pair could not be written; ``path`` names it, ``str(exc)`` is one line."""

    def __init__(self, path: Path, exc: OSError | str) -> None:
        self.path = Path(path)
        why = exc if isinstance(exc, str) else (exc.strerror or type(exc).__name__)
        self.message = f"cannot write {_name(self.path)}: {why}"
        super().__init__(getattr(exc, "errno", None) or 0, self.message)

    def __str__(self) -> str:
        return self.message


class LockRefused(WriteProblem):
    """The lock path of ``path`` holds something that cannot be locked (:func:`_not_a_lock`):
    ``str(exc)`` is the whole line, ``strerror`` the reason alone (what a command prints after
    its own "cannot write …:")."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, reason)
        self.strerror = reason


def atomic_write_pair(files: Sequence[tuple[Path, str]]) -> list[Path]:
    """Write several files so that either all are replaced or none is.

    Every file is first written in full to a temp file beside its target (a full disk or a
    directory where a file should be fails here, with the old files untouched); only then are
    the temps renamed, in order. The whole is done under the :func:`write_lock` of the first
    file, so two writers of the same pair never leave one's JSON beside the other's Markdown.
    A rename failing after the first (rare: the directory changed under us) is reported for the
    file it concerns. Raises :class:`WriteProblem` naming the file that failed.
    """
    if not files:
        return []
    temps: list[tuple[str, Path]] = []
    with write_lock(Path(files[0][0])):
        try:
            for path, text in files:
                path = Path(path)
                if path.is_dir():
                    raise WriteProblem(path, "is a directory")
                try:
                    temps.append((_write_temp(path, text.encode("utf-8", errors="replace")),
                                  path))
                except OSError as exc:
                    raise WriteProblem(path, exc) from None
            done: list[Path] = []
            while temps:
                tmp, path = temps[0]
                try:
                    _replace(tmp, path)
                except OSError as exc:
                    temps.pop(0)
                    raise WriteProblem(path, exc) from None
                temps.pop(0)
                done.append(path)
            return done
        finally:
            for tmp, _ in temps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                _live_temps.discard(tmp)

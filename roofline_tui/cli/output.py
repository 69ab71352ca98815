"""The one output layer every command prints through.

:func:`install` wraps ``sys.stdout`` and ``sys.stderr`` for the length of one command:

* a stream that is closed from the start (``>&-``: Python then sets it to ``None``) reads as an
  empty sink, and its file descriptor is held by ``/dev/null`` so that no file the command opens
  later lands on descriptor 1 or 2;
* a write or flush that fails (``EPIPE`` from ``| head -1``, ``ENOSPC`` from ``>/dev/full``,
  ``EIO`` from a terminal that went away) ends that stream quietly: its descriptor is pointed at
  ``/dev/null`` and later writes are dropped. The command goes on and its exit status is the one
  its work earned (the interpreter's final flush can no longer fail and turn it into 120);
* characters the stream's encoding cannot hold (``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` without
  UTF-8 mode) are written as ASCII look-alikes (``─`` as ``-``, ``→`` as ``->``, ``▲`` as ``^``),
  anything else as a ``\\u`` escape, so table rules and arrows stay readable.

:func:`restore` puts the original streams back (in-process callers such as the tests get their
own streams again).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
from typing import TextIO

ERRORS = "roofline-ascii"

# ASCII stand-ins for the glyphs the tables, arrows and messages use.
FALLBACKS: dict[str, str] = {
    "·": ".", "•": "*", "─": "-", "━": "-", "│": "|", "┃": "|", "═": "=",
    "→": "->", "←": "<-", "↑": "^", "↓": "v", "⇒": "=>", "↔": "<->",
    "Δ": "d", "δ": "d", "—": "--", "–": "-", "−": "-", "…": "...",
    "▲": "^", "△": "^", "▴": "^", "▵": "^", "▼": "v", "▽": "v", "▾": "v", "▿": "v",
    "►": ">", "▶": ">", "◄": "<", "◀": "<", "×": "x", "✕": "x", "✗": "x", "✓": "ok",
    "±": "+/-", "≥": ">=", "≤": "<=", "≈": "~", "≠": "!=", "µ": "u", "μ": "u",
    "²": "^2", "³": "^3", "°": "deg", "§": "S", "‰": "o/oo", "€": "EUR",
    "‘": "'", "’": "'", "“": '"', "”": '"', "«": "<<", "»": ">>", "\u00a0": " ",
    "█": "#", "▇": "#", "▆": "#", "▅": "=", "▄": "=", "▃": "-", "▂": "_", "▁": "_",
}


def ascii_fallback(ch: str) -> str:
    """One character as ASCII: the stand-in of one of our glyphs, else a ``\\xNN`` /
    ``\\uXXXX`` escape (a kernel name's ``é`` stays ``\\xe9``: two names that differ only
    there still read differently)."""
    known = FALLBACKS.get(ch)
    if known is not None:
        return known
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _encode_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start:exc.end]
    return "".join(ascii_fallback(ch) for ch in chunk), exc.end


codecs.register_error(ERRORS, _encode_fallback)


def _hold_descriptor(fd: int) -> None:
    """Point descriptor ``fd`` at ``/dev/null`` (open when it was closed): a later ``open``
    cannot be handed it, and a later write or flush to it succeeds and goes nowhere."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        if null != fd:
            os.dup2(null, fd, inheritable=False)
            os.close(null)


def _reserve(fd: int) -> None:
    """A standard descriptor that was closed at start-up (``>&-``): hold it with ``/dev/null``
    so that no file opened later is handed that number (and written to as if it were
    stdout). A descriptor something else already holds is left alone."""
    try:
        os.fstat(fd)
        return  # open: whatever holds it is not ours to replace
    except OSError:
        pass
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:  # a lower descriptor was free too (stdin closed as well)
            os.dup2(null, fd, inheritable=False)
            os.close(null)


def _fd_of(stream: TextIO | None) -> int | None:
    if stream is None:
        return None
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


class QuietStream(io.TextIOBase):
    """A text stream that never raises on output: the first failed write or flush ends it."""

    def __init__(self, target: TextIO | None, std_fd: int) -> None:
        super().__init__()
        self.target = target
        self.std_fd = std_fd
        self.gone = target is None
        if target is not None:
            reconfigure = getattr(target, "reconfigure", None)
            if reconfigure is not None:
                with contextlib.suppress(ValueError, OSError, io.UnsupportedOperation):
                    reconfigure(errors=ERRORS)

    # what print(), argparse and sys.stdout.write need
    def write(self, text: str) -> int:
        if self.gone or self.target is None:
            return len(text)
        try:
            self.target.write(text)
        except (OSError, ValueError):
            self._end()
        except UnicodeEncodeError:  # a stream whose errors could not be reconfigured
            try:
                self.target.write("".join(
                    ch if ch.isascii() else ascii_fallback(ch) for ch in text))
            except (OSError, ValueError, UnicodeError):
                self._end()
        return len(text)

    def flush(self) -> None:
        if self.gone or self.target is None:
            return
        try:
            self.target.flush()
        except (OSError, ValueError):
            self._end()

    def _end(self) -> None:
        """The reader went away or the device is full: drop what is buffered and what follows."""
        self.gone = True
        fd = _fd_of(self.target)
        if fd is not None:
            _hold_descriptor(fd)
            # what is still buffered now flushes into /dev/null instead of raising again
            with contextlib.suppress(OSError, ValueError):
                if self.target is not None:
                    self.target.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.target, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str:  # type: ignore[override]
        return ERRORS

    def isatty(self) -> bool:
        if self.gone or self.target is None:
            return False
        try:
            return bool(self.target.isatty())
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        fd = _fd_of(self.target)
        if fd is None:
            raise io.UnsupportedOperation("fileno")
        return fd

    def writable(self) -> bool:
        return True

    def close_target(self) -> None:
        """Flush and close the wrapped stream (at the very end of a program run)."""
        self.flush()
        if self.target is not None:
            with contextlib.suppress(OSError, ValueError):
                self.target.close()
        self.gone = True


_saved: list[tuple[TextIO | None, TextIO | None]] = []


def install() -> None:
    """Wrap stdout and stderr in :class:`QuietStream` (see the module docstring)."""
    out, err = sys.stdout, sys.stderr
    _saved.append((out, err))
    if out is None:
        _reserve(1)
    if err is None:
        _reserve(2)
    if not isinstance(out, QuietStream):
        sys.stdout = QuietStream(out, 1)
    if not isinstance(err, QuietStream):
        sys.stderr = QuietStream(err, 2)


def restore() -> None:
    """Flush the wrapped streams and put back what :func:`install` found."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, QuietStream):
            stream.flush()
    if _saved:
        out, err = _saved.pop()
        sys.stdout, sys.stderr = out, err


def close_all() -> None:
    """Flush and close stdout and stderr, quietly (before a program's fast exit)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, QuietStream):
            stream.close_target()
        elif stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()


__all__ = ["ERRORS", "FALLBACKS", "QuietStream", "ascii_fallback", "close_all", "install",
           "restore"]

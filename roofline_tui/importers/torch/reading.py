"""Opening a trace: the boundary checks (a regular file, not another tool's format), gzip or
plain, the streamed decode into the collector (the cyclic garbage collector paused while it
runs) and the progress bar a long import shows on a terminal."""

from __future__ import annotations

import gzip
import io
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.jsonstream import READ_CHUNK
from roofline_tui.importers.kineto_events import TypedEventStream
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.typed_loop import read_batches


# the progress bar appears once an import has run this long on a terminal, whatever the size
# on disk (a 30 MB gzipped trace is about 1 GB of JSON)
PROGRESS_AFTER_S = 1.0


class _Progress:
    """The import's progress on a terminal: compressed bytes read of the file's size, bytes
    inflated, events, elapsed. It appears only once the import has run
    :data:`PROGRESS_AFTER_S` (nothing flashes for a quick one) and never when stderr is not a
    terminal; it is cleared when the import ends."""

    def __init__(self, raw: io.BufferedReader, size: int, label: str,
                 inflated: Callable[[], int] | None = None,
                 events: Callable[[], int] | None = None) -> None:
        self._raw = raw
        self._size = size
        self._label = label
        self._inflated = inflated
        self._events = events
        self._bar: Any = None
        self._task: Any = None
        self._start = time.monotonic()
        try:
            self._tty = sys.stderr is not None and sys.stderr.isatty()
        except (OSError, ValueError, AttributeError):
            self._tty = False

    def _fields(self) -> dict[str, str]:
        parts: list[str] = []
        try:
            if self._inflated is not None:
                parts.append(f"{self._inflated() / 1e6:,.0f} MB inflated")
        except (OSError, ValueError):
            pass
        if self._events is not None:
            parts.append(f"{self._events():,} events")
        return {"what": ", ".join(parts)}

    def update(self) -> None:
        if not self._tty:
            return
        try:
            if self._bar is None:
                if time.monotonic() - self._start < PROGRESS_AFTER_S:
                    return
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    DownloadColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )

                self._bar = Progress("[progress.description]{task.description}", BarColumn(),
                                     DownloadColumn(), TextColumn("{task.fields[what]}"),
                                     TimeElapsedColumn(), console=Console(stderr=True),
                                     transient=True)
                self._task = self._bar.add_task(self._label, total=self._size,
                                                **self._fields())
                self._bar.start()
            self._bar.update(self._task, completed=self._raw.tell(), **self._fields())
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _other_format(path: Path) -> str | None:
    """A one-line refusal when the file is a known non-Kineto format."""
    from roofline_tui.importers.sniff import TORCH, head_text, refusal

    named = refusal(path, TORCH, named=False)  # the one sniffer table: other tools' files
    if named:
        return named
    head = head_text(path).lstrip("\ufeff \t\r\n")
    if head.startswith("{") and '"rocprofiler-sdk-tool"' in head[:200]:
        return ("a rocprofv3 --output-format json file, not a PyTorch trace; import it with "
                "`roofline import rocprofv3`")
    if head.startswith("SQLite format 3"):
        return "an SQLite database (rocpd or nsys), not a PyTorch trace"
    return None


def collect(path: Path, *, chunk: int = READ_CHUNK,
            progress: bool = True) -> tuple[Collector, dict[str, Any]]:
    """Stream ``path`` once; returns the collector and the trace's top-level header."""
    path = Path(path)
    why = check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path)}: {printable(why)}")
    try:
        size = path.stat().st_size
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise ImportProblem(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ImportProblem(f"{path}: is a directory, expected a trace file") from None
    except OSError as exc:
        raise ImportProblem(f"{path}: cannot open ({exc.strerror or exc})") from None
    other = _other_format(path)
    if other:
        raw.close()
        raise ImportProblem(f"{path.name}: {other}")
    col = Collector()
    gz = _is_gzip(path)
    binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
    bar = (_Progress(raw, size, f"importing {path.name}",
                     inflated=binary.tell if gz else None, events=lambda: col.events)
           if progress else None)
    try:
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="strict")
        stream = TypedEventStream(text, chunk=chunk, on_read=bar.update if bar else None)
        try:
            # decoded JSON holds no cycles and the events die young: the cyclic collector
            # only costs time while the trace is read, so it is paused until then
            with collector_paused():
                read_batches(col, stream.event_batches())
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise ImportProblem(f"{path.name}: compressed trace is damaged or truncated "
                                f"({exc})") from None
        if not stream.saw_trace_events:
            raise ImportProblem(f"{path.name}: no traceEvents array (is it a chrome trace?)")
        return col, stream.header
    except ImportProblem as exc:
        if exc.message.startswith(path.name) or exc.message.startswith(str(path)):
            raise
        raise ImportProblem(f"{path.name}: {exc.message}") from None
    finally:
        if bar:
            bar.close()
        raw.close()

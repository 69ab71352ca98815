"""The ingest row of ``roofline dash --traces``: what the ``roofline ingest`` beside the
dashboard is importing, how many rounds it made, its latest failure. Presentation only: the
state is ``core.rounds.source.read_ingest_status``'s reading of ``PROFILE/.ingest.json``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from rich.text import Text

from roofline_tui.app.view.styles import DIM
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.core.api import IngestStatus


def _elapsed(since: str | None, now: datetime) -> str:
    if not since:
        return ""
    try:
        began = datetime.fromisoformat(since)
    except ValueError:
        return ""
    if began.tzinfo is None:
        began = began.replace(tzinfo=timezone.utc)
    when = now if now.tzinfo is not None else now.astimezone()
    secs = max((when - began).total_seconds(), 0.0)
    return f", {secs:.0f} s" if secs < 120 else f", {secs / 60:.0f} min"


def ingest_line(status: IngestStatus | None, now: datetime) -> Text:
    """One line: importing (with the files and for how long), else the rounds made so far and
    waiting; the latest failure after it, with its reason."""
    out = Text("ingest: ", style="bold")
    if status is None:
        out.append("starting (no trace taken yet)", style=DIM)
        return out
    if status.importing:
        names = ", ".join(printable(n, limit=60) for n in status.importing[:3])
        more = f" +{len(status.importing) - 3}" if len(status.importing) > 3 else ""
        out.append(f"importing {names}{more}{_elapsed(status.since, now)} …", style="yellow")
    else:
        out.append(f"{status.rounds} round(s) made; waiting for the next trace", style=DIM)
    if status.failures:
        last = status.failures[-1]
        out.append(f" · {len(status.failures)} failed, last: ", style="red")
        out.append(f"{printable(last.file, limit=60)}: {printable(last.reason, limit=160)}",
                   style="red")
    return out

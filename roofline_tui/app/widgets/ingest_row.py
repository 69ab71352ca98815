"""The ingest row of ``roofline dash --traces``: a line above the rankings that reads
``PROFILE/.ingest.json`` (through the engine's front desk) every :data:`POLL_S` and says what
the ``roofline ingest`` beside the dashboard is importing, how many rounds it made and its last
failure. It needs nothing of the App but the profile directory and a clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from textual.widgets import Static

from roofline_tui.app.view.ingest import ingest_line
from roofline_tui.core.api import read_ingest_status

POLL_S = 1.0


class IngestRow(Static):
    def __init__(self, profile_dir: Path, clock: Callable[[], datetime], **kw: object) -> None:
        super().__init__(id="ingest", **kw)  # type: ignore[arg-type]
        self.profile_dir = profile_dir
        self.clock = clock

    def on_mount(self) -> None:
        self.refresh_status()
        self.set_interval(POLL_S, self.refresh_status)

    def refresh_status(self) -> None:
        try:
            status = read_ingest_status(self.profile_dir)
        except OSError:
            status = None
        self.update(ingest_line(status, self.clock()))

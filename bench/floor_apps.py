"""The floors that the dashboard's figures are measured against: minimal Textual apps.

* ``PaintFloor``: a Header, a 25-row DataTable and a Footer; nothing else. The dashboard's
  "start -> tables painted" is divided by this app's "start -> table painted".
* ``WatchFloor``: the same screen, watching one JSON file with ``watchfiles.awatch`` at the
  dashboard's debounce and step; on each change it reads the file and updates one cell. The
  dashboard's "file written -> cell shows the new value" is divided by this app's.

Only textual and watchfiles are imported: nothing of roofline_tui, so the floor is the same
whichever tree is being measured.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Footer, Header

# The dashboard's watcher settings (RooflineApp's debounce_ms / step_ms defaults): the floor
# waits for file events exactly as long as the dashboard does.
DEBOUNCE_MS = 300
STEP_MS = 40
ROWS = 25
COLUMNS = ("#", "kernel", "% GPU", "avg µs", "bound", "headroom")


def _rows(pct: float) -> list[tuple[str, ...]]:
    return [(str(i + 1), f"kernel_{i}", f"{pct - i:.2f}", f"{10 + i}.0", "memory", f"{i % 5}.0x")
            for i in range(ROWS)]


class PaintFloor(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        table.add_rows(_rows(40.0))
        table.focus()


class WatchFloor(PaintFloor):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.watching = False
        self._stop = asyncio.Event()

    def on_mount(self) -> None:
        super().on_mount()
        self.run_worker(self.watch_file(), exclusive=True)

    async def watch_file(self) -> None:
        from watchfiles import awatch

        self.watching = True
        async for _changes in awatch(self.path, debounce=DEBOUNCE_MS, step=STEP_MS,
                                     stop_event=self._stop):
            try:
                pct = float(json.loads(self.path.read_text())["top_kernels"][0]["pct_gpu_time"])
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                continue  # caught mid-write: the next event brings the whole file
            table = self.query_one(DataTable)
            table.update_cell_at((0, 2), f"{pct:.2f}")

    async def on_unmount(self) -> None:
        self._stop.set()

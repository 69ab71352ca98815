"""Helpers for the dashboard tests: the app as tests build it, waits, what the screen shows."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from roofline_tui.app.app import RooflineApp
from roofline_tui.core.artifact import Entry

FIXED_NOW = datetime(2025, 1, 2, 12, 34, 56)


def fixed_clock() -> datetime:
    return FIXED_NOW


def record_toasts(app: RooflineApp) -> list[tuple[str, str]]:
    """Every ``notify`` from now on, as (message, severity); the toasts are still shown."""
    seen: list[tuple[str, str]] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        seen.append((message, kwargs.get("severity", "information")))
        original(message, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


def messages(toasts: list[tuple[str, str]]) -> list[str]:
    """The messages of :func:`record_toasts`' list, as they are now."""
    return [message for message, _ in toasts]


def make_app(profile_dir: Path, **kwargs: Any) -> RooflineApp:
    """The app as the tests want it: no watcher unless asked, fixed clock, no tmp path shown."""
    kwargs.setdefault("watch", False)
    kwargs.setdefault("clock", fixed_clock)
    kwargs.setdefault("display_name", "profile")
    if kwargs["watch"]:
        kwargs.setdefault("debounce_ms", 200)
        kwargs.setdefault("step_ms", 30)
        kwargs.setdefault("poll_s", 0.1)
    app = RooflineApp(profile_dir, **kwargs)
    # No animations under test: a loaded machine would otherwise snap a tab underline mid-slide.
    app.animation_level = "none"
    return app


def shown_entry(app: RooflineApp, short_name: str) -> Entry | None:
    """The shown round's entry for ``short_name`` (None: nothing analysed yet, or no such kernel)."""
    result = app.shown_result
    return result.artifact.entry(short_name) if result is not None else None


async def wait_until(pilot: Any, cond: Callable[[], bool], timeout: float = 6.0) -> float:
    start = time.perf_counter()
    while True:
        await pilot.pause(0.02)
        if cond():
            await pilot.pause()
            return time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            raise AssertionError(f"condition not met within {timeout} s")


async def settle(pilot: Any) -> None:
    """Wait until the shown round has been analysed, nothing is queued and what follows the
    first frame (the round selector, the tabs, the filter box, the footer) is mounted."""
    app, s = pilot.app, pilot.app.session
    await wait_until(pilot, lambda: app.rest_built.is_set() and not s.busy and (
        s.shown is None or s.shown in s.results or s.shown in s.notes))
    await pilot.pause()


def cells(table: Any) -> list[list[str]]:
    """Plain text of every cell, row by row, as the user reads it."""
    return [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]


def row_keys(table: DataTable[Any]) -> list[str]:
    """The keys of a table's rows, top to bottom (every ranking row has one)."""
    keys = [r.key.value for r in table.ordered_rows]
    assert all(k is not None for k in keys), keys
    return [k for k in keys if k is not None]


def column(table: Any, key: str) -> list[str]:
    keys = [c.key.value for c in table.ordered_columns]
    i = keys.index(key)
    return [row[i] for row in cells(table)]


def tree_state(root: Path) -> dict[str, tuple[int, str]]:
    """Everything on disk below ``root``: mtime and content hash, to prove nothing was touched."""
    state: dict[str, tuple[int, str]] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            state[str(p.relative_to(root))] = (p.stat().st_mtime_ns,
                                               hashlib.sha256(p.read_bytes()).hexdigest())
        else:
            state[str(p.relative_to(root)) + "/"] = (0, "")
    return state


def read_topn(round_dir: Path) -> dict[str, Any]:
    return json.loads((round_dir / "profile_topN.json").read_text())


def write_topn(round_dir: Path, data: dict[str, Any]) -> None:
    (round_dir / "profile_topN.json").write_text(json.dumps(data, indent=1))


def static_text(widget: Any, width: int = 200) -> str:
    """What a Static shows, as plain text (its content may be a Rich table or group)."""
    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(content)
    return console.export_text()


_SVG_TEXT = re.compile(
    r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
    r'clip-path="url\(#terminal-(?:\d+-)?line-(\d+)\)">(.*?)</text>')
_CELL_WIDTH = 12.2  # Rich's SVG export: pixels per terminal cell


def screen_text(svg: str) -> list[str]:
    """The terminal lines of an SVG screenshot, as a user reads them."""
    lines: dict[int, list[str]] = {}
    for m in _SVG_TEXT.finditer(svg):
        x, line, text = float(m.group(1)), int(m.group(2)), html.unescape(m.group(3))
        row = lines.setdefault(line, [])
        col = int(round(x / _CELL_WIDTH))
        if len(row) < col:
            row.extend(" " * (col - len(row)))
        row[col:col + len(text)] = list(text)
    return ["".join(lines[i]).replace("\xa0", " ").rstrip() for i in sorted(lines)]


async def open_rounds_tab(pilot: Any) -> tuple[str, list[list[str]]]:
    """Click the Rounds tab; its text and its non-blank lines split into words."""
    await pilot.click("#--content-tab-rounds")
    await pilot.pause()
    text = static_text(pilot.app.query_one("#rounds-body"))
    return text, [ln.split() for ln in text.splitlines() if ln.strip()]

"""What the dashboard's export keys write and say: ``e`` (the artifact pair), ``E`` (the CSV),
``y`` / ``Y`` (the selected kernel to the clipboard) and the palette's Screenshot.

Each takes an :class:`ExportHost` (the App is one: what it shows, its notifications, the
clipboard and the screenshot), not the App itself, so this module never imports it back; the
writes themselves are the engine's (atomic, see ``core/store.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from roofline_tui.core.api import (
    load_artifact,
    ranks_of,
    same_settings,
    settings_of,
    write,
    write_table,
)
from roofline_tui.core.layout import ARTIFACT_JSON, TOPN_NAME
from roofline_tui.core.table_csv import CSV_NAME
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from roofline_tui.app.session import Session
    from roofline_tui.app.view.rankings import Row
    from roofline_tui.core.api import RoundResult


class ExportHost(Protocol):
    """What the export keys use of the dashboard (:class:`~roofline_tui.app.app.RooflineApp`
    has all of it): the shown round, the selected row, the profile directory and its display
    name, and Textual's notification, clipboard and screenshot."""

    profile_dir: Path
    display_name: str
    session: Session

    @property
    def shown_result(self) -> RoundResult | None: ...

    @property
    def selected_row(self) -> Row | None: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def save_screenshot(self, *, path: str) -> str: ...


def shown_path(path: Path, profile_dir: Path, display_name: str) -> str:
    """A path as the user knows it: under the profile directory's display name."""
    try:
        rel = Path(os.path.relpath(path, profile_dir))
    except ValueError:
        return printable(str(path))
    if rel.parts and rel.parts[0] == "..":
        return printable(str(path))
    return printable(str(Path(display_name) / rel))


def _shown(app: ExportHost, path: Path) -> str:
    return shown_path(path, app.profile_dir, app.display_name)


def _failed(app: ExportHost, what: str, where: Path, exc: OSError, title: str) -> None:
    app.notify(f"cannot write {what} into {_shown(app, where)}: "
               f"{printable(exc.strerror or exc)}", title=title, severity="error", markup=False,
               timeout=8)


def export_artifact(app: ExportHost) -> None:
    """``e``: the shown round's artifact pair, computed with the settings it records; said in the
    notice, and louder when it replaces an artifact computed with other settings."""
    r, result = app.session.shown, app.shown_result
    if r is None or result is None or not result.topn_found:
        app.notify(f"nothing to export: the shown round has no {TOPN_NAME} yet",
                   severity="warning", markup=False)
        return
    artifact, text, ranks = result.artifact, "", ranks_of(result)
    latest = app.session.latest.get(r)
    if latest is not None and latest.topn_found and latest.topn_problem is not None:
        # the Top-N on disk does not parse: write what `roofline analyze` writes now (its
        # skill_errors say why), not the last good result still on screen
        artifact, ranks = latest.artifact, ranks_of(latest)
        text = (f"; {TOPN_NAME} does not parse: written as `roofline analyze` writes it, "
                "with the reason in skill_errors (not the last good result on screen)")
    settings = settings_of(artifact)
    stored, _ = load_artifact(r)
    before = settings_of(stored) if stored is not None else None
    try:
        json_path, md_path = write(artifact, r, ranks)
    except OSError as exc:
        _failed(app, ARTIFACT_JSON, r, exc, "Export failed")
        return
    said = f"wrote {_shown(app, json_path)} and {printable(md_path.name)}"
    if settings is not None:
        said += f" ({printable(settings.describe())})"
    text = said + text
    # the engine's answer (older artifacts by their top-level fields); None: nothing to compare
    replaced = stored is not None and same_settings(stored, artifact) is False
    if replaced and before is not None:
        text += f"; replaced one computed with {printable(before.describe())}"
    app.notify(text, title="Exported", markup=False,
               severity="warning" if replaced or artifact is not result.artifact else "information")


def export_csv(app: ExportHost) -> None:
    """``E``: the shown round's CSV (one row per entry)."""
    r, result = app.session.shown, app.shown_result
    if r is None or result is None or not result.artifact.entries:
        app.notify("nothing to write: the shown round has no analysed entries",
                   severity="warning", markup=False)
        return
    try:
        path = write_table(result.artifact, r, ranks_of(result))
    except OSError as exc:
        _failed(app, CSV_NAME, r, exc, "CSV failed")
        return
    app.notify(f"wrote {_shown(app, path)}", title="CSV", markup=False)


def copy_selected(app: ExportHost, *, as_json: bool) -> None:
    """``y``: the selected kernel's full name to the clipboard (OSC 52); ``Y``: its entry as
    JSON."""
    row = app.selected_row
    if row is None:
        app.notify("no kernel selected", severity="warning")
        return
    e = row.entry
    app.copy_to_clipboard(e.model_dump_json(indent=2) if as_json else e.name)
    what = "the JSON" if as_json else "the full name"
    app.notify(f"copied {what} of {printable(e.short_name, limit=60)}", markup=False, timeout=3)


def save_svg(app: ExportHost) -> None:
    """Save an SVG screenshot in the current directory and say where."""
    try:
        path = app.save_screenshot(path=os.getcwd())
    except OSError as exc:
        app.notify(f"cannot save a screenshot in {printable(os.getcwd())}: "
                   f"{printable(exc.strerror or exc)}", title="Screenshot failed",
                   severity="error", markup=False, timeout=8)
        return
    app.notify(f"saved {printable(path)}", title="Screenshot", markup=False, timeout=6)

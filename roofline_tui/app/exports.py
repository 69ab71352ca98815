"""What the dashboard's export keys write and say: ``e`` (the artifact pair), ``E`` (the CSV),
``y`` / ``Y`` (the selected kernel to the clipboard) and the palette's Screenshot.

Each takes the App for what it shows and for its notifications; the writes themselves are the
engine's (atomic, see ``core/store.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from roofline_tui.core.api import load_artifact, ranks_of, write, write_table
from roofline_tui.core.artifact import AnalysisSettings, Artifact
from roofline_tui.core.layout import ARTIFACT_JSON, TOPN_NAME
from roofline_tui.core.table_csv import CSV_NAME
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.app import RooflineApp


def settings_of(artifact: Artifact) -> AnalysisSettings | None:
    """The settings an artifact records (older ones: the threshold and cap alone)."""
    if artifact.analysis_settings is not None:
        return artifact.analysis_settings
    if artifact.head_threshold_pct is None or artifact.max_heads is None:
        return None
    return AnalysisSettings(head_threshold_pct=artifact.head_threshold_pct,
                            max_heads=artifact.max_heads)


def same_settings(a: AnalysisSettings, b: AnalysisSettings) -> bool:
    return (a.head_threshold_pct, a.max_heads, a.priors_fingerprint) == (
        b.head_threshold_pct, b.max_heads, b.priors_fingerprint)


def shown_path(path: Path, profile_dir: Path, display_name: str) -> str:
    """A path as the user knows it: under the profile directory's display name."""
    try:
        rel = Path(os.path.relpath(path, profile_dir))
    except ValueError:
        return printable(str(path))
    if rel.parts and rel.parts[0] == "..":
        return printable(str(path))
    return printable(str(Path(display_name) / rel))


def _shown(app: RooflineApp, path: Path) -> str:
    return shown_path(path, app.profile_dir, app.display_name)


def _failed(app: RooflineApp, what: str, where: Path, exc: OSError, title: str) -> None:
    app.notify(f"cannot write {what} into {_shown(app, where)}: "
               f"{printable(exc.strerror or exc)}", title=title, severity="error", markup=False,
               timeout=8)


def export_artifact(app: RooflineApp) -> None:
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
    replaced = before is not None and settings is not None and not same_settings(before, settings)
    if replaced and before is not None:
        text += f"; replaced one computed with {printable(before.describe())}"
    app.notify(text, title="Exported", markup=False,
               severity="warning" if replaced or artifact is not result.artifact else "information")


def export_csv(app: RooflineApp) -> None:
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


def copy_selected(app: RooflineApp, *, as_json: bool) -> None:
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


def save_svg(app: RooflineApp) -> None:
    """Save an SVG screenshot in the current directory and say where."""
    try:
        path = app.save_screenshot(path=os.getcwd())
    except OSError as exc:
        app.notify(f"cannot save a screenshot in {printable(os.getcwd())}: "
                   f"{printable(exc.strerror or exc)}", title="Screenshot failed",
                   severity="error", markup=False, timeout=8)
        return
    app.notify(f"saved {printable(path)}", title="Screenshot", markup=False, timeout=6)

"""The lines above the rankings, drawn into the App's own Statics (``#header-title``,
``#header-info``, ``#status``, ``#next-target``, ``#coverage``): they stay direct children of the
screen, so the layout and the stylesheet address each by id."""

from __future__ import annotations

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from roofline_tui.app import view
from roofline_tui.app.session import Session
from roofline_tui.core.api import RoundResult


def render_header(where: DOMNode, session: Session, display_name: str, *, demo: bool) -> None:
    """The title line, the device and workload lines and the notes (status)."""
    where.query_one("#header-title", Static).update(
        view.title_line(session, display_name, demo=demo))
    where.query_one("#header-info", Static).update(view.info_lines(session.shown_result))
    notes = session.status_notes()
    status = where.query_one("#status", Static)
    status.set_class(bool(notes), "-shown")
    status.set_class(any(n.severity == "error" for n in notes), "-error")
    status.update(view.status_lines(notes))


def render_next(where: DOMNode, result: RoundResult | None) -> None:
    """The Next line and the coverage line."""
    nxt, cov = where.query_one("#next-target", Static), where.query_one("#coverage", Static)
    if result is None or not result.artifact.entries:
        nxt.update(Text("Next: nothing analysed yet", style="dim"))
        cov.update(Text(""))
        return
    nxt.update(view.next_target(result.artifact))
    serving = any(e.serving_weighted_pct is not None for e in result.artifact.entries)
    cov.update(view.coverage_line(result.artifact, result.topn, serving=serving))

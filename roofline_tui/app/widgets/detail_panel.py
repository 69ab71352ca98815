"""The drill-down: one tab per aspect of the selected kernel, plus the round's views."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from roofline_tui.app.widgets.roofline_chart import RooflineChart

PANES = (
    ("summary", "Summary"),
    ("assumptions", "Assumptions"),
    ("flags", "Flags"),
    ("levers", "Levers"),
    ("raw", "Raw"),
    ("history", "History"),
    ("chart", "Chart"),
    ("rounds", "Rounds"),
    ("degraded", "Degraded"),
)
KERNEL_PANES = frozenset({"summary", "assumptions", "flags", "levers", "raw", "history", "chart"})
ROUND_PANES = frozenset({"rounds", "degraded"})


class DetailPanel(Vertical):
    """Drill-down for the selected kernel, one tab per aspect, plus the round's Rounds and
    Degraded views."""

    ALLOW_MAXIMIZE = True

    def compose(self) -> ComposeResult:
        with TabbedContent(id="detail-tabs", initial="summary"):
            for pane_id, title in PANES:
                with TabPane(title, id=pane_id):
                    if pane_id == "chart":
                        yield RooflineChart(id="chart-body")
                        continue
                    with VerticalScroll(classes="pane-scroll"):
                        yield Static(id=f"{pane_id}-body")

    @property
    def tabs(self) -> TabbedContent:
        return self.query_one("#detail-tabs", TabbedContent)

    @property
    def chart(self) -> RooflineChart:
        return self.query_one("#chart-body", RooflineChart)

    def body(self, pane_id: str) -> Static:
        return self.query_one(f"#{pane_id}-body", Static)

    def set_label(self, pane_id: str, label: str) -> None:
        tab = self.tabs.get_tab(pane_id)
        if str(tab.label) != label:
            tab.label = Text(label)

"""The drill-down: one tab per aspect of the selected kernel, plus the round's views.

Only the tab shown first is built with the dashboard; every other tab gets its body the first
time something is rendered into it (the app renders a tab when it opens). Building them all up
front cost the first paint about 20 widgets to style and lay out, and the Chart tab's engine
module (``core.chart``), for tabs that may never be opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane, Tabs

if TYPE_CHECKING:
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
FIRST_PANE = "summary"
KERNEL_PANES = frozenset({"summary", "assumptions", "flags", "levers", "raw", "history", "chart"})
ROUND_PANES = frozenset({"rounds", "degraded"})


class DetailPanel(Vertical):
    """Drill-down for the selected kernel, one tab per aspect, plus the round's Rounds and
    Degraded views."""

    ALLOW_MAXIMIZE = True
    # Priority: the focused pane's own left/right (horizontal scrolling) would take them first.
    BINDINGS = [
        Binding("left", "step_tab(-1)", "Prev tab", key_display="←", priority=True,
                show=False, id="prev-tab", tooltip="previous drill-down tab"),
        Binding("right", "step_tab(1)", "Next tab", key_display="→", priority=True,
                show=False, id="next-tab", tooltip="next drill-down tab"),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._bodies: dict[str, Static] = {}  # each built tab's body, by pane id
        self._chart: RooflineChart | None = None

    def compose(self) -> ComposeResult:
        with TabbedContent(id="detail-tabs", initial=FIRST_PANE):
            for pane_id, title in PANES:
                with TabPane(title, id=pane_id):
                    if pane_id == FIRST_PANE:
                        yield self._build(pane_id)

    def _build(self, pane_id: str) -> VerticalScroll | RooflineChart:
        """The body of the tab ``pane_id``, kept so that it can be updated before it is mounted
        (a widget inside a container only joins the DOM when that container is mounted)."""
        if pane_id == "chart":
            # Imported here, not at the top: the chart widget brings the chart geometry of the
            # engine, which only the Chart tab needs (plotext itself waits until it is shown).
            from roofline_tui.app.widgets.roofline_chart import RooflineChart

            self._chart = RooflineChart(id="chart-body")
            return self._chart
        body = self._bodies[pane_id] = Static(id=f"{pane_id}-body")
        return VerticalScroll(body, classes="pane-scroll")

    def built(self, pane_id: str) -> bool:
        """Whether the tab ``pane_id`` has its body yet."""
        return (self._chart is not None) if pane_id == "chart" else pane_id in self._bodies

    def _ensure(self, pane_id: str) -> None:
        """Give the tab ``pane_id`` its body if it has none yet (drawn with the next frame)."""
        if not self.built(pane_id):
            self.query_one(f"TabPane#{pane_id}", TabPane).mount(self._build(pane_id))

    @property
    def tabs(self) -> TabbedContent:
        return self.query_one("#detail-tabs", TabbedContent)

    @property
    def chart(self) -> RooflineChart:
        self._ensure("chart")
        assert self._chart is not None
        return self._chart

    def body(self, pane_id: str) -> Static:
        self._ensure(pane_id)
        return self._bodies[pane_id]

    def action_step_tab(self, delta: int) -> None:
        """The previous / next tab; focus stays where it was (the tab strip) or moves to the new
        tab's body."""
        ids = [pane_id for pane_id, _ in PANES]
        current = self.tabs.active or FIRST_PANE
        new = ids[(ids.index(current) + delta) % len(ids)] if current in ids else FIRST_PANE
        on_strip = isinstance(self.app.focused, Tabs)
        self._ensure(new)
        self.tabs.active = new
        if not on_strip:
            self.call_after_refresh(self.focus_body, new)

    def focus_body(self, pane_id: str) -> None:
        """Focus the body of the tab ``pane_id`` (its scroll, or the chart)."""
        if pane_id == "chart":
            self.chart.focus()
        else:
            self._ensure(pane_id)
            self.query_one(f"TabPane#{pane_id} .pane-scroll").focus()

    def set_label(self, pane_id: str, label: str) -> None:
        tab = self.tabs.get_tab(pane_id)
        if str(tab.label) != label:
            tab.label = Text(label)

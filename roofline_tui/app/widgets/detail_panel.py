"""The drill-down: one tab per aspect of the selected kernel, plus the round's views.

The tabs are mounted right after the first frame (which shows the rankings); only the tab shown
first gets its body then; every other tab gets its body the first
time something is rendered into it (the app renders a tab when it opens). Building them all up
front cost the first paint about 20 widgets to style and lay out, and the Chart tab's engine
module (``core.chart``), for tabs that may never be opened. Textual's tab widgets are imported
when the tabs are built, too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from roofline_tui.app import view
from roofline_tui.core import reading

if TYPE_CHECKING:
    from textual.widgets import TabbedContent

    from roofline_tui.app.compare import Against
    from roofline_tui.app.widgets.roofline_chart import RooflineChart
    from roofline_tui.core.api import RoundResult
    from roofline_tui.core.artifact import Entry

PANES = (
    ("summary", "Summary"),
    ("assumptions", "Assumptions"),
    ("flags", "Flags"),
    ("levers", "Levers"),
    ("raw", "Raw"),
    ("history", "History"),
    ("chart", "Chart"),
    ("rounds", "Rounds"),
    ("ranks", "Ranks"),
    ("compare", "Compare"),
    ("degraded", "Degraded"),
)
FIRST_PANE = "summary"
# (Ranks: the round's ranks with the selected kernel's spread across them)
# (Compare: the selected kernel's ops against the run given with --against)
KERNEL_PANES = frozenset({"summary", "assumptions", "flags", "levers", "raw", "history", "chart",
                          "ranks", "compare"})
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

    def __init__(self, *, id: str | None = None, compare: bool = False) -> None:  # noqa: A002
        super().__init__(id=id)
        # the Compare tab only with `dash --against` (without it there is nothing to show)
        self.panes = tuple(p for p in PANES if p[0] != "compare" or compare)
        self._bodies: dict[str, Static] = {}  # each built tab's body, by pane id
        self._chart: RooflineChart | None = None
        self._shown: dict[str, object] = {}  # what each pane shows (render cache), by pane id
        self.back_tab = FIRST_PANE  # the tab the chart replaced (c / escape go back to it)
        self._ready = False

    def compose(self) -> ComposeResult:
        # Nothing at first: the first frame shows the rankings' rows, and the tabs (some 26
        # widgets to style and lay out) follow right after it (see :meth:`build`). The panel
        # keeps its place meanwhile, so nothing moves when they arrive.
        return iter(())

    @property
    def ready(self) -> bool:
        """Whether the tabs are there (after :meth:`build`)."""
        return self._ready

    async def build(self) -> None:
        """Mount the tabs, the first one with its body."""
        if self._ready:
            return
        # (imported here: the first frame has no tabs)
        from textual.widgets import TabbedContent, TabPane

        tabs = TabbedContent(id="detail-tabs", initial=FIRST_PANE)
        for pane_id, title in self.panes:  # what `with TabbedContent(): with TabPane(): ...` does
            body = [self._build(pane_id)] if pane_id == FIRST_PANE else []
            tabs.compose_add_child(TabPane(title, *body, id=pane_id))
        await self.mount(tabs)
        self._ready = True

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
            self.query_one(f"TabPane#{pane_id}").mount(self._build(pane_id))

    @property
    def tabs(self) -> TabbedContent:
        from textual.widgets import TabbedContent

        return self.query_one("#detail-tabs", TabbedContent)

    @property
    def chart(self) -> RooflineChart:
        self._ensure("chart")
        assert self._chart is not None
        return self._chart

    def body(self, pane_id: str) -> Static:
        self._ensure(pane_id)
        return self._bodies[pane_id]

    @property
    def chart_open(self) -> bool:
        return self._ready and self.tabs.active == "chart"

    @property
    def active(self) -> str:
        """The open tab (the first one until the tabs are built)."""
        return (self.tabs.active or FIRST_PANE) if self._ready else FIRST_PANE

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # the chart gets the whole height below the header: the rankings step aside
        self.screen.set_class(event.pane.id == "chart", "-chart-open")
        if event.pane.id and event.pane.id != "chart":
            self.back_tab = event.pane.id

    def close_chart(self) -> str:
        """The chart makes way for the tab it replaced (the rankings come back with it);
        returns that tab."""
        back = self.back_tab if self.back_tab != "chart" else FIRST_PANE
        self.tabs.active = back
        self.screen.set_class(False, "-chart-open")
        return back

    def focus_active(self) -> None:
        """Focus the open tab's body (its scroll, or the chart)."""
        if self._ready:
            self.focus_body(self.active)

    def action_step_tab(self, delta: int) -> None:
        """The previous / next tab; focus stays where it was (the tab strip) or moves to the new
        tab's body."""
        from textual.widgets import Tabs

        ids = [pane_id for pane_id, _ in self.panes]
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

    def label_degraded(self, result: RoundResult | None) -> None:
        """The Degraded tab's label counts the shown round's degraded steps and errors."""
        n = (len(result.artifact.degraded) + len(result.artifact.skill_errors)) if result else 0
        self.set_label("degraded", f"Degraded ({n})" if n else "Degraded")

    def set_label(self, pane_id: str, label: str) -> None:
        if not self._ready:
            return
        tab = self.tabs.get_tab(pane_id)
        if str(tab.label) != label:
            tab.label = Text(label)

    def render_pane(self, pane: str, state: object, result: RoundResult | None,
                    row: view.Row | None, *, below: bool = False,
                    round_label: str | int | None = None,
                    against: Against | None = None) -> None:
        """Draw ``pane`` for ``result`` and the selected ``row`` (``below``: a kernel below the
        head threshold is selected), unless it already shows ``state``."""
        if pane == "compare" and against is not None:  # (a new comparison redraws it)
            state = (state, against.ticket, against.generation)
        if not self._ready or self._shown.get(pane) == state:
            return
        self._shown[pane] = state
        if pane == "chart":
            self.chart.update_artifact(result.artifact if result is not None else None)
            self.chart.select(row.entry.short_name if row is not None else None)
            return
        self.body(pane).update(self._content(pane, result, row, below, round_label, against))

    @staticmethod
    def _content(pane: str, result: RoundResult | None, row: view.Row | None, below: bool,
                 round_label: str | int | None, against: Against | None = None
                 ) -> RenderableType:
        if pane == "degraded":
            return (view.degraded_view(result.artifact) if result is not None
                    else Text("nothing analysed yet", style="dim"))
        if pane == "rounds":
            return view.rounds_view(result.history if result is not None else None, round_label)
        if result is not None and below:
            return Text("below the head threshold: listed for coverage, not analysed "
                        "(analyze --head-threshold lowers it)", style="dim")
        if result is None or row is None:
            return Text("no kernel selected" if result is not None and result.artifact.entries
                        else "no analysed kernels in this round", style="dim")
        e, a = row.entry, result.artifact
        if row.step is not None and pane != "compare":  # a part of the step, not a kernel
            return view.step_view(row.step)
        renderers: dict[str, Callable[[], RenderableType]] = {
            "ranks": lambda: view.ranks_view(e, reading.rank_view(result.topn)),
            "summary": lambda: view.summary(e, a),
            "assumptions": lambda: view.assumptions(e),
            "flags": lambda: view.flags(e, a),
            "levers": lambda: view.levers(e),
            "raw": lambda: view.raw_json(e),
            "history": lambda: view.history_view(e, result.history),
            "compare": lambda: _compare(e, result, against),
        }
        return renderers[pane]()


def _compare(e: Entry, result: RoundResult, against: Against | None) -> RenderableType:
    from roofline_tui.app.view.compare import compare_view

    if against is None:
        return compare_view(e, result, None, against=None)
    return compare_view(e, result, against.comparison_for(result), against=against.path,
                        error=against.error, waiting=against.waiting)

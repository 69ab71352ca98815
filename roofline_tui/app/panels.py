"""Widgets of the dashboard: the ranked tables, the drill-down tabs and the help screen."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static, TabbedContent, TabPane
from textual.widgets.data_table import RowDoesNotExist

from roofline_tui.app import view
from roofline_tui.app.widgets.roofline_chart import RooflineChart


class RankTable(DataTable):
    """A ranked table whose rows are replaced wholesale while the cursor and scroll stay put."""

    def __init__(self, columns: Sequence[tuple[str, str, int]], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._column_spec = tuple(columns)

    def on_mount(self) -> None:
        for label, key, width in self._column_spec:
            self.add_column(label, key=key, width=width)

    @property
    def current_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:
            return None
        return row_key.value

    def index_of(self, key: str | None) -> int | None:
        if key is None:
            return None
        try:
            return self.get_row_index(key)
        except RowDoesNotExist:
            return None

    def set_rows(self, rows: Iterable[tuple[str, list[Text]]], keep: str | None) -> None:
        """Replace every row; put the cursor back on ``keep`` and restore the scroll offset."""
        scroll = (self.scroll_x, self.scroll_y)
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        index = self.index_of(keep)
        if index is not None:
            self.move_cursor(row=index, animate=False, scroll=False)
        self.call_after_refresh(self._restore_scroll, *scroll)

    def _restore_scroll(self, x: float, y: float) -> None:
        self.scroll_to(x, y, animate=False, immediate=True)
        if self.row_count:
            self.move_cursor(row=self.cursor_row, animate=False, scroll=True)

    def select_key(self, key: str) -> None:
        index = self.index_of(key)
        if index is not None and index != self.cursor_row:
            self.move_cursor(row=index, animate=False)


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


class DetailPanel(Vertical):
    """Drill-down for the selected kernel, one tab per aspect, plus the round's Degraded view."""

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
    def chart(self) -> RooflineChart:
        return self.query_one("#chart-body", RooflineChart)

    def body(self, pane_id: str) -> Static:
        return self.query_one(f"#{pane_id}-body", Static)

    def set_degraded_label(self, label: str) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.get_tab("degraded").label = Text(label)  # type: ignore[assignment]


HELP_KEYS = (
    ("e", "export profile_roofline.json + .md into the shown round's directory"),
    ("c", "the roofline chart (in the chart, [ and ] step through kernels)"),
    ("r", "recompute the shown round now"),
    ("/", "filter kernels by name (enter keeps it, escape clears it)"),
    ("[  ]", "previous / next round (or pick one in the selector, top left)"),
    ("↑ ↓", "move in a table; the other table follows"),
    ("tab", "move focus: round selector, tables, drill-down tabs"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
)


def help_renderable() -> RenderableType:
    keys = Table.grid(padding=(0, 2))
    keys.add_column(style="bold", no_wrap=True)
    keys.add_column()
    for key, what in HELP_KEYS:
        keys.add_row(key, what)
    legend = Table.grid(padding=(0, 2))
    legend.add_column(no_wrap=True)
    legend.add_column()
    for cls, meaning in (
        ("underperforming", "far below what a good kernel of this class reaches: tuning headroom"),
        ("moderate", "some headroom left"),
        ("saturated", "done with tuning, not with optimization: move fewer bytes"),
        ("unknown", "no verdict (suspect, dispatch-bound, unmodelled, low confidence)"),
    ):
        legend.add_row(Text(cls, style=view.HEADROOM_STYLE[cls]), meaning)
    for flag, meaning in (
        ("suspect", "the model implies a rate above peak (clamped, shown with !)"),
        ("dispatch-bound", "per-launch time within launch-overhead scale: fuse or capture"),
        ("unmodelled", "no byte/FLOP model for this kernel: see Degraded"),
    ):
        legend.add_row(Text("⚑" + view.FLAG_SHORT[flag], style=view.FLAG_STYLE[flag]), meaning)
    legend.add_row(Text("↑3 / ↓2", style="green"),
                   "places a kernel moved in the gain ranking vs the GPU-time ranking")
    legend.add_row(Text("ADVISORY", style="bold black on yellow"),
                   "stage A / low confidence: pct_gpu_time order rules, the measurement decides")
    from rich.console import Group

    return Group(Text("Keys", style="bold underline"), keys, Text(""),
                 Text("Legend", style="bold underline"), legend)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 90;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape", "close", "Close", id="help-close"),
        Binding("question_mark", "close", "Close", key_display="?", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "roofline dash — help"
            yield Static(help_renderable(), id="help-body")

    def action_close(self) -> None:
        self.dismiss(None)

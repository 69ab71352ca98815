"""The two rankings side by side: "By GPU time" and "By expected gain", with their titles.

:class:`Rankings` owns everything about the tables: the columns that fit the width, the sort of
each table, the kernel filter, the greyed rows below the head threshold, and the selection, which
both tables share (moving in one moves the other). When the user moves the selection it posts
:class:`Rankings.Selected`; the App then redraws the drill-down. The rows come from
:mod:`roofline_tui.app.view.rankings`; nothing here decides a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Static

from roofline_tui.app.messages import AgainstChanged, CompareReady
from roofline_tui.app.view import rankings as rk
from roofline_tui.app.view.header import is_advisory
from roofline_tui.app.view.styles import MARKER_GAP, headroom_marker
from roofline_tui.app.widgets.rank_table import RankTable
from roofline_tui.core.api import RoundResult
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.compare import Against
    from roofline_tui.app.view.compare import Comparison

BELOW_PREFIX = "below:"  # row keys of the greyed kernels under the heads
TABLES = {"by-pct": rk.PCT_COLUMNS_ALL, "by-gain": rk.GAIN_COLUMNS_ALL}
NO_SORT = ("rank", False)


class Rankings(Horizontal):
    """Both rankings of the shown round; side by side from :attr:`WIDE_FROM` columns."""

    WIDE_FROM = 120

    @dataclass
    class Selected(Message):
        """The user moved the selection to the kernel with row key ``key``."""

        key: str

    def __init__(self, *, id: str | None = "tables",  # noqa: A002
                 against: Against | None = None) -> None:
        super().__init__(id=id)
        self.against = against  # dash --against: what the rows are compared with
        self.result: RoundResult | None = None
        self.filter_text = ""
        self.sort: dict[str, tuple[str, bool]] = {}   # table id -> (column key, descending)
        self.show_below = False                        # list kernels below the head threshold
        self.columns: dict[str, list[rk.Fitted]] = {}  # per table, as fitted to the width
        self.selected_key: str | None = None
        self.rows: dict[str, rk.Row] = {}   # row key -> the row (entry) it shows
        self.fitted_width = 0  # the terminal width the columns were fitted to
        self._entered_from = "by-pct"  # the ranking the drill-down was last entered from
        self.comparison: Comparison | None = None  # the shown round's (None: not yet)

    def compose(self) -> ComposeResult:
        with Vertical(classes="table-box"):
            yield Static("By GPU time", id="pct-title", classes="table-title")
            yield RankTable(id="by-pct")
        with Vertical(classes="table-box"):
            yield Static("By expected gain", id="gain-title", classes="table-title")
            yield RankTable(id="by-gain")

    @property
    def pct_table(self) -> RankTable:
        return self.query_one("#by-pct", RankTable)

    @property
    def gain_table(self) -> RankTable:
        return self.query_one("#by-gain", RankTable)

    @property
    def selected_row(self) -> rk.Row | None:
        return self.rows.get(self.selected_key) if self.selected_key else None

    @property
    def below_selected(self) -> bool:
        return (self.selected_key or "").startswith(BELOW_PREFIX)

    @property
    def back_table(self) -> RankTable:
        """The ranking escape and c go back to: the one the drill-down was entered from."""
        return self.gain_table if self._entered_from == "by-gain" else self.pct_table

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # (the App moves into the drill-down: the event goes on to it)
        if isinstance(event.data_table, RankTable) and event.data_table.id:
            self._entered_from = event.data_table.id

    def table_of(self, widget: Widget | None) -> RankTable:
        """``widget`` when it is one of the rankings, else the GPU-time one."""
        return widget if isinstance(widget, RankTable) else self.pct_table

    # -- what the tables show -------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.against is not None:
            self.against.post = self.post_message  # its outcomes come here (thread-safe)

    def show(self, result: RoundResult | None) -> None:
        """Fill both tables from ``result`` (None: empty tables with their columns); with
        ``--against``, compare it (nothing when it was compared already)."""
        self.result = result
        if self.against is not None:
            self.against.start(result)
            self.comparison = self.against.comparison_for(result)
        self.refresh_rows()

    def on_compare_ready(self, message: CompareReady) -> None:
        """A comparison came back: the B columns show it, and the drill-down is redrawn (an
        outcome for a round no longer shown is dropped)."""
        if self.against is None or not self.against.accept(message):
            return
        if message.error:
            self.app.notify(f"--against: {message.error}", severity="warning", markup=False)
        self.comparison = self.against.comparison_for(self.result)
        self.refresh_rows()
        self.post_message(self.Selected(self.selected_key or ""))

    def on_against_changed(self, _message: AgainstChanged) -> None:
        if self.against is not None:
            self.against.start(self.result, force=True)

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self.refresh_rows()

    def toggle_below(self) -> int:
        """List (or stop listing) the kernels below the head threshold; returns how many."""
        self.show_below = not self.show_below
        self.refresh_rows()
        result = self.result
        return len(rk.below_threshold(result.artifact, result.topn)) if result else 0

    def needs_refit(self, width: int) -> bool:
        return bool(self.columns) and (width or 120) != self.fitted_width

    def refresh_rows(self) -> None:
        """Rebuild every row for the current result, width, filter and sorts; the selection
        stays on its kernel while that is shown, else moves to the first row."""
        result = self.result
        pct_rows, gain_rows = rk.rank_rows(result.artifact) if result is not None else ([], [])
        if self.comparison is not None:
            pct_rows, gain_rows = (self._compared(pct_rows), self._compared(gain_rows))
        self.rows = {r.key: r for r in pct_rows}
        self.rows.update((r.key, r) for r in gain_rows if r.step is not None)
        display = rk.display_names(pct_rows)
        pct_shown = [r for r in pct_rows if rk.matches(r, self.filter_text)]
        gain_shown = [r for r in gain_rows if rk.matches(r, self.filter_text)]
        visible = {r.key for r in (*pct_shown, *gain_shown)}
        if self.selected_key not in visible and not (self.show_below and self.below_selected):
            self.selected_key = pct_shown[0].key if pct_shown else None
        self._fit_columns(display)
        marks = self.app.no_color  # no colour: the headroom class also shows as a marker glyph
        room = len(MARKER_GAP) + 1 if marks else 0
        out: dict[str, list[rk.TableRow]] = {}
        for table_id, shown in (("by-pct", pct_shown), ("by-gain", gain_shown)):
            cols = self.columns[table_id]
            ordered = rk.sort_rows(shown, self._sort_column(table_id),
                                   self.sort.get(table_id, NO_SORT)[1])
            rows = rk.table_rows(ordered, display, cols, room=rk.kernel_width(cols) - room)
            out[table_id] = self._marked(rows, cols) if marks else rows
        if self.show_below and result is not None:
            cols = self.columns["by-pct"]
            out["by-pct"] += rk.below_rows(rk.below_threshold(result.artifact, result.topn),
                                           len(result.artifact.entries) + 1, cols,
                                           self.filter_text, BELOW_PREFIX)
        self.pct_table.set_rows(out["by-pct"], self.selected_key)
        self.gain_table.set_rows(out["by-gain"], self.selected_key)
        self._render_titles(len(pct_rows), len(pct_shown))
        self._cap_heights()

    def _compared(self, rows: list[rk.Row]) -> list[rk.Row]:
        """Each row with the compared run's row for its op (dash --against)."""
        c = self.comparison
        assert c is not None
        return [replace(r, other=c.row_for(r.entry)) for r in rows]

    def _cap_heights(self) -> None:
        """Each ranking at most as tall as its title, header and rows: on a narrow screen
        (app.tcss) the rankings share the height with the drill-down, and a short one leaves
        the rest to it."""
        total = 0
        for box, table in zip(self.query(".table-box"), (self.pct_table, self.gain_table),
                              strict=True):
            tall = 2 + max(table.row_count, 1)  # title, column header, rows
            box.styles.max_height = tall
            total += tall
        self.styles.max_height = total

    def _marked(self, rows: list[rk.TableRow], cols: list[rk.Fitted]) -> list[rk.TableRow]:
        """Each kernel cell led by its headroom marker (NO_COLOR: the class without colour)."""
        keys = [f.key for f in cols]
        if "kernel" not in keys:
            return rows
        i = keys.index("kernel")
        out: list[rk.TableRow] = []
        for key, cells, tip in rows:
            row = self.rows.get(key)
            if row is not None:
                lead = headroom_marker(row.entry) + MARKER_GAP
                cells = [*cells[:i], Text.assemble(lead, cells[i]), *cells[i + 1:]]
            out.append((key, cells, tip))
        return out

    def _fit_columns(self, display: dict[str, str]) -> None:
        """Columns for the current width: side by side from WIDE_FROM columns, stacked below;
        the kernel column takes what the others leave, lower-value columns go first."""
        result = self.result
        width = self.app.size.width or 120
        self.fitted_width = width
        each = width // 2 if width >= self.WIDE_FROM else width
        longest = max((len(t) for t in display.values()), default=rk.MIN_KERNEL)
        entries = result.artifact.entries if result is not None else []
        keep = {"serving": any(e.serving_weighted_pct is not None for e in entries),
                "change": result is not None and result.history is not None,
                "route": result is None or any(e.route for e in entries)}
        hide = frozenset(k for k, kept in keep.items() if not kept) | (
            rk.COMPARE_COLUMNS if self.against is None else frozenset())
        for table_id, all_columns in TABLES.items():
            spec = rk.fit_columns(all_columns, each, longest=longest, hide=hide)
            if self.columns.get(table_id) != spec:
                self.columns[table_id] = spec
                self.query_one(f"#{table_id}", RankTable).set_columns(spec)

    def _render_titles(self, total: int, shown: int) -> None:
        suffix = f"  [filter '{self.filter_text}': {shown} of {total}]" if self.filter_text else ""
        pct = Text("By GPU time")
        pct.append(self._sort_note("by-pct"), style="cyan")
        pct.append(printable(suffix), style="italic")
        gain = Text("By expected gain")
        gain.append(self._sort_note("by-gain"), style="cyan")
        if self.result is not None and is_advisory(self.result.artifact):
            gain.append("  advisory: %gpu order rules", style="yellow")
        gain.append(printable(suffix), style="italic")
        self.query_one("#pct-title", Static).update(pct)
        self.query_one("#gain-title", Static).update(gain)

    # -- sorting --------------------------------------------------------------------------------

    def _sort_column(self, table_id: str) -> rk.Column | None:
        return rk.COLUMNS_BY_KEY.get(self.sort.get(table_id, NO_SORT)[0])

    def _sort_note(self, table_id: str) -> str:
        key, descending = self.sort.get(table_id, NO_SORT)
        if key == "rank" and not descending:
            return ""
        label = next((f.label for f in self.columns.get(table_id, []) if f.key == key), key)
        return f"  sorted by {label} {'↓' if descending else '↑'}"

    def sort_next(self, table: RankTable) -> None:
        """Sort ``table`` by its next column (rank → … → back to rank)."""
        table_id = table.id or "by-pct"
        keys = [f.key for f in self.columns.get(table_id, [])]
        current, _ = self.sort.get(table_id, NO_SORT)
        nxt = keys[(keys.index(current) + 1) % len(keys)] if current in keys else "rank"
        self.sort_by(table_id, nxt, toggle=False)

    def sort_by(self, table_id: str, key: str, *, toggle: bool) -> None:
        """Sort a table by column ``key``: numbers largest first; ``toggle`` on the column it is
        sorted by already reverses it."""
        current, descending = self.sort.get(table_id, NO_SORT)
        column = rk.COLUMNS_BY_KEY.get(key)
        if toggle and key == current:
            descending = not descending
        else:
            descending = column is not None and column.numeric and key != "change"
        self.sort[table_id] = (key, descending)
        self.refresh_rows()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header sorts that ranking by it (again: the other way)."""
        table = event.data_table
        if isinstance(table, RankTable) and table.id and event.column_key.value:
            event.stop()
            self.sort_by(table.id, event.column_key.value, toggle=True)

    # -- selection ------------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = event.data_table
        event.stop()
        if not isinstance(table, RankTable) or event.cursor_row != table.cursor_row:
            return  # a stale event from before the rows were replaced
        if table is not self.app.focused:
            return  # rows replaced or synced from the other ranking: not the user's move
        key = event.row_key.value
        if key is None or key == self.selected_key and self._in_sync():
            return
        self.select(key, source=table)
        self.post_message(self.Selected(key))

    def select(self, key: str, *, source: RankTable | None = None) -> None:
        """Select ``key`` in both tables (``source`` already has it)."""
        self.selected_key = key
        for t in (self.pct_table, self.gain_table):
            if t is not source:
                t.select_key(key)

    def select_short_name(self, short_name: str) -> bool:
        """Select the kernel named ``short_name``; False when it is not shown or already is."""
        key = next((k for k, r in self.rows.items() if r.entry.short_name == short_name), None)
        if key is None or key == self.selected_key:
            return False
        self.select(key)
        return True

    def _in_sync(self) -> bool:
        return self.pct_table.current_key == self.gain_table.current_key == self.selected_key

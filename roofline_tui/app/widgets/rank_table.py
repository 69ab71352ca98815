"""A ranked table whose rows are replaced wholesale while the cursor and scroll stay put."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from roofline_tui.app.view.rankings import Fitted, cut


class RankTable(DataTable[Text]):
    """One ranking. Rows are keyed by the entry's row key, so the cursor survives a refresh."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Drill down", id="drill-down", show=False,
                tooltip="open the selected kernel's drill-down and move focus into it"),
        Binding("up,k", "cursor_up", "Up", show=False, key_display="↑",
                tooltip="previous kernel (the other ranking follows)"),
        Binding("down,j", "cursor_down", "Down", show=False, key_display="↓",
                tooltip="next kernel (the other ranking follows)"),
        Binding("home", "first_row", "First", show=False, id="first-row",
                tooltip="first kernel of the ranking"),
        Binding("end", "last_row", "Last", show=False, id="last-row",
                tooltip="last kernel of the ranking"),
    ]

    def __init__(self, columns: Sequence[Fitted] = (), *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._column_spec = tuple(columns)
        self._tooltips: dict[str, str] = {}

    def on_mount(self) -> None:
        if self._column_spec and not self.columns:
            self.set_columns(self._column_spec)

    def set_columns(self, columns: Sequence[Fitted]) -> None:
        """Replace the columns; rows must be set again afterwards."""
        self._column_spec = tuple(columns)
        self.clear(columns=True)
        for f in self._column_spec:  # (a Text label: a str would be parsed as markup)
            self.add_column(Text(f.label), key=f.key, width=f.width)

    @property
    def column_spec(self) -> tuple[Fitted, ...]:
        return self._column_spec

    @property
    def column_keys(self) -> list[str]:
        return [f.key for f in self._column_spec]

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

    def set_rows(self, rows: Iterable[tuple[str, list[Text], str | None]], keep: str | None) -> None:
        """Replace every row (key, cells, tooltip); put the cursor back on ``keep`` and restore the
        scroll offset."""
        scroll = (self.scroll_x, self.scroll_y)
        self.clear()
        self._tooltips = {}
        widths = [f.width for f in self._column_spec]
        for key, cells, tip in rows:
            self.add_row(*(cut(c, w) for c, w in zip(cells, widths, strict=False)), key=key)
            if tip:
                self._tooltips[key] = tip
        index = self.index_of(keep)
        if index is not None:
            self.move_cursor(row=index, animate=False, scroll=False)
        self.call_after_refresh(self._restore_scroll, *scroll)
        self._update_tooltip()

    def _restore_scroll(self, x: float, y: float) -> None:
        self.scroll_to(x, y, animate=False, immediate=True)
        if self.row_count:
            self.move_cursor(row=self.cursor_row, animate=False, scroll=True)

    def select_key(self, key: str) -> None:
        index = self.index_of(key)
        if index is not None and index != self.cursor_row:
            self.move_cursor(row=index, animate=False)

    def watch_cursor_coordinate(self, old: Coordinate, new: Coordinate) -> None:
        super().watch_cursor_coordinate(old, new)
        self._update_tooltip()

    def watch_hover_coordinate(self, old: Coordinate, new: Coordinate) -> None:
        super().watch_hover_coordinate(old, new)
        self._update_tooltip(new.row)

    def row_tooltip(self, row: int) -> str | None:
        """The tooltip of row ``row``: that kernel's full (demangled) name."""
        if not 0 <= row < self.row_count:
            return None
        key = self.ordered_rows[row].key.value
        return self._tooltips.get(key or "")

    def _update_tooltip(self, row: int | None = None) -> None:
        self.tooltip = self.row_tooltip(self.cursor_row if row is None else row)

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

"""The dashboard's keys: each binding carries its own help text (the help screen and the command
palette are built from these, so a key is described once)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar, Protocol

from textual.app import SystemCommand
from textual.binding import Binding, BindingType

if TYPE_CHECKING:
    from textual.timer import Timer

APP_BINDINGS: list[BindingType] = [
    # help and quit first: the footer keeps them when the terminal is narrow
    Binding("question_mark", "help", "Help", key_display="?", id="help",
            tooltip="keys and legend"),
    Binding("q", "quit", "Quit", id="quit", tooltip="quit at once (a running analysis is "
            "abandoned)"),
    Binding("e", "export", "Export", id="export",
            tooltip="write profile_roofline.json + .md into the shown round's directory"),
    Binding("E", "export_csv", "CSV", id="export-csv",
            tooltip="write profile_roofline.csv (one row per entry) into the shown round's "
                    "directory"),
    Binding("r", "recompute", "Recompute", id="recompute",
            tooltip="analyse the shown round again now"),
    Binding("c", "show_chart", "Chart", id="chart",
            tooltip="open the roofline chart of the shown round; again: back to the rankings"),
    Binding("left_square_bracket", "step_round(-1)", "Prev", key_display="[",
            id="prev-round", tooltip="show the previous round"),
    Binding("right_square_bracket", "step_round(1)", "Next", key_display="]",
            id="next-round", tooltip="show the next round"),
    Binding("slash", "filter", "Filter", key_display="/", id="filter",
            tooltip="filter both rankings by kernel name (enter keeps it, escape clears it)"),
    Binding("s", "sort", "Sort", id="sort",
            tooltip="sort the focused ranking by its next column (or click a column header; "
                    "again to reverse)"),
    Binding("y", "copy('name')", "Copy name", show=False, id="copy-name",
            tooltip="copy the selected kernel's full name to the clipboard"),
    Binding("Y", "copy('json')", "Copy JSON", show=False, id="copy-json",
            tooltip="copy the selected entry's JSON to the clipboard"),
    Binding("a", "toggle_below", "All kernels", show=False, id="below-threshold",
            tooltip="list the Top-N kernels below the head threshold (greyed) under the heads"),
    Binding("escape", "clear_filter", "Back", show=False, id="clear-filter",
            tooltip="back to the rankings (from the chart or the drill-down); there: clear "
                    "the kernel filter"),
]


class PaletteHost(Protocol):
    """What the command palette uses of the dashboard (the App is one): its bindings, how a key
    is displayed, running an action, and the screenshot it saves."""

    BINDINGS: ClassVar[list[BindingType]]

    def get_key_display(self, binding: Binding) -> str: ...

    async def run_action(self, action: str) -> bool: ...

    def set_timer(self, delay: float, callback: Callable[[], object] | None = None) -> Timer: ...

    def action_save_svg(self) -> None: ...


def palette_commands(app: PaletteHost, stock: Iterable[SystemCommand]) -> Iterator[SystemCommand]:
    """The command palette: Textual's commands (its Screenshot replaced by one that saves in the
    current directory), then one per key binding, described by the binding's tooltip."""
    for cmd in stock:
        if cmd.title == "Screenshot":  # Textual's saves to ~/Downloads and fails without one
            continue
        yield cmd
    yield SystemCommand("Screenshot", "Save an SVG screenshot in the current directory",
                        lambda: app.set_timer(0.1, app.action_save_svg))
    for b in app.BINDINGS:
        if not isinstance(b, Binding) or b.action in ("quit", "clear_filter"):
            continue
        key = b.key_display or app.get_key_display(b)
        yield SystemCommand(b.description, f"{b.tooltip} ({key})",
                            lambda action=b.action: app.run_action(action))

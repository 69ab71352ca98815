"""The help screen: the live key bindings (each key is written once, on its Binding) and the
legend of the tables' colours and symbols."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from roofline_tui.app import view

KeySection = tuple[str, Sequence[tuple[str, str]]]


def help_renderable(sections: Sequence[KeySection]) -> RenderableType:
    """Keys grouped by where they work (built from the bindings), then the legend."""
    parts: list[RenderableType] = []
    for title, rows in sections:
        if not rows:
            continue
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold", no_wrap=True, min_width=8)
        keys.add_column()
        for key, what in rows:
            keys.add_row(key, what)
        parts += [Text(title, style="bold underline"), keys, Text("")]
    legend = Table.grid(padding=(0, 2))
    legend.add_column(no_wrap=True)
    legend.add_column()
    for cls, meaning in view.HEADROOM_MEANING:
        legend.add_row(Text(cls, style=view.HEADROOM_STYLE[cls]), meaning)
    for flag in view.FLAG_ORDER:
        legend.add_row(Text(view.FLAG_SYMBOL[flag] + " " + flag, style=view.FLAG_STYLE[flag]),
                       view.FLAG_MEANING[flag])
    for sample, style, meaning in view.OTHER_LEGEND:
        legend.add_row(Text(sample, style=style), meaning)
    parts += [Text("Legend", style="bold underline"), legend]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 100;
        max-width: 100%;
        height: auto;
        max-height: 95%;
        border: thick $accent;
        background: $surface;
        padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close", key_display="esc", id="help-close"),
    ]

    def __init__(self, sections: Sequence[KeySection]) -> None:
        super().__init__()
        self._sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "roofline dash — help"
            yield Static(help_renderable(self._sections), id="help-body")

    def action_close(self) -> None:
        self.dismiss(None)

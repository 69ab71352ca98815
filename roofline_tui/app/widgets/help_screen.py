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
    legend = Table.grid(padding=(0, 2))
    legend.add_column(no_wrap=True)
    legend.add_column()
    for cls, meaning in view.HEADROOM_MEANING:
        sample = Text.assemble(view.HEADROOM_MARKER[cls], " ", cls, style=view.HEADROOM_STYLE[cls])
        legend.add_row(sample, meaning)
    for flag in view.FLAG_ORDER:
        legend.add_row(Text(view.FLAG_SYMBOL[flag] + " " + flag, style=view.FLAG_STYLE[flag]),
                       view.FLAG_MEANING[flag])
    for sample_text, style, meaning in view.OTHER_LEGEND:
        legend.add_row(Text(sample_text, style=style), meaning)
    # the legend first: it is what a glance at the help is for; the keys follow (scroll)
    parts: list[RenderableType] = [Text("Legend", style="bold underline"), legend, Text("")]
    for title, rows in sections:
        if not rows:
            continue
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold", no_wrap=True, min_width=8)
        keys.add_column()
        for key, what in rows:
            keys.add_row(key, what)
        parts += [Text(title, style="bold underline"), keys, Text("")]
    return Group(*parts[:-1])


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
    HelpScreen > VerticalScroll:focus {
        border: thick $accent-lighten-2;
    }
    """
    # the scroll has focus from the start: the arrows and PgUp/PgDn scroll without a Tab first
    # (the app's AUTO_FOCUS names a ranking, which this screen does not have)
    AUTO_FOCUS = "#help-scroll"
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close", key_display="esc", id="help-close"),
    ]

    def __init__(self, sections: Sequence[KeySection]) -> None:
        super().__init__()
        self._sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll") as scroll:
            scroll.border_title = "roofline dash — help"
            scroll.border_subtitle = "↑ ↓ PgUp PgDn scroll · esc close"
            yield Static(help_renderable(self._sections), id="help-body")

    def action_close(self) -> None:
        self.dismiss(None)

"""The help screen: the legend of the tables' colours and symbols, what each bound type means,
then every key by where it works (each key is written once, on its Binding)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from roofline_tui.app import view

KeySection = tuple[str, Sequence[tuple[str, str]]]


def binding_rows(app: App[None], bindings: Iterable[object]) -> list[tuple[str, str]]:
    """(key as shown, what it does) for each binding, from the binding itself."""
    rows: list[tuple[str, str]] = []
    for b in bindings:
        if not isinstance(b, Binding) or b.system:
            continue
        key = b.key_display or ", ".join(
            app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))
        rows.append((key, b.tooltip or b.description))
    return rows


def key_sections(app: App[None]) -> list[KeySection]:
    """Every key of the dashboard, by where it works, from the live bindings."""
    # the chart's module is imported when its tab is first built (see DetailPanel)
    from roofline_tui.app.widgets.rank_table import RankTable
    from roofline_tui.app.widgets.roofline_chart import RooflineChart

    palette = Binding(App.COMMAND_PALETTE_BINDING, "command_palette", "Palette",
                      tooltip="command palette: every command below, by name")
    focus = [b for b in Screen.BINDINGS if isinstance(b, Binding) and "focus" in b.action]
    focus_rows = [(app.get_key_display(b), "move focus: round selector, rankings, "
                   "drill-down tabs" if b.key == "tab" else "move focus back") for b in focus]
    from textual.widgets import Select

    from roofline_tui.app.widgets.detail_panel import DetailPanel

    def key(name: str) -> str:
        return app.get_key_display(Binding(name, ""))

    drill = binding_rows(app, DetailPanel.BINDINGS) + [
        (key("enter"), "from a ranking: open the selected kernel's drill-down and focus it"),
        ("↑ ↓ PgUp PgDn", "scroll the open tab"),
        (key("escape"), "back to the rankings"),
    ]
    menu = [(key, "open the list of rounds (then ↑ ↓ and enter pick one, escape closes it)")
            for key, _ in binding_rows(app, Select.BINDINGS)]
    return [
        ("Everywhere", binding_rows(app, app.BINDINGS) + binding_rows(app, [palette])
         + focus_rows),
        ("In a ranking", binding_rows(app, RankTable.BINDINGS)),
        ("In the drill-down (tabs)", drill),
        ("In the chart", binding_rows(app, RooflineChart.BINDINGS)),
        ("In the round selector", menu),
        ("In this help", [(" ".join(key(k) for k in b.key.split(",")), "close the help")
                          for b in HelpScreen.BINDINGS if isinstance(b, Binding)]
         + [("↑ ↓ PgUp PgDn", "scroll")]),
    ]


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
    bounds = Table.grid(padding=(0, 2))
    bounds.add_column(no_wrap=True, style="bold")
    bounds.add_column()
    for bound, meaning in view.BOUND_MEANING:
        bounds.add_row(bound, meaning)
    # the legend first: it is what a glance at the help is for; the keys follow (scroll)
    parts: list[RenderableType] = [Text("Legend", style="bold underline"), legend, Text(""),
                                   Text("Bound types (the bound column)",
                                        style="bold underline"), bounds, Text("")]
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

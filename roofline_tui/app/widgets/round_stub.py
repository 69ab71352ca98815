"""What the first frame draws where the round selector goes, and the selector taking its place.

The compact :class:`~roofline_tui.app.widgets.round_select.RoundSelect` is six widgets (the
Select, its current-value row, three labels, an option-list overlay) with three stylesheets of
their own and every option rendered: a good part of the first frame's styling for one line of
it. The first frame draws a :class:`RoundStub` instead, the shown
round's name and the arrow, styled in app.tcss exactly as the compact Select draws them; the
Select replaces it right after the first frame (:func:`replace_stub`), within one batch, so no
frame shows the swap. :func:`show_rounds` and :func:`follow` update whichever is mounted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Static

from roofline_tui.core.layout import round_name
from roofline_tui.core.textsafe import printable

if TYPE_CHECKING:
    from roofline_tui.app.widgets.round_select import RoundSelect

PROMPT = "no rounds"  # what the selector shows while there are none


def round_label(r: Path) -> Text:
    """What the selector shows for round ``r``: its directory name, escaped."""
    return Text(printable(round_name(r), limit=40))


class RoundStub(Horizontal):
    """The selector as the first frame shows it: the shown round and the arrow."""

    def __init__(self, label: Text) -> None:
        super().__init__(id="round-stub")
        self._label = label

    def compose(self) -> ComposeResult:
        yield Static(self._label, id="round-stub-label")
        yield Static("▼", id="round-stub-arrow")

    def show(self, label: Text) -> None:
        if label != self._label:
            self._label = label
            self.query_one("#round-stub-label", Static).update(label)


def stub_for(rounds: Sequence[Path], shown: Path | None) -> RoundStub | None:
    """A stub showing ``shown`` (None when there is no round: the first frame then has the
    selector itself, disabled, with its prompt)."""
    if not rounds:
        return None
    return RoundStub(round_label(shown if shown is not None and shown in rounds else rounds[0]))


def new_round_select(rounds: Sequence[Path], shown: Path | None) -> RoundSelect:
    """The selector over ``rounds`` with ``shown`` selected; disabled, with its prompt, while
    there are none."""
    from roofline_tui.app.widgets.round_select import RoundSelect

    options = [(round_label(r), str(r)) for r in rounds]
    value = str(shown) if shown is not None and shown in rounds else RoundSelect.NULL
    return RoundSelect(options, prompt=PROMPT, allow_blank=not options, value=value,
                       compact=True, id="round-select", type_to_search=False,
                       disabled=not options)


def mounted_select(app: App[None]) -> RoundSelect | None:
    """The selector, once it is mounted (before: None, the stub stands in)."""
    found = app.query("#round-select")
    if not found:
        return None
    from roofline_tui.app.widgets.round_select import RoundSelect

    select = found.first()
    # (in the DOM but not mounted yet, a Select cannot take options: its rows are not composed)
    return select if isinstance(select, RoundSelect) and select.is_mounted else None


def _stub(app: App[None]) -> RoundStub | None:
    stubs = app.query(RoundStub)
    return stubs.first() if stubs else None


def show_rounds(app: App[None], rounds: Sequence[Path], shown: Path | None) -> None:
    """One entry per round, ``shown`` selected (the stub: shows ``shown``); no Changed posted."""
    select = mounted_select(app)
    if select is not None:
        with app.prevent(select.Changed):
            select.show_rounds(rounds, shown)
        return
    stub = _stub(app)
    if stub is not None and rounds:
        stub.show(round_label(shown if shown is not None and shown in rounds else rounds[0]))


def follow(app: App[None], shown: Path | None, rounds: Sequence[Path]) -> None:
    """Select ``shown`` if it is not selected yet; no Changed posted."""
    select = mounted_select(app)
    if select is not None:
        with app.prevent(select.Changed):
            select.follow(shown, rounds)
        return
    stub = _stub(app)
    if stub is not None and shown is not None and shown in rounds:
        stub.show(round_label(shown))


async def replace_stub(app: App[None],
                       current: Callable[[], tuple[Sequence[Path], Path | None]]) -> None:
    """The selector takes the stub's place, in one batch: no frame shows both, or neither.
    ``current`` gives the rounds and the shown one; read again once the selector is mounted,
    since what changed meanwhile went to the stub."""
    stub = _stub(app)
    parent = stub.parent if stub is not None else None
    if stub is None or not isinstance(parent, Widget):
        return
    rounds, shown = current()
    with app.batch_update():
        await parent.mount(new_round_select(rounds, shown), before=stub)
        await stub.remove()
    now = current()
    if now != (rounds, shown):
        show_rounds(app, *now)

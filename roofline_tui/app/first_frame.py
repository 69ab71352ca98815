"""What the dashboard builds after its first frame, and what stands in for it until then.

The first frame shows the header lines and the rankings' rows; everything it does not show is
built right after it: the round selector (a stub draws it until then, see
:mod:`.widgets.round_stub`), the drill-down's tabs (:meth:`DetailPanel.build`), the filter box
(hidden until ``/``) and the keys footer; their modules (the tabs, the footer) are imported then
too, the help screen's when ``?`` opens it. The cyclic collector is paused from the compose until
the first frame is drawn: the start-up builds long-lived widgets, not garbage, and each of the
hundred or so passes it would run meanwhile walks the new widgets again.

The rest is posted once the first frame is drawn, not run in the after-refresh callbacks
themselves: those run one after the other, so every other callback waiting for that frame would
wait for the whole build too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from textual.app import App
from textual.widget import Widget

from roofline_tui.app.widgets import round_stub
from roofline_tui.core.bulk import CollectorPause

if TYPE_CHECKING:
    from roofline_tui.app.lifecycle import QuitGate
    from roofline_tui.app.session import Session
    from roofline_tui.app.watch import Watchers
    from roofline_tui.app.widgets.detail_panel import DetailPanel
    from roofline_tui.app.widgets.filter_box import FilterBox


class RestHost(Protocol):
    """What the build after the first frame uses of the dashboard besides Textual's App (the
    App is both): the rounds, the quit gate, the drill-down to build, and the watchers to start
    (once, what was built is said in ``rest_built``)."""

    session: Session
    quit_gate: QuitGate
    rest_built: asyncio.Event
    watch_enabled: bool
    watchers: Watchers
    before_watchers: Callable[[], Awaitable[object]] | None

    @property
    def detail(self) -> DetailPanel: ...

    def render_detail(self) -> None: ...

# each App's one pause of the collector (core.bulk.CollectorPause), from compose to the frame
_pauses: WeakKeyDictionary[App[None], CollectorPause] = WeakKeyDictionary()


def pause_collector(app: App[None]) -> None:
    """Pause the collector until :func:`resume_collector` (once per App; a collector already
    off stays off)."""
    if app not in _pauses:
        _pauses[app] = pause = CollectorPause()
        pause.pause()


def resume_collector(app: App[None]) -> None:
    """End ``app``'s pause (after the first frame, or on quit)."""
    pause = _pauses.get(app)
    if pause is not None:
        pause.resume()


async def build_rest(app: App[None], host: RestHost) -> None:
    """After the first frame: the round selector, the tabs, the filter box and the keys footer,
    then the watchers (a quit meanwhile waits for them). ``app`` is mounted into, ``host`` gives
    the dashboard's parts; the dashboard passes itself as both."""
    from roofline_tui.app.widgets.footer import KeysFooter

    resume_collector(app)
    s = host.session

    async def selector() -> None:
        await round_stub.replace_stub(app, lambda: (list(s.rounds), s.shown))

    async def bottom() -> None:
        await app.mount(*bottom_widgets(app), KeysFooter())

    if not await host.quit_gate.around(selector, host.detail.build, bottom):
        return
    host.rest_built.set()
    host.render_detail()
    if host.watch_enabled:
        start = host.watchers.start_after(host.before_watchers, s.watched_inputs)
        app.run_worker(start, group="watch-start", exit_on_error=False, name="watch start")


def filter_box(app: App[None]) -> FilterBox | None:
    """The filter box, once it is mounted."""
    found = app.query("#filter")
    if not found:
        return None
    from roofline_tui.app.widgets.filter_box import FilterBox

    box = found.first()
    return box if isinstance(box, FilterBox) else None


def bottom_widgets(app: App[None]) -> list[Widget]:
    """What docks at the bottom before the keys footer: the filter box (unless ``/`` already
    mounted it)."""
    from roofline_tui.app.widgets.filter_box import FilterBox

    return [] if filter_box(app) is not None else [FilterBox()]


def open_filter(app: App[None]) -> None:
    """``/``: show the filter box and focus it (mounted first when ``/`` came before it)."""
    box = filter_box(app)
    if box is not None:
        box.open()
        return
    from roofline_tui.app.widgets.filter_box import FilterBox

    new = FilterBox()
    app.mount(new)
    app.call_after_refresh(new.open)

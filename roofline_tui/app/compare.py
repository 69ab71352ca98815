"""``roofline dash PROFILE --against OTHER``: the shown round compared op by op with another run,
kept current when either side changes.

:class:`Against` holds what is compared with and the last comparison; it knows nothing of the
App: its ``post`` is the Rankings widget's (which shows it and handles its messages), and each
comparison runs
on a daemon thread (``core.api.compare_with``: B analysed with what its own directory holds,
then the engine's diff), so the dashboard never waits for it and quitting never waits either.
Each start takes a ticket; an outcome whose ticket is not the newest is dropped, so a slow
comparison of a round no longer shown never overwrites a newer one.

:class:`~roofline_tui.app.watch.AgainstWatcher` watches B's tree and posts
:class:`~roofline_tui.app.messages.AgainstChanged`: the App then starts the comparison again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from textual.message import Message

from roofline_tui.app.messages import CompareReady
from roofline_tui.app.view.compare import Comparison
from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.api import RoundResult, RoundSources
from roofline_tui.core.textsafe import printable


class Against:
    """The other side of the compare view and its latest comparison."""

    def __init__(self, path: Path, sources: RoundSources | None = None,
                 options: AnalyzeOptions | None = None) -> None:
        self.path = Path(path)
        # where outcomes go (thread-safe): the rankings' post_message once they are mounted
        self.post: Callable[[Message], object] = lambda _message: None
        self.sources = sources
        self.options = options
        self.comparison: Comparison | None = None
        self.error: str | None = None
        self.ticket = 0          # the newest comparison started
        self.compared: object = None  # the A result the shown comparison was made from
        self.generation = 0      # bumped with every accepted outcome (a render key)
        self._made_from: object = None  # the A result the comparison shown was made from

    @property
    def waiting(self) -> bool:
        """A comparison is running whose outcome has not come back yet."""
        return self.ticket > self.generation

    def start(self, result: RoundResult | None, *, force: bool = False) -> bool:
        """Compare ``result`` (the shown round) with B on a thread, unless it is what the shown
        comparison was made from (``force``: B changed). False when nothing was started."""
        if result is None or (not force and result is self.compared):
            return False
        self.ticket += 1
        self.compared = result
        threading.Thread(target=self._run, args=(result, self.ticket), daemon=True,
                         name="compare").start()
        return True

    def _run(self, result: RoundResult, ticket: int) -> None:
        from roofline_tui.core.api import compare_with

        try:
            diff, other = compare_with(result, self.path, self.options, self.sources)
        except (ValueError, OSError) as exc:
            self.post(CompareReady(ticket, None, printable(str(exc), limit=300)))
            return
        except Exception as exc:  # noqa: BLE001 - a failed comparison is a line, not a crash
            self.post(CompareReady(ticket, None, printable(f"{type(exc).__name__}: {exc}",
                                                           limit=300)))
            return
        self.post(CompareReady(ticket, Comparison.of(other.round_dir, diff, other), None))

    def accept(self, message: CompareReady) -> bool:
        """Take an outcome if it is the newest comparison's; True when the view must redraw."""
        if message.ticket != self.ticket:
            return False
        self.generation = self.ticket
        self.comparison, self.error = message.comparison, message.error
        self._made_from = self.compared
        return True

    def comparison_for(self, result: RoundResult | None) -> Comparison | None:
        """The comparison made from ``result`` (None while that one is still running: the
        last one was another round's, and its ratios are not this round's)."""
        return self.comparison if result is not None and result is self._made_from else None

"""How the dashboard ends when it is told to from outside: SIGTERM (``kill``, a supervisor) and
SIGHUP (the terminal went away) shut it down exactly like ``q``: the event loop stops the App,
Textual restores the terminal (alternate screen, mouse tracking, cursor, tty mode), and no temp
file of an export is left behind.

The handlers are the event loop's own (``loop.add_signal_handler``): they run between two
callbacks of the loop, so an export, which runs on the loop, is never cut in half. A SIGHUP that
was ignored when we started (``nohup``) stays ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable

from roofline_tui.core.store import remove_live_temps

TERMINATING = ("SIGTERM", "SIGHUP")


def catch_terminating_signals(stop: Callable[[], object]) -> Callable[[], None]:
    """Call ``stop`` on SIGTERM or SIGHUP; returns what puts the previous handling back."""
    loop = asyncio.get_running_loop()
    caught: list[int] = []
    for name in TERMINATING:
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) is signal.SIG_IGN:
            continue
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, OSError):
            loop.add_signal_handler(signum, stop)
            caught.append(signum)

    def release() -> None:
        for signum in caught:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, OSError):
                loop.remove_signal_handler(signum)
        caught.clear()

    return release


def clean_up() -> None:
    """What quitting leaves behind, removed: temp files of writes in progress, our locks."""
    remove_live_temps()


class QuitGate:
    """A quit asked while the widgets after the first frame are being mounted waits until they
    are (about 0.1 s): Textual tearing down a TabbedContent in the middle of its mount fails in
    the tabs' own ``on_mount`` ("No Tab with id …") and prints that at exit."""

    def __init__(self, quit_now: Callable[[], object]) -> None:
        self.quit_now = quit_now
        self.building = False
        self.asked = False

    def request(self) -> None:
        if self.building:
            self.asked = True
        else:
            self.quit_now()

    async def around(self, *builds: Callable[[], Awaitable[object]]) -> bool:
        """Run the ``builds`` in turn with quits held; False when one was asked (it is carried
        out then)."""
        self.building = True
        try:
            for build in builds:
                await build()
        finally:
            self.building = False
        if self.asked:
            self.quit_now()
            return False
        return True

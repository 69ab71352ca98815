"""How the dashboard ends when it is told to from outside: SIGTERM (``kill``, a supervisor) and
SIGHUP (the terminal went away) shut it down exactly like ``q``: the event loop stops the App,
Textual restores the terminal (alternate screen, mouse tracking, cursor, tty mode), and no temp
file of an export is left behind.

On a real terminal the handlers only note the signal and schedule the quit on the event loop
(``loop.call_soon_threadsafe``): no lock, no I/O of ours, no logging. The quit itself runs
between two callbacks of the loop, so an export, which runs on the loop, is never cut in half.
A SIGHUP that was ignored when we started (``nohup``) stays ignored.

Ending is guaranteed by a :class:`~.watchdog.Watchdog` thread (:mod:`.watchdog`): the terminal
driver (:mod:`.terminal`, see :func:`guarded`) makes and starts it, and on a real terminal the
handlers here hand it the signal; once a quit is asked it ends the process if the normal way
does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from roofline_tui.app.watchdog import Watchdog, watchdog_of

TERMINATING = ("SIGTERM", "SIGHUP")


def guarded(driver_class: type[Any]) -> type[Any]:
    """The driver the dashboard runs on: Textual's terminal driver with a writer that never
    blocks forever and a watchdog (:mod:`.terminal`); any other driver as it is."""
    if driver_class.__module__ == "textual.drivers.linux_driver" \
            and driver_class.__name__ == "LinuxDriver":
        from roofline_tui.app.terminal import GuardedDriver

        return GuardedDriver
    return driver_class


def catch_terminating_signals(app: object, stop: Callable[[], object],
                              gate: QuitGate | None = None) -> Callable[[], None]:
    """Call ``stop`` on SIGTERM or SIGHUP; returns what puts the previous handling back. On a
    real terminal (a watchdog for ``app``) through :meth:`Watchdog.on_signal`, and every quit
    through ``gate`` starts the watchdog's clock."""
    watchdog = watchdog_of(app)
    if watchdog is not None and threading.current_thread() is threading.main_thread():
        return _watch_signals(watchdog, stop, gate)
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


def _watch_signals(watchdog: Watchdog, stop: Callable[[], object],
                   gate: QuitGate | None) -> Callable[[], None]:
    watchdog.loop, watchdog.quit = asyncio.get_running_loop(), stop
    if gate is not None:
        gate.on_request = watchdog.ask
    saved: list[tuple[int, Any]] = []
    for name in TERMINATING:
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) is signal.SIG_IGN:
            continue
        with contextlib.suppress(ValueError, OSError):
            saved.append((signum, signal.signal(signum, watchdog.on_signal)))
    watchdog.caught = frozenset(s for s, _ in saved)
    wakeup = -1
    with contextlib.suppress(ValueError, OSError):
        wakeup = signal.set_wakeup_fd(watchdog.wakeup_fd, warn_on_full_buffer=False)

    def release() -> None:
        for signum, previous in saved:
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, previous)
        saved.clear()
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(wakeup)

    return release


class QuitGate:
    """A quit asked while the widgets after the first frame are being mounted waits until they
    are (about 0.1 s): Textual tearing down a TabbedContent in the middle of its mount fails in
    the tabs' own ``on_mount`` ("No Tab with id …") and prints that at exit."""

    def __init__(self, quit_now: Callable[[], object]) -> None:
        self.quit_now = quit_now
        self.building = False
        self.asked = False
        self.on_request: Callable[[], object] | None = None  # told of every quit asked
        self.quitting = False

    def request(self) -> None:
        if self.on_request is not None:
            self.on_request()
        if self.building:
            self.asked = True
        else:
            self._quit()

    def _quit(self) -> None:
        if not self.quitting:  # (a signal and the hang-up it comes with quit once)
            self.quitting = True
            self.quit_now()

    async def around(self, *builds: Callable[[], Awaitable[object]]) -> bool:
        """Run the ``builds`` in turn with quits held; False when one was asked (it is carried
        out then)."""
        self.building = True
        try:
            for build in builds:
                await build()
        finally:  # (a build that fails does not lose the quit asked meanwhile)
            self.building = False
            if self.asked:
                self._quit()
        return not self.asked

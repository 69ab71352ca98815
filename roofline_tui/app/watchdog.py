"""What makes sure a dashboard on a real terminal that is asked to end does end: its
:class:`Watchdog`, with what ending leaves behind removed (:func:`clean_up`). Kept apart from
:mod:`.lifecycle` (the signals, the quit) and :mod:`.terminal` (the driver) so that both import
it and neither the other: the driver makes and starts the watchdog, the signal handlers tell it.

Ending is guaranteed by a :class:`Watchdog` thread. It learns of a signal from the wakeup
descriptor (written by the interpreter's C handler, whatever the main thread is doing), of a
terminal gone from a hang-up on the tty (or from a write that fails) and of ``q`` from the quit
itself. Once a quit is asked, the process ends by the normal way, or the watchdog ends it: when
the event loop made no progress for :data:`STUCK_S`, when the quit is :data:`CAP_S` old, or
:data:`GONE_S` after the terminal went away. Ending it restores the tty mode and the screen
(when the terminal is still there), removes the temp files of writes in progress and exits with
status 0, as ``q`` does. Why it is needed: Textual writes to the terminal from one thread
through a queue of 30 entries; a write that fails (a closed pty answers EIO) ends that thread,
and the next 30 writes of the main thread then wait forever for room in the queue, holding the
event loop that the handlers of ``loop.add_signal_handler`` depend on: SIGTERM was never acted
on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import termios
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from weakref import WeakKeyDictionary

from roofline_tui.core.store import remove_live_temps

# Once a quit is asked: the event loop may make no progress for this long (seconds), the quit
# may take this long in all, and a terminal that went away is given this long, before the
# watchdog ends the process.
STUCK_S = 1.0
CAP_S = 5.0
GONE_S = 0.8
PING_S = 0.1  # how often the watchdog asks the event loop for a sign of life
# what Textual writes on the way out: keyboard protocol, alternate screen, cursor, focus events,
# mouse reporting, bracketed paste, line wrap
RESTORE_SCREEN = ("\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l\x1b[?1000l\x1b[?1003l\x1b[?1015l"
                  "\x1b[?1006l\x1b[?2004l\x1b[?7h")
_HUNG_UP = select.POLLHUP | select.POLLERR | select.POLLNVAL


class Watchdog:
    """Makes sure a dashboard asked to end does end (see the module's text). Its state is plain
    attributes, written by the signal handler, the writer thread or the loop and read here:
    nothing in it takes a lock that a signal could interrupt."""

    def __init__(self, fds: Sequence[int]) -> None:
        self.fds = tuple(dict.fromkeys(fds))  # the terminal's descriptors: input, output
        self.gone = False  # the terminal went away: nothing more is written to it
        self.signalled: int | None = None  # the signal that asked the quit
        self.asked_at: float | None = None  # when a quit was asked (monotonic)
        self.beat = 0.0  # the event loop's last sign of life after that
        self.mode_before: list[Any] | None = None  # the tty mode to put back
        self.caught: frozenset[int] = frozenset()  # the signals whose handlers are ours
        self.loop: asyncio.AbstractEventLoop | None = None
        self.quit: Callable[[], object] | None = None  # runs on the loop
        self._read, self._poke = os.pipe()
        for fd in (self._read, self._poke):
            os.set_blocking(fd, False)
        self._done = self._started = False
        self._thread = threading.Thread(target=self._watch, daemon=True, name="dash watchdog")

    @property
    def wakeup_fd(self) -> int:
        """Where the interpreter writes the number of each signal it catches."""
        return self._poke

    def start(self) -> None:
        if not self._started and not self._done:
            self._started = True
            self._thread.start()

    def on_signal(self, signum: int, _frame: object) -> None:
        """The SIGTERM / SIGHUP handler: note it and schedule the quit on the loop, nothing
        else."""
        self.signalled = signum
        loop, quit_ = self.loop, self.quit
        if loop is not None and quit_ is not None:
            try:
                loop.call_soon_threadsafe(quit_)
            except RuntimeError:  # the loop is closed: the App is over already
                pass

    def ask(self) -> None:
        """A quit was asked (``q``, a signal, the terminal gone): start the clock."""
        if self.asked_at is None:
            self.asked_at = time.monotonic()
            self._wake()

    def hang_up(self) -> None:
        """The terminal went away (a hang-up on it, or a write failed): write nothing more,
        quit, and end the process soon whatever happens."""
        if self.gone:
            return
        self.gone = True
        self.ask()
        loop, quit_ = self.loop, self.quit
        if loop is not None and quit_ is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(quit_)

    def finished(self) -> None:
        """The App is over and its driver closed: nothing left to watch."""
        self._done = True
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._poke, b"\0")

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        watching = set(self.fds)
        for fd in watching:
            poller.register(fd, 0)  # (a hang-up or an error is reported all the same)
        try:
            while not self._done:
                wait = None if self.asked_at is None else int(PING_S * 1000)
                for fd, events in poller.poll(wait):
                    if fd == self._read:
                        self._drain()
                    elif events & _HUNG_UP and watching:
                        for tty in watching:
                            poller.unregister(tty)
                        watching.clear()
                        self.hang_up()
                if self.asked_at is not None and not self._done:
                    self._check(time.monotonic())
        finally:
            for fd in (self._read, self._poke):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            while data := os.read(self._read, 512):
                if any(b in self.caught for b in data):
                    self.ask()  # (the handler schedules the quit once the main thread runs)

    def _check(self, now: float) -> None:
        asked = self.asked_at if self.asked_at is not None else now
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._alive)
        stalled = now - max(asked, self.beat)
        if (stalled >= STUCK_S or now - asked >= CAP_S
                or (self.gone and now - asked >= GONE_S)):
            self.end_now()

    def _alive(self) -> None:
        self.beat = time.monotonic()

    def end_now(self) -> None:
        """End the process here and now, leaving what ``q`` leaves: the tty mode and the screen
        put back (when the terminal is still there), no temp file of a write in progress."""
        try:
            if not self.gone:
                self._restore_terminal()
            clean_up()
        finally:
            os._exit(0)

    def _restore_terminal(self) -> None:
        if not self.fds:
            return
        if self.mode_before is not None:
            with contextlib.suppress(OSError, termios.error, ValueError):
                termios.tcsetattr(self.fds[0], termios.TCSANOW, self.mode_before)
        # a descriptor of our own, not blocking: the shell's shares the terminal's flags
        with contextlib.suppress(OSError, ValueError):
            out = os.open(os.ttyname(self.fds[-1]), os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            try:
                os.write(out, RESTORE_SCREEN.encode())
            finally:
                os.close(out)


# the watchdog of each App running on a real terminal (made by its driver, .terminal)
_watchdogs: WeakKeyDictionary[object, Watchdog] = WeakKeyDictionary()


def watchdog_for(app: object, fds: Sequence[int]) -> Watchdog:
    """The watchdog of ``app`` (made on the first call)."""
    found = _watchdogs.get(app)
    if found is None:
        found = _watchdogs[app] = Watchdog(fds)
    return found


def watchdog_of(app: object) -> Watchdog | None:
    """The watchdog of ``app`` if its driver made one (it runs on a real terminal), else None."""
    return _watchdogs.get(app)


def clean_up() -> None:
    """What quitting leaves behind, removed: temp files of writes in progress, our locks."""
    remove_live_temps()

"""The terminal driver of the dashboard: Textual's own, with a writer that never blocks forever.

Textual writes to the terminal from one thread fed by a queue of 30 entries. When a write
fails (a closed pseudo-terminal answers EIO) that thread ends, and the main thread's next
writes wait forever for room in the queue: the event loop stops, and with it every way a
signal had to end the dashboard. Here:

* :class:`GuardedWriter` writes with ``os.write`` (no lock of a Python file object is held
  while a write waits on the terminal); a failed write tells the :class:`~.watchdog.Watchdog`
  that the terminal went away, and from then on every write is dropped;
* a write never waits for room longer than a moment once a quit is asked, and the writer's
  stop waits a bounded time for what is queued (a terminal that stopped reading keeps it);
* :class:`GuardedDriver` starts the watchdog, hands it the tty mode to put back, and replaces
  Textual's writer by this one as soon as application mode started; a read that fails (EIO)
  is a hang-up too, not a traceback.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
from queue import Empty, Full, Queue
from typing import IO, TYPE_CHECKING, Any

from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread
from textual.drivers.linux_driver import LinuxDriver

from roofline_tui.app.watchdog import Watchdog, watchdog_for

if TYPE_CHECKING:
    from textual.app import App

WAIT_STEP_S = 0.1  # a full queue is looked at again this often
ENDING_WAIT_S = 0.3  # once a quit is asked, a write waits at most this long for room
STOP_WAIT_S = 0.5  # the writer's stop waits this long for what is queued to be written


class GuardedWriter(WriterThread):
    """Textual's writer thread, made safe for a terminal that goes away or stops reading."""

    def __init__(self, file: IO[str], watchdog: Watchdog) -> None:
        super().__init__(file)
        self.watchdog = watchdog
        self._fd = file.fileno()
        self._encoding = getattr(file, "encoding", None) or "utf-8"
        self._texts: Queue[str | None] = Queue(MAX_QUEUED_WRITES)

    def write(self, text: str) -> None:
        waited = 0.0
        while not self.watchdog.gone:
            try:
                self._texts.put(text, timeout=WAIT_STEP_S)
                return
            except Full:  # the terminal is slow to read: wait, unless we are on our way out
                if self.watchdog.asked_at is not None or self.watchdog.signalled is not None:
                    waited += WAIT_STEP_S
                    if waited >= ENDING_WAIT_S:
                        return

    def flush(self) -> None:
        return

    def run(self) -> None:
        while True:
            texts = [self._texts.get()]
            with contextlib.suppress(Empty):  # what else is queued goes out in the same write
                while texts[-1] is not None:
                    texts.append(self._texts.get_nowait())
            last = texts[-1]
            if not self.watchdog.gone:
                self._write_all("".join(t for t in texts if t is not None))
            if last is None:
                return

    def _write_all(self, text: str) -> None:
        data = memoryview(text.encode(self._encoding, "replace"))
        while data and not self.watchdog.gone:
            try:
                data = data[os.write(self._fd, data):]
            except BlockingIOError:  # (someone made the descriptor non-blocking)
                select.select([], [self._fd], [], WAIT_STEP_S)
            except (OSError, ValueError):  # EIO: the terminal went away
                self.watchdog.hang_up()

    def stop(self) -> None:
        with contextlib.suppress(Full):
            self._texts.put(None, timeout=STOP_WAIT_S)
        self.join(STOP_WAIT_S)


class GuardedDriver(LinuxDriver):
    """Textual's Linux/macOS driver with a :class:`GuardedWriter` and a watchdog."""

    def __init__(self, app: App[Any], *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._out = sys.__stderr__  # what Textual draws on
        fds = (self.fileno,) if self._out is None else (self.fileno, self._out.fileno())
        self.watchdog = watchdog_for(app, fds)

    def start_application_mode(self) -> None:
        super().start_application_mode()  # type: ignore[no-untyped-call]
        if self.attrs_before is not None:
            self.watchdog.mode_before = self.attrs_before
        textual_writer = self._writer_thread
        if self._out is not None and textual_writer is not None \
                and not isinstance(textual_writer, GuardedWriter):
            textual_writer.stop()  # (it wrote what starts application mode: a few bytes)
            self._writer_thread = GuardedWriter(self._out, self.watchdog)
            self._writer_thread.start()
        self.watchdog.start()

    def _sigcont_application(self, *args: Any) -> None:
        """SIGCONT: Textual starts application mode again (after ``^Z``). A hang-up sends one
        too: a terminal that is gone is not started again."""
        if self.watchdog.gone:
            return
        try:
            termios.tcgetattr(self.fileno)
        except (termios.error, OSError, ValueError):
            return
        super()._sigcont_application(*args)

    def run_input_thread(self) -> None:
        """Textual's input loop; a read that fails (EIO: the terminal went away) ends the
        dashboard like a hang-up, not with a traceback."""
        try:
            super().run_input_thread()
        except OSError:
            self.watchdog.hang_up()

    def close(self) -> None:
        super().close()
        if not self._app.is_running:  # (a suspend closes too, and resumes)
            self.watchdog.finished()

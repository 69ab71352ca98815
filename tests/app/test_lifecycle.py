"""The dashboard's surroundings (issue 25 items 4-7): signals end it like ``q``, no terminal is a
one-line refusal, an unwritable stderr never blocks quitting, a tiny terminal is not laid out
again and again. Real ``roofline dash`` processes on a pseudo-terminal, and Pilot."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import make_app, settle

LEAVE_ALT_SCREEN = b"\x1b[?1049l"
SHOW_CURSOR = b"\x1b[?25h"
MOUSE_OFF = b"\x1b[?1000l"


class Terminal:
    """A pseudo-terminal of ``rows`` x ``cols`` with ``roofline dash`` running on it."""

    def __init__(self, profile: Path, *, rows: int = 40, cols: int = 120,
                 stderr: int | None = None) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.mode_before = termios.tcgetattr(self.slave)
        self.out = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "roofline_tui", "dash", str(profile)],
            stdin=self.slave, stdout=self.slave,
            stderr=self.slave if stderr is None else stderr,
            start_new_session=True, cwd=profile)

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    return

    def wait_for(self, text: bytes, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while text not in self.out:
            assert time.monotonic() < end, f"{text!r} never appeared"
            assert self.proc.poll() is None, f"exited with {self.proc.returncode}"
            self.read(0.1)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def exit_status(self, timeout: float = 15) -> int:
        end = time.monotonic() + timeout
        while self.proc.poll() is None:
            assert time.monotonic() < end, "the dashboard did not exit"
            self.read(0.1)
        self.read(0.2)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal(profile: Path) -> Iterator[list[Terminal]]:
    made: list[Terminal] = []
    yield made
    for t in made:
        t.close()


def temps(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_dashboard_like_q(profile: Path, terminal: list[Terminal],
                                            signame: str) -> None:
    t = Terminal(profile)
    terminal.append(t)
    t.wait_for(b"By GPU time")
    t.wait_for(b"Quit")  # the keys footer: what follows the first frame is mounted
    t.type(b"e")  # an export, then at once the signal: it is finished or never begun
    t.proc.send_signal(getattr(signal, signame))
    assert t.exit_status() == 0
    tail = t.out[-600:]
    assert LEAVE_ALT_SCREEN in tail and SHOW_CURSOR in tail and MOUSE_OFF in tail, \
        t.out[-6000:].decode("utf-8", "replace")  # what the dashboard printed at the end
    assert termios.tcgetattr(t.slave) == t.mode_before  # the tty mode is back: no `reset`
    assert temps(profile) == []
    json_out = profile / "round_2" / "profile_roofline.json"
    if json_out.exists():
        assert (profile / "round_2" / "profile_roofline.md").exists()


def test_an_unwritable_stderr_never_blocks_quitting(profile: Path,
                                                    terminal: list[Terminal]) -> None:
    with open("/dev/full", "wb") as full:
        t = Terminal(profile, stderr=full.fileno())
    terminal.append(t)
    t.wait_for(b"By GPU time")  # drawn on the terminal all the same
    t.type(b"q")
    assert t.exit_status() == 0
    assert termios.tcgetattr(t.slave) == t.mode_before


@pytest.mark.parametrize("which", ["stdin", "stdout"])
def test_no_terminal_is_a_one_line_refusal(profile: Path, which: str) -> None:
    master, slave = pty.openpty()
    try:
        streams = {"stdin": slave, "stdout": slave}
        streams[which] = subprocess.DEVNULL if which == "stdin" else subprocess.PIPE
        done = subprocess.run([sys.executable, "-m", "roofline_tui", "dash", str(profile)],
                              stdin=streams["stdin"], stdout=streams["stdout"],
                              stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and f"{which} is not a terminal" in lines[0]
    assert lines[0].startswith("roofline dash: ") and "roofline analyze" in lines[0]


def count_layouts(app: object) -> list[int]:
    """How many times the screen is laid out again, counted from now on."""
    from textual.screen import Screen

    seen = [0]
    original = Screen._refresh_layout

    def counting(self: Screen, *args: object, **kwargs: object) -> None:
        seen[0] += 1
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    app.screen._refresh_layout = counting.__get__(app.screen)  # type: ignore[attr-defined]
    return seen


async def test_a_tiny_terminal_is_not_laid_out_again_and_again(profile: Path) -> None:
    """Issue 25 item 7: in a pane a few cells wide a scrollbar appeared and vanished on every
    frame (40-60 % CPU while idle). At every size, once settled, nothing is laid out again."""
    app = make_app(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        seen = count_layouts(app)
        busy = []
        for width, height in [(1, 1), (2, 6), (3, 24), (4, 24), (6, 13), (11, 8), (20, 5),
                              (80, 24)]:
            await pilot.resize_terminal(width, height)
            await pilot.pause(0.3)
            seen[0] = 0
            await pilot.pause(0.3)
            if seen[0]:
                busy.append((width, height, seen[0]))
        assert busy == []


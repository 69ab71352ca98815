"""Issue 36 item 4: the write lock (``core.store.write_lock``) is never silently dropped.

Before the fix a directory, a symlink (dangling or not) or any other non-file named
``.NAME.lock`` beside a target made the ``open`` of the lock fail, and a failed open meant
"no lock to be had here": the write went ahead unlocked, without a word. Now such a lock path
refuses the write with one line, before the locked block runs; a FIFO at the lock path locks
like a file and is still used."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_tui.core.store import WriteProblem, atomic_write_pair, lock_path, write_lock


def _directory(lock: Path) -> None:
    lock.mkdir()


def _dangling(lock: Path) -> None:
    lock.symlink_to(lock.parent / "nowhere")


def _to_a_file(lock: Path) -> None:
    (lock.parent / "elsewhere").write_text("")
    lock.symlink_to(lock.parent / "elsewhere")


def _socket(lock: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    with contextlib.chdir(lock.parent):  # a short name: AF_UNIX paths are limited to ~100 bytes
        s.bind(lock.name)
    s.close()  # the socket file stays


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "directory": (_directory, "is a directory"),
    "dangling symlink": (_dangling, "is a dangling symlink"),
    "symlink to a file": (_to_a_file, "is a symlink"),
    "socket": (_socket, "is a socket"),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_lock_path_that_cannot_be_locked_refuses_the_write(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "profile_roofline.json"
    lock = lock_path(target)
    assert lock.name == ".profile_roofline.json.lock"
    make, said = KINDS[kind]
    make(lock)
    ran = []
    with pytest.raises(WriteProblem) as caught, write_lock(target):
        ran.append(True)
    assert ran == []  # the locked block never ran unlocked
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith("cannot write profile_roofline.json: its lock file "
                           f".profile_roofline.json.lock {said}")
    # what a command prints after its own "cannot write …:": the reason alone
    assert line == f"cannot write profile_roofline.json: {caught.value.strerror}"
    assert os.path.lexists(lock)  # what the user put there is left for them to look at


def test_the_artifact_pair_is_not_written_past_a_directory_lock(tmp_path: Path) -> None:
    (tmp_path / ".profile_roofline.json.lock").mkdir()
    pair = [(tmp_path / "profile_roofline.json", "{}\n"), (tmp_path / "profile_roofline.md", "")]
    with pytest.raises(WriteProblem, match="is a directory"):
        atomic_write_pair(pair)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".profile_roofline.json.lock"]


def test_a_fifo_at_the_lock_path_still_locks(tmp_path: Path) -> None:
    """A FIFO opens read-write without blocking and takes a flock like a file: it stays a
    working lock (another thread waiting for it times out while it is held), and the write
    under it goes through."""
    target = tmp_path / "backend_playbook.md"
    os.mkfifo(lock_path(target))
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with write_lock(target):
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert held.wait(30)
        with pytest.raises(WriteProblem, match="another writer has held"), \
                write_lock(target, timeout=0.2):
            pass
    finally:
        release.set()
        t.join(30)
    with write_lock(target):
        target.write_text("row\n")
    assert target.read_text() == "row\n"

"""Issue 32 item 4: an import that runs past about a second shows its progress on a terminal
(compressed bytes of the file, bytes inflated, events, elapsed), whatever the file's size on
disk, and says nothing when stderr is not a terminal."""

from __future__ import annotations

import gzip
import io
import json
import os
import pty
import sys
from pathlib import Path

import pytest

from roofline_tui.importers.torch import reading
from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from roofline_tui.importers.torch import import_torch


def _small_gzipped_trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(synthetic_trace(SynthSpec())).encode()))
    assert path.stat().st_size < 1 << 20  # far below the old 64 MiB threshold
    return path


def _read_all(fd: int) -> bytes:
    out = b""
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            return out
        if not chunk:
            return out
        out += chunk


def test_a_small_gzipped_trace_shows_progress_on_a_terminal_once_slow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _small_gzipped_trace(tmp_path)
    monkeypatch.setattr(reading, "PROGRESS_AFTER_S", 0.0)  # "slow" from the first read
    master, slave = pty.openpty()
    term = io.TextIOWrapper(os.fdopen(slave, "wb", buffering=0), encoding="utf-8",
                            write_through=True)
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setenv("COLUMNS", "160")
    try:
        import_torch(path, chunk=4096)
    finally:
        term.flush()
        shown = _read_all(master).decode("utf-8", "replace")
        term.close()
        os.close(master)
    assert f"importing {path.name}" in shown
    assert "MB inflated" in shown and "events" in shown


def test_nothing_is_shown_when_stderr_is_not_a_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _small_gzipped_trace(tmp_path)
    monkeypatch.setattr(reading, "PROGRESS_AFTER_S", 0.0)
    import_torch(path, chunk=4096)
    assert capsys.readouterr().err == ""


def test_a_quick_import_on_a_terminal_shows_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _small_gzipped_trace(tmp_path)
    monkeypatch.setattr(reading, "PROGRESS_AFTER_S", 3600.0)
    master, slave = pty.openpty()
    term = io.TextIOWrapper(os.fdopen(slave, "wb", buffering=0), encoding="utf-8",
                            write_through=True)
    monkeypatch.setattr(sys, "stderr", term)
    try:
        import_torch(path, chunk=4096)
    finally:
        shown = _read_all(master)
        term.close()
        os.close(master)
    assert shown == b""

"""The dashboard's own messages, as dataclasses (posted from worker threads: post_message is
thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from roofline_tui.core.api import RoundResult

if TYPE_CHECKING:
    from roofline_tui.app.view.compare import Comparison


@dataclass
class RoundAnalyzed(Message):
    """The engine finished analysing ``round_dir`` (analysis number ``seq`` of that round)."""

    round_dir: Path
    seq: int
    result: RoundResult


@dataclass
class RoundFailed(Message):
    """The engine raised while analysing ``round_dir``: ``error`` is one line."""

    round_dir: Path
    seq: int
    error: str


@dataclass
class FilesChanged(Message):
    """The watcher saw ``paths`` change (created, modified or deleted)."""

    paths: tuple[Path, ...]


@dataclass
class CompareReady(Message):
    """A comparison with the ``--against`` side came back (``ticket``: which start it answers):
    the comparison, or one line saying why there is none."""

    ticket: int
    comparison: Comparison | None
    error: str | None


class AgainstChanged(Message):
    """A file of the ``--against`` side changed."""

"""Which round a changed file belongs to, answered without resolving every round for every change.

A watcher reports a path; the round it belongs to is the round whose real directory holds the
path's real location (a change may come through any alias of a directory). Resolving every round
for every changed file made a live update grow with the rounds beside it (1.65x at 200 rounds).
:class:`RoundIndex` resolves each round once, keeps them by their real path, and answers by
walking up from the changed file: as many lookups as the path is deep.

The index is dropped whenever the directories may have changed under it: the list of rounds
changed, or the watcher reported a directory event (a directory or link created, removed or
repointed, or a path that is gone), and is rebuilt on the next question. No Textual here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline_tui.core.api import RoundResult


def real(path: Path | str) -> str:
    return os.path.realpath(path)


def is_within(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True


def is_directory_event(path: Path) -> bool:
    """A change that may move rounds around: a directory, a link, or a path that is gone."""
    try:
        return os.path.islink(path) or os.path.isdir(path) or not os.path.exists(path)
    except (OSError, ValueError):
        return True


class RoundIndex:
    """The rounds of a profile by their real directory (built on first use after a drop)."""

    def __init__(self) -> None:
        self._rounds: tuple[Path, ...] = ()
        self._by_real: dict[str, Path] | None = None

    def set_rounds(self, rounds: Sequence[Path]) -> None:
        if tuple(rounds) != self._rounds:
            self._rounds = tuple(rounds)
            self._by_real = None

    def drop(self) -> None:
        """Resolve the rounds again on the next question."""
        self._by_real = None

    def _index(self) -> dict[str, Path]:
        if self._by_real is None:
            by_real: dict[str, Path] = {}
            for r in self._rounds:
                by_real.setdefault(real(r), r)
            self._by_real = by_real
        return self._by_real

    def owner(self, changed: Path) -> Path | None:
        """The round whose tree holds ``changed`` (the innermost, when rounds nest); None: a
        shared input or something else."""
        index = self._index()
        here = real(changed)
        while True:
            if here in index:
                return index[here]
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent

    def note_changes(self, paths: Iterable[Path]) -> bool:
        """The watcher reported ``paths``: drop the index on a directory event; True if it
        did (the rounds must be looked for again)."""
        if any(is_directory_event(p) for p in paths):
            self.drop()
            return True
        return False

    def touched(self, paths: Iterable[Path], results: Mapping[Path, RoundResult],
                shown: Path | None) -> set[Path]:
        """The rounds whose analysis a change of ``paths`` can alter.

        A file inside a round belongs to that round. A file some analysis read (env_report,
        model config, peaks, priors, shared shape or counter sources) touches the rounds that
        read it. Anything else in the watched tree that is not inside a round (a new
        env_report.json that no analysis has read yet, ``kernels/`` beside the rounds) may change
        what discovery finds: every analysed round and the shown one.
        """
        readers: dict[str, set[Path]] = {}
        for r, result in results.items():
            for p in result.inputs_read:
                readers.setdefault(real(p), set()).add(r)
        touched: set[Path] = set()
        for p in paths:
            owner = self.owner(p)
            if owner is not None:
                touched.add(owner)
                continue
            where = real(p)
            hit = {r for key, rs in readers.items() for r in rs
                   if key == where or key.startswith(where.rstrip(os.sep) + os.sep)}
            touched |= hit or (set(results) | ({shown} if shown else set()))
        return touched

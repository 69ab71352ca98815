"""The dashboard's state and policy, with no Textual in it: what to analyse, what to keep, what to say.

A :class:`Session` owns the rounds of one profile directory, the last result and the note of each,
the analysis sequence numbers and the keep-last-good policy, and knows which rounds a changed file
touches. Every method that changes state returns a :class:`Decision`: which analyses to start,
what to redraw, which toasts to show, when to look again. The App carries decisions out (starts
workers, renders, notifies) and never decides on its own, so the policy is tested here directly.

Sequence numbers: each analysis of a round gets the next number for that round. A result is
applied only if its number is higher than the one on screen (results of superseded analyses still
move the screen forward under a stream of writes, never backwards). A round stays *pending* until
its latest requested analysis has arrived.

Keep-last-good: a Top-N that cannot be read (half-written, corrupt) never replaces a good result
already shown; the note above the tables says why. A Top-N that still looks half-written after
:attr:`Session.invalid_after_s` seconds without a change is called invalid, with the reader's
position of the error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path

from roofline_tui.app.decisions import Decision, Note, Toast
from roofline_tui.app.round_index import RoundIndex, is_within, real
from roofline_tui.core.api import Fingerprint, RoundResult, inputs_changed
from roofline_tui.core.layout import (
    TOPN_NAME,
    is_numeric_round,
    is_relevant_change,
    round_name,
    rounds_at,
)
from roofline_tui.core.textsafe import printable

INVALID_AFTER_S = 3.0


def is_good(result: RoundResult) -> bool:
    """A result worth keeping on screen when a later read fails."""
    return result.topn_found and result.topn_problem is None and not result.incomplete


class Session:
    """The rounds of ``profile_dir`` and what is known about each.

    Args:
        profile_dir: a directory of ``round_*`` directories, or one round directory.
        display_name: how the directory is named on screen (tests pass a fixed one).
        watch_root: the tree the watcher covers (changes outside it are ignored unless an
            analysis read the file).
        clock: wall clock for "recomputed HH:MM:SS".
        monotonic: seconds clock for the half-written → invalid rule.
    """

    def __init__(
        self,
        profile_dir: Path,
        *,
        display_name: str | None = None,
        watch_root: Path | None = None,
        clock: Callable[[], datetime] = datetime.now,
        monotonic: Callable[[], float] = time.monotonic,
        invalid_after_s: float = INVALID_AFTER_S,
        extra_roots: Iterable[Path] = (),
    ) -> None:
        self.profile_dir = Path(profile_dir)
        self.display_name = display_name if display_name is not None else str(profile_dir)
        self.watch_root = Path(watch_root) if watch_root is not None else self.profile_dir
        # other trees the watcher covers (explicit shape/counter sources, EVAL_DIR/kernels)
        self.extra_roots = [Path(p) for p in extra_roots]
        self.clock = clock
        self.monotonic = monotonic
        self.invalid_after_s = invalid_after_s

        self._rounds: list[Path] = []
        self._slot: dict[Path, int] = {}  # each round's index in ``rounds`` (looked up, not
        # searched: a profile can hold 1,000 rounds, and every update asks where it stands)
        self.shown: Path | None = None
        self.results: dict[Path, RoundResult] = {}   # last good (or last) result per round
        self.computed_at: dict[Path, datetime] = {}
        # the inputs' fingerprint each result on screen was computed from (taken before it read)
        self.fingerprints: dict[Path, Fingerprint] = {}
        self.notes: dict[Path, Note] = {}
        self.global_note: Note | None = None      # profile directory missing / empty
        self.deleted: Path | None = None          # the shown round went away (until it is back
        self.deleted_note: Note | None = None     # or the user moves on)
        self.generation = 0                       # bumps each time a result or failure is applied
        self._seq: dict[Path, int] = {}           # last analysis requested per round
        self._applied: dict[Path, int] = {}       # last analysis whose outcome is applied
        self._pending: set[Path] = set()
        self._last_change: dict[Path, float] = {}   # when a round's inputs last changed
        self._half_written: dict[Path, RoundResult] = {}  # rounds whose Top-N looks half-written
        # the newest result of each round, kept or not: what `e` writes when the Top-N on disk
        # does not parse (what `roofline analyze` writes, with its skill_errors entry)
        self.latest: dict[Path, RoundResult] = {}
        self.index = RoundIndex()  # which round a changed path belongs to

    # -- queries -------------------------------------------------------------------------------

    @property
    def rounds(self) -> list[Path]:
        """The rounds found, in round order (do not mutate: assign a new list)."""
        return self._rounds

    @rounds.setter
    def rounds(self, found: list[Path]) -> None:
        self._rounds = found
        self._slot = {r: i for i, r in enumerate(found)}

    @property
    def busy(self) -> bool:
        """True while an analysis is running or queued."""
        return bool(self._pending)

    def is_pending(self, round_dir: Path | None) -> bool:
        return round_dir in self._pending

    @property
    def shown_result(self) -> RoundResult | None:
        return self.results.get(self.shown) if self.shown is not None else None

    @property
    def shown_note(self) -> Note | None:
        return self.notes.get(self.shown) if self.shown is not None else None

    def status_notes(self) -> list[Note]:
        """The notes shown above the tables for the shown round, most global first."""
        notes = [n for n in (self.global_note, self.deleted_note, self.shown_note) if n is not None]
        if self.shown is not None and self.shown in self._pending and self.shown not in self.results \
                and not notes:
            notes.append(Note(f"analysing {round_name(self.shown)}…", "information"))
        return notes

    def position(self) -> tuple[int, int] | None:
        """(1-based index, count) of the shown round."""
        i = self._slot.get(self.shown) if self.shown is not None else None
        return None if i is None else (i + 1, len(self.rounds))

    def watched_inputs(self) -> list[Path]:
        """Every file an analysis on screen read outside the profile tree (to be watched)."""
        seen: dict[str, Path] = {}
        for result in self.results.values():
            for p in result.inputs_read:
                seen.setdefault(real(p), Path(p))
        return [seen[k] for k in sorted(seen)]

    # -- rounds --------------------------------------------------------------------------------

    def rescan(self, *, initial: bool = False) -> Decision:
        """Rediscover rounds: new ones join the selector, deleted ones leave it."""
        d = Decision()
        found = rounds_at(self.profile_dir)
        name = printable(self.display_name)
        if not self.profile_dir.exists():
            note: Note | None = Note(f"Profile directory {name} does not exist yet: waiting for "
                                     "it to appear")
        elif not self.profile_dir.is_dir():
            note = Note(f"{name} is not a directory", "error")
        elif not found:
            note = Note(f"{name} is not a profile directory (no round_* directories, no "
                        f"{TOPN_NAME}): waiting for one")
        else:
            note = None
        if note != self.global_note:
            self.global_note = note
            d.header = True
        if found == self.rounds and not initial:
            return d
        before = self._slot
        self.rounds = found
        added = [r for r in found if r not in before]
        removed = [r for r in before if r not in self._slot]
        self.index.set_rounds(found)
        d.options = True
        for r in removed:
            self.results.pop(r, None)
            self.latest.pop(r, None)
            self.notes.pop(r, None)
            self.computed_at.pop(r, None)
            self.fingerprints.pop(r, None)
            self._half_written.pop(r, None)
            self._pending.discard(r)  # _seq stays: a round that comes back must not accept a
            # result computed before it went away
        if self.shown is not None and self.shown in removed:
            gone = printable(round_name(self.shown), limit=60)
            self.deleted = self.shown
            self.deleted_note = Note(f"{gone} was deleted" + (
                f"; showing {printable(round_name(found[-1]), limit=60)}" if found else ""))
            d.toasts.append(Toast(f"{gone} was deleted", "warning"))
            d.merge(self._show(found[-1] if found else None))
        elif self.deleted is not None and self.deleted in added:
            # the round the user was looking at is back (rewritten in place): show it again
            back = self.deleted
            d.toasts.append(Toast(f"{printable(round_name(back), limit=60)} is back", timeout=3))
            d.merge(self._show(back))
        elif self.shown is None and found:
            d.merge(self._show(found[-1]))
        elif added and not initial:
            names = ", ".join(printable(round_name(r), limit=60) for r in added)
            d.toasts.append(Toast(f"new round: {names} (press ] or pick it top left)"))
            d.header = True
        else:
            d.header = True
        return d

    def _show(self, round_dir: Path | None) -> Decision:
        d = Decision(render=True)
        self.shown = round_dir
        if round_dir is not None and round_dir == self.deleted:
            self.deleted, self.deleted_note = None, None
        if round_dir is not None and round_dir not in self.results \
                and round_dir not in self._pending:
            d.merge(self.request(round_dir))
        return d

    def show(self, round_dir: Path) -> Decision:
        """The user picked a round."""
        if round_dir == self.shown or round_dir not in self._slot:
            return Decision()
        self.deleted, self.deleted_note = None, None  # the user moved on
        return self._show(round_dir)

    def step(self, delta: int) -> Decision:
        """The user stepped to the previous (-1) or next (+1) round."""
        if not self.rounds:
            return Decision(toasts=[Toast("no rounds yet", "warning")])
        last = len(self.rounds) - 1
        i = last if self.shown is None else self._slot.get(self.shown, last)
        j = max(0, min(last, i + delta))
        if j == i and self.shown is not None:
            where = "first" if delta < 0 else "last"
            return Decision(toasts=[Toast(f"already at the {where} round", timeout=2)])
        self.deleted, self.deleted_note = None, None
        return self._show(self.rounds[j])

    # -- analysis ------------------------------------------------------------------------------

    def request(self, round_dir: Path) -> Decision:
        """Ask for an analysis of ``round_dir``; a newer request supersedes this one."""
        seq = self._seq.get(round_dir, 0) + 1
        self._seq[round_dir] = seq
        self._pending.add(round_dir)
        self._last_change.setdefault(round_dir, self.monotonic())
        return Decision(analyze=[(round_dir, seq)], header=round_dir == self.shown)

    def recompute(self) -> Decision:
        """The user pressed ``r``: rescan, then analyse the shown round again."""
        d = self.rescan()
        r = self.shown
        if r is None:
            return d.merge(Decision(toasts=[Toast("nothing to recompute: no round found yet",
                                                  "warning")]))
        d.merge(self.request(r))
        name = printable(round_name(r), limit=60)
        result = self.results.get(r)
        if result is not None and result.display_only:
            text = f"display mode: re-reading the stored artifact of {name} (nothing to recompute)"
        else:
            text = f"recomputing {name}"
        d.toasts.append(Toast(text, timeout=2))
        return d

    def _accept(self, r: Path, seq: int) -> bool:
        if seq <= self._applied.get(r, 0) or r not in self._slot:
            return False  # older than what is applied, or the round went away meanwhile
        self._applied[r] = seq
        if seq >= self._seq.get(r, 0):
            self._pending.discard(r)
        return True

    def analyzed(self, r: Path, seq: int, result: RoundResult,
                 fingerprint: Fingerprint | None = None) -> Decision:
        """An analysis finished: keep it, keep the last good one instead, or wait.
        ``fingerprint``: its inputs' fingerprint, kept with the result when it is shown."""
        if not self._accept(r, seq):
            return Decision()
        self.latest[r] = result
        d = Decision(render=r == self.shown)
        previous = self.results.get(r)
        keep_previous = previous is not None and is_good(previous)
        name = printable(round_name(r), limit=60)
        problem = result.topn_problem
        self._half_written.pop(r, None)
        if problem is not None and problem.incomplete:
            self._half_written[r] = result
            self.notes[r] = Note(
                f"{TOPN_NAME} in {name} is being written: waiting for a complete file"
                + (" (showing the last good result)" if keep_previous else ""))
            if not keep_previous:
                self.results.pop(r, None)
            d.recheck_in = self.invalid_after_s
        elif problem is not None and result.topn_found:
            reason = printable(str(problem), limit=160)
            if keep_previous:  # maybe still being written: keep the last good state, no storm
                self.notes[r] = Note(f"{reason}: showing the last good result, waiting for a "
                                     "complete file")
            else:
                self.notes[r] = Note(reason, "error")
                self._store(r, result, fingerprint)
        else:
            if result.topn_found:
                self.notes.pop(r, None)
            elif result.display_only:
                self.notes[r] = Note(
                    f"display mode: {name} holds a stored profile_roofline.json and no "
                    f"{TOPN_NAME}; shown as it is (nothing to recompute or export)", "information")
            else:
                self.notes[r] = Note(f"No {TOPN_NAME} in {name} yet: waiting for it")
            self._store(r, result, fingerprint)
        self.generation += 1
        return d

    def _store(self, r: Path, result: RoundResult, fingerprint: Fingerprint | None) -> None:
        self.results[r] = result
        self.computed_at[r] = self.clock()
        if fingerprint is None:
            self.fingerprints.pop(r, None)
        else:
            self.fingerprints[r] = fingerprint

    def inputs_checked(self, current: Mapping[Path, Fingerprint]) -> Decision:
        """The watchers are attached and ``current`` is what each round's inputs are now. A
        round whose shown result was computed from other inputs changed while nothing watched
        (between its analysis and the watchers' start): analyse it again."""
        d = Decision()
        now = self.monotonic()
        for r, fp in current.items():
            if r not in self._slot or r in self._pending:
                continue  # gone, or a newer analysis is coming anyway
            if r in self.fingerprints and inputs_changed(self.fingerprints[r], fp):
                self._last_change[r] = now
                d.merge(self.request(r))
        return d

    def failed(self, r: Path, seq: int, error: str) -> Decision:
        """The engine raised (it should not): say so in place, keep what is shown."""
        if not self._accept(r, seq):
            return Decision()
        self.notes[r] = Note(f"analysis failed: {printable(error, limit=160)}", "error")
        self.generation += 1
        return Decision(render=r == self.shown)

    def tick(self) -> Decision:
        """Time passed: a Top-N still half-written after ``invalid_after_s`` without a change is
        invalid; say so, and where the reader stopped."""
        d = Decision()
        now = self.monotonic()
        for r, result in list(self._half_written.items()):
            if r in self._pending:
                continue  # a newer analysis will decide
            waited = now - self._last_change.get(r, now)
            if waited + 1e-6 < self.invalid_after_s:
                d.recheck_in = min(d.recheck_in or 1e9, self.invalid_after_s - waited)
                continue
            del self._half_written[r]
            problem = result.topn_problem
            name = printable(round_name(r), limit=60)
            where = printable(problem.reason if problem is not None else "unreadable", limit=160)
            kept = r in self.results
            self.notes[r] = Note(
                f"{TOPN_NAME} in {name} is invalid: {where}; unchanged for "
                f"{self.invalid_after_s:g} s" + (" (showing the last good result)" if kept else ""),
                "error")
            self.generation += 1
            if r == self.shown:
                d.render = True
        return d

    # -- file changes --------------------------------------------------------------------------

    def touched_rounds(self, paths: Iterable[Path]) -> set[Path]:
        """The rounds whose analysis a change of ``paths`` can alter (see
        :meth:`RoundIndex.touched`)."""
        return self.index.touched(paths, self.results, self.shown) & self._slot.keys()

    def changed(self, paths: Iterable[Path]) -> Decision:
        """Files changed on disk: rediscover rounds when they may have moved (a directory event,
        a file in no known round, a named round's Top-N: they are ordered by it), re-analyse the
        rounds the changes touch."""
        read = {real(p) for p in self.watched_inputs()}
        changed = [Path(p) for p in paths if real(p) in read or any(
            is_within(p, root) and is_relevant_change(p, root)
            for root in (self.watch_root, *self.extra_roots))]
        if not changed:
            return Decision()
        moved = self.index.note_changes(changed) or any(
            (owner := self.index.owner(p)) is None
            or (p.name == TOPN_NAME and not is_numeric_round(owner)) for p in changed)
        d = self.rescan() if moved else Decision()
        now = self.monotonic()
        for r in sorted(self.touched_rounds(changed)):
            self._last_change[r] = now
            d.merge(self.request(r))
        d.header = True
        return d

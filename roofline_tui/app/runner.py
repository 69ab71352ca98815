"""The analyses behind the dashboard: one thread per running analysis, at most one per round.

:class:`AnalysisRunner` starts an analysis of a round on a daemon thread and sends its outcome back
as a :class:`~roofline_tui.app.messages.RoundAnalyzed` or
:class:`~roofline_tui.app.messages.RoundFailed` message. While a round is being analysed, newer
requests for it wait, and only the newest of them runs next: a burst of writes costs at most two
analyses. At start-up the App may wait a moment for the first results
(:meth:`AnalysisRunner.wait_first`), so that a quick round shows in the very first frame.

Why plain threads and not Textual's ``@work(thread=True)``:

* quitting must not wait for an analysis. Thread workers run in the event loop's default
  executor, whose threads are joined when the interpreter exits, so ``q`` during a long analysis
  would hang until it finished; a daemon thread is simply abandoned;
* an exclusive worker group *cancels* the running worker when a new one starts, and a thread
  cannot be cancelled: the old analysis would run on, and a stream of writes would pile them
  up. Here a request made while one runs is queued and only its newest sequence number runs;
* the first-result wait blocks ``on_mount`` on a :class:`threading.Event`; a worker's outcome
  only comes back through the event loop that is then blocked.

Each outcome carries the fingerprint of the round's inputs taken *before* the analysis read them,
so a change made while it read shows as a difference later (see :meth:`inputs_fingerprint`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from roofline_tui.app.messages import RoundAnalyzed, RoundFailed
from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.api import (
    Fingerprint,
    RoundCache,
    RoundSnapshot,
    RoundSources,
    file_fingerprint,
    inputs_fingerprint,
)
from roofline_tui.core.api import analyze as analyze_round
from roofline_tui.core.layout import round_name

Outcome = RoundAnalyzed | RoundFailed


@dataclass
class InputsChecked(Message):
    """The inputs of the analysed rounds, fingerprinted once the watchers were attached."""

    current: dict[Path, Fingerprint]


class AnalysisRunner:
    """Runs analyses of rounds on daemon threads; outcomes go to ``post`` (thread-safe)."""

    def __init__(self, post: Callable[[Message], object], sources: RoundSources,
                 options: AnalyzeOptions | None) -> None:
        self.post = post
        self.sources = sources
        self.options = options
        # sibling rounds kept by their inputs' fingerprint: a recompute re-reads only what changed
        self.round_cache: RoundCache[RoundSnapshot] = RoundCache()
        self.analysing: dict[Path, int] = {}  # round -> sequence number of its running analysis
        self._queued: dict[Path, int] = {}     # round -> newest sequence number waiting for it
        self._fingerprints: dict[tuple[Path, int], Fingerprint] = {}  # (round, seq) -> inputs
        # the first analyses' way back while the App waits for them (see wait_first)
        self._handoff = threading.Lock()
        self._first_wait: threading.Event | None = None
        self._first_arrived: list[Outcome] = []
        self._check_when_done: set[Path] = set()  # running when the watchers attached

    def watchers_attached(self, analysed: Iterable[Path], rounds: Iterable[Path]) -> None:
        """The watchers see changes from now on; a change made before (after an analysis read
        its files, while the first frame was drawn) they never report. Compare each analysed
        round's inputs with those its result was computed from now, and each round still being
        analysed once it is done."""
        self._check_when_done = set(self.analysing) & set(rounds)
        self.check_inputs([r for r in analysed if r not in self.analysing])

    @property
    def all_checked(self) -> bool:
        """No round waits for its inputs to be compared once its analysis is done."""
        return not self._check_when_done

    def start(self, r: Path, seq: int) -> None:
        """Analyse ``r`` (request number ``seq``), or queue it behind the running analysis."""
        if r in self.analysing:
            self._queued[r] = max(seq, self._queued.get(r, 0))
            return
        self.analysing[r] = seq
        threading.Thread(target=self._run, args=(r, seq), daemon=True,
                         name=f"analyze {round_name(r)}").start()

    def wait_first(self, analyses: Iterable[tuple[Path, int]], timeout: float) -> list[Outcome]:
        """Start ``analyses`` and wait up to ``timeout`` seconds for all of them; the outcomes
        that arrived in time are returned, later ones come back as messages."""
        wait = self._first_wait = threading.Event()
        for r, seq in analyses:
            self.start(r, seq)
        wait.wait(timeout)
        with self._handoff:
            self._first_wait = None
            arrived, self._first_arrived = self._first_arrived, []
        return arrived

    def finished(self, message: Outcome) -> Fingerprint | None:
        """The App took ``message``: start what is queued for its round; returns the inputs'
        fingerprint the analysis started from."""
        r = message.round_dir
        self.analysing.pop(r, None)
        queued = self._queued.pop(r, None)
        if queued is not None:
            self.start(r, queued)
        elif r in self._check_when_done:  # analysed while the watchers attached: compare now
            self._check_when_done.discard(r)
            self.check_inputs([r])
        return self._fingerprints.pop((r, message.seq), None)

    def inputs_fingerprint(self, round_dir: Path) -> Fingerprint:
        """What an analysis of ``round_dir`` reads, fingerprinted (the priors file too)."""
        priors = self.options.priors_path if self.options is not None else None
        return (inputs_fingerprint(round_dir, self.sources, self.options),
                file_fingerprint(priors) if priors is not None else None)

    def check_inputs(self, rounds: list[Path]) -> None:
        """Fingerprint the inputs of ``rounds`` on a thread; posts :class:`InputsChecked`."""
        def fingerprint_all() -> None:
            self.post(InputsChecked({r: self.inputs_fingerprint(r) for r in rounds}))

        threading.Thread(target=fingerprint_all, daemon=True, name="inputs check").start()

    def _run(self, round_dir: Path, seq: int) -> None:
        message: Outcome
        try:
            # before anything is read: a change made while it reads shows as a difference
            self._fingerprints[(round_dir, seq)] = self.inputs_fingerprint(round_dir)
            result = analyze_round(round_dir, self.sources, self.options,
                                   cache=self.round_cache)
        except Exception as exc:  # the engine should not raise; if it does, say so in place
            message = RoundFailed(round_dir, seq, f"{type(exc).__name__}: {exc}")
        else:
            message = RoundAnalyzed(round_dir, seq, result)
        with self._handoff:
            if self._first_wait is not None:  # the App is waiting for the first results
                self._first_arrived.append(message)
                if len(self._first_arrived) >= len(self.analysing):
                    self._first_wait.set()
                return
        self.post(message)

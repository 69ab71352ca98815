"""Which serving steps a Top-N sums: the steady-state window (issue 32, item 3).

A serving trace starts with warm-up steps (first graph replays, allocator growth, JIT) and
often ends in the middle of a step. The steps are indexed 0, 1, … in the order they were
recorded (their span's start), and one of three rules keeps a half-open range ``[start, stop)``:

* ``--steps A:B``: exactly Python's slice ``A:B`` over the recorded steps (either end may be
  omitted; negative ends are not accepted). An empty or out-of-range window is a usage error;
* ``--skip-warmup N``: drop the first N steps, keep the rest;
* otherwise, automatically: the longest run of consecutive steps whose GPU time (the kernels
  each step launched, joined by correlation) stays within :data:`BAND` of the median GPU time
  of the steps of the same regime (prefill steps against prefill steps, decode against decode,
  so a run that alternates them is not broken by the difference between the two). Of equally
  long runs the latest is kept (warm-up happens at the start). When fewer than
  :data:`MIN_AUTO_STEPS` steps are recorded, or the longest run holds fewer than
  :data:`MIN_KEPT_SHARE` of them, no step is dropped: the trace shows no steady state to choose,
  and the choice says so (``--steps`` settles it).

:func:`kept_steps` is the one function callers use; it only decides the window and never
looks at kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# ±25 %: a steady decode step varies by a few percent (batch composition, KV growth); the
# first replays of a graph and allocator warm-up run 2-3x slower. A quarter either side keeps
# the first and rejects the second with a wide margin on both sides.
BAND = 0.25
MIN_AUTO_STEPS = 3  # with fewer, a median says nothing about which step is the odd one
MIN_KEPT_SHARE = 0.5  # a "steady" run shorter than half the trace is not a steady state

How = Literal["auto", "--steps", "--skip-warmup"]


class StepWindowError(ValueError):
    """A ``--steps`` / ``--skip-warmup`` value that does not fit the recorded steps (one line)."""


@dataclass(frozen=True)
class StepRequest:
    """What the command line asked: a slice, a warm-up count, or nothing (automatic)."""

    start: int | None = None
    stop: int | None = None
    sliced: bool = False
    skip_warmup: int | None = None


@dataclass(frozen=True)
class Window:
    """The steps kept: ``[start, stop)`` of ``recorded``, how and why."""

    start: int
    stop: int
    recorded: int
    how: How
    reason: str

    @property
    def kept(self) -> int:
        return self.stop - self.start

    @property
    def dropped(self) -> int:
        return self.recorded - self.kept

    def keeps(self, k: int) -> bool:
        return self.start <= k < self.stop


def parse_steps(text: str) -> StepRequest:
    """``A:B`` (either side may be empty) as a request; a one-line StepWindowError otherwise."""
    parts = text.split(":")
    if len(parts) != 2:
        raise StepWindowError(f"--steps {text!r}: expected A:B (0-based, half-open, as a "
                              "Python slice, e.g. 2:10 or 2:)")
    ends: list[int | None] = []
    for part in parts:
        part = part.strip()
        if not part:
            ends.append(None)
        elif part.isascii() and part.isdigit():
            ends.append(int(part))
        else:
            raise StepWindowError(f"--steps {text!r}: {part!r} is not a step index (a "
                                  "whole number >= 0)")
    start, stop = ends
    if start is not None and stop is not None and stop <= start:
        raise StepWindowError(f"--steps {text!r}: keeps no step (B must be above A)")
    return StepRequest(start=start, stop=stop, sliced=True)


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _auto(gpu_us: Sequence[float], regimes: Sequence[int]) -> Window:
    n = len(gpu_us)
    if n < MIN_AUTO_STEPS:
        return Window(0, n, n, "auto", f"{n} step(s) recorded, under {MIN_AUTO_STEPS}: all kept "
                      "(too few to tell a warm-up step)")
    medians = {r: _median([t for t, q in zip(gpu_us, regimes) if q == r]) for r in set(regimes)}
    inside = [abs(t - medians[r]) <= BAND * medians[r] for t, r in zip(gpu_us, regimes)]
    best = (0, 0)  # (start, stop); ties: the later run (>=)
    k = 0
    while k < n:
        if not inside[k]:
            k += 1
            continue
        j = k
        while j < n and inside[j]:
            j += 1
        if j - k >= best[1] - best[0]:
            best = (k, j)
        k = j
    band = f"±{BAND:.0%}"
    start, stop = best
    if stop - start < MIN_KEPT_SHARE * n:
        return Window(0, n, n, "auto", f"no steady window: the longest run within {band} of "
                      f"the median step GPU time holds {stop - start} of {n} steps; all kept "
                      "(--steps A:B chooses)")
    return Window(start, stop, n, "auto", f"auto steady-state window: the longest run of steps "
                  f"whose GPU time is within {band} of the median of their regime")


def kept_steps(gpu_us: Sequence[float], request: StepRequest | None = None,
               regimes: Sequence[int] | None = None) -> Window:
    """The window of recorded steps to sum, from each step's GPU time (µs, in recorded order)
    and its regime (any int per step; all one regime when None). ``request`` from the command
    line replaces the automatic choice; a request that does not fit raises StepWindowError."""
    n = len(gpu_us)
    regs = list(regimes) if regimes is not None else [0] * n
    if request is None or (not request.sliced and request.skip_warmup is None):
        return _auto(gpu_us, regs)
    if request.skip_warmup is not None:
        w = request.skip_warmup
        if w >= n:
            raise StepWindowError(f"--skip-warmup {w}: the trace records {n} step(s); "
                                  "it would keep none")
        return Window(w, n, n, "--skip-warmup", f"--skip-warmup {w}: the first {w} step(s) "
                      "dropped")
    start = 0 if request.start is None else request.start
    stop = n if request.stop is None else request.stop
    if start >= n or stop > n:
        raise StepWindowError(f"--steps {request.start if request.start is not None else ''}:"
                              f"{request.stop if request.stop is not None else ''}: the trace "
                              f"records {n} step(s) (0 to {n - 1})")
    return Window(start, stop, n, "--steps", f"--steps {start}:{stop}")

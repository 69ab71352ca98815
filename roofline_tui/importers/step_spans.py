"""Serving-step ranges on a timeline (NVTX in an nsys export, roctx in an rpd trace): which
step holds a launch, and the Top-N's ``serving`` block from the steps found.

A range whose text is a vLLM / SGLang / ATOM step label (:func:`~roofline_tui.importers.steps.
parse_step_label`) is a step; a kernel belongs to the innermost step of its launching thread
that holds its launch call's time.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roofline_tui.core.coerce import integer, number

from roofline_tui.importers.common import ServingInfo
from roofline_tui.importers.steps import StepRecord, parse_step_label, phase_aggregates

STEP_LOOKBACK = 16  # step ranges looked at before a launch time (nesting depth)


@dataclass
class StepSpans:
    """Step ranges per thread, sorted by start, with their records."""

    by_tid: dict[int, list[tuple[float, float, int]]] = field(default_factory=dict)
    records: list[StepRecord] = field(default_factory=list)
    phases: list[str | None] = field(default_factory=list)
    starts: dict[int, list[float]] = field(default_factory=dict)

    def add(self, tid: int, start: float, end: float, rec: StepRecord) -> None:
        self.records.append(rec)
        self.phases.append(phase_of(rec))
        self.by_tid.setdefault(tid, []).append((start, end, len(self.records) - 1))

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[Any, Any, Any, Any]]) -> StepSpans:
        """The spans of ``(start, end, thread, text)`` rows (values as a table holds them):
        a range whose text is a serving step label is a step; a dummy step, a range without
        numbers or one ending before it starts is not."""
        out = cls()
        for start, end, thread, text in ranges:
            if not isinstance(text, str):
                continue
            rec = parse_step_label(text)
            s, e = number(start), number(end)
            if rec is None or rec.dummy or s is None or e is None or e < s:
                continue
            out.add(integer(thread, nonneg=False) or 0, s, e, rec)
        out.seal()
        return out

    def seal(self) -> None:
        for tid, spans in self.by_tid.items():
            spans.sort()
            self.starts[tid] = [s for s, _e, _i in spans]

    def at(self, tid: int, t: float) -> int | None:
        """The innermost step range of thread ``tid`` holding time ``t``."""
        spans = self.by_tid.get(tid)
        if not spans:
            return None
        k = bisect.bisect_right(self.starts[tid], t) - 1
        for j in range(k, max(k - STEP_LOOKBACK, -1), -1):  # nested ranges: a few back
            s, e, i = spans[j]
            if s <= t <= e:
                return i
        return None


def phase_of(rec: StepRecord) -> str | None:
    """prefill for a step with context tokens, decode for generation only (the torch
    importer's rule)."""
    if rec.dummy or rec.phase == "idle":
        return None
    if rec.phase in ("prefill_only", "mixed"):
        return "prefill"
    return "decode" if rec.generation is not None else None


def serving_info(steps: StepSpans) -> ServingInfo:
    """The Top-N's ``serving`` block from the steps that have a phase."""
    recs = [r for r, ph in zip(steps.records, steps.phases, strict=True) if ph is not None]
    decode = [r for r in recs if phase_of(r) == "decode"]
    return ServingInfo(
        n_prefill_steps=sum(1 for r in recs if phase_of(r) == "prefill"),
        n_decode_steps=len(decode),
        decode_batches=[int(r.generation.requests or r.generation.sq or 0)
                        for r in decode if r.generation is not None],
        phases=phase_aggregates(recs),
        families=sorted({r.family for r in recs}),
        problems=sorted({p for r in recs for p in r.problems})[:8],
        backfilled=sorted({b for r in recs for b in r.backfilled})[:8],
    )

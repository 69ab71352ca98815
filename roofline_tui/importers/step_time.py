"""The step as a whole: how a step's GPU span splits into compute, communication, copies and
idle time (issue 34 item 2).

A step's span is the GPU span of the work it launched: from the first start to the last end
of the GPU rows joined to it by correlation (vLLM's GPU work runs well after the step's CPU
range closes, so the CPU range says nothing about it). Inside the span, time is cut at every
row's start and end; each piece is

* **busy** when any row runs (rows on several streams at once count once), else **idle**;
* **communication** when a collective runs, **exposed** when no compute kernel runs beside it
  (nothing hides it), **overlapped** otherwise;
* **copy** when a memcpy/memset runs, **exposed** when neither compute nor communication runs.

``busy + idle = span`` holds exactly for every step; the longest idle piece of any step is kept
too (one long wait reads differently from many launch gaps). Without serving steps the whole trace on
the device is one span (``basis: "trace"``): idle time then includes the gaps between profiled
regions, which the block says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

COMPUTE, COMM, COPY = 0, 1, 2
REGIMES = ("prefill", "decode")
_FIELDS = ("span_us", "busy_us", "idle_us", "compute_us", "comm_us", "comm_exposed_us",
           "copy_us", "copy_exposed_us", "largest_gap_us")


Intervals = list[list[float]]  # merged [start, end] pairs, in order


def _overlap(a: Intervals, b: Intervals) -> float:
    """Time two merged interval lists share (one pass over both)."""
    i = j = 0
    out = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _length(xs: Intervals) -> float:
    return sum(e - s for s, e in xs)


def _merge(a: Intervals, b: Intervals) -> Intervals:
    """The union of two merged interval lists."""
    out: Intervals = []
    for s, e in sorted(a + b):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def split_positions(ts: Sequence[float], dur: Sequence[float], kinds: Sequence[int] | None,
                    positions: Iterable[int]) -> dict[str, float]:
    """The span of the rows at ``positions`` and how it splits (module docstring): the rows
    taken in start order (already so in a trace: the sort costs a pass), each kind's
    intervals merged as they come, and the exposed parts from the merged lists' overlaps.
    ``kinds`` None: every row is compute."""
    order = sorted(positions, key=ts.__getitem__)
    out = dict.fromkeys(_FIELDS, 0.0)
    if not order:
        return out
    if kinds is None:  # every row compute: one merge, its length and gaps as it goes
        busy_us = gap = 0.0
        cur_s = ts[order[0]]
        cur_e = cur_s
        for p in order:
            s = ts[p]
            e = s + (dur[p] if dur[p] > 0 else 0.0)
            if s > cur_e:
                busy_us += cur_e - cur_s
                if s - cur_e > gap:
                    gap = s - cur_e
                cur_s = s
            if e > cur_e:
                cur_e = e
        busy_us += cur_e - cur_s
        out.update(span_us=cur_e - ts[order[0]], busy_us=busy_us, compute_us=busy_us,
                   largest_gap_us=gap)
        out["idle_us"] = max(out["span_us"] - busy_us, 0.0)
        return out
    by_kind: list[Intervals] = [[], [], []]
    busy: Intervals = []
    last_end = ts[order[0]]
    for p in order:
        s = ts[p]
        e = s + max(dur[p], 0.0)
        last_end = max(last_end, e)
        for merged in (by_kind[kinds[p]], busy):
            if merged and s <= merged[-1][1]:
                if e > merged[-1][1]:
                    merged[-1][1] = e
            else:
                merged.append([s, e])
    compute, comm, copy = by_kind
    out["span_us"] = last_end - ts[order[0]]
    out["busy_us"] = _length(busy)
    out["idle_us"] = max(out["span_us"] - out["busy_us"], 0.0)
    out["largest_gap_us"] = max((b[0] - a[1] for a, b in zip(busy, busy[1:])), default=0.0)
    out["compute_us"] = _length(compute)
    out["comm_us"] = _length(comm)
    out["comm_exposed_us"] = out["comm_us"] - _overlap(comm, compute) if comm else 0.0
    out["copy_us"] = _length(copy)
    out["copy_exposed_us"] = (out["copy_us"] - _overlap(copy, _merge(compute, comm))
                              if copy else 0.0)
    return out


def split_span(starts: Sequence[float], ends: Sequence[float], kinds: Sequence[int]
               ) -> dict[str, float]:
    """:func:`split_positions` of rows given by start and end."""
    return split_positions(starts, [e - s for s, e in zip(starts, ends, strict=True)], kinds,
                           range(len(starts)))


def step_time_block(ts: Sequence[float], dur: Sequence[float], kinds: Sequence[int] | None,
                    step_of: Sequence[int], regimes: Sequence[int], nested: int = 0
                    ) -> dict[str, Any] | None:
    """The Top-N extension's ``step_time`` block: per regime, the summed split of its steps'
    spans (``step_of[p]``: the step of row ``p``, -1 none; ``regimes[k]``: step ``k``'s regime,
    an index into :data:`REGIMES`, -1 idle/dummy). Without steps that own rows, the trace as
    one span. ``None`` without rows."""
    if not ts:
        return None
    by_step: dict[int, list[int]] = {}
    for p, k in enumerate(step_of):
        if k >= 0 and regimes[k] >= 0:
            by_step.setdefault(k, []).append(p)
    groups: list[dict[str, Any]] = []
    if by_step:
        sums: dict[int, dict[str, float]] = {}
        counts: dict[int, int] = {}
        for k, ps in by_step.items():
            split = split_positions(ts, dur, kinds, ps)
            acc = sums.setdefault(regimes[k], dict.fromkeys(_FIELDS, 0.0))
            for f in _FIELDS:
                acc[f] = max(acc[f], split[f]) if f == "largest_gap_us" else acc[f] + split[f]
            counts[regimes[k]] = counts.get(regimes[k], 0) + 1
        for r in sorted(sums):
            groups.append({"regime": REGIMES[r], "steps": counts[r],
                           **{f: round(v, 3) for f, v in sums[r].items()}})
        basis = "steps"
    else:
        split = split_positions(ts, dur, kinds, range(len(ts)))
        groups.append({"regime": None, "steps": 0, **{f: round(v, 3) for f, v in split.items()}})
        basis = "trace"
    block: dict[str, Any] = {"basis": basis, "groups": groups}
    if nested:
        block["nested"] = (f"{nested} step label(s) inside another step's span (SGLang's "
                           "step[...] inside vLLM's execute_...): the enclosing span is the "
                           "step, the inner label's aggregates are read")
    return block

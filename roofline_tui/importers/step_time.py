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

from collections.abc import Sequence
from typing import Any

COMPUTE, COMM, COPY = 0, 1, 2
REGIMES = ("prefill", "decode")
_FIELDS = ("span_us", "busy_us", "idle_us", "compute_us", "comm_us", "comm_exposed_us",
           "copy_us", "copy_exposed_us", "largest_gap_us")


def split_span(starts: Sequence[float], ends: Sequence[float], kinds: Sequence[int]
               ) -> dict[str, float]:
    """The span of these rows and how it splits (module docstring), in the rows' unit."""
    if not starts:
        return dict.fromkeys(_FIELDS, 0.0)
    edges: list[tuple[float, int, int]] = []  # (time, +1/-1, kind); ends sort before starts
    for s, e, k in zip(starts, ends, kinds, strict=True):
        edges.append((s, 1, k))
        edges.append((max(s, e), -1, k))
    edges.sort(key=lambda x: (x[0], x[1]))
    active = [0, 0, 0]
    out = dict.fromkeys(_FIELDS, 0.0)
    last = edges[0][0]
    for t, step, kind in edges:
        length = t - last
        if length > 0:
            busy = active[COMPUTE] or active[COMM] or active[COPY]
            if busy:
                out["busy_us"] += length
            elif length > out["largest_gap_us"]:
                out["largest_gap_us"] = length
            if active[COMPUTE]:
                out["compute_us"] += length
            if active[COMM]:
                out["comm_us"] += length
                if not active[COMPUTE]:
                    out["comm_exposed_us"] += length
            if active[COPY]:
                out["copy_us"] += length
                if not active[COMPUTE] and not active[COMM]:
                    out["copy_exposed_us"] += length
        active[kind] += step
        last = t
    out["span_us"] = edges[-1][0] - edges[0][0]
    out["idle_us"] = max(out["span_us"] - out["busy_us"], 0.0)
    return out


def step_time_block(ts: Sequence[float], dur: Sequence[float], kinds: Sequence[int],
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
            split = split_span([ts[p] for p in ps], [ts[p] + dur[p] for p in ps],
                               [kinds[p] for p in ps])
            acc = sums.setdefault(regimes[k], dict.fromkeys(_FIELDS, 0.0))
            for f in _FIELDS:
                acc[f] = max(acc[f], split[f]) if f == "largest_gap_us" else acc[f] + split[f]
            counts[regimes[k]] = counts.get(regimes[k], 0) + 1
        for r in sorted(sums):
            groups.append({"regime": REGIMES[r], "steps": counts[r],
                           **{f: round(v, 3) for f, v in sums[r].items()}})
        basis = "steps"
    else:
        split = split_span(ts, [t + d for t, d in zip(ts, dur, strict=True)], kinds)
        groups.append({"regime": None, "steps": 0, **{f: round(v, 3) for f, v in split.items()}})
        basis = "trace"
    block: dict[str, Any] = {"basis": basis, "groups": groups}
    if nested:
        block["nested"] = (f"{nested} step label(s) inside another step's span (SGLang's "
                           "step[...] inside vLLM's execute_...): the enclosing span is the "
                           "step, the inner label's aggregates are read")
    return block

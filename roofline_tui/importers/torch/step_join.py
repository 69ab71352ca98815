"""Serving steps joined to the GPU rows: a CPU step annotation owns the kernels whose launch lies
inside its span on its thread (only a trace without CPU annotations falls back to the GPU
mirror spans); nested labels of one step count once; the steady-state window of steps kept
(``importers.step_window``) and each step's GPU time split into compute, communication,
copies and idle (``importers.step_time``)."""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from roofline_tui.core.classify import classify as classify_op
from roofline_tui.importers import step_time
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.step_window import StepRequest, StepWindowError, Window, kept_steps
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.launches import KernelLaunches
from roofline_tui.importers.torch.rows import index_code, is_every_row
from roofline_tui.importers.torch.spans import queries_in_order
from roofline_tui.importers.torch.step_records import StepSpan, step_regime


def _outermost(steps: list[StepSpan]) -> list[StepSpan]:
    """Step spans not enclosed by another step span of the same device/thread: vLLM's
    ``execute_*`` around SGLang's ``step[...]`` is one step, not two. The enclosing span is
    kept; its record is the inner one's when only the inner label has the aggregates."""
    out: list[StepSpan] = []
    for s in sorted(steps, key=lambda s: (s.key, s.ts, -s.end)):
        if out and out[-1].key == s.key and out[-1].ts <= s.ts and s.end <= out[-1].end:
            if s.rec.has_aggregates and not out[-1].rec.has_aggregates:
                out[-1].rec = s.rec
                out[-1].regime, out[-1].m = step_regime(s.rec)
            continue
        out.append(s)
    return out


def _in_order(values: Sequence[float]) -> bool:
    return all(a <= b for a, b in zip(values, values[1:]))


def _steps_by_run(times: array[float], begin: list[float], ends: list[float],
                  step_of: array[int]) -> list[int]:
    """``step_of[p] = k`` for the rows whose time lies in step ``k`` (the last step begun at or
    before it, when the time is before that step's end), with ``times`` and ``begin`` in
    order: what bisecting ``begin`` for each row gives, one slice per step. Returns the rows
    of each step."""
    left = bisect.bisect_left
    n, steps = len(times), len(begin)
    counts = [0] * steps
    lo = left(times, begin[0]) if steps else n
    for k in range(steps):
        hi = left(times, begin[k + 1], lo) if k + 1 < steps else n
        cut = left(times, ends[k], lo, hi)
        if cut > lo:
            step_of[lo:cut] = array(step_of.typecode, [k]) * (cut - lo)
            counts[k] = cut - lo
        lo = hi
    return counts


def join_steps(col: Collector, device: int, rows: Sequence[int], launches: KernelLaunches
                ) -> tuple[list[StepSpan], array[int]]:
    """The step of every row (-1: none). A CPU step annotation owns the kernels whose launch
    (the runtime call with the kernel's correlation, a graph launch included) lies inside its
    span on the same thread: replayed kernels often run after the span has closed, so a
    kernel's own time says nothing. Without CPU annotations, the GPU mirror span around the
    kernel is used. A step's CPU and GPU mirrors are one step."""
    step_of = array(index_code(len(col.steps) + len(col.cpu_steps)), [-1]) * len(rows)
    cpu = _outermost(list(col.cpu_steps))
    gpu = _outermost([s for s in col.steps if s.key in (device, -1)])
    for s in (*cpu, *gpu):  # counted afresh: a second join (over the kept steps) starts at 0
        s.rows = 0
    right = bisect.bisect_right
    matched = 0
    # the rows of each step (of the CPU steps, then of the ones used)
    counts = [0] * len(cpu)
    if cpu:
        by_tid: dict[int, list[int]] = {}
        for k, s in enumerate(cpu):
            by_tid.setdefault(s.key, []).append(k)
        starts = {tid: [cpu[k].ts for k in ks] for tid, ks in by_tid.items()}
        cpu_end = [s.end for s in cpu]
        for p, (tid, lt) in enumerate(zip(launches.tid, launches.ts, strict=True)):
            ks = by_tid.get(tid)
            if ks is None:
                continue
            k = right(starts[tid], lt) - 1
            if k >= 0 and lt <= cpu_end[ks[k]]:
                step_of[p] = k = ks[k]
                counts[k] += 1
                matched += 1
    if matched or not gpu:
        steps = cpu
    else:
        steps = gpu
        g_ts = col.g_ts
        begin = [s.ts for s in gpu]
        ends = [s.end for s in gpu]
        every = is_every_row(rows, len(g_ts))
        if every and _in_order(begin) and queries_in_order(g_ts, rows):
            # kernels and steps both in time order: each step's kernels are one run of rows,
            # found by bisecting the kernels' times once per step, not the steps once per row
            counts = _steps_by_run(g_ts, begin, ends, step_of)
        else:
            counts = [0] * len(gpu)
            kernel_ts: Iterable[float] = g_ts if every else (g_ts[i] for i in rows)
            for p, ts in enumerate(kernel_ts):
                k = right(begin, ts) - 1
                if k >= 0 and ts < ends[k]:
                    step_of[p] = k
                    counts[k] += 1
    for k, n in enumerate(counts):
        if n:
            steps[k].rows += n
    return steps, step_of


def steps_window(col: Collector, rows: Sequence[int], steps: list[StepSpan], step_of: array[int],
                 request: StepRequest | None) -> tuple[Window | None, Sequence[int] | None]:
    """The serving steps to sum (:func:`importers.step_window.kept_steps` over each step's GPU
    time, in recorded order) and, when some are dropped, the rows kept: those of the kept
    steps, and the rows in no step whose GPU start lies from the first kept step's start up to
    the next dropped step's start. ``(None, None)`` for a trace without serving steps (a
    ``--steps`` request then is a one-line error)."""
    owned = [k for k, s in enumerate(steps) if s.rows]
    if not owned:
        if request is not None and (request.sliced or request.skip_warmup is not None):
            raise ImportProblem("--steps / --skip-warmup: the trace records no serving steps "
                                "owning GPU work of this device")
        return None, None
    order = sorted(owned, key=lambda k: (steps[k].ts, k))
    gpu = [0.0] * len(steps)
    g_dur = col.g_dur
    # (every row of the collector, in order: its durations read in place, in the same order)
    durs = g_dur if is_every_row(rows, len(g_dur)) else map(g_dur.__getitem__, rows)
    for k, d in zip(step_of, durs):
        if k >= 0:
            gpu[k] += d
    try:
        window = kept_steps([gpu[k] for k in order], request, [steps[k].regime for k in order])
    except StepWindowError as exc:
        raise ImportProblem(str(exc)) from None
    if not window.dropped:
        return window, None
    keep = {order[i] for i in range(window.start, window.stop)}
    lo = steps[order[window.start]].ts
    hi = steps[order[window.stop]].ts if window.stop < len(order) else math.inf
    g_ts = col.g_ts
    kept = array("q", (i for p, i in enumerate(rows)
                       if step_of[p] in keep or (step_of[p] < 0 and lo <= g_ts[i] < hi)))
    return window, kept


def split_step_time(col: Collector, rows: Sequence[int], steps: list[StepSpan], step_of: array[int]
               ) -> dict[str, Any] | None:
    """Each step's GPU span split into compute, communication, copies and idle time
    (:mod:`importers.step_time`), summed per regime; the trace as one span without steps."""
    g_name, g_ts, g_dur, names = col.g_name, col.g_ts, col.g_dur, col.names
    kind_of: dict[int, int] = {}
    for nid in {g_name[i] for i in rows}:  # per kernel name, once
        c = classify_op(names[nid])
        kind_of[nid] = (step_time.COMM if c.op_class == "comm" else step_time.COPY
                        if c.op_subclass in ("copy", "host_copy") else step_time.COMPUTE)
    # all compute (no collective, no copy): no per-row kinds to build or sweep; nor where
    # the rows that are not lie outside the steps split (each step's split is then the
    # all-compute one, exactly: see _compute_in_steps)
    regimes = [s.regime for s in steps]
    others = _rows_not_compute(g_name, rows, [nid for nid, k in kind_of.items() if k])
    kinds: array[int] | None = None
    if others is None or (others and not _compute_in_steps(others, step_of, regimes)):
        kinds = array("b", (kind_of[g_name[i]] for i in rows))
    cpu = list(col.cpu_steps)
    nested = len(cpu) - len(_outermost(cpu)) if steps and cpu else 0
    every = is_every_row(rows, len(g_ts))  # one device: the collector's own arrays, not copies
    ts = g_ts if every else array("d", (g_ts[i] for i in rows))
    dur = g_dur if every else array("d", (g_dur[i] for i in rows))
    return step_time.step_time_block(ts, dur, kinds, step_of, regimes, nested)


_FEW_OTHERS = 4096  # rows not compute looked for by searching, at most


def _rows_not_compute(g_name: array[int], rows: Sequence[int], other_names: list[int]
                      ) -> list[int] | None:
    """The positions of the rows whose kernel (name id) is one of ``other_names`` (a
    collective, a copy), found by searching ``g_name`` (every row of the collector, in order)
    when they are few; None when they are not looked for that way."""
    if not other_names:
        return []
    if not is_every_row(rows, len(g_name)) or sum(map(g_name.count, other_names)) > _FEW_OTHERS:
        return None
    found: list[int] = []
    for nid in other_names:
        at = -1
        for _ in range(g_name.count(nid)):
            at = g_name.index(nid, at + 1)
            found.append(at)
    return found


def _compute_in_steps(others: Iterable[int], step_of: array[int], regimes: list[int]) -> bool:
    """Whether :func:`step_time.step_time_block` splits steps (a row lies in a step of a
    regime) and every row that is not compute (positions ``others``: a collective, a copy)
    lies outside them (in no step, or in an idle/dummy one): then each step it splits holds
    compute rows only, and its all-compute path (``kinds`` None) gives the same split, number
    for number, as the per-kind one (the same intervals merged in the same order, the same
    sums); a trace without such steps is split as one span, where the kinds count."""
    if not any(k >= 0 and regimes[k] >= 0 for k in step_of):
        return False
    for p in others:
        k = step_of[p]
        if k >= 0 and regimes[k] >= 0:
            return False
    return True


def sums_of(col: Collector, rows: Sequence[int]) -> dict[int, list[Any]]:
    """Kernel name id -> [calls, total µs] over ``rows`` (in row order)."""
    sums: dict[int, list[Any]] = {}
    g_name, g_dur = col.g_name, col.g_dur
    for i in rows:
        acc = sums.get(g_name[i])
        if acc is None:
            acc = sums[g_name[i]] = [0, 0.0]
        acc[0] += 1
        acc[1] += g_dur[i]
    return sums


def window_block(window: Window, dropped_us: float, total_us: float) -> dict[str, Any]:
    """The Top-N extension's ``steps`` block (``core.topn_ext.StepWindow``)."""
    return {"recorded": window.recorded, "start": window.start, "stop": window.stop,
            "how": window.how, "reason": window.reason,
            "dropped_gpu_ms": round(dropped_us / 1000, 6),
            "dropped_share": round(dropped_us / total_us, 6) if total_us > 0 else 0.0}

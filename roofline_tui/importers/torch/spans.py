"""Span algorithms over the collector's arrays: for each query time (a launch), the innermost span
(a ``cpu_op``, a MoE stage op, a module call) of the same thread enclosing it, by a sweep when
the spans and queries are in order and by search otherwise; the step a GPU row's launch lies in."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from itertools import chain, islice, pairwise, starmap
from operator import gt as _gt, lt as _lt

from roofline_tui.importers.torch.rows import index_code, is_every_row


def _ordered_starts(starts: Sequence[float]) -> bool:
    """Whether every start is strictly after the one before it (no ties, no NaN)."""
    return all(map(_lt, starts, islice(starts, 1, None)))


def _spans_in_order(c_ts: array[float], c_end: array[float], spans: Sequence[int]) -> bool:
    """Whether ``spans`` already run by start, and by end from the latest among equal starts
    (what a trace written in time order gives): then sorting would leave them as they are."""
    every = is_every_row(spans, len(c_ts))
    if _ordered_starts(c_ts if every else array("d", map(c_ts.__getitem__, spans))):
        return True  # strictly increasing starts: no tie for the ends to order
    prev_ts = prev_end = 0.0
    first = True
    pairs: Iterable[tuple[float, float]] = (
        zip(c_ts, c_end) if every else ((c_ts[j], c_end[j]) for j in spans))
    for ts, end in pairs:
        if not first and (ts < prev_ts or (ts == prev_ts and end > prev_end)):
            return False
        prev_ts, prev_end, first = ts, end, False
    return True


def _holes_cut(n: int, skip: frozenset[int]) -> list[tuple[int, int]]:
    """The runs of positions below ``n`` that are not in ``skip``, as (start, stop) pairs."""
    out: list[tuple[int, int]] = []
    lo = 0
    for hole in sorted(h for h in skip if 0 <= h < n):
        if hole > lo:
            out.append((lo, hole))
        lo = hole + 1
    if lo < n:
        out.append((lo, n))
    return out


def queries_in_order(q_ts: array[float], queries: Sequence[int],
                      skip: frozenset[int] = frozenset()) -> bool:
    """Whether the times of ``queries`` (none of ``skip``) never decrease (NaN compares as
    in order, as ``t < prev`` says)."""
    if not is_every_row(queries, len(q_ts)):
        return not any(starmap(_gt, pairwise(q_ts[p] for p in queries if p not in skip)))
    if not skip:
        return not any(map(_gt, q_ts, islice(q_ts, 1, None)))
    view = memoryview(q_ts)  # the runs between the skipped, read in place
    return not any(starmap(_gt, pairwise(chain.from_iterable(
        view[lo:hi] for lo, hi in _holes_cut(len(q_ts), skip)))))


def _innermost(c_ts: array[float], c_end: array[float], spans: Sequence[int],
               q_ts: array[float], queries: Sequence[int], out: array[int],
               skip: frozenset[int] = frozenset()) -> None:
    """For each query position ``p`` (time ``q_ts[p]``; none of ``skip``) store in ``out[p]`` the
    index ``j`` of the innermost span (``c_ts[j]``..``c_end[j]``) enclosing it: the last one,
    in time order, that has begun by ``q_ts[p]`` and not ended before it. Spans and queries are
    taken in time order: sorted copies, unless already in it (typed arrays or ranges then, a
    machine word each or nothing)."""
    if not isinstance(spans, (array, range)) or not _spans_in_order(c_ts, c_end, spans):
        spans = sorted(spans, key=c_end.__getitem__, reverse=True)
        spans.sort(key=c_ts.__getitem__)  # stable: equal starts keep the outer (longer) first
    every_query = is_every_row(queries, len(q_ts))
    if not isinstance(queries, (array, range)) or not queries_in_order(q_ts, queries, skip):
        queries = sorted((p for p in queries if p not in skip), key=q_ts.__getitem__)
        skip = frozenset()
        every_query = False
    # the spans' starts and ends in that order (typed arrays: a machine word per span, not a
    # float object). Every span in index order (one thread): the arrays themselves
    same = is_every_row(spans, len(c_ts)) and len(c_end) == len(c_ts)
    s_start = c_ts if same else array("d", map(c_ts.__getitem__, spans))
    s_end = c_end if same else array("d", map(c_end.__getitem__, spans))
    # the queries in time order, with their positions (the skipped left out)
    each: Iterable[tuple[int, float]]
    if every_query and not skip:
        each = enumerate(q_ts)
    elif every_query:  # the runs between the skipped, read in place
        view = memoryview(q_ts)
        each = chain.from_iterable(zip(range(lo, hi), view[lo:hi])
                                   for lo, hi in _holes_cut(len(q_ts), skip))
    elif skip:
        each = ((p, q_ts[p]) for p in queries if p not in skip)
    else:
        each = zip(queries, map(q_ts.__getitem__, queries))
    # A sweep: the open spans form a stack (each pushed when it begins, popped once it has
    # ended: spans may overlap without nesting, so one below the top may end first and stays
    # until it surfaces). The top is kept apart, with its end, above a sentinel that never
    # ends; the top after popping at t is the innermost span still open at t (every span
    # above it ended before t).
    inf = math.inf
    stack: list[tuple[float, int]] = []
    top_end, top = inf, -1
    n_spans = len(s_start)
    si = 0
    nxt = s_start[0] if n_spans else inf
    for p, t in each:
        if nxt <= t:
            while True:
                while top_end < nxt:
                    top_end, top = stack.pop()
                stack.append((top_end, top))
                top_end, top = s_end[si], si
                si += 1
                if si == n_spans:
                    nxt = inf
                    break
                nxt = s_start[si]
                if not nxt <= t:
                    break
        while top_end < t:
            top_end, top = stack.pop()
        if top >= 0:
            out[p] = top if same else spans[top]


_SKIP_MAX = 1024  # rows without a launch skipped by position in a one-thread join


def innermost_by_thread(q_tid: array[int], q_ts: array[float], s_tid: array[int],
                         s_ts: array[float], s_end: array[float]) -> array[int]:
    """For each query ``p`` (thread ``q_tid[p]``, -1 when unknown, at time ``q_ts[p]``) the index
    of the innermost span of the same thread (``s_tid``/``s_ts``/``s_end``) enclosing it, else
    -1. Queries and spans are grouped by thread in one pass each (none when all are on one
    thread: a range then)."""
    n = len(q_tid)
    out = array(index_code(len(s_tid)), [-1]) * n
    queries_of: dict[int, Sequence[int]] = {}
    # one launching thread (a few rows without a launch, -1, aside): every position, those
    # few skipped
    skip: frozenset[int] = frozenset()
    one = max(q_tid, default=-1)
    unknown = q_tid.count(-1) if one >= 0 else 0
    if one >= 0 and unknown <= _SKIP_MAX and q_tid.count(one) + unknown == n:
        queries_of[one] = range(n)
        holes, at = [], 0
        for _ in range(unknown):
            at = q_tid.index(-1, at)
            holes.append(at)
            at += 1
        skip = frozenset(holes)
    else:
        code = index_code(n)
        by_tid: dict[int, array[int]] = {}
        for p, tid in enumerate(q_tid):
            if tid >= 0:
                queries = by_tid.get(tid)
                if queries is None:
                    by_tid[tid] = array(code, (p,))
                else:
                    queries.append(p)
        queries_of.update(by_tid)
    spans_of: dict[int, Sequence[int]] = {}
    only = next(iter(queries_of)) if len(queries_of) == 1 else None
    if only is not None and s_tid.count(only) == len(s_tid):
        spans_of[only] = range(len(s_tid))
    else:
        code = index_code(len(s_tid))
        grouped: dict[int, array[int]] = {tid: array(code) for tid in queries_of}
        for j, tid in enumerate(s_tid):
            spans = grouped.get(tid)
            if spans is not None:
                spans.append(j)
        spans_of.update(grouped)
    for tid in sorted(queries_of):
        if spans_of[tid]:
            _innermost(s_ts, s_end, spans_of[tid], q_ts, queries_of[tid], out, skip)
    return out

"""The analysis's fast paths (a trace of one device, one launching thread, kernels and steps in
time order: ranges instead of position arrays, runs instead of per-row searches) give what its
general paths give."""

from __future__ import annotations

import bisect
import random
from array import array

from roofline_tui.importers.torch.spans import innermost_by_thread
from roofline_tui.importers.torch.step_join import _steps_by_run


def _spans(rng: random.Random, n: int) -> tuple[array[float], array[float]]:
    """Spans in time order (by start, the longer first among equal starts), some nested, some
    overlapping, some touching."""
    out: list[tuple[float, float]] = []
    t = 0.0
    for _ in range(n):
        t += rng.choice([0.0, 0.5, 1.0, 3.0])
        out.append((t, t + rng.choice([0.0, 0.5, 1.0, 2.0, 6.0])))
    out.sort(key=lambda se: (se[0], -se[1]))
    return array("d", [s for s, _ in out]), array("d", [e for _, e in out])


def test_one_thread_join_is_the_grouped_join() -> None:
    """One launching thread (a few rows without a launch) and every span on it: the ranges
    path; with one more span and one more query on another thread (which change nothing for
    the first thread's rows) the grouped path. Same span for every row."""
    rng = random.Random(11)
    for _ in range(300):
        s_ts, s_end = _spans(rng, rng.randint(1, 40))
        q_ts = array("d", sorted(rng.uniform(-1, s_end[-1] + 2) for _ in range(rng.randint(1, 50))))
        q_tid = array("q", [3] * len(q_ts))
        for _hole in range(rng.randint(0, 3)):
            p = rng.randrange(len(q_ts))
            q_tid[p] = -1
            q_ts[p] = 0.0  # as _find_launches leaves a row without a launch
        s_tid = array("q", [3] * len(s_ts))
        fast = innermost_by_thread(q_tid, q_ts, s_tid, s_ts, s_end)
        general = innermost_by_thread(q_tid + array("q", [9]), q_ts + array("d", [1.0]),
                                       s_tid + array("q", [9]), s_ts + array("d", [0.0]),
                                       s_end + array("d", [5.0]))
        assert fast.tolist() == general.tolist()[:len(q_ts)]


def test_steps_by_run_is_the_per_row_bisect() -> None:
    """Kernels and GPU steps in time order are joined one run of rows per step
    (``_steps_by_run``): the same step for every row as bisecting the steps for each row, with
    equal times, equal starts, overlapping and empty steps and rows outside every step."""
    rng = random.Random(7)
    for _ in range(300):
        times = array("d", sorted(rng.choice([rng.uniform(0, 50), float(rng.randint(0, 50))])
                                  for _ in range(rng.randint(0, 60))))
        begin = sorted(float(rng.randint(-5, 55)) for _ in range(rng.randint(1, 12)))
        ends = [b + rng.choice([0.0, 0.5, 3.0, float(rng.randint(0, 30))]) for b in begin]
        want = array("i", [-1]) * len(times)
        for p, ts in enumerate(times):
            k = bisect.bisect_right(begin, ts) - 1
            if k >= 0 and ts < ends[k]:
                want[p] = k
        got = array("i", [-1]) * len(times)
        counts = _steps_by_run(times, begin, ends, got)
        assert got == want, (list(times), begin, ends)
        assert counts == [list(want).count(k) for k in range(len(begin))]


def _brute_innermost(q_tid: array[int], q_ts: array[float], s_tid: array[int],
                     s_ts: array[float], s_end: array[float]) -> list[int]:
    """The definition: of the spans on the query's thread that have begun by its time and not
    ended before it, the last in time order (by start, the longer first among equal starts,
    then in index order)."""
    out = []
    for tid, t in zip(q_tid, q_ts):
        open_ = [j for j in range(len(s_ts))
                 if tid >= 0 and s_tid[j] == tid and s_ts[j] <= t <= s_end[j]]
        out.append(max(open_, key=lambda j: (s_ts[j], -s_end[j], j)) if open_ else -1)
    return out


def test_innermost_is_the_last_open_span() -> None:
    """The sweep (one thread, several, spans and queries in time order or not, nested,
    overlapping, touching and equal spans, rows without a launch) gives the definition."""
    rng = random.Random(5)
    for case in range(400):
        threads = [3] if case % 2 else [3, 4, 8]
        spans = []
        for _ in range(rng.randint(0, 30)):
            start = float(rng.randint(0, 20)) + rng.choice([0.0, 0.5])
            spans.append((rng.choice(threads), start,
                          start + rng.choice([0.0, 0.5, 1.0, 2.0, 6.0, 15.0])))
        if case % 3:
            spans.sort(key=lambda s: (s[1], -s[2]))
        s_tid = array("q", [s[0] for s in spans])
        s_ts = array("d", [s[1] for s in spans])
        s_end = array("d", [s[2] for s in spans])
        queries = [(rng.choice(threads), rng.choice([float(rng.randint(-1, 40)),
                                                     rng.uniform(-1, 40)]))
                   for _ in range(rng.randint(1, 40))]
        if case % 5:
            queries.sort(key=lambda q: q[1])
        q_tid = array("q", [q[0] for q in queries])
        q_ts = array("d", [q[1] for q in queries])
        for _hole in range(rng.randint(0, 2)):
            p = rng.randrange(len(q_ts))
            q_tid[p], q_ts[p] = -1, 0.0  # as _find_launches leaves a row without a launch
        got = innermost_by_thread(q_tid, q_ts, s_tid, s_ts, s_end)
        assert got.tolist() == _brute_innermost(q_tid, q_ts, s_tid, s_ts, s_end), case

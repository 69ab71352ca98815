"""Each GPU row's launch (its thread and time, and whether a graph replayed it, by correlation id
or flow) and its launching op: the innermost shape-carrying ``cpu_op`` enclosing the launch,
else the one with the kernel's External id; the module path of the launch; the per-kernel
aggregates with their instances (one per signature, geometry and how the op was found)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from roofline_tui.importers.common import (
    InstanceAgg,
    KernelAgg,
    MAX_DTYPES,
    MAX_SHAPES,
    PhaseAgg,
    ServingInfo,
)
from roofline_tui.importers.torch.collector import Collector, MAX_GEOMS
from roofline_tui.importers.torch.rows import index_code, is_every_row, positions_of
from roofline_tui.importers.torch.signatures import clean_geom
from roofline_tui.importers.torch.spans import innermost_by_thread
from roofline_tui.importers.torch.step_records import PHASES, StepSpan, serving_info


_MAX_ALONG = 4  # other kernels of one launching op listed per instance
_MODULE_DEPTH = 3  # the innermost module calls a path keeps


@dataclass
class KernelLaunches:
    """For each row of interest: the launching thread and time (-1 / 0 when unknown) and
    whether the launch was a graph replay."""

    tid: array[int]
    ts: array[float]
    graph: array[int]


def _fill_launches(first: dict[int, int] | array[int], more: dict[int, list[int]],
                   out: KernelLaunches, corrs: array[int], tids: array[int],
                   tss: array[float]) -> None:
    """Give each row whose correlation id is among ``corrs`` the thread and time of the first
    such launch (rows that already have one keep it). ``first``: the first row of each id, a
    dict or an array indexed by the id (-1: none)."""
    out_tid, out_ts = out.tid, out.ts
    if isinstance(first, array) and not more:  # the common case: one loop, nothing else
        top = len(first)
        for corr, tid, ts in zip(corrs, tids, tss, strict=True):
            if 0 <= corr < top:
                p = first[corr]
                if p >= 0 and out_tid[p] < 0:
                    out_tid[p] = tid
                    out_ts[p] = ts
        return
    if isinstance(first, array):
        top = len(first)
        found = ((first[corr] if 0 <= corr < top else -1, corr, tid, ts)
                 for corr, tid, ts in zip(corrs, tids, tss, strict=True))
    else:
        where = first.get
        found = ((where(corr, -1), corr, tid, ts)
                 for corr, tid, ts in zip(corrs, tids, tss, strict=True))
    for p, corr, tid, ts in found:
        if p < 0:
            continue
        if out_tid[p] < 0:
            out_tid[p] = tid
            out_ts[p] = ts
        if more and corr in more:
            for q in more[corr]:
                if out_tid[q] < 0:
                    out_tid[q] = tid
                    out_ts[q] = ts


def find_launches(col: Collector, rows: Sequence[int]) -> KernelLaunches:
    """Link each GPU row to its launch: the runtime event with the same ``correlation``; else
    the ``ac2g``/``async`` flow start with that id (traces whose runtime events were cut)."""
    n = len(rows)
    out = KernelLaunches(array(index_code(len(col.tid_ids)), [-1]) * n, array("d", [0.0]) * n,
                    array("b", [0]) * n)
    g_corr = col.g_corr
    every = isinstance(rows, range) and rows == range(len(g_corr))  # each row, in order
    corrs: Iterable[int] = g_corr if every else (g_corr[i] for i in rows)
    # the row of each correlation id (ids below 0 match no launch); rows sharing an id
    # after the first are listed apart, which real traces never need. Ids are counters from
    # 0 in real traces: when they stay below a few times the rows, an array indexed by the id
    # holds them (a machine word each), else a dict
    first: dict[int, int] | array[int]
    more: dict[int, list[int]] = {}
    high = max(corrs, default=-1)
    if not every:
        corrs = (g_corr[i] for i in rows)
    if high < 4 * n + 4096:
        first = dense = array(index_code(n), [-1]) * (high + 1)
        for p, corr in enumerate(corrs):
            if corr < 0:
                continue
            if dense[corr] < 0:
                dense[corr] = p
            else:
                more.setdefault(corr, []).append(p)
    else:
        sparse: dict[int, int] = {}
        first = sparse
        for p, corr in enumerate(corrs):
            if corr < 0:
                continue
            if sparse.setdefault(corr, p) != p:
                more.setdefault(corr, []).append(p)
    _fill_launches(first, more, out, col.r_corr, col.r_tid, col.r_ts)
    if col.f_corr:
        _fill_launches(first, more, out, col.f_corr, col.f_tid, col.f_ts)
    if col.graph_corr:
        graph_corr, graph = col.graph_corr, out.graph
        for p, i in enumerate(rows):
            if g_corr[i] in graph_corr:
                graph[p] = 1
    return out


# how a GPU row got its launching op's signature
HOW_NONE, HOW_ENCLOSING, HOW_EXTERNAL_ID, HOW_CAPTURE = range(4)
HOW_NAMES = {HOW_ENCLOSING: "launch", HOW_EXTERNAL_ID: "external_id", HOW_CAPTURE: "capture"}


@dataclass
class Shaped:
    """Per row position: the launching op's signature id (-1: none), how it was found
    (``HOW_*``), the launch geometry id (-1: not recorded) and the module path id (an index
    into the collector's ``modules``, -1: none recorded)."""

    sig: array[int]
    how: array[int]
    geom: array[int]
    module: array[int]
    # the launching cpu_op *event* (one call of the op), -1: none; kernels launched by one
    # event belong to one logical op (a split-K main kernel and its reduce)
    event: array[int]


def module_paths(col: Collector, rows: Sequence[int], launches: KernelLaunches,
                  shaped: Shaped) -> None:
    """The module path of each launch: the innermost ``nn.Module`` call around it on the
    launching thread, with its enclosing calls (the last :data:`_MODULE_DEPTH`), e.g.
    ``Qwen2DecoderLayer/Qwen2MLP/Linear``."""
    if not col.m_ts:
        return
    path_of = array("q", [-1]) * len(col.m_ts)
    by_tid: dict[int, list[int]] = {}
    for j, tid in enumerate(col.m_tid):
        by_tid.setdefault(tid, []).append(j)
    for spans in by_tid.values():
        spans.sort(key=lambda j: (col.m_ts[j], -col.m_end[j]))
        stack: list[tuple[float, tuple[str, ...]]] = []
        for j in spans:
            while stack and stack[-1][0] <= col.m_ts[j]:  # a span ending as j starts: a sibling
                stack.pop()
            parts = ((stack[-1][1] if stack else ()) + (col.modules[col.m_name[j]],))
            parts = parts[-_MODULE_DEPTH:]
            path_of[j] = col._module_id("/".join(parts))
            stack.append((col.m_end[j], parts))
    inner = innermost_by_thread(launches.tid, launches.ts, col.m_tid, col.m_ts, col.m_end)
    module = shaped.module
    for p, j in enumerate(inner):
        if j >= 0:
            module[p] = path_of[j]


def launching_ops(col: Collector, rows: Sequence[int], launches: KernelLaunches) -> Shaped:
    """The launching op of each row: the innermost shape-carrying ``cpu_op`` on the launch's
    thread enclosing the launch; else the ``cpu_op`` with the kernel's ``External id``.

    Works on typed arrays indexed by position in ``rows`` so memory stays a few machine words
    per launch."""
    n = len(rows)
    g_ext, g_geom = col.g_ext, col.g_geom
    every = isinstance(rows, range) and rows == range(len(g_geom))
    geom = array(index_code(MAX_GEOMS), g_geom if every else (g_geom[i] for i in rows))
    module = array(index_code(len(col.modules)), [-1]) * n
    sig_code, event_code = index_code(len(col.sigs)), index_code(len(col.c_ts))
    if not n or not col.c_sig:
        return Shaped(array(sig_code, [-1]) * n, array("b", [HOW_NONE]) * n, geom, module,
                       array(event_code, [-1]) * n)
    span_of = innermost_by_thread(launches.tid, launches.ts, col.c_tid, col.c_ts, col.c_end)
    # the rows without a span (-1): found by searching when few
    holes = positions_of(span_of, -1)
    if holes is None:
        holes = [p for p, j in enumerate(span_of) if j < 0]
    # the signature of the span found (a hole reads the last span's, then is set to -1)
    c_sig = col.c_sig
    sig_of = array(sig_code, map(c_sig.__getitem__, span_of))
    how = array("b", [HOW_ENCLOSING]) * n
    for p in holes:
        sig_of[p] = -1
        how[p] = HOW_NONE
    # the launching event of each row is the span found (-1: none)
    event = span_of if span_of.typecode == event_code else array(event_code, span_of)
    del span_of
    out = Shaped(sig_of, how, geom, module, event)
    missing = {ext for ext in (g_ext[rows[p]] for p in holes) if ext >= 0}
    if missing:
        by_ext: dict[int, int] = {}
        for j, ext in enumerate(col.c_ext):
            if ext in missing and ext not in by_ext:
                by_ext[ext] = j
        for p in holes:
            j = by_ext.get(g_ext[rows[p]], -1)
            if j >= 0:
                sig_of[p] = c_sig[j]
                how[p] = HOW_EXTERNAL_ID
                event[p] = j
    return out


def _multi_kernel_events(col: Collector, rows: Sequence[int], shaped: Shaped
                         ) -> dict[int, list[int]]:
    """The launching-op events that launched kernels of several names, with the names of the
    kernels each launched (in row order, the first one first)."""
    events, g_name = shaped.event, col.g_name
    prev = -1
    for ev in events:  # every event launching at most one row: none (a quick look first)
        if ev >= 0:
            if ev <= prev:
                break
            prev = ev
    else:
        return {}
    # events are numbered densely from 0 (captured ones past the trace's), so the first
    # kernel of each is kept in a typed array indexed by the event (-1: none yet)
    first = array(index_code(len(col.names)), [-1]) * (max(events, default=-1) + 1)
    multi: dict[int, list[int]] = {}
    launched: Iterable[tuple[int, int]] = (
        zip(events, g_name) if is_every_row(rows, len(g_name))
        else ((ev, g_name[rows[p]]) for p, ev in enumerate(events)))
    for ev, nid in launched:
        if ev < 0:
            continue
        was = first[ev]
        if was < 0:
            first[ev] = was = nid
        if was != nid or ev in multi:
            multi.setdefault(ev, [was]).append(nid)
    return multi


def attach_rows(col: Collector, aggs: dict[int, KernelAgg], rows: Sequence[int],
                 top: Sequence[int], shaped: Shaped, launches: KernelLaunches,
                 steps: list[StepSpan], step_of: array[int]) -> ServingInfo | None:
    """What the entries in ``aggs`` keep of their rows (positions ``top``), in one pass:

    * the upstream ``shapes``/``dtypes``: the distinct shape sets, most launches first (at
      most ``MAX_SHAPES``), and the tensor types they carry;
    * per phase: calls, time and M (a row's phase: the regime of its step);
    * one instance per (kernel, launching op signature, geometry, how found, module): its
      calls, time, per-phase calls and time, and the other kernels its op calls launched.

    Returns the serving block's step accounting. Every sum runs in row order."""
    g_name, g_dur = col.g_name, col.g_dur
    multi = _multi_kernel_events(col, rows, shaped)
    regime_of = [s.regime for s in steps] + [-1]  # index -1 (in no step): the sentinel
    m_of = [s.m for s in steps] + [0]
    each: Iterable[tuple[int, float, int, int, int, int, int, int, int]]
    if is_every_row(rows, len(g_name)) and is_every_row(top, len(rows)):
        # (the events matter only for ops that launched several kernels, the replay flags
        # only with graph launches)
        each = zip(g_name, g_dur, shaped.sig, shaped.geom, shaped.how, shaped.module,
                   shaped.event if multi else repeat(-1), step_of,
                   launches.graph if col.graph_corr else repeat(0))
    else:
        sig_of, geom_of, how_of = shaped.sig, shaped.geom, shaped.how
        module_of, event_of, graph = shaped.module, shaped.event, launches.graph
        each = ((g_name[rows[p]], g_dur[rows[p]], sig_of[p], geom_of[p], how_of[p],
                 module_of[p], event_of[p], step_of[p], graph[p]) for p in top)
    instances, phases, replayed = _sum_rows(each, multi, regime_of, m_of)
    _shapes_and_notes(col, aggs, instances, replayed)
    _phases_and_instances(col, aggs, instances, phases)
    return serving_info(steps)


_Instances = dict[tuple[int, int, int, int, int], list[Any]]
_Phases = dict[tuple[int, int], list[Any]]


def _sum_rows(each: Iterable[tuple[int, float, int, int, int, int, int, int, int]],
              multi: dict[int, list[int]], regime_of: list[int], m_of: list[int]
              ) -> tuple[_Instances, _Phases, dict[int, int]]:
    """One pass over the rows (kernel, µs, signature, geometry, how found, module, launching
    event, step, replayed): the instances, the per-(kernel, regime) phases with their M
    histogram, and each kernel's replayed launches that have no launching op."""
    # instance key -> [calls, µs, {regime: [calls, µs]}, {other kernel: launches}, per regime:
    # (its entry in that dict, the kernel's in ``phases``)]
    instances: _Instances = {}
    # (kernel, regime) -> [calls, µs, {M: calls}]
    phases: _Phases = {}
    replayed: dict[int, int] = {}  # kernel -> its launches replayed with no launching op
    for nid, dur, sig, geom, how, module, event, k, replay in each:
        key = (nid, sig, geom, how, module)
        a = instances.get(key)
        if a is None:
            a = instances[key] = [0, 0.0, {}, {}, [None, None]]
        a[0] += 1
        a[1] += dur
        if replay and sig < 0:
            replayed[nid] = replayed.get(nid, 0) + 1
        if multi:
            others = multi.get(event)
            if others:
                seen = a[3]
                for other in set(others):
                    if other != nid:
                        seen[other] = seen.get(other, 0) + 1
        regime = regime_of[k]
        if regime < 0:
            continue
        both = a[4][regime]
        if both is None:
            per = a[2][regime] = [0, -0.0]  # (-0.0 + dur is dur, whatever its sign)
            ph = phases.get((nid, regime))
            if ph is None:
                ph = phases[(nid, regime)] = [0, 0.0, {}]
            both = a[4][regime] = (per, ph)
        per, ph = both
        per[0] += 1
        per[1] += dur
        ph[0] += 1
        ph[1] += dur
        hist = ph[2]
        m = m_of[k]
        hist[m] = hist.get(m, 0) + 1
    return instances, phases, replayed


def _shapes_and_notes(col: Collector, aggs: dict[int, KernelAgg], instances: _Instances,
                      replayed: dict[int, int]) -> None:
    """The upstream ``shapes``/``dtypes`` of each entry (most launches first), and the note on
    its replayed launches without shapes."""
    counts: dict[tuple[int, int], int] = {}
    for (nid, sig, _geom, _how, _module), a in instances.items():
        if sig >= 0:
            counts[(nid, sig)] = counts.get((nid, sig), 0) + a[0]
    for (name_id, sig), _c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        agg = aggs[name_id]
        found = col.sigs[sig]
        if found.shapes and found.shapes not in agg.shapes and len(agg.shapes) < MAX_SHAPES:
            agg.shapes.append(found.shapes)
        for t in found.dtypes:
            if t not in agg.dtypes and len(agg.dtypes) < MAX_DTYPES:
                agg.dtypes.append(t)
    for name_id, n_replayed in replayed.items():
        agg = aggs[name_id]
        agg.notes.append(f"no shapes for {n_replayed:,} of {agg.calls:,} launches: replayed from "
                         "a CUDA/HIP graph (no launching op in this trace; a graph-capture trace "
                         "gives them: --capture)")


def _phases_and_instances(col: Collector, aggs: dict[int, KernelAgg], instances: _Instances,
                          phases: _Phases) -> None:
    """Each entry's per-phase aggregates and its instances, in the order first seen."""
    # phases
    for (nid, regime), (count, total_us, hist) in phases.items():
        aggs[nid].by_phase[PHASES[regime]] = PhaseAgg(count, total_us, hist)
    # instances
    for (nid, sig, geom, how, mod), (calls, us, per_phase, along, _refs) in instances.items():
        of = col.sigs[sig] if sig >= 0 else None
        grid, block = col.geoms[geom] if geom >= 0 else (None, None)
        aggs[nid].instances.append(InstanceAgg(
            op=of.op if of else None,
            dims=of.dims if of else (),
            types=of.types if of else (),
            values=of.values if of else (),
            grid=grid, block=block,
            source=HOW_NAMES.get(how),
            module=col.modules[mod] if mod >= 0 else None,
            calls=calls, total_us=us,
            by_phase={PHASES[ph]: (c, t) for ph, (c, t) in sorted(per_phase.items())},
            with_kernels={col.names[o]: n for o, n in sorted(
                along.items(), key=lambda kv: (-kv[1], kv[0]))[:_MAX_ALONG]},
        ))

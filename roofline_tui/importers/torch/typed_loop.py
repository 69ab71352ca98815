"""The collector's fast reader: batches of msgspec-decoded :class:`Event` records
(``importers.kineto_events``), one handler per kind of event beside its general counterpart in
``torch.collector``: ``gpu`` (``Collector._add_gpu``), ``launch`` (``_add_launch``) and ``cpu_op``
(``_add_cpu_op``).

A handler takes the event (True) or leaves it untouched (False); the loop then hands the event,
as the dict it was (``event_dict``), to ``Collector._add_kind``, after moving the rows gathered
so far into the arrays. Each handler makes the general reader's checks that a decoded record
has not already passed, in the same order, so the two leave the same state (the typed-loop
tests compare them event by event). The rows taken are gathered in lists ("pending") and moved
into the arrays once enough are gathered, and before any event goes to the general path. An
absent key reads as UNSET (top level) or None (args)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from roofline_tui.importers.kineto_events import Args, Event, ID_LIMIT, event_dict
from roofline_tui.importers.torch.collector import (
    Collector,
    KIND_CPU_OP,
    KIND_FLOW,
    KIND_GPU,
    KIND_LAUNCH,
    KIND_MODULE,
    KIND_STEP,
    Pending,
    flush_pending,
)
from roofline_tui.importers.torch.values import MISS, UNSET


PENDING_ROWS = 1024  # rows gathered in lists before they move into the arrays
_TypedHandler = Callable[[Event], bool]


def _gpu_handler(col: Collector) -> tuple[_TypedHandler, Pending]:
    """A kernel/memcpy/memset event as a row of the ``g_*`` arrays."""
    lim, unset = ID_LIMIT, UNSET
    name_ids, name_id, geom_id = col.name_ids, col._name_id, col.geom_id
    lists: tuple[list[Any], ...] = tuple([] for _ in range(8))
    g_dev, g_name, g_corr, g_ext, g_ts, g_dur, g_stream, g_geom = (x.append for x in lists)

    def gpu(ev: Event) -> bool:
        args, ts, dur = ev.args, ev.ts, ev.dur
        if ev.ph != "X" or args.__class__ is not Args or ts is unset or dur is unset:
            return False
        name, dev, corr, ext = ev.name, args.device, args.correlation, args.ext
        if ext is None and args.ext_old is None:
            ext = -1
        if name.__class__ is not str or dev is None or corr is None or ext is None:
            return False
        stream, grid = args.stream, args.grid
        g_stream(stream if stream.__class__ is int and 0 <= stream < lim else -1)
        g_geom(-1 if grid is None else geom_id(grid, args.block))
        i = name_ids.get(name)
        g_dev(dev)
        g_name(i if i is not None else name_id(name))
        g_corr(corr)
        g_ext(ext)
        g_ts(ts)
        g_dur(dur)
        return True

    arrays = (col.g_dev, col.g_name, col.g_corr, col.g_ext, col.g_ts, col.g_dur, col.g_stream,
              col.g_geom)
    return gpu, ((lists[0], tuple(zip(arrays, lists))),)


def _launch_handler(col: Collector) -> tuple[_TypedHandler, Pending, Callable[[], None]]:
    """A launch API event with a correlation as a row of the ``r_*`` arrays; the third item
    adds the launches counted to the collector's counters."""
    unset = UNSET
    launch_kinds, tid_ids, graph_corr = col._launch_kinds, col.tid_ids, col.graph_corr
    lists: tuple[list[Any], ...] = ([], [], [])
    r_corr, r_tid, r_ts = (x.append for x in lists)
    runtime = launches = graphs = 0
    # the thread of the last launch taken (ints): the next is most often on the same one
    last_pid = last_tid = last_thread = -1

    def launch(ev: Event) -> bool:
        nonlocal runtime, launches, graphs, last_pid, last_tid, last_thread
        args, ts = ev.args, ev.ts
        if ev.ph != "X" or args.__class__ is not Args or ts is unset:
            return False
        name, corr, pid, tid = ev.name, args.correlation, ev.pid, ev.tid
        if (name.__class__ is not str or pid.__class__ is not int or tid.__class__ is not int
                or corr is None):
            return False
        how = launch_kinds.get(name)
        if how is None:
            return False
        if pid != last_pid or tid != last_tid:
            thread = tid_ids.get((pid, tid))
            if thread is None:
                return False
            last_pid, last_tid, last_thread = pid, tid, thread
        runtime += 1
        if how == 2:
            graphs += 1
            graph_corr.add(corr)
        elif how == 1:
            launches += 1
        r_corr(corr)
        r_tid(last_thread)
        r_ts(ts)
        return True

    def counted() -> None:
        nonlocal runtime, launches, graphs
        col.runtime_events += runtime
        col.launch_calls += launches
        col.graph_launches += graphs
        runtime = launches = graphs = 0

    arrays = (col.r_corr, col.r_tid, col.r_ts)
    return launch, ((lists[0], tuple(zip(arrays, lists))),), counted


def _cpu_op_handler(col: Collector) -> tuple[_TypedHandler, Pending, Callable[[], None]]:
    """A ``cpu_op`` whose name states no MoE stage and whose raw signature is cached (see
    :meth:`Collector._signature`) as a row of the ``c_*`` arrays; the third item adds the
    ops counted to the collector's ``cpu_ops``."""
    unset, miss, dumps = UNSET, MISS, orjson.dumps
    stages, sig_cache, sig_ids, tid_ids = col._stages, col._sig_cache, col.sig_ids, col.tid_ids
    raw_sigs: dict[bytes, int] = {}  # the id of each raw signature found in the cache
    lists: tuple[list[Any], ...] = ([], [], [], [], [])
    c_tid, c_ts, c_end, c_ext, c_sig = (x.append for x in lists)
    cpu_ops = 0
    last_pid = last_tid = last_thread = -1  # (as in _launch_handler)

    def cpu_op(ev: Event) -> bool:
        nonlocal cpu_ops, last_pid, last_tid, last_thread
        args, ts, dur = ev.args, ev.ts, ev.dur
        if ev.ph != "X" or args.__class__ is not Args or ts is unset or dur is unset:
            return False
        op = ev.name
        stage = stages.get(op) if op.__class__ is str else None
        if stage is None or stage > 0:
            return False
        dims = args.dims
        if dims is None:
            dims = args.dims_old
        if dims.__class__ is not list or not dims:
            cpu_ops += 1  # no dims: nothing to attach
            return True
        ext, pid, tid = args.ext, ev.pid, ev.tid
        if ext is None and args.ext_old is None:
            ext = -1
        if pid.__class__ is not int or tid.__class__ is not int or ext is None:
            return False
        values = args.values if stage else None
        try:
            raw_key = dumps((op, dims, args.types) if values is None
                            else (op, dims, args.types, values))
        except Exception:  # noqa: BLE001 - _signature decides what such a value is
            return False
        sig = raw_sigs.get(raw_key, -2)
        hit = sig_cache.get(raw_key, miss) if sig == -2 else None
        if hit is miss:
            return False
        if pid != last_pid or tid != last_tid:
            thread = tid_ids.get((pid, tid))
            if thread is None:
                return False
            last_pid, last_tid, last_thread = pid, tid, thread
        cpu_ops += 1
        if sig == -2:  # the signature's id, kept for its raw form
            if hit is None:
                sig = -1
            else:
                i = sig_ids.get(hit.key)  # type: ignore[attr-defined]
                sig = i if i is not None else col.sig_id(hit)  # type: ignore[arg-type]
            raw_sigs[raw_key] = sig
        if sig >= 0:  # (else neither dims nor a 0-dim tensor: nothing to attach)
            c_tid(last_thread)
            c_ts(ts)
            c_end(ts + dur)  # type: ignore[operator]  # (both floats: checked above)
            c_ext(ext)
            c_sig(sig)
        return True

    def counted() -> None:
        nonlocal cpu_ops
        col.cpu_ops += cpu_ops
        cpu_ops = 0

    arrays = (col.c_tid, col.c_ts, col.c_end, col.c_ext, col.c_sig)
    return cpu_op, ((lists[0], tuple(zip(arrays, lists))),), counted


class TypedLoop:
    """The collector's loop over batches of :class:`Event` records (see above)."""

    def __init__(self, col: Collector) -> None:
        self.col = col
        self.gpu, gpu_rows = _gpu_handler(col)
        self.launch, launch_rows, launch_counted = _launch_handler(col)
        self.cpu_op, cpu_rows, cpu_counted = _cpu_op_handler(col)
        self.pending: Pending = gpu_rows + launch_rows + cpu_rows
        self._counted = (launch_counted, cpu_counted)

    def flush(self) -> None:
        flush_pending(self.pending)

    def close(self) -> None:
        flush_pending(self.pending)
        for counted in self._counted:
            counted()

    def run(self, batch: list[Event]) -> None:
        col, pending = self.col, self.pending
        col.events += len(batch)
        if sum(len(first) for first, _ in pending) >= PENDING_ROWS:
            flush_pending(pending)
        cat_kinds, categories = col._cat_kinds, col.categories
        gpu, launch, cpu_op, other = self.gpu, self.launch, self.cpu_op, self.other
        add, add_kind = col._add, col._add_kind
        for ev in batch:
            try:  # (only str keys are cached: any other category is not found)
                low, kind = cat_kinds[ev.cat]
            except (KeyError, TypeError):  # no category, one not cached yet, or unhashable
                flush_pending(pending)
                add(event_dict(ev))
                continue
            try:
                categories[low] += 1
            except KeyError:
                if len(categories) < 64:
                    categories[low] = 1
            if kind == KIND_GPU:
                if gpu(ev):
                    continue
            elif kind == KIND_LAUNCH:
                if launch(ev):
                    continue
            elif kind == KIND_CPU_OP:
                if cpu_op(ev):
                    continue
            else:
                other(ev, low, kind)
                continue
            flush_pending(pending)
            add_kind(event_dict(ev), low, kind)

    def other(self, ev: Event, low: str, kind: int) -> None:
        """An event of a kind that adds none of the pending rows, to _add_kind as a dict, where
        that does anything with it: a step annotation; an ``nn.Module`` span; a flow start.
        (Anything else of these kinds _add_kind only returns on.)"""
        if kind == KIND_STEP:
            pass
        elif kind == KIND_MODULE:
            name = ev.name
            if name.__class__ is not str or not name.startswith("nn.Module: "):
                return
        elif kind != KIND_FLOW or ev.ph != "s":
            return
        self.col._add_kind(event_dict(ev), low, kind)


def read_batches(col: Collector, batches: Iterable[list[Any]]) -> None:
    """The batches of a :class:`TypedEventStream`, in order: a batch of :class:`Event` records
    (the keys the collector reads, decoded by msgspec) is read by the typed loop, any other (a
    list of dicts: what the typed decoder did not read whole) by the collector's general path,
    event by event; either leaves the state :meth:`Collector.add` leaves, one event at a time."""
    loop = TypedLoop(col)
    try:
        for batch in batches:
            if batch and batch[0].__class__ is Event:
                loop.run(batch)
            else:
                loop.flush()
                for ev in batch:
                    col.add(ev)
    finally:
        loop.close()

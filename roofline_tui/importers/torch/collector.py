"""The collector: one streamed pass over a trace's events keeps only compact per-event records in
typed arrays (GPU work, launch calls and flows, shape-carrying ``cpu_op`` spans, MoE stage ops,
step annotations, ``nn.Module`` spans), names and signatures interned.

This module holds the collector's state and its general reader: one event, a dict, of any
shape, taken apart with every check the boundary makes (:meth:`Collector.add`, one method per
kind of event: ``_add_gpu``, ``_add_launch``, ``_add_cpu_op``, ``_add_step``, ``_add_module``).
The fast reader of the common shapes of the first three kinds is ``torch.typed_loop``; it hands
every event it does not take to the methods here, so each event is read exactly once."""

from __future__ import annotations

import re
import struct
from array import array
from typing import Any

import orjson

from roofline_tui.core.classify import stage_in_name
from roofline_tui.core.coerce import number
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.kineto_events import ID_LIMIT
from roofline_tui.importers.steps import StepRecord, parse_step_label
from roofline_tui.importers.torch.signatures import (
    Sig,
    VALUE_OPS,
    clean_geom,
    make_sig,
    module_name,
)
from roofline_tui.importers.torch.step_records import StepSpan, args_step, is_step_name, step_regime
from roofline_tui.importers.torch.values import MISS, arg_value, as_int, num


# Kineto categories, compared lower-cased: PyTorch 1.8-1.9 wrote ``Kernel``/``Memcpy``/
# ``Memset``/``Runtime``/``Operator`` (and ``Input dims``); later versions ``kernel``/
# ``gpu_memcpy``/``gpu_memset``/``cuda_runtime``/``cpu_op`` (``Input Dims``).
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "runtime")
CPU_OP_CATS = ("cpu_op", "operator")
FLOW_CATS = ("ac2g", "async")
_KERNEL_LAUNCH = lazy_compile(r"LaunchKernel|LaunchCooperativeKernel|^cuLaunch|^hipLaunch|"
                              r"ModuleLaunch", re.IGNORECASE)
_GRAPH_LAUNCH = lazy_compile(r"^(cuda|hip|cu)GraphLaunch", re.IGNORECASE)
# a cpu_op whose name says the trace trains: an autograd node, a backward op, an optimizer step
_TRAINING_OPS = lazy_compile(r"backward|autograd::engine|^Optimizer\.(step|zero_grad)",
                             re.IGNORECASE)
# a cpu_op that runs (part of) a MoE layer; its name may state the stage (aiter::ck_moe_stage1)
_MOE_OP = lazy_compile(r"moe|expert", re.IGNORECASE)


MAX_GEOMS = 1 << 16
_MAX_MODULE_SPANS = 1 << 22


# what the collector does with an event, by its lower-cased category
# (KIND_FLOW and KIND_OTHER last: the kinds past KIND_CPU_OP add no row the fast reader gathers)
KIND_GPU, KIND_LAUNCH, KIND_CPU_OP, KIND_STEP, KIND_MODULE, KIND_FLOW, KIND_OTHER = range(7)
_NO_ARGS: dict[str, Any] = {}


_pack = struct.pack
_CACHE_ITEMS = 4096
_SIG_CACHE_CHARS = 1 << 22  # characters of raw cpu_op signatures kept as cache keys, in all
_CACHE_KEY_CHARS = 2048  # a longer raw signature is cleaned every time, not cached


def _kind_of(cat: str) -> int:
    if cat in GPU_CATS:
        return KIND_GPU
    if cat in LAUNCH_CATS:
        return KIND_LAUNCH
    if cat in CPU_OP_CATS:
        return KIND_CPU_OP
    if cat in ("gpu_user_annotation", "user_annotation"):
        return KIND_STEP
    if cat == "python_function":
        return KIND_MODULE
    if cat in FLOW_CATS:
        return KIND_FLOW
    return KIND_OTHER


# per kind of row the batch loop gathers: its first list (empty: none pending), and each array
# with the list of its pending values
Pending = tuple[tuple[list[Any], tuple[tuple["array[Any]", list[Any]], ...]], ...]


def flush_pending(pending: Pending) -> None:
    """Move the rows gathered in lists into their arrays, in order. (Packed by ``struct``,
    whose converters are several times cheaper per value than ``array.fromlist``'s; every
    value gathered is an int or float of its array's type, checked where it was taken.)"""
    for first, pairs in pending:
        if first:
            for arr, values in pairs:
                arr.frombytes(_pack(f"{len(values)}{arr.typecode}", *values))
                values.clear()


class Collector:
    def __init__(self) -> None:
        self.name_ids: dict[str, int] = {}
        self.names: list[str] = []
        self.tid_ids: dict[Any, int] = {}
        # GPU work
        self.g_dev = array("q")
        self.g_name = array("q")
        self.g_corr = array("q")
        self.g_ext = array("q")
        self.g_ts = array("d")
        self.g_dur = array("d")
        self.g_stream = array("q")
        # launches: runtime events with a correlation, then ac2g/async flow starts
        self.r_corr = array("q")
        self.r_tid = array("q")
        self.r_ts = array("d")
        self.f_corr = array("q")
        self.f_tid = array("q")
        self.f_ts = array("d")
        self.graph_corr: set[int] = set()
        self.launch_calls = 0
        self.graph_launches = 0
        self.runtime_events = 0
        # cpu ops with shapes
        self.c_tid = array("q")
        self.c_ts = array("d")
        self.c_end = array("d")
        self.c_ext = array("q")
        self.c_sig = array("q")
        self.sig_ids: dict[str, int] = {}
        self.sigs: list[Sig] = []
        # launch geometries (grid, block) recorded on kernel events or capture launches
        self.g_geom = array("q")
        self.geom_ids: dict[tuple[Any, Any], int] = {}
        self.geoms: list[tuple[tuple[int, ...] | None, tuple[int, ...] | None]] = []
        self.cpu_ops = 0
        # cpu ops whose name states a MoE stage (with or without shapes): thread, start, end,
        # stage (1 or 2), op name id in ``names``
        self.s_tid = array("q")
        self.s_ts = array("d")
        self.s_end = array("d")
        self.s_stage = array("b")
        self.s_op = array("q")
        # step annotations mirrored on the GPU timeline (key: device), and on the CPU (key:
        # the thread id)
        self.steps: list[StepSpan] = []
        self.cpu_steps: list[StepSpan] = []
        # nn.Module call spans (python_function): thread, start, end, module name id; the
        # module names and paths (``Qwen2DecoderLayer/Qwen2MLP/Linear``) interned in ``modules``
        self.m_tid = array("q")
        self.m_ts = array("d")
        self.m_end = array("d")
        self.m_name = array("q")
        self.module_ids: dict[str, int] = {}
        self.modules: list[str] = []
        self.execute_spans = 0
        self.events = 0
        self.skipped_gpu = 0
        self.categories: dict[str, int] = {}
        # caches of per-name work, each bounded (a hostile trace may use a new name per event)
        self._cat_kinds: dict[str, tuple[str, int]] = {}
        self._launch_kinds: dict[str, int] = {}
        self._sig_cache: dict[bytes | str, Sig | None] = {}
        self._sig_cache_room = _SIG_CACHE_CHARS
        self._stages: dict[str, int] = {}  # cpu_op name -> _op_kind (0: the fast reader's)
        # the first op or annotation name that says this trace trains (an optimizer step, an
        # autograd node, a backward op), None when none did
        self.training: str | None = None
        # step label -> (its record, regime, M), or None when it is not a label the step
        # families parse
        self._step_labels: dict[str, tuple[StepRecord, int, int] | None] = {}

    def _name_id(self, name: str) -> int:
        i = self.name_ids.get(name)
        if i is None:
            name = cap_name(name)
            i = self.name_ids.get(name)
            if i is None:
                i = self.name_ids[name] = len(self.names)
                self.names.append(name)
        return i

    def _tid_id(self, pid: Any, tid: Any) -> int:
        key = (pid if isinstance(pid, (int, str)) else repr(pid),
               tid if isinstance(tid, (int, str)) else repr(tid))
        i = self.tid_ids.get(key)
        if i is None:
            i = self.tid_ids[key] = len(self.tid_ids)
        return i

    def _thread_of(self, ev: dict[str, Any]) -> int:
        """The id of the event's (pid, tid) thread; plain ints looked up directly."""
        pid, tid = ev.get("pid"), ev.get("tid")
        if pid.__class__ is int and tid.__class__ is int:
            i = self.tid_ids.get((pid, tid))
            if i is not None:
                return i
        return self._tid_id(pid, tid)

    def add(self, ev: Any) -> None:
        self.events += 1
        self._add(ev)

    def _add(self, ev: Any) -> None:
        """One event (already counted in ``events``)."""
        if not isinstance(ev, dict):
            return
        cat = ev.get("cat")
        if not isinstance(cat, str):
            return
        known = self._cat_kinds.get(cat)
        if known is None:
            low = cat.lower()
            known = (low, _kind_of(low))
            if len(self._cat_kinds) < _CACHE_ITEMS:
                self._cat_kinds[cat] = known
        cat, kind = known
        try:
            self.categories[cat] += 1
        except KeyError:
            if len(self.categories) < 64:
                self.categories[cat] = 1
        self._add_kind(ev, cat, kind)

    def _add_kind(self, ev: dict[str, Any], cat: str, kind: int) -> None:
        """One event whose category (lower-cased: ``cat``, its ``kind``) is counted."""
        ph = ev.get("ph", "X")
        if ph != "X":
            if kind == KIND_FLOW and ph == "s":
                corr = as_int(ev.get("id"))
                ts = num(ev.get("ts"))
                if corr is not None and ts is not None:
                    self.f_corr.append(corr)
                    self.f_tid.append(self._thread_of(ev))
                    self.f_ts.append(ts)
            return
        if kind >= KIND_FLOW:
            return
        args = ev.get("args")
        if not isinstance(args, dict):
            args = _NO_ARGS
        # ids: a plain int in range is taken as it is; anything else goes through as_int
        if kind == KIND_GPU:
            self._add_gpu(ev, args)
        elif kind == KIND_LAUNCH:
            self._add_launch(ev, args)
        elif kind == KIND_CPU_OP:
            self._add_cpu_op(ev, args)
        elif kind == KIND_STEP:
            self._add_step(ev, args, cat)
        else:
            self._add_module(ev)

    def _add_gpu(self, ev: dict[str, Any], args: dict[str, Any]) -> None:
        """A GPU event (kernel, memcpy, memset) as a row of the ``g_*`` arrays."""
        ts, dur = number(ev.get("ts"), text=False), number(ev.get("dur"), text=False)
        name = ev.get("name")
        if ts is None or dur is None or dur < 0 or not isinstance(name, str):
            self.skipped_gpu += 1
            return
        dev = args.get("device")
        if dev.__class__ is not int or not -ID_LIMIT < dev < ID_LIMIT:
            dev = as_int(dev)
            if dev is None:
                dev = as_int(ev.get("pid"))
        corr = args.get("correlation")
        if corr.__class__ is not int or not -ID_LIMIT < corr < ID_LIMIT:
            corr = as_int(corr)
        ext = args.get("External id")
        if ext.__class__ is not int or not -ID_LIMIT < ext < ID_LIMIT:
            ext = as_int(arg_value(args, "External id"))
        stream = args.get("stream")
        self.g_stream.append(stream if stream.__class__ is int and 0 <= stream < ID_LIMIT
                             else -1)
        grid = args.get("grid")
        self.g_geom.append(-1 if grid is None else self.geom_id(grid, args.get("block")))
        name_id = self.name_ids.get(name)
        self.g_dev.append(dev if dev is not None else -1)
        self.g_name.append(name_id if name_id is not None else self._name_id(name))
        self.g_corr.append(corr if corr is not None else -1)
        self.g_ext.append(ext if ext is not None else -1)
        self.g_ts.append(ts)
        self.g_dur.append(dur)

    def _add_launch(self, ev: dict[str, Any], args: dict[str, Any]) -> None:
        self.runtime_events += 1
        name = ev.get("name")
        graph = False
        if isinstance(name, str):
            how = self._launch_kinds.get(name)
            if how is None:
                how = 2 if _GRAPH_LAUNCH.match(name) else 1 if _KERNEL_LAUNCH.search(name) else 0
                if len(self._launch_kinds) < _CACHE_ITEMS:
                    self._launch_kinds[name] = how
            if how == 2:
                self.graph_launches += 1
                graph = True
            elif how == 1:
                self.launch_calls += 1
        corr = args.get("correlation")
        if corr.__class__ is not int or not -ID_LIMIT < corr < ID_LIMIT:
            corr = as_int(corr)
        ts = number(ev.get("ts"), text=False)
        if corr is None or ts is None:
            return
        if graph:
            self.graph_corr.add(corr)
        self.r_corr.append(corr)
        pid, tid = ev.get("pid"), ev.get("tid")
        thread = self.tid_ids.get((pid, tid)) if pid.__class__ is int and tid.__class__ is int \
            else None
        self.r_tid.append(thread if thread is not None else self._tid_id(pid, tid))
        self.r_ts.append(ts)

    def _add_cpu_op(self, ev: dict[str, Any], args: dict[str, Any]) -> None:
        self.cpu_ops += 1
        ts, dur = number(ev.get("ts"), text=False), number(ev.get("dur"), text=False)
        if ts is None or dur is None or dur < 0:
            return
        op = ev.get("name")
        stage: int | None = 0
        if isinstance(op, str):
            stage = self._stages.get(op)
            if stage is None:
                stage = self._op_kind(op)
            if stage > 0:
                self.s_tid.append(self._thread_of(ev))
                self.s_ts.append(ts)
                self.s_end.append(ts + dur)
                self.s_stage.append(stage)
                self.s_op.append(self._name_id(op))
        raw_dims = args.get("Input Dims")
        if raw_dims is None:
            raw_dims = args.get("Input dims")
        if not isinstance(raw_dims, list) or not raw_dims:
            return  # no dims: nothing to attach
        found = self._signature(op if isinstance(op, str) else None, raw_dims,
                                args.get("Input type"),
                                args.get("Concrete Inputs") if stage == -1 else None)
        if found is None:
            return
        i = self.sig_ids.get(found.key)
        sig = i if i is not None else self.sig_id(found)
        ext = args.get("External id")
        if ext.__class__ is not int or not -ID_LIMIT < ext < ID_LIMIT:
            ext = as_int(arg_value(args, "External id"))
        pid, tid = ev.get("pid"), ev.get("tid")
        thread = self.tid_ids.get((pid, tid)) if pid.__class__ is int and tid.__class__ is int \
            else None
        self.c_tid.append(thread if thread is not None else self._tid_id(pid, tid))
        self.c_ts.append(ts)
        self.c_end.append(ts + dur)
        self.c_ext.append(ext if ext is not None else -1)
        self.c_sig.append(sig)

    def _op_kind(self, op: str) -> int:
        """What the readers do with a cpu_op named ``op`` (cached in ``_stages``): 0, the fast
        reader takes it; 1 or 2, read here: the MoE stage its name states; -1, read here: an op
        whose recorded values (Concrete Inputs) are kept (:data:`VALUE_OPS`). A name the cache
        has no room for is looked at again each time (and read here, never by the fast
        reader). Training evidence (an optimizer step, an autograd node) is noted on the way,
        once per name."""
        said = stage_in_name(op) if _MOE_OP.search(op) else None
        stage = 0 if said is None else 1 if said[0] == "stage1" else 2
        if stage == 0 and VALUE_OPS.search(op):
            stage = -1
        if self.training is None and _TRAINING_OPS.search(op):
            self.training = printable(op, limit=80)
        if len(self._stages) < _CACHE_ITEMS:
            self._stages[op] = stage
        return stage

    def _signature(self, op: str | None, raw_dims: Any, raw_types: Any,
                   raw_values: Any = None) -> Sig | None:
        """The launching op's signature: its name and, per argument position, the dims and the
        type as recorded (never de-duplicated), or None without any dims.

        Cleaning is the same for equal raw values, so it runs once per distinct raw triple,
        keyed in a bounded cache by a text that tells apart everything JSON can hold (``1`` from
        ``1.0`` from ``"1"`` from ``true``): the triple serialised by orjson (several times
        cheaper than ``repr``), or its ``repr`` where orjson cannot tell values apart (it
        writes ``None``, NaN and the infinities all as ``null``) or cannot serialise one (an
        integer past 64 bits, a lone surrogate, deep nesting). The two kinds of key are bytes
        and str, which never compare equal."""
        raw_key: bytes | str | None
        raw = (op, raw_dims, raw_types) if raw_values is None else (op, raw_dims, raw_types,
                                                                    raw_values)
        try:
            raw_key = orjson.dumps(raw)
            if b"null" in raw_key:
                raw_key = repr(raw)
        except (orjson.JSONEncodeError, TypeError):
            try:
                raw_key = repr(raw)
            except (RecursionError, ValueError):
                raw_key = None
        except (RecursionError, ValueError):
            raw_key = None
        if raw_key is not None:
            hit = self._sig_cache.get(raw_key, MISS)
            if hit is not MISS:
                return hit  # type: ignore[return-value]
        out = make_sig(op, raw_dims, raw_types, raw_values)
        if (raw_key is not None and len(raw_key) <= _CACHE_KEY_CHARS
                and len(raw_key) <= self._sig_cache_room):
            self._sig_cache[raw_key] = out
            self._sig_cache_room -= len(raw_key)
        return out

    def sig_id(self, sig: Sig) -> int:
        """The interned id of ``sig`` (equal signatures share one id)."""
        i = self.sig_ids.get(sig.key)
        if i is None:
            i = self.sig_ids[sig.key] = len(self.sigs)
            self.sigs.append(sig)
        return i

    def geom_id(self, grid: Any, block: Any) -> int:
        """The interned id of a launch geometry (grid, block), -1 when not one."""
        key = (tuple(grid) if grid.__class__ is list else None,
               tuple(block) if block.__class__ is list else None)
        i = self.geom_ids.get(key)
        if i is not None:
            return i
        g = clean_geom(key[0])
        b = clean_geom(key[1])
        if (g is None and b is None) or len(self.geoms) >= MAX_GEOMS:
            return -1
        i = self.geom_ids[key] = len(self.geoms)
        self.geoms.append((g, b))
        return i

    def _add_module(self, ev: dict[str, Any]) -> None:
        """A ``python_function`` span of an ``nn.Module`` call (recorded with_stack)."""
        name = ev.get("name")
        if not isinstance(name, str) or not name.startswith("nn.Module: "):
            return
        ts, dur = num(ev.get("ts")), num(ev.get("dur"))
        if ts is None or dur is None or dur < 0 or len(self.m_ts) >= _MAX_MODULE_SPANS:
            return
        self.m_tid.append(self._thread_of(ev))
        self.m_ts.append(ts)
        self.m_end.append(ts + dur)
        self.m_name.append(self._module_id(module_name(name)))

    def _module_id(self, name: str) -> int:
        i = self.module_ids.get(name)
        if i is None:
            i = self.module_ids[name] = len(self.modules)
            self.modules.append(name)
        return i

    def _add_step(self, ev: dict[str, Any], args: dict[str, Any], cat: str) -> None:
        name = ev.get("name")
        if not is_step_name(name):
            if self.training is None and isinstance(name, str) and name.startswith(
                    "Optimizer."):
                self.training = printable(name, limit=80)  # Optimizer.step#AdamW.step
            return
        self.execute_spans += 1
        ts, dur = num(ev.get("ts")), num(ev.get("dur"))
        # a decode run repeats a handful of labels: each is parsed once (the records are frozen)
        known: tuple[StepRecord, int, int] | None
        if name in self._step_labels:
            known = self._step_labels[name]
        else:
            parsed = parse_step_label(name)
            known = None if parsed is None else (parsed, *step_regime(parsed))
            if len(self._step_labels) < _CACHE_ITEMS and len(name) <= _CACHE_KEY_CHARS:
                self._step_labels[name] = known
        if known is None:
            rec = args_step(name, args)
            if rec is None:
                return
            regime, m = step_regime(rec)
        else:
            rec, regime, m = known
        if ts is None or dur is None or dur < 0:
            return
        if cat == "gpu_user_annotation":
            dev = as_int(args.get("device"))
            if dev is None:
                dev = as_int(ev.get("pid"))
            key = dev if dev is not None else -1
            self.steps.append(StepSpan(key, ts, ts + dur, rec, regime, m))
        else:
            self.cpu_steps.append(StepSpan(self._thread_of(ev), ts, ts + dur, rec, regime, m))

    def what_it_holds(self, header: dict[str, Any]) -> str:
        """One line on what a trace without GPU events does hold."""
        bits = []
        for cat, n in sorted(self.categories.items(), key=lambda kv: (-kv[1], kv[0]))[:4]:
            bits.append(f"{n:,} {printable(cat, limit=30)}")
        props = header.get("deviceProperties")
        has_props = isinstance(props, list) and bool(props)
        # a non-GPU accelerator's device-side events (Meta MTIA: mtia_ccp_events, ...; its
        # mtia_runtime category is host-side API calls) are named, not called CPU-only
        mtia = sum(n for cat, n in self.categories.items() if isinstance(cat, str)
                   and cat.lower().startswith("mtia") and cat.lower() != "mtia_runtime")
        if mtia:
            return (f"no GPU events: {mtia:,} events of an MTIA device; this tool models GPU "
                    "kernels (CUDA or ROCm)")
        held = ", ".join(bits) if bits else f"{self.events:,} events without a category"
        return (f"no GPU events (kernel/memcpy/memset) in the trace: CPU-only trace: {held} "
                f"events, {'with' if has_props else 'no'} deviceProperties")

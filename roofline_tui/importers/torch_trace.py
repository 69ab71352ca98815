"""PyTorch profiler (Kineto) chrome trace -> Top-N.

One streamed pass keeps only compact per-event records in typed arrays:

* GPU work (``cat`` kernel / gpu_memcpy / gpu_memset): device, kernel-name id, correlation,
  start, duration and launch geometry (grid, block) when recorded;
* launch API events (``cuda_runtime`` / ``cuda_driver``) carrying ``args.correlation``: thread
  and start time;
* ``cpu_op`` spans that carry ``Input Dims``: thread, start, end, External id and an interned
  signature: the op's name and, per argument position, the dims and the type as recorded;
* step annotations (``user_annotation`` on the CPU, ``gpu_user_annotation`` mirrors), parsed
  by ``importers.steps`` (vLLM, SGLang, ATOM label families).

Launching op: a kernel's launch event shares ``args.correlation`` with it; the launching op is
the innermost shape-carrying ``cpu_op`` on the launch event's thread whose span encloses the
launch (falling back to the ``cpu_op`` with the kernel's ``External id``). A kernel replayed
from a CUDA/HIP graph has none in this trace; ``importers.replay`` takes it from the run's
graph-capture traces (``--capture``, or the layouts the frameworks write beside the trace).

Instances: each Top-N entry keeps, under the extension key (``core.topn_ext``), one instance
per (launching op signature, geometry, how the op was found) with its own calls and time, per
phase too; the upstream ``shapes``/``dtypes`` fields are written as before.

Split-stage MoE: a MoE kernel whose name does not say its stage, launched inside a ``cpu_op``
whose name does (``aiter::ck_moe_stage1`` / ``aiter::ck_moe_stage2``: some libraries run both
GEMMs of the layer through one kernel), becomes one Top-N entry per stage, ``<name> [stage1]``
and ``<name> [stage2]`` (short names ``<short>.stage1`` / ``.stage2``), each with the launches,
time and shapes of its own stage and a note naming the launching op. Launches outside such an
op keep the kernel's name: then one logical op is both launches, as the engine models it.

Serving steps: a CPU step annotation owns the kernels whose launch (graph launches included)
lies inside its span on the same thread, so kernels that run after the span closed still
belong to it; only a trace without CPU annotations falls back to the GPU mirror spans around
the kernels. Nested labels of one step (vLLM's ``execute_*`` around SGLang's ``step[...]``)
and a step's CPU and GPU mirrors count once. A step with context tokens is a prefill step
(M = its tokens); one with generation requests only, a decode step (M = its requests).
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import math
import re
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, islice, pairwise, repeat, starmap
from operator import gt as _gt
from operator import lt as _lt
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

import msgspec
import orjson

from roofline_tui.core import units
from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.classify import classify as classify_op
from roofline_tui.core.classify import stage_in_name
from roofline_tui.core.coerce import MAX_ABS, number
from roofline_tui.core.extension import MAX_VALUE_CHARS, MAX_VALUE_ITEMS
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import SHORT_NAME_MAX, cap_name, short_name_of
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.capture import discover_captures, trace_rank
from roofline_tui.importers.common import (
    DEFAULT_TOP,
    MAX_DTYPES,
    MAX_SHAPES,
    ImportProblem,
    InstanceAgg,
    KernelAgg,
    PhaseAgg,
    ServingInfo,
    build_topn,
)
from roofline_tui.importers.device import DeviceInfo, from_kineto
from roofline_tui.importers.jsonstream import READ_CHUNK
from roofline_tui.importers.kineto_events import (
    ID_LIMIT,
    Args,
    Event,
    TypedEventStream,
    event_dict,
)
from roofline_tui.importers.replay import ReplayJoin, join_replays
from roofline_tui.importers import step_time
from roofline_tui.importers.step_window import StepRequest, StepWindowError, Window, kept_steps
from roofline_tui.importers.steps import Group, StepRecord, parse_step_label, phase_aggregates

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
_NOT_DTYPES = {"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device",
               "Layout", "MemoryFormat"}
# the progress bar appears once an import has run this long on a terminal, whatever the size
# on disk (a 30 MB gzipped trace is about 1 GB of JSON)
PROGRESS_AFTER_S = 1.0


@dataclass
class DeviceChoice:
    chosen: int
    devices: dict[int, float]  # device -> GPU time (µs)
    message: str


@dataclass
class TorchImport:
    doc: dict[str, Any]
    device: DeviceChoice
    events_seen: int
    notes: list[str] = field(default_factory=list)
    device_info: DeviceInfo | None = None


# ---------------------------------------------------------------------------------------------
# step annotations
# ---------------------------------------------------------------------------------------------

_STEP_PREFIXES = ("execute_", "step[", "prefill[", "decode[", "eager_decode[", "dummy_")


def is_step_name(name: Any) -> TypeGuard[str]:
    """A label one of the step families may parse (``importers.steps``)."""
    return isinstance(name, str) and name.startswith(_STEP_PREFIXES)


def _args_step(name: str, args: dict[str, Any]) -> StepRecord | None:
    """A vLLM ``execute_*`` step whose label has no segments but whose args give the counts
    (``context_tokens``/``num_context_tokens``/``prefill_tokens`` and ``decode_batch``/
    ``num_decode_tokens``/``generation_tokens``), as some builds write it."""
    if not name.startswith("execute_"):
        return None

    def arg_int(*keys: str) -> int | None:
        for k in keys:
            v = args.get(k)
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)) and v >= 0 and v == v and v < 2**62:
                return int(v)
            if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) < 19:
                return int(v)
        return None

    ctx = arg_int("context_tokens", "num_context_tokens", "prefill_tokens")
    dec = arg_int("decode_batch", "num_decode_tokens", "generation_tokens")
    if ctx is None and dec is None:
        return None
    ctx, dec = ctx or 0, dec or 0
    context = Group(requests=None, sq=ctx, sk=None, sqsq=None, sqsk=None) if ctx else None
    generation = Group(requests=dec, sq=dec, sk=None, sqsq=None, sqsk=None) if dec else None
    phase = ("mixed" if ctx and dec else "prefill_only" if ctx else
             "decode_only" if dec else "idle")
    return StepRecord(framework="vllm", family="vllm-args", raw=printable(name, limit=400),
                      tokens=ctx + dec, context=context, generation=generation,
                      has_aggregates=False, phase=phase, mode=None, capture_size=ctx + dec,
                      spec_width=None, tbo=False, dummy=False,
                      backfilled=("token counts from the step's args, not its label",),
                      problems=())


def parse_step(name: str, args: dict[str, Any] | None) -> tuple[str, int, int] | None:
    """``(regime, context_tokens, decode_batch)`` of a step label, else None: the short form
    older callers use; :func:`importers.steps.parse_step_label` has the whole record."""
    if not isinstance(name, str):
        return None
    rec = parse_step_label(name) or _args_step(name, args if isinstance(args, dict) else {})
    if rec is None:
        return None
    regime, m = _regime_of(rec)
    if regime < 0:
        return None
    if regime == 1:
        return ("decode", 0, m)
    ctx = rec.context.sq if rec.context is not None and rec.context.sq is not None else 0
    gen = rec.generation
    dec = (gen.requests if gen.requests is not None else gen.sq or 0) if gen is not None else 0
    return ("prefill", ctx, dec)


# ---------------------------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------------------------


def _num(v: Any) -> float | None:
    """A JSON number (never text) through the one coercer: huge integers become ``None``."""
    return number(v, text=False)


_ID_LIMIT = ID_LIMIT  # ids must fit the typed arrays (1 << 62)
# Arrays of positions and interned ids (below a count of events, or -1) take 4 bytes an item
# when the count leaves room (half the range: a graph-capture join adds ids later), else 8.
_SMALL_INDEX = "i" if array("i").itemsize >= 4 else "l"
_SMALL_LIMIT = 1 << 30


def _index_code(count: int) -> str:
    """The typecode of an array holding -1 or indexes below about ``count``."""
    return _SMALL_INDEX if count < _SMALL_LIMIT else "q"


def _every(positions: Sequence[int], n: int) -> bool:
    """Whether ``positions`` is every position below ``n``, in order (``range(n)``): loops
    then walk the arrays themselves instead of indexing them."""
    return isinstance(positions, range) and positions == range(n)


def _positions(values: array[int], wanted: int) -> list[int] | None:
    """The positions in ``values`` holding ``wanted``, in order, when they are few (at most
    one in 16: found by searching), else None."""
    n = values.count(wanted)
    if n > len(values) >> 4:
        return None
    out: list[int] = []
    at = 0
    for _ in range(n):
        at = values.index(wanted, at)
        out.append(at)
        at += 1
    return out


def _rows_of(values: array[int], wanted: int) -> Sequence[int]:
    """The positions in ``values`` holding ``wanted``: a ``range`` when every one does (a trace
    of one device: no array at all), else a typed array."""
    if values.count(wanted) == len(values):
        return range(len(values))
    return array("q", (i for i, v in enumerate(values) if v == wanted))


def _as_int(v: Any) -> int | None:
    """An integral id (device, correlation, External id): ``None`` when not one."""
    if type(v) is int:  # noqa: E721 - bool (an int subclass) must not pass
        return v if -_ID_LIMIT < v < _ID_LIMIT else None
    if isinstance(v, int) and not isinstance(v, bool):
        return v if -_ID_LIMIT < v < _ID_LIMIT else None
    f = number(v)
    if f is None or not f.is_integer() or abs(f) >= _ID_LIMIT:
        return None
    return int(f)


def _arg(args: dict[str, Any], key: str) -> Any:
    """``args[key]`` under its current or its 1.8-era spelling (``external id``)."""
    v = args.get(key)
    return args.get(key.lower()) if v is None else v


_DIM_MAX = 1 << 40  # a dimension beyond this is not a tensor's
_RANK_MAX = 16
_POSITIONS_MAX = 64  # argument positions kept of one op (real ops have at most ~30)
_TYPE_CHARS = 64
_MAX_GEOMS = 1 << 16
_MAX_MODULE_SPANS = 1 << 22
_MAX_ALONG = 4  # other kernels of one launching op listed per instance
_MODULE_DEPTH = 3  # the innermost module calls a path keeps
_MODULE_INDEX = lazy_compile(r"_\d+$")


def module_name(name: str) -> str:
    """``nn.Module: Qwen2Attention_0`` -> ``Qwen2Attention`` (the profiler numbers every module
    instance; the number says nothing about the layer and would split equal instances)."""
    short = name.removeprefix("nn.Module: ").strip()
    return printable(_MODULE_INDEX.sub("", short), limit=60) or "?"


def _dims_of(value: Any) -> tuple[int, ...] | None:
    """One tensor's dims (``[]`` for a scalar), or None when ``value`` is not a dims list."""
    if value.__class__ is not list or len(value) > _RANK_MAX:
        return None
    for x in value:
        if x.__class__ is not int or not 0 <= x <= _DIM_MAX:
            return None
    return tuple(value)


def _position(value: Any) -> Any:
    """One argument position's dims: a tuple of ints, a tuple of such tuples (a TensorList),
    or None (not dims: kept as a hole so the positions stay in place)."""
    dims = _dims_of(value)
    if dims is not None or value.__class__ is not list or not value:
        return dims
    if len(value) <= _POSITIONS_MAX and all(x.__class__ is list for x in value):
        many = tuple(_dims_of(x) for x in value)
        if all(d is not None for d in many):
            return many
    return None


@dataclass(frozen=True, slots=True)
class Sig:
    """A launching op's signature, per argument position, exactly as the trace records it.

    ``dims[i]`` is the i-th argument's dims (``()`` for a scalar, a tuple of dims for a
    TensorList, None when the trace holds something else there); ``types[i]`` its recorded
    type (``c10::BFloat16``, ``Scalar``, ``""`` ...). ``shapes``/``dtypes`` are the upstream
    Top-N's forms (tensor dims only; the distinct tensor types), kept for upstream readers.
    ``values`` (attention ops only, see :data:`_VALUE_OPS`): per position the value Kineto's
    ``Concrete Inputs`` records there (``is_causal``, ``scale``, a window size), None where it
    records none; ``()`` for every other op."""

    op: str | None
    dims: tuple[Any, ...]
    types: tuple[str, ...]
    key: str
    shapes: list[list[int]]
    dtypes: list[str]
    values: tuple[Any, ...] = ()


# ops whose recorded argument values (Concrete Inputs) decide their work: attention, where
# is_causal, the scale and the window sizes are arguments, not tensors
_VALUE_OPS = lazy_compile(r"attention|attn|^_vllm_fa\d_C::|^flashinfer::", re.IGNORECASE)
_INT_TEXT = lazy_compile(r"-?\d{1,18}")
_FLOAT_TEXT = lazy_compile(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d{1,3})?")


def concrete_value(raw: Any) -> Any:
    """One ``Concrete Inputs`` position as a JSON value, or None: Kineto writes each scalar
    argument as text (``"False"``, ``"4096"``, ``"0.088388347648318433"``, ``""`` for a
    tensor or a None); lists of numbers as ``"[1, 2]"`` in some versions. A bool, an int, a
    finite float, a list of at most 16 numbers, or a printable string of at most 64
    characters; anything else is None."""
    if raw.__class__ is not str or not raw or len(raw) > 4 * MAX_VALUE_CHARS:
        return None
    text = raw.strip()
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if _INT_TEXT.fullmatch(text):
        return int(text)
    if _FLOAT_TEXT.fullmatch(text):
        f = float(text)
        return f if math.isfinite(f) else None
    if text.startswith("[") and text.endswith("]"):
        items = [t.strip() for t in text[1:-1].split(",") if t.strip()]
        if len(items) <= MAX_VALUE_ITEMS and items and all(_INT_TEXT.fullmatch(t) for t in items):
            return [int(t) for t in items]
        return None
    return printable(text, limit=MAX_VALUE_CHARS) if text.isprintable() else None


def _concrete(raw_values: Any, n: int) -> tuple[Any, ...]:
    """The first ``n`` positions of a ``Concrete Inputs`` list as values; () when it holds
    none."""
    if raw_values.__class__ is not list:
        return ()
    out = tuple(concrete_value(v) for v in raw_values[:n])
    return out if any(v is not None for v in out) else ()


def make_sig(op: str | None, raw_dims: Any, raw_types: Any, raw_values: Any = None
             ) -> Sig | None:
    """The :class:`Sig` of one cpu_op's ``Input Dims``/``Input type`` (and, for an op of
    :data:`_VALUE_OPS`, its ``Concrete Inputs``: ``raw_values``); None without dims."""
    if not isinstance(raw_dims, list):
        return None
    dims = tuple(_position(d) for d in raw_dims[:_POSITIONS_MAX])
    shapes = _clean_dims(raw_dims)
    types: tuple[str, ...] = ()
    if isinstance(raw_types, list):
        types = tuple(printable(t, limit=_TYPE_CHARS) if isinstance(t, str) else ""
                      for t in raw_types[:_POSITIONS_MAX])
    if not shapes and not any(d == () and k < len(types) and types[k] not in _NOT_DTYPES
                              for k, d in enumerate(dims)):
        return None  # neither a tensor with dims nor a 0-dim tensor: nothing to attach
    op = cap_name(op, limit=200) if isinstance(op, str) else None
    values = _concrete(raw_values, _POSITIONS_MAX) if raw_values is not None else ()
    if values:
        key = json.dumps([op, dims, types, values], separators=(",", ":"))
    else:
        key = json.dumps([op, dims, types], separators=(",", ":"))
    return Sig(op, dims, types, key, shapes, _clean_types(list(types)), values)


def _geom(value: tuple[Any, ...] | None) -> tuple[int, ...] | None:
    if value is None or not 0 < len(value) <= 3:
        return None
    if all(x.__class__ is int and 0 <= x <= _DIM_MAX for x in value):
        return value
    return None


def _clean_dims(dims: Any) -> list[list[int]]:
    """The upstream ``shapes`` form: tensor dims only, in order (a TensorList flattened)."""
    out: list[list[int]] = []
    if not isinstance(dims, list):
        return out
    for d in dims[:_POSITIONS_MAX]:
        if not isinstance(d, list) or not d:
            continue
        if all(_is_int(x) for x in d):
            out.append(list(d))
        elif all(isinstance(x, list) for x in d):
            # a TensorList argument: one dims list per tensor, kept in order
            out.extend(list(x) for x in d if x and all(_is_int(v) for v in x))
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _clean_types(types: Any) -> list[str]:
    if not isinstance(types, list):
        return []
    out: list[str] = []
    for t in types:
        if isinstance(t, str) and t not in _NOT_DTYPES and t not in out:
            out.append(t)
    return out


# what the collector does with an event, by its lower-cased category
_GPU, _LAUNCH, _CPU_OP, _STEP, _MODULE, _FLOW, _OTHER = range(7)  # _FLOW and _OTHER last
_NO_ARGS: dict[str, Any] = {}
_FAST_MAX = MAX_ABS  # what the coercer takes as a number (core.coerce.number)
_MISS = object()
_UNSET: Any = msgspec.UNSET
_pack = struct.pack
_CACHE_ITEMS = 4096
_SIG_CACHE_CHARS = 1 << 22  # characters of raw cpu_op signatures kept as cache keys, in all
_CACHE_KEY_CHARS = 2048  # a longer raw signature is cleaned every time, not cached


def _kind_of(cat: str) -> int:
    if cat in GPU_CATS:
        return _GPU
    if cat in LAUNCH_CATS:
        return _LAUNCH
    if cat in CPU_OP_CATS:
        return _CPU_OP
    if cat in ("gpu_user_annotation", "user_annotation"):
        return _STEP
    if cat == "python_function":
        return _MODULE
    if cat in FLOW_CATS:
        return _FLOW
    return _OTHER


# per kind of row the batch loop gathers: its first list (empty: none pending), and each array
# with the list of its pending values
_Pending = tuple[tuple[list[Any], tuple[tuple["array[Any]", list[Any]], ...]], ...]


def _flush(pending: _Pending) -> None:
    """Move the rows gathered in lists into their arrays, in order. (Packed by ``struct``,
    whose converters are several times cheaper per value than ``array.fromlist``'s; every
    value gathered is an int or float of its array's type, checked where it was taken.)"""
    for first, pairs in pending:
        if first:
            for arr, values in pairs:
                arr.frombytes(_pack(f"{len(values)}{arr.typecode}", *values))
                values.clear()


class _Collector:
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
        self.steps: list[_Step] = []
        self.cpu_steps: list[_Step] = []
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
        self._stages: dict[str, int] = {}  # cpu_op name -> _op_kind (0: inline)
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

    def add_batch(self, batch: list[Any]) -> None:
        """The events of ``batch``, in order: what :meth:`add` does for each, with the common
        shapes (a kernel, a launch call or a cpu_op whose fields are plain values, of a thread,
        category, name and signature seen before) handled inline. Anything else, and anything a
        check here does not take (a key missing included: the fields are read by subscript,
        which is cheaper than ``get``), goes to :meth:`_add` (or, its category counted, to
        :meth:`_add_kind`) whole, before this loop has changed anything else for that event, so
        each event is handled exactly once, in order."""
        self.add_batches((batch,))

    def add_batches(self, batches: Iterable[list[Any]]) -> None:
        """:meth:`add_batch` for each batch of ``batches``, in order (the rows gathered in lists
        across batches: see below)."""
        lim, big = _ID_LIMIT, _FAST_MAX
        cat_kinds, categories, tid_ids = self._cat_kinds, self.categories, self.tid_ids
        launch_kinds, stages, sig_cache = self._launch_kinds, self._stages, self._sig_cache
        sig_ids, name_ids, dumps = self.sig_ids, self.name_ids, orjson.dumps
        # the rows taken here are gathered in lists (an append to a list costs about half of
        # one to an array) and moved into the arrays after each batch, and before any event
        # that goes to _add/_add_kind, which may add rows itself (``pending``)
        g_dev: list[int] = []
        g_name: list[int] = []
        g_corr: list[int] = []
        g_ext: list[int] = []
        g_ts: list[float] = []
        g_dur: list[float] = []
        g_stream: list[int] = []
        g_geom: list[int] = []
        r_corr: list[int] = []
        r_tid: list[int] = []
        r_ts: list[float] = []
        c_tid: list[int] = []
        c_ts: list[float] = []
        c_end: list[float] = []
        c_ext: list[int] = []
        c_sig: list[int] = []
        pending: _Pending = (
            (g_dev, ((self.g_dev, g_dev), (self.g_name, g_name), (self.g_corr, g_corr),
                     (self.g_ext, g_ext), (self.g_ts, g_ts), (self.g_dur, g_dur),
                     (self.g_stream, g_stream), (self.g_geom, g_geom))),
            (r_corr, ((self.r_corr, r_corr), (self.r_tid, r_tid), (self.r_ts, r_ts))),
            (c_tid, ((self.c_tid, c_tid), (self.c_ts, c_ts), (self.c_end, c_end),
                     (self.c_ext, c_ext), (self.c_sig, c_sig))),
        )
        add, add_kind = self._add, self._add_kind
        # the signature id of each raw signature found in the signature cache (-1: none), so
        # an op seen before costs one lookup (bounded as that cache is: only its keys)
        raw_sigs: dict[bytes | str, int] = {}

        def slow(ev: Any) -> None:
            _flush(pending)
            add(ev)

        def rest(ev: dict[str, Any], low: str, kind: int) -> None:
            _flush(pending)
            add_kind(ev, low, kind)

        runtime = launches = graphs = cpu_ops = 0
        # the thread of the last launch or cpu_op (int pid and tid): the next is most often on
        # the same one (an id, once given, never changes)
        last_pid: int | None = None
        last_tid: int | None = None
        last_thread = -1
        try:
            for batch in batches:
                self.events += len(batch)
                _flush(pending)  # (the last batch's rows: kept longer, they cost memory)
                for ev in batch:
                    if ev.__class__ is not dict:
                        slow(ev)
                        continue
                    try:  # (only str keys are cached: any other category is not found)
                        low, kind = cat_kinds[ev["cat"]]
                    except (KeyError, TypeError):  # no category, one not cached yet, or unhashable
                        slow(ev)
                        continue
                    try:
                        categories[low] += 1
                    except KeyError:
                        if len(categories) < 64:
                            categories[low] = 1
                    if kind > _CPU_OP:  # (adds none of the rows gathered here)
                        add_kind(ev, low, kind)
                        continue
                    # from here a missing key (KeyError) hands the event to _add_kind: nothing below
                    # changes the collector before the last key is read
                    try:
                        args = ev["args"]
                        if ev["ph"] != "X" or args.__class__ is not dict:
                            rest(ev, low, kind)
                            continue
                        # ts and dur: finite numbers (an int as its float), dur not negative
                        ts = ev["ts"]
                        if ts.__class__ is float:
                            if not -big <= ts <= big:
                                ts = None
                        elif ts.__class__ is int and -big <= ts <= big:
                            ts = float(ts)
                        else:
                            ts = None
                        if kind == _LAUNCH:
                            name = ev["name"]
                            corr = args["correlation"]
                            pid, tid = ev["pid"], ev["tid"]
                            if (ts is None or name.__class__ is not str or pid.__class__ is not int
                                    or tid.__class__ is not int or corr.__class__ is not int
                                    or not -lim < corr < lim):
                                rest(ev, low, kind)
                                continue
                            how = launch_kinds[name]
                            if pid != last_pid or tid != last_tid:
                                last_thread = tid_ids[(pid, tid)]
                                last_pid, last_tid = pid, tid
                            thread = last_thread
                            runtime += 1
                            if how == 2:
                                graphs += 1
                                self.graph_corr.add(corr)
                            elif how == 1:
                                launches += 1
                            r_corr.append(corr)
                            r_tid.append(thread)
                            r_ts.append(ts)
                            continue
                        dur = ev["dur"]
                        if dur.__class__ is float:
                            if not 0 <= dur <= big:
                                dur = None
                        elif dur.__class__ is int and 0 <= dur <= big:
                            dur = float(dur)
                        else:
                            dur = None
                        if ts is None or dur is None:
                            rest(ev, low, kind)
                            continue
                        if kind == _GPU:
                            name = ev["name"]
                            dev = args["device"]
                            corr = args["correlation"]
                            ext = args.get("External id")
                            if ext is None and args.get("external id") is None:
                                ext = -1
                            if (name.__class__ is not str or dev.__class__ is not int
                                    or not -lim < dev < lim or corr.__class__ is not int
                                    or not -lim < corr < lim or ext.__class__ is not int
                                    or not -lim < ext < lim):
                                rest(ev, low, kind)
                                continue
                            stream = args.get("stream")
                            grid = args.get("grid")
                            block = args.get("block") if grid is not None else None
                            g_stream.append(stream if stream.__class__ is int and 0 <= stream < lim
                                            else -1)
                            g_geom.append(-1 if grid is None else self.geom_id(grid, block))
                            name_id = name_ids.get(name)
                            g_dev.append(dev)
                            g_name.append(name_id if name_id is not None else self._name_id(name))
                            g_corr.append(corr)
                            g_ext.append(ext)
                            g_ts.append(ts)
                            g_dur.append(dur)
                            continue
                        # a cpu_op: inline only when its name states no MoE stage (cached: 0, or
                        # -1 for an op whose recorded values are kept), and its signature's raw
                        # form is cached (see _signature)
                        op = ev["name"]
                        if op.__class__ is not str:
                            rest(ev, low, kind)
                            continue
                        stage = stages[op]
                        if stage > 0:
                            rest(ev, low, kind)
                            continue
                        raw_dims = args.get("Input Dims")
                        if raw_dims is None:
                            raw_dims = args.get("Input dims")
                        if raw_dims.__class__ is not list or not raw_dims:
                            cpu_ops += 1  # no dims: nothing to attach
                            continue
                        ext = args.get("External id")
                        if ext is None and args.get("external id") is None:
                            ext = -1
                        pid, tid = ev["pid"], ev["tid"]
                        if (pid.__class__ is not int or tid.__class__ is not int
                                or ext.__class__ is not int or not -lim < ext < lim):
                            rest(ev, low, kind)
                            continue
                        try:
                            values = args.get("Concrete Inputs") if stage else None
                            raw_key = dumps((op, raw_dims, args.get("Input type")) if values is None
                                            else (op, raw_dims, args.get("Input type"), values))
                        except Exception:  # noqa: BLE001 - _signature decides what such a value is
                            rest(ev, low, kind)
                            continue
                        # (a key holding "null" is never cached as bytes: _signature keys
                        # that triple by its repr, so the lookup below misses and _signature
                        # takes it)
                        sig = raw_sigs.get(raw_key, -2)
                        if sig == -2:
                            hit = sig_cache[raw_key]
                        if pid != last_pid or tid != last_tid:
                            last_thread = tid_ids[(pid, tid)]
                            last_pid, last_tid = pid, tid
                        thread = last_thread
                    except KeyError:
                        rest(ev, low, kind)
                        continue
                    cpu_ops += 1
                    if sig == -2:  # the signature's id, kept for its raw form
                        if hit is None:
                            sig = -1
                        else:
                            i = sig_ids.get(hit.key)
                            sig = i if i is not None else self.sig_id(hit)
                        raw_sigs[raw_key] = sig
                    if sig < 0:
                        continue  # neither dims nor a 0-dim tensor: nothing to attach
                    c_tid.append(thread)
                    c_ts.append(ts)
                    c_end.append(ts + dur)
                    c_ext.append(ext)
                    c_sig.append(sig)
        finally:
            _flush(pending)
            self.runtime_events += runtime
            self.launch_calls += launches
            self.graph_launches += graphs
            self.cpu_ops += cpu_ops

    def add_typed_batches(self, batches: Iterable[list[Any]]) -> None:
        """The batches of a :class:`TypedEventStream`, in order: a batch of :class:`Event`
        records (the keys the collector reads, decoded by msgspec) is read by the typed loop
        (:class:`_TypedLoop`), any other by :meth:`add_batches`; either leaves the state that
        :meth:`add` leaves, one event at a time."""
        loop = _TypedLoop(self)
        try:
            for batch in batches:
                if batch and batch[0].__class__ is Event:
                    loop.run(batch)
                else:
                    loop.flush()
                    self.add_batches((batch,))
        finally:
            loop.close()

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
            if kind == _FLOW and ph == "s":
                corr = _as_int(ev.get("id"))
                ts = _num(ev.get("ts"))
                if corr is not None and ts is not None:
                    self.f_corr.append(corr)
                    self.f_tid.append(self._thread_of(ev))
                    self.f_ts.append(ts)
            return
        if kind >= _FLOW:
            return
        args = ev.get("args")
        if not isinstance(args, dict):
            args = _NO_ARGS
        # ids: a plain int in range is taken as it is; anything else goes through _as_int
        if kind == _GPU:
            self._add_gpu(ev, args)
        elif kind == _LAUNCH:
            self._add_launch(ev, args)
        elif kind == _CPU_OP:
            self._add_cpu_op(ev, args)
        elif kind == _STEP:
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
        if dev.__class__ is not int or not -_ID_LIMIT < dev < _ID_LIMIT:
            dev = _as_int(dev)
            if dev is None:
                dev = _as_int(ev.get("pid"))
        corr = args.get("correlation")
        if corr.__class__ is not int or not -_ID_LIMIT < corr < _ID_LIMIT:
            corr = _as_int(corr)
        ext = args.get("External id")
        if ext.__class__ is not int or not -_ID_LIMIT < ext < _ID_LIMIT:
            ext = _as_int(_arg(args, "External id"))
        stream = args.get("stream")
        self.g_stream.append(stream if stream.__class__ is int and 0 <= stream < _ID_LIMIT
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
        if corr.__class__ is not int or not -_ID_LIMIT < corr < _ID_LIMIT:
            corr = _as_int(corr)
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
        if ext.__class__ is not int or not -_ID_LIMIT < ext < _ID_LIMIT:
            ext = _as_int(_arg(args, "External id"))
        pid, tid = ev.get("pid"), ev.get("tid")
        thread = self.tid_ids.get((pid, tid)) if pid.__class__ is int and tid.__class__ is int \
            else None
        self.c_tid.append(thread if thread is not None else self._tid_id(pid, tid))
        self.c_ts.append(ts)
        self.c_end.append(ts + dur)
        self.c_ext.append(ext if ext is not None else -1)
        self.c_sig.append(sig)

    def _op_kind(self, op: str) -> int:
        """What the batch loop does with a cpu_op named ``op`` (cached in ``_stages``): 0 inline;
        1 or 2 here, the MoE stage its name states; -1 here, an op whose recorded values
        (Concrete Inputs) are kept (:data:`_VALUE_OPS`). A name the cache has no room for is
        looked at again each time (here, never inline). Training evidence (an optimizer step,
        an autograd node) is noted on the way, once per name."""
        said = stage_in_name(op) if _MOE_OP.search(op) else None
        stage = 0 if said is None else 1 if said[0] == "stage1" else 2
        if stage == 0 and _VALUE_OPS.search(op):
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
            hit = self._sig_cache.get(raw_key, _MISS)
            if hit is not _MISS:
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
        g = _geom(key[0])
        b = _geom(key[1])
        if (g is None and b is None) or len(self.geoms) >= _MAX_GEOMS:
            return -1
        i = self.geom_ids[key] = len(self.geoms)
        self.geoms.append((g, b))
        return i

    def _add_module(self, ev: dict[str, Any]) -> None:
        """A ``python_function`` span of an ``nn.Module`` call (recorded with_stack)."""
        name = ev.get("name")
        if not isinstance(name, str) or not name.startswith("nn.Module: "):
            return
        ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
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
        ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
        # a decode run repeats a handful of labels: each is parsed once (the records are frozen)
        known: tuple[StepRecord, int, int] | None
        if name in self._step_labels:
            known = self._step_labels[name]
        else:
            parsed = parse_step_label(name)
            known = None if parsed is None else (parsed, *_regime_of(parsed))
            if len(self._step_labels) < _CACHE_ITEMS and len(name) <= _CACHE_KEY_CHARS:
                self._step_labels[name] = known
        if known is None:
            rec = _args_step(name, args)
            if rec is None:
                return
            regime, m = _regime_of(rec)
        else:
            rec, regime, m = known
        if ts is None or dur is None or dur < 0:
            return
        if cat == "gpu_user_annotation":
            dev = _as_int(args.get("device"))
            if dev is None:
                dev = _as_int(ev.get("pid"))
            self.steps.append(_Step(dev if dev is not None else -1, ts, ts + dur, rec, regime, m))
        else:
            self.cpu_steps.append(_Step(self._thread_of(ev), ts, ts + dur, rec, regime, m))

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


# ---------------------------------------------------------------------------------------------
# the typed loop: batches of msgspec-decoded events (importers.kineto_events)
# ---------------------------------------------------------------------------------------------
#
# What _Collector.add_batches does inline for a dict, each handler below does for an Event: it
# takes the event (True) or leaves it untouched (False), and the loop then hands the event, as
# the dict it was (event_dict), to _Collector._add_kind, after moving the rows gathered so far
# into the arrays, as add_batches does. The rows taken are gathered in lists ("pending") and
# moved into the arrays once enough are gathered, and before any event goes to the general
# path. Each check is the one add_batches makes, in the same order; an absent key reads as
# UNSET (top level) or None (args), which fails the same checks a KeyError sends there.

_PENDING_ROWS = 1024  # rows gathered in lists before they move into the arrays
_TypedHandler = Callable[[Event], bool]


def _gpu_handler(col: _Collector) -> tuple[_TypedHandler, _Pending]:
    """A kernel/memcpy/memset event as a row of the ``g_*`` arrays."""
    lim, unset = _ID_LIMIT, _UNSET
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


def _launch_handler(col: _Collector) -> tuple[_TypedHandler, _Pending, Callable[[], None]]:
    """A launch API event with a correlation as a row of the ``r_*`` arrays; the third item
    adds the launches counted to the collector's counters."""
    unset = _UNSET
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


def _cpu_op_handler(col: _Collector) -> tuple[_TypedHandler, _Pending, Callable[[], None]]:
    """A ``cpu_op`` whose name states no MoE stage and whose raw signature is cached (see
    :meth:`_Collector._signature`) as a row of the ``c_*`` arrays; the third item adds the
    ops counted to the collector's ``cpu_ops``."""
    unset, miss, dumps = _UNSET, _MISS, orjson.dumps
    stages, sig_cache, sig_ids, tid_ids = col._stages, col._sig_cache, col.sig_ids, col.tid_ids
    raw_sigs: dict[bytes, int] = {}  # as in add_batches: the id of each raw signature cached
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


class _TypedLoop:
    """The collector's loop over batches of :class:`Event` records (see above)."""

    def __init__(self, col: _Collector) -> None:
        self.col = col
        self.gpu, gpu_rows = _gpu_handler(col)
        self.launch, launch_rows, launch_counted = _launch_handler(col)
        self.cpu_op, cpu_rows, cpu_counted = _cpu_op_handler(col)
        self.pending: _Pending = gpu_rows + launch_rows + cpu_rows
        self._counted = (launch_counted, cpu_counted)

    def flush(self) -> None:
        _flush(self.pending)

    def close(self) -> None:
        _flush(self.pending)
        for counted in self._counted:
            counted()

    def run(self, batch: list[Event]) -> None:
        col, pending = self.col, self.pending
        col.events += len(batch)
        if sum(len(first) for first, _ in pending) >= _PENDING_ROWS:
            _flush(pending)
        cat_kinds, categories = col._cat_kinds, col.categories
        gpu, launch, cpu_op, other = self.gpu, self.launch, self.cpu_op, self.other
        add, add_kind = col._add, col._add_kind
        for ev in batch:
            try:  # (only str keys are cached: any other category is not found)
                low, kind = cat_kinds[ev.cat]
            except (KeyError, TypeError):  # no category, one not cached yet, or unhashable
                _flush(pending)
                add(event_dict(ev))
                continue
            try:
                categories[low] += 1
            except KeyError:
                if len(categories) < 64:
                    categories[low] = 1
            if kind == _GPU:
                if gpu(ev):
                    continue
            elif kind == _LAUNCH:
                if launch(ev):
                    continue
            elif kind == _CPU_OP:
                if cpu_op(ev):
                    continue
            else:
                other(ev, low, kind)
                continue
            _flush(pending)
            add_kind(event_dict(ev), low, kind)

    def other(self, ev: Event, low: str, kind: int) -> None:
        """An event of a kind that adds none of the pending rows, to _add_kind as a dict, where
        that does anything with it: a step annotation; an ``nn.Module`` span; a flow start.
        (Anything else of these kinds _add_kind only returns on.)"""
        if kind == _STEP:
            pass
        elif kind == _MODULE:
            name = ev.name
            if name.__class__ is not str or not name.startswith("nn.Module: "):
                return
        elif kind != _FLOW or ev.ph != "s":
            return
        self.col._add_kind(event_dict(ev), low, kind)


def _dims_arg(args: dict[str, Any]) -> Any:
    v = args.get("Input Dims")
    return args.get("Input dims") if v is None else v


# ---------------------------------------------------------------------------------------------
# opening, progress
# ---------------------------------------------------------------------------------------------


class _Progress:
    """The import's progress on a terminal: compressed bytes read of the file's size, bytes
    inflated, events, elapsed. It appears only once the import has run
    :data:`PROGRESS_AFTER_S` (nothing flashes for a quick one) and never when stderr is not a
    terminal; it is cleared when the import ends."""

    def __init__(self, raw: io.BufferedReader, size: int, label: str,
                 inflated: Callable[[], int] | None = None,
                 events: Callable[[], int] | None = None) -> None:
        self._raw = raw
        self._size = size
        self._label = label
        self._inflated = inflated
        self._events = events
        self._bar: Any = None
        self._task: Any = None
        self._start = time.monotonic()
        try:
            self._tty = sys.stderr is not None and sys.stderr.isatty()
        except (OSError, ValueError, AttributeError):
            self._tty = False

    def _fields(self) -> dict[str, str]:
        parts: list[str] = []
        try:
            if self._inflated is not None:
                parts.append(f"{self._inflated() / 1e6:,.0f} MB inflated")
        except (OSError, ValueError):
            pass
        if self._events is not None:
            parts.append(f"{self._events():,} events")
        return {"what": ", ".join(parts)}

    def update(self) -> None:
        if not self._tty:
            return
        try:
            if self._bar is None:
                if time.monotonic() - self._start < PROGRESS_AFTER_S:
                    return
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    DownloadColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )

                self._bar = Progress("[progress.description]{task.description}", BarColumn(),
                                     DownloadColumn(), TextColumn("{task.fields[what]}"),
                                     TimeElapsedColumn(), console=Console(stderr=True),
                                     transient=True)
                self._task = self._bar.add_task(self._label, total=self._size,
                                                **self._fields())
                self._bar.start()
            self._bar.update(self._task, completed=self._raw.tell(), **self._fields())
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def head_text(path: Path, n: int = 4096) -> str:
    """The first ``n`` characters of a (possibly gzipped) text file; ``""`` when unreadable."""
    try:
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read(n)
            else:
                fh.seek(0)
                data = fh.read(n)
    except (OSError, EOFError, zlib.error):
        return ""
    return data.decode("utf-8", "replace")


def _other_format(path: Path) -> str | None:
    """A one-line refusal when the file is a known non-Kineto format."""
    from roofline_tui.importers.sniff import TORCH, refusal

    named = refusal(path, TORCH, named=False)  # the one sniffer table: other tools' files
    if named:
        return named
    head = head_text(path).lstrip("\ufeff \t\r\n")
    if head.startswith("{") and '"rocprofiler-sdk-tool"' in head[:200]:
        return ("a rocprofv3 --output-format json file, not a PyTorch trace; import it with "
                "`roofline import rocprofv3`")
    if head.startswith("SQLite format 3"):
        return "an SQLite database (rocpd or nsys), not a PyTorch trace"
    return None


def collect(path: Path, *, chunk: int = READ_CHUNK,
            progress: bool = True) -> tuple[_Collector, dict[str, Any]]:
    """Stream ``path`` once; returns the collector and the trace's top-level header."""
    path = Path(path)
    why = check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path)}: {printable(why)}")
    try:
        size = path.stat().st_size
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise ImportProblem(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ImportProblem(f"{path}: is a directory, expected a trace file") from None
    except OSError as exc:
        raise ImportProblem(f"{path}: cannot open ({exc.strerror or exc})") from None
    other = _other_format(path)
    if other:
        raw.close()
        raise ImportProblem(f"{path.name}: {other}")
    col = _Collector()
    gz = _is_gzip(path)
    binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
    bar = (_Progress(raw, size, f"importing {path.name}",
                     inflated=binary.tell if gz else None, events=lambda: col.events)
           if progress else None)
    try:
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="strict")
        stream = TypedEventStream(text, chunk=chunk, on_read=bar.update if bar else None)
        try:
            # decoded JSON holds no cycles and the events die young: the cyclic collector
            # only costs time while the trace is read, so it is paused until then
            with collector_paused():
                col.add_typed_batches(stream.event_batches())
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise ImportProblem(f"{path.name}: compressed trace is damaged or truncated "
                                f"({exc})") from None
        if not stream.saw_trace_events:
            raise ImportProblem(f"{path.name}: no traceEvents array (is it a chrome trace?)")
        return col, stream.header
    except ImportProblem as exc:
        if exc.message.startswith(path.name) or exc.message.startswith(str(path)):
            raise
        raise ImportProblem(f"{path.name}: {exc.message}") from None
    finally:
        if bar:
            bar.close()
        raw.close()


# ---------------------------------------------------------------------------------------------
# device choice, shapes, phases
# ---------------------------------------------------------------------------------------------


def choose_device(col: _Collector, device_index: int | None) -> DeviceChoice:
    per: dict[int, float] = {}
    if col.g_dev and col.g_dev.count(col.g_dev[0]) == len(col.g_dev):  # one device
        t = 0.0
        for dur in col.g_dur:  # (added in order, as below)
            t += dur
        per[col.g_dev[0]] = t
    else:
        for d, dur in zip(col.g_dev, col.g_dur, strict=True):
            per[d] = per.get(d, 0.0) + dur
    if not per:
        raise ImportProblem("no GPU events (kernel/gpu_memcpy/gpu_memset) in the trace")
    listing = ", ".join(f"{d} ({units.millis(t / 1000.0)})" for d, t in sorted(per.items()))
    if device_index is not None:
        if device_index not in per:
            raise ImportProblem(f"--device-index {device_index} not in the trace; devices: "
                                f"{listing}")
        msg = (f"device {device_index} chosen with --device-index (devices: {listing})"
               if len(per) > 1 else f"device {device_index}")
        return DeviceChoice(device_index, per, msg)
    chosen = max(sorted(per), key=lambda d: per[d])
    if len(per) > 1:
        msg = (f"trace has {len(per)} devices: {listing}; using device {chosen} (most GPU "
               "time); pick another with --device-index")
    else:
        msg = f"device {chosen}"
    return DeviceChoice(chosen, per, msg)


def _ordered_starts(starts: Sequence[float]) -> bool:
    """Whether every start is strictly after the one before it (no ties, no NaN)."""
    return all(map(_lt, starts, islice(starts, 1, None)))


def _spans_in_order(c_ts: array[float], c_end: array[float], spans: Sequence[int]) -> bool:
    """Whether ``spans`` already run by start, and by end from the latest among equal starts
    (what a trace written in time order gives): then sorting would leave them as they are."""
    every = _every(spans, len(c_ts))
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


def _queries_in_order(q_ts: array[float], queries: Sequence[int],
                      skip: frozenset[int] = frozenset()) -> bool:
    """Whether the times of ``queries`` (none of ``skip``) never decrease (NaN compares as
    in order, as ``t < prev`` says)."""
    if not _every(queries, len(q_ts)):
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
    every_query = _every(queries, len(q_ts))
    if not isinstance(queries, (array, range)) or not _queries_in_order(q_ts, queries, skip):
        queries = sorted((p for p in queries if p not in skip), key=q_ts.__getitem__)
        skip = frozenset()
        every_query = False
    # the spans' starts and ends in that order (typed arrays: a machine word per span, not a
    # float object). Every span in index order (one thread): the arrays themselves
    same = _every(spans, len(c_ts)) and len(c_end) == len(c_ts)
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


def _innermost_by_thread(q_tid: array[int], q_ts: array[float], s_tid: array[int],
                         s_ts: array[float], s_end: array[float]) -> array[int]:
    """For each query ``p`` (thread ``q_tid[p]``, -1 when unknown, at time ``q_ts[p]``) the index
    of the innermost span of the same thread (``s_tid``/``s_ts``/``s_end``) enclosing it, else
    -1. Queries and spans are grouped by thread in one pass each (none when all are on one
    thread: a range then)."""
    n = len(q_tid)
    out = array(_index_code(len(s_tid)), [-1]) * n
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
        code = _index_code(n)
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
        code = _index_code(len(s_tid))
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


@dataclass
class _Launches:
    """For each row of interest: the launching thread and time (-1 / 0 when unknown) and
    whether the launch was a graph replay."""

    tid: array[int]
    ts: array[float]
    graph: array[int]


def _fill_launches(first: dict[int, int] | array[int], more: dict[int, list[int]],
                   out: _Launches, corrs: array[int], tids: array[int], tss: array[float]) -> None:
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


def _find_launches(col: _Collector, rows: Sequence[int]) -> _Launches:
    """Link each GPU row to its launch: the runtime event with the same ``correlation``; else
    the ``ac2g``/``async`` flow start with that id (traces whose runtime events were cut)."""
    n = len(rows)
    out = _Launches(array(_index_code(len(col.tid_ids)), [-1]) * n, array("d", [0.0]) * n,
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
        first = dense = array(_index_code(n), [-1]) * (high + 1)
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
class _Shaped:
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


def _module_paths(col: _Collector, rows: Sequence[int], launches: _Launches,
                  shaped: _Shaped) -> None:
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
    inner = _innermost_by_thread(launches.tid, launches.ts, col.m_tid, col.m_ts, col.m_end)
    module = shaped.module
    for p, j in enumerate(inner):
        if j >= 0:
            module[p] = path_of[j]


def _launching_ops(col: _Collector, rows: Sequence[int], launches: _Launches) -> _Shaped:
    """The launching op of each row: the innermost shape-carrying ``cpu_op`` on the launch's
    thread enclosing the launch; else the ``cpu_op`` with the kernel's ``External id``.

    Works on typed arrays indexed by position in ``rows`` so memory stays a few machine words
    per launch."""
    n = len(rows)
    g_ext, g_geom = col.g_ext, col.g_geom
    every = isinstance(rows, range) and rows == range(len(g_geom))
    geom = array(_index_code(_MAX_GEOMS), g_geom if every else (g_geom[i] for i in rows))
    module = array(_index_code(len(col.modules)), [-1]) * n
    sig_code, event_code = _index_code(len(col.sigs)), _index_code(len(col.c_ts))
    if not n or not col.c_sig:
        return _Shaped(array(sig_code, [-1]) * n, array("b", [HOW_NONE]) * n, geom, module,
                       array(event_code, [-1]) * n)
    span_of = _innermost_by_thread(launches.tid, launches.ts, col.c_tid, col.c_ts, col.c_end)
    # the rows without a span (-1): found by searching when few
    holes = _positions(span_of, -1)
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
    out = _Shaped(sig_of, how, geom, module, event)
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


def _multi_kernel_events(col: _Collector, rows: Sequence[int], shaped: _Shaped
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
    first = array(_index_code(len(col.names)), [-1]) * (max(events, default=-1) + 1)
    multi: dict[int, list[int]] = {}
    launched: Iterable[tuple[int, int]] = (
        zip(events, g_name) if _every(rows, len(g_name))
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


def _attach_rows(col: _Collector, aggs: dict[int, KernelAgg], rows: Sequence[int],
                 top: Sequence[int], shaped: _Shaped, launches: _Launches,
                 steps: list[_Step], step_of: array[int]) -> ServingInfo | None:
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
    if _every(rows, len(g_name)) and _every(top, len(rows)):
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
    # instance key -> [calls, µs, {regime: [calls, µs]}, {other kernel: launches}, per regime:
    # (its entry in that dict, the kernel's in ``phases``)]
    instances: dict[tuple[int, int, int, int, int], list[Any]] = {}
    # (kernel, regime) -> [calls, µs, {M: calls}]
    phases: dict[tuple[int, int], list[Any]] = {}
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
    # shapes and dtypes
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
    return _serving_info(steps)


def _serving_info(steps: list[_Step]) -> ServingInfo | None:
    """The serving block's step accounting: the steps that own rows and count in a phase."""
    counted = [s for s in steps if s.rows and s.regime >= 0]
    if not counted:
        return None
    recs = [s.rec for s in counted]
    return ServingInfo(
        n_prefill_steps=sum(1 for s in counted if s.regime == 0),
        n_decode_steps=sum(1 for s in counted if s.regime == 1),
        decode_batches=[s.m for s in counted if s.regime == 1],
        phases=phase_aggregates(recs),
        families=sorted({r.family for r in recs}),
        problems=sorted({p for r in recs for p in r.problems})[:8],
        backfilled=sorted({b for r in recs for b in r.backfilled})[:8],
    )


@dataclass
class _StageLabel:
    """A split-stage MoE entry: its short name, and the launching op(s) with how many of the
    kernel's launches each made."""

    short_name: str
    ops: dict[str, int] = field(default_factory=dict)


def _split_moe_stages(col: _Collector, device: int) -> dict[int, _StageLabel]:
    """Give each launch of a MoE kernel whose name hides its stage the stage of the ``cpu_op``
    that launched it (module docstring): its row is re-pointed to the name id of
    ``<name> [stage<n>]``. Returns the new name ids with their labels."""
    if not col.s_stage:
        return {}
    candidates: dict[int, bool] = {}
    rows = array("q")
    for i, (d, nid) in enumerate(zip(col.g_dev, col.g_name, strict=True)):
        if d != device:
            continue
        ok = candidates.get(nid)
        if ok is None:
            name = col.names[nid]
            ok = candidates[nid] = (stage_in_name(name) is None
                                    and classify_op(name, has_experts=True).op_class == "moe")
        if ok:
            rows.append(i)
    if not rows:
        return {}
    launches = _find_launches(col, rows)
    span_of = _innermost_by_thread(launches.tid, launches.ts, col.s_tid, col.s_ts, col.s_end)
    labels: dict[int, _StageLabel] = {}
    for p, j in enumerate(span_of):
        if j < 0:
            continue
        i = rows[p]
        base = col.names[col.g_name[i]]
        stage = col.s_stage[j]
        nid = col._name_id(f"{base} [stage{stage}]")
        col.g_name[i] = nid
        label = labels.get(nid)
        if label is None:
            suffix = f".stage{stage}"
            short = short_name_of(base)[: SHORT_NAME_MAX - len(suffix)]
            label = labels[nid] = _StageLabel(short + suffix)
        op = col.names[col.s_op[j]]
        label.ops[op] = label.ops.get(op, 0) + 1
    return labels


def _stage_note(label: _StageLabel, calls: int) -> str:
    ops = ", ".join(f"{printable(op, limit=80)} ({n:,})" for op, n in
                    sorted(label.ops.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    return (f"split-stage MoE: the {calls:,} launches of this kernel made inside {ops}; "
            "its launches anywhere else are separate entries")


PHASES = ("prefill", "decode")  # the Top-N's regimes, indexed by a row's phase number


@dataclass
class _Step:
    """One step span: where it is (thread id for a CPU annotation, device for a GPU one), its
    parsed record, the regime it counts in (``PHASES`` index, -1: idle or a dummy step) and
    the token count M its kernels ran at."""

    key: int
    ts: float
    end: float
    rec: StepRecord
    regime: int = -1
    m: int = 0
    rows: int = 0  # GPU rows of the chosen device that belong to it


def _regime_of(rec: StepRecord) -> tuple[int, int]:
    """(regime index, M) of a step: a step with context tokens is a prefill step (M = all its
    tokens); a step with generation requests only, a decode step (M = its requests)."""
    if rec.dummy or rec.phase == "idle":
        return -1, 0
    ctx, gen = rec.context, rec.generation
    if rec.phase in ("prefill_only", "mixed"):
        m = rec.tokens
        if m is None:
            m = sum(g.sq or 0 for g in (ctx, gen) if g is not None)
        return 0, int(m or 0)
    if gen is not None:
        return 1, int(gen.requests if gen.requests is not None else gen.sq or 0)
    return -1, 0


def _outermost(steps: list[_Step]) -> list[_Step]:
    """Step spans not enclosed by another step span of the same device/thread: vLLM's
    ``execute_*`` around SGLang's ``step[...]`` is one step, not two. The enclosing span is
    kept; its record is the inner one's when only the inner label has the aggregates."""
    out: list[_Step] = []
    for s in sorted(steps, key=lambda s: (s.key, s.ts, -s.end)):
        if out and out[-1].key == s.key and out[-1].ts <= s.ts and s.end <= out[-1].end:
            if s.rec.has_aggregates and not out[-1].rec.has_aggregates:
                out[-1].rec = s.rec
                out[-1].regime, out[-1].m = _regime_of(s.rec)
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


def _join_steps(col: _Collector, device: int, rows: Sequence[int], launches: _Launches
                ) -> tuple[list[_Step], array[int]]:
    """The step of every row (-1: none). A CPU step annotation owns the kernels whose launch
    (the runtime call with the kernel's correlation, a graph launch included) lies inside its
    span on the same thread: replayed kernels often run after the span has closed, so a
    kernel's own time says nothing. Without CPU annotations, the GPU mirror span around the
    kernel is used. A step's CPU and GPU mirrors are one step."""
    step_of = array(_index_code(len(col.steps) + len(col.cpu_steps)), [-1]) * len(rows)
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
        every = _every(rows, len(g_ts))
        if every and _in_order(begin) and _queries_in_order(g_ts, rows):
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


def _step_window(col: _Collector, rows: Sequence[int], steps: list[_Step], step_of: array[int],
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
    durs = g_dur if _every(rows, len(g_dur)) else map(g_dur.__getitem__, rows)
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


def _step_time(col: _Collector, rows: Sequence[int], steps: list[_Step], step_of: array[int]
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
    every = _every(rows, len(g_ts))  # one device: the collector's own arrays, not copies
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
    if not _every(rows, len(g_name)) or sum(map(g_name.count, other_names)) > _FEW_OTHERS:
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


def _sums_of(col: _Collector, rows: Sequence[int]) -> dict[int, list[Any]]:
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


def _window_block(window: Window, dropped_us: float, total_us: float) -> dict[str, Any]:
    """The Top-N extension's ``steps`` block (``core.topn_ext.StepWindow``)."""
    return {"recorded": window.recorded, "start": window.start, "stop": window.stop,
            "how": window.how, "reason": window.reason,
            "dropped_gpu_ms": round(dropped_us / 1000, 6),
            "dropped_share": round(dropped_us / total_us, 6) if total_us > 0 else 0.0}


class TorchOptions(NamedTuple):
    """What a trace import keeps and joins, whichever function runs it (one trace, one of
    several ranks, a trace already collected): how many kernels, the workload the Top-N is
    labelled with, the graph-capture sizes and traces, and whether captures beside the trace
    are looked for."""

    top: int = DEFAULT_TOP
    isl: int | None = None
    osl: int | None = None
    conc: int | None = None
    capture_sizes: Iterable[int] | None = None
    captures: Sequence[Path] | None = None
    discover: bool = True
    # the serving steps to sum (--steps / --skip-warmup); None: the automatic steady window
    steps: StepRequest | None = None


DEFAULT_OPTIONS = TorchOptions()


def import_torch(
    path: Path,
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    device_index: int | None = None,
    progress: bool = True,
    chunk: int = READ_CHUNK,
) -> TorchImport:
    """Parse a Kineto trace into a Top-N document (nothing is written)."""
    col, header = collect(Path(path), chunk=chunk, progress=progress)
    times = kernel_times(col, header, Path(path), device_index)
    result = import_collected(col, header, Path(path), times, options, identify_device=False)
    del col, times  # the device is identified (the peak table read) without the trace's arrays
    result.device_info = from_kineto(header, result.device.chosen, Path(path).name)
    return result


@dataclass
class KernelTimes:
    """One trace's GPU time per kernel on the device chosen: what ``importers.ranks`` keeps of
    each rank (the collector itself is dropped)."""

    choice: DeviceChoice
    stage_labels: dict[int, _StageLabel]
    sums: dict[int, list[Any]]  # kernel name id -> [calls, total µs], summed in trace order
    total_us: float
    launches: int

    def by_name(self, col: _Collector) -> dict[str, tuple[int, float]]:
        """Kernel name (the Top-N's key) -> (launches, total µs)."""
        return {col.names[nid]: (calls, us) for nid, (calls, us) in self.sums.items()}


def kernel_times(col: _Collector, header: dict[str, Any], path: Path,
                 device_index: int | None) -> KernelTimes:
    """Choose the device, split the split-stage MoE launches (this re-points rows of ``col``)
    and sum every kernel's launches and time on that device."""
    if not col.g_dev:
        raise ImportProblem(f"{path.name}: {col.what_it_holds(header)}")
    choice = choose_device(col, device_index)
    dev = choice.chosen
    stage_labels = _split_moe_stages(col, dev)
    sums: dict[int, list[Any]] = {}
    # the device's time is the chosen device's sum (of its rows, in order: the same sum)
    total = choice.devices[dev]
    launches = col.g_dev.count(dev)
    on_dev: Iterable[tuple[int, float]]
    if launches == len(col.g_dev):  # one device: every row
        on_dev = zip(col.g_name, col.g_dur, strict=True)
    else:
        on_dev = (
            (nid, dur) for d, nid, dur in zip(col.g_dev, col.g_name, col.g_dur, strict=True)
            if d == dev)
    for nid, dur in on_dev:
        acc = sums.get(nid)
        if acc is None:
            acc = sums[nid] = [0, 0.0]
        acc[0] += 1
        acc[1] += dur
    return KernelTimes(choice, stage_labels, sums, total, launches)


def import_collected(
    col: _Collector,
    header: dict[str, Any],
    path: Path,
    times: KernelTimes,
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    identify_device: bool = True,
) -> TorchImport:
    """The Top-N document of a trace already read (:func:`collect`, :func:`kernel_times`).
    ``identify_device=False`` leaves ``device_info`` unset: the caller sets it with
    :func:`importers.device.from_kineto` once it has dropped the collector (that reads the peak
    table, whose models need not share the memory with the trace's arrays)."""
    top, isl, osl, conc, capture_sizes, captures, discover, step_request = options
    choice, stage_labels = times.choice, times.stage_labels
    dev, total, launches = choice.chosen, times.total_us, times.launches
    # every row of the device: the launching ops, the steps and the captures concern them all
    # (the share of GPU time without a launching op is a whole-profile figure)
    rows = _rows_of(col.g_dev, dev)
    launches_of = _find_launches(col, rows)
    shaped = _launching_ops(col, rows, launches_of)
    _module_paths(col, rows, launches_of, shaped)
    steps, step_of = _join_steps(col, dev, rows, launches_of)
    notes: list[str] = []
    sums = times.sums
    window, kept = _step_window(col, rows, steps, step_of, step_request)
    if window is not None and kept is not None:  # steps dropped: every figure over the rest
        dropped_us = total - sum(col.g_dur[i] for i in kept)
        rows = kept
        launches_of = _find_launches(col, rows)
        shaped = _launching_ops(col, rows, launches_of)
        _module_paths(col, rows, launches_of, shaped)
        steps, step_of = _join_steps(col, dev, rows, launches_of)
        sums = _sums_of(col, rows)
        full, total, launches = total, sum(us for _c, us in sums.values()), len(rows)
        if total <= 0:
            raise ImportProblem(f"the step window ({window.reason}) keeps no GPU time")
        step_block: dict[str, Any] | None = _window_block(window, dropped_us, full)
        notes.append(f"steps {window.start}:{window.stop} of {window.recorded} summed "
                     f"({window.reason}); {dropped_us / 1000:.3f} ms "
                     f"({dropped_us / full:.1%}) of the device's GPU time left out")
    elif window is not None:
        step_block = _window_block(window, 0.0, total)
        if window.how != "auto" or window.reason.startswith("no steady"):
            # said when asked for, or when no steady run was found (not for every trace)
            notes.append(f"all {window.recorded} serving step(s) summed ({window.reason})")
    else:
        step_block = None
    time_split = _step_time(col, rows, steps, step_of)
    aggs = {nid: KernelAgg(col.names[nid], calls=calls, total_us=total_us)
            for nid, (calls, total_us) in sums.items()}
    for nid, label in stage_labels.items():
        agg = aggs.get(nid)
        if agg is None:  # every launch of that stage fell outside the kept steps
            continue
        agg.short_name = label.short_name
        agg.notes.append(_stage_note(label, agg.calls))
    ranked = sorted(aggs, key=lambda n: (-aggs[n].total_us, aggs[n].name))[: max(1, top)]
    top_aggs = {n: aggs[n] for n in ranked}
    replay_join = None
    replayed = any(launches_of.graph)
    if captures is None:  # look beside the trace only when something was replayed
        captures = discover_captures(Path(path)) if discover and replayed else []
    if captures and replayed:
        replay_join = join_replays(col, rows, launches_of, shaped, steps, step_of,
                                   list(captures), rank=trace_rank(Path(path), header))
        notes.extend(replay_join.notes)
    elif captures:
        notes.append(f"{len(captures)} graph-capture trace(s) given, but no kernel of this "
                     "trace was replayed from a graph: not used")
    g_name = col.g_name
    top_pos: Sequence[int]
    if len(top_aggs) == len(aggs):  # every kernel of the device is in the Top-N
        top_pos = range(len(rows))
    else:
        top_pos = array(_index_code(len(rows)),
                        (p for p, i in enumerate(rows) if g_name[i] in top_aggs))
    serving = _attach_rows(col, top_aggs, rows, top_pos, shaped, launches_of, steps, step_of)
    if col.execute_spans and serving is None:
        notes.append(f"{col.execute_spans} step annotation(s) (execute_*, step[...], "
                     "prefill[...]/decode[...]) own no GPU work of this device or are not "
                     "readable: no serving block")
    if col.skipped_gpu:
        notes.append(f"{col.skipped_gpu} GPU events without a usable ts/dur/name skipped")
    if total <= 0:
        raise ImportProblem("GPU events found but their durations sum to zero")
    notes.extend(_evidence_notes(col, rows, shaped, launches_of, step_of, total))
    replay = graph_replay(col, launches, replay_join)
    if replay:
        if replay_join is not None:
            replay["capture_shaped_launches"] = replay_join.shaped
            replay["replayed_launches"] = replay_join.replayed
        notes.append(replay["warning"])
    regime = regime_evidence(col, serving, (aggs[nid].name for nid in sorted(
        aggs, key=lambda n: (-aggs[n].total_us, aggs[n].name))))
    if regime["regime"] is None:
        notes.append(regime["evidence"])  # said once, for every entry
    doc = build_topn(aggs.values(), source="torch-trace", total_us=total, launches=launches,
                     top=top, serving=serving, isl=isl, osl=osl, conc=conc,
                     capture_sizes=capture_sizes, notes=notes, graph_replay=replay,
                     extension=_doc_extension(col, regime, replay_join, header,
                                              Path(path).name, step_block, time_split))
    info = from_kineto(header, dev, Path(path).name) if identify_device else None
    return TorchImport(doc=doc, device=choice, events_seen=col.events, notes=notes,
                       device_info=info)


def _evidence_notes(col: _Collector, rows: Sequence[int], shaped: _Shaped, launches: _Launches,
                    step_of: array[int], total_us: float) -> list[str]:
    """What the trace could not say, as profile notes: no cpu_op events at all; the GPU time
    whose kernels have no launching op; the GPU time outside every step."""
    out: list[str] = []
    if not col.cpu_ops:
        out.append("GPU-only trace: no cpu_op events at all, so no kernel has a launching op "
                   "or shapes (record with the CPU activity on: ProfilerActivity.CPU)")
    g_dur, sig, graph, l_tid = col.g_dur, shaped.sig, launches.graph, launches.tid
    no_op = replayed = unlaunched = outside = 0.0
    every = _every(rows, len(g_dur))
    no_sig, no_step = _positions(sig, -1), _positions(step_of, -1)
    if no_sig is None or no_step is None:  # many: one pass for all
        durs: Iterable[float] = g_dur if every else (g_dur[i] for i in rows)
        for dur, s, replay, tid, k in zip(durs, sig, graph, l_tid, step_of):
            if s < 0:
                no_op += dur
                if replay:
                    replayed += dur
                if tid < 0:
                    unlaunched += dur
            if k < 0:
                outside += dur
    else:  # a few: those rows alone (in the same order)
        for p in no_sig:
            dur = g_dur[rows[p]]
            no_op += dur
            if graph[p]:
                replayed += dur
            if l_tid[p] < 0:
                unlaunched += dur
        for p in no_step:
            outside += g_dur[rows[p]]
    if col.cpu_ops and no_op > 0:
        parts = []
        if replayed:
            parts.append(f"{100 * replayed / total_us:.1f} % replayed from a graph")
        if unlaunched:
            parts.append(f"{100 * unlaunched / total_us:.1f} % with no launch call in the "
                         "trace (launched before the profiled window, or its runtime events "
                         "were dropped)")
        rest = no_op - replayed - unlaunched
        if rest > 0.0005 * total_us:
            parts.append(f"{100 * rest / total_us:.1f} % launched outside any op that "
                         "records shapes")
        out.append(f"{100 * no_op / total_us:.1f} % of the GPU time has no launching op with "
                   f"shapes ({'; '.join(parts)})")
    if (col.cpu_steps or col.steps) and outside < (sum(g_dur) if every
                                                   else sum(g_dur[i] for i in rows)):
        if outside > 0.0005 * total_us:
            out.append(f"{100 * outside / total_us:.1f} % of the GPU time belongs to no step "
                       "annotation (before or after the profiled steps); it is counted in the "
                       "Top-N but in no phase")
    return out


_EMBEDDING_OPS = ("aten::embedding", "aten::embedding_bag")
# kernels that only a training run launches: backward passes (MIOpen's igemm_bwd/igemm_wrw,
# cuDNN dgrad/wgrad, PyTorch's *_backward kernels) and optimizer steps
_TRAINING_KERNELS = lazy_compile(r"backward|(^|_)bwd_|(^|_)wrw_|dgrad|wgrad|Adam(W)?Functor|"
                                 r"fused_adam|multi_tensor_adam", re.IGNORECASE)
# convolutions: the aten ops, and the kernels MIOpen / cuDNN run them with (a 1-D causal conv,
# as Mamba layers serve it, is not one)
_CONV_OPS = lazy_compile(r"^aten::(_?convolution|conv[23]d|conv_transpose[23]d|cudnn_convolution|"
                         r"miopen_convolution|mkldnn_convolution)")
_CONV_KERNELS = lazy_compile(r"igemm_(fwd|bwd|wrw)_|implicit_convolve|fprop|winograd|naive_conv|"
                             r"conv2d|conv3d|convolution|MIOpenConv|scudnn", re.IGNORECASE)
# dense attention ops whose query has its own sequence axis: SDPA [B, H, S, d]; flash [B, S, H, d]
_SDPA_OPS = lazy_compile(r"scaled_dot_product")
_FLASH_BSHD_OPS = frozenset({"aten::_flash_attention_forward", "aten::_efficient_attention_forward",
                             "flash_attn::_flash_attn_forward", "FlashAttnFunc"})
# GEMM ops -> the position of their A operand: a linear's or matmul's [B, S, K] input keeps
# its S; a 2-D [M, K] one has batch and sequence folded into M
_GEMM_A = {"aten::linear": 0, "aten::matmul": 0, "aten::mm": 0, "aten::addmm": 1}
_NO_REGIME = ("the models read the recorded shapes, and each kernel's time is the mean over all "
              "its launches")


def regime_evidence(col: _Collector, serving: ServingInfo | None,
                    kernels: Iterable[str] = ()) -> dict[str, Any]:
    """Which regime the trace's own evidence says, and whether that is an assumption.

    Step annotations decide when present. A trace that is not a serving run — it trains
    (backward ops or kernels, an optimizer step, autograd nodes) or it is a CNN (convolutions,
    no attention or embedding) — has no regime (``regime`` null, with why). Otherwise the
    token-embedding lookups decide: indices ``[B, S]`` with S > 1 are a forward over whole
    sequences (prefill), S = 1 one new token per sequence (decode); then the recorded shapes:
    a dense attention call's S_q against S_kv, a linear's ``[B, S, K]`` input. Nothing at all:
    decode, assumed (serving runs are decode-dominated). ``kernels``: the names of the chosen
    device's kernels, most GPU time first (the evidence names the first that says it)."""
    if serving is not None:
        d, p = serving.n_decode_steps, serving.n_prefill_steps
        return {"regime": "decode" if d >= p else "prefill", "assumed": False,
                "evidence": f"step annotations: {d} decode and {p} prefill step(s)"}
    not_serving = _not_serving(col, kernels)
    if not_serving is not None:
        return {"regime": None, "assumed": False,
                "evidence": f"no regime: not a serving run ({not_serving}); {_NO_REGIME}"}
    found = _embedding_regime(col)
    if found is None:
        found = _shape_regime(col)
    return found


def _not_serving(col: _Collector, kernels: Iterable[str]) -> str | None:
    """Why the trace is not a serving run (training, or a CNN), or None."""
    if col.training is not None:
        return f"it trains: {col.training} recorded"
    names = list(kernels)
    trains = next((k for k in names if _TRAINING_KERNELS.search(k)), None)
    if trains is not None:
        return f"it trains: backward kernel {short_name_of(trains)}"
    seq_ops = any(sig.op in _EMBEDDING_OPS or (sig.op and _VALUE_OPS.search(sig.op))
                  for sig in col.sigs)
    if seq_ops or any(_VALUE_OPS.search(k) for k in names):
        return None  # attention or an embedding: a sequence model
    conv_op = next((sig.op for sig in col.sigs if sig.op and _CONV_OPS.match(sig.op)), None)
    if conv_op is not None:
        return f"a CNN: {conv_op} recorded, no attention or embedding"
    conv = next((k for k in names if _CONV_KERNELS.search(k)), None)
    if conv is not None:
        return (f"a CNN: convolution kernel {short_name_of(conv)}, no attention or "
                "embedding")
    return None


def _embedding_regime(col: _Collector) -> dict[str, Any] | None:
    """The regime the token-embedding lookups say, or None when there are none."""
    seq: dict[int, int] = {}
    shown: dict[int, str] = {}
    for sig in col.sigs:
        if sig.op in _EMBEDDING_OPS and len(sig.dims) >= 2:
            idx = sig.dims[1]
            if isinstance(idx, tuple) and idx and all(isinstance(x, int) for x in idx):
                s_len = idx[-1] if len(idx) >= 2 else 1
                seq[s_len] = seq.get(s_len, 0) + 1
                shown.setdefault(s_len, f"{sig.op} indices {list(idx)}")
    return _by_count(seq, shown, "embedding lookups", "tokens per sequence")


def _by_count(seq: dict[int, int], shown: dict[int, str], what: str, unit: str
              ) -> dict[str, Any] | None:
    """The regime that sequence lengths ``seq`` (length -> calls) say: all one token decode,
    all longer prefill (stated); both, the most calls (assumed). None when ``seq`` is empty."""
    long_ = {s: n for s, n in seq.items() if s > 1}
    one = seq.get(1, 0)
    if long_ and not one:
        s_len = max(sorted(long_), key=lambda s: long_[s])
        return {"regime": "prefill", "assumed": False,
                "evidence": f"no step annotation; {shown[s_len]}: a forward over {s_len} "
                            f"{unit} (prefill)"}
    if one and not long_:
        return {"regime": "decode", "assumed": False,
                "evidence": f"no step annotation; {shown[1]}: one new token per sequence "
                            "(decode)"}
    if one and long_:
        n_long = sum(long_.values())
        regime = "decode" if one >= n_long else "prefill"
        return {"regime": regime, "assumed": True,
                "evidence": f"no step annotation; {one} one-token and {n_long} multi-token "
                            f"{what}: {regime} by count, per-phase time unknown"}
    return None


def _query_rows(sig: Sig) -> tuple[int, int] | None:
    """(S_q, S_kv) of a dense attention call whose query and key keep their sequence axis."""
    if sig.op is None or len(sig.dims) < 2:
        return None
    q, k = sig.dims[0], sig.dims[1]
    if not (isinstance(q, tuple) and isinstance(k, tuple) and len(q) == 4 == len(k)
            and all(isinstance(x, int) for x in q + k)):
        return None
    if _SDPA_OPS.search(sig.op):
        return q[2], k[2]
    if sig.op in _FLASH_BSHD_OPS:
        return q[1], k[1]
    return None


def _shape_regime(col: _Collector) -> dict[str, Any]:
    """The regime the recorded shapes say (no steps, no embedding): a dense attention call's
    query rows (S_q = 1: decode; S_q > 1: a forward over whole sequences), else a linear's
    ``[B, S, K]`` input; else decode, assumed, with the GEMM rows seen."""
    seq: dict[int, int] = {}
    shown: dict[int, str] = {}
    for sig in col.sigs:
        rows = _query_rows(sig)
        if rows is not None:
            seq[rows[0]] = seq.get(rows[0], 0) + 1
            shown.setdefault(rows[0], f"{sig.op} query {list(sig.dims[0])} against "
                                      f"{rows[1]} keys")
    found = _by_count(seq, shown, "attention calls", "query tokens per sequence")
    if found is not None:
        return found
    m_rows: list[int] = []
    for sig in col.sigs:
        at = _GEMM_A.get(sig.op) if sig.op is not None else None
        a = sig.dims[at] if at is not None and at < len(sig.dims) else None
        if isinstance(a, tuple) and len(a) == 3 and sig.op in ("aten::linear", "aten::matmul"):
            seq[a[1]] = seq.get(a[1], 0) + 1
            shown.setdefault(a[1], f"{sig.op} input {list(a)} as [B, S, K]")
        elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], int):
            m_rows.append(a[0])
    found = _by_count(seq, shown, "linear calls", "tokens per sequence")
    if found is not None:
        return found
    seen = (f"; GEMM inputs are [M, K] with M up to {max(m_rows)}: batch and sequence folded "
            "into M, which does not say which") if m_rows else ""
    return {"regime": "decode", "assumed": True,
            "evidence": "no step annotation and no token-embedding or attention shapes"
                        f"{seen}: decode assumed (serving runs are decode-dominated)"}


def _doc_extension(col: _Collector, regime: dict[str, Any], join: ReplayJoin | None,
                   header: dict[str, Any] | None = None, file: str = "the trace",
                   steps: dict[str, Any] | None = None,
                   step_time: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"regime": regime}
    if steps is not None:
        out["steps"] = steps
    if step_time is not None:
        out["step_time"] = step_time
    if join is not None and join.used:
        out["captures"] = join.used
    dist = distributed_info(header or {}, file)
    if dist is not None:
        out["distributed"] = dist
    return out


_WORLD_MAX = 4096  # core.topn_ext.MAX_RANKS: a larger world size is not read


def distributed_info(header: dict[str, Any], file: str) -> dict[str, Any] | None:
    """The trace's own ``distributedInfo`` as the extension's ``distributed`` block
    (``core.topn_ext.Distributed``), or None when its ``world_size`` is not a usable integer
    (1 to 4096). A rank outside the world and a backend that is not a short name are left
    out."""
    info = header.get("distributedInfo")
    if not isinstance(info, dict):
        return None
    world = info.get("world_size")
    if world.__class__ is not int or not 1 <= world <= _WORLD_MAX:
        return None
    rank = info.get("rank")
    backend = info.get("backend")
    return {"world_size": world,
            "rank": rank if rank.__class__ is int and 0 <= rank < world else None,
            "backend": printable(backend, limit=40) if isinstance(backend, str) and backend
            else None,
            "source": f"{printable(file, limit=120)} distributedInfo"}


def graph_replay(col: _Collector, gpu_events: int, join: ReplayJoin | None = None
                 ) -> dict[str, Any] | None:
    """The graph-replay warning, or None. Raised when graph launches are present, or when
    kernel launch calls far outnumber the GPU events recorded (kernels launched inside a graph
    capture, or replayed without tracing, are not in the trace)."""
    launches, graphs = col.launch_calls, col.graph_launches
    capture = launches >= 2 * max(gpu_events, 1) and launches - gpu_events >= 20
    if not graphs and not capture:
        return None
    parts = []
    if capture:
        parts.append(f"{launches:,} kernel launch calls but only {gpu_events:,} GPU events "
                     "recorded: kernels launched in a graph capture (or replayed untraced) are "
                     "missing, so this Top-N misses them")
    if graphs and join is not None and join.shaped:
        parts.append(f"{graphs:,} graph launch call(s) (cudaGraphLaunch/hipGraphLaunch): "
                     f"{join.shaped:,} of {join.replayed:,} replayed kernels took the op and "
                     "shapes of their launch in a graph-capture trace")
    elif graphs:
        parts.append(f"{graphs:,} graph launch call(s) (cudaGraphLaunch/hipGraphLaunch): "
                     "kernels replayed from a graph have no launching op, so their shapes "
                     "are not recorded (a graph-capture trace of the run gives them: "
                     "--capture)")
    return {"launch_calls": launches, "graph_launches": graphs, "kernel_events": gpu_events,
            "warning": "graph replay: " + "; ".join(parts)}



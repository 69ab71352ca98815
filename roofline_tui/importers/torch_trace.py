"""PyTorch profiler (Kineto) chrome trace -> Top-N.

One streamed pass keeps only compact per-event records in typed arrays:

* GPU work (``cat`` kernel / gpu_memcpy / gpu_memset): device, kernel-name id, correlation,
  start and duration;
* launch API events (``cuda_runtime`` / ``cuda_driver``) carrying ``args.correlation``: thread
  and start time;
* ``cpu_op`` spans that carry ``Input Dims``: thread, start, end, External id and an interned
  (dims, types) signature;
* ``gpu_user_annotation`` step spans named ``execute_*``.

Shapes: a kernel's launch event shares ``args.correlation`` with it; the launching op is the
innermost shape-carrying ``cpu_op`` on the launch event's thread whose span encloses the launch
(falling back to the ``cpu_op`` with the kernel's ``External id``).

Split-stage MoE: a MoE kernel whose name does not say its stage, launched inside a ``cpu_op``
whose name does (``aiter::ck_moe_stage1`` / ``aiter::ck_moe_stage2``: some libraries run both
GEMMs of the layer through one kernel), becomes one Top-N entry per stage, ``<name> [stage1]``
and ``<name> [stage2]`` (short names ``<short>.stage1`` / ``.stage2``), each with the launches,
time and shapes of its own stage and a note naming the launching op. Launches outside such an
op keep the kernel's name: then one logical op is both launches, as the engine models it.

Serving steps (the rule): a ``gpu_user_annotation`` span whose name starts with ``execute_``
is a step. Its name is searched for ``context_<n>(<tokens>)`` and ``generation_<n>(<tokens>)``
segments (``<tokens>`` may also read ``sq<q>sk<kv>…``); args ``context_tokens`` /
``num_context_tokens`` / ``prefill_tokens`` and ``decode_batch`` / ``num_decode_tokens`` /
``generation_tokens`` are read as well. A step with context tokens > 0 (or, without a token
count, context requests > 0) is a prefill step; otherwise, with a generation segment, a decode
step. Steps with neither are ignored. A prefill step's M is its context tokens plus its decode
batch; a decode step's M (batch) is the generation request count (or tokens).
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import os
import re
import sys
import zlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import units
from roofline_tui.core.classify import classify as classify_op
from roofline_tui.core.classify import stage_in_name
from roofline_tui.core.coerce import number
from roofline_tui.core.names import SHORT_NAME_MAX, cap_name, short_name_of
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import (
    DEFAULT_TOP,
    MAX_DTYPES,
    MAX_SHAPES,
    ImportProblem,
    KernelAgg,
    PhaseAgg,
    ServingInfo,
    build_topn,
)
from roofline_tui.importers.device import DeviceInfo, from_kineto
from roofline_tui.importers.jsonstream import TraceEventStream

# Kineto categories, compared lower-cased: PyTorch 1.8-1.9 wrote ``Kernel``/``Memcpy``/
# ``Memset``/``Runtime``/``Operator`` (and ``Input dims``); later versions ``kernel``/
# ``gpu_memcpy``/``gpu_memset``/``cuda_runtime``/``cpu_op`` (``Input Dims``).
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "runtime")
CPU_OP_CATS = ("cpu_op", "operator")
FLOW_CATS = ("ac2g", "async")
_KERNEL_LAUNCH = re.compile(r"LaunchKernel|LaunchCooperativeKernel|^cuLaunch|^hipLaunch|"
                            r"ModuleLaunch", re.IGNORECASE)
_GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch", re.IGNORECASE)
# a cpu_op that runs (part of) a MoE layer; its name may state the stage (aiter::ck_moe_stage1)
_MOE_OP = re.compile(r"moe|expert", re.IGNORECASE)
_NOT_DTYPES = {"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device",
               "Layout", "MemoryFormat"}
PROGRESS_MIN_BYTES = 64 << 20


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

_SEG = re.compile(r"(context|generation)_(\d+)\(([^)]*)\)")
_SQ = re.compile(r"sq(\d+)")


_SGLANG_STEP = re.compile(r"^step\[(\w+)([^\]]*)\]")
_KV = re.compile(r"(\w+)=(\d+)")


def is_step_name(name: Any) -> bool:
    return isinstance(name, str) and (name.startswith("execute_") or
                                      _SGLANG_STEP.match(name) is not None)


def parse_step(name: str, args: dict[str, Any] | None) -> tuple[str, int, int] | None:
    """``(phase, context_tokens, decode_batch)`` for a step span, else None.

    vLLM: ``execute_*`` (see the module docstring). SGLang: ``step[EXTEND bs=15 toks=15360]``
    is a prefill step of 15360 tokens, ``step[DECODE bs=32]`` a decode step of batch 32."""
    if isinstance(name, str) and (m := _SGLANG_STEP.match(name)):
        kind = m.group(1).upper()
        kv = {k.lower(): int(v[:9]) for k, v in _KV.findall(m.group(2))}
        if kind in ("EXTEND", "PREFILL"):
            return ("prefill", kv.get("toks", kv.get("tokens", 0)), 0)
        if kind == "DECODE":
            return ("decode", 0, kv.get("bs", 0))
        return None
    if not isinstance(name, str) or not name.startswith("execute_"):
        return None
    seg: dict[str, tuple[int, int | None]] = {}
    for kind, lead, inner in _SEG.findall(name):
        sq = _SQ.search(inner)
        tokens = int(sq.group(1)) if sq else (int(inner) if inner.strip().isdigit() else None)
        seg[kind] = (int(lead), tokens)
    args = args if isinstance(args, dict) else {}

    def arg_int(*keys: str) -> int | None:
        for k in keys:
            v = args.get(k)
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)) and v >= 0:
                return int(v)
            if isinstance(v, str) and v.strip().isdigit():
                return int(v)
        return None

    ctx_tokens = arg_int("context_tokens", "num_context_tokens", "prefill_tokens")
    dec_batch = arg_int("decode_batch", "num_decode_tokens", "generation_tokens")
    ctx_reqs = 0
    if "context" in seg:
        ctx_reqs, tok = seg["context"]
        if ctx_tokens is None:
            ctx_tokens = tok if tok is not None else None
    if "generation" in seg and dec_batch is None:
        lead, tok = seg["generation"]
        dec_batch = lead or (tok or 0)
    if ctx_tokens is None and dec_batch is None and "context" not in seg:
        return None
    ctx_tokens = ctx_tokens or 0
    dec_batch = dec_batch or 0
    if ctx_tokens > 0 or (ctx_reqs > 0 and "context" in seg and seg["context"][1] is None):
        return ("prefill", ctx_tokens, dec_batch)
    if "generation" in seg or dec_batch > 0:
        return ("decode", 0, dec_batch)
    return None


# ---------------------------------------------------------------------------------------------
# the pass
# ---------------------------------------------------------------------------------------------


def _num(v: Any) -> float | None:
    """A JSON number (never text) through the one coercer: huge integers become ``None``."""
    return number(v, text=False)


_ID_LIMIT = 1 << 62  # ids must fit the typed arrays


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


def _clean_dims(dims: Any) -> list[list[int]]:
    out: list[list[int]] = []
    if not isinstance(dims, list):
        return out
    for d in dims:
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
    return [t for t in types if isinstance(t, str) and t not in _NOT_DTYPES]


# what the collector does with an event, by its lower-cased category
_GPU, _LAUNCH, _CPU_OP, _STEP, _FLOW, _OTHER = range(6)  # _FLOW and _OTHER last
_NO_ARGS: dict[str, Any] = {}
_MISS = object()
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
    if cat in FLOW_CATS:
        return _FLOW
    return _OTHER


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
        self.sigs: list[tuple[list[list[int]], list[str]]] = []
        self.cpu_ops = 0
        # cpu ops whose name states a MoE stage (with or without shapes): thread, start, end,
        # stage (1 or 2), op name id in ``names``
        self.s_tid = array("q")
        self.s_ts = array("d")
        self.s_end = array("d")
        self.s_stage = array("b")
        self.s_op = array("q")
        # steps on the GPU timeline: (device, start, end, phase, ctx_tokens, dec_batch)
        self.steps: list[tuple[int, float, float, str, int, int]] = []
        # steps annotated on the CPU: (thread id, start, end, phase, ctx_tokens, dec_batch)
        self.cpu_steps: list[tuple[int, float, float, str, int, int]] = []
        self.execute_spans = 0
        self.events = 0
        self.skipped_gpu = 0
        self.categories: dict[str, int] = {}
        # caches of per-name work, each bounded (a hostile trace may use a new name per event)
        self._cat_kinds: dict[str, tuple[str, int]] = {}
        self._launch_kinds: dict[str, int] = {}
        self._sig_cache: dict[str, tuple[str, list[list[int]], list[str]] | None] = {}
        self._sig_cache_room = _SIG_CACHE_CHARS
        self._stages: dict[str, int] = {}  # cpu_op name -> MoE stage it states (0: none)

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
            name_id = self.name_ids.get(name)
            self.g_dev.append(dev if dev is not None else -1)
            self.g_name.append(name_id if name_id is not None else self._name_id(name))
            self.g_corr.append(corr if corr is not None else -1)
            self.g_ext.append(ext if ext is not None else -1)
            self.g_ts.append(ts)
            self.g_dur.append(dur)
        elif kind == _LAUNCH:
            self._add_launch(ev, args)
        elif kind == _CPU_OP:
            self._add_cpu_op(ev, args)
        else:
            self._add_step(ev, args, cat)

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
        self.r_tid.append(self._thread_of(ev))
        self.r_ts.append(ts)

    def _add_cpu_op(self, ev: dict[str, Any], args: dict[str, Any]) -> None:
        self.cpu_ops += 1
        ts, dur = number(ev.get("ts"), text=False), number(ev.get("dur"), text=False)
        if ts is None or dur is None or dur < 0:
            return
        op = ev.get("name")
        if isinstance(op, str):
            stage = self._stages.get(op)
            if stage is None:
                said = stage_in_name(op) if _MOE_OP.search(op) else None
                stage = 0 if said is None else 1 if said[0] == "stage1" else 2
                if len(self._stages) < _CACHE_ITEMS:
                    self._stages[op] = stage
            if stage:
                self.s_tid.append(self._thread_of(ev))
                self.s_ts.append(ts)
                self.s_end.append(ts + dur)
                self.s_stage.append(stage)
                self.s_op.append(self._name_id(op))
        raw_dims = _dims_arg(args)
        if not isinstance(raw_dims, list) or not raw_dims:
            return  # no dims: nothing to attach (what _clean_dims would say)
        cleaned = self._signature(raw_dims, args.get("Input type"))
        if cleaned is None:
            return
        key, dims, types = cleaned
        sig = self.sig_ids.get(key)
        if sig is None:
            sig = self.sig_ids[key] = len(self.sigs)
            self.sigs.append((dims, types))
        ext = _as_int(_arg(args, "External id"))
        self.c_tid.append(self._thread_of(ev))
        self.c_ts.append(ts)
        self.c_end.append(ts + dur)
        self.c_ext.append(ext if ext is not None else -1)
        self.c_sig.append(sig)

    def _signature(self, raw_dims: Any, raw_types: Any
                   ) -> tuple[str, list[list[int]], list[str]] | None:
        """The cleaned (dims, types) of a cpu_op and their JSON key, or None without dims.

        Cleaning is the same for equal raw values, so it runs once per distinct raw pair: the
        raw pair's ``repr`` (which tells apart everything JSON can hold: ``1`` from ``1.0``
        from ``"1"``) keys a bounded cache."""
        try:
            raw_key: str | None = repr((raw_dims, raw_types))
        except (RecursionError, ValueError):
            raw_key = None
        if raw_key is not None:
            hit = self._sig_cache.get(raw_key, _MISS)
            if hit is not _MISS:
                return hit  # type: ignore[return-value]
        dims = _clean_dims(raw_dims)
        out: tuple[str, list[list[int]], list[str]] | None = None
        if dims:
            types = _clean_types(raw_types)
            out = (json.dumps([dims, types], separators=(",", ":")), dims, types)
        if (raw_key is not None and len(raw_key) <= _CACHE_KEY_CHARS
                and len(raw_key) <= self._sig_cache_room):
            self._sig_cache[raw_key] = out
            self._sig_cache_room -= len(raw_key)
        return out

    def _add_step(self, ev: dict[str, Any], args: dict[str, Any], cat: str) -> None:
        name = ev.get("name")
        if not is_step_name(name):
            return
        self.execute_spans += 1
        ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
        step = parse_step(str(name), args)
        if step is None or ts is None or dur is None:
            return
        if cat == "gpu_user_annotation":
            dev = _as_int(args.get("device"))
            if dev is None:
                dev = _as_int(ev.get("pid"))
            self.steps.append((dev if dev is not None else -1, ts, ts + dur, *step))
        else:
            tid = self._thread_of(ev)
            self.cpu_steps.append((tid, ts, ts + dur, *step))

    def what_it_holds(self, header: dict[str, Any]) -> str:
        """One line on what a trace without GPU events does hold."""
        bits = []
        for cat, n in sorted(self.categories.items(), key=lambda kv: (-kv[1], kv[0]))[:4]:
            bits.append(f"{n:,} {printable(cat, limit=30)}")
        props = header.get("deviceProperties")
        has_props = isinstance(props, list) and bool(props)
        held = ", ".join(bits) if bits else f"{self.events:,} events without a category"
        return (f"no GPU events (kernel/memcpy/memset) in the trace: CPU-only trace: {held} "
                f"events, {'with' if has_props else 'no'} deviceProperties")


def _dims_arg(args: dict[str, Any]) -> Any:
    v = args.get("Input Dims")
    return args.get("Input dims") if v is None else v


# ---------------------------------------------------------------------------------------------
# opening, progress
# ---------------------------------------------------------------------------------------------


class _Progress:
    def __init__(self, raw: io.BufferedReader, size: int, label: str) -> None:
        self._raw = raw
        self._bar = None
        if size >= PROGRESS_MIN_BYTES and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

            self._bar = Progress("[progress.description]{task.description}", BarColumn(),
                                 DownloadColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
            self._task = self._bar.add_task(label, total=size)
            self._bar.start()

    def update(self) -> None:
        if self._bar is not None:
            try:
                self._bar.update(self._task, completed=self._raw.tell())
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
    head = head_text(path).lstrip("\ufeff \t\r\n")
    if head.startswith("{") and '"rocprofiler-sdk-tool"' in head[:200]:
        return ("a rocprofv3 --output-format json file, not a PyTorch trace; import it with "
                "`roofline import rocprofv3`")
    if head.startswith("SQLite format 3"):
        return "an SQLite database (rocpd or nsys), not a PyTorch trace"
    return None


def collect(path: Path, *, chunk: int = 1 << 20,
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
    bar = _Progress(raw, size, f"importing {path.name}") if progress else None
    col = _Collector()
    try:
        binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if _is_gzip(path) else raw
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="strict")
        stream = TraceEventStream(text, chunk=chunk, on_read=bar.update if bar else None)
        try:
            for ev in stream.events():
                col.add(ev)
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


def _innermost(c_ts: array, c_end: array, spans: list[int], q_ts: array,
               queries: list[int], out: array) -> None:
    """For each query position ``p`` (time ``q_ts[p]``) store in ``out[p]`` the index ``j`` of the
    innermost span (``c_ts[j]``..``c_end[j]``) enclosing it. Both lists are sorted in place."""
    spans.sort(key=c_end.__getitem__, reverse=True)
    spans.sort(key=c_ts.__getitem__)  # stable: equal starts keep the outer (longer) span first
    queries.sort(key=q_ts.__getitem__)
    # the spans' starts and ends in that order; the stack holds positions in it
    s_start = [c_ts[j] for j in spans]
    s_end = [c_end[j] for j in spans]
    stack: list[int] = []
    si = 0
    n_spans = len(spans)
    for p in queries:
        t = q_ts[p]
        while si < n_spans and s_start[si] <= t:
            start = s_start[si]
            while stack and s_end[stack[-1]] < start:
                stack.pop()
            stack.append(si)
            si += 1
        while stack and s_end[stack[-1]] < t:
            stack.pop()
        # spans may overlap without nesting; search down for one that encloses t
        for k in reversed(stack):
            if s_end[k] >= t:
                out[p] = spans[k]
                break


def _innermost_by_thread(q_tid: array, q_ts: array, s_tid: array, s_ts: array,
                         s_end: array) -> array:
    """For each query ``p`` (thread ``q_tid[p]``, -1 when unknown, at time ``q_ts[p]``) the index
    of the innermost span of the same thread (``s_tid``/``s_ts``/``s_end``) enclosing it, else
    -1. Queries and spans are grouped by thread in one pass each."""
    out = array("q", [-1]) * len(q_tid)
    queries_of: dict[int, list[int]] = {}
    for p, tid in enumerate(q_tid):
        if tid >= 0:
            queries = queries_of.get(tid)
            if queries is None:
                queries_of[tid] = [p]
            else:
                queries.append(p)
    spans_of: dict[int, list[int]] = {tid: [] for tid in queries_of}
    for j, tid in enumerate(s_tid):
        spans = spans_of.get(tid)
        if spans is not None:
            spans.append(j)
    for tid in sorted(queries_of):
        if spans_of[tid]:
            _innermost(s_ts, s_end, spans_of[tid], q_ts, queries_of[tid], out)
    return out


@dataclass
class _Launches:
    """For each row of interest: the launching thread and time (-1 / 0 when unknown) and
    whether the launch was a graph replay."""

    tid: array
    ts: array
    graph: array


def _fill_launches(first: dict[int, int], more: dict[int, list[int]], out: _Launches,
                   corrs: array, tids: array, tss: array) -> None:
    """Give each row whose correlation id is among ``corrs`` the thread and time of the first
    such launch (rows that already have one keep it)."""
    out_tid, out_ts = out.tid, out.ts
    where = first.get
    for corr, tid, ts in zip(corrs, tids, tss, strict=True):
        p = where(corr)
        if p is None:
            continue
        if out_tid[p] < 0:
            out_tid[p] = tid
            out_ts[p] = ts
        if more and corr in more:
            for q in more[corr]:
                if out_tid[q] < 0:
                    out_tid[q] = tid
                    out_ts[q] = ts


def _find_launches(col: _Collector, rows: array) -> _Launches:
    """Link each GPU row to its launch: the runtime event with the same ``correlation``; else
    the ``ac2g``/``async`` flow start with that id (traces whose runtime events were cut)."""
    n = len(rows)
    out = _Launches(array("q", [-1]) * n, array("d", [0.0]) * n, array("b", [0]) * n)
    g_corr = col.g_corr
    # the row of each correlation id (ids below 0 match no launch); rows sharing an id
    # after the first are listed apart, which real traces never need
    first: dict[int, int] = {}
    more: dict[int, list[int]] = {}
    for p, i in enumerate(rows):
        corr = g_corr[i]
        if corr < 0:
            continue
        if first.setdefault(corr, p) != p:
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


def _attach_shapes(col: _Collector, aggs: dict[int, KernelAgg], rows: array,
                   launches: _Launches) -> None:
    """Fill shapes/dtypes of the kernels in ``aggs`` from their launching cpu_op.

    Works on typed arrays indexed by position in ``rows`` so memory stays a few machine words
    per launch."""
    n = len(rows)
    g_ext, g_name = col.g_ext, col.g_name
    replayed: dict[int, int] = {}
    for i, graph in zip(rows, launches.graph, strict=True):
        if graph:
            replayed[g_name[i]] = replayed.get(g_name[i], 0) + 1
    if n and col.c_sig:
        q_tid, q_ts = launches.tid, launches.ts
        span_of = _innermost_by_thread(q_tid, q_ts, col.c_tid, col.c_ts, col.c_end)
        c_sig = col.c_sig
        sig_of = array("q", ((c_sig[j] if j >= 0 else -1) for j in span_of))
        del span_of
        missing = {g_ext[i] for i, sig in zip(rows, sig_of, strict=True)
                   if sig < 0 and g_ext[i] >= 0}
        if missing:
            by_ext: dict[int, int] = {}
            for ext, sig in zip(col.c_ext, c_sig, strict=True):
                if ext in missing and ext not in by_ext:
                    by_ext[ext] = sig
            for p in range(n):
                if sig_of[p] < 0:
                    sig_of[p] = by_ext.get(g_ext[rows[p]], -1)
        # most frequent shape sets first
        counts: dict[tuple[int, int], int] = {}
        for i, sig in zip(rows, sig_of, strict=True):
            if sig >= 0:
                key = (g_name[i], sig)
                counts[key] = counts.get(key, 0) + 1
        for (name_id, sig), _c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            agg = aggs[name_id]
            dims, types = col.sigs[sig]
            if dims not in agg.shapes and len(agg.shapes) < MAX_SHAPES:
                agg.shapes.append(dims)
            for t in types:
                if t not in agg.dtypes and len(agg.dtypes) < MAX_DTYPES:
                    agg.dtypes.append(t)
    for name_id, n_replayed in replayed.items():
        agg = aggs[name_id]
        if not agg.shapes:
            agg.notes.append(f"no shapes recorded: {n_replayed} of {agg.calls} launches were "
                             "replayed from a CUDA/HIP graph (no launching op in the trace)")


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


def _outermost(steps: list[tuple[int, float, float, str, int, int]]
               ) -> list[tuple[int, float, float, str, int, int]]:
    """Step spans not enclosed by another step span of the same device/thread: vLLM's
    ``execute_*`` around SGLang-style ``step[...]`` is one step, not two."""
    out: list[tuple[int, float, float, str, int, int]] = []
    for s in sorted(steps, key=lambda s: (s[0], s[1], -s[2])):
        if out and out[-1][0] == s[0] and out[-1][1] <= s[1] and s[2] <= out[-1][2]:
            continue
        out.append(s)
    return out


def _attach_phases(col: _Collector, device: int, aggs: dict[int, KernelAgg],
                   rows: array, launches: _Launches) -> ServingInfo | None:
    """Per-phase calls of the top kernels. A kernel belongs to the GPU step span around it on
    its device; without one, to the CPU step span (``user_annotation``) around its launch on
    the launching thread (linked by correlation or ``ac2g`` flow)."""
    steps = _outermost([s for s in col.steps if s[0] in (device, -1)])
    cpu_steps = _outermost(col.cpu_steps)
    if not steps and not cpu_steps:
        return None
    starts = [s[1] for s in steps]
    ends = [s[2] for s in steps]
    by_tid: dict[int, list[tuple[int, float, float, str, int, int]]] = {}
    for s in cpu_steps:
        by_tid.setdefault(s[0], []).append(s)
    tid_starts = {tid: [s[1] for s in ss] for tid, ss in by_tid.items()}
    used_cpu: set[tuple[int, float]] = set()
    g_ts, g_dur, g_name = col.g_ts, col.g_dur, col.g_name
    l_tid, l_ts = launches.tid, launches.ts
    right = bisect.bisect_right
    # (name id, phase) -> [count, total µs, {M: count}], summed in row order
    acc: dict[tuple[int, str], list[Any]] = {}
    for p, i in enumerate(rows):
        ts = g_ts[i]
        k = right(starts, ts) - 1
        if k >= 0 and ts < ends[k]:
            step = steps[k]
        else:
            tid = l_tid[p]
            if tid < 0 or tid not in by_tid:
                continue
            ss = by_tid[tid]
            lt = l_ts[p]
            k = right(tid_starts[tid], lt) - 1
            if k < 0 or lt > ss[k][2]:
                continue
            step = ss[k]
            used_cpu.add((step[0], step[1]))
        _key, _s, _e, phase, ctx, batch = step
        m = ctx + batch if phase == "prefill" else batch
        key = (g_name[i], phase)
        a = acc.get(key)
        if a is None:
            a = acc[key] = [0, 0.0, {}]
        a[0] += 1
        a[1] += g_dur[i]
        hist = a[2]
        hist[m] = hist.get(m, 0) + 1
    for (name_id, phase), (count, total_us, hist) in acc.items():
        aggs[name_id].by_phase[phase] = PhaseAgg(count, total_us, hist)
    counted = steps + [s for s in cpu_steps if (s[0], s[1]) in used_cpu]
    if not counted:
        return None
    return ServingInfo(
        n_prefill_steps=sum(1 for s in counted if s[3] == "prefill"),
        n_decode_steps=sum(1 for s in counted if s[3] == "decode"),
        decode_batches=[s[5] for s in counted if s[3] == "decode"],
    )


def import_torch(
    path: Path,
    *,
    top: int = DEFAULT_TOP,
    device_index: int | None = None,
    isl: int | None = None,
    osl: int | None = None,
    conc: int | None = None,
    capture_sizes: Iterable[int] | None = None,
    progress: bool = True,
    chunk: int = 1 << 20,
) -> TorchImport:
    """Parse a Kineto trace into a Top-N document (nothing is written)."""
    col, header = collect(Path(path), chunk=chunk, progress=progress)
    if not col.g_dev:
        raise ImportProblem(f"{Path(path).name}: {col.what_it_holds(header)}")
    choice = choose_device(col, device_index)
    dev = choice.chosen
    stage_labels = _split_moe_stages(col, dev)
    # per kernel name: [calls, total µs], summed in trace order
    sums: dict[int, list[Any]] = {}
    total = 0.0
    launches = 0
    for d, nid, dur in zip(col.g_dev, col.g_name, col.g_dur, strict=True):
        if d != dev:
            continue
        acc = sums.get(nid)
        if acc is None:
            acc = sums[nid] = [0, 0.0]
        acc[0] += 1
        acc[1] += dur
        total += dur
        launches += 1
    aggs = {nid: KernelAgg(col.names[nid], calls=calls, total_us=total_us)
            for nid, (calls, total_us) in sums.items()}
    del sums
    for nid, label in stage_labels.items():
        agg = aggs[nid]
        agg.short_name = label.short_name
        agg.notes.append(_stage_note(label, agg.calls))
    ranked = sorted(aggs, key=lambda n: (-aggs[n].total_us, aggs[n].name))[: max(1, top)]
    top_aggs = {n: aggs[n] for n in ranked}
    top_rows = array("q", (i for i, (d, nid) in enumerate(zip(col.g_dev, col.g_name,
                                                             strict=True))
                           if d == dev and nid in top_aggs))
    launches_of = _find_launches(col, top_rows)
    _attach_shapes(col, top_aggs, top_rows, launches_of)
    serving = _attach_phases(col, dev, top_aggs, top_rows, launches_of)
    notes = []
    if col.execute_spans and serving is None:
        notes.append(f"{col.execute_spans} execute_* step spans without a readable "
                     "context/generation segment: no serving block")
    if col.skipped_gpu:
        notes.append(f"{col.skipped_gpu} GPU events without a usable ts/dur/name skipped")
    if total <= 0:
        raise ImportProblem("GPU events found but their durations sum to zero")
    replay = graph_replay(col, launches)
    if replay:
        notes.append(replay["warning"])
    doc = build_topn(aggs.values(), source="torch-trace", total_us=total, launches=launches,
                     top=top, serving=serving, isl=isl, osl=osl, conc=conc,
                     capture_sizes=capture_sizes, notes=notes, graph_replay=replay)
    info = from_kineto(header, dev, Path(path).name)
    return TorchImport(doc=doc, device=choice, events_seen=col.events, notes=notes,
                       device_info=info)


def graph_replay(col: _Collector, gpu_events: int) -> dict[str, Any] | None:
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
    if graphs:
        parts.append(f"{graphs:,} graph launch call(s) (cudaGraphLaunch/hipGraphLaunch): "
                     "kernels replayed from a graph have no launching op, so their shapes "
                     "are not recorded")
    return {"launch_calls": launches, "graph_launches": graphs, "kernel_events": gpu_events,
            "warning": "graph replay: " + "; ".join(parts)}


def file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0

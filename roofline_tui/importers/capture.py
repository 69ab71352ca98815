"""Graph-capture traces: read them, find them beside an execution trace, and line up the kernels
a graph replayed with the launches that were recorded while it was captured.

Why. Kernels replayed from a CUDA/HIP graph appear in the execution trace with the correlation
of one ``cudaGraphLaunch``/``hipGraphLaunch`` and no launching ``cpu_op``, hence no shapes. The
serving frameworks (vLLM, SGLang, ATOM) can profile the capture itself at start-up. In such a
capture trace every captured kernel has its launch runtime call (``args.kernel``, ``grid``,
``block``, ``External id``) between a ``*StreamBeginCapture`` and a ``*StreamEndCapture`` call,
and the ``cpu_op`` that launched it (same ``External id``) with ``Input Dims``/``Input type``.
The reference is ``serving-annotations.md`` (sections 2.3, 2.4, 3.4, 4.2, 5.3 and 9.4).

What is here:

* :func:`read_capture` streams one file once and returns a :class:`CaptureFile`: its graph
  size, mode, rank and one :class:`CaptureRoot` per Begin..End window, each holding the window's
  launches (:class:`CapturedLaunch`) in time order with the launching op's name, raw positional
  ``Input Dims`` and ``Input type``, and the enclosing ``nn.Module``. :func:`read_captures`
  does the same but splits a file that holds several labelled shapes into one
  :class:`CaptureFile` per shape.
* :func:`discover_captures` lists the capture files the frameworks write next to an execution
  trace.
* :func:`choose_capture` picks the capture for one step: the smallest captured size that is at
  least the step's size (never a smaller one), FULL-like for a step with one graph launch,
  PIECEWISE for several, and pairs its windows with the step's graph launches.
* :func:`align` maps each replayed kernel to its captured launch, by the cascade positional →
  greedy scan (extra capture launches only) → by name (same per-name counts, other order), or a
  per-stream FIFO for a replay spread over several streams. When none of them works it returns
  a one-line reason; it never guesses.

Only names are compared: the capture and replay correlation ids are unrelated and neither
trace carries a graph or node id. A sequence match shows which captured launch a replayed
kernel is; the shapes then come from the capture's size (several sizes often capture identical
kernel sequences).

Everything read from a file is treated as hostile: numbers go through
:func:`roofline_tui.core.coerce.number`, names through :func:`roofline_tui.core.names.cap_name`,
``Input Dims`` are reduced to bounded nested tuples of ints, and the decompressed text read is
bounded per file (:data:`MAX_TEXT_BYTES`) and across all the capture files of one import
(:class:`CaptureBudget`: :data:`MAX_TOTAL_TEXT_BYTES` decompressed, :data:`MAX_TOTAL_SECONDS`
of reading), a bound that cuts in said in the import's notes (:func:`read_capture_files`).

``dims`` in a :class:`CapturedLaunch` keeps every position of the op's ``Input Dims`` as an
immutable tuple: a tensor argument is a tuple of ints, a scalar (or any argument that is not a
list of ints) an empty tuple, and a TensorList a tuple of such tuples. Compare with
``[list(d) for d in dims]`` against raw JSON.
"""

from __future__ import annotations

import bisect
import gzip
import io
import os
import re
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_tui.core.coerce import number
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import NAME_CAP, cap_name
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.jsonstream import TraceEventStream

# ---------------------------------------------------------------------------------------------
# bounds
# ---------------------------------------------------------------------------------------------

MAX_TEXT_BYTES = 4 << 30  # decompressed bytes read from one capture file
# ... and from all the capture files of one import together, and the time reading them may
# add (measured on WORK_CLOCK: this thread's CPU time, our own work, not the machine's load)
MAX_TOTAL_TEXT_BYTES = 4 << 30
MAX_TOTAL_SECONDS = 30.0
WORK_CLOCK = time.thread_time
MAX_LAUNCHES = 1_000_000  # launch runtime calls kept from one file (inside windows or not)
MAX_OPS = 4_000_000  # cpu_op spans kept
MAX_MODULES = 1_000_000  # nn.Module python_function spans kept
MAX_WINDOWS = 100_000  # Begin/End capture calls kept
MAX_LABELS = 100_000  # capture label spans kept
MAX_NAME_CHARS = 64 << 20  # characters of distinct names kept (more: the file is refused)
MAX_SIG_CELLS = 8 << 20  # ints kept in distinct Input Dims signatures (more: dims dropped)
MAX_NOTES = 16
MAX_DISCOVERED = 256  # capture files returned by discover_captures
MAX_SCAN = 8192  # directory entries looked at per capture folder
MAX_POSITIONS = 256  # Input Dims / Input type positions kept per op
MAX_LIST = 256  # tensors kept per TensorList position
MAX_RANK = 16  # dims kept per tensor (a longer shape is not a shape: it becomes ())
MAX_DIM = 1 << 62
OP_NAME_CAP = 512
TYPE_CAP = 128
MODULE_CAP = 160
THREAD_CAP = 64
RUN_LOOKAHEAD = 256  # launches looked ahead when breaking a multi-stream tie

FULL_LIKE = frozenset({"FULL", "DECODE", "GRAPH"})  # one graph for the whole forward

# ---------------------------------------------------------------------------------------------
# result types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapturedLaunch:
    kernel: str  # args.kernel (or the runtime event name for Memcpy/Memset)
    ts: float
    stream: int | None
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    op: str | None  # launching cpu_op (by External id; else innermost enclosing on the thread)
    dims: tuple[Any, ...] | None  # that op's Input Dims, every position (see module docstring)
    types: tuple[str, ...] | None  # that op's Input type, positional
    op_by: str  # "external_id" | "enclosing" | "none"
    module: str | None  # innermost enclosing "nn.Module: ..." python_function on the thread
    # which cpu_op event of this file launched it (launches of one op event share it: a
    # split-K attention's main and reduce kernels); None without a launching op
    op_event: int | None = None


@dataclass(frozen=True)
class CaptureRoot:
    """One ``*StreamBeginCapture`` .. ``*StreamEndCapture`` window."""

    launches: tuple[CapturedLaunch, ...]  # ts order
    thread: tuple[Any, Any]  # (pid, tid) of the capturing thread

    @property
    def kernels(self) -> tuple[str, ...]:
        """The launches' kernel names, in order: the ``captured`` argument of :func:`align`."""
        return tuple(launch.kernel for launch in self.launches)


@dataclass(frozen=True)
class CaptureFile:
    path: Path
    size: int | None  # graph size (vLLM tokens; SGLang/ATOM batch)
    mode: str  # FULL | PIECEWISE | DECODE | GRAPH, with a vLLM subsystem prefix (draft_FULL)
    size_from: str  # "label capture_32_FULL" | "file name bs_32" | "modal first dim of Input Dims"
    rank: int | None
    roots: tuple[CaptureRoot, ...]
    notes: tuple[str, ...]

    @property
    def base_mode(self) -> str:
        """The mode without a subsystem prefix: ``draft_FULL`` -> ``FULL``."""
        return self.mode.rpartition("_")[2]

    @property
    def subsystem(self) -> str | None:
        """The vLLM subsystem: the label's prefix (``capture_32_draft_FULL``), else the file
        name's suffix (``graph_capture_rank_0_encoder.<ts>.pt.trace.json.gz``); ``None`` for the
        main model."""
        prefix = self.mode.rpartition("_")[0]
        if prefix:
            return prefix
        m = _FN_VLLM_SUBSYSTEM.match(self.path.name)
        return m.group(1) if m else None


@dataclass(frozen=True)
class Alignment:
    """For each replayed kernel (in the order given) the index of its captured launch."""

    index: tuple[int | None, ...]
    how: str  # "positional" | "greedy scan" | "by name" | "per-stream FIFO"
    unmatched_captured: int  # capture launches no replayed kernel took (greedy scan only)

    @property
    def matched(self) -> int:
        return sum(1 for i in self.index if i is not None)


# ---------------------------------------------------------------------------------------------
# names, labels, file names
# ---------------------------------------------------------------------------------------------

_LABEL_VLLM = lazy_compile(r"capture_(\d{1,9})_(?:(\w+?)_)?(FULL|PIECEWISE)")
_LABEL_SGLANG = lazy_compile(r"capture_(\d{1,9})_DECODE")
_LABEL_ATOM = lazy_compile(r"capture_graph_bs_(\d{1,9})(?:_q_\d{1,9})?")

_BEGIN = lazy_compile(r"StreamBeginCapture")
_END = lazy_compile(r"StreamEndCapture")
_GRAPH_LAUNCH = lazy_compile(r"GraphLaunch", re.IGNORECASE)
_KERNEL_LAUNCH = lazy_compile(r"LaunchKernel|LaunchCooperativeKernel|ModuleLaunch|LaunchByPtr",
                              re.IGNORECASE)
_COPY_CALL = lazy_compile(r"Memcpy|Memset", re.IGNORECASE)
_MEMCPY = lazy_compile(r"^(?:hip|cuda|cu)?Memcpy|copyBuffer", re.IGNORECASE)
_MEMSET = lazy_compile(r"^(?:hip|cuda|cu)?Memset|fillBuffer", re.IGNORECASE)

_FN_BS = lazy_compile(r"(?:^|[_.-])bs_?(\d{1,9})(?:_q_?(\d{1,9}))?_rank_?(\d{1,6})")
_FN_RANK = lazy_compile(r"(?:^|[_.-])rank_?(\d{1,6})(?!\d)|-TP-(\d{1,6})(?!\d)")
_FN_VLLM_SUBSYSTEM = lazy_compile(r"^graph_capture_rank_\d+_([A-Za-z]\w*?)\.\d+\.pt\.trace")
_DIR_RANK = lazy_compile(r"^(?:.*_)?(?:rank_|tp)(\d{1,6})$")

# capture folder -> file names the frameworks write there
_LAYOUTS: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = (
    ("capture_traces", (
        lazy_compile(r"^graph_capture_rank_[\w.-]*\.pt\.trace\.json(?:\.gz)?$"),  # vLLM
        lazy_compile(r"^bs_\d{1,9}(?:_q_\d{1,9})?_rank\d{1,6}\.json(?:\.gz)?$"),  # SGLang, ATOM
    )),
    ("graph_capture_profile", (
        lazy_compile(r"^\w+_bs_\d{1,9}_rank\d{1,6}\.json(?:\.gz)?$"),  # SGLang per-bucket runner
        lazy_compile(r"^cuda_graph_capture-[\w.-]+-TP-\d{1,6}\.json(?:\.gz)?$"),  # SGLang single
    )),
)
_SINGLE_FILE = _LAYOUTS[1][1][1]


def parse_label(name: Any) -> tuple[int, str] | None:
    """``(size, mode)`` of a capture label: ``capture_32_FULL`` -> (32, "FULL"),
    ``capture_32_draft_FULL`` -> (32, "draft_FULL"), ``capture_32_DECODE`` -> (32, "DECODE"),
    ``capture_graph_bs_32`` -> (32, "GRAPH"); ``None`` for anything else."""
    if not isinstance(name, str) or len(name) > 200:
        return None
    m = _LABEL_VLLM.fullmatch(name)
    if m:
        sub = m.group(2)
        return int(m.group(1)), f"{sub}_{m.group(3)}" if sub else m.group(3)
    m = _LABEL_SGLANG.fullmatch(name)
    if m:
        return int(m.group(1)), "DECODE"
    m = _LABEL_ATOM.fullmatch(name)
    if m:
        return int(m.group(1)), "GRAPH"
    return None


def _name_key(name: str) -> str:
    """What two kernel names are compared by: Memcpy matches Memcpy, Memset matches Memset or
    ROCm's ``fillBuffer`` kernel (and ROCm's ``copyBuffer`` counts as a Memcpy)."""
    if _MEMCPY.search(name):
        return "\x00memcpy"
    if _MEMSET.search(name):
        return "\x00memset"
    return name


# ---------------------------------------------------------------------------------------------
# hostile values
# ---------------------------------------------------------------------------------------------


def _int(v: Any) -> int | None:
    """An integral value (id, dim, stream): ``None`` when it is not one."""
    if type(v) is int:  # noqa: E721 - a bool must not pass
        return v if -MAX_DIM < v < MAX_DIM else None
    f = number(v, text=False)
    if f is None or not f.is_integer() or abs(f) >= MAX_DIM:
        return None
    return int(f)


def _thread_part(v: Any) -> Any:
    if isinstance(v, str):
        return cap_name(v, THREAD_CAP)
    return _int(v)


def _ints(v: Any, limit: int = 4) -> tuple[int, ...] | None:
    """``grid``/``block``: a short list of ints, else ``None``."""
    if not isinstance(v, list) or not v or len(v) > limit:
        return None
    out = tuple(_int(x) for x in v)
    return None if any(x is None for x in out) else out  # type: ignore[return-value]


def _is_dim(x: Any) -> bool:
    return type(x) is int and -MAX_DIM < x < MAX_DIM  # noqa: E721


def _shape(v: list[Any]) -> tuple[int, ...]:
    if len(v) <= MAX_RANK and all(_is_dim(x) for x in v):
        return tuple(v)
    return ()


def _clean_position(v: Any) -> tuple[Any, ...]:
    """One ``Input Dims`` position: a shape (ints), ``()`` for a scalar or anything odd, or a
    tuple of shapes for a TensorList."""
    if not isinstance(v, list) or not v:
        return ()
    if all(isinstance(x, list) for x in v):
        return tuple(_shape(x) for x in v[:MAX_LIST])
    return _shape(v)


def _clean_dims(v: Any) -> tuple[Any, ...] | None:
    if not isinstance(v, list):
        return None
    return tuple(_clean_position(x) for x in v[:MAX_POSITIONS])


def _clean_types(v: Any) -> tuple[str, ...] | None:
    if not isinstance(v, list):
        return None
    return tuple(cap_name(t, TYPE_CAP) if isinstance(t, str) else "" for t in v[:MAX_POSITIONS])


def _cells(dims: tuple[Any, ...] | None) -> int:
    """How many slots a cleaned ``Input Dims`` holds (its memory, roughly)."""
    n = 0
    for pos in dims or ():
        n += 1 + sum(len(x) if isinstance(x, tuple) else 1 for x in pos)
    return n


def _first_dim(dims: tuple[Any, ...] | None) -> int | None:
    """The first dim of the op's first tensor argument (the batch/token count, usually)."""
    for pos in dims or ():
        if pos and type(pos[0]) is int:  # noqa: E721
            return int(pos[0])
    return None


# ---------------------------------------------------------------------------------------------
# the streamed pass
# ---------------------------------------------------------------------------------------------

_RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime"})
_OP_CATS = frozenset({"cpu_op", "operator"})
_NO_EXT = -(1 << 63)


class _Collector:
    """What one pass keeps: launch calls, capture calls, cpu_op spans (as interned ids),
    nn.Module spans and capture labels. Nothing else of an event survives."""

    def __init__(self) -> None:
        self.seq = 0
        self.threads: dict[tuple[Any, Any], int] = {}
        self.thread_keys: list[tuple[Any, Any]] = []
        self.names: dict[str, int] = {}
        self.name_list: list[str] = []
        self.name_chars = 0
        self.sig_cells = 0
        self.sigs: dict[tuple[Any, Any], int] = {}
        self.sig_list: list[tuple[tuple[Any, ...] | None, tuple[str, ...] | None]] = []
        # (thread, ts, seq, kernel id, stream, grid, block, External id or None)
        self.launches: list[tuple[int, float, int, int, int | None, tuple[int, ...] | None,
                                  tuple[int, ...] | None, int | None]] = []
        # (thread, ts, end-of-call, seq, is_begin)
        self.marks: list[tuple[int, float, float, int, bool]] = []
        # cpu_op spans, column-wise: thread, ts, end, External id, name id, signature id
        self.op_thread = array("q")
        self.op_ts = array("d")
        self.op_end = array("d")
        self.op_ext = array("q")
        self.op_name = array("q")
        self.op_sig = array("q")
        self.modules: list[tuple[int, float, float, int]] = []  # thread, ts, end, name id
        self.labels: list[tuple[int, float, float, int, str]] = []  # thread, ts, end, size, mode
        self.gpu_labels: list[tuple[int, float, float, int, str]] = []
        self.dropped: Counter[str] = Counter()

    def _thread(self, ev: dict[str, Any]) -> int:
        key = (_thread_part(ev.get("pid")), _thread_part(ev.get("tid")))
        tid = self.threads.get(key)
        if tid is None:
            tid = self.threads[key] = len(self.thread_keys)
            self.thread_keys.append(key)
        return tid

    def _name(self, name: str, cap: int) -> int:
        i = self.names.get(name)
        if i is None:
            kept = cap_name(name, cap)
            i = self.names.get(kept)
            if i is None:
                self.name_chars += len(kept)
                if self.name_chars > MAX_NAME_CHARS:
                    raise ImportProblem(f"more than {MAX_NAME_CHARS >> 20}M characters of "
                                        "distinct names; not read")
                i = len(self.name_list)
                self.name_list.append(kept)
                self.names[kept] = i
            if len(name) <= cap:
                self.names[name] = i
        return i

    def add(self, ev: Any) -> None:
        self.seq += 1
        if not isinstance(ev, dict):
            return
        cat = ev.get("cat")
        if not isinstance(cat, str):
            return
        cat = cat.lower()
        if cat in _OP_CATS:
            self._op(ev)
        elif cat == "python_function":
            self._module(ev)
        elif cat in _RUNTIME_CATS:
            self._runtime(ev)
        elif cat in ("user_annotation", "gpu_user_annotation"):
            self._label(ev, cat == "user_annotation")

    def _span(self, ev: dict[str, Any]) -> tuple[float, float] | None:
        ts = number(ev.get("ts"), text=False)
        if ts is None:
            return None
        dur = number(ev.get("dur"), nonneg=True, text=False) or 0.0
        return ts, ts + dur

    def _op(self, ev: dict[str, Any]) -> None:
        name = ev.get("name")
        span = self._span(ev)
        if not isinstance(name, str) or span is None:
            return
        if len(self.op_ts) >= MAX_OPS:
            self.dropped["cpu_op"] += 1
            return
        args = ev.get("args")
        ext = sig = None
        if isinstance(args, dict):
            ext = _int(args.get("External id", args.get("external id")))
            raw_dims = args.get("Input Dims", args.get("Input dims"))
            raw_types = args.get("Input type")
            if raw_dims is not None or raw_types is not None:
                key = (_clean_dims(raw_dims), _clean_types(raw_types))
                sig = self.sigs.get(key)
                if sig is None:
                    cells = _cells(key[0]) + len(key[1] or ())
                    if self.sig_cells + cells > MAX_SIG_CELLS:
                        self.dropped["Input Dims signature"] += 1
                    else:
                        self.sig_cells += cells
                        sig = self.sigs[key] = len(self.sig_list)
                        self.sig_list.append(key)
        self.op_thread.append(self._thread(ev))
        self.op_ts.append(span[0])
        self.op_end.append(span[1])
        self.op_ext.append(_NO_EXT if ext is None else ext)
        self.op_name.append(self._name(name, OP_NAME_CAP))
        self.op_sig.append(-1 if sig is None else sig)

    def _module(self, ev: dict[str, Any]) -> None:
        name = ev.get("name")
        if not isinstance(name, str) or not name.startswith("nn.Module:"):
            return
        span = self._span(ev)
        if span is None:
            return
        if len(self.modules) >= MAX_MODULES:
            self.dropped["nn.Module span"] += 1
            return
        self.modules.append((self._thread(ev), span[0], span[1], self._name(name, MODULE_CAP)))

    def _label(self, ev: dict[str, Any], cpu: bool) -> None:
        parsed = parse_label(ev.get("name"))
        span = self._span(ev) if parsed else None
        if parsed is None or span is None:
            return
        into = self.labels if cpu else self.gpu_labels
        if len(into) >= MAX_LABELS:
            self.dropped["capture label"] += 1
            return
        into.append((self._thread(ev), span[0], span[1], parsed[0], parsed[1]))

    def _runtime(self, ev: dict[str, Any]) -> None:
        name = ev.get("name")
        if not isinstance(name, str):
            return
        if _BEGIN.search(name) or _END.search(name):
            span = self._span(ev)
            if span is None:
                return
            if len(self.marks) >= MAX_WINDOWS:
                self.dropped["capture call"] += 1
                return
            self.marks.append((self._thread(ev), span[0], span[1], self.seq,
                               _BEGIN.search(name) is not None))
            return
        args = ev.get("args")
        if not isinstance(args, dict):
            args = {}
        kernel = args.get("kernel")
        if _GRAPH_LAUNCH.search(name):
            return
        if isinstance(kernel, str) and kernel:
            shown = kernel
        elif _COPY_CALL.search(name) or _KERNEL_LAUNCH.search(name):
            shown = name  # a copy/fill call, or a launch that did not record its kernel
        else:
            return
        ts = number(ev.get("ts"), text=False)
        if ts is None:
            return
        if len(self.launches) >= MAX_LAUNCHES:
            self.dropped["launch call"] += 1
            return
        self.launches.append((
            self._thread(ev), ts, self.seq, self._name(shown, NAME_CAP),
            _int(args.get("stream")), _ints(args.get("grid")), _ints(args.get("block")),
            _int(args.get("External id", args.get("external id"))),
        ))


# ---------------------------------------------------------------------------------------------
# opening
# ---------------------------------------------------------------------------------------------


def _size(n: float) -> str:
    return f"{n / (1 << 30):.3g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.3g} MiB"


class CaptureBudgetSpent(ImportProblem):
    """The bound on all the capture files of one import cut in (see :class:`CaptureBudget`)."""


class CaptureBudget:
    """What all the capture files of one import may cost together: decompressed bytes
    (:data:`MAX_TOTAL_TEXT_BYTES`) and reading time (:data:`MAX_TOTAL_SECONDS` on
    :data:`WORK_CLOCK`), both read when the budget is made. Each file's reading charges it as it
    goes (a file that fails counts the bytes it cost); once a bound is passed the file being read
    and every later one raise :class:`CaptureBudgetSpent`. Two files of 2 GiB were each within
    the per-file bound, and together added tens of seconds to an import."""

    def __init__(self) -> None:
        self.max_bytes = MAX_TOTAL_TEXT_BYTES
        self.max_seconds = MAX_TOTAL_SECONDS
        self._clock = WORK_CLOCK
        self._t0 = self._clock()
        self.spent_bytes = 0  # decompressed bytes of the files done with
        self.files = 0  # files read (or failed) within the bound
        self.cut: str | None = None  # which bound cut in, in words

    @property
    def seconds(self) -> float:
        return self._clock() - self._t0

    def check(self, in_file: int = 0) -> None:
        """Raise :class:`CaptureBudgetSpent` when ``in_file`` more decompressed bytes (of the
        file being read) pass a bound, or the time is up."""
        if self.cut is None:
            if self.spent_bytes + in_file > self.max_bytes:
                self.cut = f"more than {_size(self.max_bytes)} of decompressed text"
            elif self.seconds > self.max_seconds:
                self.cut = f"more than {self.max_seconds:g} s of reading"
        if self.cut is not None:
            raise CaptureBudgetSpent(f"the graph-capture traces of this import passed their "
                                     f"bound in total ({self.cut})")


def _stream_file(path: Path, col: _Collector,
                 budget: CaptureBudget | None = None) -> dict[str, Any]:
    """Feed every event of ``path`` to ``col``; returns the trace's top-level header."""
    if budget is not None:
        budget.check()
    shown = printable(path.name, limit=200)
    why = check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path, limit=400)}: {printable(why)}")
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ImportProblem(f"{shown}: cannot open ({printable(exc.strerror or exc)})") from None
    reached = [0]  # decompressed bytes read so far (what this file cost the budget)
    try:
        try:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
        except OSError as exc:
            raise ImportProblem(f"cannot read ({exc.strerror or exc})") from None
        binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw

        def bounded() -> None:
            try:
                where = reached[0] = binary.tell()
            except (OSError, ValueError):
                return
            if where > MAX_TEXT_BYTES:
                raise ImportProblem(f"more than {MAX_TEXT_BYTES >> 30} GiB of trace text; "
                                    "not read")
            if budget is not None:
                budget.check(where)

        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="strict")
        stream = TraceEventStream(text, on_read=bounded)
        try:
            add = col.add
            for batch in stream.event_batches():
                for ev in batch:
                    add(ev)
            bounded()  # (the end of the file, past the last chunk's check)
        except (EOFError, OSError, zlib.error) as exc:
            raise ImportProblem(f"compressed trace is damaged or truncated ({exc})") from None
        if not stream.saw_trace_events:
            raise ImportProblem("no traceEvents array (is it a chrome trace?)")
        return stream.header
    except CaptureBudgetSpent:
        raise
    except ImportProblem as exc:
        if exc.message.startswith(shown):
            raise
        raise ImportProblem(f"{shown}: {exc.message}") from None
    finally:
        raw.close()
        if budget is not None and budget.cut is None:
            budget.spent_bytes += reached[0]
            budget.files += 1


# ---------------------------------------------------------------------------------------------
# building the result
# ---------------------------------------------------------------------------------------------


def _innermost(spans: list[tuple[float, float, int]],
               queries: list[tuple[float, int]]) -> dict[int, int]:
    """For each query ``(t, q)`` the payload of the innermost span ``(start, end, payload)``
    with ``start <= t <= end`` (one thread's spans), by a sweep with a stack of open spans."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    queries.sort()
    out: dict[int, int] = {}
    stack: list[tuple[float, float, int]] = []
    i = 0
    for t, q in queries:
        while i < len(spans) and spans[i][0] <= t:
            s = spans[i]
            i += 1
            while stack and stack[-1][1] < s[0]:
                stack.pop()
            stack.append(s)
        while stack and stack[-1][1] < t:
            stack.pop()
        if stack:
            out[q] = stack[-1][2]
    return out


@dataclass
class _Window:
    thread: int
    start: float
    end: float
    launches: list[int]  # indices into col.launches, ts order


def _windows(col: _Collector, notes: list[str]) -> list[_Window]:
    by_thread: dict[int, list[tuple[float, float, int, bool]]] = {}
    for thread, ts, end, seq, begin in col.marks:
        by_thread.setdefault(thread, []).append((ts, end, seq, begin))
    windows: list[_Window] = []
    odd = Counter[str]()
    for thread, marks in by_thread.items():
        marks.sort(key=lambda m: (m[0], m[2]))
        open_at: float | None = None
        for ts, end, _seq, begin in marks:
            if begin:
                if open_at is not None:
                    odd["a capture began inside an open one (ignored)"] += 1
                    continue
                open_at = end
            elif open_at is None:
                odd["a capture ended that never began (ignored)"] += 1
            else:
                windows.append(_Window(thread, open_at, ts, []))
                open_at = None
        if open_at is not None:
            odd["a capture never ended (dropped)"] += 1
    for what, n in sorted(odd.items()):
        notes.append(f"{what}: {n}")
    windows.sort(key=lambda w: (w.start, w.thread))
    # launches on the window's thread between the end of Begin and the start of End
    where = _WindowIndex(windows)
    order = sorted(range(len(col.launches)), key=lambda i: (col.launches[i][1],
                                                            col.launches[i][2]))
    for i in order:
        w = where.find(col.launches[i][0], col.launches[i][1])
        if w is not None:
            w.launches.append(i)
    return windows


class _WindowIndex:
    """Which window (if any) holds time ``ts`` on a thread: windows on one thread never
    overlap (a Begin inside an open window is ignored), so a bisect on their starts finds it."""

    def __init__(self, windows: list[_Window]) -> None:
        self._starts: dict[int, list[float]] = {}
        self._windows: dict[int, list[_Window]] = {}
        for w in sorted(windows, key=lambda w: w.start):
            self._starts.setdefault(w.thread, []).append(w.start)
            self._windows.setdefault(w.thread, []).append(w)

    def find(self, thread: int, ts: float) -> _Window | None:
        starts = self._starts.get(thread)
        if not starts:
            return None
        k = bisect.bisect_right(starts, ts) - 1
        if k < 0:
            return None
        w = self._windows[thread][k]
        return w if ts <= w.end else None


def _resolve_ops(col: _Collector, windows: list[_Window]) -> dict[int, tuple[int, str]]:
    """launch index -> (op index, how) for every launch in a window that has an op."""
    wanted: dict[int, list[int]] = {}  # External id -> launch indices
    for w in windows:
        for i in w.launches:
            ext = col.launches[i][7]
            if ext is not None:
                wanted.setdefault(ext, []).append(i)
    by_ext: dict[int, list[int]] = {}
    if wanted:
        for j, ext in enumerate(col.op_ext):
            if ext in wanted:
                by_ext.setdefault(ext, []).append(j)
    out: dict[int, tuple[int, str]] = {}
    for ext, launch_ids in wanted.items():
        ops = by_ext.get(ext)
        if not ops:
            continue
        for i in launch_ids:
            thread, ts = col.launches[i][0], col.launches[i][1]
            # several ops with one External id: the shortest one enclosing the launch on its
            # thread, else the first recorded
            enclosing = [j for j in ops if col.op_thread[j] == thread
                         and col.op_ts[j] <= ts <= col.op_end[j]]
            best = (min(enclosing, key=lambda j: col.op_end[j] - col.op_ts[j]) if enclosing
                    else ops[0])
            out[i] = (best, "external_id")
    rest: dict[int, list[tuple[float, int]]] = {}
    for w in windows:
        for i in w.launches:
            if i not in out:
                rest.setdefault(col.launches[i][0], []).append((col.launches[i][1], i))
    if rest:
        spans: dict[int, list[tuple[float, float, int]]] = {t: [] for t in rest}
        for j, thread in enumerate(col.op_thread):
            into = spans.get(thread)
            if into is not None:
                into.append((col.op_ts[j], col.op_end[j], j))
        for thread, queries in rest.items():
            for i, j in _innermost(spans[thread], queries).items():
                out[i] = (j, "enclosing")
    return out


def _modules(col: _Collector, windows: list[_Window]) -> dict[int, int]:
    if not col.modules:
        return {}
    queries: dict[int, list[tuple[float, int]]] = {}
    for w in windows:
        for i in w.launches:
            queries.setdefault(col.launches[i][0], []).append((col.launches[i][1], i))
    spans: dict[int, list[tuple[float, float, int]]] = {t: [] for t in queries}
    for thread, ts, end, name in col.modules:
        into = spans.get(thread)
        if into is not None:
            into.append((ts, end, name))
    out: dict[int, int] = {}
    for thread, qs in queries.items():
        out.update(_innermost(spans[thread], qs))
    return out


def _root(col: _Collector, w: _Window, ops: dict[int, tuple[int, str]],
          modules: dict[int, int]) -> CaptureRoot:
    out = []
    for i in w.launches:
        _thread, ts, _seq, kernel, stream, grid, block, _ext = col.launches[i]
        op_name = dims = types = None
        op_by = "none"
        op_event = None
        hit = ops.get(i)
        if hit is not None:
            j, op_by = hit
            op_event = j
            op_name = col.name_list[col.op_name[j]]
            if col.op_sig[j] >= 0:
                dims, types = col.sig_list[col.op_sig[j]]
        mod = modules.get(i)
        out.append(CapturedLaunch(
            kernel=col.name_list[kernel], ts=ts, stream=stream, grid=grid, block=block,
            op=op_name, dims=dims, types=types, op_by=op_by,
            module=None if mod is None else col.name_list[mod], op_event=op_event))
    return CaptureRoot(launches=tuple(out), thread=col.thread_keys[w.thread])


def _modal_first_dim(col: _Collector, windows: list[_Window]) -> int | None:
    """The most common first dim of the first tensor argument over the cpu_ops inside the
    windows (over all cpu_ops when there is no window); ties go to the larger value."""
    counts: Counter[int] = Counter()
    where = _WindowIndex(windows)
    first_dims: dict[int, int | None] = {}
    for j, sig in enumerate(col.op_sig):
        if sig < 0:
            continue
        if windows and where.find(col.op_thread[j], col.op_ts[j]) is None:
            continue
        if sig not in first_dims:
            first_dims[sig] = _first_dim(col.sig_list[sig][0])
        d = first_dims[sig]
        if d is not None and d > 0:
            counts[d] += 1
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def trace_rank(path: Path, header: dict[str, Any]) -> int | None:
    """The rank a trace file belongs to: from its name (``…rank<r>…``), else the header's
    ``distributedInfo.rank``, else a ``rank_<r>`` directory."""
    m = _FN_RANK.search(path.name)
    if m:
        return int(m.group(1) or m.group(2))
    info = header.get("distributedInfo")
    if isinstance(info, dict):
        r = _int(info.get("rank"))
        if r is not None and r >= 0:
            return r
    m = _DIR_RANK.match(path.parent.name)
    if m and path.parent.name != "capture_traces":
        return int(m.group(1))
    m = _DIR_RANK.match(path.parent.parent.name)
    return int(m.group(1)) if m else None


def _labels_of(col: _Collector, windows: list[_Window]) -> list[tuple[int, str] | None]:
    """For each window the innermost label enclosing its start: a CPU-side label on the same
    thread, else one on any thread, else a GPU-side copy on any thread."""
    out: list[tuple[int, str] | None] = [None] * len(windows)
    for labels, same_thread in ((col.labels, True), (col.labels, False),
                                (col.gpu_labels, False)):
        todo = [k for k, got in enumerate(out) if got is None]
        if not todo or not labels:
            continue
        groups: dict[int, list[int]] = {}
        for k in todo:
            groups.setdefault(windows[k].thread if same_thread else -1, []).append(k)
        for thread, ks in groups.items():
            spans = [(ts, end, n) for n, (t, ts, end, _s, _m) in enumerate(labels)
                     if not same_thread or t == thread]
            for k, n in _innermost(spans, [(windows[k].start, k) for k in ks]).items():
                out[k] = labels[n][3], labels[n][4]
    return out


def _label_name(size: int, mode: str) -> str:
    if mode == "GRAPH":
        return f"capture_graph_bs_{size}"
    return f"capture_{size}_{mode}"


def _file(path: Path, col: _Collector, windows: list[_Window], labels: Counter[tuple[int, str]],
          ops: dict[int, tuple[int, str]], modules: dict[int, int], rank: int | None,
          notes: list[str], fn: re.Match[str] | None, what: str = "") -> CaptureFile:
    """One CaptureFile over ``windows`` whose labels (if any) are ``labels``."""
    notes = list(notes)
    fn_size = int(fn.group(1)) if fn else None
    size: int | None
    if len(labels) == 1:
        (size, mode), = labels
        size_from = f"label {_label_name(size, mode)}"
        if fn_size is not None and fn_size != size:
            notes.append(f"the file name says bs {fn_size} but the label says {size}; the "
                         "label is used (SGLang file names can shift)")
    elif len(labels) > 1:
        shown = ", ".join(_label_name(s, m) for s, m in sorted(labels)[:6])
        size, mode = None, "FULL" if len(windows) <= 1 else "PIECEWISE"
        size_from = f"several labels ({shown}); split them with read_captures"
        notes.append(f"{len(labels)} capture labels in one file: no single size")
    else:
        mode = "FULL" if len(windows) <= 1 else "PIECEWISE"
        content = _modal_first_dim(col, windows)
        if fn_size is not None:
            size, size_from = fn_size, f"file name bs_{fn_size}"
            if content is not None and content != fn_size:
                notes.append(f"the file name says bs {fn_size} but the most common first dim "
                             f"of Input Dims is {content}; the file name is used (check it: "
                             "SGLang file names can shift)")
        elif content is not None:
            size, size_from = content, "modal first dim of Input Dims"
        else:
            size, size_from = None, "unknown (no label, no size in the file name, no Input Dims)"
    if what:
        size_from = f"{size_from} ({what})"
    if not windows:
        notes.append("no StreamBeginCapture..StreamEndCapture window in the file")
    roots = tuple(_root(col, w, ops, modules) for w in windows)
    n_none = sum(1 for r in roots for launch in r.launches if launch.op_by == "none")
    if n_none:
        notes.append(f"{n_none} captured launch(es) have no launching cpu_op (no shapes)")
    return CaptureFile(path=path, size=size, mode=mode, size_from=size_from, rank=rank,
                       roots=roots, notes=tuple(notes[:MAX_NOTES]))


def _parse(path: Path, budget: CaptureBudget | None = None
           ) -> tuple[_Collector, dict[str, Any], list[_Window], list[str],
                      dict[int, tuple[int, str]], dict[int, int]]:
    path = Path(path)
    col = _Collector()
    header = _stream_file(path, col, budget)
    notes: list[str] = []
    for what, n in sorted(col.dropped.items()):
        notes.append(f"{n} {what} record(s) past the kept bound were dropped")
    windows = _windows(col, notes)
    return col, header, windows, notes, _resolve_ops(col, windows), _modules(col, windows)


def _all_labels(col: _Collector) -> Counter[tuple[int, str]]:
    labels = Counter((size, mode) for _t, _s, _e, size, mode in col.labels)
    if not labels:  # only the GPU-side copies were recorded
        labels = Counter((size, mode) for _t, _s, _e, size, mode in col.gpu_labels)
    return labels


def read_capture(path: Path, *, budget: CaptureBudget | None = None) -> CaptureFile:
    """The whole capture file ``path`` as one :class:`CaptureFile` (one streamed pass).

    Size: from the capture label (``capture_32_FULL`` ...), else from the file name
    (``bs_32_rank0``), else the most common first dim of the cpu_ops' ``Input Dims``. A file
    whose labels name several sizes gets ``size=None`` (use :func:`read_captures`). Raises
    :class:`ImportProblem` for a file that cannot be read as a chrome trace (its subclass
    :class:`CaptureBudgetSpent` once ``budget``, shared by the files of one import, is
    spent)."""
    path = Path(path)
    col, header, windows, notes, ops, modules = _parse(path, budget)
    return _file(path, col, windows, _all_labels(col), ops, modules, trace_rank(path, header),
                 notes, _FN_BS.search(path.name))


def read_captures(path: Path, *, budget: CaptureBudget | None = None) -> list[CaptureFile]:
    """Like :func:`read_capture`, but one :class:`CaptureFile` per captured shape.

    * A file with several capture labels is split by the label enclosing each window (windows
      under no label form one more entry, sized from the file name or content).
    * An SGLang single-file capture (``cuda_graph_capture-<Runner>-TP-<r>``) without labels
      holds every bucket: each window becomes its own FULL entry sized by the most common
      first dim of its own ops (``size_from`` says so).
    * Anything else: ``[read_capture(path)]``."""
    path = Path(path)
    col, header, windows, notes, ops, modules = _parse(path, budget)
    rank = trace_rank(path, header)
    fn = _FN_BS.search(path.name)
    labels = _all_labels(col)
    if len(labels) > 1:
        groups: dict[tuple[int, str] | None, list[_Window]] = {}
        for w, key in zip(windows, _labels_of(col, windows), strict=True):
            groups.setdefault(key, []).append(w)
        out = []
        for key, ws in sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or (0, ""))):
            got = Counter([key]) if key is not None else Counter[tuple[int, str]]()
            out.append(_file(path, col, ws, got, ops, modules, rank, notes,
                             fn if key is None else None))
        return out
    if not labels and len(windows) > 1 and _SINGLE_FILE.match(path.name):
        out = []
        for k, w in enumerate(windows):
            one = _file(path, col, [w], Counter(), ops, modules, rank, notes, None,
                        what=f"window {k + 1} of {len(windows)}")
            out.append(one)
        return out
    return [_file(path, col, windows, labels, ops, modules, rank, notes, fn)]


def read_capture_files(paths: Sequence[Path], notes: list[str], *,
                       budget: CaptureBudget | None = None) -> list[CaptureFile]:
    """Every capture of ``paths`` (:func:`read_captures` each), the files of one import, all
    within one :class:`CaptureBudget`. A file that cannot be read is a note; once the budget
    is spent, the file being read and the rest are left out, said in one note (which bound,
    how many files were read)."""
    budget = budget if budget is not None else CaptureBudget()
    files: list[CaptureFile] = []
    for k, path in enumerate(paths):
        try:
            files.extend(read_captures(path, budget=budget))
        except CaptureBudgetSpent:
            rest = len(paths) - k - 1
            notes.append(
                f"graph-capture traces bounded in total for one import "
                f"({_size(budget.max_bytes)} of decompressed text, "
                f"{budget.max_seconds:g} s of reading): the bound cut in ({budget.cut}) after "
                f"{k} of {len(paths)} file(s), {_size(budget.spent_bytes)} read; "
                f"{printable(Path(path).name, limit=120)}"
                + (f" and {rest} more" if rest else "") + " not read (their kernels keep no "
                "shapes from them)")
            break
        except ImportProblem as exc:
            notes.append(f"graph-capture trace not used: {printable(exc.message, limit=300)}")
    return files


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def discover_captures(exec_trace: Path) -> list[Path]:
    """Capture files the serving frameworks write beside ``exec_trace`` (in its directory or
    its parent's):

    * vLLM ``capture_traces/graph_capture_rank_*.pt.trace.json[.gz]``;
    * SGLang ``capture_traces/bs_<bs>_rank<r>.json.gz``,
      ``graph_capture_profile/<Runner>_bs_<bs>_rank<r>.json.gz`` and
      ``graph_capture_profile/cuda_graph_capture-<Runner>-TP-<r>.json.gz``;
    * ATOM ``rank_<r>/capture_traces/bs_<bs>[_q_<q>]_rank<r>.json.gz`` (the execution trace
      sits in ``rank_<r>/``).

    Regular files only, sorted, at most :data:`MAX_DISCOVERED`."""
    here = Path(exec_trace).parent
    bases = [here] if here.parent == here else [here, here.parent]
    found: set[str] = set()
    for base in bases:
        for folder, patterns in _LAYOUTS:
            d = base / folder
            try:
                entries = os.scandir(d)
            except (OSError, ValueError):
                continue
            with entries:
                for n, entry in enumerate(entries):
                    if n >= MAX_SCAN:
                        break
                    name = entry.name
                    if len(name) > 255 or not any(p.match(name) for p in patterns):
                        continue
                    if check_regular(entry.path) is None:
                        found.add(entry.path)
    return [Path(p) for p in sorted(found)[:MAX_DISCOVERED]]


# ---------------------------------------------------------------------------------------------
# choosing the capture for a step
# ---------------------------------------------------------------------------------------------


def choose_capture(captures: Iterable[CaptureFile], size: int | None, n_graph_launches: int,
                   *, subsystem: str | None = None, rank: int | None = None,
                   ) -> tuple[CaptureFile, list[CaptureRoot]] | str:
    """The capture for a step of ``size`` (vLLM tokens, SGLang/ATOM batch) that replayed
    ``n_graph_launches`` graphs, and its roots paired with those launches in order; or a
    one-line reason.

    The smallest captured size >= ``size`` among the captures of the same ``subsystem`` (never
    a smaller one). One graph launch wants a FULL-like capture (FULL, DECODE, GRAPH) with one
    window; several want a PIECEWISE capture with as many windows, paired positionally.
    With ``rank``, captures of that rank are preferred when there are any (vLLM records rank 0
    only: the caller must then check the alignment on this rank's replay)."""
    if n_graph_launches < 1:
        return "the step has no graph launch"
    if size is None or size < 1:
        return "the step's size is unknown, so no captured size can be chosen"
    full = n_graph_launches == 1
    want = "FULL" if full else "PIECEWISE"
    pool = [c for c in captures if c.subsystem == subsystem]
    sub = f" for subsystem {subsystem}" if subsystem else ""
    if not pool:
        return f"no capture file{sub}"
    if rank is not None and any(c.rank == rank for c in pool):
        pool = [c for c in pool if c.rank == rank]
    pool = [c for c in pool if (c.base_mode in FULL_LIKE) == full]
    if not pool:
        return (f"the step has {n_graph_launches} graph launch(es), which needs a {want} "
                f"capture{sub}; none was found")
    sized = [c for c in pool if c.size is not None]
    if not sized:
        return f"no {want} capture{sub} has a known size"
    fits = [c for c in sized if c.size is not None and c.size >= size]
    if not fits:
        largest = max(c.size for c in sized if c.size is not None)
        return (f"the largest {want} capture{sub} is size {largest}, below the step's size "
                f"{size}: no capture fits (a smaller graph is never used)")
    best = min(c.size for c in fits if c.size is not None)
    at_best = [c for c in fits if c.size == best]
    for c in at_best:
        if full and len(c.roots) == 1:
            return c, [c.roots[0]]
        if not full and len(c.roots) == n_graph_launches:
            return c, list(c.roots)
    got = ", ".join(str(len(c.roots)) for c in at_best[:4])
    return (f"the {want} capture of size {best}{sub} has {got} capture window(s) for "
            f"{n_graph_launches} graph launch(es): cannot pair them")


# ---------------------------------------------------------------------------------------------
# alignment
# ---------------------------------------------------------------------------------------------


def _shown(name: str) -> str:
    return printable(name, limit=60)


def align(captured: Sequence[str], replayed: Sequence[str], *,
          replayed_streams: Sequence[int | None] | None = None) -> Alignment | str:
    """Match each replayed kernel (in ts order) to a captured launch (in ts order).

    Single stream, tried in order:

    1. equal counts and names: positional;
    2. more capture launches than replayed kernels: a greedy forward scan that may skip
       capture launches (never replayed ones);
    3. equal counts and equal per-name counts, other order: the k-th replayed kernel of a name
       takes the k-th captured launch of that name.

    With ``replayed_streams`` naming more than one stream, a per-stream FIFO instead: each
    capture launch, in order, takes the head of the stream queue whose head has its name (a
    tie goes to the stream whose next kernels match the next launches longest); every queue
    must end empty.

    Names compare equal as given, except that Memcpy matches Memcpy and Memset matches Memset
    or ``fillBuffer``. Returns an :class:`Alignment`, or a one-line reason (never a partial
    match)."""
    cap = [_name_key(cap_name(n)) for n in captured]
    rep = [_name_key(cap_name(n)) for n in replayed]
    if not rep:
        return "no replayed kernels to align"
    if not cap:
        return "the capture has no launches"
    if replayed_streams is not None:
        if len(replayed_streams) != len(rep):
            return "replayed_streams does not have one entry per replayed kernel"
        if len(set(replayed_streams)) > 1:
            return _align_streams(cap, rep, list(replayed_streams), captured)
    n_cap, n_rep = len(cap), len(rep)
    if n_cap == n_rep and cap == rep:
        return Alignment(tuple(range(n_rep)), "positional", 0)
    if n_cap > n_rep:
        index: list[int | None] = []
        j = 0
        for k, name in enumerate(rep):
            while j < n_cap and cap[j] != name:
                j += 1
            if j == n_cap:
                return (f"{n_rep} replayed vs {n_cap} captured kernels: replayed kernel {k} "
                        f"({_shown(replayed[k])}) has no captured launch left in order")
            index.append(j)
            j += 1
        return Alignment(tuple(index), "greedy scan", n_cap - n_rep)
    if n_cap < n_rep:
        return (f"the replay has {n_rep} kernels but the capture only {n_cap} launches: "
                "not the same graph")
    if Counter(cap) != Counter(rep):
        k = next(i for i in range(n_rep) if cap[i] != rep[i])
        diff = (Counter(rep) - Counter(cap)) or (Counter(cap) - Counter(rep))
        odd = next(iter(diff))
        who = next(i for i, n in enumerate(rep) if n == odd) if odd in rep else None
        sample = _shown(replayed[who]) if who is not None else _shown(
            captured[next(i for i, n in enumerate(cap) if n == odd)])
        return (f"{n_rep} kernels on both sides but the names differ (first at position {k}; "
                f"per-name counts differ, e.g. {sample})")
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(cap):
        positions.setdefault(name, []).append(i)
    taken: Counter[str] = Counter()
    index = []
    for name in rep:
        index.append(positions[name][taken[name]])
        taken[name] += 1
    return Alignment(tuple(index), "by name", 0)


def _align_streams(cap: list[str], rep: list[str], streams: list[int | None],
                   captured: Sequence[str]) -> Alignment | str:
    order: list[int | None] = []
    queues: dict[int | None, list[int]] = {}
    for k, s in enumerate(streams):
        if s not in queues:
            queues[s] = []
            order.append(s)
        queues[s].append(k)
    head = dict.fromkeys(order, 0)
    index: list[int | None] = [None] * len(rep)
    for i, name in enumerate(cap):
        cands = [s for s in order if head[s] < len(queues[s]) and rep[queues[s][head[s]]] == name]
        if not cands:
            return (f"multi-stream replay: captured launch {i} ({_shown(captured[i])}) is not next "
                    "on any stream")
        best = cands[0]
        if len(cands) > 1:
            def run(s: int | None, i: int = i) -> int:
                q, h, r = queues[s], head[s], 1
                while (r < RUN_LOOKAHEAD and i + r < len(cap) and h + r < len(q)
                       and rep[q[h + r]] == cap[i + r]):
                    r += 1
                return r
            best = max(cands, key=run)  # max keeps the first stream on a tie
        index[queues[best][head[best]]] = i
        head[best] += 1
    left = sum(len(queues[s]) - head[s] for s in order)
    if left:
        return f"multi-stream replay: {left} replayed kernel(s) left with no captured launch"
    return Alignment(tuple(index), "per-stream FIFO", 0)

"""The Top-N extension: what our importers record beside the upstream ``profile_topN.json``
fields, under one key, :data:`EXTENSION_KEY`, on the document and on each entry.

The upstream fields stay exactly as upstream writes them, so an upstream reader still reads our
Top-N, and an upstream Top-N without the key analyses as before. The models below are the
documentation (``roofline schema --topn``) and the parser: every value read back passes the
same coercers as the rest of the Top-N, and a bad part is dropped with a one-line reason.

Entry extension (``top_kernels[i].x_roofline``):

* ``instances``: one per (launching op, per-argument dims and types, launch geometry, how the
  op was found), most time first, each with its own ``calls``, ``total_us`` and per-phase
  ``by_phase``; bounded (99 % of the entry's time, at most 32), the rest in ``folded``;
* ``instances[].with``: the other kernels the same op calls launched (a split-K reduce, a
  combine), with how many of this instance's launches they accompanied;
* ``instances[].args[].value``: the argument's recorded value (Kineto's ``Concrete Inputs``:
  ``is_causal``, ``scale``, window sizes, ``max_seqlen``), kept for attention ops only, where
  the op's work depends on it; absent when the trace records none;
* ``capture_shaped_calls``: launches whose op came from a graph-capture trace;
* ``unshaped_calls``: launches with no launching op at all.

* ``ranks``: in a Top-N built from several ranks of one run, the spread of the kernel's
  per-launch time across the ranks that ran it (min / median / max, the slowest rank, how
  many ranks ran it).

Document extension (``x_roofline``): ``regime`` (the regime the trace's own evidence says, and
whether it is an assumption; ``null`` for a trace that is not a serving run: training, a CNN),
``captures`` (the graph-capture traces joined, and how), ``ranks`` (several ranks of one run:
which rank this Top-N is, why, and every rank read), ``distributed`` (the trace's own
``distributedInfo``: world size, rank, backend).
"""


import math
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from roofline_tui.core.coerce import integer, number
from roofline_tui.core.empty import empty_dict, empty_list
from roofline_tui.core.extension import (
    EXTENSION_KEY,
    EXTENSION_VERSION,
    MAX_VALUE_CHARS,
    MAX_VALUE_ITEMS,
)
from roofline_tui.core.names import cap_name
from roofline_tui.core.operand_roles import Role
from roofline_tui.core.textsafe import printable

__all__ = [
    "EXTENSION_KEY",  # re-exported: the key this module documents
    "MAX_ARGS",
    "MAX_DIM",
    "MAX_INSTANCES",
    "MAX_RANK",
    "MAX_RANKS",
    "MAX_VALUE_CHARS",
    "MAX_VALUE_ITEMS",
    "ROLES",
    "CaptureUse",
    "CoKernel",
    "Distributed",
    "DocExtension",
    "EntryExtension",
    "Folded",
    "Instance",
    "Operand",
    "PhaseTime",
    "RankSet",
    "RankSpread",
    "RankTrace",
    "RegimeEvidence",
    "parse_doc_extension",
    "parse_entry_extension",
    "parse_instance",
    "parse_distributed",
    "parse_rank_set",
    "parse_rank_spread",
    "parse_value",
    "schema",
]

ROLES: frozenset[str] = frozenset(get_args(Role))

MAX_DIM = 2**40
MAX_RANK = 16
MAX_ARGS = 64
MAX_INSTANCES = 64
_VALUE_ABS = 2**62

# A recorded argument value: a bool, a number, a short string, or a short list of numbers.
Value = bool | int | float | str | list[int] | list[float]


class Operand(BaseModel):
    """One argument position of the launching op, as recorded."""

    dims: list[int] | list[list[int]] | None = Field(
        default=None, description="the tensor's dims ([] for a scalar), a list of dims for a "
                                  "TensorList, null when the trace holds no dims there")
    type: str | None = Field(default=None, description="the recorded type (c10::BFloat16, "
                                                        "Scalar, ...)")
    role: Role | None = Field(default=None, description="what the op does with it "
                                                         "(core.operands)")
    value: Value | None = Field(
        default=None, description="the value recorded for a non-tensor argument (Kineto's "
                                  "Concrete Inputs: is_causal, scale, a window size), kept for "
                                  "attention ops only; null when none is recorded")


class PhaseTime(BaseModel):
    calls: int
    total_us: float


class CoKernel(BaseModel):
    """Another kernel the same launching-op calls launched (a split-K reduce, a combine)."""

    kernel: str
    calls: int = Field(description="launches of this instance whose op call launched it too")


class Instance(BaseModel):
    """The launches of one kernel made by one launching op with one signature."""

    op: str | None = Field(default=None, description="the launching cpu_op; null: none found")
    args: list[Operand] = Field(default_factory=empty_list, description="every argument position")
    roles_from: str | None = Field(default=None, description="'table:<op>' or why positional")
    output: str | None = Field(default=None, description="how an output that is not an "
                                                          "argument is sized")
    grid: list[int] | None = None
    block: list[int] | None = None
    source: str | None = Field(default=None, description="launch | external_id | capture")
    module: str | None = None
    calls: int
    total_us: float
    by_phase: dict[str, PhaseTime] = Field(default_factory=empty_dict)
    with_kernels: list[CoKernel] = Field(
        default_factory=empty_list, alias="with",
        description="other kernels launched by the same op calls (one logical op)")

    model_config = {"populate_by_name": True, "serialize_by_alias": True}

    def tensors(self, *roles: str) -> list[tuple[list[int], str | None]]:
        """(dims, type) of the plain-tensor arguments whose role is one of ``roles``."""
        out = []
        for a in self.args:
            if a.role in roles and isinstance(a.dims, list) and a.dims and all(
                    isinstance(d, int) for d in a.dims):
                out.append(([int(d) for d in a.dims], a.type))  # type: ignore[arg-type]
        return out

    def phase(self, regime: str) -> tuple[int, float]:
        """(calls, total µs) in ``regime``; the whole instance when it has no phases."""
        if self.by_phase:
            p = self.by_phase.get(regime)
            return (p.calls, p.total_us) if p is not None else (0, 0.0)
        return self.calls, self.total_us


class Folded(BaseModel):
    instances: int
    calls: int
    total_us: float


class RankSpread(BaseModel):
    """One kernel's per-launch time across the ranks of a run that launched it."""

    ranks: int = Field(description="ranks whose trace has this kernel")
    min_us: float = Field(description="the fastest rank's mean time per launch (µs)")
    median_us: float = Field(description="the median over those ranks of the mean time per "
                                         "launch (µs)")
    max_us: float = Field(description="the slowest rank's mean time per launch (µs)")
    slowest_rank: int = Field(description="the rank with the longest mean time per launch")


class EntryExtension(BaseModel):
    instances: list[Instance] = Field(default_factory=empty_list)
    folded: Folded | None = None
    capture_shaped_calls: int = 0
    unshaped_calls: int = 0
    ranks: RankSpread | None = None


class RegimeEvidence(BaseModel):
    regime: Literal["decode", "prefill"] | None = Field(
        description="null: the trace is not a serving run (training, a CNN), so no regime")
    assumed: bool = Field(description="true when no serving annotation or shape says it")
    evidence: str


class CaptureUse(BaseModel):
    file: str
    size: int | None = None
    mode: str | None = None
    graph_launches: int = 0
    kernels: int = 0
    how: str | None = None


class RankTrace(BaseModel):
    """One rank's trace as read."""

    rank: int
    file: str
    gpu_time_ms: float = Field(description="GPU time of the device chosen in that trace")
    launches: int
    kernels: int = Field(description="distinct kernels")


class RankSet(BaseModel):
    """Several ranks of one run: the Top-N is one rank's, with every rank listed."""

    rank: int = Field(description="the rank (or device) this Top-N describes")
    unit: Literal["rank", "device"] = Field(
        default="rank", description="rank: one trace per rank; device: the GPUs of one "
                                    "export (an nsys SQLite export or cuda_gpu_trace)")
    chosen_by: Literal["--rank", "--device-index", "slowest"] = Field(
        description="named with --rank / --device-index, or the slowest (most GPU time)")
    traces: list[RankTrace] = Field(default_factory=empty_list, description="every rank, by rank")


class Distributed(BaseModel):
    """The trace's own ``distributedInfo`` (what torch.distributed reported when profiled)."""

    world_size: int = Field(description="ranks in the process group")
    rank: int | None = Field(default=None, description="this trace's rank")
    backend: str | None = Field(default=None, description="nccl, rccl, gloo ...")
    source: str = Field(description="where it was read (the trace file's distributedInfo)")


class StepWindow(BaseModel):
    """The serving steps the Top-N sums (``--steps``, ``--skip-warmup`` or the automatic
    steady-state window): ``[start, stop)`` of the steps recorded, in recorded order."""

    recorded: int = Field(description="serving steps the trace records")
    start: int = Field(description="first step kept (0-based)")
    stop: int = Field(description="one past the last step kept")
    how: Literal["auto", "--steps", "--skip-warmup"]
    reason: str = Field(description="why these steps, in words")
    dropped_gpu_ms: float = Field(default=0.0, description="GPU time of the rows left out "
                                  "(the dropped steps' kernels and the work outside the window)")
    dropped_share: float = Field(default=0.0, description="that time over the trace's GPU "
                                 "time on the device")


class StepTimeGroup(BaseModel):
    """The summed split of the GPU spans of one regime's steps (or of the whole trace)."""

    regime: Literal["decode", "prefill"] | None = Field(
        default=None, description="the steps' regime; null: the whole trace as one span")
    steps: int = 0
    span_us: float = 0.0
    busy_us: float = 0.0
    idle_us: float = 0.0
    compute_us: float = 0.0
    comm_us: float = 0.0
    comm_exposed_us: float = 0.0
    copy_us: float = 0.0
    copy_exposed_us: float = 0.0
    largest_gap_us: float = 0.0


class StepTime(BaseModel):
    """How each step's GPU span splits into compute, communication, copies and idle time
    (importers.step_time)."""

    basis: Literal["steps", "trace"]
    groups: list[StepTimeGroup] = Field(default_factory=empty_list)
    nested: str | None = None


class DocExtension(BaseModel):
    version: int = EXTENSION_VERSION
    regime: RegimeEvidence | None = None
    captures: list[CaptureUse] = Field(default_factory=empty_list)
    ranks: RankSet | None = None
    distributed: Distributed | None = None
    steps: StepWindow | None = None
    step_time: StepTime | None = None


# --------------------------------------------------------------------------- parsing


def _dims(value: Any) -> list[int] | list[list[int]] | None:
    def one(v: Any) -> list[int] | None:
        if not isinstance(v, list) or len(v) > MAX_RANK:
            return None
        if all(type(x) is int and 0 <= x <= MAX_DIM for x in v):
            return list(v)
        return None

    d = one(value)
    if d is not None:
        return d
    if isinstance(value, list) and value and len(value) <= MAX_ARGS:
        many = [one(v) for v in value]
        if all(m is not None for m in many):
            return many  # type: ignore[return-value]
    return None


def _text(value: Any, limit: int = 200) -> str | None:
    return printable(value, limit=limit) if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return integer(value, nonneg=True)


def _us(value: Any) -> float | None:
    return number(value, nonneg=True, text=False)


def _geometry(value: Any) -> list[int] | None:
    if isinstance(value, list) and 0 < len(value) <= 3 and all(
            type(x) is int and 0 <= x <= MAX_DIM for x in value):
        return list(value)
    return None


def parse_value(raw: Any) -> Value | None:
    """A recorded argument value as the models may read it, or None: a bool, a finite number
    (ints within ±2**62), a printable string of at most :data:`MAX_VALUE_CHARS`, or a list of
    at most :data:`MAX_VALUE_ITEMS` such numbers (all ints or all floats)."""
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        return raw if -_VALUE_ABS <= raw <= _VALUE_ABS else None
    if isinstance(raw, float):
        return raw if math.isfinite(raw) else None
    if isinstance(raw, str):
        return printable(raw, limit=MAX_VALUE_CHARS) if raw else None
    if isinstance(raw, list) and len(raw) <= MAX_VALUE_ITEMS:
        if all(type(x) is int and -_VALUE_ABS <= x <= _VALUE_ABS for x in raw):
            return list(raw)
        if all(type(x) is float and math.isfinite(x) for x in raw):
            return list(raw)
    return None


def parse_instance(raw: Any) -> Instance | None:
    if not isinstance(raw, dict):
        return None
    calls, us = _count(raw.get("calls")), _us(raw.get("total_us"))
    if calls is None or us is None:
        return None
    args: list[Operand] = []
    raw_args = raw.get("args")
    if isinstance(raw_args, list):
        for a in raw_args[:MAX_ARGS]:
            if not isinstance(a, dict):
                args.append(Operand())
                continue
            role = a.get("role")
            args.append(Operand(dims=_dims(a.get("dims")), type=_text(a.get("type"), 64),
                                role=role if role in ROLES else None,
                                value=parse_value(a.get("value"))))
    phases: dict[str, PhaseTime] = {}
    raw_ph = raw.get("by_phase")
    if isinstance(raw_ph, dict):
        for key in ("prefill", "decode"):
            p = raw_ph.get(key)
            if isinstance(p, dict):
                c, t = _count(p.get("calls")), _us(p.get("total_us"))
                if c is not None and t is not None:
                    phases[key] = PhaseTime(calls=c, total_us=t)
    along: list[CoKernel] = []
    raw_with = raw.get("with")
    if isinstance(raw_with, list):
        for w in raw_with[:8]:
            if isinstance(w, dict) and isinstance(w.get("kernel"), str):
                n = _count(w.get("calls"))
                if n is not None:
                    along.append(CoKernel(kernel=cap_name(w["kernel"]), calls=n))
    return Instance(op=_text(raw.get("op")), args=args, roles_from=_text(raw.get("roles_from")),
                    output=_text(raw.get("output"), 40), grid=_geometry(raw.get("grid")),
                    block=_geometry(raw.get("block")), source=_text(raw.get("source"), 20),
                    module=_text(raw.get("module")), calls=calls, total_us=us,
                    by_phase=phases, with_kernels=along)


def parse_entry_extension(raw: Any) -> tuple[EntryExtension | None, list[str]]:
    """The entry's extension, or None; problems as one-line notes."""
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [f"{EXTENSION_KEY} is not an object, ignored"]
    problems: list[str] = []
    instances: list[Instance] = []
    raw_inst = raw.get("instances")
    if isinstance(raw_inst, list):
        bad = 0
        for r in raw_inst[:MAX_INSTANCES]:
            inst = parse_instance(r)
            if inst is None:
                bad += 1
            else:
                instances.append(inst)
        if bad:
            problems.append(f"{EXTENSION_KEY}.instances: {bad} unusable instance(s) dropped")
        if len(raw_inst) > MAX_INSTANCES:
            problems.append(f"{EXTENSION_KEY}.instances: only the first {MAX_INSTANCES} read")
    folded = None
    f = raw.get("folded")
    if isinstance(f, dict):
        n, c, t = _count(f.get("instances")), _count(f.get("calls")), _us(f.get("total_us"))
        if n is not None and c is not None and t is not None:
            folded = Folded(instances=n, calls=c, total_us=t)
    spread, why = parse_rank_spread(raw.get("ranks"))
    if why:
        problems.append(why)
    return EntryExtension(instances=instances, folded=folded,
                          capture_shaped_calls=_count(raw.get("capture_shaped_calls")) or 0,
                          unshaped_calls=_count(raw.get("unshaped_calls")) or 0,
                          ranks=spread), problems


MAX_RANKS = 4096


def _rank(value: Any) -> int | None:
    r = _count(value)
    return r if r is not None and r < 1 << 31 else None


def parse_rank_spread(raw: Any) -> tuple[RankSpread | None, str | None]:
    """An entry's ``ranks`` spread, or None with a one-line reason when it is unusable."""
    if raw is None:
        return None, None
    bad = f"{EXTENSION_KEY}.ranks: not a usable rank spread, ignored"
    if not isinstance(raw, dict):
        return None, bad
    n, slowest = _count(raw.get("ranks")), _rank(raw.get("slowest_rank"))
    lo, mid, hi = _us(raw.get("min_us")), _us(raw.get("median_us")), _us(raw.get("max_us"))
    if n is None or slowest is None or lo is None or mid is None or hi is None:
        return None, bad
    if not lo <= mid <= hi:
        return None, f"{EXTENSION_KEY}.ranks: min, median and max are out of order, ignored"
    return RankSpread(ranks=n, min_us=lo, median_us=mid, max_us=hi, slowest_rank=slowest), None


def parse_rank_set(raw: Any) -> tuple[RankSet | None, list[str]]:
    """The document's ``ranks`` block, or None; problems as one-line notes."""
    if raw is None:
        return None, []
    rank = _rank(raw.get("rank")) if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or rank is None:
        return None, [f"{EXTENSION_KEY}.ranks: no usable rank, ignored"]
    chosen_by = raw.get("chosen_by")
    traces: list[RankTrace] = []
    bad = 0
    raw_traces = raw.get("traces")
    for t in raw_traces[:MAX_RANKS] if isinstance(raw_traces, list) else []:
        r = _rank(t.get("rank")) if isinstance(t, dict) else None
        ms = _us(t.get("gpu_time_ms")) if isinstance(t, dict) else None
        if not isinstance(t, dict) or r is None or ms is None:
            bad += 1
            continue
        traces.append(RankTrace(rank=r, file=_text(t.get("file")) or "?", gpu_time_ms=ms,
                                launches=_count(t.get("launches")) or 0,
                                kernels=_count(t.get("kernels")) or 0))
    problems = [f"{EXTENSION_KEY}.ranks.traces: {bad} unusable trace(s) dropped"] if bad else []
    named = chosen_by if chosen_by in ("--rank", "--device-index") else "slowest"
    unit = "device" if raw.get("unit") == "device" else "rank"
    return RankSet(rank=rank, unit=unit, chosen_by=named, traces=traces), problems


def parse_doc_extension(raw: Any) -> tuple[DocExtension | None, list[str]]:
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [f"{EXTENSION_KEY} is not an object, ignored"]
    regime = None
    r = raw.get("regime")
    if isinstance(r, dict) and r.get("regime", "") in ("decode", "prefill", None) and (
            r["regime"] is not None or _text(r.get("evidence"))):
        # (no regime only with the evidence that says why: a bare null says nothing)
        regime = RegimeEvidence(regime=r.get("regime"), assumed=r.get("assumed") is not False,
                                evidence=_text(r.get("evidence"), 300) or "not stated")
    captures = []
    raw_caps = raw.get("captures")
    if isinstance(raw_caps, list):
        for c in raw_caps[:64]:
            if isinstance(c, dict) and _text(c.get("file")):
                captures.append(CaptureUse(
                    file=_text(c.get("file")) or "?", size=_count(c.get("size")),
                    mode=_text(c.get("mode"), 40),
                    graph_launches=_count(c.get("graph_launches")) or 0,
                    kernels=_count(c.get("kernels")) or 0, how=_text(c.get("how"), 60)))
    ranks, problems = parse_rank_set(raw.get("ranks"))
    distributed, why = parse_distributed(raw.get("distributed"))
    if why:
        problems.append(why)
    steps, why = parse_step_window(raw.get("steps"))
    if why:
        problems.append(why)
    step_time, why = parse_step_time(raw.get("step_time"))
    if why:
        problems.append(why)
    return DocExtension(regime=regime, captures=captures, ranks=ranks,
                        distributed=distributed, steps=steps, step_time=step_time), problems


_SPLIT_FIELDS = ("span_us", "busy_us", "idle_us", "compute_us", "comm_us", "comm_exposed_us",
                 "copy_us", "copy_exposed_us", "largest_gap_us")
MAX_STEP_GROUPS = 4


def parse_step_time(raw: Any) -> tuple[StepTime | None, str | None]:
    """The document's ``step_time`` block, or None with a one-line reason when unusable. A
    group whose parts do not add up (busy + idle against the span, each part within busy) is
    dropped: its shares would mean nothing."""
    if raw is None:
        return None, None
    bad = f"{EXTENSION_KEY}.step_time: not a usable step split, ignored"
    if not isinstance(raw, dict) or raw.get("basis") not in ("steps", "trace"):
        return None, bad
    groups: list[StepTimeGroup] = []
    dropped = 0
    for g in (raw.get("groups") or [])[:MAX_STEP_GROUPS]:
        if not isinstance(g, dict) or g.get("regime") not in ("decode", "prefill", None):
            dropped += 1
            continue
        vals = {f: _us(g.get(f)) for f in _SPLIT_FIELDS}
        span, busy, idle = vals["span_us"], vals["busy_us"], vals["idle_us"]
        if (span is None or busy is None or idle is None or span <= 0
                or abs(busy + idle - span) > 0.01 * span
                or any(v is not None and v > busy * 1.001 + 1e-9 for f, v in vals.items()
                       if f not in ("span_us", "idle_us", "busy_us", "largest_gap_us"))):
            dropped += 1
            continue
        groups.append(StepTimeGroup(regime=g.get("regime"), steps=_count(g.get("steps")) or 0,
                                    **{f: v or 0.0 for f, v in vals.items()}))
    if not groups:
        return None, bad
    why = f"{EXTENSION_KEY}.step_time: {dropped} group(s) that do not add up dropped" \
        if dropped else None
    return StepTime(basis=raw["basis"], groups=groups,
                    nested=_text(raw.get("nested"), 300)), why


def parse_step_window(raw: Any) -> tuple[StepWindow | None, str | None]:
    """The document's ``steps`` block, or None with a one-line reason when unusable."""
    if raw is None:
        return None, None
    bad = f"{EXTENSION_KEY}.steps: not a usable step window, ignored"
    if not isinstance(raw, dict):
        return None, bad
    recorded, start, stop = (_count(raw.get(k)) for k in ("recorded", "start", "stop"))
    how = raw.get("how")
    if (recorded is None or start is None or stop is None or not start < stop <= recorded
            or how not in ("auto", "--steps", "--skip-warmup")):
        return None, bad
    dropped = number(raw.get("dropped_gpu_ms"), nonneg=True) or 0.0
    share = number(raw.get("dropped_share"), nonneg=True) or 0.0
    return StepWindow(recorded=recorded, start=start, stop=stop, how=how,
                      reason=_text(raw.get("reason"), 300) or "not stated",
                      dropped_gpu_ms=dropped, dropped_share=min(share, 1.0)), None


def parse_distributed(raw: Any) -> tuple[Distributed | None, str | None]:
    """The document's ``distributed`` block, or None with a one-line reason when unusable."""
    if raw is None:
        return None, None
    f = number(raw.get("world_size"), nonneg=True) if isinstance(raw, dict) else None
    world = int(f) if f is not None and f.is_integer() else None  # 2.5 ranks is no world
    if not isinstance(raw, dict) or world is None or not 1 <= world <= MAX_RANKS:
        return None, f"{EXTENSION_KEY}.distributed: no usable world_size, ignored"
    rank = _rank(raw.get("rank"))
    return Distributed(world_size=world, rank=rank if rank is not None and rank < world else None,
                       backend=_text(raw.get("backend"), 40),
                       source=_text(raw.get("source")) or "not stated"), None


def schema() -> dict[str, Any]:
    """JSON Schema of both extension objects (``roofline schema --topn``)."""
    return {
        "title": f"profile_topN.json extension ({EXTENSION_KEY}, version {EXTENSION_VERSION})",
        "description": (__doc__ or "").strip(),
        "document": DocExtension.model_json_schema(),
        "entry": EntryExtension.model_json_schema(),
    }

"""What every op-class model receives and returns (spec §4), and the interface it implements.

A model turns one head entry plus the model shape and workload into byte/FLOP estimates. It says
what unit it modelled (one launch, or one logical op such as a whole MoE layer that the backend
splits into several launches) and lists every assumption it made, so a user can always ask
"why this number?". Each model also owns its ``target_eff`` priors (spec §7) and the
byte-reduction levers that are specific to its class (spec §7.1).
"""


from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, cast

from roofline_tui.core.artifact import Alternative
from roofline_tui.core.dtypes import canonical_dtype
from roofline_tui.core.inputs import StepAggregates, TopN, Workload
from roofline_tui.core.model_config import ModelShape
from roofline_tui.core.operands import OpRoles, roles_of
from roofline_tui.core.parallelism import TensorParallel
from roofline_tui.core.precision import Device
from roofline_tui.core.topn_ext import Instance

# the torch importer's per-entry note on launches replayed from a graph (importers.torch)
_REPLAYED = "replayed from a CUDA/HIP graph"

# Which memory roof a kernel's bytes cross: device HBM, or the host link (PCIe / C2C) for
# host<->device copies.
Roof = Literal["hbm", "host_link"]


class OpModelUnavailable(Exception):
    """This entry cannot be modelled (spec §6 L2); ``str(exc)`` is the one-line reason."""


class Candidate(NamedTuple):
    """One plausible byte/FLOP model of the same work (spec §4 feasibility rule).

    ``reportable`` false: the candidate is shown in ``alternatives`` and notes but is never the
    reported figure (spec §4 MoE: the all-expert figure when it is unknown whether the kernel
    streams every expert).
    """

    label: str
    bytes: float
    flops: float
    note: str = ""
    reportable: bool = True


# The roof a prior's value was set against: the HBM pin rate (a memory-bound class), a measured
# compute ceiling (what a real matmul reaches; the spec's peaks are microbenchmarks, §8.2) or a
# data sheet's compute figure.
PriorRoof = Literal["hbm", "measured ceiling", "data sheet"]


class Prior(NamedTuple):
    """One ``target_eff`` prior (spec §7): its calibration key, value and why, and the roof the
    value was set against (``roof``). A compute prior set against a data sheet carries its value
    on a measured ceiling (``on_measured``) and the arithmetic behind it, citing the kernel that
    reaches that rate (``rebase_why``): the engine uses it when the verdict's roof is the
    measured ceiling, since the same fraction of a lower roof is a lower rate."""

    key: str
    value: float
    why: str
    roof: PriorRoof = "measured ceiling"
    on_measured: float | None = None
    rebase_why: str = ""


class OpEstimate(NamedTuple):
    model: str                                  # human name of the byte/FLOP model used
    candidates: tuple[Candidate, ...]           # first is the preferred one when all are feasible
    compute_dtype: str                          # which flops peak applies
    per: Literal["launch", "logical_op"]        # what the bytes/FLOPs cover
    # what one logical op is, in words ("MoE layer", "attention layer"): the unit the engine
    # names when it counts the launches one op spans (per="logical_op"); "" for per="launch"
    unit: str = ""
    assumptions: tuple[str, ...] = ()
    prior: str | None = None                    # target_eff prior key; None = the class default
    roof: Roof = "hbm"


class OpContext(NamedTuple):
    """Everything a model may use; dtypes are canonical names (``bf16``, ``fp8``...)."""

    name: str
    op_subclass: str | None
    regime: str
    shapes: list[list[list[int]]]
    dtypes: list[str]                 # canonical dtypes from the profile entry (may be empty)
    model: ModelShape | None
    workload: Workload
    tokens: int | None                # M: decode batch or prefill tokens for this regime
    tokens_source: str                # how ``tokens`` was obtained
    weight_dtype: str
    activation_dtype: str
    kv_dtype: str
    dtype_bytes: Mapping[str, float] = MappingProxyType({})  # canonical name -> bytes
    l2_bytes: int | None = None
    # The recorded instance being modelled (the launching op, every argument's dims, type and
    # role, its own calls and time), when the Top-N has instances: a model that reads it says
    # so in its assumptions; without it, ``shapes``/``dtypes`` are the upstream positional ones.
    instance: Instance | None = None
    # The step annotations' sums for this regime (Σ query tokens, Σ KV length, Σ query²,
    # Σ query·KV over ``steps.steps`` steps), when the trace recorded them.
    steps: StepAggregates | None = None
    # The whole Top-N the entry came from (the entry itself included, matched by ``name``), for
    # a model that decides from the other entries: MoE reads which sibling kernel runs which
    # stage of the layer. None: the entry is modelled alone.
    topn: TopN | None = None
    # The dtypes the device has matrix-core roofs for (its peak table's), which the
    # compute-precision rule (core.precision) checks a compute dtype against. None: unknown.
    device: Device | None = None
    # What the run says about tensor parallelism, and its evidence (core.parallelism); the size
    # the models divide by is ``workload.tp`` (set from it when env_report is silent).
    parallel: TensorParallel | None = None

    def nbytes(self, dtype: str) -> float:
        return self.dtype_bytes.get(dtype, 2.0)

    def tensor_parallel(self, what: str) -> tuple[int, str]:
        """(TP, its evidence) for a per-rank figure taken from the config. Raises
        :class:`OpModelUnavailable` when the run is sharded by an unknown number of ranks."""
        tp = self.workload.tp
        par = self.parallel
        if tp is None and par is not None and par.size is None:
            raise OpModelUnavailable(
                f"{what} divides the config by TP, and {par.evidence}; env_report "
                "workload.tp, the trace's distributedInfo or a recorded shard shape would "
                "settle it")
        if tp is None:
            return 1, ""
        return tp, (par.evidence if par is not None and par.size == tp
                    else "env_report workload.tp")

    def require_model(self, what: str) -> ModelShape:
        """The model config, or raise. In a trace that is not a serving run (training, a CNN:
        no regime) a config.json would describe no layer of it, so the reason names what is
        missing instead: the kernel's own recorded shapes."""
        if self.model is None:
            if self.serving_run() or self.shapes or self.instance is not None:
                raise OpModelUnavailable(f"no model config.json found; {what} needs it")
            raise OpModelUnavailable(
                f"{what}: {self.why_no_shapes()}; the trace is not a serving run (no regime: "
                "the profile notes say why), so no model config.json would size it")
        return self.model

    def serving_run(self) -> bool:
        """False when the trace's own evidence says it is not a serving run (the Top-N
        extension's regime is null: training, a CNN); True otherwise (unknown included)."""
        ext = self.topn.ext if self.topn is not None else None
        return ext is None or ext.regime is None or ext.regime.regime is not None

    def why_no_shapes(self) -> str:
        """Why this kernel's launches carry no shapes, from the Top-N's own accounting, and
        what would give them."""
        topn = self.topn
        if topn is None or topn.ext is None:
            return "the Top-N records none for it"
        row = next((e for e in topn.entries if e.name == self.name), None)
        if row is not None and any(_REPLAYED in n for n in row.input_notes):
            return ("its launches were replayed from a CUDA/HIP graph, which has no launching "
                    "op in this trace; a graph-capture trace of the run gives them (--capture)")
        if not any(i.op for e in topn.entries if e.ext is not None for i in e.ext.instances):
            return ("no kernel of the trace has a launching op, so none has shapes (a GPU-only "
                    "trace: no cpu_op events; one recorded with the CPU activity and "
                    "record_shapes=True gives them)")
        replay = topn.graph_replay
        if replay is not None and replay.graph_launches:
            return ("its launches have no launching op in this trace, which replays CUDA/HIP "
                    "graphs; a graph-capture trace of the run gives the replayed kernels' ops "
                    "(--capture)")
        return ("its launches have no launching op that records shapes (launched outside any "
                "cpu_op with Input Dims); record_shapes=True on the ops around it gives them")

    def require_tokens(self, what: str) -> int:
        if not self.tokens:
            raise OpModelUnavailable(
                f"{what} needs the token count M for the {self.regime} regime (est_shape, the "
                "serving block or workload.conc/isl), and none was available"
            )
        return self.tokens


class Neighbour(NamedTuple):
    """Another Top-N kernel (head or not) that a fusion lever may name."""

    short_name: str
    op_class: str
    op_subclass: str | None
    pct_gpu_time: float


class Neighbours:
    """The Top-N kernels that a fusion lever may name, classified only as far as a lever looks.

    A lever wants the biggest few kernels of some classes. Kernels are visited biggest first
    (``pct_gpu_time`` descending, then ``short_name``: the order the levers rank by) and each is
    described (classified) the first time a lever reaches it, so a 10,000-entry Top-N costs a
    handful of classifications instead of 10,000. ``describe`` turns a kernel into a
    :class:`Neighbour`; kernels need ``pct_gpu_time`` and ``short_name`` to be ordered.
    """

    def __init__(self, kernels: Iterable[Any], describe: Callable[[Any], Neighbour]) -> None:
        self._order = sorted(kernels, key=lambda k: (-k.pct_gpu_time, k.short_name))
        self._describe = describe
        self._known: list[Neighbour] = []

    @classmethod
    def of(cls, neighbours: Iterable[Neighbour]) -> "Neighbours":
        """Neighbours already classified."""
        return cls(neighbours, lambda n: n)

    def biggest(self, keep: Callable[[Neighbour], bool], k: int) -> list[Neighbour]:
        """The ``k`` biggest neighbours that ``keep`` accepts, biggest first."""
        out: list[Neighbour] = []
        i = 0
        while len(out) < k and i < len(self._order):
            if i == len(self._known):
                self._known.append(self._describe(self._order[i]))
            n = self._known[i]
            if keep(n):
                out.append(n)
            i += 1
        return out

    @property
    def described(self) -> int:
        """How many kernels have been classified so far."""
        return len(self._known)


def biggest_neighbours(neighbours: Neighbours | Sequence[Neighbour],
                       keep: Callable[[Neighbour], bool], k: int) -> list[Neighbour]:
    """The ``k`` biggest of ``neighbours`` that ``keep`` accepts, biggest first (ties by short
    name); a plain sequence is ranked whole."""
    if not isinstance(neighbours, Neighbours):
        neighbours = Neighbours.of(neighbours)
    return neighbours.biggest(keep, k)


class LeverContext(NamedTuple):
    """What a saturated entry's class needs to name its byte-reduction levers (spec §7.1)."""

    short_name: str
    bound_type: str
    weight_dtype: str | None
    kv_dtype: str | None
    alternatives: Sequence[tuple[str, float]]     # (candidate label, bytes per unit)
    chosen_label: str | None
    neighbours: Neighbours | Sequence[Neighbour]


class OpModel(Protocol):
    """The interface of one op-class model (one module of this package each)."""

    @property
    def op_class(self) -> str: ...

    @property
    def priors(self) -> Mapping[str, Prior]:
        """``target_eff`` priors by calibration key; the key equal to ``op_class`` is the
        class default, others are chosen by :attr:`OpEstimate.prior`."""
        ...

    def estimate(self, ctx: OpContext) -> OpEstimate: ...

    def levers(self, lc: LeverContext) -> list[str]:
        """Levers specific to this class; the generic ones are added by the registry."""
        ...

    @property
    def instance_tensors(self) -> int | None:
        """When set, the model reads recorded instances (``OpContext.instance``): the engine
        folds an entry's instances that have at least this many input/weight tensors, each
        against its own time. None: the class takes its sizes elsewhere (config.json)."""
        ...


@dataclass(eq=False)
class FunctionModel:
    """An :class:`OpModel` built from one module's ``estimate`` and ``levers`` functions and its
    ``PRIORS`` table, so each op-class module states only what is its own. Not frozen: a test
    may replace ``estimate`` on the instance."""

    op_class: str
    priors: Mapping[str, Prior]
    estimate_fn: Callable[[OpContext], OpEstimate]
    levers_fn: Callable[[LeverContext], list[str]]
    instance_tensors: int | None = None

    def estimate(self, ctx: OpContext) -> OpEstimate:
        return self.estimate_fn(ctx)

    def levers(self, lc: LeverContext) -> list[str]:
        return self.levers_fn(lc)


def numel(dims: Sequence[int]) -> int:
    return prod(dims) if dims else 0


# ------------------------------------------------------------------------ recorded instances
# shared by the models that read a recorded instance's operands by role (gemm, elementwise)

# spellings the profiler uses that ``canonical_dtype`` does not know
_C_TYPES = {"unsigned char": "uint8", "signed char": "int8", "char": "int8"}


def recorded_dtype(raw: str | None) -> str | None:
    """The canonical dtype of a recorded type (``unsigned char`` → ``uint8`` included)."""
    if raw is None:
        return None
    return _C_TYPES.get(raw.strip().lower()) or canonical_dtype(raw)


def instance_roles(inst: Instance) -> tuple[OpRoles, list[str]]:
    """The table's answer for ``inst`` and the role of each argument: the recorded role where
    the importer wrote one, else the table's."""
    types = cast(Sequence[str], [a.type for a in inst.args])
    dims = [a.dims for a in inst.args]
    table = roles_of(inst.op or "", len(inst.args), types, dims=dims)
    roles: list[str] = [a.role if a.role is not None else table.roles[i]
                        for i, a in enumerate(inst.args)]
    return table, roles


# ------------------------------------------------------------------------ feasibility rule


class Choice(NamedTuple):
    alternatives: list[Alternative]
    chosen: Alternative
    why: str


def choose_candidate(est: OpEstimate, peak_bw: float, t_unit_s: float) -> Choice:
    """Spec §4 feasibility rule: the largest *reportable* candidate with ``bytes ≤ peak_bw × t``
    is chosen; when none is feasible, the smallest (the least wrong) is shown and L3 will flag
    it. Candidates that are not reportable stay in the alternatives as evidence only."""
    alts = []
    for c in est.candidates:
        raw = c.bytes / (peak_bw * t_unit_s) if c.bytes > 0 and peak_bw > 0 and t_unit_s > 0 \
            else None
        alts.append(Alternative(label=c.label, bytes_est=c.bytes, flops_est=c.flops,
                                roofline_pct_raw=raw, feasible=raw is not None and raw <= 1.0,
                                note=c.note))
    eligible = [a for a, c in zip(alts, est.candidates, strict=True) if c.reportable] or alts
    held_back = [a.label for a, c in zip(alts, est.candidates, strict=True) if not c.reportable]
    feasible = [a for a in eligible if a.feasible]
    if feasible:
        pick = max(feasible, key=lambda a: a.bytes_est)
        why = "largest feasible candidate"
    else:
        pick = min(alts, key=lambda a: a.bytes_est)
        why = "every candidate is infeasible; the smallest is shown"
    if held_back and feasible:
        why += f" ({', '.join(held_back)} kept as an alternative only)"
    pick.chosen = True
    return Choice(alternatives=alts, chosen=pick, why=why)


# ------------------------------------------------------------------------ shared lever texts

LOWER_PRECISION = {"bf16": "fp8", "fp16": "fp8", "fp8": "fp4", "fp32": "bf16"}


def lower_precision_weights(weight_dtype: str | None) -> list[str]:
    """The lossy weight-dtype step for weight-streaming classes (GEMM, MoE)."""
    if weight_dtype not in LOWER_PRECISION:
        return []
    lower = LOWER_PRECISION[weight_dtype]
    return [f"lower-precision weights {weight_dtype} → {lower}: cuts the streamed weight bytes "
            "(lossy — must pass the accuracy gate)"]


def fuse_adjacent(lc: LeverContext, adjacent: Sequence[str]) -> list[str]:
    """Fuse the biggest prologue/epilogue kernels of the kinds that sit next to this class."""
    found = biggest_neighbours(
        lc.neighbours, lambda n: (n.short_name != lc.short_name and n.op_class == "elementwise"
                                  and n.op_subclass in adjacent), 2)
    return [
        f"fuse `{n.short_name}` ({n.op_subclass}, {n.pct_gpu_time:.2f}% GPU) into this kernel's "
        "prologue/epilogue: removes an activation round-trip and that kernel's own launches"
        for n in found
    ]

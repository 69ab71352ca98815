"""The output artifact ``profile_roofline.json`` (spec §2 field names, plus the extras we write).

Every field the engine writes is declared here, with ``Literal`` types for the spec's closed sets.
Models keep ``extra="allow"`` only so that unknown keys of real upstream artifacts load and
round-trip unchanged.

Two kinds of field:

* the spec's fields (spec §2) are always written, with their default when a file lacks them;
* every other field is declared with :func:`when_set` and is written only when the engine (or the
  file that was loaded) set it — set to ``None`` it is written as ``null``, never set it is
  absent. That keeps our artifacts free of keys that do not apply (no ``bytes_upper_bound`` on a
  sane entry, no ``movement`` on a lone round) and upstream artifacts unchanged on round-trip.

Numbers are SI: bytes, FLOPs, B/s, FLOP/s; ``t_ms`` keeps the spec's millisecond unit because
that is its name.
"""


import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any, ClassVar, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# the spec's closed sets, re-exported (mypy: implicit_reexport for this module)
from roofline_tui.core.closed_sets import (  # noqa: F401
    BOUND_TYPES,
    HEADROOM_CLASSES,
    OP_CLASSES,
    BoundType,
    BytesBasis,
    Confidence,
    CorroborationVerdict,
    E2EVerdict,
    HeadroomClass,
    IsolatedVerdict,
    MeasurementBasis,
    MemoryRoof,
    Number,
    OpClass,
    PeaksSource,
    Regime,
    RoofAxis,
    Route,
    Stage,
    is_bound_type,
)
from roofline_tui.core.empty import empty_dict, empty_list

DOCTRINE = (
    "roofline_pct measures how well a kernel executes its current algorithm's byte/FLOP budget, "
    "not whether that budget is necessary: a saturated head is done with tuning, not with "
    "optimization. Advisory only; pct_gpu_time stays the primary key and the measurement decides."
)

_WHEN_SET = "written only when it applies"


def when_set(default: Any = None, *, factory: Any = None, description: str | None = None,
             alias: str | None = None) -> Any:
    """A field written to JSON only when set (explicitly, or present in the loaded file)."""
    extra: dict[str, Any] = {"x-written": _WHEN_SET}
    if factory is not None:
        return Field(default_factory=factory, description=description, alias=alias,
                     json_schema_extra=extra)
    return Field(default=default, description=description, alias=alias, json_schema_extra=extra)


def when_set_list(description: str | None = None) -> Any:
    return when_set(factory=empty_list, description=description)


class Record(BaseModel):
    """Base of every artifact model: unknown keys kept, :func:`when_set` fields omitted unset."""

    model_config = ConfigDict(extra="allow")

    _conditional: ClassVar[dict[type, dict[str, str]]] = {}

    @classmethod
    def conditional_fields(cls) -> dict[str, str]:
        """Field name → JSON key of every :func:`when_set` field."""
        found = Record._conditional.get(cls)
        if found is None:
            found = {
                name: f.alias or name for name, f in cls.model_fields.items()
                if isinstance(f.json_schema_extra, dict)
                and f.json_schema_extra.get("x-written") == _WHEN_SET
            }
            Record._conditional[cls] = found
        return found

    @model_serializer(mode="wrap")
    def _omit_unset(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, key in self.conditional_fields().items():
            if name not in self.model_fields_set:
                data.pop(key if info.by_alias else name, None)
        return data


# ---------------------------------------------------------------- per entry


class Alternative(Record):
    """A byte/FLOP candidate the feasibility rule considered (spec §4)."""

    label: str
    bytes_est: float
    flops_est: float
    roofline_pct_raw: float | None = None
    feasible: bool
    chosen: bool = False
    note: str = ""


class CorroborationRow(Record):
    """A stage-C counter that supports or contradicts the entry's bound type (spec §5)."""

    counter: str
    value: float                      # percent, 0-100
    verdict: CorroborationVerdict
    explanation: str


class LogicalOpKernel(Record):
    """One kernel of a logical op that launches several (spec §3: per-launch, not aggregate)."""

    name: str
    short_name: str
    t_ms: Number | None = None  # its per-launch time in the regime
    share: Number | None = None  # of the logical op's time


class LogicalOp(Record):
    """Kernels that one launching-op call launched together, judged as one op: its bytes and
    FLOPs against their summed time (a split-K attention's main and reduce kernels)."""

    linked_by: str
    kernels: list[LogicalOpKernel] = Field(default_factory=empty_list)


class InstanceRow(Record):
    """One recorded instance of a multi-instance entry, as the fold modelled it."""

    op: str | None = None
    shapes: str = ""  # the operand dims the model read, for display
    calls: Number | None = None
    t_ms: Number | None = None  # its own per-launch time
    bytes_est: Number | None = None
    flops_est: Number | None = None
    roofline_pct: Number | None = None
    roof_axis: str | None = None


class Demonstrated(Record):
    """What this run's own best trustworthy kernel reaches on an entry's axis (evidence, not a
    target): a lower bound on the device's reachable rate with this stack."""

    axis: str
    best_rate: Number
    unit: str  # FLOP/s or B/s
    by: str  # the entry (and instance) that reached it
    demonstrated_speedup: Number  # best / this entry's rate, at least 1
    roof_doubted: bool = False  # the roof's promise exceeds the demonstration by > 1.5×
    note: str = ""


class AxisRow(Record):
    """Stage B: the captured cases on one roof axis, folded (weighted by calls × latency)."""

    roof_axis: RoofAxis
    n_cases: int
    weight_share: float  # of calls × latency over all cases
    bytes_per_unit: float
    flops_per_unit: float
    t_unit_ms: float
    roofline_pct: float | None = None


class OpShare(Record):
    """One logical op an entry's launches belong to (core.op_keys): what ``roofline diff`` and
    the dashboard's compare view match across builds and vendors."""

    key: str = Field(description="the op key: op family | module | identity dims | weight dtype")
    share: Number = Field(description="of the entry's recorded instances' GPU time, 0-1")


class Lever(Record):
    """One concrete thing to do about a head, with what it rests on (core.levers, from the
    cited rows of core.lever_table): ranked, first is the first to try."""

    key: str = Field(description="the lever table row")
    name: str
    family: str = Field(description="tuning | backend | fusion | moe | launch | byte_reduction")
    action: str = Field(description="what to do")
    evidence: str = Field(description="what in this entry says so (kernel name, launch, verdict)")
    expected_effect: str = Field(description="what it can gain and why: bounded by the entry's "
                                             "attainable speedup, never a number not measured")
    source: str = Field(description="the document the lever rests on")


class Entry(Record):
    """One head kernel (spec §2 ``entries[]``)."""

    # -- the spec's fields (always written)
    name: str
    short_name: str
    pct_gpu_time: float | None = None
    regime: Regime | None = None
    op_class: str = Field("unknown", description="one of " + ", ".join(OP_CLASSES)
                          + " (an upstream artifact may carry its own)")
    modeled: bool = False
    t_ms: float | None = None
    launches_per_step: float | None = None
    bytes_est: float | None = None
    flops_est: float | None = None
    achieved_bw_bytes_s: float | None = None
    achieved_flops: float | None = None
    hbm_util: float | None = None
    compute_util: float | None = None
    arithmetic_intensity: float | None = None
    ridge_point: float | None = None
    bound_type: BoundType = "unknown"
    roofline_pct: float | None = None
    target_eff: float | None = None
    attainable_speedup: float | None = None
    expected_e2e_gain_pct: float | None = None
    headroom_class: HeadroomClass = "unknown"
    confidence: Confidence = "low"
    suspect: bool = False
    byte_reduction_levers: list[str] = Field(default_factory=empty_list)
    notes: str = ""
    levers: list[Lever] = when_set_list(
        "every head's ranked levers with their evidence, expected effect and source "
        "(core.levers over core.lever_table); the saturated ones include the byte-reduction "
        "levers")

    # -- the Top-N row and classification
    op_subclass: str | None = when_set()
    label: str = when_set("", description="what tells a shared library kernel apart (its GEMM "
                                          "shape and module, its op): core.labels")
    op_keys: list[OpShare] = when_set_list(
        "the logical ops its launches belong to, with their time share, largest first "
        "(core.op_keys); absent when the trace recorded no launching op")
    classification: str | None = when_set()
    editable: bool | None = when_set()
    serving_weighted_pct: Number | None = when_set()
    stage: Stage | None = when_set()
    t_ms_source: str = when_set("", description="where t_ms came from")
    # -- the byte/FLOP model
    model: str = when_set("", description="the op model's name")
    unit: str = when_set("", description="what one modelled unit is (launches it spans)")
    launches_per_unit: int | None = when_set()
    t_unit_ms: Number | None = when_set()
    compute_dtype: str | None = when_set()
    peak_flops_dtype: str | None = when_set()
    target_eff_source: str = when_set("")
    prior: str | None = when_set(
        description="the target_eff prior key (calibrated by --priors) when it is not the op "
                    "class itself, e.g. attn_prefill")
    memory_roof: MemoryRoof | None = when_set(
        description="host_link: the bytes cross the host link, and hbm_util is its utilization")
    memory_peak_bytes_s: Number | None = when_set(
        description="the memory peak used when it is not the HBM peak (the host link)")
    assumptions: list[str] = when_set_list()
    alternatives: list[Alternative] = when_set_list()
    axes: list[AxisRow] = when_set_list("stage B: one row per roof axis")
    instances: list[InstanceRow] = when_set_list(
        "the recorded instances the fold modelled, each with its own time")
    logical_op: LogicalOp | None = when_set(
        description="the kernels this entry's launching op launched together, judged as one")
    part_of: str | None = when_set(
        description="the entry whose logical op this kernel is part of (judged there)")
    demonstrated: Demonstrated | None = when_set(
        description="the run's own best rate on this entry's axis, and best / this")
    # -- measured refinement (stage C)
    measurement_basis: MeasurementBasis = when_set("model")
    bytes_model: Number | None = when_set(description="modelled bytes replaced by a measurement")
    flops_model: Number | None = when_set(description="modelled FLOPs replaced by a measurement")
    model_disagreement: bool = when_set(False)
    bytes_basis: BytesBasis | None = when_set(
        description="measured bytes: reads+writes, or reads only (FETCH_SIZE without WRITE_SIZE)")
    corroboration: list[CorroborationRow] = when_set_list(
        "stage C: counters that support or contradict bound_type")
    # -- verdict
    roof_axis: RoofAxis | None = when_set()
    roofline_pct_raw: Number | None = when_set()
    bytes_upper_bound: Number | None = when_set()
    dispatch_bound: bool = when_set(False)
    stage_c_candidate: bool = when_set(False)
    advisory: bool = when_set(False)
    attainable_speedup_basis: str | None = when_set()
    roofline_formula_speedup: Number | None = when_set(
        description="target_eff/roofline_pct when the launch floor gave a smaller speedup")
    model_caution: str | None = when_set(
        description="set (to the reason) when the attainable speedup is still above 10x: the "
                    "byte/FLOP model is more likely wrong than the kernel is that slow; "
                    "upstream writes the same key as free text")
    no_verdict_reason: str | None = when_set()
    route: Route | None = when_set()
    route_reason: str | None = when_set()
    # -- round over round (spec §8.3-§8.4), set when sibling rounds were compared
    baseline_round: str | int | None = when_set()
    t_ms_baseline: Number | None = when_set()
    delta_t_pct_vs_baseline: Number | None = when_set()
    t_ms_round0: Number | None = when_set()
    delta_t_pct_vs_round0: Number | None = when_set()
    pct_gpu_time_round0: Number | None = when_set()
    delta_pct_gpu_time_pts_vs_round0: Number | None = when_set()
    prev_round: str | int | None = when_set()
    t_ms_prev: Number | None = when_set()
    delta_t_pct_vs_prev: Number | None = when_set()
    pct_gpu_time_prev: Number | None = when_set()
    delta_pct_gpu_time_pts_vs_prev: Number | None = when_set()
    regime_changed_from: str | None = when_set()
    regime_assumed: bool = when_set(
        False, description="true when no serving annotation or recorded shape says which "
                           "regime this kernel ran in: the regime is an assumption")
    new_in_round: bool = when_set(False)
    measured_speedup_vs_prev: Number | None = when_set()
    predicted_speedup_prev: Number | None = when_set()
    predicted_e2e_gain_pct_prev: Number | None = when_set()
    isolated_verdict: IsolatedVerdict | None = when_set()
    contradiction: bool = when_set(False)
    contradiction_detail: str | None = when_set()

    @property
    def has_verdict(self) -> bool:
        return self.headroom_class in ("underperforming", "moderate", "saturated")

    @classmethod
    def from_parts(cls, identity: Mapping[str, Any], parts: "Iterable[EntryPart]") -> "Entry":
        """The entry of one head: ``identity`` (the Top-N row and its class, validated), then
        the fields each part names, then every part's notes and assumptions in the order the
        parts come (``core.parts``: one part per engine step).

        A field is written by one part only; a second writer is a programming error and
        raises. Fields are set as the parts hold them (no re-validation), so a number keeps
        its type (an ``int`` stays an ``int`` in the JSON)."""
        entry = cls(**identity)
        writer: dict[str, str] = {}
        notes: list[str] = []
        assumptions = list(entry.assumptions)
        for part in parts:
            name = type(part).__name__
            for key, value in part.entry_fields().items():
                if key not in cls.model_fields or key in ("notes", "assumptions"):
                    raise ValueError(f"{name} writes {key!r}, which is not a part's field")
                if key in writer:
                    raise ValueError(f"{key!r} written by both {writer[key]} and {name}")
                writer[key] = name
                setattr(entry, key, value)
            notes += part.notes
            assumptions += part.assumptions
        entry.assumptions = assumptions
        entry.notes = " ".join(notes)
        return entry

    def with_movement(self, contradiction_note: str | None = None, **fields: object) -> "Entry":
        """Set this entry's round-over-round fields (spec §8.3-§8.4; :data:`MOVEMENT_FIELDS`)
        in place, and add the contradiction sentence to its notes; returns the entry.
        Any other field name raises: the analysis wrote those, the comparison does not."""
        unknown = sorted(set(fields) - MOVEMENT_FIELDS)
        if unknown:
            raise ValueError(f"not round-over-round fields: {', '.join(unknown)}")
        for key, value in fields.items():
            setattr(self, key, value)
        if contradiction_note is not None:
            self.notes = (self.notes or "") + f" Contradiction (spec §8.4): {contradiction_note}."
        return self


class EntryPart(Protocol):
    """One engine step's answer (``core.parts``): the entry fields it writes, and its
    sentences."""

    @property
    def notes(self) -> tuple[str, ...]: ...

    @property
    def assumptions(self) -> tuple[str, ...]: ...

    def entry_fields(self) -> Mapping[str, object]: ...


# the fields Entry.with_movement sets: the round-over-round block of Entry
MOVEMENT_FIELDS = frozenset({
    "baseline_round", "t_ms_baseline", "delta_t_pct_vs_baseline", "t_ms_round0",
    "delta_t_pct_vs_round0", "pct_gpu_time_round0", "delta_pct_gpu_time_pts_vs_round0",
    "prev_round", "t_ms_prev", "delta_t_pct_vs_prev", "pct_gpu_time_prev",
    "delta_pct_gpu_time_pts_vs_prev", "regime_changed_from", "new_in_round",
    "measured_speedup_vs_prev", "predicted_speedup_prev", "predicted_e2e_gain_pct_prev",
    "isolated_verdict", "contradiction", "contradiction_detail",
})


# ---------------------------------------------------------------- artifact level


class PeaksInfo(Record):
    hbm_bw_bytes_s: float | None = None
    flops: dict[str, float] = Field(default_factory=empty_dict)
    source: PeaksSource = "none"
    confidence: Confidence = "low"
    l2_bytes: Number | None = when_set()
    product: str | None = when_set()
    citation: str | None = when_set()
    compute_validated: bool | None = when_set(True, description=(
        "§8.2: true only when measured bf16 and fp16 ceilings agree within the isolated noise "
        "band; null when that check cannot be made (equal data-sheet figures prove nothing); "
        "false when the pair disagrees: compute-axis numbers not usable"))
    compute_check: str | None = when_set(description="the §8.2 check's outcome, in words")
    # ``flops`` above is the compute roof in use per dtype; these say which figure it is
    flops_data_sheet: dict[str, float] = when_set(factory=empty_dict,
                                                  description="the data sheet's FLOP/s per dtype")
    flops_measured: dict[str, float] = when_set(
        factory=empty_dict, description="public measured matmul ceilings (FLOP/s) per dtype")
    flops_basis: dict[str, str] = when_set(
        factory=empty_dict, description="per dtype: which figure the roof is (measured | data sheet | "
        "derived)")
    flops_source: dict[str, str] = when_set(
        factory=empty_dict, description="per dtype: the roof's source (stack and date if measured)")


class Degraded(Record):
    name: str
    reason: str


class WorkloadInfo(Record):
    """The serving workload the round ran (only the keys known are written)."""

    isl: int | None = when_set()
    osl: int | None = when_set()
    conc: int | None = when_set()
    tp: int | None = when_set()


class InputsUsed(Record):
    """Which file filled each role (file names, or a count for stage B/C)."""

    topn: str | None = when_set()
    env_report: str | None = when_set()
    model_config_file: str | None = when_set(description="the model's config.json",
                                             alias="model_config")
    peaks: str | None = when_set()
    shapes: str | None = when_set()
    counters: str | None = when_set()

    # ``model_config`` is pydantic's own name: the JSON key is read and written by alias
    model_config = ConfigDict(extra="allow", populate_by_name=True, serialize_by_alias=True)


class CounterMatch(Record):
    """One measured kernel of a counter file and the head entry it was applied to."""

    kernel: str = Field(description="the kernel as the counter file names it (capped)")
    entry: str = Field(description="the head entry's short name")
    rule: str = Field(description="how they matched: exact | signature | short name | prefix "
                                  "| short name + launch")


class CounterMiss(Record):
    """A measured kernel that was not applied: the heads that reached it and why not."""

    kernel: str
    entries: list[str] = Field(default_factory=empty_list)
    reason: str


class CounterFileJoin(Record):
    """How one counter file joined the round's heads (core.measured.joins)."""

    file: str = Field(description="the counter file's name")
    source: str = Field(description="its format (ncu-csv, rocprof-compute-pmc, proton, ...)")
    arch: str | None = Field(default=None, description="the arch it was collected on, when "
                                                       "the file says")
    kernels: int = Field(description="measured kernels in the file")
    matched: list[CounterMatch] = Field(default_factory=empty_list)
    not_applied: list[CounterMiss] = Field(default_factory=empty_list)
    unmatched: list[str] = Field(default_factory=empty_list, description=(
        "measured kernels no head matched (the first 20; ``unmatched_count`` has them all)"))
    unmatched_count: int = 0
    arch_warning: str | None = when_set(description="the file's arch differs from the round's")


class StepSplit(Record):
    """One regime's steps (or the whole trace) as the GPU spent them: per step on average,
    with each part's share of the span (importers.step_time; busy + idle = span)."""

    regime: str | None = Field(default=None, description="decode | prefill; null: the trace")
    steps: int = Field(description="steps summed (0: the whole trace as one span)")
    span_ms: float = Field(description="GPU span per step (first start to last end of its work)")
    busy_ms: float
    idle_ms: float
    compute_ms: float
    comm_ms: float
    comm_exposed_ms: float = Field(description="communication with no compute beside it")
    copy_ms: float
    copy_exposed_ms: float = Field(description="copies with neither compute nor communication "
                                               "beside them")
    largest_gap_ms: float = Field(description="the longest idle piece of any step")
    idle_share: float
    comm_exposed_share: float
    copy_exposed_share: float


class StepTarget(Record):
    """A part of the step large enough to be worked on like a kernel: idle gaps, exposed
    communication or exposed copies, with its Amdahl bound and levers."""

    kind: Literal["idle gaps", "exposed communication", "memcpy"]
    regime: str | None = None
    share_of_span: float = Field(description="its share of the step's GPU span")
    expected_e2e_gain_pct: float = Field(description="upper bound: the span shrinks by that "
                                                     "share if all of it goes")
    line: str = Field(description="the reading, e.g. 'the GPU is idle 31% of each decode step'")
    levers: list[str] = Field(default_factory=empty_list)


class PredictedVsActual(Record):
    """A kernel whose per-launch time moved between two rounds, against what was predicted."""

    pair_id: str
    name: str
    short_name: str
    regime: Regime
    op_class: str | None = None
    prior: str | None = when_set(
        description="the target_eff prior key the prediction used, when not the op class")
    round_before: str | int
    round_after: str | int
    t_ms_before: float
    t_ms_after: float
    measured_speedup: float  # t_before / t_after, same regime
    isolated_noise: bool
    predicted_speedup: float | None = None  # earlier round's attainable_speedup
    predicted_e2e_gain_pct: float | None = None
    headroom_class_before: HeadroomClass | None = None
    target_eff_before: float | None = None
    roofline_pct_before: float | None = None
    roofline_pct_after: float | None = None  # achieved fraction of roof after the change
    roofline_pct_after_basis: str | None = None
    e2e_delta_pct: float | None = None
    e2e_basis: str | None = None
    e2e_noise: bool | None = None
    e2e_verdict: E2EVerdict = "unknown"
    kernels_moved_in_pair: int = 1  # beyond the isolated band; the e2e delta is shared by them
    contradiction: bool = False
    contradiction_detail: str | None = None
    verdict: IsolatedVerdict = "unpredicted"
    verdict_text: str = ""


class RoundContext(Record):
    """``round_history``: this round's place among its sibling rounds and the step into it."""

    baseline_round: str | int | None = None
    baseline_is_round0: bool = False
    rounds: list[str | int] = Field(default_factory=empty_list)
    prev_round: str | int | None = when_set()
    comparable_with_prev: bool | None = when_set()
    comparable_with_baseline: bool | None = when_set()
    not_compared_reason: str | None = when_set()
    e2e_delta_pct: float | None = when_set()
    e2e_basis: str | None = when_set()
    e2e_noise: bool | None = when_set()
    expected_e2e_gain_pct_sum: float | None = when_set()
    appeared: list[str] = when_set_list()
    vanished: list[str] = when_set_list()
    regime_changed: list[str] = when_set_list()
    heads_entered: list[str] = when_set_list()
    heads_left: list[str] = when_set_list()
    contradictions: list[str] = when_set_list()
    predicted_vs_actual: list[PredictedVsActual] = when_set_list()
    rounds_considered: str | None = when_set(
        description="when older rounds were left out of the comparison, which and why")


class MovementE2E(Record):
    """The measured end-to-end change from the previous round (positive = faster)."""

    basis: str
    before: float
    after: float
    delta_pct: float
    noise: bool
    expected_e2e_gain_pct_sum: float | None = None  # over kernels that moved beyond the band


class MovementRow(Record):
    """One kernel in the movement table: its per-launch time and share against earlier rounds."""

    short_name: str
    regime: Regime
    t_ms: float | None = None
    delta_t_pct_vs_prev: float | None = None
    delta_t_pct_vs_baseline: float | None = None
    pct_gpu_time_prev: float | None = None
    pct_gpu_time: float | None = None
    measured_speedup: float | None = None
    predicted_speedup: float | None = None
    verdict: IsolatedVerdict | Literal["unchanged"] = "unchanged"


class RoundMovement(Record):
    """``movement``: the round-over-round section, as data (``markdown.py`` renders it).

    For the baseline round only ``round``, ``later_rounds`` and ``baseline_is_round0`` are set.
    """

    round: str | int
    baseline_round: str | int | None = None
    baseline_is_round0: bool = True
    later_rounds: list[str | int] = when_set_list()
    prev_round: str | int | None = when_set()
    isolated_noise_band: float | None = when_set(description="fraction, spec §8.3")
    e2e_noise_band_pct: float | None = when_set(description="percent, spec §8.3")
    not_compared_with_baseline: str | None = when_set()
    not_compared_with_prev: str | None = when_set()
    e2e: MovementE2E | None = when_set()
    kernels: list[MovementRow] = when_set_list()


class GraphReplayInfo(Record):
    """The profile's kernels were (partly) replayed from CUDA/HIP graphs (from the importer):
    the Top-N misses the kernels launched inside a capture, or cannot shape replayed ones."""

    launch_calls: int | None = None  # runtime *LaunchKernel calls in the trace
    graph_launches: int | None = None  # cudaGraphLaunch / hipGraphLaunch calls
    kernel_events: int | None = None  # GPU events recorded on the chosen device
    replayed_launches: int | None = when_set(
        description="kernels carrying a graph launch's correlation")
    capture_shaped_launches: int | None = when_set(
        description="replayed kernels shaped from a graph-capture trace")
    warning: str | None = None  # the one-line warning shown on the dashboard and in md


# Why the next-target reading passed over an entry with a verdict (core/reading.py)
NextSkipReason = Literal["part-of", "caution", "suspect", "saturated", "zero-gain", "host-side"]


class NextSkipped(Record):
    """An entry with a verdict that the next-target reading passed over, and why."""

    short_name: str
    label: str  # the readable name (demangled function name)
    reason: NextSkipReason
    detail: str = ""  # the caution sentence, the entry it is judged in, the roof it sits at ...
    lever: str | None = when_set(
        description="saturated: its first byte-reduction lever (move fewer bytes)")
    bound_type: BoundType | None = when_set(
        description="saturated: the roof it sits at (compute-bound: its lever is fewer FLOPs, "
                    "not fewer bytes)")
    expected_e2e_gain_pct: Number | None = when_set(
        description="its expected end-to-end gain (%): what passing it over traded")


class NextTarget(Record):
    """Which kernel to work on next, and why: the top of the gain ranking among entries with a
    verdict, an editable call site, no model caution and a gain above 0.00 %; host-side,
    saturated and skipped entries ranked above it are named (core/reading.py)."""

    kernel: str | None = None  # the pick's full name; None when no entry qualifies
    short_name: str | None = None
    label: str = ""  # the readable name
    route: Route | None = None
    why: str = ""
    headroom_class: HeadroomClass = "unknown"
    expected_e2e_gain_pct: Number | None = None
    attainable_speedup: Number | None = None
    confidence: Confidence = "low"
    host_side: bool = False  # the pick itself has host-side levers only (no editable entry)
    skipped: list[NextSkipped] = Field(default_factory=empty_list)
    advisory: bool = False  # stage A / low confidence: the GPU-time order rules
    stage: Stage = "A"
    line: str = ""  # the one-line reading every renderer prints
    step_first: StepTarget | None = when_set(
        description="a part of the step whose bound beats the pick's gain: said first")


class AnalysisSettings(Record):
    """The settings an analysis ran with: what a rewrite of the artifact must state, so that one
    computed with calibrated priors is never replaced by one without them unnoticed.

    One record per artifact: the engine builds it once (``AnalyzeOptions.settings``), the
    artifact's top-level copies are derived from it (:meth:`Artifact.state_settings`), and
    :func:`same_settings` compares two artifacts' (:func:`settings_of` reads older ones)."""

    head_threshold_pct: Number
    max_heads: int
    priors_file: str | None = when_set(
        description="the calibrated priors file (--priors) the target_eff overrides came from")
    priors_fingerprint: str | None = when_set(
        description="a hash of the calibrated target_eff values used (see priors_fingerprint)")

    def describe(self) -> str:
        """One short phrase: ``head threshold 5%, at most 8 heads, priors calib.json``."""
        priors = (f"priors {PurePath(self.priors_file).name}" if self.priors_file
                  else "calibrated priors" if self.priors_fingerprint else "default priors")
        return (f"head threshold {self.head_threshold_pct:g}%, at most {self.max_heads} heads, "
                f"{priors}")

    def head_selection(self, chosen: int, rows: int) -> str:
        """The artifact's ``head_selection`` sentence: the rule these settings select heads by,
        and the ``chosen`` heads it found among the Top-N's ``rows``."""
        pct = f"{self.head_threshold_pct:g}"
        return (f"pct_gpu_time >= {pct} (or serving_weighted_pct >= {pct}), biggest first, at "
                f"most {self.max_heads}; {chosen} of {rows} Top-N entries")

    def same_as(self, other: "AnalysisSettings") -> bool:
        """The same threshold, head cap and calibrated values (the priors file's name aside)."""
        return (self.head_threshold_pct, self.max_heads, self.priors_fingerprint) == (
            other.head_threshold_pct, other.max_heads, other.priors_fingerprint)


def priors_fingerprint(overrides: Mapping[str, float]) -> str:
    """A short, stable hash of calibrated ``target_eff`` values (order does not matter)."""
    text = json.dumps(sorted((str(k), float(v)) for k, v in overrides.items()))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Artifact(Record):
    # -- the spec's fields (always written)
    skill: str = "roofline"
    skill_version: str = "1"
    gfx: str | None = None
    peaks: PeaksInfo = Field(default_factory=PeaksInfo)
    stage: Stage = "A"
    entries: list[Entry] = Field(default_factory=empty_list)
    ranking_by_pct: list[str] = Field(default_factory=empty_list)
    ranking_by_expected_gain: list[str] = Field(default_factory=empty_list)
    degraded: list[Degraded] = Field(default_factory=empty_list)
    skill_errors: list[str | dict[str, Any]] = Field(default_factory=empty_list)

    # -- the run
    round: str | int | None = when_set()
    workload: WorkloadInfo = when_set(factory=WorkloadInfo)
    head_threshold_pct: Number | None = when_set()
    max_heads: int | None = when_set()
    head_selection: str | None = when_set()
    total_gpu_time_ms: Number | None = when_set()
    decode_steps_in_window: Number | None = when_set()
    target_eff_source: str | None = when_set()
    analysis_settings: AnalysisSettings | None = when_set(
        description="the head threshold, head cap and priors (file and fingerprint) the entries "
        "were computed with")
    inputs: InputsUsed = when_set(factory=InputsUsed)
    doctrine_note: str | None = when_set()
    # -- what the profile's importer noticed (bad rows skipped, graph replay, names cut ...)
    step_split: list[StepSplit] = when_set_list(
        "the step as a whole: per regime, the GPU span split into compute, communication, "
        "copies and idle time (per trace when the trace has no steps)")
    step_split_note: str | None = when_set(description="how the steps were told apart")
    step_targets: list[StepTarget] = when_set_list(
        "parts of the step (idle gaps, exposed communication, copies) at or above "
        "STEP_TARGET_MIN_SHARE of its span, ranked by their bound beside the kernels")
    counter_joins: list[CounterFileJoin] = when_set_list(
        "stage C: per counter file, which measured kernels were applied to which heads by "
        "which rule, which matched nothing, which were withheld and why")
    profile_notes: list[str] = when_set(
        factory=empty_list, description="notes the importer wrote into profile_topN.json, one line "
        "each (sanitised)")
    graph_replay: GraphReplayInfo | None = when_set(
        description="launch accounting when kernels were replayed from CUDA/HIP graphs")
    # -- round over round
    movement: RoundMovement | None = when_set()
    round_history: RoundContext | None = when_set()
    # -- files written beside the artifact by ``analyze --plot/--png``
    plot_file: str | None = when_set()
    plot_png: str | None = when_set()
    # -- the headline answer (core/reading.py), the same one every renderer prints
    next_target: NextTarget | None = when_set(
        description="which kernel to work on next, and why (what was skipped above it)")

    @model_validator(mode="before")
    @classmethod
    def _legacy_movement(cls, data: Any) -> Any:
        """Artifacts written before ``movement`` was data held it as markdown lines: they load,
        without the section (it is rebuilt when the round is analysed again)."""
        if isinstance(data, dict) and isinstance(data.get("movement"), list):
            data = {k: v for k, v in data.items() if k != "movement"}
        return data

    def state_settings(self, settings: AnalysisSettings, *, chosen: int, rows: int) -> "Artifact":
        """Write the settings the entries were computed with, in place; returns the artifact.

        The one place an analysis writes them: the record (``analysis_settings``) and the
        top-level fields the spec's readers and older versions read — ``head_threshold_pct``,
        ``max_heads`` and the ``head_selection`` sentence (``chosen`` heads of the Top-N's
        ``rows``) — each derived from the record, never set apart from it."""
        self.head_threshold_pct = settings.head_threshold_pct
        self.max_heads = settings.max_heads
        self.head_selection = settings.head_selection(chosen, rows)
        self.analysis_settings = settings
        return self

    def entry(self, short_name: str) -> Entry | None:
        """The entry with this short name (rankings refer to entries by short name)."""
        return next((e for e in self.entries if e.short_name == short_name), None)

    def entries_by_short_name(self) -> dict[str, Entry]:
        return {e.short_name: e for e in self.entries}


def settings_of(artifact: Artifact) -> AnalysisSettings | None:
    """The settings an artifact records: its ``analysis_settings``; an older artifact's
    top-level threshold and cap alone (default priors); ``None`` when it records neither."""
    if artifact.analysis_settings is not None:
        return artifact.analysis_settings
    if artifact.head_threshold_pct is None or artifact.max_heads is None:
        return None
    return AnalysisSettings(head_threshold_pct=artifact.head_threshold_pct,
                            max_heads=artifact.max_heads)


def same_settings(a: Artifact, b: Artifact) -> bool | None:
    """Whether two artifacts were analysed with the same settings (head threshold, head cap and
    calibrated priors; :func:`settings_of`, so older artifacts count by their top-level fields);
    ``None`` when either records no settings (nothing to compare)."""
    sa, sb = settings_of(a), settings_of(b)
    if sa is None or sb is None:
        return None
    return sa.same_as(sb)


def rounded(x: float | None, digits: int) -> float | None:
    """A stored figure rounded to ``digits`` decimals (fractions to 4, percentages to 2);
    ``None`` stays ``None``."""
    return None if x is None else round(x, digits)


def _round_floats(value: Any) -> Any:
    """Stable rounding (7 significant digits) so output is byte-identical and diffable; a NaN
    or infinity (not JSON) becomes ``null``."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value == 0.0:
            return value
        return float(f"{value:.7g}")
    if isinstance(value, dict):
        return {k: _round_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round_floats(v) for v in value]
    return value


def _non_finite(value: Any, where: str, bad: list[str]) -> None:
    """Append the place of every NaN/infinity in ``value`` to ``bad``."""
    if isinstance(value, float):
        if not math.isfinite(value):
            bad.append(where or "value")
    elif isinstance(value, dict):
        for k, v in value.items():
            _non_finite(v, f"{where}.{k}" if where else str(k), bad)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _non_finite(v, f"{where}[{i}]", bad)


NON_FINITE_PROBLEM = "non-finite values written as null (JSON has no NaN/Infinity): "


def artifact_to_json(artifact: Artifact) -> str:
    """Deterministic, strict JSON text: sorted keys, rounded floats, trailing newline.

    Non-finite numbers (an overflow from hostile input that got past the coercer) are written
    as ``null`` and recorded once in the artifact's ``skill_errors``, so ``--strict`` sees
    them. Strings are written as valid UTF-8 with terminal-active characters escaped.
    """
    from roofline_tui.core.store import strict_json_dumps

    bad: list[str] = []
    # the python-mode dump: the json-mode one silently turns non-finite floats in untyped
    # extras into None, and refuses strings holding lone surrogates (a directory name that is
    # not UTF-8 reads as one); json.dumps below writes what pydantic would for the rest
    data = artifact.model_dump(mode="python", by_alias=True)
    _non_finite(data, "", bad)
    data = _round_floats(data)
    if bad:
        names = [e.short_name for e in artifact.entries]
        shown = [_entry_path(p, names) for p in bad[:6]]
        more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
        problem = NON_FINITE_PROBLEM + ", ".join(shown) + more
        if problem not in artifact.skill_errors:
            artifact.skill_errors.append(problem)
        data["skill_errors"] = _round_floats(list(artifact.skill_errors))
    return strict_json_dumps(data, indent=2, sort_keys=True, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    """What pydantic's json mode writes for the few non-JSON types an extra may hold."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="python")
    return str(value)


def _entry_path(path: str, names: list[str]) -> str:
    """``entries[2].hbm_util`` -> ``entries[fused_moe].hbm_util`` (the entry's short name)."""
    from roofline_tui.core.textsafe import printable

    if path.startswith("entries["):
        idx, _, rest = path[len("entries["):].partition("]")
        if idx.isdigit() and int(idx) < len(names):
            return f"entries[{printable(names[int(idx)], limit=40)}]{rest}"
    return printable(path, limit=80)


def artifact_json_schema() -> dict[str, Any]:
    return Artifact.model_json_schema(by_alias=True)

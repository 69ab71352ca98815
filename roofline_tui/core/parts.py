"""The parts one head's analysis is made of, each the frozen answer of one engine step.

``core.analyze.analyze_entry`` runs the steps of spec §3 in order; each returns one record
below, and :meth:`roofline_tui.core.artifact.Entry.from_parts` writes them into the entry: the
fields each part names (no field is written by two parts), then the notes and assumptions of
every part, in step order. A step reads only the parts before it, never the entry being built.

======================  ==================================================================
part                    the step
======================  ==================================================================
:class:`Said`           sentences only: the head's regime and class, a closing "no verdict"
:class:`PartOf`         the entry is judged inside another entry's logical op
:class:`Timing`         per-launch time and launches per step (step 2)
:class:`Modelled`       the byte/FLOP model over one logical unit (spec §4), or the counters
:class:`NotModelled`    why there is no model (L2), and a logical op joined before it failed
:class:`Choice`         the memory roof, the compute peak and the feasible candidate
:class:`Measured`       stage C: measured bytes/FLOPs in place of the model's
:class:`Roofline`       utilizations, roof, bound, the L3 and dispatch checks (steps 4-6)
:class:`Corroboration`  stage C: counters that support or contradict the bound
:class:`Verdict`        bands, speedup, gain, confidence, route and levers
======================  ==================================================================

``Measured`` and ``Roofline`` wrap the lower-level answers they are made from
(``refine.MeasuredAxes``, ``metrics.RooflineMetrics``); ``Choice`` wraps the feasibility
rule's ``opmodels.Choice``.
"""


from collections.abc import Mapping
from typing import NamedTuple

from roofline_tui.core.artifact import (
    Alternative,
    AxisRow,
    BoundType,
    BytesBasis,
    Confidence,
    CorroborationRow,
    HeadroomClass,
    InstanceRow,
    LogicalOp,
    MeasurementBasis,
    MemoryRoof,
    RoofAxis,
    Route,
    Stage,
)
from roofline_tui.core.opmodels import OpEstimate

Fields = Mapping[str, object]


def _only_set(**values: object) -> dict[str, object]:
    """The keyword arguments that are not ``None`` (a field an entry writes only when it
    applies)."""
    return {k: v for k, v in values.items() if v is not None}


class Said(NamedTuple):
    """Sentences without fields (the head's regime and class; a closing "Not modelled")."""

    notes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        return {}


class PartOf(NamedTuple):
    """The head is part of another entry's logical op, and judged there."""

    host: str  # the entry's short name
    why: str
    assumptions: tuple[str, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"No verdict: {self.why}.",)

    def entry_fields(self) -> Fields:
        return {"part_of": self.host}


class Timing(NamedTuple):
    """Per-launch time in the head's regime (``None`` with why not) and launches per step."""

    t_ms: float | None
    source: str
    launches_per_step: float | None
    regime_assumed: bool = False
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        out: dict[str, object] = {"t_ms": self.t_ms, "t_ms_source": self.source,
                                  "launches_per_step": self.launches_per_step}
        if self.regime_assumed:
            out["regime_assumed"] = True
        return out


class Modelled(NamedTuple):
    """What one logical unit costs and takes: the op model's estimate (``None`` when the
    counters alone carry the entry), the launches it spans and its time."""

    est: OpEstimate | None
    model: str
    unit: str
    n_launch: int
    t_ms: float  # per launch
    t_unit_ms: float
    target_eff: float
    target_eff_source: str
    compute_dtype: str | None
    prior: str | None = None
    axes: tuple[AxisRow, ...] = ()
    instances: tuple[InstanceRow, ...] = ()
    logical_op: LogicalOp | None = None
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def t_unit_s(self) -> float:
        return self.t_unit_ms / 1000.0

    @property
    def t_launch_s(self) -> float:
        return self.t_unit_s / self.n_launch

    def entry_fields(self) -> Fields:
        out: dict[str, object] = {
            "model": self.model, "unit": self.unit, "launches_per_unit": self.n_launch,
            "t_unit_ms": self.t_unit_ms, "compute_dtype": self.compute_dtype,
            "target_eff": self.target_eff, "target_eff_source": self.target_eff_source}
        if self.est is not None:
            out["modeled"] = True
        out.update(_only_set(prior=self.prior, logical_op=self.logical_op))
        if self.axes:
            out["axes"] = list(self.axes)
        if self.instances:
            out["instances"] = list(self.instances)
        return out


class NotModelled(NamedTuple):
    """Why the head has no byte/FLOP model (spec §6 L2). A logical op joined before the model
    failed is still recorded."""

    reason: str
    logical_op: LogicalOp | None = None
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        return _only_set(logical_op=self.logical_op)


class Choice(NamedTuple):
    """The roofs a unit is judged against and the candidate the feasibility rule chose."""

    peak_bw: float
    peak_flops: float | None
    peak_flops_dtype: str | None
    chosen: Alternative | None = None  # None: the counters carry the bytes, no candidates
    alternatives: tuple[Alternative, ...] = ()  # written when there is more than one
    memory_roof: MemoryRoof | None = None  # host_link when the bytes cross the host link
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        out: dict[str, object] = {"peak_flops_dtype": self.peak_flops_dtype}
        if len(self.alternatives) > 1:
            out["alternatives"] = list(self.alternatives)
        if self.memory_roof is not None:
            out["memory_roof"] = self.memory_roof
            out["memory_peak_bytes_s"] = self.peak_bw
        return out


class Measured(NamedTuple):
    """Stage C: the bytes and FLOPs the roofline uses, measured where counters gave them (the
    model's figures kept beside them). ``basis`` is ``None`` when the head has no refinement."""

    bytes_est: float
    flops_est: float
    basis: MeasurementBasis | None = None
    bytes_model: float | None = None
    flops_model: float | None = None
    bytes_basis: BytesBasis | None = None
    model_disagreement: bool = False
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        out = _only_set(bytes_model=self.bytes_model, flops_model=self.flops_model,
                        bytes_basis=self.bytes_basis)
        if self.model_disagreement:
            out["model_disagreement"] = True
        return out


class Roofline(NamedTuple):
    """Achieved rates, utilizations, the roof and the bound, and why there is no verdict.

    Without a memory peak only the achieved rates are known (``judged`` false): no roof, no
    bound, and the verdict does not use the head's refinement."""

    bytes_est: float
    flops_est: float
    achieved_bw_bytes_s: float
    achieved_flops: float
    arithmetic_intensity: float | None
    no_verdict: str | None
    judged: bool = True
    hbm_util: float | None = None
    compute_util: float | None = None
    ridge_point: float | None = None
    roof_axis: RoofAxis | None = None
    roofline_pct_raw: float | None = None
    roofline_pct: float | None = None
    bound_type: BoundType = "unknown"
    measurement_basis: MeasurementBasis | None = None
    suspect: bool = False
    bytes_upper_bound: float | None = None
    dispatch_bound: bool = False
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        out: dict[str, object] = {
            "bytes_est": self.bytes_est, "flops_est": self.flops_est,
            "achieved_bw_bytes_s": self.achieved_bw_bytes_s,
            "achieved_flops": self.achieved_flops,
            "arithmetic_intensity": self.arithmetic_intensity}
        if not self.judged:
            return out
        out.update({"hbm_util": self.hbm_util, "compute_util": self.compute_util,
                    "ridge_point": self.ridge_point, "roof_axis": self.roof_axis,
                    "roofline_pct_raw": self.roofline_pct_raw, "bound_type": self.bound_type,
                    "roofline_pct": self.roofline_pct})
        out.update(_only_set(measurement_basis=self.measurement_basis))
        if self.suspect:
            out.update(suspect=True, bytes_upper_bound=self.bytes_upper_bound,
                       stage_c_candidate=True)
        if self.dispatch_bound:
            out["dispatch_bound"] = True
        return out


class Corroboration(NamedTuple):
    """Stage C: the counters that support or contradict the bound type (spec §5)."""

    rows: tuple[CorroborationRow, ...]
    assumptions: tuple[str, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        return ("Counters: " + "; ".join(r.explanation for r in self.rows) + ".",)

    def entry_fields(self) -> Fields:
        return {"corroboration": list(self.rows)}


class Speedup(NamedTuple):
    """The attainable speedup and expected gain of a head with a verdict."""

    value: float
    basis: str
    gain_pct: float
    formula: float | None = None  # target_eff/roofline_pct when the launch floor was smaller
    model_caution: str | None = None


class Verdict(NamedTuple):
    """Bands, speedup, gain, confidence, route and levers: what every outcome ends with."""

    stage: Stage
    confidence: Confidence
    headroom_class: HeadroomClass
    route: Route
    route_reason: str
    speedup: Speedup | None = None
    no_verdict_reason: str | None = None
    byte_reduction_levers: tuple[str, ...] | None = None  # a saturated head's levers
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def entry_fields(self) -> Fields:
        out: dict[str, object] = {"stage": self.stage, "confidence": self.confidence,
                                  "advisory": self.confidence == "low",
                                  "headroom_class": self.headroom_class}
        sp = self.speedup
        if sp is None:
            out.update(attainable_speedup=None, expected_e2e_gain_pct=None)
            out.update(_only_set(no_verdict_reason=self.no_verdict_reason))
        else:
            out.update(attainable_speedup=round(sp.value, 4), attainable_speedup_basis=sp.basis,
                       expected_e2e_gain_pct=round(sp.gain_pct, 4))
            out.update(_only_set(roofline_formula_speedup=sp.formula,
                                 model_caution=sp.model_caution))
        out.update(route=self.route, route_reason=self.route_reason)
        if self.byte_reduction_levers is not None:
            out["byte_reduction_levers"] = list(self.byte_reduction_levers)
        return out


EntryStep = (Said | PartOf | Timing | Modelled | NotModelled | Choice | Measured
             | Roofline | Corroboration | Verdict)

"""The procedure of spec §3, as one pure function: round inputs in, artifact out.

``analyze`` never raises for bad input: a problem with one entry degrades that entry (L2/L3),
an unexpected exception is caught per entry and recorded in ``skill_errors`` (L5), and the
remaining entries are still analysed. Same inputs give the same artifact, byte for byte.
"""


import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, get_args

from roofline_tui.core import labels
from roofline_tui.core import metrics as M
from roofline_tui.core import units
from roofline_tui.core.artifact import (
    DOCTRINE,
    AnalysisSettings,
    Artifact,
    AxisRow,
    Confidence,
    CounterFileJoin,
    CounterMatch,
    CounterMiss,
    Degraded,
    Entry,
    EntryPart,
    GraphReplayInfo,
    HeadroomClass,
    InputsUsed,
    InstanceRow,
    LogicalOp,
    LogicalOpKernel,
    MemoryRoof,
    PeaksInfo,
    Regime,
    RoofAxis,
    Stage,
    StepSplit,
    StepTarget,
    WorkloadInfo,
    is_bound_type,
    priors_fingerprint,
    rounded,
)
from roofline_tui.core.classify import Classification, classify
from roofline_tui.core.defaults import DEFAULT_HEAD_THRESHOLD_PCT, DEFAULT_MAX_HEADS
from roofline_tui.core.dtypes import DTYPE_BYTES, canonical_dtype
from roofline_tui.core.evidence import RaisedRoof, one_step_lower, raised_roofs
from roofline_tui.core.evidence import annotate as annotate_evidence
from roofline_tui.core.inputs import EnvReport, TopN, TopNEntry, Workload, launches_per_step
from roofline_tui.core.instance_cases import InstanceCase, instance_cases
from roofline_tui.core.levers import LaunchFacts
from roofline_tui.core.levers import attach as attach_levers
from roofline_tui.core.logical_ops import carrier, partners
from roofline_tui.core.measured.models import ShapeCase
from roofline_tui.core.model_config import ModelShape
from roofline_tui.core.names import cap_name
from roofline_tui.core.op_keys import op_shares
from roofline_tui.core.opmodels import (
    MODELS,
    Candidate,
    LeverContext,
    Neighbour,
    Neighbours,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
    byte_reduction_levers,
    choose_candidate,
    prior_for,
)
from roofline_tui.core.opmodels.base import recorded_dtype
from roofline_tui.core.parallelism import TensorParallel, resolve_tensor_parallel
from roofline_tui.core.parts import (
    Choice,
    Corroboration,
    Measured,
    Modelled,
    NotModelled,
    PartOf,
    Roofline,
    Said,
    Speedup,
    Timing,
    Verdict,
)
from roofline_tui.core.peaks import (
    Peaks,
    compute_axis_veto,
    compute_roof_confidence,
    host_link_for,
    is_measured_roof,
    peak_flops_for,
    roof_for_rate,
)
from roofline_tui.core.precision import Device
from roofline_tui.core.refine import KernelRefinement, Refinements, corroborate
from roofline_tui.core.routing import route_entry
from roofline_tui.core.textsafe import printable

_REGIMES: tuple[Regime, ...] = get_args(Regime)
SKILL_VERSION = "1"

# Collectives are timed by synchronisation and links, not HBM: no class model (upstream files
# also carry op_class "comm" with modeled false).
_COMM_REASON = "collective (all-reduce / all-gather): timed by links and synchronisation, not HBM"


@dataclass
class AnalyzeOptions:
    head_threshold_pct: float = DEFAULT_HEAD_THRESHOLD_PCT
    max_heads: int = DEFAULT_MAX_HEADS
    target_eff_overrides: dict[str, float] = field(default_factory=dict)  # calibrated priors
    target_eff_source: str | None = None  # where overrides come from (stated in the artifact)
    priors_path: Path | None = None  # the calibrated priors file the overrides were read from
    # settings that could not be used (a bad --priors file): recorded in skill_errors
    problems: list[str] = field(default_factory=list)

    def settings(self) -> AnalysisSettings:
        """The settings record an artifact states (``analysis_settings``, and the top-level
        fields derived from it: :meth:`Artifact.state_settings`): built here and nowhere else;
        :func:`~roofline_tui.core.artifact.same_settings` compares two."""
        return AnalysisSettings(
            head_threshold_pct=self.head_threshold_pct, max_heads=self.max_heads,
            **({"priors_file": str(self.priors_path)} if self.priors_path else {}),
            **({"priors_fingerprint": priors_fingerprint(self.target_eff_overrides)}
               if self.priors_path or self.target_eff_overrides else {}))


@dataclass(eq=False)
class RoundInputs:
    """Everything one round's analysis reads, already loaded. Problems are one-line strings."""

    topn: TopN | None
    peaks: Peaks
    env: EnvReport | None = None
    model: ModelShape | None = None
    round_name: str | int | None = None
    workload: Workload | None = None  # overrides env.workload when given
    problems: list[str] = field(default_factory=list)
    inputs_used: dict[str, str] = field(default_factory=dict)  # role -> file name
    # Optional refinements (stage B / C), keyed by kernel name. See roofline_tui.core.refine.
    refinements: Refinements | None = None


# --------------------------------------------------------------------------- helpers


def select_heads(topn: TopN, threshold: float, max_heads: int) -> list[TopNEntry]:
    """Spec §3 step 0: pct ≥ threshold (or a decode head by serving-weighted pct), biggest
    first, capped. Entries below the bar are absent, not degraded."""
    chosen = [
        e for e in topn.entries
        if e.pct_gpu_time >= threshold
        or (e.serving_weighted_pct is not None and e.serving_weighted_pct >= threshold)
    ]
    chosen.sort(key=lambda e: (-e.pct_gpu_time, e.name))
    return chosen[: max(0, max_heads)]


def _run_regime(topn: TopN) -> tuple[Regime | None, str]:
    sv = topn.serving
    if sv and sv.n_decode_steps is not None and sv.n_prefill_steps is not None:
        r: Regime = "decode" if sv.n_decode_steps >= sv.n_prefill_steps else "prefill"
        return r, f"run is {r}-dominated ({sv.n_decode_steps} decode vs {sv.n_prefill_steps} prefill steps)"
    if sv and sv.analytic_calls:
        d, p = sv.analytic_calls.get("decode", 0), sv.analytic_calls.get("prefill", 0)
        r = "decode" if d >= p else "prefill"
        return r, f"analytic calls favour {r} ({d:g} decode vs {p:g} prefill)"
    return None, ""


def pick_regime(entry: TopNEntry, topn: TopN) -> tuple[Regime | None, str, bool]:
    """Spec §3 step 2: the served regime carrying the most launches, else the run's dominant one.
    Returns (regime, why, assumed): assumed when no serving evidence or recorded shape says it;
    regime None when the trace's own evidence says it is not a serving run (training, a CNN:
    ``topn.ext.regime`` null), so no regime applies."""
    served = [r for r in _REGIMES if r in entry.served_regimes or r in entry.base_latency_ms
              or r in entry.calls_per_step]
    sv = topn.serving
    if served and sv is not None:
        launches: dict[Regime, float] = {}
        for r in served:
            steps = sv.n_decode_steps if r == "decode" else sv.n_prefill_steps
            if r in entry.calls_per_step and steps is not None:
                launches[r] = entry.calls_per_step[r] * steps
            elif r in entry.phase_calls_measured:
                launches[r] = entry.phase_calls_measured[r]
        if launches:
            best = max(sorted(launches), key=lambda r: launches[r])
            detail = ", ".join(f"{r} {launches[r]:g}" for r in sorted(launches))
            return best, f"{best} carries the most launches ({detail})", False
    if len(served) == 1:
        return served[0], f"only regime served: {served[0]}", False
    run, why = _run_regime(topn)
    if run:
        return run, why, False
    phase = next((r for r in _REGIMES if r == entry.phase), None)
    if phase is not None:
        return phase, f"entry phase is {phase}", False
    ev = topn.ext.regime if topn.ext is not None else None
    if ev is not None and ev.regime is None:
        return None, ev.evidence, False
    if ev is not None:
        return ev.regime, (f"{'assumed ' if ev.assumed else ''}{ev.regime} from the trace: "
                           f"{ev.evidence}"), ev.assumed
    return "decode", "no phase data: assumed decode (serving runs are decode-dominated)", True


def per_launch_time(entry: TopNEntry, regime: str) -> tuple[float | None, str]:
    if regime in entry.base_latency_ms:
        return entry.base_latency_ms[regime], f"base_latency_ms[{regime}]"
    if entry.avg_us:
        return entry.avg_us / 1000.0, (
            f"no base_latency_ms[{regime}]; fell back to avg_us/1000, averaged over all phases "
            "and shapes"
        )
    if entry.total_ms and entry.calls:
        return entry.total_ms / entry.calls, "fell back to total_ms/calls (all phases)"
    return None, "no per-launch time (base_latency_ms, avg_us or total_ms/calls)"


def regime_tokens(entry: TopNEntry, regime: str, topn: TopN, wl: Workload) -> tuple[int | None, str]:
    if regime in entry.est_m:
        return entry.est_m[regime], f"est_shape.{regime}.M"
    sv = topn.serving
    if regime == "decode":
        if sv and sv.decode_batch_steady:
            return sv.decode_batch_steady, "serving.decode_batch_steady"
        if sv and sv.decode_batch_captured:
            return sv.decode_batch_captured, "serving.decode_batch_captured"
        if wl.conc:
            return wl.conc, "workload.conc (decode batch = concurrency)"
        return None, "no decode batch"
    if wl.isl:
        return wl.isl, "workload.isl (assumed one prompt of isl tokens per prefill launch)"
    return None, "no prefill token count"


def logical_unit(
    est: OpEstimate, op_class: str, lps: float | None, model: ModelShape | None
) -> tuple[int, str]:
    """How many launches one modelled unit spans (spec §3 'per-launch, not aggregate')."""
    if est.per == "launch":
        return 1, "one launch (bytes and time per launch)"
    layers = model.layers_of(op_class) if model is not None else None
    kind = est.unit or f"{op_class} layer"  # the op model names its unit
    if not lps:
        return 1, (
            f"one logical {kind} assumed to be one launch (launches per step unknown; if the "
            "backend splits it, roofline_pct reads high by that factor)"
        )
    if not layers:
        return 1, f"one logical {kind} assumed to be one launch (layer count unknown)"
    for k in (model.attention_kinds() if model is not None and op_class == "attn" else ()):
        if k.layers < layers and abs(lps - k.layers) <= 0.05 * k.layers:
            return 1, (f"one logical {kind} = one launch ({lps:g} launches/step are the "
                       f"{k.describe()} layers)")
    ratio = lps / layers
    n = round(ratio)
    if n >= 2 and abs(ratio - n) <= 0.1 * ratio:
        return n, (
            f"one logical {kind} = {n} launches ({lps:g} launches/step over {layers} layers); "
            f"time = {n} × t_ms"
        )
    if 0.9 <= ratio < 1.5:
        return 1, f"one logical {kind} = one launch ({lps:g} launches/step over {layers} layers)"
    return 1, (
        f"one launch per logical {kind} assumed: {lps:g} launches/step over {layers} layers "
        f"is not a whole multiple"
    )


# --------------------------------------------------------------------------- per entry


@dataclass(eq=False)
class _Shared:
    topn: TopN
    peaks: Peaks
    model: ModelShape | None
    workload: Workload
    weight_dtype: str
    activation_dtype: str
    kv_dtype: str
    dtype_notes: list[str]
    options: AnalyzeOptions
    neighbours: Neighbours
    refinements: Refinements | None
    # op class of any Top-N entry, classified once per analysis (the logical-op links ask)
    classes: dict[str, str] = field(default_factory=dict)
    # compute roofs this run beat (evidence.raised_roofs), by dtype: the second pass judges
    # every entry of that dtype against the rate the run demonstrated
    raised: dict[str, RaisedRoof] = field(default_factory=dict)
    # the run's tensor parallelism and its evidence (core.parallelism); ``workload.tp`` above
    # carries its size when env_report was silent
    parallel: TensorParallel | None = None


def _target_eff(op_class: str, est: OpEstimate | None, options: AnalyzeOptions
                ) -> tuple[float, str]:
    """The spec §7 prior of the estimate's own kind (e.g. prefill attention), calibrated by
    ``--priors`` under the same key."""
    prior = prior_for(op_class, est)
    if prior.key in options.target_eff_overrides:
        src = options.target_eff_source or "calibrated priors"
        return options.target_eff_overrides[prior.key], f"calibrated prior from {src}"
    return prior.value, prior.why


def _on_roof(h: "_Head", unit: Modelled, choice: Choice, roof: Roofline, sh: "_Shared"
             ) -> Modelled:
    """The prior re-based onto the roof the verdict used: a compute prior set against a data
    sheet (``Prior.roof``) takes its value on a measured ceiling (``Prior.on_measured``) when
    the entry is judged on the compute axis against a measured ceiling — the same fraction of a
    lower roof would be a lower rate than the kernel the prior cites. A calibrated prior
    (``--priors``, fitted on the roofs it was used with) and every other case keep theirs."""
    if unit.est is None or roof.roof_axis != "compute":
        return unit
    prior = prior_for(h.cls.op_class, unit.est)
    dtype = choice.peak_flops_dtype
    if (prior.roof != "data sheet" or prior.on_measured is None
            or prior.key in sh.options.target_eff_overrides
            or not is_measured_roof(sh.peaks, dtype)):
        return unit
    return unit._replace(target_eff=prior.on_measured, target_eff_source=(
        f"{prior.why}; re-based from {prior.value:g} (set against the data sheet) to "
        f"{prior.on_measured:g} on the measured {dtype} ceiling: {prior.rebase_why}"))


def _raised(sh: "_Shared", dtype: str | None, peak: float | None
            ) -> tuple[float | None, RaisedRoof | None]:
    """The compute roof of ``dtype`` this run raised (:func:`evidence.raised_roofs`), else
    ``peak`` unchanged."""
    raised = sh.raised.get(dtype or "")
    if raised is None or peak is None or not raised.rate > peak:
        return peak, None
    return raised.rate, raised


def _op_keys(head: TopNEntry) -> dict[str, Any]:
    """``op_keys`` when the head's instances recorded a launching op (else nothing written)."""
    shares = op_shares(head)
    return {"op_keys": [{"key": k, "share": round(v, 4)} for k, v in shares]} if shares else {}


def _identity(head: TopNEntry, regime: Regime | None, op_class: str, op_subclass: str | None
              ) -> dict[str, Any]:
    """The entry's fields before any analysis: the Top-N row, its class, no verdict yet."""
    return {
        "name": head.name,
        "short_name": head.short_name,
        "label": labels.label_of(head, op_class),
        **_op_keys(head),
        "pct_gpu_time": head.pct_gpu_time,
        "regime": regime,
        "op_class": op_class,
        "op_subclass": op_subclass,
        "classification": head.classification,
        "editable": head.editable,
        "serving_weighted_pct": head.serving_weighted_pct,
        "stage": "A",
        "measurement_basis": "model",
        "modeled": False,
        "suspect": False,
        "dispatch_bound": False,
        "stage_c_candidate": False,
        "bound_type": "unknown",
        "headroom_class": "unknown",
        "confidence": "low",
        "byte_reduction_levers": [],
        "assumptions": [],
        "alternatives": [],
    }


def _new_entry(head: TopNEntry, regime: Regime | None, op_class: str, op_subclass: str | None
               ) -> Entry:
    """The entry before any analysis (what an entry whose analysis failed is left with)."""
    return Entry(**_identity(head, regime, op_class, op_subclass))


# A case of the per-shape fold: a stage-B captured shape or a recorded instance.
Case = ShapeCase | InstanceCase


def _case_weights(cases: Sequence[Case]) -> list[float]:
    """Calls per captured case for the stage-B fold. A case whose file gives a call count or a
    weight of 0 was never called: weight 0, left out (not one call). Cases whose files give no
    count at all are unweighted, one call each; so are all cases when every weight is 0."""
    out: list[float] = []
    for case in cases:
        basis = case.params.get("count_basis") if isinstance(case.params, dict) else None
        if case.count and case.count > 0:
            out.append(float(case.count))
        elif basis in ("calls", "weight_norm"):
            out.append(0.0)
        else:
            out.append(1.0)
    if not any(out):
        return [1.0] * len(cases)
    return out


@dataclass(eq=False)
class _CaseRow:
    axis: RoofAxis
    calls: float
    t: float
    bytes: float
    flops: float
    peak_flops: float | None


# sources whose latency already covers one whole logical unit (the harness times the op)
_PER_UNIT_SOURCES = {"smoke_detail.baseline_ms": "the harness's op time "
                     "(smoke_detail.baseline_ms times the whole op seam)"}


class _FoldSetting(NamedTuple):
    """What every case of one fold shares."""

    ctx: OpContext
    op_class: str
    lps: float | None
    t_launch_s: float
    source: str
    sh: _Shared

    @property
    def launch_source(self) -> str:
        return ("the instance's mean per-launch time" if self.source == "recorded instances"
                else "the case's per-launch latency (workload-v1: per kernel call)")


class _FoldedCase(NamedTuple):
    est: OpEstimate
    row: _CaseRow
    how: str  # how the case's time per unit was taken
    shown: InstanceRow | None


def _fold_case(case: Case, calls: float, fs: _FoldSetting) -> _FoldedCase:
    """One case modelled and set against its time per logical unit (raises
    :class:`OpModelUnavailable`)."""
    dts = [d for d in (canonical_dtype(x) for x in case.dtypes) if d]
    inst = case.instance if isinstance(case, InstanceCase) else None
    cctx = fs.ctx._replace(shapes=[case.input_shapes] if case.input_shapes else [],
                           dtypes=dts or fs.ctx.dtypes, tokens=case.m or fs.ctx.tokens,
                           tokens_source="captured case M" if case.m else fs.ctx.tokens_source,
                           instance=inst)
    est = MODELS[fs.op_class].estimate(cctx)
    n, _ = logical_unit(est, fs.op_class, fs.lps, fs.sh.model)
    lat_src = case.params.get("latency_source") if isinstance(case.params, dict) else None
    if case.latency_ms and lat_src in _PER_UNIT_SOURCES:
        t_unit = case.latency_ms / 1000.0
        how = f"{_PER_UNIT_SOURCES[lat_src]}, taken as one unit"
    elif case.latency_ms:
        t_unit = case.latency_ms / 1000.0 * n
        how = f"{fs.launch_source} × {n} launch(es) per unit"
    else:
        t_unit = fs.t_launch_s * n
        how = f"the profile's per-launch t_ms × {n} launch(es) per unit"
    peak_bw = fs.sh.peaks.hbm_bw_bytes_s or 0.0
    pick = choose_candidate(est, peak_bw, t_unit).chosen
    peak_flops, flops_dtype, _ = peak_flops_for(fs.sh.peaks, est.compute_dtype)
    peak_flops, _ = _raised(fs.sh, flops_dtype, peak_flops)
    ai = pick.flops_est / pick.bytes_est if pick.bytes_est > 0 else 0.0
    ridge = peak_flops / peak_bw if peak_flops and peak_bw else None
    axis: RoofAxis = "compute" if ridge is not None and ai > ridge else "memory"
    row = _CaseRow(axis=axis, calls=calls, t=t_unit, bytes=pick.bytes_est,
                   flops=pick.flops_est, peak_flops=peak_flops)
    shown = None
    if inst is not None:
        roof = (pick.bytes_est / (peak_bw * t_unit) if axis == "memory" and peak_bw
                else pick.flops_est / (peak_flops * t_unit) if peak_flops else None)
        shown = InstanceRow(
            op=inst.op, shapes=" ".join(json.dumps(d, separators=(",", ":"))
                                        for d in case.input_shapes)[:120],
            calls=calls, t_ms=1000.0 * t_unit, bytes_est=pick.bytes_est,
            flops_est=pick.flops_est, roofline_pct=roof, roof_axis=axis)
    return _FoldedCase(est=est, row=row, how=how, shown=shown)


def _fold_axes(rows: list[_CaseRow], peak_bw: float) -> list[AxisRow]:
    """The folded cases per roof axis, weighted by calls × latency (never across axes)."""
    total_w = sum(r.calls * r.t for r in rows) or 1.0
    axes: list[AxisRow] = []
    for axis_name in get_args(RoofAxis):
        group = [r for r in rows if r.axis == axis_name]
        if not group:
            continue
        calls = sum(r.calls for r in group)
        w = sum(r.calls * r.t for r in group)
        b = sum(r.calls * r.bytes for r in group)
        f = sum(r.calls * r.flops for r in group)
        pk = group[0].peak_flops
        pct = (b / (peak_bw * w)) if axis_name == "memory" else (f / (pk * w) if pk else None)
        axes.append(AxisRow(roof_axis=axis_name, n_cases=len(group), weight_share=w / total_w,
                            bytes_per_unit=b / calls, flops_per_unit=f / calls,
                            t_unit_ms=1000.0 * w / calls, roofline_pct=pct))
    return axes


def _fold_assumptions(fs: _FoldSetting, folded: list[_FoldedCase], dominant: AxisRow,
                      skipped: list[str], zero: int, cases: Sequence[Case]) -> list[str]:
    """What the fold assumed, in words: how many cases, which axis leads, how time was taken."""
    timing: dict[str, int] = {}
    for f in folded:
        timing[f.how] = timing.get(f.how, 0) + 1
    out = [
        f"{fs.source}: {len(folded)} folded, weighted by calls × latency per roof "
        f"axis (never averaged across axes); headline = {dominant.roof_axis} axis "
        f"({dominant.weight_share:.0%} of the weight)"
    ]
    if skipped:
        out.append(f"{len(skipped)} case(s) not modelled: {skipped[0]}")
    if zero:
        out.append(f"{zero} case(s) with weight 0 (no calls) left out of the fold")
    elif any(c.count == 0 for c in cases):
        out.append("no case carries a call count or weight: cases folded unweighted "
                   "(one call each)")
    out.append("case time per logical unit: " + "; ".join(
        f"{k} case(s): {how}" for how, k in timing.items()))
    out.append(
        f"time: the {dominant.roof_axis} axis's calls-weighted latency, "
        f"{dominant.t_unit_ms:.6g} ms per unit, so the headline roofline_pct is that axis's "
        f"value ({(dominant.roofline_pct or 0.0):.4f})")
    return out + list(folded[0].est.assumptions)


def fold_cases(
    cases: Sequence[Case], ctx: OpContext, op_class: str, lps: float | None, t_launch_s: float,
    sh: _Shared, source: str = "stage B: captured case(s)",
    shown: list[InstanceRow] | None = None,
) -> tuple[OpEstimate, list[AxisRow]]:
    """Stage B: model every captured case, then fold them weighted by calls × latency, per roof
    axis. The entry's headline is the dominant axis; the other axis is reported, not averaged.

    A case's time is set against one logical unit (spec §3 "per-launch, not aggregate"). Its
    ``latency_ms`` is per launch in every source but one: workload-v1 ``baseline_latency_ms``
    and ``weight / count`` are per kernel call, and a recorded instance's is its mean per-launch
    time; those are multiplied by the unit's launches (``logical_unit``). Only the MoE meta's
    ``smoke_detail.baseline_ms`` (``params["latency_source"]``) times the whole op seam, all
    launches of one unit, and is kept as it is. A case without a latency takes the profile's
    per-launch time × the unit's launches."""
    fs = _FoldSetting(ctx=ctx, op_class=op_class, lps=lps, t_launch_s=t_launch_s,
                      source=source, sh=sh)
    folded: list[_FoldedCase] = []
    skipped: list[str] = []
    weights = _case_weights(cases)
    zero = sum(1 for w in weights if w == 0.0)
    for case, calls in zip(cases, weights, strict=True):
        if calls == 0.0:
            continue
        try:
            one = _fold_case(case, calls, fs)
        except OpModelUnavailable as exc:
            skipped.append(str(exc))
            continue
        folded.append(one)
        if shown is not None and one.shown is not None:
            shown.append(one.shown)
    if not folded:
        why = skipped[0] if skipped else "no usable case"
        raise OpModelUnavailable(f"no captured case could be modelled ({why})")
    axes = _fold_axes([f.row for f in folded], sh.peaks.hbm_bw_bytes_s or 0.0)
    dominant = max(axes, key=lambda a: a.weight_share)
    first = folded[0].est
    captured = source.startswith("stage B")
    return OpEstimate(
        model=f"{first.model} over {'captured' if captured else 'recorded'} shapes",
        candidates=(Candidate("captured" if captured else "recorded",
                              dominant.bytes_per_unit, dominant.flops_per_unit),),
        compute_dtype=first.compute_dtype,
        per=first.per,
        unit=first.unit,
        assumptions=tuple(_fold_assumptions(fs, folded, dominant, skipped, zero, cases)),
        prior=first.prior,
    ), axes


# The regime the lookups and the op models use for a trace that is not a serving run: such a
# trace has no phases, so each kernel's time is the mean over all its launches, and its forward
# passes run over whole batches; no token count is taken from the workload (see _op_context).
_NO_REGIME_WORK: Regime = "prefill"


class _Head(NamedTuple):
    """One head as its analysis starts: the Top-N row, its regime (None: not a serving run,
    said once in the profile notes), class and refinement."""

    row: TopNEntry
    shown: Regime | None
    regime_why: str
    regime_assumed: bool
    cls: Classification
    refine: KernelRefinement | None

    @property
    def regime(self) -> Regime:
        """The regime the per-phase lookups and the op models read (:data:`_NO_REGIME_WORK`
        when the trace has none)."""
        return self.shown if self.shown is not None else _NO_REGIME_WORK

    def identity(self) -> dict[str, Any]:
        return _identity(self.row, self.shown, self.cls.op_class, self.cls.op_subclass)

    def said(self) -> Said:
        """The first sentences of every entry's notes: why this regime (none: said once, in
        the profile notes), why this class."""
        regime = (f"Regime: {self.regime_why}.",) if self.shown is not None else ()
        return Said(notes=(*regime, f"Class: {self.cls.op_class} ({self.cls.reason}).",
                           *(f"Input: {n}." for n in self.row.input_notes)))


def _head(head: TopNEntry, sh: _Shared) -> _Head:
    """Spec §3 steps 1-2: the head's regime and op class (and its stage B/C refinement)."""
    regime, why, assumed = pick_regime(head, sh.topn)
    cls = _classify_entry(head, _has_experts(sh.model))
    refine = sh.refinements.for_kernel(head.name) if sh.refinements is not None else None
    return _Head(row=head, shown=regime, regime_why=why, regime_assumed=assumed, cls=cls,
                 refine=refine)


def analyze_entry(head: TopNEntry, sh: _Shared) -> tuple[Entry, str | None]:
    """Analyse one head; returns the entry and a degrade reason when it has no model (L2).

    Each step returns one part (``core.parts``) and reads only the parts before it: the time
    (:func:`_timing`), the byte/FLOP model and its unit (:func:`_byte_flop_model`), the roofs
    and the feasible candidate (:func:`_choice`), the measured refinement (:func:`_measured`),
    the roofline (:func:`_roofline`) and the verdict — bands, speedup, gain, route, levers
    (:func:`_verdict`). :meth:`Entry.from_parts` writes them into the entry.
    """
    h = _head(head, sh)
    host = carrier(head, sh.topn, h.regime, h.cls.op_class, _class_of(sh))
    if host is not None:
        part = PartOf(host=host.entry.short_name, why=(
            f"part of the logical op of {printable(host.entry.short_name, limit=60)} "
            f"(launched by the same {printable(host.op, limit=80)} calls, "
            f"{host.linked_calls} of {host.calls}): judged there, with its time"))
        return _entry(h, sh, [part], no_verdict=part.why), None
    timing = _timing(h, sh)
    modelled = _byte_flop_model(h, timing, sh)
    if isinstance(modelled, NotModelled):
        counted = _counters_only(h, timing, modelled, sh)
        if counted is not None:
            return counted, None
        closing = Said(notes=(f"Not modelled: {modelled.reason}.",))
        return _entry(h, sh, [timing, modelled, closing], unit=modelled), modelled.reason
    choice = _choice(modelled, sh)
    if isinstance(choice, str):
        roof = _no_roof(modelled, choice)
        return _entry(h, sh, [timing, modelled, roof], unit=modelled, roof=roof), None
    measured = _measured(h, modelled, choice)
    roof = _roofline(h, modelled, choice, measured, sh)
    modelled = _on_roof(h, modelled, choice, roof, sh)
    parts: list[EntryPart] = [timing, modelled, choice, measured, roof]
    parts += _corroboration(h, roof)
    return _entry(h, sh, parts, unit=modelled, choice=choice, roof=roof), None


def _entry(h: _Head, sh: _Shared, parts: Sequence[EntryPart], *,
           unit: Modelled | NotModelled | None = None, choice: Choice | None = None,
           roof: Roofline | None = None, no_verdict: str | None = None) -> Entry:
    """The verdict on the parts, and the entry they make."""
    verdict = _verdict(h, sh, unit, choice, roof, no_verdict)
    return Entry.from_parts(h.identity(), [h.said(), *parts, verdict])


def _timing(h: _Head, sh: _Shared) -> Timing:
    """Per-launch time in the head's regime and launches per step (spec §3 step 2); an assumed
    regime is said here, where the time depends on it."""
    t_ms, source = per_launch_time(h.row, h.regime)
    if h.shown is None and t_ms is not None and not source.startswith("base_latency"):
        source = (f"{'avg_us/1000' if h.row.avg_us else 'total_ms/calls'}: the mean over "
                  "all its launches")
    said = t_ms is not None and not source.startswith("base_latency")
    return Timing(
        t_ms=t_ms, source=source, launches_per_step=launches_per_step(h.row, h.regime, sh.topn),
        regime_assumed=h.regime_assumed,
        assumptions=((f"regime {h.regime} is an assumption: {h.regime_why}",)
                     if h.regime_assumed else ()),
        notes=(f"Time: {source}.",) if said else ())


def _op_context(h: _Head, sh: _Shared) -> OpContext:
    """What the op model reads for this head (spec §4 inputs), refined by stage B when the
    head has captured shapes."""
    head, regime = h.row, h.regime
    tokens, tokens_src = regime_tokens(head, regime, sh.topn, sh.workload)
    if h.shown is None:
        tokens, tokens_src = None, "no token count: the trace is not a serving run"
    ctx = OpContext(
        name=head.name,
        op_subclass=h.cls.op_subclass,
        regime=regime,
        shapes=head.shapes,
        dtypes=[d for d in (recorded_dtype(x) for x in head.dtypes) if d],
        model=sh.model,
        workload=sh.workload,
        tokens=tokens,
        tokens_source=tokens_src,
        weight_dtype=sh.weight_dtype,
        activation_dtype=sh.activation_dtype,
        kv_dtype=sh.kv_dtype,
        dtype_bytes=dict(DTYPE_BYTES),
        l2_bytes=sh.peaks.l2_bytes,
        steps=(sh.topn.serving.phases.get(regime) if sh.topn.serving is not None else None),
        topn=sh.topn,
        parallel=sh.parallel,
        device=_device(sh.peaks),
    )
    return h.refine.context(ctx) if h.refine is not None else ctx


def _device(peaks: Peaks) -> Device | None:
    """The dtypes the device has a matrix-core roof for (its peak table's), which the
    compute-precision rule checks a compute dtype against; None when no compute peak is known."""
    if not peaks.flops:
        return None
    return Device(peaks.product or peaks.gfx or "this GPU", frozenset(peaks.flops))


class _Estimated(NamedTuple):
    """The op model's estimate and, when cases were folded, their axes and instance rows."""

    est: OpEstimate
    axes: list[AxisRow]
    shown: list[InstanceRow]


def _estimate(h: _Head, sh: _Shared, t_ms: float, lps: float | None,
              cases: Sequence[Case], covered: list[str], source: str) -> _Estimated:
    """The class model over the head's cases (folded) or over its Top-N row (raises
    :class:`OpModelUnavailable`)."""
    ctx = _op_context(h, sh)
    if cases and sh.peaks.hbm_bw_bytes_s:
        shown: list[InstanceRow] = []
        est, axes = fold_cases(cases, ctx, h.cls.op_class, lps, t_ms / 1000.0, sh, source, shown)
        if covered:
            est = est._replace(assumptions=tuple(covered) + est.assumptions)
        return _Estimated(est, axes, shown)
    return _Estimated(MODELS[h.cls.op_class].estimate(ctx), [], [])


def _byte_flop_model(h: _Head, timing: Timing, sh: _Shared) -> Modelled | NotModelled:
    """The op class's byte/FLOP model over one logical unit (spec §4), or why there is none."""
    cls = h.cls
    if cls.op_class == "comm":
        return NotModelled(_COMM_REASON)
    if cls.op_class not in MODELS:
        return NotModelled(cls.unmodelled
                           or f"no byte/FLOP model for this kernel ({cls.reason})")
    if timing.t_ms is None:
        return NotModelled(timing.source)
    t_ms = timing.t_ms
    cases: Sequence[Case] = h.refine.regime_cases(h.regime) if h.refine is not None else []
    instances: list[InstanceCase] = []
    covered: list[str] = []
    source = "stage B: captured case(s)"
    wants = MODELS[cls.op_class].instance_tensors
    if not cases and wants is not None:
        instances, covered = instance_cases(h.row, h.regime, wants)
        if h.shown is None:  # no regime: the instances' whole time (they have no phases)
            covered = [c.replace(f"its own {h.regime} time", "its own time") for c in covered]
        cases, source = instances, "recorded instances"
    joined = _join_logical_op(h, sh, t_ms, instances)
    try:
        got = _estimate(h, sh, t_ms, timing.launches_per_step, cases, covered, source)
    except OpModelUnavailable as exc:
        return NotModelled(str(exc), logical_op=joined.logical_op,
                           assumptions=joined.assumptions)
    est = got.est
    n_launch, unit = logical_unit(est, cls.op_class, timing.launches_per_step, sh.model)
    target_eff, target_src = _target_eff(cls.op_class, est, sh.options)
    t_unit_ms = (t_ms + joined.added) * n_launch
    if got.axes:
        # the headline is the dominant axis: its bytes, FLOPs and calls-weighted time, so the
        # entry's roofline_pct equals that axis's roofline_pct
        dominant = max(got.axes, key=lambda a: a.weight_share)
        if dominant.t_unit_ms:
            t_unit_ms = dominant.t_unit_ms
    show = len(got.shown) > 1 or (bool(got.shown) and bool(joined.added))
    return Modelled(
        est=est, model=est.model, unit=unit, n_launch=n_launch, t_ms=t_ms, t_unit_ms=t_unit_ms,
        target_eff=target_eff, target_eff_source=target_src, compute_dtype=est.compute_dtype,
        prior=est.prior if est.prior and est.prior != cls.op_class else None,
        axes=tuple(got.axes), instances=tuple(got.shown) if show else (),
        logical_op=joined.logical_op,
        assumptions=(*joined.assumptions, *sh.dtype_notes, *est.assumptions),
        notes=(f"Unit: {unit}.", f"Model: {est.model}."))


def _class_of(sh: _Shared) -> Callable[[TopNEntry], str]:
    experts = _has_experts(sh.model)

    def class_of(e: TopNEntry) -> str:
        found = sh.classes.get(e.name)
        if found is None:
            found = sh.classes[e.name] = _classify_entry(e, experts).op_class
        return found

    return class_of


class _Joined(NamedTuple):
    """The kernels joined into this head's logical op: the milliseconds they add per launch."""

    added: float = 0.0
    logical_op: LogicalOp | None = None
    assumptions: tuple[str, ...] = ()


def _join_logical_op(h: _Head, sh: _Shared, t_ms: float,
                     cases: Sequence[InstanceCase]) -> _Joined:
    """Join the kernels the same op calls launched with this one (``core.logical_ops``): their
    per-launch time is added to this entry's unit (to each recorded instance's that launched
    them) and the split is recorded."""
    regime = h.regime
    found = partners(h.row, sh.topn, regime, h.cls.op_class, _class_of(sh))
    if not found:
        return _Joined()
    kernels = [LogicalOpKernel(name=h.row.name, short_name=h.row.short_name, t_ms=t_ms)]
    added = 0.0
    for p in found:
        pt, _src = per_launch_time(p.entry, regime)
        if pt is None:
            continue
        per_launch = pt * p.linked_calls / p.calls
        added += per_launch
        kernels.append(LogicalOpKernel(name=p.entry.name, short_name=p.entry.short_name,
                                       t_ms=per_launch))
        for case in cases:
            inst = case.instance
            w = next((k for k in inst.with_kernels if k.kernel == p.entry.name), None)
            if w is not None and inst.calls:
                case.latency_ms += pt * w.calls / inst.calls
    if not added:
        return _Joined()
    total = t_ms + added
    for k in kernels:
        k.share = (k.t_ms or 0.0) / total if total else None
    op = found[0].op
    logical_op = LogicalOp(
        linked_by=f"launched by the same {printable(op, limit=80)} calls "
                  f"({found[0].linked_calls} of {found[0].calls} launches)",
        kernels=kernels)
    split = " + ".join(f"{k.short_name} {1000 * (k.t_ms or 0):.2f} µs" for k in kernels)
    return _Joined(added=added, logical_op=logical_op, assumptions=(
        f"one logical op: {split} = {1000 * total:.2f} µs per call (spec §3: per-launch, not "
        "aggregate; the link is the trace's launching op)",))


def _choice(m: Modelled, sh: _Shared) -> Choice | str:
    """The memory roof the model's bytes cross — HBM, or for a host↔device copy the host link
    (PCIe / NVLink-C2C), never HBM — the compute peak for the model's dtype, and the
    feasibility rule over the candidates (spec §4): the largest candidate that stays under
    peak bandwidth. Why there is no verdict when that memory peak is unknown."""
    assert m.est is not None  # the counters-only path makes its own choice
    est = m.est
    notes: list[str] = []
    memory_roof: MemoryRoof | None = None
    if est.roof != "host_link":
        peak_bw = sh.peaks.hbm_bw_bytes_s
        if not peak_bw:
            return "no peak bandwidth known for this device: no verdict"
    else:
        link, where = host_link_for(sh.peaks)
        if link is None:
            return (f"host↔device copy: {where}, and the HBM roof does not apply to bytes "
                    "that cross the host link")
        peak_bw, memory_roof = link.bytes_s, "host_link"
        notes.append(f"Roof: the host link ({where}), not HBM; hbm_util here is the link's "
                     "utilization.")
    peak_flops, flops_dtype, flops_note = peak_flops_for(sh.peaks, est.compute_dtype)
    rule = choose_candidate(est, peak_bw, m.t_unit_s)
    alts = rule.alternatives
    if len(alts) > 1:
        desc = "; ".join(
            f"{a.label} {a.bytes_est / 1e6:.1f} MB → {a.roofline_pct_raw or 0:.2f} of roof"
            f"{' (infeasible)' if not a.feasible else ''}"
            for a in alts
        )
        notes.append(f"Candidates: {desc}; used {rule.chosen.label} ({rule.why}).")
    return Choice(peak_bw=peak_bw, peak_flops=peak_flops, peak_flops_dtype=flops_dtype,
                  chosen=rule.chosen, alternatives=tuple(alts), memory_roof=memory_roof,
                  assumptions=(flops_note,) if flops_note else (), notes=tuple(notes))


# target for a kernel whose class has no model: the lowest of the spec's priors (§7)
UNMODELLED_TARGET_EFF = 0.50


def _counters_only(h: _Head, timing: Timing, why: NotModelled, sh: _Shared) -> Entry | None:
    """Stage C without a model (issue 13 item 9): measured bytes (and FLOPs, when counted)
    per dispatch with the profile's per-launch time give a roofline on their own. The unit is
    one launch; confidence comes from the measured axis; ``measurement_basis`` is
    ``counters``. ``None`` when the counters cannot carry it (no bytes measured, no time,
    no peak bandwidth, or a collective, whose bytes cross links rather than HBM)."""
    m = h.refine.measurement if h.refine is not None else None
    peak_bw = sh.peaks.hbm_bw_bytes_s
    t_ms = timing.t_ms
    if (m is None or m.bytes_per_dispatch is None or not m.bytes_per_dispatch > 0
            or t_ms is None or not t_ms > 0 or not peak_bw or h.cls.op_class == "comm"):
        return None
    if h.cls.op_class in MODELS:
        target_eff, target_src = _target_eff(h.cls.op_class, None, sh.options)
    else:
        target_eff = UNMODELLED_TARGET_EFF
        target_src = ("no model for this class: the lowest spec §7 prior "
                      f"({UNMODELLED_TARGET_EFF:g})")
    src = f"{m.source} ({Path(m.path).name}, {m.dispatches} dispatches)"
    counted = m.flops_per_dispatch is not None
    modelled = Modelled(
        est=None, model="counters only", unit="1 launch (measured per dispatch)", n_launch=1,
        t_ms=t_ms, t_unit_ms=t_ms, target_eff=target_eff, target_eff_source=target_src,
        compute_dtype=m.flops_dtype, notes=(
            f"No byte/FLOP model ({why.reason}); stage C: measured bytes"
            f"{' and FLOPs' if counted else ''} per dispatch from {src} with the profile's "
            "per-launch time give the roofline.",
            *(() if counted else ("FLOPs not counted: the compute axis is unknown (taken as "
                                  "0).",)),
            "Counters see traffic below L2 (fabric/DRAM side), not the HBM pins."))
    peak_flops, flops_dtype, flops_note = peak_flops_for(sh.peaks, m.flops_dtype)
    choice = Choice(peak_bw=peak_bw, peak_flops=peak_flops, peak_flops_dtype=flops_dtype,
                    assumptions=(flops_note,) if flops_note else ())
    measured = Measured(bytes_est=m.bytes_per_dispatch,
                        flops_est=(m.flops_per_dispatch if m.flops_per_dispatch is not None
                                   else 0.0), basis="counters")
    roof = _roofline(h, modelled, choice, measured, sh)
    return _entry(h, sh, [timing, why, modelled, choice, measured, roof], unit=modelled,
                  choice=choice, roof=roof)


def _no_roof(m: Modelled, why: str) -> Roofline:
    """No memory peak: the achieved rates of the first candidate, and no verdict."""
    assert m.est is not None
    c = m.est.candidates[0]
    return Roofline(bytes_est=c.bytes, flops_est=c.flops,
                    achieved_bw_bytes_s=c.bytes / m.t_unit_s,
                    achieved_flops=c.flops / m.t_unit_s,
                    arithmetic_intensity=c.flops / c.bytes if c.bytes > 0 else None,
                    no_verdict=why, judged=False, notes=(f"No verdict: {why}.",))


def _measured(h: _Head, m: Modelled, choice: Choice) -> Measured:
    """Stage C: measured bytes/FLOPs replace the model's (the model's kept beside them)."""
    assert choice.chosen is not None
    bytes_est, flops_est = choice.chosen.bytes_est, choice.chosen.flops_est
    if h.refine is None:
        return Measured(bytes_est=bytes_est, flops_est=flops_est)
    mx = h.refine.measured(m.n_launch, bytes_est)
    return Measured(
        bytes_est=mx.bytes_unit if mx.bytes_unit is not None else bytes_est,
        flops_est=mx.flops_unit if mx.flops_unit is not None else flops_est,
        basis=mx.basis,
        bytes_model=bytes_est if mx.bytes_unit is not None else None,
        flops_model=flops_est if mx.flops_unit is not None else None,
        bytes_basis=mx.bytes_basis if mx.bytes_unit is not None else None,
        model_disagreement=any(n.startswith("Model disagreement") for n in mx.notes),
        notes=tuple(mx.notes))


def _measured_roof(h: _Head, m: M.RooflineMetrics) -> tuple[M.RooflineMetrics, str | None]:
    """Stage C: a roofline rocprof-compute measured itself (roofline-v1) replaces the ratio;
    the metrics and the sentence saying so, or the metrics unchanged and ``None``."""
    measurement = h.refine.measurement if h.refine is not None else None
    if measurement is None or measurement.roofline_pct is None or (
        measurement.bytes_per_dispatch is not None
    ):
        return m, None
    raw = measurement.roofline_pct
    sane = M.SANE_LOW <= raw <= M.SANE_HIGH
    m = m._replace(
        roofline_pct_raw=raw, suspect=not sane,
        suspect_reason=None if sane else f"measured roofline {raw:.3f} outside (0, 1]",
        bound_type=measurement.bound_type if is_bound_type(measurement.bound_type)
        else m.bound_type, dispatch_bound=False)
    return m, f"Stage C: roofline {raw:.2f} measured by rocprof-compute (roofline-v1)."


def _roofline(h: _Head, t: Modelled, choice: Choice, measured: Measured, sh: _Shared
              ) -> Roofline:
    """Utilizations, the roof and the bound (spec §3 steps 4-6), then the L3/dispatch checks
    (why there is no verdict, when there is none)."""
    notes: list[str] = []
    peak_flops, raised = _raised(sh, choice.peak_flops_dtype, choice.peak_flops)
    if raised is not None:
        notes.append(f"{raised.note()}.")
    peak_flops, roof_note = roof_for_rate(sh.peaks, choice.peak_flops_dtype, peak_flops,
                                          measured.flops_est / t.t_unit_s)
    if roof_note:
        notes.append(roof_note)
    m = M.compute_metrics(bytes_est=measured.bytes_est, flops_est=measured.flops_est,
                          t_unit_s=t.t_unit_s, t_launch_s=t.t_launch_s, peak_bw=choice.peak_bw,
                          peak_flops=peak_flops)
    m, stage_c = _measured_roof(h, m)
    basis = measured.basis
    if stage_c is not None:
        basis = "counters"
        notes.append(stage_c)
    no_verdict: str | None = None
    if m.suspect:
        pct: float | None = min(max(m.roofline_pct_raw, 0.0), 1.0)
        no_verdict = f"suspect (L3): {m.suspect_reason}"
        notes.append(
            f"Suspect (L3): {m.suspect_reason}. Bytes upper bound at peak = "
            f"{m.bytes_upper_bound / 1e6:.1f} MB per unit; a stage-C counter measurement would "
            "settle it.")
    else:
        pct = rounded(m.roofline_pct_raw, 4)
        if m.dispatch_bound:
            no_verdict = (
                f"dispatch-bound: {t.t_ms * 1000:.1f} µs per launch is within "
                f"{M.DISPATCH_FACTOR:g}× the ~{M.LAUNCH_OVERHEAD_S * 1e6:g} µs launch overhead")
            notes.append(f"No verdict: {no_verdict}; the lever is fusion or graph capture.")
        elif m.roof_axis == "compute" and (veto := compute_axis_veto(sh.peaks)):
            no_verdict = veto
            notes.append(f"No verdict: {no_verdict}.")
        elif sh.peaks.source == "none":
            no_verdict = "no peak table entry"
    if m.compute_util is not None and compute_axis_veto(sh.peaks):
        notes.append("compute_util uses an unvalidated peak (bf16 ≠ fp16): do not rank on it.")
    return Roofline(
        bytes_est=m.bytes_est, flops_est=m.flops_est, achieved_bw_bytes_s=m.achieved_bw_bytes_s,
        achieved_flops=m.achieved_flops, arithmetic_intensity=m.arithmetic_intensity,
        no_verdict=no_verdict, hbm_util=rounded(m.hbm_util, 4),
        compute_util=rounded(m.compute_util, 4), ridge_point=m.ridge_point,
        roof_axis=m.roof_axis, roofline_pct_raw=m.roofline_pct_raw, roofline_pct=pct,
        bound_type=m.bound_type, measurement_basis=basis, suspect=m.suspect,
        bytes_upper_bound=m.bytes_upper_bound if m.suspect else None,
        dispatch_bound=m.dispatch_bound and not m.suspect, notes=tuple(notes))


def _corroboration(h: _Head, roof: Roofline) -> list[Corroboration]:
    """Stage C: counters that support or contradict the bound type (spec §5)."""
    m = h.refine.measurement if h.refine is not None else None
    if m is None or not m.corroboration or roof.bound_type == "unknown":
        return []
    rows = corroborate(roof.bound_type, m.corroboration)
    return [Corroboration(rows=tuple(rows))] if rows else []


def _confidence(h: _Head, sh: _Shared, roof: Roofline | None, choice: Choice | None
                ) -> tuple[Stage, Confidence]:
    """The stage the head reached and how far its verdict can be trusted: the peaks', the
    measurement's (only when the roofline was judged) and the compute roof's confidence."""
    refine = h.refine if roof is not None and roof.judged else None
    roof_axis = roof.roof_axis if roof is not None else None
    if sh.peaks.confidence == "low":
        confidence: Confidence = "low"
    elif refine is not None:
        confidence = refine.confidence(roof_axis)
        if confidence == "high" and sh.peaks.confidence == "medium":
            confidence = "medium"  # the product's own peaks are not in the table
    else:
        confidence = "low"
    flops_dtype = choice.peak_flops_dtype if choice is not None else None
    confidence = compute_roof_confidence(sh.peaks, roof_axis, flops_dtype, confidence)
    if roof_axis == "compute" and flops_dtype in sh.raised:
        confidence = one_step_lower(confidence)  # on a roof the run raised (RaisedRoof.note)
    return (refine.stage if refine is not None else "A"), confidence


def _speedup(h: _Head, unit: Modelled, pct: float) -> tuple[Speedup, str]:
    """Attainable speedup (bounded by the launch floor) and expected end-to-end gain, and the
    sentence saying which bound applied."""
    t_launch_s = unit.t_unit_ms / 1000.0 / (unit.n_launch or 1) if unit.t_unit_ms else None
    sp = M.bounded_speedup(unit.target_eff, pct, t_launch_s)
    gain = M.expected_e2e_gain_pct(h.row.pct_gpu_time, sp.value)
    return Speedup(
        value=sp.value, basis=sp.basis, gain_pct=gain,
        formula=round(sp.roofline_formula, 4) if sp.value < sp.roofline_formula else None,
        model_caution=sp.model_caution or None), sp.note


def _verdict(h: _Head, sh: _Shared, unit: Modelled | NotModelled | None, choice: Choice | None,
             roof: Roofline | None, no_verdict: str | None) -> Verdict:
    """Bands, speedup, gain, confidence, route and levers — the parts every outcome shares.
    ``no_verdict`` says why when no part does (an entry judged inside another's logical op)."""
    stage, confidence = _confidence(h, sh, roof, choice)
    if isinstance(unit, NotModelled):
        no_verdict = f"not modelled: {unit.reason}"
    elif roof is not None:
        no_verdict = roof.no_verdict
    # bands and speedup on the unrounded ratio: 0.809962 is not >= 0.81
    pct = None if roof is None else (
        roof.roofline_pct_raw if roof.roofline_pct_raw is not None else roof.roofline_pct)
    speedup: Speedup | None = None
    notes: tuple[str, ...] = ()
    headroom: HeadroomClass = "unknown"
    if (no_verdict is None and pct is not None and isinstance(unit, Modelled)
            and unit.target_eff):
        speedup, note = _speedup(h, unit, pct)
        headroom, notes = M.headroom_band(pct, unit.target_eff), (note,)
    bound = roof.bound_type if roof is not None else "unknown"
    decision = route_entry(
        editable=h.row.editable, headroom_class=headroom, bound_type=bound,
        confidence=confidence,
        expected_gain_pct=round(speedup.gain_pct, 4) if speedup is not None else None,
        no_verdict_reason=no_verdict)
    levers = None
    if headroom == "saturated":
        levers = tuple(byte_reduction_levers(h.cls.op_class, LeverContext(
            short_name=h.row.short_name, bound_type=bound, weight_dtype=sh.weight_dtype,
            kv_dtype=sh.kv_dtype,
            alternatives=[(a.label, a.bytes_est) for a in choice.alternatives] if choice else [],
            chosen_label=choice.chosen.label if choice and choice.chosen else None,
            neighbours=sh.neighbours)))
    return Verdict(stage=stage, confidence=confidence, headroom_class=headroom,
                   route=decision.route, route_reason=decision.reason, speedup=speedup,
                   no_verdict_reason=no_verdict or None, byte_reduction_levers=levers,
                   notes=notes)


# --------------------------------------------------------------------------- the procedure


def _dtypes(model: ModelShape | None, env: EnvReport | None) -> tuple[str, str, str, list[str]]:
    notes: list[str] = []
    env_model_dtype = canonical_dtype(env.model_dtype) if env else None
    if model is not None:
        w, a, kv = model.weight_dtype, model.activation_dtype, model.kv_dtype
        src = "config.json"
    else:
        a = env_model_dtype or "bf16"
        w, kv = a, a
        src = "env_report model_dtype" if env_model_dtype else "default (no config.json)"
    kv_env = env.kv_cache_dtype if env else None
    if kv_env and kv_env.lower() != "auto":
        kv_c = canonical_dtype(kv_env)
        if kv_c:
            kv = kv_c
            notes.append(f"kv dtype {kv} from env_report kv_cache_dtype={kv_env}")
        else:
            notes.append(f"kv_cache_dtype {printable(kv_env, limit=20)} not recognised; kv {kv}")
    else:
        notes.append(f"kv dtype {kv} (kv_cache_dtype auto → the unquantized model dtype)")
    notes.insert(0, f"weights {w}, activations {a} ({src})")
    return w, a, kv, notes


def _has_experts(model: ModelShape | None) -> bool | None:
    """Whether the model has experts; None without a config.json (not known)."""
    return bool(model.num_experts) if model is not None else None


def _classify_entry(e: TopNEntry, has_experts: bool | None) -> Classification:
    """:func:`classify` with what the trace recorded of the entry's launches as evidence:
    each instance's launching op and module path."""
    ops = [t for i in (e.ext.instances if e.ext is not None else []) for t in (i.op, i.module)
           if t]
    return classify(e.name, e.classification, e.shapes, has_experts=has_experts, ops=ops)


def _neighbours(topn: TopN, model: ModelShape | None) -> Neighbours:
    """Every Top-N entry, classified only when a lever looks at it (a long Top-N's tail is
    mostly never looked at)."""
    experts = _has_experts(model)

    def describe(e: TopNEntry) -> Neighbour:
        c = _classify_entry(e, experts)
        return Neighbour(e.short_name, c.op_class, c.op_subclass, e.pct_gpu_time)

    return Neighbours(topn.entries, describe)


def _unique_short_names(heads: list[TopNEntry]) -> list[TopNEntry]:
    """Heads with distinct short names (rankings refer to entries by short name).

    The first head with a given short name keeps it; each later one takes the first
    ``name#n`` (n = 2, 3, ...) that no head uses, so ``x, x, x#2`` become ``x, x#3, x#2``,
    never ``x, x#2, x#2``.
    """
    taken: set[str] = set()
    first: set[int] = set()
    for i, h in enumerate(heads):
        if h.short_name not in taken:
            taken.add(h.short_name)
            first.add(i)
    out = []
    for i, h in enumerate(heads):
        if i not in first:
            n = 2
            while f"{h.short_name}#{n}" in taken:
                n += 1
            name = f"{h.short_name}#{n}"
            taken.add(name)
            h = h.model_copy(update={"short_name": name})
        out.append(h)
    return out


def rank_entries(entries: list[Entry]) -> tuple[list[str], list[str]]:
    by_pct = sorted(entries, key=lambda e: (-(e.pct_gpu_time or 0.0), e.short_name))
    with_verdict = [e for e in by_pct if e.has_verdict and e.expected_e2e_gain_pct is not None]
    with_verdict.sort(key=lambda e: (-(e.expected_e2e_gain_pct or 0.0),
                                     -(e.pct_gpu_time or 0.0), e.short_name))
    verdict_ids = {id(e) for e in with_verdict}
    rest = [e for e in by_pct if id(e) not in verdict_ids]
    return [e.short_name for e in by_pct], [e.short_name for e in with_verdict + rest]


def _datasheet_roof(e: Entry, peaks: Peaks) -> bool:
    """Whether the roof ``e``'s verdict used is a data-sheet figure: the compute roof when the
    peak table has no measured ceiling for its dtype (the memory roof is the HBM pin rate,
    which the spec's 0.90 target already prices in)."""
    return e.roof_axis == "compute" and not is_measured_roof(
        peaks, e.peak_flops_dtype or e.compute_dtype)


def _peaks_info(peaks: Peaks) -> PeaksInfo:
    """The peaks the round was judged against, as the artifact states them."""
    return PeaksInfo(
        hbm_bw_bytes_s=peaks.hbm_bw_bytes_s,
        flops=dict(sorted(peaks.flops.items())),
        source=peaks.source,
        confidence=peaks.confidence,
        l2_bytes=peaks.l2_bytes,
        product=peaks.product,
        citation=peaks.citation,
        compute_validated=peaks.compute_validated,
        **peaks.provenance(),
    )


def _analyze_heads(heads: Sequence[TopNEntry], sh: _Shared
                   ) -> tuple[list[Entry], list[Degraded], list[str]]:
    """Every head's entry, the heads degraded (L2) and the internal errors (L5)."""
    entries: list[Entry] = []
    degraded: list[Degraded] = []
    errors: list[str] = []
    for head in heads:
        try:
            entry, reason = analyze_entry(head, sh)
        except Exception as exc:  # L5: never let one entry fail the run
            msg = f"{printable(head.short_name, limit=60)}: {type(exc).__name__}: {exc}"
            errors.append(msg)
            entry = _new_entry(head, "decode", "unknown", None)
            entry.notes = f"Internal error while analysing this entry: {msg}"
            entry.route, entry.route_reason = "pct_order", "analysis failed; pct_gpu_time order"
            reason = f"analysis failed: {type(exc).__name__}"
        entries.append(entry)
        if reason is not None:
            degraded.append(Degraded(name=entry.short_name, reason=reason))
    return entries, degraded, errors


def _launch_facts(head: TopNEntry) -> LaunchFacts:
    """What the Top-N recorded of a head's launches, for its levers: the first instance's grid
    and block and its first input's dims (each from the first instance that has it)."""
    insts = head.ext.instances if head.ext is not None else []
    launch = next((i for i in insts if i.grid and i.block), None)
    dims: tuple[int, ...] | None = None
    for i in insts:
        a = next((op for op in i.args if op.role == "input" and op.dims), None)
        if a is not None and a.dims and all(isinstance(d, int) for d in a.dims):
            dims = tuple(d for d in a.dims if isinstance(d, int))
            break
    return LaunchFacts(grid=tuple(launch.grid) if launch and launch.grid else None,
                       block=tuple(launch.block) if launch and launch.block else None, dims=dims)


def _plan_counters(heads: Sequence[TopNEntry], refinements: Refinements | None,
                   round_arch: str | None) -> list[CounterFileJoin]:
    """Settle which head gets which measured kernel (core.measured.joins) and the account of
    every counter file; empty without counters."""
    if refinements is None or refinements.counters is None:
        return []
    from roofline_tui.core.measured.joins import HeadName

    names = [HeadName(h.name, h.short_name, frozenset(
        (tuple(i.grid), tuple(i.block)) for i in (h.ext.instances if h.ext else [])
        if i.grid and i.block)) for h in heads]
    plan = refinements.plan_counters(names, round_arch)
    if plan is None:
        return []
    return [CounterFileJoin(
        file=Path(f.path).name, source=f.source, arch=f.arch, kernels=f.kernels,
        matched=[CounterMatch(kernel=cap_name(j.kernel, 200), entry=j.entry, rule=j.rule)
                 for j in f.matched],
        not_applied=[CounterMiss(kernel=cap_name(u.kernel, 200), entries=u.entries,
                                 reason=u.reason) for u in f.not_applied],
        unmatched=[cap_name(k, 200) for k in f.unmatched[:MAX_UNMATCHED]],
        unmatched_count=len(f.unmatched),
        **({"arch_warning": f.arch_warning} if f.arch_warning else {}))
        for f in plan.files]


MAX_UNMATCHED = 20
# a part of the step (idle gaps, exposed communication, exposed copies) at or above this share
# of its span is a target beside the kernels
STEP_TARGET_MIN_SHARE = 0.05


def _step_split(topn: TopN) -> tuple[list[StepSplit], str | None, list[StepTarget]]:
    """The Top-N's ``step_time`` as per-step splits, and the parts large enough to work on."""
    block = topn.ext.step_time if topn.ext is not None else None
    if block is None:
        return [], None, []
    from roofline_tui.core.lever_table import STEP_LEVERS

    splits: list[StepSplit] = []
    targets: list[StepTarget] = []
    for g in block.groups:
        n = max(g.steps, 1)
        per = {f: getattr(g, f"{f}_us") / n / 1000.0 for f in (
            "span", "busy", "idle", "compute", "comm", "comm_exposed", "copy", "copy_exposed")}
        span = g.span_us
        split = StepSplit(regime=g.regime, steps=g.steps,
                          **{f"{f}_ms": rounded(v, 6) or 0.0 for f, v in per.items()},
                          largest_gap_ms=rounded(g.largest_gap_us / 1000.0, 6) or 0.0,
                          idle_share=g.idle_us / span, comm_exposed_share=g.comm_exposed_us / span,
                          copy_exposed_share=g.copy_exposed_us / span)
        splits.append(split)
        where = (f"each {g.regime} step" if g.regime and g.steps else "the trace's GPU span")
        for kind, share, what in (
                ("idle gaps", split.idle_share, "the GPU is idle"),
                ("exposed communication", split.comm_exposed_share,
                 "communication with no compute beside it takes"),
                ("memcpy", split.copy_exposed_share, "copies with nothing beside them take")):
            if share < STEP_TARGET_MIN_SHARE:
                continue
            detail = (f"; its longest gap {units.millis(split.largest_gap_ms)}"
                      if kind == "idle gaps" and split.largest_gap_ms else "")
            side = ": host side first" if kind == "idle gaps" else ""
            targets.append(StepTarget(
                kind=kind, regime=g.regime, share_of_span=share,
                expected_e2e_gain_pct=rounded(share * 100.0, 2) or 0.0,
                line=(f"{what} {share:.0%} of {where} ({units.millis(per['span'])} span"
                      f"{detail}){side}"),
                levers=list(STEP_LEVERS[kind])))
    targets.sort(key=lambda t: -t.expected_e2e_gain_pct)
    note = block.nested
    if block.basis == "trace":
        note = ("no serving steps: the whole trace on the device is one span, so idle time "
                "includes the gaps between profiled regions")
    return splits, note, targets


def _ceilings(peaks: Peaks) -> dict[str, tuple[float, float]]:
    """(measured ceiling, data sheet) per dtype whose compute roof is a measured ceiling."""
    return {d: (peaks.flops[d], peaks.flops_data_sheet[d]) for d in peaks.flops
            if is_measured_roof(peaks, d) and d in peaks.flops_data_sheet}


def analyze(inputs: RoundInputs, options: AnalyzeOptions | None = None) -> Artifact:
    options = options or AnalyzeOptions()
    peaks = inputs.peaks
    env = inputs.env
    workload = inputs.workload or (env.workload if env else None) or Workload()
    errors: list[Any] = list(inputs.problems) + list(peaks.problems) + list(options.problems)
    topn = inputs.topn or TopN()
    w, a, kv, dtype_notes = _dtypes(inputs.model, env)
    parallel = resolve_tensor_parallel(workload, topn, inputs.model)
    op_workload = (workload.model_copy(update={"tp": parallel.size})
                   if parallel is not None and parallel.size and workload.tp is None else workload)
    sh = _Shared(topn=topn, peaks=peaks, model=inputs.model, workload=op_workload,
                 weight_dtype=w, activation_dtype=a, kv_dtype=kv, dtype_notes=dtype_notes,
                 options=options, neighbours=_neighbours(topn, inputs.model), refinements=inputs.refinements,
                 parallel=parallel)
    settings = options.settings()
    heads = _unique_short_names(select_heads(topn, settings.head_threshold_pct,
                                             settings.max_heads))
    joins = _plan_counters(heads, inputs.refinements, peaks.gfx or (env.gfx if env else None))
    entries, degraded, failed = _analyze_heads(heads, sh)
    sh.raised = raised_roofs(entries, _ceilings(peaks), M.ISOLATED_NOISE)
    if sh.raised:  # a kernel beat a measured ceiling: judge the run again on the raised roof
        entries, degraded, failed = _analyze_heads(heads, sh)
    errors += failed
    annotate_evidence(entries, datasheet_roof=lambda e: _datasheet_roof(e, peaks))
    attach_levers(entries, {h.short_name: _launch_facts(h) for h in heads},
                  peaks.gfx or (env.gfx if env else None))
    by_pct, by_gain = rank_entries(entries)
    # the artifact's stage is the highest any head reached; each entry keeps its own
    stages: list[Stage] = [e.stage or "A" for e in entries]
    stage: Stage = max(stages, default="A")
    peaks_info = _peaks_info(peaks)
    wl_known = WorkloadInfo(**{k: v for k, v in workload.model_dump().items() if v is not None})
    artifact = Artifact(
        skill="roofline",
        skill_version=SKILL_VERSION,
        gfx=peaks.gfx or (env.gfx if env else None),
        peaks=peaks_info,
        stage=stage,
        round=inputs.round_name,
        workload=wl_known,
        total_gpu_time_ms=topn.total_gpu_time_ms,
        decode_steps_in_window=(topn.serving.n_decode_steps if topn.serving else None),
        target_eff_source=options.target_eff_source or "spec §7 priors",
        inputs=InputsUsed.model_validate(inputs.inputs_used),
        entries=entries,
        ranking_by_pct=by_pct,
        ranking_by_expected_gain=by_gain,
        degraded=degraded,
        skill_errors=errors,
        doctrine_note=DOCTRINE,
    ).state_settings(settings, chosen=len(heads), rows=topn.rows)
    _attach_round_level(artifact, topn, joins)
    from roofline_tui.core.reading import next_target  # the one reading every renderer prints

    artifact.next_target = next_target(artifact)  # renderers read it (reading.next_target_of)
    return artifact


def _attach_round_level(artifact: Artifact, topn: TopN, joins: list[CounterFileJoin]) -> None:
    """What the artifact says of the round as a whole: the profile's notes, the step split and
    its targets, the counter files' joins, the missing regime, the graph replay."""
    if topn.notes:
        artifact.profile_notes = list(topn.notes)
    splits, split_note, step_targets = _step_split(topn)
    if splits:
        artifact.step_split = splits
        artifact.step_targets = step_targets
        if split_note:
            artifact.step_split_note = split_note
    if joins:
        from roofline_tui.core.reading import counter_join_line

        artifact.counter_joins = joins
        artifact.profile_notes += [counter_join_line(j) for j in joins]
    no_regime = topn.ext.regime if topn.ext is not None else None
    if no_regime is not None and no_regime.regime is None and (
            no_regime.evidence not in artifact.profile_notes):
        artifact.profile_notes.append(no_regime.evidence)  # said once, for every entry
    if topn.graph_replay is not None:
        artifact.graph_replay = GraphReplayInfo.model_validate(
            topn.graph_replay.model_dump(exclude_none=True))


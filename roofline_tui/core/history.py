"""Rounds of one optimisation run: movement, predicted vs actual, contradictions (spec §8.3–§8.4).

A profile directory holds one ``round_*`` directory per round. :func:`load_history` discovers them
(numeric rounds in numeric order, named rounds such as ``round_tuning`` after them by the
modification time of their Top-N), loads each round's Top-N and its artifact (the stored
``profile_roofline.json`` when it is at least as new as the Top-N — that is what was *predicted*
at the time — otherwise an in-memory analysis with the spec priors), and compares them.

A kernel is matched across rounds by ``(name, regime)``; the regime is the one the analysis uses
(the artifact entry's, or :func:`roofline_tui.core.analyze.pick_regime` for kernels below the head
bar). The same name under another regime is reported as *regime changed* and is not compared: a
decode launch and a prefill launch do different work.

Two rounds are compared only when they ran on the same hardware (``gfx``, ``product``) and the
same workload (``isl``, ``osl``, ``conc``, ``tp``); otherwise the reason is stated and nothing is
compared.

Optional per-round serving metrics, ``round_<R>/serving_metrics.json`` (format
``serving-metrics-v1``)::

    {"schema": "serving-metrics-v1",
     "output_throughput_tok_s": 10000.0,   # required: output tokens per second over the run
     "tpot_ms": 6.4,                         # optional: mean time per output token
     "ttft_ms": 120.0}                       # optional: mean time to first token (shown only)

The measured end-to-end delta of a round pair is taken from throughput when both rounds have it,
else from TPOT, else from the Top-N's ``total_gpu_time_ms`` (a GPU-time reduction, the same
definition as ``expected_e2e_gain_pct``). Positive means faster.

Noise bands (spec §8.3): an isolated change with ``max(s, 1/s) < 1.034`` and an e2e change under
0.5 % are noise and labelled so. A contradiction (spec §8.4) is a measured isolated speedup above
the earlier round's ``attainable_speedup`` by more than the isolated band.

Everything here is pure with respect to the rounds it reads: nothing is written.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from roofline_tui.core.analyze import AnalyzeOptions, per_launch_time, pick_regime
from roofline_tui.core.artifact import (
    Artifact,
    Entry,
    MovementE2E,
    MovementRow,
    PredictedVsActual,
    RoundContext,
    RoundMovement,
)
from roofline_tui.core.inputs import TopN, load_env_report, load_topn
from roofline_tui.core.metrics import E2E_NOISE_PCT, ISOLATED_NOISE
from roofline_tui.core.round import (
    ARTIFACT_JSON,
    TOPN_NAME,
    RoundResult,
    RoundSources,
    analyze_round,
    find_env_report,
    load_stored_artifact,
    round_label,
)
from roofline_tui.core.store import ReadProblem, finite_or_none, read_json
from roofline_tui.core.textsafe import md_cell

SERVING_NAME = "serving_metrics.json"
SERVING_SCHEMA = "serving-metrics-v1"
WORKLOAD_KEYS = ("isl", "osl", "conc", "tp")

# Closed set of isolated verdicts for one predicted-vs-actual pair.
VERDICTS = ("noise", "regression", "contradiction", "at_ceiling", "under_ceiling", "unpredicted")
E2E_VERDICTS = ("noise", "gain", "loss", "unknown")


# --------------------------------------------------------------------------- models


class ServingMetrics(BaseModel):
    """``serving_metrics.json``, format ``serving-metrics-v1`` (see the module docstring)."""

    output_throughput_tok_s: float | None = None
    tpot_ms: float | None = None
    ttft_ms: float | None = None


class KernelObs(BaseModel):
    """One kernel in one round, in the regime the analysis uses."""

    name: str
    short_name: str
    regime: str
    t_ms: float | None = None
    t_ms_source: str = ""
    pct_gpu_time: float | None = None
    is_head: bool = False
    op_class: str | None = None
    roofline_pct: float | None = None
    suspect: bool = False
    target_eff: float | None = None
    attainable_speedup: float | None = None
    expected_e2e_gain_pct: float | None = None
    headroom_class: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.regime)


class RoundSnapshot(BaseModel):
    """What one round holds, loaded and ready to compare."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str | int
    dir: str
    numeric: bool
    mtime_iso: str | None = None
    gfx: str | None = None
    product: str | None = None
    workload: dict[str, int] = Field(default_factory=dict)
    stage: str | None = None
    total_gpu_time_ms: float | None = None
    serving: ServingMetrics | None = None
    heads: list[str] = Field(default_factory=list)  # kernel names in the artifact, by pct
    kernels: list[KernelObs] = Field(default_factory=list)
    artifact_source: str = "none"  # file | analyzed | given | none
    topn_found: bool = False
    problems: list[str] = Field(default_factory=list)
    artifact: Artifact | None = Field(default=None, exclude=True)

    def kernel(self, name: str, regime: str | None = None) -> KernelObs | None:
        for k in self.kernels:
            if k.name == name and (regime is None or k.regime == regime):
                return k
        return None

    @property
    def is_round0(self) -> bool:
        return self.label == 0


class Movement(BaseModel):
    """One kernel's per-launch time and share in this round against a reference round."""

    name: str
    short_name: str
    regime: str
    ref_round: str | int
    t_ms_ref: float | None = None
    t_ms: float | None = None
    delta_t_pct: float | None = None  # (t / t_ref − 1) × 100: positive = slower
    pct_gpu_time_ref: float | None = None
    pct_gpu_time: float | None = None


class RoundStep(BaseModel):
    """One round against the round before it."""

    before: str | int
    after: str | int
    comparable: bool
    not_compared_reason: str | None = None
    e2e_delta_pct: float | None = None
    e2e_basis: str | None = None
    e2e_noise: bool | None = None
    e2e_before: float | None = None
    e2e_after: float | None = None
    expected_e2e_gain_pct_sum: float | None = None  # over kernels that moved beyond the band
    appeared: list[str] = Field(default_factory=list)
    vanished: list[str] = Field(default_factory=list)
    regime_changed: list[str] = Field(default_factory=list)  # "name: decode → prefill"
    heads_entered: list[str] = Field(default_factory=list)
    heads_left: list[str] = Field(default_factory=list)
    movements: list[Movement] = Field(default_factory=list)
    pairs: list[PredictedVsActual] = Field(default_factory=list)


class RoundHistory(BaseModel):
    profile_dir: str
    rounds: list[RoundSnapshot] = Field(default_factory=list)
    baseline: str | int | None = None
    baseline_is_round0: bool = False
    steps: list[RoundStep] = Field(default_factory=list)  # steps[i]: rounds[i] → rounds[i+1]
    baseline_comparable: dict[str, str | None] = Field(default_factory=dict)  # label → reason
    problems: list[str] = Field(default_factory=list)

    def round(self, label: str | int) -> RoundSnapshot | None:
        for r in self.rounds:
            if r.label == label or str(r.label) == str(label):
                return r
        return None

    def index(self, label: str | int) -> int | None:
        for i, r in enumerate(self.rounds):
            if r.label == label or str(r.label) == str(label):
                return i
        return None

    def step_into(self, label: str | int) -> RoundStep | None:
        i = self.index(label)
        return self.steps[i - 1] if i else None

    def pairs(self) -> list[PredictedVsActual]:
        return [p for s in self.steps for p in s.pairs]


class RoundSummaryRow(BaseModel):
    """One row of the dashboard's Rounds view."""

    label: str | int
    time_iso: str | None
    stage: str | None
    n_heads: int
    heads: list[str]
    total_gpu_time_ms: float | None
    delta_total_pct_vs_prev: float | None  # GPU time change, positive = slower
    output_throughput_tok_s: float | None
    e2e_delta_pct_vs_prev: float | None  # positive = faster
    e2e_basis: str | None
    e2e_noise: bool | None
    comparable_with_prev: bool | None
    not_compared_reason: str | None
    contradictions: int
    artifact_source: str
    problems: int


class SeriesPoint(BaseModel):
    label: str | int
    present: bool
    is_head: bool = False
    t_ms: float | None = None
    pct_gpu_time: float | None = None
    delta_t_pct_vs_prev: float | None = None
    delta_t_pct_vs_baseline: float | None = None
    attainable_speedup: float | None = None  # this round's prediction for the next round
    expected_e2e_gain_pct: float | None = None
    headroom_class: str | None = None
    measured_speedup_vs_prev: float | None = None
    predicted_speedup_prev: float | None = None
    verdict: str | None = None
    contradiction: bool = False
    comparable_with_prev: bool | None = None


class KernelSeries(BaseModel):
    """One kernel across rounds, for the History tab (table and sparkline)."""

    name: str
    short_name: str
    regime: str
    op_class: str | None = None
    points: list[SeriesPoint] = Field(default_factory=list)

    def sparkline_values(self) -> list[float | None]:
        return [p.t_ms for p in self.points]


# --------------------------------------------------------------------------- discovery


_NUMERIC = re.compile(r"^round_(\d+)$")


def _topn_mtime(d: Path) -> float:
    for p in (d / TOPN_NAME, d / ARTIFACT_JSON, d):
        try:
            return p.stat().st_mtime
        except OSError:
            continue
    return 0.0


def order_round_dirs(dirs: Iterable[Path]) -> list[Path]:
    """Numeric rounds in numeric order, then named rounds by Top-N mtime (the folder's own mtime
    changes whenever an artifact is written, which would reorder rounds); name breaks ties."""
    dirs = list(dirs)
    numeric = sorted((c for c in dirs if _NUMERIC.match(c.name)),
                     key=lambda c: (int(c.name[6:]), c.name))
    named = sorted((c for c in dirs if not _NUMERIC.match(c.name)),
                   key=lambda c: (_topn_mtime(c), c.name))
    return numeric + named


def discover_rounds(profile_dir: Path) -> list[Path]:
    """``round_*`` directories: numeric in numeric order, then named ones by Top-N mtime."""
    profile_dir = Path(profile_dir)
    try:
        children = [c for c in profile_dir.iterdir() if c.is_dir() and c.name.startswith("round_")]
    except OSError:
        return []
    return order_round_dirs(children)


# --------------------------------------------------------------------------- loading


def load_serving_metrics(round_dir: Path) -> tuple[ServingMetrics | None, list[str]]:
    path = Path(round_dir) / SERVING_NAME
    if not path.exists():
        return None, []
    try:
        data = read_json(path)
    except ReadProblem as exc:
        return None, [str(exc)]
    if not isinstance(data, dict):
        return None, [f"{SERVING_NAME}: expected a JSON object"]
    problems = []
    schema = data.get("schema")
    if schema is not None and schema != SERVING_SCHEMA:
        problems.append(f"{SERVING_NAME}: schema {md_cell(schema, limit=40)} is not "
                        f"{SERVING_SCHEMA}; read anyway")
    vals: dict[str, float | None] = {}
    for key in ("output_throughput_tok_s", "tpot_ms", "ttft_ms"):
        v = finite_or_none(data.get(key))
        if v is not None and v <= 0:
            problems.append(f"{SERVING_NAME}: {key} must be > 0; ignored")
            v = None
        elif data.get(key) is not None and v is None:
            problems.append(f"{SERVING_NAME}: {key} is not a finite number; ignored")
        vals[key] = v
    if all(v is None for v in vals.values()):
        return None, problems + [f"{SERVING_NAME}: no usable metric"]
    return ServingMetrics(**vals), problems


def _stored_artifact(round_dir: Path) -> tuple[Artifact | None, str | None]:
    path = round_dir / ARTIFACT_JSON
    if not path.is_file():
        return None, None
    topn = round_dir / TOPN_NAME
    try:
        if topn.is_file() and topn.stat().st_mtime > path.stat().st_mtime:
            return None, f"{ARTIFACT_JSON} is older than {TOPN_NAME}: re-analysed"
    except OSError as exc:
        return None, f"{ARTIFACT_JSON} unreadable ({type(exc).__name__}): re-analysed"
    artifact, why = load_stored_artifact(round_dir)
    return artifact, (f"{why}: re-analysed" if why else None)


def _prior_options(options: AnalyzeOptions | None) -> AnalyzeOptions:
    """Options for re-analysing an earlier round: what it would have predicted, i.e. no
    calibrated overrides (those are learnt from these very rounds)."""
    if options is None:
        return AnalyzeOptions()
    return replace(options, target_eff_overrides={}, target_eff_source=None)


def _workload(art: Artifact | None, env_wl: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    wl = dict(env_wl)
    if art is not None:
        wl.update({k: v for k, v in art.workload.model_dump().items() if v is not None})
    for k in WORKLOAD_KEYS:
        v = wl.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = int(v)
    return out


def _obs_from_entry(e: Entry) -> KernelObs:
    return KernelObs(
        name=e.name, short_name=e.short_name, regime=e.regime or "decode", t_ms=e.t_ms,
        t_ms_source="artifact", pct_gpu_time=e.pct_gpu_time, is_head=True, op_class=e.op_class,
        roofline_pct=e.roofline_pct, suspect=e.suspect, target_eff=e.target_eff,
        attainable_speedup=e.attainable_speedup, expected_e2e_gain_pct=e.expected_e2e_gain_pct,
        headroom_class=e.headroom_class,
    )


def _kernels(topn: TopN | None, art: Artifact | None, problems: list[str]) -> list[KernelObs]:
    heads: dict[str, Entry] = {}
    if art is not None:
        for e in art.entries:
            heads.setdefault(e.name, e)
    out: list[KernelObs] = []
    seen: set[str] = set()
    if topn is not None:
        for t in topn.entries:
            head = heads.get(t.name)
            regime = head.regime if head is not None and head.regime else pick_regime(t, topn)[0]
            if t.name in seen:
                problems.append(f"kernel {md_cell(t.name, limit=60)} appears twice in the Top-N; "
                                "the first row is used")
                continue
            t_ms, why = per_launch_time(t, regime)
            if head is not None:
                obs = _obs_from_entry(head)
                obs.regime = regime
                obs.t_ms, obs.t_ms_source = t_ms if t_ms is not None else head.t_ms, why
                obs.pct_gpu_time = t.pct_gpu_time
            else:
                obs = KernelObs(name=t.name, short_name=t.short_name, regime=regime, t_ms=t_ms,
                                t_ms_source=why, pct_gpu_time=t.pct_gpu_time)
            seen.add(t.name)
            out.append(obs)
    # An artifact without a Top-N (e.g. an upstream artifact on its own): its heads only.
    for e in heads.values():
        if e.name not in {k.name for k in out}:
            out.append(_obs_from_entry(e))
    return out


def load_round(
    round_dir: Path,
    sources: RoundSources | None = None,
    options: AnalyzeOptions | None = None,
    artifact: Artifact | None = None,
) -> RoundSnapshot:
    """Load one round. ``artifact`` (e.g. the one being written right now) is used as given."""
    round_dir = Path(round_dir)
    problems: list[str] = []
    topn_path = round_dir / TOPN_NAME
    topn, topn_problems, _incomplete = load_topn(topn_path)
    topn_found = topn is not None
    if topn_path.exists() and topn is None:
        problems += topn_problems
    source = "given" if artifact is not None else "none"
    if artifact is None:
        artifact, why = _stored_artifact(round_dir)
        if artifact is not None:
            source = "file"
        elif topn_found:
            if why:
                problems.append(why)
            artifact = analyze_round(round_dir, sources, _prior_options(options)).artifact
            source = "analyzed"
    env_gfx = env_product = None
    env_wl: dict[str, Any] = {}
    env_path = (sources.env if sources and sources.env else None) or find_env_report(round_dir)
    if env_path is not None:
        env, _ = load_env_report(env_path)
        if env is not None:
            env_gfx, env_product = env.gfx, env.product
            env_wl = env.workload.model_dump()
    if sources is not None and sources.workload is not None:
        env_wl.update({k: v for k, v in sources.workload.model_dump().items() if v is not None})
    serving, serving_problems = load_serving_metrics(round_dir)
    problems += serving_problems
    total = topn.total_gpu_time_ms if topn is not None else None
    if total is None:
        total = finite_or_none(artifact.total_gpu_time_ms) if artifact is not None else None
    label = round_label(round_dir)
    mtime = _topn_mtime(round_dir)
    kernels = _kernels(topn, artifact, problems)
    heads = [e.name for e in sorted(artifact.entries, key=lambda e: -(e.pct_gpu_time or 0.0))] \
        if artifact is not None else []
    return RoundSnapshot(
        label=label if label is not None else round_dir.name,
        dir=str(round_dir),
        numeric=bool(_NUMERIC.match(round_dir.name)),
        mtime_iso=(datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds")
                   if mtime else None),
        gfx=env_gfx or (artifact.gfx if artifact is not None else None),
        product=env_product or (artifact.peaks.product if artifact is not None else None),
        workload=_workload(artifact, env_wl),
        stage=artifact.stage if artifact is not None else None,
        total_gpu_time_ms=total,
        serving=serving,
        heads=heads,
        kernels=kernels,
        artifact_source=source,
        topn_found=topn_found,
        problems=problems,
        artifact=artifact,
    )


# --------------------------------------------------------------------------- comparing


def comparability(a: RoundSnapshot, b: RoundSnapshot) -> str | None:
    """``None`` when the rounds may be compared, else why not (hardware or workload differ)."""
    reasons = []
    for field, what in (("gfx", "hardware"), ("product", "hardware")):
        va, vb = getattr(a, field), getattr(b, field)
        if va and vb and str(va).lower() != str(vb).lower():
            reasons.append(f"different {what}: {field} {va} in round {a.label} vs {vb} in "
                           f"round {b.label}")
    for k in WORKLOAD_KEYS:
        va, vb = a.workload.get(k), b.workload.get(k)
        if va is not None and vb is not None and va != vb:
            reasons.append(f"different workload: {k} {va} in round {a.label} vs {vb} in "
                           f"round {b.label}")
    return "; ".join(reasons) or None


def speedup_is_noise(speedup: float) -> bool:
    return max(speedup, 1.0 / speedup) < 1.0 + ISOLATED_NOISE


def e2e_is_noise(delta_pct: float) -> bool:
    return abs(delta_pct) < E2E_NOISE_PCT


def e2e_delta(a: RoundSnapshot, b: RoundSnapshot) -> tuple[float | None, str | None,
                                                           float | None, float | None]:
    """Measured e2e change from ``a`` to ``b`` in percent (positive = faster), its basis, and
    the two raw values."""
    sa, sb = a.serving, b.serving
    if sa and sb and sa.output_throughput_tok_s and sb.output_throughput_tok_s:
        x, y = sa.output_throughput_tok_s, sb.output_throughput_tok_s
        return (y / x - 1.0) * 100.0, "output throughput (serving_metrics.json)", x, y
    if sa and sb and sa.tpot_ms and sb.tpot_ms:
        x, y = sa.tpot_ms, sb.tpot_ms
        return (x / y - 1.0) * 100.0, "TPOT (serving_metrics.json)", x, y
    if a.total_gpu_time_ms and b.total_gpu_time_ms:
        x, y = a.total_gpu_time_ms, b.total_gpu_time_ms
        return (1.0 - y / x) * 100.0, "total GPU time (profile_topN.json)", x, y
    return None, None, None, None


def pair_id(before: RoundSnapshot, after: RoundSnapshot, k0: KernelObs, k1: KernelObs,
            context: str = "") -> str:
    """A stable identifier of a predicted-vs-actual pair: same measurement → same id."""
    text = "\x1f".join([
        context, k0.name, k0.regime, str(before.label), str(after.label),
        f"{k0.t_ms:.6g}", f"{k1.t_ms:.6g}",
        "-" if k0.attainable_speedup is None else f"{k0.attainable_speedup:.4g}",
    ])
    return "pv-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def _run_context(r: RoundSnapshot) -> str:
    wl = ",".join(f"{k}={r.workload[k]}" for k in WORKLOAD_KEYS if k in r.workload)
    return f"{r.gfx or '?'}/{r.product or '?'}/{wl}"


def _isolated_verdict(m: float, predicted: float | None) -> tuple[str, str]:
    band = 1.0 + ISOLATED_NOISE
    if speedup_is_noise(m):
        return "noise", (f"{m:.3f}× is inside the ±{ISOLATED_NOISE * 100:.1f}% isolated noise band"
                         ": not a real change")
    if m < 1.0:
        return "regression", f"{1 / m:.3f}× slower, beyond the isolated noise band"
    if predicted is None:
        return "unpredicted", f"{m:.3f}× faster; the earlier round made no prediction"
    if m > predicted * band:
        return "contradiction", (
            f"measured {m:.3f}× beats the predicted attainable {predicted:.3f}× by more than the "
            f"{ISOLATED_NOISE * 100:.1f}% isolated band: the byte/FLOP model or target_eff is "
            "wrong for this kernel; prefer the measurement")
    if m >= predicted / band:
        return "at_ceiling", (f"measured {m:.3f}× reached the predicted {predicted:.3f}× "
                              f"(within the {ISOLATED_NOISE * 100:.1f}% band): prediction held")
    return "under_ceiling", (f"measured {m:.3f}× is under the predicted {predicted:.3f}× ceiling: "
                             "consistent, headroom left")


def _e2e_verdict(delta: float | None) -> str:
    if delta is None:
        return "unknown"
    if e2e_is_noise(delta):
        return "noise"
    return "gain" if delta > 0 else "loss"


def compare_rounds(a: RoundSnapshot, b: RoundSnapshot) -> RoundStep:
    """Round ``b`` against the round ``a`` before it."""
    reason = comparability(a, b)
    step = RoundStep(before=a.label, after=b.label, comparable=reason is None,
                     not_compared_reason=reason)
    if reason is not None:
        return step
    if not a.kernels or not b.kernels:
        step.comparable = False
        empty = a if not a.kernels else b
        step.not_compared_reason = f"round {empty.label} has no kernels (no Top-N or artifact)"
        return step
    delta, basis, x, y = e2e_delta(a, b)
    step.e2e_delta_pct, step.e2e_basis, step.e2e_before, step.e2e_after = delta, basis, x, y
    step.e2e_noise = None if delta is None else e2e_is_noise(delta)
    before = {k.key: k for k in a.kernels}
    after = {k.key: k for k in b.kernels}
    names_before = {k.name: k for k in a.kernels}
    names_after = {k.name: k for k in b.kernels}
    for key, k1 in after.items():
        if key in before:
            continue
        k0 = names_before.get(k1.name)
        if k0 is not None:
            step.regime_changed.append(f"{k1.name}: {k0.regime} → {k1.regime}")
        else:
            step.appeared.append(k1.name)
    step.vanished = [k0.name for key, k0 in before.items()
                     if key not in after and k0.name not in names_after]
    step.heads_entered = [n for n in b.heads if n not in a.heads]
    step.heads_left = [n for n in a.heads if n not in b.heads]
    ctx = _run_context(a)
    pairs: list[PredictedVsActual] = []
    for key, k1 in after.items():
        k0 = before.get(key)
        if k0 is None:
            continue
        dt = None
        if k0.t_ms and k1.t_ms:
            dt = (k1.t_ms / k0.t_ms - 1.0) * 100.0
        step.movements.append(Movement(
            name=k1.name, short_name=k1.short_name, regime=k1.regime, ref_round=a.label,
            t_ms_ref=k0.t_ms, t_ms=k1.t_ms, delta_t_pct=dt,
            pct_gpu_time_ref=k0.pct_gpu_time, pct_gpu_time=k1.pct_gpu_time))
        if not (k0.t_ms and k1.t_ms) or math.isclose(k0.t_ms, k1.t_ms, rel_tol=1e-9):
            continue
        m = k0.t_ms / k1.t_ms
        verdict, text = _isolated_verdict(m, k0.attainable_speedup)
        after_pct, after_basis = None, None
        if k1.roofline_pct is not None and not k1.suspect and k1.is_head:
            after_pct, after_basis = k1.roofline_pct, f"round {b.label} artifact"
        elif k0.roofline_pct is not None and not k0.suspect:
            after_pct = k0.roofline_pct * m
            after_basis = f"round {a.label} roofline_pct × measured speedup"
        pv = PredictedVsActual(
            pair_id=pair_id(a, b, k0, k1, ctx), name=k1.name, short_name=k1.short_name,
            regime=k1.regime, op_class=k0.op_class or k1.op_class, round_before=a.label,
            round_after=b.label, t_ms_before=k0.t_ms, t_ms_after=k1.t_ms, measured_speedup=m,
            isolated_noise=verdict == "noise", predicted_speedup=k0.attainable_speedup,
            predicted_e2e_gain_pct=k0.expected_e2e_gain_pct,
            headroom_class_before=k0.headroom_class, target_eff_before=k0.target_eff,
            roofline_pct_before=k0.roofline_pct, roofline_pct_after=after_pct,
            roofline_pct_after_basis=after_basis, e2e_delta_pct=delta, e2e_basis=basis,
            e2e_noise=step.e2e_noise, e2e_verdict=_e2e_verdict(delta),
            contradiction=verdict == "contradiction",
            contradiction_detail=text if verdict == "contradiction" else None,
            verdict=verdict, verdict_text=text)
        pairs.append(pv)
    real = [p for p in pairs if not p.isolated_noise]
    for p in pairs:
        p.kernels_moved_in_pair = len(real)
    gains = [p.predicted_e2e_gain_pct for p in real
             if p.measured_speedup > 1.0 and p.predicted_e2e_gain_pct is not None]
    step.expected_e2e_gain_pct_sum = sum(gains) if gains else None
    step.pairs = sorted(pairs, key=lambda p: (p.isolated_noise, -(p.measured_speedup), p.name))
    step.movements.sort(key=lambda mv: (-(mv.pct_gpu_time or 0.0), mv.name))
    return step


def movement_against(ref: RoundSnapshot, cur: RoundSnapshot) -> dict[tuple[str, str], Movement]:
    """Per kernel key of ``cur``: its movement against ``ref`` (matched name and regime)."""
    ref_k = {k.key: k for k in ref.kernels}
    out = {}
    for k in cur.kernels:
        r = ref_k.get(k.key)
        if r is None:
            continue
        dt = (k.t_ms / r.t_ms - 1.0) * 100.0 if (k.t_ms and r.t_ms) else None
        out[k.key] = Movement(name=k.name, short_name=k.short_name, regime=k.regime,
                              ref_round=ref.label, t_ms_ref=r.t_ms, t_ms=k.t_ms, delta_t_pct=dt,
                              pct_gpu_time_ref=r.pct_gpu_time, pct_gpu_time=k.pct_gpu_time)
    return out


def build_history(profile_dir: Path, rounds: list[RoundSnapshot],
                  problems: list[str] | None = None) -> RoundHistory:
    h = RoundHistory(profile_dir=str(profile_dir), rounds=rounds, problems=list(problems or []))
    if not rounds:
        h.problems.append(f"no round_* directory with a {TOPN_NAME} or {ARTIFACT_JSON}")
        return h
    base = rounds[0]
    h.baseline, h.baseline_is_round0 = base.label, base.is_round0
    if not base.is_round0:
        h.problems.append(f"round 0 is missing: the baseline is round {base.label}, the earliest "
                          "round found")
    for r in rounds[1:]:
        h.baseline_comparable[str(r.label)] = comparability(base, r)
    h.steps = [compare_rounds(a, b) for a, b in zip(rounds, rounds[1:], strict=False)]
    return h


def load_history(
    profile_dir: Path,
    sources: RoundSources | None = None,
    options: AnalyzeOptions | None = None,
    given: dict[str, Artifact] | None = None,
) -> RoundHistory:
    """Discover and load every round of ``profile_dir`` and compare them.

    ``given`` maps a round directory name (``round_2``) to an artifact to use as is (the
    one being written right now). Never raises for bad input: problems are listed.
    """
    profile_dir = Path(profile_dir)
    given = given or {}
    rounds: list[RoundSnapshot] = []
    problems: list[str] = []
    for d in discover_rounds(profile_dir):
        try:
            snap = load_round(d, sources, options, artifact=given.get(d.name))
        except Exception as exc:  # one bad round never hides the others
            problems.append(f"{d.name}: {type(exc).__name__}: {exc}")
            continue
        if not snap.kernels and not snap.topn_found and snap.artifact is None:
            problems.append(f"{d.name}: no {TOPN_NAME} or {ARTIFACT_JSON}; skipped")
            continue
        rounds.append(snap)
        problems += [f"{d.name}: {p}" for p in snap.problems]
    return build_history(profile_dir, rounds, problems)


# --------------------------------------------------------------------------- dashboard views


def round_summary_rows(h: RoundHistory) -> list[RoundSummaryRow]:
    """One row per round for the Rounds view."""
    rows = []
    for i, r in enumerate(h.rounds):
        step = h.steps[i - 1] if i > 0 else None
        prev = h.rounds[i - 1] if i > 0 else None
        d_total = None
        if step is not None and step.comparable and prev and prev.total_gpu_time_ms \
                and r.total_gpu_time_ms:
            d_total = (r.total_gpu_time_ms / prev.total_gpu_time_ms - 1.0) * 100.0
        rows.append(RoundSummaryRow(
            label=r.label, time_iso=r.mtime_iso, stage=r.stage, n_heads=len(r.heads),
            heads=list(r.heads), total_gpu_time_ms=r.total_gpu_time_ms,
            delta_total_pct_vs_prev=d_total,
            output_throughput_tok_s=r.serving.output_throughput_tok_s if r.serving else None,
            e2e_delta_pct_vs_prev=step.e2e_delta_pct if step else None,
            e2e_basis=step.e2e_basis if step else None,
            e2e_noise=step.e2e_noise if step else None,
            comparable_with_prev=step.comparable if step else None,
            not_compared_reason=step.not_compared_reason if step else None,
            contradictions=sum(p.contradiction for p in step.pairs) if step else 0,
            artifact_source=r.artifact_source, problems=len(r.problems),
        ))
    return rows


def kernel_keys(h: RoundHistory) -> list[tuple[str, str]]:
    """Every (name, regime) seen in any round, heads first, by their largest share."""
    best: dict[tuple[str, str], tuple[bool, float]] = {}
    for r in h.rounds:
        for k in r.kernels:
            was = best.get(k.key, (False, 0.0))
            best[k.key] = (was[0] or k.is_head, max(was[1], k.pct_gpu_time or 0.0))
    return sorted(best, key=lambda key: (not best[key][0], -best[key][1], key))


def kernel_series(h: RoundHistory, name: str, regime: str | None = None) -> KernelSeries | None:
    """Per-launch time and %gpu of one kernel across rounds, with predictions and outcomes.

    ``regime`` defaults to the regime of the kernel's first appearance as a head (else its
    first appearance). One point per round; ``present`` is False where the kernel is absent.
    """
    found = [k for r in h.rounds for k in r.kernels
             if k.name == name and (regime is None or k.regime == regime)]
    if not found:
        return None
    first = next((k for k in found if k.is_head), found[0])
    regime = first.regime
    series = KernelSeries(name=name, short_name=first.short_name, regime=regime,
                          op_class=next((k.op_class for k in found if k.op_class), None))
    base = h.rounds[0]
    for i, r in enumerate(h.rounds):
        k = r.kernel(name, regime)
        step = h.steps[i - 1] if i > 0 else None
        pt = SeriesPoint(label=r.label, present=k is not None,
                         comparable_with_prev=step.comparable if step else None)
        series.points.append(pt)
        if k is None:
            continue
        pt.is_head, pt.t_ms, pt.pct_gpu_time = k.is_head, k.t_ms, k.pct_gpu_time
        pt.attainable_speedup = k.attainable_speedup
        pt.expected_e2e_gain_pct = k.expected_e2e_gain_pct
        pt.headroom_class = k.headroom_class
        if step is not None and step.comparable:
            for mv in step.movements:
                if mv.name == name and mv.regime == regime:
                    pt.delta_t_pct_vs_prev = mv.delta_t_pct
            for p in step.pairs:
                if p.name == name and p.regime == regime:
                    pt.measured_speedup_vs_prev = p.measured_speedup
                    pt.predicted_speedup_prev = p.predicted_speedup
                    pt.verdict, pt.contradiction = p.verdict, p.contradiction
        if i > 0 and h.baseline_comparable.get(str(r.label)) is None:
            b = base.kernel(name, regime)
            if b is not None and b.t_ms and k.t_ms:
                pt.delta_t_pct_vs_baseline = (k.t_ms / b.t_ms - 1.0) * 100.0
    return series


def all_kernel_series(h: RoundHistory) -> list[KernelSeries]:
    out = []
    for name, regime in kernel_keys(h):
        s = kernel_series(h, name, regime)
        if s is not None:
            out.append(s)
    return out


# --------------------------------------------------------------------------- artifact


def round_movement(h: RoundHistory, label: str | int) -> RoundMovement | None:
    """The movement section of round ``label`` as data (``markdown.movement_lines`` renders it):
    for each head (and each kernel that moved beyond the noise band) its per-launch time against
    the previous round and the baseline, and the predicted-vs-actual verdict."""
    i = h.index(label)
    if i is None:
        return None
    cur = h.rounds[i]
    if i == 0:
        return RoundMovement(round=cur.label, baseline_round=h.baseline,
                             baseline_is_round0=h.baseline_is_round0,
                             later_rounds=[r.label for r in h.rounds[1:]])
    prev = h.rounds[i - 1]
    step = h.steps[i - 1]
    base_reason = h.baseline_comparable.get(str(cur.label))
    mv = RoundMovement(round=cur.label, baseline_round=h.baseline,
                       baseline_is_round0=h.baseline_is_round0, prev_round=prev.label,
                       isolated_noise_band=ISOLATED_NOISE, e2e_noise_band_pct=E2E_NOISE_PCT,
                       not_compared_with_baseline=base_reason,
                       not_compared_with_prev=None if step.comparable
                       else step.not_compared_reason or "not comparable")
    if not step.comparable:
        return mv
    if (step.e2e_delta_pct is not None and step.e2e_basis is not None
            and step.e2e_before is not None and step.e2e_after is not None):
        mv.e2e = MovementE2E(basis=step.e2e_basis, before=step.e2e_before,
                             after=step.e2e_after, delta_pct=step.e2e_delta_pct,
                             noise=bool(step.e2e_noise),
                             expected_e2e_gain_pct_sum=step.expected_e2e_gain_pct_sum)
    base = h.rounds[0]
    vs_base = movement_against(base, cur) if base_reason is None else {}
    pairs = {(p.name, p.regime): p for p in step.pairs}
    moves = {(m.name, m.regime): m for m in step.movements}
    keys = [k.key for k in cur.kernels if k.is_head]
    keys += [k.key for k in prev.kernels if k.is_head and k.key not in keys and k.key in moves]
    keys += [key for key, p in pairs.items() if not p.isolated_noise and key not in keys]
    rows: list[MovementRow] = []
    for key in keys:
        m = moves.get(key)
        if m is None:
            continue
        p = pairs.get(key)
        mb = vs_base.get(key)
        rows.append(MovementRow(
            short_name=m.short_name, regime=m.regime, t_ms=m.t_ms,
            delta_t_pct_vs_prev=m.delta_t_pct,
            delta_t_pct_vs_baseline=mb.delta_t_pct if mb else None,
            pct_gpu_time_prev=m.pct_gpu_time_ref, pct_gpu_time=m.pct_gpu_time,
            measured_speedup=p.measured_speedup if p else None,
            predicted_speedup=p.predicted_speedup if p else None,
            verdict=p.verdict if p else "unchanged"))
    mv.kernels = rows
    return mv


def annotate_artifact(artifact: Artifact, h: RoundHistory, label: str | int) -> Artifact:
    """Add round-over-round fields to ``artifact`` (round ``label`` of ``h``), in place.

    Entry fields: ``baseline_round``, ``t_ms_baseline``, ``delta_t_pct_vs_baseline`` and, when the
    baseline is round 0, ``t_ms_round0``, ``delta_t_pct_vs_round0``, ``pct_gpu_time_round0``;
    ``prev_round``, ``t_ms_prev``, ``delta_t_pct_vs_prev``, ``pct_gpu_time_prev`` (and the share
    change in points, ``delta_pct_gpu_time_pts_vs_prev`` / ``…_vs_round0``); for a moved
    kernel ``measured_speedup_vs_prev``, ``predicted_speedup_prev``,
    ``predicted_e2e_gain_pct_prev``, ``isolated_verdict``, ``contradiction`` (+ detail);
    ``regime_changed_from`` / ``new_in_round``. Artifact fields: ``movement`` (the section's
    data) and ``round_history`` (a summary of this round's step).
    """
    i = h.index(label)
    if i is None:
        return artifact
    cur = h.rounds[i]
    artifact.movement = round_movement(h, label)
    ctx = RoundContext(baseline_round=h.baseline, baseline_is_round0=h.baseline_is_round0,
                       rounds=[r.label for r in h.rounds])
    artifact.round_history = ctx
    if i == 0:
        return artifact
    base, prev, step = h.rounds[0], h.rounds[i - 1], h.steps[i - 1]
    base_reason = h.baseline_comparable.get(str(cur.label))
    vs_base = movement_against(base, cur) if base_reason is None else {}
    moves = {(m.name, m.regime): m for m in step.movements} if step.comparable else {}
    pairs = {(p.name, p.regime): p for p in step.pairs}
    prev_names = {k.name: k for k in prev.kernels}
    ctx.prev_round = prev.label
    ctx.comparable_with_prev = step.comparable
    ctx.comparable_with_baseline = base_reason is None
    ctx.not_compared_reason = "; ".join(
        x for x in (step.not_compared_reason, base_reason) if x) or None
    ctx.e2e_delta_pct = step.e2e_delta_pct
    ctx.e2e_basis = step.e2e_basis
    ctx.e2e_noise = step.e2e_noise
    ctx.expected_e2e_gain_pct_sum = step.expected_e2e_gain_pct_sum
    ctx.appeared = step.appeared
    ctx.vanished = step.vanished
    ctx.regime_changed = step.regime_changed
    ctx.heads_entered = step.heads_entered
    ctx.heads_left = step.heads_left
    ctx.contradictions = [p.name for p in step.pairs if p.contradiction]
    ctx.predicted_vs_actual = list(step.pairs)
    for e in artifact.entries:
        key = (e.name, e.regime or "decode")
        mb = vs_base.get(key)
        if mb is not None:
            e.baseline_round = base.label
            e.t_ms_baseline = mb.t_ms_ref
            e.delta_t_pct_vs_baseline = _r(mb.delta_t_pct)
            if base.is_round0:
                e.t_ms_round0 = mb.t_ms_ref
                e.delta_t_pct_vs_round0 = _r(mb.delta_t_pct)
                e.pct_gpu_time_round0 = mb.pct_gpu_time_ref
                e.delta_pct_gpu_time_pts_vs_round0 = _pts(mb)
        mv = moves.get(key)
        if mv is not None:
            e.prev_round = prev.label
            e.t_ms_prev = mv.t_ms_ref
            e.delta_t_pct_vs_prev = _r(mv.delta_t_pct)
            e.pct_gpu_time_prev = mv.pct_gpu_time_ref
            e.delta_pct_gpu_time_pts_vs_prev = _pts(mv)
        elif step.comparable:
            k0 = prev_names.get(e.name)
            if k0 is not None and k0.regime != key[1]:
                e.regime_changed_from = k0.regime
            elif k0 is None:
                e.new_in_round = True
        p = pairs.get(key)
        if p is not None:
            e.measured_speedup_vs_prev = _r(p.measured_speedup, 4)
            e.predicted_speedup_prev = p.predicted_speedup
            e.predicted_e2e_gain_pct_prev = p.predicted_e2e_gain_pct
            e.isolated_verdict = p.verdict
            e.contradiction = p.contradiction
            if p.contradiction:
                e.contradiction_detail = p.contradiction_detail
                e.notes = (e.notes or "") + f" Contradiction (spec §8.4): {p.contradiction_detail}."
    return artifact


def _r(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


def _pts(mv: Movement) -> float | None:
    """Change of the GPU-time share in percentage points."""
    if mv.pct_gpu_time is None or mv.pct_gpu_time_ref is None:
        return None
    return round(mv.pct_gpu_time - mv.pct_gpu_time_ref, 2)


def annotate_round(artifact: Artifact, round_dir: Path, sources: RoundSources | None = None,
                   options: AnalyzeOptions | None = None) -> tuple[Artifact, RoundHistory | None]:
    """Add movement to the artifact of ``round_dir`` when sibling rounds exist. Never raises:
    a failure is appended to ``skill_errors`` and the artifact is returned unchanged."""
    round_dir = Path(round_dir)
    try:
        profile_dir = round_dir.resolve().parent
        siblings = discover_rounds(profile_dir)
        if round_dir.resolve() not in [s.resolve() for s in siblings] or len(siblings) < 2:
            return artifact, None
        h = load_history(profile_dir, sources, options, given={round_dir.resolve().name: artifact})
        label = round_label(round_dir)
        if h.index(label if label is not None else round_dir.name) is None:
            return artifact, h
        return annotate_artifact(artifact, h, label if label is not None else round_dir.name), h
    except Exception as exc:  # L5: history never fails the analysis
        artifact.skill_errors.append(f"round-over-round movement: {type(exc).__name__}: {exc}")
        return artifact, None



def analyze_round_with_history(
    round_dir: Path, sources: RoundSources | None = None, options: AnalyzeOptions | None = None
) -> RoundResult:
    """``analyze_round`` plus round-over-round movement when sibling rounds exist: what both
    ``roofline analyze`` and the dashboard show. ``result.history`` keeps the comparison."""
    result = analyze_round(round_dir, sources, options)
    if result.topn_found:
        result.artifact, result.history = annotate_round(result.artifact, round_dir, sources,
                                                         options)
    return result

"""One round loaded for comparison: its kernels, its prediction and its run (spec §8.3).

:func:`load_round` reads a round's Top-N and its artifact. The artifact is the stored
``profile_roofline.json`` when nothing the round's analysis reads changed after it was written
(:func:`stored_artifact_is_current`) — that is what was *predicted* at the time, and reading it is
cheap; otherwise the round is analysed in memory with the spec priors.

A kernel is identified by ``(name, regime)``; the regime is the one the analysis uses (the
artifact entry's, or :func:`roofline_tui.core.analyze.pick_regime` for kernels below the head
bar).

Optional per-round serving metrics, ``round_<R>/serving_metrics.json`` (format
``serving-metrics-v1``)::

    {"schema": "serving-metrics-v1",
     "output_throughput_tok_s": 10000.0,   # required: output tokens per second over the run
     "tpot_ms": 6.4,                         # optional: mean time per output token
     "ttft_ms": 120.0}                       # optional: mean time to first token (shown only)

Nothing here writes a file.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from roofline_tui.core.analyze import AnalyzeOptions, per_launch_time, pick_regime
from roofline_tui.core.artifact import Artifact, Entry, HeadroomClass, Regime
from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.coerce import number
from roofline_tui.core.inputs import TopN, load_env_report, load_topn
from roofline_tui.core.rounds.analysis import RoundSources, analyze_round, load_stored_artifact
from roofline_tui.core.rounds.fingerprint import Fingerprint, RoundCache, round_fingerprint
from roofline_tui.core.rounds.layout import (
    ARTIFACT_JSON,
    COUNTERS_DIR,
    SERVING_NAME,
    TOPN_NAME,
    find_env_report,
    find_model_config,
    is_numeric_round,
    round_label,
    topn_mtime,
)
from roofline_tui.core.store import ReadProblem, read_json
from roofline_tui.core.textsafe import md_cell

SERVING_SCHEMA = "serving-metrics-v1"
WORKLOAD_KEYS = ("isl", "osl", "conc", "tp")


class ServingMetrics(BaseModel):
    """``serving_metrics.json``, format ``serving-metrics-v1`` (see the module docstring)."""

    output_throughput_tok_s: float | None = None
    tpot_ms: float | None = None
    ttft_ms: float | None = None


class KernelObs(BaseModel):
    """One kernel in one round, in the regime the analysis uses."""

    name: str
    short_name: str
    regime: Regime
    t_ms: float | None = None
    t_ms_source: str = ""
    pct_gpu_time: float | None = None
    is_head: bool = False
    op_class: str | None = None
    prior: str | None = None  # the target_eff prior key when not the op class (attn_prefill)
    roofline_pct: float | None = None
    suspect: bool = False
    target_eff: float | None = None
    attainable_speedup: float | None = None
    expected_e2e_gain_pct: float | None = None
    headroom_class: HeadroomClass | None = None

    @property
    def key(self) -> tuple[str, Regime]:
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
    # kernel() index, rebuilt when ``kernels`` is replaced
    _by_key: dict[tuple[str, str | None], KernelObs] | None = PrivateAttr(default=None)
    _index_of: list[KernelObs] | None = PrivateAttr(default=None)
    _index_len: int = PrivateAttr(default=0)

    def kernel(self, name: str, regime: str | None = None) -> KernelObs | None:
        """The kernel ``name`` (in ``regime``, else its first row); by index, so that looking up
        every kernel of a 10,000-row round stays linear. The index follows ``kernels`` being
        replaced or grown."""
        if (self._by_key is None or self._index_of is not self.kernels
                or self._index_len != len(self.kernels)):
            by_key: dict[tuple[str, str | None], KernelObs] = {}
            for k in self.kernels:
                by_key.setdefault((k.name, k.regime), k)
                by_key.setdefault((k.name, None), k)
            self._by_key, self._index_of, self._index_len = by_key, self.kernels, len(self.kernels)
        return self._by_key.get((name, regime))

    @property
    def is_round0(self) -> bool:
        return self.label == 0


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
        v = number(data.get(key), text=False)
        if v is not None and v <= 0:
            problems.append(f"{SERVING_NAME}: {key} must be > 0; ignored")
            v = None
        elif data.get(key) is not None and v is None:
            problems.append(f"{SERVING_NAME}: {key} is not a finite number; ignored")
        vals[key] = v
    if all(v is None for v in vals.values()):
        return None, problems + [f"{SERVING_NAME}: no usable metric"]
    return ServingMetrics(**vals), problems


def _round_inputs(round_dir: Path) -> list[Path]:
    """The files of the round itself that its analysis reads: the Top-N and the counter files
    of ``counters/`` (shared inputs — env_report, config.json, peaks — are read by the
    comparison directly)."""
    files = [round_dir / TOPN_NAME]
    try:
        files += sorted(p for p in (round_dir / COUNTERS_DIR).iterdir())[:256]
    except OSError:
        pass
    return files


def stored_artifact_is_current(round_dir: Path) -> str | None:
    """``None`` when the stored artifact is at least as new as every input of the round, else
    why it is not (absent, unreadable, or an input changed after it was written)."""
    path = round_dir / ARTIFACT_JSON
    try:
        written = path.stat().st_mtime
    except OSError:
        return f"no {ARTIFACT_JSON}"
    for f in _round_inputs(round_dir):
        try:
            if f.stat().st_mtime > written:
                return f"{ARTIFACT_JSON} is older than {f.name}: re-analysed"
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{f.name} unreadable ({type(exc).__name__}): re-analysed"
    return None


def _stored_artifact(round_dir: Path) -> tuple[Artifact | None, str | None]:
    """The stored artifact when it is current (what was predicted at the time, and cheap to
    read), else ``(None, why)``; ``(None, None)`` when there is none."""
    if not (round_dir / ARTIFACT_JSON).is_file():
        return None, None
    stale = stored_artifact_is_current(round_dir)
    if stale is not None:
        return None, stale
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
        v = number(wl.get(k), text=False)
        if v is not None:
            out[k] = int(v)
    return out


def _obs_from_entry(e: Entry) -> KernelObs:
    return KernelObs(
        name=e.name, short_name=e.short_name, regime=e.regime or "decode", t_ms=e.t_ms,
        t_ms_source="artifact", pct_gpu_time=e.pct_gpu_time, is_head=True, op_class=e.op_class,
        prior=e.prior, roofline_pct=e.roofline_pct, suspect=e.suspect, target_eff=e.target_eff,
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
        with collector_paused():  # one observation per Top-N row, all acyclic
            for t in topn.entries:
                if t.name in seen:
                    problems.append(f"kernel {md_cell(t.name, limit=60)} appears twice in the "
                                    "Top-N; the first row is used")
                    continue
                head = heads.get(t.name)
                regime = head.regime if head is not None and head.regime \
                    else pick_regime(t, topn)[0]
                t_ms, why = per_launch_time(t, regime)
                if head is not None:
                    obs = _obs_from_entry(head)
                    obs.regime = regime
                    obs.t_ms, obs.t_ms_source = t_ms if t_ms is not None else head.t_ms, why
                    obs.pct_gpu_time = t.pct_gpu_time
                else:
                    obs = KernelObs(
                        name=t.name, short_name=t.short_name, regime=regime, t_ms=t_ms,
                        t_ms_source=why, pct_gpu_time=t.pct_gpu_time)
                seen.add(t.name)
                out.append(obs)
    # An artifact without a Top-N (e.g. an upstream artifact on its own): its heads only.
    for e in heads.values():
        if e.name not in seen:
            seen.add(e.name)
            out.append(_obs_from_entry(e))
    return out


def load_round(
    round_dir: Path,
    sources: RoundSources | None = None,
    options: AnalyzeOptions | None = None,
    artifact: Artifact | None = None,
    topn: TopN | None = None,
) -> RoundSnapshot:
    """Load one round. ``artifact`` (e.g. the one being written right now) is used as given, and
    so is ``topn`` (the Top-N its analysis parsed: not parsed a second time)."""
    round_dir = Path(round_dir)
    problems: list[str] = []
    topn_path = round_dir / TOPN_NAME
    if topn is None:
        topn, topn_problems, _incomplete = load_topn(topn_path)
        if topn_path.exists() and topn is None:
            problems += topn_problems
    topn_found = topn is not None
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
        total = number(artifact.total_gpu_time_ms) if artifact is not None else None
    label = round_label(round_dir)
    mtime = topn_mtime(round_dir)
    kernels = _kernels(topn, artifact, problems)
    heads = [e.name for e in sorted(artifact.entries, key=lambda e: -(e.pct_gpu_time or 0.0))] \
        if artifact is not None else []
    return RoundSnapshot(
        label=label if label is not None else round_dir.name,
        dir=str(round_dir),
        numeric=is_numeric_round(round_dir),
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


def snapshot_fingerprint(round_dir: Path, sources: RoundSources | None = None,
                         options: AnalyzeOptions | None = None) -> Fingerprint:
    """Everything :func:`load_round` may read for ``round_dir`` (no artifact given), as a
    fingerprint: the round's files, the discovery places of env_report/config, EVAL_DIR/kernels,
    the explicit sources, the model config that env_report names, and the options it analyses
    with (:mod:`roofline_tui.core.rounds.fingerprint`)."""
    round_dir = Path(round_dir)
    extra: list[Path | None] = []
    if sources is not None:
        extra += [sources.env, sources.model_config, sources.peaks, sources.shapes,
                  *sources.counters]
    env_path = (sources.env if sources and sources.env else None) or find_env_report(round_dir)
    if env_path is not None:
        env, _ = load_env_report(env_path)
        extra.append(find_model_config(env_path, env, round_dir))
    return round_fingerprint(round_dir, extra=extra,
                             salt=(repr(sources), repr(_prior_options(options))))


def load_round_cached(round_dir: Path, sources: RoundSources | None, options: AnalyzeOptions | None,
                      cache: RoundCache[RoundSnapshot]) -> RoundSnapshot:
    """:func:`load_round` through ``cache``: a round is loaded (and maybe analysed) again only
    when its inputs' fingerprint changed. A round that changed while it was being loaded is not
    kept (its fingerprint before and after differ), so the next call loads it again."""
    before = snapshot_fingerprint(round_dir, sources, options)
    snap = cache.get(round_dir, before)
    if snap is not None:
        return snap
    snap = load_round(round_dir, sources, options)
    if snapshot_fingerprint(round_dir, sources, options) == before:
        cache.put(round_dir, before, snap)
    return snap

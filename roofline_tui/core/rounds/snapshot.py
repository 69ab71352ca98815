"""One round loaded for comparison: its kernels, its prediction and its run (spec §8.3).

:func:`load_snapshot` reads a round's Top-N and its artifact. The artifact is the stored
``profile_roofline.json`` when nothing the round's analysis reads changed after it was written
(:func:`~roofline_tui.core.rounds.fingerprint.artifact_staleness`) — that is what was *predicted* at the time, and reading it is
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

from roofline_tui.core.analyze import AnalyzeOptions, per_launch_time, pick_regime
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.bulk import collector_paused
from roofline_tui.core.coerce import number
from roofline_tui.core.inputs import TopN
from roofline_tui.core.layout import (
    ARTIFACT_JSON,
    SERVING_NAME,
    TOPN_NAME,
    find_env_report,
    find_model_config,
    is_numeric_round,
    round_label,
    topn_mtime,
)
from roofline_tui.core.rounds.analysis import RoundSources, analyze_round, load_stored_artifact
from roofline_tui.core.rounds.fingerprint import (
    Fingerprint,
    RoundCache,
    artifact_staleness,
    round_fingerprint,
)
from roofline_tui.core.rounds.reads import Reads, reads_or_new
from roofline_tui.core.rounds.records import KernelObs, RoundSnapshot, ServingMetrics, hardware_of
from roofline_tui.core.store import ReadProblem, read_json
from roofline_tui.core.textsafe import md_cell

SERVING_SCHEMA = "serving-metrics-v1"
WORKLOAD_KEYS = ("isl", "osl", "conc", "tp")


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


def _stored_artifact(round_dir: Path) -> tuple[Artifact | None, str | None]:
    """The stored artifact when it is current (what was predicted at the time, and cheap to
    read), else ``(None, why)``; ``(None, None)`` when there is none."""
    if not (round_dir / ARTIFACT_JSON).is_file():
        return None, None
    stale = artifact_staleness(round_dir)
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
                # (a trace with no regime keys its kernels as decode, as _obs_from_entry does)
                regime = head.regime if head is not None and head.regime \
                    else pick_regime(t, topn)[0] or "decode"
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


def load_snapshot(
    round_dir: Path,
    sources: RoundSources | None = None,
    options: AnalyzeOptions | None = None,
    artifact: Artifact | None = None,
    topn: TopN | None = None,
    *,
    reads: Reads | None = None,
) -> RoundSnapshot:
    """Load one round for comparison. ``artifact`` (e.g. the one being written right now) is
    used as given, and so is ``topn`` (the Top-N its analysis parsed: not parsed a second
    time); ``reads``: the memo of the analysis this snapshot is part of (shared files parsed
    once)."""
    round_dir = Path(round_dir)
    reads = reads_or_new(reads)
    problems: list[str] = []
    topn_path = round_dir / TOPN_NAME
    if topn is None:
        topn, topn_problems, _problem = reads.topn(topn_path)
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
            artifact = analyze_round(round_dir, sources, _prior_options(options),
                                     reads=reads).artifact
            source = "analyzed"
    env = None
    env_wl: dict[str, Any] = {}
    env_path = (sources.env if sources and sources.env else None) or find_env_report(round_dir)
    if env_path is not None:
        env, _ = reads.env_report(env_path)
        if env is not None:
            env_wl = env.workload.model_dump()
    if sources is not None and sources.workload is not None:
        env_wl.update({k: v for k, v in sources.workload.model_dump().items() if v is not None})
    serving, serving_problems = load_serving_metrics(round_dir)
    problems += serving_problems
    return _snapshot(round_dir, topn, artifact, env_wl, hardware_of(env, artifact), serving,
                     source, topn_found, problems)


def _snapshot(round_dir: Path, topn: TopN | None, artifact: Artifact | None,
              env_wl: dict[str, Any], hw: tuple[str | None, str | None],
              serving: ServingMetrics | None, source: str, topn_found: bool,
              problems: list[str]) -> RoundSnapshot:
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
        gfx=hw[0],
        product=hw[1],
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
                         options: AnalyzeOptions | None = None, *,
                         reads: Reads | None = None) -> Fingerprint:
    """Everything :func:`load_snapshot` may read for ``round_dir`` (no artifact given), as a
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
        env, _ = reads_or_new(reads).env_report(env_path)
        extra.append(find_model_config(env_path, env, round_dir))
    return round_fingerprint(round_dir, extra=extra,
                             salt=(repr(sources), repr(_prior_options(options))))


def load_snapshot_cached(round_dir: Path, sources: RoundSources | None,
                         options: AnalyzeOptions | None, cache: RoundCache[RoundSnapshot], *,
                         reads: Reads | None = None) -> RoundSnapshot:
    """:func:`load_snapshot` through ``cache``: a round is loaded (and maybe analysed) again
    only when its inputs' fingerprint changed. A round that changed while it was being loaded
    is not kept (its fingerprint before and after differ), so the next call loads it again."""
    before = snapshot_fingerprint(round_dir, sources, options, reads=reads)
    snap = cache.get(round_dir, before)
    if snap is not None:
        return snap
    snap = load_snapshot(round_dir, sources, options, reads=reads)
    if snapshot_fingerprint(round_dir, sources, options, reads=reads) == before:
        cache.put(round_dir, before, snap)
    return snap

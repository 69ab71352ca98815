"""One round on disk: find its inputs, load them tolerantly, analyse, write the artifact.

Discovery (CLI contract, see :mod:`roofline_tui.core.layout`): ``env_report.json`` in the
round directory or up to three parents; the model ``config.json`` beside it, or in the directory
env_report's ``model`` names, else the local Hugging Face cache's copy for the repo id ``--model``
or env_report's ``model`` names (offline); the bundled ``peaks.md`` unless another is given.
Without any config, the dimensions the trace itself records are stated with their evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roofline_tui.core.analyze import AnalyzeOptions, RoundInputs, analyze
from roofline_tui.core.artifact import Artifact, artifact_to_json
from roofline_tui.core.inputs import EnvReport, TopN, Workload
from roofline_tui.core.layout import (
    ARTIFACT_JSON,
    ARTIFACT_MD,
    ENV_NAME,
    PARENT_LEVELS,
    TOPN_NAME,
    find_env_report,
    find_model_config,
    round_label,
)
from roofline_tui.core.markdown import artifact_to_markdown
from roofline_tui.core.model_config import ModelShape
from roofline_tui.core.reading import RankView
from roofline_tui.core.peaks import Peaks, load_peak_table, resolve_peaks
from roofline_tui.core.refine import load_refinements
from roofline_tui.core.rounds.reads import Reads, reads_or_new
from roofline_tui.core.rounds.records import RoundHistory
from roofline_tui.core.store import (
    ReadProblem,
    atomic_write_pair,
    atomic_write_text,
    read_json,
    write_lock,
)
from roofline_tui.core.textsafe import printable


@dataclass
class RoundSources:
    """Explicit overrides from the command line; ``None`` means discover."""

    env: Path | None = None
    model_config: Path | None = None
    peaks: Path | None = None
    device: str | None = None
    workload: Workload | None = None
    shapes: Path | None = None                        # stage B: Kernel Extractor task dirs
    counters: list[Path] = field(default_factory=list)  # stage C: counter files
    model: str | None = None                          # HF repo id: config from the local cache


@dataclass
class RoundResult:
    artifact: Artifact
    round_dir: Path
    incomplete: bool = False        # the Top-N looked half-written
    topn_found: bool = True
    history: RoundHistory | None = None  # when sibling rounds were compared
    display_only: bool = False      # no Top-N: a stored profile_roofline.json shown as it is
    # Why the Top-N could not be read (the reader's typed problem; None when it parsed or is
    # absent): ``.incomplete`` tells a half-written file from a corrupt one.
    topn_problem: ReadProblem | None = None
    # Every file outside the round directory this analysis read (env_report, model config,
    # peak table, priors, explicit shape/counter sources): what a live view must watch.
    inputs_read: tuple[Path, ...] = ()
    # The Top-N as parsed: the round's history reuses it instead of parsing the file again, and
    # the dashboard lists its kernels below the head threshold.
    topn: TopN | None = field(default=None, repr=False, compare=False)
    # What the analysis loaded (env_report, model shape, peaks ...): kept, never read again
    inputs: RoundInputs | None = field(default=None, repr=False, compare=False)


@dataclass(eq=False)
class _LoadedRound:
    """What :func:`_load_round` found: the inputs and how the Top-N read went."""

    inputs: RoundInputs
    topn_found: bool
    topn_problem: ReadProblem | None = None
    read: list[Path] = field(default_factory=list)  # the input files, as found

    @property
    def incomplete(self) -> bool:
        return self.topn_problem is not None and self.topn_problem.incomplete


def load_round_inputs(round_dir: Path, sources: RoundSources | None = None) -> tuple[RoundInputs, bool, bool]:
    """Load everything one round needs. Returns (inputs, topn_incomplete, topn_found)."""
    loaded = _load_round(round_dir, sources)
    return loaded.inputs, loaded.incomplete, loaded.topn_found


@dataclass(eq=False)
class _Loading:
    """What one round's load gathers as it goes: problems, the inputs used, the files read."""

    problems: list[str] = field(default_factory=list)
    used: dict[str, str] = field(default_factory=dict)
    read: list[Path] = field(default_factory=list)


def _load_env(round_dir: Path, sources: RoundSources, reads: Reads, got: _Loading
              ) -> tuple[Path | None, EnvReport | None]:
    env_path = sources.env or find_env_report(round_dir)
    env: EnvReport | None = None
    if env_path is not None:
        env, env_problems = reads.env_report(env_path)
        got.read.append(env_path)
        got.problems += env_problems
        if env is not None:
            got.used["env_report"] = env_path.name
    elif sources.env is None:
        got.problems.append(
            f"{ENV_NAME} not found in the round directory or {PARENT_LEVELS} parents: "
            "gfx and workload unknown"
        )
    return env_path, env


def _load_model(round_dir: Path, sources: RoundSources, env_path: Path | None,
                env: EnvReport | None, topn: TopN | None, reads: Reads, got: _Loading
                ) -> ModelShape | None:
    cfg_path = sources.model_config or find_model_config(env_path, env, round_dir)
    cache_why = None
    if cfg_path is None:
        cfg_path, cache_why = _cached_config(sources.model or (env.model if env else None))
        if cfg_path is not None and cache_why:
            got.used["model_config_from"] = cache_why
    if cfg_path is None:
        said = "; ".join(trace_dims_lines(topn)) if topn is not None else ""
        regime = topn.ext.regime if topn is not None and topn.ext is not None else None
        serving = regime is None or regime.regime is not None
        got.problems.append("model config.json not found"
                            + (f" ({cache_why})" if cache_why else "")
                            + (": MoE/attention heads cannot be modelled" if serving else
                               ": none describes a trace that is not a serving run (no regime); "
                               "its kernels are sized from their recorded shapes only")
                            + (f"; the trace itself records: {said}" if said else ""))
        return None
    model, cfg_problems = reads.model_config(cfg_path, env.kv_cache_dtype if env else None)
    got.read.append(cfg_path)
    got.problems += cfg_problems
    if model is not None:
        got.used["model_config"] = cfg_path.name
        copied = _copied_from(cfg_path)
        if copied and "model_config_from" not in got.used:
            got.used["model_config_from"] = copied
    return model


def _copied_from(cfg_path: Path) -> str | None:
    """How a config.json an import copied into the round was found (its config.source.json),
    when that record is there and still describes this file."""
    from roofline_tui.core.layout import CONFIG_SOURCE_NAME

    record = cfg_path.with_name(CONFIG_SOURCE_NAME)
    try:
        if not record.is_file():
            return None
        raw = read_json(record)
    except (ReadProblem, OSError, ValueError):
        return None
    how = raw.get("how") if isinstance(raw, dict) else None
    if not isinstance(how, str) or not how:
        return None
    return printable(f"copied into the round by `roofline import` ({how})", limit=300)


def _load_peaks(sources: RoundSources, env: EnvReport | None, got: _Loading) -> Peaks:
    sections, peak_problems = load_peak_table(sources.peaks)
    if sources.peaks is not None:
        got.read.append(sources.peaks)
    got.problems += peak_problems
    got.used["peaks"] = sources.peaks.name if sources.peaks else "peaks.md (bundled)"
    return resolve_peaks(
        sections,
        gfx=env.gfx if env else None,
        product=env.product if env else None,
        device=sources.device,
        device_props=env.device_props if env else None,
    )


def _load_round(round_dir: Path, sources: RoundSources | None = None,
                reads: Reads | None = None) -> _LoadedRound:
    """Load everything one round needs, with the typed Top-N problem and the files read;
    each file through ``reads`` (parsed once per analysis)."""
    sources = sources or RoundSources()
    reads = reads_or_new(reads)
    got = _Loading()
    topn_path = round_dir / TOPN_NAME
    topn, topn_problems, topn_problem = reads.topn(topn_path)
    got.problems += topn_problems
    topn_found = topn_path.exists()
    if topn is not None:
        got.used["topn"] = TOPN_NAME
    env_path, env = _load_env(round_dir, sources, reads, got)
    model = _load_model(round_dir, sources, env_path, env, topn, reads, got)
    peaks = _load_peaks(sources, env, got)
    workload = sources.workload
    if env is not None and workload is not None:
        merged = env.workload.model_dump()
        merged.update({k: v for k, v in workload.model_dump().items() if v is not None})
        workload = Workload(**merged)
    inputs = RoundInputs(topn=topn, peaks=peaks, env=env, model=model,
                         round_name=round_label(round_dir), workload=workload,
                         problems=got.problems, inputs_used=got.used)
    inputs.refinements, refine_problems = load_refinements(
        round_dir, shapes_dir=sources.shapes, counter_files=sources.counters or None
    )
    inputs.problems += refine_problems
    if inputs.refinements is not None:
        if inputs.refinements.tasks:
            got.used["shapes"] = f"{len(inputs.refinements.tasks)} Kernel Extractor task(s)"
        if inputs.refinements.counters is not None:
            got.used["counters"] = (f"{len(inputs.refinements.counters.measurements)} kernel(s) "
                                    "measured")
    got.read += [p for p in (sources.shapes, *sources.counters) if p is not None]
    return _LoadedRound(inputs, topn_found, topn_problem, got.read)


def _cached_config(model: str | None) -> tuple[Path | None, str | None]:
    """The model's config.json from the local Hugging Face cache (offline), and where it came
    from or why not; (None, None) when no model is named."""
    if not model:
        return None, None
    from roofline_tui.core.model_lookup import find_cached_config

    path, why = find_cached_config(model)
    return path, why


def trace_dims_lines(topn: TopN) -> list[str]:
    """The model dimensions the Top-N's recorded instances show (``core.trace_dims``), one
    line each with its evidence; empty when the Top-N records none."""
    if not any(e.ext is not None and e.ext.instances for e in topn.entries):
        return []
    from roofline_tui.core.trace_dims import describe, dims_from_instances

    found = dims_from_instances(e.raw for e in topn.entries)
    return [] if found.is_empty() else describe(found)


def skill_disabled(round_dir: Path, sources: RoundSources | None = None,
                   reads: Reads | None = None) -> str | None:
    """Spec §6 L0: ``analysis_skill: none`` in env_report (or ``ROOFLINE_ANALYSIS_SKILL=none``)
    means emit nothing; returns the reason, or None when the analysis should run. ``reads``:
    the memo of the analysis that follows (env_report is then parsed once for both)."""
    import os

    if os.environ.get("ROOFLINE_ANALYSIS_SKILL", "").strip().lower() == "none":
        return "ROOFLINE_ANALYSIS_SKILL=none"
    env_path = (sources.env if sources else None) or find_env_report(Path(round_dir))
    if env_path is None:
        return None
    env, _ = reads_or_new(reads).env_report(env_path)
    value = getattr(env, "analysis_skill", None) if env is not None else None
    if isinstance(value, str) and value.strip().lower() == "none":
        return f"analysis_skill=none in {env_path.name}"
    return None


def load_stored_artifact(round_dir: Path) -> tuple[Artifact | None, str | None]:
    """A ``profile_roofline.json`` already in the round (ours or upstream's), validated with our
    model (extra fields kept); ``(None, reason)`` when absent or unreadable."""
    path = Path(round_dir) / ARTIFACT_JSON
    if not path.is_file():
        return None, None
    try:
        return Artifact.model_validate(read_json(path)), None
    except ReadProblem as exc:
        return None, str(exc)
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"{ARTIFACT_JSON}: not an artifact ({first})"


def analyze_round(
    round_dir: Path, sources: RoundSources | None = None, options: AnalyzeOptions | None = None,
    *, reads: Reads | None = None,
) -> RoundResult:
    """Analyse one round. A round holding only a stored artifact (no Top-N) is shown in display
    mode: the stored artifact is returned untouched, never replaced by an empty one. ``reads``:
    the memo of a larger analysis (a round's history), so shared files are parsed once."""
    round_dir = Path(round_dir)
    if not (round_dir / TOPN_NAME).exists():
        stored, _ = load_stored_artifact(round_dir)
        if stored is not None:
            return RoundResult(artifact=stored, round_dir=round_dir, topn_found=False,
                               display_only=True)
    loaded = _load_round(Path(round_dir), sources, reads)
    artifact = analyze(loaded.inputs, options)
    outside = tuple(p for p in loaded.read if not _is_under(p, round_dir))
    if options is not None and options.priors_path is not None:
        outside += (options.priors_path,)
    return RoundResult(artifact=artifact, round_dir=Path(round_dir), incomplete=loaded.incomplete,
                       topn_found=loaded.topn_found, topn_problem=loaded.topn_problem,
                       inputs_read=outside, topn=loaded.inputs.topn, inputs=loaded.inputs)


def _is_under(path: Path, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError, RuntimeError):  # Python 3.11 raises RuntimeError on a loop
        return False
    return True


def write_csv(artifact: Artifact, out_dir: Path, ranks: RankView | None = None) -> Path:
    """Write ``profile_roofline.csv`` (one row per entry) atomically beside the artifact, under
    the file's write lock (two writers never interleave). ``ranks``: the round's ranks, for the
    spread columns (``core.reading.rank_view``)."""
    from roofline_tui.core.table_csv import CSV_NAME, artifact_to_csv

    path = Path(out_dir) / CSV_NAME
    text = artifact_to_csv(artifact, ranks)
    with write_lock(path):
        return atomic_write_text(path, text)


def write_artifact(artifact: Artifact, out_dir: Path,
                   ranks: RankView | None = None) -> tuple[Path, Path]:
    """Write ``profile_roofline.json`` and ``.md`` as a pair: both are written to temp files
    first and renamed only when both succeeded, so a new json never sits beside an old md.
    ``ranks``: the round's ranks, for the Markdown's spread column. Raises
    :class:`~roofline_tui.core.store.WriteProblem` naming the file that failed."""
    out_dir = Path(out_dir)
    json_text = artifact_to_json(artifact)  # first: it records non-finite values as problems
    json_path, md_path = atomic_write_pair([
        (out_dir / ARTIFACT_JSON, json_text),
        (out_dir / ARTIFACT_MD, artifact_to_markdown(artifact, ranks)),
    ])
    return json_path, md_path

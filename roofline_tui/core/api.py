"""The engine's front desk for rounds work: what ``roofline analyze``, ``roofline rounds`` and
the dashboard call, and the only part of ``core.rounds`` they import.

A front end asks six things of a round, and each has one answer here:

* :func:`analyze` — analyse one round with its history (round-over-round movement when it
  has sibling rounds); every input file is parsed once per call, siblings included;
* :func:`history` — the rounds of a profile directory, loaded and compared;
* :func:`write` / :func:`write_table` — the artifact pair (``.json`` + ``.md``) and the CSV,
  atomically; :func:`write_refusal` — the one rule on whether a result may be written;
* :func:`load_artifact` — a stored ``profile_roofline.json``, validated;
* :func:`same_settings` — whether two artifacts were analysed with the same settings (older
  artifacts by their top-level fields; :func:`settings_of` says which);
* :func:`disabled` — spec §6 L0: whether the analysis should run at all.

The names a front end needs beside them (the result and history records, the sources, the
per-round cache and its fingerprints, the staleness rule, the history's view models, the
playbook and calibrated priors) are re-exported below, so a front end never reaches into
``core.rounds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import AnalysisSettings, Artifact, same_settings, settings_of
from roofline_tui.core.layout import ARTIFACT_JSON
from roofline_tui.core.reading import RankView, rank_view
from roofline_tui.core.rounds.analysis import (
    RoundResult,
    RoundSources,
    load_stored_artifact,
    skill_disabled,
    write_artifact,
    write_csv,
)
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.compare import load_history
from roofline_tui.core.rounds.fingerprint import (
    Fingerprint,
    RoundCache,
    artifact_staleness,
    file_fingerprint,
    inputs_changed,
)
from roofline_tui.core.rounds.reads import Reads
from roofline_tui.core.rounds.records import (
    Hardware,
    KernelObs,
    RoundHistory,
    RoundSnapshot,
    hardware_of,
)
from roofline_tui.core.rounds.series import (
    KernelSeries,
    RoundSummaryRow,
    all_kernel_series,
    kernel_keys,
    kernel_series,
    round_summary_rows,
)
from roofline_tui.core.rounds.snapshot import snapshot_fingerprint
from roofline_tui.core.rounds.source import IngestStatus, read_ingest_status

if TYPE_CHECKING:
    from roofline_tui.core.diff import Diff
    from roofline_tui.core.rounds.playbook import (
        AppendResult,
        PriorCalibration,
        PriorsError,
        append_playbook,
        calibrate,
        load_priors,
        write_priors,
    )

# the playbook and calibrated priors are loaded only when asked for: `roofline analyze` runs
# without them (tests/cli/test_front_door.py checks it)
_PLAYBOOK_NAMES = frozenset({"AppendResult", "PriorCalibration", "PriorsError", "append_playbook",
                             "calibrate", "load_priors", "write_priors"})


def __getattr__(name: str) -> object:
    if name in _PLAYBOOK_NAMES:
        from roofline_tui.core.rounds import playbook

        return getattr(playbook, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AnalysisSettings",
    "AppendResult",
    "PriorCalibration",
    "Fingerprint",
    "Hardware",
    "KernelObs",
    "KernelSeries",
    "PriorsError",
    "RankView",
    "Reads",
    "RoundCache",
    "RoundHistory",
    "RoundResult",
    "RoundSnapshot",
    "RoundSources",
    "RoundSummaryRow",
    "IngestStatus",
    "WriteRefusal",
    "all_kernel_series",
    "analyze",
    "append_playbook",
    "artifact_staleness",
    "calibrate",
    "disabled",
    "file_fingerprint",
    "hardware_of",
    "history",
    "inputs_changed",
    "inputs_fingerprint",
    "kernel_keys",
    "kernel_series",
    "load_artifact",
    "load_priors",
    "ranks_of",
    "round_summary_rows",
    "read_ingest_status",
    "same_settings",
    "settings_of",
    "compare_with",
    "diff_rounds",
    "write",
    "write_priors",
    "write_refusal",
    "write_table",
]


def analyze(round_dir: Path, sources: RoundSources | None = None,
            options: AnalyzeOptions | None = None, *, cache: RoundCache[RoundSnapshot] | None = None,
            reads: Reads | None = None) -> RoundResult:
    """One round analysed, with its history when it has sibling rounds (``result.history``).
    ``cache`` keeps the sibling rounds between calls (a live view), ``reads`` the parsed inputs
    within one call (give the one :func:`disabled` used, so env_report is parsed once)."""
    return analyze_round_with_history(round_dir, sources, options, cache=cache, reads=reads)


def disabled(round_dir: Path, sources: RoundSources | None = None, *,
             reads: Reads | None = None) -> str | None:
    """Why the analysis must not run (``analysis_skill: none``, spec §6 L0), or ``None``."""
    return skill_disabled(round_dir, sources, reads)


def history(profile_dir: Path, sources: RoundSources | None = None,
            options: AnalyzeOptions | None = None) -> RoundHistory:
    """The rounds of ``profile_dir``, loaded and compared (``roofline rounds``)."""
    return load_history(profile_dir, sources, options)


def load_artifact(round_dir: Path) -> tuple[Artifact | None, str | None]:
    """The round's stored ``profile_roofline.json``; ``(None, why)`` when it cannot be read,
    ``(None, None)`` when there is none."""
    return load_stored_artifact(round_dir)


def write(artifact: Artifact, out_dir: Path, ranks: RankView | None = None) -> tuple[Path, Path]:
    """``profile_roofline.json`` and ``.md``, written as a pair (atomically); ``ranks`` (the
    round's, :func:`ranks_of`) adds the spread column to the ``.md``."""
    return write_artifact(artifact, out_dir, ranks)


def write_table(artifact: Artifact, out_dir: Path, ranks: RankView | None = None) -> Path:
    """``profile_roofline.csv``, atomically; ``ranks`` (:func:`ranks_of`) fills its spread
    columns."""
    return write_csv(artifact, out_dir, ranks)


def ranks_of(result: RoundResult) -> RankView | None:
    """The ranks the result's Top-N was built from, with each kernel's spread (None: no rank
    block, or a stored artifact shown without its Top-N)."""
    return rank_view(result.topn)


def inputs_fingerprint(round_dir: Path, sources: RoundSources | None = None,
                       options: AnalyzeOptions | None = None) -> Fingerprint:
    """Everything an analysis of ``round_dir`` reads, fingerprinted: what a live view compares
    (with :func:`inputs_changed`) to know that a result on screen is stale."""
    return snapshot_fingerprint(round_dir, sources, options)


RefusalKind = Literal["display_only", "stored_unreadable", "no_topn"]


class WriteRefusal(NamedTuple):
    """Why a result may not be written into its round.

    * ``display_only``: the round has no Top-N, only a stored artifact, shown as it is;
    * ``stored_unreadable``: no Top-N, and a stored artifact the reader refuses (``detail``
      says why);
    * ``no_topn``: no Top-N and no artifact, and the caller writes no empty artifact."""

    kind: RefusalKind
    detail: str = ""


def write_refusal(result: RoundResult, *, empty_ok: bool = True) -> WriteRefusal | None:
    """The one rule on writing a result over its round's files: a stored artifact is never
    replaced by an empty one (no Top-N). ``empty_ok``: a round with neither a Top-N nor an
    artifact may get an empty one (``roofline analyze`` writes it; an export does not).
    ``None`` when the result may be written."""
    if result.display_only:
        return WriteRefusal("display_only")
    if result.topn_found:
        return None
    stored = Path(result.round_dir) / ARTIFACT_JSON
    if stored.exists() or stored.is_symlink():
        _, why = load_stored_artifact(result.round_dir)
        return WriteRefusal("stored_unreadable", why or "not a regular file")
    return None if empty_ok else WriteRefusal("no_topn")


def diff_rounds(a: Path, b: Path, options: AnalyzeOptions | None = None,
                sources: RoundSources | None = None) -> Diff:
    """Two rounds analysed (each with what its own directory holds) and compared op by op
    (:mod:`roofline_tui.core.diff`). Raises ``ValueError`` (one line) for a side with no
    Top-N."""
    return compare_with(_comparable(a, sources, options), b, options, sources)[0]


def compare_with(result: RoundResult, other: Path, options: AnalyzeOptions | None = None,
                 sources: RoundSources | None = None) -> tuple[Diff, RoundResult]:
    """An analysed round (A) compared op by op with ``other`` (B: a round, a profile's last
    round or an artifact, analysed with what its own directory holds): the diff and B's
    result. Raises ``ValueError`` (one line) when a side has no Top-N."""
    from roofline_tui.core.diff import diff
    from roofline_tui.core.layout import side_round

    if result.topn is None or not result.topn_found:
        raise ValueError(f"{result.round_dir}: no profile_topN.json to compare")
    b_dir = side_round(other)
    rb = _comparable(b_dir, sources, options)
    assert rb.topn is not None
    d = diff(str(result.round_dir), result.topn, result.artifact, str(b_dir), rb.topn,
             rb.artifact)
    return d, rb


def _comparable(round_dir: Path, sources: RoundSources | None,
                options: AnalyzeOptions | None) -> RoundResult:
    result = analyze(round_dir, sources, options)
    if result.topn is None or not result.topn_found:
        raise ValueError(f"{round_dir}: no profile_topN.json to compare")
    return result

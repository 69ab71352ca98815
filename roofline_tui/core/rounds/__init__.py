"""The rounds of an optimisation run, on disk and compared (spec §8.3-§8.5).

* :mod:`.layout` — the one round-directory rule: file names, discovery, order, labels;
* :mod:`.analysis` — one round: load its inputs, analyse, write the artifact;
* :mod:`.snapshot` — one round loaded for comparison (stored artifact reused when current);
* :mod:`.compare` — rounds compared: movement, predicted vs actual, contradictions;
* :mod:`.annotate` — round-over-round fields in one round's artifact, and
  :func:`analyze_round_with_history`, what ``roofline analyze`` and the dashboard show;
* :mod:`.series` — view models for the dashboard and ``roofline rounds``;
* :mod:`.playbook` — the backend playbook, calibration and calibrated priors (spec §8.5).
"""

from roofline_tui.core.rounds.analysis import (
    RoundResult,
    RoundSources,
    analyze_round,
    load_round_inputs,
    load_stored_artifact,
    skill_disabled,
    write_artifact,
)
from roofline_tui.core.rounds.annotate import (
    HISTORY_LIMIT,
    analyze_round_with_history,
    annotate_artifact,
    annotate_round,
)
from roofline_tui.core.rounds.compare import RoundHistory, RoundStep, load_history
from roofline_tui.core.rounds.layout import (
    ARTIFACT_JSON,
    ARTIFACT_MD,
    TOPN_NAME,
    round_dirs,
    round_label,
    round_name,
    rounds_at,
)
from roofline_tui.core.rounds.snapshot import RoundSnapshot

__all__ = [
    "ARTIFACT_JSON",
    "ARTIFACT_MD",
    "HISTORY_LIMIT",
    "TOPN_NAME",
    "RoundHistory",
    "RoundResult",
    "RoundSnapshot",
    "RoundSources",
    "RoundStep",
    "analyze_round",
    "analyze_round_with_history",
    "annotate_artifact",
    "annotate_round",
    "load_history",
    "load_round_inputs",
    "load_stored_artifact",
    "round_dirs",
    "round_label",
    "round_name",
    "rounds_at",
    "skill_disabled",
    "write_artifact",
]

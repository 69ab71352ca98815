"""One settings record per artifact (issue 37 item 4): the engine builds it once
(``AnalyzeOptions.settings``), derives the artifact's top-level copies from it
(``Artifact.state_settings``) and answers whether two artifacts were analysed alike
(``same_settings``, through the front desk), older artifacts included."""

from __future__ import annotations

import json
from pathlib import Path

from roofline_tui.core import api
from roofline_tui.core.analyze import AnalyzeOptions
from roofline_tui.core.artifact import AnalysisSettings, Artifact, artifact_to_json
from roofline_tui.core.defaults import DEFAULT_HEAD_THRESHOLD_PCT, DEFAULT_MAX_HEADS

from .helpers import run


def _without(artifact: Artifact, *keys: str) -> Artifact:
    """The artifact as an older version wrote it: without ``keys``."""
    data = json.loads(artifact_to_json(artifact))
    for k in keys:
        data.pop(k)
    return Artifact.model_validate(data)


def test_the_top_level_fields_are_derived_from_the_one_record(worked_example: Path) -> None:
    art = run(worked_example, head_threshold_pct=2.0, max_heads=1)
    s = art.analysis_settings
    assert s is not None and (s.head_threshold_pct, s.max_heads) == (2.0, 1)
    assert (art.head_threshold_pct, art.max_heads) == (s.head_threshold_pct, s.max_heads)
    assert art.head_selection == s.head_selection(len(art.entries), 2) == (
        "pct_gpu_time >= 2 (or serving_weighted_pct >= 2), biggest first, at most 1; "
        "1 of 2 Top-N entries")
    written = json.loads(artifact_to_json(art))
    assert written["analysis_settings"] == {"head_threshold_pct": 2.0, "max_heads": 1}


def test_the_options_build_the_record() -> None:
    plain = AnalyzeOptions().settings()
    assert plain == AnalysisSettings(head_threshold_pct=DEFAULT_HEAD_THRESHOLD_PCT,
                                     max_heads=DEFAULT_MAX_HEADS)
    assert "priors_file" not in plain.model_dump(exclude_unset=True)
    calibrated = AnalyzeOptions(target_eff_overrides={"moe": 0.7},
                                priors_path=Path("p/calib.json")).settings()
    assert calibrated.priors_file == "p/calib.json" and calibrated.priors_fingerprint
    assert calibrated.describe() == "head threshold 5%, at most 8 heads, priors calib.json"


def test_same_settings_reads_new_and_old_artifacts(worked_example: Path) -> None:
    default, other = run(worked_example), run(worked_example, max_heads=1)
    calibrated = run(worked_example, target_eff_overrides={"moe": 0.7})
    assert api.same_settings(default, run(worked_example)) is True
    assert api.same_settings(default, other) is False
    assert api.same_settings(default, calibrated) is False  # the priors count
    # an older artifact: the threshold and cap alone, i.e. the default priors
    old = _without(default, "analysis_settings")
    assert api.settings_of(old) == AnalysisSettings(head_threshold_pct=5.0, max_heads=8)
    assert api.same_settings(old, default) is True
    assert api.same_settings(old, other) is False and api.same_settings(old, calibrated) is False
    # one that records no settings: nothing to compare
    bare = _without(default, "analysis_settings", "head_threshold_pct", "max_heads")
    assert api.settings_of(bare) is None
    assert api.same_settings(bare, default) is None and api.same_settings(default, bare) is None


def test_the_priors_file_name_alone_does_not_make_settings_differ() -> None:
    a = AnalyzeOptions(target_eff_overrides={"moe": 0.7}, priors_path=Path("a.json")).settings()
    b = AnalyzeOptions(target_eff_overrides={"moe": 0.7}, priors_path=Path("b.json")).settings()
    assert a.same_as(b) and not a.same_as(AnalyzeOptions().settings())

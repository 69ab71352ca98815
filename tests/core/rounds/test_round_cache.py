"""A round's history through a cache: siblings are loaded again only when their inputs changed,
and the answer is the one an uncached analysis gives. The analysed round's Top-N is parsed once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roofline_tui.core.artifact import artifact_to_json
from roofline_tui.core.rounds import reads as reads_mod
from roofline_tui.core.rounds import snapshot as snapshot_mod
from roofline_tui.core.rounds.analysis import write_artifact
from roofline_tui.core.rounds.annotate import analyze_round_with_history
from roofline_tui.core.rounds.fingerprint import RoundCache

from .conftest import MOE, set_serving, speed_up


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Round directories whose snapshot is built (a cache hit builds none)."""
    built: list[str] = []
    real = snapshot_mod.load_snapshot

    def counting(round_dir: Path, *args: object, **kwargs: object) -> object:
        built.append(Path(round_dir).name)
        return real(round_dir, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_mod, "load_snapshot", counting)
    return built


def _same(profile: Path, cache: RoundCache) -> None:
    """The cached analysis of the newest round equals a fresh, uncached one."""
    newest = sorted(profile.iterdir())[-1]
    cached = analyze_round_with_history(newest, cache=cache)
    fresh = analyze_round_with_history(newest)
    assert artifact_to_json(cached.artifact) == artifact_to_json(fresh.artifact)


def test_unchanged_siblings_are_not_loaded_again(profile: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    built = _loads(monkeypatch)
    cache: RoundCache = RoundCache()
    analyze_round_with_history(profile / "round_2", cache=cache)
    assert sorted(built) == ["round_0", "round_1"]  # round_2 is the one analysed: never cached
    built.clear()
    speed_up(profile / "round_2", MOE, 1.1)  # the shown round changes, its siblings do not
    analyze_round_with_history(profile / "round_2", cache=cache)
    assert built == []


def test_a_changed_sibling_is_loaded_again_and_the_answer_follows(
        profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache: RoundCache = RoundCache()
    before = analyze_round_with_history(profile / "round_2", cache=cache)
    built = _loads(monkeypatch)
    speed_up(profile / "round_1", MOE, 1.3)
    after = analyze_round_with_history(profile / "round_2", cache=cache)
    assert built == ["round_1"]
    moe = next(e for e in after.artifact.entries if e.name == MOE)
    moe_before = next(e for e in before.artifact.entries if e.name == MOE)
    assert moe.t_ms_prev != moe_before.t_ms_prev  # round 1's MoE got faster: the step moved
    _same(profile, cache)


@pytest.mark.parametrize("change", ["serving", "env", "stored_artifact", "new_round"])
def test_cached_history_equals_uncached_after_each_kind_of_change(
        profile: Path, change: str) -> None:
    cache: RoundCache = RoundCache()
    analyze_round_with_history(profile / "round_2", cache=cache)
    if change == "serving":
        set_serving(profile / "round_1", output_throughput_tok_s=9000.0)
    elif change == "env":
        env = profile.parent / "env_report.json"
        env.write_text(env.read_text().replace('"conc": 64', '"conc": 32'))
    elif change == "stored_artifact":  # `roofline analyze round_1` writes its artifact
        write_artifact(analyze_round_with_history(profile / "round_1").artifact,
                       profile / "round_1")
    else:
        shutil.copytree(profile / "round_2", profile / "round_3")
        speed_up(profile / "round_3", MOE, 1.2)
    _same(profile, cache)


def test_each_round_is_parsed_once(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One analysis with its history parses every round's Top-N once: the analysed round's
    is reused by its history, a sibling's analysis reuses the one its snapshot parsed."""
    parsed: list[str] = []
    from roofline_tui.core.inputs import read_topn as real  # what reads.py calls

    def counting(path: Path) -> object:
        parsed.append(Path(path).parent.name)
        return real(path)

    monkeypatch.setattr(reads_mod, "read_topn", counting)
    analyze_round_with_history(profile / "round_2")
    assert sorted(parsed) == ["round_0", "round_1", "round_2"]

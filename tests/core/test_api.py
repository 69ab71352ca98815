"""The front desk (``core/api.py``): one analysis reads each input file once, and the one rule
on whether a result may be written."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from roofline_tui.core import api, store
from roofline_tui.core.artifact import artifact_to_json
from roofline_tui.core.layout import ARTIFACT_JSON, ENV_NAME, TOPN_NAME


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every bounded read of a file (the one reader every input goes through), by real path."""
    reads: Counter[str] = Counter()
    real = store.read_bytes

    def counting(path: Path | str, *args: object, **kwargs: object) -> bytes:
        reads[str(Path(path).resolve())] += 1
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "read_bytes", counting)
    return reads


def _env_reads(reads: Counter[str]) -> dict[str, int]:
    return {p: n for p, n in reads.items() if Path(p).name == ENV_NAME}


def test_env_report_is_read_once_in_one_analysis_of_round_2(
        demo_profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _count_reads(monkeypatch)
    result = api.analyze(demo_profile / "round_2")
    assert result.history is not None and len(result.history.rounds) == 3  # siblings loaded
    env = str((demo_profile.parent / ENV_NAME).resolve())
    assert _env_reads(reads) == {env: 1}
    # and each round's Top-N once: the siblings' analyses reuse what their snapshots parsed
    topn = {Path(p).parent.name: n for p, n in reads.items() if Path(p).name == TOPN_NAME}
    assert topn == {"round_0": 1, "round_1": 1, "round_2": 1}


def test_a_round_with_its_own_env_report_has_it_read_once_too(
        demo_profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = demo_profile / "round_1" / ENV_NAME
    shutil.copy(demo_profile.parent / ENV_NAME, own)
    reads = _count_reads(monkeypatch)
    api.analyze(demo_profile / "round_2")
    assert _env_reads(reads) == {str((demo_profile.parent / ENV_NAME).resolve()): 1,
                                 str(own.resolve()): 1}


def test_the_l0_check_and_the_analysis_share_one_read(
        demo_profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _count_reads(monkeypatch)
    memo = api.Reads()
    assert api.disabled(demo_profile / "round_2", reads=memo) is None
    api.analyze(demo_profile / "round_2", reads=memo)
    assert sum(_env_reads(reads).values()) == 1


def test_the_memoised_analysis_equals_a_fresh_one_per_round(demo_profile: Path) -> None:
    """Sharing parsed inputs between siblings changes no byte of any round's artifact."""
    for r in ("round_0", "round_1", "round_2"):
        shared = api.analyze(demo_profile / r)
        alone = api.analyze(demo_profile / r, reads=api.Reads())
        assert artifact_to_json(shared.artifact) == artifact_to_json(alone.artifact)


def test_a_changed_file_is_parsed_again(demo_profile: Path) -> None:
    """The memo is keyed by the file's stat: a file rewritten during one analysis is not
    served from it."""
    memo = api.Reads()
    env = demo_profile.parent / ENV_NAME
    first, _ = memo.env_report(env)
    env.write_text(env.read_text(encoding="utf-8").replace('"conc": 64', '"conc": 32') + " ",
                   encoding="utf-8")
    second, _ = memo.env_report(env)
    assert first is not None and second is not None
    assert memo.parsed["env_report"] == 2
    assert first.workload.conc == 64 and second.workload.conc == 32


def test_a_stored_artifact_is_never_replaced_by_an_empty_one(demo_profile: Path) -> None:
    r = demo_profile / "round_0"
    api.write(api.analyze(r).artifact, r)
    (r / TOPN_NAME).unlink()
    shown = api.analyze(r)
    refusal = api.write_refusal(shown)
    assert shown.display_only and refusal is not None and refusal.kind == "display_only"
    (r / ARTIFACT_JSON).write_text("{not json", encoding="utf-8")
    refusal = api.write_refusal(api.analyze(r))
    assert refusal is not None and refusal.kind == "stored_unreadable" and refusal.detail


def test_an_empty_round_may_get_an_empty_artifact_only_when_asked(demo_profile: Path) -> None:
    empty = demo_profile / "round_9"
    empty.mkdir()
    result = api.analyze(empty)
    assert api.write_refusal(result) is None  # roofline analyze writes an empty artifact
    refusal = api.write_refusal(result, empty_ok=False)  # an export does not
    assert refusal is not None and refusal.kind == "no_topn"
    assert api.write_refusal(api.analyze(demo_profile / "round_1"), empty_ok=False) is None

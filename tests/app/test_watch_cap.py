"""The watcher's ceiling: at most MAX_WATCHES directories, said once, the rest left alone."""

from pathlib import Path
from typing import Any, cast

from roofline_tui.app.watch import MAX_WATCHES, ProfileWatcher


def _watcher(profile: Path) -> ProfileWatcher:
    return ProfileWatcher(cast(Any, None), profile, [], debounce_ms=50, step_ms=10, poll_s=0.1,
                          on_attached=lambda: None)


def _round_with(profile: Path, subdirs: int) -> Path:
    rnd = profile / "round_0"
    (rnd / "kernels").mkdir(parents=True)
    (rnd / "profile_topN.json").write_text("{}")
    for i in range(subdirs):
        (rnd / "kernels" / f"k{i:05d}").mkdir()
    return rnd


def test_a_profile_under_the_ceiling_is_watched_whole(tmp_path: Path) -> None:
    rnd = _round_with(tmp_path / "profile", 20)
    w = _watcher(tmp_path / "profile")
    found = w.directories()
    assert not w.capped
    assert str(rnd / "kernels" / "k00019") in found and str(rnd) in found
    assert len(found) == len(set(found))


def test_a_profile_over_the_ceiling_gets_exactly_the_ceiling(tmp_path: Path) -> None:
    rnd = _round_with(tmp_path / "profile", MAX_WATCHES + 50)
    w = _watcher(tmp_path / "profile")
    found = w.directories()
    assert w.capped
    assert len(found) == MAX_WATCHES == len(set(found))
    # the profile and its round come first: a capped watch still sees its Top-N change
    assert found[0] == str(tmp_path / "profile") and str(rnd) in found
    # back under the ceiling, the flag clears
    for i in range(MAX_WATCHES):
        (rnd / "kernels" / f"k{i:05d}").rmdir()
    assert len(w.directories()) < MAX_WATCHES and not w.capped

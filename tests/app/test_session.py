"""The dashboard's session, driven directly (no Textual): rounds, sequence numbers,
keep-last-good, which rounds a change touches, the half-written → invalid rule."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

from roofline_tui.app.decisions import Decision
from roofline_tui.app.session import Session
from roofline_tui.core.rounds.analysis import analyze_round
from roofline_tui.core.rounds.annotate import analyze_round_with_history


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make_session(profile: Path, **kw) -> tuple[Session, FakeClock]:
    clock = FakeClock()
    s = Session(profile, display_name="profile", clock=lambda: datetime(2025, 1, 2, 12, 0, 0),
                monotonic=clock, **kw)
    return s, clock


def run(s: Session, d: Decision) -> Decision:
    """Carry out a decision's analyses synchronously, as the App's threads would."""
    out = Decision()
    for r, seq in d.analyze:
        out.merge(s.analyzed(r, seq, analyze_round_with_history(r)))
    return out


def test_opens_on_the_latest_round_and_asks_for_it_once(profile: Path) -> None:
    s, _ = make_session(profile)
    d = s.rescan(initial=True)
    assert s.rounds == [profile / f"round_{i}" for i in range(3)]
    assert s.shown == profile / "round_2"
    assert d.analyze == [(profile / "round_2", 1)] and d.render and d.options
    assert s.busy and s.status_notes()[0].text == "analysing round_2…"
    run(s, d)
    assert not s.busy and s.shown_result is not None and s.status_notes() == []
    assert s.step(+1).toasts[0].text == "already at the last round"


def test_an_older_result_never_replaces_a_newer_one(profile: Path) -> None:
    s, _ = make_session(profile)
    s.rescan(initial=True)
    r = profile / "round_2"
    first = s.request(r).analyze[0]
    second = s.request(r).analyze[0]
    assert (first[1], second[1]) == (2, 3)  # the initial request was 1
    new = analyze_round_with_history(r)
    assert s.analyzed(r, 3, new).render
    assert s.is_pending(r) is False
    old = analyze_round_with_history(profile / "round_0")
    assert s.analyzed(r, 2, old) == Decision()  # late and older: ignored
    assert s.results[r] is new


def test_half_written_keeps_the_last_good_result_then_says_invalid_and_where(profile: Path) -> None:
    s, clock = make_session(profile, invalid_after_s=3.0)
    run(s, s.rescan(initial=True))
    r = profile / "round_2"
    good = s.results[r]
    topn = r / "profile_topN.json"
    text = topn.read_text()
    topn.write_text(text[: len(text) // 2])
    d = s.changed([topn])
    assert d.analyze == [(r, 2)]
    d = run(s, d)
    assert s.results[r] is good  # keep-last-good
    assert s.shown_note is not None and "is being written" in s.shown_note.text
    assert d.recheck_in == 3.0
    clock.t += 1.0
    assert s.tick().render is False  # not yet: still "being written"
    clock.t += 2.5
    d = s.tick()
    assert d.render
    note = s.shown_note
    assert note is not None and note.severity == "error"
    # where the reader stopped, from the reader's typed problem
    assert "profile_topN.json in round_2 is invalid: invalid JSON at line" in note.text
    assert "unchanged for 3 s (showing the last good result)" in note.text
    topn.write_text(text)  # the writer finishes after all
    run(s, s.changed([topn]))
    assert s.shown_note is None


def test_a_corrupt_topn_is_told_from_its_typed_problem(profile: Path) -> None:
    r = profile / "round_2"
    (r / "profile_topN.json").write_text("{this is not json}")
    result = analyze_round(r)
    assert result.topn_problem is not None and not result.topn_problem.incomplete
    s, _ = make_session(profile)
    run(s, s.rescan(initial=True))
    note = s.shown_note
    assert note is not None and note.severity == "error"
    assert note.text.startswith("profile_topN.json: invalid JSON at line 1 column 2")


def test_deleted_round_note_goes_when_the_round_comes_back(profile: Path, tmp_path: Path) -> None:
    s, _ = make_session(profile)
    run(s, s.rescan(initial=True))
    r2 = profile / "round_2"
    keep = tmp_path / "keep"
    shutil.move(r2, keep)
    d = s.rescan()
    assert s.shown == profile / "round_1"
    assert [t.text for t in d.toasts] == ["round_2 was deleted"]
    assert s.deleted_note is not None and "round_2 was deleted; showing round_1" in s.deleted_note.text
    run(s, d)
    shutil.move(keep, r2)  # rewritten in place: the round is back
    d = s.rescan()
    assert s.shown == r2 and s.deleted_note is None
    assert [t.text for t in d.toasts] == ["round_2 is back"]
    assert all("deleted" not in n.text for n in s.status_notes())


def test_moving_away_clears_the_deleted_note(profile: Path) -> None:
    s, _ = make_session(profile)
    run(s, s.rescan(initial=True))
    shutil.rmtree(profile / "round_2")
    run(s, s.rescan())
    assert s.deleted_note is not None
    s.step(-1)
    assert s.deleted_note is None and s.shown == profile / "round_0"


def test_which_rounds_a_change_touches(profile: Path, demo_root: Path) -> None:
    s, _ = make_session(profile)
    s.rescan(initial=True)
    for r in s.rounds:
        run(s, Decision(analyze=[(r, s.request(r).analyze[0][1])]))
    env = demo_root / "env_report.json"
    cfg = demo_root / "config.json"
    # every analysis read the env report and the config above profile/: they are watched
    assert {p.resolve() for p in s.watched_inputs()} == {env.resolve(), cfg.resolve()}
    assert all(env in s.results[r].inputs_read for r in s.rounds)
    assert s.touched_rounds([profile / "round_1" / "profile_topN.json"]) == {profile / "round_1"}
    assert s.touched_rounds([env]) == set(s.rounds)
    # a file outside the watch root that no analysis read is not a change of ours
    assert s.changed([demo_root / "unrelated.json"]) == Decision()
    d = s.changed([cfg])
    assert sorted(r for r, _ in d.analyze) == s.rounds


def test_display_mode_r_does_not_claim_to_recompute(profile: Path) -> None:
    for r in ("round_0", "round_1"):
        shutil.rmtree(profile / r)
    r2 = profile / "round_2"
    (r2 / "profile_roofline.json").write_text(
        analyze_round(r2).artifact.model_dump_json())
    (r2 / "profile_topN.json").unlink()
    s, _ = make_session(profile)
    run(s, s.rescan(initial=True))
    assert s.shown_result is not None and s.shown_result.display_only
    d = s.recompute()
    assert [t.text for t in d.toasts] == [
        "display mode: re-reading the stored artifact of round_2 (nothing to recompute)"]
    assert "recomputing" not in " ".join(t.text for t in d.toasts)


def test_no_rounds_and_a_missing_directory(tmp_path: Path) -> None:
    s, _ = make_session(tmp_path / "later")
    d = s.rescan(initial=True)
    assert s.rounds == [] and s.shown is None and d.analyze == []
    assert s.global_note is not None and "does not exist yet" in s.global_note.text
    assert s.step(1).toasts[0].text == "no rounds yet"
    assert s.recompute().toasts[-1].text == "nothing to recompute: no round found yet"

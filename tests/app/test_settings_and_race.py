"""Issue 22: the dashboard analyses with the command line's ANALYSIS settings, ``e`` says which
settings the written artifact was computed with, and a change made before the watchers start is
not lost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from roofline_tui.app import app as app_module
from roofline_tui.cli import main

from .helpers import (
    column,
    make_app,
    read_topn,
    record_toasts,
    settle,
    static_text,
    wait_until,
    write_topn,
)

PRIORS = '{"schema": "roofline-priors-v1", "target_eff": {"moe": 0.7}}'



@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[app_module.RooflineApp]:
    apps: list[app_module.RooflineApp] = []
    monkeypatch.setattr(app_module.RooflineApp, "run", lambda self, *a, **k: apps.append(self))
    # no terminal under pytest: the check that refuses to start without one passes here
    monkeypatch.setattr("roofline_tui.cli.dash.terminal_problem", lambda: None)
    return apps


def dash_from_cli(argv: list[str], launched: list[app_module.RooflineApp]) -> app_module.RooflineApp:
    """The app ``roofline dash ARGV`` builds, made quiet for a Pilot run."""
    assert main(["dash", *argv]) == 0
    (app,) = launched
    app.watch_enabled = False
    app.animation_level = "none"
    return app


async def test_dash_analyses_with_the_flags_and_e_says_which(profile: Path, tmp_path: Path,
                                                             launched) -> None:
    priors = tmp_path / "calib.json"
    priors.write_text(PRIORS)
    app = dash_from_cli([str(profile), "--max-heads", "2", "--head-threshold", "1",
                         "--priors", str(priors)], launched)
    async with app.run_test(size=(200, 50)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        assert app.pct_table.row_count == 2  # --max-heads 2: two heads on screen
        shown = column(app.pct_table, "kernel")
        await pilot.press("e")
        message, severity = toasts[-1]
        assert message.startswith("wrote ") and severity == "information"
        assert "(head threshold 1%, at most 2 heads, priors calib.json)" in message
    written = json.loads((profile / "round_2" / "profile_roofline.json").read_text())
    assert [e["short_name"] for e in written["entries"]] == written["ranking_by_pct"]
    assert len(written["entries"]) == len(shown) == 2
    settings = written["analysis_settings"]
    assert settings["head_threshold_pct"] == 1 and settings["max_heads"] == 2
    assert settings["priors_file"] == str(priors) and len(settings["priors_fingerprint"]) == 16
    assert "calib.json" in written["target_eff_source"]


def test_dash_and_demo_refuse_a_bad_priors_file(tmp_path: Path, profile: Path, launched,
                                                capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["dash", str(profile), "--priors", str(bad)]) == 2
    assert main(["demo", "--priors", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "roofline dash: error: --priors" in err and "roofline demo: error: --priors" in err
    assert not launched


async def test_e_warns_when_it_replaces_an_artifact_made_with_other_priors(
        profile: Path, tmp_path: Path, capsys) -> None:
    priors = tmp_path / "calib.json"
    priors.write_text(PRIORS)
    assert main(["analyze", str(profile / "round_2"), "--priors", str(priors)]) == 0
    capsys.readouterr()
    app = make_app(profile)  # the defaults
    async with app.run_test(size=(200, 50)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        await pilot.press("e")
        message, severity = toasts[-1]
    assert severity == "warning"
    assert ("(head threshold 5%, at most 8 heads, default priors); replaced one computed with "
            "head threshold 5%, at most 8 heads, priors calib.json") in message
    written = json.loads((profile / "round_2" / "profile_roofline.json").read_text())
    assert "priors_file" not in written["analysis_settings"]


def first_pct(app: app_module.RooflineApp) -> str:
    return column(app.pct_table, "pct")[0]


async def test_a_change_before_the_watchers_start_is_shown(profile: Path) -> None:
    release = asyncio.Event()
    app = make_app(profile, watch=True, before_watchers=release.wait)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        before = first_pct(app)
        assert before != "41.50"
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 41.5
        write_topn(profile / "round_2", data)  # after the first paint, before any watcher
        await pilot.pause(0.3)
        assert first_pct(app) == before and not app.watching  # nothing could have seen it
        release.set()
        await wait_until(pilot, app.inputs_checked.is_set)
        await wait_until(pilot, lambda: first_pct(app) == "41.50")
        await settle(pilot)
        assert "recomputed" in static_text(app.query_one("#header-title"))


async def test_unchanged_inputs_are_not_analysed_again_when_the_watchers_start(
        profile: Path) -> None:
    release = asyncio.Event()
    app = make_app(profile, watch=True, before_watchers=release.wait)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        generation = app.session.generation
        release.set()
        await wait_until(pilot, app.inputs_checked.is_set)
        await pilot.pause(0.2)
        assert not app.session.busy and app.session.generation == generation
        assert "recomputing" not in static_text(app.query_one("#header-title"))

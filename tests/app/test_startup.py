"""What the dashboard's start-up work-saving must not change for the user (issue 15).

The start builds only the Summary tab, waits briefly for the first analysis so the first frame
shows it, starts the watchers after that frame, and keeps the Footer from rebuilding when its
keys are unchanged. Each test checks what a user would see if one of those went wrong: a tab
opened later that stays blank, a first frame without the analysed round, a start that hangs on a
slow analysis, a watcher that never attaches, a footer that no longer follows the focus.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from roofline_tui.app.app import RooflineApp
from roofline_tui.app.widgets.detail_panel import PANES

from .helpers import (
    make_app,
    open_rounds_tab,
    read_topn,
    settle,
    static_text,
    wait_until,
    write_topn,
)


def footer_keys(app: RooflineApp) -> list[str]:
    return [k.description for k in app.query(FooterKey)]


@pytest.mark.parametrize("pane", [p for p, _ in PANES if p not in ("summary", "chart")])
async def test_a_tab_opened_for_the_first_time_shows_its_content(profile: Path,
                                                                 pane: str) -> None:
    # (the Compare tab is there with --against only: against the demo's own round 0)
    app = make_app(profile, against=profile / "round_0" if pane == "compare" else None)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        assert not app.detail.built(pane)  # not built at start: this is its first opening
        await pilot.click(f"#--content-tab-{pane}")
        await pilot.pause()
        text = static_text(app.query_one(f"#{pane}-body"))
        assert text.strip(), f"the {pane} tab is blank when first opened"
        assert "nothing analysed yet" not in text and "no kernel selected" not in text


async def test_the_chart_tab_built_late_draws_the_shown_round(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        assert not app.detail.built("chart")
        await pilot.press("c")
        await pilot.pause()
        await pilot.pause()
        legend = static_text(app.query_one("#roofline-legend"), width=200)
        # the demo's round 2: the MoE kernel is rank 1 and 24.21 % of GPU time
        assert "fused_moe_kernel" in legend and "24.21% gpu" in legend
        assert "No artifact to chart yet" not in legend


async def test_a_tab_built_late_follows_a_round_change(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("left_square_bracket")  # round 1 before the Rounds tab was ever built
        await settle(pilot)
        text, lines = await open_rounds_tab(pilot)
        assert [ln[0] for ln in lines[1:4]] == ["0", "1", "2"]
        # and the Degraded label still counts the round shown (round 1), not the first one
        result = app.shown_result
        assert result is not None
        art = result.artifact
        n = len(art.degraded) + len(art.skill_errors)
        label = str(app.detail.tabs.get_tab("degraded").label)
        assert label == (f"Degraded ({n})" if n else "Degraded")


async def test_the_first_frame_shows_the_analysed_round(profile: Path) -> None:
    app = make_app(profile)
    app.FIRST_RESULT_WAIT_S = 60.0  # however loaded the machine: the wait ends with the result
    async with app.run_test(size=(200, 50)) as pilot:
        # run_test hands over once the app is mounted, before any message from an analysis
        # thread could have been handled: the rows are there from the first frame
        assert app.pct_table.row_count and app.gain_table.row_count
        assert "analysing" not in static_text(app.query_one("#status"))
        assert not app.busy
        # the drill-down and the footer come right after that frame (issue 26 item 6), with
        # the selected kernel already in the Summary
        await pilot.pause()
        summary = static_text(app.query_one("#summary-body"))
        assert "fused_moe_kernel" in summary
        assert footer_keys(app)


async def test_a_slow_first_analysis_does_not_hold_the_start(profile: Path, monkeypatch) -> None:
    import roofline_tui.app.runner as app_module

    release = threading.Event()
    from roofline_tui.core.api import analyze as real  # what the runner calls

    def slow(*a, **k):
        release.wait(30)
        return real(*a, **k)

    monkeypatch.setattr(app_module, "analyze_round", slow)
    app = make_app(profile)
    app.FIRST_RESULT_WAIT_S = 0.05
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        assert app.busy and app.pct_table.row_count == 0
        assert "analysing round_2" in static_text(app.query_one("#status"))
        release.set()
        await settle(pilot)
        assert app.pct_table.row_count
        assert "analysing" not in static_text(app.query_one("#status"))


async def test_the_watcher_attached_after_the_first_frame_sees_a_change(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 41.5
        write_topn(profile / "round_2", data)
        await wait_until(pilot, lambda: "41.50" in " ".join(
            str(c) for c in app.pct_table.get_row_at(0)), timeout=15)


async def test_the_footer_has_its_keys_at_once_and_follows_the_focus(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()  # the footer is mounted right after the first frame, keys and all
        keys = footer_keys(app)
        assert {"Help", "Quit", "Export", "Chart", "Filter"} <= set(keys)
        await settle(pilot)
        await pilot.press("c")  # the chart takes focus: its own keys join the footer
        await wait_until(pilot, lambda: "Next kernel" in footer_keys(app))
        await pilot.press("escape")
        await pilot.click("#--content-tab-summary")
        app.pct_table.focus()
        await wait_until(pilot, lambda: "Next kernel" not in footer_keys(app))
        assert footer_keys(app) == keys

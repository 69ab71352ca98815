"""The History and Rounds tabs and the roofline chart inside the dashboard (issues 5 and 6)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static, TabbedContent

from roofline_tui.app.widgets.roofline_chart import RooflineChart
from tests.paths import UPSTREAM_SAMPLES, WORKED_EXAMPLE

from .helpers import make_app, open_rounds_tab, settle, shown_entry, static_text


async def test_history_tab_shows_prediction_beside_outcome(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        assert app.session.shown is not None and app.session.shown.name == "round_2"
        await pilot.click("#--content-tab-history")
        await pilot.pause()
        text = static_text(app.query_one("#history-body"))
        assert app.rankings.selected_key is not None
        assert "fused_moe_kernel" in app.rankings.selected_key
        # round 1 measured 1.047× against the 1.022× predicted in round 0: at the ceiling
        assert "1.047×" in text and "1.022×" in text and "at_ceiling" in text
        assert "⚑ contradiction" not in text  # inside the 3.4% isolated band of the prediction


async def test_rounds_tab_lists_every_round(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        text, lines = await open_rounds_tab(pilot)
        assert [ln[0] for ln in lines[1:4]] == ["0", "1", "2"]
        assert "noise" in text  # round 1's −0.06% e2e is inside the 0.5% serving band


async def test_c_opens_the_chart_and_follows_the_selection(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(RooflineChart)
        assert app.query_one("#detail-tabs", TabbedContent).active == "chart"
        assert chart.has_focus
        assert chart.selected == "fused_moe_kernel"
        assert chart.model is not None and chart.model.points
        # stepping in the chart (arrows; [ ] step rounds) moves the tables' cursor too
        await pilot.press("down")
        await pilot.pause()
        assert chart.selected != "fused_moe_kernel"
        row = app.selected_row
        assert row is not None
        assert row.entry.short_name == chart.selected
        assert app.pct_table.current_key == app.rankings.selected_key


async def test_chart_redraws_after_a_round_change(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(RooflineChart)
        before = chart.model
        app.pct_table.focus()
        await pilot.press("left_square_bracket")
        await settle(pilot)
        await pilot.pause()
        assert app.session.shown is not None and app.session.shown.name == "round_1"
        assert chart.model is not before
        assert chart.model is not None and "round 1" in chart.model.title



SAMPLES = UPSTREAM_SAMPLES


async def test_display_mode_for_a_directory_of_stored_artifacts(tmp_path: Path) -> None:
    """A profile directory holding only upstream artifacts opens in display mode (issue 8)."""
    import shutil

    import pytest

    sample = SAMPLES / "profile_roofline.minimax-m3.round_tuning.json"
    if not sample.exists():
        pytest.skip("shared upstream samples not present")
    rnd = tmp_path / "profile" / "round_tuning"
    rnd.mkdir(parents=True)
    shutil.copy(sample, rnd / "profile_roofline.json")
    before = (rnd / "profile_roofline.json").read_bytes()
    app = make_app(tmp_path / "profile")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        assert app.shown_result is not None and app.shown_result.display_only
        assert app.pct_table.row_count == 8
        assert "display mode" in static_text(app.query_one("#status"))
        await pilot.press("e")  # nothing to export: the stored file stays as it is
        await pilot.pause()
        await pilot.press("r")  # display mode: re-read, never "recomputing"
        await settle(pilot)
        header = str(app.query_one("#header-title", Static).content)
        assert "recomput" not in header and "read 12:34:56" in header
    assert (rnd / "profile_roofline.json").read_bytes() == before


async def test_new_captured_shapes_refine_the_round_live(tmp_path: Path) -> None:
    """A Kernel Extractor task dir appearing in EVAL_DIR/kernels/ moves a head to stage B."""
    import json
    import shutil

    from .helpers import wait_until

    eval_dir = tmp_path / "eval"
    shutil.copytree(WORKED_EXAMPLE, eval_dir)
    (eval_dir / "kernels").mkdir()
    app = make_app(eval_dir / "profile", watch=True)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        await pilot.pause(0.25)  # let the watcher register its paths before the first write
        moe = shown_entry(app, "fused_moe_kernel")
        assert moe is not None and moe.stage == "A"
        task = eval_dir / "kernels" / "fused_moe_kernel_task"
        task.mkdir()
        (task / "meta.json").write_text(json.dumps({
            "op_kind": "moe", "num_experts": 256, "top_k": 8, "hidden_size": 2048,
            "intermediate_size_per_tp": 512, "dtype": "fp8_e4m3",
            "cases": [{"m": 64, "regime": "decode", "sig": "m64_decode"}]}))

        def refined() -> bool:
            moe = shown_entry(app, "fused_moe_kernel")
            return moe is not None and moe.stage == "B"

        await wait_until(pilot, refined)
        moe = shown_entry(app, "fused_moe_kernel")
        assert moe is not None and moe.confidence == "medium"

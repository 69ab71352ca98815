"""Every key of the dashboard, driven through Pilot as a user would press it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from roofline_tui.app.widgets.help_screen import HelpScreen

from .helpers import (
    column,
    make_app,
    read_topn,
    record_toasts,
    settle,
    static_text,
    tree_state,
    wait_until,
    write_topn,
)


async def test_opens_on_the_latest_round_with_both_rankings(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        assert app.session.shown == profile / "round_2"
        assert column(app.pct_table, "kernel")[0] == "fused_moe_kernel"
        gain_kernels = column(app.gain_table, "kernel")
        assert gain_kernels[0].startswith("Cijk_")
        assert column(app.gain_table, "move")[0] == "↑3"
        assert "✕" in column(app.pct_table, "flags")
        assert "D" in column(app.pct_table, "flags")
        assert "U" in column(app.pct_table, "flags")
        header = str(app.query_one("#header-title", Static).content)
        assert "round_2 (3/3)" in header and "recomputed 12:34:56" in header
        info = str(app.query_one("#header-info", Static).content)
        assert "gfx950" in info and "HBM 8 TB/s" in info and "table/high" in info
        assert "ADVISORY" in info


async def test_selection_in_one_table_selects_the_kernel_in_the_other(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # pct table: 2nd kernel
        second = app.pct_table.ordered_rows[1].key.value
        assert app.gain_table.current_key == app.pct_table.current_key == second
        await pilot.press("tab", "down")  # focus the gain table and move there
        assert app.focused is app.gain_table
        assert app.pct_table.current_key == app.gain_table.current_key
        assert app.rankings.selected_key == app.gain_table.current_key
        summary = static_text(app.query_one("#summary-body"))
        assert f"short name            {app.rankings.selected_key}" in summary


async def test_brackets_and_select_switch_rounds(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert app.session.shown == profile / "round_1"
        assert app.query_one("#round-select", Select).value == str(profile / "round_1")
        assert "round_1 (2/3)" in str(app.query_one("#header-title", Static).content)
        await pilot.press("left_square_bracket", "left_square_bracket")  # clamps at the first
        await settle(pilot)
        assert app.session.shown == profile / "round_0"
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.session.shown == profile / "round_1"
        app.query_one("#round-select", Select).value = str(profile / "round_0")  # the selector
        await settle(pilot)
        assert app.session.shown == profile / "round_0"
        assert app.pct_table.row_count == 6


async def test_e_exports_the_shown_round_and_names_the_path(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        await pilot.press("e")
        out = profile / "round_2" / "profile_roofline.json"
        assert out.is_file() and (profile / "round_2" / "profile_roofline.md").is_file()
        assert json.loads(out.read_text())["round"] == 2
        # the notice names the settings the written analysis used (issue 22)
        assert toasts[-1] == ("wrote profile/round_2/profile_roofline.json and profile_roofline.md"
                              " (head threshold 5%, at most 8 heads, default priors)",
                              "information")
        assert not list((profile / "round_2").glob(".*tmp"))


async def test_e_into_an_unwritable_round_shows_an_error_and_keeps_running(profile: Path) -> None:
    app = make_app(profile)
    blocker = profile / "round_2" / "profile_roofline.json"
    blocker.mkdir()  # the destination cannot be replaced: the write fails like a read-only dir
    async with app.run_test(size=(120, 36)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        await pilot.press("e")
        message, severity = toasts[-1]
        assert severity == "error"
        assert message.startswith("cannot write profile_roofline.json into profile/round_2")
        await pilot.press("down")  # still alive and responsive
        assert app.pct_table.cursor_row == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
async def test_e_into_a_read_only_directory(profile: Path) -> None:
    app = make_app(profile)
    (profile / "round_2").chmod(0o555)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            toasts = record_toasts(app)
            await settle(pilot)
            await pilot.press("e")
            assert toasts[-1][1] == "error" and "ermission denied" in toasts[-1][0]
    finally:
        (profile / "round_2").chmod(0o755)


async def test_r_recomputes_the_shown_round(profile: Path) -> None:
    app = make_app(profile)  # no watcher: only r can pick up the edit
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 31.5
        write_topn(profile / "round_2", data)
        await pilot.pause(0.2)
        assert column(app.pct_table, "pct")[0] == "24.21"
        await pilot.press("r")
        await settle(pilot)
        assert column(app.pct_table, "pct")[0] == "31.50"


async def test_slash_filters_both_tables_and_escape_clears(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        box = app.query_one("#filter", Input)
        assert app.focused is box and box.display
        await pilot.press(*"fused")
        await pilot.pause()
        assert all("fused" in k for k in column(app.pct_table, "kernel"))
        assert app.pct_table.row_count == 3 and app.gain_table.row_count == 3
        assert "filter 'fused': 3 of 5" in str(app.query_one("#pct-title", Static).content)
        await pilot.press("enter")  # keeps the filter, back to the table
        assert app.focused is app.pct_table and app.pct_table.row_count == 3
        await pilot.press("escape")
        assert app.pct_table.row_count == 5 and not box.display


async def test_question_mark_opens_help_and_q_quits(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_command_palette_exports(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        app.screen.query_one(Input).value = "Export"  # typed into the palette
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: (profile / "round_2" / "profile_roofline.json").exists())


async def test_only_e_writes_to_disk(profile: Path, demo_root: Path) -> None:
    before = tree_state(demo_root)
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("down", "left_square_bracket", "r", "slash", "x", "escape",
                          "right_square_bracket")
        await settle(pilot)
    assert tree_state(demo_root) == before

"""Issue 22, keys and looks: c and escape bring the rankings back, the drill-down shows focus and
steps tabs with the arrows, the help scrolls from the keyboard with its legend first, cut cells
end in an ellipsis, and NO_COLOR keeps the headroom readable."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.containers import VerticalScroll

from roofline_tui.app.view import cut
from roofline_tui.app.widgets.help_screen import HelpScreen

from .helpers import column, make_app, row_keys, screen_text, settle, static_text


async def test_c_toggles_the_chart_and_escape_leaves_it(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        assert app.detail.tabs.active == "chart" and app.focused is app.detail.chart
        assert not app.query_one("#tables").display
        await pilot.press("c")
        assert app.detail.tabs.active == "summary" and app.focused is app.pct_table
        assert app.query_one("#tables").display
        await pilot.press("c")
        await pilot.press("escape")
        assert app.detail.tabs.active == "summary" and app.focused is app.pct_table
        assert app.query_one("#tables").display


async def test_escape_leaves_the_drill_down_for_the_ranking_it_came_from(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("tab", "enter")  # from the gain ranking
        assert app.focused is not None and app.detail in app.focused.ancestors
        await pilot.press("escape")
        assert app.focused is app.gain_table


async def test_escape_from_a_maximized_drill_down_on_a_narrow_screen(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        assert app.screen.maximized is app.detail
        await pilot.press("escape")
        assert app.screen.maximized is None and app.focused is app.pct_table


async def test_arrows_step_the_drill_down_tabs_and_focus_shows(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(130, 44)) as pilot:
        await settle(pilot)
        # the focused ranking has the focus bar down its left edge
        assert app.pct_table.styles.outline_left[0] == "thick"
        assert app.gain_table.styles.outline_left[0] == ""
        await pilot.press("enter")
        assert app.detail.styles.outline_left[0] == "thick"
        await pilot.press("right")
        await pilot.pause()
        assert app.detail.tabs.active == "assumptions"
        assert app.focused is not None and app.focused.has_class("pane-scroll")
        assert app.query_one("TabPane#assumptions") in app.focused.ancestors
        await pilot.press("right", "right")
        await pilot.pause()
        assert app.detail.tabs.active == "levers"
        await pilot.press("left")
        await pilot.pause()
        assert app.detail.tabs.active == "flags"
        assert static_text(app.query_one("#flags-body")).strip()
        await pilot.press("left", "left", "left")  # wraps round to the last tab
        await pilot.pause()
        assert app.detail.tabs.active == "degraded"


async def test_help_opens_focused_legend_first_and_scrolls_from_the_keyboard(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help-scroll", VerticalScroll)
        assert app.focused is scroll
        screen = "\n".join(screen_text(app.export_screenshot()))
        assert "Legend" in screen and "▲ underperforming" in screen
        assert scroll.scroll_y == 0 and scroll.max_scroll_y > 0
        await pilot.press("down")
        await pilot.pause()
        assert scroll.scroll_y == 1
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 1
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert scroll.scroll_y == 0


def test_a_cut_cell_ends_in_an_ellipsis() -> None:
    cell = Text("kernel_occupancy", style="yellow")
    shown = cut(cell, 14)
    assert shown.plain == "kernel_occupa…" and shown.style == "yellow"
    assert cut(cell, 16) is cell


async def test_route_cells_fit_their_column_with_an_ellipsis(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        row = app.rankings.rows[row_keys(app.gain_table)[0]]
        row.entry.route = "kernel_occupancy"  # one longer than the column (14)
        app.render_tables()
        await pilot.pause()
        width = {c.key.value: c.width for c in app.gain_table.ordered_columns}["route"]
        routes = column(app.gain_table, "route")
        assert "kernel_occupa…" in routes and width == 14
        assert all(len(r) <= width for r in routes)


async def test_no_color_marks_the_headroom_of_each_kernel(profile: Path, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.no_color
        kernels = column(app.pct_table, "kernel")
        by_class = {app.rankings.rows[r].entry.headroom_class: k
                    for r, k in zip(row_keys(app.pct_table), kernels, strict=True)}
        assert all(k[1] == " " for k in kernels)
        assert by_class.get("saturated", "· ").startswith("· ")
        assert all(k[0] in "▲△· " for k in kernels)
        width = {c.key.value: c.width for c in app.pct_table.ordered_columns}["kernel"]
        assert all(len(k) <= width for k in kernels)


async def test_without_no_color_there_are_no_markers(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.no_color
        assert column(app.pct_table, "kernel")[0] == "fused_moe_kernel"

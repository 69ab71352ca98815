"""What the dashboard looks like: SVG snapshots (fixed clock, no tmp path on screen, no watcher).

Regenerate after a deliberate change with ``pytest tests/app --snapshot-update`` and read the
``snapshot_report.html`` diff first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import column, make_app, read_topn, screen_text, settle, static_text, write_topn

EVIL = "fused_moe_kernel[bold red]PWNED[/] \x1b[2J\x1b]0;title\x07"


async def _ready(pilot) -> None:
    await settle(pilot)


def _open_tab(pane: str, row: int):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press(*["down"] * row)
        await pilot.click(f"#--content-tab-{pane}")
        await pilot.pause()
        # the tab underline slides to the new tab: wait for it, or a loaded machine snaps it
        # mid-animation
        await pilot.wait_for_animation()
        await pilot.pause()

    return run_before


def test_main_screen_wide(profile: Path, snap_compare) -> None:
    assert snap_compare(make_app(profile), terminal_size=(200, 50), run_before=_ready)


def test_main_screen_narrow(profile: Path, snap_compare) -> None:
    assert snap_compare(make_app(profile), terminal_size=(80, 24), run_before=_ready)


def test_main_screen_narrow_many_heads(profile: Path, snap_compare) -> None:
    """80×24 with eleven heads: the header, the whole Next line (wrapped over six lines), the
    first rows of both rankings (they scroll) and of the drill-down."""
    from roofline_tui.core.analyze import AnalyzeOptions

    app = make_app(profile, options=AnalyzeOptions(head_threshold_pct=1.0, max_heads=12))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_ready)


def test_ranks_tab_narrow(tmp_path: Path, snap_compare) -> None:
    """The Ranks tab of a three-rank round at 80×24: each rank's trace, the MoE's spread."""
    from tests.rank_round import ranked_round

    round_dir = ranked_round(tmp_path / "three")
    assert snap_compare(make_app(round_dir.parent), terminal_size=(80, 24),
                        run_before=_open_tab("ranks", 0))


def test_main_screen_medium(profile: Path, snap_compare) -> None:
    """120×40, where both rankings first stand side by side."""
    assert snap_compare(make_app(profile), terminal_size=(120, 40), run_before=_ready)


@pytest.mark.parametrize(("pane", "row"), [
    ("assumptions", 0),   # fused MoE: the candidates the feasibility rule tried
    ("flags", 1),         # suspect copy kernel: raw ratio, bytes upper bound, stage-C
    ("levers", 0),        # saturated head: byte-reduction levers
    ("raw", 2),           # dispatch-bound kernel's JSON
    ("history", 0),       # fused MoE across the three rounds: 1.047× vs its 1.022× prediction
    ("chart", 0),         # the roofline chart of the shown round, MoE highlighted
    ("rounds", 0),        # one row per round
    ("degraded", 0),      # the round's degraded[] and skill_errors
])
def test_drill_down_tab(profile: Path, snap_compare, pane: str, row: int) -> None:
    assert snap_compare(make_app(profile), terminal_size=(130, 44), run_before=_open_tab(pane, row))


def test_help_screen(profile: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")

    assert snap_compare(make_app(profile), terminal_size=(120, 36), run_before=run_before)


async def test_markup_and_escape_codes_in_kernel_names_render_literally(profile: Path) -> None:
    data = read_topn(profile / "round_2")
    data["top_kernels"][0]["name"] = data["top_kernels"][0]["short_name"] = EVIL
    write_topn(profile / "round_2", data)
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        shown = column(app.pct_table, "kernel")[0]  # cut in the middle to fit
        assert shown.startswith("fused_moe_kernel[bold red]") and "…" in shown
        assert shown.endswith("\\x07")  # the BEL is shown escaped, never sent
        screen = "\n".join(screen_text(app.export_screenshot()))
        assert shown in screen
        assert "kernel                fused_moe_kernel[bold red]PWNED[/] \\x1b[2J\\x1b]0;title\\x07" in screen
        await pilot.click("#--content-tab-raw")
        await pilot.pause()
        raw = static_text(app.query_one("#raw-body"))
        assert '"name": "fused_moe_kernel[bold red]PWNED[/] \\u001b[2J\\u001b]0;title\\u0007"' in raw
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\x07" not in svg


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
def test_main_screen_no_color(profile: Path, snap_compare, monkeypatch,
                              size: tuple[int, int]) -> None:
    # Textual reads NO_COLOR when the app is created: set it first
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(make_app(profile), terminal_size=size, run_before=_ready)

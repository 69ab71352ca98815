"""Issue 33 item 3: ``roofline dash PROFILE --against OTHER``. The demo opens on round 2 (A);
B is round 0 of a second copy of the demo (the same device, older builds). Both rankings gain
B's time over A's per op (``B/A``) and B's roofline %; the Compare tab shows both sides of the
selected kernel's op with the cause; a change to B's files is on screen without a key."""

from __future__ import annotations

from pathlib import Path

from roofline_tui.cli.dash import copy_demo
from tests.cli.helpers import roofline

from .helpers import column, make_app, read_topn, settle, static_text, wait_until, write_topn


def _other(tmp_path: Path) -> Path:
    return copy_demo(tmp_path / "other") / "round_0"


async def _compare_tab(app, pilot) -> str:
    await pilot.click("#--content-tab-compare")
    await pilot.pause()
    return static_text(app.query_one("#compare-body"), width=140)


async def _compared(app, pilot) -> None:
    await settle(pilot)
    await wait_until(pilot, lambda: app.against is not None
                     and app.against.comparison_for(app.shown_result) is not None)


async def test_the_rankings_gain_b_over_a_and_the_compare_tab_names_the_cause(
        profile: Path, tmp_path: Path) -> None:
    """fused_moe_kernel: 4,585.3 µs per step in round 2, 4,760.9 in round 0: B/A 1.04; round
    0's kernel is at 88 % of the same roof as round 2's 92 %: the kernel's. The other heads ran
    the same time in both rounds: 1.00×."""
    app = make_app(profile, against=_other(tmp_path))
    async with app.run_test(size=(200, 50)) as pilot:
        await _compared(app, pilot)
        names = column(app.pct_table, "kernel")
        ratio = dict(zip(names, column(app.pct_table, "vs"), strict=True))
        roof = dict(zip(names, column(app.pct_table, "vs_roof"), strict=True))
        moe = next(n for n in names if "fused_moe_kernel" in n)
        assert ratio[moe] == "1.04×" and roof[moe] == "88%"
        assert sorted(v for n, v in ratio.items() if n != moe) == ["1.00×"] * (len(names) - 1)
        assert "vs" in [c.key.value for c in app.gain_table.ordered_columns]
        app.rankings.select(next(k for k, r in app.rankings.rows.items()
                                 if r.entry.short_name == "fused_moe_kernel"))
        text = await _compare_tab(app, pilot)
        assert "kernel:amd:fused_moe_kernel" in text
        assert "4,585.3 µs per step" in text and "4,760.9 µs per step" in text
        assert "kernel   B/A 1.04×" in text
        assert "B's kernel fused_moe_kernel is further from its roof (88% vs 92% of one roof)" \
            in text


async def test_a_change_to_the_other_side_is_on_screen_without_a_key(
        profile: Path, tmp_path: Path) -> None:
    other = _other(tmp_path)
    app = make_app(profile, against=other, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await _compared(app, pilot)
        await wait_until(pilot, lambda: app.watchers.against is not None)
        await pilot.pause(0.3)  # the watcher registers its watches on its first step
        names = column(app.pct_table, "kernel")
        moe = names.index(next(n for n in names if "fused_moe_kernel" in n))
        assert column(app.pct_table, "vs")[moe] == "1.04×"
        data = read_topn(other)
        row = next(k for k in data["top_kernels"] if k["name"] == "fused_moe_kernel")
        row["total_ms"] *= 2
        row["avg_us"] *= 2
        write_topn(other, data)
        await wait_until(pilot, lambda: column(app.pct_table, "vs")[moe] == "2.08×")


async def test_without_against_there_are_no_b_columns_and_no_compare_tab(
        profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        keys = [c.key.value for c in app.pct_table.ordered_columns]
        assert "vs" not in keys and "vs_roof" not in keys
        assert not app.query("#compare")


async def test_a_side_with_nothing_to_compare_says_why(profile: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    app = make_app(profile, against=empty)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.against is not None and bool(app.against.error))
        assert "no profile_topN.json to compare" in await _compare_tab(app, pilot)
        assert set(column(app.pct_table, "vs")) == {"–"}


def test_the_cli_names_against_and_refuses_a_missing_side(profile: Path, tmp_path: Path) -> None:
    assert "--against OTHER" in roofline("dash", "--help").stdout
    done = roofline("dash", profile, "--against", tmp_path / "missing")
    assert done.returncode != 0 and "--against" in done.stderr

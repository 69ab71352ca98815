"""The first frame builds only what it shows (issue 26): what stands in for the rest until it is
built must read exactly as the real thing does, and the rest must arrive."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from roofline_tui.app import first_frame
from roofline_tui.app.app import RooflineApp
from roofline_tui.app.widgets.round_stub import RoundStub

from .helpers import make_app, settle, wait_until


def top_line(app: RooflineApp, width: int) -> list[tuple[str, str]]:
    """The first screen line's first ``width`` cells as drawn: (text, style) per segment."""
    strip = app.screen._compositor.render_strips()[0].crop(0, width)
    return [(seg.text, str(seg.style)) for seg in strip]


def hold_the_rest(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """What follows the first frame waits until the returned event is set (the App meanwhile
    goes on handling keys and messages)."""
    release = asyncio.Event()
    build: Callable[[RooflineApp, RooflineApp], Awaitable[None]] = first_frame.build_rest
    waiting: list[asyncio.Task[None]] = []

    async def held(app: RooflineApp, host: RooflineApp) -> None:
        async def when_released() -> None:
            await release.wait()
            app.call_later(build, app, host)

        waiting.append(asyncio.get_running_loop().create_task(when_released()))

    monkeypatch.setattr(first_frame, "build_rest", held)
    return release


@pytest.mark.parametrize("size", [(200, 50), (80, 24)])
async def test_the_round_stub_reads_as_the_selector_that_replaces_it(
        profile: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]) -> None:
    release = hold_the_rest(monkeypatch)
    app = make_app(profile)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.pct_table.row_count > 0)
        assert app.query(RoundStub) and not app.query(Select)  # the first frame's stand-in
        stub_line = top_line(app, 30)
        release.set()
        await settle(pilot)
        assert not app.query(RoundStub)
        select = app.query_one("#round-select", Select)
        assert select.value == str(profile / "round_2") and not select.disabled
        assert top_line(app, 30) == stub_line


async def test_keys_before_the_rest_is_built_still_work(profile: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``/`` before the filter box is mounted opens it; the later build does not add another."""
    release = hold_the_rest(monkeypatch)
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_until(pilot, lambda: app.pct_table.row_count > 0)
        await pilot.press("slash")
        await pilot.pause()
        assert app.query_one("#filter", Input).has_focus
        await pilot.press("f", "u", "s", "e", "d")
        release.set()
        await settle(pilot)
        assert len(app.query("#filter")) == 1
        assert app.rankings.filter_text == "fused"


async def test_no_rounds_yet_starts_with_the_selector_itself(tmp_path: Path) -> None:
    app = make_app(tmp_path / "not-yet")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        select = app.query_one("#round-select", Select)
        assert select.disabled and select.is_blank()
        assert not app.query(RoundStub)

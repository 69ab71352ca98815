"""The watcher watches the path, not the inode (issue 25 items 8-10): a replaced profile directory
or a repointed link is followed and said; a link inside a round to a busy directory elsewhere is
not watched; a directory that is not a profile costs one watch and is called what it is."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from textual.widgets import Static

from .helpers import (
    column,
    make_app,
    messages,
    read_topn,
    record_toasts,
    settle,
    wait_until,
    write_topn,
)


def bump_first(round_dir: Path, pct: float) -> None:
    data = read_topn(round_dir)
    data["top_kernels"][0]["pct_gpu_time"] = pct
    write_topn(round_dir, data)


async def test_a_replaced_profile_directory_is_followed_and_said(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching and app.inputs_checked.is_set())
        # a deploy swap: the old tree moves away, a copy takes its name
        old = profile.with_name("profile.old")
        profile.rename(old)
        shutil.copytree(old, profile)
        await wait_until(pilot, lambda: any("profile directory replaced; following the new one"
                                            in t for t in messages(toasts)), timeout=10)
        bump_first(profile / "round_2", 33.33)  # an edit in the new tree shows
        await wait_until(pilot, lambda: "33.33" in column(app.pct_table, "pct"), timeout=10)
        bump_first(old / "round_2", 44.44)  # the old tree is no longer what is shown
        await pilot.pause(1.0)
        assert "44.44" not in column(app.pct_table, "pct")


async def test_a_repointed_link_is_followed(tmp_path: Path, profile: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(profile, a)
    shutil.copytree(profile, b)
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    app = make_app(latest, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        toasts = record_toasts(app)
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching and app.inputs_checked.is_set())
        tmp = tmp_path / "latest.new"
        tmp.symlink_to(b)
        os.replace(tmp, latest)  # `ln -sfn b latest`, atomically
        await wait_until(pilot, lambda: any("following the new one" in t for t in messages(toasts)),
                         timeout=10)
        bump_first(b / "round_2", 35.55)
        await wait_until(pilot, lambda: "35.55" in column(app.pct_table, "pct"), timeout=10)


async def test_a_link_out_of_the_profile_is_not_watched(tmp_path: Path, profile: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (profile / "round_2" / "elsewhere").symlink_to(busy)
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching and app.inputs_checked.is_set())
        assert not any(str(busy) in d or "elsewhere" in d for d in app.watchers.profile.watched)
        started: list[Path] = []
        original = app.runner.start

        def start(r: Path, seq: int) -> None:
            started.append(r)
            original(r, seq)

        app.runner.start = start  # type: ignore[method-assign]
        for i in range(5):  # a busy directory elsewhere: none of this is an input
            (busy / f"log_{i}.json").write_text(json.dumps({"i": i}))
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        assert started == []
        bump_first(profile / "round_2", 36.66)  # the round itself is still watched
        await wait_until(pilot, lambda: "36.66" in column(app.pct_table, "pct"), timeout=10)


async def test_a_directory_that_is_not_a_profile_costs_one_watch(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(300):
        (home / f"project_{i}" / "src").mkdir(parents=True)
    app = make_app(home, watch=True, display_name="~")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        assert app.watchers.profile.watched == [str(home)]
        status = str(app.query_one("#status", Static).content)
        assert status.startswith("~ is not a profile directory (no round_* directories")

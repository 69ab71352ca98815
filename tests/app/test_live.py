"""Live behaviour: files change while the dashboard runs; bad input never stops it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from textual.widgets import Select, Static

from tests.paths import DEMO

from .helpers import (
    column,
    make_app,
    read_topn,
    settle,
    static_text,
    tree_state,
    wait_until,
    write_topn,
)


def status_text(app) -> str:
    status = app.query_one("#status")
    return str(status.content) if status.display else ""


async def start_watching(pilot) -> None:
    await settle(pilot)
    await wait_until(pilot, lambda: pilot.app.watching)
    await pilot.pause(0.25)  # the watcher registers its inotify watches on its first step


async def test_a_new_topn_updates_the_tables_without_a_keypress(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await start_watching(pilot)
        assert column(app.pct_table, "pct")[0] == "24.21"
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 40.0
        write_topn(profile / "round_2", data)
        await wait_until(pilot, lambda: column(app.pct_table, "pct")[0] == "40.00")
        assert status_text(app) == ""


async def test_selection_and_scroll_survive_a_recompute(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:  # narrow: the tables scroll
        await start_watching(pilot)
        await pilot.press("a")  # the kernels below the head threshold too: 25 rows
        await pilot.press(*["down"] * 12)
        table = app.pct_table
        key, row, scroll = table.current_key, table.cursor_row, table.scroll_y
        assert row == 12 and scroll > 0
        await pilot.press("question_mark", "escape")  # detour through the help screen
        generation = app.session.generation
        data = read_topn(profile / "round_2")
        data["top_kernels"][0]["pct_gpu_time"] = 33.0
        write_topn(profile / "round_2", data)
        await wait_until(pilot, lambda: app.session.generation > generation)
        await pilot.pause(0.1)
        assert column(table, "pct")[0] == "33.00"
        assert (table.current_key, table.cursor_row, table.scroll_y) == (key, row, scroll)
        assert key is not None
        assert key.startswith("below:")  # a greyed kernel under the heads stays selected
        assert "below the head threshold" in static_text(app.query_one("#summary-body"))
        await pilot.press("home")  # back to the first head: the other ranking follows
        assert app.gain_table.current_key == table.current_key == app.rankings.selected_key


async def test_half_written_topn_keeps_the_last_good_state(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await start_watching(pilot)
        before = column(app.pct_table, "kernel")
        text = (profile / "round_2" / "profile_topN.json").read_text()
        generation = app.session.generation
        (profile / "round_2" / "profile_topN.json").write_text(text[: len(text) // 2])
        await wait_until(pilot, lambda: app.session.generation > generation)
        assert column(app.pct_table, "kernel") == before
        assert "waiting for a complete file" in status_text(app)
        (profile / "round_2" / "profile_topN.json").write_text(text)  # the writer finishes
        await wait_until(pilot, lambda: status_text(app) == "")
        assert column(app.pct_table, "kernel") == before


async def test_rounds_appearing_and_disappearing_live(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await start_watching(pilot)
        new = profile / "round_3"
        new.mkdir()
        await wait_until(pilot, lambda: new in app.session.rounds)
        select = app.query_one("#round-select", Select)
        assert str(new) in [value for _, value in select._options]
        assert app.session.shown == profile / "round_2"  # the view does not jump on its own
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: "No profile_topN.json in round_3 yet" in status_text(app))
        assert app.pct_table.row_count == 0
        shutil.copy(profile / "round_0" / "profile_topN.json", new / "profile_topN.json")
        await wait_until(pilot, lambda: app.pct_table.row_count == 6)
        assert status_text(app) == ""
        shutil.rmtree(new)  # the shown round is deleted
        await wait_until(pilot, lambda: new not in app.session.rounds)
        assert app.session.shown == profile / "round_2"
        assert "round_3 was deleted" in status_text(app)
        assert app.pct_table.row_count == 5


async def test_profile_dir_that_does_not_exist_yet(tmp_path: Path) -> None:
    profile = tmp_path / "later" / "profile"
    app = make_app(profile, watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "does not exist yet" in status_text(app)
        assert app.pct_table.row_count == 0
        await pilot.press("r", "e", "right_square_bracket")  # nothing to do, nothing breaks
        shutil.copytree(DEMO, profile.parent)
        await wait_until(pilot, lambda: app.pct_table.row_count == 5)
        assert app.session.shown == profile / "round_2"
        assert status_text(app) == ""


async def test_corrupt_and_missing_topn_show_a_message_in_place(profile: Path, demo_root: Path) -> None:
    (profile / "round_2" / "profile_topN.json").write_text("{this is not json}")
    (profile / "round_1" / "profile_topN.json").unlink()
    (profile / "round_0" / "profile_topN.json").write_bytes(b"\x80\x81 garbage")  # (\xff\xfe would be a UTF-16 BOM)
    before = tree_state(demo_root)
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "profile_topN.json: invalid JSON" in status_text(app)
        assert app.query_one("#status").has_class("-error")
        assert app.pct_table.row_count == 0
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert "No profile_topN.json in round_1 yet" in status_text(app)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert "not UTF-8" in status_text(app)
        await pilot.press("tab", "down", "r")
        await settle(pilot)
        assert app.is_running
    assert tree_state(demo_root) == before


async def test_exporting_does_not_trigger_a_recompute(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await start_watching(pilot)
        generation = app.session.generation
        await pilot.press("e")
        assert (profile / "round_2" / "profile_roofline.json").exists()
        await pilot.pause(0.6)
        assert app.session.generation == generation and not app.busy


async def test_a_shared_input_change_recomputes(demo_root: Path, profile: Path) -> None:
    app = make_app(profile, watch=True, watch_root=demo_root)  # as `roofline demo` runs it
    async with app.run_test(size=(120, 36)) as pilot:
        await start_watching(pilot)
        env = json.loads((demo_root / "env_report.json").read_text())
        env["workload"]["conc"] = 32
        (demo_root / "env_report.json").write_text(json.dumps(env))
        await wait_until(pilot, lambda: "conc 32" in str(app.query_one("#header-info", Static).content))


async def test_an_engine_exception_is_shown_in_place(profile: Path, monkeypatch) -> None:
    import roofline_tui.app.runner as app_module

    def boom(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(app_module, "analyze_round", boom)
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "analysis failed: RuntimeError: boom" in status_text(app)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert app.is_running and app.session.shown == profile / "round_1"


async def test_inputs_above_the_profile_directory_are_watched(demo_root: Path, profile: Path) -> None:
    """`roofline dash profile/`: env_report.json and config.json sit above the watched tree; the
    analyses read them, so they are watched too (issue 14 item 6)."""
    app = make_app(profile, watch=True)  # watch root: profile/ only
    async with app.run_test(size=(120, 36)) as pilot:
        await start_watching(pilot)
        await wait_until(pilot, lambda: any(p.name == "env_report.json"
                                            for p in app.watched_inputs))
        await pilot.pause(0.3)
        env = json.loads((demo_root / "env_report.json").read_text())
        env["workload"]["conc"] = 48
        (demo_root / "env_report.json").write_text(json.dumps(env))
        await wait_until(pilot, lambda: "conc 48" in str(app.query_one("#header-info", Static).content))

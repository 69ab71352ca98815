"""Help and palette built from the live bindings, the round selector, quitting while an analysis
runs, tab labels that follow the shown round, the Flags tab's contradiction text."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.console import Console
from textual.binding import Binding
from textual.widgets import Input, Select, Static

from roofline_tui.app import view
from roofline_tui.app.app import RooflineApp
from roofline_tui.app.widgets.help_screen import HelpScreen
from roofline_tui.app.widgets.rank_table import RankTable
from roofline_tui.core.artifact import Artifact, Entry

from .helpers import make_app, messages, record_toasts, settle, static_text, wait_until


def plain(renderable, width: int = 160) -> str:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


async def test_help_lists_every_binding_once_from_the_bindings(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = static_text(app.screen.query_one("#help-body"), width=110)
        for b in [*RooflineApp.BINDINGS, *RankTable.BINDINGS]:
            assert isinstance(b, Binding), b
            assert (b.tooltip or b.description) in text, b
        # each key's text is written once: on its Binding (the help has no copy of its own)
        assert text.count("write profile_roofline.json + .md into the shown round's") == 1
        assert "^p" in text and "command palette" in text
        # the flags legend explains each one-character symbol
        for flag, symbol in view.FLAG_SYMBOL.items():
            assert f"{symbol} {flag}" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_commands_come_from_the_bindings(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        titles = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert titles["Recompute"] == "analyse the shown round again now (r)"
        assert titles["Next"] == "show the next round (])"
        assert titles["CSV"].startswith("write profile_roofline.csv")
        assert titles["Screenshot"] == "Save an SVG screenshot in the current directory"


async def test_palette_screenshot_saves_an_svg_in_the_cwd_and_says_where(
        profile: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(profile)
    toasts = record_toasts(app)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        app.screen.query_one(Input).value = "Screenshot"
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(m.startswith("saved ") for m in messages(toasts)))
    svgs = list(tmp_path.glob("*.svg"))
    assert len(svgs) == 1 and svgs[0].read_text().startswith("<svg")
    assert any(m == f"saved {svgs[0]}" for m in messages(toasts))


async def test_round_selector_has_no_blank_entry(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        select = app.query_one("#round-select", Select)
        assert [v for _, v in select._options] == [str(profile / f"round_{i}") for i in range(3)]
        assert not select.disabled


async def test_q_quits_at_once_while_an_analysis_runs(profile: Path, monkeypatch) -> None:
    import roofline_tui.app.runner as app_module

    release = threading.Event()

    def slow(*_a, **_k):
        release.wait(30)
        raise RuntimeError("released")

    monkeypatch.setattr(app_module, "analyze_round", slow)
    app = make_app(profile)
    start = time.perf_counter()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        assert app.busy
        await pilot.press("q")
        await pilot.pause(0.1)
        assert not app.is_running
    assert time.perf_counter() - start < 5
    workers = [t for t in threading.enumerate() if t.name.startswith("analyze")]
    assert workers and all(t.daemon for t in workers)  # nothing waits for them at exit
    release.set()


async def test_degraded_label_follows_the_shown_round_and_tabs_are_never_blank(
        profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(130, 44)) as pilot:
        await settle(pilot)
        tabs = app.detail.tabs
        label = str(tabs.get_tab("degraded").label)
        assert app.shown_result is not None
        art = app.shown_result.artifact
        assert label == f"Degraded ({len(art.degraded) + len(art.skill_errors)})"
        # the path: down, tab tab, right to the last tab must land on a filled
        # Degraded tab (×9: the Ranks tab comes before it)
        await pilot.press("down", "tab", "tab", *["right"] * 9)
        await pilot.pause()
        assert tabs.active == "degraded"
        assert "degraded (" in static_text(app.query_one("#degraded-body"))
        await pilot.press("left", "left")
        await pilot.pause()
        assert tabs.active == "rounds"
        assert static_text(app.query_one("#rounds-body")).split()[0] == "round"
        # another round: the label follows it
        await pilot.press("shift+tab", "shift+tab", "left_square_bracket")
        await settle(pilot)
        assert app.shown_result is not None
        art = app.shown_result.artifact
        n = len(art.degraded) + len(art.skill_errors)
        assert str(tabs.get_tab("degraded").label) == (f"Degraded ({n})" if n else "Degraded")


def test_flags_tab_explains_a_contradiction() -> None:
    e = Entry(name="k", short_name="k", modeled=True, headroom_class="moderate",
              contradiction=True,
              contradiction_detail="measured 2.10× beats the predicted 1.30× by 62%")
    text = plain(view.flags(e, Artifact(entries=[e])))
    assert "C contradiction" in text
    assert "measured 2.10× beats the predicted 1.30× by 62%" in text
    assert "True" not in text


def test_model_caution_and_notes_caution_are_flagged() -> None:
    e = Entry(name="k", short_name="k", modeled=True, headroom_class="underperforming",
              attainable_speedup=12.1, model_caution="12x is NOT credible at face value")
    assert view.entry_flags(e)[0] == "caution"
    assert view.flags_text(e).plain == "!"
    n = Entry(name="n", short_name="n", notes="Stage A. The 75x speedup is implausible here. "
              "Measure first.")
    assert view.caution(n) == "The 75x speedup is implausible here."
    assert view.caution(Entry(name="o", short_name="o", notes="fine")) is None


async def test_hostile_round_directory_names_never_reach_the_terminal_raw(profile: Path) -> None:
    """Issue 16: a round directory named with an OSC 52 sequence (clipboard write) is shown
    escaped in the selector, the header, the notes and the toasts."""
    evil = "round_\x1b]52;c;ZXZpbA==\x07"
    (profile / "round_2").rename(profile / evil)
    app = make_app(profile)
    toasts = record_toasts(app)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        assert app.session.shown == profile / evil
        await pilot.press("r", "e", "c")
        await pilot.pause(0.2)
        (profile / evil).rename(profile / "round_9")  # the shown round goes away: a toast
        app.apply(app.session.rescan())
        await settle(pilot)
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\x07" not in svg
        assert toasts and all("\x1b" not in m and "\x07" not in m for m in messages(toasts))
        assert any("round_\\x1b]52;c;ZXZpbA==\\x07 was deleted" in m for m in messages(toasts))


async def test_focus_is_visible_on_every_focusable_widget(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(130, 44)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # into the drill-down: its scroll area joins the chain
        await pilot.pause()
        chain = list(app.screen.focus_chain)
        assert len(chain) >= 4

        def look(w) -> tuple:
            s = w.styles
            box = w.parent if w.parent is not None else w
            title = next(iter(box.query(".table-title")), None)
            active = next(iter(w.query("Tab.-active")), None)  # the drill-down's tab strip
            return (str(s.background), str(s.background_tint), str(s.border), str(s.tint),
                    str(title.styles.background) if title is not None else "",
                    str(active.styles.text_style) if active is not None else "")

        for w in chain:
            other = next(o for o in chain if o is not w)
            other.focus()
            await pilot.pause()
            blurred = look(w)
            w.focus()
            await pilot.pause()
            assert look(w) != blurred, w


async def test_a_truncated_topn_is_called_invalid_with_where_after_a_few_seconds(
        profile: Path) -> None:
    r = profile / "round_2"
    text = (r / "profile_topN.json").read_text()
    (r / "profile_topN.json").write_text(text[: len(text) // 3])  # left half-written
    app = make_app(profile, invalid_after_s=0.3)
    now = [1000.0]
    app.session.monotonic = lambda: now[0]  # the session's clock: time passes when we say so
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        status = app.query_one("#status", Static)
        await pilot.pause(0.5)  # the re-check timers fire: no time has passed for the session
        assert "is being written" in str(status.content)
        now[0] += 0.31  # 0.31 s without a change
        await wait_until(pilot, lambda: "is invalid" in str(status.content), timeout=3)
        note = str(status.content)
        assert note.startswith("profile_topN.json in round_2 is invalid: invalid JSON at line ")
        assert "column" in note and "unchanged for 0.3 s" in note
        assert status.has_class("-error")


async def test_the_chart_gets_the_height_at_80x24(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        plot = app.query_one("#roofline-plot")
        assert plot.region.height >= 12  # was 5 rows before the rankings stepped aside
        await pilot.click("#--content-tab-summary")
        await pilot.pause()
        assert app.query_one("#tables").display  # the rankings are back

"""Issue 34 items 4 and 5 on screen: the Ranks tab (each rank's trace, the selected kernel's spread
across them), the 80×24 layout (the whole Next line, the header with many heads, the
drill-down's first rows without a key) and the help's words (every pane's keys, each bound type,
what ✕ covers)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from roofline_tui.app.view import FLAG_MEANING
from roofline_tui.core.analyze import AnalyzeOptions
from tests.cli.helpers import roofline
from tests.importers.test_ranks import SCALE, rank_trace, write
from tests.paths import REAL_FORMATS, need
from tests.rank_round import STRAGGLER, ranked_round

from .helpers import make_app, screen_text, settle, static_text

SGLANG = REAL_FORMATS / "wild" / "tracelens_sglang_qwen3-8b_decode.json.gz"


async def _ranks_tab(app, pilot) -> str:
    await pilot.click("#--content-tab-ranks")
    await pilot.pause()
    return static_text(app.query_one("#ranks-body"), width=110)


async def test_ranks_tab_lists_each_rank_and_the_kernels_spread(tmp_path: Path) -> None:
    round_dir = ranked_round(tmp_path / "three")
    app = make_app(round_dir.parent)
    async with app.run_test(size=(130, 44)) as pilot:
        await settle(pilot)
        assert app.selected_row is not None
        assert app.selected_row.entry.short_name == STRAGGLER
        text = await _ranks_tab(app, pilot)
        assert "this Top-N is rank 1" in text and "3 ranks read" in text
        lines = text.splitlines()
        for r in (0, 1, 2):  # one row per rank trace, with its GPU time
            assert any(ln.split()[:1] == [str(r)] and f"rank{r}.pt.trace.json.gz" in ln
                       for ln in lines), text
        assert "min 23.4 µs · median 26.1 µs · max 57.3 µs" in text
        assert "rank 1  2.20× the median" in text
        assert "slowest for this kernel" in next(ln for ln in lines if "rank1.pt" in ln)
        # another kernel selected: its own spread
        app.pct_table.focus()
        await pilot.press("down")
        await pilot.pause()
        text = static_text(app.query_one("#ranks-body"), width=110)
        assert "1.10× the median" in text and "2.20×" not in text


async def test_a_single_trace_round_says_it_has_no_spread(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(130, 44)) as pilot:
        await settle(pilot)
        assert "one trace: no rank spread" in await _ranks_tab(app, pilot)


async def test_help_lists_the_drill_down_keys_and_defines_the_bound_types(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = static_text(app.screen.query_one("#help-body"), width=110)
    lines = text.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("In the drill-down")))
    drill = lines[start:lines.index("", start)]
    keys = {ln.split()[0] for ln in drill[1:]}
    assert {"←", "→", "⏎"} <= keys, drill
    assert any("previous drill-down tab" in ln for ln in drill)
    assert any("next drill-down tab" in ln for ln in drill)
    # each bound type defined, latency-bound with its threshold
    latency = next(ln for ln in lines if ln.startswith("latency-bound"))
    assert "under 60%" in latency and "neither roof" in latency
    for bound in ("memory-bound", "compute-bound", "dispatch-bound", "unknown"):
        assert any(ln.startswith(bound) for ln in lines), bound
    # ✕ covers both sides: above the peak and under-counted (0%!)
    assert "above the peak" in FLAG_MEANING["suspect"] and "0%!" in FLAG_MEANING["suspect"]
    assert "under-counts" in " ".join(text.split())
    for section in ("Everywhere", "In a ranking", "In the chart", "In the round selector",
                    "In this help"):
        assert section in lines


async def test_80x24_keeps_the_header_next_line_and_drill_down_with_many_heads(
        profile: Path) -> None:
    app = make_app(profile, options=AnalyzeOptions(head_threshold_pct=1.0, max_heads=12))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.shown_result is not None
        assert len(app.shown_result.artifact.entries) >= 7
        screen = screen_text(app.export_screenshot())
        assert screen[0].startswith("round_2") and "round_2 (3/3)" in screen[0]  # the header
        nt = app.shown_result.artifact.next_target
        assert nt is not None
        joined = " ".join(" ".join(screen).split())
        assert " ".join(nt.line.split()) in joined  # the whole Next line, wrapped
        assert "By GPU time" in joined and "By expected gain" in joined
        assert "short name" in joined  # the drill-down's first rows, without enter
        assert "? Help" in screen[-1]
        # moving down the ranking keeps the header on screen (the rankings scroll, not it)
        await pilot.press(*["down"] * 10)
        await pilot.pause()
        screen = screen_text(app.export_screenshot())
        assert "round_2 (3/3)" in screen[0] and screen[2].startswith(" Next")


async def test_80x24_wraps_a_next_line_that_starts_with_the_step(tmp_path: Path) -> None:
    """A real import of several ranks (the SGLang trace scaled per rank, as
    tests/importers/test_ranks.py builds them): the Next line, however long, is on screen
    whole, and the Ranks tab names the slowest rank."""
    with gzip.open(need(SGLANG), "rt", encoding="utf-8") as fh:
        base = json.load(fh)
    traces = tmp_path / "traces"
    for r in SCALE:
        write(traces / f"rank{r}.json.gz", rank_trace(base, r))
    profile = tmp_path / "profile"
    done = roofline("import", "torch", traces, "--out", profile / "round_0")
    assert done.returncode == 0, done.stderr
    app = make_app(profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.shown_result is not None and app.shown_result.artifact.entries
        nt = app.shown_result.artifact.next_target
        assert nt is not None
        screen = screen_text(app.export_screenshot())
        joined = " ".join(" ".join(screen).split())
        assert " ".join(nt.line.split()) in joined
        if "then:" in nt.line:  # the step's own bound said first (importers.step_time)
            assert "then:" in joined
        text = await _ranks_tab(app, pilot)
        assert "this Top-N is rank 1" in text and "3 ranks read" in text

"""Issue 14: which kernel next and why, readable names, side by side at 120 columns, copy, sort,
change, coverage, CSV, the Rounds tab's pairs, keys, the chart's labels."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from roofline_tui.app import view
from roofline_tui.app.widgets.roofline_chart import RooflineChart
from roofline_tui.app.widgets.roofline_marks import place_labels
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.demangle import demangle, display_name, fit
from roofline_tui.core.rounds.analysis import analyze_round
from roofline_tui.core.table_csv import COLUMNS, artifact_to_csv
from tests.paths import DEMO, REPO_ROOT, UPSTREAM_SAMPLES

from .helpers import column, make_app, screen_text, settle, static_text, wait_until

SAMPLES = UPSTREAM_SAMPLES
GLM = "profile_roofline.glm-5.3-flash.json"
MINIMAX = "profile_roofline.minimax-m3.round_tuning.json"
CK = ("_ZN5aiter26cross_device_reduce_2stageIDF16bLi8ELb0EEEvPNS_8RankDataES2_NS_11RankSignalsE"
      "PNS_6SignalEPT_ii")
CIJK_A = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x1024_MI16x16x1_SN_LDSB1_WG16_4_4"
CIJK_B = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x512_MI16x16x1_SN_LDSB0_WG32_8_1"


def stored(tmp_path: Path, sample: str, round_name: str = "round_0") -> Path:
    """A profile holding one upstream artifact (display mode); skipped without the samples."""
    src = SAMPLES / sample
    if not src.is_file():
        pytest.skip(f"{sample} not available")
    r = tmp_path / "profile" / round_name
    r.mkdir(parents=True)
    shutil.copy(src, r / "profile_roofline.json")
    return r.parent


# -- names --------------------------------------------------------------------------------------

def test_demangles_itanium_names_including_bfloat16() -> None:
    assert demangle(CK) == ("void aiter::cross_device_reduce_2stage<std::bfloat16_t, 8, false>"
                            "(aiter::RankData*, aiter::RankData*, aiter::RankSignals, "
                            "aiter::Signal*, std::bfloat16_t*, int, int)")
    assert display_name(CK) == "cross_device_reduce_2stage<…>"
    assert display_name(CK, qualified=True) == "aiter::cross_device_reduce_2stage<…>"
    assert demangle("fused_moe_kernel") is None and demangle("_Zgarbage") is None
    assert display_name("Memcpy HtoD (Pinned -> Device)") == "Memcpy HtoD (Pinned -> Device)"


def test_cut_in_the_middle_keeps_what_tells_kernels_apart() -> None:
    # 20 cells: head 13, "…", tail 6 (a third of the rest)
    assert fit("vectorized_elementwise_kernel#2", 20) == "vectorized_el…rnel#2"
    a, b = fit(CIJK_A, 24, [CIJK_B]), fit(CIJK_B, 24, [CIJK_A])
    assert len(a) == len(b) == 24 and a != b
    assert a.endswith("16_4_4") and b.endswith("32_8_1")
    # head and tail shared: the window where they differ is shown
    x = "_gqa_share_sparse_fwd_kernel"
    y = "_gqa_share_sparse_decode_kernel"
    fx, fy = fit(x, 18, [y]), fit(y, 18, [x])
    assert fx != fy and "fwd" in fx and "dec" in fy and len(fx) == len(fy) == 18
    assert fit("short", 18, [x]) == "short"


async def test_upstream_names_differ_demangled_with_full_name_in_drill_down_and_tooltip(
        tmp_path: Path) -> None:
    app = make_app(stored(tmp_path, GLM))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        kernels = column(app.pct_table, "kernel")
        cijk = [k for k in kernels if k.startswith("Cijk")]
        assert len(cijk) == 2 and cijk[0] != cijk[1]
        assert any(k.startswith("kernel_gemm_xdl_c") and k.endswith("<…>") for k in kernels)
        # the mangled ck GEMM: its demangled name in the drill-down and as the row's tooltip
        row = next(i for i, k in enumerate(kernels) if k.startswith("kernel_gemm"))
        app.pct_table.move_cursor(row=row)
        await pilot.pause()
        tip = str(app.pct_table.tooltip)
        assert tip.startswith("void ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_"
                              "preshuffle<ck::GridwiseGemmMultiD")
        summary = static_text(app.query_one("#summary-body"), width=400)
        assert "kernel                void ck::kernel_gemm_xdl" in summary
        assert "mangled               _ZN2ck59kernel_gemm_xdl" in summary


async def test_names_widen_with_the_terminal(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        narrow = max(len(k) for k in column(app.pct_table, "kernel"))
        await pilot.resize_terminal(200, 50)
        await wait_until(pilot, lambda: max(len(k) for k in column(app.pct_table, "kernel"))
                         > narrow)
        assert "triton_poi_fused_add_mul_sigmoid_silu_0" in column(app.pct_table, "kernel")


# -- caution and the next target ---------------------------------------------------------------

async def test_implausible_speedups_are_flagged_and_never_the_next_target(tmp_path: Path) -> None:
    app = make_app(stored(tmp_path, MINIMAX, "round_tuning"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        speedups = column(app.gain_table, "speedup")
        assert speedups[:2] == ["12.09×!", "11.84×!"]  # upstream model_caution: NOT credible
        assert column(app.pct_table, "flags")[0] == "!"
        nxt = str(app.query_one("#next-target", Static).content)
        assert nxt.startswith("Next (advisory, stage A): _decode_score_kernel — moderate")
        assert "(gain 2.35%, speedup 1.42×, confidence low)" in nxt
        # the skipped entries are counted by reason (core/reading.py's wording)
        assert "skipped higher: 2 with an implausible speedup (!)" in nxt
        assert "_gqa_share_sparse_fwd_kernel" not in nxt


async def test_next_target_names_host_side_levers_on_the_demo(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        nxt = str(app.query_one("#next-target", Static).content)
        # round 2: no editable entry qualifies, so the hipBLASLt GEMM (not editable) is the
        # pick, host-side, and the line names it first, as the artifact's next_target does.
        # The MoE, saturated at 0.00 %, ranks below it in the gain ranking: it was not passed
        # over, and is not named (before, it led the line, "· then:" the pick)
        assert app.shown_result is not None
        stored = app.shown_result.artifact.next_target
        assert stored is not None and nxt == stored.line
        assert nxt.startswith("Next (advisory, stage A): Cijk_Alik_Bljk_BBS_BH_Bias")
        assert nxt.endswith("— host-side levers only (dispatch, tuning DB, backend) "
                            "(gain 3.38%, speedup 2.40×, confidence low)")
        assert "fused_moe_kernel" not in nxt and "gain 0.00%" not in nxt
        # coverage: 24.21 + 7.02 + 6.08 + 5.80 + 5.63 = 48.74 % in 5 heads of 25 Top-N kernels
        cov = str(app.query_one("#coverage", Static).content)
        assert cov.startswith("5 heads = 48.7% of GPU time · Top-N: 25 kernels = 64.0%")
        assert "20 below the head threshold" in cov


def test_levers_of_a_dispatch_bound_entry_name_fusion_and_graph_capture() -> None:
    art = analyze_round(DEMO / "profile" / "round_2").artifact
    e = art.entry("triton_poi_fused_add_mul_sigmoid_silu_0")
    assert e is not None and getattr(e, "dispatch_bound", False)
    text = static_render(view.levers(e))
    assert "fuse it with its neighbours" in text and "CUDA/HIP graph" in text
    assert "none" not in text


def static_render(renderable) -> str:
    from rich.console import Console

    console = Console(width=160, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


# -- layout ---------------------------------------------------------------------------------------

async def test_side_by_side_at_120_and_usable_at_80x24(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.pct_table.region.y == app.gain_table.region.y  # side by side
        assert app.gain_table.region.x >= 59
        assert "route" in [c.key.value for c in app.gain_table.ordered_columns]
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        await settle(pilot)
        assert app.gain_table.region.y > app.pct_table.region.y  # stacked
        text = "\n".join(screen_text(app.export_screenshot()))
        assert "? Help" in text and "q Quit" in text
        # the whole Next line (wrapped), then four head rows of each ranking (they scroll for
        # the fifth) and the drill-down's first rows, all without a key; route and flags are
        # not cut off
        assert app.pct_table.row_count == app.gain_table.row_count == 5
        assert app.pct_table.region.height >= 5 and app.gain_table.region.height >= 5
        assert "host_side" in text and "✕" in text
        assert app.shown_result is not None
        line = app.shown_result.artifact.next_target.line  # type: ignore[union-attr]
        assert " ".join(text.split()).count(" ".join(line.split())) == 1
        assert "short name" in text  # the Summary tab's rows
        # enter opens the drill-down maximized, with focus in it; escape comes back
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.maximized is app.detail
        assert app.focused is not None and app.detail in app.focused.ancestors_with_self
        await pilot.press("escape")
        assert app.screen.maximized is None and app.focused is app.pct_table


# -- keys: copy, sort, home/end, enter, [ ] in the chart, all kernels, CSV --------------------------

async def test_copy_name_and_json(profile: Path, monkeypatch) -> None:
    app = make_app(profile)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "y", "Y")
        assert app.selected_row is not None
        entry = app.selected_row.entry
        assert copied[0] == entry.name
        assert json.loads(copied[1])["short_name"] == entry.short_name


async def test_sort_by_key_and_by_header_click(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        assert column(app.pct_table, "rank") == ["1", "2", "3", "4", "5"]
        await pilot.press("s", "s")  # rank -> kernel -> %gpu (descending)
        assert app.rankings.sort["by-pct"] == ("pct", True)
        assert "sorted by %gpu ↓" in str(app.query_one("#pct-title", Static).content)
        # a click on the gain table's "speedup" header: descending; again: ascending
        await pilot.click("#by-gain", offset=(2, 0))  # focus it
        await pilot.pause()
        app.gain_table.post_message(_header(app, "speedup"))
        await pilot.pause()
        assert app.rankings.sort["by-gain"] == ("speedup", True)
        assert column(app.gain_table, "speedup")[:2] == ["2.40×", "1.00×"]
        assert "sorted by speedup ↓" in str(app.query_one("#gain-title", Static).content)
        app.gain_table.post_message(_header(app, "speedup"))
        await pilot.pause()
        assert app.rankings.sort["by-gain"] == ("speedup", False)
        assert column(app.gain_table, "speedup")[0] == "1.00×"


def _header(app, key: str):
    from textual.widgets import DataTable

    table = app.gain_table
    col = next(c for c in table.ordered_columns if c.key.value == key)
    index = table.ordered_columns.index(col)
    return DataTable.HeaderSelected(table, col.key, index, col.label)


async def test_home_end_and_enter_focus_the_drill_down(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("end")
        assert app.pct_table.cursor_row == 4
        await pilot.press("home")
        assert app.pct_table.cursor_row == 0
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is not None and app.detail in app.focused.ancestors_with_self


async def test_brackets_step_rounds_in_the_chart_and_arrows_step_kernels(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        chart = app.query_one(RooflineChart)
        assert chart.has_focus and not app.query_one("#tables").display  # the chart gets it all
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert app.session.shown == profile / "round_1"
        before = chart.selected
        await pilot.press("down")
        await pilot.pause()
        assert chart.selected != before


async def test_change_column_and_rounds_tab_pairs(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("left_square_bracket")  # round 1: the MoE was tuned (1.047×)
        await settle(pilot)
        change = dict(zip(column(app.pct_table, "kernel"), column(app.pct_table, "change"),
                          strict=True))
        # t/launch 49.471 µs → 49.471 / 1.047 = 47.250 µs: -4.49 %, beyond the 3.4 % band
        assert change["fused_moe_kernel"] == "-4.5%"
        assert change["kernel_paged_attention_2d"] == "±0.0%"
        await pilot.click("#--content-tab-rounds")
        await pilot.pause()
        text = static_text(app.query_one("#rounds-body"))
        assert "predicted vs actual" in text
        lines = [ln.split() for ln in text.splitlines()]
        moe = next(ln for ln in lines if ln and ln[0] == "fused_moe_kernel")
        # round 0 predicted 1.022× for the MoE; round 1 measured 1.047×
        assert moe[1:6] == ["decode", "0", "→", "1", "1.022×"] and moe[6] == "1.047×"
        assert "at_ceiling" in moe


async def test_below_threshold_kernels_on_demand(profile: Path) -> None:
    app = make_app(profile)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        assert app.pct_table.row_count == 5
        await pilot.press("a")
        await pilot.pause()
        assert app.pct_table.row_count == 25
        row = app.pct_table.get_row_at(5)
        assert row[0].plain == "6" and "dim" in str(row[1].style)
        await pilot.press("a")
        assert app.pct_table.row_count == 5


async def test_capital_e_writes_the_csv_atomically_and_does_not_recompute(profile: Path) -> None:
    app = make_app(profile, watch=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.watching)
        await pilot.pause(0.25)
        generation = app.session.generation
        await pilot.press("E")
        path = profile / "round_2" / "profile_roofline.csv"
        assert path.is_file()
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        assert app.shown_result is not None
        assert [r["short_name"] for r in rows] == app.shown_result.artifact.ranking_by_pct
        assert rows[0]["pct_gpu_time"] == "24.21" and rows[0]["rank_by_expected_gain"] == "2"
        assert not list(path.parent.glob(".profile_roofline.csv*"))  # no temp file left
        await pilot.pause(0.6)
        assert app.session.generation == generation


def test_csv_has_the_tables_columns_and_defuses_formulas() -> None:
    art = analyze_round(DEMO / "profile" / "round_2").artifact
    text = artifact_to_csv(art)
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == COLUMNS and len(rows) == 1 + len(art.entries)
    evil = art.model_copy(deep=True)
    evil.entries[0].short_name = "=HYPERLINK(\"x\")"
    evil.ranking_by_pct[0] = evil.entries[0].short_name
    out = list(csv.DictReader(io.StringIO(artifact_to_csv(evil))))
    assert out[0]["short_name"].startswith("'=")


# -- chart labels ---------------------------------------------------------------------------------

def test_labels_never_cover_each_other() -> None:
    # points 2, 3 and 5 on one cell; 4 right next to 1
    anchors = [("1", (10, 5)), ("2", (30, 8)), ("3", (30, 8)), ("4", (12, 5)), ("5", (31, 8))]
    placed, hidden = place_labels(anchors, 60, 20)
    assert placed["2"] == placed["3"] == placed["5"] == ((32, 8), "2,3,5")
    spans = {}
    for (x, y), text in placed.values():
        spans[text] = {(x + i, y) for i in range(len(text))}
    texts = list(spans)
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not spans[a] & spans[b]
        assert not spans[a] & {cell for _, cell in anchors}
    assert hidden == []
    full, hidden = place_labels([("1", (0, 0)), ("2", (0, 0))], 1, 1)
    assert full == {} and hidden == ["1", "2"]


def test_display_mode_headroom_class_is_escaped(tmp_path: Path) -> None:
    art = Artifact.model_validate(json.loads((SAMPLES / GLM).read_text())) \
        if (SAMPLES / GLM).is_file() else pytest.skip("sample missing")
    # a hostile file's value, outside the field's Literal: set without validation, as a
    # constructed-but-unchecked entry would carry it
    e = art.entries[0].model_copy(update={"headroom_class": "sat\x1b]52;c;ZXZpbA==\x07"})
    assert "\x1b" not in view.headroom_text(e).plain
    assert "\\x1b" in view.headroom_text(e).plain


def test_analyze_csv_flag_writes_the_csv_beside_the_artifact(demo_root: Path) -> None:
    import subprocess
    import sys

    r = demo_root / "profile" / "round_0"
    done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(r), "--csv"],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO((r / "profile_roofline.csv").read_text())))
    stored = json.loads((r / "profile_roofline.json").read_text())
    assert [row["short_name"] for row in rows] == stored["ranking_by_pct"]
    # the MoE head: 23.80 % of GPU time in round 0, copied verbatim from the Top-N
    assert rows[0]["short_name"] == "fused_moe_kernel" and rows[0]["pct_gpu_time"] == "23.8"

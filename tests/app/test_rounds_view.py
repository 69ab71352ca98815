"""Pure helpers behind the dashboard: round discovery and what each table row shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from roofline_tui.app import view
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.layout import (
    is_relevant_change,
    order_round_dirs,
    round_of,
    rounds_at,
)
from roofline_tui.core.rounds.analysis import analyze_round
from tests.paths import DEMO, REPO_ROOT


def test_numeric_rounds_in_numeric_order_named_rounds_after_by_mtime(tmp_path: Path) -> None:
    for name, mtime in (("round_10", 1), ("round_2", 2), ("round_tuning", 100), ("round_a", 50),
                        ("round_0", 3), ("notes", 4)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (mtime, mtime))
    (tmp_path / "round_file.json").write_text("{}")  # a file, not a round
    names = [p.name for p in rounds_at(tmp_path)]
    assert names == ["round_0", "round_2", "round_10", "round_a", "round_tuning"]


def test_the_listing_follows_the_directory_between_calls(tmp_path: Path) -> None:
    """The round list is read from the directory entries each time (numeric orders are
    remembered per set of names): a round that appears or goes shows at once, a symlink to a
    round directory is a round and a dangling one is not, a named round moves when its Top-N
    is rewritten."""
    for name in ("round_1", "round_0", "round_b", "round_a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile_topN.json").write_text("{}")
    for name, when in (("round_a", 10), ("round_b", 20)):
        os.utime(tmp_path / name / "profile_topN.json", (when, when))
    names = lambda: [p.name for p in rounds_at(tmp_path)]  # noqa: E731
    assert names() == ["round_0", "round_1", "round_a", "round_b"]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "round_12").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "round_3").symlink_to(tmp_path / "gone")
    assert names() == ["round_0", "round_1", "round_12", "round_a", "round_b"]
    (tmp_path / "round_1" / "profile_topN.json").unlink()
    (tmp_path / "round_1").rmdir()
    os.utime(tmp_path / "round_a" / "profile_topN.json", (30, 30))
    assert names() == ["round_0", "round_12", "round_b", "round_a"]
    assert all(p.parent == tmp_path for p in rounds_at(tmp_path))


def test_single_round_directory_and_missing_or_empty_profile(tmp_path: Path) -> None:
    assert rounds_at(tmp_path / "absent") == []
    assert rounds_at(tmp_path) == []
    single = tmp_path / "my_run"
    single.mkdir()
    (single / "profile_topN.json").write_text("{}")
    assert rounds_at(single) == [single]
    named = tmp_path / "round_7"
    named.mkdir()
    assert rounds_at(named) == [named]  # a round directory given directly, Top-N pending


def test_order_is_stable_for_equal_mtimes(tmp_path: Path) -> None:
    dirs = [tmp_path / n for n in ("round_b", "round_a")]
    for d in dirs:
        d.mkdir()
        os.utime(d, (5, 5))
    assert [p.name for p in order_round_dirs(dirs)] == ["round_a", "round_b"]


def test_change_filter_ignores_our_exports_and_temp_files(tmp_path: Path) -> None:
    r = tmp_path / "round_0"
    assert is_relevant_change(r / "profile_topN.json", tmp_path)
    assert is_relevant_change(tmp_path / "env_report.json", tmp_path)
    assert is_relevant_change(tmp_path / "round_3", tmp_path)  # a round directory appearing
    for ignored in ("profile_roofline.json", "profile_roofline.md",
                    ".profile_roofline.json.abc123.tmp", "profile_topN.json.swp",
                    "profile_topN.json~", "trace.pt.trace.gz"):
        assert not is_relevant_change(r / ignored, tmp_path), ignored
    assert not is_relevant_change(tmp_path / ".git" / "index.json", tmp_path)
    # a hidden directory *above* the watched root does not hide everything below it
    hidden_root = tmp_path / ".cache" / "profile"
    assert is_relevant_change(hidden_root / "round_0" / "profile_topN.json", hidden_root)


def test_round_of_maps_a_changed_file_to_its_round(tmp_path: Path) -> None:
    rounds = [tmp_path / "round_0", tmp_path / "round_1"]
    assert round_of(tmp_path / "round_1" / "profile_topN.json", rounds) == rounds[1]
    assert round_of(tmp_path / "round_1" / "counters" / "x.csv", rounds) == rounds[1]
    assert round_of(tmp_path / "env_report.json", rounds) is None
    assert round_of(tmp_path / "round_10" / "profile_topN.json", rounds) is None


def test_rankings_follow_the_engine_and_show_rank_movement() -> None:
    result = analyze_round(DEMO / "profile" / "round_0")
    a = result.artifact
    pct_rows, gain_rows = view.rank_rows(a)
    assert [r.key for r in pct_rows] == a.ranking_by_pct
    assert [r.key for r in gain_rows] == a.ranking_by_expected_gain
    moves = view.rank_moves(pct_rows, gain_rows)
    # Cijk GEMM: 5th by GPU time, 2nd by expected gain -> moved up 3 places
    cijk = next(k for k in moves if k.startswith("Cijk"))
    assert moves[cijk] == 3
    assert view.move_text(moves[cijk]).plain == "↑3"
    assert view.move_text(-2).plain == "↓2"
    assert view.move_text(0).plain == "="


def test_repeated_short_names_get_distinct_rows() -> None:
    a = Artifact(entries=[Entry(name="a<1>", short_name="k"), Entry(name="a<2>", short_name="k")],
                 ranking_by_pct=["k", "k"], ranking_by_expected_gain=["k", "k"])
    pct_rows, _ = view.rank_rows(a)
    assert [r.key for r in pct_rows] == ["k", "k#2"]
    assert [r.entry.name for r in pct_rows] == ["a<1>", "a<2>"]


def test_rows_read_their_labels_and_the_filter_finds_them() -> None:
    moe = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
    a = Artifact(entries=[Entry(name=moe, short_name=moe, label="vllm::moe_forward bf16 [32]"),
                          Entry(name=moe + "_swiglu", short_name=moe + "_swiglu",
                                label="vllm::moe_forward bf16 [32]")],
                 ranking_by_pct=[moe, moe + "_swiglu"],
                 ranking_by_expected_gain=[moe, moe + "_swiglu"])
    pct_rows, _ = view.rank_rows(a)
    assert list(view.display_names(pct_rows).values()) == [
        "vllm::moe_forward bf16 [32]", "vllm::moe_forward bf16 [32] · swiglu"]
    assert all(view.matches(r, "MOE_FORWARD") for r in pct_rows)  # what the row reads
    assert all(view.matches(r, "matmul_ogs") for r in pct_rows)  # and its name, as before


def _render(renderable: object) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_untrusted_names_render_literally() -> None:
    evil = "[bold red]boom[/] \x1b[2J\x07"
    e = Entry(name=evil, short_name=evil, suspect=True, headroom_class="unknown",
              notes="[link=x]n[/link]")
    shown = view.display_names([view.Row(e.short_name, 1, e)])[e.short_name]
    for text in (view.kernel_text(e, shown), view.safe(e.name)):
        assert "[bold red]boom[/]" in text.plain
        assert "\x1b" not in text.plain and "\\x1b[2J" in text.plain
    out = _render(view.summary(e, Artifact(entries=[e])))
    assert "[bold red]boom[/]" in out and "\x1b" not in out


def test_suspect_entry_shows_raw_ratio_and_bytes_upper_bound() -> None:
    result = analyze_round(DEMO / "profile" / "round_0")
    e = result.artifact.entry("elementwise_kernel")
    assert e is not None and e.suspect
    assert view.roofline_text(e).plain == "100%!"
    flags = _render(view.flags(e, result.artifact))
    assert "suspect" in flags and "113.5%" in flags and "84 MB" in flags
    assert "stage-C candidate" in flags


def test_importing_the_cli_does_not_import_textual() -> None:
    code = ("import sys; from roofline_tui.cli import build_parser; build_parser(); "
            "assert 'textual' not in sys.modules, 'textual imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT, timeout=60)

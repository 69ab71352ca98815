"""Several ranks of one run, in every renderer (issue 34 item 4): ``roofline analyze``'s table, the
CSV and the Markdown's main table get each entry's spread across the ranks (max/median per
launch and the slowest rank), formatted once by ``core.reading.spread_text``; a single trace
gets no spread column (the CSV keeps its columns, empty)."""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

import pytest

from roofline_tui.core import api, reading
from roofline_tui.core.topn_ext import RankSpread
from tests.cli.helpers import roofline
from tests.rank_round import SCALE, STRAGGLER, TOPN_RANK, factor, ranked_round


def test_spread_text_is_max_over_median_and_the_slowest_rank() -> None:
    s = RankSpread(ranks=3, min_us=9.0, median_us=10.0, max_us=12.1, slowest_rank=1)
    assert reading.spread_text(s) == "1.21× r1"
    assert reading.spread_text(s, "device") == "1.21× gpu1"
    assert reading.spread_text(None) == "–"
    zero = RankSpread(ranks=2, min_us=0.0, median_us=0.0, max_us=0.0, slowest_rank=0)
    assert reading.spread_ratio(zero) is None and reading.spread_text(zero) == "– r0"


def _expected_ratio(name: str) -> float:
    per = [factor(r, name) for r in SCALE]
    return max(per) / statistics.median(per)


@pytest.fixture
def three(tmp_path: Path) -> Path:
    return ranked_round(tmp_path / "three")


def test_the_view_reads_the_topn_blocks(three: Path) -> None:
    result = api.analyze(three)
    view = api.ranks_of(result)
    assert view is not None and view.several and view.rank == TOPN_RANK
    assert [t.rank for t in view.traces] == sorted(SCALE)
    moe = result.artifact.entry(STRAGGLER)
    assert moe is not None
    spread = view.spread_of(moe)
    assert spread is not None and spread.slowest_rank == 1 and spread.ranks == 3
    ratio = reading.spread_ratio(spread)
    assert ratio == pytest.approx(_expected_ratio(STRAGGLER), rel=1e-3)  # 2.2 / 1.0


def test_analyze_table_csv_and_markdown_carry_the_spread(three: Path) -> None:
    done = roofline("analyze", three, "--csv")
    assert done.returncode == 0, done.stderr
    header = next(ln for ln in done.stdout.splitlines() if ln.startswith("#  kernel"))
    assert "rank spread" in header
    moe_line = next(ln for ln in done.stdout.splitlines() if f"  {STRAGGLER}  " in ln)
    assert "2.20× r1" in moe_line
    rows = list(csv.DictReader(io.StringIO((three / "profile_roofline.csv").read_text())))
    by_name = {r["short_name"]: r for r in rows}
    assert float(by_name[STRAGGLER]["rank_spread_max_over_median"]) == pytest.approx(2.2)
    assert by_name[STRAGGLER]["slowest_rank"] == "1"
    other = next(r for r in rows if r["short_name"] != STRAGGLER)
    assert float(other["rank_spread_max_over_median"]) == pytest.approx(1.1, rel=1e-3)
    assert list(rows[0])[-1] == "next_target"  # still the last column
    md = (three / "profile_roofline.md").read_text().splitlines()
    head = next(ln for ln in md if ln.startswith("| # | kernel | regime"))
    assert "| rank spread | flags |" in head
    moe_row = next(ln for ln in md if ln.startswith(f"| 1 | `{STRAGGLER}`"))
    assert "| 2.20× r1 |" in moe_row
    assert any(ln.startswith("rank spread: the slowest rank's") and "3 ranks read" in ln
               for ln in md)


def test_one_trace_gets_no_spread_column(tmp_path: Path) -> None:
    one = ranked_round(tmp_path / "single", ranks=(0,))
    result = api.analyze(one)
    view = api.ranks_of(result)
    assert view is not None and not view.several and reading.several_ranks(view) is None
    done = roofline("analyze", one, "--csv")
    assert done.returncode == 0, done.stderr
    assert "rank spread" not in done.stdout
    md = (one / "profile_roofline.md").read_text()
    assert "rank spread" not in md
    rows = list(csv.DictReader(io.StringIO((one / "profile_roofline.csv").read_text())))
    assert rows and all(r["rank_spread_max_over_median"] == r["slowest_rank"] == ""
                        for r in rows)

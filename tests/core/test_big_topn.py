"""A big Top-N (issue 26 item 3, issue 25 item 20): read row by row, only the biggest rows kept
as entries, the rest summarised; the same answers as a whole-document parse where both apply,
and one line instead of a traceback when memory runs out."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.core.inputs import (
    BULK_BYTES,
    KEEP_ROWS,
    _RowSink,
    parse_topn,
    read_topn,
    usable_row,
)
from tests.paths import DEMO


def _rows(n: int, pad: int = 0) -> list[Any]:
    """``n`` rows of small kernels, a few of them broken in the ways the loader reports."""
    rows: list[Any] = []
    for i in range(n):
        row: dict[str, Any] = {"name": f"tail_kernel_{i}", "pct_gpu_time": (i % 97) / 10_000,
                               "avg_us": 5.0 + i % 11, "calls": 3 + i % 5}
        if i % 101 == 7:
            row["avg_us"] = "fast"  # a field note
        if i % 113 == 3:
            row["serving_weighted_pct"] = 50.0 - i / 1000
        if pad:
            row["notes"] = ["x" * pad]
        rows.append(row)
    rows[5] = 42  # not an object
    rows[9] = {"pct_gpu_time": 1.0}  # no name
    rows[11] = {"name": "k", "pct_gpu_time": 140.0}  # not a percentage
    return rows


def _write(path: Path, doc: dict[str, Any]) -> str:
    text = json.dumps(doc, indent=1)
    path.write_text(text)
    return text


def test_a_big_file_with_few_rows_reads_as_the_whole_parse(tmp_path: Path) -> None:
    # rows fat enough that fewer than KEEP_ROWS of them pass BULK_BYTES: every row is kept
    n = KEEP_ROWS - 1
    pad = BULK_BYTES // n + 64
    doc = {"source": "bench", "top_kernels": _rows(n, pad), "total_gpu_time_ms": 12.5,
           "serving": {"n_decode_steps": 10}, "notes": ["from a test"]}
    path = tmp_path / "profile_topN.json"
    text = _write(path, doc)
    assert path.stat().st_size > BULK_BYTES
    streamed, problems, why = read_topn(path)
    whole, whole_problems = parse_topn(json.loads(text))
    assert why is None and streamed is not None
    assert streamed.tail is None
    assert streamed.model_dump() == whole.model_dump()
    assert problems == whole_problems
    assert any("not an object" in p for p in problems)
    assert any("avg_us ignored" in p for p in problems)


def test_a_big_top_n_keeps_its_biggest_rows_and_counts_the_rest(tmp_path: Path) -> None:
    n = 90_000
    rows = _rows(n)
    path = tmp_path / "profile_topN.json"
    text = _write(path, {"top_kernels": rows})
    assert path.stat().st_size > BULK_BYTES
    topn, problems, why = read_topn(path)
    assert why is None and topn is not None and topn.tail is not None
    whole, whole_problems = parse_topn(json.loads(text))
    # every usable row is accounted for, kept or counted; the shares add up
    assert topn.rows == len(whole.entries) == n - 3
    assert len(topn.entries) <= 2 * KEEP_ROWS
    kept_pct = sum(e.pct_gpu_time for e in topn.entries)
    all_pct = sum(e.pct_gpu_time for e in whole.entries)
    assert kept_pct + topn.tail.pct_gpu_time == pytest.approx(all_pct)
    # what is kept is the biggest by share (and by serving-weighted share)
    smallest_kept = min(e.pct_gpu_time for e in topn.entries)
    assert topn.tail.max_pct_gpu_time <= smallest_kept
    by_swp = sorted((e for e in whole.entries if e.serving_weighted_pct is not None),
                    key=lambda e: -(e.serving_weighted_pct or 0.0))
    kept_names = {e.name for e in topn.entries}
    assert {e.name for e in by_swp[:KEEP_ROWS]} <= kept_names
    # kept rows in file order, each as the whole parse has it
    whole_by_name = {e.name: e for e in whole.entries}
    for e in topn.entries:
        assert e.model_dump() == whole_by_name[e.name].model_dump()
    assert [e.name for e in topn.entries] == [e.name for e in whole.entries
                                              if e.name in kept_names]
    # unusable rows are reported wherever they are; field notes only for kept rows
    skipped = [p for p in whole_problems if "skipped" in p]
    assert [p for p in problems if "skipped" in p] == skipped
    assert any(f"{n - 3 - len(topn.entries):,} rows beyond" in note for note in topn.notes)


@pytest.mark.parametrize("text", [
    '{"top_kernels": [{"name": "a", "pct_gpu_time": 1}], "top_kernels": [{"name": "b", '
    '"pct_gpu_time": 2}]',  # truncated: the whole parse says where
    '{"top_kernels": [{"name": "a", "pct_gpu_time": NaN}]}',
])
def test_a_big_broken_file_gets_the_whole_parse_reason(tmp_path: Path, text: str) -> None:
    path = tmp_path / "profile_topN.json"
    path.write_text(text + " " * (BULK_BYTES + 10) if text.endswith("}") else
                    text + "," + " " * (BULK_BYTES + 10))
    got, problems, why = read_topn(path)
    assert got is None and why is not None
    assert len(problems) == 1 and "\n" not in problems[0]


def test_a_key_given_twice_reads_the_last_as_json_does(tmp_path: Path) -> None:
    pad = " " * (BULK_BYTES + 10)
    text = ('{"top_kernels": [{"name": "first", "pct_gpu_time": 1}],' + pad
            + '"top_kernels": [{"name": "second", "pct_gpu_time": 2}]}')
    path = tmp_path / "profile_topN.json"
    path.write_text(text)
    topn, _problems, why = read_topn(path)
    assert why is None and topn is not None
    assert [e.name for e in topn.entries] == ["second"]


def _demo_round(tmp_path: Path, extra_rows: int) -> Path:
    shutil.copytree(DEMO, tmp_path / "demo",
                    ignore=shutil.ignore_patterns("profile_roofline.*", "__pycache__"))
    round_dir = tmp_path / "demo" / "profile" / "round_2"
    path = round_dir / "profile_topN.json"
    data = json.loads(path.read_text())
    data["top_kernels"] += [{"name": f"k_{i}", "pct_gpu_time": 0.00001, "avg_us": 1.0,
                             "calls": 1} for i in range(extra_rows)]
    path.write_text(json.dumps(data))
    return round_dir


def _analyze(round_dir: Path, limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir)],
                          capture_output=True, text=True, timeout=300, preexec_fn=limit)


def test_analyze_of_a_big_top_n_names_the_same_heads(tmp_path: Path) -> None:
    small = _demo_round(tmp_path / "small", 0)
    big = _demo_round(tmp_path / "big", 150_000)
    assert (big / "profile_topN.json").stat().st_size > BULK_BYTES
    for r in (small, big):
        proc = _analyze(r)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    a = json.loads((small / "profile_roofline.json").read_text())
    b = json.loads((big / "profile_roofline.json").read_text())
    assert [e["name"] for e in b["entries"]] == [e["name"] for e in a["entries"]]
    assert b["ranking_by_expected_gain"] == a["ranking_by_expected_gain"]
    n = len(json.loads((big / "profile_topN.json").read_text())["top_kernels"])
    assert b["head_selection"].endswith(f"of {n} Top-N entries")
    assert any("rows beyond the" in note for note in b["profile_notes"])
    # the artifact describes the heads; the tail is summarised, not copied
    assert (big / "profile_roofline.json").stat().st_size < 4 * (
        small / "profile_roofline.json").stat().st_size


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux has it")
def test_out_of_memory_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    big = _demo_round(tmp_path, 150_000)
    size = (big / "profile_topN.json").stat().st_size
    # enough to start Python and the engine, not enough to read the file
    proc = _analyze(big, limit_bytes=_baseline_vm() + size // 2)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "profile_topN.json: not enough memory to read it" in lines[0]
    assert proc.returncode == 0


def _baseline_vm() -> int:
    """Virtual memory of a child that has imported the engine and read its bundled peak table
    (what the limit must allow: the analysis reads the table before the Top-N, and what the CLI
    happens to import at start-up must not decide whether there is room for it)."""
    code = ("import roofline_tui.cli, roofline_tui.cli.analyze, roofline_tui.cli.output\n"
            "import roofline_tui.core.api, roofline_tui.core.rounds.annotate\n"
            "import roofline_tui.core.peaks as p; p.load_peak_table()\n"
            "print(open('/proc/self/statm').read().split()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    import os

    return int(out.strip()) * os.sysconf("SC_PAGE_SIZE")



_NAMES = st.one_of(st.none(), st.booleans(), st.integers(), st.just(""), st.just("  \t"),
                   st.just("\u2003"), st.text(max_size=6), st.lists(st.just("k"), max_size=1))
_SHARES = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.integers(),
                    st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(["1.5", " 2 ", "nan", "fast", "", "1e999", "-0.0"]),
                    st.just(-0.0), st.just(100.0), st.just(100.00000000000001))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.fixed_dictionaries({}, optional={"name": _NAMES, "short_name": _NAMES,
                                                     "pct_gpu_time": _SHARES,
                                                     "serving_weighted_pct": _SHARES}),
                 st.integers(), st.none(), st.lists(st.integers(), max_size=2)))
def test_a_streamed_row_is_judged_as_usable_row_judges_it(raw: Any) -> None:
    """The big reader's shortcut for the common row (issue 38) decides every row exactly as
    ``usable_row`` does: kept with the same share, or skipped with the same reason."""
    sink = _RowSink()
    sink.take(7, raw)
    want = usable_row(raw, 7)
    if isinstance(want, str):
        assert sink.skipped == [(7, want)] and sink.usable == 0
    else:
        assert sink.skipped == [] and sink.usable == 1
        assert sink.pct_sum == want[1]
        assert [i for i, _ in sink.by_pct.items()] == [7]

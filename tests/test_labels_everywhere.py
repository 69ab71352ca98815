"""Issue 34 item 3, labels everywhere: on every shared real trace, no two rows of any table read
the same — the table `roofline analyze` prints, the CSV's `label` column, the .md's tables and
headings, the chart legend (the dashboard's and the image's) and the dashboard's rankings at
every kernel-column width — and `#N` is never needed (each trace records what tells its rows
apart). Each trace is imported and analysed as a user would, with the CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from roofline_tui.core.artifact import Artifact
from roofline_tui.core.chart import build_chart
from roofline_tui.core.labels import row_labels
from tests.paths import REAL_FORMATS, REPO_ROOT, need

WILD = REAL_FORMATS / "wild"
CONFIGS = REAL_FORMATS / "configs"

# (kind, trace, model config, graph-capture trace)
TRACES = {
    "vllm-gpt-oss": ("torch", "tracelens_vllm_decode_full_graph_execution.json.gz",
                     "gpt-oss-20b", "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"),
    "sglang-qwen3": ("torch", "tracelens_sglang_qwen3-8b_decode.json.gz", "Qwen3-8B",
                     "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"),
    "h100-qwen1.5": ("torch", "tracelens_h100_qwen1.5-0.5b.json.gz", "Qwen1.5-0.5B-Chat", None),
    "nsys-cloverleaf": ("nsys", "pipit_nsys2024.5.1_export_sqlite_cloverleaf_A100x4.sqlite",
                        None, None),
}
# what each trace's rows are known to read (the issue's examples)
EXPECTED = {
    "vllm-gpt-oss": {"vllm::moe_forward bf16 [32,3072]",
                     "vllm::moe_forward bf16 [32,3072] · swiglu"},
    "sglang-qwen3": {"GEMM 32×4096→24576 (MergedColumnParallelLinear)",
                     "GEMM 32×4096→6144 (QKVParallelLinear)"},
    "h100-qwen1.5": {"aten::mul bf16 [16,16,559,64] +2 shapes", "aten::mul fp32 [16,559,1024]"},
    "nsys-cloverleaf": {"par_ranged2d_kernel<…> · PdV_kernel … instance 2",
                        "par_ranged2d_kernel<…> · accelerate_kernel"},
}
HASH_N = re.compile(r"#\d+$")


def roofline(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline_tui", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
                          env=dict(os.environ, COLUMNS="200"))


@dataclass(frozen=True)
class Round:
    name: str
    dir: Path
    stdout: str  # what `roofline analyze` printed
    artifact: Artifact

    @property
    def md(self) -> str:
        return (self.dir / "profile_roofline.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module", params=sorted(TRACES))
def rnd(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Round:
    kind, trace, config, capture = TRACES[request.param]
    args: list[str | Path] = ["import", kind, need(WILD / trace)]
    out = tmp_path_factory.mktemp(request.param) / "round_0"
    args += ["--out", out]
    if config is not None:
        args += ["--model-config", need(CONFIGS / config / "config.json")]
    if capture is not None:
        args += ["--capture", need(WILD / capture)]
    done = roofline(*args)
    assert done.returncode == 0, done.stderr
    done = roofline("analyze", out, "--csv")
    assert done.returncode == 0, done.stderr
    doc = json.loads((out / "profile_roofline.json").read_text(encoding="utf-8"))
    return Round(request.param, out, done.stdout, Artifact.model_validate(doc))


def distinct(texts: list[str], what: str) -> None:
    assert texts, f"{what}: no rows"
    repeated = sorted({t for t in texts if texts.count(t) > 1})
    assert not repeated, f"{what}: rows read the same: {repeated} in {texts}"
    assert not [t for t in texts if HASH_N.search(t)], f"{what}: a #N where the trace differs"


def test_the_rows_read_what_the_trace_recorded(rnd: Round) -> None:
    full = row_labels(rnd.artifact.entries)
    distinct(full, "row labels")
    assert EXPECTED[rnd.name] <= set(full), full


def test_the_analyze_table(rnd: Round) -> None:
    lines = rnd.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    start, end = list(re.finditer("─+", lines[rule]))[1].span()  # the kernel column
    rows = lines[rule + 1: rule + 1 + len(rnd.artifact.entries)]
    assert all(re.match(r"\d+ ", row) for row in rows), rows
    distinct([row[start:end].rstrip() for row in rows], "analyze table")


def test_the_csv_label_column(rnd: Round) -> None:
    text = (rnd.dir / "profile_roofline.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(rnd.artifact.entries)
    distinct([r["label"] for r in rows], "CSV label")
    # the short name stays the key, beside the label
    assert len({r["short_name"] for r in rows}) == len(rows)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def _table(md: str, header: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(header))
    rows: list[list[str]] = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def _name(cell: str) -> str:
    m = re.match(r"`([^`]*)`", cell)
    assert m, cell
    return m.group(1)


def test_the_md_tables_and_headings(rnd: Round) -> None:
    md = rnd.md
    main = _table(md, "| # | kernel | regime")
    assert len(main) == len(rnd.artifact.entries)
    distinct([_name(r[1]) for r in main], ".md main table")
    both = _table(md, "| # | by GPU time | by expected gain |")
    distinct([_name(r[1]) for r in both], ".md by GPU time")
    distinct([_name(r[2]) for r in both], ".md by expected gain")
    notes = md.split("## Per-entry notes", 1)[1]
    distinct(re.findall(r"^### `(.*)`$", notes, re.M), ".md entry headings")


def test_the_chart_legends(rnd: Round) -> None:
    from roofline_tui.app.widgets.roofline_chart import legend_text

    model = build_chart(rnd.artifact)
    legend = str(legend_text(model, None)).splitlines()
    names = [line[5:41].rstrip() for line in legend[:len(model.points)]]
    names += [line[5:line.index("  not plotted")]
              for line in legend[len(model.points):len(model.points) + len(model.not_plotted)]]
    assert len(names) == len(rnd.artifact.entries)
    distinct(names, "dashboard chart legend")
    distinct(model.legends(64), "image legend")  # core/plot.py's legend lines


@pytest.mark.parametrize("width", [18, 24, 30, 40, 56, 72])
def test_the_dashboard_rankings(rnd: Round, width: int) -> None:
    from roofline_tui.app import view

    pct_rows, gain_rows = view.rank_rows(rnd.artifact)
    display = view.display_names(pct_rows)
    for rows, columns in ((pct_rows, view.PCT_COLUMNS_ALL), (gain_rows, view.GAIN_COLUMNS_ALL)):
        cols = view.fit_columns(columns, 300)
        kernel = next(i for i, f in enumerate(cols) if f.key == "kernel")
        cells = view.table_rows(rows, display, cols, room=width)
        shown = [c[1][kernel].plain for c in cells]
        assert all(len(t) <= width for t in shown)
        distinct(shown, f"dashboard ranking at {width} cells")

"""Fixtures: the bundled demo (spec §9 run, three rounds) copied into tmp_path and edited."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.paths import DEMO, ROUNDS_FIXTURES

FIXTURES = ROUNDS_FIXTURES
MOE = "fused_moe_kernel"
ATTN = "kernel_paged_attention_2d"


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def kernel_row(topn: dict, name: str) -> dict:
    for row in topn["top_kernels"]:
        if row["name"] == name:
            return row
    raise KeyError(name)


def speed_up(round_dir: Path, name: str, factor: float, regime: str = "decode") -> None:
    """Make ``name`` ``factor``× faster per launch in ``regime`` (totals and shares follow)."""
    path = round_dir / "profile_topN.json"
    topn = read(path)
    row = kernel_row(topn, name)
    old_total = row["total_ms"]
    row["base_latency_ms"][regime] = round(row["base_latency_ms"][regime] / factor, 9)
    calls = row["phase_calls_measured"]
    row["total_ms"] = sum(row["base_latency_ms"][r] * calls[r] for r in row["base_latency_ms"])
    topn["total_gpu_time_ms"] += row["total_ms"] - old_total
    for r in topn["top_kernels"]:
        r["pct_gpu_time"] = round(100.0 * r["total_ms"] / topn["total_gpu_time_ms"], 2)
    write(path, topn)


def set_serving(round_dir: Path, **values: float) -> None:
    write(round_dir / "serving_metrics.json", {"schema": "serving-metrics-v1", **values})


def touch_later(path: Path, seconds: float = 10.0) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime + seconds, st.st_mtime + seconds))


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the demo: tmp/demo/{env_report.json, config.json, profile/round_0..2}."""
    dst = tmp_path / "demo"
    shutil.copytree(DEMO, dst)
    return dst


@pytest.fixture
def profile(demo: Path) -> Path:
    return demo / "profile"


@pytest.fixture
def four_rounds(profile: Path) -> Path:
    """Round 3 makes the (saturated, predicted 1.0×) MoE 1.2× faster: beats the prediction."""
    shutil.copytree(profile / "round_2", profile / "round_3")
    speed_up(profile / "round_3", MOE, 1.2)
    set_serving(profile / "round_3", output_throughput_tok_s=10800.0)
    return profile

"""Issue 34 item 2: the step as a whole. Each step's GPU span (the work it launched, joined by
correlation) splits into busy and idle time (busy + idle = span), communication exposed or
overlapped, and copies; a decode trace with host gaps puts `idle gaps` before the kernels."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.step_time import COMM, COMPUTE, COPY, split_span
from tests.paths import REAL_FORMATS, REPO_ROOT, need

from .conftest import run_cli

WILD = REAL_FORMATS / "wild"
SGLANG = WILD / "tracelens_sglang_qwen3-8b_decode.json.gz"
VLLM = WILD / "tracelens_vllm_decode_full_graph_execution.json.gz"
SGLANG_CAPTURE = WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
QWEN3 = REAL_FORMATS / "configs" / "Qwen3-8B" / "config.json"
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
STEP_PREFIXES = ("execute_", "step[")


def test_streams_overlapping_count_once_and_exposure_is_what_nothing_hides() -> None:
    # compute 0-10 and 5-15 on two streams; an all-reduce 12-20 (3 µs hidden by compute);
    # a copy 25-27 alone; idle 20-25
    got = split_span([0, 5, 12, 25], [10, 15, 20, 27], [COMPUTE, COMPUTE, COMM, COPY])
    assert got["span_us"] == 27 and got["busy_us"] == 22 and got["idle_us"] == 5
    assert got["busy_us"] + got["idle_us"] == got["span_us"]
    assert got["compute_us"] == 15 and got["comm_us"] == 8 and got["comm_exposed_us"] == 5
    assert got["copy_us"] == 2 and got["copy_exposed_us"] == 2
    assert got["largest_gap_us"] == 5
    # a copy under a collective is not exposed
    assert split_span([0, 2], [10, 4], [COMM, COPY])["copy_exposed_us"] == 0


def _hand_split(path: Path) -> tuple[float, float]:
    """(span, busy) in µs of the trace's outermost step, from the raw events: the GPU events
    whose launch call (same correlation) starts inside the step's CPU range on its thread;
    span from the first start to the last end, busy the union of their intervals."""
    with gzip.open(path, "rt") as fh:
        events: list[dict[str, Any]] = json.load(fh)["traceEvents"]
    steps = [e for e in events if e.get("cat") == "user_annotation"
             and str(e.get("name", "")).startswith(STEP_PREFIXES)]
    step = max(steps, key=lambda e: float(e["dur"]))  # the enclosing one
    t0, t1 = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") == "cuda_runtime" and e.get("tid") == step["tid"]
                and t0 <= float(e["ts"]) <= t1 and "correlation" in e.get("args", {})}
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("cat") in GPU and e.get("args", {}).get("correlation") in launched)
    busy, end = 0.0, -1e300
    for s, e in spans:
        if s > end:
            busy += e - s
            end = e
        elif e > end:
            busy += e - end
            end = e
    return spans[-1][1] - spans[0][0] if spans else 0.0, busy


@pytest.mark.parametrize("trace", [SGLANG, VLLM], ids=["sglang", "vllm"])
def test_the_real_decode_steps_reconcile_with_a_hand_join(trace: Path, tmp_path: Path) -> None:
    done = run_cli("torch", need(trace), "--out", tmp_path / "r", "--no-capture-discovery")
    assert done.returncode == 0, done.stderr
    block = json.loads((tmp_path / "r" / "profile_topN.json").read_text())["x_roofline"][
        "step_time"]
    assert block["basis"] == "steps"
    (g,) = block["groups"]
    assert g["regime"] == "decode" and g["steps"] == 1
    assert g["busy_us"] + g["idle_us"] == pytest.approx(g["span_us"], rel=1e-6)
    span, busy = _hand_split(trace)
    assert g["span_us"] == pytest.approx(span, rel=0.01)
    assert g["busy_us"] == pytest.approx(busy, rel=0.01)


def test_a_decode_trace_with_host_gaps_puts_idle_gaps_first(tmp_path: Path) -> None:
    """The SGLang decode step's GPU work spans 474 ms with 9.8 ms of it busy (one 463 ms
    wait before the step's last kernels): the idle gaps lead the Next line, the kernels
    follow."""
    out = tmp_path / "r"
    assert run_cli("torch", need(SGLANG), "--out", out, "--capture", need(SGLANG_CAPTURE),
                   "--model-config", need(QWEN3)).returncode == 0
    done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(out)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    art = json.loads((out / "profile_roofline.json").read_text())
    top = art["step_targets"][0]
    assert top["kind"] == "idle gaps" and top["regime"] == "decode"
    assert top["share_of_span"] > 0.9 and top["levers"]
    (split,) = art["step_split"]
    assert split["busy_ms"] + split["idle_ms"] == pytest.approx(split["span_ms"], rel=1e-6)
    assert split["largest_gap_ms"] > 400
    line = art["next_target"]["line"]
    assert "the GPU is idle 98% of each decode step" in line and "; then: " in line
    pick = art["next_target"]["label"]
    assert pick and line.index("idle") < line.index("; then: ") < line.index(pick)
    assert "step: decode step (mean of 1): span" in done.stdout
    assert "- **Step** decode step" in (out / "profile_roofline.md").read_text()
    assert "nested" not in split  # the note on nesting is the artifact's, once
    assert "the enclosing span is the step" in art["step_split_note"]


def test_the_all_compute_path_splits_as_the_general_one() -> None:
    from roofline_tui.importers.step_time import split_positions

    ts, dur = [0.0, 5.0, 12.0, 25.0, 24.0], [10.0, 10.0, 8.0, 2.0, 0.5]
    general = split_positions(ts, dur, [COMPUTE] * 5, range(5))
    assert split_positions(ts, dur, None, range(5)) == general
    assert general["busy_us"] == 22.5 and general["largest_gap_us"] == 4.0

"""Issue 32 item 3: the torch import sums the steady-state steps. A trace that starts with
slow warm-up steps keeps only the steady ones by default and says which, in a note and in the
Top-N extension's ``steps`` block; ``--steps A:B`` and ``--skip-warmup N`` replace the choice;
the per-kernel figures are computed over the kept steps only."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.step_window import StepRequest
from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from roofline_tui.importers.torch import TorchOptions, import_torch
from tests.paths import WILD_FIXTURES

from .conftest import run_cli

SGLANG = WILD_FIXTURES / "sglang_mi300x_decode_trimmed.json"
COPIES = 5
SLOW = 3.0  # the warm-up copy's kernels run this many times longer


def _repeated_steps(slow_first: int) -> dict[str, Any]:
    """The real SGLang decode step (one step: vLLM's execute_* around SGLang's step[DECODE])
    recorded :data:`COPIES` times one after another (every timestamp shifted past the previous
    copy, every correlation id made unique), the first ``slow_first`` copies' kernels
    :data:`SLOW` times as long: a warm-up followed by a steady decode."""
    doc = json.loads(SGLANG.read_text())
    events = doc["traceEvents"]
    t0 = min(float(e["ts"]) for e in events if "ts" in e)
    t1 = max(float(e["ts"]) + float(e.get("dur", 0)) for e in events if "ts" in e)
    span = (t1 - t0) * SLOW + 1000.0
    out: list[dict[str, Any]] = []
    for c in range(COPIES):
        for e in events:
            e = copy.deepcopy(e)
            if "ts" in e:
                e["ts"] = float(e["ts"]) + c * span
            args = e.get("args")
            if isinstance(args, dict) and "correlation" in args:
                args["correlation"] = int(args["correlation"]) + c * 1_000_000
            if e.get("cat") == "ac2g" and "id" in e:
                e["id"] = int(e["id"]) + c * 1_000_000
            if c < slow_first and e.get("cat") == "kernel":
                e["dur"] = float(e["dur"]) * SLOW
            out.append(e)
    return {**doc, "traceEvents": out}


def _kernel_us(doc: dict[str, Any], copies: range) -> float:
    """Hand sum: the GPU time of the kernel events of the given copies (by their correlation
    ids' copy number)."""
    return sum(float(e["dur"]) for e in doc["traceEvents"] if e.get("cat") == "kernel"
               and int(e["args"]["correlation"]) // 1_000_000 in copies)


def test_warm_up_steps_of_a_real_decode_are_dropped_by_default(tmp_path: Path) -> None:
    trace = _repeated_steps(slow_first=1)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    doc = import_torch(path, progress=False).doc
    block = doc["x_roofline"]["steps"]
    assert (block["recorded"], block["start"], block["stop"], block["how"]) == (5, 1, 5, "auto")
    assert "steady-state" in block["reason"]
    # (the Top-N writes times to 0.1 µs)
    assert doc["total_gpu_time_ms"] == pytest.approx(_kernel_us(trace, range(1, 5)) / 1000,
                                                     abs=1e-4)
    warm = _kernel_us(trace, range(0, 1))
    assert block["dropped_gpu_ms"] == pytest.approx(warm / 1000, rel=1e-6)
    assert block["dropped_share"] == pytest.approx(warm / _kernel_us(trace, range(5)), rel=1e-5)
    assert any(n.startswith("steps 1:5 of 5 summed") for n in doc["notes"])
    assert doc["serving"]["n_decode_steps"] == 4
    # the per-step launch counts come from the kept steps: each copy launches the same kernels
    whole = import_torch(path, TorchOptions(steps=StepRequest(start=0, stop=5, sliced=True)),
                         progress=False).doc
    assert whole["serving"]["n_decode_steps"] == 5
    assert whole["num_kernel_launches"] == doc["num_kernel_launches"] * 5 // 4


def test_a_steady_trace_keeps_every_step_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_repeated_steps(slow_first=0)))
    doc = import_torch(path, progress=False).doc
    block = doc["x_roofline"]["steps"]
    assert (block["start"], block["stop"], block["dropped_gpu_ms"]) == (0, 5, 0.0)
    assert "steady-state window" in block["reason"]
    assert not any("serving step(s) summed" in n for n in doc["notes"])  # nothing to warn of


def test_steps_and_skip_warmup_replace_the_automatic_choice(tmp_path: Path) -> None:
    trace = _repeated_steps(slow_first=2)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    sliced = import_torch(path, TorchOptions(steps=StepRequest(start=3, stop=4, sliced=True)),
                          progress=False).doc
    assert sliced["x_roofline"]["steps"]["how"] == "--steps"
    assert sliced["total_gpu_time_ms"] == pytest.approx(_kernel_us(trace, range(3, 4)) / 1000,
                                                        abs=1e-4)
    skipped = import_torch(path, TorchOptions(steps=StepRequest(skip_warmup=2)),
                           progress=False).doc
    assert skipped["x_roofline"]["steps"]["how"] == "--skip-warmup"
    assert skipped["total_gpu_time_ms"] == pytest.approx(
        _kernel_us(trace, range(2, 5)) / 1000, abs=1e-4)
    with pytest.raises(ImportProblem, match="records 5 step"):
        import_torch(path, TorchOptions(steps=StepRequest(start=7, stop=9, sliced=True)),
                     progress=False)


def test_the_synthetic_serving_trace_is_steady(tmp_path: Path) -> None:
    """2 prefill and 6 decode steps of constant work: each regime against its own median,
    nothing dropped (prefill steps are not warm-up for the decode ones)."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(synthetic_trace(SynthSpec())))
    block = import_torch(path, progress=False).doc["x_roofline"]["steps"]
    assert (block["recorded"], block["start"], block["stop"]) == (8, 0, 8)


def test_cli_steps_flags(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_repeated_steps(slow_first=1)))
    done = run_cli("torch", path, "--out", tmp_path / "r", "--skip-warmup", "3")
    assert done.returncode == 0, done.stderr
    topn = json.loads((tmp_path / "r" / "profile_topN.json").read_text())
    assert topn["x_roofline"]["steps"]["start"] == 3
    bad = run_cli("torch", path, "--out", tmp_path / "r2", "--steps", "x")
    assert bad.returncode == 2 and "expected A:B" in bad.stderr
    both = run_cli("torch", path, "--out", tmp_path / "r3", "--steps", "1:",
                   "--skip-warmup", "1")
    assert both.returncode == 2 and not (tmp_path / "r3").exists()

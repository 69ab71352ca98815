"""On the three shared LLM traces, every head with a verdict lists at least one concrete lever
with its expected effect (issue 34, "Done when"): imported as `roofline import torch` would,
then `roofline analyze --model-config` in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REAL_FORMATS, need

WILD = REAL_FORMATS / "wild"
CONFIGS = REAL_FORMATS / "configs"

# trace, its graph-capture traces, config, the device it ran on (SGLang and vLLM: MI300X,
# gfx942 with 304 CUs in the trace's deviceProperties; TraceLens' Qwen1.5 trace: H100)
CASES = {
    "sglang_qwen3_8b": ("tracelens_sglang_qwen3-8b_decode.json.gz",
                        ["tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"],
                        "Qwen3-8B", "MI300X"),
    "h100_qwen1.5": ("tracelens_h100_qwen1.5-0.5b.json.gz", [], "Qwen1.5-0.5B-Chat", "H100"),
    "vllm_gpt_oss": ("tracelens_vllm_decode_full_graph_execution.json.gz",
                     ["tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"],
                     "gpt-oss-20b", "MI300X"),
}

# the first lever of one head per trace, read from its evidence (kernel name, shape, sibling)
FIRST = {
    "sglang_qwen3_8b": ("Cijk_", "hipblaslt_offline_tuning"),
    "h100_qwen1.5": ("elementwise_kernel", "elementwise_fusion"),
    "vllm_gpt_oss": ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "moe_stage_balance"),
}


def _analyse(case: str, tmp: Path) -> dict[str, object]:
    from roofline_tui.importers.torch import TorchOptions, import_torch

    trace, captures, config, device = CASES[case]
    cfg = need(CONFIGS / config / "config.json")
    doc = import_torch(need(WILD / trace),
                       TorchOptions(captures=[need(WILD / c) for c in captures]),
                       progress=False).doc
    rd = tmp / case
    rd.mkdir()
    (rd / "profile_topN.json").write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(rd),
                          "--model-config", str(cfg), "--device", device],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "levers (first per head" in run.stdout
    art: dict[str, object] = json.loads((rd / "profile_roofline.json").read_text())
    md = (rd / "profile_roofline.md").read_text()
    assert "- levers (ranked):" in md
    return art


@pytest.mark.parametrize("case", list(CASES))
def test_every_head_with_a_verdict_lists_a_concrete_lever(case: str, tmp_path: Path) -> None:
    art = _analyse(case, tmp_path)
    entries = art["entries"]
    assert isinstance(entries, list)
    judged = [e for e in entries
              if e["headroom_class"] in ("underperforming", "moderate", "saturated")]
    assert judged, "the trace must give verdicts, or this test says nothing"
    for e in judged:
        levers = e.get("levers") or []
        assert levers, f"{e['short_name']}: no lever"
        for lv in levers:
            assert lv["action"] and lv["evidence"] and lv["source"], lv
            effect = lv["expected_effect"]
            assert "×" in effect or "%" in effect, (e["short_name"], effect)
        # the first lever's effect is bounded by the entry's own attainable speedup
        sp = e.get("attainable_speedup")
        if sp is not None and e["headroom_class"] != "saturated":
            assert any(f"up to {sp:.2f}×" in lv["expected_effect"] for lv in levers)
    prefix, key = FIRST[case]
    head = next(e for e in entries if e["short_name"].startswith(prefix))
    assert head["levers"][0]["key"] == key, [lv["key"] for lv in head["levers"]]

"""The imported Top-N feeds ``roofline analyze`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from roofline_tui.importers.common import write_round
from roofline_tui.importers.synth import GEMM, SynthSpec, write_trace
from roofline_tui.importers.torch import TorchOptions, import_torch
from tests.paths import REPO_ROOT


def test_imported_topn_is_analyzed(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", SynthSpec())
    round_dir = tmp_path / "profile" / "round_0"
    doc = import_torch(trace, TorchOptions(isl=1024, osl=128, conc=8), progress=False).doc
    write_round(doc, round_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "roofline_tui", "analyze", str(round_dir), "--device", "MI300X",
         "--head-threshold", "0", "--json"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    artifact = json.loads(proc.stdout[proc.stdout.index("{"):])
    entries = {e["name"]: e for e in artifact["entries"]}
    assert GEMM in entries
    gemm = entries[GEMM]
    assert gemm["pct_gpu_time"] == next(k["pct_gpu_time"] for k in doc["top_kernels"]
                                        if k["name"] == GEMM)
    # shapes + per-phase latency from the import let the engine model the GEMM
    assert gemm["op_class"] == "gemm"
    assert gemm["roofline_pct"] is not None

"""Counters without a model (issue 13 item 9): measured bytes (and FLOPs) per dispatch with the
profile's per-launch time give a roofline on their own, for a kernel of unknown class and for a
MoE kernel with no config.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO_ROOT


def _round(tmp: Path, *, counters: bool = True) -> Path:
    r = tmp / "profile" / "round_0"
    r.mkdir(parents=True)
    (tmp / "env_report.json").write_text(json.dumps({"gfx": "gfx950", "product": "mi355x"}))
    topn = {"source": "test", "total_gpu_time_ms": 2.0, "num_kernel_launches": 20,
            "top_kernels": [
                {"rank": 1, "name": "my_custom_kernel(float*, int)", "short_name":
                 "my_custom_kernel", "calls": 10, "total_ms": 1.0, "avg_us": 100.0,
                 "pct_gpu_time": 50.0},
                {"rank": 2, "name": "fused_moe_kernel", "short_name": "fused_moe_kernel",
                 "calls": 10, "total_ms": 1.0, "avg_us": 100.0, "pct_gpu_time": 50.0,
                 "classification": "triton"}]}
    (r / "profile_topN.json").write_text(json.dumps(topn))
    if counters:
        c = r / "counters"
        c.mkdir()
        rows = ['"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"']
        for d in (1, 2):
            rows += [f'{d},"my_custom_kernel(float*, int)","FETCH_SIZE",300000',
                     f'{d},"my_custom_kernel(float*, int)","WRITE_SIZE",90625',
                     f'{10 + d},"fused_moe_kernel","FETCH_SIZE",300000',
                     f'{10 + d},"fused_moe_kernel","WRITE_SIZE",90625',
                     f'{10 + d},"fused_moe_kernel","SQ_INSTS_VALU_MFMA_MOPS_BF16",1000000']
        (c / "counter_collection.csv").write_text("\n".join(rows) + "\n")
    return r


def _analyze(r: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(r)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads((r / "profile_roofline.json").read_text())


def test_counters_give_a_roofline_without_a_model(tmp_path: Path) -> None:
    """(300,000 + 90,625) KiB x 1024 = 400,000,000 B per dispatch; 1.0 ms / 10 calls = 100 us
    per launch; 4e8 B / 1e-4 s = 4e12 B/s achieved, so roofline = 4e12 / peak HBM bandwidth.
    The MoE kernel also counts 1e6 bf16 MOPS x 512 = 5.12e8 FLOP per dispatch."""
    art = _analyze(_round(tmp_path))
    peak = art["peaks"]["hbm_bw_bytes_s"]
    by = {e["short_name"]: e for e in art["entries"]}
    assert set(by) == {"my_custom_kernel", "fused_moe_kernel"}
    assert art["degraded"] == []
    for e in by.values():
        assert e["measurement_basis"] == "counters"
        assert e["bytes_est"] == 4e8
        assert e["achieved_bw_bytes_s"] == 4e12
        assert e["roof_axis"] == "memory"
        assert e["hbm_util"] == round(4e12 / peak, 4)
        assert e["confidence"] == "high"  # the memory axis is measured
        assert e["stage"] == "C"
        assert e["headroom_class"] != "unknown"
        assert "stage C: measured bytes" in e["notes"]
    assert by["fused_moe_kernel"]["flops_est"] == 5.12e8
    assert by["my_custom_kernel"]["target_eff"] == 0.5  # no class model: lowest prior


def test_without_counters_the_same_kernels_stay_degraded(tmp_path: Path) -> None:
    art = _analyze(_round(tmp_path, counters=False))
    assert {d["name"] for d in art["degraded"]} == {"my_custom_kernel", "fused_moe_kernel"}

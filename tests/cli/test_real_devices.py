"""Real traces through ``roofline import`` and ``roofline analyze``: the device a trace recorded
picks the right row of the peak table (when the shared real-formats folder is present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import roofline
from tests.paths import REAL_FORMATS

A100_TRACE = REAL_FORMATS / "torch" / "hta_A100_simple_add_trace_trimmed.json"


@pytest.mark.skipif(not A100_TRACE.is_file(), reason="real-formats A100 trace not present")
def test_a100_board_number_trace_is_judged_against_the_40gb_bandwidth(tmp_path: Path) -> None:
    """The trace's device prints as ``NVIDIA A100-PG509-200`` (a board number) with
    totalGlobalMem 42,297,524,224 B: the 40 GB SXM4 part, 1.555 TB/s. Before, the sm_80 default
    (80 GB, 2.039 TB/s) was used and every memory-bound roofline_pct came out 24 % too low
    (1.555 / 2.039 = 0.763)."""
    out = tmp_path / "round"
    imp = roofline("import", "torch", A100_TRACE, "--out", out)
    assert imp.returncode == 0, imp.stderr
    run = roofline("analyze", out, "--json")
    assert run.returncode == 0, run.stderr
    peaks = json.loads(run.stdout)["peaks"]
    assert peaks["product"] == "a100-sxm4-40gb"
    assert peaks["hbm_bw_bytes_s"] == 1.555e12
    assert peaks["confidence"] == "high"
    assert "A100-PG509-200" in peaks["citation"] and "42.3 GB" in peaks["citation"]

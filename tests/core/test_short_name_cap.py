"""A ``short_name`` read from a Top-N is capped like ``name`` (issue 25 item 22): a multi-megabyte
short name must not be copied into both rankings, the table and the Markdown."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from roofline_tui.core.names import NAME_CAP
from tests.paths import DEMO

HUGE = 5 * 2**20  # characters


def test_a_huge_short_name_is_capped_in_the_artifact(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "demo",
                    ignore=shutil.ignore_patterns("profile_roofline.*", "__pycache__"))
    round_dir = tmp_path / "demo" / "profile" / "round_2"
    topn_path = round_dir / "profile_topN.json"
    data = json.loads(topn_path.read_text())
    top = max(data["top_kernels"], key=lambda k: k["pct_gpu_time"])
    top["short_name"] = "moe_" + "x" * HUGE
    topn_path.write_text(json.dumps(data))

    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr

    art_path = round_dir / "profile_roofline.json"
    md_path = round_dir / "profile_roofline.md"
    # the file holds one 5 MiB string; what we write must not carry it (once or three times)
    assert art_path.stat().st_size < HUGE // 10
    assert md_path.stat().st_size < HUGE // 10
    art = json.loads(art_path.read_text())
    capped = [e["short_name"] for e in art["entries"] if e["short_name"].startswith("moe_x")]
    assert len(capped) == 1
    short = capped[0]
    assert len(short) <= NAME_CAP
    assert "…#" in short  # cut, with a digest of the whole so two long names stay apart
    assert short in art["ranking_by_pct"] and short in art["ranking_by_expected_gain"]
    assert len(proc.stdout) < HUGE // 10

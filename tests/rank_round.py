"""A round built from several ranks of one run, for the renderers' tests: the bundled demo's
last round (its env_report.json and config.json beside it, so its heads get verdicts) with the
rank blocks ``roofline import torch DIR_OF_RANK_TRACES`` writes (``core.topn_ext``: the
document's ``ranks``, each row's ``ranks`` spread).

Rank 1 is the straggler: every kernel 10 % slower than rank 0, and the fused MoE twice as slow;
rank 2 runs 10 % faster. The Top-N stays rank 1's. Every spread is computed here from those
factors and the row's own ``avg_us``, never taken from the importer."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

from tests.paths import DEMO

SCALE = {0: 1.0, 1: 1.1, 2: 0.9}
STRAGGLER = "fused_moe_kernel"  # rank 1 runs it twice as slow
TOPN_RANK = 1


def factor(rank: int, name: str) -> float:
    return SCALE[rank] * (2.0 if rank == 1 and name == STRAGGLER else 1.0)


def spread(row: dict[str, Any], ranks: tuple[int, ...]) -> dict[str, Any]:
    """The row's spread across ``ranks``: its ``avg_us`` is rank 1's, the others scaled."""
    base = float(row["avg_us"]) / factor(TOPN_RANK, row["name"])
    per = {r: round(base * factor(r, row["name"]), 3) for r in ranks}
    values = list(per.values())
    return {"ranks": len(per), "min_us": min(values), "median_us": statistics.median(values),
            "max_us": max(values), "slowest_rank": max(sorted(per), key=lambda r: per[r])}


def ranked_round(dest: Path, ranks: tuple[int, ...] = (0, 1, 2)) -> Path:
    """``dest/profile/round_0`` holding the demo's round 2 as rank 1 of ``ranks`` (one rank:
    the block a single trace gets, no spreads); returns the round directory."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("env_report.json", "config.json"):
        shutil.copy(DEMO / name, dest / name)
    round_dir = dest / "profile" / "round_0"
    round_dir.mkdir(parents=True)
    doc = json.loads((DEMO / "profile" / "round_2" / "profile_topN.json").read_text())
    rank = TOPN_RANK if TOPN_RANK in ranks else ranks[0]
    total_ms = float(doc["total_gpu_time_ms"])
    traces = [{"rank": r, "file": f"rank{r}.pt.trace.json.gz",
               "gpu_time_ms": round(total_ms * SCALE[r] / SCALE[TOPN_RANK], 4),
               "launches": int(doc["num_kernel_launches"]),
               "kernels": int(doc["num_distinct_kernels"])} for r in ranks]
    doc["x_roofline"] = {"version": 1, "ranks": {"rank": rank, "chosen_by": "slowest",
                                                 "traces": traces}}
    if len(ranks) > 1:
        for row in doc["top_kernels"]:
            row.setdefault("x_roofline", {})["ranks"] = spread(row, ranks)
    (round_dir / "profile_topN.json").write_text(json.dumps(doc, indent=1))
    return round_dir

"""Benchmark `roofline analyze`: whole-process time on a 25-entry round, and analyze() cost
versus Top-N size (1,000 and 10,000 entries). Prints figures; asserts nothing.

    python bench/bench_analyze.py [--repeat 7] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "roofline_tui" / "demo"


def synthetic_round(dst: Path, n_entries: int) -> Path:
    """The demo round_0 padded with ``n_entries`` realistic tail kernels."""
    shutil.copytree(DEMO, dst, ignore=shutil.ignore_patterns("profile_roofline.*"))
    round_dir = dst / "profile" / "round_0"
    path = round_dir / "profile_topN.json"
    data = json.loads(path.read_text())
    base = data["top_kernels"]
    kinds = ["rms_norm_kernel", "act_and_mul_kernel", "Cijk_Ailk_Bljk_F8BS", "fill_kernel",
             "fused_moe_kernel_aux", "paged_attention_v2"]
    rows = list(base)
    i = 0
    while len(rows) < n_entries:
        k = kinds[i % len(kinds)]
        rows.append({"name": f"{k}_{i}", "pct_gpu_time": round(5.0 + (i % 7), 2),
                     "avg_us": 10.0 + i % 50, "shapes": [[[64, 2048], [2048, 4096]]],
                     "dtypes": ["c10::BFloat16"], "base_latency_ms": {"decode": 0.02},
                     "calls_per_step": {"decode": 40.0}, "served_regimes": ["decode"]})
        i += 1
    data["top_kernels"] = rows[:n_entries]
    path.write_text(json.dumps(data))
    return round_dir


def time_process(round_dir: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir)],
                       check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def time_engine(round_dir: Path, n: int, repeat: int) -> float:
    from roofline_tui.core.analyze import AnalyzeOptions
    from roofline_tui.core.rounds.analysis import analyze_round

    opts = AnalyzeOptions(max_heads=n)  # analyse every entry, not only 8 heads
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        analyze_round(round_dir, None, opts)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        r25 = synthetic_round(Path(tmp) / "r25", 25)
        proc = time_process(r25, args.repeat)
        results["analyze_process_25_median_s"] = statistics.median(proc)
        print(f"roofline analyze, 25 entries, whole process: median {statistics.median(proc):.3f} s"
              f" (min {min(proc):.3f}, max {max(proc):.3f}, n={len(proc)})")
        for n in (25, 1000, 10000):
            rd = synthetic_round(Path(tmp) / f"e{n}", n)
            best = time_engine(rd, n, 3)
            results[f"analyze_engine_{n}_all_heads_s"] = best
            print(f"analyze_round(), {n:>6} entries, every entry analysed: best {best:.3f} s "
                  f"({best / n * 1e6:.0f} µs/entry)")
        r10k = synthetic_round(Path(tmp) / "p10k", 10000)
        proc10k = time_process(r10k, 3)
        results["analyze_process_10000_median_s"] = statistics.median(proc10k)
        print(f"roofline analyze, 10,000-entry Top-N (8 heads), whole process: median "
              f"{statistics.median(proc10k):.3f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""`roofline analyze` benchmarks, as ratios (run through ``bench/run``; this file alone runs
just these: ``python bench/bench_analyze.py [--quick] [--tree DIR ...]``).

* whole process on the demo's newest round (round_2, 25 entries, 2 earlier rounds for its
  history) over ``python -c pass``: what the command costs beyond starting Python at all;
* the same command on a 10,000-entry Top-N (that round padded with realistic tail kernels; the
  default 8 heads analysed) over the same command on the demo round: what a big Top-N adds.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness import PYTHON, Context, Figure, Probe, Tree, copy_demo

ROUND = "round_2"

# The stack's own share of the start-up: importing pydantic and building one trivial model (what
# any pydantic program pays before its first model exists), for context beside analyze_process.
PYDANTIC_ONE_MODEL = ("from pydantic import BaseModel\n"
                      "class X(BaseModel):\n    a: int = 1\n"
                      "X(a=2).model_dump_json()\n")

# What `analyze` imports before it reads a file: the engine, models built.
ENGINE_IMPORT = "import roofline_tui.core.rounds.annotate, roofline_tui.core.rounds.analysis"

FIGURES = [
    Figure("pydantic_floor", "reference: import pydantic, build and dump one model",
           "`python -c pass`", None, "floor:pydantic_one_model", "floor:python_pass"),
    Figure("engine_import", "reference: import the engine",
           "`python -c pass`", None, "{tree}:engine_import", "floor:python_pass"),
    Figure("analyze_process", "`roofline analyze`, demo round, whole process", "`python -c pass`",
           5.0, "{tree}:analyze_demo", "floor:python_pass"),
    Figure("analyze_10k", "`roofline analyze`, 10,000-entry Top-N",
           "the same command on the demo round", 2.5, "{tree}:analyze_10k",
           "{tree}:analyze_demo"),
]

_TAIL_KINDS = ["rms_norm_kernel", "act_and_mul_kernel", "Cijk_Ailk_Bljk_F8BS", "fill_kernel",
               "fused_moe_kernel_aux", "paged_attention_v2"]


def pad_topn(path: Path, n_entries: int) -> None:
    """Pad a profile_topN.json with small tail kernels up to ``n_entries`` entries (each under
    0.002 % of GPU time, so the percentages still sum to under 100)."""
    data = json.loads(path.read_text())
    rows = list(data["top_kernels"])
    i = 0
    while len(rows) < n_entries:
        k = _TAIL_KINDS[i % len(_TAIL_KINDS)]
        rows.append({"name": f"{k}_{i}", "pct_gpu_time": round(0.0005 + (i % 7) / 5000, 4),
                     "avg_us": 10.0 + i % 50, "shapes": [[[64, 2048], [2048, 4096]]],
                     "dtypes": ["c10::BFloat16"], "base_latency_ms": {"decode": 0.02},
                     "calls_per_step": {"decode": 40.0}, "served_regimes": ["decode"]})
        i += 1
    data["top_kernels"] = rows[:n_entries]
    path.write_text(json.dumps(data))


def analyze_argv(round_dir: Path) -> list[str]:
    return [PYTHON, "-m", "roofline_tui", "analyze", str(round_dir)]


def add_probes(ctx: Context) -> None:
    n = ctx.cfg["analyze_runs"]
    ctx.probes.append(Probe("floor:python_pass", [PYTHON, "-c", "pass"], None, n=n, warmup=True))
    ctx.probes.append(Probe("floor:pydantic_one_model", [PYTHON, "-c", PYDANTIC_ONE_MODEL], None,
                            n=n, warmup=True))
    for tree in ctx.trees:
        add_tree_probes(ctx, tree, n)


def add_tree_probes(ctx: Context, tree: Tree, n: int) -> None:
    demo = copy_demo(tree, ctx.work / tree.label / "analyze_demo")
    big = copy_demo(tree, ctx.work / tree.label / "analyze_10k")
    pad_topn(big / ROUND / "profile_topN.json", 10_000)
    ctx.probes.append(Probe(f"{tree.label}:engine_import", [PYTHON, "-c", ENGINE_IMPORT], tree,
                            n=n, warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:analyze_demo", analyze_argv(demo / ROUND), tree, n=n,
                            warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:analyze_10k", analyze_argv(big / ROUND), tree, n=n,
                            warmup=True))


if __name__ == "__main__":
    import sys

    import run_all

    raise SystemExit(run_all.main(["--only", "analyze", *sys.argv[1:]]))

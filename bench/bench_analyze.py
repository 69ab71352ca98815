"""`roofline analyze` benchmarks, as ratios (run through ``bench/run``; this file alone runs
just these: ``python bench/bench_analyze.py [--quick] [--tree DIR ...]``).

Two floors for the start-up, both measured in the same loop:

* the **stack floor**: Python + pydantic + models with the same fields as every model the command
  builds (``bench/stack_floor.py``: the spec is generated from the tree's own models by a
  ``model_fields`` walk after an in-process run of the command, and rebuilt with
  ``pydantic.create_model``), run by the same interpreter as the command. What is above it is
  ours: other import-time work, the analysis, the output, the exit. ``analyze`` runs its start-up
  with the collector off (then frozen); the floor runs as a plain program, with it on. The same
  floor with its collector off is printed for reference;
* a **clean** ``python -c pass``: a fresh ``python -m venv --without-pip`` (no site-packages, no
  editable finder), what starting Python costs at all. The dev environment's own
  ``python -c pass`` is shown beside it for reference.

Every tree is compiled (``compileall``) first and the children run without
``PYTHONDONTWRITEBYTECODE``: ``.pyc`` present, as an installed package has.

And what a big Top-N adds: the demo's newest round padded to 100,000 realistic entries (time,
over the demo round), and to 1,000,000 minimal entries (peak RSS over the file's size; time over
the demo round for reference). The Top-Ns are generated in the bench's temp dir.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

from harness import (
    BENCH,
    PYTHON,
    Context,
    Figure,
    Probe,
    Tree,
    child_env,
    clean_venv,
    compile_tree,
    copy_demo,
)

ROUND = "round_2"
STACK_FLOOR = str(BENCH / "stack_floor.py")
ROWS_100K = 100_000
ROWS_1M = 1_000_000

# What `analyze` imports before it reads a file: the engine, models built.
ENGINE_IMPORT = "import roofline_tui.core.rounds.annotate, roofline_tui.core.rounds.analysis"

FIGURES = [
    Figure("analyze_stack", "`roofline analyze`, demo round, whole process",
           "the stack floor (Python + pydantic + its models)", 1.2,
           "{tree}:analyze_demo", "{tree}:stack_floor"),
    Figure("analyze_stack_nogc", "reference: `roofline analyze`, demo round, whole process",
           "the stack floor with its collector off (as analyze starts)", None,
           "{tree}:analyze_demo", "{tree}:stack_floor_nogc"),
    Figure("analyze_clean", "`roofline analyze`, demo round, whole process",
           "clean-venv `python -c pass`", None, "{tree}:analyze_demo", "floor:clean_pass"),
    Figure("stack_clean", "reference: the stack floor itself", "clean-venv `python -c pass`",
           None, "{tree}:stack_floor", "floor:clean_pass"),
    Figure("engine_import", "reference: import the engine", "clean-venv `python -c pass`",
           None, "{tree}:engine_import", "floor:clean_pass"),
    Figure("dev_pass", "reference: `python -c pass` in the dev environment",
           "clean-venv `python -c pass`", None, "floor:dev_pass", "floor:clean_pass"),
    Figure("analyze_100k", "`roofline analyze`, 100,000-entry Top-N",
           "the same command on the demo round", 8.0, "{tree}:analyze_100k",
           "{tree}:analyze_demo"),
    Figure("analyze_1m_rss", "`roofline analyze`, 1,000,000 entries, peak RSS",
           "the Top-N file's size", 3.0, "{tree}:analyze_1m", "const:{tree}:1m_file_kib",
           what="maxrss_kib", unit="KiB"),
    Figure("analyze_1m_time", "reference: `roofline analyze`, 1,000,000 entries, time",
           "the same command on the demo round", None, "{tree}:analyze_1m",
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


def minimal_topn(path: Path, n_entries: int) -> None:
    """Pad a profile_topN.json to ``n_entries`` with minimal rows (a name, a share, a time and
    a count: about 70 bytes each), written as text so the bench itself stays small."""
    data = json.loads(path.read_text())
    rows = data.pop("top_kernels")
    head = json.dumps(data)[:-1] + (", " if data else "") + '"top_kernels": ['
    extra = (f'{{"name": "tail_kernel_{i}", "pct_gpu_time": 1e-05, "avg_us": 1.0, "calls": 1}}'
             for i in range(len(rows), n_entries))
    with path.open("w") as fh:
        fh.write(head)
        fh.write(", ".join(itertools.chain((json.dumps(r) for r in rows), extra)))
        fh.write("]}")


def generate(how: str, path: Path, n_entries: int) -> None:
    """Run one of the Top-N generators above in a child process: the bench process stays small,
    so the children it forks do not start with its pages (a forked child's peak RSS counts
    them until it execs)."""
    code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import bench_analyze as b; "
            f"from pathlib import Path; b.{how}(Path({str(path)!r}), {n_entries})")
    subprocess.run([PYTHON, "-c", code], check=True, timeout=600)


def analyze_argv(round_dir: Path) -> list[str]:
    return [PYTHON, "-m", "roofline_tui", "analyze", str(round_dir)]


def add_probes(ctx: Context) -> None:
    n = ctx.cfg["analyze_runs"]
    clean, how = clean_venv(ctx.work)
    ctx.notes.append(f"clean-venv floor: {how}")
    ctx.notes.append("stack floor: bench/stack_floor.py build (pydantic.create_model of the "
                     "command's models, spec from a model_fields walk of the tree); .pyc present")
    ctx.probes.append(Probe("floor:clean_pass", [clean, "-c", "pass"], None, n=n, warmup=True))
    ctx.probes.append(Probe("floor:dev_pass", [PYTHON, "-c", "pass"], None, n=n, warmup=True))
    for tree in ctx.trees:
        add_tree_probes(ctx, tree, n)


def stack_spec(ctx: Context, tree: Tree) -> Path:
    """The tree's model spec for its stack floor, from an in-process run of analyze."""
    demo = copy_demo(tree, ctx.work / tree.label / "spec_demo")
    out = ctx.work / tree.label / "stack_spec.json"
    subprocess.run([PYTHON, STACK_FLOOR, "spec", str(out), "--", "analyze", str(demo / ROUND)],
                   env=child_env(tree), cwd=str(tree.path), capture_output=True, timeout=300,
                   check=True)
    models = len(json.loads(out.read_text())["models"])
    ctx.notes.append(f"stack floor of {tree.label}: {models} models")
    return out


def add_tree_probes(ctx: Context, tree: Tree, n: int) -> None:
    compile_tree(tree)
    spec = stack_spec(ctx, tree)
    demo = copy_demo(tree, ctx.work / tree.label / "analyze_demo")
    big = copy_demo(tree, ctx.work / tree.label / "analyze_100k")
    generate("pad_topn", big / ROUND / "profile_topN.json", ROWS_100K)
    huge = copy_demo(tree, ctx.work / tree.label / "analyze_1m")
    huge_topn = huge / ROUND / "profile_topN.json"
    generate("minimal_topn", huge_topn, ROWS_1M)
    ctx.constants[f"const:{tree.label}:1m_file_kib"] = huge_topn.stat().st_size / 1024
    ctx.probes.append(Probe(f"{tree.label}:stack_floor", [PYTHON, STACK_FLOOR, "build",
                                                          str(spec)], None, n=n, warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:stack_floor_nogc", [PYTHON, STACK_FLOOR, "build",
                                                               str(spec), "--no-gc"], None, n=n,
                            warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:engine_import", [PYTHON, "-c", ENGINE_IMPORT], tree,
                            n=n, warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:analyze_demo", analyze_argv(demo / ROUND), tree, n=n,
                            warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:analyze_100k", analyze_argv(big / ROUND), tree, n=n,
                            warmup=True))
    ctx.probes.append(Probe(f"{tree.label}:analyze_1m", analyze_argv(huge / ROUND), tree,
                            n=max(2, n // 3), timeout_s=300))


if __name__ == "__main__":
    import sys

    import run_all

    raise SystemExit(run_all.main(["--only", "analyze", *sys.argv[1:]]))

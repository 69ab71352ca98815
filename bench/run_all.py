"""Every published benchmark in one run, each figure a ratio against a floor measured in the same
run (minimum of N interleaved runs); prints a table and writes ``bench/out/bench.json``.

    bench/run [--quick] [--tree [LABEL=]DIR ...] [--only analyze|dash|diff|import ...] [--out FILE]

``--tree`` (repeatable) names the source trees to measure; default: the tree this script is in.
With two trees (say the code before a change and after it) every probe of both runs in the same
loop, so their figures come from the same minutes of the same machine. The floors are shared.

Figures (goal in brackets, as a ratio; the floor is the denominator; each group's ``FIGURES``
table is the reference, this list a summary):

* ``roofline analyze``, demo round, whole process / the stack floor (Python + pydantic + the
  command's models, rebuilt from the tree's own field lists: ``bench/stack_floor.py``)     [<= 1.2]
* the same / that floor run with its collector off, as ``analyze`` starts                [reported]
* the same / a clean-venv ``python -c pass`` (``python -m venv --without-pip``)           [reported]
* ``roofline analyze``, 100,000-entry Top-N / the same command on the demo round         [<= 8]
* ``roofline analyze``, 1,000,000-entry Top-N, peak RSS / the file's size                [<= 3]
* ``roofline dash`` start -> tables painted / a minimal Header+DataTable+Footer app      [<= 1.9]
* live update p50 with 20 and 1,000 rounds / the same with 1 round                       [<= 1.2]
* live update p50 with 1 round / a minimal app watching one file, updating one cell      [<= 1.5]
* ``roofline import torch`` 120k kernels, time / ``json.load`` of the same file          [<= 0.3]
* the same, peak RSS / ``json.load``'s peak RSS                                          [<= 0.1]
* the same trace as 8 ranks, peak RSS / the import of one rank                           [<= 1.2]
* the same 8 ranks, default ``--jobs`` (worker processes), time / ``--jobs 1``  [<= 0.6; 0.2 on 8]
* the same 8 ranks, default ``--jobs``, peak PSS of the process tree / one rank's  [<= jobs x 1.2]
* the same 8 ranks via ``--dask`` on a 2-worker cluster started beforehand / ``--jobs 2``  [<= 1.5]
* two ``json.load`` of the trace at once / the same one after the other                 [reported]
* ``roofline diff A B`` of two analysed 100,000-entry rounds / one ``analyze A``          [<= 2]

plus RSS before and after 1,000 live updates (flat), measured once per tree at the end, and
reference figures without a goal, over the clean-venv ``python -c pass``: the stack floor itself,
importing the engine (what ``analyze`` pays before it reads a file) and the dev environment's
own ``python -c pass`` (its editable finder and site-packages).

``--quick`` runs fewer repeats, fewer changes, a 20k-kernel trace and 100 updates for memory:
a smoke run whose ratios are noisier. Children run without ``PYTHONDONTWRITEBYTECODE`` so each
tree gets ``.pyc`` files, as an installed package has; one unmeasured warm-up run of each
start-up probe compiles them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import bench_analyze  # noqa: E402
import bench_dash  # noqa: E402
import bench_diff  # noqa: E402
import bench_import  # noqa: E402
from harness import Context, Figure, Probe, Tree, machine  # noqa: E402

GROUPS = {"analyze": bench_analyze, "dash": bench_dash, "diff": bench_diff,
          "import": bench_import}

FULL = {"analyze_runs": 9, "paint_runs": 9, "live_runs": 5, "live_changes": 12,
        "memory_updates": 1000, "import_runs": 3, "import_kernels": 120_000}
QUICK = {"analyze_runs": 3, "paint_runs": 3, "live_runs": 2, "live_changes": 6,
         "memory_updates": 100, "import_runs": 2, "import_kernels": 20_000}


def parse_trees(specs: list[str] | None) -> list[Tree]:
    if not specs:
        return [Tree("this", REPO)]
    trees: list[Tree] = []
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep:
            label, path = Path(spec).resolve().name, spec
        p = Path(path).resolve()
        if not (p / "roofline_tui" / "__init__.py").is_file():
            raise SystemExit(f"--tree {spec}: no roofline_tui package in {p}")
        if any(t.label == label for t in trees):
            label = f"{label}{len(trees) + 1}"
        trees.append(Tree(label, p))
    return trees


def interleave(probes: list[Probe], log: bool = True) -> None:
    """Warm-ups first (not counted), then rounds in which every unfinished probe runs once, each
    round starting one probe later so that no probe always follows the same neighbour."""
    for p in probes:
        if p.warmup:
            try:
                p.run_once()
            except (RuntimeError, OSError, ValueError, KeyError) as exc:
                p.errors.append(f"warm-up: {exc}")
                print(f"[bench] FAILED warm-up {exc}", file=sys.stderr, flush=True)
    i = 0
    while not all(p.done for p in probes):
        k = i % len(probes)
        for p in probes[k:] + probes[:k]:
            if not p.done:
                p.measure()
        i += 1
        if log:
            left = sum(max(0, p.n - len(p.runs)) for p in probes if not p.done)
            print(f"[bench] round {i} done, {left} runs left", file=sys.stderr, flush=True)


def figure_rows(figures: list[Figure], trees: list[Tree], probes: dict[str, Probe],
                constants: dict[str, float] | None = None) -> list[dict[str, Any]]:
    constants = constants or {}
    rows = []
    for f in figures:
        row: dict[str, Any] = {"id": f.id, "title": f.title, "floor": f.floor, "goal": f.goal,
                               "measure": f.what, "trees": {}}
        for t in trees:
            nk, dk = f.keys(t)
            num = probes[nk].best(f.what) if nk in probes else None
            if dk.startswith("const:"):
                den: float | None = constants.get(dk)
            else:
                den = probes[dk].best(f.what) if dk in probes else None
            ratio = num / den if num is not None and den else None
            row["trees"][t.label] = {
                "ratio": ratio,
                "met": (ratio <= f.goal) if ratio is not None and f.goal is not None else None,
                "value": num, "floor_value": den, "unit": f.unit,
                "runs": len(probes[nk].runs) if nk in probes else 0,
                "floor_runs": (len(probes[dk].runs) if dk in probes
                               else 1 if dk in constants else 0)}
        rows.append(row)
    return rows


def _abs(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit == "KiB":
        return f"{v / 1024:.0f} MiB"
    return f"{v * 1000:.0f} ms" if v < 10 else f"{v:.1f} s"


def report(res: dict[str, Any], trees: list[Tree]) -> None:
    m = res["machine"]
    print(f"machine: {m['cpu_model']}, {m['nproc']} CPU(s), {m['mem_total_gib']} GiB, load "
          f"{m['loadavg_1min_at_start']}; Python {m['python']}; textual {m['textual']}"
          + ("  [--quick]" if res["quick"] else ""))
    for t in res["trees"]:
        print(f"tree {t['label']}: {t['path']} ({t['commit'] or '?'})")
    print("each figure: min over N interleaved runs / its floor's min over runs in the same loop")
    for note in res.get("notes", []):
        print(f"  {note}")
    labels = [t.label for t in trees]
    w = 54
    print(f"\n{'figure':<{w}} {'goal':>6} " + " ".join(f"{lab:>14}" for lab in labels))
    for row in res["figures"]:
        cells = []
        for lab in labels:
            c = row["trees"][lab]
            if c["ratio"] is None:
                cells.append(f"{'n/a':>14}")
            else:
                mark = " " if c["met"] is None else ("✓" if c["met"] else "✗")
                cells.append(f"{c['ratio']:>11.2f}× {mark}")
        title = row["title"].replace("`", "")
        goal = "ref" if row["goal"] is None else "≤" + format(row["goal"], "g") + "×"
        print(f"{title[:w]:<{w}} {goal:>6} " + " ".join(cells))
        print(f"  {'over: ' + row['floor'].replace('`', ''):<{w - 2}}")
    print("\nabsolute minimums (illustrations only; this machine is shared):")
    for row in res["figures"]:
        parts = []
        for lab in labels:
            c = row["trees"][lab]
            parts.append(f"{lab} {_abs(c['value'], c['unit'])} over {_abs(c['floor_value'], c['unit'])}")
        print(f"  {row['id']:<16} " + "; ".join(parts))
    for mem in res.get("memory", []):
        if "error" in mem:
            print(f"memory {mem['tree']}: FAILED")
            continue
        print(f"memory {mem['tree']}: RSS {mem['rss_mib_before']:.1f} MiB -> "
              f"{mem['rss_mib_after']:.1f} MiB over {mem['updates']:,} live updates "
              f"({mem['rss_growth_mib']:+.1f} MiB)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a shorter, noisier run")
    ap.add_argument("--tree", action="append", metavar="[LABEL=]DIR",
                    help="a source tree to measure (repeatable; default: this one)")
    ap.add_argument("--only", choices=sorted(GROUPS), action="append",
                    help="run only these groups (repeatable)")
    ap.add_argument("--runs", type=int, help="runs per probe (overrides the defaults)")
    ap.add_argument("--memory-updates", type=int,
                    help="live updates for the memory figure (0 skips it)")
    ap.add_argument("--memory-tree", action="append", metavar="LABEL",
                    help="measure memory over live updates for these trees only (default: all)")
    ap.add_argument("--out", type=Path, default=BENCH / "out" / "bench.json",
                    help="where to write the JSON (default bench/out/bench.json)")
    ap.add_argument("--keep", action="store_true", help="keep the generated inputs")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.runs:
        for k in cfg:
            if k.endswith("_runs"):
                cfg[k] = args.runs
    if args.memory_updates is not None:
        cfg["memory_updates"] = args.memory_updates
    trees = parse_trees(args.tree)
    groups = args.only or list(GROUPS)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("[bench] note: PYTHONDONTWRITEBYTECODE is dropped for the measured children",
              file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="roofline-bench-"))
    res: dict[str, Any] = {"schema": "roofline-bench-v2", "quick": args.quick, "config": cfg,
                           "machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "trees": [{"label": t.label, "path": str(t.path), "commit": t.commit}
                                     for t in trees]}
    t0 = time.perf_counter()
    ctx = Context(trees, work, cfg,
                  memory_trees=set(args.memory_tree or [t.label for t in trees]))
    try:
        figures: list[Figure] = []
        for g in groups:
            print(f"[bench] preparing {g}…", file=sys.stderr, flush=True)
            GROUPS[g].add_probes(ctx)
            figures += GROUPS[g].FIGURES
        interleave(ctx.probes)
        if ctx.after:
            print("[bench] memory over live updates…", file=sys.stderr, flush=True)
        res["memory"] = [run() for run in ctx.after]
        probes = {p.key: p for p in ctx.probes}
        res["notes"] = ctx.notes
        res["constants"] = ctx.constants
        res["figures"] = figure_rows(figures, trees, probes, ctx.constants)
        res["probes"] = {p.key: {"argv": p.argv, "reads": p.reads, "errors": p.errors,
                                 "runs": [{"value_s": r.value_s, "wall_s": r.wall_s,
                                           "maxrss_kib": r.maxrss_kib} for r in p.runs],
                                 "teardown_errors": [r.report["teardown_error"] for r in p.runs
                                                     if "teardown_error" in r.report]}
                         for p in ctx.probes}
        failed = [p.key for p in ctx.probes if p.errors]
    finally:
        for stop in ctx.cleanup:
            stop()
        if args.keep:
            print(f"[bench] inputs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res["wall_s"] = time.perf_counter() - t0
    report(res, trees)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({res['wall_s']:.0f} s)")
    if failed:
        print(f"[bench] probes that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Dashboard benchmarks, as ratios (run through ``bench/run``; this file alone runs just these:
``python bench/bench_dash.py [--quick] [--tree DIR ...]``). Each run is a fresh interpreter
driving the app headless (Textual's ``run_test``, 200x50); the child side is ``probes.py``, the
floors are ``floor_apps.py``.

* start -> tables painted (the demo profile) over a minimal app with a Header, a 25-row
  DataTable and a Footer: from the instant the process is started to the first refreshed frame
  that shows the table(s);
* live update p50 (a new profile_topN.json written into the shown round -> its first row shows
  the new value) with 20 rounds in the profile over the same with 1 round: a recompute must not
  grow with the rounds beside it;
* live update p50 with 1 round over a minimal app that watches one file (same debounce and
  step) and updates one cell;
* RSS before and after 1,000 live updates on the demo profile (each waited for on screen): stays
  flat. Run once per tree, after the interleaved figures.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from harness import BENCH, PYTHON, Context, Figure, Probe, Tree, copy_demo

PROBES = str(BENCH / "probes.py")

FIGURES = [
    Figure("dash_paint", "`roofline dash`, start → tables painted",
           "minimal Textual app: Header, 25-row DataTable, Footer", 1.5,
           "{tree}:paint_dash", "floor:paint_app"),
    Figure("live_20_rounds", "live update p50, profile with 20 rounds", "the same with 1 round",
           1.2, "{tree}:live_20", "{tree}:live_1"),
    Figure("live_1_round", "live update p50, 1 round",
           "minimal app watching one file, updating one cell", 1.5,
           "{tree}:live_1", "floor:live_app"),
]


def build_profile(tree: Tree, dst: Path, rounds: int) -> Path:
    """A profile with ``rounds`` rounds made of the demo's (cycled); the newest, the one shown
    and changed, is the demo's newest. Returns the profile directory."""
    src = copy_demo(tree, dst / "_src")
    profile = dst / "profile"
    profile.mkdir(parents=True)
    demo_rounds = sorted(p for p in src.iterdir() if p.is_dir())
    for i in range(rounds):
        r = demo_rounds[-1] if i == rounds - 1 else demo_rounds[i % len(demo_rounds)]
        shutil.copytree(r, profile / f"round_{i}")
    for extra in src.parent.iterdir():  # config.json, env_report.json beside profile/
        if extra.is_file():
            shutil.copy2(extra, dst / extra.name)
    shutil.rmtree(dst / "_src")
    return profile


def newest_topn(profile: Path) -> Path:
    rounds = sorted((p for p in profile.iterdir() if p.is_dir()),
                    key=lambda p: int(p.name.rsplit("_", 1)[-1]))
    return rounds[-1] / "profile_topN.json"


def live_argv(kind: str, profile: Path | None, topn: Path, changes: int,
              memory: int = 0) -> list[str]:
    argv = [PYTHON, PROBES, "live", kind, str(profile) if profile else "-", str(topn),
            "--changes", str(changes)]
    return argv + (["--memory", str(memory)] if memory else [])


def add_probes(ctx: Context) -> None:
    """Each floor goes right before what it is the floor of, so the interleaved runs of a
    figure's numerator and denominator stay close in time."""
    cfg = ctx.cfg
    first = ctx.trees[0]
    ctx.probes.append(Probe("floor:paint_app", [PYTHON, PROBES, "paint", "floor"], None,
                            reads="paint", n=cfg["paint_runs"], warmup=True))
    for tree in ctx.trees:
        paint = copy_demo(tree, ctx.work / tree.label / "paint")
        ctx.probes.append(Probe(f"{tree.label}:paint_dash",
                                [PYTHON, PROBES, "paint", "dash", str(paint)], tree,
                                reads="paint", n=cfg["paint_runs"], warmup=True))
    floor_dir = ctx.work / "floor_live"
    floor_dir.mkdir(parents=True)
    floor_topn = floor_dir / "profile_topN.json"
    shutil.copy2(newest_topn(copy_demo(first, ctx.work / "floor_demo")), floor_topn)
    ctx.probes.append(Probe("floor:live_app", live_argv("floor", None, floor_topn,
                                                         cfg["live_changes"]),
                            None, reads="p50", n=cfg["live_runs"]))
    for tree in ctx.trees:
        for rounds in (1, 20):
            profile = build_profile(tree, ctx.work / tree.label / f"live_{rounds}", rounds)
            ctx.probes.append(Probe(f"{tree.label}:live_{rounds}",
                                    live_argv("dash", profile, newest_topn(profile),
                                              cfg["live_changes"]),
                                    tree, reads="p50", n=cfg["live_runs"]))
    for tree in ctx.trees:
        if cfg["memory_updates"] and tree.label in ctx.memory_trees:
            mem = copy_demo(tree, ctx.work / tree.label / "memory")
            ctx.after.append(_memory_run(tree, mem, cfg["memory_updates"]))


def _memory_run(tree: Tree, profile: Path, updates: int) -> Any:
    def run() -> dict[str, Any]:
        probe = Probe(f"{tree.label}:memory", live_argv("dash", profile, newest_topn(profile), 3,
                                                        memory=updates), tree, reads="p50", n=1)
        probe.measure()
        if not probe.runs:
            return {"tree": tree.label, "error": probe.errors[-1] if probe.errors else "?"}
        m = probe.runs[0].report["memory"]
        return {"tree": tree.label, "updates": m["updates"], "seconds": m["seconds"],
                "rss_mib_before": m["rss_mib_before"], "rss_mib_after": m["rss_mib_after"],
                "rss_growth_mib": m["rss_mib_after"] - m["rss_mib_before"],
                "peak_rss_mib": probe.runs[0].maxrss_kib / 1024}
    return run


if __name__ == "__main__":
    import sys

    import run_all

    raise SystemExit(run_all.main(["--only", "dash", *sys.argv[1:]]))

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
* live update p50 with 1,000 rounds over the same with 1 round (issue 26 item 4: the round a
  changed file belongs to is looked up, not found by resolving every round);
* RSS before and after 1,000 live updates on the demo profile (each waited for on screen): stays
  flat. Run once per tree, after the interleaved figures.

Memory over time (issue 26 item 7) is its own mode, run alone, in this process:
``python bench/bench_dash.py --soak MINUTES [--rate 4] [--interval 60]`` drives the dashboard
headless on a copy of the demo, rewrites the shown round's Top-N ``rate`` times a second, and
prints RSS every ``interval`` seconds with the allocation sites that grew most since the first
interval (tracemalloc), then whether the RSS converged (growth over the second half of the run).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

from harness import BENCH, PYTHON, Context, Figure, Probe, Tree, copy_demo

PROBES = str(BENCH / "probes.py")

FIGURES = [
    Figure("dash_paint", "`roofline dash`, start → tables painted",
           "minimal Textual app: Header, 25-row DataTable, Footer", 1.9,
           "{tree}:paint_dash", "floor:paint_app"),
    Figure("live_20_rounds", "live update p50, profile with 20 rounds", "the same with 1 round",
           1.2, "{tree}:live_20", "{tree}:live_1"),
    Figure("live_1000_rounds", "live update p50, profile with 1,000 rounds",
           "the same with 1 round", 1.2, "{tree}:live_1000", "{tree}:live_1"),
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
        for rounds in (1, 20, 1000):
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


# -- memory over time --------------------------------------------------------------------------

def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _soak(profile: Path, minutes: float, rate: float, interval: float,
                out: list[dict[str, Any]], trace: bool = True) -> None:
    import gc
    import json
    import threading
    import time
    import tracemalloc

    from roofline_tui.app.app import RooflineApp

    app = RooflineApp(profile, watch=True)
    topn = newest_topn(profile)
    data = json.loads(topn.read_text())
    async with app.run_test(size=(200, 50)) as pilot:
        while not (app.watching and app.session.shown in app.session.results):
            await pilot.pause(0.05)
        if trace:  # tracemalloc's own bookkeeping grows RSS: off for the RSS figure
            tracemalloc.start(8)
        first: Any = None
        count = [0]
        stop = threading.Event()

        def rewrite() -> None:  # on its own clock, whatever the app is doing
            due = time.monotonic()
            while not stop.is_set():
                count[0] += 1
                data["top_kernels"][0]["pct_gpu_time"] = 30.0 + (count[0] % 2000) / 100
                topn.write_text(json.dumps(data))
                due += 1 / rate
                stop.wait(max(0.0, due - time.monotonic()))

        writer = threading.Thread(target=rewrite, daemon=True)
        start = time.monotonic()
        writer.start()
        for i in range(int(minutes * 60 / interval) + 1):
            await asyncio.sleep(max(0.0, start + i * interval - time.monotonic()))
            gc.collect()
            row: dict[str, Any] = {"minute": round((time.monotonic() - start) / 60, 2),
                                   "updates": count[0], "rss_mib": round(_rss_mib(), 2)}
            if not trace:
                out.append(row)
                print(json.dumps(row), flush=True)
                continue
            snap = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)])
            row["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)
            if first is None:
                first = snap
            else:
                row["top_growth"] = [
                    f"{d.size_diff / 1024:+.0f} KiB {d.traceback[0].filename.split('/')[-1]}"
                    f":{d.traceback[0].lineno}" for d in snap.compare_to(first, "lineno")[:5]]
            out.append(row)
            print(json.dumps(row), flush=True)
        stop.set()
        writer.join()
        if trace:
            tracemalloc.stop()


def soak(minutes: float, rate: float, interval: float, trace: bool = True) -> int:
    import tempfile

    from roofline_tui.cli.dash import copy_demo as bundled_demo

    root = Path(tempfile.mkdtemp(prefix="roofline-soak-"))
    try:
        profile = bundled_demo(root)
        rows: list[dict[str, Any]] = []
        asyncio.run(_soak(profile, minutes, rate, interval, rows, trace))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rss = [r["rss_mib"] for r in rows]
    half = len(rss) // 2
    print(f"RSS {rss[0]:.1f} -> {rss[-1]:.1f} MiB over {rows[-1]['minute']:.1f} min "
          f"({rows[-1]['updates']} rewrites); second half: {rss[-1] - rss[half]:+.2f} MiB, "
          f"first half: {rss[half] - rss[0]:+.2f} MiB")
    return 0


if __name__ == "__main__":
    import sys

    if "--soak" in sys.argv:
        import argparse

        ap = argparse.ArgumentParser(description="dashboard memory over time")
        ap.add_argument("--soak", type=float, metavar="MINUTES", required=True)
        ap.add_argument("--rate", type=float, default=4.0, help="Top-N rewrites per second")
        ap.add_argument("--interval", type=float, default=300.0, help="seconds between reports")
        ap.add_argument("--no-tracemalloc", action="store_true",
                        help="RSS only: tracemalloc's own bookkeeping grows RSS")
        a = ap.parse_args()
        raise SystemExit(soak(a.soak, a.rate, a.interval, not a.no_tracemalloc))

    import run_all

    raise SystemExit(run_all.main(["--only", "dash", *sys.argv[1:]]))

"""Benchmark ``roofline dash`` headless (Textual's Pilot harness) on a copy of the bundled demo.

    python bench/bench_dash.py [--latency-changes 50] [--memory-changes 1000] [--json OUT]

Prints three figures; asserts nothing:

1. start to first paint: a fresh interpreter imports the app, mounts it (200x50) and paints;
   reported for the first frame and for the first frame that shows the analysed tables.
2. file change -> table updated: a new ``profile_topN.json`` is written into the shown round
   while the watcher runs; the time until the table's cell shows the new value (p50/p95/max).
3. memory over many changes: RSS after a warm-up and after N further file changes (each waited
   for until the table shows it), then Python-heap growth (tracemalloc) over traced recomputes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = time.perf_counter()
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def first_paint_child() -> None:
    """Runs in a fresh interpreter: prints a JSON line of timings (seconds from process start)."""
    from roofline_tui.app.app import RooflineApp
    from roofline_tui.cli.dash import copy_demo

    t_import = time.perf_counter() - START
    marks: dict[str, float] = {}

    class Timed(RooflineApp):
        def on_mount(self) -> None:
            self.call_after_refresh(lambda: marks.setdefault("first_frame", time.perf_counter()))

    async def run() -> None:
        profile = copy_demo(Path(tempfile.mkdtemp(prefix="roofline-bench-")))
        app = Timed(profile, watch=True)
        async with app.run_test(size=(200, 50)) as pilot:
            while not app.pct_table.row_count:
                await asyncio.sleep(0.002)
            app.call_after_refresh(lambda: marks.setdefault("tables", time.perf_counter()))
            while "tables" not in marks:
                await asyncio.sleep(0.002)
            await pilot.pause()

    asyncio.run(run())
    print(json.dumps({"import": t_import, "first_frame": marks["first_frame"] - START,
                      "tables": marks["tables"] - START}))


def measure_first_paint(repeat: int) -> list[dict[str, float]]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--first-paint-child"], capture_output=True,
                             text=True, check=True, timeout=120)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


async def measure_changes(latency_changes: int, memory_changes: int) -> dict[str, object]:
    from roofline_tui.app.app import RooflineApp
    from roofline_tui.cli.dash import copy_demo

    profile = copy_demo(Path(tempfile.mkdtemp(prefix="roofline-bench-")))
    round_dir = profile / "round_2"
    topn_path = round_dir / "profile_topN.json"
    data = json.loads(topn_path.read_text())
    app = RooflineApp(profile, watch=True)
    counter = 0

    def first_pct() -> str:
        return app.pct_table.get_row_at(0)[2].plain

    async def one_change() -> float:
        nonlocal counter
        counter += 1
        pct = 30.0 + (counter % 2000) / 100  # a distinct value each time (30.00 .. 49.99)
        data["top_kernels"][0]["pct_gpu_time"] = pct
        text = json.dumps(data)
        want = f"{pct:.2f}"
        t0 = time.perf_counter()
        topn_path.write_text(text)
        while first_pct() != want:
            await asyncio.sleep(0.002)
            if time.perf_counter() - t0 > 10:
                raise TimeoutError(f"change {counter} never showed")
        return time.perf_counter() - t0

    result: dict[str, object] = {}
    async with app.run_test(size=(200, 50)) as pilot:
        while not app.pct_table.row_count or not app.watching:
            await pilot.pause(0.01)
        await pilot.pause(0.3)
        latencies = []
        for _ in range(latency_changes):
            latencies.append(await one_change())
            await asyncio.sleep(0.02)
        latencies.sort()
        result["latency_s"] = {
            "n": len(latencies),
            "p50": statistics.median(latencies),
            "p95": latencies[max(0, int(round(0.95 * len(latencies))) - 1)],
            "max": latencies[-1],
        }
        if memory_changes:
            warm = min(100, memory_changes)
            for _ in range(warm):
                await one_change()
            gc.collect()
            rss0 = rss_mib()
            t0 = time.perf_counter()
            for _ in range(memory_changes):
                await one_change()
            elapsed = time.perf_counter() - t0
            gc.collect()
            rss1 = rss_mib()
            result["memory"] = {
                "changes": memory_changes, "warmup": warm, "seconds": elapsed,
                "rss_mib_before": rss0, "rss_mib_after": rss1, "rss_growth_mib": rss1 - rss0,
                "cached_rounds": len(app.results), "workers": len(app.workers),
            }
    return result


def heap_growth(changes: int) -> dict[str, float]:
    """Python-heap growth over ``changes`` recomputes, traced (slower, so fewer changes)."""
    import tracemalloc

    async def run() -> dict[str, float]:
        from roofline_tui.app.app import RooflineApp
        from roofline_tui.cli.dash import copy_demo

        profile = copy_demo(Path(tempfile.mkdtemp(prefix="roofline-bench-")))
        app = RooflineApp(profile, watch=False)
        async with app.run_test(size=(200, 50)) as pilot:
            async def recompute() -> None:
                g = app.generation
                app.action_recompute()
                while app.generation == g:
                    await asyncio.sleep(0.002)
                await pilot.pause(0)

            tracemalloc.start()  # traced from the start, so both samples count the same things
            for _ in range(50):
                await recompute()
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(changes):
                await recompute()
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
        return {"recomputes": changes, "heap_kib_before": before / 1024,
                "heap_kib_after": after / 1024, "heap_growth_kib": (after - before) / 1024}

    return asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--first-paint-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=5, help="first-paint runs (default 5)")
    ap.add_argument("--latency-changes", type=int, default=50)
    ap.add_argument("--memory-changes", type=int, default=1000)
    ap.add_argument("--heap-changes", type=int, default=150,
                    help="recomputes traced by tracemalloc (default 150; 0 skips)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = ap.parse_args()
    if args.first_paint_child:
        first_paint_child()
        return 0

    paint = measure_first_paint(args.repeat)
    med = {k: statistics.median(r[k] for r in paint) for k in paint[0]}
    print(f"start to first paint (median of {args.repeat}, fresh interpreter, 200x50):")
    print(f"  import app        {med['import'] * 1000:7.0f} ms")
    print(f"  first frame       {med['first_frame'] * 1000:7.0f} ms")
    print(f"  tables painted    {med['tables'] * 1000:7.0f} ms   (target <= 1500 ms)")

    changes = asyncio.run(measure_changes(args.latency_changes, args.memory_changes))
    lat = changes["latency_s"]
    print(f"file change -> table updated over {lat['n']} changes (watcher debounce 300 ms, "
          f"step 40 ms):")
    print(f"  p50 {lat['p50'] * 1000:6.0f} ms   p95 {lat['p95'] * 1000:6.0f} ms   "
          f"max {lat['max'] * 1000:6.0f} ms   (target p95 <= 500 ms)")
    mem = changes.get("memory")
    if mem:
        print(f"memory over {mem['changes']} file changes (after {mem['warmup']} warm-up, "
              f"{mem['seconds']:.0f} s):")
        print(f"  RSS {mem['rss_mib_before']:.1f} MiB -> {mem['rss_mib_after']:.1f} MiB "
              f"(growth {mem['rss_growth_mib']:+.1f} MiB); cached rounds {mem['cached_rounds']}, "
              f"live workers {mem['workers']}")
    heap = heap_growth(args.heap_changes) if args.heap_changes else None
    if heap:
        print(f"python heap over {heap['recomputes']} traced recomputes: "
              f"{heap['heap_kib_before']:.0f} KiB -> {heap['heap_kib_after']:.0f} KiB "
              f"(growth {heap['heap_growth_kib']:+.0f} KiB)")
    if args.json:
        args.json.write_text(json.dumps({"first_paint": paint, **changes, "heap": heap}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

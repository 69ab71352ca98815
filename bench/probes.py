"""Child side of the dashboard benchmarks: one measurement per fresh interpreter.

    python bench/probes.py paint dash PROFILE_DIR
    python bench/probes.py paint floor
    python bench/probes.py live dash PROFILE_DIR TOPN_FILE --changes K [--memory M]
    python bench/probes.py live floor - TOPN_FILE --changes K
    python bench/probes.py ingest dash WORK_DIR TRACE_GZ

Run by ``run_all.py`` with ``PYTHONPATH`` naming the tree under test; this file puts nothing on
``sys.path`` itself (its own directory, ``bench/``, holds no ``roofline_tui``). Prints one JSON
line. ``paint`` reports ``time.monotonic()`` at the moment the first frame showing the table(s)
has been refreshed, so the parent can subtract the instant it started the process (the same
system-wide clock) and the figure covers interpreter start-up, imports, analysis and paint.

The dashboard is found through its public surface only (``RooflineApp(profile, watch=...)`` and
its ``DataTable`` widgets), so the same probe measures trees before and after a restructure.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SIZE = (200, 50)


def _dash_app(profile: Path, watch: bool) -> Any:
    from roofline_tui.app.app import RooflineApp

    return RooflineApp(profile, watch=watch)


def _tables(app: Any) -> list[Any]:
    from textual.widgets import DataTable

    return list(app.query(DataTable))


def _filled(app: Any) -> bool:
    tables = _tables(app)
    return bool(tables) and all(t.row_count for t in tables)


def _first_row_shows(app: Any, pct: float) -> bool:
    for t in _tables(app):
        if not t.row_count:
            continue
        for cell in t.get_row_at(0):
            text = getattr(cell, "plain", str(cell)).replace("%", "").strip()
            try:
                if abs(float(text) - pct) < 0.004:
                    return True
            except ValueError:
                continue
    return False


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def paint(kind: str, profile: Path | None, out: dict[str, Any]) -> None:
    if kind == "dash":
        assert profile is not None
        app = _dash_app(profile, watch=True)
    else:
        from floor_apps import PaintFloor

        app = PaintFloor()
    marks: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        while not _filled(app):
            await asyncio.sleep(0.002)
        app.call_after_refresh(lambda: marks.setdefault("painted", time.monotonic()))
        while "painted" not in marks:
            await asyncio.sleep(0.002)
        out["painted_monotonic"] = marks["painted"]
        out["complete"] = True
        await pilot.pause()


async def live(kind: str, profile: Path | None, topn: Path, changes: int, memory: int,
               out: dict[str, Any]) -> None:
    """``changes`` timed file writes (file written -> first row shows the new value), then, when
    ``memory`` is set, RSS before and after that many more (each waited for on screen)."""
    if kind == "dash":
        assert profile is not None
        app = _dash_app(profile, watch=True)
    else:
        from floor_apps import WatchFloor

        app = WatchFloor(topn)
    data = json.loads(topn.read_text())
    counter = 0

    async def one_change() -> float:
        nonlocal counter
        counter += 1
        # a distinct value each time, larger than every other entry so it stays the first row
        pct = 30.0 + (counter % 2000) / 100
        data["top_kernels"][0]["pct_gpu_time"] = pct
        text = json.dumps(data)
        t0 = time.perf_counter()
        topn.write_text(text)
        while not _first_row_shows(app, pct):
            await asyncio.sleep(0.002)
            if time.perf_counter() - t0 > 30:
                raise TimeoutError(f"change {counter} never showed")
        return time.perf_counter() - t0

    async with app.run_test(size=SIZE) as pilot:
        deadline = time.perf_counter() + 120
        while not (_filled(app) and getattr(app, "watching", True)):
            await pilot.pause(0.01)
            if time.perf_counter() > deadline:
                raise TimeoutError("the app never showed its tables")
        await pilot.pause(0.3)
        await one_change()  # warm-up: the first change pays for lazily imported code
        await asyncio.sleep(0.05)
        lat = []
        for _ in range(changes):
            lat.append(await one_change())
            await asyncio.sleep(0.05)  # let the watcher settle: each change is measured alone
        lat.sort()
        out["latencies_s"] = lat
        out["p50_s"] = statistics.median(lat)
        if memory:
            for _ in range(min(100, memory)):
                await one_change()
            gc.collect()
            before = rss_mib()
            t0 = time.perf_counter()
            for _ in range(memory):
                await one_change()
            gc.collect()
            out["memory"] = {"updates": memory, "seconds": time.perf_counter() - t0,
                             "rss_mib_before": before, "rss_mib_after": rss_mib()}
        out["complete"] = True


async def ingest(work: Path, master: Path, out: dict[str, Any]) -> None:
    """``roofline dash --traces DIR PROFILE`` as the CLI runs it (``roofline ingest DIR --out
    PROFILE`` beside the dashboard), both in a fresh directory under ``work``: once both are
    up, a copy of ``master`` (a complete ``.json.gz``, staged on the same file system before
    the clock starts) is renamed into DIR, as a profiler's writer does; the time until the new
    round's rankings are painted is the figure (``p50_s`` of one)."""
    import shutil
    import subprocess
    import tempfile

    here = Path(tempfile.mkdtemp(prefix="ingest-", dir=work))
    traces, profile, trace = here / "traces", here / "profile", here / master.name
    traces.mkdir()
    shutil.copyfile(master, trace)
    log = open(here / "ingest.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "roofline_tui", "ingest", str(traces),
                             "--out", str(profile)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    try:
        from roofline_tui.app.app import RooflineApp

        app = RooflineApp(profile, watch=True, ingest=True)
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.perf_counter() + 120
            while not getattr(app, "watching", True) or not app.rest_built.is_set():
                await pilot.pause(0.01)
                if time.perf_counter() > deadline:
                    raise TimeoutError("the dashboard never started watching")
            await asyncio.sleep(3.0)  # the ingest process is up and has looked at DIR once
            t0 = time.perf_counter()
            os.rename(trace, traces / trace.name)
            while not _filled(app):
                await asyncio.sleep(0.005)
                if time.perf_counter() - t0 > 300:
                    raise TimeoutError("the ingested round never showed")
            out["p50_s"] = time.perf_counter() - t0
            out["complete"] = True
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("paint", "live", "ingest"))
    ap.add_argument("kind", choices=("dash", "floor"))
    ap.add_argument("profile", nargs="?", default="-")
    ap.add_argument("topn", nargs="?", type=Path)
    ap.add_argument("--changes", type=int, default=15)
    ap.add_argument("--memory", type=int, default=0)
    args = ap.parse_args(argv)
    profile = None if args.profile == "-" else Path(args.profile)
    res: dict[str, Any] = {}
    try:
        if args.what == "paint":
            asyncio.run(paint(args.kind, profile, res))
        elif args.what == "ingest":
            assert profile is not None
            asyncio.run(ingest(profile, args.topn, res))
        else:
            asyncio.run(live(args.kind, profile, args.topn, args.changes, args.memory, res))
    except Exception as exc:
        if not res.get("complete"):
            raise
        # The figures were taken; an error while the app shut down does not change them, but
        # it is a bug worth seeing: reported beside the figures (and on stderr).
        res["teardown_error"] = f"{type(exc).__name__}: {exc}"
        print(f"error after measuring, while the app shut down: {res['teardown_error']}",
              file=sys.stderr)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

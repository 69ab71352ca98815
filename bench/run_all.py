"""All published benchmarks in one run: prints the figures and writes them as JSON.

    bench/run [--quick] [--out bench/out/bench.json]

Reuses the measuring functions of ``bench_analyze.py``, ``bench_dash.py`` and ``bench_import.py``
(each still runs on its own). Figures:

* analyze time: ``roofline analyze`` whole process on a 25-entry round, and the engine's
  ``analyze_round()`` with every entry analysed at 25, 1,000 and 10,000 entries (plus the whole
  process on a 10,000-entry Top-N, default 8 heads);
* dashboard: start to first paint (fresh interpreter), file change -> table updated p50/p95,
  RSS after 1,000 live updates (each waited for on screen), Python-heap growth over recomputes;
* import: torch-trace importer throughput (events/s, MB/s) on a synthetic Kineto trace.

``--quick`` shrinks every sample (fewer repeats and changes, a smaller trace) for a smoke run; its
figures are noisier and the memory figure covers fewer updates than the published one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(BENCH), str(REPO)]

import bench_analyze  # noqa: E402
import bench_dash  # noqa: E402
import bench_import  # noqa: E402

FULL = {"repeat": 7, "first_paint": 5, "latency_changes": 50, "memory_changes": 1000,
        "heap_changes": 150, "import_kernels": 200_000}
QUICK = {"repeat": 2, "first_paint": 2, "latency_changes": 15, "memory_changes": 100,
         "heap_changes": 30, "import_kernels": 20_000}


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    import textual

    return {"nproc": usable, "cpu_count": os.cpu_count(), "cpu_model": model or platform.processor(),
            "mem_total_gib": mem_gib, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "platform": platform.platform(),
            "textual": textual.__version__, "commit": commit}


def analyze_figures(cfg: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="roofline-bench-") as tmp:
        r25 = bench_analyze.synthetic_round(Path(tmp) / "r25", 25)
        proc = bench_analyze.time_process(r25, cfg["repeat"])
        out["process_25_entries_s"] = {"median": statistics.median(proc), "min": min(proc),
                                       "max": max(proc), "n": len(proc)}
        engine = {}
        for n in (25, 1000, 10000):
            rd = bench_analyze.synthetic_round(Path(tmp) / f"e{n}", n)
            best = bench_analyze.time_engine(rd, n, 3)
            engine[str(n)] = {"best_s": best, "us_per_entry": best / n * 1e6}
        out["engine_all_entries_analysed"] = engine
        r10k = bench_analyze.synthetic_round(Path(tmp) / "p10k", 10000)
        proc10k = bench_analyze.time_process(r10k, min(3, cfg["repeat"]))
        out["process_10000_entries_8_heads_s"] = {"median": statistics.median(proc10k),
                                                  "n": len(proc10k)}
    return out


def dash_figures(cfg: dict[str, int]) -> dict[str, Any]:
    paint = bench_dash.measure_first_paint(cfg["first_paint"])
    first = {k: statistics.median(r[k] for r in paint) for k in paint[0]}
    changes = asyncio.run(bench_dash.measure_changes(cfg["latency_changes"],
                                                     cfg["memory_changes"]))
    heap = bench_dash.heap_growth(cfg["heap_changes"]) if cfg["heap_changes"] else None
    return {"first_paint_s": {**first, "n": len(paint), "runs": paint},
            "live_update_s": changes["latency_s"], "memory": changes.get("memory"),
            "heap": heap}


def import_figures(cfg: dict[str, int]) -> dict[str, Any]:
    """``bench_import.py``'s measurement: a synthetic trace, imported in a fresh child."""
    kernels = cfg["import_kernels"]
    layers = 25
    steps = max(1, kernels // (layers * 4))
    spec = bench_import.SynthSpec(prefill_steps=max(1, steps // 40),
                                  decode_steps=steps - max(1, steps // 40), layers=layers)
    with tempfile.TemporaryDirectory(prefix="roofline-bench-") as tmp:
        path = Path(tmp) / "trace.json"
        bench_import.write_trace(path, spec)
        size_mb = path.stat().st_size / 1e6
        base = bench_import._child(bench_import._CHILD_BASELINE)
        ours = bench_import._child(bench_import._CHILD, str(path))
    return {"kernels": kernels, "trace_mb": size_mb, "seconds": ours["seconds"],
            "events": ours["events"], "launches": ours["launches"],
            "events_per_s": ours["events"] / ours["seconds"], "mb_per_s": size_mb / ours["seconds"],
            "peak_rss_mib": ours["maxrss_kib"] / 1024,
            "baseline_rss_mib": base["maxrss_kib"] / 1024}


def report(res: dict[str, Any]) -> None:
    m = res["machine"]
    print(f"machine: {m['cpu_model']}, {m['nproc']} CPU(s), {m['mem_total_gib']} GiB; "
          f"Python {m['python']}; textual {m['textual']}; commit {m['commit'] or '?'}"
          + ("  [--quick]" if res["quick"] else ""))
    a = res["analyze"]
    p25 = a["process_25_entries_s"]
    print(f"analyze, 25 entries, whole process:        median {p25['median'] * 1000:7.0f} ms "
          f"(min {p25['min'] * 1000:.0f}, max {p25['max'] * 1000:.0f}, n={p25['n']})")
    for n, e in a["engine_all_entries_analysed"].items():
        print(f"analyze_round(), {int(n):>6,} entries (all):  best   {e['best_s'] * 1000:7.0f} ms "
              f"({e['us_per_entry']:.0f} µs/entry)")
    print(f"analyze, 10,000 entries, whole process:    median "
          f"{a['process_10000_entries_8_heads_s']['median'] * 1000:7.0f} ms (8 heads)")
    d = res["dash"]
    fp = d["first_paint_s"]
    print(f"dashboard first paint (median of {fp['n']}):    import {fp['import'] * 1000:.0f} ms, "
          f"first frame {fp['first_frame'] * 1000:.0f} ms, tables {fp['tables'] * 1000:.0f} ms")
    lat = d["live_update_s"]
    print(f"live update (file write -> table), n={lat['n']}: p50 {lat['p50'] * 1000:.0f} ms, "
          f"p95 {lat['p95'] * 1000:.0f} ms, max {lat['max'] * 1000:.0f} ms")
    mem = d["memory"]
    if mem:
        print(f"memory after {mem['changes']:,} live updates:     RSS {mem['rss_mib_after']:.1f} MiB "
              f"(from {mem['rss_mib_before']:.1f} MiB, growth {mem['rss_growth_mib']:+.1f} MiB)")
    if d["heap"]:
        h = d["heap"]
        print(f"python heap over {h['recomputes']} recomputes:       growth "
              f"{h['heap_growth_kib']:+.0f} KiB")
    i = res["import"]
    print(f"import, {i['kernels']:,} kernels ({i['trace_mb']:.0f} MB trace): {i['seconds']:.2f} s, "
          f"{i['events_per_s']:,.0f} events/s, {i['mb_per_s']:.1f} MB/s, "
          f"peak RSS {i['peak_rss_mib']:.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a shorter, noisier run")
    ap.add_argument("--out", type=Path, default=BENCH / "out" / "bench.json",
                    help="where to write the JSON (default bench/out/bench.json)")
    ap.add_argument("--only", choices=("analyze", "dash", "import"), action="append",
                    help="run only these parts (repeatable)")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    parts = args.only or ["analyze", "dash", "import"]
    res: dict[str, Any] = {"schema": "roofline-bench-v1", "quick": args.quick, "config": cfg,
                           "machine": machine(),
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    t0 = time.perf_counter()
    runners = {"analyze": analyze_figures, "dash": dash_figures, "import": import_figures}
    for part in ("analyze", "dash", "import"):
        if part in parts:
            print(f"[bench] {part}…", file=sys.stderr, flush=True)
            res[part] = runners[part](cfg)
    res["wall_s"] = time.perf_counter() - t0
    if set(parts) == set(runners):
        report(res)
    else:
        print(json.dumps({k: res[k] for k in parts}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({res['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

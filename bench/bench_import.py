"""Benchmark the torch-trace importer on a large synthetic Kineto trace.

    python bench/bench_import.py [--kernels 200000] [--gz] [--keep PATH]

Prints trace size, import time, events/s, MB/s and peak memory (RSS high-water mark of a fresh
child process, which isolates the import from the trace generation). When HolisticTraceAnalysis
is importable the same trace is also timed through HTA's kernel breakdown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from roofline_tui.importers.synth import SynthSpec, write_trace  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
from roofline_tui.importers import import_torch
t0 = time.perf_counter()
res = import_torch(sys.argv[1], progress=False)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "events": res.events_seen,
                  "launches": res.doc["num_kernel_launches"],
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_CHILD_BASELINE = r"""
import json, resource
import roofline_tui.importers
print(json.dumps({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_CHILD_HTA = r"""
import json, resource, sys, time
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
print(json.dumps({"seconds": time.perf_counter() - t0,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _child(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=200_000)
    ap.add_argument("--gz", action="store_true", help="write the trace gzip-compressed")
    ap.add_argument("--keep", type=Path, default=None, help="write the trace here and keep it")
    args = ap.parse_args()

    layers = 25
    steps = max(1, args.kernels // (layers * 4))
    spec = SynthSpec(prefill_steps=max(1, steps // 40), decode_steps=steps - max(1, steps // 40),
                     layers=layers)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / ("trace.json.gz" if args.gz else "trace.json")
        t0 = time.perf_counter()
        write_trace(path, spec)
        gen = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        print(f"synthetic trace: {path.name}, {size_mb:.1f} MB, generated in {gen:.1f} s")

        base = _child(_CHILD_BASELINE)
        ours = _child(_CHILD, str(path))
        ev_s = ours["events"] / ours["seconds"]
        print(f"roofline import: {ours['seconds']:.2f} s, {ours['events']:,} events "
              f"({ours['launches']:,} GPU launches), {ev_s:,.0f} events/s, "
              f"{size_mb / ours['seconds']:.1f} MB/s")
        print(f"  peak RSS {ours['maxrss_kib'] / 1024:.0f} MiB "
              f"(interpreter + package baseline {base['maxrss_kib'] / 1024:.0f} MiB; "
              f"import adds {(ours['maxrss_kib'] - base['maxrss_kib']) / 1024:.0f} MiB for a "
              f"{size_mb:.0f} MB file)")
        try:
            import hta  # noqa: F401
        except ImportError:
            print("HolisticTraceAnalysis: not installed, skipped (pip install "
                  "'roofline_tui[peer]')")
        else:
            hdir = Path(tmp) / "hta"
            hdir.mkdir()
            (hdir / path.name).symlink_to(path.resolve())
            theirs = _child(_CHILD_HTA, str(hdir))
            print(f"HTA kernel breakdown: {theirs['seconds']:.2f} s, peak RSS "
                  f"{theirs['maxrss_kib'] / 1024:.0f} MiB "
                  f"(ours is {theirs['seconds'] / ours['seconds']:.1f}x faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

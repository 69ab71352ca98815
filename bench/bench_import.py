"""`roofline import torch` benchmark, as ratios (run through ``bench/run``; this file alone runs
just these: ``python bench/bench_import.py [--quick] [--tree DIR ...]``).

A synthetic Kineto trace with 120,000 GPU kernels (20,000 with ``--quick``) is written once; then,
interleaved, the whole ``roofline import torch TRACE --out DIR`` process and a process that only
does ``json.load`` of the same file. Two figures: wall time over the ``json.load`` process's, and
peak RSS (each child's own, from ``wait4``) over the ``json.load`` process's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import PYTHON, Context, Figure, Probe

FIGURES = [
    Figure("import_time", "`roofline import torch`, 120k kernels, time", "`json.load` of the file",
           2.0, "{tree}:import_torch", "floor:json_load"),
    Figure("import_memory", "`roofline import torch`, 120k kernels, peak memory",
           "`json.load` of the file", 0.5, "{tree}:import_torch", "floor:json_load",
           what="maxrss_kib", unit="KiB"),
]

JSON_LOAD = "import json, sys\nwith open(sys.argv[1], 'rb') as fh:\n    json.load(fh)\n"


def write_trace(path: Path, kernels: int) -> None:
    """The bench's own tree writes the trace (the same file for every tree measured)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from roofline_tui.importers.synth import SynthSpec
    from roofline_tui.importers.synth import write_trace as write

    layers = 25
    steps = max(1, kernels // (layers * 4))  # 4 kernels per layer per step
    prefill = max(1, steps // 40)
    write(path, SynthSpec(prefill_steps=prefill, decode_steps=steps - prefill, layers=layers))


def add_probes(ctx: Context) -> None:
    n = ctx.cfg["import_runs"]
    trace = ctx.work / "trace.json"
    write_trace(trace, ctx.cfg["import_kernels"])
    ctx.probes.append(Probe("floor:json_load", [PYTHON, "-c", JSON_LOAD, str(trace)], None, n=n))
    for tree in ctx.trees:
        out = ctx.work / tree.label / "import_round"
        ctx.probes.append(Probe(f"{tree.label}:import_torch",
                                [PYTHON, "-m", "roofline_tui", "import", "torch", str(trace),
                                 "--out", str(out)], tree, n=n))


if __name__ == "__main__":
    import run_all

    raise SystemExit(run_all.main(["--only", "import", *sys.argv[1:]]))

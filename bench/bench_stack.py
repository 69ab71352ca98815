"""`roofline import torch` of a trace recorded ``with_stack`` (vLLM's default), as ratios: issue
38's "1 GB trace, time / peak RSS over ``json.load`` of the file" figure.

A with_stack trace is mostly ``python_function`` events: in the shared vLLM graph-capture trace
they are 119,876 of 131,243 events (91 %). This script writes the bench's synthetic serving trace
(``importers.synth``, the kernels, launches, cpu_ops and steps ``bench_import.py`` reads) and
then, inside every ``cpu_op`` span, a nest of ``python_function`` spans shaped as PyTorch writes
them (``file.py(line): function`` names, ``Python parent id`` / ``Python id`` / ``Ev Idx`` args;
one in 20 an ``nn.Module: Name_0`` call, as ``with_modules`` adds), until the file reaches
``--gb`` (default 1.0). Then, interleaved ``--runs`` times (default 3), a child that only does
``json.load`` of the file and a child running ``roofline import torch FILE --out DIR --force``;
each figure is the minimum over the runs of one over the minimum of the other (peak RSS from
``wait4``), measured in the same loop.

    python bench/bench_stack.py [--gb 1.0] [--runs 3] [--kernels 120000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JSON_LOAD = "import json, sys\nwith open(sys.argv[1], 'rb') as fh:\n    json.load(fh)\n"
FRAMES = ("vllm/v1/worker/gpu_model_runner.py(1873): execute_model",
          "vllm/model_executor/models/llama.py(412): forward",
          "torch/nn/modules/module.py(1762): _call_impl",
          "vllm/model_executor/layers/linear.py(512): forward",
          "vllm/model_executor/layers/quantization/fp8.py(701): apply",
          "torch/_ops.py(1158): __call__")


def write_stack_trace(path: Path, kernels: int, target_bytes: int) -> tuple[int, int]:
    """The synthetic trace with python_function nests in its cpu_op spans, about
    ``target_bytes`` long; returns (events, python_function events)."""
    sys.path.insert(0, str(ROOT))
    import orjson

    from roofline_tui.importers.synth import SynthSpec, synthetic_trace

    layers = 25
    steps = max(1, kernels // (layers * 4))
    prefill = max(1, steps // 40)
    doc = synthetic_trace(SynthSpec(prefill_steps=prefill, decode_steps=steps - prefill,
                                    layers=layers))
    events = doc.pop("traceEvents")
    base = sum(len(orjson.dumps(ev)) + 2 for ev in events)
    cpu_ops = sum(1 for ev in events if ev.get("cat") == "cpu_op")
    sample = orjson.dumps({"ph": "X", "cat": "python_function", "name": FRAMES[3], "pid": 4242,
                           "tid": 4242, "ts": 1234567.125, "dur": 1.5,
                           "args": {"Python parent id": 12345678, "Python id": 12345679,
                                    "Ev Idx": 12345680}})
    per_op = max(1, (target_bytes - base) // (cpu_ops * (len(sample) + 2)))
    py_id = 0
    written = py = 0
    with open(path, "wb") as fh:
        head = {k: v for k, v in doc.items()}
        fh.write(orjson.dumps(head)[:-1] + b', "traceEvents": [\n')
        first = True
        for ev in events:
            chunk = [ev]
            if ev.get("cat") == "cpu_op":
                ts, dur = float(ev["ts"]), float(ev["dur"])
                step = dur / (2 * per_op + 1)
                parent = None
                for k in range(per_op):  # nested spans, each inside the one before
                    py_id += 1
                    name = (f"nn.Module: Linear_{k % 4}" if py_id % 20 == 0
                            else FRAMES[k % len(FRAMES)])
                    chunk.append({"ph": "X", "cat": "python_function", "name": name,
                                  "pid": ev["pid"], "tid": ev["tid"],
                                  "ts": ts + step * (k + 1), "dur": dur - 2 * step * (k + 1),
                                  "args": {"Python parent id": parent, "Python id": py_id,
                                           "Ev Idx": py_id}})
                    parent = py_id
                py += per_op
            for item in chunk:
                fh.write((b"" if first else b",\n") + orjson.dumps(item))
                first = False
                written += 1
        fh.write(b"\n]}\n")
    return written, py


def run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return took, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kernels", type=int, default=120_000)
    ap.add_argument("--keep", type=Path, default=None, help="write the trace here and keep it")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_stack_"))
    try:
        trace = (args.keep or work) / "stack_trace.json"
        trace.parent.mkdir(parents=True, exist_ok=True)
        if not trace.is_file():
            events, py = write_stack_trace(trace, args.kernels, int(args.gb * 1e9))
            print(f"wrote {trace}: {trace.stat().st_size / 1e9:.2f} GB, {events:,} events, "
                  f"{py:,} python_function ({py / events:.0%})")
        env_py = sys.executable
        imp = [env_py, "-m", "roofline_tui", "import", "torch", str(trace), "--out",
               str(work / "round"), "--force"]
        floor = [env_py, "-c", JSON_LOAD, str(trace)]
        times: dict[str, list[float]] = {"json_load": [], "import": []}
        rss: dict[str, list[int]] = {"json_load": [], "import": []}
        os.chdir(ROOT)
        for _ in range(args.runs):
            for key, argv in (("json_load", floor), ("import", imp)):
                t, m = run(argv)
                times[key].append(t)
                rss[key].append(m)
        t_floor, t_imp = min(times["json_load"]), min(times["import"])
        m_floor, m_imp = min(rss["json_load"]), min(rss["import"])
        print(f"import torch, with_stack trace: time {t_imp / t_floor:.2f}x json.load "
              f"({t_imp:.1f} s over {t_floor:.1f} s), peak RSS {m_imp / m_floor:.3f}x "
              f"({m_imp / 1024:.0f} MiB over {m_floor / 1024:.0f} MiB); {args.runs} interleaved "
              f"runs, min of each; load {os.getloadavg()[0]:.1f}")
        print(json.dumps({"time_ratio": t_imp / t_floor, "rss_ratio": m_imp / m_floor,
                          "times": times, "rss_kib": rss}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

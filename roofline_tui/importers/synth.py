"""Synthetic Kineto traces for tests and benchmarks (vLLM-style serving steps included).

Each step is a ``gpu_user_annotation`` span ``execute_context_<n>(<tokens>)_generation_<b>(<b>)``
on the GPU timeline; inside it every layer launches a GEMM, an attention kernel, an RMSNorm and
a Triton MoE kernel. Each launch has a ``cpu_op`` (with ``Input Dims``/``Input type``) enclosing a
``cudaLaunchKernel`` that shares ``args.correlation`` with the kernel.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

GEMM = "Cijk_Alik_Bljk_BBS_BH_MT256x224x64_MI16x16x1_SN_1LDSB1_GRVW8"
ATTN = "kernel_unified_attention_2d"
NORM = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, long, long)"
MOE = "fused_moe_kernel"
# (name, duration µs in prefill, duration µs in decode, cpu op, dims(M), dtype)
_Layer = tuple[str, float, float, str, Callable[[int], list[list[int]]], str]
LAYER: tuple[_Layer, ...] = (
    (GEMM, 40.0, 8.0, "aten::mm", lambda m: [[m, 4096], [4096, 4096]], "c10::BFloat16"),
    (ATTN, 30.0, 12.0, "vllm::unified_attention", lambda m: [[m, 32, 128]], "c10::BFloat16"),
    (NORM, 4.0, 2.0, "vllm::rms_norm", lambda m: [[m, 4096], [4096]], "c10::BFloat16"),
    (MOE, 50.0, 20.0, "vllm::fused_moe", lambda m: [[m, 4096], [64, 1024, 4096]],
     "c10::Float8_e4m3fn"),
)


@dataclass
class SynthSpec:
    prefill_steps: int = 2
    decode_steps: int = 6
    layers: int = 4
    prefill_tokens: int = 512
    decode_batch: int = 8
    device: int = 0
    with_steps: bool = True
    extra_device: int | None = None  # a second device with a little work on it


def _events(spec: SynthSpec) -> Iterator[dict[str, Any]]:
    pid_cpu, tid_cpu = 4242, 4242
    yield {"ph": "M", "name": "process_name", "pid": spec.device, "args": {"name": "GPU 0"}}
    t_cpu = 1000.0
    t_gpu = 5000.0
    corr = 1
    steps = ([("prefill", s) for s in range(spec.prefill_steps)]
             + [("decode", s) for s in range(spec.decode_steps)])
    for phase, _s in steps:
        m = spec.prefill_tokens + spec.decode_batch if phase == "prefill" else spec.decode_batch
        step_start = t_gpu
        for _layer in range(spec.layers):
            for name, dur_p, dur_d, op, dims, dtype in LAYER:
                dur = dur_p if phase == "prefill" else dur_d
                yield {"ph": "X", "cat": "cpu_op", "name": op, "pid": pid_cpu, "tid": tid_cpu,
                       "ts": t_cpu, "dur": 10.0,
                       "args": {"External id": corr, "Input Dims": dims(m) + [[]],
                                "Input type": [dtype] * len(dims(m)) + ["Scalar"]}}
                yield {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": pid_cpu, "tid": tid_cpu, "ts": t_cpu + 2.0, "dur": 5.0,
                       "args": {"External id": corr, "correlation": corr}}
                yield {"ph": "X", "cat": "kernel", "name": name, "pid": spec.device, "tid": 7,
                       "ts": t_gpu, "dur": dur,
                       "args": {"External id": corr, "device": spec.device, "stream": 7,
                                "correlation": corr}}
                corr += 1
                t_cpu += 12.0
                t_gpu += dur + 1.0
        if spec.with_steps:
            if phase == "prefill":
                label = (f"execute_context_1({spec.prefill_tokens})_"
                         f"generation_{spec.decode_batch}({spec.decode_batch})")
            else:
                label = f"execute_context_0(0)_generation_{spec.decode_batch}({spec.decode_batch})"
            yield {"ph": "X", "cat": "gpu_user_annotation", "name": label, "pid": spec.device,
                   "tid": 7, "ts": step_start, "dur": t_gpu - step_start, "args": {}}
        t_gpu += 10.0
    yield {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
           "pid": spec.device, "tid": 7, "ts": t_gpu, "dur": 3.0,
           "args": {"device": spec.device, "correlation": corr, "bytes": 4096}}
    if spec.extra_device is not None:
        yield {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel",
               "pid": spec.extra_device, "tid": 7, "ts": t_gpu, "dur": 1.0,
               "args": {"device": spec.extra_device, "correlation": corr + 1}}


def synthetic_trace(spec: SynthSpec | None = None) -> dict[str, Any]:
    spec = spec or SynthSpec()
    return {"schemaVersion": 1, "deviceProperties": [{"id": spec.device, "name": "synthetic"}],
            "traceEvents": list(_events(spec)), "traceName": "synthetic"}


def write_trace(path: Path, spec: SynthSpec | None = None) -> Path:
    """Write the synthetic trace event by event (bounded memory even for huge specs)."""
    spec = spec or SynthSpec()
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        _dump(fh, spec)
    return path


def _dump(fh: TextIO, spec: SynthSpec) -> None:
    fh.write(f'{{"schemaVersion": 1, "deviceProperties": [{{"id": {spec.device}, '
             '"name": "synthetic"}],\n "traceEvents": [\n')
    first = True
    for ev in _events(spec):
        if not first:
            fh.write(",\n")
        fh.write(json.dumps(ev))
        first = False
    fh.write('\n], "traceName": "synthetic"}\n')

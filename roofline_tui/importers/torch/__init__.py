"""PyTorch profiler (Kineto) chrome trace -> Top-N: the torch importer's package.

One streamed pass keeps only compact per-event records in typed arrays:

* GPU work (``cat`` kernel / gpu_memcpy / gpu_memset): device, kernel-name id, correlation,
  start, duration and launch geometry (grid, block) when recorded;
* launch API events (``cuda_runtime`` / ``cuda_driver``) carrying ``args.correlation``: thread
  and start time;
* ``cpu_op`` spans that carry ``Input Dims``: thread, start, end, External id and an interned
  signature: the op's name and, per argument position, the dims and the type as recorded;
* step annotations (``user_annotation`` on the CPU, ``gpu_user_annotation`` mirrors), parsed
  by ``importers.steps`` (vLLM, SGLang, ATOM label families).

Launching op: a kernel's launch event shares ``args.correlation`` with it; the launching op is
the innermost shape-carrying ``cpu_op`` on the launch event's thread whose span encloses the
launch (falling back to the ``cpu_op`` with the kernel's ``External id``). A kernel replayed
from a CUDA/HIP graph has none in this trace; ``torch.replay`` takes it from the run's
graph-capture traces (``--capture``, or the layouts the frameworks write beside the trace).

Instances: each Top-N entry keeps, under the extension key (``core.topn_ext``), one instance
per (launching op signature, geometry, how the op was found) with its own calls and time, per
phase too; the upstream ``shapes``/``dtypes`` fields are written as before.

Split-stage MoE: a MoE kernel whose name does not say its stage, launched inside a ``cpu_op``
whose name does (``aiter::ck_moe_stage1`` / ``aiter::ck_moe_stage2``: some libraries run both
GEMMs of the layer through one kernel), becomes one Top-N entry per stage, ``<name> [stage1]``
and ``<name> [stage2]`` (short names ``<short>.stage1`` / ``.stage2``), each with the launches,
time and shapes of its own stage and a note naming the launching op. Launches outside such an
op keep the kernel's name: then one logical op is both launches, as the engine models it.

Serving steps: a CPU step annotation owns the kernels whose launch (graph launches included)
lies inside its span on the same thread, so kernels that run after the span closed still
belong to it; only a trace without CPU annotations falls back to the GPU mirror spans around
the kernels. Nested labels of one step (vLLM's ``execute_*`` around SGLang's ``step[...]``)
and a step's CPU and GPU mirrors count once. A step with context tokens is a prefill step
(M = its tokens); one with generation requests only, a decode step (M = its requests).

The package, from the bottom up: ``values``, ``rows``, ``signatures`` and ``step_records``
(what one event's fields become), ``collector`` (the streamed pass's state and its general
reader) and ``typed_loop`` (its fast reader), ``reading`` (opening the file), ``spans`` (span
algorithms), ``launches`` (launches, launching ops, per-kernel aggregates), ``moe``,
``step_join`` and ``evidence``, ``replay`` (graph replays from capture traces) and ``run`` (the
procedure). This face names what the rest of the project uses; an import-linter contract
keeps the floors in that order.
"""

from roofline_tui.importers.torch.reading import collect
from roofline_tui.importers.torch.run import (
    DEFAULT_OPTIONS,
    DeviceChoice,
    KernelTimes,
    TorchImport,
    TorchOptions,
    import_collected,
    import_torch,
    kernel_times,
)
from roofline_tui.importers.torch.signatures import concrete_value
from roofline_tui.importers.torch.step_records import parse_step

__all__ = [
    "DEFAULT_OPTIONS",
    "DeviceChoice",
    "KernelTimes",
    "TorchImport",
    "TorchOptions",
    "collect",
    "concrete_value",
    "import_collected",
    "import_torch",
    "kernel_times",
    "parse_step",
]

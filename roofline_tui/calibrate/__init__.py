"""``roofline calibrate``: measure the roofline ceilings of the user's own GPU.

* :mod:`.sweep` — the plan, pure and torch-free: the :class:`~.sweep.Backend` protocol, the
  bounded MAMF-style shape search, its stopping rule, the copy, the time budget.
* :mod:`.section` — the ``peaks.md`` section written from a :class:`~.sweep.Calibration`
  (measured ceilings beside the bundled data sheet of the same part) and the rule for where it
  may be written.
* :mod:`.torch_backend` — the real backend (PyTorch on CUDA or ROCm), imported only when the
  command runs on a machine that has it.

The engine (``roofline_tui.core``) does not import this package; this package imports the
engine's peak-table helpers and atomic writes.
"""

from roofline_tui.calibrate.section import (
    DEFAULT_OUT,
    OutputChoice,
    choose_output,
    data_sheet_for,
    render_section,
    stack_line,
    write_section,
)
from roofline_tui.calibrate.sweep import (
    DTYPES,
    Backend,
    Calibration,
    CopyResult,
    DeviceInfo,
    DtypeResult,
    Plateau,
    ProgressEvent,
    Shape,
    ShapeResult,
    ShapeSearch,
    SweepSettings,
    TimingPlan,
    run_calibration,
    settings_for,
    sweep_dtype,
)

__all__ = [
    "DEFAULT_OUT",
    "DTYPES",
    "Backend",
    "Calibration",
    "CopyResult",
    "DeviceInfo",
    "DtypeResult",
    "OutputChoice",
    "Plateau",
    "ProgressEvent",
    "Shape",
    "ShapeResult",
    "ShapeSearch",
    "SweepSettings",
    "TimingPlan",
    "choose_output",
    "data_sheet_for",
    "render_section",
    "run_calibration",
    "settings_for",
    "stack_line",
    "sweep_dtype",
    "write_section",
]

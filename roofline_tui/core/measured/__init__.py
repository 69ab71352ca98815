"""Stage B (captured shapes) and stage C (measured counters) input parsers.

Public API::

    load_counters(paths) -> CounterSet              # any supported counter format
    discover_counter_files(round_dir) -> list[Path]
    match_measurement(counters, kernel_name) -> KernelMeasurement | None
    discover_task_dirs(eval_dir) -> list[Path]
    load_task_dir(task_dir) -> (CapturedShapes | None, problems)
    match_task(tasks, kernel_name) -> CapturedShapes | None

All values are per dispatch (one launch), in bytes, FLOPs and seconds. Loaders never raise;
they report one-line ``problems``.
"""

from ..layout import discover_counter_files, discover_roofline_files, discover_task_dirs
from .counters import load_counters, match_measurement, sniff
from .models import (
    CapturedShapes,
    CounterSet,
    KernelMeasurement,
    MoEParams,
    ShapeCase,
)
from .names import short_name
from .shapes import load_task_dir, match_task

__all__ = [
    "CapturedShapes",
    "CounterSet",
    "KernelMeasurement",
    "MoEParams",
    "ShapeCase",
    "discover_counter_files",
    "discover_roofline_files",
    "discover_task_dirs",
    "load_counters",
    "load_task_dir",
    "match_measurement",
    "match_task",
    "short_name",
    "sniff",
]

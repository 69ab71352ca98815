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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name is imported from its module when first asked for: importing one module of this
# package (``measured.models`` for the types a Top-N names) never loads the counter readers.
_HOME = {
    "discover_counter_files": "roofline_tui.core.layout",
    "discover_roofline_files": "roofline_tui.core.layout",
    "discover_task_dirs": "roofline_tui.core.layout",
    "load_counters": ".counters",
    "match_measurement": ".counters",
    "sniff": ".counters",
    "CapturedShapes": ".models",
    "CounterSet": ".models",
    "KernelMeasurement": ".models",
    "MoEParams": ".models",
    "ShapeCase": ".models",
    "short_name": ".names",
    "load_task_dir": ".shapes",
    "match_task": ".shapes",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)


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

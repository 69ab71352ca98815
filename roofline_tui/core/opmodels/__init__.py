"""One module per op class. Each defines ``OP_CLASS``, ``TARGET_EFF``, ``TARGET_EFF_WHY`` and
``estimate(ctx) -> OpEstimate``; modules are discovered here, so adding a class touches no other.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from roofline_tui.core.opmodels.base import (
    Candidate,
    OpContext,
    OpEstimate,
    OpModelUnavailable,
)


def _discover() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        op_class = getattr(module, "OP_CLASS", None)
        if op_class and callable(getattr(module, "estimate", None)):
            found[op_class] = module
    return found


MODELS: dict[str, ModuleType] = _discover()

__all__ = ["MODELS", "Candidate", "OpContext", "OpEstimate", "OpModelUnavailable"]

"""Importers: turn raw profiler output (PyTorch/Kineto traces, rocprofv3 kernel traces and rocpd
databases, Nsight Systems kernel summaries) into the upstream ``profile_topN.json``.

Each importer lives in its own module and the command line imports the one it runs
(``roofline_tui.importers.torch_trace``, ``.tables``). This package imports none of them: the
names below stay importable from it, each loaded from the module ``_HOME`` names on first use,
so that ``roofline import torch`` does not pay for the table importers' models and parsers.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "TOPN_JSON": "common",
    "ImportProblem": "common",
    "build_topn": "common",
    "classify": "common",
    "short_name": "common",
    "write_round": "common",
    "import_nsys": "tables",
    "import_rocprofv3": "tables",
    "import_torch": "torch_trace",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    """``from roofline_tui.importers import X``: X from its own module (PEP 562)."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

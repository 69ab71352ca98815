"""Importers: turn raw profiler output (PyTorch/Kineto traces, rocprofv3 kernel traces and rocpd
databases, Nsight Systems kernel summaries) into the upstream ``profile_topN.json``."""

from roofline_tui.importers.common import (
    TOPN_JSON,
    ImportProblem,
    build_topn,
    classify,
    short_name,
    write_round,
)
from roofline_tui.importers.tables import import_nsys, import_rocprofv3
from roofline_tui.importers.torch_trace import import_torch

__all__ = [
    "TOPN_JSON",
    "ImportProblem",
    "build_topn",
    "classify",
    "import_nsys",
    "import_rocprofv3",
    "import_torch",
    "short_name",
    "write_round",
]

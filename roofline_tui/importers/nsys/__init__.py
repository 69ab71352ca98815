"""Nsight Systems -> Top-N. :func:`import_nsys` reads what ``nsys`` writes and hands each
form to its reader: the ``cuda_gpu_kern_sum`` summary, CSV or console text (:mod:`.stats`); the
per-launch ``cuda_gpu_trace`` CSV (:mod:`.gpu_trace`); an ``nsys export --type sqlite``
database (:mod:`.sqlite`, imported only for a database). The three readers are independent of
each other; what they share with the rocprof readers is :mod:`roofline_tui.importers.tables`."""

from __future__ import annotations

from pathlib import Path

from roofline_tui.core import store
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem
from roofline_tui.importers.nsys.gpu_trace import import_gpu_trace
from roofline_tui.importers.nsys.stats import import_stats
from roofline_tui.importers.sniff import NSYS
from roofline_tui.importers.sniff import check as sniff_check
from roofline_tui.importers.tables import TableImport, is_sqlite, read_text


def import_nsys(path: Path, *, top: int = DEFAULT_TOP,
                device_index: int | None = None) -> TableImport:
    """``nsys stats`` output: the ``cuda_gpu_kern_sum`` table (old ``gpukernsum`` / "CUDA Kernel
    Statistics" too), found wherever it is in a multi-report dump, in CSV or console layout;
    the ``cuda_gpu_trace`` per-launch CSV; or an ``nsys export --type sqlite`` database."""
    path = Path(path)
    why = store.check_regular(path)
    if why is not None:
        raise ImportProblem(f"{printable(path)}: {printable(why)}")
    verdict = sniff_check(path, NSYS)
    if verdict.refusal:
        raise ImportProblem(verdict.refusal)
    if is_sqlite(path):
        from roofline_tui.importers.nsys.sqlite import import_nsys_sqlite

        return import_nsys_sqlite(path, top=top, device_index=device_index)
    text = read_text(path)
    if verdict.rule is not None and verdict.rule.kind == "nsys-gpu-trace":
        return import_gpu_trace(path, text, top=top, device_index=device_index)
    return import_stats(path, text, top=top)

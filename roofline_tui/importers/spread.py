"""One kernel's spread across the ranks of a run, or across the GPUs of one export.

Several rank traces (``importers.ranks``) and an export that holds several GPUs (an nsys
SQLite export, an nsys ``cuda_gpu_trace`` CSV: ``importers.nsys.sqlite``, ``importers.nsys.gpu_trace``)
give one Top-N — of the rank or device named, else the slowest (most GPU time) — plus, per
entry, the kernel's mean time per launch on each rank or device that ran it: min / median /
max and the slowest, so a straggler shows. Only per-kernel sums are kept per rank or device
(:class:`RankKernels`). This module writes that block on a Top-N document and its ``.md``
section; the typed models and their parsers are ``core.topn_ext``'s.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from roofline_tui.core import units
from roofline_tui.core.extension import EXTENSION_KEY, EXTENSION_VERSION
from roofline_tui.core.textsafe import md_cell, printable

if TYPE_CHECKING:  # the models (pydantic) are imported by the functions that build or read them
    from roofline_tui.core.topn_ext import RankSpread

MD_MAX_ROWS = 25
Unit = Literal["rank", "device"]
ChosenBy = Literal["--rank", "--device-index", "slowest"]


@dataclass
class RankKernels:
    """What is kept of one rank (or device) once its launches have been read."""

    rank: int
    file: str
    total_us: float
    launches: int
    kernels: dict[str, tuple[int, float]]  # kernel name -> (launches, total µs)


def spread_of(name: str, ranks: Sequence[RankKernels]) -> RankSpread | None:
    """The kernel's mean time per launch over the ranks that launched it."""
    from roofline_tui.core.topn_ext import RankSpread

    per: dict[int, float] = {}
    for rk in ranks:
        got = rk.kernels.get(name)
        if got is not None and got[0] > 0:
            per[rk.rank] = got[1] / got[0]
    if not per:
        return None
    values = list(per.values())
    slowest = max(sorted(per), key=lambda r: per[r])  # ties: the lowest rank
    return RankSpread(ranks=len(per), min_us=_us(min(values)),
                      median_us=_us(statistics.median(values)), max_us=_us(max(values)),
                      slowest_rank=slowest)


def _us(value: float) -> float:
    out = round(float(value), 3)
    return 0.0 if out == 0 else out


def attach_spread(doc: dict[str, Any], rank: int, chosen_by: ChosenBy,
                  ranks: Sequence[RankKernels], unit: Unit = "rank") -> None:
    """Write the rank set on the document and, with two ranks or more, each entry's spread."""
    from roofline_tui.core.topn_ext import RankSet, RankTrace

    traces = [RankTrace(rank=rk.rank, file=rk.file, gpu_time_ms=round(rk.total_us / 1000.0, 4),
                        launches=rk.launches, kernels=len(rk.kernels)) for rk in ranks]
    block = RankSet(rank=rank, unit=unit, chosen_by=chosen_by, traces=traces)
    ext = doc.setdefault(EXTENSION_KEY, {"version": EXTENSION_VERSION})
    ext["ranks"] = block.model_dump(mode="json", exclude_defaults=unit == "rank")
    if len(ranks) < 2:
        return
    for entry in doc["top_kernels"]:
        spread = spread_of(entry["name"], ranks)
        if spread is not None:
            entry.setdefault(EXTENSION_KEY, {})["ranks"] = spread.model_dump(mode="json")


def markdown_lines(doc: dict[str, Any]) -> list[str]:
    """The ``.md`` section on the ranks (or devices): which one the Top-N is, and each entry's
    spread (read back through the extension's own parsers)."""
    from roofline_tui.core.topn_ext import parse_rank_set, parse_rank_spread

    ext = doc.get(EXTENSION_KEY)
    block, _problems = parse_rank_set(ext.get("ranks") if isinstance(ext, dict) else None)
    if block is None:
        return []
    unit = block.unit
    if block.chosen_by == "slowest":
        why = f"the slowest {unit}: most GPU time"
    else:
        why = f"named with `{block.chosen_by}`"
    what = "rank trace(s)" if unit == "rank" else "GPUs with kernels"
    lines = ["", "## Ranks" if unit == "rank" else "## Devices", "",
             f"- this Top-N is {unit} **{block.rank}** ({why}) of {len(block.traces)} {what}"]
    for t in block.traces:
        lines.append(f"- {unit} {t.rank}: `{md_cell(t.file, limit=80)}`, "
                     f"{units.millis(t.gpu_time_ms)} GPU time, {t.launches} launches, "
                     f"{t.kernels} kernels")
    rows = []
    for k in doc.get("top_kernels", [])[:MD_MAX_ROWS]:
        k_ext = k.get(EXTENSION_KEY) if isinstance(k, dict) else None
        spread, _why = parse_rank_spread(k_ext.get("ranks") if isinstance(k_ext, dict) else None)
        if spread is None:
            continue
        ratio = f"{spread.max_us / spread.median_us:.2f}×" if spread.median_us else "–"
        rows.append(f"| {printable(k.get('rank'))} | `{md_cell(k.get('short_name'), limit=60)}` "
                    f"| {spread.ranks} | {units.fixed(spread.min_us, 1)} | "
                    f"{units.fixed(spread.median_us, 1)} | {units.fixed(spread.max_us, 1)} | "
                    f"{ratio} | {spread.slowest_rank} |")
    if rows:
        lines += ["", f"Time per launch across the {unit}s (µs; each {unit}'s mean per "
                      "launch):", "",
                  f"| # | kernel | {unit}s | min | median | max | max/median | slowest {unit} |",
                  "|--|--|--|--|--|--|--|--|", *rows]
    return lines

"""Several ranks of one run -> one Top-N, with every kernel's spread across the ranks.

A tensor-parallel run writes one PyTorch trace per rank. ``roofline import torch`` given
several of them (or a directory holding them) writes the Top-N of one rank (``--rank R``,
default: the slowest rank, the one with the most GPU time) and records, per Top-N entry, how
the kernel's mean time per launch spreads over the ranks that ran it (min / median / max, the
slowest rank), so a straggler shows (``core.topn_ext``: ``RankSpread``, ``RankSet``).

The traces are read one at a time, each streamed as a single import is. Of a rank only its
per-kernel sums (launches, time) are kept once its trace has been read; the rank whose Top-N
is written is analysed while its trace is in memory (with the default, each rank that is the
slowest so far is, and the Top-N of the slowest so far kept), so memory stays that of one
trace. Kernels are matched across ranks by the Top-N's kernel name (split-stage MoE names
included: every rank is split the same way).

A rank's number comes from its file name (vLLM ``…rank0…``, HTA ``rank-3…``, SGLang
``…-TP-1…``), else its directory (ATOM ``rank_<r>/``), else the trace's
``distributedInfo.rank``. A name and a ``distributedInfo.rank`` that disagree, two traces of
one rank, a trace whose rank cannot be told or a ``--rank`` no trace has are refused in one
line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.core import units
from roofline_tui.core.coerce import integer
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.device import from_kineto
from roofline_tui.importers.torch_trace import (
    DEFAULT_OPTIONS,
    TorchImport,
    TorchOptions,
    collect,
    import_collected,
    import_torch,
    kernel_times,
)

_NAME_RANK = lazy_compile(r"(?:^|[_.-])rank[_-]?(\d{1,6})(?!\d)|-TP-(\d{1,6})(?!\d)",
                          re.IGNORECASE)
_DIR_RANK = lazy_compile(r"^(?:.*[_.-])?rank[_-]?(\d{1,6})$", re.IGNORECASE)
_TRACE_SUFFIXES = (".json", ".json.gz")
# JSON files a profile directory holds that are not traces
_NOT_TRACES = frozenset({"profile_topN.json", "profile_roofline.json", "env_report.json",
                         "config.json", "generation_config.json", "tokenizer_config.json",
                         "execution_details.json"})
if TYPE_CHECKING:  # (imported by the several-ranks import itself: one trace never needs it)
    from roofline_tui.importers.spread import ChosenBy, RankKernels

MAX_RANK_FILES = 1024
MAX_RANK = 1 << 20


@dataclass
class RanksImport:
    result: TorchImport
    rank: int | None  # None: one trace, imported as it is
    chosen_by: str  # "--rank" or "slowest"
    ranks: list[RankKernels]
    message: str  # "" for one trace imported as it is


# --------------------------------------------------------------------------- which files, ranks


def rank_in_path(path: Path) -> int | None:
    """The rank a trace's name says, else the one its directory's name says."""
    m = _NAME_RANK.search(path.name)
    if m:
        return int(m.group(1) or m.group(2))
    m = _DIR_RANK.match(path.parent.name)
    return int(m.group(1)) if m else None


def header_rank(header: dict[str, Any]) -> int | None:
    """``distributedInfo.rank`` of the trace, when it is a usable integer."""
    info = header.get("distributedInfo")
    if not isinstance(info, dict):
        return None
    r = integer(info.get("rank"), nonneg=True)
    return r if r is not None and r < MAX_RANK else None


def _traces_in(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise ImportProblem(f"{printable(folder)}: cannot list ({exc.strerror or exc})") from None
    out: list[Path] = []
    for name in names:
        child = folder / name
        if name.endswith(_TRACE_SUFFIXES) and name not in _NOT_TRACES and child.is_file():
            out.append(child)  # collect() refuses anything that is not a regular file
    return out


def rank_traces(given: Sequence[Path]) -> list[Path]:
    """The trace files of ``given``: a file as it is; a directory's ``*.json[.gz]`` files and
    those of its ``rank_<r>/`` (``rank<r>``, ``rank-<r>``) sub-directories, sorted."""
    out: list[Path] = []
    for path in given:
        if not path.is_dir():
            out.append(path)
            continue
        found = _traces_in(path)
        try:
            subdirs = sorted(n for n in os.listdir(path) if _DIR_RANK.match(n))
        except OSError:
            subdirs = []
        for name in subdirs:
            if (path / name).is_dir():
                found.extend(_traces_in(path / name))
        if not found:
            raise ImportProblem(f"{printable(path)}: no trace files (*.json, *.json.gz) in the "
                                "directory or its rank_<r>/ sub-directories")
        out.extend(found)
    if len(out) > MAX_RANK_FILES:
        raise ImportProblem(f"{len(out)} trace files: at most {MAX_RANK_FILES} ranks are read")
    return out


def _label(path: Path) -> str:
    """The trace as named in lines and in the Top-N: its name, with its rank directory."""
    if _DIR_RANK.match(path.parent.name) and not _NAME_RANK.search(path.name):
        return printable(f"{path.parent.name}/{path.name}", limit=200)
    return printable(path.name, limit=200)


def _check_named(paths: Sequence[Path]) -> None:
    """Two files whose names say the same rank are refused before anything is read."""
    seen: dict[int, Path] = {}
    for p in paths:
        r = rank_in_path(p)
        if r is None:
            continue
        if r in seen:
            raise ImportProblem(f"{_label(p)} and {_label(seen[r])} are both rank {r}: give "
                                "one trace per rank")
        seen[r] = p


def _rank_of(path: Path, header: dict[str, Any]) -> int:
    named, info = rank_in_path(path), header_rank(header)
    if named is not None and info is not None and named != info:
        raise ImportProblem(f"{_label(path)}: its name says rank {named} but its "
                            f"distributedInfo.rank is {info}: which rank is it? (rename the "
                            "file after its distributedInfo.rank)")
    rank = named if named is not None else info
    if rank is None:
        raise ImportProblem(f"{_label(path)}: no rank in its name (…rank<N>…, rank-<N>, "
                            "-TP-<N>), its directory (rank_<N>/) or its distributedInfo.rank: "
                            "name each rank's trace after its rank")
    return rank


# --------------------------------------------------------------------------- the import


def import_ranks(
    given: Sequence[Path],
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    rank: int | None = None,
    device_index: int | None = None,
    progress: bool = True,
) -> RanksImport:
    """The Top-N of one rank of several (module docstring); nothing is written. One trace
    without ``rank`` is imported exactly as :func:`import_torch` does."""
    paths = rank_traces(given)
    if len(paths) == 1 and rank is None:
        one = import_torch(paths[0], options, device_index=device_index, progress=progress)
        return RanksImport(result=one, rank=None, chosen_by="", ranks=[], message="")
    from roofline_tui.importers.spread import RankKernels, attach_spread

    _check_named(paths)
    named = [rank_in_path(p) for p in paths]
    if rank is not None and None not in named and rank not in named:
        raise ImportProblem(f"--rank {rank}: no trace of that rank; ranks: "
                            f"{_listing(r for r in named if r is not None)}")
    kept: dict[int, RankKernels] = {}
    best: TorchImport | None = None
    best_rank = -1
    best_header: dict[str, Any] = {}
    best_name = ""
    for path in paths:
        col, header = collect(path, progress=progress)
        r = _rank_of(path, header)
        if r in kept:
            raise ImportProblem(f"{_label(path)} and {kept[r].file} are both rank {r}: give "
                                "one trace per rank")
        try:
            times = kernel_times(col, header, path, device_index)
            kept[r] = RankKernels(rank=r, file=_label(path), total_us=times.total_us,
                                  launches=times.launches, kernels=times.by_name(col))
            slower = best is None or times.total_us > kept[best_rank].total_us or (
                times.total_us == kept[best_rank].total_us and r < best_rank)
            if (r == rank) if rank is not None else slower:
                best = import_collected(col, header, path, times, options,
                                        identify_device=False)
                best_rank, best_header, best_name = r, header, path.name
        except ImportProblem as exc:
            if exc.message.startswith((path.name, _label(path))):
                raise
            raise ImportProblem(f"{_label(path)}: {exc.message}") from None
        del col, header, times  # the next trace is read without this one in memory
    if best is None:
        raise ImportProblem(f"--rank {rank}: no trace of that rank; ranks: {_listing(kept)}")
    # identified once every trace has been read and dropped (it reads the peak table)
    best.device_info = from_kineto(best_header, best.device.chosen, best_name)
    ordered = [kept[r] for r in sorted(kept)]
    chosen_by: ChosenBy = "--rank" if rank is not None else "slowest"
    attach_spread(best.doc, best_rank, chosen_by, ordered)
    return RanksImport(result=best, rank=best_rank, chosen_by=chosen_by, ranks=ordered,
                       message=_message(best_rank, chosen_by, ordered))


def _listing(ranks: Iterable[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks))


def _message(rank: int, chosen_by: str, ranks: Sequence[RankKernels]) -> str:
    times = ", ".join(f"{rk.rank} ({units.millis(rk.total_us / 1000.0)})" for rk in ranks)
    why = "named with --rank" if chosen_by == "--rank" else "the slowest: most GPU time"
    other = "" if chosen_by == "--rank" else "; pick another with --rank"
    return f"{len(ranks)} rank trace(s): {times}; Top-N of rank {rank} ({why}){other}"

"""Several ranks of one run -> one Top-N, with every kernel's spread across the ranks.

A tensor-parallel run writes one PyTorch trace per rank. ``roofline import torch`` given
several of them (or a directory holding them) writes the Top-N of one rank (``--rank R``,
default: the slowest rank, the one with the most GPU time) and records, per Top-N entry, how
the kernel's mean time per launch spreads over the ranks that ran it (min / median / max, the
slowest rank), so a straggler shows (``core.topn_ext``: ``RankSpread``, ``RankSet``).

The traces are read one at a time, each streamed as a single import is, or elsewhere by a
:class:`RankReader`: ``jobs`` worker processes at once (``--jobs``, :class:`WorkerProcesses`)
or the workers of a Dask cluster (``--dask``, ``importers.dask_ranks``). Either way each worker
runs :func:`read_rank`: it reads, sums and imports its rank and sends back the per-kernel sums
and the (small) Top-N document, and the slowest is chosen from them here, as the serial loop
chooses, so the document is the same whatever the number or kind of workers, and memory is
that of ``jobs`` traces (on a cluster, of none here). A machine's worker processes share
the slowest rank summed so far, so a rank already beaten is not analysed at all (the slowest
is never beaten: it is always analysed, whichever worker finishes first). Of a rank only its
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

Every rank is accounted for: an entry of a rank directory that is named like a trace but
cannot be read (a dangling symlink, a FIFO, a directory, no read permission), a ``rank_<r>/``
directory that cannot be listed or holds no trace, and a trace that cannot be read to its end
are each an error naming it (nothing is written), or, with ``skip_bad``
(``--skip-bad-ranks``), kept out and said: in the summary line, in the Top-N's notes, and the
slowest rank is then the slowest of those read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from roofline_tui.core import units
from roofline_tui.core.coerce import integer
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.device import from_kineto
from roofline_tui.importers.torch import (
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


@dataclass(frozen=True)
class BadRank:
    """A rank's trace (or ``rank_<r>/`` directory) that cannot be read, and why."""

    label: str  # as :func:`_label` names it
    reason: str  # "is a dangling symlink", "is a FIFO (named pipe), …", …
    rank: int | None  # what its name says, when it says one

    def said(self) -> str:
        return f"{self.label} ({self.reason})"


@dataclass
class RanksImport:
    result: TorchImport
    rank: int | None  # None: one trace, imported as it is
    chosen_by: str  # "--rank" or "slowest"
    ranks: list[RankKernels]
    message: str  # "" for one trace imported as it is
    skipped: list[BadRank] = field(default_factory=list)  # kept out by skip_bad


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


def _unreadable(path: Path) -> str | None:
    """Why the trace ``path`` cannot be read (a look, never an open); None when it can."""
    if path.is_symlink() and not path.exists():
        return "is a dangling symlink"
    why = check_regular(path)
    if why is None and not os.access(path, os.R_OK):
        return "permission denied"
    return why


def _traces_in(folder: Path, bad: list[BadRank]) -> list[Path]:
    """The traces of ``folder``; entries named like one that cannot be read go to ``bad``."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise ImportProblem(f"{printable(folder)}: cannot list ({exc.strerror or exc})") from None
    out: list[Path] = []
    for name in names:
        if not name.endswith(_TRACE_SUFFIXES) or name in _NOT_TRACES:
            continue
        child = folder / name
        why = _unreadable(child)
        if why is None:
            out.append(child)
        else:
            bad.append(BadRank(_label(child), why, rank_in_path(child)))
    return out


def _rank_dir(folder: Path, name: str, bad: list[BadRank]) -> list[Path]:
    """The traces of the rank directory ``folder/name``; one that is not a directory it can
    list, or that holds no trace, goes to ``bad`` (a file of that name is not a rank's)."""
    sub = folder / name
    m = _DIR_RANK.match(name)
    rank = int(m.group(1)) if m else None
    label = printable(f"{name}/", limit=200)
    if sub.is_symlink() and not sub.exists():
        bad.append(BadRank(label, "is a dangling symlink", rank))
        return []
    if not sub.is_dir():
        return []
    before = len(bad)
    try:
        found = _traces_in(sub, bad)
    except ImportProblem as exc:
        bad.append(BadRank(label, exc.message.rsplit(": ", 1)[-1], rank))
        return []
    if not found and len(bad) == before:
        bad.append(BadRank(label, "holds no trace file (*.json, *.json.gz)", rank))
    return found


def rank_traces(given: Sequence[Path], bad: list[BadRank] | None = None) -> list[Path]:
    """The trace files of ``given``: a file as it is; a directory's ``*.json[.gz]`` files and
    those of its ``rank_<r>/`` (``rank<r>``, ``rank-<r>``) sub-directories, sorted. What a
    directory holds for a rank but cannot be read is appended to ``bad`` (see
    :func:`_traces_in`, :func:`_rank_dir`)."""
    bad = [] if bad is None else bad
    out: list[Path] = []
    for path in given:
        if not path.is_dir():
            out.append(path)
            continue
        before = len(bad)
        found = _traces_in(path, bad)
        try:
            subdirs = sorted(n for n in os.listdir(path) if _DIR_RANK.match(n))
        except OSError:
            subdirs = []
        for name in subdirs:
            found.extend(_rank_dir(path, name, bad))
        if not found and len(bad) == before:
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


@dataclass
class RankRead:
    """What a worker returns of one rank: its summary and, when it may be the rank written,
    its whole import (the document is small; the trace's arrays stay in the worker)."""

    path: Path
    rank: int = -1
    header: dict[str, Any] = field(default_factory=dict)
    kernels: RankKernels | None = None
    result: TorchImport | None = None
    problem: str | None = None  # collect failed: the rank is bad (or the import fails)
    fatal: str | None = None  # a later step failed: the import fails


def read_rank(path: Path, options: TorchOptions, device_index: int | None,
              wanted: int | None) -> RankRead:
    """One rank in a worker (a process of ``--jobs``, a Dask worker): read, sum, and import it
    unless ``--rank`` (``wanted``) names another. Problems come back as text (one line each).
    """
    from roofline_tui.importers.spread import RankKernels

    out = RankRead(path)
    try:
        col, header = collect(path, progress=False)
    except ImportProblem as exc:
        out.problem = exc.message
        return out
    try:
        out.rank = _rank_of(path, header)
        times = kernel_times(col, header, path, device_index)
        out.kernels = RankKernels(rank=out.rank, file=_label(path), total_us=times.total_us,
                                  launches=times.launches, kernels=times.by_name(col))
        if wanted == out.rank or (wanted is None
                                  and not _beaten_elsewhere(times.total_us, out.rank)):
            out.result = import_collected(col, header, path, times, options,
                                          identify_device=False)
        out.header = header
    except ImportProblem as exc:
        out.fatal = (exc.message if exc.message.startswith((path.name, _label(path)))
                     else f"{_label(path)}: {exc.message}")
    return out


# the slowest rank summed so far by any worker of this machine's pool, (GPU time in µs, rank),
# a shared array set in each worker by :func:`_share_slowest`; None elsewhere (a Dask worker,
# this process)
_SLOWEST: Any = None


def _share_slowest(shared: Any) -> None:
    """The pool's initializer: every worker sees the one ``shared`` (total, rank) pair."""
    global _SLOWEST
    _SLOWEST = shared


def _beaten_elsewhere(total_us: float, rank: int) -> bool:
    """Whether a rank another worker has already summed is slower than this one (more GPU
    time, or as much and a lower rank: the order :class:`_Pick` chooses by), so this rank's
    Top-N cannot be the one written and is not built; otherwise this rank is recorded as the
    slowest so far. The slowest rank is never beaten, so it is always built: the document
    does not depend on the order the workers finish in."""
    shared = _SLOWEST
    if shared is None:
        return False
    with shared.get_lock():
        best_total, best_rank = shared[0], shared[1]
        if best_rank >= 0 and (best_total > total_us
                               or (best_total == total_us and best_rank < rank)):
            return True
        shared[0], shared[1] = total_us, float(rank)
    return False


def default_jobs(paths: Sequence[Path]) -> int:
    """Workers for reading ``paths`` at once: the CPUs this process may use, no more than
    the ranks, and no more than the available memory holds (each worker's peak taken as
    :data:`RSS_PER_JSON_BYTE` of its trace's JSON, a gzipped trace's JSON as
    :data:`GZIP_RATIO` times its size)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    jobs = max(1, min(cpus, len(paths)))
    avail = _available_memory()
    if avail is None or not paths:
        return jobs
    sizes = []
    for p in paths:
        try:
            size = p.stat().st_size
        except OSError:
            continue
        sizes.append(size * (GZIP_RATIO if p.name.endswith(".gz") else 1))
    if not sizes:
        return jobs
    per_worker = max(sizes) * RSS_PER_JSON_BYTE + WORKER_BASE_BYTES
    return max(1, min(jobs, int(avail // per_worker)))


# the import's peak RSS per byte of trace JSON (bench/bench_import.py: 39 MiB for a 76 MB
# trace, about 0.5; a with_stack trace up to 0.16 of 1 GB) with a margin, and a worker's own
# interpreter and modules
RSS_PER_JSON_BYTE = 0.6
GZIP_RATIO = 10
WORKER_BASE_BYTES = 80 << 20


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class RankReader(Protocol):
    """Where the ranks are read when not one after another here: each path's
    :func:`read_rank` run by a worker, the reads given back in the order of ``paths``
    (whatever order they finish in). A worker's exception is raised here."""

    def read(self, paths: Sequence[Path], options: TorchOptions, device_index: int | None,
             wanted: int | None) -> list[RankRead]: ...


@dataclass(frozen=True)
class WorkerProcesses:
    """``--jobs N``: a pool of ``jobs`` worker processes on this machine (forked where the
    platform can, so they start with the importer loaded). The workers share the slowest
    rank summed so far, so with the default (no ``--rank``) a rank already beaten is not
    analysed; the rank whose Top-N is written (``--rank``) is read first and the rest
    largest first, so the longest reads do not come last."""

    jobs: int

    def read(self, paths: Sequence[Path], options: TorchOptions, device_index: int | None,
             wanted: int | None) -> list[RankRead]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        shared = context.Array("d", [0.0, -1.0])
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=context,
                                 initializer=_share_slowest, initargs=(shared,)) as pool:
            futures = {p: pool.submit(read_rank, p, options, device_index, wanted)
                       for p in submission_order(paths, wanted)}
            return [futures[p].result() for p in paths]


def submission_order(paths: Sequence[Path], wanted: int | None) -> list[Path]:
    """The order ranks are handed to workers: the rank named by ``--rank`` first (its read
    is the longest: its Top-N is built too), then the largest traces first (a long read
    started last would leave the other workers idle at the end). Equal sizes keep their
    order; a trace that cannot be sized goes last."""
    def key(item: tuple[int, Path]) -> tuple[int, int, int]:
        i, p = item
        try:
            size = p.stat().st_size
        except OSError:
            size = -1
        return (0 if wanted is not None and rank_in_path(p) == wanted else 1, -size, i)

    return [p for _, p in sorted(enumerate(paths), key=key)]


def import_ranks(
    given: Sequence[Path],
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    rank: int | None = None,
    device_index: int | None = None,
    progress: bool = True,
    skip_bad: bool = False,
    jobs: int | None = 1,
    reader: RankReader | None = None,
) -> RanksImport:
    """The Top-N of one rank of several (module docstring); nothing is written. One trace
    without ``rank`` is imported exactly as :func:`import_torch` does. A rank whose trace
    cannot be read is an :class:`ImportProblem` naming it, or with ``skip_bad`` kept out and
    said (the message, the Top-N's notes, :attr:`RanksImport.skipped`). ``jobs`` worker
    processes read the ranks at once (``None``: :func:`default_jobs`), or ``reader`` (a
    Dask cluster's workers) reads them; the result is the same document whatever reads them
    (one trace without ``rank`` is read here)."""
    bad: list[BadRank] = []
    paths = rank_traces(given, bad)
    if bad and not skip_bad:
        raise ImportProblem(_refusal(bad))
    named = [rank_in_path(p) for p in paths]
    if rank is not None and None not in named and rank not in named:
        raise ImportProblem(_no_such_rank(rank, (r for r in named if r is not None), bad))
    if not paths:
        raise ImportProblem(f"no rank trace can be read: {_said(bad)}")
    if len(paths) == 1 and rank is None:
        one = import_torch(paths[0], options, device_index=device_index, progress=progress)
        if not bad:
            return RanksImport(result=one, rank=None, chosen_by="", ranks=[], message="")
        _note_skipped(one, bad, 1)
        return RanksImport(result=one, rank=None, chosen_by="", ranks=[], skipped=bad,
                           message=f"1 rank trace read ({_label(paths[0])}); "
                                   f"{_kept_out(bad)}")
    from roofline_tui.importers.spread import attach_spread

    _check_named(paths)
    if reader is None:
        if jobs is None:
            jobs = default_jobs(paths)
        if jobs > 1:
            reader = WorkerProcesses(min(jobs, len(paths)))
    pick = _Pick(rank)
    if reader is not None:
        _read_by(reader, paths, options, device_index, skip_bad, bad, pick)
    else:
        _read_here(paths, options, device_index, progress, skip_bad, bad, pick)
    kept, best, best_rank = pick.kept, pick.best, pick.rank
    if not kept:
        raise ImportProblem(f"no rank trace can be read: {_said(bad)}")
    if best is None:
        raise ImportProblem(_no_such_rank(rank, kept, bad))
    # identified once every trace has been read and dropped (it reads the peak table)
    best.device_info = from_kineto(pick.header, best.device.chosen, pick.name)
    ordered = [kept[r] for r in sorted(kept)]
    chosen_by: ChosenBy = "--rank" if rank is not None else "slowest"
    attach_spread(best.doc, best_rank, chosen_by, ordered)
    if bad:
        _note_skipped(best, bad, len(ordered))
    return RanksImport(result=best, rank=best_rank, chosen_by=chosen_by, ranks=ordered,
                       message=_message(best_rank, chosen_by, ordered, bad), skipped=bad)


class _Pick:
    """The ranks read so far (their kernel sums, by rank) and the one whose Top-N is written:
    the rank asked for, else the slowest (most GPU time; on a tie the lower rank)."""

    def __init__(self, wanted: int | None) -> None:
        self.wanted = wanted
        self.kept: dict[int, RankKernels] = {}
        self.best: TorchImport | None = None
        self.rank = -1
        self.header: dict[str, Any] = {}
        self.name = ""

    def check_new(self, path: Path, r: int) -> None:
        if r in self.kept:
            raise ImportProblem(f"{_label(path)} and {self.kept[r].file} are both rank {r}: "
                                "give one trace per rank")

    def keep(self, sums: RankKernels) -> bool:
        """Keep one rank's sums; whether its Top-N is now the one to write."""
        r = sums.rank
        self.kept[r] = sums
        if self.wanted is not None:
            return r == self.wanted
        return self.best is None or sums.total_us > self.kept[self.rank].total_us or (
            sums.total_us == self.kept[self.rank].total_us and r < self.rank)

    def choose(self, best: TorchImport | None, r: int, header: dict[str, Any],
               name: str) -> None:
        self.best, self.rank, self.header, self.name = best, r, header, name


def _read_by(reader: RankReader, paths: list[Path], options: TorchOptions,
             device_index: int | None, skip_bad: bool, bad: list[BadRank], pick: _Pick) -> None:
    """The ranks read by ``reader`` (worker processes, a Dask cluster), met in the order the
    serial loop meets them."""
    for read in reader.read(paths, options, device_index, pick.wanted):
        path = read.path
        if read.problem is not None:
            if not skip_bad:
                raise ImportProblem(f"{read.problem}; {_HINT}")
            bad.append(BadRank(_label(path), _reason(ImportProblem(read.problem), path),
                               rank_in_path(path)))
            continue
        pick.check_new(path, read.rank)
        if read.fatal is not None or read.kernels is None:
            raise ImportProblem(read.fatal or f"{_label(path)}: not read")
        if pick.keep(read.kernels):
            pick.choose(read.result, read.rank, read.header, path.name)


def _read_here(paths: list[Path], options: TorchOptions, device_index: int | None,
               progress: bool, skip_bad: bool, bad: list[BadRank], pick: _Pick) -> None:
    """The ranks read one after another in this process; only the chosen rank's Top-N is
    built, and each trace is dropped before the next is read."""
    from roofline_tui.importers.spread import RankKernels

    for path in paths:
        try:
            col, header = collect(path, progress=progress)
        except ImportProblem as exc:
            if not skip_bad:
                raise ImportProblem(f"{exc.message}; {_HINT}") from None
            bad.append(BadRank(_label(path), _reason(exc, path), rank_in_path(path)))
            continue
        r = _rank_of(path, header)
        pick.check_new(path, r)
        try:
            times = kernel_times(col, header, path, device_index)
            sums = RankKernels(rank=r, file=_label(path), total_us=times.total_us,
                               launches=times.launches, kernels=times.by_name(col))
            if pick.keep(sums):
                pick.choose(import_collected(col, header, path, times, options,
                                             identify_device=False), r, header, path.name)
        except ImportProblem as exc:
            if exc.message.startswith((path.name, _label(path))):
                raise
            raise ImportProblem(f"{_label(path)}: {exc.message}") from None
        del col, header, times  # the next trace is read without this one in memory


def _listing(ranks: Iterable[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks))


def _message(rank: int, chosen_by: str, ranks: Sequence[RankKernels],
             bad: Sequence[BadRank] = ()) -> str:
    times = ", ".join(f"{rk.rank} ({units.millis(rk.total_us / 1000.0)})" for rk in ranks)
    slowest = "the slowest of those read" if bad else "the slowest"
    why = "named with --rank" if chosen_by == "--rank" else f"{slowest}: most GPU time"
    other = "" if chosen_by == "--rank" else "; pick another with --rank"
    read = " read" if bad else ""
    out = f"{len(ranks)} rank trace(s){read}: {times}; Top-N of rank {rank} ({why}){other}"
    return f"{out}; {_kept_out(bad)}" if bad else out


# --------------------------------------------------------------------------- unreadable ranks

# unreadable ranks named one by one in a line; past this, counted
SAID_BAD = 8


def _said(bad: Sequence[BadRank]) -> str:
    out = ", ".join(b.said() for b in bad[:SAID_BAD])
    return out + (f" and {len(bad) - SAID_BAD} more" if len(bad) > SAID_BAD else "")


def _kept_out(bad: Sequence[BadRank]) -> str:
    return f"{len(bad)} kept out by --skip-bad-ranks (cannot be read): {_said(bad)}"


def _refusal(bad: Sequence[BadRank]) -> str:
    more = f" (and {len(bad) - 1} more: {_said(bad[1:])})" if len(bad) > 1 else ""
    return f"{bad[0].label}: {bad[0].reason}: a rank's trace that cannot be read{more}; {_HINT}"


_HINT = "nothing written (--skip-bad-ranks imports the other ranks without it, and says so)"


def _no_such_rank(rank: int | None, ranks: Iterable[int], bad: Sequence[BadRank]) -> str:
    for b in bad:
        if b.rank == rank:
            return f"--rank {rank}: that rank's trace cannot be read: {b.said()}"
    return f"--rank {rank}: no trace of that rank; ranks: {_listing(ranks)}"


def _reason(exc: ImportProblem, path: Path) -> str:
    """The importer's line about ``path`` without the name it starts with."""
    for name in (str(path), printable(path), path.name, _label(path)):
        if exc.message.startswith(f"{name}: "):
            return exc.message[len(name) + 2:]
    return exc.message


def _note_skipped(result: TorchImport, bad: Sequence[BadRank], read: int) -> None:
    """Say in the Top-N (its notes, printed as a warning too) which ranks are not in it."""
    note = (f"{len(bad)} rank trace(s) kept out by --skip-bad-ranks (they cannot be read): "
            f"{_said(bad)}; this Top-N, its slowest rank and every spread are of the {read} "
            "read")
    notes = result.doc.setdefault("notes", [])
    notes.append(note)
    if result.notes is not notes:
        result.notes.append(note)

"""Shapes for graph-replayed kernels, from the graph-capture traces of the same run.

A replayed kernel carries only the correlation id of its graph launch. The step annotation
around that launch (on the CPU thread, joined by correlation) says the step's size; the
capture of the smallest captured size at least that large (``importers.capture``) holds the
captured launches, each with its launching op, per-argument dims and types and its grid and
block. The replayed kernels of one graph launch, in GPU time order, are aligned to the
captured launches by kernel name (``capture.align``); every aligned kernel takes its captured
launch's op signature. A kernel the alignment does not reach keeps no shape, with the reason
in the profile notes: never a "nearest" capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_tui.core.textsafe import printable
from roofline_tui.importers.capture import (
    CaptureFile,
    CapturedLaunch,
    align,
    choose_capture,
    read_capture_files,
)
from roofline_tui.importers.torch.launches import HOW_CAPTURE
from roofline_tui.importers.torch.signatures import make_sig, module_name

if TYPE_CHECKING:
    from array import array
    from collections.abc import Sequence

    from roofline_tui.importers.torch.collector import Collector
    from roofline_tui.importers.torch.launches import KernelLaunches, Shaped
    from roofline_tui.importers.torch.step_records import StepSpan

MAX_CAPTURE_FILES = 256


@dataclass
class ReplayJoin:
    """What the join did: replayed rows on the device, how many got a captured launch, the
    captures used (for the document's extension) and one note per thing that went wrong."""

    replayed: int = 0
    shaped: int = 0
    used: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _lists(value: Any) -> Any:
    """Tuples (as the capture reader keeps dims) back to the lists a trace holds."""
    if isinstance(value, tuple):
        return [_lists(v) for v in value]
    return value


def _read(paths: list[Path], notes: list[str]) -> list[CaptureFile]:
    # (bounded in total, decompressed bytes and reading time: capture.CaptureBudget)
    files = read_capture_files(paths[:MAX_CAPTURE_FILES], notes)
    if len(paths) > MAX_CAPTURE_FILES:
        notes.append(f"only the first {MAX_CAPTURE_FILES} of {len(paths)} graph-capture traces "
                     "read")
    for f in files:
        notes.extend(f"{printable(f.path.name, limit=120)}: {printable(n, limit=200)}"
                     for n in f.notes)
    return files


def join_replays(col: Collector, rows: Sequence[int], launches: KernelLaunches, shaped: Shaped,
                 steps: list[StepSpan], step_of: array[int], paths: list[Path], *,
                 rank: int | None = None) -> ReplayJoin:
    """Give replayed rows the op signature of their captured launch (``shaped`` is filled in
    place, with ``HOW_CAPTURE``). ``rank``: the execution trace's rank, whose own captures are
    preferred (vLLM writes rank 0's only: the name alignment then checks they fit)."""
    out = ReplayJoin()
    files = _read(paths, out.notes)
    g_corr, g_ts = col.g_corr, col.g_ts
    # the replayed rows of each graph launch, and each launch's step
    by_launch: dict[int, list[int]] = {}
    step_of_launch: dict[int, int] = {}
    for p, i in enumerate(rows):
        if launches.graph[p]:
            by_launch.setdefault(g_corr[i], []).append(p)
            if step_of[p] >= 0:
                step_of_launch.setdefault(g_corr[i], step_of[p])
    out.replayed = sum(len(ps) for ps in by_launch.values())
    if not files:
        out.notes.append(f"{out.replayed:,} replayed kernel(s) keep no shapes: no readable "
                         "graph-capture trace")
        return out
    # graph launches grouped by step, in launch order (a launch outside every step: alone)
    per_step: dict[int, list[int]] = {}
    for corr in sorted(by_launch, key=lambda c: g_ts[rows[by_launch[c][0]]]):
        k = step_of_launch.get(corr, -1 - len(per_step))
        per_step.setdefault(k, []).append(corr)
    sizes = sorted({f.size for f in files if f.size})
    events: dict[tuple[str, int, int], int] = {}
    base = len(col.c_ts)
    reasons: dict[str, int] = {}
    used: dict[tuple[str, int | None, str], dict[str, Any]] = {}
    for k, corrs in per_step.items():
        size = steps[k].rec.capture_size if k >= 0 else None
        n_kernels = sum(len(by_launch[c]) for c in corrs)
        if size is None and len(sizes) == 1:
            size = sizes[0]
            note = (f"the step size is unknown (no step annotation owns the graph launch); the "
                    f"only captured size, {size}, was used")
            reasons[note] = reasons.get(note, 0)
        choice = choose_capture(files, size, len(corrs), rank=rank)
        if isinstance(choice, str):
            reasons[choice] = reasons.get(choice, 0) + n_kernels
            continue
        cfile, roots = choice
        pairs = list(zip(corrs, roots if len(roots) == len(corrs) else roots * len(corrs),
                         strict=False))
        for corr, root in pairs:
            ps = sorted(by_launch[corr], key=lambda p: g_ts[rows[p]])
            names = [col.names[col.g_name[rows[p]]] for p in ps]
            streams = [col.g_stream[rows[p]] for p in ps]
            got = align([ln.kernel for ln in root.launches], names,
                        replayed_streams=[s if s >= 0 else None for s in streams])
            if isinstance(got, str):
                why = f"{printable(cfile.path.name, limit=120)}: {got}"
                reasons[why] = reasons.get(why, 0) + len(ps)
                continue
            key = (str(cfile.path), cfile.size, cfile.mode)
            rec = used.setdefault(key, {"file": cfile.path.name, "size": cfile.size,
                                        "mode": cfile.mode, "graph_launches": 0, "kernels": 0,
                                        "how": got.how})
            rec["graph_launches"] += 1
            for p, idx in zip(ps, got.index, strict=True):
                if idx is not None:
                    call = (str(cfile.path), corr)
                    if _take_launch(col, shaped, p, root.launches[idx], call, events, base):
                        out.shaped += 1
                        rec["kernels"] += 1
    out.used = list(used.values())
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        out.notes.append(f"{n:,} replayed kernel(s) keep no shapes: {printable(why, limit=300)}"
                         if n else printable(why, limit=300))
    return out


def _take_launch(col: Collector, shaped: Shaped, p: int, ln: CapturedLaunch, call: tuple[str, int],
                 events: dict[tuple[str, int, int], int], base: int) -> bool:
    """Row ``p`` takes what its captured launch ``ln`` recorded: the op signature (True when
    one is taken), the launching op call, the module path, the geometry. ``call``: the capture
    file and the graph launch's correlation id."""
    taken = False
    if ln.op is not None and ln.dims is not None:
        sig = make_sig(ln.op, _lists(ln.dims), list(ln.types or ()))
        if sig is not None:
            shaped.sig[p] = col.sig_id(sig)
            shaped.how[p] = HOW_CAPTURE
            taken = True
    if ln.op_event is not None:
        # one captured op call, replayed once per graph launch: events of the execution
        # trace are numbered from 0, captured ones past them
        shaped.event[p] = events.setdefault((*call, ln.op_event), base + len(events))
    if ln.module:
        shaped.module[p] = col._module_id(module_name(ln.module))
    if ln.grid is not None or ln.block is not None:
        shaped.geom[p] = col.geom_id(list(ln.grid or ()) or None, list(ln.block or ()) or None)
    return taken

"""The torch importer's procedure: the device chosen, the collected rows joined to their
launches, ops, steps and MoE stages, graph replays taken from capture traces, and the Top-N
document written with its evidence and notes (:func:`import_torch`, :func:`import_collected`)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from roofline_tui.core import units
from roofline_tui.importers.capture import discover_captures, trace_rank
from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem, KernelAgg, build_topn
from roofline_tui.importers.device import DeviceInfo, from_kineto
from roofline_tui.importers.jsonstream import READ_CHUNK
from roofline_tui.importers.step_window import StepRequest
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.evidence import doc_extension, evidence_notes, regime_evidence
from roofline_tui.importers.torch.launches import (
    KernelLaunches,
    Shaped,
    attach_rows,
    find_launches,
    launching_ops,
    module_paths,
)
from roofline_tui.importers.torch.moe import StageLabel, split_moe_stages, stage_note
from roofline_tui.importers.torch.reading import collect
from roofline_tui.importers.torch.replay import ReplayJoin, join_replays
from roofline_tui.importers.torch.rows import index_code, rows_of
from roofline_tui.importers.torch.step_join import (
    join_steps,
    split_step_time,
    steps_window,
    sums_of,
    window_block,
)
from roofline_tui.importers.torch.step_records import StepSpan


@dataclass
class DeviceChoice:
    chosen: int
    devices: dict[int, float]  # device -> GPU time (µs)
    message: str


@dataclass
class TorchImport:
    doc: dict[str, Any]
    device: DeviceChoice
    events_seen: int
    notes: list[str] = field(default_factory=list)
    device_info: DeviceInfo | None = None


def choose_device(col: Collector, device_index: int | None) -> DeviceChoice:
    per: dict[int, float] = {}
    if col.g_dev and col.g_dev.count(col.g_dev[0]) == len(col.g_dev):  # one device
        t = 0.0
        for dur in col.g_dur:  # (added in order, as below)
            t += dur
        per[col.g_dev[0]] = t
    else:
        for d, dur in zip(col.g_dev, col.g_dur, strict=True):
            per[d] = per.get(d, 0.0) + dur
    if not per:
        raise ImportProblem("no GPU events (kernel/gpu_memcpy/gpu_memset) in the trace")
    listing = ", ".join(f"{d} ({units.millis(t / 1000.0)})" for d, t in sorted(per.items()))
    if device_index is not None:
        if device_index not in per:
            raise ImportProblem(f"--device-index {device_index} not in the trace; devices: "
                                f"{listing}")
        msg = (f"device {device_index} chosen with --device-index (devices: {listing})"
               if len(per) > 1 else f"device {device_index}")
        return DeviceChoice(device_index, per, msg)
    chosen = max(sorted(per), key=lambda d: per[d])
    if len(per) > 1:
        msg = (f"trace has {len(per)} devices: {listing}; using device {chosen} (most GPU "
               "time); pick another with --device-index")
    else:
        msg = f"device {chosen}"
    return DeviceChoice(chosen, per, msg)


class TorchOptions(NamedTuple):
    """What a trace import keeps and joins, whichever function runs it (one trace, one of
    several ranks, a trace already collected): how many kernels, the workload the Top-N is
    labelled with, the graph-capture sizes and traces, and whether captures beside the trace
    are looked for."""

    top: int = DEFAULT_TOP
    isl: int | None = None
    osl: int | None = None
    conc: int | None = None
    capture_sizes: Iterable[int] | None = None
    captures: Sequence[Path] | None = None
    discover: bool = True
    # the serving steps to sum (--steps / --skip-warmup); None: the automatic steady window
    steps: StepRequest | None = None


DEFAULT_OPTIONS = TorchOptions()


def import_torch(
    path: Path,
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    device_index: int | None = None,
    progress: bool = True,
    chunk: int = READ_CHUNK,
) -> TorchImport:
    """Parse a Kineto trace into a Top-N document (nothing is written)."""
    col, header = collect(Path(path), chunk=chunk, progress=progress)
    times = kernel_times(col, header, Path(path), device_index)
    result = import_collected(col, header, Path(path), times, options, identify_device=False)
    del col, times  # the device is identified (the peak table read) without the trace's arrays
    result.device_info = from_kineto(header, result.device.chosen, Path(path).name)
    return result


@dataclass
class KernelTimes:
    """One trace's GPU time per kernel on the device chosen: what ``importers.ranks`` keeps of
    each rank (the collector itself is dropped)."""

    choice: DeviceChoice
    stage_labels: dict[int, StageLabel]
    sums: dict[int, list[Any]]  # kernel name id -> [calls, total µs], summed in trace order
    total_us: float
    launches: int

    def by_name(self, col: Collector) -> dict[str, tuple[int, float]]:
        """Kernel name (the Top-N's key) -> (launches, total µs)."""
        return {col.names[nid]: (calls, us) for nid, (calls, us) in self.sums.items()}


def kernel_times(col: Collector, header: dict[str, Any], path: Path,
                 device_index: int | None) -> KernelTimes:
    """Choose the device, split the split-stage MoE launches (this re-points rows of ``col``)
    and sum every kernel's launches and time on that device."""
    if not col.g_dev:
        raise ImportProblem(f"{path.name}: {col.what_it_holds(header)}")
    choice = choose_device(col, device_index)
    dev = choice.chosen
    stage_labels = split_moe_stages(col, dev)
    sums: dict[int, list[Any]] = {}
    # the device's time is the chosen device's sum (of its rows, in order: the same sum)
    total = choice.devices[dev]
    launches = col.g_dev.count(dev)
    on_dev: Iterable[tuple[int, float]]
    if launches == len(col.g_dev):  # one device: every row
        on_dev = zip(col.g_name, col.g_dur, strict=True)
    else:
        on_dev = (
            (nid, dur) for d, nid, dur in zip(col.g_dev, col.g_name, col.g_dur, strict=True)
            if d == dev)
    for nid, dur in on_dev:
        acc = sums.get(nid)
        if acc is None:
            acc = sums[nid] = [0, 0.0]
        acc[0] += 1
        acc[1] += dur
    return KernelTimes(choice, stage_labels, sums, total, launches)


@dataclass
class _Joined:
    """The rows of the chosen device kept for the Top-N, joined to their launches, launching
    ops and module paths, and to the serving steps (``step_of``: each row's step, -1: none)."""

    rows: Sequence[int]
    launches: KernelLaunches
    shaped: Shaped
    steps: list[StepSpan]
    step_of: array[int]


def _join_rows(col: Collector, dev: int, rows: Sequence[int]) -> _Joined:
    launches_of = find_launches(col, rows)
    shaped = launching_ops(col, rows, launches_of)
    module_paths(col, rows, launches_of, shaped)
    steps, step_of = join_steps(col, dev, rows, launches_of)
    return _Joined(rows, launches_of, shaped, steps, step_of)


@dataclass
class _Kept:
    """What the steady-state step window keeps: the joined rows, their per-kernel sums, GPU
    time and launches, and the document's ``steps`` block (None: no serving steps)."""

    joined: _Joined
    sums: dict[int, list[Any]]
    total_us: float
    launches: int
    step_block: dict[str, Any] | None


def _steady_steps(col: Collector, dev: int, joined: _Joined, times: KernelTimes,
                  request: StepRequest | None, notes: list[str]) -> _Kept:
    """The rows of the serving steps kept (``importers.step_window``), re-joined when some
    steps are dropped (every figure is then over the rest); the window said in ``notes``."""
    total = times.total_us
    window, kept = steps_window(col, joined.rows, joined.steps, joined.step_of, request)
    if window is not None and kept is not None:  # steps dropped: every figure over the rest
        dropped_us = total - sum(col.g_dur[i] for i in kept)
        joined = _join_rows(col, dev, kept)
        sums = sums_of(col, kept)
        kept_us = sum(us for _c, us in sums.values())
        if kept_us <= 0:
            raise ImportProblem(f"the step window ({window.reason}) keeps no GPU time")
        notes.append(f"steps {window.start}:{window.stop} of {window.recorded} summed "
                     f"({window.reason}); {dropped_us / 1000:.3f} ms "
                     f"({dropped_us / total:.1%}) of the device's GPU time left out")
        return _Kept(joined, sums, kept_us, len(kept), window_block(window, dropped_us, total))
    step_block = None
    if window is not None:
        step_block = window_block(window, 0.0, total)
        if window.how != "auto" or window.reason.startswith("no steady"):
            # said when asked for, or when no steady run was found (not for every trace)
            notes.append(f"all {window.recorded} serving step(s) summed ({window.reason})")
    return _Kept(joined, times.sums, total, times.launches, step_block)


def _graph_captures(col: Collector, header: dict[str, Any], path: Path, joined: _Joined,
                    captures: Sequence[Path] | None, discover: bool, notes: list[str]
                    ) -> ReplayJoin | None:
    """The graph-replayed rows given their captured launch's op (``torch.replay``), from the
    captures given, else (``discover``) those found beside the trace; None when none is used."""
    replayed = any(joined.launches.graph)
    if captures is None:  # look beside the trace only when something was replayed
        captures = discover_captures(Path(path)) if discover and replayed else []
    if captures and replayed:
        replay_join = join_replays(col, joined.rows, joined.launches, joined.shaped,
                                   joined.steps, joined.step_of, list(captures),
                                   rank=trace_rank(Path(path), header))
        notes.extend(replay_join.notes)
        return replay_join
    if captures:
        notes.append(f"{len(captures)} graph-capture trace(s) given, but no kernel of this "
                     "trace was replayed from a graph: not used")
    return None


def import_collected(
    col: Collector,
    header: dict[str, Any],
    path: Path,
    times: KernelTimes,
    options: TorchOptions = DEFAULT_OPTIONS,
    *,
    identify_device: bool = True,
) -> TorchImport:
    """The Top-N document of a trace already read (:func:`collect`, :func:`kernel_times`).
    ``identify_device=False`` leaves ``device_info`` unset: the caller sets it with
    :func:`importers.device.from_kineto` once it has dropped the collector (that reads the peak
    table, whose models need not share the memory with the trace's arrays)."""
    top, isl, osl, conc, capture_sizes, captures, discover, step_request = options
    choice, stage_labels = times.choice, times.stage_labels
    dev = choice.chosen
    # every row of the device: the launching ops, the steps and the captures concern them all
    # (the share of GPU time without a launching op is a whole-profile figure)
    notes: list[str] = []
    kept = _steady_steps(col, dev, _join_rows(col, dev, rows_of(col.g_dev, dev)), times,
                         step_request, notes)
    joined, total, launches = kept.joined, kept.total_us, kept.launches
    rows, steps, step_of = joined.rows, joined.steps, joined.step_of
    time_split = split_step_time(col, rows, steps, step_of)
    aggs = {nid: KernelAgg(col.names[nid], calls=calls, total_us=total_us)
            for nid, (calls, total_us) in kept.sums.items()}
    for nid, label in stage_labels.items():
        agg = aggs.get(nid)
        if agg is None:  # every launch of that stage fell outside the kept steps
            continue
        agg.short_name = label.short_name
        agg.notes.append(stage_note(label, agg.calls))
    ranked = sorted(aggs, key=lambda n: (-aggs[n].total_us, aggs[n].name))[: max(1, top)]
    top_aggs = {n: aggs[n] for n in ranked}
    replay_join = _graph_captures(col, header, path, joined, captures, discover, notes)
    g_name = col.g_name
    top_pos: Sequence[int]
    if len(top_aggs) == len(aggs):  # every kernel of the device is in the Top-N
        top_pos = range(len(rows))
    else:
        top_pos = array(index_code(len(rows)),
                        (p for p, i in enumerate(rows) if g_name[i] in top_aggs))
    serving = attach_rows(col, top_aggs, rows, top_pos, joined.shaped, joined.launches, steps,
                          step_of)
    if col.execute_spans and serving is None:
        notes.append(f"{col.execute_spans} step annotation(s) (execute_*, step[...], "
                     "prefill[...]/decode[...]) own no GPU work of this device or are not "
                     "readable: no serving block")
    if col.skipped_gpu:
        notes.append(f"{col.skipped_gpu} GPU events without a usable ts/dur/name skipped")
    if total <= 0:
        raise ImportProblem("GPU events found but their durations sum to zero")
    notes.extend(evidence_notes(col, rows, joined.shaped, joined.launches, step_of, total))
    replay = graph_replay(col, launches, replay_join)
    if replay:
        if replay_join is not None:
            replay["capture_shaped_launches"] = replay_join.shaped
            replay["replayed_launches"] = replay_join.replayed
        notes.append(replay["warning"])
    regime = regime_evidence(col, serving, (aggs[nid].name for nid in sorted(
        aggs, key=lambda n: (-aggs[n].total_us, aggs[n].name))))
    if regime["regime"] is None:
        notes.append(regime["evidence"])  # said once, for every entry
    doc = build_topn(aggs.values(), source="torch-trace", total_us=total, launches=launches,
                     top=top, serving=serving, isl=isl, osl=osl, conc=conc,
                     capture_sizes=capture_sizes, notes=notes, graph_replay=replay,
                     extension=doc_extension(col, regime, replay_join, header,
                                              Path(path).name, kept.step_block, time_split))
    info = from_kineto(header, dev, Path(path).name) if identify_device else None
    return TorchImport(doc=doc, device=choice, events_seen=col.events, notes=notes,
                       device_info=info)


def graph_replay(col: Collector, gpu_events: int, join: ReplayJoin | None = None
                 ) -> dict[str, Any] | None:
    """The graph-replay warning, or None. Raised when graph launches are present, or when
    kernel launch calls far outnumber the GPU events recorded (kernels launched inside a graph
    capture, or replayed without tracing, are not in the trace)."""
    launches, graphs = col.launch_calls, col.graph_launches
    capture = launches >= 2 * max(gpu_events, 1) and launches - gpu_events >= 20
    if not graphs and not capture:
        return None
    parts = []
    if capture:
        parts.append(f"{launches:,} kernel launch calls but only {gpu_events:,} GPU events "
                     "recorded: kernels launched in a graph capture (or replayed untraced) are "
                     "missing, so this Top-N misses them")
    if graphs and join is not None and join.shaped:
        parts.append(f"{graphs:,} graph launch call(s) (cudaGraphLaunch/hipGraphLaunch): "
                     f"{join.shaped:,} of {join.replayed:,} replayed kernels took the op and "
                     "shapes of their launch in a graph-capture trace")
    elif graphs:
        parts.append(f"{graphs:,} graph launch call(s) (cudaGraphLaunch/hipGraphLaunch): "
                     "kernels replayed from a graph have no launching op, so their shapes "
                     "are not recorded (a graph-capture trace of the run gives them: "
                     "--capture)")
    return {"launch_calls": launches, "graph_launches": graphs, "kernel_events": gpu_events,
            "warning": "graph replay: " + "; ".join(parts)}

"""What the table importers of both vendors share: the result record (:class:`TableImport`),
column matching by name (never by position), the bounded text read, the skipped-row tally,
the one device-choice rule, the per-launch sums (:class:`LaunchSums`) and the phrase that names
a file no table importer reads.

The readers themselves are :mod:`roofline_tui.importers.rocprof` (rocprofv3, rocpd, legacy
rocprof) and :mod:`roofline_tui.importers.nsys` (``nsys stats`` tables, ``cuda_gpu_trace``, the
SQLite export); :mod:`roofline_tui.importers.rpd` and :mod:`roofline_tui.importers.proton` use
this module too. It imports none of them."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import store, units
from roofline_tui.core.coerce import number
from roofline_tui.core.measured.counters import sniff
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem, KernelAgg, PhaseAgg
from roofline_tui.importers.device import DeviceInfo
from roofline_tui.importers.instances import InstanceAgg
from roofline_tui.importers.spread import RankKernels, attach_spread
from roofline_tui.importers.sniff import head_text

csv.field_size_limit(1 << 26)


@dataclass
class TableImport:
    doc: dict[str, Any]
    device_message: str = ""
    rows: int = 0
    notes: list[str] = field(default_factory=list)
    skipped: int = 0
    device_info: DeviceInfo | None = None


def norm(col: str) -> str:
    return re.sub(r"[^a-z0-9]", "", col.strip().strip('"').lower())


def pick(header: dict[str, int], *aliases: str) -> int | None:
    for a in aliases:
        i = header.get(norm(a))
        if i is not None:
            return i
    return None


MAX_TABLE_BYTES = 256 << 20  # a CSV or console dump larger than this is refused, unread


def read_text(path: Path) -> str:
    """The text of a regular file of at most :data:`MAX_TABLE_BYTES`, through the engine's
    bounded reader (size checked before reading; FIFOs and devices refused without blocking)."""
    path = Path(path)
    try:
        # UTF-16 (PowerShell's `>`) read as the text it is
        raw = store.utf8_of(store.read_bytes(path, max_bytes=MAX_TABLE_BYTES))
    except store.ReadProblem as exc:
        raise ImportProblem(f"{printable(path.name)}: {printable(exc.reason)}") from None
    if not raw.strip():
        raise ImportProblem(f"{printable(path.name)}: file is empty")
    if b"\x00" in raw[:4096]:
        raise ImportProblem(f"{printable(path.name)}: binary data, expected CSV text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def ns(text: Any) -> float | None:
    """A time or count cell through the one coercer (thousands separators allowed)."""
    return number(text, nonneg=False)


@dataclass
class Skipped:
    """Rows that could not be used, counted by reason (a warning and a Top-N note)."""

    counts: dict[str, int] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, lineno: int) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        self.first_line.setdefault(reason, lineno)

    def total(self) -> int:
        return sum(self.counts.values())

    def notes(self, where: str) -> list[str]:
        return [f"{where}: {n:,} row(s) skipped: {reason} (first at line "
                f"{self.first_line[reason]})" for reason, n in self.counts.items()]


_KINDS = {
    "rocprofv3-csv": ("a rocprofv3 counter_collection.csv (counters)", "--counters"),
    "rocprof-compute-pmc": ("a rocprof-compute pmc_perf.csv (counters)", "--counters"),
    "ncu-csv": ("an Nsight Compute CSV (counters)", "--counters"),
    "ncu-raw": ("an Nsight Compute raw-page CSV (counters)", "--counters"),
    "roofline-v1": ("a roofline-v1 report", "--counters"),
    "sysinfo": ("a rocprof-compute sysinfo.csv (device description)", None),
    "agent-info": ("a rocprofv3 agent_info.csv (device description)", None),
    "kernel-trace": ("a rocprofv3 kernel trace", "import rocprofv3"),
}


def what_is(path: Path, text: str | None = None) -> str | None:
    """One phrase naming a file this importer cannot read, with where it belongs."""
    head = (text if text is not None else head_text(path, 1 << 16))[: 1 << 16]
    lines = head.splitlines()
    if any(line.strip().lstrip('"').startswith(("Time (%)", "Time(%)")) for line in lines[:50]):
        return "an Nsight Systems kernel summary: import it with `roofline import nsys`"
    try:
        kind = sniff(path)
    except (OSError, ValueError):
        return None
    known = _KINDS.get(kind)
    if known is None:
        return None
    what, use = known
    if use == "--counters":
        return f"{what}: give it to `roofline analyze --counters`"
    if use:
        return f"{what}: import it with `roofline {use}`"
    return what


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def choose_device(per_dev: dict[int, float], device_index: int | None, what: str) -> tuple[int, str]:
    listing = ", ".join(f"{d} ({units.millis(t / 1e6)})" for d, t in sorted(per_dev.items()))
    if device_index is not None:
        if device_index not in per_dev:
            raise ImportProblem(f"--device-index {device_index} not found; {what}s: {listing}")
        return device_index, f"{what} {device_index} chosen with --device-index"
    chosen = max(sorted(per_dev), key=lambda d: per_dev[d])
    if len(per_dev) > 1:
        return chosen, (f"profile has {len(per_dev)} {what}s: {listing}; using {what} {chosen} "
                        "(most GPU time); pick another with --device-index")
    return chosen, f"{what} {chosen}" if chosen >= 0 else ""


MAX_INSTANCES_PER_KERNEL = 256  # distinct (grid, block) pairs kept per kernel name


@dataclass
class _DeviceSums:
    aggs: dict[str, KernelAgg] = field(default_factory=dict)
    instances: dict[tuple[str, Any, Any], InstanceAgg] = field(default_factory=dict)
    total_us: float = 0.0
    launches: int = 0
    phased: int = 0  # launches given a serving phase


class LaunchSums:
    """Per-device, per-kernel sums of a per-launch table (nsys SQLite export, cuda_gpu_trace
    CSV), added one launch at a time: memory holds one entry per distinct kernel and launch
    geometry, never one per launch. Each (grid, block) pair of a kernel is an instance (at
    most :data:`MAX_INSTANCES_PER_KERNEL` per kernel; launches beyond stay in the kernel's
    sums)."""

    def __init__(self) -> None:
        self.devices: dict[int, _DeviceSums] = {}

    def add(self, device: int, name: str, dur_ns: float,
            grid: tuple[int, int, int] | None = None, block: tuple[int, int, int] | None = None,
            phase: str | None = None, calls: int = 1) -> None:
        """``calls`` launches of ``dur_ns`` in all (one launch unless a table summed them)."""
        sums = self.devices.get(device)
        if sums is None:
            sums = self.devices[device] = _DeviceSums()
        us = dur_ns / 1000.0
        agg = sums.aggs.get(name)
        if agg is None:
            # copies keep their direction in the short name (Memcpy HtoD vs Memcpy DtoH)
            agg = sums.aggs[name] = KernelAgg(
                name, short_name=name if name.startswith("Memcpy ") else None)
        agg.add(us, calls)
        sums.total_us += us
        sums.launches += calls
        if phase is not None:
            sums.phased += calls
            pa = agg.by_phase.setdefault(phase, PhaseAgg())
            pa.count += calls
            pa.total_us += us
        if grid is None and block is None:
            return
        key = (name, grid, block)
        ia = sums.instances.get(key)
        if ia is None:
            if len(agg.instances) >= MAX_INSTANCES_PER_KERNEL:
                return
            ia = sums.instances[key] = InstanceAgg(op=None, dims=(), types=(), grid=grid,
                                                   block=block, source=None, module=None,
                                                   calls=0, total_us=0.0)
            agg.instances.append(ia)
        ia.calls += calls
        ia.total_us += us
        if phase is not None:
            c, t = ia.by_phase.get(phase, (0, 0.0))
            ia.by_phase[phase] = (c + calls, t + us)

    def per_device_ns(self) -> dict[int, float]:
        return {d: s.total_us * 1000.0 for d, s in self.devices.items()}

    def of(self, device: int) -> _DeviceSums:
        return self.devices.get(device) or _DeviceSums()

    def attach_spread(self, doc: dict[str, Any], chosen: int, device_index: int | None,
                      names: Mapping[int, str]) -> None:
        """With kernels on two GPUs or more, the Top-N (of ``chosen``) records every GPU and
        each kernel's time per launch across them (``importers.spread``), as several rank
        traces do: a straggler GPU shows."""
        busy = sorted(d for d, s in self.devices.items() if s.launches and d >= 0)
        if len(busy) < 2 or chosen not in busy:
            return
        per = [RankKernels(rank=d, file=names.get(d) or f"device {d}",
                           total_us=self.devices[d].total_us,
                           launches=self.devices[d].launches,
                           kernels={k: (a.calls, a.total_us)
                                    for k, a in self.devices[d].aggs.items()})
               for d in busy]
        attach_spread(doc, chosen, "--device-index" if device_index is not None else "slowest",
                      per, unit="device")


"""Nsight Systems ``cuda_gpu_trace`` -> Top-N: ``nsys stats --report cuda_gpu_trace --format
csv``, one row per kernel launch or copy, summed per kernel and launch geometry."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from roofline_tui.core.coerce import integer
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem, build_topn
from roofline_tui.importers.device import identify
from roofline_tui.importers.tables import (
    LaunchSums,
    Skipped,
    TableImport,
    choose_device,
    norm,
    ns,
    pick,
)

_DEVICE_CELL = lazy_compile(r"^(?P<name>.*?)\s*\((?P<index>\d+)\)\s*$")
_NSYS_COPY = lazy_compile(r"^\[CUDA (?P<what>memcpy|memset)\s*(?P<dir>[^\]]*)\]$", re.IGNORECASE)
_NSYS_COPY_DIRS = {"host-to-device": "HtoD", "device-to-host": "DtoH",
                   "device-to-device": "DtoD", "host-to-host": "HtoH",
                   "peer-to-peer": "PtoP", "htod": "HtoD", "dtoh": "DtoH", "dtod": "DtoD",
                   "htoh": "HtoH", "ptop": "PtoP"}
_TIME_SCALE = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def _copy_name(name: str) -> str | None:
    """``Memcpy HtoD`` / ``Memset`` for nsys's ``[CUDA memcpy Host-to-Device]`` rows."""
    m = _NSYS_COPY.match(name.strip())
    if m is None:
        return None
    if m.group("what").lower() == "memset":
        return "Memset"
    raw = m.group("dir").strip()
    return f"Memcpy {_NSYS_COPY_DIRS.get(raw.lower(), raw or '?')}"


def _xyz(cells: list[int | None]) -> tuple[int, int, int] | None:
    a, b, c = cells
    return None if a is None or b is None or c is None else (a, b, c)


def import_gpu_trace(path: Path, text: str, *, top: int,
                     device_index: int | None) -> TableImport:
    """``nsys stats --report cuda_gpu_trace --format csv``: per-launch rows (start, duration,
    grid/block, device, name) summed per kernel; copies named like the other importers'."""
    pname = printable(path.name)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines[:200])
                  if {"startns", "durationns", "name"} <= {norm(c) for c in line.split(",")}),
                 None)
    if start is None:
        raise ImportProblem(f"{pname}: no cuda_gpu_trace header (Start (ns), Duration (ns), "
                            "Name)")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    head = next(reader)
    header = {norm(c): i for i, c in enumerate(head)}
    dur_col = next((c for c in head if norm(c).startswith("duration")), "")
    unit = re.search(r"\((\w+)\)", dur_col)
    scale = _TIME_SCALE.get(unit.group(1) if unit else "ns", 1.0)
    name_i, dur_i = pick(header, "Name"), pick(header, "Duration (ns)", "Duration (us)",
                                                    "Duration (ms)", "Duration")
    dev_i = pick(header, "Device")
    geo = [pick(header, c) for c in ("GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ")]
    if name_i is None or dur_i is None:
        raise ImportProblem(f"{pname}: the cuda_gpu_trace table has no Name / Duration column")
    sums = LaunchSums()
    skipped = Skipped()
    devices: dict[int, str] = {}
    by_text: dict[str, int] = {}
    width = len(head)
    for lineno, rec in enumerate(reader, start + 2):
        if not rec or all(not c.strip() for c in rec):
            continue
        if len(rec) != width:
            skipped.add(f"{len(rec)} fields where the header has {width}", lineno)
            continue
        dur = ns(rec[dur_i])
        if dur is None or dur < 0:
            skipped.add("duration missing, negative or not a number", lineno)
            continue
        device = -1
        if dev_i is not None:
            cell = rec[dev_i].strip()
            m = _DEVICE_CELL.match(cell)
            if m:
                device = int(m.group("index"))
                devices.setdefault(device, m.group("name"))
            elif cell:
                device = by_text.setdefault(cell, len(by_text))
                devices.setdefault(device, cell)
        raw_name = rec[name_i].strip()
        copy = _copy_name(raw_name)
        cells = [integer(rec[i]) if i is not None else None for i in geo]
        grid, block = (None, None) if copy else (_xyz(cells[:3]), _xyz(cells[3:]))
        sums.add(device, copy or cap_name(raw_name), dur * scale, grid, block)
    if not sums.devices:
        why = f" ({skipped.total():,} bad rows skipped)" if skipped.total() else ""
        raise ImportProblem(f"{pname}: cuda_gpu_trace table found but no usable rows{why}")
    dev, message = choose_device(sums.per_device_ns(), device_index, "device")
    chosen = sums.of(dev)
    n = chosen.launches
    notes = skipped.notes(pname)
    doc = build_topn(chosen.aggs.values(), source="nsys", total_us=chosen.total_us,
                     launches=n, top=top, notes=notes)
    sums.attach_spread(doc, dev, device_index, devices)
    name = devices.get(dev)
    info = identify(name, {}, source=f"{path.name} Device column") if name else None
    return TableImport(doc=doc, device_message=message, rows=n, notes=notes,
                       skipped=skipped.total(), device_info=info)

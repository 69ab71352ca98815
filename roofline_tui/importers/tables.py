"""rocprofv3 (kernel_trace.csv, memory_copy_trace.csv, rocpd SQLite) and Nsight Systems
(cuda_gpu_kern_sum.csv) -> Top-N.  Columns are found by name, never by position."""

from __future__ import annotations

import csv
import io
import math
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem, KernelAgg, build_topn

csv.field_size_limit(1 << 26)


@dataclass
class TableImport:
    doc: dict[str, Any]
    device_message: str = ""
    rows: int = 0
    notes: list[str] = field(default_factory=list)


def _norm(col: str) -> str:
    return re.sub(r"[^a-z0-9]", "", col.strip().strip('"').lower())


def _pick(header: dict[str, int], *aliases: str) -> int | None:
    for a in aliases:
        i = header.get(_norm(a))
        if i is not None:
            return i
    return None


def _read_text(path: Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ImportProblem(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ImportProblem(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise ImportProblem(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not raw.strip():
        raise ImportProblem(f"{Path(path).name}: file is empty")
    if b"\x00" in raw[:4096]:
        raise ImportProblem(f"{Path(path).name}: binary data, expected CSV text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _int(text: str) -> int:
    s = text.strip()
    try:
        return int(s)
    except ValueError:
        f = float(s)
        if not math.isfinite(f):
            raise ValueError(s) from None
        return int(f)


def _float(text: str) -> float:
    f = float(text.strip().replace(",", ""))
    if not math.isfinite(f):
        raise ValueError(text)
    return f


_AGENT = re.compile(r"(-?\d+)")


def _agent(text: str) -> int:
    m = _AGENT.search(text or "")
    return int(m.group(1)) if m else -1


# ---------------------------------------------------------------------------------------------
# rocprofv3
# ---------------------------------------------------------------------------------------------

_MEMCPY_DIRS = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD",
                "HOST_TO_HOST": "HtoH"}


@dataclass
class _Row:
    device: int
    name: str
    dur_ns: float


def _rocprof_csv_rows(path: Path) -> Iterator[_Row]:
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text))
    try:
        head = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise ImportProblem(f"{path.name}: no CSV header ({exc})") from None
    header = {_norm(c): i for i, c in enumerate(head)}
    if _pick(header, "Counter_Name") is not None:
        raise ImportProblem(f"{path.name}: a counter_collection file (one row per counter); "
                            "import the kernel_trace.csv of a --kernel-trace run instead")
    name_i = _pick(header, "Kernel_Name", "KernelName", "kernel_name")
    dir_i = _pick(header, "Direction")
    start_i = _pick(header, "Start_Timestamp", "BeginNs", "start")
    end_i = _pick(header, "End_Timestamp", "EndNs", "end")
    dur_i = _pick(header, "DurationNs", "Duration_Ns", "Duration")
    agent_i = _pick(header, "Agent_Id", "gpu-id", "GPU_ID", "Destination_Agent_Id")
    timed = (start_i is not None and end_i is not None) or dur_i is not None
    if (name_i is None and dir_i is None) or not timed:
        shown = ", ".join(c.strip() for c in head[:12]) or "(none)"
        raise ImportProblem(f"{path.name}: unknown columns (need Kernel_Name and "
                            f"Start_Timestamp/End_Timestamp); found: {shown}")
    width = len(head)
    for lineno, rec in enumerate(reader, 2):
        if not rec or all(not c.strip() for c in rec):
            continue
        if len(rec) != width:
            raise ImportProblem(f"{path.name}: line {lineno} has {len(rec)} fields, header has "
                                f"{width} (truncated or damaged file)")
        try:
            if start_i is not None and end_i is not None:
                dur = _int(rec[end_i]) - _int(rec[start_i])
            else:
                dur = _float(rec[dur_i])  # type: ignore[index]
        except (ValueError, TypeError):
            raise ImportProblem(f"{path.name}: line {lineno}: timestamps are not numbers") \
                from None
        if dur < 0:
            raise ImportProblem(f"{path.name}: line {lineno}: end before start")
        if name_i is not None:
            name = rec[name_i]
        else:
            direction = rec[dir_i].strip().upper().replace("MEMORY_COPY_", "")  # type: ignore
            name = f"Memcpy {_MEMCPY_DIRS.get(direction, direction or '?')}"
        device = _agent(rec[agent_i]) if agent_i is not None else -1
        yield _Row(device, name, float(dur))


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _rocpd_rows(path: Path) -> Iterator[_Row]:
    try:
        con = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportProblem(f"{path.name}: cannot open SQLite database ({exc})") from None
    try:
        try:
            objects = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('view','table')")}
        except sqlite3.DatabaseError as exc:
            raise ImportProblem(f"{path.name}: not a readable SQLite database ({exc})") from None
        if "kernels" not in objects:
            raise ImportProblem(f"{path.name}: no `kernels` view; not a rocpd database?")
        sources = [("kernels", True)]
        if "memory_copies" in objects:
            sources.append(("memory_copies", False))
        for view, is_kernel in sources:
            try:
                cur = con.execute(f"SELECT * FROM `{view}`")  # noqa: S608 - fixed names
            except sqlite3.Error as exc:
                raise ImportProblem(f"{path.name}: cannot read `{view}` ({exc})") from None
            header = {_norm(d[0]): i for i, d in enumerate(cur.description or ())}
            name_i = _pick(header, "name", "kernel_name", "display_name")
            dir_i = _pick(header, "direction", "kind")
            start_i, end_i = _pick(header, "start"), _pick(header, "end")
            dur_i = _pick(header, "duration")
            dev_i = _pick(header, "agent_abs_index", "agent_index", "dst_agent_abs_index",
                          "agent_id", "gpu_id")
            if (is_kernel and name_i is None) or (
                    dur_i is None and (start_i is None or end_i is None)):
                if not is_kernel:
                    continue
                raise ImportProblem(f"{path.name}: unknown columns in `{view}`: "
                                    f"{', '.join(d[0] for d in cur.description or ())}")
            for rec in cur:
                try:
                    if dur_i is not None and rec[dur_i] is not None:
                        dur = float(rec[dur_i])
                    else:
                        dur = float(rec[end_i]) - float(rec[start_i])  # type: ignore[index]
                except (TypeError, ValueError):
                    raise ImportProblem(f"{path.name}: non-numeric time in `{view}`") from None
                if not math.isfinite(dur) or dur < 0:
                    raise ImportProblem(f"{path.name}: negative or invalid duration in "
                                        f"`{view}`")
                if is_kernel or name_i is not None:
                    name = str(rec[name_i])  # type: ignore[index]
                else:
                    direction = str(rec[dir_i] if dir_i is not None else "").upper()
                    direction = direction.replace("MEMORY_COPY_", "")
                    name = f"Memcpy {_MEMCPY_DIRS.get(direction, direction or '?')}"
                dev = rec[dev_i] if dev_i is not None else -1
                yield _Row(_agent(str(dev)) if dev is not None else -1, name, dur)
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{path.name}: SQLite error ({exc})") from None
    finally:
        con.close()


def _choose(per_dev: dict[int, float], device_index: int | None, what: str) -> tuple[int, str]:
    listing = ", ".join(f"{d} ({t / 1e6:.3f} ms)" for d, t in sorted(per_dev.items()))
    if device_index is not None:
        if device_index not in per_dev:
            raise ImportProblem(f"--device-index {device_index} not found; {what}s: {listing}")
        return device_index, f"{what} {device_index} chosen with --device-index"
    chosen = max(sorted(per_dev), key=lambda d: per_dev[d])
    if len(per_dev) > 1:
        return chosen, (f"profile has {len(per_dev)} {what}s: {listing}; using {what} {chosen} "
                        "(most GPU time); pick another with --device-index")
    return chosen, f"{what} {chosen}" if chosen >= 0 else ""


def import_rocprofv3(paths: Iterable[Path], *, top: int = DEFAULT_TOP,
                     device_index: int | None = None) -> TableImport:
    rows: list[_Row] = []
    paths = [Path(p) for p in paths]
    if not paths:
        raise ImportProblem("no input files")
    for p in paths:
        if not p.exists():
            raise ImportProblem(f"{p}: file not found")
        it = _rocpd_rows(p) if _is_sqlite(p) else _rocprof_csv_rows(p)
        rows.extend(it)
    if not rows:
        raise ImportProblem("no kernel dispatches in " + ", ".join(p.name for p in paths))
    per_dev: dict[int, float] = {}
    for r in rows:
        per_dev[r.device] = per_dev.get(r.device, 0.0) + r.dur_ns
    dev, message = _choose(per_dev, device_index, "agent")
    aggs: dict[str, KernelAgg] = {}
    total = 0.0
    launches = 0
    for r in rows:
        if r.device != dev:
            continue
        us = r.dur_ns / 1000.0
        aggs.setdefault(r.name, KernelAgg(r.name)).add(us)
        total += us
        launches += 1
    doc = build_topn(aggs.values(), source="rocprofv3", total_us=total, launches=launches,
                     top=top)
    return TableImport(doc=doc, device_message=message, rows=launches)


# ---------------------------------------------------------------------------------------------
# Nsight Systems cuda_gpu_kern_sum
# ---------------------------------------------------------------------------------------------


def import_nsys(path: Path, *, top: int = DEFAULT_TOP) -> TableImport:
    path = Path(path)
    text = _read_text(path)
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.lstrip().lstrip('"').startswith("Time (%)") or line.lstrip().lstrip(
                '"').startswith("Time(%)"):
            start = i
            break
    if start is None:
        raise ImportProblem(f"{path.name}: no cuda_gpu_kern_sum header row (a line starting "
                            "'Time (%)') found; unknown columns")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    head = next(reader)
    header = {_norm(c): i for i, c in enumerate(head)}
    name_i = _pick(header, "Name")
    total_i = _pick(header, "Total Time (ns)", "Total Time")
    inst_i = _pick(header, "Instances", "Calls", "Count")
    if name_i is None or total_i is None or inst_i is None:
        raise ImportProblem(f"{path.name}: unknown columns (need Name, Total Time (ns), "
                            f"Instances); found: {', '.join(head)}")
    scale = 1.0
    if "(us)" in head[total_i]:
        scale = 1e3
    elif "(ms)" in head[total_i]:
        scale = 1e6
    elif "(s)" in head[total_i]:
        scale = 1e9
    aggs: dict[str, KernelAgg] = {}
    total = 0.0
    launches = 0
    width = len(head)
    for lineno, rec in enumerate(reader, start + 2):
        if not rec or all(not c.strip() for c in rec):
            continue
        if len(rec) != width:
            raise ImportProblem(f"{path.name}: line {lineno} has {len(rec)} fields, header has "
                                f"{width} (truncated or damaged file)")
        try:
            total_ns = _float(rec[total_i]) * scale
            calls = _int(rec[inst_i].replace(",", ""))
        except (ValueError, TypeError):
            raise ImportProblem(f"{path.name}: line {lineno}: numbers expected in "
                                "Total Time/Instances") from None
        if total_ns < 0 or calls < 0:
            raise ImportProblem(f"{path.name}: line {lineno}: negative time or count")
        name = rec[name_i]
        us = total_ns / 1000.0
        aggs.setdefault(name, KernelAgg(name)).add(us, calls)
        total += us
        launches += calls
    if not aggs:
        raise ImportProblem(f"{path.name}: header found but no kernel rows")
    doc = build_topn(aggs.values(), source="nsys", total_us=total, launches=launches, top=top)
    return TableImport(doc=doc, rows=len(aggs))

"""Nsight Systems ``cuda_gpu_kern_sum`` -> Top-N: the kernel summary as CSV (``--format csv``)
or as console tables (``nsys stats``, ``nsys profile --stats=true``; the old ``gpukernsum`` /
"CUDA Kernel Statistics" layouts too), one report or a multi-report dump."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from roofline_tui.core.coerce import integer
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import cap_name, is_truncated
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import ImportProblem, KernelAgg, build_topn
from roofline_tui.importers.tables import Skipped, TableImport, norm, ns, pick, what_is


_KERNEL_REPORTS = ("cuda_gpu_kern_sum", "gpukernsum", "cuda kernel statistics",
                   "cuda gpu kernel summary")
_PROCESSING = lazy_compile(r"^\s*Processing \[.*?\] with \[(?P<script>[^\]]*)\]")
_BANNER = lazy_compile(r"^\s*\*\*\s*(?P<title>.*?)\s*(?:\((?P<report>\w+)\))?\s*:?\s*$")
_SKIPPED = lazy_compile(r"^\s*SKIPPED:\s*(?P<why>.*)$")
# nsys 2021 console: "Running [/opt/.../reports/gpukernsum.py report1.sqlite]... " (a SKIPPED
# reason may follow on the same line)
_RUNNING = lazy_compile(r"^\s*Running \[(?P<script>[^\]\s]+\.py)\b[^\]]*\]\.*\s*(?P<rest>.*)$")
# `nsys profile --stats=true` console: "[6/8] Executing 'cuda_gpu_kern_sum' stats report"
_EXECUTING = lazy_compile(r"^\s*\[\s*\d+\s*/\s*\d+\s*\]\s*Executing\s+'(?P<report>[^']+)'\s+"
                          r"stats report")
# nsys 2020-2021 console: a bare "CUDA Kernel Statistics:" title line
_TITLE = lazy_compile(r"^\s*(?P<title>[A-Z][A-Za-z ()/-]*Statistics(?: \([^)]*\))?)\s*:\s*$")
_DASHES = lazy_compile(r"^\s*-{3,}(\s+-{3,})*\s*$")


@dataclass
class _Section:
    report: str  # report name (cuda_gpu_kern_sum, osrt_sum, ...) or "" when unnamed
    lines: list[str] = field(default_factory=list)
    skipped: str | None = None


def _sections(lines: list[str]) -> list[_Section]:
    """Split an nsys stats dump into its reports: ``Processing [...] with [x.py]`` lines,
    ``** Title (report):`` banners, ``[N/M] Executing 'report' stats report`` lines (``nsys
    profile --stats=true``) and bare ``CUDA Kernel Statistics:`` titles each start one."""
    out: list[_Section] = [_Section("")]
    for line in lines:
        m = _PROCESSING.match(line)
        if m:
            out.append(_Section(Path(m.group("script").strip()).stem.lower()))
            continue
        e = _EXECUTING.match(line)
        if e:
            out.append(_Section(Path(e.group("report").strip()).stem.lower()))
            continue
        r = _RUNNING.match(line)
        if r:
            out.append(_Section(Path(r.group("script")).stem.lower()))
            inline = _SKIPPED.match(r.group("rest"))
            if inline:
                out[-1].skipped = inline.group("why").strip()
            continue
        t = _TITLE.match(line)
        if t:
            out.append(_Section(t.group("title").strip().lower()))
            continue
        b = _BANNER.match(line)
        if b and line.lstrip().startswith("**"):
            report = (b.group("report") or b.group("title") or "").lower()
            if out[-1].report and not out[-1].lines and report and report in out[-1].report:
                continue  # the banner of the report just announced
            if (out[-1].report and out[-1].skipped is None
                    and not any(x.strip() for x in out[-1].lines) and report):
                # the banner names the report just announced (a SKIPPED one is finished)
                out[-1].report = report
                continue
            out.append(_Section(report))
            continue
        s = _SKIPPED.match(line)
        if s:
            if any(x.strip() for x in out[-1].lines):
                # the current report already printed its table: the reason belongs to a
                # report whose announcement this dump does not carry, never to this one
                out.append(_Section(""))
            out[-1].skipped = s.group("why").strip()
            continue
        out[-1].lines.append(line)
    return [s for s in out if s.report or any(x.strip() for x in s.lines)]


def _is_kernel_report(name: str) -> bool:
    return any(k in name for k in _KERNEL_REPORTS)


def _header_at(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        s = line.strip().lstrip('"')
        if s.startswith(("Time (%)", "Time(%)")):
            return i
    return None


def _table(section_lines: list[str], path: Path) -> tuple[list[str], list[list[str]], bool]:
    """(header, rows, console?) of the first table in a section: CSV or space-aligned."""
    start = _header_at(section_lines)
    if start is None:
        what = what_is(path)
        if what:
            raise ImportProblem(f"{printable(path.name)}: {what}; not nsys output")
        raise ImportProblem(f"{printable(path.name)}: no kernel table header (a line starting "
                            "'Time (%)')")
    head_line = section_lines[start]
    rest = section_lines[start + 1:]
    console = "," not in head_line and bool(rest) and _DASHES.match(rest[0]) is not None
    if not console:
        reader = csv.reader(io.StringIO("\n".join([head_line, *rest])))
        head = next(reader)
        rows: list[list[str]] = []
        for rec in reader:
            if not rec or all(not c.strip() for c in rec):
                if rows:
                    break  # a blank line ends the table
                continue
            rows.append(rec)
        return [h.strip() for h in head], rows, False
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rest[0])]
    head = [head_line[a:b if k < len(spans) - 1 else None].strip()
            for k, (a, b) in enumerate(spans)]
    # nsys 2022 GridXYZ / BlockXYZ cells hold three numbers each ("4    4    1")
    widths = [3 if norm(h).endswith("xyz") else 1 for h in head[:-1]]
    rows = []
    for line in rest[1:]:
        if not line.strip():
            if rows:
                break
            continue
        tokens = line.split(None, sum(widths))
        if len(tokens) == sum(widths) + 1:
            cells, k = [], 0
            for w in widths:
                cells.append(" ".join(tokens[k:k + w]))
                k += w
            cells.append(tokens[k])
        else:
            cells = tokens  # too few fields: counted as a damaged row below
        rows.append([c.strip() for c in cells])
    return head, rows, True


def import_stats(path: Path, text: str, *, top: int) -> TableImport:
    """The ``cuda_gpu_kern_sum`` table of ``text`` (``path``'s), found wherever it is in a
    multi-report dump, in CSV or console layout."""
    pname = printable(path.name)
    sections = _sections(text.splitlines())
    named = [s for s in sections if s.report]
    kernel = [s for s in named if _is_kernel_report(s.report)]
    if kernel:
        # the first kernel report with a table; one marked SKIPPED but holding its table is
        # read (the table is the evidence), only a report with no table is refused
        sec = next((s for s in kernel if _header_at(s.lines) is not None), kernel[0])
        if _header_at(sec.lines) is None:
            why = printable(sec.skipped or "no table", limit=160)
            others = ", ".join(printable(s.report, limit=30) + (" (skipped)" if s.skipped else "")
                               for s in named if s is not sec)
            raise ImportProblem(f"{pname}: the nsys report has no CUDA kernel data "
                                f"({sec.report}: SKIPPED: {why})"
                                + (f"; reports present: {others}" if others else ""))
    elif named:
        others = ", ".join(printable(s.report, limit=30) + (" (skipped)" if s.skipped else "")
                           for s in named)
        if not any(_header_at(s.lines) is not None for s in sections if not s.report):
            raise ImportProblem(f"{pname}: no cuda_gpu_kern_sum report in this nsys dump "
                                f"(reports present: {others}); run `nsys stats --report "
                                "cuda_gpu_kern_sum`")
        sec = next(s for s in sections if not s.report and _header_at(s.lines) is not None)
    else:
        sec = sections[0] if sections else _Section("")
    head, recs, console = _table(sec.lines, path)
    header = {norm(c): i for i, c in enumerate(head)}
    name_i = pick(header, "Name")
    total_i = pick(header, "Total Time (ns)", "Total Time")
    inst_i = pick(header, "Instances", "Num Calls", "Calls", "Count")
    if name_i is None or total_i is None or inst_i is None:
        missing = [w for w, i in (("Name", name_i), ("Total Time", total_i),
                                  ("Instances", inst_i)) if i is None]
        raise ImportProblem(f"{pname}: unknown columns: the table has no "
                            f"{' / '.join(missing)} column (not a kernel summary?)")
    unit = head[total_i]
    scale = 1e3 if "(us)" in unit else 1e6 if "(ms)" in unit else 1e9 if "(s)" in unit else 1.0
    aggs: dict[str, KernelAgg] = {}
    total = 0.0
    launches = 0
    skipped = Skipped()
    cut = 0
    width = len(head)
    for lineno, rec in enumerate(recs, 1):
        if len(rec) != width:
            skipped.add(f"{len(rec)} fields where the header has {width}", lineno)
            continue
        total_ns = ns(rec[total_i])
        calls = integer(rec[inst_i])
        if total_ns is None or calls is None:
            skipped.add("Total Time / Instances not numbers", lineno)
            continue
        if total_ns < 0:
            skipped.add("negative time", lineno)
            continue
        name = cap_name(rec[name_i].strip())
        cut += is_truncated(name)
        us = total_ns * scale / 1000.0
        aggs.setdefault(name, KernelAgg(name)).add(us, calls)
        total += us
        launches += calls
    if not aggs:
        why = f" ({skipped.total():,} bad rows skipped)" if skipped.total() else ""
        raise ImportProblem(f"{pname}: kernel table found but no usable kernel rows{why}")
    notes = skipped.notes(pname)
    if cut:
        notes.append(f"{cut} kernel name(s) cut with '…' by the nsys console layout: "
                     "`nsys stats --format csv` keeps them whole")
    doc = build_topn(aggs.values(), source="nsys", total_us=total, launches=launches, top=top,
                     notes=notes)
    return TableImport(doc=doc, rows=len(aggs), notes=notes, skipped=skipped.total())

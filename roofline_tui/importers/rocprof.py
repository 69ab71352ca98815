"""rocprofv3 -> Top-N: kernel_trace.csv and memory_copy_trace.csv (any version, rocpd2csv
output too), ``--stats`` kernel_stats.csv, ``--summary`` text, ``--output-format json``, the
rocpd SQLite database, and legacy rocprof (v1/v2) ``results.csv`` / ``results.stats.csv``.
Columns are found by name, never by position (:mod:`roofline_tui.importers.tables`)."""

from __future__ import annotations

import csv
import gzip
import io
import sqlite3
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import store
from roofline_tui.core.coerce import integer, number
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.measured.sqlite_ro import (
    SQLITE_ROW_BUDGET,
    SQLITE_TIME_BUDGET_S,
    QueryBudget,
    open_sqlite_ro,
    sqlite_uri,
)
from roofline_tui.core.names import cap_name
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem, KernelAgg, build_topn
from roofline_tui.importers.device import DeviceInfo, identify
from roofline_tui.importers.jsonstream import JsonWalker
from roofline_tui.importers.sniff import ROCPROF, head_text
from roofline_tui.importers.sniff import check as sniff_check
from roofline_tui.importers.tables import (
    Skipped,
    TableImport,
    choose_device,
    is_sqlite,
    norm,
    ns,
    pick,
    read_text,
    what_is,
)


_AGENT = lazy_compile(r"(-?\d+)")


def _agent(text: str) -> int:
    m = _AGENT.search(text or "")
    return int(m.group(1)) if m else -1


_MEMCPY_DIRS = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD",
                "HOST_TO_HOST": "HtoH"}


@dataclass
class _Row:
    device: int
    name: str
    dur_ns: float
    calls: int = 1


@dataclass
class _Read:
    rows: list[_Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device: DeviceInfo | None = None
    skipped: int = 0


def _csv_head(path: Path, text: str) -> tuple[list[str], Any]:
    reader = csv.reader(io.StringIO(text))
    try:
        head = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise ImportProblem(f"{printable(path.name)}: no CSV header ({exc})") from None
    return head, reader


def _api_trace(pname: str, header: dict[str, int], reader: Iterable[list[str]],
               domain_i: int) -> str:
    """Why an API-call trace CSV (rocprofv3 or rocpd2csv) is refused, naming its domains."""
    domains = sorted({rec[domain_i].strip() for rec in reader
                      if len(rec) > domain_i and rec[domain_i].strip()})
    shown = printable(", ".join(domains[:4]) + (", ..." if len(domains) > 4 else ""),
                      limit=120)
    kind = ("a rocpd2csv API trace" if pick(header, "Guid") is not None
            else "a rocprofv3 API trace")
    return (f"{pname}: {kind} ({shown or 'no rows'}: one row per API call, no kernels), not a "
            "kernel trace; import the kernel trace CSV of the same run instead (rocpd2csv "
            "writes it as *_kernel_trace.csv)")


def _not_a_kernel_trace(path: Path, text: str, head: list[str], named: bool) -> str:
    """Why a CSV without kernel times is refused: a --pmc counter file (kernel names, no
    times), a file another reader takes, or the columns it has."""
    pname = printable(path.name)
    if named and any(h.strip().upper().startswith(("FETCH_SIZE", "WRITE_SIZE", "SQ_", "TCC_",
                                                   "TCP_", "GRBM_")) for h in head):
        return (f"{pname}: a rocprof --pmc counter file (one row per dispatch, no kernel "
                "times): give it to `roofline analyze --counters`, and import the kernel "
                "trace (results.csv / kernel_trace.csv)")
    what = what_is(path, text)
    if what:
        return f"{pname}: {what}; not a kernel trace"
    shown = ", ".join(printable(c.strip(), limit=40) for c in head[:12]) or "(none)"
    return (f"{pname}: not a kernel trace: no kernel name and start/end time columns "
            f"(found: {shown})")


def _rocprof_csv(path: Path) -> _Read:
    """rocprofv3 kernel_trace.csv / memory_copy_trace.csv (any version), rocpd2csv output,
    legacy rocprof (v1/v2) ``results.csv`` (``BeginNs``/``EndNs``) and ``results.stats.csv``."""
    text = read_text(path)
    head, reader = _csv_head(path, text)
    header = {norm(c): i for i, c in enumerate(head)}
    pname = printable(path.name)
    if pick(header, "Counter_Name") is not None:
        raise ImportProblem(f"{pname}: a counter_collection file (one row per counter); "
                            "import the kernel_trace.csv of a --kernel-trace run instead")
    name_i = pick(header, "Kernel_Name", "KernelName", "kernel_name", "Name")
    if pick(header, "TotalDurationNs") is not None and name_i is not None:
        return _rocprof_stats(path, head, reader)
    func_i, domain_i = pick(header, "Function"), pick(header, "Domain")
    if name_i is None and func_i is not None and domain_i is not None:
        raise ImportProblem(_api_trace(pname, header, reader, domain_i))
    dir_i = pick(header, "Direction")
    start_i = pick(header, "Start_Timestamp", "BeginNs", "start")
    end_i = pick(header, "End_Timestamp", "EndNs", "end")
    dur_i = pick(header, "DurationNs", "Duration_Ns", "Duration")
    agent_i = pick(header, "Agent_Id", "gpu-id", "GPU_ID")
    src_i, dst_i = pick(header, "Source_Agent_Id"), pick(header, "Destination_Agent_Id")
    copies = name_i is None and dir_i is not None
    types = agent_types_beside(path) if copies else {}
    if agent_i is None and not copies:
        agent_i = dst_i
    timed = (start_i is not None and end_i is not None) or dur_i is not None
    if (name_i is None and dir_i is None) or not timed:
        raise ImportProblem(_not_a_kernel_trace(path, text, head, name_i is not None))
    out = _Read()
    skipped = Skipped()
    width = len(head)
    for lineno, rec in enumerate(reader, 2):
        if not rec or all(not c.strip() for c in rec):
            continue
        if len(rec) != width:
            skipped.add(f"{len(rec)} fields where the header has {width} (truncated or "
                        "damaged)", lineno)
            continue
        if start_i is not None and end_i is not None:
            s, e = ns(rec[start_i]), ns(rec[end_i])
            dur = None if s is None or e is None else e - s
            if dur is not None and dur < 0:
                skipped.add("end before start (EndNs < BeginNs)", lineno)
                continue
        else:
            dur = ns(rec[dur_i])
            if dur is not None and dur < 0:
                skipped.add("negative duration", lineno)
                continue
        if dur is None:
            skipped.add("timestamps are not numbers", lineno)
            continue
        if name_i is not None:
            name = cap_name(rec[name_i])
            device = _agent(rec[agent_i]) if agent_i is not None else -1
        else:
            src = _agent(rec[src_i]) if src_i is not None else -1
            dst = _agent(rec[dst_i]) if dst_i is not None else -1
            short, device = copy_direction(rec[dir_i], src, dst, types)
            if short == "HtoH":
                skipped.add("host-to-host copy (no GPU agent involved)", lineno)
                continue
            if device < 0 and agent_i is not None:
                device = _agent(rec[agent_i])
            name = f"Memcpy {short}"
        out.rows.append(_Row(device, name, float(dur)))
    out.skipped = skipped.total()
    out.notes = skipped.notes(pname)
    if any(h.strip().upper().startswith(("SQ_", "TCC_", "TCP_", "GRBM_")) for h in head):
        out.notes.append(f"{pname}: kernel times from a counter-collection run (dispatches "
                         "serialised, counters on): prefer a --kernel-trace run's times")
    out.device = device_beside(path)
    return out


def device_beside(path: Path) -> DeviceInfo | None:
    """The GPU named by a rocprof-compute ``sysinfo.csv`` or a rocprofv3 ``*agent_info.csv``
    in the same directory as ``path``."""
    try:
        side = sorted(Path(path).parent.glob("*sysinfo*.csv")) + \
            sorted(Path(path).parent.glob("*agent_info*.csv"))
    except OSError:
        return None
    for s in side[:4]:
        try:
            rows = list(csv.reader(io.StringIO(read_text(s))))
        except ImportProblem:
            continue
        if len(rows) < 2:
            continue
        head = [h.strip().lower() for h in rows[0]]
        if "gpu_arch" in head:
            r = dict(zip(head, rows[1], strict=False))
            return identify(r.get("gpu_model") or None, {}, arch_hint=r.get("gpu_arch"),
                            source=f"{s.name} gpu_arch/gpu_model")
        if "agent_type" in head and "name" in head:
            for r in (dict(zip(head, row, strict=False)) for row in rows[1:]):
                if r.get("agent_type", "").strip().upper() == "GPU":
                    return identify(r.get("product_name") or None, {},
                                    arch_hint=r.get("name"),
                                    source=f"{s.name} (node {r.get('node_id', '?')})")
    return None


def agent_types_beside(path: Path) -> dict[int, str]:
    """Agent number (``Node_Id`` and ``Logical_Node_Id``) -> ``CPU`` / ``GPU`` from a rocprofv3
    ``*agent_info.csv`` in the same directory as ``path``; ``{}`` when there is none."""
    try:
        side = sorted(Path(path).parent.glob("*agent_info*.csv"))[:4]
    except OSError:
        return {}
    out: dict[int, str] = {}
    for s in side:
        try:
            rows = list(csv.DictReader(io.StringIO(read_text(s))))
        except (ImportProblem, csv.Error):
            continue
        for r in rows:
            kind = str(r.get("Agent_Type") or "").strip().upper()
            for key in ("Node_Id", "Logical_Node_Id"):
                n = integer(r.get(key))
                if n is not None and kind:
                    out.setdefault(n, kind)
    return out


def copy_direction(cell: str, src: int, dst: int, types: dict[int, str]) -> tuple[str, int]:
    """(``HtoD``/``DtoH``/``DtoD``/``HtoH``, the GPU agent charged) of one memory copy.

    The direction is the row's own (``MEMORY_COPY_HOST_TO_DEVICE``); without one, the source
    and destination agents' types (agent_info.csv) say it. The copy is charged to the GPU agent
    involved: the destination of a host-to-device or device-to-device copy, the source of a
    device-to-host copy, never a CPU agent. ``-1`` when no agent is known."""
    direction = cell.strip().upper().replace("MEMORY_COPY_", "")
    short = _MEMCPY_DIRS.get(direction)
    if short is None and types.get(src) and types.get(dst):
        short = {("CPU", "GPU"): "HtoD", ("GPU", "CPU"): "DtoH", ("GPU", "GPU"): "DtoD",
                 ("CPU", "CPU"): "HtoH"}.get((types[src], types[dst]))
    short = short or (direction or "?")
    if types:  # the agents' own types decide which one is the GPU
        gpu = [a for a in (dst, src) if types.get(a) == "GPU"]
        return short, gpu[0] if gpu else -1
    if short == "DtoH":
        return short, src
    return short, dst


# rocprofv3 --stats writes one <domain>_stats.csv per traced domain, all with kernel_stats.csv's
# columns; only kernel_stats.csv holds kernels
_STATS_FILE = lazy_compile(r"(?:^|[_.\-])(?P<domain>hip_api|hsa_api|marker_api|rccl_api|"
                           r"rocdecode_api|rocjpeg_api|ompt|memory_copy|memory_allocation|"
                           r"scratch_memory|kernel|domain)_stats\.csv$")
_STATS_LABEL = {"hip_api": "HIP API", "hsa_api": "HSA API", "marker_api": "ROCTx marker",
                "rccl_api": "RCCL API", "rocdecode_api": "rocDecode API",
                "rocjpeg_api": "rocJPEG API", "ompt": "OpenMP (OMPT)"}
_API_NAME = lazy_compile(r"^_{0,2}(?P<api>hip|hsa|rccl|roctx)(?=[A-Z_])")
_DOMAIN_NAME = lazy_compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # HIP_API, KERNEL_DISPATCH


def _stats_domain(path: Path, names: list[str]) -> str | None:
    """What a ``--stats`` table holds when it is not kernels: from the file name, else from
    the names in its rows (all HIP/HSA API functions, or all domain names)."""
    m = _STATS_FILE.search(path.name.lower())
    if m:
        domain = m.group("domain")
        if domain == "kernel":
            return None
        if domain == "domain":
            return "a rocprofv3 --stats domain_stats.csv (time per tracing domain)"
        label = _STATS_LABEL.get(domain, domain.replace("_", " "))
        return f"a rocprofv3 --stats {domain}_stats.csv ({label} calls)"
    if not names:
        return None
    apis = {a.group("api") if a else None for a in map(_API_NAME.match, names)}
    if None not in apis:
        api = "/".join(sorted(a.upper() for a in apis if a))
        return f"a rocprofv3 --stats summary of {api} API calls (hip_api_stats.csv?)"
    if all(_DOMAIN_NAME.match(n) for n in names) and any(
            n.endswith("_API") or n in ("KERNEL_DISPATCH", "MEMORY_COPY") for n in names):
        return "a rocprofv3 --stats domain_stats.csv (time per tracing domain)"
    return None


def _rocprof_stats(path: Path, head: list[str], reader: Any) -> _Read:
    """``Name, Calls, TotalDurationNs, AverageNs, Percentage``, one row per kernel, already
    summed: rocprofv3 ``--stats`` kernel_stats.csv and legacy rocprof ``results.stats.csv``.
    The other domains' ``--stats`` files (hip_api_stats.csv, domain_stats.csv, ...) have the
    same columns and are refused."""
    header = {norm(c): i for i, c in enumerate(head)}
    name_i = pick(header, "Name", "KernelName")
    calls_i = pick(header, "Calls")
    total_i = pick(header, "TotalDurationNs")
    records = [(lineno, rec) for lineno, rec in enumerate(reader, 2)
               if rec and any(c.strip() for c in rec)]
    if name_i is None:
        raise ImportProblem(f"{printable(path.name)}: a stats table without a Name column")
    what = _stats_domain(path, [r[name_i].strip() for _n, r in records if len(r) > name_i])
    if what:
        raise ImportProblem(f"{printable(path.name)}: {what}, not kernels; import the "
                            "kernel_stats.csv of the same --stats run instead")
    out = _Read()
    skipped = Skipped()
    for lineno, rec in records:
        try:
            name, total = rec[name_i], ns(rec[total_i])
            calls = integer(rec[calls_i]) if calls_i is not None else 1
        except IndexError:
            skipped.add("too few fields", lineno)
            continue
        if total is None or total < 0 or calls is None:
            skipped.add("total time or calls not a number", lineno)
            continue
        out.rows.append(_Row(-1, cap_name(name), total, calls))
    out.skipped = skipped.total()
    out.notes = skipped.notes(printable(path.name))
    return out


_SUMMARY_TITLE = lazy_compile(r"^\s*ROCPROFV3\s+(?P<domain>[A-Z_]+\s+)?SUMMARY:\s*$")


def _rocprof_summary(path: Path) -> _Read:
    """rocprofv3 ``--summary`` (``-S``) text: one Markdown-like table per domain under a
    ``ROCPROFV3 <DOMAIN> SUMMARY:`` title. Only the ``KERNEL_DISPATCH`` table is read (``NAME``,
    ``CALLS``, ``DURATION (nsec)``); the other domains are API calls and copies."""
    pname = printable(path.name)
    lines = read_text(path).splitlines()
    titles = [(i, (m.group("domain") or "").strip()) for i, line in enumerate(lines)
              if (m := _SUMMARY_TITLE.match(line))]
    at = next((i for i, d in titles if d == "KERNEL_DISPATCH"), None)
    if at is None:
        shown = printable(", ".join(d or "all domains" for _i, d in titles), limit=120)
        raise ImportProblem(f"{pname}: a rocprofv3 --summary report without a KERNEL_DISPATCH "
                            f"table (tables: {shown or 'none'}); run rocprofv3 with "
                            "--kernel-trace --summary")
    table: list[list[str]] = []
    for line in lines[at + 1:]:
        stripped = line.strip()
        if not stripped:
            if table:
                break
            continue
        if not stripped.startswith("|"):
            break
        table.append(stripped.strip("|").split("|"))
    if len(table) < 2:
        raise ImportProblem(f"{pname}: the KERNEL_DISPATCH summary has no table")
    head = [norm(c) for c in table[0]]
    width = len(head)
    want = {"name": "name", "calls": "calls", "duration": "durationnsec"}
    idx = {k: head.index(v) for k, v in want.items() if v in head}
    if len(idx) < 3:
        raise ImportProblem(f"{pname}: the KERNEL_DISPATCH summary lacks NAME / CALLS / "
                            "DURATION (nsec) columns")
    out = _Read()
    skipped = Skipped()
    for lineno, cells in enumerate(table[2:], at + 4):
        if len(cells) > width and idx["name"] == 0:  # a '|' inside a kernel name
            extra = len(cells) - width
            cells = ["|".join(cells[:extra + 1]), *cells[extra + 1:]]
        if len(cells) != width:
            skipped.add(f"{len(cells)} cells where the header has {width}", lineno)
            continue
        total, calls = ns(cells[idx["duration"]]), integer(cells[idx["calls"]])
        if total is None or total < 0 or calls is None:
            skipped.add("DURATION / CALLS not numbers", lineno)
            continue
        out.rows.append(_Row(-1, cap_name(cells[idx["name"]].strip()), total, calls))
    out.skipped = skipped.total()
    out.notes = skipped.notes(pname)
    out.notes.append(f"{pname}: kernel totals from a --summary report (no per-agent split, "
                     "no per-launch times)")
    return out


# --------------------------------------------------------------------------------------------
# rocprofv3 --output-format json (streamed)


def _is_gzip(fh: Any) -> bool:
    magic = fh.read(2)
    fh.seek(0)
    return bool(magic == b"\x1f\x8b")


def _is_rocprofv3_json(path: Path) -> bool:
    head = head_text(path, 512).lstrip("\ufeff \t\r\n")
    return head.startswith("{") and '"rocprofiler-sdk-tool"' in head[:200]


def _json_rows(path: Path, agents: dict[int, dict[str, Any]], names: dict[int, str],
               sums: dict[tuple[int, int], list[float]], skipped: Skipped) -> _Read:
    """The rows of a rocprofv3 JSON file's per-(agent, kernel) sums, named from its symbol
    table, with the device its first agent used names."""
    pname = printable(path.name)
    out = _Read()
    # agent handle -> node id, the N users give to --device-index
    node_of = {h: integer(a.get("node_id")) for h, a in agents.items()}
    unnamed = 0
    for (h, kid), (calls, total) in sums.items():
        name = names.get(kid)
        if name is None:
            unnamed += int(calls)
            name = f"kernel_id {kid}"
        dev = node_of.get(h)
        out.rows.append(_Row(dev if dev is not None else h, name, float(total), int(calls)))
    out.skipped = skipped.total()
    out.notes = [n.replace("line", "record") for n in skipped.notes(pname)]
    if unnamed:
        out.notes.append(f"{pname}: {unnamed:,} dispatches of kernels missing from "
                         "kernel_symbols, named by kernel_id")
    if agents:
        used = {h for h, _k in sums}
        a = next((agents[h] for h in sorted(used) if h in agents), next(iter(agents.values())))
        out.device = identify(a.get("product_name") if isinstance(a.get("product_name"), str)
                              else None, {}, arch_hint=str(a.get("name") or ""),
                              source=f"{path.name} agents[node {a.get('node_id', '?')}]")
    return out


def _rocprofv3_json(path: Path) -> _Read:
    """rocprofv3 ``--output-format json``: ``rocprofiler-sdk-tool[].buffer_records.
    kernel_dispatch[]`` joined to ``kernel_symbols[]`` (names) and ``agents[]`` (device).
    One streamed pass; memory holds only the symbol table and per-kernel sums."""
    pname = printable(path.name)
    skipped = Skipped()
    agents: dict[int, dict[str, Any]] = {}
    names: dict[int, str] = {}
    sums: dict[tuple[int, int], list[float]] = {}

    def on_agent(a: Any) -> None:
        if not isinstance(a, dict) or integer(a.get("type")) != 2:  # 2: a GPU agent
            return
        h = integer(a["id"].get("handle")) if isinstance(a.get("id"), dict) else None
        if h is not None:
            agents[h] = {k: a.get(k) for k in ("name", "product_name", "node_id",
                                                "gfx_target_version", "cu_count")}

    def on_symbol(s: Any) -> None:
        if not isinstance(s, dict):
            return
        kid = integer(s.get("kernel_id"))
        name = next((s[k] for k in ("demangled_kernel_name", "formatted_kernel_name",
                                    "kernel_name") if isinstance(s.get(k), str) and s[k]), None)
        if kid is not None and name:
            names[kid] = cap_name(name)

    count = [0]

    def on_dispatch(d: Any) -> None:
        count[0] += 1
        n = count[0]
        info = d.get("dispatch_info") if isinstance(d, dict) else None
        if not isinstance(info, dict):
            skipped.add("dispatch record without dispatch_info", n)
            return
        start, end = number(d.get("start_timestamp")), number(d.get("end_timestamp"))
        if start is None or end is None:
            skipped.add("timestamps missing or not usable numbers", n)
            return
        if end < start:
            skipped.add("end before start", n)
            return
        kid = integer(info.get("kernel_id"))
        agent = info.get("agent_id")
        h = integer(agent.get("handle")) if isinstance(agent, dict) else None
        key = (h if h is not None else -1, kid if kid is not None else -1)
        acc = sums.setdefault(key, [0, 0.0])
        acc[0] += 1
        acc[1] += end - start

    tool = ("rocprofiler-sdk-tool", "*")
    raw = open(path, "rb")  # noqa: SIM115 - closed below
    try:
        binary: Any = gzip.GzipFile(fileobj=raw) if _is_gzip(raw) else raw
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace")
        walker = JsonWalker(text)
        walker.what = "rocprofv3 JSON file"
        walker.walk({(*tool, "agents"): on_agent, (*tool, "kernel_symbols"): on_symbol,
                     (*tool, "buffer_records", "kernel_dispatch"): on_dispatch})
    except ImportProblem as exc:
        raise ImportProblem(f"{pname}: {exc.message}") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise ImportProblem(f"{pname}: cannot read ({printable(str(exc), limit=80)})") from None
    finally:
        raw.close()
    return _json_rows(path, agents, names, sums, skipped)


# --------------------------------------------------------------------------------------------
# rocpd SQLite


ROCPD_TIME_BUDGET_S = SQLITE_TIME_BUDGET_S
ROCPD_ROW_BUDGET = SQLITE_ROW_BUDGET
rocpd_uri = sqlite_uri  # the one quoting rule, shared with the counter loader


def open_rocpd(path: Path, seconds: float | None = None
               ) -> tuple[sqlite3.Connection, QueryBudget]:
    """A read-only connection with a time budget; raises :class:`ImportProblem`."""
    try:
        return open_sqlite_ro(path, ROCPD_TIME_BUDGET_S if seconds is None else seconds)
    except sqlite3.Error as exc:
        raise ImportProblem(f"{printable(path.name)}: cannot open SQLite database "
                            f"({printable(str(exc))})") from None


def _rocpd_sources(con: sqlite3.Connection, pname: str) -> list[tuple[str, bool]]:
    """The views a rocpd database's rows are read from (name, whether of kernels): ``kernels``,
    and ``memory_copies`` where there is one; another SQLite file is refused by name."""
    try:
        objects = {r[0]: r[1] for r in con.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('view','table')")}
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{pname}: not a readable SQLite database "
                            f"({printable(str(exc))})") from None
    if "kernels" not in objects:
        if "TARGET_INFO_GPU" in objects or "CUPTI_ACTIVITY_KIND_KERNEL" in objects:
            raise ImportProblem(f"{pname}: an Nsight Systems SQLite export, not rocpd; "
                                "import it with `roofline import nsys`")
        raise ImportProblem(f"{pname}: no `kernels` view; not a rocpd database?")
    sources = [("kernels", True)]
    if "memory_copies" in objects:
        sources.append(("memory_copies", False))
    return sources


def _rocpd_rows(path: Path) -> _Read:
    pname = printable(path.name)
    con, budget = open_rocpd(path)
    out = _Read()
    skipped = Skipped()
    try:
        n = 0
        for view, is_kernel in _rocpd_sources(con, pname):
            cols = [r[1] for r in con.execute(f"PRAGMA table_info(`{view}`)")]  # noqa: S608
            header = {norm(c): i for i, c in enumerate(cols)}
            name_i = pick(header, "name", "kernel_name", "display_name")
            dir_i = pick(header, "direction", "kind")
            start_i, end_i = pick(header, "start"), pick(header, "end")
            dur_i = pick(header, "duration")
            dev_i = pick(header, "agent_abs_index", "agent_index", "dst_agent_abs_index",
                          "agent_id", "gpu_id")
            src_i = None if is_kernel else pick(header, "src_agent_abs_index")
            src_t = None if is_kernel else pick(header, "src_agent_type")
            dst_t = None if is_kernel else pick(header, "dst_agent_type")
            if (is_kernel and name_i is None) or (
                    dur_i is None and (start_i is None or end_i is None)):
                if not is_kernel:
                    continue
                raise ImportProblem(f"{pname}: `{view}` lacks the expected columns (name, "
                                    "start/end or duration); found: "
                                    f"{printable(', '.join(cols), limit=120)}")
            wanted = [c for c in (name_i, dir_i, start_i, end_i, dur_i, dev_i, src_i, src_t,
                                  dst_t) if c is not None]
            sql = ("SELECT " + ", ".join(f'"{cols[i]}"' for i in wanted)  # noqa: S608
                   + f" FROM `{view}` LIMIT {ROCPD_ROW_BUDGET + 1}")
            pos = {c: j for j, c in enumerate(wanted)}
            for rec in con.execute(sql):
                n += 1
                if n > ROCPD_ROW_BUDGET:
                    raise ImportProblem(f"{pname}: more than {ROCPD_ROW_BUDGET:,} rows; "
                                        "refused (row budget)")
                dur = number(rec[pos[dur_i]]) if dur_i is not None else None
                if dur is None and start_i is not None and end_i is not None:
                    s, e = number(rec[pos[start_i]]), number(rec[pos[end_i]])
                    dur = None if s is None or e is None else e - s
                if dur is None or dur < 0:
                    skipped.add(f"`{view}`: negative or unusable duration", n)
                    continue
                if name_i is not None:
                    name = cap_name(str(rec[pos[name_i]]))
                else:
                    raw_dir = rec[pos[dir_i]] if dir_i is not None else ""
                    direction = str(raw_dir).upper().replace("MEMORY_COPY_", "")
                    name = f"Memcpy {_MEMCPY_DIRS.get(direction, direction or '?')}"
                dev = rec[pos[dev_i]] if dev_i is not None else None
                device = _agent(str(dev)) if dev is not None else -1
                if not is_kernel and src_i is not None:
                    src = _agent(str(rec[pos[src_i]]))
                    kinds: dict[int, str] = {}
                    if src_t is not None and dst_t is not None:
                        kinds = {src: str(rec[pos[src_t]]).upper(),
                                 device: str(rec[pos[dst_t]]).upper()}
                        if src == device:
                            kinds = {}
                    raw_dir = str(rec[pos[dir_i]]) if dir_i is not None else ""
                    short, device = copy_direction(raw_dir, src, device, kinds)
                    if short == "HtoH":
                        skipped.add(f"`{view}`: host-to-host copy (no GPU agent)", n)
                        continue
                    name = f"Memcpy {short}"
                out.rows.append(_Row(device, name, dur))
    except sqlite3.OperationalError as exc:
        if budget.tripped:
            raise ImportProblem(f"{pname}: query stopped after its time budget "
                                f"({ROCPD_TIME_BUDGET_S:g} s): a view too costly to read "
                                "(recursive or cross-joined?)") from None
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"{pname}: SQLite error ({printable(str(exc))})") from None
    finally:
        con.close()
    out.skipped = skipped.total()
    out.notes = [x.replace("line", "row") for x in skipped.notes(pname)]
    return out


def import_rocprofv3(paths: Iterable[Path], *, top: int = DEFAULT_TOP,
                     device_index: int | None = None) -> TableImport:
    rows: list[_Row] = []
    notes: list[str] = []
    skipped = 0
    device: DeviceInfo | None = None
    paths = [Path(p) for p in paths]
    if not paths:
        raise ImportProblem("no input files")
    for p in paths:
        why = store.check_regular(p)
        if why is not None:
            raise ImportProblem(f"{printable(p)}: {printable(why)}")
        verdict = sniff_check(p, ROCPROF)
        if verdict.refusal:
            raise ImportProblem(verdict.refusal)
        if verdict.rule is not None and verdict.rule.kind == "rocprofv3-summary":
            got = _rocprof_summary(p)
        elif is_sqlite(p):
            got = _rocpd_rows(p)
        elif _is_rocprofv3_json(p):
            got = _rocprofv3_json(p)
        else:
            if p.suffix.lower() in (".json", ".gz"):
                head = head_text(p, 200).lstrip()
                if head.startswith(("{", "[")):
                    raise ImportProblem(f"{printable(p.name)}: a JSON file that is not "
                                        "rocprofv3 output (a PyTorch trace? use `roofline "
                                        "import torch`)")
            got = _rocprof_csv(p)
        rows.extend(got.rows)
        notes.extend(got.notes)
        skipped += got.skipped
        device = device or got.device
    if not rows:
        why = f" ({skipped:,} bad rows skipped, none valid)" if skipped else ""
        raise ImportProblem("no kernel dispatches in "
                            + ", ".join(printable(p.name) for p in paths) + why)
    per_dev: dict[int, float] = {}
    for r in rows:
        per_dev[r.device] = per_dev.get(r.device, 0.0) + r.dur_ns
    dev, message = choose_device(per_dev, device_index, "agent")
    aggs: dict[str, KernelAgg] = {}
    total = 0.0
    launches = 0
    for r in rows:
        if r.device != dev:
            continue
        us = r.dur_ns / 1000.0
        aggs.setdefault(r.name, KernelAgg(r.name)).add(us, r.calls)
        total += us
        launches += r.calls
    doc = build_topn(aggs.values(), source="rocprofv3", total_us=total, launches=launches,
                     top=top, notes=notes)
    return TableImport(doc=doc, device_message=message, rows=launches, notes=notes,
                       skipped=skipped, device_info=device)
